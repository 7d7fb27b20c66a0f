//! A whole run: the untimed get-mode preload, the warmup, then the timed
//! phase, each over fresh connections spread across worker threads, as the
//! TS engine's `packages/cli/src/engine-js/run.ts`.
//!
//! Each worker thread owns a mio `Poll` (epoll) and several connections, so
//! `-c 200` does not need 200 threads; each has its own counters and
//! histogram, merged when the threads join, so the hot path shares nothing.
//! The first failure anywhere (server closed, protocol error, timeout,
//! cancel) stops every thread and the run reports the counters so far.
//! Sockets come from [`crate::open::open`] only; the event loop is
//! [`crate::worker`]'s, chosen here once per run for the Router kind.

use std::sync::atomic::AtomicBool;
use std::sync::{Barrier, Mutex};
use std::time::{Duration, Instant};

use crate::client::Client;
use crate::counters::{Counters, FirstTexts};
use crate::handshake::ConnectError;
use crate::histogram::{LatencyHistogram, OpHistograms};
use crate::pacer::Pacer;
use crate::plan::{Failure, FailureKind, Mode, NodeRecord, Plan, PlanError, RawResult, merge_intervals};
use crate::progress::{Phase, RunControl};
use crate::request_source::{Op, PreparedPlan, Side};
use crate::router::{ClusterRouter, Router, SingleTarget};
use crate::tally::{NodeTally, Tally};
use crate::worker::{EpollIo, Group, Later, PhaseShared, UringIo, WorkerOutcome, worker};

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
                    node: match i.checked_sub(c.nodes.len()) {
                        None => c.node_label(i),
                        Some(j) => outcome.joined[j].clone(),
                    },
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
    result.topology_rejected = first.topology_rejected.map(|(_, t)| t);
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
    /// `--cluster`, the timed phase: per primary, then per node that joined mid-run.
    nodes: Vec<NodeTally>,
    /// `host:port` of the rows past the plan's primaries.
    joined: Vec<String>,
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

/// Connects every connection, then runs them on `threads` workers that
/// start together, and merges what they counted.
fn run_phase(prepared: &PreparedPlan, phase: Phase, control: &RunControl) -> PhaseOutcome {
    let shape = PhaseShape::of(phase, &prepared.plan);
    let local = prepared.plan.local_connections().len() as u32 * shape.nodes.max(1) as u32;
    let threads = prepared.plan.threads.clamp(1, local.max(1)) as usize;
    let shared = PhaseShared { prepared, control, stop: AtomicBool::new(false), failure: Mutex::new(None) };
    // The Router kind and the I/O backend are chosen once per run: one
    // server's loop holds none of a cluster's work, epoll's none of io_uring's.
    let io = crate::io::decide(prepared.plan.io, prepared.plan.tls.is_some());
    let uring = matches!(&io, Ok(d) if d.backend == crate::io::Backend::Uring);
    let workers = match io {
        Err(why) => Err(Failure::new(FailureKind::Internal, why)),
        Ok(_) if prepared.plan.cluster.is_some() => {
            connect_all::<ClusterRouter>(prepared, phase, shape, control, threads)
                .map(|g| run_workers(g, &shared, shape, uring))
        }
        Ok(_) => connect_all::<SingleTarget>(prepared, phase, shape, control, threads)
            .map(|g| run_workers(g, &shared, shape, uring)),
    };
    let (start, outcomes) = match workers {
        Ok(ran) => ran,
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
                joined: Vec::new(),
            };
        }
    };
    let mut outcome = merge_workers(outcomes, start, shape, prepared);
    outcome.failure = shared.failure.into_inner().unwrap_or_else(|e| e.into_inner());
    outcome
}

/// Opens the phase's connections one after another (as the TS engine) and
/// deals them out to `threads` groups, connection c to group c mod threads;
/// under `--ramp-connections` the timed phase opens only the first step's
/// here, and the workers open the rest when due.
fn connect_all<R: Router>(
    prepared: &PreparedPlan,
    phase: Phase,
    shape: PhaseShape,
    control: &RunControl,
    threads: usize,
) -> Result<Vec<Group<R>>, Failure> {
    let plan = &prepared.plan;
    // connection c's k-th request is due at start + (k * C + c) / R: the
    // connections take turns instead of firing together.
    let rate = (phase != Phase::Preload && plan.rate > 0.0).then_some(plan.rate);
    let mut groups: Vec<Group<R>> = (0..threads).map(|_| Group { conns: Vec::new(), later: Vec::new() }).collect();
    // The CLI refuses --ramp-connections with --cluster (a connection there is one socket per primary,
    // and more with --read-from): a later connection is always one single-server socket.
    let ramp = if phase == Phase::Run && plan.cluster.is_none() { plan.ramp_connections } else { None };
    for (n, s) in phase_sockets(plan, phase).into_iter().enumerate() {
        let c = s.id;
        let at = ramp.map_or(Duration::ZERO, |r| r.open_at(c));
        if !at.is_zero() {
            let source = prepared.run_source(c, shape.length.is_some(), None, Side::All);
            groups[n % threads].later.push(Later { id: c, at, source, pacer: Pacer::default() });
            continue;
        }
        if control.is_cancelled() {
            return Err(Failure::new(FailureKind::Interrupted, "interrupted"));
        }
        let stream = crate::open::open(&s.target, control).map_err(|e| match e {
            ConnectError::Interrupted => Failure::new(FailureKind::Interrupted, "interrupted while connecting"),
            ConnectError::Failed(message) => Failure::new(FailureKind::Connect, message),
        })?;
        let source = match phase {
            Phase::Preload => prepared.preload_source(c, s.node),
            _ => prepared.run_source(c, shape.length.is_some(), s.node, s.side),
        };
        let pacer = Pacer::new(rate, plan.connections, c);
        let router = R::for_client(prepared, c, s.node, stream.peer_label().unwrap_or_default());
        let mut conn = Client::new(c, stream, source, prepared, pacer, router);
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
fn run_workers<R: Router>(
    groups: Vec<Group<R>>,
    shared: &PhaseShared<'_>,
    shape: PhaseShape,
    uring: bool,
) -> (Instant, Vec<WorkerOutcome>) {
    let barrier = Barrier::new(groups.len() + 1);
    std::thread::scope(|scope| {
        let handles: Vec<_> = groups
            .into_iter()
            .enumerate()
            .map(|(i, group)| {
                let barrier = &barrier;
                std::thread::Builder::new()
                    .name(format!("respbench-worker-{i}"))
                    .spawn_scoped(scope, move || {
                        let tally = shape.tally(shared.prepared);
                        if uring {
                            worker::<R, UringIo>(group, shared, barrier, tally, shape.length)
                        } else {
                            worker::<R, EpollIo>(group, shared, barrier, tally, shape.length)
                        }
                    })
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
        for (i, n) in o.tally.nodes.iter().enumerate() {
            // A row past the plan's nodes is a node that joined mid-run: the same in every thread by its label.
            let row = match i.checked_sub(shape.nodes).and_then(|j| o.tally.joined.get(j)) {
                None => i,
                Some(label) => match total.joined.iter().position(|l| l == label) {
                    Some(at) => shape.nodes + at,
                    None => {
                        total.joined.push(label.clone());
                        total.nodes.push(NodeTally::default());
                        total.nodes.len() - 1
                    }
                },
            };
            let Some(sum) = total.nodes.get_mut(row) else { continue };
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
        joined: total.joined,
    }
}

/// The wall clock at `at` (an instant in the past), ms since the Unix epoch.
fn unix_ms_at(at: Instant) -> u64 {
    let now = std::time::SystemTime::now();
    let then = now.checked_sub(at.elapsed()).unwrap_or(now);
    then.duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}
