//! The byte stream under a connection: TCP, a unix socket, or TLS over TCP,
//! as one [`Stream`] the connection reads and writes without knowing which.
//! Paired with `packages/cli/src/engine-js/transport.ts`.
//!
//! TLS is rustls driven on the connection's own mio socket: no thread per
//! connection. [`connect`] runs the TLS handshake to the end before it
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

use std::fs;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, ToSocketAddrs};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mio::net::{TcpStream, UnixStream};
use mio::{Events, Interest, Poll, Registry, Token};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, ClientConnection, DigitallySignedStruct, RootCertStore, SignatureScheme};

use crate::plan::{Plan, TlsPlan};
use crate::progress::RunControl;

/// How often a pending connect or handshake looks at the cancel flag.
const SLICE: Duration = Duration::from_millis(20);

/// Why a stream could not be opened.
#[derive(Debug)]
pub enum OpenError {
    /// Cancelled while connecting.
    Interrupted,
    /// Refused, unresolvable, timed out, TLS refused…: the text for the user.
    Failed(String),
}

/// A connected byte stream, ready for the handshake and then for load.
pub enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream, String),
    Tls(Box<TlsStream>),
}

pub struct TlsStream {
    sock: TcpStream,
    tls: ClientConnection,
}

/// Opens the plan's transport: a unix socket when `plan.socket` is set, TCP
/// to host:port otherwise, with TLS over it when `plan.tls` is set, the TLS
/// handshake done. Gives up after `timeout` for the connect and again for
/// the handshake. Error texts match the TS engine's.
pub fn connect(plan: &Plan, timeout: Duration, control: &RunControl) -> Result<Stream, OpenError> {
    if let Some(path) = plan.socket.as_deref() {
        return connect_unix(path, timeout, control);
    }
    let (host, port) = (plan.host.as_str(), plan.port);
    let sock = connect_tcp(host, port, timeout, control)?;
    let Some(tls) = plan.tls.as_ref() else {
        return Ok(Stream::Tcp(sock));
    };
    let config = tls_config(tls).map_err(OpenError::Failed)?;
    let name = tls.sni.as_deref().unwrap_or(host);
    let server_name = ServerName::try_from(name.to_string())
        .map_err(|_| OpenError::Failed(format!("TLS: \"{name}\" is not a valid server name")))?;
    let conn = ClientConnection::new(config, server_name)
        .map_err(|e| OpenError::Failed(format!("TLS handshake with {host}:{port} failed: {e}")))?;
    let mut stream = TlsStream { sock, tls: conn };
    handshake(&mut stream, &format!("{host}:{port}"), name, tls, timeout, control)?;
    Ok(Stream::Tls(Box::new(stream)))
}

impl Stream {
    /// Where the stream goes, for messages: `ip:port` or the socket path.
    pub fn peer_label(&self) -> Option<String> {
        match self {
            Stream::Tcp(s) => s.peer_addr().ok().map(|a| format!("{}:{}", a.ip(), a.port())),
            Stream::Unix(_, path) => Some(path.clone()),
            Stream::Tls(t) => t.sock.peer_addr().ok().map(|a| format!("{}:{}", a.ip(), a.port())),
        }
    }

    /// TCP_NODELAY where there is TCP.
    pub fn set_nodelay(&self) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.set_nodelay(true),
            Stream::Unix(..) => Ok(()),
            Stream::Tls(t) => t.sock.set_nodelay(true),
        }
    }

    /// Closes our sending side (the server then sees end of input): for TLS,
    /// a close_notify alert is queued and pushed first, as far as the socket
    /// takes it.
    pub fn shutdown_write(&mut self) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.shutdown(Shutdown::Write),
            Stream::Unix(s, _) => s.shutdown(Shutdown::Write),
            Stream::Tls(t) => {
                t.tls.send_close_notify();
                t.push_records()?;
                t.sock.shutdown(Shutdown::Write)
            }
        }
    }

    /// TLS: encrypted bytes are waiting for the socket to take them.
    pub fn wants_write(&self) -> bool {
        matches!(self, Stream::Tls(t) if t.tls.wants_write())
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s, _) => s.read(buf),
            Stream::Tls(t) => t.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(buf),
            Stream::Unix(s, _) => s.write(buf),
            Stream::Tls(t) => t.write(buf),
        }
    }

    /// TLS: pushes pending records out until done or the socket would block
    /// (that is not an error: the writable event resumes it). A no-op otherwise.
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
            Stream::Tls(t) => t.sock.register(registry, token, interests),
        }
    }

    fn reregister(&mut self, registry: &Registry, token: Token, interests: Interest) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.reregister(registry, token, interests),
            Stream::Unix(s, _) => s.reregister(registry, token, interests),
            Stream::Tls(t) => t.sock.reregister(registry, token, interests),
        }
    }

    fn deregister(&mut self, registry: &Registry) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.deregister(registry),
            Stream::Unix(s, _) => s.deregister(registry),
            Stream::Tls(t) => t.sock.deregister(registry),
        }
    }
}

impl TlsStream {
    /// Writes pending TLS records to the socket until none is left or it
    /// would block.
    fn push_records(&mut self) -> io::Result<()> {
        while self.tls.wants_write() {
            match self.tls.write_tls(&mut self.sock) {
                Ok(0) => return Err(io::Error::from(io::ErrorKind::WriteZero)),
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Plaintext into rustls, records out to the socket. Never Ok(0) for a
    /// non-empty `buf`: when rustls's buffer is full (the socket would
    /// block), WouldBlock, so the caller waits for the writable event.
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.push_records()?;
        let n = self.tls.writer().write(buf)?;
        self.push_records()?;
        if n == 0 && !buf.is_empty() {
            return Err(io::Error::from(io::ErrorKind::WouldBlock));
        }
        Ok(n)
    }

    /// Fills `buf` with plaintext, reading records until `buf` is full or
    /// the socket would block, so a short read means the socket is empty (as
    /// with plain TCP, which the edge-triggered loop relies on). Ok(0) = the
    /// server closed (with or without close_notify).
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut filled = 0;
        loop {
            while filled < buf.len() {
                match self.tls.reader().read(&mut buf[filled..]) {
                    Ok(0) => return Ok(filled),
                    Ok(n) => filled += n,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(filled),
                    Err(e) => return if filled > 0 { Ok(filled) } else { Err(e) },
                }
            }
            if filled == buf.len() {
                return Ok(filled);
            }
            match self.tls.read_tls(&mut self.sock) {
                Ok(0) => return Ok(filled),
                Ok(_) => {
                    if let Err(e) = self.tls.process_new_packets() {
                        // Send the alert rustls queued, then report.
                        let _ = self.push_records();
                        return Err(io::Error::new(io::ErrorKind::InvalidData, tls_run_text(&e)));
                    }
                    // A key update or an alert to answer.
                    if self.tls.wants_write() {
                        self.push_records()?;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    return if filled > 0 { Ok(filled) } else { Err(e) };
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return if filled > 0 { Ok(filled) } else { Err(e) },
            }
        }
    }
}

/// Runs the TLS handshake on a connected socket: poll for what rustls wants
/// (wants_read / wants_write), feed it, until it is done and its last
/// records are out. Its own timeout; cancel is looked at every slice.
fn handshake(
    s: &mut TlsStream,
    peer: &str,
    name: &str,
    tls: &TlsPlan,
    timeout: Duration,
    control: &RunControl,
) -> Result<(), OpenError> {
    let failed = |e: &dyn std::fmt::Display| OpenError::Failed(format!("TLS handshake with {peer} failed: {e}"));
    let mut poll = Poll::new().map_err(|e| failed(&e))?;
    let deadline = Instant::now() + timeout;
    let mut events = Events::with_capacity(4);
    let mut registered: Option<Interest> = None;
    loop {
        if !s.tls.is_handshaking() && !s.tls.wants_write() {
            break;
        }
        // Write what is pending first; then wait for whatever rustls needs.
        if s.tls.wants_write() {
            s.push_records().map_err(|e| failed(&e))?;
        }
        if !s.tls.is_handshaking() && !s.tls.wants_write() {
            break;
        }
        let interest = match (s.tls.wants_read(), s.tls.wants_write()) {
            (_, true) if s.tls.wants_read() => Interest::READABLE | Interest::WRITABLE,
            (_, true) => Interest::WRITABLE,
            _ => Interest::READABLE,
        };
        if registered != Some(interest) {
            let r = match registered {
                None => poll.registry().register(&mut s.sock, Token(0), interest),
                Some(_) => poll.registry().reregister(&mut s.sock, Token(0), interest),
            };
            r.map_err(|e| failed(&e))?;
            registered = Some(interest);
        }
        if control.is_cancelled() {
            return Err(OpenError::Interrupted);
        }
        let now = Instant::now();
        if now >= deadline {
            return Err(OpenError::Failed(format!(
                "TLS handshake with {peer} failed: handshake timeout after {} ms (is that port speaking TLS?)",
                timeout.as_millis()
            )));
        }
        if let Err(e) = poll.poll(&mut events, Some(SLICE.min(deadline - now))) {
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(failed(&e));
            }
        }
        if events.is_empty() || !s.tls.wants_read() {
            continue;
        }
        loop {
            match s.tls.read_tls(&mut s.sock) {
                Ok(0) => {
                    return Err(OpenError::Failed(format!(
                        "TLS handshake with {peer} failed: the server closed the connection during the handshake{}",
                        if tls.cert.is_none() { " (does it require a client certificate? --cert/--key)" } else { "" }
                    )));
                }
                Ok(_) => {
                    if let Err(e) = s.tls.process_new_packets() {
                        let _ = s.push_records();
                        return Err(OpenError::Failed(format!(
                            "TLS handshake with {peer} failed: {}",
                            tls_reason(&e, name)
                        )));
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(failed(&e)),
            }
        }
    }
    if registered.is_some() {
        poll.registry().deregister(&mut s.sock).map_err(|e| failed(&e))?;
    }
    Ok(())
}

/// A rustls handshake error as the user reads it, with the same leading
/// words as the TS engine's (certificate not trusted, hostname mismatch, …).
fn tls_reason(e: &rustls::Error, name: &str) -> String {
    use rustls::{AlertDescription, CertificateError, Error};
    match e {
        Error::InvalidCertificate(c) => match c {
            CertificateError::UnknownIssuer => "certificate not trusted (not signed by a CA in --cacert/--cacertdir or the system's roots; --insecure skips the check)".into(),
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. } => {
                format!("hostname mismatch (the server's certificate is not valid for \"{name}\"; --sni sets the name checked)")
            }
            CertificateError::Expired | CertificateError::ExpiredContext { .. } => "certificate expired".into(),
            CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => "certificate not valid yet".into(),
            other => format!("certificate not accepted ({other:?})"),
        },
        Error::AlertReceived(AlertDescription::CertificateRequired)
        | Error::AlertReceived(AlertDescription::HandshakeFailure)
        | Error::AlertReceived(AlertDescription::BadCertificate)
        | Error::AlertReceived(AlertDescription::UnknownCA) => {
            format!("the server refused the handshake (alert: {e}; does it require a client certificate? --cert/--key)")
        }
        other => other.to_string(),
    }
}

/// A TLS error after the handshake (a TLS 1.3 server refuses a client
/// certificate only then), worded as the TS engine words it.
fn tls_run_text(e: &rustls::Error) -> String {
    match e {
        rustls::Error::AlertReceived(alert) => format!(
            "TLS alert \"{}\" from the server (does it require a client certificate? --cert/--key)",
            alert_words(&format!("{alert:?}"))
        ),
        other => format!("TLS error: {other}"),
    }
}

/// `CertificateRequired` → `certificate required`, as OpenSSL names alerts.
fn alert_words(name: &str) -> String {
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push(' ');
        }
        out.push(c.to_ascii_lowercase());
    }
    out
}

/// A unix-socket connection to `path`.
fn connect_unix(path: &str, timeout: Duration, control: &RunControl) -> Result<Stream, OpenError> {
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
    Ok(Stream::Unix(stream, path.to_string()))
}

/// Resolves `host` and connects to the first address that accepts.
fn connect_tcp(host: &str, port: u16, timeout: Duration, control: &RunControl) -> Result<TcpStream, OpenError> {
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

// ---- TLS configuration -------------------------------------------------

/// The TLS 1.2 suites rustls (ring) has, by the OpenSSL names `--tls-ciphers`
/// takes (as redis-cli's), and the TLS 1.3 ones `--tls-ciphersuites` takes.
/// The CLI checks names against the same lists (validate.ts).
const TLS12_NAMES: &[(&str, &str)] = &[
    ("ECDHE-ECDSA-AES128-GCM-SHA256", "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"),
    ("ECDHE-ECDSA-AES256-GCM-SHA384", "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"),
    ("ECDHE-ECDSA-CHACHA20-POLY1305", "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256"),
    ("ECDHE-RSA-AES128-GCM-SHA256", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"),
    ("ECDHE-RSA-AES256-GCM-SHA384", "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"),
    ("ECDHE-RSA-CHACHA20-POLY1305", "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256"),
];
const TLS13_NAMES: &[(&str, &str)] = &[
    ("TLS_AES_128_GCM_SHA256", "TLS13_AES_128_GCM_SHA256"),
    ("TLS_AES_256_GCM_SHA384", "TLS13_AES_256_GCM_SHA384"),
    ("TLS_CHACHA20_POLY1305_SHA256", "TLS13_CHACHA20_POLY1305_SHA256"),
];

/// One config per TLS settings, shared by a run's connections: loading the
/// system's roots is not done per connection. A new run builds it anew
/// ([`forget_tls_config`]), so a certificate file changed between runs counts.
static TLS_CONFIG: Mutex<Option<(TlsPlan, Arc<ClientConfig>)>> = Mutex::new(None);

/// Drops the cached TLS config; called when a run starts.
pub fn forget_tls_config() {
    *TLS_CONFIG.lock().unwrap_or_else(|e| e.into_inner()) = None;
}

fn tls_config(tls: &TlsPlan) -> Result<Arc<ClientConfig>, String> {
    let mut cache = TLS_CONFIG.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((key, config)) = cache.as_ref() {
        if key == tls {
            return Ok(config.clone());
        }
    }
    let config = Arc::new(build_tls_config(tls)?);
    *cache = Some((tls.clone(), config.clone()));
    Ok(config)
}

fn pick_suites(
    all: &[rustls::SupportedCipherSuite],
    list: Option<&str>,
    names: &[(&str, &str)],
    flag: &str,
    tls13: bool,
) -> Result<Vec<rustls::SupportedCipherSuite>, String> {
    let of_version = |s: &rustls::SupportedCipherSuite| matches!(s, rustls::SupportedCipherSuite::Tls13(_)) == tls13;
    let Some(list) = list else {
        return Ok(all.iter().filter(|s| of_version(s)).copied().collect());
    };
    let mut out = Vec::new();
    for name in list.split(':').map(str::trim).filter(|n| !n.is_empty()) {
        let Some((_, rustls_name)) = names.iter().find(|(n, _)| *n == name) else {
            return Err(format!("{flag}: the native engine's TLS library does not have the cipher \"{name}\""));
        };
        if let Some(s) = all.iter().find(|s| s.suite().as_str() == Some(rustls_name)) {
            out.push(*s);
        }
    }
    Ok(out)
}

fn build_tls_config(tls: &TlsPlan) -> Result<ClientConfig, String> {
    let base = rustls::crypto::ring::default_provider();
    let mut suites =
        pick_suites(&base.cipher_suites, tls.ciphersuites.as_deref(), TLS13_NAMES, "--tls-ciphersuites", true)?;
    suites.extend(pick_suites(&base.cipher_suites, tls.ciphers.as_deref(), TLS12_NAMES, "--tls-ciphers", false)?);
    if suites.is_empty() {
        return Err("TLS: --tls-ciphers/--tls-ciphersuites leave no cipher to offer".into());
    }
    let provider = Arc::new(CryptoProvider { cipher_suites: suites, ..base });
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?;
    let builder = if tls.insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(NoVerification(provider.signature_verification_algorithms)))
    } else {
        builder.with_root_certificates(root_store(tls)?)
    };
    let config = match (tls.cert.as_deref(), tls.key.as_deref()) {
        (Some(cert), Some(key)) => {
            let certs = read_certs(cert, "--cert")?;
            if certs.is_empty() {
                return Err(format!("--cert {cert}: no PEM certificate in it"));
            }
            let key = PrivateKeyDer::from_pem_file(key)
                .map_err(|e| format!("--key {key}: no PEM private key in it ({e})"))?;
            builder.with_client_auth_cert(certs, key).map_err(|e| format!("--cert/--key: {e}"))?
        }
        (None, None) => builder.with_no_client_auth(),
        _ => return Err("--cert and --key go together".into()),
    };
    Ok(config)
}

fn read_certs(path: &str, flag: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let iter = CertificateDer::pem_file_iter(path).map_err(|e| format!("{flag} {path}: cannot read it ({e})"))?;
    iter.collect::<Result<Vec<_>, _>>().map_err(|e| format!("{flag} {path}: not a PEM certificate file ({e})"))
}

/// The system's roots plus --cacert and every PEM certificate in --cacertdir.
fn root_store(tls: &TlsPlan) -> Result<RootCertStore, String> {
    let mut roots = RootCertStore::empty();
    let native = rustls_native_certs::load_native_certs();
    roots.add_parsable_certificates(native.certs);
    if let Some(path) = tls.cacert.as_deref() {
        let certs = read_certs(path, "--cacert")?;
        if certs.is_empty() {
            return Err(format!("--cacert {path}: no PEM certificate in it"));
        }
        for cert in certs {
            roots.add(cert).map_err(|e| format!("--cacert {path}: {e}"))?;
        }
    }
    if let Some(dir) = tls.cacertdir.as_deref() {
        let entries = fs::read_dir(dir).map_err(|e| format!("--cacertdir {dir}: cannot read it ({e})"))?;
        for entry in entries.flatten() {
            let path = entry.path();
            if !path.is_file() {
                continue;
            }
            if let Ok(certs) = read_certs(&path.to_string_lossy(), "--cacertdir") {
                roots.add_parsable_certificates(certs);
            }
        }
    }
    Ok(roots)
}

/// `--insecure`: accepts any server certificate (the handshake signatures
/// are still checked, so the session keys are the server's).
#[derive(Debug)]
struct NoVerification(WebPkiSupportedAlgorithms);

impl ServerCertVerifier for NoVerification {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_cipher_name_is_one_rustls_has() {
        let all = rustls::crypto::ring::default_provider().cipher_suites;
        for (_, name) in TLS12_NAMES.iter().chain(TLS13_NAMES) {
            assert!(all.iter().any(|s| s.suite().as_str() == Some(name)), "{name}");
        }
    }

    #[test]
    fn an_unknown_cipher_is_named() {
        let tls = TlsPlan { ciphers: Some("RC4-MD5".into()), ..TlsPlan::default() };
        let e = build_tls_config(&tls).unwrap_err();
        assert!(e.contains("--tls-ciphers") && e.contains("RC4-MD5"), "{e}");
    }

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
