//! The provided-buffer ring (`IORING_REGISTER_PBUF_RING`) a worker's
//! multishot receives fill: the kernel picks a free buffer for each receive
//! and names it in the completion; the worker copies the bytes into the
//! Link's read buffer (where the reply scanner reads them, and where an
//! incomplete reply waits for the rest) and gives the buffer back at once,
//! so the ring never runs dry while replies are being scanned.
//!
//! Both the ring of descriptors and the buffers are allocated once, when
//! the worker's ring is made; giving a buffer back is a store into the ring
//! and, once per loop turn, one release store of its tail.

use std::io;
use std::sync::atomic::{AtomicU16, Ordering};

/// One descriptor of the ring, as the kernel reads it (`struct io_uring_buf`).
#[repr(C)]
struct BufDescriptor {
    addr: u64,
    len: u32,
    bid: u16,
    /// In entry 0 this is the ring's tail (`struct io_uring_buf_ring`).
    resv: u16,
}

pub struct BufferRing {
    /// `entries` descriptors, page-aligned (mmap'd), shared with the kernel.
    ring: *mut BufDescriptor,
    ring_bytes: usize,
    buffers: Box<[u8]>,
    buffer_size: usize,
    entries: u16,
    /// Our tail: buffers given back so far; published by [`BufferRing::publish`].
    tail: u16,
    published: u16,
}

// The kernel reads the ring; only the worker thread that owns it touches it.
unsafe impl Send for BufferRing {}

impl BufferRing {
    /// `entries` (a power of two) buffers of `buffer_size` bytes, all free.
    pub fn new(entries: u16, buffer_size: usize) -> io::Result<BufferRing> {
        assert!(entries.is_power_of_two());
        let ring_bytes = entries as usize * std::mem::size_of::<BufDescriptor>();
        // SAFETY: an anonymous private mapping, checked below, unmapped on drop.
        let ring = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                ring_bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if ring == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let mut buffers = BufferRing {
            ring: ring.cast(),
            ring_bytes,
            buffers: vec![0u8; entries as usize * buffer_size].into_boxed_slice(),
            buffer_size,
            entries,
            tail: 0,
            published: 0,
        };
        for bid in 0..entries {
            buffers.give_back(bid);
        }
        buffers.publish();
        Ok(buffers)
    }

    /// The ring's address and size, for `register_buf_ring_with_flags`.
    pub fn ring_addr(&self) -> u64 {
        self.ring as u64
    }

    pub fn entries(&self) -> u16 {
        self.entries
    }

    /// The `len` bytes a receive put in buffer `bid`.
    #[inline]
    pub fn bytes(&self, bid: u16, len: usize) -> &[u8] {
        let at = bid as usize * self.buffer_size;
        &self.buffers[at..at + len.min(self.buffer_size)]
    }

    /// Buffer `bid` is free again (visible to the kernel at the next [`BufferRing::publish`]).
    #[inline]
    pub fn give_back(&mut self, bid: u16) {
        let slot = (self.tail & (self.entries - 1)) as usize;
        let addr = self.buffers.as_ptr() as u64 + (bid as usize * self.buffer_size) as u64;
        // SAFETY: slot < entries; the kernel only reads descriptors past the
        // tail it last saw, and entry 0's `resv` (the tail) is left alone.
        unsafe {
            let d = self.ring.add(slot);
            std::ptr::addr_of_mut!((*d).addr).write(addr);
            std::ptr::addr_of_mut!((*d).len).write(self.buffer_size as u32);
            std::ptr::addr_of_mut!((*d).bid).write(bid);
        }
        self.tail = self.tail.wrapping_add(1);
    }

    /// Makes the buffers given back visible to the kernel: one release
    /// store of the tail, once per loop turn.
    #[inline]
    pub fn publish(&mut self) {
        if self.published == self.tail {
            return;
        }
        // SAFETY: the tail is the u16 at byte 14 of the ring, which the kernel reads.
        let tail = unsafe { &*(std::ptr::addr_of_mut!((*self.ring).resv) as *const AtomicU16) };
        tail.store(self.tail, Ordering::Release);
        self.published = self.tail;
    }
}

impl Drop for BufferRing {
    fn drop(&mut self) {
        // SAFETY: mapped in `new` with this size; the ring (the kernel's
        // registration) is gone first, being declared before this in `Ring`.
        unsafe {
            libc::munmap(self.ring.cast(), self.ring_bytes);
        }
    }
}
