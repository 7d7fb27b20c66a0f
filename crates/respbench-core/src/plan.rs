//! The contract the engine takes, mirroring `packages/cli/src/engine-js/plan.ts`:
//! a [`Plan`] in ([`crate::result::RawResult`] is what comes out). The napi
//! binding only converts these field by field.

use std::fmt;

use crate::keys::KeyPattern;
use crate::limits::{self, Limit};
use crate::values::VERIFY_MIN_VALUE_SIZE;

// Kept so `crate::plan::{ClusterPlan, RawResult, Failure, …}` still name them
// (the connection and the run, being rebuilt for issue 19, import them here).
pub use crate::cluster_plan::{ClusterPlan, ReadFrom};
pub use crate::result::{Failure, FailureKind, IntervalRecord, NodeRecord, RawResult, merge_intervals};

/// Which commands a run sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Set,
    Get,
    Mixed,
}

impl Mode {
    pub fn parse(text: &str) -> Option<Mode> {
        match text {
            "set" => Some(Mode::Set),
            "get" => Some(Mode::Get),
            "mixed" => Some(Mode::Mixed),
            _ => None,
        }
    }
}

/// What to run; field for field the TypeScript `Plan`.
#[derive(Clone, Debug)]
pub struct Plan {
    pub host: String,
    pub port: u16,
    /// A unix socket path; when set, host and port are not used.
    pub socket: Option<String>,
    /// TLS over the TCP connection; None = plain TCP.
    pub tls: Option<TlsPlan>,
    /// Connections, each with its own key stream and share of the requests.
    pub connections: u32,
    /// Requests in flight per connection (a sliding window).
    pub pipeline: u32,
    /// `--pipeline-mode batch`: send `pipeline` requests, wait for all their
    /// replies, send the next `pipeline` (redis-benchmark's -P); false: a
    /// sliding window, a request going out as each reply comes.
    pub pipeline_batch: bool,
    /// Total timed requests across all connections.
    pub requests: u64,
    pub mode: Mode,
    pub keyspace: u64,
    /// How key indexes are drawn.
    pub key_pattern: KeyPattern,
    /// Gaussian: standard deviation in keys; None = keyspace / 6.
    pub key_stddev: Option<f64>,
    /// Zipf: the exponent s, > 0.
    pub zipf_exponent: f64,
    pub value_size_min: usize,
    pub value_size_max: usize,
    /// `--value-generation`: mixed into every value (0: the values of earlier
    /// builds), so a server that keeps an older value is caught (docs/workload.md, "Values").
    pub value_generation: u32,
    /// Mixed mode: percentage of writes, 0..100.
    pub set_ratio: u32,
    pub set_cmd: String,
    pub get_cmd: String,
    pub key_prefix: String,
    /// The command suite's own commands: a single word is sent as it is and
    /// a template needs no `__key__`.
    pub literal_commands: bool,
    /// `__rand_int__` is sent as the text `__rand_int__`, as redis-benchmark
    /// does without -r (every request then names the same key).
    pub rand_int_literal: bool,
    /// The commands go in the inline form (`PING\r\n`), as redis-benchmark's
    /// PING_INLINE; fixed words only.
    pub inline_commands: bool,
    pub seed: u32,
    pub verify_get: bool,
    /// Get mode: write the keys it will read first (untimed).
    pub preload: bool,
    /// Worker threads; connections are spread over them.
    pub threads: u32,
    /// Per-request reply timeout; 0 disables it.
    pub timeout_ms: u64,
    /// Measured phase length instead of a request count; 0 = count-bound.
    pub duration_ms: u64,
    /// Untimed phase before the measured one; 0 = none.
    pub warmup_ms: u64,
    /// Open loop: total requests per second on a schedule; 0 = as fast as
    /// replies allow.
    pub rate: f64,
    /// ACL user for AUTH; None = the default user.
    pub user: Option<String>,
    /// AUTH password; None = no AUTH. Its Debug shows `***`.
    pub password: Option<Secret>,
    /// SELECT this database after connecting; None = no SELECT.
    pub dbnum: Option<u32>,
    /// Speak RESP3 (HELLO 3) instead of RESP2.
    pub resp3: bool,
    /// Several load machines (`--client-index I --client-count N`): this
    /// machine runs connections `I * c .. (I + 1) * c` of the `connections`
    /// (= N * c) a single run would have, with their key streams and shares.
    /// 0 and 1: all of them.
    pub client_index: u32,
    pub client_count: u32,
    /// `--reconnect`: a connection that drops mid-run is opened again
    /// (handshake and all) and goes on; None = a drop ends the run.
    pub reconnect: Option<Reconnect>,
    /// `CLIENT TRACKING on` in the handshake (RESP3): invalidation push
    /// frames flow for keys read and changed by another client.
    pub client_tracking: bool,
    /// A weighted command mix (`--command`/`--weight`/`--command-key-pattern`):
    /// each request is one of these, drawn by weight from the connection's
    /// key stream. Empty: the two commands of `mode`, as before.
    pub commands: Vec<CommandSpec>,
    /// `--cpus`: the CPUs each worker thread is pinned to; empty = not pinned.
    pub cpus: Vec<u32>,
    /// `--ramp-connections start:step:every` (a duration run, closed loop):
    /// the timed phase opens `start` connections, then `step` more every
    /// `every_ms`, up to `connections` (ids in order); None = all at once.
    pub ramp_connections: Option<RampConnections>,
    /// `--cluster`: a Redis Cluster; each connection opens one socket per
    /// primary and each request goes to its key's slot owner. The CLI
    /// discovers the topology before the engine runs; the engine only
    /// routes. None = one server.
    pub cluster: Option<ClusterPlan>,
    /// Internal, per socket: a `--read-from` connection to a cluster replica,
    /// which sends `READONLY` in its handshake (as the TS `readOnly`).
    pub read_only: bool,
    /// `--io`: the worker threads' I/O backend (io_uring or epoll; `auto`:
    /// io_uring where it works). TLS always runs on epoll.
    pub io: crate::io::IoChoice,
}

/// Most commands in one mix, and the largest weight (as MIX_LIMITS in the
/// CLI's validate.ts): the sum of the weights stays far below 2^32.
pub const MAX_MIX_COMMANDS: usize = 100;
pub const MAX_MIX_WEIGHT: u32 = 1_000_000;

/// One command of a weighted mix, as the TS `CommandSpec`.
#[derive(Clone, Debug, PartialEq)]
pub struct CommandSpec {
    /// A template (or a bare name) as `set_cmd` takes it.
    pub template: String,
    /// Its share of the requests: weight / the sum of the weights; at least 1.
    pub weight: u32,
    /// Its own key pattern; None = the run's.
    pub key_pattern: Option<KeyPattern>,
}

/// memtier's staircase of connections, as the TS `RampConnections`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RampConnections {
    pub start: u32,
    pub step: u32,
    pub every_ms: u64,
}

impl RampConnections {
    /// When connection `id` of the timed phase opens, after the phase's
    /// start (as `rampOpenAtMs` in engine-js/plan.ts).
    pub fn open_at(&self, id: u32) -> std::time::Duration {
        if id < self.start {
            return std::time::Duration::ZERO;
        }
        let steps = u64::from((id - self.start) / self.step.max(1)) + 1;
        std::time::Duration::from_millis(steps.saturating_mul(self.every_ms))
    }
}

/// How a dropped connection is opened again (`--reconnect`), as the TS `Reconnect`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reconnect {
    /// Attempts per drop before the run ends.
    pub attempts: u32,
    /// Wait after the first failed attempt, doubled after each, capped at
    /// [`RECONNECT_BACKOFF_CAP_MS`] (unless this is longer).
    pub backoff_ms: u64,
}

/// The longest wait between two reconnect attempts (as the TS engine's).
pub const RECONNECT_BACKOFF_CAP_MS: u64 = 5000;

impl Reconnect {
    /// The wait before attempt `attempt` (0-based) of one drop: none before
    /// the first, then the backoff doubling, capped.
    pub fn delay_ms(&self, attempt: u32) -> u64 {
        if attempt == 0 {
            return 0;
        }
        let cap = RECONNECT_BACKOFF_CAP_MS.max(self.backoff_ms);
        self.backoff_ms.saturating_mul(1u64 << (attempt - 1).min(30)).min(cap)
    }
}

/// A password: kept as given, shown as `***` by Debug, so a logged Plan
/// never carries it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(text: impl Into<String>) -> Secret {
        Secret(text.into())
    }

    /// The password itself, for the one place that sends it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

impl Plan {
    /// A small plan for tests and examples: 1000 SETs of 32-byte values over
    /// one connection, no pipelining, seed 12345, no timeout. These are not
    /// the CLI's defaults (it sends 1,000,000 mixed requests, pipeline 64,
    /// a 10 s timeout, a seed from the clock): a test states what it relies on.
    pub fn new(host: &str, port: u16) -> Plan {
        Plan {
            host: host.to_string(),
            port,
            socket: None,
            tls: None,
            connections: 1,
            pipeline: 1,
            pipeline_batch: false,
            requests: 1000,
            mode: Mode::Set,
            keyspace: 100_000,
            key_pattern: KeyPattern::Uniform,
            key_stddev: None,
            zipf_exponent: 0.99,
            value_size_min: 32,
            value_size_max: 32,
            value_generation: 0,
            set_ratio: 50,
            set_cmd: "SET".into(),
            get_cmd: "GET".into(),
            key_prefix: "bench:key:".into(),
            literal_commands: false,
            rand_int_literal: false,
            inline_commands: false,
            seed: 12345,
            verify_get: false,
            preload: true,
            threads: 1,
            timeout_ms: 0,
            duration_ms: 0,
            warmup_ms: 0,
            rate: 0.0,
            user: None,
            password: None,
            dbnum: None,
            resp3: false,
            reconnect: None,
            client_tracking: false,
            commands: Vec::new(),
            cpus: Vec::new(),
            ramp_connections: None,
            read_only: false,
            client_index: 0,
            client_count: 1,
            cluster: None,
            io: crate::io::IoChoice::Auto,
        }
    }

    /// Rejects plans the engine cannot run: a number outside [`crate::limits`]
    /// (the CLI checks the same table first, so its users never see these
    /// texts), or a range or float the engine cannot use.
    /// The connection ids this machine runs (all of them on one machine).
    pub fn local_connections(&self) -> std::ops::Range<u32> {
        let count = self.client_count.max(1);
        let per = self.connections / count;
        let first = self.client_index.min(count - 1) * per;
        first..first + per
    }

    pub fn check(&self) -> Result<(), PlanError> {
        let fail = |m: &str| Err(PlanError(m.to_string()));
        let in_limit = |limit: Limit, value: u64| {
            if limit.contains(value) {
                Ok(())
            } else {
                Err(PlanError(format!("{} must be between {} and {}, got {value}", limit.name, limit.min, limit.max)))
            }
        };
        in_limit(limits::PORT, self.port.into())?;
        in_limit(limits::CONNECTIONS, self.connections.into())?;
        in_limit(limits::PIPELINE, self.pipeline.into())?;
        in_limit(limits::REQUESTS, self.requests)?;
        in_limit(limits::KEYSPACE, self.keyspace)?;
        in_limit(limits::VALUE_SIZE, self.value_size_min as u64)?;
        in_limit(limits::VALUE_SIZE, self.value_size_max as u64)?;
        in_limit(limits::SET_RATIO, self.set_ratio.into())?;
        in_limit(limits::THREADS, self.threads.into())?;
        if self.client_count == 0 || self.client_index >= self.client_count || self.connections % self.client_count != 0
        {
            return fail("clientIndex must be below clientCount, and connections a multiple of clientCount");
        }
        if self.value_size_min > self.value_size_max {
            return fail("valueSizeMin must not exceed valueSizeMax");
        }
        if let Some(c) = &self.cluster {
            if c.nodes.is_empty() || c.nodes.len() > u16::MAX as usize {
                return fail("cluster: nodes must list the primaries");
            }
            if c.slots.iter().any(|&(first, last, node)| {
                first > last || last >= crate::slot::SLOTS || node as usize >= c.nodes.len()
            }) {
                return fail("cluster: slots must be [first, last, node] with first <= last < 16384 and a listed node");
            }
        }
        if let Some(text) = limits::window_refusal(self.pipeline.into(), self.value_size_max as u64) {
            return Err(PlanError(text));
        }
        // Below this a value holds only part of its key's hash, and another
        // key's value could pass for it (the CLI refuses it first).
        if self.verify_get && self.value_size_min < VERIFY_MIN_VALUE_SIZE {
            return Err(PlanError(format!(
                "verifyGet needs valueSizeMin of at least {VERIFY_MIN_VALUE_SIZE}, got {}",
                self.value_size_min
            )));
        }
        if self.key_pattern == KeyPattern::Zipf && !(self.zipf_exponent > 0.0 && self.zipf_exponent.is_finite()) {
            return fail("zipfExponent must be a number above 0");
        }
        if self.key_stddev.is_some_and(|d| !(d.is_finite() && d >= 0.0)) {
            return fail("keyStddev must be a number at least 0");
        }
        if !(self.rate >= 0.0 && self.rate.is_finite()) {
            return fail("rate must be a number at least 0");
        }
        if self.commands.len() > MAX_MIX_COMMANDS {
            return Err(PlanError(format!(
                "commands must hold at most {MAX_MIX_COMMANDS} commands, got {}",
                self.commands.len()
            )));
        }
        if self.commands.iter().any(|c| c.weight == 0 || c.weight > MAX_MIX_WEIGHT) {
            return Err(PlanError(format!("commands[].weight must be between 1 and {MAX_MIX_WEIGHT}")));
        }
        let zipf_in_mix = self.commands.iter().any(|c| c.key_pattern == Some(KeyPattern::Zipf));
        if zipf_in_mix && !(self.zipf_exponent > 0.0 && self.zipf_exponent.is_finite()) {
            return fail("zipfExponent must be a number above 0");
        }
        if self.reconnect.is_some_and(|r| r.attempts == 0) {
            return fail("reconnect.attempts must be at least 1");
        }
        if self.ramp_connections.is_some_and(|r| r.start == 0 || r.step == 0 || r.every_ms == 0) {
            return fail("rampConnections needs start, step and everyMs of at least 1");
        }
        Ok(())
    }
}

/// TLS settings, field for field the TypeScript `TlsPlan` (the CLI's
/// --cacert, --cacertdir, --cert, --key, --insecure, --sni, --tls-ciphers,
/// --tls-ciphersuites).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TlsPlan {
    /// PEM file of CAs trusted besides the system's roots.
    pub cacert: Option<String>,
    /// Folder of PEM CA files trusted besides the system's roots.
    pub cacertdir: Option<String>,
    /// Client certificate (PEM), with `key`.
    pub cert: Option<String>,
    pub key: Option<String>,
    /// Skip verifying the server's certificate.
    pub insecure: bool,
    /// Server name sent and checked instead of the host.
    pub sni: Option<String>,
    /// TLS 1.2 ciphers, OpenSSL names separated by ':'.
    pub ciphers: Option<String>,
    /// TLS 1.3 suites, names separated by ':'.
    pub ciphersuites: Option<String>,
}

/// A plan the engine refuses before connecting anywhere.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlanError(pub String);

impl fmt::Display for PlanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PlanError {}

#[cfg(test)]
mod reconnect_tests {
    use super::*;

    /// As reconnectDelayMs in packages/cli/test/output.test.ts: none before
    /// the first attempt, then the backoff doubling, capped at 5 s.
    #[test]
    fn reconnect_delays_double_from_the_backoff_up_to_the_cap() {
        let r = Reconnect { attempts: 10, backoff_ms: 100 };
        let delays: Vec<u64> = (0..9).map(|a| r.delay_ms(a)).collect();
        assert_eq!(delays, [0, 100, 200, 400, 800, 1600, 3200, 5000, 5000]);
        assert_eq!(Reconnect { attempts: 3, backoff_ms: 8000 }.delay_ms(2), 8000);
        assert_eq!(r.delay_ms(u32::MAX), 5000);
    }
}

#[cfg(test)]
mod ramp_tests {
    use super::*;

    /// As rampOpenAtMs in packages/cli/test/validate.test.ts.
    #[test]
    fn ramp_opens_start_at_once_then_step_per_every() {
        let r = RampConnections { start: 2, step: 3, every_ms: 1500 };
        let at: Vec<u64> = [0, 1, 2, 4, 5, 7].iter().map(|&id| r.open_at(id).as_millis() as u64).collect();
        assert_eq!(at, [0, 0, 1500, 1500, 3000, 3000]);
    }
}
