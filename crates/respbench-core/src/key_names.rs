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
//!
//! Lost overwrites, told by value generations: each write of a key (name
//! and index) carries the next generation of that key, mixed into its value
//! ([`crate::values::content_hash`]). A write sent when every earlier write
//! of its key had been answered supersedes them all once the server runs
//! it; when it is acknowledged, its generation is the key's *floor*, and a
//! read sent after that which returns an older generation got a value the
//! server had acknowledged overwriting: a stale value. Writes racing each
//! other never raise the floor, so no interleaving of connections makes a
//! healthy server's reply stale. Memory: 8 bytes per key index per name
//! written, for a keyspace up to [`GENERATIONS_MAX_KEYSPACE`] (32 MiB a name).

use std::sync::atomic::{AtomicBool, AtomicU16, AtomicU32, Ordering};

use crate::command_kind::{CommandKind, Unwritten, removes_every_key, removes_keys, unwritten_when};
use crate::reply::ReplyKind;
use crate::template::{Part, Template};
use crate::values::WrittenKeys;

/// The largest keyspace whose keys' generations a run tracks (mixed mode
/// with `--verify-get`, one server): 8 bytes per key index per name written.
pub const GENERATIONS_MAX_KEYSPACE: u64 = 1 << 22;
/// A write's tag: its generation offset (low 16 bits) and whether it was
/// sent with no earlier write of its key unanswered.
pub const SEQUENTIAL: u32 = 1 << 16;
/// A request with no generation drawn (a read, or generations not tracked).
pub const NO_GENERATION: u32 = u32::MAX;

/// One name's keys: generations drawn, writes answered, the floor.
#[derive(Debug)]
struct Generations {
    /// The offset (from `--value-generation`) the key's next write takes.
    next: Box<[AtomicU16]>,
    /// Writes of the key answered (acknowledged or refused), mod 2^16.
    answered: Box<[AtomicU16]>,
    /// 1 + the offset of the last sequential write acknowledged; 0: none yet.
    floor: Box<[AtomicU32]>,
}

impl Generations {
    fn new(keyspace: u64) -> Generations {
        let zeros = || (0..keyspace).map(|_| AtomicU16::new(0)).collect::<Box<[AtomicU16]>>();
        Generations { next: zeros(), answered: zeros(), floor: (0..keyspace).map(|_| AtomicU32::new(0)).collect() }
    }
}

/// What a read's value is, against the floor it was sent with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Fresh,
    /// A value of the key, of generation `got`, older than `wrote`, the generation acknowledged before the read went out.
    Stale {
        got: u32,
        wrote: u32,
    },
    /// Not a value of the key at all.
    Wrong,
}

/// Whether offset `got` is older than the floor offset `floor`, in a window of 2^15 (offsets wrap at 2^16).
#[inline]
pub fn older(got: u32, floor: u32) -> bool {
    let behind = floor.wrapping_sub(got) & 0xffff;
    (1..1 << 15).contains(&behind)
}

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
    /// A conditional write: which reply says it wrote nothing.
    unwritten: Unwritten,
    /// Removes every key (FLUSHDB, FLUSHALL, SWAPDB).
    flushes: bool,
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
    /// Per name written: its keys' generations (None: not tracked).
    generations: Vec<Option<Generations>>,
    /// A command that removes every key was sent: no nil read is a lost write from then on.
    flushed: AtomicBool,
}

/// The arguments of `template` that hold `__key__`, in order: one per key a
/// request names (a template with `__key__` in one argument names one key).
pub(crate) fn key_arguments(template: &Template) -> Vec<&[Part]> {
    template.args.iter().filter(|parts| parts.iter().any(|p| matches!(p, Part::Key))).map(Vec::as_slice).collect()
}

impl KeyNames {
    /// `generations`: track each key's value generations (one server, keyspace
    /// up to [`GENERATIONS_MAX_KEYSPACE`]).
    /// `commands`: each command's template, kind, and whether its reply is an array of values (MGET).
    pub fn new<'a>(
        commands: impl Iterator<Item = (&'a Template, CommandKind, bool)>,
        keyspace: u64,
        generations: bool,
    ) -> KeyNames {
        let mut shapes: Vec<&[Part]> = Vec::new();
        let per_command: Vec<CommandNames> = commands
            .map(|(template, kind, array_reply)| {
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
                    checks: kind == CommandKind::Read && !array_reply && names.len() == 1,
                    marks: kind == CommandKind::Write,
                    removes: removes_keys(template),
                    unwritten: unwritten_when(template),
                    flushes: removes_every_key(template),
                    names,
                }
            })
            .collect();
        let used_by = |test: fn(&CommandNames) -> bool, name: usize| {
            per_command.iter().any(|c| test(c) && c.names.contains(&(name as u16)))
        };
        let written = (0..shapes.len()).map(|n| used_by(|c| c.marks, n).then(|| WrittenKeys::new(keyspace))).collect();
        let removed =
            (0..shapes.len()).map(|n| used_by(|c| c.removes, n).then(|| WrittenKeys::new(keyspace))).collect();
        let generations = (0..shapes.len())
            .map(|n| (generations && used_by(|c| c.marks, n)).then(|| Generations::new(keyspace)))
            .collect();
        KeyNames { commands: per_command, written, removed, generations, flushed: AtomicBool::new(false) }
    }

    /// Whether a write of `command` answered `kind` (payload `payload`) wrote
    /// its keys: any answer but an error, unless it is a conditional write's
    /// "nothing written" ([`Unwritten`]).
    #[inline]
    pub fn wrote(&self, command: u16, kind: ReplyKind, payload: &[u8]) -> bool {
        match self.commands[command as usize].unwritten {
            Unwritten::Never => true,
            Unwritten::OnZero => !(kind == ReplyKind::Integer && payload == b"0"),
            Unwritten::OnNil => kind != ReplyKind::Nil,
            Unwritten::OnValue => kind == ReplyKind::Nil,
        }
    }

    /// The generation offset the `k`-th key (`key`) of a write of `command`
    /// is written with, tagged [`SEQUENTIAL`] when no earlier write of that
    /// key is unanswered; None when the command writes no tracked name.
    #[inline]
    pub fn draw_generation(&self, command: u16, k: usize, key: u64) -> Option<u32> {
        let c = &self.commands[command as usize];
        if !c.marks {
            return None;
        }
        let g = self.generations[c.names[k] as usize].as_ref()?;
        let offset = g.next[key as usize].fetch_add(1, Ordering::Relaxed);
        let sequential = g.answered[key as usize].load(Ordering::Relaxed) == offset;
        Some(offset as u32 | if sequential { SEQUENTIAL } else { 0 })
    }

    /// A write of `command` for `keys` (its first key's tag `tag`) was
    /// answered: `acknowledged` (not an error reply) marks its keys written,
    /// and a sequential write's generation becomes its key's floor.
    #[inline]
    pub fn on_write_answered(&self, command: u16, keys: &[u64], tag: u32, acknowledged: bool) {
        let c = &self.commands[command as usize];
        if !c.marks {
            return;
        }
        for (&name, &key) in c.names.iter().zip(keys) {
            if acknowledged {
                if let Some(written) = &self.written[name as usize] {
                    written.add(key);
                }
            }
            if let Some(g) = &self.generations[name as usize] {
                g.answered[key as usize].fetch_add(1, Ordering::Relaxed);
                if acknowledged && keys.len() == 1 && tag != NO_GENERATION && tag & SEQUENTIAL != 0 {
                    // Sequential writes of a key are answered in the order sent: the last one stored is the newest.
                    g.floor[key as usize].store((tag & 0xffff) + 1, Ordering::Relaxed);
                }
            }
        }
    }

    /// The generations drawn so far for the key a read of `command` names
    /// (mod 2^16), or None when its generations are not tracked.
    #[inline]
    pub fn next_of(&self, command: u16, key: u64) -> Option<u32> {
        let c = &self.commands[command as usize];
        if !c.checks {
            return None;
        }
        let g = self.generations[c.names[0] as usize].as_ref()?;
        Some(g.next[key as usize].load(Ordering::Relaxed) as u32)
    }

    /// The floor a read of `command` for `key` goes out with: 1 + the offset
    /// of the key's newest acknowledged sequential write, 0 when none.
    #[inline]
    pub fn floor_of(&self, command: u16, key: u64) -> u32 {
        let c = &self.commands[command as usize];
        if !c.checks {
            return 0;
        }
        match &self.generations[c.names[0] as usize] {
            Some(g) => g.floor[key as usize].load(Ordering::Relaxed),
            None => 0,
        }
    }

    /// Request `command` for `keys` is about to go out. A removing command
    /// marks its keys removed now (before the server can act on it); a read
    /// returns whether its key was written and acknowledged before it went out.
    #[inline]
    pub fn on_send(&self, command: u16, keys: &[u64]) -> bool {
        let c = &self.commands[command as usize];
        if c.flushes {
            self.flushed.store(true, Ordering::Relaxed);
        }
        if c.removes {
            for (&name, &key) in c.names.iter().zip(keys) {
                if let Some(removed) = &self.removed[name as usize] {
                    removed.add(key);
                }
            }
        }
        c.checks && self.written[c.names[0] as usize].as_ref().is_some_and(|w| w.has(keys[0]))
    }

    /// A read of `key` by `command`, written before it went out, found nil:
    /// lost, unless a command that removes the name was sent meanwhile (the
    /// server may have run it first, whatever the order of the replies).
    #[inline]
    pub fn is_lost(&self, command: u16, key: u64) -> bool {
        let c = &self.commands[command as usize];
        !self.flushed.load(Ordering::Relaxed) && !self.removed[c.names[0] as usize].as_ref().is_some_and(|r| r.has(key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command_kind::{command_kind, mix_role};
    use crate::template::parse_template;

    fn names(mix: &[&str]) -> KeyNames {
        let templates: Vec<Template> = mix.iter().map(|t| parse_template(t, mix_role(t), false).unwrap()).collect();
        KeyNames::new(templates.iter().map(|t| (t, command_kind(t), false)), 100, true)
    }

    #[test]
    fn a_read_of_a_name_no_write_produces_is_never_checked() {
        let k = names(&["SET x:__key__ __data__", "GET __key__", "GET x:__key__"]);
        k.on_write_answered(0, &[7], NO_GENERATION, true);
        assert!(!k.on_send(1, &[7]), "GET __key__ reads another name than SET x:__key__ writes");
        assert!(k.on_send(2, &[7]));
        assert!(!k.on_send(2, &[8]), "key 8 was not written");
    }

    #[test]
    fn a_removal_sent_makes_later_nils_misses_whatever_the_reply_order() {
        let k = names(&["SET __key__ __data__", "GET __key__", "DEL __key__", "SET __key__ __data__ EX 10"]);
        k.on_write_answered(0, &[3], NO_GENERATION, true);
        assert!(k.on_send(1, &[3]));
        assert!(k.is_lost(1, 3), "nothing removed it");
        // A DEL goes out after the read did (on another connection): the read's nil may be the DEL's.
        k.on_send(2, &[3]);
        assert!(!k.is_lost(1, 3));
        // An expiring write removes too.
        k.on_send(3, &[4]);
        k.on_write_answered(3, &[4], NO_GENERATION, true);
        assert!(k.on_send(1, &[4]) && !k.is_lost(1, 4));
    }

    #[test]
    fn only_a_write_sent_with_none_of_its_key_unanswered_raises_the_floor() {
        let k = names(&["SET __key__ __data__", "GET __key__"]);
        let first = k.draw_generation(0, 0, 5).unwrap();
        assert_eq!(first, SEQUENTIAL, "offset 0, nothing before it");
        // A second write while the first is in flight: racing, it may run first.
        let second = k.draw_generation(0, 0, 5).unwrap();
        assert_eq!(second, 1);
        k.on_write_answered(0, &[5], second, true);
        k.on_write_answered(0, &[5], first, true);
        assert_eq!(k.floor_of(1, 5), 1, "the floor is the sequential write's (offset 0), not the racing one's");
        let third = k.draw_generation(0, 0, 5).unwrap();
        assert_eq!(third, 2 | SEQUENTIAL);
        k.on_write_answered(0, &[5], third, true);
        assert_eq!(k.floor_of(1, 5), 3);
        assert!(older(1, 2) && older(0, 2) && !older(2, 2) && !older(3, 2));
        // Offsets wrap at 2^16: 65535 is just behind 0.
        assert!(older(0xffff, 0) && !older(0, 0xffff));
    }
}
