//! What another thread (the Node main thread, through the binding) may read
//! or set while a run goes on: progress counters and the cancel flag. All
//! atomics, so reading progress never stops the workers; workers add to the
//! counters once per loop turn, not once per reply.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::result::IntervalRecord;

/// The time series' default interval.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(1);

/// Which phase a run is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Preload,
    Warmup,
    Run,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Preload => "preload",
            Phase::Warmup => "warmup",
            Phase::Run => "run",
        }
    }
}

/// A snapshot of [`RunControl`]'s counters, shaped like the TS `ProgressSnapshot` (engine-js/progress.ts).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProgressSnapshot {
    /// Replies in the current phase so far.
    pub done: u64,
    /// Requests planned for the phase; 0 when time bounds it.
    pub total: u64,
    /// Length of a time-bound phase; 0 for a counted one.
    pub duration_ns: u64,
    pub errors: u64,
    pub elapsed_ns: u64,
    pub phase: Phase,
    /// p99 latency of the timed phase so far, in ns (0 before any reply).
    /// With several worker threads, the latest one a thread published.
    pub p99_ns: u64,
}

/// Shared between a run and whoever watches it.
#[derive(Debug)]
pub struct RunControl {
    cancelled: AtomicBool,
    done: AtomicU64,
    total: AtomicU64,
    duration_ns: AtomicU64,
    errors: AtomicU64,
    p99_ns: AtomicU64,
    /// Someone reads the snapshots (a progress line, live intervals): only
    /// then do the workers add up their histograms for a p99 so far.
    p99_watched: AtomicBool,
    phase: AtomicU8,
    phase_started: Mutex<Option<Instant>>,
    /// Length of the time series' intervals (set before the run starts).
    interval_ns: AtomicU64,
    /// Each worker's interval records of the timed phase, pushed once per
    /// interval (not per reply), readable while the run goes on.
    intervals: Mutex<Vec<IntervalRecord>>,
}

impl Default for RunControl {
    fn default() -> Self {
        Self::new()
    }
}

impl RunControl {
    pub fn new() -> Self {
        RunControl {
            cancelled: AtomicBool::new(false),
            done: AtomicU64::new(0),
            total: AtomicU64::new(0),
            duration_ns: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            p99_ns: AtomicU64::new(0),
            p99_watched: AtomicBool::new(false),
            phase: AtomicU8::new(0),
            phase_started: Mutex::new(None),
            interval_ns: AtomicU64::new(DEFAULT_INTERVAL.as_nanos() as u64),
            intervals: Mutex::new(Vec::new()),
        }
    }

    /// The time series' interval (default 1 s); at least 1 ms.
    pub fn set_interval(&self, interval: Duration) {
        self.interval_ns.store(interval.max(Duration::from_millis(1)).as_nanos() as u64, Ordering::Relaxed);
    }

    pub fn interval(&self) -> Duration {
        Duration::from_nanos(self.interval_ns.load(Ordering::Relaxed))
    }

    /// A worker's finished interval (once per interval).
    pub(crate) fn push_interval(&self, record: IntervalRecord) {
        self.intervals.lock().unwrap_or_else(|e| e.into_inner()).push(record);
    }

    /// The records pushed so far from `from` on (per worker, not yet added
    /// up): a watcher prints intervals while the run goes on with these.
    pub fn intervals_since(&self, from: usize) -> Vec<IntervalRecord> {
        let all = self.intervals.lock().unwrap_or_else(|e| e.into_inner());
        all.get(from..).map(<[IntervalRecord]>::to_vec).unwrap_or_default()
    }

    pub(crate) fn take_intervals(&self) -> Vec<IntervalRecord> {
        std::mem::take(&mut *self.intervals.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Asks the run to stop; it ends with an `interrupted` failure and the
    /// counters so far. Safe to call from any thread, any number of times.
    pub fn cancel(&self) {
        self.cancelled.store(true, Ordering::Relaxed);
    }

    pub fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Relaxed)
    }

    pub(crate) fn begin_phase(&self, phase: Phase, total: u64, duration_ns: u64) {
        self.duration_ns.store(duration_ns, Ordering::Relaxed);
        self.done.store(0, Ordering::Relaxed);
        self.errors.store(0, Ordering::Relaxed);
        self.p99_ns.store(0, Ordering::Relaxed);
        self.total.store(total, Ordering::Relaxed);
        self.phase.store(phase as u8, Ordering::Relaxed);
        *self.phase_started.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
    }

    #[inline]
    pub(crate) fn add(&self, replies: u64, errors: u64) {
        if replies > 0 {
            self.done.fetch_add(replies, Ordering::Relaxed);
        }
        if errors > 0 {
            self.errors.fetch_add(errors, Ordering::Relaxed);
        }
    }

    /// A worker's p99 so far, for the progress line (a few times a second, not per reply).
    pub(crate) fn set_p99(&self, ns: u64) {
        self.p99_ns.store(ns, Ordering::Relaxed);
    }

    /// Whether anyone has asked for a snapshot: a run nobody watches (`-q`,
    /// `--json`) skips the p99 so far, a histogram sum every 250 ms per worker.
    pub(crate) fn p99_watched(&self) -> bool {
        self.p99_watched.load(Ordering::Relaxed)
    }

    /// The counters now. The first call makes the workers publish a p99 so
    /// far from then on (within [`crate::worker`]'s quarter second).
    pub fn snapshot(&self) -> ProgressSnapshot {
        self.p99_watched.store(true, Ordering::Relaxed);
        let started = *self.phase_started.lock().unwrap_or_else(|e| e.into_inner());
        ProgressSnapshot {
            done: self.done.load(Ordering::Relaxed),
            total: self.total.load(Ordering::Relaxed),
            duration_ns: self.duration_ns.load(Ordering::Relaxed),
            errors: self.errors.load(Ordering::Relaxed),
            elapsed_ns: started.map_or(0, |t| t.elapsed().as_nanos() as u64),
            p99_ns: self.p99_ns.load(Ordering::Relaxed),
            phase: match self.phase.load(Ordering::Relaxed) {
                p if p == Phase::Preload as u8 => Phase::Preload,
                p if p == Phase::Warmup as u8 => Phase::Warmup,
                _ => Phase::Run,
            },
        }
    }
}
