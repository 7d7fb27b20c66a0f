//! What to send next, per connection: the mode, the key stream and the
//! encoders put together, as `packages/cli/src/engine-js/request-source.ts`. Each
//! connection owns a [`RequestSource`]; the engine asks it for the next
//! request's bytes and gets back what it must remember about that request
//! (kind, key hash, key index) for when the reply comes.

use crate::command::{CommandEncoder, Role, TemplateError, inline_form, parse_template, rand_int_as_text};
use crate::keys::{KeyChooser, KeyStream, RAND_INT_SALT, requests_for_connection, write_key};
use crate::plan::{Mode, Plan};
use crate::values::{ValueFactory, WRITTEN_KEYS_MAX_KEYSPACE, WrittenKeys};

/// Whether a request was a write or a read: decides how its reply counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Set,
    Get,
}

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
    pub key_hash: u32,
    pub key_index: u64,
}

/// A Plan made ready to send: templates parsed, encoders and value table
/// built. Immutable, shared by every worker thread.
#[derive(Debug)]
pub struct PreparedPlan {
    pub plan: Plan,
    pub values: ValueFactory,
    pub set_encoder: CommandEncoder,
    pub get_encoder: CommandEncoder,
    pub verify: bool,
    /// Get mode with `--verify-get`: a nil read fails verification (every
    /// key read was written first).
    pub miss_fails_verify: bool,
    /// Mixed mode with `--verify-get`, keyspace up to
    /// [`WRITTEN_KEYS_MAX_KEYSPACE`]: the keys written and acknowledged so
    /// far, across phases.
    pub written: Option<WrittenKeys>,
    pub max_request_bytes: usize,
    /// Untimed writes before a get run: every key when the keyspace is no
    /// larger than the run, else the run's own keys.
    pub preload_total: u64,
    /// `--cluster`: slot → index of the primary that owns it; empty for one server.
    pub slot_owners: Vec<u16>,
}

impl PreparedPlan {
    pub fn new(plan: Plan) -> Result<PreparedPlan, TemplateError> {
        let values = ValueFactory::new(plan.value_size_min, plan.value_size_max);
        let literal = plan.literal_commands;
        let template = |source: &str, role: Role| {
            let t = parse_template(source, role, literal)?;
            let t = if plan.rand_int_literal { rand_int_as_text(t) } else { t };
            if plan.inline_commands { inline_form(t) } else { Ok(t) }
        };
        let set = template(&plan.set_cmd, Role::Set).map_err(|e| TemplateError(format!("--set-cmd {e}")))?;
        let get = template(&plan.get_cmd, Role::Get).map_err(|e| TemplateError(format!("--get-cmd {e}")))?;
        let prefix = plan.key_prefix.as_bytes();
        let set_encoder = CommandEncoder::new(set, prefix, plan.keyspace);
        let get_encoder = CommandEncoder::new(get, prefix, plan.keyspace);
        let max_request_bytes = set_encoder.max_bytes(&values).max(get_encoder.max_bytes(&values));
        // A time-bound run may read any key, so it preloads the whole keyspace.
        let reads =
            if plan.duration_ms > 0 || plan.warmup_ms > 0 { plan.keyspace } else { plan.keyspace.min(plan.requests) };
        let preload_total = if plan.mode == Mode::Get && plan.preload { reads } else { 0 };
        Ok(PreparedPlan {
            verify: plan.verify_get,
            miss_fails_verify: plan.verify_get && plan.mode == Mode::Get,
            written: tracks_written_keys(&plan).then(|| WrittenKeys::new(plan.keyspace)),
            values,
            set_encoder,
            get_encoder,
            max_request_bytes,
            preload_total,
            slot_owners: plan.cluster.as_ref().map(|c| c.slot_owners()).unwrap_or_default(),
            plan,
        })
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
        let all = self.plan.keyspace <= self.plan.requests || self.plan.duration_ms > 0 || self.plan.warmup_ms > 0;
        let count = requests_for_connection(self.preload_total, self.plan.connections as u64, connection as u64);
        let order = if all { Order::PreloadAll } else { Order::PreloadReplay };
        RequestSource::new(self, order, connection, count, node)
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
    plan.verify_get && plan.mode == Mode::Mixed && plan.keyspace <= WRITTEN_KEYS_MAX_KEYSPACE
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
    order: Order,
    keys: KeyStream,
    chooser: KeyChooser,
    rand_ints: KeyStream,
    sequential: u64,
    /// `--cluster`: the primary this source sends to.
    node: Option<u16>,
    /// `--cluster`: room to write a key argument whole, for its slot.
    slot_scratch: Vec<u8>,
    /// `--read-from`: the writes or the reads of the node's share only (All: both).
    side: Side,
}

impl RequestSource {
    fn new(w: &PreparedPlan, order: Order, connection: u32, count: u64, node: Option<u16>) -> RequestSource {
        let plan = &w.plan;
        let scratch = if node.is_some() { w.set_encoder.key_arg_bytes().max(w.get_encoder.key_arg_bytes()) } else { 0 };
        RequestSource {
            node,
            slot_scratch: vec![0u8; scratch],
            side: Side::All,
            remaining: count,
            order,
            keys: KeyStream::new(plan.seed, connection),
            chooser: KeyChooser::new(
                plan.key_pattern,
                plan.key_stddev,
                plan.zipf_exponent,
                plan.keyspace,
                connection as u64,
                plan.connections as u64,
            ),
            rand_ints: KeyStream::new(plan.seed ^ RAND_INT_SALT, connection),
            sequential: connection as u64,
        }
    }

    /// Encodes the next request at the start of `out` (at least
    /// `max_request_bytes` long).
    #[inline]
    pub fn next(&mut self, w: &PreparedPlan, out: &mut [u8]) -> Request {
        let plan = &w.plan;
        let mut skipped = 0;
        loop {
            if self.remaining == 0 {
                // `--cluster`: an earlier request of this batch walked to the stream's end.
                return Request { len: 0, op: Op::Set, key_hash: 0, key_index: 0 };
            }
            self.remaining -= 1;
            let (is_set, key_index) = match self.order {
                Order::PreloadAll => {
                    let index = self.sequential;
                    self.sequential += plan.connections as u64;
                    (true, index)
                }
                Order::Run | Order::PreloadReplay => {
                    // Preload replays a get run's stream, which has no mixed-mode draws.
                    let is_set = match plan.mode {
                        Mode::Mixed => self.keys.next_is_set(plan.set_ratio),
                        Mode::Set => true,
                        Mode::Get => self.order == Order::PreloadReplay,
                    };
                    (is_set, self.chooser.next(&mut self.keys))
                }
            };
            let encoder = if is_set { &w.set_encoder } else { &w.get_encoder };
            if let Some(node) = self.node {
                let mine = match encoder.key_slot(key_index, &mut self.slot_scratch) {
                    Some(slot) => w.slot_owners[slot as usize] == node,
                    None => true,
                };
                let sent = match self.side {
                    Side::All => true,
                    Side::Writes => is_set,
                    Side::Reads => !is_set,
                };
                if !(mine && sent) {
                    // Another primary's request (or the other side's): its draws are taken, its bytes not written.
                    encoder.skip_draws(&mut self.rand_ints);
                    skipped += 1;
                    if self.remaining > u64::MAX / 2 && skipped == MAX_SKIPS_PER_CALL {
                        // A time-bound stream may hold no key of this node (a {tag} prefix): nothing now, ask later.
                        return Request { len: 0, op: Op::Set, key_hash: 0, key_index: 0 };
                    }
                    continue;
                }
            }
            let (len, key_hash) = encoder.encode(out, key_index, &mut self.rand_ints, &w.values);
            return Request { len, op: if is_set { Op::Set } else { Op::Get }, key_hash, key_index };
        }
    }
}
