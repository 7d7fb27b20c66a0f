//! Encoding ahead: in the plain closed loop (one server, no `--rate`, no
//! written-key tracking, one key per request), a client whose window is
//! full draws and encodes its next batch while the server works on the
//! last one, so that when the replies come only their accounting and a
//! copy stand between them and the next write. With one connection and a
//! deep pipeline the client and the server take turns (the server idles
//! while the client encodes), so what is encoded ahead is taken off every
//! round trip; with many connections it costs a copy and saves little.
//! A client holds at most [`MAX_BATCH_BYTES`] of requests ahead, and all of
//! a run's clients together [`AHEAD_TOTAL_BYTES`].
//!
//! The requests are the stream's next ones, in order: the bytes sent are
//! the same as without it. They are not in flight until committed: they
//! take their send time then, a dropped Link does not count them lost, and
//! the end of a `--duration` run throws them away unsent.

use std::time::Instant;

use super::Client;
use crate::link::{InFlight, MAX_BATCH_BYTES};
use crate::request_source::PreparedPlan;
use crate::router::Router;

/// What a run's clients hold encoded ahead, together, at most: 128 clients
/// of a full 256 KiB write; -c 2000 with 2 KB values, 16 KiB each.
const AHEAD_TOTAL_BYTES: usize = 32 * 1024 * 1024;

pub(crate) struct Ahead {
    bytes: Box<[u8]>,
    entries: Box<[InFlight]>,
    lens: Box<[u32]>,
    /// Encoded, and of those the first `next` committed.
    count: usize,
    next: usize,
    /// Where `entries[next]`'s bytes start.
    at: usize,
}

impl Ahead {
    /// Whether a client of this plan encodes ahead: one key a request and
    /// nothing recorded per key when a request goes out (`InFlight::of`
    /// would record it too early), a sliding window deeper than one.
    pub fn fits(w: &PreparedPlan, window: usize, batch_mode: bool) -> bool {
        window > 1 && !batch_mode && w.key_names.is_none() && w.max_keys <= 1
    }

    pub fn new() -> Ahead {
        Ahead { bytes: Box::default(), entries: Box::default(), lens: Box::default(), count: 0, next: 0, at: 0 }
    }

    /// Requests encoded and not yet committed.
    #[inline]
    pub fn staged(&self) -> usize {
        self.count - self.next
    }

    /// Throws away what is encoded (the run's time is up).
    pub fn clear(&mut self) {
        self.count = 0;
        self.next = 0;
        self.at = 0;
    }
}

impl<R: Router> Client<R> {
    /// The window is full: the next batch (what the replies to come will
    /// make room for, at most a write's worth) is drawn and encoded now.
    pub(super) fn encode_ahead(&mut self, w: &PreparedPlan) {
        let Some(a) = self.ahead.as_mut() else { return };
        if a.staged() > 0 || self.source.remaining == 0 {
            return;
        }
        let per_request = w.max_request_bytes.max(1);
        // Held ahead: a write's worth at most (MAX_BATCH_BYTES), and
        // AHEAD_TOTAL_BYTES shared by the run's connections, so many
        // connections of large values hold little ahead (each encodes the
        // rest of its batch as it goes; nothing, where one request is more
        // than its share).
        let budget = MAX_BATCH_BYTES.min(AHEAD_TOTAL_BYTES / (w.plan.connections.max(1) as usize));
        let fits = budget / per_request;
        let n = (self.batch_limit.min(self.window).min(fits) as u64).min(self.source.remaining) as usize;
        if n == 0 {
            return;
        }
        if a.entries.len() < n {
            // Once per client (and again if io_uring widens its writes first).
            a.bytes = vec![0u8; n * per_request].into_boxed_slice();
            a.entries = vec![InFlight::empty(Instant::now()); n].into_boxed_slice();
            a.lens = vec![0; n].into_boxed_slice();
        }
        // A stand-in send time: committing stamps the real one.
        let stamp = Instant::now();
        let mut pos = 0;
        for k in 0..n {
            let r = self.source.next(w, &mut a.bytes[pos..]);
            a.entries[k] = InFlight::of(w, &r, std::slice::from_ref(&r.key_index), stamp, stamp);
            a.lens[k] = r.len as u32;
            pos += r.len;
        }
        a.count = n;
        a.next = 0;
        a.at = 0;
    }

    /// Up to `free` of the requests encoded ahead go into the Link's
    /// write, sent at `now`; returns how many.
    #[inline]
    pub(super) fn commit_ahead(&mut self, free: usize, now: Instant) -> usize {
        let Some(a) = self.ahead.as_mut() else { return 0 };
        let n = a.staged().min(free);
        if n == 0 {
            return 0;
        }
        let (first, end) = (a.next, a.next + n);
        let len: usize = a.lens[first..end].iter().map(|&l| l as usize).sum();
        self.link.spare()[..len].copy_from_slice(&a.bytes[a.at..a.at + len]);
        for k in first..end {
            let mut entry = a.entries[k];
            entry.sent_at = now;
            entry.intended = now;
            self.link.push(entry, a.lens[k] as usize, std::slice::from_ref(&entry.key_index));
        }
        a.next = end;
        a.at += len;
        if a.next == a.count {
            a.clear();
        }
        n
    }

    /// Requests of its share drawn and not yet sent.
    #[inline]
    pub(super) fn staged(&self) -> usize {
        self.ahead.as_ref().map_or(0, |a| a.staged())
    }
}
