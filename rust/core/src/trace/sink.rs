//! A file written by its own thread, one whole buffer per `write`: the caller fills the next
//! buffer while the kernel copies the previous one into the page cache (double buffering).
//! A piece of a shared input buffer can be handed over instead of a buffer, to be written from
//! where it was read (no copy of ours). At most three buffers or pieces exist: one being
//! filled, one queued, one being written.

use std::fs::File;
use std::io::{self, Write};
use std::ops::Range;
use std::path::Path;
use std::sync::mpsc::{channel, sync_channel, Receiver, SyncSender};
use std::sync::Arc;
use std::thread::{self, JoinHandle};

use super::shared_buffer::SharedBuffer;
use crate::CoreError;

/// Buffers handed over and not yet returned before `submit` waits for one to come back.
const MAX_IN_FLIGHT: usize = 2;

/// What the writer thread writes and gives back: a buffer, to be filled again, or bytes of a
/// shared input buffer, dropped by the caller (its buffer then goes back to the reader's pool
/// if nothing else holds it).
enum Chunk {
    Buffer(Vec<u8>),
    Shared(Arc<SharedBuffer>, Range<usize>),
}

impl Chunk {
    fn bytes(&self) -> &[u8] {
        match self {
            Chunk::Buffer(buf) => buf,
            Chunk::Shared(shared, range) => &shared.bytes()[range.clone()],
        }
    }
}

pub struct Sink {
    name: String,
    full: Option<SyncSender<Chunk>>,
    /// Written chunks coming back.
    empty: Receiver<Chunk>,
    thread: Option<JoinHandle<io::Result<()>>>,
    in_flight: usize,
    /// Buffers given back and not yet reused.
    spares: Vec<Vec<u8>>,
}

impl Sink {
    /// Creates (or truncates) `path` and starts its writer thread.
    pub fn create(path: &Path) -> Result<Self, CoreError> {
        let name = path.display().to_string();
        let mut file = File::create(path).map_err(|e| CoreError::whole(&name, e.to_string()))?;
        let (full, to_write) = sync_channel::<Chunk>(1);
        let (give_back, empty) = channel::<Chunk>();
        let thread = thread::spawn(move || -> io::Result<()> {
            for chunk in to_write {
                file.write_all(chunk.bytes())?;
                // The writer may be gone already (dropped); the chunk is then simply freed.
                let _ = give_back.send(chunk);
            }
            Ok(())
        });
        Ok(Sink {
            name,
            full: Some(full),
            empty,
            thread: Some(thread),
            in_flight: 0,
            spares: Vec::new(),
        })
    }

    /// Queues `buf` for writing and returns an empty buffer of the same capacity to fill next.
    pub fn submit(&mut self, buf: Vec<u8>) -> Result<Vec<u8>, CoreError> {
        let capacity = buf.capacity();
        self.send(Chunk::Buffer(buf))?;
        Ok(self
            .spares
            .pop()
            .unwrap_or_else(|| Vec::with_capacity(capacity)))
    }

    /// Queues `shared[range]` for writing, straight from the shared buffer.
    pub fn submit_shared(
        &mut self,
        shared: Arc<SharedBuffer>,
        range: Range<usize>,
    ) -> Result<(), CoreError> {
        self.send(Chunk::Shared(shared, range))
    }

    /// Hands `chunk` to the writer thread, then takes back what it has written: waiting for
    /// one when more than MAX_IN_FLIGHT are out, else only what is back already.
    fn send(&mut self, chunk: Chunk) -> Result<(), CoreError> {
        let sent = match &self.full {
            Some(full) => full.send(chunk).is_ok(),
            None => false,
        };
        if !sent {
            return Err(self.failure());
        }
        self.in_flight += 1;
        if self.in_flight > MAX_IN_FLIGHT {
            self.take_back()?;
        }
        while let Ok(back) = self.empty.try_recv() {
            self.returned(back);
        }
        Ok(())
    }

    /// Counts a written chunk back in, keeping a buffer to reuse.
    fn returned(&mut self, back: Chunk) {
        self.in_flight -= 1;
        if let Chunk::Buffer(mut buf) = back {
            buf.clear();
            self.spares.push(buf);
        }
    }

    fn take_back(&mut self) -> Result<(), CoreError> {
        match self.empty.recv() {
            Ok(back) => {
                self.returned(back);
                Ok(())
            }
            Err(_) => Err(self.failure()),
        }
    }

    /// Waits until everything submitted is in the file.
    pub fn wait_idle(&mut self) -> Result<(), CoreError> {
        while self.in_flight > 0 {
            self.take_back()?;
        }
        Ok(())
    }

    /// Waits for every write and closes the file.
    pub fn close(&mut self) -> Result<(), CoreError> {
        self.full = None;
        let outcome = match self.thread.take().map(JoinHandle::join) {
            Some(Ok(Ok(()))) | None => return Ok(()),
            Some(Ok(Err(e))) => e.to_string(),
            Some(Err(_)) => "the writer thread panicked".to_owned(),
        };
        Err(CoreError::whole(&self.name, outcome))
    }

    /// Why the writer thread stopped taking buffers (it only stops on an error).
    fn failure(&mut self) -> CoreError {
        self.close()
            .err()
            .unwrap_or_else(|| CoreError::whole(&self.name, "the writer thread stopped early"))
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        let _ = self.close();
    }
}
