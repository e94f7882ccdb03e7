//! Stopping long work when asked (the caller caught Ctrl-C, SIGTERM or SIGHUP): work takes a
//! [`Watch`] when it starts and its loops over input check it between chunks (every read of a
//! capture stream, `trace::stream`; every run of packets of a pass, `trace::timeline`). A
//! request stops all work in flight at that moment, and none started after it, so nothing has
//! to be reset between calls.

use std::fmt;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::CoreError;

/// Requests to stop made so far; a watch remembers the count it started with.
static REQUESTS: AtomicU64 = AtomicU64::new(0);

/// Asks all work in flight to stop at its next check.
pub fn request_stop() {
    REQUESTS.fetch_add(1, Ordering::Relaxed);
}

/// Whether a stop was requested since the work that holds it started.
#[derive(Debug, Clone, Copy)]
pub struct Watch {
    requests: &'static AtomicU64,
    started: u64,
}

impl Watch {
    /// A watch for work starting now.
    pub fn start() -> Self {
        Self::on(&REQUESTS)
    }

    /// A watch of the requests counted in `requests` (the process's, or a test's own).
    fn on(requests: &'static AtomicU64) -> Self {
        Watch {
            requests,
            started: requests.load(Ordering::Relaxed),
        }
    }

    /// Whether the work was asked to stop.
    #[inline]
    pub fn stopped(&self) -> bool {
        self.requests.load(Ordering::Relaxed) != self.started
    }

    /// `CoreError::Interrupted` once the work was asked to stop.
    pub fn check(&self) -> Result<(), CoreError> {
        if self.stopped() {
            Err(CoreError::Interrupted)
        } else {
            Ok(())
        }
    }

    /// The I/O error a stream's read gives once the work was asked to stop (see `is_stop`).
    pub fn check_io(&self) -> io::Result<()> {
        if self.stopped() {
            Err(io::Error::other(Stop))
        } else {
            Ok(())
        }
    }
}

/// What a read stopped by a request carries as its I/O error.
#[derive(Debug)]
struct Stop;

impl fmt::Display for Stop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("stopped on request")
    }
}

impl std::error::Error for Stop {}

/// Whether an I/O error is a read stopped by a request (`Watch::check_io`).
pub fn is_stop(error: &io::Error) -> bool {
    error.get_ref().is_some_and(|inner| inner.is::<Stop>())
}

/// Whether the calling thread is the process's first one: the only thread on which Python runs
/// signal handlers (a caller waits there and checks for them while work runs elsewhere).
pub fn on_main_thread() -> bool {
    // SAFETY: getpid and gettid take no arguments and cannot fail.
    unsafe { libc::gettid() == libc::getpid() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_stops_work_in_flight_and_not_work_started_after_it() {
        // A counter of its own: the process's would stop the other tests' reads.
        static OWN: AtomicU64 = AtomicU64::new(0);
        let running = Watch::on(&OWN);
        assert!(running.check().is_ok());
        OWN.fetch_add(1, Ordering::Relaxed);
        assert_eq!(running.check(), Err(CoreError::Interrupted));
        assert!(is_stop(&running.check_io().unwrap_err()));
        let later = Watch::on(&OWN);
        assert!(!later.stopped() && later.check_io().is_ok());
        assert!(!is_stop(&io::Error::other("disk full")));
    }
}
