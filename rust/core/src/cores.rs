//! How much dearer a cache line is when two CPUs share it, on this machine right now: the same
//! store loop timed alone on one CPU, then on two CPUs over one buffer. On a VM the ratio
//! follows where the host placed the two vCPUs (measured on the 2-vCPU CI kind: 1.04-1.32 in
//! one placement, 3.6-10 in another, docs/capture.md), and every cost that moves lines between
//! a DPDK forwarding lcore and a capture process scales with it.

use crate::error::CoreError;
use crate::rng::Rng;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::Barrier;
use std::thread;

/// Bytes of the shared buffer: larger than one core's L1 and L2 share on the machines we run,
/// so that stores miss to the shared level as the capture ring's and pool's lines do.
const BUFFER_BYTES: usize = 1 << 20;

/// The thread CPU time of the calling thread (`CLOCK_THREAD_CPUTIME_ID`), in ns: a preempted
/// thread's wait does not count, so the ratio is not the machine's load.
fn thread_cpu_ns() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 * 1e9 + ts.tv_nsec as f64
}

/// Pins the calling thread to `cpu`; false when the process may not run there.
fn pin(cpu: usize) -> bool {
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

/// CPU ns per store with both CPUs storing into one buffer over CPU ns per store alone on the
/// first (1.0: sharing costs nothing); `stores` per loop and thread.
pub fn shared_store_slowdown(cpus: [usize; 2], stores: u64) -> Result<f64, CoreError> {
    if stores == 0 || cpus[0] == cpus[1] {
        return Err(CoreError::Invalid(format!(
            "give two different CPUs and at least one store (got CPUs {cpus:?}, {stores} stores)"
        )));
    }
    let buffer: Vec<AtomicU8> = (0..BUFFER_BYTES).map(|_| AtomicU8::new(0)).collect();
    let unpinned = AtomicBool::new(false);
    let step = Barrier::new(2);
    // Both threads pin, then meet; a failed pin ends both (neither waits for the other).
    let pinned = |cpu: usize| {
        if !pin(cpu) {
            unpinned.store(true, Ordering::Relaxed);
        }
        step.wait();
        !unpinned.load(Ordering::Relaxed)
    };
    // Both loops run on threads of their own: the caller's affinity is left as it was.
    let (alone, shared, theirs) = thread::scope(|scope| {
        let other = scope.spawn(|| {
            pinned(cpus[1]).then(|| {
                step.wait(); // the first CPU's lone loop is done
                store_loop(&buffer, stores, 2)
            })
        });
        let mine = scope.spawn(|| {
            pinned(cpus[0]).then(|| {
                let alone = store_loop(&buffer, stores, 1);
                step.wait();
                (alone, store_loop(&buffer, stores, 1))
            })
        });
        let join = "the probe's threads do not panic";
        let (mine, theirs) = (mine.join().expect(join), other.join().expect(join));
        (mine.map(|m| m.0), mine.map(|m| m.1), theirs)
    });
    match (alone, shared, theirs) {
        (Some(alone), Some(shared), Some(theirs)) => Ok((shared + theirs) / 2.0 / alone),
        _ => Err(CoreError::Invalid(format!(
            "CPUs {cpus:?} are not both ones this process may run on (sched_setaffinity)"
        ))),
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
    fn sharing_is_never_free_enough_to_be_far_below_one() {
        let cpus = thread::available_parallelism().map_or(1, |n| n.get());
        if cpus >= 2 {
            // the same loop on the same CPU: only noise can make it much faster
            let ratio = shared_store_slowdown([0, 1], 2_000_000).unwrap();
            assert!(ratio > 0.5, "{ratio}");
        }
    }
}
