//! Opening a socket: a non-blocking TCP or unix-socket connect that gives up
//! at a deadline and looks at the cancel flag while it waits, with error
//! texts the TS engine's match (`packages/cli/src/engine-js/transport.ts`).
//! The lowest layer of [`crate::transport`]; TLS goes on top ([`crate::tls`]).

use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::time::{Duration, Instant};

use mio::net::{TcpStream, UnixStream};
use mio::{Events, Interest, Poll, Token};

use crate::progress::RunControl;

/// How often a pending connect or handshake looks at the cancel flag.
pub(crate) const SLICE: Duration = Duration::from_millis(20);

/// Why a stream could not be opened.
#[derive(Debug)]
pub enum OpenError {
    /// Cancelled while connecting.
    Interrupted,
    /// Refused, unresolvable, timed out, TLS refused…: the text for the user.
    Failed(String),
}

/// A unix-socket connection to `path`.
pub(crate) fn connect_unix(path: &str, timeout: Duration, control: &RunControl) -> Result<UnixStream, OpenError> {
    let fail = |e: io::Error| {
        let why = match e.kind() {
            io::ErrorKind::NotFound => "no such socket (is the server listening on it?)".to_string(),
            io::ErrorKind::ConnectionRefused => "connection refused (is the server running?)".to_string(),
            io::ErrorKind::PermissionDenied => "permission denied".to_string(),
            io::ErrorKind::TimedOut => format!("timed out after {} ms", timeout.as_millis()),
            _ => io_text(&e),
        };
        OpenError::Failed(format!("cannot connect to unix socket {path}: {why}"))
    };
    let mut stream = UnixStream::connect(path).map_err(fail)?;
    let deadline = Instant::now() + timeout;
    wait_connected(&mut stream, deadline, control, |s| s.take_error(), |s| s.peer_addr().map(|_| ())).map_err(|e| {
        match e {
            None => OpenError::Interrupted,
            Some(e) => fail(e),
        }
    })?;
    Ok(stream)
}

/// Resolves `host` and connects to the first address that accepts.
pub(crate) fn connect_tcp(
    host: &str,
    port: u16,
    timeout: Duration,
    control: &RunControl,
) -> Result<TcpStream, OpenError> {
    let addrs: Vec<SocketAddr> = match (host, port).to_socket_addrs() {
        Ok(a) => a.collect(),
        Err(_) => return Err(OpenError::Failed(format!("cannot resolve host \"{host}\""))),
    };
    if addrs.is_empty() {
        return Err(OpenError::Failed(format!("cannot resolve host \"{host}\"")));
    }
    let deadline = Instant::now() + timeout;
    let mut last = String::new();
    for addr in addrs {
        let attempt = TcpStream::connect(addr).map_err(Some).and_then(|mut stream| {
            wait_connected(&mut stream, deadline, control, |s| s.take_error(), |s| s.peer_addr().map(|_| ()))
                .map(|_| stream)
        });
        match attempt {
            Ok(stream) => return Ok(stream),
            Err(None) => return Err(OpenError::Interrupted),
            // EMFILE, ENFILE: say what to change, not "too many open files".
            Err(Some(e)) if matches!(e.raw_os_error(), Some(23 | 24)) => {
                return Err(OpenError::Failed(format!(
                    "cannot open another connection to {host}:{port}: the open-file limit is too low for this many connections (raise it, e.g. ulimit -n 65536, or use fewer -c)"
                )));
            }
            Err(Some(e)) if e.kind() == io::ErrorKind::ConnectionRefused => {
                last = format!("connection refused by {host}:{port} (is the server running on that port?)");
            }
            Err(Some(e)) if e.kind() == io::ErrorKind::TimedOut => {
                last = format!("connect to {host}:{port} timed out after {} ms", timeout.as_millis());
            }
            Err(Some(e)) => last = format!("cannot connect to {host}:{port}: {}", io_text(&e)),
        }
    }
    Err(OpenError::Failed(last))
}

/// Waits for a non-blocking connect in slices; `Err(None)` = cancelled.
fn wait_connected<S: mio::event::Source>(
    stream: &mut S,
    deadline: Instant,
    control: &RunControl,
    take_error: impl Fn(&S) -> io::Result<Option<io::Error>>,
    peer: impl Fn(&S) -> io::Result<()>,
) -> Result<(), Option<io::Error>> {
    let mut poll = Poll::new().map_err(Some)?;
    poll.registry().register(stream, Token(0), Interest::WRITABLE).map_err(Some)?;
    let mut events = Events::with_capacity(4);
    loop {
        if control.is_cancelled() {
            return Err(None);
        }
        let now = Instant::now();
        if now >= deadline {
            return Err(Some(io::Error::from(io::ErrorKind::TimedOut)));
        }
        if let Err(e) = poll.poll(&mut events, Some(SLICE.min(deadline - now))) {
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(Some(e));
            }
        }
        if events.is_empty() {
            continue;
        }
        // Writable: either connected or failed; mio's way to tell which.
        if let Some(e) = take_error(stream).map_err(Some)? {
            return Err(Some(e));
        }
        match peer(stream) {
            Ok(()) => {
                poll.registry().deregister(stream).map_err(Some)?;
                return Ok(());
            }
            Err(e) if e.kind() == io::ErrorKind::NotConnected => continue,
            Err(e) => return Err(Some(e)),
        }
    }
}

/// An I/O error as a user reads it, with the errno name Node would show
/// ("connection reset (ECONNRESET)"), so both engines' messages match the same patterns.
pub(crate) fn io_text(e: &io::Error) -> String {
    let code = match e.kind() {
        io::ErrorKind::ConnectionReset => Some(("connection reset", "ECONNRESET")),
        io::ErrorKind::BrokenPipe => Some(("broken pipe", "EPIPE")),
        io::ErrorKind::ConnectionAborted => Some(("connection aborted", "ECONNABORTED")),
        io::ErrorKind::ConnectionRefused => Some(("connection refused", "ECONNREFUSED")),
        io::ErrorKind::TimedOut => Some(("timed out", "ETIMEDOUT")),
        io::ErrorKind::HostUnreachable => Some(("host unreachable", "EHOSTUNREACH")),
        io::ErrorKind::NetworkUnreachable => Some(("network unreachable", "ENETUNREACH")),
        _ => None,
    };
    match code {
        Some((text, name)) => format!("{text} ({name})"),
        None => e.to_string(),
    }
}
