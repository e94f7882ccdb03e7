//! The address stream's tests, and the small port other modules test with.

use super::arrivals::{size_of, UNDECIDED};
use super::config::Iova;
use super::*;
use crate::iommu::ddio::LlcShape;
use crate::iommu::iotlb::ENTRIES_PER_TABLE;

/// A small port for tests: one port and queue, rings of 128, a pool of 4096 packed mbufs on
/// 4 KiB pages, 60 B packets arriving back to back.
pub(crate) fn test_config() -> PortConfig {
    PortConfig {
        ports: 1,
        queues: 1,
        cross_port: false,
        rxd: 128,
        txd: 128,
        rx_desc_bytes: 16,
        tx_desc_bytes: 16,
        rx_free_thresh: 32,
        tx_free_thresh: 32,
        rs_thresh: 32,
        burst: 32,
        pool: 4096,
        cache: 256,
        elt_bytes: 2368,
        data_offset: 320,
        page_bytes: 4096,
        layout: Layout::Packed,
        iova: Iova::Va,
        host_pages: 1 << 20,
        rx_backlog: 0,
        tx_backlog: 0,
        drop_per_fwd: 0.0,
        poll_batch: 32,
        llc: None,
        sizes: vec![60],
        weights: vec![1.0],
        ns_per_packet: 0.0,
        wire_shares: vec![1.0],
        seed: 1,
    }
}

fn config() -> PortConfig {
    test_config()
}

fn poll_classes(stream: &mut PortStream) -> Vec<usize> {
    stream.next_poll();
    stream.pending.iter().map(|t| t.class).collect()
}

fn count(classes: &[usize], class: usize) -> usize {
    classes.iter().filter(|&&c| c == class).count()
}

#[test]
fn ring_runs_split_where_the_ring_wraps() {
    // 16 slots from 120 of 128: 120..128, then 0..8; a run that ends at the ring's end or
    // before it leaves the second run empty.
    assert_eq!(ring_runs(120, 16, 128), [120..128, 0..8]);
    assert_eq!(ring_runs(96, 32, 128), [96..128, 0..0]);
    assert_eq!(ring_runs(0, 128, 128), [0..128, 0..0]);
    assert_eq!(ring_runs(5, 0, 128), [5..5, 0..0]);
    assert_eq!((ring_add(120, 16, 128), ring_add(96, 32, 128)), (8, 0));
    assert_eq!(ring_add(3, 4, 128), 7);
}

#[test]
fn a_burst_of_32_makes_the_expected_transactions() {
    // 32 packets, 16 B descriptors (4 a line): 8 Rx descriptor reads and write-backs,
    // 32 packet writes, 8 Tx descriptor reads, 32 packet reads, 1 RS write-back.
    let mut s = PortStream::new(config()).unwrap();
    let classes = poll_classes(&mut s);
    assert_eq!(count(&classes, RX_DESC_READ), 8);
    assert_eq!(count(&classes, RX_DESC_WRITEBACK), 8);
    assert_eq!(count(&classes, packet_write_class(0)), 32);
    assert_eq!(count(&classes, TX_DESC_READ), 8);
    assert_eq!(count(&classes, packet_read_class(0)), 32);
    assert_eq!(count(&classes, TX_DESC_WRITEBACK), 1);
}

#[test]
fn the_transactions_counted_per_run_are_those_made() {
    // Counted arithmetically per run of slots (and per fetch/write-back branch), checked
    // against the transactions the polls hand out, one by one: odd poll sizes, rings that
    // wrap mid-line, a Tx backlog and drops.
    for (poll_batch, tx_backlog, drop_per_fwd) in [(32, 0, 0.0), (7, 0, 0.0), (5, 40, 0.5)] {
        let mut s = PortStream::new(PortConfig {
            poll_batch,
            tx_backlog,
            drop_per_fwd,
            ..config()
        })
        .unwrap();
        let made: usize = (0..500).map(|_| poll_classes(&mut s).len()).sum();
        assert_eq!(s.transactions(), made as u64, "{poll_batch}");
    }
}

#[test]
fn polls_of_one_packet_fetch_a_tx_descriptor_line_per_packet() {
    // Each tx_burst of 1 moves the tail by one descriptor: the NIC re-reads the line.
    let mut s = PortStream::new(PortConfig {
        poll_batch: 1,
        ..config()
    })
    .unwrap();
    let classes: Vec<usize> = (0..64).flat_map(|_| poll_classes(&mut s)).collect();
    assert_eq!(count(&classes, TX_DESC_READ), 64);
    assert_eq!(count(&classes, RX_DESC_READ), 16); // Rx prefetch stays per line
}

#[test]
fn buffers_in_circulation_are_the_rx_ring_plus_what_the_tx_ring_holds() {
    // rxd + txd - 1 - (up to rs_thresh just freed) distinct buffers cycle; nothing more.
    let mut s = PortStream::new(config()).unwrap();
    let mut seen = std::collections::HashSet::new();
    for _ in 0..2_000 {
        s.next_poll();
    }
    for _ in 0..200 {
        s.next_poll();
        for t in &s.pending {
            if t.class == packet_write_class(0) {
                seen.insert(t.addr);
            }
        }
    }
    assert!(
        (128 + 64..=128 + 128).contains(&seen.len()),
        "{}",
        seen.len()
    );
}

/// Packets between each buffer's Rx write and its Tx read, in steady state.
fn tx_distance(cfg: PortConfig) -> f64 {
    let mut s = PortStream::new(cfg).unwrap();
    let (mut written, mut gaps) = (std::collections::HashMap::new(), Vec::new());
    let mut rx = 0u64;
    for t in s.by_ref().take(400_000) {
        if t.class == packet_write_class(0) {
            written.insert(t.addr, rx);
            rx += 1;
        } else if t.class == packet_read_class(0) && rx > 50_000 {
            gaps.push((rx - written[&t.addr]) as f64);
        }
    }
    gaps.iter().sum::<f64>() / gaps.len() as f64
}

#[test]
fn a_tx_backlog_delays_each_packet_read_by_that_many_packets() {
    // No backlog: read within the poll that received it (0..31 packets later, mean ~16).
    assert!(tx_distance(config()) < 32.0);
    // tx_backlog 63 (the most a 128-entry ring allows): ~63 packets more.
    let full = PortConfig {
        tx_backlog: 63,
        ..config()
    };
    assert_eq!(full.max_tx_backlog(), 63); // 128 - 1 - 32 - 32
    let d = tx_distance(full);
    assert!((63.0..63.0 + 32.0).contains(&d), "{d}");
}

#[test]
fn an_rx_backlog_delays_the_poll_of_each_packet() {
    let full = PortConfig {
        rx_backlog: 64,
        ..config()
    };
    assert_eq!(full.max_rx_backlog(), 64); // 128 - 32 - 32
    let d = tx_distance(full);
    assert!((64.0..64.0 + 32.0).contains(&d), "{d}");
}

#[test]
fn drops_at_a_full_tx_ring_leave_the_forwarded_share() {
    // One drop per forwarded packet: half of what is received is forwarded.
    let mut s = PortStream::new(PortConfig {
        drop_per_fwd: 1.0,
        ..config()
    })
    .unwrap();
    s.by_ref().take(100_000).for_each(drop);
    let share = s.forwarded() as f64 / s.packets() as f64;
    assert!((share - 0.5).abs() < 0.01, "{share}");
}

#[test]
fn page_bound_objects_never_cross_a_page() {
    let cfg = PortConfig {
        layout: Layout::PageBound,
        sizes: vec![1514],
        ..config()
    };
    let mut s = PortStream::new(cfg).unwrap();
    for t in s.by_ref().take(100_000) {
        if t.class == packet_write_class(0) {
            assert_eq!(t.addr / 4096, (t.addr + 1513) / 4096);
        }
    }
}

fn tables_touched(iova: Iova) -> usize {
    let cfg = PortConfig {
        layout: Layout::PageBound,
        iova,
        ..config()
    };
    let s = PortStream::new(cfg).unwrap();
    let tables: std::collections::HashSet<u64> = s
        .take(200_000)
        .map(|t| t.addr / 4096 / ENTRIES_PER_TABLE)
        .collect();
    tables.len()
}

#[test]
fn iova_as_va_keeps_pages_in_few_tables_and_pa_scatters_them() {
    // ~230 mbufs cycle (rxd 128 + txd 128 less what the Tx ring has freed), one page each,
    // all among the pool's first ~600 objects: 2 tables of 512 pages when IOVA-contiguous.
    // Drawn from 2^20 frames (2048 tables) nearly every page has a table of its own.
    assert!(tables_touched(Iova::Va) <= 3);
    assert!(tables_touched(Iova::Pa) > 150);
}

#[test]
fn the_llc_loses_page_aligned_buffers_that_outgrow_one_offsets_sets() {
    // 2 slices of 2048 sets, 2 ways: a line offset of 4 KiB pages reaches 2 x 32 sets = 128
    // lines. ~230 buffers cycle (rxd 128): by a buffer's next Rx write its line is long
    // gone (an allocation). Its Tx read comes < 32 packets after its write: lost only if
    // two of those ~16 writes land in its set (1 in 64): a few per cent.
    let cfg = PortConfig {
        layout: Layout::PageBound,
        llc: Some(LlcShape {
            sets_per_slice: 2048,
            slices: 2,
            ddio_ways: 2,
        }),
        ..config()
    };
    let mut s = PortStream::new(cfg).unwrap();
    s.by_ref().take(100_000).for_each(drop);
    let d = s.ddio().unwrap();
    assert!(
        d.read_misses * 20 < d.reads,
        "{} of {}",
        d.read_misses,
        d.reads
    );
    // Nearly every packet write allocates (the descriptor lines, rewritten every lap of a
    // 2 KiB ring, stay).
    assert!(d.allocations * 10 > s.packets() * 9, "{}", d.allocations);
}

#[test]
fn sizes_are_drawn_in_proportion_to_their_weights() {
    let cfg = PortConfig {
        sizes: vec![60, 590, 1514],
        weights: vec![7.0, 4.0, 1.0],
        wire_shares: vec![1.0; 3],
        ..config()
    };
    let s = PortStream::new(cfg).unwrap();
    let writes: Vec<usize> = s
        .take(400_000)
        .filter(|t| (4..10).contains(&t.class) && t.class % 2 == 0)
        .map(|t| t.class)
        .collect();
    let share = writes
        .iter()
        .filter(|&&c| c == packet_write_class(0))
        .count() as f64
        / writes.len() as f64;
    assert!((share - 7.0 / 12.0).abs() < 0.01, "{share}");
}

#[test]
fn sizes_are_drawn_as_the_rule_on_u_draws_them() {
    // The integer draw (a look-up of k's top bits, else k against ceil(c x 2^53)) picks
    // what the rule on u = k / 2^53 picks: the first size whose cumulative weight c
    // exceeds u. Same random k on both sides, and every threshold and its neighbours
    // (a weight of 0 repeats one; 1e-18 moves one by less than a k).
    for weights in [
        vec![7.0, 4.0, 1.0],
        vec![1.0, 1e-18, 3.0, 0.0, 2.5],
        vec![0.58333, 0.33333, 0.08333],
    ] {
        let n = weights.len();
        let cfg = PortConfig {
            sizes: vec![60; n],
            weights: weights.clone(),
            wire_shares: vec![1.0; n],
            ..config()
        };
        let total: f64 = weights.iter().sum();
        let cumulative: Vec<f64> = weights
            .iter()
            .scan(0.0, |acc, w| {
                *acc += w / total;
                Some(*acc)
            })
            .collect();
        let rule = |k: u64| {
            let u = k as f64 / (1u64 << 53) as f64;
            cumulative.iter().filter(|&&c| u >= c).count().min(n - 1)
        };
        let mut arrivals = Arrivals::new(&cfg, Rng(3));
        let mut rng = Rng(3);
        for _ in 0..100_000 {
            let k = rng.next() >> 11;
            assert_eq!(arrivals.draw_size(), rule(k), "{weights:?} {k}");
        }
        for &t in &arrivals.thresholds {
            for k in [t.saturating_sub(1), t, t + 1]
                .into_iter()
                .filter(|&k| k >> 53 == 0)
            {
                assert_eq!(size_of(&arrivals.thresholds, k), rule(k), "{weights:?} {k}");
                let decided = arrivals.decided[(k >> 45) as usize];
                assert!(decided == UNDECIDED || usize::from(decided) == rule(k));
            }
        }
        // Nearly every range of k is decided by its top bits (one per threshold is not).
        let undecided = arrivals.decided.iter().filter(|&&d| d == UNDECIDED).count();
        assert!(undecided < n, "{undecided}");
    }
}

#[test]
fn each_packet_arrives_its_own_wire_time_after_the_one_before() {
    // 60 B and 1514 B frames at 10 ns mean spacing, wire shares 0.5 and 1.5: a packet's
    // write may start (not_before) its own share of 10 ns after the previous packet's.
    let cfg = PortConfig {
        sizes: vec![60, 1514],
        weights: vec![1.0, 1.0],
        wire_shares: vec![0.5, 1.5],
        ns_per_packet: 10.0,
        ..config()
    };
    let s = PortStream::new(cfg).unwrap();
    let writes: Vec<Txn> = s
        .take(40_000)
        .filter(|t| t.class == packet_write_class(0) || t.class == packet_write_class(1))
        .collect();
    let mut previous = 0.0;
    for t in &writes {
        let share = if t.class == packet_write_class(0) {
            0.5
        } else {
            1.5
        };
        assert!((t.not_before - previous - 10.0 * share).abs() < 1e-6);
        previous = t.not_before;
    }
    // Equal weights: the mean spacing is the mean share, 1.0 x 10 ns.
    let mean = previous / writes.len() as f64;
    assert!((mean - 10.0).abs() < 0.2, "{mean}");
}

#[test]
fn impossible_setups_are_rejected() {
    for cfg in [
        PortConfig {
            pool: 300,
            ..config()
        },
        PortConfig {
            tx_backlog: 64,
            ..config()
        },
        PortConfig {
            poll_batch: 33,
            ..config()
        },
        PortConfig {
            iova: Iova::Pa,
            host_pages: 100,
            ..config()
        },
    ] {
        assert!(PortStream::new(cfg).is_err());
    }
}
