//! Worker loop: one thread's clients, driven by mio (epoll) and timers.
//! It owns no policy: on each socket event it hands the event to the
//! client whose Link it is; on each turn it asks the clients when they next
//! need one (the Pacer's schedule, a Router's backoff), asks the Tally to
//! cut the time series, and asks Recovery when a down client is due to
//! reopen. Compiled once per Router kind ([`crate::router::Router`]), so
//! one server's loop holds none of a cluster's work.

use std::sync::Barrier;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::answer_watch::{self, AnswerWatch};
use crate::client::{Client, Status};
use crate::handshake::ConnectError;
use crate::histogram::{LatencyHistogram, OpHistograms};
use crate::pacer::Pacer;
use crate::plan::{Failure, FailureKind};
use crate::progress::RunControl;
use crate::recovery::reconnect_target;
use crate::request_source::{PreparedPlan, RequestSource};
use crate::router::Router;
use crate::tally::{IntervalClock, Tally};
use crate::topology_refresh::{self, TopologyRefresh};

mod epoll;
mod ring;
pub(crate) use epoll::EpollIo;
pub(crate) use ring::UringIo;

/// The seam between the loop and its I/O (`crate::io`): epoll ([`EpollIo`])
/// or io_uring ([`UringIo`]). The loop is compiled once per backend (static
/// dispatch, nothing looked up per request); everything above the Link
/// (reply scan, Tally, Router, Pacer) is the same code on both.
pub(crate) trait Backend: Sized {
    /// Before the clock: the I/O of the group's connections (their own Links).
    fn setup<R: Router>(conns: &mut [Client<R>], prepared: &PreparedPlan) -> Result<Self, String>;
    /// Connection `i`'s own Link joins (a later ramp step, a reconnect).
    fn add<R: Router>(&mut self, conn: &mut Client<R>, i: usize) -> std::io::Result<()>;
    /// Connection `i`'s own Link leaves (finished, or dropped under `--reconnect`).
    fn remove<R: Router>(&mut self, conn: &mut Client<R>, i: usize);
    /// After a turn of connection `i` that left it busy: what it encoded is
    /// handed to the backend (io_uring queues the sends; epoll wrote them already).
    #[inline(always)]
    fn settled<R: Router>(&mut self, _conn: &mut Client<R>, _i: usize) {}
    /// One wait for I/O (at most until `wake` or the next reply-deadline
    /// look), and every event or completion it brought, handed to its client.
    fn turn<R: Router>(
        lp: &mut EventLoop<'_, R, Self>,
        wake: Option<Instant>,
        next_timeout_check: Option<Instant>,
        now: Instant,
    ) -> Result<(), String>;
    /// Before the Links are freed: nothing of theirs may still be in the kernel's hands.
    fn quiesce(&mut self) {}
}

/// Longest a worker sleeps in epoll before it looks at the cancel flag and
/// the other threads' failures again.
const POLL_SLICE: Duration = Duration::from_millis(20);

/// The poll token of peer `k`'s Link of client `i` is `i + k * PEER_TOKEN_STRIDE`
/// (peer 0: the client's own Link, token `i`).
const PEER_TOKEN_STRIDE: usize = 1 << 24;

fn token_of(client: u32, peer: usize) -> mio::Token {
    mio::Token(client as usize + peer * PEER_TOKEN_STRIDE)
}

/// What the worker threads of one phase share: the first failure, and the
/// flag that tells the others to stop once there is one.
pub(crate) struct PhaseShared<'a> {
    pub prepared: &'a PreparedPlan,
    pub control: &'a RunControl,
    pub stop: AtomicBool,
    pub failure: Mutex<Option<Failure>>,
}

impl PhaseShared<'_> {
    pub fn fail(&self, failure: Failure) {
        let mut first = self.failure.lock().unwrap_or_else(|e| e.into_inner());
        if first.is_none() {
            *first = Some(failure);
        }
        self.stop.store(true, Ordering::Relaxed);
    }
}

pub(crate) struct WorkerOutcome {
    pub tally: Tally,
    /// When this thread began its connections: the phase's start is the earliest.
    pub started_at: Instant,
    pub finished_at: Instant,
}

/// One worker's connections: those open when the phase starts, and under
/// `--ramp-connections` those it opens later, in the order they are due.
pub(crate) struct Group<R: Router> {
    pub conns: Vec<Client<R>>,
    pub later: Vec<Later>,
}

/// A connection of a later step of `--ramp-connections`: opened (through
/// [`crate::open::open`]) `at` after the worker's start.
pub(crate) struct Later {
    pub id: u32,
    pub at: Duration,
    pub source: RequestSource,
    pub pacer: Pacer,
}

/// How often a worker publishes its p99 so far for the progress line.
const P99_EVERY: Duration = Duration::from_millis(250);

/// One worker thread: registers its connections, waits for the others, runs
/// the event loop, and closes its sockets before reporting, so the server
/// sees them go with the run.
/// `tally`: empty, with the histograms the phase records; `length`: a
/// time-bound phase ends this long after its start.
pub(crate) fn worker<R: Router, B: Backend>(
    group: Group<R>,
    shared: &PhaseShared<'_>,
    barrier: &Barrier,
    tally: Tally,
    length: Option<Duration>,
) -> WorkerOutcome {
    let Group { mut conns, later } = group;
    // Room for the later steps' connections, made before the clock starts.
    conns.reserve(later.len());
    // --cpus: each worker pins itself, before its phase's clock starts.
    if let Err(e) = crate::affinity::pin_current_thread(&shared.prepared.plan.cpus) {
        shared.fail(Failure::new(
            FailureKind::Internal,
            format!("cannot pin a worker thread to CPUs {:?} (--cpus): {e}", shared.prepared.plan.cpus),
        ));
    }
    let registered = B::setup(&mut conns, shared.prepared);
    // Allocated before the clock starts: the phase's histograms beside the interval's.
    let phase_histograms = tally.histogram.as_ref().map(OpHistograms::empty_like);
    barrier.wait();
    let started_at = Instant::now();
    let io = match registered {
        Ok(io) => io,
        Err(e) => {
            shared.fail(Failure::new(FailureKind::Internal, e));
            return WorkerOutcome { tally, started_at, finished_at: Instant::now() };
        }
    };
    let clock =
        phase_histograms.map(|h| IntervalClock::new(shared.control.interval(), started_at, h, shared.prepared.is_mix));
    let mut event_loop = EventLoop {
        clock,
        finished: Vec::with_capacity(conns.capacity()),
        closing: Vec::with_capacity(conns.capacity()),
        active: conns.len(),
        later: later.into_iter().collect(),
        started_at,
        phase_end: None,
        active_close_waits: 0,
        active_down: 0,
        next_retry: None,
        refresh: R::REDIRECTS.then(|| TopologyRefresh::new(&shared.prepared.plan)),
        answer_watch: (R::REDIRECTS && shared.prepared.plan.timeout_ms > 0).then(AnswerWatch::default),
        moved_shared: 0,
        conns,
        tally,
        io,
        shared,
    };
    // A time-bound phase ends `length` after its start (this thread's start).
    event_loop.run(length.map(|l| started_at + l));
    event_loop.io.quiesce();
    let EventLoop { conns, mut tally, clock, .. } = event_loop;
    let opened = conns.len() as u64;
    // What a stop (an interrupt, a failure elsewhere) left unanswered.
    tally.unanswered = conns.iter().map(|c| c.inflight() as u64).sum();
    // The phase ended when the last share was answered, not when the
    // servers had closed their sides after it (the close wait).
    let now = Instant::now();
    let finished_at = if shared.stop.load(Ordering::Relaxed) {
        now
    } else {
        conns.iter().filter_map(|c| c.answered_at).max().unwrap_or(now)
    };
    drop(conns);
    // After the phase's end is taken: cutting the last interval is no part of it.
    if let Some(clock) = clock {
        clock.finish(&mut tally, finished_at.max(now), shared.control, opened);
    }
    WorkerOutcome { tally, started_at, finished_at }
}

/// One thread's connections and what they counted, driven by epoll until
/// every connection has finished or the phase has stopped.
pub(crate) struct EventLoop<'a, R: Router, B: Backend> {
    /// The timed phase: where the time series' intervals end.
    clock: Option<IntervalClock>,
    conns: Vec<Client<R>>,
    finished: Vec<bool>,
    /// Answered and waiting for the server to close (`Status::Closing`).
    closing: Vec<bool>,
    active: usize,
    /// How many are closing: only then are close-wait deadlines looked at.
    active_close_waits: usize,
    /// `--reconnect`: how many are down after a drop, and when the earliest
    /// of them is due for its next attempt.
    active_down: usize,
    next_retry: Option<Instant>,
    /// `--cluster`: asks for the whole slot map when a MOVED says it is stale.
    refresh: Option<TopologyRefresh>,
    /// `--cluster` with `--timeout`: a phase no node answers is a stall too.
    answer_watch: Option<AnswerWatch>,
    /// The MOVED count when the clients last shared what MOVED replies told them.
    moved_shared: u64,
    /// `--ramp-connections`: connections still to open, the soonest first.
    later: std::collections::VecDeque<Later>,
    /// This thread's start of the phase, and its end for a time-bound one.
    started_at: Instant,
    phase_end: Option<Instant>,
    tally: Tally,
    io: B,
    shared: &'a PhaseShared<'a>,
}

impl<R: Router, B: Backend> EventLoop<'_, R, B> {
    fn run(&mut self, phase_end: Option<Instant>) {
        let prepared = self.shared.prepared;
        let control = self.shared.control;
        let timeout = Duration::from_millis(prepared.plan.timeout_ms);
        self.phase_end = phase_end;
        // Steps due at or after the phase's end open nothing: the loop does not wait for them.
        let started_at = self.started_at;
        self.later.retain(|l| phase_end.is_none_or(|end| started_at + l.at < end));
        self.finished.resize(self.conns.len(), false);
        self.closing.resize(self.conns.len(), false);
        // A time-bound phase is paced: its end is a turn no socket event gives;
        // so is a cluster's (a redirected request's backoff, a Link being opened).
        let mut paced = phase_end.is_some() || R::REDIRECTS;
        for conn in self.conns.iter_mut() {
            conn.pacer.deadline = phase_end;
            paced |= conn.pacer.is_paced();
        }
        // Paced: the first turn comes at once, then at whatever is due next.
        let mut next_turn: Option<Instant> = paced.then(Instant::now);
        // --timeout: the first look computes when the next one is needed.
        let mut next_timeout_check: Option<Instant> = (!timeout.is_zero()).then(Instant::now);
        for i in 0..self.conns.len() {
            let outcome = self.conns[i].start(prepared, &mut self.tally);
            self.settle(i, outcome);
        }
        // The progress line's p99 so far: published a few times a second, not per reply.
        let mut next_p99 = Instant::now() + P99_EVERY;
        // Both ops' counts for that p99, reused (allocated once, timed phase only).
        let mut p99_sum = self.tally.histogram.is_some().then(LatencyHistogram::new);
        // One clock read per turn, taken after its events: the interval, p99,
        // reply-deadline and reconnect checks and the next poll's wait share it.
        let mut now = Instant::now();
        let mut next_refresh: Option<Instant> = None;
        while (self.active > 0 || !self.later.is_empty()) && !self.shared.stop.load(Ordering::Relaxed) {
            if control.is_cancelled() {
                self.shared.fail(Failure::new(FailureKind::Interrupted, "interrupted"));
                break;
            }
            if self.later.front().is_some_and(|l| Instant::now() >= self.started_at + l.at) {
                self.open_later();
                // The new ones' first turns (their deadline) are looked at next.
                now = Instant::now();
                next_turn = Some(now);
                continue;
            }
            let next_open = self.later.front().map(|l| self.started_at + l.at);
            let wake = [next_turn, self.next_retry, next_open, next_refresh].into_iter().flatten().min();
            if let Err(e) = B::turn(self, wake, next_timeout_check, now) {
                self.shared.fail(Failure::new(FailureKind::Internal, e));
                break;
            }
            if paced {
                next_turn = self.take_due_turns();
            }
            if R::REDIRECTS {
                next_refresh = self.refresh_topology();
            }
            if self.tally.unreported_replies > 0 {
                control.add(self.tally.unreported_replies, self.tally.unreported_errors);
                self.tally.unreported_replies = 0;
                self.tally.unreported_errors = 0;
            }
            now = Instant::now();
            if let Some(clock) = self.clock.as_mut() {
                if now >= clock.next {
                    clock.cut(&mut self.tally, now, control, self.conns.len() as u64);
                }
            }
            if let (Some(h), Some(sum)) = (self.tally.histogram.as_ref(), p99_sum.as_mut()) {
                if now >= next_p99 && control.p99_watched() {
                    // The phase so far: the intervals cut, and the current one.
                    h.sum_into(sum);
                    if let Some(clock) = self.clock.as_ref() {
                        for h in &clock.phase.by_command {
                            sum.merge(h);
                        }
                    }
                    control.set_p99(sum.value_at_quantile(0.99));
                    next_p99 = now + P99_EVERY;
                }
            }
            if let Some(at) = next_timeout_check {
                if now >= at {
                    next_timeout_check = Some(self.check_reply_deadlines(timeout));
                }
            }
            if self.active_close_waits > 0 {
                self.end_expired_close_waits();
            }
            if self.active_down > 0 && self.next_retry.is_some_and(|t| now >= t) {
                self.reconnect_due();
            }
        }
        // Stopped while some were down: their time down so far counts.
        for conn in self.conns.iter_mut().filter(|c| c.down.is_some()) {
            conn.reconnected(prepared, None, &mut self.tally);
        }
    }

    /// `--ramp-connections`: opens the connections now due through
    /// [`crate::open::open`] (it blocks this thread for as long as that
    /// takes, as a reconnect does) and starts them; those due at or after
    /// the phase's end are not opened.
    fn open_later(&mut self) {
        let prepared = self.shared.prepared;
        while let Some(l) = self.later.front() {
            let due = self.started_at + l.at;
            if Instant::now() < due {
                return;
            }
            let Some(Later { id, source, pacer, .. }) = self.later.pop_front() else { return };
            if self.phase_end.is_some_and(|end| due >= end) || self.shared.stop.load(Ordering::Relaxed) {
                continue;
            }
            let stream = match crate::open::open(&prepared.plan, self.shared.control) {
                Ok(stream) => stream,
                Err(ConnectError::Interrupted) => {
                    self.shared.fail(Failure::new(FailureKind::Interrupted, "interrupted while connecting"));
                    self.later.clear();
                    return;
                }
                Err(ConnectError::Failed(message)) => {
                    self.shared.fail(Failure::new(FailureKind::Connect, message));
                    self.later.clear();
                    return;
                }
            };
            let i = self.conns.len();
            let router = R::for_client(prepared, id, None, stream.peer_label().unwrap_or_default());
            let mut conn = Client::new(id, stream, source, prepared, pacer, router);
            conn.pacer.deadline = self.phase_end;
            self.conns.push(conn);
            self.finished.push(false);
            self.closing.push(false);
            self.active += 1;
            if !self.register_at(i) {
                return;
            }
            let outcome = self.conns[i].start(prepared, &mut self.tally);
            self.settle(i, outcome);
        }
    }

    /// `--cluster`: a MOVED since the last look asks the cluster for its
    /// map (rate-limited in [`TopologyRefresh`]); a map that came whole is
    /// applied in every client's Router. Returns when it next needs a turn.
    fn refresh_topology(&mut self) -> Option<Instant> {
        let prepared = self.shared.prepared;
        let refresh = self.refresh.as_mut()?;
        let now = Instant::now();
        let moved = self.tally.counters.moved;
        if moved != self.moved_shared {
            self.moved_shared = moved;
            if topology_refresh::share_moved_news(prepared, &mut self.conns, &mut self.tally) {
                refresh.mark_stale();
            }
        }
        if let Some(map) = refresh.take_map() {
            for conn in self.conns.iter_mut() {
                conn.router.apply_topology(prepared, &mut self.tally, &map);
            }
        }
        refresh.note_rejected(&mut self.tally.first, now);
        if refresh.due(now) {
            let first = self.conns.iter().find_map(|c| c.router.moved_target());
            refresh.ask(&prepared.plan, first, now);
        }
        refresh.next_wake(now)
    }

    /// Connection `i`'s socket into the backend (a later ramp step, a reconnect); false (the phase failed) if it refused.
    fn register_at(&mut self, i: usize) -> bool {
        if let Err(e) = self.io.add(&mut self.conns[i], i) {
            self.shared.fail(Failure::new(FailureKind::Internal, format!("cannot watch a socket: {e}")));
            return false;
        }
        true
    }

    /// `--reconnect`: connection `i` dropped (`failure`): out of the poll,
    /// what it had in flight lost, its first attempt due after its backoff
    /// (at once after a Link that had replies), or the phase fails.
    fn drop_connection(&mut self, i: usize, failure: Failure) {
        self.io.remove(&mut self.conns[i], i);
        let Some(policy) = self.shared.prepared.plan.reconnect else { return };
        if let Err(message) = self.conns[i].dropped(failure.message, &mut self.tally, &policy) {
            return self.shared.fail(Failure::new(FailureKind::Closed, message));
        }
        self.active_down += 1;
        self.next_retry = Some(Instant::now());
    }

    /// `--reconnect`: each down connection whose attempt is due opens again
    /// through [`crate::open::open`] (handshake and all; it blocks this
    /// thread for as long as that takes, as a phase's first opening does),
    /// or waits its backoff, or, after the last attempt, fails the phase.
    fn reconnect_due(&mut self) {
        let prepared = self.shared.prepared;
        let plan = &prepared.plan;
        let Some(policy) = plan.reconnect else { return };
        let mut next: Option<Instant> = None;
        for i in 0..self.conns.len() {
            let now = Instant::now();
            let Some(retry_at) = self.conns[i].down.as_ref().map(|d| d.retry_at) else { continue };
            if retry_at > now {
                next = Some(next.map_or(retry_at, |n: Instant| n.min(retry_at)));
                continue;
            }
            let conn = &mut self.conns[i];
            if !conn.wants_reconnect(now) {
                conn.reconnected(prepared, None, &mut self.tally);
                self.active_down -= 1;
                self.settle(i, Ok(Status::Finished));
                continue;
            }
            let attempt = conn.down.as_ref().map_or(0, |d| d.attempts) as usize;
            let target = reconnect_target(plan, conn.node, conn.replica.as_ref(), attempt);
            let conn = &mut self.conns[i];
            match crate::open::open(&target, self.shared.control) {
                Ok(stream) => {
                    conn.reconnected(prepared, Some(stream), &mut self.tally);
                    self.active_down -= 1;
                    if !self.register_at(i) {
                        return;
                    }
                    let outcome = self.conns[i].pump(prepared, &mut self.tally);
                    self.settle(i, outcome);
                }
                Err(ConnectError::Interrupted) => {
                    self.shared.fail(Failure::new(FailureKind::Interrupted, "interrupted"));
                    return;
                }
                Err(ConnectError::Failed(why)) => {
                    let conn = &mut self.conns[i];
                    let deadline = conn.pacer.deadline;
                    let Some(down) = conn.down.as_mut() else { continue };
                    match down.failed_attempt(&policy, &why, deadline) {
                        Ok(at) => next = Some(next.map_or(at, |n: Instant| n.min(at))),
                        Err(message) => {
                            self.active_down -= 1;
                            conn.reconnected(prepared, None, &mut self.tally);
                            self.shared.fail(Failure::new(FailureKind::Closed, message));
                            return;
                        }
                    }
                }
            }
        }
        self.next_retry = next;
    }

    /// Connections whose server has not closed within CLOSE_WAIT of their
    /// own close: stop waiting (POLL_SLICE bounds how late this looks).
    fn end_expired_close_waits(&mut self) {
        let now = Instant::now();
        for i in 0..self.conns.len() {
            if self.closing[i] && !self.finished[i] && self.conns[i].close_wait_expired(now) {
                self.settle(i, Ok(Status::Finished));
            }
        }
    }

    /// Records what a connection's turn left it in: finished ones leave the
    /// poll, a failure stops the phase. Once per socket event: inlined.
    #[inline(always)]
    fn settle(&mut self, i: usize, outcome: Result<Status, Failure>) {
        match outcome {
            Ok(Status::Busy) => self.io.settled(&mut self.conns[i], i),
            Ok(Status::Closing) => {
                self.io.settled(&mut self.conns[i], i);
                if !self.closing[i] {
                    self.closing[i] = true;
                    self.active_close_waits += 1;
                }
            }
            Ok(Status::Finished) => {
                if self.closing[i] {
                    self.closing[i] = false;
                    self.active_close_waits -= 1;
                }
                self.finished[i] = true;
                self.active -= 1;
                self.io.remove(&mut self.conns[i], i);
            }
            Err(f)
                if f.kind == FailureKind::Closed
                    && self.shared.prepared.plan.reconnect.is_some()
                    && !self.conns[i].router.link_failed() =>
            {
                if self.conns[i].down.is_none() {
                    self.drop_connection(i, f);
                }
            }
            Err(f) => self.shared.fail(f),
        }
    }

    /// Turns no socket event gives: requests due under `--rate`, the end of a
    /// time-bound phase. Returns when the next such turn is due.
    fn take_due_turns(&mut self) -> Option<Instant> {
        let prepared = self.shared.prepared;
        let mut next: Option<Instant> = None;
        let mut wake_at = |t: Instant| next = Some(next.map_or(t, |n: Instant| n.min(t)));
        let now = Instant::now();
        for i in 0..self.conns.len() {
            if self.finished[i] {
                continue;
            }
            match self.conns[i].next_wake() {
                Some(t) if t <= now => {
                    let outcome = self.conns[i].pump(prepared, &mut self.tally);
                    self.settle(i, outcome);
                    if let Some(t) = self.conns[i].next_wake().filter(|_| !self.finished[i]) {
                        wake_at(t);
                    }
                }
                Some(t) => wake_at(t),
                None => {}
            }
        }
        next
    }

    /// `--timeout`: fails the phase when a connection's oldest request in
    /// flight has waited longer than `timeout`, or (`--cluster`) when
    /// requests were out that long and no node answered any ([`AnswerWatch`]);
    /// otherwise returns when to look again: when the earliest of them will
    /// have waited that long (no request sent later can be due sooner: a
    /// connection's requests are answered in order), under `--cluster` at
    /// least every quarter of it, so the answers are seen as they change.
    fn check_reply_deadlines(&mut self, timeout: Duration) -> Instant {
        let now = Instant::now();
        let mut next = now + timeout;
        let mut stalest: Option<(usize, Instant)> = None;
        for (i, conn) in self.conns.iter().enumerate() {
            let Some(sent) = conn.oldest_sent_at().filter(|_| !self.finished[i]) else { continue };
            let due = sent + timeout;
            if now > due {
                self.shared.fail(conn.timeout_failure(self.shared.prepared.plan.timeout_ms));
                return next;
            }
            next = next.min(due);
            if stalest.is_none_or(|(_, t)| sent < t) {
                stalest = Some((i, sent));
            }
        }
        if let Some(watch) = self.answer_watch.as_mut() {
            let given_up = self.tally.given_up;
            let answers = answer_watch::answers(&self.tally.counters, given_up);
            if watch.look(answers, stalest.map(|(_, sent)| sent), now) > timeout {
                let i = stalest.map_or(0, |(i, _)| i);
                let where_ = self.conns[i].link.label();
                let text = answer_watch::no_answer_text(
                    &where_,
                    self.shared.prepared.plan.timeout_ms,
                    answers,
                    given_up,
                    &self.tally.counters,
                );
                self.shared.fail(Failure::new(FailureKind::Timeout, text));
            }
            next = next.min(now + timeout / 4);
        }
        next
    }
}
