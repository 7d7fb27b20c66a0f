//! respbench's native engine: the same traffic as the TypeScript engine
//! (`docs/workload.md`), sent from Rust worker threads.
//!
//! Reading order: [`workload`] (keys and values), [`command`] (request bytes),
//! [`request_source`] (what each connection sends next), [`reply`] (RESP
//! scanning), [`connection`] (one socket's window), [`run`] (phases and
//! threads). [`plan`] is the contract with the CLI; [`progress`] is what
//! another thread may watch or cancel.

pub mod command;
pub mod connection;
mod counters;
pub mod histogram;
pub mod plan;
pub mod progress;
pub mod reply;
pub mod request_source;
pub mod run;
pub mod workload;

pub use plan::{Failure, FailureKind, Mode, Plan, PlanError, RawResult};
pub use progress::{Phase, ProgressSnapshot, RunControl};
pub use run::run;
