//! A whole run: the untimed get-mode preload, then the timed phase, each over
//! fresh connections spread across worker threads, as the TS engine's
//! `jsEngine.run`.
//!
//! Each worker thread owns a mio `Poll` (epoll) and several connections, so
//! `-c 200` does not need 200 threads; each has its own counters and
//! histogram, merged when the threads join, so the hot path shares nothing.
//! The first failure anywhere (server closed, protocol error, timeout,
//! cancel) stops every thread and the run reports the counters so far.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Barrier, Mutex};
use std::time::{Duration, Instant};

use mio::{Events, Interest, Poll, Token};

use crate::connection::{self, ConnectError, Connection, Pace, Status, Tally};
use crate::counters::Counters;
use crate::histogram::LatencyHistogram;
use crate::plan::{Failure, FailureKind, Plan, PlanError, RawResult};
use crate::progress::{Phase, RunControl};
use crate::request_source::Workload;

/// Longest a worker sleeps in epoll before it looks at the cancel flag,
/// the other threads' failures and the reply deadlines again.
const POLL_SLICE: Duration = Duration::from_millis(20);
/// Connect timeout when the plan has no reply timeout (as the TS engine).
const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Refuses a plan that cannot run (bad template, zero keyspace, …) without
/// touching the network, so a caller can report it before starting.
pub fn check(plan: &Plan) -> Result<(), PlanError> {
    plan.check()?;
    Workload::new(plan.clone()).map(|_| ()).map_err(|e| PlanError(e.0))
}

/// Runs a plan to completion or first failure. Errors only for a plan that
/// cannot run at all (bad template, zero keyspace); everything that goes
/// wrong on the wire is in `RawResult::failure`.
pub fn run(plan: Plan, control: &RunControl) -> Result<RawResult, PlanError> {
    plan.check()?;
    let workload = Workload::new(plan).map_err(|e| PlanError(e.0))?;
    let mut result = RawResult::default();
    let mut preload = Counters::default();
    let mut failure = None;
    let plan = &workload.plan;
    if workload.preload_total > 0 {
        control.begin_phase(Phase::Preload, workload.preload_total, 0);
        let outcome = run_phase(&workload, Phase::Preload, control);
        result.preload_elapsed_ns = outcome.elapsed_ns;
        preload = outcome.counters;
        if let Some(f) = outcome.failure {
            failure = Some(Failure::new(f.kind, format!("preload: {}", f.message)));
        } else if preload.errors > 0 {
            failure = Some(Failure::new(
                FailureKind::Preload,
                format!(
                    "preload: the server answered {} writes with errors, first: {}",
                    preload.errors,
                    preload.first_error_text().unwrap_or_default()
                ),
            ));
        }
    }
    result.preload_requests = preload.sets;
    if failure.is_none() && plan.warmup_ms > 0 {
        control.begin_phase(Phase::Warmup, 0, plan.warmup_ms * 1_000_000);
        let outcome = run_phase(&workload, Phase::Warmup, control);
        result.warmup_elapsed_ns = outcome.elapsed_ns;
        result.warmup_requests = outcome.counters.sets + outcome.counters.gets;
        if let Some(f) = outcome.failure {
            failure = Some(Failure::new(f.kind, format!("warmup: {}", f.message)));
        }
    }
    let mut histogram = LatencyHistogram::new();
    let mut service = (plan.rate > 0.0).then(LatencyHistogram::new);
    let mut counters = Counters::default();
    if failure.is_none() {
        let total = if plan.duration_ms > 0 { 0 } else { plan.requests };
        control.begin_phase(Phase::Run, total, plan.duration_ms * 1_000_000);
        let outcome = run_phase(&workload, Phase::Run, control);
        result.elapsed_ns = outcome.elapsed_ns;
        counters = outcome.counters;
        if let Some(h) = outcome.histogram {
            histogram = h;
        }
        if outcome.service.is_some() {
            service = outcome.service;
        }
        failure = outcome.failure;
    }
    result.requests = counters.requests;
    result.sets = counters.sets;
    result.gets = counters.gets;
    result.ok = counters.ok;
    result.errors = counters.errors;
    result.misses = counters.misses;
    result.mismatches = counters.mismatches;
    result.bytes_out = counters.bytes_out;
    result.bytes_in = counters.bytes_in;
    result.histogram = histogram.buckets();
    result.service_histogram = service.map(|h| h.buckets());
    result.first_error =
        counters.first_error_text().or_else(|| if failure.is_some() { preload.first_error_text() } else { None });
    result.first_mismatch = counters.first_mismatch_text();
    result.failure = failure;
    Ok(result)
}

struct PhaseOutcome {
    elapsed_ns: u64,
    failure: Option<Failure>,
    counters: Counters,
    histogram: Option<LatencyHistogram>,
    service: Option<LatencyHistogram>,
}

/// What the worker threads of one phase share: the first failure, and the
/// flag that tells the others to stop once there is one.
struct PhaseShared<'a> {
    workload: &'a Workload,
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

/// Connects every connection (one after another, as the TS engine), then
/// runs them on `threads` workers that start together.
fn run_phase(workload: &Workload, phase: Phase, control: &RunControl) -> PhaseOutcome {
    let plan = &workload.plan;
    let timed = phase == Phase::Run;
    let rated = timed && plan.rate > 0.0;
    let empty = |failure| PhaseOutcome {
        elapsed_ns: 0,
        failure: Some(failure),
        counters: Counters::default(),
        histogram: timed.then(LatencyHistogram::new),
        service: rated.then(LatencyHistogram::new),
    };
    let length = match phase {
        Phase::Preload => 0,
        Phase::Warmup => plan.warmup_ms,
        Phase::Run => plan.duration_ms,
    };
    let length = (length > 0).then(|| Duration::from_millis(length));
    // connection c's k-th request is due at start + (k * C + c) / R: the
    // connections take turns instead of firing together.
    let interval = (phase != Phase::Preload && plan.rate > 0.0).then(|| plan.connections as f64 / plan.rate);
    let connect_timeout =
        if plan.timeout_ms > 0 { Duration::from_millis(plan.timeout_ms) } else { DEFAULT_CONNECT_TIMEOUT };
    let threads = plan.threads.clamp(1, plan.connections) as usize;
    let mut groups: Vec<Vec<Connection>> = (0..threads).map(|_| Vec::new()).collect();
    for c in 0..plan.connections {
        if control.is_cancelled() {
            return empty(Failure::new(FailureKind::Interrupted, "interrupted"));
        }
        let stream = match connection::open(&plan.host, plan.port, connect_timeout, control) {
            Ok(s) => s,
            Err(ConnectError::Interrupted) => {
                return empty(Failure::new(FailureKind::Interrupted, "interrupted while connecting"));
            }
            Err(ConnectError::Failed(message)) => return empty(Failure::new(FailureKind::Connect, message)),
        };
        let source = match phase {
            Phase::Preload => workload.preload_source(c),
            _ => workload.run_source(c, length.is_some()),
        };
        let offset = interval.map_or(0.0, |_| c as f64 / plan.rate);
        let pace = Pace { deadline: None, interval, offset };
        groups[c as usize % threads].push(Connection::new(c, stream, source, workload, pace));
    }

    let shared = PhaseShared { workload, control, stop: AtomicBool::new(false), failure: Mutex::new(None) };
    let barrier = Barrier::new(threads + 1);
    let (start, outcomes) = std::thread::scope(|scope| {
        let handles: Vec<_> = groups
            .into_iter()
            .enumerate()
            .map(|(i, conns)| {
                let (shared, barrier) = (&shared, &barrier);
                std::thread::Builder::new()
                    .name(format!("respbench-worker-{i}"))
                    .spawn_scoped(scope, move || worker(conns, shared, barrier, timed, rated, length))
                    .expect("spawn a worker thread")
            })
            .collect();
        barrier.wait();
        let start = Instant::now();
        let outcomes: Vec<WorkerOutcome> = handles
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
    });

    let mut counters = Counters::default();
    let mut histogram = timed.then(LatencyHistogram::new);
    let mut service = rated.then(LatencyHistogram::new);
    // Each thread measures from its own start after the barrier (its
    // deadline counts from there too), so a late main thread shortens nothing.
    let start = outcomes.iter().map(|o| o.started_at).min().unwrap_or(start);
    let mut end = start;
    for o in outcomes {
        end = end.max(o.finished_at);
        counters.merge(o.tally.counters);
        if let (Some(total), Some(h)) = (histogram.as_mut(), o.tally.histogram.as_ref()) {
            total.merge(h);
        }
        if let (Some(total), Some(h)) = (service.as_mut(), o.tally.service.as_ref()) {
            total.merge(h);
        }
    }
    PhaseOutcome {
        elapsed_ns: end.saturating_duration_since(start).as_nanos() as u64,
        failure: shared.failure.into_inner().unwrap_or_else(|e| e.into_inner()),
        counters,
        histogram,
        service,
    }
}

/// One worker thread's event loop over its connections.
fn worker(
    mut conns: Vec<Connection>,
    shared: &PhaseShared<'_>,
    barrier: &Barrier,
    timed: bool,
    rated: bool,
    length: Option<Duration>,
) -> WorkerOutcome {
    let mut tally = Tally {
        histogram: timed.then(LatencyHistogram::new),
        service: rated.then(LatencyHistogram::new),
        ..Tally::default()
    };
    let setup = (|| -> std::io::Result<Poll> {
        let poll = Poll::new()?;
        for (i, conn) in conns.iter_mut().enumerate() {
            poll.registry().register(&mut conn.stream, Token(i), Interest::READABLE | Interest::WRITABLE)?;
        }
        Ok(poll)
    })();
    barrier.wait();
    let started_at = Instant::now();
    let mut poll = match setup {
        Ok(p) => p,
        Err(e) => {
            shared.fail(Failure::new(FailureKind::Internal, format!("cannot set up epoll: {e}")));
            return WorkerOutcome { tally, started_at, finished_at: Instant::now() };
        }
    };
    let w = shared.workload;
    let control = shared.control;
    let timeout = Duration::from_millis(w.plan.timeout_ms);
    // As the TS engine: look at deadlines a few times per timeout, not per event.
    let timeout_check = (timeout / 4).clamp(Duration::from_millis(1), Duration::from_millis(250));
    let mut last_timeout_check = Instant::now();
    let mut finished = vec![false; conns.len()];
    let mut active = conns.len();
    let mut events = Events::with_capacity(conns.len().clamp(16, 1024));
    // A time-bound phase ends `length` after its start (this thread's start).
    let deadline = length.map(|l| started_at + l);
    let mut paced = false;
    for conn in conns.iter_mut() {
        conn.set_deadline(deadline);
        paced |= conn.is_paced();
    }
    // Paced: the first turn comes at once, then at whatever is due next.
    let mut next_wake: Option<Instant> = paced.then(Instant::now);

    let settle = |i: usize, outcome: Result<Status, Failure>, finished: &mut [bool], active: &mut usize| match outcome {
        Ok(Status::Busy) => {}
        Ok(Status::Finished) => {
            finished[i] = true;
            *active -= 1;
        }
        Err(f) => shared.fail(f),
    };

    for (i, conn) in conns.iter_mut().enumerate() {
        let outcome = conn.start(w, &mut tally);
        settle(i, outcome, &mut finished, &mut active);
    }
    while active > 0 && !shared.stop.load(Ordering::Relaxed) {
        if control.is_cancelled() {
            shared.fail(Failure::new(FailureKind::Interrupted, "interrupted"));
            break;
        }
        let wait = match next_wake {
            // Sooner than epoll's millisecond: poll without sleeping, or a
            // due request would go out up to 1 ms late.
            Some(t) => t.saturating_duration_since(Instant::now()).min(POLL_SLICE),
            None => POLL_SLICE,
        };
        // epoll rounds a timeout up to whole milliseconds: sleep one less,
        // and poll without sleeping through the last one.
        let wait = wait.saturating_sub(Duration::from_millis(1));
        if let Err(e) = poll.poll(&mut events, Some(wait)) {
            if e.kind() != std::io::ErrorKind::Interrupted {
                shared.fail(Failure::new(FailureKind::Internal, format!("epoll failed: {e}")));
                break;
            }
        }
        for event in events.iter() {
            let i = event.token().0;
            if finished[i] {
                continue;
            }
            let closing = event.is_read_closed() || event.is_error();
            if event.is_readable() || closing {
                let outcome = conns[i].on_readable(w, &mut tally, closing);
                settle(i, outcome, &mut finished, &mut active);
            }
            if !finished[i] && event.is_writable() {
                let outcome = conns[i].on_writable(w, &mut tally);
                settle(i, outcome, &mut finished, &mut active);
            }
            if finished[i] {
                let _ = poll.registry().deregister(&mut conns[i].stream);
            }
        }
        if paced {
            // Turns no socket event gives: due requests (--rate), the end of a time-bound phase.
            next_wake = None;
            let now = Instant::now();
            for i in 0..conns.len() {
                if finished[i] {
                    continue;
                }
                match conns[i].next_wake() {
                    Some(t) if t <= now => {
                        let outcome = conns[i].pump(w, &mut tally);
                        settle(i, outcome, &mut finished, &mut active);
                        if finished[i] {
                            let _ = poll.registry().deregister(&mut conns[i].stream);
                        } else if let Some(t) = conns[i].next_wake() {
                            next_wake = Some(next_wake.map_or(t, |n: Instant| n.min(t)));
                        }
                    }
                    Some(t) => next_wake = Some(next_wake.map_or(t, |n: Instant| n.min(t))),
                    None => {}
                }
            }
        }
        control.add(tally.unreported_replies, tally.unreported_errors);
        tally.unreported_replies = 0;
        tally.unreported_errors = 0;
        if !timeout.is_zero() && last_timeout_check.elapsed() >= timeout_check {
            let now = Instant::now();
            last_timeout_check = now;
            for (i, conn) in conns.iter().enumerate() {
                match conn.oldest_sent_at() {
                    Some(sent) if !finished[i] && now.saturating_duration_since(sent) > timeout => {
                        shared.fail(Failure::new(
                            FailureKind::Timeout,
                            format!(
                                "{}: no reply within {} ms (--timeout) after {} replies{}",
                                conn.label(),
                                w.plan.timeout_ms,
                                conn.received,
                                conn.partial_note()
                            ),
                        ));
                        break;
                    }
                    _ => {}
                }
            }
        }
    }
    let finished_at = Instant::now();
    // Close the sockets before reporting, so the server sees them go with the run.
    drop(conns);
    WorkerOutcome { tally, started_at, finished_at }
}
