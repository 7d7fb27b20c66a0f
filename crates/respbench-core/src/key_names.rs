//! Lost writes, told per key NAME: what this run wrote (and the server
//! acknowledged) under each shape of key argument, and which keys a command
//! may have removed or expired, so a nil read is a lost write only when the
//! key it names was written and nothing since could have taken it away
//! (docs/workload.md, "Replies"). As `key-names.ts` in the TS engine.
//!
//! A key name is the argument that holds `__key__`, literal parts included:
//! `SET x:__key__ __data__` writes the names `x:<prefix><i>`, which a
//! `GET __key__` never reads, so its nil is a miss, not a lost write. Memory:
//! one bit per key index for each name a write of the run names, one more
//! for each name a removing command names, allocated once.

use crate::command_kind::{CommandKind, removes_keys};
use crate::request_source::PreparedCommand;
use crate::template::{Part, Template};
use crate::values::WrittenKeys;

/// Per command, what it does to the names it sends.
#[derive(Debug)]
struct CommandNames {
    /// The name each of its keys is (index into [`KeyNames::written`]), in key order.
    names: Vec<u16>,
    /// An acknowledged write of the key's value: a later read of the name must find one.
    marks: bool,
    /// May delete or expire its keys (DEL, EXPIRE, SET … EX, GETDEL, …): from
    /// when it is sent, a nil read of those names is never a lost write.
    removes: bool,
    /// A one-key read whose nil may be a lost write.
    checks: bool,
}

/// What a run knows of each key name (mixed mode with `--verify-get`).
/// Shared by the worker threads; relaxed atomics as [`WrittenKeys`].
#[derive(Debug)]
pub struct KeyNames {
    commands: Vec<CommandNames>,
    /// Per name: its keys written and acknowledged (None: no write names it).
    written: Vec<Option<WrittenKeys>>,
    /// Per name: its keys a removing command was sent for (None: no command removes it).
    removed: Vec<Option<WrittenKeys>>,
}

/// The arguments of `template` that hold `__key__`, in order: one per key a
/// request names (a template with `__key__` in one argument names one key).
pub(crate) fn key_arguments(template: &Template) -> Vec<&[Part]> {
    template.args.iter().filter(|parts| parts.iter().any(|p| matches!(p, Part::Key))).map(Vec::as_slice).collect()
}

impl KeyNames {
    pub fn new(commands: &[PreparedCommand], keyspace: u64) -> KeyNames {
        let mut shapes: Vec<&[Part]> = Vec::new();
        let per_command: Vec<CommandNames> = commands
            .iter()
            .map(|c| {
                let template = c.encoder.template();
                let names = key_arguments(template)
                    .into_iter()
                    .map(|shape| match shapes.iter().position(|s| *s == shape) {
                        Some(at) => at as u16,
                        None => {
                            shapes.push(shape);
                            (shapes.len() - 1) as u16
                        }
                    })
                    .collect::<Vec<u16>>();
                CommandNames {
                    checks: c.kind == CommandKind::Read && !c.array_reply && names.len() == 1,
                    marks: c.kind == CommandKind::Write,
                    removes: removes_keys(template),
                    names,
                }
            })
            .collect();
        let used_by = |test: fn(&CommandNames) -> bool, name: usize| {
            per_command.iter().any(|c| test(c) && c.names.contains(&(name as u16)))
        };
        let written = (0..shapes.len()).map(|n| used_by(|c| c.marks, n).then(|| WrittenKeys::new(keyspace))).collect();
        let removed = (0..shapes.len()).map(|n| used_by(|c| c.removes, n).then(|| WrittenKeys::new(keyspace))).collect();
        KeyNames { commands: per_command, written, removed }
    }

    /// Request `command` for `keys` is about to go out. A removing command
    /// marks its keys removed now (before the server can act on it); a read
    /// returns whether its key was written and acknowledged before it went out.
    #[inline]
    pub fn on_send(&self, command: u16, keys: &[u64]) -> bool {
        let c = &self.commands[command as usize];
        if c.removes {
            for (&name, &key) in c.names.iter().zip(keys) {
                if let Some(removed) = &self.removed[name as usize] {
                    removed.add(key);
                }
            }
        }
        c.checks && self.written[c.names[0] as usize].as_ref().is_some_and(|w| w.has(keys[0]))
    }

    /// Request `command` for `keys` was acknowledged (not an error reply).
    #[inline]
    pub fn on_acknowledged(&self, command: u16, keys: &[u64]) {
        let c = &self.commands[command as usize];
        if c.marks {
            for (&name, &key) in c.names.iter().zip(keys) {
                if let Some(written) = &self.written[name as usize] {
                    written.add(key);
                }
            }
        }
    }

    /// A read of `key` by `command`, written before it went out, found nil:
    /// lost, unless a command that removes the name was sent meanwhile (the
    /// server may have run it first, whatever the order of the replies).
    #[inline]
    pub fn is_lost(&self, command: u16, key: u64) -> bool {
        let c = &self.commands[command as usize];
        !self.removed[c.names[0] as usize].as_ref().is_some_and(|r| r.has(key))
    }
}

#[cfg(test)]
mod tests {
    use crate::plan::{CommandSpec, Plan};
    use crate::request_source::PreparedPlan;

    fn names(mix: &[&str]) -> PreparedPlan {
        let mut plan = Plan::new("127.0.0.1", 6379);
        plan.verify_get = true;
        plan.keyspace = 100;
        plan.commands =
            mix.iter().map(|t| CommandSpec { template: t.to_string(), weight: 1, key_pattern: None }).collect();
        PreparedPlan::new(plan).unwrap()
    }

    #[test]
    fn a_read_of_a_name_no_write_produces_is_never_checked() {
        let w = names(&["SET x:__key__ __data__", "GET __key__", "GET x:__key__"]);
        let k = w.key_names.as_ref().unwrap();
        k.on_acknowledged(0, &[7]);
        assert!(!k.on_send(1, &[7]), "GET __key__ reads another name than SET x:__key__ writes");
        assert!(k.on_send(2, &[7]));
        assert!(!k.on_send(2, &[8]), "key 8 was not written");
    }

    #[test]
    fn a_removal_sent_makes_later_nils_misses_whatever_the_reply_order() {
        let w = names(&["SET __key__ __data__", "GET __key__", "DEL __key__", "SET __key__ __data__ EX 10"]);
        let k = w.key_names.as_ref().unwrap();
        k.on_acknowledged(0, &[3]);
        assert!(k.on_send(1, &[3]));
        assert!(k.is_lost(1, 3), "nothing removed it");
        // A DEL goes out after the read did (on another connection): the read's nil may be the DEL's.
        k.on_send(2, &[3]);
        assert!(!k.is_lost(1, 3));
        // An expiring write removes too.
        k.on_send(3, &[4]);
        k.on_acknowledged(3, &[4]);
        assert!(k.on_send(1, &[4]) && !k.is_lost(1, 4));
    }
}
