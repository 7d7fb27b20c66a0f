//! One worker's io_uring: setup with the features the backend needs, the
//! provided-buffer ring its multishot receives fill, submission of sends,
//! receives and cancels, and the one wait of a loop turn, which submits
//! everything queued since the last one and sleeps until completions come
//! or the turn's timeout passes. Completions are copied out of the
//! completion queue into a list allocated once, so the worker can hand them
//! to its clients while it queues new submissions.
//!
//! Knows no Link and no client: user data is the caller's.

use std::io;
use std::os::fd::RawFd;
use std::time::Duration;

use io_uring::types::{CancelBuilder, Fd, SubmitArgs, Timespec};
use io_uring::{IoUring, cqueue, opcode, squeue};

use super::uring_buffers::BufferRing;

/// The buffer group of the worker's provided buffers.
const BUFFER_GROUP: u16 = 0;

/// A completion, copied out of the queue.
#[derive(Clone, Copy, Debug)]
pub struct Completion {
    pub user_data: u64,
    pub result: i32,
    pub flags: u32,
}

impl Completion {
    /// A multishot receive stays armed after this one.
    #[inline]
    pub fn more(&self) -> bool {
        cqueue::more(self.flags)
    }

    /// The provided buffer the bytes are in.
    #[inline]
    pub fn buffer(&self) -> Option<u16> {
        cqueue::buffer_select(self.flags)
    }
}

pub struct Ring {
    // Dropped first: the kernel lets go of the buffer ring before it is unmapped.
    ring: IoUring,
    buffers: BufferRing,
    /// What the last wait reaped, handed out by the worker.
    pub completions: Vec<Completion>,
    /// Submissions whose last completion has not come (a multishot receive
    /// counts until its final one): what [`Ring::quiesce`] waits for.
    outstanding: usize,
    /// `IORING_FEAT_MIN_TIMEOUT` (Linux 6.12): a wait for many completions
    /// may return with fewer once a short time has passed.
    min_timeout: bool,
}

impl Ring {
    /// A ring with room for `entries` submissions (a power of two is not
    /// needed: the kernel rounds up) and `buffer_count` (a power of two)
    /// receive buffers of `buffer_size` bytes.
    pub fn new(entries: u32, buffer_count: u16, buffer_size: usize) -> io::Result<Ring> {
        let ring = IoUring::builder()
            .setup_single_issuer()
            .setup_defer_taskrun()
            .setup_cqsize(entries * 4)
            .setup_clamp()
            .build(entries)?;
        if !ring.params().is_feature_ext_arg() {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        let buffers = BufferRing::new(buffer_count, buffer_size)?;
        // SAFETY: the buffer ring lives as long as `ring` (see the field order).
        unsafe {
            ring.submitter().register_buf_ring_with_flags(buffers.ring_addr(), buffers.entries(), BUFFER_GROUP, 0)?;
        }
        let min_timeout = ring.params().is_feature_min_timeout();
        let cq = ring.params().cq_entries() as usize;
        Ok(Ring { ring, buffers, completions: Vec::with_capacity(cq), outstanding: 0, min_timeout })
    }

    fn push(&mut self, entry: squeue::Entry) {
        // SAFETY (for every entry pushed): what an entry points at (a Link's
        // write buffer) stays alive and unchanged until its completion; see `send`.
        while unsafe { self.ring.submission().push(&entry) }.is_err() {
            // The queue is full: hand what it has to the kernel, then push.
            if self.ring.submit().is_err() {
                std::thread::yield_now();
            }
        }
        self.outstanding += 1;
    }

    /// Arms a multishot receive on `fd` into the provided buffers.
    pub fn receive(&mut self, fd: RawFd, user_data: u64) {
        self.push(opcode::RecvMulti::new(Fd(fd), BUFFER_GROUP).build().user_data(user_data));
    }

    /// Sends `len` bytes at `bytes` on `fd`.
    ///
    /// # Safety
    /// The bytes must stay alive and unmodified until this send's completion.
    pub unsafe fn send(&mut self, fd: RawFd, bytes: *const u8, len: usize, user_data: u64) {
        let len = len.min(u32::MAX as usize) as u32;
        self.push(opcode::Send::new(Fd(fd), bytes, len).flags(libc::MSG_NOSIGNAL).build().user_data(user_data));
    }

    /// Cancels the submission with `target` as its user data (its
    /// completion still comes, with `-ECANCELED`); this one's own completes as `user_data`.
    pub fn cancel(&mut self, target: u64, user_data: u64) {
        self.push(opcode::AsyncCancel::new(target).build().user_data(user_data));
    }

    /// The bytes a receive's completion names (`len` of buffer `bid`).
    #[inline]
    pub fn bytes(&self, bid: u16, len: usize) -> &[u8] {
        self.buffers.bytes(bid, len)
    }

    /// Buffer `bid` may be filled again.
    #[inline]
    pub fn give_back(&mut self, bid: u16) {
        self.buffers.give_back(bid);
    }

    /// One loop turn's system call: submits everything queued, then waits
    /// until `want` completions have come or `timeout` has passed (with
    /// MIN_TIMEOUT, returns with fewer than `want` once `batch` has passed
    /// and one has come), and copies the completions out.
    pub fn wait(&mut self, want: usize, timeout: Duration, batch: Duration) -> io::Result<()> {
        self.buffers.publish();
        let ts = Timespec::new().sec(timeout.as_secs()).nsec(timeout.subsec_nanos());
        let mut args = SubmitArgs::new().timespec(&ts);
        let want = if self.min_timeout && want > 1 && !batch.is_zero() {
            args = args.min_wait_usec(batch.as_micros() as u32);
            want
        } else {
            1
        };
        match self.ring.submitter().submit_with_args(want, &args) {
            Ok(_) => {}
            Err(e) if matches!(e.raw_os_error(), Some(libc::ETIME) | Some(libc::EINTR) | Some(libc::EBUSY)) => {}
            Err(e) => return Err(e),
        }
        self.reap();
        Ok(())
    }

    fn reap(&mut self) {
        let mut cq = self.ring.completion();
        cq.sync();
        for cqe in &mut cq {
            let c = Completion { user_data: cqe.user_data(), result: cqe.result(), flags: cqe.flags() };
            if !c.more() {
                self.outstanding = self.outstanding.saturating_sub(1);
            }
            if self.completions.len() < self.completions.capacity() {
                self.completions.push(c);
            }
        }
    }

    /// Before the worker lets go of its Links: cancels every submission
    /// still pending and waits (at most `limit`) for their completions, so
    /// the kernel reads no write buffer after it is freed.
    pub fn quiesce(&mut self, limit: Duration) {
        if self.outstanding == 0 {
            return;
        }
        let _ = unsafe {
            self.ring.submission().push(&opcode::AsyncCancel2::new(CancelBuilder::any()).build().user_data(0))
        };
        self.outstanding += 1;
        let end = std::time::Instant::now() + limit;
        while self.outstanding > 0 {
            let now = std::time::Instant::now();
            if now >= end {
                break;
            }
            self.completions.clear();
            if self.wait(1, (end - now).min(Duration::from_millis(10)), Duration::ZERO).is_err() {
                break;
            }
        }
        self.completions.clear();
    }
}
