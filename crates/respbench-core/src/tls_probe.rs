//! `--tls` against a port that speaks plain text: a plain Redis reads the
//! ClientHello as an inline command and, when no newline happens to be in
//! it, waits for the rest, so the handshake would hang until its timeout.
//! When a handshake has not finished after [`PROBE_AFTER`], one plain PING on
//! a second connection asks the port: a RESP reply means it is not TLS. Once
//! per run (a slow TLS server is not probed by every connection), never on
//! a handshake that is going well. Paired with the JS engine's
//! transport.ts (`answersPlainText`): the same PING, delay and words.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::progress::RunControl;
use crate::socket::SLICE;

/// How long a handshake may go unfinished before the port is asked.
pub(crate) const PROBE_AFTER: Duration = Duration::from_millis(250);

/// The failure's words, the same in both engines.
pub(crate) const PLAIN_TEXT: &str = "the server answered in plain text: drop --tls";

static PROBED: AtomicBool = AtomicBool::new(false);

/// A new run may probe again.
pub(crate) fn forget_probe() {
    PROBED.store(false, Ordering::Relaxed);
}

/// Whether this is the run's one probe (the first caller gets true).
pub(crate) fn take_probe() -> bool {
    !PROBED.swap(true, Ordering::Relaxed)
}

/// The first byte of any RESP2/RESP3 reply.
fn is_resp_type(byte: u8) -> bool {
    b"+-:$*_,#!=(%~|>".contains(&byte)
}

/// Sends `PING` in RESP over a new plain connection to `addr` and says
/// whether a RESP reply came back before `deadline` (a TLS server closes or
/// sends an alert, a record starting 0x15, which is not a RESP type).
pub(crate) fn answers_plain_text(addr: SocketAddr, deadline: Instant, control: &RunControl) -> bool {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return false;
    }
    let Ok(mut sock) = TcpStream::connect_timeout(&addr, left.min(Duration::from_millis(500))) else {
        return false;
    };
    if sock.set_read_timeout(Some(SLICE)).is_err() || sock.write_all(b"*1\r\n$4\r\nPING\r\n").is_err() {
        return false;
    }
    let mut first = [0u8; 1];
    while Instant::now() < deadline && !control.is_cancelled() {
        match sock.read(&mut first) {
            Ok(1) => return is_resp_type(first[0]),
            Ok(_) => return false,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
                ) => {}
            Err(_) => return false,
        }
    }
    false
}
