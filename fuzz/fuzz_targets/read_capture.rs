//! Any byte string through the capture reader, strict and with `skip_bad`: it must return
//! records or a one-line error, never panic, loop forever or read out of bounds. The records
//! read then go through the statistics (any times, lengths and interfaces), which must not
//! panic or overflow either. Read into shared buffers, with runs of records taken at once
//! (`take_as_is`, what `trace convert` does), the same records must come out.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pcieperf_core::trace::read::{ReadOptions, Reader};
use pcieperf_core::trace::stats::{columns_stats, StatsConfig, DISTINCT_GAP_LIMIT};

/// The configuration `trace stats` uses (src/pcieperf/trace.py), with a tiny distinct-gap
/// limit so that the bucketed gap counts are exercised too.
fn config() -> StatsConfig {
    StatsConfig {
        windows_ns: vec![1, 1_000_000, 1_000_000_000],
        eth_gbps: 40.0,
        overhead_bytes: 20,
        fcs_bytes: 4,
        min_frame_bytes: 64,
        ethernet_header_bytes: 14,
        link_header_bytes: vec![(1, 14), (113, 16), (276, 20), (101, 0), (228, 0), (229, 0)],
        size_bins: vec![0, 64, 65, 128, 256, 512, 1024, 1519],
        percentiles: vec![0.0, 50.0, 99.0, 100.0],
        distinct_gap_limit: DISTINCT_GAP_LIMIT.min(2),
    }
}

/// (time, bytes) of every record, one `next_record` at a time, or with runs taken at once from
/// one-page shared buffers between them.
fn records_of(data: &[u8], shared: bool) -> Vec<(i64, Vec<u8>)> {
    let options = ReadOptions {
        chunk: 4096,
        ..ReadOptions::default()
    };
    let Ok(mut reader) = Reader::from_bytes_with("fuzz", data.to_vec(), options) else {
        return Vec::new();
    };
    if shared {
        reader.share_buffers(4096);
    }
    let mut out = Vec::new();
    loop {
        while let Some(run) = shared.then(|| reader.take_as_is()).flatten() {
            let mut bytes = &run.shared.bytes()[run.bytes.clone()];
            for _ in 0..run.packets {
                let field =
                    |k: usize| u32::from_le_bytes(bytes[4 * k..4 * k + 4].try_into().unwrap());
                let ts = i64::from(field(0)) * 1_000_000_000 + i64::from(field(1));
                let end = 16 + field(2) as usize;
                out.push((ts, bytes[16..end].to_vec()));
                bytes = &bytes[end..];
            }
            assert!(bytes.is_empty(), "a run holds whole records only");
        }
        match reader.next_record() {
            Ok(Some(record)) => out.push((record.ts_ns, reader.data(&record).to_vec())),
            _ => return out,
        }
    }
}

fuzz_target!(|data: &[u8]| {
    assert_eq!(records_of(data, true), records_of(data, false));
    // Strict, skipping damage, and read ahead on a thread (the block swap must give the same
    // bytes as the plain buffer).
    for (skip_bad, ahead) in [(false, false), (true, false), (false, true)] {
        let Ok(mut reader) = Reader::from_bytes("fuzz", data.to_vec(), skip_bad) else {
            continue;
        };
        if ahead {
            reader.read_ahead();
        }
        let mut records = Vec::new();
        while let Ok(Some(record)) = reader.next_record() {
            assert_eq!(reader.data(&record).len(), record.caplen as usize);
            records.push(record);
            assert!(records.len() <= data.len(), "more records than bytes");
        }
        let ts: Vec<i64> = records.iter().map(|r| r.ts_ns).collect();
        let caplen: Vec<u32> = records.iter().map(|r| r.caplen).collect();
        let wirelen: Vec<u32> = records.iter().map(|r| r.wirelen).collect();
        let iface: Vec<u32> = records.iter().map(|r| r.iface).collect();
        let summary = columns_stats(
            &ts,
            &caplen,
            &wirelen,
            &iface,
            reader.interfaces(),
            &config(),
        )
        .expect("records name interfaces the reader defined");
        assert_eq!(summary.counted.totals.packets, records.len() as u64);
    }
});
