//! A file written by its own thread, one whole buffer per `write`: the caller fills the next
//! buffer while the kernel copies the previous one into the page cache (double buffering).
//! At most three buffers exist: one being filled, one queued, one being written.

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;
use std::sync::mpsc::{channel, sync_channel, Receiver, SyncSender};
use std::thread::{self, JoinHandle};

use crate::CoreError;

/// Buffers handed over and not yet returned before `submit` waits for one to come back.
const MAX_IN_FLIGHT: usize = 2;

pub struct Sink {
    name: String,
    full: Option<SyncSender<Vec<u8>>>,
    empty: Receiver<Vec<u8>>,
    thread: Option<JoinHandle<io::Result<()>>>,
    in_flight: usize,
}

impl Sink {
    /// Creates (or truncates) `path` and starts its writer thread.
    pub fn create(path: &Path) -> Result<Self, CoreError> {
        let name = path.display().to_string();
        let mut file = File::create(path).map_err(|e| CoreError::whole(&name, e.to_string()))?;
        let (full, to_write) = sync_channel::<Vec<u8>>(1);
        let (give_back, empty) = channel::<Vec<u8>>();
        let thread = thread::spawn(move || -> io::Result<()> {
            for mut buf in to_write {
                file.write_all(&buf)?;
                buf.clear();
                // The writer may be gone already (dropped); the buffer is then simply freed.
                let _ = give_back.send(buf);
            }
            Ok(())
        });
        Ok(Sink {
            name,
            full: Some(full),
            empty,
            thread: Some(thread),
            in_flight: 0,
        })
    }

    /// Queues `buf` for writing and returns an empty buffer of the same capacity to fill next.
    pub fn submit(&mut self, buf: Vec<u8>) -> Result<Vec<u8>, CoreError> {
        let capacity = buf.capacity();
        let sent = match &self.full {
            Some(full) => full.send(buf).is_ok(),
            None => false,
        };
        if !sent {
            return Err(self.failure());
        }
        self.in_flight += 1;
        if self.in_flight > MAX_IN_FLIGHT {
            return self.take_back();
        }
        match self.empty.try_recv() {
            Ok(buf) => {
                self.in_flight -= 1;
                Ok(buf)
            }
            Err(_) => Ok(Vec::with_capacity(capacity)),
        }
    }

    fn take_back(&mut self) -> Result<Vec<u8>, CoreError> {
        match self.empty.recv() {
            Ok(buf) => {
                self.in_flight -= 1;
                Ok(buf)
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
