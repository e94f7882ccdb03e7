//! A pool of scoped threads that works on a list of items (capture files: statistics, scans,
//! first records), results in item order.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Runs `work` on every item on up to `threads` threads (0: one per core); results come back
/// in item order.
pub fn in_parallel<T: Sync, R: Send>(
    items: &[T],
    threads: usize,
    work: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    let threads = if threads == 0 {
        std::thread::available_parallelism().map_or(1, usize::from)
    } else {
        threads
    };
    let next = AtomicUsize::new(0);
    let results: Vec<Mutex<Option<R>>> = items.iter().map(|_| Mutex::new(None)).collect();
    std::thread::scope(|scope| {
        for _ in 0..threads.clamp(1, items.len().max(1)) {
            scope.spawn(|| loop {
                let k = next.fetch_add(1, Ordering::Relaxed);
                let Some(item) = items.get(k) else { break };
                let result = work(item);
                *results[k].lock().expect("no worker panics holding it") = Some(result);
            });
        }
    });
    results
        .into_iter()
        .map(|r| {
            r.into_inner()
                .ok()
                .flatten()
                .expect("every item was worked on")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parallel_results_keep_the_items_order() {
        // 100 items on 4 threads (and on one per core): squares in item order, as a serial map.
        let items: Vec<u64> = (0..100).collect();
        let squares: Vec<u64> = items.iter().map(|i| i * i).collect();
        assert_eq!(in_parallel(&items, 4, |i| i * i), squares);
        assert_eq!(in_parallel(&items, 0, |i| i * i), squares);
        assert!(in_parallel(&[] as &[u64], 3, |i| *i).is_empty());
    }
}
