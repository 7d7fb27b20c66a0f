//! TLS over the connection's own mio socket, driven by rustls without a
//! thread per connection (the shape of rustls's `tlsclient-mio` example).
//! `TlsStream::open` runs the handshake to the end before it returns (with
//! its own timeout), so the run loop only sees application bytes. After it, a
//! read pulls TLS records off the socket (`read_tls` → `process_new_packets`)
//! and hands back plaintext, a write hands plaintext to rustls and pushes the
//! records out (`write_tls`) until the socket would block. Error texts match
//! the TS engine's.

use std::io::{self, Read, Write};
use std::net::Shutdown;
use std::time::{Duration, Instant};

use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token};
use rustls::ClientConnection;
use rustls::pki_types::ServerName;

use crate::plan::TlsPlan;
use crate::progress::RunControl;
use crate::socket::{OpenError, SLICE, io_text};
use crate::tls_config::tls_config;
use crate::tls_probe::{PLAIN_TEXT, PROBE_AFTER, answers_plain_text, take_probe};

pub struct TlsStream {
    sock: TcpStream,
    tls: ClientConnection,
}

impl TlsStream {
    /// TLS over a connected socket to `host:port`, the handshake done:
    /// `tls.sni` (else `host`) is the name sent and checked.
    pub(crate) fn open(
        sock: TcpStream,
        host: &str,
        port: u16,
        tls: &TlsPlan,
        timeout: Duration,
        control: &RunControl,
    ) -> Result<TlsStream, OpenError> {
        let config = tls_config(tls).map_err(OpenError::Failed)?;
        let name = tls.sni.as_deref().unwrap_or(host);
        let server_name = ServerName::try_from(name.to_string())
            .map_err(|_| OpenError::Failed(format!("TLS: \"{name}\" is not a valid server name")))?;
        let conn = ClientConnection::new(config, server_name)
            .map_err(|e| OpenError::Failed(format!("TLS handshake with {host}:{port} failed: {e}")))?;
        let mut stream = TlsStream { sock, tls: conn };
        handshake(&mut stream, &format!("{host}:{port}"), name, tls, timeout, control)?;
        Ok(stream)
    }

    /// The TCP socket under the records.
    pub(crate) fn socket(&self) -> &TcpStream {
        &self.sock
    }

    pub(crate) fn socket_mut(&mut self) -> &mut TcpStream {
        &mut self.sock
    }

    /// Queues a close_notify alert, pushes it as far as the socket takes it,
    /// then closes the sending side.
    pub(crate) fn close_write(&mut self) -> io::Result<()> {
        self.tls.send_close_notify();
        self.push_records()?;
        self.sock.shutdown(Shutdown::Write)
    }

    /// Encrypted bytes are waiting for the socket to take them.
    pub(crate) fn wants_write(&self) -> bool {
        self.tls.wants_write()
    }
}

impl TlsStream {
    /// Writes pending TLS records to the socket until none is left or it
    /// would block.
    pub(crate) fn push_records(&mut self) -> io::Result<()> {
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
    pub(crate) fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
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
    pub(crate) fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
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

/// The server hung up (a FIN or a reset, as TCP delivers it, during the
/// connect or the handshake): one story, worded as the JS engine words it.
pub(crate) fn closed_during_handshake(peer: &str, tls: &TlsPlan) -> OpenError {
    OpenError::Failed(format!(
        "TLS handshake with {peer} failed: the server closed the connection during the handshake{}",
        if tls.cert.is_none() { " (does it require a client certificate? --cert/--key)" } else { "" }
    ))
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
    let closed = || closed_during_handshake(peer, tls);
    let failed = |e: &io::Error| match e.kind() {
        io::ErrorKind::ConnectionReset | io::ErrorKind::ConnectionAborted | io::ErrorKind::BrokenPipe => closed(),
        _ => OpenError::Failed(format!("TLS handshake with {peer} failed: {}", io_text(e))),
    };
    let mut poll = Poll::new().map_err(|e| failed(&e))?;
    let deadline = Instant::now() + timeout;
    let mut events = Events::with_capacity(4);
    let mut registered: Option<Interest> = None;
    let probe_at = Instant::now() + PROBE_AFTER;
    let mut may_probe = true;
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
        if may_probe && now >= probe_at && s.tls.is_handshaking() {
            may_probe = false;
            if take_probe() && s.sock.peer_addr().is_ok_and(|addr| answers_plain_text(addr, deadline, control)) {
                return Err(OpenError::Failed(format!("TLS handshake with {peer} failed: {PLAIN_TEXT}")));
            }
            continue;
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
                Ok(0) => return Err(closed()),
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

/// A rustls handshake error as the user reads it, with the same words as
/// the TS engine's (certificate not trusted, hostname mismatch, …): never
/// rustls's own debug names.
fn tls_reason(e: &rustls::Error, name: &str) -> String {
    use rustls::{CertificateError, Error};
    match e {
        Error::InvalidCertificate(c) => match c {
            CertificateError::UnknownIssuer => NOT_TRUSTED.into(),
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. } => {
                format!("hostname mismatch (the server's certificate is not valid for \"{name}\"; --sni sets the name checked)")
            }
            CertificateError::Expired | CertificateError::ExpiredContext { .. } => "certificate expired".into(),
            CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => "certificate not valid yet".into(),
            CertificateError::BadSignature => "the server's certificate signature does not verify".into(),
            CertificateError::BadEncoding => "the server's certificate cannot be parsed".into(),
            CertificateError::InvalidPurpose | CertificateError::InvalidPurposeContext { .. } => {
                "the server's certificate is not for server authentication (its extendedKeyUsage)".into()
            }
            CertificateError::UnsupportedSignatureAlgorithmContext { .. }
            | CertificateError::UnsupportedSignatureAlgorithmForPublicKeyContext { .. } => {
                "the server's certificate (or a CA of its chain) is signed with an algorithm the native engine does not verify (a brainpoolP512r1 or RSA key over 8192 bits, a SHA-3 digest, or another uncommon one): the JS engine (OpenSSL) verifies some: --engine js".into()
            }
            CertificateError::Other(why) if why.0.downcast_ref::<crate::tls_strength::Refused>().is_some() => why.0.to_string(),
            CertificateError::UnhandledCriticalExtension => {
                "the server's certificate has a critical extension the native engine's TLS library (rustls) does not know".into()
            }
            other => webpki_words(other),
        },
        // A record that is no TLS content type: a RESP reply to the ClientHello.
        Error::InvalidMessage(rustls::InvalidMessage::InvalidContentType) => PLAIN_TEXT.into(),
        Error::AlertReceived(alert) => {
            let alert = alert_words(&format!("{alert:?}"));
            format!("the server refused the handshake (alert \"{alert}\": {})", alert_hint(&alert))
        }
        Error::PeerIncompatible(_) => {
            "no TLS version, cipher or signature scheme both sides accept (--tls-ciphers/--tls-ciphersuites)".into()
        }
        Error::PeerMisbehaved(why) => format!("the server broke the TLS protocol ({})", alert_words(&format!("{why:?}"))),
        Error::InvalidMessage(why) => {
            format!("the server sent a malformed TLS message ({})", alert_words(&format!("{why:?}")))
        }
        other => other.to_string(),
    }
}

/// What --cacert/--cacertdir/--insecure do, for a certificate no CA signed.
const NOT_TRUSTED: &str = "certificate not trusted (not signed by a CA in --cacert/--cacertdir or the system's roots; --insecure skips the check)";

/// A webpki refusal rustls passes on as `Other(OtherError(Name))`, as words.
fn webpki_words(e: &rustls::CertificateError) -> String {
    let debug = format!("{e:?}");
    let name = debug.rsplit('(').next().unwrap_or(&debug).trim_end_matches(')');
    let why = match name {
        // A CA:TRUE certificate not itself in --cacert: to OpenSSL, a
        // self-signed certificate nobody trusts.
        "CaUsedAsEndEntity" => return NOT_TRUSTED.into(),
        // A v1 (or v2) certificate that signed another: to OpenSSL no CA unless self-signed.
        "EndEntityUsedAsCa" | "UnsupportedCertVersion" => return crate::tls_strength::NOT_A_CA.into(),
        "PathLenConstraintViolated" => "a CA signed more levels below it than its pathLenConstraint allows".into(),
        // The outer signatureAlgorithm not the one signed inside: to OpenSSL a signature failure.
        "SignatureAlgorithmMismatch" => return "the server's certificate signature does not verify".into(),
        other => alert_words(other),
    };
    format!("certificate not accepted ({why})")
}

/// A TLS error after the handshake (a TLS 1.3 server refuses a client
/// certificate only then), worded as the TS engine words it.
fn tls_run_text(e: &rustls::Error) -> String {
    match e {
        rustls::Error::AlertReceived(alert) => {
            let alert = alert_words(&format!("{alert:?}"));
            format!("TLS alert \"{alert}\" from the server: {}", alert_hint(&alert))
        }
        other => format!("TLS error: {other}"),
    }
}

/// What an alert from the server most likely means, in the user's flags;
/// the same table as the TS engine's (transport.ts `alertHint`).
fn alert_hint(alert: &str) -> &'static str {
    match alert {
        "certificate required" => "it requires a client certificate (--cert/--key)",
        "unknown ca" => "it does not trust the CA that signed the client certificate (--cert)",
        "bad certificate"
        | "certificate unknown"
        | "unsupported certificate"
        | "certificate expired"
        | "certificate revoked"
        | "access denied" => "it refused the client certificate (--cert)",
        "handshake failure" | "insufficient security" | "protocol version" => {
            "no TLS version, cipher or signature scheme both sides accept (--tls-ciphers/--tls-ciphersuites)"
        }
        _ => "does it require a client certificate? --cert/--key",
    }
}

/// `CertificateRequired` → `certificate required`, `UnknownCA` → `unknown
/// ca`, as OpenSSL names alerts.
fn alert_words(name: &str) -> String {
    let mut out = String::new();
    let mut previous_upper = true;
    for c in name.chars() {
        if c.is_ascii_uppercase() && !previous_upper {
            out.push(' ');
        }
        previous_upper = c.is_ascii_uppercase();
        out.push(c.to_ascii_lowercase());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alerts_are_named_as_openssl_names_them() {
        assert_eq!(alert_words("CertificateRequired"), "certificate required");
        assert_eq!(alert_words("UnknownCA"), "unknown ca");
        assert_eq!(alert_words("HandshakeFailure"), "handshake failure");
    }
}
