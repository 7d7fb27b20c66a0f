//! One connection: [`open`], the one place a connection is opened and made
//! ready for load, then [`Connection`], which drives it through its share of
//! one phase: a sliding window of `pipeline` requests in flight, batched
//! writes, replies scanned straight out of the read buffer.
//!
//! Per connection, a ring of `pipeline` slots holds what each in-flight
//! request needs when its reply arrives (kind, key hash, key index, send
//! time). The write buffer, read buffer and ring are allocated once when the
//! connection is made; a request or a reply costs no allocation. The read
//! buffer only grows when one reply is larger than it, which a run does a few
//! times at most.

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::time::{Duration, Instant};

use crate::command::{CommandKind, KeyScratch};
use crate::counters::{Counters, FirstTexts};
use crate::handshake;
use crate::histogram::{LatencyHistogram, OpHistograms};
use crate::keys::KeyStream;
use crate::plan::{Failure, FailureKind, Plan};
use crate::progress::RunControl;
use crate::reply::{ReplyKind, ReplyScanner, Scan, escape_bytes};
use crate::request_source::{Op, PreparedPlan, Request, RequestSource};
use crate::transport::{self, OpenError, Stream, io_text};
use crate::values::first_difference;

/// Bytes of requests encoded into one write at most (as the TS engine).
const MAX_BATCH_BYTES: usize = 256 * 1024;
/// Starting size of the read buffer; one read takes at most this much.
const READ_BUFFER: usize = 64 * 1024;
/// Longest error text kept, as the TS engine.
const MAX_ERROR_TEXT: usize = 200;
/// How long a connection whose share is answered waits, after closing its
/// side, for the server to close its own: a reply arriving then is one no
/// request asked for (a greeting shifted every reply by one). Redis closes
/// at once; a server that keeps its side open costs the phase this much. As
/// the TS engine's CLOSE_WAIT_MS.
pub(crate) const CLOSE_WAIT: Duration = Duration::from_millis(200);

/// What a worker thread accumulates for its connections.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    pub counters: Counters,
    pub first: FirstTexts,
    /// Present in the timed phase only: preload replies are counted, not
    /// timed. One per op kind; the whole run's is their sum.
    pub histogram: Option<OpHistograms>,
    /// With a rate: latency from the actual send, beside the main one from
    /// the intended send.
    pub service: Option<LatencyHistogram>,
    /// With a rate, in the timed phase: how late each request went out
    /// against its schedule (actual send − intended send).
    pub lag: Option<LatencyHistogram>,
    /// Replies and errors not yet added to the shared progress counters.
    pub unreported_replies: u64,
    pub unreported_errors: u64,
    /// Requests written whose replies had not come when the phase stopped.
    pub unanswered: u64,
    /// `--cluster`, the timed phase: per primary, in `ClusterPlan::nodes` order.
    pub nodes: Vec<NodeTally>,
}

/// `--cluster`: what the timed phase counts per primary (`NodeRecord`).
#[derive(Debug, Default)]
pub(crate) struct NodeTally {
    pub requests: u64,
    pub errors: u64,
    /// Replies from it that redirected a request (MOVED, ASK, TRYAGAIN, CLUSTERDOWN).
    pub redirections: u64,
    pub histogram: LatencyHistogram,
}

/// Whether a connection still has work after an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Status {
    Busy,
    /// Its share answered and its side closed: waiting for the server to
    /// close its own (at most [`CLOSE_WAIT`]).
    Closing,
    Finished,
}

/// When a connection may send: a deadline for time-bound phases
/// (`--duration`, `--warmup`) and a schedule for `--rate`.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Pace {
    /// No request is sent after this.
    pub deadline: Option<Instant>,
    /// Seconds between two of this connection's requests (connections /
    /// rate); None sends as fast as replies allow.
    pub interval: Option<f64>,
    /// Seconds into the schedule of this connection's first request
    /// (connection / rate), so connections do not fire together.
    pub offset: f64,
}

impl Pace {
    /// Whether anything but replies decides when to send.
    pub fn is_paced(&self) -> bool {
        self.deadline.is_some() || self.interval.is_some()
    }
}

#[derive(Clone, Copy, Debug)]
struct Slot {
    /// When the write carrying it was issued.
    sent_at: Instant,
    /// When it was due (`--rate`); `sent_at` otherwise. Latency counts from here.
    intended: Instant,
    key_index: u64,
    key_hash: u32,
    op: Op,
    /// Which of the plan's commands: its latency goes to that command's histogram.
    command: u16,
    /// A read sent after its key's write was acknowledged (`--verify-get`,
    /// mixed): nil then is a lost write.
    written_before: bool,
}

impl Slot {
    /// What the ring (or a detour) keeps of request `r`, sent at `now` and due at `intended`.
    fn of(w: &PreparedPlan, r: &Request, now: Instant, intended: Instant) -> Slot {
        Slot {
            sent_at: now,
            intended,
            key_index: r.key_index,
            key_hash: r.key_hash,
            op: r.op,
            command: r.command,
            written_before: r.op == Op::Get && w.written.as_ref().is_some_and(|k| k.has(r.key_index)),
        }
    }
}

/// Why a connection could not be opened.
#[derive(Debug)]
pub enum ConnectError {
    /// Cancelled while connecting.
    Interrupted,
    /// Refused, unresolvable, timed out, TLS refused…: the text for the user.
    Failed(String),
}

/// Connect timeout when the plan has no reply timeout (as the TS engine).
const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Opens a connection to the plan's server and makes it ready for load: the
/// one place that does, so the run loop only ever gets a ready stream. The
/// transport first ([`transport::connect`]: TCP, a unix socket, or TLS with
/// its handshake done), then [`make_ready`]. Each step is non-blocking so
/// that a cancel ends one that hangs at once; each gives up after the plan's
/// `--timeout` (10 s when that is 0). Error texts match the TS engine's.
pub fn open(plan: &Plan, control: &RunControl) -> Result<Stream, ConnectError> {
    let timeout = if plan.timeout_ms > 0 { Duration::from_millis(plan.timeout_ms) } else { DEFAULT_CONNECT_TIMEOUT };
    let mut stream = transport::connect(plan, timeout, control).map_err(|e| match e {
        OpenError::Interrupted => ConnectError::Interrupted,
        OpenError::Failed(m) => ConnectError::Failed(m),
    })?;
    make_ready(&mut stream, plan, timeout, control)?;
    Ok(stream)
}

/// What a ready byte stream (TCP, unix or TLS, from [`transport::connect`])
/// needs before the first request: `TCP_NODELAY` where there is TCP, then the
/// plan's handshake (`HELLO 3` / `AUTH`, `SELECT`, `CLIENT SETNAME`;
/// [`crate::handshake`]) answered within its own `timeout`, whatever the
/// transport (`stream` reads and writes application bytes; `flush` pushes
/// pending TLS records). A failed handshake is its one-line reason (never the
/// password).
fn make_ready(stream: &mut Stream, plan: &Plan, timeout: Duration, control: &RunControl) -> Result<(), ConnectError> {
    stream.set_nodelay().map_err(|e| {
        let to = stream.peer_label().unwrap_or_else(|| format!("{}:{}", plan.host, plan.port));
        ConnectError::Failed(format!("cannot connect to {to}: {}", io_text(&e)))
    })?;
    handshake::run(stream, plan, timeout, control)
}

pub(crate) struct Connection {
    pub id: u32,
    /// `--cluster`: the primary this connection's socket goes to (its index).
    pub node: Option<u16>,
    /// `--read-from`: this socket reads from this replica of `node` (READONLY);
    /// a nil there for a written key is a stale read, and a reconnect opens it again.
    pub replica: Option<(String, u16)>,
    pub stream: Stream,
    source: RequestSource,
    slots: Box<[Slot]>,
    /// A multi-key command's keys, `max_keys` a slot (empty when every
    /// command names one key).
    slot_keys: Box<[u64]>,
    max_keys: usize,
    head: usize,
    tail: usize,
    inflight: usize,
    /// Requests per write at most: the window, unless that would exceed MAX_BATCH_BYTES.
    batch_limit: usize,
    out: Box<[u8]>,
    out_start: usize,
    out_end: usize,
    input: Vec<u8>,
    input_len: usize,
    /// Offset in the whole reply stream of `input[0]`, for messages.
    stream_base: u64,
    scanner: ReplyScanner,
    /// `host:port` of the server (or the socket path), kept for messages.
    peer: Option<String>,
    /// Replies received in this phase.
    pub received: u64,
    pace: Pace,
    started_at: Instant,
    /// `--rate` under `--cluster`: this node's next request, drawn before it
    /// was due (the stream's requests between were other primaries'), held
    /// with its bytes in `held_bytes` and its keys in `held_keys` until its
    /// time comes. Request k of the connection's stream is due at
    /// `due_at(k)` whichever primary it goes to, so the connection keeps the
    /// schedule it has without `--cluster` (as the TS engine's `held`).
    held: Option<Held>,
    held_bytes: Box<[u8]>,
    held_keys: Box<[u64]>,
    /// When its share was answered (and its side was closed); the phase ends at
    /// the latest of these.
    pub answered_at: Option<Instant>,
    /// `--reconnect`: set while the connection is down after a drop.
    down: Option<Down>,
    /// `--cluster`: connections opened where redirections sent requests
    /// (the TS engine's detours), and where a MOVED slot's requests then go
    /// straight; empty without redirections.
    detours: Vec<Detour>,
    /// `--cluster`: requests on detours and not answered yet; they count in the window.
    detoured: usize,
    /// `--cluster`: a detour's socket failed mid-run. That ends the run, as in
    /// the TS engine, even under `--reconnect` (which reopens a connection's
    /// own socket, not a detour: reopening the healthy one would not help).
    detour_failed: bool,
    /// `--cluster`: slot → index in `detours` of the node a MOVED named for
    /// it (-1: where the source routes it). Made at the first MOVED (empty
    /// before): a request of such a slot is sent straight there.
    slot_detour: Vec<i16>,
    /// `--cluster`: a multi-key request's keys while it is on a detour,
    /// `max_keys` a record, `pipeline` records (made at the first
    /// redirection), and the free ones: nothing allocated per request.
    resend_keys: Vec<u64>,
    free_keys: Vec<u32>,
    /// `--cluster`: the text of the redirection being handled (reused).
    redirect_text: Vec<u8>,
    /// `--cluster`: `__rand_int__` draws of requests sent again (not the key stream's).
    detour_rand: KeyStream,
    /// `--cluster`: a multi-key request's scratch when it is sent again.
    detour_scratch: KeyScratch,
    /// `--cluster`: when to look again at a stream that had nothing for this
    /// node, and the growing wait (as the TS engine).
    idle_retry: Option<Instant>,
    idle_wait: Duration,
}

/// Where a request sent straight to a moved slot's owner was encoded: in
/// the connection's output buffer at an offset, or in the held request's
/// buffer (`--rate` under `--cluster`).
#[derive(Clone, Copy)]
enum Encoded {
    Out(usize),
    Held,
}

/// `--rate` under `--cluster`: a request drawn before it was due.
#[derive(Clone, Copy, Debug)]
struct Held {
    request: Request,
    /// Its number in the connection's stream (`RequestSource::walked - 1` when drawn).
    ordinal: u64,
}

/// `--cluster`: longest wait before looking again at a stream that had nothing for this node.
const IDLE_WAIT_CAP: Duration = Duration::from_millis(50);

/// `--cluster`: a request on a detour: answered with a redirection and on
/// its way again, or sent straight to the new owner of a moved slot.
#[derive(Clone, Copy, Debug)]
struct Resend {
    slot: Slot,
    /// A multi-key command's keys: `Connection::resend_keys[keys_at..]`
    /// (`NO_KEYS` for one key: `slot.key_index`).
    keys_at: u32,
    /// ASK: sent after ASKING, whose +OK comes first.
    asking: bool,
    hops: u32,
    /// When the first redirection came: retries stop `--timeout` after it.
    first_try: Instant,
    /// TRYAGAIN / CLUSTERDOWN: not sent again before this.
    not_before: Instant,
}

/// `--cluster`: a connection of a [`Connection`] to a node where
/// redirections sent requests, opened on first use by the worker
/// ([`Connection::service_detours`]) through [`open`], handshake and all. Not
/// in the worker's poll: serviced on each turn while it has requests.
struct Detour {
    /// `host:port`
    target: String,
    /// The row of the per-node table its replies count in (index into
    /// `ClusterPlan::nodes`): the primary it is, or whose replica it is.
    row: Option<u16>,
    stream: Option<Stream>,
    /// Requests waiting for a backoff to end (TRYAGAIN, a third hop).
    waiting: VecDeque<Resend>,
    /// Requests encoded into `out` or written, in order, waiting for their
    /// replies. Both queues hold the window at most (made that size).
    sent: VecDeque<Resend>,
    out: Vec<u8>,
    out_start: usize,
    input: Vec<u8>,
    input_len: usize,
    scanner: ReplyScanner,
}

/// Redirections (or retries) of one request before it counts as the error
/// reply it got (`--timeout` since the first also ends them).
const MAX_HOPS: u32 = 64;
/// MOVED / ASK hops of one request sent again at once; later ones wait a backoff.
const FREE_HOPS: u32 = 2;

/// The wait before retry `n` (1-based): RETRY_BACKOFF doubled each time, capped (as the TS engine).
fn backoff(n: u32) -> Duration {
    RETRY_BACKOFF.saturating_mul(1 << (n - 1).min(10)).min(RETRY_BACKOFF_CAP)
}
/// TRYAGAIN / CLUSTERDOWN: first wait before sending again, doubled each time, capped (as the TS engine).
const RETRY_BACKOFF: Duration = Duration::from_millis(10);
const RETRY_BACKOFF_CAP: Duration = Duration::from_millis(500);
/// Salt of the `__rand_int__` stream of requests sent again (as the TS engine's).
const DETOUR_RAND_SALT: u32 = 0x5bd1_e995;
const ASKING: &[u8] = b"*1\r\n$6\r\nASKING\r\n";
/// Hash slots of a cluster.
const SLOTS: usize = 16384;
/// `Resend::keys_at` of a one-key request.
const NO_KEYS: u32 = u32::MAX;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Redirect {
    Moved,
    Ask,
    Retry,
}

/// Which redirection an error reply's text is, if any.
fn redirect_kind(payload: &[u8]) -> Option<Redirect> {
    if payload.starts_with(b"MOVED ") {
        Some(Redirect::Moved)
    } else if payload.starts_with(b"ASK ") {
        Some(Redirect::Ask)
    } else if payload.starts_with(b"TRYAGAIN") || payload.starts_with(b"CLUSTERDOWN") {
        Some(Redirect::Retry)
    } else {
        None
    }
}

/// `--reconnect`: a dropped connection waiting to be opened again.
#[derive(Debug)]
pub(crate) struct Down {
    /// When it dropped: the time down counts from here.
    pub since: Instant,
    /// Attempts made since the drop.
    pub attempts: u32,
    /// When the next attempt is due.
    pub retry_at: Instant,
    /// Why it dropped, for the message if it never comes back.
    pub why: String,
}

impl Connection {
    pub fn new(id: u32, stream: Stream, source: RequestSource, prepared: &PreparedPlan, pace: Pace) -> Connection {
        let pipeline = prepared.plan.pipeline.max(1) as usize;
        let per_request = prepared.max_request_bytes;
        let batch_limit = pipeline.min((MAX_BATCH_BYTES / per_request).max(1));
        let now = Instant::now();
        let peer = stream.peer_label();
        let holds = pace.interval.is_some() && prepared.plan.cluster.is_some();
        Connection {
            id,
            node: None,
            replica: None,
            peer,
            stream_base: 0,
            stream,
            source,
            slots: vec![
                Slot {
                    sent_at: now,
                    intended: now,
                    key_index: 0,
                    key_hash: 0,
                    op: Op::Set,
                    command: 0,
                    written_before: false
                };
                pipeline
            ]
            .into_boxed_slice(),
            slot_keys: vec![0; if prepared.max_keys > 1 { pipeline * prepared.max_keys } else { 0 }].into_boxed_slice(),
            max_keys: prepared.max_keys,
            head: 0,
            tail: 0,
            inflight: 0,
            batch_limit,
            out: vec![0u8; batch_limit * per_request].into_boxed_slice(),
            out_start: 0,
            out_end: 0,
            input: vec![0u8; READ_BUFFER],
            input_len: 0,
            scanner: ReplyScanner::new(),
            received: 0,
            pace,
            started_at: now,
            held: None,
            held_bytes: vec![0u8; if holds { per_request } else { 0 }].into_boxed_slice(),
            held_keys: vec![0; if holds { prepared.max_keys } else { 0 }].into_boxed_slice(),
            answered_at: None,
            down: None,
            detour_failed: false,
            detours: Vec::new(),
            detoured: 0,
            slot_detour: Vec::new(),
            resend_keys: Vec::new(),
            free_keys: Vec::new(),
            redirect_text: Vec::new(),
            detour_rand: KeyStream::new(prepared.plan.seed ^ DETOUR_RAND_SALT, id),
            detour_scratch: KeyScratch::new(prepared.max_keys),
            idle_retry: None,
            idle_wait: Duration::ZERO,
        }
    }

    /// `--reconnect`: the connection dropped (`why`). What was in flight is
    /// lost: handed out, never answered, counted `lost` and not sent again,
    /// so the key stream goes on where it was. The caller has taken the
    /// stream out of its poll; it is replaced by [`Connection::reconnected`].
    pub fn dropped(&mut self, why: String, tally: &mut Tally) {
        let now = Instant::now();
        tally.counters.lost += self.inflight as u64;
        self.head = 0;
        self.tail = 0;
        self.inflight = 0;
        self.out_start = 0;
        self.out_end = 0;
        // A reply cut off by the drop is gone with the old stream.
        self.input_len = 0;
        self.scanner = ReplyScanner::new();
        self.down = Some(Down { since: now, attempts: 0, retry_at: now, why });
    }

    /// When a time-bound phase stops sending, if it is one.
    pub fn deadline(&self) -> Option<Instant> {
        self.pace.deadline
    }

    /// `--reconnect`: down after a drop, waiting for its next attempt.
    pub fn down(&mut self) -> Option<&mut Down> {
        self.down.as_mut()
    }

    pub fn is_down(&self) -> bool {
        self.down.is_some()
    }

    /// Whether its failure came from a detour's socket (see `detour_failed`).
    pub fn detour_failed(&self) -> bool {
        self.detour_failed
    }

    fn detour_lost(&mut self, f: Failure) -> Failure {
        self.detour_failed = true;
        f
    }

    /// `--reconnect`: whether there is anything left to reconnect for: not
    /// when the phase's time is up or its share is all handed out.
    pub fn wants_reconnect(&mut self, now: Instant) -> bool {
        if self.pace.deadline.is_some_and(|d| now >= d) {
            self.end_stream();
        }
        self.source.remaining > 0 || self.held.is_some()
    }

    /// Time is up: nothing more is sent (a held request included: it was not due before the end).
    fn end_stream(&mut self) {
        self.source.remaining = 0;
        self.held = None;
    }

    /// `--reconnect`: up again on `stream` (from [`open`]), or given up on
    /// (None); the time down counts either way.
    pub fn reconnected(&mut self, stream: Option<Stream>, tally: &mut Tally) {
        if let Some(down) = self.down.take() {
            tally.counters.down_ns += down.since.elapsed().as_nanos() as u64;
        }
        match stream {
            Some(stream) => {
                // Under --cluster it may be another primary now (a failover).
                self.peer = stream.peer_label().or(self.peer.take());
                self.stream = stream;
                tally.counters.reconnects += 1;
            }
            // Nothing left to send: its share ends here.
            None => self.answered_at = Some(Instant::now()),
        }
    }

    /// Sends the first window. A connection with nothing to send is finished at once.
    pub fn start(&mut self, w: &PreparedPlan, tally: &mut Tally) -> Result<Status, Failure> {
        self.started_at = Instant::now();
        self.pump(w, tally)
    }

    /// Requests written whose replies have not come yet (redirected ones included).
    pub fn inflight(&self) -> usize {
        self.inflight + self.detoured
    }

    /// `--cluster`: whether redirected requests wait on this connection.
    pub fn has_detours(&self) -> bool {
        self.detoured > 0
    }

    /// Sets when a time-bound phase ends (known once the workers start).
    pub fn set_deadline(&mut self, deadline: Option<Instant>) {
        self.pace.deadline = deadline;
    }

    pub fn is_paced(&self) -> bool {
        self.pace.is_paced()
    }

    /// Sends what may go now; once the phase is over and nothing waits,
    /// closes its side and waits for the server to close its own.
    pub fn pump(&mut self, w: &PreparedPlan, tally: &mut Tally) -> Result<Status, Failure> {
        if self.answered_at.is_some() {
            return Ok(Status::Closing);
        }
        if self.down.is_some() {
            return Ok(Status::Busy);
        }
        if self.pace.deadline.is_some_and(|d| Instant::now() >= d) {
            self.end_stream();
        }
        self.idle_retry = None;
        if self.source.remaining > 0 || self.held.is_some() {
            self.send(w, tally)?;
        }
        if self.source.remaining > 0
            && self.inflight == 0
            && self.detoured == 0
            && self.out_start == self.out_end
            && self.pace.interval.is_none()
        {
            // `--cluster`: nothing of this node's in the stream just now; look again later (backing off).
            self.idle_wait = (self.idle_wait * 2).max(Duration::from_millis(1)).min(IDLE_WAIT_CAP);
            self.idle_retry = Some(Instant::now() + self.idle_wait);
        }
        // (A `--cluster` source may find nothing more for its node while sending.)
        if self.source.remaining == 0
            && self.held.is_none()
            && self.inflight == 0
            && self.detoured == 0
            && self.out_start == self.out_end
        {
            return Ok(self.close_our_side());
        }
        Ok(Status::Busy)
    }

    /// Its share answered: close our side and wait for the server to close
    /// its own, so that a reply nobody asked for, still on its way, is seen
    /// as the protocol error it is (the TS engine's `complete`).
    fn close_our_side(&mut self) -> Status {
        self.answered_at = Some(Instant::now());
        if self.stream.shutdown_write().is_err() {
            // Already gone: nothing more can arrive.
            return Status::Finished;
        }
        Status::Closing
    }

    /// Whether the close wait has lasted [`CLOSE_WAIT`] by `now`.
    pub fn close_wait_expired(&self, now: Instant) -> bool {
        self.answered_at.is_some_and(|at| now.saturating_duration_since(at) >= CLOSE_WAIT)
    }

    /// `--rate`: when this connection's request `k` is due.
    fn due_at(&self, k: u64, interval: f64) -> Instant {
        self.started_at + Duration::from_secs_f64(self.pace.offset + k as f64 * interval)
    }

    /// When this connection next needs a turn that no socket event will give
    /// it: the next due request under `--rate`, or the end of a time-bound phase.
    pub fn next_wake(&self) -> Option<Instant> {
        if (self.source.remaining == 0 && self.held.is_none()) || self.down.is_some() {
            return None;
        }
        // The held request, else the stream's next (no earlier one can be this node's).
        let next = self.held.map_or(self.source.walked, |h| h.ordinal);
        let due = match self.pace.interval {
            // Room in the window, and no write pending (its writable event resumes it), as the JS engine's `!writing`.
            Some(interval) if self.inflight + self.detoured < self.slots.len() && self.out_start == self.out_end => {
                Some(self.due_at(next, interval))
            }
            _ => None,
        };
        let at = match (due, self.pace.deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        match (at, self.idle_retry) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Send time of the oldest request still waiting for its reply.
    pub fn oldest_sent_at(&self) -> Option<Instant> {
        let mut oldest = (self.inflight > 0).then(|| self.slots[self.head].sent_at);
        for d in &self.detours {
            if let Some(r) = d.sent.front().or(d.waiting.front()) {
                oldest = Some(oldest.map_or(r.slot.sent_at, |o| o.min(r.slot.sent_at)));
            }
        }
        oldest
    }

    /// Names the connection in messages: which one, and to where.
    pub fn label(&self) -> String {
        connection_label(self.id, self.peer.as_deref())
    }

    /// `--timeout`: the oldest request in flight has waited longer than it.
    pub fn timeout_failure(&self, timeout_ms: u64) -> Failure {
        Failure::new(
            FailureKind::Timeout,
            format!(
                "{}: no reply within {timeout_ms} ms (--timeout) after {} replies{}",
                self.label(),
                self.received,
                self.partial_note()
            ),
        )
    }

    /// The part of a reply that has arrived, for messages: a server that
    /// stopped mid-reply can be told from one that never answered.
    pub fn partial_note(&self) -> String {
        if self.input_len == 0 {
            return String::new();
        }
        format!(
            ", in the middle of a reply ({} bytes of it received: \"{}\")",
            self.input_len,
            escape_bytes(&self.input, 0, self.input_len, 32)
        )
    }

    /// Why the server's side of the connection went away, worded as the TS
    /// engine words it.
    fn closed_failure(&self, err: Option<io::Error>) -> Failure {
        let mid_reply = self.partial_note();
        let (where_, received) = (self.label(), self.received);
        let how = match err.as_ref().map(io::Error::kind) {
            None => "",
            Some(io::ErrorKind::ConnectionReset) => " (reset)",
            Some(io::ErrorKind::BrokenPipe) => " (EPIPE)",
            Some(io::ErrorKind::ConnectionAborted) => " (ECONNABORTED)",
            Some(_) => {
                let e = io_text(&err.expect("an error"));
                return Failure::new(FailureKind::Closed, format!("{where_}: {e} after {received} replies{mid_reply}"));
            }
        };
        Failure::new(
            FailureKind::Closed,
            format!("{where_}: connection closed by server after {received} replies{how}{mid_reply}"),
        )
    }

    /// Fills the window: encodes as many requests as it has room for into one
    /// buffer and writes them with one call, at most MAX_BATCH_BYTES' worth
    /// (256 KiB): a window larger than that goes out in several writes.
    /// Requests in one write share a send time. Under `--rate` only the
    /// requests of the connection's stream due by now go; under `--cluster`
    /// one of this node's drawn past them is held for its time ([`Held`]).
    fn send(&mut self, w: &PreparedPlan, tally: &mut Tally) -> Result<(), Failure> {
        let pipeline = self.slots.len();
        while self.out_start == self.out_end {
            // Requests on detours (`--cluster`) are in the window too.
            let free = pipeline.saturating_sub(self.inflight + self.detoured) as u64;
            if free == 0 {
                return Ok(());
            }
            let held = u64::from(self.held.is_some());
            // Requests to draw from the stream (a held one goes first, drawn already).
            let mut count = (free - held).min(self.source.remaining);
            let now = Instant::now();
            // `--rate`: requests of the connection's stream due by now (all of them without a rate).
            let mut due_count = u64::MAX;
            if let Some(interval) = self.pace.interval {
                // Open loop: only what is due by now.
                let into = now.saturating_duration_since(self.started_at).as_secs_f64() - self.pace.offset;
                due_count = if into < 0.0 { 0 } else { (into / interval).floor() as u64 + 1 };
                if self.held.is_some_and(|h| h.ordinal >= due_count) {
                    return Ok(());
                }
                count = count.min(due_count.saturating_sub(self.source.walked));
            }
            let count = (count + held).min(self.batch_limit as u64) as usize;
            if count == 0 {
                return Ok(());
            }
            let mut pos = 0;
            let mut sent = 0;
            let mut straight = 0;
            if let Some(h) = self.held.take() {
                // Drawn earlier, due now: first in the write, as it is in the stream.
                let len = h.request.len;
                if let Some(d) = self.moved_to(&h.request) {
                    let intended = self.intended(h.ordinal, now, tally);
                    self.send_straight(w, d, &h.request, Encoded::Held, now, intended);
                    straight = 1;
                } else {
                    self.out[..len].copy_from_slice(&self.held_bytes[..len]);
                    pos = len;
                    self.place(w, tally, h.request, true, h.ordinal, now);
                    sent = 1;
                }
            }
            while sent + straight < count {
                let r = self.source.next(w, &mut self.out[pos..]);
                if r.len == 0 {
                    // `--cluster`: the rest of the stream is other primaries'.
                    break;
                }
                // Its number in the connection's stream: `--rate`'s schedule.
                let ordinal = self.source.walked - 1;
                if ordinal >= due_count {
                    // `--rate` under `--cluster`: this node's next request is not due yet; it waits, encoded, for its time.
                    self.held_bytes[..r.len].copy_from_slice(&self.out[pos..pos + r.len]);
                    let n = (r.key_count as usize).min(self.held_keys.len());
                    self.held_keys[..n].copy_from_slice(&self.source.keys()[..n]);
                    self.held = Some(Held { request: r, ordinal });
                    break;
                }
                if let Some(d) = self.moved_to(&r) {
                    // `--cluster`: its slot moved (a MOVED said where): straight to the new owner, its bytes as encoded.
                    let intended = self.intended(ordinal, now, tally);
                    self.send_straight(w, d, &r, Encoded::Out(pos), now, intended);
                    straight += 1;
                    continue;
                }
                pos += r.len;
                self.place(w, tally, r, false, ordinal, now);
                sent += 1;
            }
            if sent == 0 && straight == 0 {
                return Ok(());
            }
            self.idle_wait = Duration::ZERO;
            // The ring's requests are in flight before any write can fail (a failed
            // write under --reconnect then counts them lost, as it counts the others).
            self.inflight += sent;
            self.out_start = 0;
            self.out_end = pos;
            if straight > 0 {
                for i in 0..self.detours.len() {
                    self.write_detour(w, tally, i, now).map_err(|f| self.detour_lost(f))?;
                }
            }
            self.flush(tally)?;
        }
        Ok(())
    }

    /// `--cluster`: the detour a request goes straight to, when a MOVED said its slot's new owner.
    fn moved_to(&self, r: &Request) -> Option<usize> {
        r.slot.and_then(|s| self.slot_detour.get(s as usize)).filter(|&&d| d >= 0).map(|&d| d as usize)
    }

    /// When request `ordinal` of the connection's stream was due (`--rate`,
    /// its schedule lag recorded), or now without a rate.
    fn intended(&self, ordinal: u64, now: Instant, tally: &mut Tally) -> Instant {
        match self.pace.interval {
            Some(interval) => {
                let at = self.due_at(ordinal, interval);
                if let Some(lag) = tally.lag.as_mut() {
                    lag.record(now.saturating_duration_since(at).as_nanos() as u64);
                }
                at
            }
            None => now,
        }
    }

    /// Takes the next ring slot for request `r`, written now; its keys are
    /// the held ones (`held`) or the source's. `ordinal`: its number in the
    /// connection's stream (`--rate`: when it was due).
    #[inline]
    fn place(&mut self, w: &PreparedPlan, tally: &mut Tally, r: Request, held: bool, ordinal: u64, now: Instant) {
        let pipeline = self.slots.len();
        let intended = self.intended(ordinal, now, tally);
        if self.max_keys > 1 {
            let at = self.tail * self.max_keys;
            let n = r.key_count as usize;
            let keys = if held { &self.held_keys[..n] } else { &self.source.keys()[..n] };
            self.slot_keys[at..at + n].copy_from_slice(keys);
        }
        self.slots[self.tail] = Slot::of(w, &r, now, intended);
        self.tail = if self.tail + 1 == pipeline { 0 } else { self.tail + 1 };
    }

    /// Writes what is pending; stops at WouldBlock (the writable event
    /// resumes it, and no request is encoded before). Bytes out count what
    /// the kernel took, as in the TS engine.
    fn flush(&mut self, tally: &mut Tally) -> Result<(), Failure> {
        while self.out_start < self.out_end {
            match self.stream.write(&self.out[self.out_start..self.out_end]) {
                Ok(0) => return Err(self.closed_failure(None)),
                Ok(n) => {
                    self.out_start += n;
                    tally.counters.bytes_out += n as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(self.closed_failure(Some(e))),
            }
        }
        self.out_start = 0;
        self.out_end = 0;
        Ok(())
    }

    pub fn on_writable(&mut self, w: &PreparedPlan, tally: &mut Tally) -> Result<Status, Failure> {
        // TLS: the records a full socket held back go first (a no-op for TCP and unix).
        if let Err(e) = self.stream.flush() {
            return Err(self.closed_failure(Some(e)));
        }
        self.flush(tally)?;
        self.pump(w, tally)
    }

    /// Reads what the socket has, takes every complete reply, refills the
    /// window. `closing`: the event said the server's side is closed (or in
    /// error), so read on to the end: no later event will say it again.
    pub fn on_readable(&mut self, w: &PreparedPlan, tally: &mut Tally, closing: bool) -> Result<Status, Failure> {
        loop {
            if self.input_len == self.input.len() {
                let grown = self.input.len() * 2;
                self.input.resize(grown, 0);
            }
            let space = self.input.len() - self.input_len;
            match self.stream.read(&mut self.input[self.input_len..]) {
                // The server closed its side after ours: the close wait is over.
                Ok(0) if self.answered_at.is_some() => return Ok(Status::Finished),
                Ok(0) => return Err(self.closed_failure(None)),
                Ok(n) => {
                    let now = Instant::now();
                    tally.counters.bytes_in += n as u64;
                    self.input_len += n;
                    self.take_replies(w, tally, now)?;
                    let status = self.pump(w, tally)?;
                    if status == Status::Finished {
                        return Ok(Status::Finished);
                    }
                    // A short read emptied the socket: epoll reports the next
                    // arrival, so another read now would only say WouldBlock.
                    // Not so for a FIN already reported with this event.
                    if n < space && !closing {
                        return Ok(status);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    return Ok(if self.answered_at.is_some() { Status::Closing } else { Status::Busy });
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) if self.answered_at.is_some() => return Ok(Status::Finished),
                Err(e) => return Err(self.closed_failure(Some(e))),
            }
        }
    }

    /// Scans and counts every complete reply in the read buffer, then keeps
    /// the incomplete tail at its start. Push frames are counted apart; a
    /// reply with no request waiting is a protocol error.
    fn take_replies(&mut self, w: &PreparedPlan, tally: &mut Tally, now: Instant) -> Result<(), Failure> {
        let end = self.input_len;
        let mut pos = 0;
        let pipeline = self.slots.len();
        let received_before = self.received;
        let errors_before = tally.counters.errors;
        // Requests of one batch share a send time and replies of one read a
        // receive time: one subtraction per batch, not per reply.
        let mut latency: (Option<Instant>, u64) = (None, 0);
        while pos < end {
            let buf = &self.input[..end];
            let reply_end = match self.scanner.resume(buf, pos) {
                Ok(Scan::Complete(reply_end)) => reply_end,
                Ok(Scan::Incomplete) => break,
                Err(e) => {
                    return Err(Failure::new(
                        FailureKind::Protocol,
                        format!(
                            "{}: protocol error after {} replies: {} at byte {} of the replies: \"{}\"",
                            self.label(),
                            self.received,
                            e.reason,
                            self.stream_base + e.offset as u64,
                            e.bytes
                        ),
                    ));
                }
            };
            if self.scanner.kind == ReplyKind::Push {
                // Out-of-band data (RESP3): no request's answer.
                tally.counters.pushes += 1;
                pos = reply_end;
                continue;
            }
            if self.inflight == 0 {
                return Err(Failure::new(
                    FailureKind::Protocol,
                    format!(
                        "{}: protocol error after {} replies: a reply no request asked for (the server sent more replies than requests, e.g. a greeting), at byte {} of the replies: \"{}\"",
                        self.label(),
                        self.received,
                        self.stream_base + pos as u64,
                        escape_bytes(buf, pos, reply_end, 32)
                    ),
                ));
            }
            let slot_index = self.head;
            let slot = self.slots[self.head];
            self.head = if self.head + 1 == pipeline { 0 } else { self.head + 1 };
            self.inflight -= 1;
            if w.plan.cluster.is_some() && self.scanner.kind == ReplyKind::Error {
                if let Some(kind) = redirect_kind(self.scanner.payload(buf)) {
                    self.redirect_text.clear();
                    self.redirect_text.extend_from_slice(self.scanner.payload(buf));
                    if let (Some(node), true) = (self.node, tally.histogram.is_some()) {
                        tally.nodes[node as usize].redirections += 1;
                    }
                    let keys_at = self.take_keys(w);
                    if keys_at != NO_KEYS {
                        let (to, from) = (keys_at as usize, slot_index * self.max_keys);
                        self.resend_keys[to..to + self.max_keys]
                            .copy_from_slice(&self.slot_keys[from..from + self.max_keys]);
                    }
                    let r = Resend { slot, keys_at, asking: false, hops: 0, first_try: now, not_before: now };
                    self.detour(w, tally, r, kind, now);
                    pos = reply_end;
                    continue;
                }
            }
            self.received += 1;
            if latency.0 != Some(slot.intended) {
                latency = (Some(slot.intended), now.saturating_duration_since(slot.intended).as_nanos() as u64);
            }
            let keys = if self.max_keys > 1 {
                let at = slot_index * self.max_keys;
                &self.slot_keys[at..at + self.max_keys]
            } else {
                std::slice::from_ref(&slot.key_index)
            };
            count_reply(w, tally, &self.scanner, buf, &slot, keys, now, latency.1, self.replica.is_some());
            if let Some(node) = self.node {
                if tally.histogram.is_some() {
                    let n = &mut tally.nodes[node as usize];
                    n.requests += 1;
                    n.histogram.record(latency.1);
                    if self.scanner.kind == ReplyKind::Error {
                        n.errors += 1;
                    }
                }
            }
            pos = reply_end;
            if self.scanner.kind == ReplyKind::Error {
                // NOAUTH / NOPERM: every request after it would be answered the same.
                if let Some(why) = handshake::fatal_reply_text(self.scanner.payload(buf), w.plan.user.as_deref()) {
                    return Err(Failure::new(
                        FailureKind::Auth,
                        format!("{}: {why} after {} replies", self.label(), self.received),
                    ));
                }
            }
        }
        tally.unreported_replies += self.received - received_before;
        tally.unreported_errors += tally.counters.errors - errors_before;
        // Part of a reply with nothing waiting for it: only a push frame may come unasked.
        if pos < end && self.inflight == 0 && self.input[pos] != b'>' {
            return Err(Failure::new(
                FailureKind::Protocol,
                format!(
                    "{}: protocol error after {} replies: unexpected bytes with no request waiting, at byte {} of the replies: \"{}\"",
                    self.label(),
                    self.received,
                    self.stream_base + pos as u64,
                    escape_bytes(&self.input, pos, end, 32)
                ),
            ));
        }
        if pos > 0 {
            self.input.copy_within(pos..end, 0);
            self.input_len = end - pos;
            self.stream_base += pos as u64;
            // The incomplete reply now starts at input[0]: its scan resumes there.
            self.scanner.moved(pos);
        }
        Ok(())
    }
}

impl Connection {
    /// `--cluster`: room for a request's keys while it is on a detour
    /// (`NO_KEYS` when every command names one key). The pool is made at the
    /// first redirection, the window's size: nothing allocated per request.
    fn take_keys(&mut self, w: &PreparedPlan) -> u32 {
        if self.max_keys <= 1 {
            return NO_KEYS;
        }
        if self.resend_keys.is_empty() {
            let pipeline = w.plan.pipeline.max(1) as usize;
            self.resend_keys = vec![0; pipeline * self.max_keys];
            self.free_keys = (0..pipeline).rev().map(|i| (i * self.max_keys) as u32).collect();
        }
        self.free_keys.pop().expect("more requests on detours than the window holds")
    }

    fn give_keys(&mut self, at: u32) {
        if at != NO_KEYS {
            self.free_keys.push(at);
        }
    }

    /// `--cluster`: a request of a slot a MOVED moved, sent straight to the
    /// new owner over this connection's detour there, once: its bytes as the
    /// source encoded them (`out[pos..]`) go to that detour's buffer, and
    /// its reply counts in the row of the node that answers it.
    fn send_straight(
        &mut self,
        w: &PreparedPlan,
        index: usize,
        r: &Request,
        encoded: Encoded,
        now: Instant,
        intended: Instant,
    ) {
        let keys_at = self.take_keys(w);
        if keys_at != NO_KEYS {
            let at = keys_at as usize;
            let n = r.key_count as usize;
            let keys = match encoded {
                Encoded::Held => &self.held_keys[..n],
                Encoded::Out(_) => &self.source.keys()[..n],
            };
            self.resend_keys[at..at + n].copy_from_slice(keys);
        }
        let slot = Slot::of(w, r, now, intended);
        let d = &mut self.detours[index];
        let bytes = match encoded {
            Encoded::Held => &self.held_bytes[..r.len],
            Encoded::Out(pos) => &self.out[pos..pos + r.len],
        };
        d.out.extend_from_slice(bytes);
        d.sent.push_back(Resend { slot, keys_at, asking: false, hops: 0, first_try: now, not_before: now });
        self.detoured += 1;
    }

    /// `--cluster`: a reply said the request belongs elsewhere or later
    /// (the TS engine's `detour`): MOVED and ASK send it again to the node
    /// named (ASK after ASKING) on a detour opened there on first use, and a
    /// MOVED sends the slot's later requests straight there; TRYAGAIN and
    /// CLUSTERDOWN send it again to this node after a backoff, until
    /// `--timeout` has passed since its first answer. Its latency counts
    /// from its first send, hops included. The reply's text is in
    /// `redirect_text`. Nothing is allocated per request (a new detour, the
    /// slot map and a given-up request's text are made once each).
    fn detour(&mut self, w: &PreparedPlan, tally: &mut Tally, mut r: Resend, kind: Redirect, now: Instant) {
        let c = &mut tally.counters;
        if r.hops == 0 {
            r.first_try = now;
        }
        r.hops += 1;
        let timeout = Duration::from_millis(if w.plan.timeout_ms > 0 { w.plan.timeout_ms } else { 10_000 });
        if r.hops > MAX_HOPS || now.saturating_duration_since(r.first_try) > timeout {
            // Given up: the last answer counts as the error reply it is.
            c.errors += 1;
            if tally.histogram.is_some() {
                c.requests += 1;
            }
            match r.slot.op {
                Op::Set => c.sets += 1,
                Op::Get => c.gets += 1,
            }
            self.received += 1;
            tally.unreported_replies += 1;
            tally.unreported_errors += 1;
            if tally.first.error.is_none() {
                let text = String::from_utf8_lossy(&self.redirect_text[..self.redirect_text.len().min(300)]);
                tally.first.error = Some((now, format!("{text} (after {} redirections or retries)", r.hops - 1)));
            }
            self.give_keys(r.keys_at);
            return;
        }
        self.detoured += 1;
        let text = std::mem::take(&mut self.redirect_text);
        let index = match kind {
            Redirect::Moved | Redirect::Ask => {
                // "MOVED 3999 127.0.0.1:6381" / "ASK 3999 127.0.0.1:6381"
                let space = text.iter().rposition(|&b| b == b' ').unwrap_or(0);
                let index = self.detour_to(w, &text[(space + 1).min(text.len())..]);
                if kind == Redirect::Moved {
                    c.moved += 1;
                    let slot =
                        text[6.min(space)..space].iter().fold(0usize, |n, &b| n * 10 + b.wrapping_sub(b'0') as usize);
                    self.slot_moved(slot, index);
                } else {
                    c.asked += 1;
                }
                r.asking = kind == Redirect::Ask;
                // Two nodes sending a request to each other while a slot changes hands: wait before the third hop.
                r.not_before = if r.hops <= FREE_HOPS { now } else { now + backoff(r.hops - FREE_HOPS) };
                index
            }
            Redirect::Retry => {
                c.retried += 1;
                r.asking = false;
                r.not_before = now + backoff(r.hops);
                // This connection's own node (its peer's text is lent, not copied).
                let own = self.peer.take();
                let index = match own.as_deref() {
                    Some(peer) => self.detour_to(w, peer.as_bytes()),
                    None => self.detour_to(w, format!("{}:{}", w.plan.host, w.plan.port).as_bytes()),
                };
                self.peer = own;
                index
            }
        };
        self.redirect_text = text;
        self.detours[index].waiting.push_back(r);
    }

    /// `--cluster`: MOVED said `slot` is at detour `index` now: its later
    /// requests go straight there (back to the source's routing when that is
    /// this connection's own node).
    fn slot_moved(&mut self, slot: usize, index: usize) {
        if slot >= SLOTS {
            return;
        }
        if self.slot_detour.is_empty() {
            self.slot_detour = vec![-1; SLOTS];
        }
        let own = self.peer.as_deref() == Some(self.detours[index].target.as_str());
        self.slot_detour[slot] = if own { -1 } else { index as i16 };
    }

    /// `--cluster`: the index of this connection's detour to the node
    /// `target` names (`host:port`), made on first use with its queues the
    /// window's size.
    fn detour_to(&mut self, w: &PreparedPlan, target: &[u8]) -> usize {
        if let Some(i) = self.detours.iter().position(|d| d.target.as_bytes() == target) {
            return i;
        }
        let target = String::from_utf8_lossy(target).into_owned();
        // The row its replies count in: the primary it is, or whose replica it is
        // (a failover promotes one: the shard's row), else this connection's own.
        let row = w
            .plan
            .cluster
            .as_ref()
            .and_then(|c| {
                (0..c.nodes.len()).find(|&i| {
                    c.node_label(i) == target
                        || c.replicas.get(i).is_some_and(|rs| {
                            rs.iter().any(|(h, p)| {
                                (if h.contains(':') { format!("[{h}]:{p}") } else { format!("{h}:{p}") }) == target
                            })
                        })
                })
            })
            .map(|i| i as u16)
            .or(self.node);
        let pipeline = w.plan.pipeline.max(1) as usize;
        self.detours.push(Detour {
            target,
            row,
            stream: None,
            waiting: VecDeque::with_capacity(pipeline),
            sent: VecDeque::with_capacity(pipeline),
            out: Vec::with_capacity((w.max_request_bytes + ASKING.len()) * pipeline.min(16)),
            out_start: 0,
            input: vec![0u8; 4096],
            input_len: 0,
            scanner: ReplyScanner::new(),
        });
        self.detours.len() - 1
    }

    /// `--cluster`: one turn of every detour: opens the ones not open yet
    /// (blocking this worker as a reconnect does) and registers them in the
    /// worker's poll under `token` (so a reply wakes it), writes what is due,
    /// reads and counts what came. Called by the worker on each loop turn
    /// while [`Connection::has_detours`].
    pub fn service_detours(
        &mut self,
        w: &PreparedPlan,
        tally: &mut Tally,
        control: &RunControl,
        registry: &mio::Registry,
        token: mio::Token,
    ) -> Result<Status, Failure> {
        let now = Instant::now();
        let mut i = 0;
        while i < self.detours.len() {
            let d = &self.detours[i];
            let due = d.waiting.front().is_some_and(|r| r.not_before <= now);
            if d.stream.is_none() && (due || !d.sent.is_empty()) {
                let target = d.target.clone();
                let Some((host, port)) = split_host_port(&target) else {
                    return Err(Failure::new(
                        FailureKind::Protocol,
                        format!("{}: a redirection to \"{target}\", which is no host:port", self.label()),
                    ));
                };
                let plan = Plan {
                    host: if host.is_empty() { w.plan.host.clone() } else { host },
                    port,
                    socket: None,
                    cluster: None,
                    ..w.plan.clone()
                };
                match open(&plan, control) {
                    Ok(mut stream) => {
                        // In the worker's poll, so its replies wake the worker; if registering
                        // fails, the worker's turns while requests wait still service it.
                        let _ =
                            registry.register(&mut stream, token, mio::Interest::READABLE | mio::Interest::WRITABLE);
                        self.detours[i].stream = Some(stream);
                    }
                    Err(ConnectError::Interrupted) => {
                        return Err(Failure::new(FailureKind::Interrupted, "interrupted"));
                    }
                    Err(ConnectError::Failed(m)) => {
                        // A node that just died (a failover under way): its slots go
                        // back to the source's routing, and what was for it asks this
                        // connection's own node again after a backoff, until --timeout.
                        for s in self.slot_detour.iter_mut().filter(|s| **s == i as i16) {
                            *s = -1;
                        }
                        self.redirect_text.clear();
                        self.redirect_text.extend_from_slice(format!("redirected to {target}: {m}").as_bytes());
                        let d = &mut self.detours[i];
                        d.out.clear();
                        d.out_start = 0;
                        let n = d.sent.len() + d.waiting.len();
                        for _ in 0..n {
                            let d = &mut self.detours[i];
                            let r = d.sent.pop_front().or_else(|| d.waiting.pop_front()).expect("a request");
                            self.detoured -= 1;
                            self.detour(w, tally, r, Redirect::Retry, now);
                        }
                        i += 1;
                        continue;
                    }
                }
            }
            self.write_detour(w, tally, i, now).map_err(|f| self.detour_lost(f))?;
            self.read_detour(w, tally, i).map_err(|f| self.detour_lost(f))?;
            i += 1;
        }
        self.pump(w, tally)
    }

    fn write_detour(&mut self, w: &PreparedPlan, tally: &mut Tally, i: usize, now: Instant) -> Result<(), Failure> {
        let d = &mut self.detours[i];
        while d.waiting.front().is_some_and(|r| r.not_before <= now) {
            let r = d.waiting.pop_front().expect("a waiting request");
            if r.asking {
                d.out.extend_from_slice(ASKING);
            }
            let at = d.out.len();
            d.out.resize(at + w.max_request_bytes, 0);
            let encoder = &w.commands[r.slot.command as usize].encoder;
            let keys = if r.keys_at == NO_KEYS {
                std::slice::from_ref(&r.slot.key_index)
            } else {
                let k = r.keys_at as usize;
                &self.resend_keys[k..k + encoder.key_count()]
            };
            let (len, _) =
                encoder.encode_keys(&mut d.out[at..], keys, &mut self.detour_scratch, &mut self.detour_rand, &w.values);
            d.out.truncate(at + len);
            d.sent.push_back(r);
        }
        let Some(stream) = d.stream.as_mut() else { return Ok(()) };
        while d.out_start < d.out.len() {
            match stream.write(&d.out[d.out_start..]) {
                Ok(0) => {
                    return Err(detour_failure(self.id, self.peer.as_deref(), &d.target, None));
                }
                Ok(n) => {
                    d.out_start += n;
                    tally.counters.bytes_out += n as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    return Err(detour_failure(self.id, self.peer.as_deref(), &d.target, Some(&e)));
                }
            }
        }
        let _ = stream.flush();
        if d.out_start == d.out.len() {
            d.out.clear();
            d.out_start = 0;
        }
        Ok(())
    }

    fn read_detour(&mut self, w: &PreparedPlan, tally: &mut Tally, i: usize) -> Result<(), Failure> {
        loop {
            let d = &mut self.detours[i];
            let Some(stream) = d.stream.as_mut() else { return Ok(()) };
            if d.input_len == d.input.len() {
                let grown = d.input.len() * 2;
                d.input.resize(grown, 0);
            }
            let n = match stream.read(&mut d.input[d.input_len..]) {
                Ok(0) => {
                    if d.sent.is_empty() && d.waiting.is_empty() {
                        return Ok(());
                    }
                    return Err(detour_failure(self.id, self.peer.as_deref(), &d.target, None));
                }
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    return Err(detour_failure(self.id, self.peer.as_deref(), &d.target, Some(&e)));
                }
            };
            tally.counters.bytes_in += n as u64;
            d.input_len += n;
            let now = Instant::now();
            let mut pos = 0;
            loop {
                let d = &mut self.detours[i];
                let end = d.input_len;
                if pos >= end {
                    break;
                }
                let reply_end = match d.scanner.resume(&d.input[..end], pos) {
                    Ok(Scan::Complete(e)) => e,
                    Ok(Scan::Incomplete) => break,
                    Err(e) => {
                        return Err(Failure::new(
                            FailureKind::Protocol,
                            format!(
                                "{}: protocol error in a reply from {}: {}: \"{}\"",
                                connection_label(self.id, self.peer.as_deref()),
                                d.target,
                                e.reason,
                                e.bytes
                            ),
                        ));
                    }
                };
                if d.scanner.kind == ReplyKind::Push {
                    tally.counters.pushes += 1;
                    pos = reply_end;
                    continue;
                }
                let Some(front) = d.sent.front_mut() else {
                    return Err(Failure::new(
                        FailureKind::Protocol,
                        format!(
                            "{}: protocol error: a reply no request asked for from {}",
                            connection_label(self.id, self.peer.as_deref()),
                            d.target
                        ),
                    ));
                };
                if front.asking {
                    // ASKING's own +OK; the request's reply comes next.
                    front.asking = false;
                    pos = reply_end;
                    continue;
                }
                let r = d.sent.pop_front().expect("a sent request");
                self.detoured -= 1;
                let d = &self.detours[i];
                let payload = d.scanner.payload(&d.input[..end]);
                if d.scanner.kind == ReplyKind::Error {
                    if let Some(kind) = redirect_kind(payload) {
                        self.redirect_text.clear();
                        self.redirect_text.extend_from_slice(payload);
                        if let (Some(row), true) = (d.row, tally.histogram.is_some()) {
                            tally.nodes[row as usize].redirections += 1;
                        }
                        pos = reply_end;
                        self.detour(w, tally, r, kind, now);
                        continue;
                    }
                }
                let latency = now.saturating_duration_since(r.slot.intended).as_nanos() as u64;
                let errors_before = tally.counters.errors;
                let keys = if r.keys_at == NO_KEYS {
                    std::slice::from_ref(&r.slot.key_index)
                } else {
                    &self.resend_keys[r.keys_at as usize..r.keys_at as usize + self.max_keys]
                };
                count_reply(w, tally, &d.scanner, &d.input[..end], &r.slot, keys, now, latency, self.replica.is_some());
                // The row of the node that answered (docs/cluster.md).
                if let (Some(node), true) = (d.row, tally.histogram.is_some()) {
                    let t = &mut tally.nodes[node as usize];
                    t.requests += 1;
                    t.histogram.record(latency);
                    if d.scanner.kind == ReplyKind::Error {
                        t.errors += 1;
                    }
                }
                self.received += 1;
                tally.unreported_replies += 1;
                tally.unreported_errors += tally.counters.errors - errors_before;
                self.give_keys(r.keys_at);
                pos = reply_end;
            }
            let d = &mut self.detours[i];
            if pos > 0 {
                d.input.copy_within(pos..d.input_len, 0);
                d.input_len -= pos;
                d.scanner.moved(pos);
            }
        }
    }
}

/// `host:port` or `[v6]:port`.
fn split_host_port(text: &str) -> Option<(String, u16)> {
    let (host, port) = text.rsplit_once(':')?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    Some((host.to_string(), port.parse().ok()?))
}

/// Counts one reply against the request it answers, as the TS engine's onReply.
/// `replica`: `--read-from`, the reply came from a replica (a nil may be stale).
#[inline]
#[allow(clippy::too_many_arguments)]
fn count_reply(
    w: &PreparedPlan,
    tally: &mut Tally,
    scanner: &ReplyScanner,
    buf: &[u8],
    slot: &Slot,
    keys: &[u64],
    now: Instant,
    latency_ns: u64,
    replica: bool,
) {
    let c = &mut tally.counters;
    if let Some(h) = tally.histogram.as_mut() {
        h.of(slot.command).record(latency_ns);
        if let Some(service) = tally.service.as_mut() {
            service.record(now.saturating_duration_since(slot.sent_at).as_nanos() as u64);
        }
        c.requests += 1;
    }
    match slot.op {
        Op::Set => c.sets += 1,
        Op::Get => c.gets += 1,
    }
    if scanner.kind == ReplyKind::Error {
        c.errors += 1;
        if tally.first.error.is_none() {
            let text = scanner.payload(buf);
            let text: String = text[..text.len().min(MAX_ERROR_TEXT)].iter().map(|&b| b as char).collect();
            tally.first.error = Some((now, text));
        }
        return;
    }
    let command = &w.commands[slot.command as usize];
    if slot.op == Op::Set {
        c.ok += 1;
        // Only a write of the key's value makes a later read of it find one (not INCR, LPUSH, …).
        if let Some(written) = w.written.as_ref().filter(|_| command.kind == CommandKind::Write) {
            for &key in &keys[..command.encoder.key_count()] {
                written.add(key);
            }
        }
        return;
    }
    if command.array_reply {
        count_array_reply(w, tally, scanner, buf, &keys[..command.encoder.key_count()], now, replica);
        return;
    }
    if scanner.kind == ReplyKind::Nil {
        // A replica may not have a write yet (replication lag): stale, not lost.
        if replica && (slot.written_before || w.miss_fails_verify) {
            c.stale_reads += 1;
            c.ok += 1;
        }
        // A key whose write was acknowledged before this read went out must be there.
        else if slot.written_before {
            c.lost_writes += 1;
        } else {
            c.misses += 1;
            if !w.miss_fails_verify {
                c.ok += 1;
            }
        }
        return;
    }
    if !w.verify {
        c.ok += 1;
        return;
    }
    let value = matches!(scanner.kind, ReplyKind::Bulk | ReplyKind::Verbatim);
    if value && w.values.matches(scanner.payload(buf), slot.key_hash) {
        c.ok += 1;
        return;
    }
    c.mismatches += 1;
    if tally.first.mismatch.is_none() {
        tally.first.mismatch = Some((now, describe_mismatch(w, scanner, buf, slot.key_index)));
    }
}

/// A read answered with one value per key (MGET), as `countArrayReply` in
/// the TS engine: each element is checked against its key's value
/// (`--verify-get`). The request counts once: a mismatch if any key's value
/// differs (the first one described), else a miss if any key was nil, else ok.
fn count_array_reply(
    w: &PreparedPlan,
    tally: &mut Tally,
    s: &ReplyScanner,
    buf: &[u8],
    keys: &[u64],
    now: Instant,
    replica: bool,
) {
    let c = &mut tally.counters;
    // The text is made for the first mismatch only: later ones allocate nothing.
    let mismatch = |tally_first: &mut FirstTexts, text: &dyn Fn() -> String| {
        if tally_first.mismatch.is_none() {
            tally_first.mismatch = Some((now, text()));
        }
    };
    if s.kind != ReplyKind::Aggregate || s.payload_len != keys.len() {
        if !w.verify {
            c.ok += 1;
        } else {
            c.mismatches += 1;
            let text = || {
                format!(
                    "key {}: expected an array of {} values, got \"{}\"",
                    w.key_text(keys[0]),
                    keys.len(),
                    escape_bytes(buf, s.payload_start.saturating_sub(1), (s.payload_start + 16).min(buf.len()), 48)
                )
            };
            mismatch(&mut tally.first, &text);
        }
        return;
    }
    let mut pos = s.payload_start;
    let mut nils = 0;
    for &key in keys {
        match buf[pos] {
            b'_' => {
                // RESP3 null
                nils += 1;
                pos += 3;
                continue;
            }
            b'$' => {}
            _ => {
                // Not a bulk string: not a value (the rest cannot be walked without the scanner).
                if !w.verify {
                    c.ok += 1;
                } else {
                    c.mismatches += 1;
                    let text = || {
                        format!(
                            "key {}: expected a value, got \"{}\"",
                            w.key_text(key),
                            escape_bytes(buf, pos, (pos + 16).min(buf.len()), 48)
                        )
                    };
                    mismatch(&mut tally.first, &text);
                }
                return;
            }
        }
        let mut p = pos + 1;
        let negative = buf[p] == b'-';
        if negative {
            p += 1;
        }
        let mut len = 0usize;
        while buf[p] != b'\r' {
            len = len * 10 + (buf[p] - b'0') as usize;
            p += 1;
        }
        p += 2;
        if negative {
            nils += 1;
            pos = p;
            continue;
        }
        let got = &buf[p..p + len];
        if w.verify && !w.values.matches(got, w.key_hash_of(key)) {
            c.mismatches += 1;
            let text = || {
                let expected = w.value_bytes(key);
                let at = first_difference(&expected, got);
                format!(
                    "key {}: {} bytes expected, {} received, first difference at byte {at}: expected \"{}\", got \"{}\"",
                    w.key_text(key),
                    expected.len(),
                    len,
                    escape_bytes(&expected, 0, expected.len(), 48),
                    escape_bytes(got, 0, got.len(), 48)
                )
            };
            mismatch(&mut tally.first, &text);
            return;
        }
        pos = p + len + 2;
    }
    if nils == 0 {
        c.ok += 1;
    } else if replica && w.miss_fails_verify {
        // --read-from: a preloaded key a replica has not got yet (replication lag): stale, as a single read's nil.
        c.stale_reads += 1;
        c.ok += 1;
    } else {
        c.misses += 1;
        if !w.miss_fails_verify {
            c.ok += 1;
        }
    }
}

/// `key K: …` with both lengths and the first byte that differs, both sides
/// shown from a little before it (two 1 MiB values differing at byte
/// 900,000 show that byte, not two equal prefixes). Worded as the TS engine.
fn describe_mismatch(w: &PreparedPlan, s: &ReplyScanner, buf: &[u8], key_index: u64) -> String {
    let expected = w.value_bytes(key_index);
    let key = w.key_text(key_index);
    if !matches!(s.kind, ReplyKind::Bulk | ReplyKind::Verbatim) {
        return format!(
            "key {key}: expected a {}-byte value, got a non-bulk reply \"{}\"",
            expected.len(),
            escape_bytes(buf, s.payload_start.saturating_sub(1), s.payload_start + s.payload_len + 2, 48)
        );
    }
    let got = s.payload(buf);
    let at = first_difference(&expected, got);
    let from = if at < 16 { 0 } else { at - 8 };
    let shown = |b: &[u8]| format!("\"{}{}\"", if from > 0 { "…" } else { "" }, escape_bytes(b, from, b.len(), 48));
    format!(
        "key {key}: {} bytes expected, {} received, first difference at byte {at}: expected {}, got {}",
        expected.len(),
        got.len(),
        shown(&expected),
        shown(got)
    )
}

/// Names a connection in messages: which one, and to where.
fn connection_label(id: u32, peer: Option<&str>) -> String {
    match peer {
        Some(peer) => format!("connection {id} ({peer})"),
        None => format!("connection {id}"),
    }
}

/// A redirection's link to another node closed (`cause` None) or failed. Built
/// only when it happens: servicing a link formats nothing.
fn detour_failure(id: u32, peer: Option<&str>, target: &str, cause: Option<&io::Error>) -> Failure {
    let label = connection_label(id, peer);
    let what = match cause {
        None => "was closed by the server".to_string(),
        Some(e) => format!("failed: {}", io_text(e)),
    };
    Failure::new(
        FailureKind::Closed,
        format!("{label}: the connection to {target} (where a redirection sent it) {what}"),
    )
}
