//! respbench's native engine: the same traffic as the TypeScript engine
//! (`docs/workload.md`), sent from Rust worker threads.
//!
//! Reading order, as data flows: [`plan`] (the contract with the CLI: a
//! [`Plan`] in, with its [`cluster_plan`]) and [`limits`] (what a Plan may ask
//! for); [`result`] (a [`RawResult`] out); [`keys`] (PRNG streams, key
//! patterns, key bytes) and [`values`] (the value derived from a key);
//! [`template`] (parsing a command template), [`command_kind`] (how its
//! replies count) and [`command`] (its request bytes); [`request_source`]
//! (what each connection sends next, from a
//! [`request_source::PreparedPlan`]); [`reply`] (RESP scanning); [`socket`],
//! [`tls`] with [`tls_config`], and [`transport`] (the byte stream: TCP, unix
//! socket or TLS); [`connection`] (opening a connection, and one socket's
//! window) with [`handshake`] (AUTH, HELLO, SELECT before the load);
//! [`slot`] (a key's cluster hash slot) and [`topology`] (the slot map from
//! a CLUSTER SHARDS or SLOTS reply); [`counters`] and [`histogram`]
//! (what is counted); [`run`](mod@run) (phases and threads, pinned to CPUs by
//! [`affinity`]); [`progress`] (what another thread may watch or cancel).
//!
//! Modules depend on each other one way only: `tests/module_graph.rs` fails
//! on a cycle.

pub mod affinity;
pub mod cluster_plan;
pub mod command;
pub mod command_kind;
pub mod connection;
pub mod counters;
pub mod handshake;
pub mod histogram;
pub mod keys;
pub mod limits;
pub mod plan;
pub mod progress;
pub mod reply;
pub mod request_source;
pub mod result;
pub mod run;
pub mod slot;
pub mod socket;
pub mod template;
pub mod tls;
pub mod tls_config;
pub mod topology;
pub mod transport;
pub mod values;

pub use counters::Counters;
pub use plan::{Mode, Plan, PlanError, TlsPlan};
pub use progress::{Phase, ProgressSnapshot, RunControl};
pub use result::{Failure, FailureKind, RawResult};
pub use run::run;
