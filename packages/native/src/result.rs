//! The core's [`RawResult`] and interval records out as the JS `RawResult`
//! and `RawInterval` shapes (packages/cli/src/engine-js/plan.ts): counts as
//! numbers, histograms as `[lowest equivalent ns, count]` pairs.

use napi_derive::napi;
use respbench_core::RawResult;
use respbench_core::result::IntervalRecord;

/// `RawNode` from engine-js/plan.ts.
#[napi(object)]
pub struct NativeNode {
    pub node: String,
    pub requests: f64,
    pub errors: f64,
    pub redirections: f64,
    pub histogram: NativeHistogram,
}
#[napi(object)]
pub struct NativeHistogram {
    pub unit: String,
    pub significant_digits: u32,
    /// `[lowest equivalent ns, count]`, ascending.
    pub buckets: Vec<Vec<f64>>,
}

#[napi(object)]
pub struct NativeFailure {
    pub kind: String,
    pub message: String,
}

/// `RawResult` from engine-js/plan.ts, field for field.
#[napi(object)]
pub struct NativeResult {
    pub engine: String,
    pub requests: f64,
    pub sets: f64,
    pub gets: f64,
    pub ok: f64,
    pub errors: f64,
    pub misses: f64,
    pub mismatches: f64,
    pub lost_writes: f64,
    pub pushes: f64,
    pub bytes_out: f64,
    pub bytes_in: f64,
    pub elapsed_ns: f64,
    pub histogram: NativeHistogram,
    /// The SET-side and GET-side requests' latencies; together `histogram`.
    pub set_histogram: NativeHistogram,
    pub get_histogram: NativeHistogram,
    /// A command mix: each command's latencies, in the mix's order; absent otherwise.
    pub command_histograms: Option<Vec<NativeHistogram>>,
    pub preload_requests: f64,
    pub preload_elapsed_ns: f64,
    pub warmup_requests: f64,
    pub warmup_elapsed_ns: f64,
    pub service_histogram: Option<NativeHistogram>,
    pub schedule_lag_histogram: Option<NativeHistogram>,
    pub first_error: Option<String>,
    pub first_mismatch: Option<String>,
    pub failure: Option<NativeFailure>,
    /// Requests written whose replies had not come when the run stopped.
    pub unanswered: f64,
    /// `--reconnect`: requests lost to drops, reconnects, time down (the
    /// adapter passes them on only for a plan with `reconnect`).
    pub lost: f64,
    pub reconnects: f64,
    pub down_ns: f64,
    /// The timed phase interval by interval, every thread's counts added.
    pub intervals: Vec<NativeInterval>,
    /// Wall clock when the timed phase started, ms since the Unix epoch.
    pub started_unix_ms: f64,
    /// `--cluster`: the timed phase per primary (empty without it).
    pub nodes: Vec<NativeNode>,
    /// `--cluster`: the timed phase's redirections by kind (the adapter
    /// passes them on only for a plan with `cluster`).
    pub moved: f64,
    pub asked: f64,
    pub retried: f64,
    /// `--read-from replica|any`: stale reads (the adapter passes them on only then).
    pub stale_reads: f64,
    /// `--cluster`: the first topology refresh reply refused as no whole slot map (the map in use was kept).
    pub topology_rejected: Option<String>,
}

/// `RawInterval` from engine-js/plan.ts, its histograms as packed when
/// cut (`respbench_core::packed`: ASCII text, 2–3 bytes a bucket, decoded by
/// engine-js/packed-histogram.ts), so thousands of intervals cross as
/// strings, not as a JS array per bucket.
#[napi(object)]
pub struct NativeInterval {
    pub index: f64,
    pub start_ns: f64,
    pub end_ns: f64,
    pub requests: f64,
    pub sets: f64,
    pub gets: f64,
    pub errors: f64,
    pub misses: f64,
    pub mismatches: f64,
    pub lost_writes: f64,
    pub set_histogram: String,
    pub get_histogram: String,
    /// A command mix: each command's latencies in the interval; absent otherwise.
    pub command_histograms: Option<Vec<String>>,
    pub connections: f64,
    pub bytes_out: f64,
    pub bytes_in: f64,
    /// `--reconnect`: requests lost to drops in the interval.
    pub lost: f64,
}

/// Each command's histogram of a mix, or None when there is no mix.
fn command_histograms(all: &[Vec<(u64, u64)>]) -> Option<Vec<NativeHistogram>> {
    (!all.is_empty()).then(|| all.iter().map(|b| histogram(b)).collect())
}

pub(crate) fn interval(r: &IntervalRecord) -> NativeInterval {
    let n = |v: u64| v as f64;
    let c = &r.counters;
    NativeInterval {
        index: n(r.index),
        start_ns: n(r.start_ns),
        end_ns: n(r.end_ns),
        requests: n(c.requests),
        sets: n(c.sets),
        gets: n(c.gets),
        errors: n(c.errors),
        misses: n(c.misses),
        mismatches: n(c.mismatches),
        lost_writes: n(c.lost_writes),
        set_histogram: r.set_histogram.as_str().into(),
        get_histogram: r.get_histogram.as_str().into(),
        command_histograms: (!r.command_histograms.is_empty())
            .then(|| r.command_histograms.iter().map(|h| h.as_str().into()).collect()),
        connections: n(r.connections),
        bytes_out: n(c.bytes_out),
        bytes_in: n(c.bytes_in),
        lost: n(c.lost),
    }
}
fn histogram(buckets: &[(u64, u64)]) -> NativeHistogram {
    NativeHistogram {
        unit: "ns".into(),
        significant_digits: 3,
        buckets: buckets.iter().map(|&(v, c)| vec![v as f64, c as f64]).collect(),
    }
}

pub(crate) fn to_js(r: RawResult) -> NativeResult {
    let n = |v: u64| v as f64;
    let c = r.counters;
    NativeResult {
        engine: "native".into(),
        requests: n(c.requests),
        sets: n(c.sets),
        gets: n(c.gets),
        ok: n(c.ok),
        errors: n(c.errors),
        misses: n(c.misses),
        mismatches: n(c.mismatches),
        lost_writes: n(c.lost_writes),
        pushes: n(c.pushes),
        bytes_out: n(c.bytes_out),
        bytes_in: n(c.bytes_in),
        elapsed_ns: n(r.elapsed_ns),
        histogram: histogram(&r.histogram),
        set_histogram: histogram(&r.set_histogram),
        get_histogram: histogram(&r.get_histogram),
        command_histograms: command_histograms(&r.command_histograms),
        preload_requests: n(r.preload_requests),
        preload_elapsed_ns: n(r.preload_elapsed_ns),
        warmup_requests: n(r.warmup_requests),
        warmup_elapsed_ns: n(r.warmup_elapsed_ns),
        service_histogram: r.service_histogram.as_deref().map(histogram),
        schedule_lag_histogram: r.schedule_lag_histogram.as_deref().map(histogram),
        first_error: r.first_error,
        first_mismatch: r.first_mismatch,
        failure: r.failure.map(|f| NativeFailure { kind: f.kind.as_str().into(), message: f.message }),
        unanswered: n(r.unanswered),
        lost: n(c.lost),
        reconnects: n(c.reconnects),
        down_ns: n(c.down_ns),
        // Each record dropped once converted: the packed text is not held twice.
        intervals: r.intervals.into_iter().map(|i| interval(&i)).collect(),
        started_unix_ms: n(r.started_unix_ms),
        moved: n(c.moved),
        asked: n(c.asked),
        retried: n(c.retried),
        stale_reads: n(c.stale_reads),
        topology_rejected: r.topology_rejected,
        nodes: r
            .nodes
            .iter()
            .map(|x| NativeNode {
                node: x.node.clone(),
                requests: n(x.requests),
                errors: n(x.errors),
                redirections: n(x.redirections),
                histogram: histogram(&x.histogram),
            })
            .collect(),
    }
}
