//! A Link's side of the io_uring backend: its write buffer's pending bytes
//! go out in a send the worker submits (and must not change until that
//! send's completion, which [`Link::writing`] guarantees: nothing is
//! encoded while a write is pending), and received bytes are copied in from
//! the ring's provided buffer, where [`Link::take_replies`] scans them as
//! it scans what a `read` brought.

use super::Link;

impl Link {
    /// The bytes a send should carry: what is encoded and not yet taken by the kernel.
    #[inline]
    pub(crate) fn unsent(&self) -> &[u8] {
        &self.out[self.out_start..self.out_end]
    }

    /// The write buffer grows to `len` bytes, while nothing is encoded in
    /// it (else false: its pending bytes may be in a send).
    pub(crate) fn widen_writes(&mut self, len: usize) -> bool {
        if self.out_end != 0 {
            return false;
        }
        if len > self.out.len() {
            self.out = vec![0u8; len].into_boxed_slice();
        }
        true
    }

    /// A send's completion: the kernel took `n` bytes (bytes out count them,
    /// as a `write`'s return does on epoll); all of them frees the buffer.
    #[inline]
    pub(crate) fn sent(&mut self, n: usize, bytes_out: &mut u64) {
        self.out_start = (self.out_start + n).min(self.out_end);
        *bytes_out += n as u64;
        if self.out_start == self.out_end {
            self.out_start = 0;
            self.out_end = 0;
        }
    }

    /// Bytes a receive brought, after those waiting in the read buffer
    /// (an incomplete reply); the buffer grows only for a reply larger than it.
    #[inline]
    pub(crate) fn receive(&mut self, bytes: &[u8], bytes_in: &mut u64) {
        let need = self.input_len + bytes.len();
        if need > self.input.len() {
            let grown = need.next_power_of_two();
            self.input.resize(grown, 0);
        }
        self.input[self.input_len..need].copy_from_slice(bytes);
        self.input_len = need;
        *bytes_in += bytes.len() as u64;
    }
}
