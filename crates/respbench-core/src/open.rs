//! Opening a Link: the one place a socket is opened and made ready for
//! load (transport, then the handshake), for the client's own Link, a
//! reconnect, a later ramp step and the Links a cluster's redirections open.

use std::time::Duration;

use crate::handshake::{self, ConnectError};
use crate::plan::Plan;
use crate::progress::RunControl;
use crate::transport::{self, OpenError, Stream, io_text};

/// Connect timeout when the plan has no reply timeout (as the TS engine).
const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Opens a connection to the plan's server and makes it ready for load: the
/// one place that does, so the run loop only ever gets a ready stream. The
/// transport first ([`transport::connect`]: TCP, a unix socket, or TLS with
/// its handshake done), then [`make_ready`]. Each step is non-blocking so
/// that a cancel ends one that hangs at once; each gives up after the plan's
/// `--timeout` (10 s when that is 0). Error texts match the TS engine's.
pub fn open(plan: &Plan, control: &RunControl) -> Result<Stream, ConnectError> {
    let timeout = if plan.timeout_ms > 0 { Duration::from_millis(plan.timeout_ms) } else { DEFAULT_CONNECT_TIMEOUT };
    let mut stream = transport::connect(plan, timeout, control).map_err(|e| match e {
        OpenError::Interrupted => ConnectError::Interrupted,
        OpenError::Failed(m) => ConnectError::Failed(m),
    })?;
    make_ready(&mut stream, plan, timeout, control)?;
    Ok(stream)
}

/// What a ready byte stream (TCP, unix or TLS, from [`transport::connect`])
/// needs before the first request: `TCP_NODELAY` where there is TCP, then the
/// plan's handshake (`HELLO 3` / `AUTH`, `SELECT`, `CLIENT SETNAME`;
/// [`crate::handshake`]) answered within its own `timeout`, whatever the
/// transport (`stream` reads and writes application bytes; `flush` pushes
/// pending TLS records). A failed handshake is its one-line reason (never the
/// password).
fn make_ready(stream: &mut Stream, plan: &Plan, timeout: Duration, control: &RunControl) -> Result<(), ConnectError> {
    stream.set_nodelay().map_err(|e| {
        let to = stream.peer_label().unwrap_or_else(|| format!("{}:{}", plan.host, plan.port));
        ConnectError::Failed(format!("cannot connect to {to}: {}", io_text(&e)))
    })?;
    handshake::run(stream, plan, timeout, control)
}
