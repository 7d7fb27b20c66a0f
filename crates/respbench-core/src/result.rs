//! What a run gives back, mirroring the TS engine's `RawResult`: counters and
//! latency histograms of the timed phase (in total, per command, per interval,
//! per cluster node) and why it ended early, if it did; nothing derived. Every
//! part adds up across threads and machines.

use crate::counters::Counters;
use crate::packed::PackedBuckets;

/// Why a run ended early.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailureKind {
    Connect,
    Closed,
    Protocol,
    Timeout,
    Interrupted,
    Preload,
    Internal,
    /// The server said NOAUTH or NOPERM during the run.
    Auth,
}

impl FailureKind {
    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::Connect => "connect",
            FailureKind::Closed => "closed",
            FailureKind::Protocol => "protocol",
            FailureKind::Timeout => "timeout",
            FailureKind::Interrupted => "interrupted",
            FailureKind::Preload => "preload",
            FailureKind::Internal => "internal",
            FailureKind::Auth => "auth",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    pub kind: FailureKind,
    pub message: String,
}

impl Failure {
    pub fn new(kind: FailureKind, message: impl Into<String>) -> Failure {
        Failure { kind, message: message.into() }
    }
}

/// What the engine measured: counters and the histogram, nothing derived.
#[derive(Clone, Debug, Default)]
pub struct RawResult {
    /// The timed phase's counts (the preload's and warmup's are apart below).
    pub counters: Counters,
    pub elapsed_ns: u64,
    /// `[lowest equivalent ns, count]` for each non-empty bucket, ascending.
    pub histogram: Vec<(u64, u64)>,
    /// The timed SET-side requests' latencies (the op kind; for `-t` or a
    /// command on the line, its command), as `histogram`; with
    /// `get_histogram` it adds up to `histogram`.
    pub set_histogram: Vec<(u64, u64)>,
    /// The timed GET-side requests' latencies, as `set_histogram`.
    pub get_histogram: Vec<(u64, u64)>,
    /// A command mix: each command's latencies, in the mix's order (empty otherwise).
    pub command_histograms: Vec<Vec<(u64, u64)>>,
    pub preload_requests: u64,
    pub preload_elapsed_ns: u64,
    /// Requests sent and answered during the warmup, in no figure.
    pub warmup_requests: u64,
    pub warmup_elapsed_ns: u64,
    /// With a rate: latency from the actual send (the main histogram counts
    /// from the intended send). None without a rate.
    pub service_histogram: Option<Vec<(u64, u64)>>,
    /// With a rate: how late each timed request went out against its
    /// schedule (actual send − intended send), as `histogram`. None without
    /// a rate.
    pub schedule_lag_histogram: Option<Vec<(u64, u64)>>,
    /// Text of the first error reply, if any.
    pub first_error: Option<String>,
    /// Text of the first mismatching value, escaped, if any.
    pub first_mismatch: Option<String>,
    pub failure: Option<Failure>,
    /// Requests of the timed phase written whose replies had not come when
    /// it stopped (0 when it ran to the end).
    pub unanswered: u64,
    /// The timed phase interval by interval ([`crate::RunControl::set_interval`]),
    /// in order, every thread's counts added.
    pub intervals: Vec<IntervalRecord>,
    /// Wall clock (ms since the Unix epoch) when the timed phase started: interval
    /// `i` began `start_ns` after it.
    pub started_unix_ms: u64,
    /// `--cluster`: the timed phase per primary, in `ClusterPlan::nodes`
    /// order; empty without `--cluster`.
    pub nodes: Vec<NodeRecord>,
    /// `--cluster`: the first topology refresh reply refused as no whole
    /// slot map (`host:port: why`); the map in use was kept.
    pub topology_rejected: Option<String>,
}

/// What the timed phase counted on one cluster primary, as the TS `RawNode`.
#[derive(Clone, Debug, Default)]
pub struct NodeRecord {
    /// `host:port`
    pub node: String,
    pub requests: u64,
    pub errors: u64,
    /// Replies from it that redirected a request (MOVED, ASK, TRYAGAIN, CLUSTERDOWN).
    pub redirections: u64,
    /// `[lowest equivalent ns, count]` buckets, as `RawResult::histogram`.
    pub histogram: Vec<(u64, u64)>,
}

/// What the timed phase counted in one interval, as the TS engine's RawInterval.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IntervalRecord {
    /// 0 for the first interval of the phase.
    pub index: u64,
    /// From the phase start, ns.
    pub start_ns: u64,
    /// From the phase start, ns: `start_ns` + the interval, or earlier for the last one.
    pub end_ns: u64,
    /// Replies counted in this interval (by when they came).
    pub counters: Counters,
    /// Latencies of the interval's replies per op kind, packed when cut
    /// (a fine `--interval` keeps thousands of them until the run ends).
    pub set_histogram: PackedBuckets,
    pub get_histogram: PackedBuckets,
    /// A command mix: each command's latencies in the interval, in the mix's order (empty otherwise).
    pub command_histograms: Vec<PackedBuckets>,
    /// Connections open at the interval's end (this thread's; added up over threads).
    pub connections: u64,
}

impl IntervalRecord {
    /// Adds another thread's record of the same interval.
    pub fn merge(&mut self, other: &IntervalRecord) {
        self.start_ns = self.start_ns.min(other.start_ns);
        self.end_ns = self.end_ns.max(other.end_ns);
        self.counters.merge(&other.counters);
        self.connections += other.connections;
        self.set_histogram = self.set_histogram.add(&other.set_histogram);
        self.get_histogram = self.get_histogram.add(&other.get_histogram);
        if self.command_histograms.len() < other.command_histograms.len() {
            self.command_histograms.resize(other.command_histograms.len(), PackedBuckets::default());
        }
        for (mine, theirs) in self.command_histograms.iter_mut().zip(&other.command_histograms) {
            *mine = mine.add(theirs);
        }
    }
}

/// Every thread's records, one per interval index, in order.
pub fn merge_intervals(mut records: Vec<IntervalRecord>) -> Vec<IntervalRecord> {
    records.sort_by_key(|r| r.index);
    let mut out: Vec<IntervalRecord> = Vec::new();
    for r in records {
        match out.last_mut() {
            Some(last) if last.index == r.index => last.merge(&r),
            _ => out.push(r),
        }
    }
    out
}
