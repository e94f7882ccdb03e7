//! A block of a capture's bytes, read into a buffer of its own and shared: the reader decodes it
//! while the writer thread may still hold an earlier one, whose records it writes as they were read
//! (no copy of ours). A shared buffer's memory goes back to its pool when the last holder drops it,
//! so a stream that moves on reuses the same few buffers instead of fresh (zeroed, faulted) ones.
//!
//! Shared buffers are read, not mapped: a mapped page of a file that another process cuts shorter
//! raises SIGBUS when touched, and a capture can be cut at any time (a ring of tcpdump files
//! reopens the oldest with O_TRUNC). Reading costs a copy out of the page cache; mapping costs
//! about as much in page-table work (populating, then unmapping and flushing the TLB): within
//! the noise of interleaved runs of both on the 2-core machine (docs/trace.md, Converting).

use std::sync::{Arc, Mutex};

/// Buffers kept for reuse: one being decoded, one queued and one being written, and a spare.
const POOL_BUFFERS: usize = 4;
/// A buffer larger than this (grown for one long record) is freed, not kept, so that memory
/// does not stay up after it.
const POOL_BUFFER_MAX_BYTES: usize = 4 << 20;

/// Buffers given back by dropped shared buffers.
pub type Pool = Arc<Mutex<Vec<Vec<u8>>>>;

/// Bytes of a capture that the reader and a writer may both hold (`Arc`); not a rate window.
pub struct SharedBuffer {
    buf: Vec<u8>,
    len: usize,
    pool: Pool,
}

impl SharedBuffer {
    /// The first `len` bytes of `buf` as a shared buffer; `buf` goes back to `pool` when it is
    /// dropped.
    pub fn new(buf: Vec<u8>, len: usize, pool: &Pool) -> Self {
        SharedBuffer {
            buf,
            len,
            pool: Arc::clone(pool),
        }
    }

    /// The shared buffer's bytes.
    #[inline(always)]
    pub fn bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }

    /// A buffer of at least `size` initialised bytes: one given back, or a new one.
    pub fn reusable(pool: &Pool, size: usize) -> Vec<u8> {
        let reused = pool.lock().ok().and_then(|mut free| free.pop());
        let mut buf = reused.unwrap_or_default();
        if buf.len() < size {
            buf.resize(size, 0);
        }
        buf
    }
}

impl Drop for SharedBuffer {
    fn drop(&mut self) {
        if let Ok(mut free) = self.pool.lock() {
            if free.len() < POOL_BUFFERS && self.buf.len() <= POOL_BUFFER_MAX_BYTES {
                free.push(std::mem::take(&mut self.buf));
            }
        }
    }
}
