//! A read-only window of a file mapped into memory (mmap(2), MAP_PRIVATE, populated at once), so
//! that a capture's bytes are read where the page cache holds them instead of being copied out
//! by read(2). A window is unmapped when its last holder drops it: the stream that slides past
//! it, or the writer thread that passes its bytes on to an output file.
//!
//! A mapped page whose file was cut shorter than it raises SIGBUS when touched. `Stream` maps
//! no further than the file's size when each window is mapped (checked then, not only at open);
//! what remains is a file cut shorter while one window of it is being decoded (see docs/trace.md).

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::ptr::NonNull;
use std::sync::OnceLock;

pub struct Window {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is read-only and owned by the Window; it is unmapped once, on drop.
unsafe impl Send for Window {}
// SAFETY: as above: nothing writes through the mapping, so shared reads are fine.
unsafe impl Sync for Window {}

impl Window {
    /// Maps `len` bytes (more than 0) of `file` from `offset`, a multiple of `page_size()`.
    pub fn map(file: &File, offset: u64, len: usize) -> io::Result<Self> {
        let offset = libc::off_t::try_from(offset)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "offset out of range"))?;
        // SAFETY: a fresh read-only private mapping of an open file; the kernel checks the
        // arguments and MAP_FAILED is handled below.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_PRIVATE | libc::MAP_POPULATE,
                file.as_raw_fd(),
                offset,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let ptr = NonNull::new(ptr.cast::<u8>()).ok_or_else(io::Error::last_os_error)?;
        Ok(Window { ptr, len })
    }

    /// The mapped bytes.
    #[inline(always)]
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: `ptr` maps `len` readable bytes until drop.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for Window {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping made in `map`, which no slice outlives (they
        // borrow the Window).
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.len);
        }
    }
}

/// The system's page size: mapping offsets are multiples of it.
pub fn page_size() -> u64 {
    static PAGE: OnceLock<u64> = OnceLock::new();
    *PAGE.get_or_init(|| {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        u64::try_from(page).unwrap_or(4096).max(1)
    })
}
