//! The bytes of a capture as a stream: a file, standard input (`-`) or an in-memory copy, gzip- or
//! zstd-compressed or not (told apart by magic bytes, never by name), read through one bounded,
//! reused buffer, or (`share_buffers`) through shared buffers that a writer can hold on to: what
//! the reader holds is one buffer or one shared buffer, whatever the size of the input.

use std::fs::File;
use std::io::{self, Cursor, Read};
use std::path::Path;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;
use std::thread;

use flate2::read::MultiGzDecoder;

use super::shared_buffer::{Pool, SharedBuffer};
use crate::interrupt::Watch;
use crate::CoreError;

/// gzip member header ID1 ID2 (RFC 1952 §2.3.1).
const GZIP_MAGIC: [u8; 2] = [0x1F, 0x8B];
/// zstd frame magic number 0xFD2FB528, little-endian on disk (RFC 8878 §3.1.1).
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];
/// Default buffer: large enough that a read call moves a good slice of the page cache at once,
/// small enough that dozens of inputs merged together stay within a few MiB.
pub const DEFAULT_CHUNK_BYTES: usize = 256 << 10;

/// Smallest read buffer or shared buffer: one page.
const MIN_CHUNK_BYTES: usize = 4096;

/// Room left before the bytes a read-ahead block carries, for the unread end of the block
/// before it: records up to this long continue into the next block without a copy of it.
const HEADROOM_BYTES: usize = 64 << 10;

/// A block read ahead: the buffer and where its bytes end (they start at HEADROOM_BYTES; none
/// means the end of the source).
type Block = (Vec<u8>, usize);

/// The source read on a thread of its own, a block ahead of the parser, so that the kernel's
/// copy (and any decompression) runs beside the parsing. At most three blocks exist: one being
/// read, one queued, one being parsed; used blocks come back to be read into again.
struct ReadAhead {
    full: Receiver<io::Result<Block>>,
    empty: SyncSender<Vec<u8>>,
}

impl ReadAhead {
    fn start(mut source: Box<dyn Read + Send>, chunk: usize, watch: Watch) -> Self {
        let (to_parse, full) = sync_channel::<io::Result<Block>>(1);
        let (empty, returned) = sync_channel::<Vec<u8>>(2);
        // The thread ends when the source does, fails, or the stream is dropped (a send fails).
        thread::spawn(move || loop {
            // A buffer given back may be the stream's first, smaller one (grown here) or one
            // grown for a long record (not kept, so that memory does not stay up).
            let size = HEADROOM_BYTES + chunk;
            let mut block = returned.try_recv().unwrap_or_default();
            if block.len() > 2 * size {
                block = Vec::new();
            }
            block.resize(block.len().max(size), 0);
            let mut end = HEADROOM_BYTES;
            let outcome = loop {
                if end == block.len() {
                    break Ok(());
                }
                if let Err(stop) = watch.check_io() {
                    break Err(stop);
                }
                match source.read(&mut block[end..]) {
                    Ok(0) => break Ok(()),
                    Ok(n) => end += n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => break Err(e),
                }
            };
            let done = outcome.is_err() || end == HEADROOM_BYTES;
            if to_parse.send(outcome.map(|()| (block, end))).is_err() || done {
                return;
            }
        });
        ReadAhead { full, empty }
    }
}

/// How the capture bytes were stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    None,
    Gzip,
    Zstd,
}

impl Compression {
    /// What the magic bytes at the start of a stream say.
    fn of(head: &[u8]) -> Self {
        if head.starts_with(&GZIP_MAGIC) {
            Compression::Gzip
        } else if head.starts_with(&ZSTD_MAGIC) {
            Compression::Zstd
        } else {
            Compression::None
        }
    }

    /// "none", "gzip" or "zstd".
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Gzip => "gzip",
            Compression::Zstd => "zstd",
        }
    }
}

/// A forward-only view of a byte source: `fill` makes bytes available, `consume` drops them.
pub struct Stream {
    source: Box<dyn Read + Send>,
    buf: Vec<u8>,
    /// Bytes of `buf` before `start` are consumed; `start..end` are available.
    start: usize,
    end: usize,
    /// Stream offset of `buf[0]`.
    base: u64,
    chunk: usize,
    eof: bool,
    compression: Compression,
    size_hint: Option<u64>,
    ahead: Option<ReadAhead>,
    /// With `share_buffers`: the shared buffer now (`base`, `start` and `end` then refer to its
    /// bytes, not to `buf`) and the buffers that shared buffers give back.
    shared: Option<Arc<SharedBuffer>>,
    pool: Option<Pool>,
    /// Checked before every read: the work reading the stream may be asked to stop.
    watch: Watch,
}

impl Stream {
    /// Opens `path` (`-` is standard input) and unpacks gzip or zstd if its magic says so.
    pub fn open(path: &Path, chunk: usize) -> Result<Self, CoreError> {
        let name = path.display().to_string();
        let whole = |e: io::Error| CoreError::whole(&name, e.to_string());
        if path.as_os_str() == "-" {
            return Self::detect(Box::new(io::stdin()), chunk).map_err(whole);
        }
        let file = File::open(path).map_err(whole)?;
        let meta = file.metadata().map_err(whole)?;
        if meta.is_dir() {
            return Err(CoreError::whole(
                &name,
                "is a directory, not a capture file",
            ));
        }
        let mut stream = Self::detect(Box::new(file), chunk).map_err(whole)?;
        if stream.compression == Compression::None {
            stream.size_hint = Some(meta.len());
        }
        Ok(stream)
    }

    /// A stream over bytes already in memory (tests, fuzzing), compressed or not.
    pub fn from_bytes(bytes: Vec<u8>, chunk: usize) -> io::Result<Self> {
        Self::detect(Box::new(Cursor::new(bytes)), chunk)
    }

    /// Peeks at the first bytes and puts a decompressor in front of `raw` where they ask for one.
    fn detect(raw: Box<dyn Read + Send>, chunk: usize) -> io::Result<Self> {
        let mut plain = Self::new(raw, Compression::None, chunk);
        plain.fill(ZSTD_MAGIC.len())?;
        let head = plain.available();
        let compression = Compression::of(head);
        if compression == Compression::None {
            return Ok(plain);
        }
        // The peeked bytes go back in front of the rest of the source.
        let peeked = Cursor::new(head.to_vec());
        let rest = peeked.chain(plain.source);
        let decoded: Box<dyn Read + Send> = match compression {
            Compression::Gzip => Box::new(MultiGzDecoder::new(rest)),
            _ => Box::new(zstd::stream::read::Decoder::new(rest)?),
        };
        Ok(Self::new(decoded, compression, chunk))
    }

    fn new(source: Box<dyn Read + Send>, compression: Compression, chunk: usize) -> Self {
        Stream {
            source,
            buf: Vec::new(),
            start: 0,
            end: 0,
            base: 0,
            chunk: chunk.max(MIN_CHUNK_BYTES),
            eof: false,
            compression,
            size_hint: None,
            ahead: None,
            shared: None,
            pool: None,
            watch: Watch::start(),
        }
    }

    /// Reads the rest of the source on a thread of its own, a block ahead (see `ReadAhead`);
    /// for sources that end (a file), not for a terminal or a pipe that may wait forever.
    pub fn read_ahead(&mut self) {
        if self.ahead.is_none() && !self.eof && self.pool.is_none() {
            let source = std::mem::replace(&mut self.source, Box::new(io::empty()));
            self.ahead = Some(ReadAhead::start(source, self.chunk, self.watch));
        }
    }

    /// How the bytes were stored.
    pub fn compression(&self) -> Compression {
        self.compression
    }

    /// The input's size where it is known before reading (an uncompressed file).
    pub fn size_hint(&self) -> Option<u64> {
        self.size_hint
    }

    /// Stream offset of the first available byte.
    pub fn offset(&self) -> u64 {
        self.base.wrapping_add(self.start as u64)
    }

    /// The buffer, or the shared buffer.
    #[inline(always)]
    fn bytes(&self) -> &[u8] {
        match &self.shared {
            Some(shared) => shared.bytes(),
            None => &self.buf,
        }
    }

    /// The bytes available now (at least what the last `fill` asked for, unless at the end).
    #[inline(always)]
    pub fn available(&self) -> &[u8] {
        &self.bytes()[self.start..self.end]
    }

    /// Bytes at stream offsets `from..from + len`, if they are still in the buffer (a record's
    /// data stays there until the next `fill`).
    #[inline(always)]
    pub fn bytes_at(&self, from: u64, len: usize) -> Option<&[u8]> {
        // `base` may lie "before" offset 0 (wrapping) once read-ahead blocks carry headroom.
        let at = usize::try_from(from.wrapping_sub(self.base)).ok()?;
        self.bytes().get(at..at.checked_add(len)?)
    }

    /// Reads what follows into shared buffers of at least `bytes`, each a buffer of its own that
    /// can outlive the stream's move past it (`shared_at`): a writer can write records from it as
    /// they were read. Not with `read_ahead`, which has buffers of its own.
    pub fn share_buffers(&mut self, bytes: usize) {
        if self.ahead.is_none() {
            self.pool = Some(Pool::default());
            self.chunk = bytes.max(MIN_CHUNK_BYTES);
        }
    }

    /// The shared buffer that holds stream offset `from`, and where in it (`share_buffers`).
    #[inline(always)]
    pub fn shared_at(&self, from: u64) -> Option<(&Arc<SharedBuffer>, usize)> {
        let shared = self.shared.as_ref()?;
        let at = usize::try_from(from.checked_sub(self.base)?).ok()?;
        (at < shared.bytes().len()).then_some((shared, at))
    }

    /// Drops `n` available bytes.
    pub fn consume(&mut self, n: usize) {
        debug_assert!(n <= self.end - self.start);
        self.start += n;
    }

    /// Whether the source is exhausted and every byte consumed.
    pub fn at_end(&mut self) -> io::Result<bool> {
        Ok(self.fill(1)? == 0)
    }

    /// Makes at least `need` bytes available unless the source ends first; returns how many
    /// are. Consumed bytes are dropped first; the buffer grows only for a `need` beyond it,
    /// and then to twice that, so that a scan asking for `need` bytes at every step moves
    /// each byte at most twice.
    #[inline]
    pub fn fill(&mut self, need: usize) -> io::Result<usize> {
        if self.end - self.start >= need || self.eof {
            return Ok(self.end - self.start);
        }
        self.refill(need)
    }

    /// `fill` once the buffer holds fewer than `need` bytes: moves what is left to the front
    /// and reads (kept out of line, so that the check above inlines into every reader step).
    #[inline(never)]
    fn refill(&mut self, need: usize) -> io::Result<usize> {
        if self.ahead.is_some() {
            return self.refill_ahead(need);
        }
        if self.pool.is_some() {
            return self.refill_shared(need);
        }
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.base += self.start as u64;
            self.end -= self.start;
            self.start = 0;
        }
        let want = if need > self.chunk {
            need.saturating_mul(2)
        } else {
            self.chunk
        };
        if self.buf.len() < want {
            self.buf.resize(want, 0);
        }
        while self.end < need {
            self.watch.check_io()?;
            match self.source.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    break;
                }
                Ok(n) => self.end += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(self.end)
    }

    /// `refill` with shared buffers: the next shared buffer is a buffer of its own (from the pool),
    /// with the unread end of the shared buffer before copied to its start, then read into.
    fn refill_shared(&mut self, need: usize) -> io::Result<usize> {
        let pool = self
            .pool
            .as_ref()
            .expect("refill_shared runs with shared buffers");
        let left = self.end - self.start;
        let mut buf = SharedBuffer::reusable(pool, need.max(self.chunk));
        buf[..left].copy_from_slice(self.available());
        self.buf = Vec::new(); // the buffer before pool, if any: not needed any more
        let mut filled = left;
        while filled < need {
            self.watch.check_io()?;
            match self.source.read(&mut buf[filled..]) {
                Ok(0) => {
                    self.eof = true;
                    break;
                }
                Ok(n) => filled += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        self.base = self.offset();
        (self.start, self.end) = (0, filled);
        self.shared = Some(Arc::new(SharedBuffer::new(buf, filled, pool)));
        Ok(filled)
    }

    /// `refill` from read-ahead blocks: the next block becomes the buffer, with the unread
    /// bytes copied into its headroom; a record longer than that is assembled by copying.
    fn refill_ahead(&mut self, need: usize) -> io::Result<usize> {
        while self.end - self.start < need && !self.eof {
            self.watch.check_io()?;
            let ahead = self
                .ahead
                .as_ref()
                .expect("refill_ahead runs with read-ahead");
            let (mut block, end) = match ahead.full.recv() {
                Ok(message) => message?,
                Err(_) => (Vec::new(), HEADROOM_BYTES), // the reader thread has ended
            };
            if end <= HEADROOM_BYTES {
                self.eof = true;
                break;
            }
            let left = self.end - self.start;
            if left <= HEADROOM_BYTES {
                let at = HEADROOM_BYTES - left;
                block[at..HEADROOM_BYTES].copy_from_slice(&self.buf[self.start..self.end]);
                let used = std::mem::replace(&mut self.buf, block);
                // The byte at `start` moves to `at`: offsets are kept, `base` moves with it.
                self.base = self
                    .base
                    .wrapping_add(self.start as u64)
                    .wrapping_sub(at as u64);
                (self.start, self.end) = (at, end);
                let _ = ahead.empty.try_send(used); // given back to be read into again
            } else {
                self.buf.copy_within(self.start..self.end, 0);
                self.base = self.base.wrapping_add(self.start as u64);
                self.buf.truncate(left);
                self.buf.extend_from_slice(&block[HEADROOM_BYTES..end]);
                (self.start, self.end) = (0, self.buf.len());
                let _ = ahead.empty.try_send(block);
            }
        }
        Ok(self.end - self.start)
    }
}
