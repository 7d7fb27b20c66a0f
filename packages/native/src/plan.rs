//! A JS `Plan` (packages/cli/src/engine-js/plan.ts) into the core's
//! [`Plan`]: field by field, every number checked to be a whole number
//! within the core's limits, every enum by name, nothing else.

use napi::bindgen_prelude::*;
use napi_derive::napi;
use respbench_core::cluster_plan::{ClusterPlan, ReadFrom};
use respbench_core::keys::KeyPattern;
use respbench_core::limits::{self, Limit};
use respbench_core::plan::{CommandSpec, Secret};
use respbench_core::{Mode, Plan, TlsPlan};

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
    /// Absent = "window"; "batch": redis-benchmark's -P (send N, wait for all N).
    pub pipeline_mode: Option<String>,
    pub requests: f64,
    pub mode: String,
    pub keyspace: f64,
    pub key_pattern: Option<String>,
    /// null or absent: keyspace / 6.
    pub key_stddev: Option<Either<f64, Null>>,
    pub zipf_exponent: Option<f64>,
    pub value_size_min: f64,
    pub value_size_max: f64,
    /// Absent = 0: the values of builds before `--value-generation`.
    pub value_generation: Option<f64>,
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
    /// `--io`: "auto" (absent), "uring" or "epoll".
    pub io: Option<String>,
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
fn to_cluster(c: NativeCluster) -> Result<ClusterPlan> {
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
    Ok(ClusterPlan { nodes, slots, read_from, replicas })
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

pub(crate) fn to_plan(p: NativePlan) -> Result<Plan> {
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
    let pipeline_batch = match p.pipeline_mode.as_deref() {
        None | Some("window") => false,
        Some("batch") => true,
        Some(other) => {
            return Err(Error::new(
                Status::InvalidArg,
                format!("plan.pipelineMode must be window or batch, got {other}"),
            ));
        }
    };
    Ok(Plan {
        pipeline_batch,
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
        value_generation: integer(p.value_generation.unwrap_or(0.0), limits::VALUE_GENERATION)? as u32,
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
        user: text(p.user),
        password: text(p.password).map(Secret::new),
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
        io: crate::io::io_choice(p.io)?,
    })
}

fn to_command(i: usize, c: NativeCommandSpec) -> Result<CommandSpec> {
    let key_pattern = match text(c.key_pattern) {
        Some(name) => Some(KeyPattern::parse(&name).ok_or_else(|| {
            Error::new(
                Status::InvalidArg,
                format!("plan.commands[{i}].keyPattern must be uniform, sequential, gaussian or zipf, got {name}"),
            )
        })?),
        None => None,
    };
    Ok(CommandSpec {
        template: c.template,
        weight: integer_named(&format!("commands[{i}].weight"), c.weight, 1, u32::MAX as u64)? as u32,
        key_pattern,
    })
}
