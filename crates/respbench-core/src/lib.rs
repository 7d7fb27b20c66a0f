//! respbench's native engine: the same traffic as the TypeScript engine
//! (`docs/workload.md`), sent from Rust worker threads.
//!
//! Reading order, as data flows: [`plan`] (the contract with the CLI: a
//! [`Plan`] in, with its [`cluster_plan`]) and [`limits`] (what a Plan may ask
//! for); [`result`] (a [`RawResult`] out); [`keys`] (PRNG streams, key
//! patterns, key bytes) and [`values`] (the value derived from a key);
//! [`template`] (parsing a command template), [`command_kind`] (how its
//! replies count) and [`command`] (its request bytes); [`request_source`]
//! (what each client sends next, from a [`request_source::PreparedPlan`]);
//! [`reply`] (RESP scanning); [`socket`], [`tls`] with [`tls_config`], and
//! [`transport`] (the byte stream: TCP, unix socket or TLS), [`handshake`]
//! (AUTH, HELLO, SELECT before the load) and [`open`] (the one place a
//! socket is opened and made ready); [`slot`] (a key's cluster hash slot)
//! and [`topology`] (the slot map from a CLUSTER SHARDS or SLOTS reply),
//! which [`topology_refresh`] asks for mid-run when a MOVED says the map is stale.
//! Then the engine's rooms (docs/design.md): [`run`](mod@run) (phases, worker
//! threads pinned by [`affinity`], merge of their results) starts one
//! [`worker`] loop per thread (mio poll and timers; it owns no policy), which
//! drives its [`client`]s (one per `-c`: key stream and share of the
//! window); a client asks its [`pacer`] when the next request is due and its
//! [`router`] which [`link`] it goes to (one server: its own; a cluster: by
//! slot, MOVED/ASK/TRYAGAIN); a Link is one socket with its ring of requests
//! in flight and the one reply loop; [`tally`] counts a reply against its
//! request ([`counters`], [`histogram`]); [`recovery`] reopens a dropped
//! client (`--reconnect`); [`progress`] is what another thread may watch or
//! cancel.
//!
//! Modules depend on each other one way only: `tests/module_graph.rs` fails
//! on a cycle.

pub mod affinity;
mod answer_watch;
pub mod client;
pub mod cluster_plan;
pub mod command;
pub mod command_kind;
pub mod counters;
mod der;
pub mod handshake;
pub mod histogram;
pub mod io;
pub mod key_names;
pub mod keys;
pub mod limits;
pub mod link;
pub mod open;
pub mod pacer;
pub mod packed;
mod pem;
pub mod plan;
pub mod prepared_plan;
pub mod progress;
pub mod recovery;
pub mod reply;
pub mod request_source;
pub mod result;
pub mod router;
pub mod run;
pub mod slot;
pub mod socket;
pub mod tally;
pub mod template;
pub mod tls;
mod tls_algorithms;
pub mod tls_config;
mod tls_crypto;
mod tls_kx;
mod tls_probe;
mod tls_signing;
mod tls_strength;
mod tls_verify;
pub mod topology;
pub mod topology_refresh;
pub mod transport;
pub mod values;
pub mod worker;
mod x509;

pub use counters::Counters;
pub use plan::{Mode, Plan, PlanError, TlsPlan};
pub use progress::{Phase, ProgressSnapshot, RunControl};
pub use result::{Failure, FailureKind, RawResult};
pub use run::run;
