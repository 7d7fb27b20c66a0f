//! What to send next, per connection: the mode, the key stream and the
//! encoders put together, as `packages/cli/src/engine-js/request-source.ts`. Each
//! connection owns a [`RequestSource`]; the engine asks it for the next
//! request's bytes and gets back what it must remember about that request
//! (kind, key hash, key index) for when the reply comes.

use crate::command::KeyScratch;
use crate::key_names::NO_GENERATION;
use crate::keys::{KeyChooser, KeyPattern, KeyStream, RAND_INT_SALT, requests_for_connection};

// Kept so `crate::request_source::Op` still names it (the connection and the run use it).
pub use crate::command_kind::Op;
// The plan a source walks, prepared once (prepared_plan.rs); named from here as before.
pub use crate::prepared_plan::{PreparedCommand, PreparedPlan, SLOT_MEMO_MAX_KEYSPACE, tracks_written_keys};

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

/// The sources of a prepared plan: built here, beside the source they make.
impl PreparedPlan {
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
                } && {
                    let slot = w.key_slot(command as usize, self.keys[0], &mut self.slot_scratch);
                    routed = Some(slot);
                    w.slot_owners[slot as usize] == node
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
