//! Any byte string read with `skip_bad`, then merged (`trace merge --skip-bad`, which is also
//! how a capture is converted) to pcapng and to pcap and read back: no panic, and no data
//! lost. Every packet the reader returns must come back with the same timestamp, lengths,
//! link type and bytes, in the same order; the merge may refuse a capture only for what the
//! output format cannot hold (in pcap a timestamp before 1970 or after 2106 or several link
//! types; a caplen above the interface's limit), and must then return an error. pcapng holds
//! any 64-bit time (times are kept modulo 2^64: rust/core/src/trace/mod.rs).
#![no_main]

use std::path::{Path, PathBuf};

use libfuzzer_sys::fuzz_target;
use pcieperf_core::trace::merge::merge;
use pcieperf_core::trace::read::Reader;
use pcieperf_core::trace::write::OutFormat;
use pcieperf_core::trace::Interface;

/// One packet as a reader sees it: timestamp, wire length, link type and captured bytes, and
/// whether its caplen exceeds its interface's limit (the writer refuses such a record).
#[derive(Debug, PartialEq, Eq)]
struct Packet {
    over_limit: bool,
    ts_ns: i64,
    wirelen: u32,
    linktype: u16,
    data: Vec<u8>,
}

/// Every packet of `reader` until its end (Ok) or its first error (Err, packets so far).
fn packets(mut reader: Reader) -> (Vec<Packet>, Vec<Interface>, bool) {
    let mut out = Vec::new();
    let complete = loop {
        match reader.next_record() {
            Ok(Some(r)) => out.push(Packet {
                over_limit: r.caplen > reader.interfaces()[r.iface as usize].caplen_limit(),
                ts_ns: r.ts_ns,
                wirelen: r.wirelen,
                linktype: reader.interfaces()[r.iface as usize].linktype,
                data: reader.data(&r).to_vec(),
            }),
            Ok(None) => break true,
            Err(_) => break false,
        }
    };
    (out, reader.interfaces().to_vec(), complete)
}

/// Whether `format` cannot hold what was read, so the merge must fail.
fn unwritable(format: OutFormat, read: &[Packet], ifaces: &[Interface]) -> bool {
    let pcap = format == OutFormat::Pcap;
    let too_late = |ts: i64| pcap && ts / 1_000_000_000 > i64::from(u32::MAX);
    let mixed = pcap && ifaces.iter().any(|i| i.linktype != ifaces[0].linktype);
    mixed
        || read
            .iter()
            .any(|p| p.over_limit || (pcap && p.ts_ns < 0) || too_late(p.ts_ns))
}

/// Scratch file paths of this process.
fn scratch(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("pcieperf-fuzz-{}-{name}", std::process::id()))
}

/// Merges `input` to `format`, checks the outcome against what was `read`.
fn roundtrip(input: &Path, format: OutFormat, read: &[Packet], ifaces: &[Interface]) {
    let output = scratch(if format == OutFormat::Pcap {
        "out.pcap"
    } else {
        "out.pcapng"
    });
    let result = merge(&[input.to_path_buf()], &output, format, true);
    let must_fail = unwritable(format, read, ifaces);
    match result {
        Err(_) => assert!(must_fail, "merge to {format:?} refused a writable capture"),
        Ok(stats) => {
            assert!(
                !must_fail,
                "merge to {format:?} accepted what it cannot hold"
            );
            assert_eq!(stats.packets, read.len() as u64);
            let back = Reader::open(&output, false).expect("merge output must be readable");
            let (again, _, complete) = packets(back);
            assert!(complete, "merge output must read to its end");
            assert_eq!(again, read, "packets differ after a merge to {format:?}");
        }
    }
    let _ = std::fs::remove_file(output);
}

fuzz_target!(|data: &[u8]| {
    let Ok(reader) = Reader::from_bytes("fuzz", data.to_vec(), true) else {
        return;
    };
    let (read, ifaces, complete) = packets(reader);
    if !complete || ifaces.is_empty() {
        return; // the merge reports the same error; nothing was read to lose
    }
    let input = scratch("in.cap");
    std::fs::write(&input, data).expect("scratch file");
    for format in [OutFormat::PcapNg, OutFormat::Pcap] {
        roundtrip(&input, format, &read, &ifaces);
    }
    let _ = std::fs::remove_file(input);
});
