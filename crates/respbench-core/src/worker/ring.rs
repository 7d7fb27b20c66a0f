//! The io_uring backend: one ring per worker thread ([`crate::io::uring`]).
//! Each Link's socket is handed to the ring (its fd, blocking mode) with a
//! multishot receive armed into the ring's provided buffers. Whatever a
//! turn's clients encoded is queued as one send per Link (after the turn of
//! the client owning it, [`Backend::settled`]; up to [`RING_BATCH_BYTES`]
//! of requests, where epoll writes 256 KiB at a time) and goes to the kernel with
//! the next turn's one `io_uring_enter`, which also waits for completions:
//! until the turn's timeout (the next `--rate` due time, interval cut,
//! reply deadline; [`POLL_SLICE`] at most), or, in a closed loop, until
//! about as many completions as connections have come or a few
//! microseconds have passed since the first (MIN_TIMEOUT). A receive's
//! bytes are copied into the Link's read buffer and its provided buffer
//! given back at once; a send's completion frees the Link's write buffer.
//!
//! A completion names its Link by token (as epoll's: client index + peer
//! × 2^24) and a generation: a Link reopened (`--reconnect`, a cluster peer
//! opened again) takes a new one, so what the old socket's submissions
//! still complete with is ignored.

use std::collections::HashMap;
use std::io;
use std::os::fd::RawFd;
use std::time::{Duration, Instant};

use super::{Backend, EventLoop, PEER_TOKEN_STRIDE, POLL_SLICE, token_of};
use crate::client::{Client, Received, Status};
use crate::io::uring::{Completion, Ring};
use crate::link::Link;
use crate::request_source::PreparedPlan;
use crate::router::Router;
use crate::transport::Stream;

const RECEIVE: u64 = 1;
const SEND: u64 = 2;
const CANCEL: u64 = 3;

/// Receive buffers per ring, and their size: room for every connection's
/// replies of a few turns; a larger reply spans several (they are copied
/// into the Link's read buffer, which grows for it as on epoll).
const BUFFER_SIZE: usize = 16 * 1024;
/// Bytes of requests one send carries at most. Epoll's worker writes
/// 256 KiB batches (`link::MAX_BATCH_BYTES`) one after another in one wake
/// until the kernel refuses; the ring hands the kernel one buffer per Link
/// per turn, so with large values that one buffer must hold what several of
/// those writes would, or the socket runs dry between turns and fewer
/// requests are in flight than on epoll (issue 21: -d 200000 -P 64 kept
/// 18-25 of 64 in flight, epoll 26-33; with 4 MiB 32-41). A Link's buffer
/// is this large only when its window of requests needs it (large values,
/// or a deep pipeline of mid-sized ones); with small ones it stays as epoll's.
pub(crate) const RING_BATCH_BYTES: usize = 4 * 1024 * 1024;
/// In a closed loop a turn may wait for about one completion per
/// connection, but no longer than this after the first one has come
/// (MIN_TIMEOUT). Zero: the first completion ends the wait. Measured at
/// -P 1 -c 50 (docs/native.md, io_uring): 50 us cut io_uring_enter from
/// 0.235 to 0.055 per request but cost 1.06-1.22x the CPU per request of
/// waking on the first completion (the kernel's min-timeout timer path),
/// which costs what epoll does; CPU is what a load generator must save.
const BATCH_WAIT: Duration = Duration::ZERO;

fn user_data(kind: u64, generation: u16, token: usize) -> u64 {
    (kind << 56) | (u64::from(generation) << 32) | token as u64
}

/// What the backend knows of one Link's socket.
#[derive(Clone, Copy, Debug, Default)]
struct Slot {
    fd: RawFd,
    generation: u16,
    receiving: bool,
    sending: bool,
}

pub(crate) struct UringIo {
    ring: Ring,
    /// Clients' own Links, by client index.
    own: Vec<Slot>,
    /// `--cluster`: the Links Routers opened, by token (inserted once per Link opened).
    peers: HashMap<usize, Slot>,
    /// Closed loop: turns wait for a batch of completions.
    batch: bool,
    /// The largest request's bytes: what a Link's write buffer is widened by.
    per_request: usize,
}

impl UringIo {
    fn slot(&mut self, token: usize) -> &mut Slot {
        if token < PEER_TOKEN_STRIDE {
            if token >= self.own.len() {
                self.own.resize(token + 1, Slot::default());
            }
            &mut self.own[token]
        } else {
            self.peers.entry(token).or_default()
        }
    }

    /// The Link's socket into the ring under a new generation, a receive armed.
    fn arm(&mut self, link: &mut Link, token: usize) -> io::Result<()> {
        let fd = link.stream.hand_to_ring()?;
        let slot = self.slot(token);
        slot.generation = slot.generation.wrapping_add(1);
        *slot = Slot { fd, generation: slot.generation, receiving: true, sending: false };
        let data = user_data(RECEIVE, slot.generation, token);
        self.ring.receive(fd, data);
        Ok(())
    }

    /// The Link leaves: its receive cancelled, what its submissions still complete with ignored.
    fn disarm(&mut self, token: usize) {
        let slot = *self.slot(token);
        if slot.receiving {
            self.ring.cancel(user_data(RECEIVE, slot.generation, token), user_data(CANCEL, 0, token));
        }
        let s = self.slot(token);
        s.generation = s.generation.wrapping_add(1);
        s.receiving = false;
        s.sending = false;
    }

    /// What the Link encoded goes out with the next submit (one send at a time per Link).
    #[inline]
    fn queue_send(&mut self, link: &Link, token: usize) {
        if !link.writing() || !matches!(link.stream, Stream::Ring(_)) {
            return;
        }
        let slot = self.slot(token);
        if slot.sending {
            return;
        }
        slot.sending = true;
        let (fd, data) = (slot.fd, user_data(SEND, slot.generation, token));
        let bytes = link.unsent();
        // SAFETY: the bytes are the Link's write buffer between out_start and
        // out_end, which nothing encodes into or moves while the Link is
        // writing (until this send's completion, `Link::sent`), and the
        // Links outlive the ring's submissions (`Backend::quiesce`).
        unsafe { self.ring.send(fd, bytes.as_ptr(), bytes.len(), data) };
    }
}

impl Backend for UringIo {
    fn setup<R: Router>(conns: &mut [Client<R>], prepared: &PreparedPlan) -> Result<Self, String> {
        let entries = (conns.len() as u32 * 2).clamp(64, 4096);
        let buffers = (conns.len() * 2).clamp(64, 1024).next_power_of_two() as u16;
        let ring = Ring::new(entries, buffers, BUFFER_SIZE).map_err(|e| crate::io::refusal(&e))?;
        let batch = conns.iter().all(|c| !c.pacer.is_paced());
        let per_request = prepared.max_request_bytes;
        let mut io =
            UringIo { ring, own: vec![Slot::default(); conns.len()], peers: HashMap::new(), batch, per_request };
        for (i, conn) in conns.iter_mut().enumerate() {
            io.add(conn, i).map_err(|e| format!("cannot hand a socket to io_uring: {e}"))?;
            if R::REDIRECTS {
                // No registry: the Links it opens join the ring after the turn that opened them.
                conn.router.attach(None, token_of, i as u32);
            }
        }
        // Room for every socket of the group to be replaced in one turn (a reconnect storm) and more.
        crate::transport::defer_ring_closes(conns.len() * 4 + 64);
        Ok(io)
    }

    fn add<R: Router>(&mut self, conn: &mut Client<R>, i: usize) -> io::Result<()> {
        conn.widen_writes(self.per_request, RING_BATCH_BYTES);
        self.arm(&mut conn.link, i)
    }

    fn remove<R: Router>(&mut self, _conn: &mut Client<R>, i: usize) {
        self.disarm(i);
    }

    #[inline]
    fn settled<R: Router>(&mut self, conn: &mut Client<R>, i: usize) {
        self.queue_send(&conn.link, i);
        if R::REDIRECTS {
            for k in 1..conn.router.peers() {
                let Some(mut link) = conn.router.take_link(k) else { continue };
                let token = token_of(i as u32, k).0;
                // A Link its Router opened since: into the ring (if that fails, its requests time out).
                if !matches!(link.stream, Stream::Ring(_)) {
                    let _ = self.arm(&mut link, token);
                }
                self.queue_send(&link, token);
                conn.router.put_link(k, link);
            }
        }
    }

    fn turn<R: Router>(
        lp: &mut EventLoop<'_, R, Self>,
        wake: Option<Instant>,
        next_timeout_check: Option<Instant>,
        now: Instant,
    ) -> Result<(), String> {
        if R::REDIRECTS {
            // A topology refresh or a redirection may have written on any peer's Link.
            for i in 0..lp.conns.len() {
                if !lp.finished[i] && lp.conns[i].down.is_none() {
                    lp.io.settled(&mut lp.conns[i], i);
                }
            }
        }
        // Exact: a ring timeout is not rounded up to milliseconds as epoll's is.
        let mut wait = wake.map_or(POLL_SLICE, |t| t.saturating_duration_since(now).min(POLL_SLICE));
        if let Some(t) = next_timeout_check {
            wait = wait.min(t.saturating_duration_since(now));
        }
        let (want, batch) =
            if lp.io.batch && !BATCH_WAIT.is_zero() { (lp.active, BATCH_WAIT) } else { (1, Duration::ZERO) };
        lp.io.ring.wait(want, wait, batch).map_err(|e| format!("io_uring failed: {e}"))?;
        // Submitted: the sockets dropped before it may be closed now.
        crate::transport::close_ring_sockets(false);
        for k in 0..lp.io.ring.completions.len() {
            let c = lp.io.ring.completions[k];
            lp.on_completion(c);
        }
        lp.io.ring.completions.clear();
        Ok(())
    }

    fn quiesce(&mut self) {
        self.ring.quiesce(Duration::from_secs(1));
        crate::transport::close_ring_sockets(true);
    }
}

impl<R: Router> EventLoop<'_, R, UringIo> {
    /// One completion, to the client whose Link it names.
    fn on_completion(&mut self, c: Completion) {
        let prepared = self.shared.prepared;
        let kind = c.user_data >> 56;
        let generation = (c.user_data >> 32) as u16;
        let token = c.user_data as u32 as usize;
        let (i, peer) = (token % PEER_TOKEN_STRIDE, token / PEER_TOKEN_STRIDE);
        if kind != RECEIVE && kind != SEND {
            return;
        }
        let slot = *self.io.slot(token);
        let current = slot.generation == generation;
        let gone = i >= self.conns.len() || self.finished[i] || self.conns[i].down.is_some();
        if kind == SEND {
            if !current {
                return;
            }
            self.io.slot(token).sending = false;
            if gone {
                return;
            }
            let sent = match c.result {
                n if n > 0 => Ok(n as usize),
                0 => Err(io::ErrorKind::WriteZero.into()),
                e => Err(io::Error::from_raw_os_error(-e)),
            };
            let outcome = if peer == 0 {
                self.conns[i].on_sent(prepared, &mut self.tally, sent)
            } else {
                self.conns[i].on_peer_completion(prepared, &mut self.tally, peer, Err(sent))
            };
            self.settle(i, outcome);
            return;
        }
        let buffer = c.buffer();
        if current && !c.more() {
            self.io.slot(token).receiving = false;
        }
        if !current || gone {
            if let Some(b) = buffer {
                self.io.ring.give_back(b);
            }
            return;
        }
        let mut rearm = !c.more();
        let outcome = match (c.result, buffer) {
            (n, Some(b)) if n > 0 => {
                let got = Received::Bytes(self.io.ring.bytes(b, n as usize));
                let outcome = if peer == 0 {
                    self.conns[i].on_received(prepared, &mut self.tally, got)
                } else {
                    self.conns[i].on_peer_completion(prepared, &mut self.tally, peer, Ok(got))
                };
                self.io.ring.give_back(b);
                outcome
            }
            // The buffers ran out (they are back by now): receive again.
            (e, _) if -e == libc::ENOBUFS => Ok(Status::Busy),
            (n, _) => {
                rearm = false;
                let got = if n == 0 { Received::Closed } else { Received::Failed(io::Error::from_raw_os_error(-n)) };
                if peer == 0 {
                    self.conns[i].on_received(prepared, &mut self.tally, got)
                } else {
                    self.conns[i].on_peer_completion(prepared, &mut self.tally, peer, Ok(got))
                }
            }
        };
        let failed = outcome.is_err();
        self.settle(i, outcome);
        if rearm && !failed && !self.finished[i] && self.conns[i].down.is_none() {
            let slot = self.io.slot(token);
            if slot.generation == generation && !slot.receiving {
                slot.receiving = true;
                let fd = slot.fd;
                self.io.ring.receive(fd, user_data(RECEIVE, generation, token));
            }
        }
    }
}
