//! A whole run: the untimed get-mode preload, the warmup, then the timed
//! phase, each over fresh connections spread across worker threads, as the
//! TS engine's `packages/cli/src/engine-js/run.ts`.
//!
//! Each worker thread owns a mio `Poll` (epoll) and several connections, so
//! `-c 200` does not need 200 threads; each has its own counters and
//! histogram, merged when the threads join, so the hot path shares nothing.
//! The first failure anywhere (server closed, protocol error, timeout,
//! cancel) stops every thread and the run reports the counters so far.
//! Connections come from [`connection::open`] only.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Barrier, Mutex};
use std::time::{Duration, Instant};

use mio::event::Event;
use mio::{Events, Interest, Poll, Token};

use crate::connection::{self, ConnectError, Connection, NodeTally, Pace, Status, Tally};
use crate::counters::{Counters, FirstTexts};
use crate::histogram::{LatencyHistogram, OpHistograms};
use crate::plan::{
    Failure, FailureKind, IntervalRecord, Mode, NodeRecord, Plan, PlanError, RawResult, merge_intervals,
};
use crate::progress::{Phase, RunControl};
use crate::request_source::{Op, PreparedPlan, RequestSource, Side};

/// Longest a worker sleeps in epoll before it looks at the cancel flag and
/// the other threads' failures again.
const POLL_SLICE: Duration = Duration::from_millis(20);

/// `--cluster`: longest epoll sleep while redirected requests wait (their
/// detour connections are serviced after each poll; a reply on one wakes it,
/// a backoff's end does not).
const DETOUR_SLICE: Duration = Duration::from_micros(200);

/// `--cluster`: the poll token of connection `i`'s detours is this + `i`
/// (an event there only wakes the worker, which services every detour).
const DETOUR_TOKEN_BASE: usize = 1 << 30;

/// Refuses a plan that cannot run (bad template, zero keyspace, …) without
/// touching the network, so a caller can report it before starting.
pub fn check(plan: &Plan) -> Result<(), PlanError> {
    plan.check()?;
    PreparedPlan::new(plan.clone()).map(|_| ()).map_err(|e| PlanError(e.0))
}

/// Runs a plan to completion or first failure. Errors only for a plan that
/// cannot run at all (bad template, zero keyspace); everything that goes
/// wrong on the wire is in `RawResult::failure`.
pub fn run(plan: Plan, control: &RunControl) -> Result<RawResult, PlanError> {
    plan.check()?;
    let prepared = PreparedPlan::new(plan).map_err(|e| PlanError(e.0))?;
    // Certificate files are read anew for each run.
    crate::transport::forget_tls_config();
    let plan = &prepared.plan;
    let mut result = RawResult::default();
    let mut failure = None;
    let mut preload_first = FirstTexts::default();
    if prepared.preload_total > 0 {
        (failure, preload_first) = run_preload(&prepared, control, &mut result);
    }
    if failure.is_none() && plan.warmup_ms > 0 {
        failure = run_warmup(&prepared, control, &mut result);
    }
    let mut histogram = OpHistograms::new(&prepared.command_ops());
    let mut service = (plan.rate > 0.0).then(LatencyHistogram::new);
    let mut lag = (plan.rate > 0.0).then(LatencyHistogram::new);
    let mut first = FirstTexts::default();
    if failure.is_none() {
        let total = if plan.duration_ms > 0 { 0 } else { plan.requests };
        control.begin_phase(Phase::Run, total, plan.duration_ms * 1_000_000);
        let outcome = run_phase(&prepared, Phase::Run, control);
        result.intervals = merge_intervals(control.take_intervals());
        if plan.cluster.is_some() {
            // The workers counted sockets, one per primary per connection (and a replica's
            // with --read-from), all open from the start: the series says connections (as the TS engine).
            let connections = plan.local_connections().len() as u64;
            for interval in &mut result.intervals {
                interval.connections = connections;
            }
        }
        result.started_unix_ms = outcome.started_unix_ms;
        result.elapsed_ns = outcome.elapsed_ns;
        result.counters = outcome.counters;
        result.unanswered = outcome.unanswered;
        if let Some(c) = &plan.cluster {
            result.nodes = outcome
                .nodes
                .iter()
                .enumerate()
                .map(|(i, n)| NodeRecord {
                    node: c.node_label(i),
                    requests: n.requests,
                    errors: n.errors,
                    redirections: n.redirections,
                    histogram: n.histogram.buckets(),
                })
                .collect();
        }
        first = outcome.first;
        if let Some(h) = outcome.histogram {
            histogram = h;
        }
        if outcome.service.is_some() {
            service = outcome.service;
        }
        if outcome.lag.is_some() {
            lag = outcome.lag;
        }
        failure = outcome.failure;
    }
    result.histogram = histogram.total().buckets();
    result.set_histogram = histogram.op_buckets(Op::Set);
    result.get_histogram = histogram.op_buckets(Op::Get);
    if prepared.is_mix {
        result.command_histograms = histogram.by_command.iter().map(LatencyHistogram::buckets).collect();
    }
    result.service_histogram = service.map(|h| h.buckets());
    result.schedule_lag_histogram = lag.map(|h| h.buckets());
    // A run that broke off says what the server answered the preload with, if that was all it got.
    result.first_error =
        first.error_text().or_else(|| if failure.is_some() { preload_first.error_text() } else { None });
    result.first_mismatch = first.mismatch_text();
    result.failure = failure;
    Ok(result)
}

/// Get mode's untimed writes. An error reply to one of them fails the run:
/// the reads after it would count misses that are not the server's.
fn run_preload(prepared: &PreparedPlan, control: &RunControl, result: &mut RawResult) -> (Option<Failure>, FirstTexts) {
    control.begin_phase(Phase::Preload, prepared.preload_total, 0);
    let outcome = run_phase(prepared, Phase::Preload, control);
    result.preload_elapsed_ns = outcome.elapsed_ns;
    result.preload_requests = outcome.counters.sets;
    let failure = if let Some(f) = outcome.failure {
        Some(Failure::new(f.kind, format!("preload: {}", f.message)))
    } else if outcome.counters.errors > 0 {
        Some(Failure::new(
            FailureKind::Preload,
            format!(
                "preload: the server answered {} writes with errors, first: {}",
                outcome.counters.errors,
                outcome.first.error_text().unwrap_or_default()
            ),
        ))
    } else {
        None
    };
    (failure, outcome.first)
}

/// `--warmup`: load left out of every figure but its own request count.
fn run_warmup(prepared: &PreparedPlan, control: &RunControl, result: &mut RawResult) -> Option<Failure> {
    control.begin_phase(Phase::Warmup, 0, prepared.plan.warmup_ms * 1_000_000);
    let outcome = run_phase(prepared, Phase::Warmup, control);
    result.warmup_elapsed_ns = outcome.elapsed_ns;
    result.warmup_requests = outcome.counters.sets + outcome.counters.gets;
    outcome.failure.map(|f| Failure::new(f.kind, format!("warmup: {}", f.message)))
}

struct PhaseOutcome {
    elapsed_ns: u64,
    /// Wall clock at the phase's start, ms since the Unix epoch.
    started_unix_ms: u64,
    failure: Option<Failure>,
    counters: Counters,
    first: FirstTexts,
    histogram: Option<OpHistograms>,
    service: Option<LatencyHistogram>,
    lag: Option<LatencyHistogram>,
    /// Requests written whose replies had not come when the phase stopped.
    unanswered: u64,
    /// `--cluster`, the timed phase: per primary.
    nodes: Vec<NodeTally>,
}

/// What kind of phase the workers run: whether latency is recorded, whether
/// on a schedule, and for how long when time ends it.
#[derive(Clone, Copy, Debug)]
struct PhaseShape {
    /// The measured phase: latencies go into the histogram.
    timed: bool,
    /// The measured phase under `--rate`: service-time and schedule-lag histograms too.
    rated: bool,
    /// `--duration` / `--warmup`: the phase ends this long after it starts.
    length: Option<Duration>,
    /// `--cluster`: the primaries (0 for one server).
    nodes: usize,
}

impl PhaseShape {
    fn of(phase: Phase, plan: &Plan) -> PhaseShape {
        let timed = phase == Phase::Run;
        let length = match phase {
            Phase::Preload => 0,
            Phase::Warmup => plan.warmup_ms,
            Phase::Run => plan.duration_ms,
        };
        PhaseShape {
            timed,
            rated: timed && plan.rate > 0.0,
            length: (length > 0).then(|| Duration::from_millis(length)),
            nodes: plan.cluster.as_ref().map_or(0, |c| c.nodes.len()),
        }
    }

    /// An empty tally with the histograms this phase records (one per command of `prepared`).
    fn tally(self, prepared: &PreparedPlan) -> Tally {
        Tally {
            histogram: self.timed.then(|| OpHistograms::new(&prepared.command_ops())),
            service: self.rated.then(LatencyHistogram::new),
            lag: self.rated.then(LatencyHistogram::new),
            nodes: if self.timed { (0..self.nodes).map(|_| NodeTally::default()).collect() } else { Vec::new() },
            ..Tally::default()
        }
    }
}

/// What the worker threads of one phase share: the first failure, and the
/// flag that tells the others to stop once there is one.
struct PhaseShared<'a> {
    prepared: &'a PreparedPlan,
    control: &'a RunControl,
    stop: AtomicBool,
    failure: Mutex<Option<Failure>>,
}

impl PhaseShared<'_> {
    fn fail(&self, failure: Failure) {
        let mut first = self.failure.lock().unwrap_or_else(|e| e.into_inner());
        if first.is_none() {
            *first = Some(failure);
        }
        self.stop.store(true, Ordering::Relaxed);
    }
}

struct WorkerOutcome {
    tally: Tally,
    /// When this thread began its connections: the phase's start is the earliest.
    started_at: Instant,
    finished_at: Instant,
}

/// Connects every connection, then runs them on `threads` workers that
/// start together, and merges what they counted.
fn run_phase(prepared: &PreparedPlan, phase: Phase, control: &RunControl) -> PhaseOutcome {
    let shape = PhaseShape::of(phase, &prepared.plan);
    let local = prepared.plan.local_connections().len() as u32 * shape.nodes.max(1) as u32;
    let threads = prepared.plan.threads.clamp(1, local.max(1)) as usize;
    let groups = match connect_all(prepared, phase, shape, control, threads) {
        Ok(groups) => groups,
        Err(failure) => {
            let tally = shape.tally(prepared);
            return PhaseOutcome {
                elapsed_ns: 0,
                started_unix_ms: unix_ms_at(Instant::now()),
                failure: Some(failure),
                counters: Counters::default(),
                first: FirstTexts::default(),
                histogram: tally.histogram,
                service: tally.service,
                lag: tally.lag,
                unanswered: 0,
                nodes: tally.nodes,
            };
        }
    };
    let shared = PhaseShared { prepared, control, stop: AtomicBool::new(false), failure: Mutex::new(None) };
    let (start, outcomes) = run_workers(groups, &shared, shape);
    let mut outcome = merge_workers(outcomes, start, shape, prepared);
    outcome.failure = shared.failure.into_inner().unwrap_or_else(|e| e.into_inner());
    outcome
}

/// One worker's connections: those open when the phase starts, and under
/// `--ramp-connections` those it opens later, in the order they are due.
struct Group {
    conns: Vec<Connection>,
    later: Vec<Later>,
}

/// A connection of a later step of `--ramp-connections`: opened (through
/// [`connection::open`]) `at` after the worker's start.
struct Later {
    id: u32,
    at: Duration,
    source: RequestSource,
    pace: Pace,
}

/// Opens the phase's connections one after another (as the TS engine) and
/// deals them out to `threads` groups, connection c to group c mod threads;
/// under `--ramp-connections` the timed phase opens only the first step's
/// here, and the workers open the rest when due.
fn connect_all(
    prepared: &PreparedPlan,
    phase: Phase,
    shape: PhaseShape,
    control: &RunControl,
    threads: usize,
) -> Result<Vec<Group>, Failure> {
    let plan = &prepared.plan;
    // connection c's k-th request is due at start + (k * C + c) / R: the
    // connections take turns instead of firing together.
    let interval = (phase != Phase::Preload && plan.rate > 0.0).then(|| plan.connections as f64 / plan.rate);
    let mut groups: Vec<Group> = (0..threads).map(|_| Group { conns: Vec::new(), later: Vec::new() }).collect();
    // The CLI refuses --ramp-connections with --cluster (a connection there is one socket per primary,
    // and more with --read-from): a later connection is always one single-server socket.
    let ramp = if phase == Phase::Run && plan.cluster.is_none() { plan.ramp_connections } else { None };
    for (n, s) in phase_sockets(plan, phase).into_iter().enumerate() {
        let c = s.id;
        let at = ramp.map_or(Duration::ZERO, |r| r.open_at(c));
        if !at.is_zero() {
            let source = prepared.run_source(c, shape.length.is_some(), None, Side::All);
            groups[n % threads].later.push(Later { id: c, at, source, pace: Pace::default() });
            continue;
        }
        if control.is_cancelled() {
            return Err(Failure::new(FailureKind::Interrupted, "interrupted"));
        }
        let stream = connection::open(&s.target, control).map_err(|e| match e {
            ConnectError::Interrupted => Failure::new(FailureKind::Interrupted, "interrupted while connecting"),
            ConnectError::Failed(message) => Failure::new(FailureKind::Connect, message),
        })?;
        let source = match phase {
            Phase::Preload => prepared.preload_source(c, s.node),
            _ => prepared.run_source(c, shape.length.is_some(), s.node, s.side),
        };
        let offset = interval.map_or(0.0, |_| c as f64 / plan.rate);
        let pace = Pace { deadline: None, interval, offset };
        let mut conn = Connection::new(c, stream, source, prepared, pace);
        conn.node = s.node;
        if s.side == Side::Reads {
            conn.replica = Some((s.target.host.clone(), s.target.port));
        }
        groups[n % threads].conns.push(conn);
    }
    Ok(groups)
}

/// One socket of a phase: whose connection, which primary's share (None:
/// one server), which side of it, and where it goes (as the TS `PhaseSocket`).
struct PhaseSocket {
    id: u32,
    node: Option<u16>,
    side: Side,
    target: Plan,
}

/// The sockets of a phase, in the order they are opened: per connection
/// (this machine's), per primary under `--cluster`; with `--read-from
/// replica|any`, a connection whose reads of a primary go to a replica has
/// two for it: the writes to the primary, then the reads to the replica
/// (READONLY). The preload only writes, and a set run without a mix has no
/// reads: one socket per primary. As the TS `phaseSockets`.
fn phase_sockets(plan: &Plan, phase: Phase) -> Vec<PhaseSocket> {
    let targets = target_plans(plan);
    let mut out = Vec::new();
    for id in plan.local_connections() {
        let Some(cluster) = &plan.cluster else {
            out.push(PhaseSocket { id, node: None, side: Side::All, target: targets[0].clone() });
            continue;
        };
        for (node, target) in targets.iter().enumerate() {
            let replica = if phase == Phase::Preload || (plan.mode == Mode::Set && plan.commands.is_empty()) {
                None
            } else {
                cluster.read_target(id, node)
            };
            match replica {
                None => out.push(PhaseSocket { id, node: Some(node as u16), side: Side::All, target: target.clone() }),
                Some(r) => {
                    let (host, port) = &cluster.replicas[node][r];
                    out.push(PhaseSocket { id, node: Some(node as u16), side: Side::Writes, target: target.clone() });
                    let reads = Plan { host: host.clone(), port: *port, read_only: true, ..target.clone() };
                    out.push(PhaseSocket { id, node: Some(node as u16), side: Side::Reads, target: reads });
                }
            }
        }
    }
    out
}

/// The servers a phase's connections go to: the plan's one server, or under
/// `--cluster` each primary (the plan with its host and port), in
/// `ClusterPlan::nodes` order.
fn target_plans(plan: &Plan) -> Vec<Plan> {
    match &plan.cluster {
        None => vec![plan.clone()],
        Some(c) => c
            .nodes
            .iter()
            .map(|(host, port)| Plan { host: host.clone(), port: *port, socket: None, ..plan.clone() })
            .collect(),
    }
}

/// One thread per group, released together by a barrier; returns when all
/// have ended, with when the main thread passed the barrier.
fn run_workers(groups: Vec<Group>, shared: &PhaseShared<'_>, shape: PhaseShape) -> (Instant, Vec<WorkerOutcome>) {
    let barrier = Barrier::new(groups.len() + 1);
    std::thread::scope(|scope| {
        let handles: Vec<_> = groups
            .into_iter()
            .enumerate()
            .map(|(i, group)| {
                let barrier = &barrier;
                std::thread::Builder::new()
                    .name(format!("respbench-worker-{i}"))
                    .spawn_scoped(scope, move || worker(group, shared, barrier, shape))
                    .expect("spawn a worker thread")
            })
            .collect();
        barrier.wait();
        let start = Instant::now();
        let outcomes = handles
            .into_iter()
            .map(|h| match h.join() {
                Ok(o) => o,
                Err(_) => {
                    shared.fail(Failure::new(FailureKind::Internal, "a worker thread panicked"));
                    WorkerOutcome { tally: Tally::default(), started_at: start, finished_at: Instant::now() }
                }
            })
            .collect();
        (start, outcomes)
    })
}

/// Adds up the threads' tallies; the phase lasted from the earliest start to
/// the latest finish.
fn merge_workers(
    outcomes: Vec<WorkerOutcome>,
    start: Instant,
    shape: PhaseShape,
    prepared: &PreparedPlan,
) -> PhaseOutcome {
    let mut total = shape.tally(prepared);
    // Each thread measures from its own start after the barrier (its
    // deadline counts from there too), so a late main thread shortens nothing.
    let start = outcomes.iter().map(|o| o.started_at).min().unwrap_or(start);
    let mut end = start;
    for o in outcomes {
        end = end.max(o.finished_at);
        total.counters.merge(&o.tally.counters);
        total.first.merge(o.tally.first);
        total.unanswered += o.tally.unanswered;
        if let (Some(sum), Some(h)) = (total.histogram.as_mut(), o.tally.histogram.as_ref()) {
            sum.merge(h);
        }
        if let (Some(sum), Some(h)) = (total.service.as_mut(), o.tally.service.as_ref()) {
            sum.merge(h);
        }
        if let (Some(sum), Some(h)) = (total.lag.as_mut(), o.tally.lag.as_ref()) {
            sum.merge(h);
        }
        for (sum, n) in total.nodes.iter_mut().zip(&o.tally.nodes) {
            sum.requests += n.requests;
            sum.errors += n.errors;
            sum.redirections += n.redirections;
            sum.histogram.merge(&n.histogram);
        }
    }
    PhaseOutcome {
        elapsed_ns: end.saturating_duration_since(start).as_nanos() as u64,
        started_unix_ms: unix_ms_at(start),
        failure: None,
        counters: total.counters,
        first: total.first,
        histogram: total.histogram,
        service: total.service,
        lag: total.lag,
        unanswered: total.unanswered,
        nodes: total.nodes,
    }
}

/// The wall clock at `at` (an instant in the past), ms since the Unix epoch.
fn unix_ms_at(at: Instant) -> u64 {
    let now = std::time::SystemTime::now();
    let then = now.checked_sub(at.elapsed()).unwrap_or(now);
    then.duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// The timed phase's time series in one worker: its latencies go into the
/// tally's histograms, which hold the current interval only; at each
/// boundary they are added to the phase's, serialised into a record for
/// [`RunControl::push_interval`] and emptied. No work per reply: a clock
/// read per loop turn, and per interval a copy of the counters and two
/// histogram walks.
struct IntervalClock {
    every: Duration,
    started: Instant,
    /// The next boundary.
    next: Instant,
    index: u64,
    /// The counters at the start of the current interval.
    before: Counters,
    /// The phase's latencies so far, the current interval apart.
    phase: OpHistograms,
    /// A command mix: each interval carries each command's latencies.
    per_command: bool,
}

impl IntervalClock {
    fn new(every: Duration, started: Instant, phase: OpHistograms, per_command: bool) -> IntervalClock {
        IntervalClock {
            every,
            started,
            next: started + every,
            index: 0,
            before: Counters::default(),
            phase,
            per_command,
        }
    }

    /// Ends the current interval at `now` (at its boundary, or earlier for
    /// the last one), then starts the one `now` falls in; intervals a
    /// descheduled thread slept through are recorded empty.
    fn cut(&mut self, tally: &mut Tally, now: Instant, control: &RunControl, connections: u64) {
        let Some(current) = tally.histogram.as_mut() else { return };
        let at = |i: u64| self.every.as_nanos() as u64 * i;
        let elapsed = now.saturating_duration_since(self.started).as_nanos() as u64;
        control.push_interval(IntervalRecord {
            index: self.index,
            start_ns: at(self.index),
            end_ns: elapsed.min(at(self.index + 1)),
            counters: tally.counters.since(&self.before),
            set_histogram: current.op_buckets(Op::Set),
            get_histogram: current.op_buckets(Op::Get),
            command_histograms: if self.per_command {
                current.by_command.iter().map(LatencyHistogram::buckets).collect()
            } else {
                Vec::new()
            },
            connections,
        });
        self.phase.merge(current);
        current.reset();
        self.before = tally.counters;
        self.index += 1;
        while self.next + self.every <= now {
            control.push_interval(IntervalRecord {
                index: self.index,
                start_ns: at(self.index),
                end_ns: at(self.index + 1),
                command_histograms: if self.per_command {
                    vec![Vec::new(); current.by_command.len()]
                } else {
                    Vec::new()
                },
                connections,
                ..IntervalRecord::default()
            });
            self.index += 1;
            self.next += self.every;
        }
        self.next += self.every;
    }

    /// The last interval cut at the end, and the phase's latencies back in the tally.
    fn finish(mut self, tally: &mut Tally, now: Instant, control: &RunControl, connections: u64) {
        self.cut(tally, now, control, connections);
        if let Some(h) = tally.histogram.as_mut() {
            *h = self.phase;
        }
    }
}

/// How often a worker publishes its p99 so far for the progress line.
const P99_EVERY: Duration = Duration::from_millis(250);

/// One worker thread: registers its connections, waits for the others, runs
/// the event loop, and closes its sockets before reporting, so the server
/// sees them go with the run.
fn worker(group: Group, shared: &PhaseShared<'_>, barrier: &Barrier, shape: PhaseShape) -> WorkerOutcome {
    let Group { mut conns, later } = group;
    // Room for the later steps' connections, made before the clock starts.
    conns.reserve(later.len());
    let tally = shape.tally(shared.prepared);
    // --cpus: each worker pins itself, before its phase's clock starts.
    if let Err(e) = crate::affinity::pin_current_thread(&shared.prepared.plan.cpus) {
        shared.fail(Failure::new(
            FailureKind::Internal,
            format!("cannot pin a worker thread to CPUs {:?} (--cpus): {e}", shared.prepared.plan.cpus),
        ));
    }
    let registered = register(&mut conns);
    // Allocated before the clock starts: the phase's histograms beside the interval's.
    let phase_histograms = tally.histogram.as_ref().map(OpHistograms::empty_like);
    barrier.wait();
    let started_at = Instant::now();
    let poll = match registered {
        Ok(poll) => poll,
        Err(e) => {
            shared.fail(Failure::new(FailureKind::Internal, format!("cannot set up epoll: {e}")));
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
        conns,
        tally,
        poll,
        shared,
    };
    // A time-bound phase ends `length` after its start (this thread's start).
    event_loop.run(shape.length.map(|l| started_at + l));
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

/// A `Poll` watching every connection of the group, token = index.
fn register(conns: &mut [Connection]) -> std::io::Result<Poll> {
    let poll = Poll::new()?;
    for (i, conn) in conns.iter_mut().enumerate() {
        poll.registry().register(&mut conn.stream, Token(i), Interest::READABLE | Interest::WRITABLE)?;
    }
    Ok(poll)
}

/// One thread's connections and what they counted, driven by epoll until
/// every connection has finished or the phase has stopped.
struct EventLoop<'a> {
    /// The timed phase: where the time series' intervals end.
    clock: Option<IntervalClock>,
    conns: Vec<Connection>,
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
    /// `--ramp-connections`: connections still to open, the soonest first.
    later: std::collections::VecDeque<Later>,
    /// This thread's start of the phase, and its end for a time-bound one.
    started_at: Instant,
    phase_end: Option<Instant>,
    tally: Tally,
    poll: Poll,
    shared: &'a PhaseShared<'a>,
}

impl EventLoop<'_> {
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
        // A time-bound phase is paced: its end is a turn no socket event gives.
        let mut paced = phase_end.is_some();
        for conn in self.conns.iter_mut() {
            conn.set_deadline(phase_end);
            paced |= conn.is_paced();
        }
        // Paced: the first turn comes at once, then at whatever is due next.
        let mut next_turn: Option<Instant> = paced.then(Instant::now);
        // --timeout: the first look computes when the next one is needed.
        let mut next_timeout_check: Option<Instant> = (!timeout.is_zero()).then(Instant::now);
        for i in 0..self.conns.len() {
            let outcome = self.conns[i].start(prepared, &mut self.tally);
            self.settle(i, outcome);
        }
        let mut events = Events::with_capacity(self.conns.len().clamp(16, 1024));
        // The progress line's p99 so far: published a few times a second, not per reply.
        let mut next_p99 = Instant::now() + P99_EVERY;
        // Both ops' counts for that p99, reused (allocated once, timed phase only).
        let mut p99_sum = self.tally.histogram.is_some().then(LatencyHistogram::new);
        while (self.active > 0 || !self.later.is_empty()) && !self.shared.stop.load(Ordering::Relaxed) {
            if control.is_cancelled() {
                self.shared.fail(Failure::new(FailureKind::Interrupted, "interrupted"));
                break;
            }
            if self.later.front().is_some_and(|l| Instant::now() >= self.started_at + l.at) {
                self.open_later();
                // The new ones' first turns (their deadline) are looked at next.
                next_turn = Some(Instant::now());
                continue;
            }
            let next_open = self.later.front().map(|l| self.started_at + l.at);
            let wake = [next_turn, self.next_retry, next_open].into_iter().flatten().min();
            // --cluster: redirected requests are serviced each turn too (a detour in backoff has no socket event to wake it).
            let detours = self.shared.prepared.plan.cluster.is_some() && self.conns.iter().any(|c| c.has_detours());
            let wait = poll_wait(wake, next_timeout_check);
            let wait = if detours { wait.min(DETOUR_SLICE) } else { wait };
            if let Err(e) = self.poll.poll(&mut events, Some(wait)) {
                if e.kind() != std::io::ErrorKind::Interrupted {
                    self.shared.fail(Failure::new(FailureKind::Internal, format!("epoll failed: {e}")));
                    break;
                }
            }
            for event in events.iter() {
                self.on_event(event);
            }
            if detours {
                for i in 0..self.conns.len() {
                    if !self.finished[i] && !self.conns[i].is_down() && self.conns[i].has_detours() {
                        let token = Token(DETOUR_TOKEN_BASE + i);
                        let outcome = self.conns[i].service_detours(
                            prepared,
                            &mut self.tally,
                            control,
                            self.poll.registry(),
                            token,
                        );
                        self.settle(i, outcome);
                    }
                }
            }
            if paced {
                next_turn = self.take_due_turns();
            }
            control.add(self.tally.unreported_replies, self.tally.unreported_errors);
            self.tally.unreported_replies = 0;
            self.tally.unreported_errors = 0;
            if let Some(clock) = self.clock.as_mut() {
                let now = Instant::now();
                if now >= clock.next {
                    clock.cut(&mut self.tally, now, control, self.conns.len() as u64);
                }
            }
            if let (Some(h), Some(sum)) = (self.tally.histogram.as_ref(), p99_sum.as_mut()) {
                let now = Instant::now();
                if now >= next_p99 {
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
                if Instant::now() >= at {
                    next_timeout_check = Some(self.check_reply_deadlines(timeout));
                }
            }
            if self.active_close_waits > 0 {
                self.end_expired_close_waits();
            }
            if self.active_down > 0 && self.next_retry.is_some_and(|t| Instant::now() >= t) {
                self.reconnect_due();
            }
        }
        // Stopped while some were down: their time down so far counts.
        for conn in self.conns.iter_mut().filter(|c| c.is_down()) {
            conn.reconnected(None, &mut self.tally);
        }
    }

    /// `--ramp-connections`: opens the connections now due through
    /// [`connection::open`] (it blocks this thread for as long as that
    /// takes, as a reconnect does) and starts them; those due at or after
    /// the phase's end are not opened.
    fn open_later(&mut self) {
        let prepared = self.shared.prepared;
        while let Some(l) = self.later.front() {
            let due = self.started_at + l.at;
            if Instant::now() < due {
                return;
            }
            let Some(Later { id, source, pace, .. }) = self.later.pop_front() else { return };
            if self.phase_end.is_some_and(|end| due >= end) || self.shared.stop.load(Ordering::Relaxed) {
                continue;
            }
            let stream = match connection::open(&prepared.plan, self.shared.control) {
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
            let mut conn = Connection::new(id, stream, source, prepared, pace);
            conn.set_deadline(self.phase_end);
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

    /// Connection `i`'s socket into the poll (a later ramp step, a reconnect); false (the phase failed) if epoll refused.
    fn register_at(&mut self, i: usize) -> bool {
        let registered =
            self.poll.registry().register(&mut self.conns[i].stream, Token(i), Interest::READABLE | Interest::WRITABLE);
        if let Err(e) = registered {
            self.shared.fail(Failure::new(FailureKind::Internal, format!("cannot set up epoll: {e}")));
            return false;
        }
        true
    }

    /// `--reconnect`: connection `i` dropped (`failure`): out of the poll,
    /// what it had in flight lost, its first attempt due at once.
    fn drop_connection(&mut self, i: usize, failure: Failure) {
        let _ = self.poll.registry().deregister(&mut self.conns[i].stream);
        self.conns[i].dropped(failure.message, &mut self.tally);
        self.active_down += 1;
        self.next_retry = Some(Instant::now());
    }

    /// `--reconnect`: each down connection whose attempt is due opens again
    /// through [`connection::open`] (handshake and all; it blocks this
    /// thread for as long as that takes, as a phase's first opening does),
    /// or waits its backoff, or, after the last attempt, fails the phase.
    fn reconnect_due(&mut self) {
        let prepared = self.shared.prepared;
        let plan = &prepared.plan;
        let Some(policy) = plan.reconnect else { return };
        let mut next: Option<Instant> = None;
        for i in 0..self.conns.len() {
            let now = Instant::now();
            let Some(retry_at) = self.conns[i].down().map(|d| d.retry_at) else { continue };
            if retry_at > now {
                next = Some(next.map_or(retry_at, |n: Instant| n.min(retry_at)));
                continue;
            }
            let conn = &mut self.conns[i];
            if !conn.wants_reconnect(now) {
                conn.reconnected(None, &mut self.tally);
                self.active_down -= 1;
                self.settle(i, Ok(Status::Finished));
                continue;
            }
            // Under --cluster, the connection's own primary (not the seed); every
            // other attempt another primary, in turn (as the TS engine's
            // reconnectTarget): a primary that died stays dead, and another one
            // answers with MOVED to whoever took its slots over.
            let attempt = conn.down().map_or(0, |d| d.attempts) as usize;
            let target = match (conn.node, &plan.cluster) {
                // --read-from: a replica's socket opens again to its replica (READONLY), as the TS engine's.
                (Some(_), Some(_)) if conn.replica.is_some() && attempt % 2 == 0 => {
                    let (host, port) = conn.replica.clone().unwrap_or_default();
                    Plan { host, port, socket: None, read_only: true, ..plan.clone() }
                }
                (Some(n), Some(c)) => {
                    let count = c.nodes.len();
                    let index = if count < 2 || attempt % 2 == 0 {
                        n as usize
                    } else {
                        (n as usize + 1 + (attempt >> 1) % (count - 1)) % count
                    };
                    let (host, port) = &c.nodes[index];
                    Plan { host: host.clone(), port: *port, socket: None, ..plan.clone() }
                }
                _ => plan.clone(),
            };
            let conn = &mut self.conns[i];
            match connection::open(&target, self.shared.control) {
                Ok(stream) => {
                    conn.reconnected(Some(stream), &mut self.tally);
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
                    let deadline = conn.deadline();
                    let Some(down) = conn.down() else { continue };
                    down.attempts += 1;
                    if down.attempts >= policy.attempts {
                        let message = format!(
                            "{}; not reconnected after {} attempts (--reconnect-attempts), the last: {why}",
                            down.why, policy.attempts
                        );
                        self.active_down -= 1;
                        conn.reconnected(None, &mut self.tally);
                        self.shared.fail(Failure::new(FailureKind::Closed, message));
                        return;
                    }
                    down.retry_at = Instant::now() + Duration::from_millis(policy.delay_ms(down.attempts));
                    // A time-bound phase that ends during the wait ends it too.
                    if let Some(d) = deadline {
                        down.retry_at = down.retry_at.min(d);
                    }
                    next = Some(next.map_or(down.retry_at, |n: Instant| n.min(down.retry_at)));
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
    /// poll, a failure stops the phase.
    fn settle(&mut self, i: usize, outcome: Result<Status, Failure>) {
        match outcome {
            Ok(Status::Busy) => {}
            Ok(Status::Closing) => {
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
                let _ = self.poll.registry().deregister(&mut self.conns[i].stream);
            }
            Err(f)
                if f.kind == FailureKind::Closed
                    && self.shared.prepared.plan.reconnect.is_some()
                    && !self.conns[i].detour_failed() =>
            {
                if !self.conns[i].is_down() {
                    self.drop_connection(i, f);
                }
            }
            Err(f) => self.shared.fail(f),
        }
    }

    fn on_event(&mut self, event: &Event) {
        let prepared = self.shared.prepared;
        let i = event.token().0;
        // A detour's event: its connection's detours are serviced after the poll.
        if i >= DETOUR_TOKEN_BASE || self.finished[i] || self.conns[i].is_down() {
            return;
        }
        let closing = event.is_read_closed() || event.is_error();
        if event.is_readable() || closing {
            let outcome = self.conns[i].on_readable(prepared, &mut self.tally, closing);
            self.settle(i, outcome);
        }
        if !self.finished[i] && !self.conns[i].is_down() && event.is_writable() {
            let outcome = self.conns[i].on_writable(prepared, &mut self.tally);
            self.settle(i, outcome);
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
    /// flight has waited longer than `timeout`; otherwise returns when the
    /// earliest of them will have. No request sent later can be due sooner
    /// (a connection's requests are answered in order), so looking then, not
    /// every few milliseconds, reports a stall as soon as it passes the timeout.
    fn check_reply_deadlines(&self, timeout: Duration) -> Instant {
        let now = Instant::now();
        let mut next = now + timeout;
        for (i, conn) in self.conns.iter().enumerate() {
            let Some(sent) = conn.oldest_sent_at().filter(|_| !self.finished[i]) else { continue };
            let due = sent + timeout;
            if now > due {
                self.shared.fail(conn.timeout_failure(self.shared.prepared.plan.timeout_ms));
                break;
            }
            next = next.min(due);
        }
        next
    }
}

/// How long epoll may sleep: until the next paced turn or the next reply
/// deadline, at most [`POLL_SLICE`].
fn poll_wait(next_turn: Option<Instant>, next_timeout_check: Option<Instant>) -> Duration {
    let now = Instant::now();
    // Sooner than epoll's millisecond: poll without sleeping, or a due
    // request would go out up to 1 ms late. epoll rounds a timeout up to
    // whole milliseconds: sleep one less, and poll without sleeping through
    // the last one.
    let turn = next_turn.map_or(POLL_SLICE, |t| t.saturating_duration_since(now).min(POLL_SLICE));
    let turn = turn.saturating_sub(Duration::from_millis(1));
    // A reply deadline may be looked at up to a millisecond late: no spinning for it.
    match next_timeout_check {
        Some(t) => turn.min(t.saturating_duration_since(now)),
        None => turn,
    }
}
