//! The napi binding of respbench-core. It only converts: a JS `Plan` in, a
//! `RawResult`-shaped object out, with progress and cancel on a handle. The
//! run goes on its own thread (started by `startRun`), so the JS thread keeps
//! drawing progress; `wait()` resolves on the libuv pool when it ends.

use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use napi::bindgen_prelude::*;
use napi_derive::napi;
use respbench_core::keys::KeyPattern;
use respbench_core::limits::{self, Limit};
use respbench_core::plan::IntervalRecord;
use respbench_core::plan::Secret;
use respbench_core::{FailureKind, Mode, Plan, PlanError, RawResult, RunControl, TlsPlan};

/// `Plan` from packages/cli/src/engine-js/plan.ts (engine-native.ts checks
/// at compile time that a Plan fits this type). Numbers arrive as doubles and
/// are checked to be integers within `respbench_core::limits` here, not
/// truncated silently.
#[napi(object)]
pub struct NativePlan {
    pub host: String,
    pub port: f64,
    /// Unix socket path; null or absent: TCP to host:port.
    pub socket: Option<Either<String, Null>>,
    /// null or absent: no TLS.
    pub tls: Option<Either<NativeTls, Null>>,
    pub connections: f64,
    pub pipeline: f64,
    pub requests: f64,
    pub mode: String,
    pub keyspace: f64,
    pub key_pattern: Option<String>,
    /// null or absent: keyspace / 6.
    pub key_stddev: Option<Either<f64, Null>>,
    pub zipf_exponent: Option<f64>,
    pub value_size_min: f64,
    pub value_size_max: f64,
    pub set_ratio: f64,
    pub set_cmd: String,
    pub get_cmd: String,
    pub key_prefix: String,
    pub literal_commands: Option<bool>,
    /// Absent = false: `__rand_int__` is drawn.
    pub rand_int_literal: Option<bool>,
    /// Absent = false: commands go as RESP arrays.
    pub inline_commands: Option<bool>,
    pub seed: f64,
    pub verify_get: bool,
    pub preload: bool,
    pub threads: f64,
    pub timeout_ms: f64,
    /// Absent = 0: counted, no warmup, closed loop.
    pub duration_ms: Option<f64>,
    pub warmup_ms: Option<f64>,
    pub rate: Option<f64>,
    /// null or absent: the default user.
    pub user: Option<Either<String, Null>>,
    /// null or absent: no AUTH. A secret: never echoed.
    pub password: Option<Either<String, Null>>,
    /// null or absent: no SELECT.
    pub dbnum: Option<Either<f64, Null>>,
    /// Absent = false: RESP2.
    pub resp3: Option<bool>,
    /// Absent: 0 and 1 (one machine runs every connection).
    pub client_index: Option<f64>,
    pub client_count: Option<f64>,
    /// null or absent: a dropped connection ends the run.
    pub reconnect: Option<Either<NativeReconnect, Null>>,
    /// Absent = false: no CLIENT TRACKING in the handshake.
    pub client_tracking: Option<bool>,
    /// null or absent: the two commands of `mode`.
    pub commands: Option<Either<Vec<NativeCommandSpec>, Null>>,
    /// `--cpus`: the CPUs the worker threads are pinned to (absent: not pinned).
    pub cpus: Option<Vec<f64>>,
    /// null or absent: every connection opens at the start.
    pub ramp_connections: Option<Either<NativeRamp, Null>>,
    /// null or absent: one server.
    pub cluster: Option<Either<NativeCluster, Null>>,
}

/// `CommandSpec` from engine-js/plan.ts: one command of a weighted mix.
#[napi(object)]
pub struct NativeCommandSpec {
    pub template: String,
    pub weight: f64,
    /// null or absent: the run's key pattern.
    pub key_pattern: Option<Either<String, Null>>,
}

/// `RampConnections` from engine-js/plan.ts.
#[napi(object)]
pub struct NativeRamp {
    pub start: f64,
    pub step: f64,
    pub every_ms: f64,
}

/// `ClusterPlan` from engine-js/plan.ts.
#[napi(object)]
pub struct NativeCluster {
    pub seeds: Vec<String>,
    pub nodes: Vec<NativeClusterNode>,
    /// `[first, last, node]` each.
    pub slots: Vec<Vec<f64>>,
    /// Absent = "primary".
    pub read_from: Option<String>,
    /// Absent: no replicas known.
    pub replicas: Option<Vec<Vec<NativeClusterNode>>>,
}

/// `ClusterNode` from engine-js/plan.ts.
#[napi(object)]
pub struct NativeClusterNode {
    pub host: String,
    pub port: f64,
}

/// `RawNode` from engine-js/plan.ts.
#[napi(object)]
pub struct NativeNode {
    pub node: String,
    pub requests: f64,
    pub errors: f64,
    pub redirections: f64,
    pub histogram: NativeHistogram,
}

fn to_cluster(c: NativeCluster) -> Result<respbench_core::plan::ClusterPlan> {
    let nodes =
        c.nodes.into_iter().map(|n| Ok((n.host, integer(n.port, limits::PORT)? as u16))).collect::<Result<Vec<_>>>()?;
    let slots = c
        .slots
        .into_iter()
        .map(|r| {
            if r.len() != 3 {
                return Err(Error::new(Status::InvalidArg, "plan.cluster.slots must be [first, last, node] each"));
            }
            Ok((
                integer_named("cluster slot", r[0], 0, 16383)? as u16,
                integer_named("cluster slot", r[1], 0, 16383)? as u16,
                integer_named("cluster node", r[2], 0, u16::MAX as u64)? as u32,
            ))
        })
        .collect::<Result<Vec<_>>>()?;
    use respbench_core::plan::ReadFrom;
    let read_from = match c.read_from.as_deref() {
        None | Some("primary") => ReadFrom::Primary,
        Some("replica") => ReadFrom::Replica,
        Some("any") => ReadFrom::Any,
        Some(_) => return Err(Error::new(Status::InvalidArg, "plan.cluster.readFrom must be primary, replica or any")),
    };
    let replicas = c
        .replicas
        .unwrap_or_default()
        .into_iter()
        .map(|rs| {
            rs.into_iter().map(|n| Ok((n.host, integer(n.port, limits::PORT)? as u16))).collect::<Result<Vec<_>>>()
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(respbench_core::plan::ClusterPlan { nodes, slots, read_from, replicas })
}

/// `Reconnect` from engine-js/plan.ts.
#[napi(object)]
pub struct NativeReconnect {
    pub attempts: f64,
    pub backoff_ms: f64,
}

/// `TlsPlan` from engine-js/plan.ts; null or absent strings are unset.
#[napi(object)]
pub struct NativeTls {
    pub cacert: Option<Either<String, Null>>,
    pub cacertdir: Option<Either<String, Null>>,
    pub cert: Option<Either<String, Null>>,
    pub key: Option<Either<String, Null>>,
    pub insecure: Option<bool>,
    pub sni: Option<Either<String, Null>>,
    pub ciphers: Option<Either<String, Null>>,
    pub ciphersuites: Option<Either<String, Null>>,
}

/// A `string | null` field: None when null or absent.
fn text(v: Option<Either<String, Null>>) -> Option<String> {
    match v {
        Some(Either::A(s)) => Some(s),
        _ => None,
    }
}

fn to_tls(t: NativeTls) -> TlsPlan {
    TlsPlan {
        cacert: text(t.cacert),
        cacertdir: text(t.cacertdir),
        cert: text(t.cert),
        key: text(t.key),
        insecure: t.insecure.unwrap_or(false),
        sni: text(t.sni),
        ciphers: text(t.ciphers),
        ciphersuites: text(t.ciphersuites),
    }
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
}

/// `RawInterval` from engine-js/plan.ts.
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
    pub set_histogram: NativeHistogram,
    pub get_histogram: NativeHistogram,
    /// A command mix: each command's latencies in the interval; absent otherwise.
    pub command_histograms: Option<Vec<NativeHistogram>>,
    pub connections: f64,
}

/// Each command's histogram of a mix, or None when there is no mix.
fn command_histograms(all: &[Vec<(u64, u64)>]) -> Option<Vec<NativeHistogram>> {
    (!all.is_empty()).then(|| all.iter().map(|b| histogram(b)).collect())
}

fn interval(r: &IntervalRecord) -> NativeInterval {
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
        set_histogram: histogram(&r.set_histogram),
        get_histogram: histogram(&r.get_histogram),
        command_histograms: command_histograms(&r.command_histograms),
        connections: n(r.connections),
    }
}

/// `ProgressSnapshot` from engine-js/progress.ts.
#[napi(object)]
pub struct NativeProgress {
    pub done: f64,
    pub total: f64,
    pub errors: f64,
    pub elapsed_ns: f64,
    pub phase: String,
    pub duration_ns: f64,
    /// p99 latency of the timed phase so far (0 before any reply).
    pub p99_ns: f64,
}

/// A JS number as a whole number within `limit` (the core's one table), or
/// an error naming the field.
fn integer(value: f64, limit: Limit) -> Result<u64> {
    integer_named(limit.name, value, limit.min, limit.max)
}

fn integer_named(name: &str, value: f64, min: u64, max: u64) -> Result<u64> {
    if !value.is_finite() || value.fract() != 0.0 || value < min as f64 || value > max as f64 {
        return Err(Error::new(
            Status::InvalidArg,
            format!("plan.{name} must be an integer in {min}..{max}, got {value}"),
        ));
    }
    Ok(value as u64)
}

/// Milliseconds: any whole number JS holds exactly.
fn millis(name: &str, value: f64) -> Result<u64> {
    integer_named(name, value, 0, (1 << 53) - 1)
}

fn to_plan(p: NativePlan) -> Result<Plan> {
    let mode = Mode::parse(&p.mode).ok_or_else(|| {
        Error::new(Status::InvalidArg, format!("plan.mode must be set, get or mixed, got {}", p.mode))
    })?;
    let key_pattern = p.key_pattern.as_deref().unwrap_or("uniform");
    let key_pattern = KeyPattern::parse(key_pattern).ok_or_else(|| {
        Error::new(
            Status::InvalidArg,
            format!("plan.keyPattern must be uniform, sequential, gaussian or zipf, got {key_pattern}"),
        )
    })?;
    Ok(Plan {
        host: p.host,
        port: integer(p.port, limits::PORT)? as u16,
        socket: text(p.socket),
        tls: match p.tls {
            Some(Either::A(t)) => Some(to_tls(t)),
            _ => None,
        },
        connections: integer(p.connections, limits::CONNECTIONS)? as u32,
        pipeline: integer(p.pipeline, limits::PIPELINE)? as u32,
        requests: integer(p.requests, limits::REQUESTS)?,
        mode,
        keyspace: integer(p.keyspace, limits::KEYSPACE)?,
        key_pattern,
        key_stddev: match p.key_stddev {
            Some(Either::A(d)) => Some(d),
            _ => None,
        },
        zipf_exponent: p.zipf_exponent.unwrap_or(0.99),
        value_size_min: integer(p.value_size_min, Limit { name: "valueSizeMin", ..limits::VALUE_SIZE })? as usize,
        value_size_max: integer(p.value_size_max, Limit { name: "valueSizeMax", ..limits::VALUE_SIZE })? as usize,
        set_ratio: integer(p.set_ratio, limits::SET_RATIO)? as u32,
        set_cmd: p.set_cmd,
        get_cmd: p.get_cmd,
        key_prefix: p.key_prefix,
        literal_commands: p.literal_commands.unwrap_or(false),
        rand_int_literal: p.rand_int_literal.unwrap_or(false),
        inline_commands: p.inline_commands.unwrap_or(false),
        seed: integer(p.seed, limits::SEED)? as u32,
        verify_get: p.verify_get,
        preload: p.preload,
        threads: integer(p.threads, limits::THREADS)? as u32,
        timeout_ms: millis("timeoutMs", p.timeout_ms)?,
        duration_ms: millis("durationMs", p.duration_ms.unwrap_or(0.0))?,
        warmup_ms: millis("warmupMs", p.warmup_ms.unwrap_or(0.0))?,
        rate: p.rate.unwrap_or(0.0),
        user: text_or_null(p.user),
        password: text_or_null(p.password).map(Secret::new),
        dbnum: match p.dbnum {
            Some(Either::A(n)) => Some(integer_named("dbnum", n, 0, i32::MAX as u64)? as u32),
            _ => None,
        },
        resp3: p.resp3.unwrap_or(false),
        reconnect: match p.reconnect {
            Some(Either::A(r)) => Some(respbench_core::plan::Reconnect {
                attempts: integer_named("reconnect.attempts", r.attempts, 1, u32::MAX as u64)? as u32,
                backoff_ms: millis("reconnect.backoffMs", r.backoff_ms)?,
            }),
            _ => None,
        },
        client_tracking: p.client_tracking.unwrap_or(false),
        commands: match p.commands {
            Some(Either::A(list)) => {
                list.into_iter().enumerate().map(|(i, c)| to_command(i, c)).collect::<Result<_>>()?
            }
            _ => Vec::new(),
        },
        cpus: match p.cpus {
            Some(list) => {
                list.into_iter().map(|c| integer_named("cpus", c, 0, 1023).map(|c| c as u32)).collect::<Result<_>>()?
            }
            None => Vec::new(),
        },
        ramp_connections: match p.ramp_connections {
            Some(Either::A(r)) => Some(respbench_core::plan::RampConnections {
                start: integer_named("rampConnections.start", r.start, 1, u32::MAX as u64)? as u32,
                step: integer_named("rampConnections.step", r.step, 1, u32::MAX as u64)? as u32,
                every_ms: millis("rampConnections.everyMs", r.every_ms)?,
            }),
            _ => None,
        },
        client_index: p.client_index.map_or(0, |v| v.max(0.0) as u32),
        client_count: p.client_count.map_or(1, |v| v.max(0.0) as u32),
        cluster: match p.cluster {
            Some(Either::A(c)) => Some(to_cluster(c)?),
            _ => None,
        },
        read_only: false,
    })
}

fn to_command(i: usize, c: NativeCommandSpec) -> Result<respbench_core::plan::CommandSpec> {
    let key_pattern = match text_or_null(c.key_pattern) {
        Some(name) => Some(KeyPattern::parse(&name).ok_or_else(|| {
            Error::new(
                Status::InvalidArg,
                format!("plan.commands[{i}].keyPattern must be uniform, sequential, gaussian or zipf, got {name}"),
            )
        })?),
        None => None,
    };
    Ok(respbench_core::plan::CommandSpec {
        template: c.template,
        weight: integer_named(&format!("commands[{i}].weight"), c.weight, 1, u32::MAX as u64)? as u32,
        key_pattern,
    })
}

fn text_or_null(v: Option<Either<String, Null>>) -> Option<String> {
    match v {
        Some(Either::A(s)) => Some(s),
        _ => None,
    }
}

fn histogram(buckets: &[(u64, u64)]) -> NativeHistogram {
    NativeHistogram {
        unit: "ns".into(),
        significant_digits: 3,
        buckets: buckets.iter().map(|&(v, c)| vec![v as f64, c as f64]).collect(),
    }
}

fn to_js(r: RawResult) -> NativeResult {
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
        intervals: r.intervals.iter().map(interval).collect(),
        started_unix_ms: n(r.started_unix_ms),
        moved: n(c.moved),
        asked: n(c.asked),
        retried: n(c.retried),
        stale_reads: n(c.stale_reads),
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

type RunThread = JoinHandle<std::result::Result<RawResult, PlanError>>;

/// A run in progress. `progress()` and `cancel()` may be called any time;
/// `wait()` once.
#[napi]
pub struct RunHandle {
    control: Arc<RunControl>,
    thread: Mutex<Option<RunThread>>,
}

#[napi]
impl RunHandle {
    /// Replies so far in the current phase; cheap (a few atomic loads).
    #[napi]
    pub fn progress(&self) -> NativeProgress {
        let p = self.control.snapshot();
        NativeProgress {
            done: p.done as f64,
            total: p.total as f64,
            errors: p.errors as f64,
            elapsed_ns: p.elapsed_ns as f64,
            phase: p.phase.as_str().into(),
            duration_ns: p.duration_ns as f64,
            p99_ns: p.p99_ns as f64,
        }
    }

    /// The timed phase's interval records from `from` on, one per worker
    /// thread and interval (not added up), for printing them as they come.
    #[napi]
    pub fn intervals_since(&self, from: f64) -> Vec<NativeInterval> {
        self.control.intervals_since(from.max(0.0) as usize).iter().map(interval).collect()
    }

    /// Stops the run: it ends within a few ms with an `interrupted` failure
    /// and the counters so far.
    #[napi]
    pub fn cancel(&self) {
        self.control.cancel();
    }

    /// Resolves with the result when the run ends.
    #[napi(ts_return_type = "Promise<NativeResult>")]
    pub fn wait(&self) -> Result<AsyncTask<WaitForRun>> {
        let thread = self
            .thread
            .lock()
            .map_err(|_| Error::from_reason("run handle lock poisoned"))?
            .take()
            .ok_or_else(|| Error::from_reason("wait() was already called on this run"))?;
        Ok(AsyncTask::new(WaitForRun { thread: Some(thread) }))
    }
}

/// Joins the run thread on the libuv pool, off the JS thread.
pub struct WaitForRun {
    thread: Option<RunThread>,
}

#[napi]
impl Task for WaitForRun {
    type Output = RawResult;
    type JsValue = NativeResult;

    fn compute(&mut self) -> Result<Self::Output> {
        let thread = self.thread.take().ok_or_else(|| Error::from_reason("run already joined"))?;
        match thread.join() {
            Ok(Ok(result)) => Ok(result),
            Ok(Err(e)) => Err(Error::new(Status::InvalidArg, e.0)),
            Err(_) => Ok(RawResult {
                failure: Some(respbench_core::Failure::new(FailureKind::Internal, "the native engine panicked")),
                ..RawResult::default()
            }),
        }
    }

    fn resolve(&mut self, _env: Env, output: Self::Output) -> Result<Self::JsValue> {
        Ok(to_js(output))
    }
}

/// Checks the plan (throws on a bad one, before any connection), then starts
/// the run on its own thread. `intervalMs`: the time series' interval.
#[napi]
pub fn start_run(plan: NativePlan, interval_ms: Option<f64>) -> Result<RunHandle> {
    let plan = to_plan(plan)?;
    respbench_core::run::check(&plan).map_err(|e| Error::new(Status::InvalidArg, e.0))?;
    let control = Arc::new(RunControl::new());
    // The time series' interval; absent: the default (1 s).
    if let Some(ms) = interval_ms.filter(|ms| ms.is_finite() && *ms > 0.0) {
        control.set_interval(std::time::Duration::from_secs_f64(ms / 1000.0));
    }
    let worker_control = Arc::clone(&control);
    let thread = std::thread::Builder::new()
        .name("respbench-run".into())
        .spawn(move || respbench_core::run(plan, &worker_control))
        .map_err(|e| Error::from_reason(format!("cannot start the run thread: {e}")))?;
    Ok(RunHandle { control, thread: Mutex::new(Some(thread)) })
}
