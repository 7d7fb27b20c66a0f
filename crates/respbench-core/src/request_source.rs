//! What to send next, per connection: the mode, the key stream and the
//! encoders put together, as `packages/cli/src/engine-js/request-source.ts`. Each
//! connection owns a [`RequestSource`]; the engine asks it for the next
//! request's bytes and gets back what it must remember about that request
//! (kind, key hash, key index) for when the reply comes.

use crate::command::{CommandEncoder, KeyScratch};
use crate::command_kind::{ARRAY_READS, CommandKind, command_kind, template_name};
use crate::keys::{KeyChooser, KeyPattern, KeyStream, RAND_INT_SALT, requests_for_connection, write_key};
use crate::plan::{Mode, Plan};
use crate::template::{Role, TemplateError, inline_form, parse_mix_template, parse_template, rand_int_as_text};
use crate::key_names::{GENERATIONS_MAX_KEYSPACE, KeyNames, NO_GENERATION};
use crate::values::{ValueFactory, WRITTEN_KEYS_MAX_KEYSPACE};
use std::sync::atomic::{AtomicU16, Ordering};

// Kept so `crate::request_source::Op` still names it (the connection and the run use it).
pub use crate::command_kind::Op;

/// The order a source walks keys in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Order {
    /// The timed run: draws from the key stream.
    Run,
    /// Get-mode preload of the whole keyspace: connection c writes c, c+C, …
    PreloadAll,
    /// Get-mode preload when the keyspace is larger than the run: replay the
    /// run's own key stream with the write command.
    PreloadReplay,
}

/// What the engine remembers about one request until its reply arrives.
#[derive(Clone, Copy, Debug)]
pub struct Request {
    pub len: usize,
    pub op: Op,
    /// Which of [`PreparedPlan::commands`] it is (for `--mode`: 0 the write, 1 the read).
    pub command: u16,
    pub key_hash: u32,
    /// The (first) key's index.
    pub key_index: u64,
    /// Keys the request names: 1, or k for a multi-key command (the source's
    /// [`RequestSource::keys`] holds them until the next request).
    pub key_count: u16,
    /// `--cluster`: the key's hash slot, as the source routed it (None without `--cluster`).
    pub slot: Option<u16>,
    /// A write's generation tag ([`crate::key_names::draw_generation`]), else [`NO_GENERATION`].
    pub generation: u32,
}

impl Request {
    /// Nothing (length 0): the stream has no more requests for this source now.
    pub const NONE: Request = Request {
        len: 0,
        op: Op::Set,
        command: 0,
        key_hash: 0,
        key_index: 0,
        key_count: 0,
        slot: None,
        generation: NO_GENERATION,
    };
}

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
    multi_key_read: bool,
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
            key_names: tracks_written_keys(&plan).then(|| KeyNames::new(
                commands.iter().map(|c| (c.encoder.template(), c.kind, c.array_reply)),
                plan.keyspace,
                key_generations,
            )),
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
    /// `key_index` (None: the command has no key), remembered per key index
    /// when the keyspace allows. `scratch` holds at least the key argument.
    #[inline]
    pub fn key_slot(&self, command: usize, key_index: u64, scratch: &mut [u8]) -> Option<u16> {
        let encoder = &self.commands[command].encoder;
        let Some(cell) = self.slot_memo_of[command].and_then(|m| self.slot_memos[m].0.get(key_index as usize)) else {
            return encoder.key_slot(key_index, scratch);
        };
        match cell.load(Ordering::Relaxed) {
            0 => {
                let slot = encoder.key_slot(key_index, scratch)?;
                cell.store(slot + 1, Ordering::Relaxed);
                Some(slot)
            }
            known => Some(known - 1),
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

    /// The measured (or warmup) stream of a connection; unbounded when time
    /// ends the phase.
    /// `node`: `--cluster`, the primary whose share of the stream this source sends (None: all of it).
    /// `side`: `--read-from`, the writes or the reads of the node's share only.
    pub fn run_source(&self, connection: u32, time_bound: bool, node: Option<u16>, side: Side) -> RequestSource {
        let count = if time_bound {
            u64::MAX
        } else {
            requests_for_connection(self.plan.requests, self.plan.connections as u64, connection as u64)
        };
        let mut source = RequestSource::new(self, Order::Run, connection, count, node);
        source.side = side;
        source
    }

    pub fn preload_source(&self, connection: u32, node: Option<u16>) -> RequestSource {
        let all = self.plan.keyspace <= self.plan.requests
            || self.plan.duration_ms > 0
            || self.plan.warmup_ms > 0
            || self.multi_key_read;
        let count = requests_for_connection(self.preload_total, self.plan.connections as u64, connection as u64);
        let order = if all { Order::PreloadAll } else { Order::PreloadReplay };
        RequestSource::new(self, order, connection, count, node)
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

/// `--cluster`, time-bound phases: requests of other primaries a source
/// walks past in one call before it returns "nothing now" (length 0,
/// `remaining` left as it is), so a node that owns none of the keys does
/// not spin (as the TS engine).
pub const MAX_SKIPS_PER_CALL: u32 = 4096;

/// `--read-from replica|any`: which side of a node's share a source sends.
/// A connection whose reads of a primary go to a replica has two sources
/// for it, walking the same stream: the writes (to the primary) and the
/// reads (to the replica); together they send the node's share once (as
/// the TS `SEND_ALL` / `SEND_WRITES` / `SEND_READS`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Side {
    #[default]
    All,
    Writes,
    Reads,
}

/// One connection's sequence of requests for one phase. Under `--cluster`
/// each connection has one source per primary (`node`), each walking the
/// whole key stream of the connection and keeping only the requests whose
/// key's slot that primary owns: together they send exactly the stream a
/// single server would get, each request to its owner (docs/design.md,
/// cluster). A source with nothing left for its node returns a request of
/// length 0 and sets `remaining` to 0.
#[derive(Clone, Debug)]
pub struct RequestSource {
    /// Requests of the connection's stream not yet walked.
    pub remaining: u64,
    /// Requests of the connection's stream walked so far, this source's and
    /// (under `--cluster`) the other primaries' alike: the request `next`
    /// just returned is number `walked - 1` of the stream (`--rate`'s schedule).
    pub walked: u64,
    order: Order,
    key_stream: KeyStream,
    /// The run's key pattern at 0, then one per mix command with a pattern of
    /// its own ([`PreparedCommand::chooser`]).
    choosers: Vec<KeyChooser>,
    rand_ints: KeyStream,
    sequential: u64,
    /// The keys of the request last encoded (a multi-key command draws several).
    keys: Vec<u64>,
    scratch: KeyScratch,
    /// `--cluster`: the primary this source sends to.
    node: Option<u16>,
    /// `--cluster`: room to write a key argument whole, for its slot.
    slot_scratch: Vec<u8>,
    /// `--read-from`: the writes or the reads of the node's share only (All: both).
    side: Side,
    /// The plain stream, decided once: every request is this one-key command
    /// with its key drawn from the stream, sent to the one server (no
    /// command draw, no routing, no sequential preload), so [`RequestSource::next`]
    /// asks none of those questions per request.
    plain: Option<u16>,
}

impl RequestSource {
    fn new(w: &PreparedPlan, order: Order, connection: u32, count: u64, node: Option<u16>) -> RequestSource {
        let plan = &w.plan;
        let scratch =
            if node.is_some() { w.commands.iter().map(|c| c.encoder.key_arg_bytes()).max().unwrap_or(0) } else { 0 };
        let chooser = |pattern: KeyPattern| {
            KeyChooser::new(
                pattern,
                plan.key_stddev,
                plan.zipf_exponent,
                plan.keyspace,
                connection as u64,
                plan.connections as u64,
            )
        };
        let mut choosers = vec![chooser(plan.key_pattern)];
        choosers.extend(w.commands.iter().filter_map(|c| c.key_pattern).map(chooser));
        let fixed = match order {
            Order::Run if !w.draws_command => Some(w.fixed_command),
            Order::PreloadReplay => Some(0),
            _ => None,
        };
        let plain = fixed.filter(|&c| node.is_none() && w.commands[c as usize].encoder.key_count() == 1);
        RequestSource {
            plain,
            remaining: count,
            walked: 0,
            order,
            key_stream: KeyStream::new(plan.seed, connection),
            choosers,
            rand_ints: KeyStream::new(plan.seed ^ RAND_INT_SALT, connection),
            sequential: connection as u64,
            keys: vec![0; w.max_keys],
            scratch: KeyScratch::new(w.max_keys, w.values.generation),
            node,
            slot_scratch: vec![0u8; scratch],
            side: Side::All,
        }
    }

    /// The keys of the request last encoded: `Request::key_count` of them.
    pub fn keys(&self) -> &[u64] {
        &self.keys
    }

    /// Encodes the next request at the start of `out` (at least
    /// `max_request_bytes` long).
    #[inline]
    pub fn next(&mut self, w: &PreparedPlan, out: &mut [u8]) -> Request {
        match self.plain {
            Some(command) if self.remaining > 0 => self.next_plain(w, out, command),
            _ => self.next_drawn(w, out),
        }
    }

    /// The plain stream's next request: one key from the stream, `command`'s bytes for it.
    #[inline(always)]
    fn next_plain(&mut self, w: &PreparedPlan, out: &mut [u8], command: u16) -> Request {
        self.remaining -= 1;
        self.walked += 1;
        let c = &w.commands[command as usize];
        let key_index = self.choosers[c.chooser].next(&mut self.key_stream);
        self.keys[0] = key_index;
        let (len, key_hash) = c.encoder.encode(out, key_index, &mut self.rand_ints, &w.values);
        Request { len, op: c.op, command, key_hash, key_index, key_count: 1, slot: None, generation: NO_GENERATION }
    }

    /// Any other stream's next request: a drawn command, several keys, a
    /// sequential preload, or (`--cluster`) only the requests of this
    /// source's primary.
    fn next_drawn(&mut self, w: &PreparedPlan, out: &mut [u8]) -> Request {
        let plan = &w.plan;
        let mut skipped = 0;
        loop {
            let mut routed = None;
            if self.remaining == 0 {
                // `--cluster`: an earlier request of this batch walked to the stream's end.
                return Request::NONE;
            }
            self.remaining -= 1;
            self.walked += 1;
            let command = match self.order {
                // Replays a get run's stream (get mode: no command draws) with the write command.
                Order::PreloadAll | Order::PreloadReplay => 0,
                // The command first, then its keys, from the same stream (docs/workload.md, "Command mixes").
                Order::Run if w.draws_command => w.command_for(self.key_stream.next_u32()),
                Order::Run => w.fixed_command,
            };
            let c = &w.commands[command as usize];
            let key_count = c.encoder.key_count();
            for k in 0..key_count {
                self.keys[k] = if self.order == Order::PreloadAll {
                    let index = self.sequential;
                    self.sequential += plan.connections as u64;
                    index
                } else {
                    self.choosers[c.chooser].next(&mut self.key_stream)
                };
            }
            if let Some(node) = self.node {
                // The drawn command's key argument decides; a multi-key command's
                // keys share the first one's slot (the CLI refuses them otherwise).
                // The side first: it is a comparison, the slot a key written out and hashed.
                let sent = match self.side {
                    Side::All => true,
                    Side::Writes => c.op == Op::Set,
                    Side::Reads => c.op == Op::Get,
                } && match w.key_slot(command as usize, self.keys[0], &mut self.slot_scratch) {
                    Some(slot) => {
                        routed = Some(slot);
                        w.slot_owners[slot as usize] == node
                    }
                    None => true,
                };
                if !sent {
                    // Another primary's request (or the other side's): its draws are taken, its bytes not written.
                    c.encoder.skip_draws(&mut self.rand_ints);
                    skipped += 1;
                    if self.remaining > u64::MAX / 2 && skipped == MAX_SKIPS_PER_CALL {
                        // A time-bound stream may hold no key of this node (a {tag} prefix): nothing now, ask later.
                        return Request::NONE;
                    }
                    continue;
                }
            }
            let mut generation = NO_GENERATION;
            if let Some(names) = w.key_names.as_ref().filter(|_| w.key_generations) {
                // Each key's value carries its next generation (lost overwrites, crate::key_names).
                for k in 0..key_count {
                    let tag = names.draw_generation(command, k, self.keys[k]);
                    self.scratch.generations[k] = w.values.generation.wrapping_add(tag.unwrap_or(0) & 0xffff);
                    if k == 0 {
                        generation = tag.unwrap_or(NO_GENERATION);
                    }
                }
            }
            let (len, key_hash) =
                c.encoder.encode_keys(out, &self.keys, &mut self.scratch, &mut self.rand_ints, &w.values);
            return Request {
                generation,
                len,
                op: c.op,
                command,
                key_hash,
                key_index: self.keys[0],
                key_count: key_count as u16,
                slot: routed,
            };
        }
    }
}
