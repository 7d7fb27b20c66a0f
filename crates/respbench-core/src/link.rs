//! Link: one socket to one server. A ring of the requests in flight on it
//! ([`InFlight`], one entry per request, answered in order), batched writes
//! out of one buffer, and THE reply loop ([`Link::take_replies`]): every
//! socket of the engine, a client's own and those a cluster's redirections
//! open, reads and scans its replies here. What a reply means is the
//! caller's ([`OnReply`]): the Link only pairs it with its request.
//!
//! The write buffer, read buffer and ring are allocated once when the Link
//! is made; a request or a reply costs no allocation. The read buffer only
//! grows when one reply is larger than it, which a run does a few times at
//! most.

use std::io::{self, Read, Write};
use std::time::Instant;

use crate::plan::{Failure, FailureKind};
use crate::reply::{ReplyKind, ReplyScanner, Scan, escape_bytes};
use crate::request_source::{Op, PreparedPlan, Request};
use crate::transport::{Stream, io_text};

mod ring_io;

/// Bytes of requests encoded into one write at most (as the TS engine).
pub(crate) const MAX_BATCH_BYTES: usize = 256 * 1024;
/// Starting size of the read buffer; one read takes at most this much.
const READ_BUFFER: usize = 64 * 1024;

/// What a Link keeps of one request until its reply comes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct InFlight {
    /// When the write carrying it was issued (its first send, if redirected).
    pub sent_at: Instant,
    /// When it was due (`--rate`); `sent_at` otherwise. Latency counts from here.
    pub intended: Instant,
    pub key_index: u64,
    pub key_hash: u32,
    /// Which of the plan's commands: its latency goes to that command's histogram.
    pub command: u16,
    pub op: Op,
    /// A read sent after its key's write was acknowledged (`--verify-get`,
    /// mixed): nil then is a lost write.
    pub written_before: bool,
    /// A write: its generation tag (`crate::key_names`, or `NO_GENERATION`);
    /// a read: the floor of its key when it went out (0: none).
    pub generation: u32,
    /// `--cluster`: MOVED / ASK redirections it has had in a row (a TRYAGAIN or CLUSTERDOWN ends the row).
    pub hops: u8,
    /// `--cluster`: TRYAGAIN / CLUSTERDOWN retries (and sends again after a node could not be reached) so far.
    pub retries: u8,
    /// `--cluster`: sent after ASKING, whose +OK comes first.
    pub asking: bool,
}

impl InFlight {
    /// A ring entry that stands for no request (the ring's filler, a test's record).
    pub fn empty(now: Instant) -> InFlight {
        InFlight {
            sent_at: now,
            intended: now,
            key_index: 0,
            key_hash: 0,
            command: 0,
            op: Op::Set,
            written_before: false,
            generation: crate::key_names::NO_GENERATION,
            hops: 0,
            retries: 0,
            asking: false,
        }
    }

    /// What the ring keeps of request `r`, sent at `now` and due at `intended`.
    /// `keys`: the keys it names (lost writes are told per key name, [`crate::key_names`]).
    #[inline]
    pub fn of(w: &PreparedPlan, r: &Request, keys: &[u64], now: Instant, intended: Instant) -> InFlight {
        InFlight {
            sent_at: now,
            intended,
            key_index: r.key_index,
            key_hash: r.key_hash,
            op: r.op,
            command: r.command,
            written_before: w.key_names.as_ref().is_some_and(|names| names.on_send(r.command, keys)),
            generation: if r.op == Op::Get {
                w.key_names.as_ref().filter(|_| w.key_generations).map_or(0, |n| n.floor_of(r.command, r.key_index))
            } else {
                r.generation
            },
            hops: 0,
            retries: 0,
            asking: false,
        }
    }
}

/// What a reply was to the one who asked ([`OnReply::reply`]).
pub(crate) enum Taken {
    /// An answer: counted.
    Answered,
    /// A redirection (`--cluster`): the request is on its way again, not answered.
    Redirected,
    /// An answer after which every request would be refused the same (NOAUTH, NOPERM): why.
    Fatal(String),
}

/// What a reply means, decided by the Link's owner: counted by the Tally,
/// or (`--cluster`) redirected by the Router. Static dispatch: the reply
/// loop is compiled once per kind of owner.
pub(crate) trait OnReply {
    /// Whether an ASKING's +OK may come before a reply (`--cluster`).
    const ASKS: bool;

    /// The reply in `buf` (as `scanner` left it) to request `entry` with
    /// keys `keys`, received at `now`, `latency_ns` after it was due.
    fn reply(
        &mut self,
        entry: &InFlight,
        keys: &[u64],
        scanner: &ReplyScanner,
        buf: &[u8],
        now: Instant,
        latency_ns: u64,
    ) -> Taken;
}

/// What one read from the socket gave.
pub(crate) enum Fill {
    /// `n` bytes, of `space` there was room for.
    Bytes {
        n: usize,
        space: usize,
    },
    WouldBlock,
    /// The server closed its side.
    Closed,
    Failed(io::Error),
}

pub(crate) struct Link {
    /// The client's number, for messages.
    pub id: u32,
    pub stream: Stream,
    /// `host:port` of the server (or the socket path), kept for messages.
    pub peer: Option<String>,
    /// A Link a redirection opened: the client's own server, for messages.
    pub origin: Option<String>,
    ring: Box<[InFlight]>,
    /// A multi-key command's keys, `max_keys` per ring entry (empty when
    /// every command names one key).
    ring_keys: Box<[u64]>,
    max_keys: usize,
    head: usize,
    tail: usize,
    inflight: usize,
    out: Box<[u8]>,
    out_start: usize,
    out_end: usize,
    input: Vec<u8>,
    input_len: usize,
    /// Offset in the whole reply stream of `input[0]`, for messages.
    stream_base: u64,
    scanner: ReplyScanner,
    /// Replies received on it in this phase.
    pub received: u64,
}

impl Link {
    /// A Link over `stream` for requests of `prepared`, `window` of them in
    /// flight at most, `out_bytes` of them encoded at once at most.
    pub fn new(id: u32, stream: Stream, prepared: &PreparedPlan, window: usize, out_bytes: usize) -> Link {
        let now = Instant::now();
        let empty = InFlight::empty(now);
        let max_keys = prepared.max_keys;
        Link {
            id,
            peer: stream.peer_label(),
            origin: None,
            stream,
            ring: vec![empty; window].into_boxed_slice(),
            ring_keys: vec![0; if max_keys > 1 { window * max_keys } else { 0 }].into_boxed_slice(),
            max_keys,
            head: 0,
            tail: 0,
            inflight: 0,
            out: vec![0u8; out_bytes].into_boxed_slice(),
            out_start: 0,
            out_end: 0,
            input: vec![0u8; READ_BUFFER],
            input_len: 0,
            stream_base: 0,
            scanner: ReplyScanner::new(),
            received: 0,
        }
    }

    /// Requests written (or encoded) whose replies have not come.
    #[inline]
    pub fn inflight(&self) -> usize {
        self.inflight
    }

    /// Whether the ring has room for `n` more requests.
    #[inline]
    pub fn has_room(&self, n: usize) -> bool {
        self.inflight + n <= self.ring.len()
    }

    /// Whether encoded bytes wait to be written.
    #[inline]
    pub fn writing(&self) -> bool {
        self.out_start < self.out_end
    }

    /// Where the next request is encoded: the free end of the write buffer.
    #[inline]
    pub fn spare(&mut self) -> &mut [u8] {
        &mut self.out[self.out_end..]
    }

    /// Bytes the write buffer still has room for.
    #[inline]
    pub fn spare_len(&self) -> usize {
        self.out.len() - self.out_end
    }

    /// The bytes of the last `len` encoded ([`Link::spare`]) and not yet pushed.
    pub fn spare_bytes(&self, len: usize) -> &[u8] {
        &self.out[self.out_end..self.out_end + len]
    }

    /// Appends `bytes` (not a request: ASKING) to the write buffer.
    pub fn append(&mut self, bytes: &[u8]) {
        self.out[self.out_end..self.out_end + bytes.len()].copy_from_slice(bytes);
        self.out_end += bytes.len();
    }

    /// The request just encoded into [`Link::spare`] (`len` bytes) goes out
    /// with the next write; its reply is expected after those before it.
    #[inline]
    pub fn push(&mut self, entry: InFlight, len: usize, keys: &[u64]) {
        if self.max_keys > 1 {
            let at = self.tail * self.max_keys;
            self.ring_keys[at..at + keys.len()].copy_from_slice(keys);
        }
        self.ring[self.tail] = entry;
        self.tail = if self.tail + 1 == self.ring.len() { 0 } else { self.tail + 1 };
        self.inflight += 1;
        self.out_end += len;
    }

    /// Send time of the oldest request still waiting for its reply.
    pub fn oldest_sent_at(&self) -> Option<Instant> {
        (self.inflight > 0).then(|| self.ring[self.head].sent_at)
    }

    /// The socket went away: nothing in flight, nothing to write, a reply
    /// cut off by the drop gone with it. Returns how many were in flight.
    pub fn forget(&mut self) -> usize {
        let lost = self.inflight;
        self.head = 0;
        self.tail = 0;
        self.inflight = 0;
        self.out_start = 0;
        self.out_end = 0;
        self.input_len = 0;
        self.scanner = ReplyScanner::new();
        lost
    }

    /// Up again on `stream` (`--reconnect`).
    pub fn replace_stream(&mut self, stream: Stream) {
        // Under --cluster it may be another primary now (a failover).
        self.peer = stream.peer_label().or(self.peer.take());
        self.stream = stream;
    }

    /// Writes what is pending; stops at WouldBlock (the writable event
    /// resumes it). Bytes out count what the kernel took, as in the TS engine.
    pub fn flush(&mut self, bytes_out: &mut u64) -> Result<(), Failure> {
        while self.out_start < self.out_end {
            match self.stream.write(&self.out[self.out_start..self.out_end]) {
                Ok(0) => return Err(self.closed_failure(None)),
                Ok(n) => {
                    self.out_start += n;
                    *bytes_out += n as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(self.closed_failure(Some(e))),
            }
        }
        self.out_start = 0;
        self.out_end = 0;
        Ok(())
    }

    /// The socket is writable again: TLS records a full socket held back go
    /// first (a no-op for TCP and unix), then what is pending.
    #[inline(always)]
    pub fn on_writable(&mut self, bytes_out: &mut u64) -> Result<(), Failure> {
        if let Err(e) = self.stream.flush() {
            return Err(self.closed_failure(Some(e)));
        }
        self.flush(bytes_out)
    }

    /// One read into the read buffer (grown first when full).
    #[inline(always)]
    pub fn fill(&mut self, bytes_in: &mut u64) -> Fill {
        loop {
            if self.input_len == self.input.len() {
                let grown = self.input.len() * 2;
                self.input.resize(grown, 0);
            }
            let space = self.input.len() - self.input_len;
            return match self.stream.read(&mut self.input[self.input_len..]) {
                Ok(0) => Fill::Closed,
                Ok(n) => {
                    *bytes_in += n as u64;
                    self.input_len += n;
                    Fill::Bytes { n, space }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => Fill::WouldBlock,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => Fill::Failed(e),
            };
        }
    }

    /// Scans every complete reply in the read buffer, hands each with its
    /// request to `owner`, then keeps the incomplete tail at its start. Push
    /// frames are counted apart (`pushes`); a reply with no request waiting
    /// is a protocol error. The one reply loop of the engine.
    #[inline]
    pub fn take_replies<H: OnReply>(&mut self, owner: &mut H, pushes: &mut u64, now: Instant) -> Result<(), Failure> {
        let end = self.input_len;
        let mut pos = 0;
        let window = self.ring.len();
        // Requests of one batch share a send time and replies of one read a
        // receive time: one subtraction per batch, not per reply.
        let mut latency: (Option<Instant>, u64) = (None, 0);
        while pos < end {
            let buf = &self.input[..end];
            let reply_end = match self.scanner.resume(buf, pos) {
                Ok(Scan::Complete(reply_end)) => reply_end,
                Ok(Scan::Incomplete) => break,
                Err(e) => {
                    let (reason, offset, bytes) = (e.reason, e.offset, e.bytes);
                    return Err(self.protocol_failure(format!(
                        "{reason} at byte {} of the replies: \"{bytes}\"",
                        self.stream_base + offset as u64
                    )));
                }
            };
            if self.scanner.kind == ReplyKind::Push {
                // Out-of-band data (RESP3): no request's answer.
                *pushes += 1;
                pos = reply_end;
                continue;
            }
            if self.inflight == 0 {
                return Err(self.protocol_failure(format!(
                    "a reply no request asked for (the server sent more replies than requests, e.g. a greeting), at byte {} of the replies: \"{}\"",
                    self.stream_base + pos as u64,
                    escape_bytes(buf, pos, reply_end, 32)
                )));
            }
            let index = self.head;
            if H::ASKS && self.ring[index].asking {
                // ASKING's own +OK; the request's reply comes next.
                self.ring[index].asking = false;
                pos = reply_end;
                continue;
            }
            self.head = if self.head + 1 == window { 0 } else { self.head + 1 };
            self.inflight -= 1;
            // Read in place, not copied out (56 bytes a reply): nothing the
            // owner does can write this Link's ring while it reads the entry.
            let entry = &self.ring[index];
            if latency.0 != Some(entry.intended) {
                latency = (Some(entry.intended), now.saturating_duration_since(entry.intended).as_nanos() as u64);
            }
            let keys = if self.max_keys > 1 {
                let at = index * self.max_keys;
                &self.ring_keys[at..at + self.max_keys]
            } else {
                std::slice::from_ref(&entry.key_index)
            };
            let taken = owner.reply(entry, keys, &self.scanner, buf, now, latency.1);
            pos = reply_end;
            match taken {
                Taken::Answered => self.received += 1,
                Taken::Redirected => {}
                Taken::Fatal(why) => {
                    self.received += 1;
                    return Err(Failure::new(
                        FailureKind::Auth,
                        format!("{}: {why} after {} replies", self.label(), self.received),
                    ));
                }
            }
        }
        // Part of a reply with nothing waiting for it: only a push frame may come unasked.
        if pos < end && self.inflight == 0 && self.input[pos] != b'>' {
            return Err(self.protocol_failure(format!(
                "unexpected bytes with no request waiting, at byte {} of the replies: \"{}\"",
                self.stream_base + pos as u64,
                escape_bytes(&self.input, pos, end, 32)
            )));
        }
        if pos > 0 {
            self.input.copy_within(pos..end, 0);
            self.input_len = end - pos;
            self.stream_base += pos as u64;
            // The incomplete reply now starts at input[0]: its scan resumes there.
            self.scanner.moved(pos);
        }
        Ok(())
    }

    /// Names the Link in messages: which client, and to where.
    pub fn label(&self) -> String {
        connection_label(self.id, self.origin.as_deref().or(self.peer.as_deref()))
    }

    fn protocol_failure(&self, what: String) -> Failure {
        let from = match (&self.origin, &self.peer) {
            (Some(_), Some(peer)) => format!(" in a reply from {peer}"),
            _ => String::new(),
        };
        Failure::new(
            FailureKind::Protocol,
            format!("{}: protocol error{from} after {} replies: {what}", self.label(), self.received),
        )
    }

    /// The part of a reply that has arrived, for messages: a server that
    /// stopped mid-reply can be told from one that never answered.
    pub fn partial_note(&self) -> String {
        if self.input_len == 0 {
            return String::new();
        }
        format!(
            ", in the middle of a reply ({} bytes of it received: \"{}\")",
            self.input_len,
            escape_bytes(&self.input, 0, self.input_len, 32)
        )
    }

    /// Why the server's side went away, worded as the TS engine words it.
    /// Built only when it happens: nothing is formatted on the hot path.
    pub fn closed_failure(&self, err: Option<io::Error>) -> Failure {
        if let Some(origin) = &self.origin {
            let what = match &err {
                None => "was closed by the server".to_string(),
                Some(e) => format!("failed: {}", io_text(e)),
            };
            let target = self.peer.as_deref().unwrap_or("?");
            return Failure::new(
                FailureKind::Closed,
                format!(
                    "{}: the connection to {target} (where a redirection sent it) {what}",
                    connection_label(self.id, Some(origin))
                ),
            );
        }
        let mid_reply = self.partial_note();
        let (where_, received) = (self.label(), self.received);
        let how = match err.as_ref().map(io::Error::kind) {
            None => "",
            Some(io::ErrorKind::ConnectionReset) => " (reset)",
            Some(io::ErrorKind::BrokenPipe) => " (EPIPE)",
            Some(io::ErrorKind::ConnectionAborted) => " (ECONNABORTED)",
            Some(_) => {
                let e = io_text(&err.expect("an error"));
                return Failure::new(FailureKind::Closed, format!("{where_}: {e} after {received} replies{mid_reply}"));
            }
        };
        Failure::new(
            FailureKind::Closed,
            format!("{where_}: connection closed by server after {received} replies{how}{mid_reply}"),
        )
    }
}

/// Names a connection in messages: which one, and to where.
pub(crate) fn connection_label(id: u32, peer: Option<&str>) -> String {
    match peer {
        Some(peer) => format!("connection {id} ({peer})"),
        None => format!("connection {id}"),
    }
}

#[cfg(test)]
pub(crate) mod tests;
