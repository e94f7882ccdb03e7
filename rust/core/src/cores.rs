//! How much dearer a cache line is when two CPUs share it, on this machine right now: the same
//! store loop timed alone on one CPU, then on two CPUs over one buffer. On a VM the ratio
//! follows where the host placed the two vCPUs (measured on the 2-vCPU CI kind: 1.04-1.32 in
//! one placement, 3.6-10 in another, docs/capture.md), and every cost that moves lines between
//! a DPDK forwarding lcore and a capture process scales with it. A ping-pong of one line
//! (`round_trip_ns`) times the same while both CPUs are busy, as they are during a capture.

use crate::error::CoreError;
use crate::rng::Rng;
use std::hint::spin_loop;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::Barrier;
use std::thread;
use std::time::{Duration, Instant};

/// Bytes of the shared buffer: larger than one core's L1 and L2 share on the machines we run,
/// so that stores miss to the shared level as the capture ring's and pool's lines do.
const BUFFER_BYTES: usize = 1 << 20;

/// The thread CPU time of the calling thread (`CLOCK_THREAD_CPUTIME_ID`), in ns: a preempted
/// thread's wait does not count, so the ratio is not the machine's load.
pub(crate) fn thread_cpu_ns() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 * 1e9 + ts.tv_nsec as f64
}

/// Pins the calling thread to `cpu`; false when the process may not run there.
pub(crate) fn pin(cpu: usize) -> bool {
    if cpu >= libc::CPU_SETSIZE as usize {
        return false;
    }
    // SAFETY: a zeroed cpu_set_t is a valid empty set, `cpu` is inside it, and
    // sched_setaffinity only reads the set passed by reference.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    }
}

/// Increments `stores` pseudo-random bytes of `buffer` (a load and a plain store each); the
/// CPU ns it took per store.
fn store_loop(buffer: &[AtomicU8], stores: u64, seed: u64) -> f64 {
    let mut rng = Rng(seed);
    let mask = buffer.len() as u64 - 1;
    let start = thread_cpu_ns();
    for _ in 0..stores {
        let byte = &buffer[(rng.next() & mask) as usize];
        byte.store(
            byte.load(Ordering::Relaxed).wrapping_add(1),
            Ordering::Relaxed,
        );
    }
    (thread_cpu_ns() - start) / stores as f64
}

/// Runs `first` on a thread pinned to `cpus[0]` and `second` on one pinned to `cpus[1]`, each
/// given a barrier of two that they first pass together (so the caller's affinity is left as
/// it was); None when the process may not run on one of the CPUs (a failed pin ends both).
pub(crate) fn on_two_cpus<A: Send, B: Send>(
    cpus: [usize; 2],
    first: impl FnOnce(&Barrier) -> A + Send,
    second: impl FnOnce(&Barrier) -> B + Send,
) -> Option<(A, B)> {
    let unpinned = AtomicBool::new(false);
    let step = Barrier::new(2);
    let pinned = |cpu: usize| {
        if !pin(cpu) {
            unpinned.store(true, Ordering::Relaxed);
        }
        step.wait();
        !unpinned.load(Ordering::Relaxed)
    };
    thread::scope(|scope| {
        let theirs = scope.spawn(|| pinned(cpus[1]).then(|| second(&step)));
        let mine = scope.spawn(|| pinned(cpus[0]).then(|| first(&step)));
        let join = "the probe's threads do not panic";
        Some((mine.join().expect(join)?, theirs.join().expect(join)?))
    })
}

/// The error of a probe whose CPUs are not both ones this process may run on.
pub(crate) fn not_allowed(cpus: [usize; 2]) -> CoreError {
    CoreError::Invalid(format!(
        "CPUs {cpus:?} are not both ones this process may run on (sched_setaffinity)"
    ))
}

/// CPU ns per store with both CPUs storing into one buffer over CPU ns per store alone on the
/// first (1.0: sharing costs nothing); `stores` per loop and thread.
pub fn shared_store_slowdown(cpus: [usize; 2], stores: u64) -> Result<f64, CoreError> {
    if stores == 0 || cpus[0] == cpus[1] {
        return Err(CoreError::Invalid(format!(
            "give two different CPUs and at least one store (got CPUs {cpus:?}, {stores} stores)"
        )));
    }
    let buffer: Vec<AtomicU8> = (0..BUFFER_BYTES).map(|_| AtomicU8::new(0)).collect();
    let found = on_two_cpus(
        cpus,
        |step| {
            let alone = store_loop(&buffer, stores, 1);
            step.wait();
            (alone, store_loop(&buffer, stores, 1))
        },
        |step| {
            step.wait(); // the first CPU's lone loop is done
            store_loop(&buffer, stores, 2)
        },
    );
    let ((alone, shared), theirs) = found.ok_or_else(|| not_allowed(cpus))?;
    Ok((shared + theirs) / 2.0 / alone)
}

/// One cache line of its own, so that the ball of the ping-pong shares it with nothing.
#[repr(align(128))]
struct Line(AtomicU64);

/// How long the first CPU waits for the second to answer, over all bursts: on a busy machine
/// the second may not get its CPU (then the probe has no answer rather than a wrong one). A
/// probe takes 0.05-1 ms; the wait spins at real-time priority, so it stays short.
const ANSWER_LIMIT: Duration = Duration::from_millis(20);

/// Spins between two looks at the clock while waiting: reading it costs about as much as a
/// line moving between CPUs, so it is read seldom.
const SPINS_PER_CLOCK: u32 = 1024;

/// Wall ns per round trip of one cache line between the two CPUs (one writes, the other
/// answers), the median of `bursts` bursts of `trips` round trips: a burst in which the
/// host or the kernel took a CPU away is an outlier the median ignores. NaN when the second
/// CPU did not answer within 20 ms in all, or when either side could not run at real-time
/// priority (then busy threads' time slices, not the line, would decide the answer). What the
/// lines of a capture ring and pool cost now, also while both CPUs are busy.
pub fn round_trip_ns(cpus: [usize; 2], bursts: u32, trips: u32) -> Result<f64, CoreError> {
    if bursts == 0 || trips == 0 || cpus[0] == cpus[1] {
        return Err(CoreError::Invalid(format!(
            "give two different CPUs and at least one burst of one round trip (got CPUs \
             {cpus:?}, {bursts} bursts of {trips})"
        )));
    }
    let ball = Line(AtomicU64::new(0));
    let done = AtomicBool::new(false);
    let refused = AtomicBool::new(false);
    let found = on_two_cpus(
        cpus,
        |_| {
            let _done = SetOnDrop(&done); // the other side stops however this one ends
            let granted = first_in_line();
            let median = ping(&ball, bursts, trips);
            median.filter(|_| granted && !refused.load(Ordering::Acquire))
        },
        |_| {
            if !first_in_line() {
                refused.store(true, Ordering::Release);
            }
            pong(&ball, &done)
        },
    );
    let (median, ()) = found.ok_or_else(|| not_allowed(cpus))?;
    Ok(median.unwrap_or(f64::NAN))
}

/// Sets its flag when dropped, also while unwinding from a panic.
struct SetOnDrop<'a>(&'a AtomicBool);

impl Drop for SetOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}

/// Puts the calling thread before every thread of the normal policy on its CPU (SCHED_FIFO,
/// the lowest real-time priority), so that both sides of the ping-pong run at once although
/// busy threads (a forwarding lcore, a capture tool) hold both CPUs; false without the
/// privilege (CAP_SYS_NICE, or a cgroup without real-time time).
pub(crate) fn first_in_line() -> bool {
    let param = libc::sched_param { sched_priority: 1 };
    // SAFETY: sched_setscheduler only reads the parameter passed by reference; pid 0 is the
    // calling thread.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) == 0 }
}

/// The first CPU's side: throws odd values and waits for each to come back one higher; the
/// median ns per round trip of its bursts, None when an answer took too long.
fn ping(ball: &Line, bursts: u32, trips: u32) -> Option<f64> {
    let begun = Instant::now();
    let mut value = 0u64;
    let mut per_trip = Vec::with_capacity(bursts as usize);
    for _ in 0..bursts {
        let start = Instant::now();
        for _ in 0..trips {
            ball.0.store(value + 1, Ordering::Release);
            value += 2;
            let mut spins = 0u32;
            while ball.0.load(Ordering::Acquire) != value {
                spins = spins.wrapping_add(1);
                if spins.is_multiple_of(SPINS_PER_CLOCK) && begun.elapsed() > ANSWER_LIMIT {
                    return None;
                }
                spin_loop();
            }
        }
        per_trip.push(start.elapsed().as_nanos() as f64 / f64::from(trips));
    }
    per_trip.sort_by(f64::total_cmp);
    Some(per_trip[per_trip.len() / 2])
}

/// The second CPU's side: answers each odd value with the next one, until the first is done.
fn pong(ball: &Line, done: &AtomicBool) {
    while !done.load(Ordering::Acquire) {
        let value = ball.0.load(Ordering::Acquire);
        if value % 2 == 1 {
            ball.0.store(value + 1, Ordering::Release);
        }
        spin_loop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn needs_two_cpus_and_stores() {
        assert!(shared_store_slowdown([0, 0], 10).is_err());
        assert!(shared_store_slowdown([0, 1], 0).is_err());
    }

    #[test]
    fn a_cpu_outside_the_set_is_an_error_not_a_hang() {
        assert!(shared_store_slowdown([0, 1 << 16], 10).is_err());
    }

    #[test]
    fn the_callers_affinity_is_left_alone() {
        // SAFETY: sched_getaffinity writes only the set passed by reference.
        let allowed = || unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set);
            libc::CPU_COUNT(&set)
        };
        let before = allowed();
        if before >= 2 {
            shared_store_slowdown([0, 1], 1000).unwrap();
            assert_eq!(allowed(), before);
        }
    }

    #[test]
    fn a_round_trip_needs_two_cpus_and_a_trip() {
        assert!(round_trip_ns([1, 1], 3, 10).is_err());
        assert!(round_trip_ns([0, 1], 0, 10).is_err());
        assert!(round_trip_ns([0, 1], 3, 0).is_err());
        assert!(round_trip_ns([0, 1 << 16], 3, 10).is_err());
    }

    #[test]
    fn a_round_trip_takes_time_or_has_no_answer() {
        let cpus = thread::available_parallelism().map_or(1, |n| n.get());
        if cpus >= 2 {
            // a line that moves between two CPUs: tens of ns at least on any machine, NaN
            // only when the other CPU was not given to the probe for 20 ms, or without the
            // privilege of real-time priority
            let ns = round_trip_ns([0, 1], 9, 100).unwrap();
            assert!(ns.is_nan() || ns > 1.0, "{ns}");
        }
    }

    #[test]
    fn sharing_is_never_free_enough_to_be_far_below_one() {
        let cpus = thread::available_parallelism().map_or(1, |n| n.get());
        if cpus >= 2 {
            // the same loop on the same CPU: only noise can make it much faster
            let ratio = shared_store_slowdown([0, 1], 2_000_000).unwrap();
            assert!(ratio > 0.5, "{ratio}");
        }
    }
}
