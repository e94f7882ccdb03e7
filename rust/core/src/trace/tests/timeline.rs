//! Passes over a capture in time order (`Timeline`) against the rule they stream: the windows
//! of a trace in memory (`rate_windows::series`) and the poll batches counted by hand.

use std::path::Path;

use super::super::rate_windows::series;
use super::super::read::ReadOptions;
use super::super::timeline::Timeline;
use super::{pcap, stats_config, temp};

/// A nanosecond pcap of records `(ts_ns, bytes of data)`: wire length data + 4, so a frame of
/// data + 8 bytes with FCS, at least 64.
fn capture(name: &str, records: &[(u32, usize)]) -> (std::path::PathBuf, Vec<u8>) {
    let data = vec![0u8; 2000];
    let listed: Vec<(u32, u32, &[u8])> = records
        .iter()
        .map(|&(ns, len)| (0, ns, &data[..len]))
        .collect();
    let bytes = pcap(false, true, 65535, &listed);
    let path = temp(name);
    std::fs::write(&path, &bytes).unwrap();
    (path, bytes)
}

fn frame(data: usize) -> f64 {
    (data as f64 + 8.0).max(64.0)
}

#[test]
fn windows_follow_the_rule_of_a_trace_in_memory_in_and_out_of_order() {
    // Out of time order, windows of 1000 ns; runs of 3 packets, so the sort spills to disk.
    let records = [
        (2500, 52),
        (0, 996),
        (900, 52),
        (1000, 52),
        (4100, 996),
        (3999, 52),
        (1200, 996),
        (2999, 52),
    ];
    let (path, _) = capture("unsorted.pcap", &records);
    let cost: Vec<f64> = (0..=2000).map(|f| 2.0 * f as f64).collect();
    let ts: Vec<i64> = records.iter().map(|r| i64::from(r.0)).collect();
    let doubled: Vec<f64> = records.iter().map(|r| 2.0 * frame(r.1)).collect();
    let (want_span, want) = series(&ts, &[&doubled], 1000, 100).unwrap();
    let dir = path.parent().unwrap();
    for timeline in [
        Timeline::open_in(&path, ReadOptions::default(), 3, dir).unwrap(),
        Timeline::open(&path, ReadOptions::default()).unwrap(),
    ] {
        assert_eq!(timeline.facts.reads, 2);
        let (span, got, frames) = timeline
            .windows(&stats_config(), std::slice::from_ref(&cost), 1000, 100)
            .unwrap();
        assert_eq!((span, got), (want_span, want.clone()));
        assert_eq!(
            frames as f64,
            records.iter().map(|r| frame(r.1)).sum::<f64>()
        );
    }
}

#[test]
fn a_pipe_is_sorted_as_it_is_read_and_polled_by_slot() {
    // A FIFO cannot be read twice. Polls every 100 ns, bursts of 2: slot 0 holds 3 packets
    // (a call of 2, one of 1), slot 2 one, slot 5 two: 2 calls of 2 and 2 of 1.
    let (_, bytes) = capture(
        "p.pcap",
        &[(520, 60), (0, 60), (10, 60), (99, 60), (250, 60), (501, 60)],
    );
    let fifo = temp("fifo");
    let name = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path and a mode.
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0, "mkfifo");
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::write(fifo, bytes).unwrap())
    };
    let timeline =
        Timeline::open_in(&fifo, ReadOptions::default(), 2, fifo.parent().unwrap()).unwrap();
    writer.join().unwrap();
    assert_eq!(
        (
            timeline.first_ts_ns,
            timeline.last_ts_ns,
            timeline.facts.reads
        ),
        (0, 520, 1)
    );
    assert_eq!(timeline.poll_batches(100, 2).unwrap(), (2, vec![(1, 2)]));
    assert_eq!(timeline.per_interface, vec![6]);
}

#[test]
fn a_frame_beyond_the_costs_and_a_changed_file_are_named() {
    let (path, _) = capture("big.pcap", &[(0, 60), (10, 1600)]);
    let timeline = Timeline::open(&path, ReadOptions::default()).unwrap();
    let err = timeline
        .windows(&stats_config(), &[vec![1.0; 1519]], 1000, 10)
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("a frame of 1608 bytes is larger than the 1518 priced"),
        "{err}"
    );
    capture_again(&path, &[(0, 60)]);
    let err = timeline.poll_batches(100, 32).unwrap_err();
    assert!(
        err.to_string()
            .ends_with("the capture changed while it was read again"),
        "{err}"
    );
}

fn capture_again(path: &Path, records: &[(u32, usize)]) {
    let data = [0u8; 100];
    let listed: Vec<(u32, u32, &[u8])> = records
        .iter()
        .map(|&(ns, len)| (0, ns, &data[..len]))
        .collect();
    std::fs::write(path, pcap(false, true, 65535, &listed)).unwrap();
}
