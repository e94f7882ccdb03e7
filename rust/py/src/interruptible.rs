//! Long work that stops on the first Ctrl-C, SIGTERM or SIGHUP. Python runs its signal handlers
//! (pcieperf.interrupts turns the signals into exceptions) only on the main thread, between
//! bytecodes: while that thread is inside the core they would wait until the work is done. So
//! the work runs on a thread of its own while the main thread waits for it, running the
//! handlers every `POLL`; a handler that raises asks the work to stop (`interrupt::request_stop`,
//! which the core's loops check between chunks) and its exception is what the call raises.

use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, RecvTimeoutError};
use std::thread;
use std::time::Duration;

use numpy::PyArray1;
use pcieperf_core::interrupt;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

/// How often the waiting thread runs Python's signal handlers: a signal is acted on within this.
const POLL: Duration = Duration::from_millis(50);
/// How long a stopped call waits for its work to notice: a read from a pipe that sends nothing
/// may never return, and the call must not wait for it (the thread is left to end with it).
const STOP_WAIT: Duration = Duration::from_secs(1);

/// `work()` without the GIL, stopped by a signal as the module notes say. Off the main thread
/// (a Dask worker thread), where Python runs no handler, it runs there as `detach` runs it; a
/// request made meanwhile (another call's signal) still stops it at its next check.
pub fn interruptible<T: Send + 'static>(
    py: Python<'_>,
    work: impl FnOnce() -> T + Send + 'static,
) -> PyResult<T> {
    if !interrupt::on_main_thread() {
        return Ok(py.detach(work));
    }
    let (done, outcome) = sync_channel(1);
    thread::Builder::new()
        .name("pcieperf-work".into())
        .spawn(move || {
            let _ = done.send(panic::catch_unwind(AssertUnwindSafe(work)));
        })
        .map_err(|e| PyRuntimeError::new_err(format!("cannot start a thread: {e}")))?;
    let finished = py.detach(move || loop {
        match outcome.recv_timeout(POLL) {
            Ok(result) => return Ok(result),
            Err(RecvTimeoutError::Disconnected) => {
                unreachable!("the work thread sends its outcome before it ends")
            }
            Err(RecvTimeoutError::Timeout) => {
                if let Err(raised) = Python::attach(|py| py.check_signals()) {
                    interrupt::request_stop();
                    let _ = outcome.recv_timeout(STOP_WAIT);
                    return Err(raised);
                }
            }
        }
    })?;
    match finished {
        Ok(value) => Ok(value),
        Err(payload) => panic::resume_unwind(payload),
    }
}

/// Loads NumPy's C API now, before long work, where a function makes arrays only after it:
/// loading runs Python code (numpy's version check), and a signal handler that raised there
/// would make rust-numpy's loader panic. The imports it makes are made here first, where an
/// exception is one.
pub fn load_numpy(py: Python<'_>) -> PyResult<()> {
    static LOADED: AtomicBool = AtomicBool::new(false);
    if LOADED.load(Ordering::Relaxed) {
        return Ok(());
    }
    let version = py.import("numpy")?.getattr("__version__")?;
    py.import("numpy.lib")?
        .getattr("NumpyVersion")?
        .call1((version,))?;
    py.check_signals()?;
    let _ = PyArray1::<u8>::zeros(py, 0, false);
    LOADED.store(true, Ordering::Relaxed);
    Ok(())
}
