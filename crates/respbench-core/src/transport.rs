//! The byte stream under a connection: TCP, a unix socket, or TLS over TCP,
//! as one [`Stream`] the connection reads and writes without knowing which.
//! Paired with `packages/cli/src/engine-js/transport.ts`.
//!
//! TLS is rustls driven on the connection's own mio socket: no thread per
//! connection. [`connect`] runs the TLS handshake ([`crate::tls`]) to the end before it
//! returns (with its own timeout), so the run loop only sees application
//! bytes. After it, a read pulls TLS records off the socket
//! (`read_tls` → `process_new_packets`) and hands back plaintext, a write
//! hands plaintext to rustls and pushes the records out (`write_tls`) until
//! the socket would block; [`Stream::flush`] pushes what is still pending,
//! and the connection calls it on every writable event.
//!
//! The connection's socket stays registered for READABLE | WRITABLE,
//! edge-triggered, for its whole life, so `wants_read`/`wants_write` need no
//! re-registration: a read empties the socket (or fills the caller's buffer),
//! and a write stops only at WouldBlock, after which the writable edge comes.

use std::io::{self, Read, Write};
use std::net::Shutdown;
use std::time::Duration;

use mio::net::{TcpStream, UnixStream};
use mio::{Interest, Registry, Token};

use crate::plan::Plan;
use crate::progress::RunControl;
use crate::socket::{connect_tcp, connect_unix};
// Kept so `crate::transport::{OpenError, io_text, TlsStream, forget_tls_config}` still name them.
pub use crate::socket::OpenError;
pub(crate) use crate::socket::io_text;
pub use crate::tls::TlsStream;
use crate::tls::closed_during_handshake;
pub use crate::tls_config::forget_tls_config;

/// A connected byte stream, ready for the handshake and then for load.
pub enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream, String),
    Tls(Box<TlsStream>),
    /// Handed to an io_uring worker ([`Stream::hand_to_ring`]): its ring
    /// does the reads and writes, so these say WouldBlock here.
    Ring(RingSocket),
}

/// A TCP or unix socket an io_uring worker reads and writes: only its fd
/// (blocking mode: the ring waits for it), its label and its close.
pub struct RingSocket {
    fd: std::os::fd::RawFd,
    label: Option<String>,
}

impl RingSocket {
    pub fn fd(&self) -> std::os::fd::RawFd {
        self.fd
    }
}

impl Drop for RingSocket {
    fn drop(&mut self) {
        if self.fd < 0 {
            return;
        }
        let deferred = RING_CLOSES.with(|c| match c.borrow_mut().as_mut() {
            Some(later) if later.len() < later.capacity() => {
                later.push(self.fd);
                true
            }
            _ => false,
        });
        if !deferred {
            // SAFETY: the fd is this socket's own, closed once.
            unsafe { libc::close(self.fd) };
        }
    }
}

thread_local! {
    /// While an io_uring worker runs on this thread: the fds of its sockets
    /// dropped since its last submit. A submission queued for a socket names
    /// its fd number, which the kernel resolves only when it is submitted:
    /// closed before that, the number could already be a new socket's (a
    /// reconnect, a Link opened on the helper thread) and the queued send
    /// would go there. So they are closed after the next submit.
    static RING_CLOSES: std::cell::RefCell<Option<Vec<std::os::fd::RawFd>>> = const { std::cell::RefCell::new(None) };
}

/// An io_uring worker starts on this thread: its sockets' closes wait for
/// [`close_ring_sockets`] (room for `room` of them, made now; past that a
/// close is done at once).
pub(crate) fn defer_ring_closes(room: usize) {
    RING_CLOSES.with(|c| *c.borrow_mut() = Some(Vec::with_capacity(room)));
}

/// After a submit: closes the sockets dropped before it; `last`: the worker
/// is done, so closes are done at once from now on.
pub(crate) fn close_ring_sockets(last: bool) {
    RING_CLOSES.with(|c| {
        let mut c = c.borrow_mut();
        if let Some(later) = c.as_mut() {
            for fd in later.drain(..) {
                // SAFETY: each fd was its dropped socket's own, closed once here.
                unsafe { libc::close(fd) };
            }
        }
        if last {
            *c = None;
        }
    });
}

/// Opens the plan's transport: a unix socket when `plan.socket` is set, TCP
/// to host:port otherwise, with TLS over it when `plan.tls` is set, the TLS
/// handshake done. Gives up after `timeout` for the connect and again for
/// the handshake. Error texts match the TS engine's.
pub fn connect(plan: &Plan, timeout: Duration, control: &RunControl) -> Result<Stream, OpenError> {
    if let Some(path) = plan.socket.as_deref() {
        return connect_unix(path, timeout, control).map(|s| Stream::Unix(s, path.to_string()));
    }
    let (host, port) = (plan.host.as_str(), plan.port);
    let Some(tls) = plan.tls.as_ref() else {
        return Ok(Stream::Tcp(connect_tcp(host, port, timeout, control)?));
    };
    let sock = connect_tcp(host, port, timeout, control).map_err(|e| match e {
        // A server that resets at once may do it before the handshake
        // starts: the same story as a reset during it.
        OpenError::Failed(m) if m.ends_with("(ECONNRESET)") || m.ends_with("(EPIPE)") => {
            closed_during_handshake(&format!("{host}:{port}"), tls)
        }
        other => other,
    })?;
    Ok(Stream::Tls(Box::new(TlsStream::open(sock, host, port, tls, timeout, control)?)))
}

impl Stream {
    /// Hands a TCP or unix stream to an io_uring worker: from here on its
    /// ring reads and writes it (this stream's own reads and writes say
    /// WouldBlock). Returns the fd; TLS is not handed over (it stays on epoll).
    pub fn hand_to_ring(&mut self) -> io::Result<std::os::fd::RawFd> {
        use std::os::fd::IntoRawFd;
        if let Stream::Ring(r) = self {
            return Ok(r.fd);
        }
        let label = self.peer_label();
        let was = std::mem::replace(self, Stream::Ring(RingSocket { fd: -1, label: None }));
        let fd = match was {
            Stream::Tcp(s) => s.into_raw_fd(),
            Stream::Unix(s, _) => s.into_raw_fd(),
            Stream::Tls(t) => {
                *self = Stream::Tls(t);
                return Err(io::Error::new(io::ErrorKind::Unsupported, "TLS stays on epoll"));
            }
            Stream::Ring(_) => unreachable!("handled above"),
        };
        *self = Stream::Ring(RingSocket { fd, label });
        // Blocking: the ring then waits for the socket instead of completing with EAGAIN.
        // SAFETY: fcntl on an fd this stream owns.
        unsafe {
            let flags = libc::fcntl(fd, libc::F_GETFL);
            if flags < 0 || libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) < 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(fd)
    }

    /// Where the stream goes, for messages: `ip:port` or the socket path.
    pub fn peer_label(&self) -> Option<String> {
        match self {
            Stream::Tcp(s) => s.peer_addr().ok().map(|a| format!("{}:{}", a.ip(), a.port())),
            Stream::Unix(_, path) => Some(path.clone()),
            Stream::Tls(t) => t.socket().peer_addr().ok().map(|a| format!("{}:{}", a.ip(), a.port())),
            Stream::Ring(r) => r.label.clone(),
        }
    }

    /// TCP_NODELAY where there is TCP.
    pub fn set_nodelay(&self) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.set_nodelay(true),
            Stream::Unix(..) => Ok(()),
            Stream::Tls(t) => t.socket().set_nodelay(true),
            // Set before it was handed over.
            Stream::Ring(_) => Ok(()),
        }
    }

    /// Closes our sending side (the server then sees end of input): for TLS,
    /// a close_notify alert is queued and pushed first, as far as the socket
    /// takes it.
    pub fn shutdown_write(&mut self) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.shutdown(Shutdown::Write),
            Stream::Unix(s, _) => s.shutdown(Shutdown::Write),
            Stream::Tls(t) => t.close_write(),
            // SAFETY: shutdown on the socket's own fd.
            Stream::Ring(r) => match unsafe { libc::shutdown(r.fd, libc::SHUT_WR) } {
                0 => Ok(()),
                _ => Err(io::Error::last_os_error()),
            },
        }
    }

    /// TLS: encrypted bytes are waiting for the socket to take them.
    pub fn wants_write(&self) -> bool {
        matches!(self, Stream::Tls(t) if t.wants_write())
    }
}

// The three below are inlined into the Link's read and write loops: one
// server's plain TCP path then costs what a bare mio socket did (as in
// 404c66c), not a call through the dispatch per syscall.
impl Read for Stream {
    #[inline(always)]
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s, _) => s.read(buf),
            Stream::Tls(t) => t.read(buf),
            Stream::Ring(_) => Err(io::ErrorKind::WouldBlock.into()),
        }
    }
}

impl Write for Stream {
    #[inline(always)]
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(buf),
            Stream::Unix(s, _) => s.write(buf),
            Stream::Tls(t) => t.write(buf),
            Stream::Ring(_) => Err(io::ErrorKind::WouldBlock.into()),
        }
    }

    /// TLS: pushes pending records out until done or the socket would block
    /// (that is not an error: the writable event resumes it). A no-op otherwise.
    #[inline(always)]
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Tls(t) => t.push_records(),
            _ => Ok(()),
        }
    }
}

impl mio::event::Source for Stream {
    fn register(&mut self, registry: &Registry, token: Token, interests: Interest) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.register(registry, token, interests),
            Stream::Unix(s, _) => s.register(registry, token, interests),
            Stream::Tls(t) => t.socket_mut().register(registry, token, interests),
            Stream::Ring(_) => Err(io::ErrorKind::Unsupported.into()),
        }
    }

    fn reregister(&mut self, registry: &Registry, token: Token, interests: Interest) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.reregister(registry, token, interests),
            Stream::Unix(s, _) => s.reregister(registry, token, interests),
            Stream::Tls(t) => t.socket_mut().reregister(registry, token, interests),
            Stream::Ring(_) => Err(io::ErrorKind::Unsupported.into()),
        }
    }

    fn deregister(&mut self, registry: &Registry) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.deregister(registry),
            Stream::Unix(s, _) => s.deregister(registry),
            Stream::Tls(t) => t.socket_mut().deregister(registry),
            Stream::Ring(_) => Err(io::ErrorKind::Unsupported.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_socket_is_one_line() {
        let mut plan = Plan::new("127.0.0.1", 1);
        plan.socket = Some("/nonexistent/respbench.sock".into());
        let control = RunControl::new();
        match connect(&plan, Duration::from_secs(1), &control) {
            Err(OpenError::Failed(m)) => {
                assert!(
                    m.starts_with("cannot connect to unix socket /nonexistent/respbench.sock: no such socket"),
                    "{m}"
                )
            }
            _ => panic!("expected a failure"),
        }
    }
}
