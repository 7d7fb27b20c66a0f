//! What a run sends, prepared once for every connection: each command's
//! encoder, reply kind and key chooser, the values, what verification keeps
//! per key and the slot memo (as `PreparedPlan` in
//! `packages/cli/src/engine-js/request-source.ts`). The per-connection walk
//! through it is `request_source.rs`.

use crate::command::CommandEncoder;
use crate::command_kind::Op;
use crate::command_kind::{ARRAY_READS, CommandKind, command_kind, parse_mix_template, template_name};
use crate::key_names::{GENERATIONS_MAX_KEYSPACE, KeyNames};
use crate::keys::{KeyPattern, write_key};
use crate::plan::{Mode, Plan};
use crate::template::{Part, Role, TemplateError, inline_form, parse_template, rand_int_as_text};
use crate::values::{ValueFactory, WRITTEN_KEYS_MAX_KEYSPACE};
use std::sync::atomic::{AtomicU16, Ordering};

/// One command as a run sends it: its encoder, how its replies count, which
/// key chooser it draws from. As `PreparedCommand` in request-source.ts.
#[derive(Debug)]
pub struct PreparedCommand {
    /// Its row's name: the command name, upper case, numbered when two share
    /// it (GET#1, GET#2).
    pub name: String,
    pub encoder: CommandEncoder,
    /// `Get` for a read (checked by `--verify-get`), `Set` for the rest.
    pub op: Op,
    pub kind: CommandKind,
    pub weight: u32,
    /// Its own key pattern, or None for the run's.
    pub key_pattern: Option<KeyPattern>,
    /// Index into a source's choosers (0: the run's key pattern).
    pub chooser: usize,
    /// A read answered with one value per key (MGET): checked key by key.
    pub array_reply: bool,
}

/// A Plan made ready to send: templates parsed, encoders and value table
/// built. Immutable, shared by every worker thread.
#[derive(Debug)]
pub struct PreparedPlan {
    pub plan: Plan,
    pub values: ValueFactory,
    /// What a request may be: a mix's commands in order, or for `--mode` the
    /// write command then the read command (index = op, whatever the mode).
    pub commands: Vec<PreparedCommand>,
    /// True for a mix (`Plan::commands`).
    pub is_mix: bool,
    /// Whether each request draws its command (mixed mode, a mix of two or
    /// more); else it is `fixed_command`.
    pub draws_command: bool,
    pub fixed_command: u16,
    /// Running sums of the weights (mixed mode: set_ratio, 100): a draw
    /// `u % total` picks the first command whose sum exceeds it.
    cumulative_weights: Vec<u32>,
    total_weight: u32,
    pub verify: bool,
    /// Get mode with `--verify-get`: a nil read fails verification (every
    /// key read was written first).
    pub miss_fails_verify: bool,
    /// Mixed mode with `--verify-get`, keyspace up to
    /// [`WRITTEN_KEYS_MAX_KEYSPACE`]: per key name, the keys written and
    /// acknowledged so far (across phases) and those a command may have removed.
    pub key_names: Option<KeyNames>,
    /// `key_names` tracks each key's value generations (one server, keyspace
    /// up to [`GENERATIONS_MAX_KEYSPACE`]): writes draw them, reads are checked against them.
    pub key_generations: bool,
    /// `--value-generation N` (N > 0) but a get run's own preload: a read
    /// takes any generation from N to N + 65535 (what an earlier mixed run of
    /// N may have written); without it, or after the preload, N only.
    pub generation_window: bool,
    pub max_request_bytes: usize,
    /// The most keys one request names (1 unless a command is multi-key).
    pub max_keys: usize,
    /// `--mode` get/mixed whose read command names several keys: a get run's
    /// preload writes every key.
    pub(crate) multi_key_read: bool,
    /// Untimed writes before a get run: every key when the keyspace is no
    /// larger than the run, else the run's own keys.
    pub preload_total: u64,
    /// `--cluster`: slot → index of the primary that owns it; empty for one server.
    pub slot_owners: Vec<u16>,
    /// `--cluster`, keyspace up to [`SLOT_MEMO_MAX_KEYSPACE`]: one memo per
    /// distinct key argument of the commands, key index → its slot.
    slot_memos: Vec<SlotMemo>,
    /// Which of `slot_memos` each command's key argument uses.
    slot_memo_of: Vec<Option<usize>>,
}

/// `--cluster`: the largest keyspace whose slots are remembered per key
/// index (2 bytes a key, 8 MiB per distinct key argument). Every source of a
/// connection walks its whole stream and needs each key's slot; with the memo a
/// key is written out and hashed once per run, not once per source and
/// request. Larger keyspaces hash every time.
pub const SLOT_MEMO_MAX_KEYSPACE: u64 = 1 << 22;

/// Key index → its slot + 1 (0: not known yet). Shared by every worker
/// thread: a key's slot never changes, so two threads that race write the
/// same value.
struct SlotMemo(Box<[AtomicU16]>);

impl std::fmt::Debug for SlotMemo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SlotMemo({} keys)", self.0.len())
    }
}

impl PreparedPlan {
    pub fn new(plan: Plan) -> Result<PreparedPlan, TemplateError> {
        let values = ValueFactory::with_generation(plan.value_size_min, plan.value_size_max, plan.value_generation);
        let literal = plan.literal_commands;
        // `role` None: a command of the mix (parse_mix_template).
        let template = |source: &str, role: Option<Role>| {
            let t = match role {
                Some(role) => parse_template(source, role, literal)?,
                None => parse_mix_template(source, literal)?,
            };
            let t = if plan.rand_int_literal { rand_int_as_text(t) } else { t };
            if plan.inline_commands { inline_form(t) } else { Ok(t) }
        };
        let set = template(&plan.set_cmd, Some(Role::Set)).map_err(|e| TemplateError(format!("--set-cmd {e}")))?;
        let get = template(&plan.get_cmd, Some(Role::Get)).map_err(|e| TemplateError(format!("--get-cmd {e}")))?;
        let prefix = plan.key_prefix.as_bytes();
        let is_mix = !plan.commands.is_empty();
        let commands: Vec<PreparedCommand> = if is_mix {
            let mut parsed = Vec::with_capacity(plan.commands.len());
            for (i, c) in plan.commands.iter().enumerate() {
                let name = parse_mix_template(&c.template, literal)
                    .map(|t| template_name(&t))
                    .map_err(|e| TemplateError(format!("command {} {e}", i + 1)))?;
                let t = template(&c.template, None).map_err(|e| TemplateError(format!("command {} {e}", i + 1)))?;
                parsed.push((name, t));
            }
            let names: Vec<String> = parsed.iter().map(|(n, _)| n.clone()).collect();
            let mut chooser = 0;
            parsed
                .into_iter()
                .zip(&plan.commands)
                .enumerate()
                .map(|(i, ((name, t), spec))| {
                    let same = names.iter().filter(|n| **n == name).count();
                    let nth = names[..=i].iter().filter(|n| **n == name).count();
                    // A command with no key writes or reads no key of the keyspace: nothing to verify or remember (paired with request-source.ts).
                    let kind = if t.uses_key || literal { command_kind(&t) } else { CommandKind::Other };
                    let chooser = match spec.key_pattern {
                        Some(_) => {
                            chooser += 1;
                            chooser
                        }
                        None => 0,
                    };
                    let array_reply = kind == CommandKind::Read && ARRAY_READS.contains(&name.as_str());
                    PreparedCommand {
                        name: if same > 1 { format!("{name}#{nth}") } else { name },
                        encoder: CommandEncoder::new(t, prefix, plan.keyspace),
                        array_reply,
                        op: if kind == CommandKind::Read { Op::Get } else { Op::Set },
                        kind,
                        weight: spec.weight,
                        key_pattern: spec.key_pattern,
                        chooser,
                    }
                })
                .collect()
        } else {
            let named = |source: &str| {
                source.split_whitespace().next().map(str::to_uppercase).unwrap_or_else(|| "?".to_string())
            };
            vec![
                PreparedCommand {
                    array_reply: false,
                    name: named(&plan.set_cmd),
                    encoder: CommandEncoder::new(set, prefix, plan.keyspace),
                    op: Op::Set,
                    kind: CommandKind::Write,
                    weight: plan.set_ratio,
                    key_pattern: None,
                    chooser: 0,
                },
                PreparedCommand {
                    array_reply: ARRAY_READS.contains(&named(&plan.get_cmd).as_str()),
                    name: named(&plan.get_cmd),
                    encoder: CommandEncoder::new(get, prefix, plan.keyspace),
                    op: Op::Get,
                    kind: CommandKind::Read,
                    weight: 100 - plan.set_ratio.min(100),
                    key_pattern: None,
                    chooser: 0,
                },
            ]
        };
        let mut sum = 0u32;
        let cumulative_weights: Vec<u32> = commands
            .iter()
            .map(|c| {
                sum += c.weight;
                sum
            })
            .collect();
        let max_request_bytes = commands.iter().map(|c| c.encoder.max_bytes(&values)).max().unwrap_or(0);
        let max_keys = commands.iter().map(|c| c.encoder.key_count()).max().unwrap_or(1);
        // A time-bound run may read any key, so it preloads the whole keyspace;
        // so does a read of several keys per request (more keys than requests).
        let multi_key_read = !is_mix && commands[1].encoder.key_count() > 1;
        let reads = if plan.duration_ms > 0 || plan.warmup_ms > 0 || multi_key_read {
            plan.keyspace
        } else {
            plan.keyspace.min(plan.requests)
        };
        let preload_total = if plan.mode == Mode::Get && plan.preload && !is_mix { reads } else { 0 };
        let mut slot_memos = Vec::new();
        let mut slot_memo_of = vec![None; commands.len()];
        if plan.cluster.is_some() && plan.keyspace <= SLOT_MEMO_MAX_KEYSPACE {
            for i in 0..commands.len() {
                let Some(arg) = commands[i].encoder.key_arg() else { continue };
                let same = (0..i).find(|&j| commands[j].encoder.key_arg() == Some(arg));
                slot_memo_of[i] = Some(match same.and_then(|j| slot_memo_of[j]) {
                    Some(m) => m,
                    None => {
                        slot_memos.push(SlotMemo((0..plan.keyspace).map(|_| AtomicU16::new(0)).collect()));
                        slot_memos.len() - 1
                    }
                });
            }
        }
        // One connection: its writes of a key have one order, the same in both engines and every run
        // (with more, which racing write ends up stored decides the dataset).
        // Only a run that names a generation: without one, values stay those of earlier builds.
        let key_generations = plan.value_generation > 0
            && plan.keyspace <= GENERATIONS_MAX_KEYSPACE
            && plan.cluster.is_none()
            && plan.connections == 1;
        Ok(PreparedPlan {
            verify: plan.verify_get,
            miss_fails_verify: plan.verify_get && plan.mode == Mode::Get && !is_mix,
            key_names: tracks_written_keys(&plan).then(|| {
                KeyNames::new(
                    commands.iter().map(|c| (c.encoder.template(), c.kind, c.array_reply)),
                    plan.keyspace,
                    key_generations,
                )
            }),
            key_generations: tracks_written_keys(&plan) && key_generations,
            generation_window: plan.value_generation > 0
                && !(plan.verify_get && plan.mode == Mode::Get && !is_mix && plan.preload),
            values,
            is_mix,
            draws_command: if is_mix { commands.len() > 1 } else { plan.mode == Mode::Mixed },
            fixed_command: if !is_mix && plan.mode == Mode::Get { 1 } else { 0 },
            cumulative_weights,
            total_weight: sum,
            commands,
            max_request_bytes,
            max_keys,
            multi_key_read,
            preload_total,
            slot_owners: plan.cluster.as_ref().map(|c| c.slot_owners()).unwrap_or_default(),
            slot_memos,
            slot_memo_of,
            plan,
        })
    }

    /// `--cluster`: the hash slot of command `command`'s key argument for key
    /// `key_index` (a command with no key: [`crate::command::spread_slot`]'s), remembered per
    /// key index when the keyspace allows. `scratch` holds at least the key
    /// argument.
    #[inline]
    pub fn key_slot(&self, command: usize, key_index: u64, scratch: &mut [u8]) -> u16 {
        let encoder = &self.commands[command].encoder;
        let Some(cell) = self.slot_memo_of[command].and_then(|m| self.slot_memos[m].0.get(key_index as usize)) else {
            return encoder.key_slot(key_index, scratch);
        };
        match cell.load(Ordering::Relaxed) {
            0 => {
                let slot = encoder.key_slot(key_index, scratch);
                cell.store(slot + 1, Ordering::Relaxed);
                slot
            }
            known => known - 1,
        }
    }

    /// The write command of `--mode` (preloads write with it).
    pub fn set_encoder(&self) -> &CommandEncoder {
        &self.commands[0].encoder
    }

    /// The command a draw `u` (a u32 of the key stream) picks: `u % total`
    /// weight, then the first running sum above it.
    #[inline]
    pub fn command_for(&self, u: u32) -> u16 {
        let x = u % self.total_weight;
        let mut i = 0;
        while x >= self.cumulative_weights[i] {
            i += 1;
        }
        i as u16
    }

    /// Each command's op kind, in order (for `OpHistograms`).
    pub fn command_ops(&self) -> Vec<Op> {
        self.commands.iter().map(|c| c.op).collect()
    }

    /// The hash of key `index`'s bytes (a multi-key reply's check; no allocation).
    pub fn key_hash_of(&self, index: u64) -> u32 {
        let mut digits = [0u8; 20];
        let n = crate::keys::write_decimal(&mut digits, index);
        crate::keys::fnv1a32_continue(crate::keys::fnv1a32(self.plan.key_prefix.as_bytes()), &digits[..n])
    }

    /// `<prefix><index>` as text (for messages; not the hot path).
    pub fn key_text(&self, index: u64) -> String {
        format!("{}{}", self.plan.key_prefix, index)
    }

    /// Key `index` as command `command` names it, its key argument's fixed
    /// text included (`SET x:__key__ …` names `x:<prefix><index>`): what a
    /// verification message names (as keyNameText in request-source.ts).
    pub fn key_name_text(&self, command: u16, index: u64) -> String {
        let Some(c) = self.commands.get(command as usize) else { return self.key_text(index) };
        let Some(arg) = c.encoder.template().args.iter().find(|a| a.iter().any(|p| matches!(p, Part::Key))) else {
            return self.key_text(index);
        };
        arg.iter()
            .map(|p| match p {
                Part::Literal(bytes) => String::from_utf8_lossy(bytes).into_owned(),
                Part::Key => self.key_text(index),
                Part::Tag => index.to_string(),
                Part::Data => "__data__".to_string(),
                Part::RandInt => "__rand_int__".to_string(),
            })
            .collect()
    }

    /// The value for key `index` (for messages; not the hot path).
    pub fn value_bytes(&self, index: u64) -> Vec<u8> {
        let prefix = self.plan.key_prefix.as_bytes();
        let mut key = vec![0u8; prefix.len() + 20];
        let len = write_key(&mut key, prefix, index);
        self.values.value_for_key(&key[..len])
    }
}

/// Whether a run tells lost writes from misses: mixed mode, `--verify-get`,
/// and a keyspace small enough for one bit per key.
pub fn tracks_written_keys(plan: &Plan) -> bool {
    let mixed = plan.mode == Mode::Mixed || !plan.commands.is_empty();
    plan.verify_get && mixed && plan.keyspace <= WRITTEN_KEYS_MAX_KEYSPACE
}
