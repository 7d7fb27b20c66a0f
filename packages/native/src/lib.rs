//! The napi binding of respbench-core. It only converts: a JS `Plan` in, a
//! `RawResult`-shaped object out, with progress and cancel on a handle. The
//! run goes on its own thread (started by `startRun`), so the JS thread keeps
//! drawing progress; `wait()` resolves on the libuv pool when it ends.
//!
//! [`plan`] converts the JS Plan in, [`result`] the result out; this file
//! holds the run handle JS calls.

mod io;
mod plan;
mod result;

use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use napi::bindgen_prelude::*;
use napi_derive::napi;
use respbench_core::{FailureKind, PlanError, RawResult, RunControl};

use crate::plan::{NativePlan, to_plan};
use crate::result::{NativeInterval, NativeResult, interval, to_js};

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
