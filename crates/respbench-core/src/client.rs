//! Client: one per `-c` (under `--cluster`, one per `-c` and primary, each
//! walking the connection's key stream for its primary's share). It owns
//! its RequestSource and its share of the window: `pipeline` requests in
//! flight at most, on its own Link and on those its Router opened. It asks
//! the Pacer what is due, the Router where each request goes, and hands
//! every reply to the Tally (or, redirected, back to the Router). Generic
//! over the Router kind: one server compiles none of a cluster's code.

use std::time::{Duration, Instant};

use crate::handshake;
use crate::link::{Fill, InFlight, Link, MAX_BATCH_BYTES, OnReply, Taken};
use crate::pacer::Pacer;
use crate::plan::{Failure, FailureKind, Reconnect};
use crate::recovery::Down;
use crate::reply::{ReplyKind, ReplyScanner};
use crate::request_source::{PreparedPlan, Request, RequestSource};
use crate::router::{Router, redirect_kind};
use crate::tally::Tally;
use crate::transport::Stream;

mod ahead;
mod peers;
mod ring_events;
use ahead::Ahead;
pub(crate) use ring_events::Received;

/// How long a client whose share is answered waits, after closing its
/// side, for the server to close its own: a reply arriving then is one no
/// request asked for (a greeting shifted every reply by one). Redis closes
/// at once; a server that keeps its side open costs the phase this much. As
/// the TS engine's CLOSE_WAIT_MS.
pub(crate) const CLOSE_WAIT: Duration = Duration::from_millis(200);
/// `--cluster`: longest wait before looking again at a stream that had nothing for this node.
const IDLE_WAIT_CAP: Duration = Duration::from_millis(50);

/// Whether a client still has work after an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Status {
    Busy,
    /// Its share answered and its side closed: waiting for the server to
    /// close its own (at most [`CLOSE_WAIT`]).
    Closing,
    Finished,
}

/// `--rate` under `--cluster`: a request drawn before it was due (the
/// stream's requests between were other primaries'), held encoded until
/// its time comes, so the client keeps the schedule it has without
/// `--cluster` (as the TS engine's `held`).
#[derive(Clone, Copy, Debug)]
struct Held {
    request: Request,
    /// Its number in the client's stream (`RequestSource::walked - 1` when drawn).
    ordinal: u64,
}

pub(crate) struct Client<R: Router> {
    /// `--cluster`: the primary this client's own Link goes to (its index).
    pub node: Option<u16>,
    /// `--read-from`: its Link reads from this replica of `node` (READONLY);
    /// a nil there for a written key is a stale read, and a reconnect opens it again.
    pub replica: Option<(String, u16)>,
    pub link: Link,
    pub router: R,
    source: RequestSource,
    window: usize,
    /// `--pipeline-mode batch`: requests of the current batch not yet sent
    /// (None: a sliding window). See [`Client::room`].
    batch_left: Option<usize>,
    /// Requests per write at most: the window, unless that would exceed MAX_BATCH_BYTES.
    batch_limit: usize,
    pub pacer: Pacer,
    held: Option<Held>,
    held_bytes: Box<[u8]>,
    held_keys: Box<[u64]>,
    /// The plain closed loop: its next batch, encoded while the window is full ([`ahead`]).
    ahead: Option<Ahead>,
    /// When its share was answered (and its side was closed); the phase ends at
    /// the latest of these.
    pub answered_at: Option<Instant>,
    /// `--reconnect`: set while its Link is down after a drop.
    pub down: Option<Down>,
    /// `--reconnect`: the Link's replies when it was last opened again, and
    /// how many reopened Links in a row closed before any reply (see `dropped`).
    reopened_at: Option<u64>,
    silent_reopens: u32,
    /// `--cluster`: when to look again at a stream that had nothing for this
    /// node, and the growing wait (as the TS engine).
    idle_retry: Option<Instant>,
    idle_wait: Duration,
}

/// A reply's meaning: redirected by the Router (a cluster), else counted
/// by the Tally in the row of the node that answered.
struct Answering<'a, R> {
    w: &'a PreparedPlan,
    tally: &'a mut Tally,
    router: &'a mut R,
    row: Option<u16>,
    /// The Router's peer whose Link the replies come on.
    peer: usize,
    replica: bool,
}

impl<R: Router> OnReply for Answering<'_, R> {
    const ASKS: bool = R::REDIRECTS;

    #[inline]
    fn reply(
        &mut self,
        entry: &InFlight,
        keys: &[u64],
        scanner: &ReplyScanner,
        buf: &[u8],
        now: Instant,
        latency_ns: u64,
    ) -> Taken {
        if R::REDIRECTS && scanner.kind == ReplyKind::Error {
            let payload = scanner.payload(buf);
            if let Some(kind) = redirect_kind(payload) {
                self.router.redirect(self.w, self.tally, *entry, keys, kind, payload, Some(self.peer), now);
                return Taken::Redirected;
            }
        }
        self.tally.answer(self.w, scanner, buf, entry, keys, now, latency_ns, self.replica, self.row);
        self.tally.unreported_replies += 1;
        if scanner.kind == ReplyKind::Error {
            self.tally.unreported_errors += 1;
            // NOAUTH / NOPERM: every request after it would be answered the same.
            if let Some(why) = handshake::fatal_reply_text(scanner.payload(buf), self.w.plan.user.as_deref()) {
                return Taken::Fatal(why);
            }
        }
        Taken::Answered
    }
}

impl<R: Router> Client<R> {
    pub fn new(
        id: u32,
        stream: Stream,
        source: RequestSource,
        prepared: &PreparedPlan,
        pacer: Pacer,
        router: R,
    ) -> Self {
        let window = prepared.plan.pipeline.max(1) as usize;
        let per_request = prepared.max_request_bytes;
        let (batch_limit, out) = Self::write_batches(window, per_request, MAX_BATCH_BYTES);
        let holds = pacer.interval.is_some() && R::REDIRECTS;
        let plain = !R::REDIRECTS && pacer.interval.is_none();
        let ahead = (plain && Ahead::fits(prepared, window, prepared.plan.pipeline_batch)).then(Ahead::new);
        Client {
            node: None,
            replica: None,
            link: Link::new(id, stream, prepared, window, out),
            router,
            source,
            window,
            batch_left: if prepared.plan.pipeline_batch { Some(0) } else { None },
            batch_limit,
            pacer,
            held: None,
            held_bytes: vec![0u8; if holds { per_request } else { 0 }].into_boxed_slice(),
            held_keys: vec![0; if holds { prepared.max_keys } else { 0 }].into_boxed_slice(),
            ahead,
            answered_at: None,
            down: None,
            reopened_at: None,
            silent_reopens: 0,
            idle_retry: None,
            idle_wait: Duration::ZERO,
        }
    }

    /// Requests per write at most, with `batch_bytes` of requests of up to
    /// `per_request` bytes per write at most (one request always fits), and
    /// the write buffer's size: room for a batch, and for the redirected
    /// requests (ASKING before each) a turn sends again on it.
    fn write_batches(window: usize, per_request: usize, batch_bytes: usize) -> (usize, usize) {
        let batch_limit = window.min((batch_bytes / per_request).max(1));
        let asking = if R::REDIRECTS { crate::router::ASKING.len() * batch_limit } else { 0 };
        (batch_limit, batch_limit * per_request + asking)
    }

    /// Requests written whose replies have not come yet (redirected ones included).
    pub fn inflight(&self) -> usize {
        self.link.inflight() + self.router.pending()
    }

    /// Sends the first window. A client with nothing to send is finished at once.
    pub fn start(&mut self, w: &PreparedPlan, tally: &mut Tally) -> Result<Status, Failure> {
        self.pacer.start(Instant::now());
        self.pump(w, tally)
    }

    /// `--reconnect`: its Link dropped (`why`). What was in flight on it is
    /// lost; the caller has taken the stream out of its poll; it is replaced
    /// by [`Client::reconnected`].
    ///
    /// A Link opened again that closes before any reply (a server that
    /// accepts and closes at once, or a proxy with no backend) is the same
    /// outage going on, not a recovery: the next attempt counts on from the
    /// last, with its backoff, so `--reconnect-attempts` bounds it as it
    /// bounds a refused connect (Err: the run's failure text).
    pub fn dropped(&mut self, why: String, tally: &mut Tally, policy: &Reconnect) -> Result<(), String> {
        tally.counters.lost += self.link.forget() as u64;
        let silent = self.reopened_at == Some(self.link.received);
        self.silent_reopens = if silent { self.silent_reopens + 1 } else { 0 };
        if self.silent_reopens >= policy.attempts {
            return Err(format!(
                "{why}; not reconnected after {} attempts (--reconnect-attempts): each connection opened again was closed before any reply",
                policy.attempts
            ));
        }
        self.down = Some(Down::after(why, self.silent_reopens, policy, Instant::now()));
        Ok(())
    }

    /// `--reconnect`: whether there is anything left to reconnect for: not
    /// when the phase's time is up or its share is all handed out.
    pub fn wants_reconnect(&mut self, now: Instant) -> bool {
        if self.pacer.expired(now) {
            self.end_stream();
        }
        self.has_more()
    }

    /// Requests of its share still to send: in the stream, held, or encoded ahead.
    #[inline]
    fn has_more(&self) -> bool {
        self.source.remaining > 0 || self.held.is_some() || self.staged() > 0
    }

    /// Time is up: nothing more is sent (a held request included: it was not due before the end).
    fn end_stream(&mut self) {
        self.source.remaining = 0;
        self.held = None;
        if let Some(a) = self.ahead.as_mut() {
            a.clear();
        }
    }

    /// `--reconnect`: up again on `stream`, or given up on (None); the time
    /// down counts either way.
    pub fn reconnected(&mut self, w: &PreparedPlan, stream: Option<Stream>, tally: &mut Tally) {
        if let Some(down) = self.down.take() {
            tally.counters.down_ns += down.since.elapsed().as_nanos() as u64;
        }
        match stream {
            Some(stream) => {
                // --cluster: it may have reopened at another primary (one server: nothing to ask).
                if R::REDIRECTS {
                    if let Some(at) = stream.peer_label() {
                        self.router.rehome(w, tally, &at);
                    }
                }
                self.link.replace_stream(stream);
                self.reopened_at = Some(self.link.received);
                tally.counters.reconnects += 1;
            }
            // Nothing left to send: its share ends here.
            None => self.answered_at = Some(Instant::now()),
        }
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
        if self.pacer.deadline.is_some() && self.pacer.expired(Instant::now()) {
            self.end_stream();
        }
        if R::REDIRECTS {
            self.idle_retry = None;
            if self.router.pending() > 0 {
                self.router.service(w, tally, &mut self.link, Instant::now())?;
            }
        }
        if self.has_more() {
            self.send(w, tally)?;
        }
        let idle = self.link.inflight() == 0 && self.router.pending() == 0 && !self.link.writing();
        if R::REDIRECTS && self.source.remaining > 0 && idle && self.pacer.interval.is_none() {
            // `--cluster`: nothing of this node's in the stream just now; look again later (backing off).
            self.idle_wait = (self.idle_wait * 2).max(Duration::from_millis(1)).min(IDLE_WAIT_CAP);
            self.idle_retry = Some(Instant::now() + self.idle_wait);
        }
        if !self.has_more() && idle {
            return Ok(self.close_our_side());
        }
        Ok(Status::Busy)
    }

    /// Its share answered: close our side and wait for the server to close
    /// its own, so that a reply nobody asked for, still on its way, is seen
    /// as the protocol error it is (the TS engine's `complete`).
    fn close_our_side(&mut self) -> Status {
        self.answered_at = Some(Instant::now());
        if self.link.stream.shutdown_write().is_err() {
            // Already gone: nothing more can arrive.
            return Status::Finished;
        }
        Status::Closing
    }

    /// Whether the close wait has lasted [`CLOSE_WAIT`] by `now`.
    pub fn close_wait_expired(&self, now: Instant) -> bool {
        self.answered_at.is_some_and(|at| now.saturating_duration_since(at) >= CLOSE_WAIT)
    }

    /// When this client next needs a turn that no socket event will give
    /// it: the next due request under `--rate`, the end of a time-bound
    /// phase, a redirected request's backoff.
    pub fn next_wake(&self) -> Option<Instant> {
        if self.down.is_some() {
            return None;
        }
        let now = Instant::now();
        let routed = if R::REDIRECTS { self.router.next_wake(now) } else { None };
        if !self.has_more() {
            return routed;
        }
        // The held request, else the stream's next (no earlier one can be this node's).
        let next = self.held.map_or(self.source.walked, |h| h.ordinal);
        // Room in the window, and no write pending (its writable event resumes it), as the JS engine's `!writing`.
        let due = if self.inflight() < self.window && !self.link.writing() { self.pacer.due_at(next) } else { None };
        [due, self.pacer.deadline, self.idle_retry, routed].into_iter().flatten().min()
    }

    /// Send time of the oldest request still waiting for its reply.
    pub fn oldest_sent_at(&self) -> Option<Instant> {
        [self.link.oldest_sent_at(), self.router.oldest_sent_at()].into_iter().flatten().min()
    }

    /// `--timeout`: the oldest request in flight has waited longer than it.
    pub fn timeout_failure(&self, timeout_ms: u64) -> Failure {
        Failure::new(
            FailureKind::Timeout,
            format!(
                "{}: no reply within {timeout_ms} ms (--timeout) after {} replies{}",
                self.link.label(),
                self.link.received,
                self.link.partial_note()
            ),
        )
    }

    /// Fills the window: encodes as many requests as it has room for into one
    /// buffer and writes them with one call, at most MAX_BATCH_BYTES' worth
    /// (256 KiB): a window larger than that goes out in several writes.
    /// Requests in one write share a send time. Under `--rate` only the
    /// requests of the client's stream due by now go; under `--cluster` one
    /// of this node's drawn past them is held for its time ([`Held`]).
    fn send(&mut self, w: &PreparedPlan, tally: &mut Tally) -> Result<(), Failure> {
        if !R::REDIRECTS && self.pacer.interval.is_none() {
            return self.send_closed_loop(w, tally);
        }
        while !self.link.writing() {
            // Redirected requests (`--cluster`) are in the window too.
            let inflight = self.link.inflight() + self.router.pending();
            let free = self.room(inflight) as u64;
            if free == 0 {
                return Ok(());
            }
            let held = u64::from(self.held.is_some());
            // Requests to draw from the stream (a held one goes first, drawn already).
            let mut count = (free - held).min(self.source.remaining);
            let now = Instant::now();
            // `--rate`: requests of the client's stream due by now (all of them in a closed loop).
            let due_count = self.pacer.due_count(now);
            if self.pacer.interval.is_some() {
                if self.held.is_some_and(|h| h.ordinal >= due_count) {
                    return Ok(());
                }
                count = count.min(due_count.saturating_sub(self.source.walked));
            }
            let count = (count + held).min(self.batch_limit as u64) as usize;
            if count == 0 {
                return Ok(());
            }
            let mut sent = 0;
            let mut straight = 0;
            if let Some(h) = self.held.take() {
                // Drawn earlier, due now: first in the write, as it is in the stream.
                let (len, n) = (h.request.len, h.request.key_count as usize);
                let intended = self.pacer.intended(h.ordinal, now, tally.lag.as_mut());
                let entry = InFlight::of(w, &h.request, &self.held_keys[..n.min(self.held_keys.len())], now, intended);
                if let Some(peer) = self.router.moved_to(&h.request) {
                    self.router.send_straight(peer, &self.held_bytes[..len], &self.held_keys[..n], entry);
                    straight = 1;
                } else {
                    self.link.spare()[..len].copy_from_slice(&self.held_bytes[..len]);
                    self.link.push(entry, len, &self.held_keys[..n.min(self.held_keys.len())]);
                    sent = 1;
                }
            }
            while sent + straight < count {
                let r = self.source.next(w, self.link.spare());
                if r.len == 0 {
                    // `--cluster`: the rest of the stream is other primaries'.
                    break;
                }
                // Its number in the client's stream: `--rate`'s schedule.
                let ordinal = self.source.walked - 1;
                if ordinal >= due_count {
                    // `--rate` under `--cluster`: this node's next request is not due yet; it waits, encoded, for its time.
                    self.held_bytes[..r.len].copy_from_slice(self.link.spare_bytes(r.len));
                    let n = (r.key_count as usize).min(self.held_keys.len());
                    self.held_keys[..n].copy_from_slice(&self.source.keys()[..n]);
                    self.held = Some(Held { request: r, ordinal });
                    break;
                }
                let intended = self.pacer.intended(ordinal, now, tally.lag.as_mut());
                let keys = &self.source.keys()[..r.key_count as usize];
                let entry = InFlight::of(w, &r, keys, now, intended);
                if R::REDIRECTS {
                    if let Some(peer) = self.router.moved_to(&r) {
                        // `--cluster`: its slot moved (a MOVED said where): straight to the new owner, its bytes as encoded.
                        self.router.send_straight(peer, self.link.spare_bytes(r.len), keys, entry);
                        straight += 1;
                        continue;
                    }
                }
                self.link.push(entry, r.len, keys);
                sent += 1;
            }
            if sent == 0 && straight == 0 {
                return Ok(());
            }
            if let Some(left) = self.batch_left.as_mut() {
                *left -= sent + straight;
            }
            if R::REDIRECTS {
                self.idle_wait = Duration::ZERO;
                if straight > 0 {
                    // The ring's requests are in flight before any write can fail (a failed
                    // write under --reconnect then counts them lost, as it counts the others).
                    self.router.service(w, tally, &mut self.link, now)?;
                }
            }
            self.link.flush(&mut tally.counters.bytes_out)?;
        }
        Ok(())
    }

    /// [`Client::send`] for one server in a closed loop: every request is
    /// due at once and goes on the client's own Link, so a batch is only the
    /// window's room, drawn and pushed; no schedule, held request or route
    /// is looked at per request.
    fn send_closed_loop(&mut self, w: &PreparedPlan, tally: &mut Tally) -> Result<(), Failure> {
        while !self.link.writing() {
            let free = self.room(self.link.inflight());
            let more = self.source.remaining + self.staged() as u64;
            let count = (free as u64).min(more).min(self.batch_limit as u64) as usize;
            if count == 0 {
                if free == 0 {
                    // The server has the window: the next batch is made ready meanwhile.
                    self.encode_ahead(w);
                }
                return Ok(());
            }
            if let Some(left) = self.batch_left.as_mut() {
                *left -= count;
            }
            // Requests of one write share a send time, and are due when sent.
            let now = Instant::now();
            let ready = self.commit_ahead(count, now);
            for _ in ready..count {
                let r = self.source.next(w, self.link.spare());
                let keys = &self.source.keys()[..r.key_count as usize];
                let entry = InFlight::of(w, &r, keys, now, now);
                self.link.push(entry, r.len, keys);
            }
            self.link.flush(&mut tally.counters.bytes_out)?;
        }
        Ok(())
    }

    /// Requests it may send now with `inflight` unanswered: the window's
    /// room, or (`--pipeline-mode batch`) what is left of the current batch,
    /// a new one of `pipeline` opening only once every request of the last
    /// is answered. Asked once per write, not per request.
    #[inline]
    fn room(&mut self, inflight: usize) -> usize {
        match self.batch_left.as_mut() {
            None => self.window.saturating_sub(inflight),
            Some(left) => {
                if *left == 0 && inflight == 0 {
                    *left = self.window;
                }
                *left
            }
        }
    }

    /// Its own Link is writable again.
    pub fn on_writable(&mut self, w: &PreparedPlan, tally: &mut Tally) -> Result<Status, Failure> {
        self.link.on_writable(&mut tally.counters.bytes_out)?;
        self.pump(w, tally)
    }

    /// Reads what its own Link has, takes every complete reply, refills the
    /// window. `closing`: the event said the server's side is closed (or in
    /// error), so read on to the end: no later event will say it again.
    pub fn on_readable(&mut self, w: &PreparedPlan, tally: &mut Tally, closing: bool) -> Result<Status, Failure> {
        loop {
            match self.link.fill(&mut tally.counters.bytes_in) {
                // The server closed its side after ours: the close wait is over.
                Fill::Closed if self.answered_at.is_some() => return Ok(Status::Finished),
                Fill::Closed => return Err(self.link.closed_failure(None)),
                Fill::Bytes { n, space } => {
                    self.take_own_replies(w, tally)?;
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
                Fill::WouldBlock => {
                    return Ok(if self.answered_at.is_some() { Status::Closing } else { Status::Busy });
                }
                Fill::Failed(_) if self.answered_at.is_some() => return Ok(Status::Finished),
                Fill::Failed(e) => return Err(self.link.closed_failure(Some(e))),
            }
        }
    }

    /// Every complete reply in its own Link's read buffer, to the Tally (or the Router).
    #[inline(always)]
    fn take_own_replies(&mut self, w: &PreparedPlan, tally: &mut Tally) -> Result<(), Failure> {
        let now = Instant::now();
        let mut owner = Answering {
            w,
            // Its own node's row, or (--cluster, reopened at another primary) that one's.
            row: if R::REDIRECTS { self.router.row_of(crate::router::HOME) } else { self.node },
            peer: crate::router::HOME,
            replica: self.replica.is_some(),
            tally: &mut *tally,
            router: &mut self.router,
        };
        let pushes = &mut 0;
        let taken = self.link.take_replies(&mut owner, pushes, now);
        tally.counters.pushes += *pushes;
        taken
    }
}
