//! The primitives a capture path's CPU costs are made of, timed on this machine in
//! milliseconds and without DPDK: bytes copied out of a pool (cold when the pool is larger than
//! the last-level cache, warm when it fits L1), one `write` call of a record into a sink, and
//! items passed through a single-producer, single-consumer ring (on one CPU, or between two).
//! Each function times one run; the caller repeats them and keeps the median and the spread
//! (`pcieperf.capture.probe`). The cache line's round trip between two CPUs is `cores`'s.

use crate::cores::{first_in_line, not_allowed, on_two_cpus, thread_cpu_ns};
use crate::error::CoreError;
use crate::rng::Rng;
use std::hint::{black_box, spin_loop};
use std::io::Write;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// CPU ns per byte copying `chunk` bytes at a time out of a pool of `pool_bytes` into one
/// buffer, `bytes` in all, the chunks taken in pseudo-random order: from a pool larger than the
/// last-level cache each chunk's lines were evicted since it was last read (and no prefetcher
/// sees the next chunk coming), as a capture tool reads the copies of a large mempool; from a
/// pool that fits L1 every line is warm.
pub fn copy_ns_per_byte(pool_bytes: usize, chunk: usize, bytes: u64) -> Result<f64, CoreError> {
    if chunk == 0 || pool_bytes < chunk || bytes < chunk as u64 {
        return Err(CoreError::Invalid(format!(
            "give a chunk of at least one byte, a pool and a total of at least one chunk (got \
             chunk {chunk}, pool {pool_bytes}, total {bytes})"
        )));
    }
    let pool = vec![1u8; pool_bytes]; // written, so every page is there before the timing
    let mut into = vec![0u8; chunk];
    let chunks = (pool_bytes / chunk) as u64;
    let copies = bytes / chunk as u64;
    let mut rng = Rng(chunks);
    let start = thread_cpu_ns();
    for _ in 0..copies {
        let at = rng.below(chunks) as usize * chunk;
        into.copy_from_slice(black_box(&pool[at..at + chunk]));
        black_box(&mut into);
    }
    Ok((thread_cpu_ns() - start) / (copies * chunk as u64) as f64)
}

/// CPU ns per `write` call of a `record_bytes` record into `path` (a device such as /dev/null,
/// or a file it creates or empties), `calls` calls: the system call and, for a file, the
/// kernel's copy into its pages.
pub fn write_call_ns(path: &str, record_bytes: usize, calls: u64) -> Result<f64, CoreError> {
    if record_bytes == 0 || calls == 0 {
        return Err(CoreError::Invalid(format!(
            "give a record of at least one byte and at least one call (got {record_bytes} B, \
             {calls} calls)"
        )));
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
        .map_err(|err| CoreError::whole(path, err.to_string()))?;
    let record = vec![0x5au8; record_bytes];
    let start = thread_cpu_ns();
    for _ in 0..calls {
        let written = file
            .write(&record)
            .map_err(|err| CoreError::whole(path, err.to_string()))?;
        if written != record_bytes {
            return Err(CoreError::whole(path, format!("short write: {written} B")));
        }
    }
    Ok((thread_cpu_ns() - start) / calls as f64)
}

/// Slots of the probe's ring: DPDK's default capture ring (dpdk-dumpcap -N 2048).
const RING_SLOTS: usize = 2048;

/// Items a burst moves on one CPU: app/dumpcap/main.c BURST_SIZE.
const BURST: usize = 32;

/// How long one side waits for the other in all before the run has no answer: on a busy
/// machine the other side may not get its CPU, and then its time slices, not the ring, would
/// decide the answer.
const WAIT_LIMIT: Duration = Duration::from_millis(200);

/// A head or tail index on a cache line of its own.
#[repr(align(128))]
struct Index(AtomicUsize);

/// A single-producer, single-consumer ring of items, its two indices on lines of their own
/// (as `rte_ring`'s producer and consumer heads).
struct Ring {
    slots: Vec<AtomicU64>,
    head: Index, // the next slot the producer fills
    tail: Index, // the next slot the consumer empties
}

impl Ring {
    fn new() -> Self {
        Self {
            slots: (0..RING_SLOTS).map(|_| AtomicU64::new(0)).collect(),
            head: Index(AtomicUsize::new(0)),
            tail: Index(AtomicUsize::new(0)),
        }
    }

    /// Puts `item` in, false when the ring is full.
    fn push(&self, item: u64) -> bool {
        let head = self.head.0.load(Ordering::Relaxed);
        if head - self.tail.0.load(Ordering::Acquire) == RING_SLOTS {
            return false;
        }
        self.slots[head % RING_SLOTS].store(item, Ordering::Relaxed);
        self.head.0.store(head + 1, Ordering::Release);
        true
    }

    /// Takes the oldest item out, None when the ring is empty.
    fn pop(&self) -> Option<u64> {
        let tail = self.tail.0.load(Ordering::Relaxed);
        if tail == self.head.0.load(Ordering::Acquire) {
            return None;
        }
        let item = self.slots[tail % RING_SLOTS].load(Ordering::Relaxed);
        self.tail.0.store(tail + 1, Ordering::Release);
        Some(item)
    }
}

/// Spins until `step` succeeds or the run has waited `WAIT_LIMIT` since `begun`.
fn until<T>(begun: Instant, mut step: impl FnMut() -> Option<T>) -> Option<T> {
    let mut spins = 0u32;
    loop {
        if let Some(found) = step() {
            return Some(found);
        }
        spins = spins.wrapping_add(1);
        if spins.is_multiple_of(1024) && begun.elapsed() > WAIT_LIMIT {
            return None;
        }
        spin_loop();
    }
}

/// CPU ns per item through a ring on one CPU: bursts of 32 put in, then taken out (the
/// per-lcore work of a mempool cache or a ring that one thread fills and empties).
pub fn ring_local_ns(items: u64) -> Result<f64, CoreError> {
    if items < BURST as u64 {
        return Err(CoreError::Invalid(format!(
            "give at least one burst of {BURST} items (got {items})"
        )));
    }
    let ring = Ring::new();
    let bursts = items / BURST as u64;
    let mut sum = 0u64;
    let start = thread_cpu_ns();
    for burst in 0..bursts {
        for item in 0..BURST as u64 {
            ring.push(black_box(burst + item));
        }
        for _ in 0..BURST {
            sum = sum.wrapping_add(ring.pop().unwrap_or(0));
        }
    }
    black_box(sum);
    Ok((thread_cpu_ns() - start) / (bursts * BURST as u64) as f64)
}

/// Wall ns per item through a ring from a producer on `cpus[0]` to a consumer on `cpus[1]`,
/// `items` in all (both at real-time priority where allowed, as `cores::round_trip_ns`): the
/// lines of the slots and indices move between the CPUs as a capture ring's do. NaN when one
/// side waited for the other longer than 200 ms in all.
pub fn ring_ns(cpus: [usize; 2], items: u64) -> Result<f64, CoreError> {
    if items == 0 || cpus[0] == cpus[1] {
        return Err(CoreError::Invalid(format!(
            "give two different CPUs and at least one item (got CPUs {cpus:?}, {items} items)"
        )));
    }
    let ring = Ring::new();
    let found = on_two_cpus(
        cpus,
        |step| {
            first_in_line();
            step.wait();
            let begun = Instant::now();
            (1..=items).all(|item| until(begun, || ring.push(item).then_some(())).is_some())
        },
        |step| {
            first_in_line();
            step.wait();
            let begun = Instant::now();
            let mut sum = 0u64;
            for _ in 0..items {
                sum += until(begun, || ring.pop())?;
            }
            (sum == items * (items + 1) / 2).then(|| begun.elapsed())
        },
    );
    let (pushed, taken) = found.ok_or_else(|| not_allowed(cpus))?;
    Ok(match (pushed, taken) {
        (true, Some(took)) => took.as_nanos() as f64 / items as f64,
        _ => f64::NAN,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_sizes_are_errors() {
        assert!(copy_ns_per_byte(1024, 0, 4096).is_err());
        assert!(copy_ns_per_byte(512, 1024, 4096).is_err());
        assert!(copy_ns_per_byte(4096, 1024, 100).is_err());
        assert!(write_call_ns("/dev/null", 0, 10).is_err());
        assert!(write_call_ns("/dev/null", 64, 0).is_err());
        assert!(ring_local_ns(31).is_err());
        assert!(ring_ns([0, 0], 100).is_err());
        assert!(ring_ns([0, 1], 0).is_err());
        assert!(ring_ns([0, 1 << 16], 100).is_err());
    }

    #[test]
    fn a_path_that_cannot_be_opened_names_itself() {
        let err = write_call_ns("/nonexistent-folder/x", 64, 1).unwrap_err();
        assert!(err.to_string().contains("/nonexistent-folder/x"), "{err}");
    }

    #[test]
    fn copies_writes_and_rings_take_time() {
        // positive and finite on any machine; no timing is compared to a number
        for ns in [
            copy_ns_per_byte(1 << 16, 1024, 1 << 20).unwrap(),
            write_call_ns("/dev/null", 64, 1000).unwrap(),
            ring_local_ns(10_000).unwrap(),
        ] {
            assert!(ns.is_finite() && ns >= 0.0, "{ns}");
        }
    }

    #[test]
    fn a_ring_between_two_cpus_passes_every_item_or_has_no_answer() {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        if cpus >= 2 {
            let ns = ring_ns([0, 1], 100_000).unwrap();
            assert!(ns.is_nan() || ns > 0.0, "{ns}");
        }
    }
}
