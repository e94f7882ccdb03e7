//! Hand-built captures (byte layouts from draft-ietf-opsawg-pcap / -pcapng) through the reader,
//! the writer and the merge.

use std::path::{Path, PathBuf};

use std::io::Write;

use super::archive::files::{file_partial, files_partial_in};
use super::archive::Partial;
use super::merge::{convert, merge, merge_with, MergeOptions};
use super::read::{ReadOptions, Reader, Record};
use super::stats::{
    columns_stats, file_stats, read_unsorted_in, resolution_ns, Counted, FileStats, StatsConfig,
    Summary, DISTINCT_GAP_LIMIT,
};
use super::synth::{fill_udp_frame, synthesize};
use super::write::{OutFormat, Writer};
use super::Interface;
use crate::CoreError;

mod shared_buffers;
mod timeline;

fn u16b(v: u16, be: bool) -> [u8; 2] {
    if be {
        v.to_be_bytes()
    } else {
        v.to_le_bytes()
    }
}

fn u32b(v: u32, be: bool) -> [u8; 4] {
    if be {
        v.to_be_bytes()
    } else {
        v.to_le_bytes()
    }
}

/// A pcap file: header with `magic` written in the given byte order, then (sec, frac, data).
fn pcap(be: bool, nanos: bool, snaplen: u32, records: &[(u32, u32, &[u8])]) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend(u32b(if nanos { 0xA1B2_3C4D } else { 0xA1B2_C3D4 }, be));
    f.extend(u16b(2, be));
    f.extend(u16b(4, be));
    f.extend([0; 8]);
    f.extend(u32b(snaplen, be));
    f.extend(u32b(1, be));
    for &(sec, frac, data) in records {
        f.extend(u32b(sec, be));
        f.extend(u32b(frac, be));
        f.extend(u32b(data.len() as u32, be));
        f.extend(u32b(data.len() as u32 + 4, be));
        f.extend(data);
    }
    f
}

fn block(block_type: u32, body: &[u8], be: bool) -> Vec<u8> {
    let len = 12 + body.len() as u32;
    let mut b = Vec::new();
    b.extend(u32b(block_type, be));
    b.extend(u32b(len, be));
    b.extend(body);
    b.extend(u32b(len, be));
    b
}

fn shb(be: bool) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend(u32b(0x1A2B_3C4D, be));
    body.extend(u16b(1, be));
    body.extend(u16b(0, be));
    body.extend([0xFF; 8]);
    block(0x0A0D_0D0A, &body, be)
}

/// IDB with an optional if_tsresol (code 9) and if_tsoffset (code 14) option.
fn idb(be: bool, snaplen: u32, tsresol: Option<u8>, tsoffset: Option<i64>) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend(u16b(1, be));
    body.extend(u16b(0, be));
    body.extend(u32b(snaplen, be));
    if let Some(r) = tsresol {
        body.extend(u16b(9, be));
        body.extend(u16b(1, be));
        body.extend([r, 0, 0, 0]);
    }
    if let Some(o) = tsoffset {
        body.extend(u16b(14, be));
        body.extend(u16b(8, be));
        body.extend(if be { o.to_be_bytes() } else { o.to_le_bytes() });
    }
    body.extend([0; 4]);
    block(1, &body, be)
}

fn epb(be: bool, iface: u32, ts: u64, data: &[u8], wirelen: u32) -> Vec<u8> {
    epb_with(be, iface, ts, data, wirelen, None)
}

/// An EPB of 60 bytes on interface 0 with an `epb_flags` option (pcapng §4.3.1).
fn epb_flags(be: bool, ts: u64, flags: u32) -> Vec<u8> {
    epb_with(be, 0, ts, &[0; 60], 60, Some(flags))
}

fn epb_with(
    be: bool,
    iface: u32,
    ts: u64,
    data: &[u8],
    wirelen: u32,
    flags: Option<u32>,
) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend(u32b(iface, be));
    body.extend(u32b((ts >> 32) as u32, be));
    body.extend(u32b(ts as u32, be));
    body.extend(u32b(data.len() as u32, be));
    body.extend(u32b(wirelen, be));
    body.extend(data);
    body.resize(body.len().next_multiple_of(4), 0);
    if let Some(flags) = flags {
        // epb_flags (code 2, 4 bytes), then opt_endofopt.
        body.extend(u16b(2, be));
        body.extend(u16b(4, be));
        body.extend(u32b(flags, be));
        body.extend([0; 4]);
    }
    block(6, &body, be)
}

/// Every record of `bytes` and the reader after them, read with the default options but
/// `skip_bad`; the error as text.
fn read_all(bytes: Vec<u8>, skip_bad: bool) -> Result<(Vec<Record>, Reader), String> {
    let options = ReadOptions {
        skip_bad,
        ..ReadOptions::default()
    };
    read_with(bytes, options)
}

/// Every record of `bytes` and the reader after them, read with `options`; the error as text.
fn read_with(bytes: Vec<u8>, options: ReadOptions) -> Result<(Vec<Record>, Reader), String> {
    let mut reader = Reader::from_bytes_with("t.cap", bytes, options).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    while let Some(r) = reader.next_record().map_err(|e| e.to_string())? {
        out.push(r);
    }
    Ok((out, reader))
}

const STRICT: ReadOptions = ReadOptions {
    skip_bad: false,
    strict: true,
    chunk: 4096,
};

/// The captured bytes of every record (a record's bytes are there until the next is read).
fn payloads(bytes: Vec<u8>) -> Vec<Vec<u8>> {
    let mut reader = Reader::from_bytes("t.cap", bytes, false).unwrap();
    let mut out = Vec::new();
    while let Some(r) = reader.next_record().unwrap() {
        out.push(reader.data(&r).to_vec());
    }
    out
}

/// Like `payloads`, passing over damage.
fn payloads_skipping(bytes: Vec<u8>) -> Vec<Vec<u8>> {
    let mut reader = Reader::from_bytes("t.cap", bytes, true).unwrap();
    let mut out = Vec::new();
    while let Some(r) = reader.next_record().unwrap() {
        out.push(reader.data(&r).to_vec());
    }
    assert_eq!(reader.skipped(), 1);
    out
}

fn read_err(bytes: Vec<u8>) -> String {
    match read_with(bytes, STRICT) {
        Err(e) => e,
        Ok((recs, _)) => panic!("expected an error, read {} records", recs.len()),
    }
}

/// A pcap record with explicit lengths: `caplen` bytes of `fill`, wire length `wirelen`.
fn pcap_record(sec: u32, caplen: u32, wirelen: u32, fill: u8) -> Vec<u8> {
    let mut r = Vec::new();
    for v in [sec, 0, caplen, wirelen] {
        r.extend(v.to_le_bytes());
    }
    r.extend(vec![fill; caplen as usize]);
    r
}

/// A folder of its own for each call, the file keeping its name (some tests read it back):
/// tests run on parallel threads of one process and several reuse a name (`gaps.pcap`), so a
/// shared folder let one test overwrite or remove another's file. The folders live in the
/// workspace's build folder (`target/test-tmp`, removed with it), not in /tmp, where each run
/// left some 250 behind.
fn temp(name: &str) -> PathBuf {
    static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let root = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../target/test-tmp"
    ));
    let dir = root.join(format!("pcieperf-trace-{}-{call}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

#[test]
fn pcap_both_byte_orders_and_resolutions() {
    for be in [false, true] {
        // µs magic: 7 s + 250 µs = 7_000_250_000 ns; ns magic: 7 s + 250 ns.
        let f = pcap(be, false, 128, &[(7, 250, &[1, 2, 3])]);
        let (recs, _) = read_all(f.clone(), false).unwrap();
        assert_eq!(recs[0].ts_ns, 7_000_250_000);
        assert_eq!(
            (recs[0].caplen, recs[0].wirelen, recs[0].data_offset),
            (3, 7, 40)
        );
        assert_eq!(payloads(f), vec![vec![1, 2, 3]]);
        let (recs, _) = read_all(pcap(be, true, 128, &[(7, 250, &[1])]), false).unwrap();
        assert_eq!(recs[0].ts_ns, 7_000_000_250);
    }
}

#[test]
fn pcapng_tsresol_and_tsoffset() {
    for be in [false, true] {
        let mut f = shb(be);
        // if_tsresol 0x8A = 2^-10 s units; 3 * 1024 + 512 units = 3.5 s; if_tsoffset +100 s.
        f.extend(idb(be, 0, Some(0x8A), Some(100)));
        f.extend(idb(be, 64, Some(9), None));
        f.extend(epb(be, 0, 3 * 1024 + 512, &[9; 5], 60));
        f.extend(epb(be, 1, 42, &[8; 4], 4));
        let (recs, reader) = read_all(f.clone(), false).unwrap();
        assert_eq!(recs[0].ts_ns, 103_500_000_000);
        assert_eq!((recs[0].caplen, recs[0].wirelen, recs[0].iface), (5, 60, 0));
        assert_eq!(recs[1].ts_ns, 42);
        assert_eq!(payloads(f)[0], vec![9; 5]);
        assert_eq!(reader.interfaces().len(), 2);
    }
}

#[test]
fn sections_of_both_byte_orders_number_interfaces_globally() {
    let mut f = shb(false);
    f.extend(idb(false, 0, None, None));
    f.extend(shb(true));
    f.extend(idb(true, 0, None, None));
    f.extend(epb(true, 0, 5, &[1], 1));
    let (recs, reader) = read_all(f, false).unwrap();
    assert_eq!(recs[0].iface, 1);
    assert_eq!(recs[0].ts_ns, 5_000); // default resolution: µs (pcapng §4.2)
    assert_eq!(reader.interfaces()[1].section, 1);
}

#[test]
fn bad_files_name_the_offset_and_the_problem() {
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (
            vec![1, 2, 3, 4, 5],
            "t.cap: byte 0: not a pcap or pcapng file: magic 0x04030201",
        ),
        (
            pcap(false, false, 128, &[])[..20].to_vec(),
            "truncated file header: 20 of 24",
        ),
        (
            pcap(false, false, 128, &[(0, 0, &[0; 8])])[..30].to_vec(),
            "t.cap: byte 24: truncated record header: 6 of 16 bytes",
        ),
        (
            pcap(false, false, 128, &[(0, 0, &[0; 8])])[..44].to_vec(),
            "t.cap: byte 24: truncated record: caplen 8, 4 bytes left",
        ),
        (
            {
                let mut f = pcap(false, false, 0, &[]);
                f.extend(u32b(0, false));
                f.extend(u32b(0, false));
                f.extend(u32b(300_000, false));
                f.extend(u32b(300_000, false));
                f
            },
            "t.cap: byte 24: caplen 300000 exceeds the 262144-byte maximum",
        ),
        (
            {
                let mut f = pcap(false, false, 64, &[]);
                f[20..24].copy_from_slice(&30u32.to_le_bytes());
                f
            },
            "t.cap: byte 20: unknown link type 30",
        ),
    ];
    for (bytes, expected) in cases {
        let err = read_err(bytes);
        assert!(err.contains(expected), "{err:?} lacks {expected:?}");
    }
}

#[test]
fn block_length_mismatch_is_reported_at_the_block() {
    let mut f = shb(false);
    let start = f.len();
    let mut b = idb(false, 0, None, None);
    let n = b.len();
    b[n - 4..].copy_from_slice(&(n as u32 + 4).to_le_bytes());
    f.extend(b);
    let err = read_err(f);
    assert_eq!(
        err,
        format!(
            "t.cap: byte {start}: block length mismatch: {n} at the start, {} at the end",
            n + 4
        )
    );
}

#[test]
fn skip_bad_steps_over_a_damaged_record() {
    // Record 2 of 3 claims a caplen of 300 000, above libpcap's 262 144 maximum: the reader
    // resynchronises on record 3, so 1 and 3 are kept. A 5-byte tail (a record header cut
    // short) is a capture cut short, not a skip.
    let mut f = pcap(false, false, 8, &[(1, 0, &[1; 8])]);
    let mut bad = pcap_record(2, 12, 12, 2);
    bad[8..12].copy_from_slice(&300_000u32.to_le_bytes());
    f.extend(bad);
    f.extend(pcap(false, false, 8, &[(3, 0, &[3; 8])])[24..].to_vec());
    f.extend([0xEE; 5]);
    let (recs, reader) = read_all(f, true).unwrap();
    let secs: Vec<i64> = recs.iter().map(|r| r.ts_ns / 1_000_000_000).collect();
    assert_eq!(secs, vec![1, 3]);
    assert_eq!(reader.skipped(), 1);
    let cut = reader.cut_short().expect("the 5-byte tail").to_string();
    assert_eq!(
        cut,
        "t.cap: byte 100: truncated record header: 5 of 16 bytes"
    );
}

#[test]
fn skip_bad_finds_the_first_record_after_garbage_before_it() {
    // 40 bytes of 0xFF right after the file header, then 20 intact records: with no time read
    // yet, the resync trusts a record whose successor is a record within a day of it.
    let data: Vec<Vec<u8>> = (0..20u8).map(|i| vec![i; 30 + usize::from(i)]).collect();
    let records: Vec<(u32, u32, &[u8])> = data
        .iter()
        .enumerate()
        .map(|(i, d)| (1_700_000_000 + i as u32, 500, &d[..]))
        .collect();
    let good = pcap(false, false, 0, &records);
    let mut f = good[..24].to_vec();
    f.extend([0xFF; 40]);
    f.extend(&good[24..]);
    assert_eq!(payloads_skipping(f), data);
}

#[test]
fn records_beyond_the_snaplen_and_below_their_caplen_are_read_and_counted() {
    // snaplen 8: a 12-byte record exceeds it (libpcap and Wireshark read it whole); a record of
    // caplen 6 with wire length 4 has a wire length below its caplen; a zero-length record
    // (caplen 0, wire length 0) is a record like any other.
    let mut f = pcap(false, false, 8, &[]);
    f.extend(pcap_record(1, 12, 12, 0xA1));
    f.extend(pcap_record(2, 6, 4, 0xA2));
    f.extend(pcap_record(3, 0, 0, 0));
    let (recs, reader) = read_all(f, false).unwrap();
    let lens: Vec<(u32, u32)> = recs.iter().map(|r| (r.caplen, r.wirelen)).collect();
    assert_eq!(lens, vec![(12, 12), (6, 4), (0, 0)]);
    assert_eq!(reader.quirks().snaplen_exceeded, 1);
    assert_eq!(reader.quirks().wirelen_below_caplen, 1);
    assert!(reader.cut_short().is_none());
}

#[test]
fn caplen_limits_follow_libpcaps_per_link_type_maximum() {
    // max_snaplen_for_dlt (libpcap pcap-common.c): 262144 for Ethernet, 128 MiB for D-Bus (231).
    let mut f = pcap(false, false, 0, &[]);
    f.extend(pcap_record(1, 262_145, 262_145, 7));
    assert!(read_err(f.clone()).contains("caplen 262145 exceeds the 262144-byte maximum"));
    f[20..24].copy_from_slice(&231u32.to_le_bytes());
    let (recs, _) = read_all(f, false).unwrap();
    assert_eq!(recs[0].caplen, 262_145);
}

#[test]
fn a_capture_cut_short_ends_the_reading_unless_strict() {
    // Two 8-byte records, the second cut after 3 of its data bytes.
    let whole = pcap(false, false, 64, &[(1, 0, &[1; 8]), (2, 0, &[2; 8])]);
    let cut = whole[..whole.len() - 5].to_vec();
    let (recs, reader) = read_all(cut.clone(), false).unwrap();
    assert_eq!(recs.len(), 1);
    let why = reader.cut_short().unwrap().to_string();
    assert_eq!(
        why,
        "t.cap: byte 48: truncated record: caplen 8, 3 bytes left"
    );
    assert_eq!(read_err(cut), why);
    // pcapng: a block cut inside its body.
    let mut f = shb(false);
    f.extend(idb(false, 0, None, None));
    f.extend(epb(false, 0, 1, &[5; 8], 8));
    let whole_len = f.len();
    f.extend(epb(false, 0, 2, &[6; 8], 8));
    f.truncate(f.len() - 6);
    let (recs, reader) = read_all(f, false).unwrap();
    assert_eq!(recs.len(), 1);
    assert_eq!(
        reader.cut_short().unwrap().to_string(),
        format!("t.cap: byte {whole_len}: truncated block: length 40, 34 bytes left")
    );
}

#[test]
fn gzip_and_zstd_captures_are_read_by_their_magic() {
    let plain = pcap(false, true, 64, &[(1, 5, &[1; 8]), (2, 6, &[2; 9])]);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&plain).unwrap();
    let gz = gz.finish().unwrap();
    let zst = zstd::encode_all(&plain[..], 3).unwrap();
    for (bytes, kind) in [(gz.clone(), "gzip"), (zst, "zstd")] {
        let (recs, reader) = read_all(bytes.clone(), false).unwrap();
        assert_eq!(reader.compression().name(), kind);
        assert_eq!(recs.len(), 2);
        assert_eq!(recs[1].ts_ns, 2_000_000_006);
        assert_eq!(payloads(bytes), vec![vec![1; 8], vec![2; 9]]);
    }
    // A gzip stream cut in the middle is a capture cut short, not a failure.
    let (_, reader) = read_all(gz[..gz.len() - 12].to_vec(), false).unwrap();
    assert!(reader.cut_short().is_some());
}

/// `pcap` records of `data`, the k-th at k s.
fn one_a_second(data: &[Vec<u8>]) -> Vec<(u32, u32, &[u8])> {
    data.iter()
        .enumerate()
        .map(|(i, d)| (i as u32, 0, &d[..]))
        .collect()
}

#[test]
fn records_crossing_buffer_boundaries_read_whole() {
    // 4 KiB buffers and 1500-byte records: most records straddle a refill.
    let data: Vec<Vec<u8>> = (0..200u32)
        .map(|i| vec![i as u8; 1000 + (i as usize * 7) % 1500])
        .collect();
    let records = one_a_second(&data);
    let f = pcap(false, false, 0, &records);
    let options = ReadOptions {
        chunk: 4096,
        ..ReadOptions::default()
    };
    let mut reader = Reader::from_bytes_with("t.cap", f, options).unwrap();
    for d in &data {
        let r = reader.next_record().unwrap().unwrap();
        assert_eq!(reader.data(&r), &d[..]);
    }
    assert!(reader.next_record().unwrap().is_none());
}

#[test]
fn reading_ahead_on_a_thread_gives_the_same_records_and_bytes() {
    // Records of 0 bytes to 100 000 (longer than the 64 KiB headroom of a read-ahead block, so
    // some are assembled across blocks) with 4 KiB blocks, pcap and pcapng alike.
    let data: Vec<Vec<u8>> = (0..300u32)
        .map(|i| vec![i as u8; [0, 60, 1500, 9000, 70_000, 100_000][i as usize % 6]])
        .collect();
    let records = one_a_second(&data);
    let mut ng = shb(false);
    ng.extend(idb(false, 0, None, None));
    for (i, d) in data.iter().enumerate() {
        ng.extend(epb(false, 0, i as u64, d, d.len() as u32));
    }
    for file in [pcap(false, false, 0, &records), ng] {
        let options = ReadOptions {
            chunk: 4096,
            ..ReadOptions::default()
        };
        let mut reader = Reader::from_bytes_with("t.cap", file.clone(), options).unwrap();
        reader.read_ahead();
        let mut direct = Reader::from_bytes_with("t.cap", file, options).unwrap();
        for d in &data {
            let (r, s) = (
                reader.next_record().unwrap().unwrap(),
                direct.next_record().unwrap().unwrap(),
            );
            assert_eq!(r, s);
            assert_eq!(reader.data(&r), &d[..]);
        }
        assert!(reader.next_record().unwrap().is_none());
        assert_eq!(reader.bytes_read(), direct.bytes_read());
    }
}

#[test]
fn pcapng_resync_finds_blocks_shifted_by_odd_garbage() {
    // 7 bytes of garbage between two EPBs shift the second off 4-byte alignment.
    let mut f = shb(false);
    f.extend(idb(false, 0, None, None));
    f.extend(epb(false, 0, 1, &[1; 4], 4));
    f.extend([0xF1; 7]);
    f.extend(epb(false, 0, 2, &[2; 4], 4));
    let (recs, reader) = read_all(f, true).unwrap();
    assert_eq!(
        recs.iter().map(|r| r.ts_ns).collect::<Vec<_>>(),
        vec![1_000, 2_000]
    );
    assert_eq!(reader.skipped(), 1);
}

#[test]
fn convert_keeps_interface_names_and_every_packet() {
    let a = temp("named.pcapng");
    let eth0 = Interface {
        name: Some("eth0".into()),
        ..Interface::new(1, 0)
    };
    let mut w = Writer::create(&a, OutFormat::PcapNg, &eth0, 1 << 16).unwrap();
    for ts in [3, 1, 2] {
        w.write_packet(ts, 0, 9, &[ts as u8; 3]).unwrap();
    }
    w.finish().unwrap();
    let out = temp("named-copy.pcapng");
    let stats = convert(&a, &out, OutFormat::PcapNg, false, false, 0).unwrap();
    assert_eq!(
        (stats.packets, stats.out_of_order, stats.truncated),
        (3, 1, 0)
    );
    let mut r = Reader::open(&out, false).unwrap();
    let mut got = Vec::new();
    while let Some(rec) = r.next_record().unwrap() {
        got.push((rec.ts_ns, r.data(&rec).to_vec()));
    }
    assert_eq!(got, vec![(3, vec![3; 3]), (1, vec![1; 3]), (2, vec![2; 3])]);
    assert_eq!(r.interfaces()[0].name.as_deref(), Some("eth0"));
}

#[test]
fn writer_round_trip_is_lossless_in_both_formats() {
    let packets: Vec<(i64, u32, Vec<u8>)> = (0..1000)
        .map(|i| {
            (
                1_700_000_000_123_456_789 + i * 977,
                60 + i as u32 % 7,
                vec![i as u8; 1 + (i as usize % 61)],
            )
        })
        .collect();
    for (format, name) in [
        (OutFormat::Pcap, "rt.pcap"),
        (OutFormat::PcapNg, "rt.pcapng"),
    ] {
        let path = temp(name);
        // A 256-byte buffer forces many flushes: nothing may be lost at their boundaries.
        let mut w = Writer::create(&path, format, &Interface::new(1, 0), 256).unwrap();
        for (ts, wire, data) in &packets {
            w.write_packet(*ts, 0, *wire, data).unwrap();
        }
        let stats = w.finish().unwrap();
        assert_eq!(stats.packets, 1000);
        assert_eq!(stats.bytes, std::fs::metadata(&path).unwrap().len());
        let mut r = Reader::open(&path, false).unwrap();
        for (ts, wire, data) in &packets {
            let rec = r.next_record().unwrap().unwrap();
            assert_eq!((rec.ts_ns, rec.wirelen), (*ts, *wire));
            assert_eq!(r.data(&rec), &data[..]);
        }
        assert!(r.next_record().unwrap().is_none());
    }
}

#[test]
fn merge_is_sorted_stable_and_keeps_interfaces() {
    let (a, b) = a_and_b("", [5, 20, 40]);
    let out = temp("m.pcapng");
    let stats = merge(&[a, b], &out, OutFormat::PcapNg, false).unwrap();
    assert_eq!(
        (stats.packets, stats.interfaces, stats.out_of_order),
        (6, 3, 0)
    );
    // ts 20 appears in both inputs: input a (listed first) comes first.
    let (got, interfaces) = records(&out);
    assert_eq!(
        got,
        vec![
            (5, b'b', 2),
            (10, b'a', 0),
            (20, b'a', 1),
            (20, b'b', 2),
            (30, b'a', 0),
            (40, b'b', 2)
        ]
    );
    assert_eq!(interfaces[2].name.as_deref(), Some("b.pcap:0"));
}

/// Writes a capture of one-byte packets `(ts, iface)` tagged `tag`, with `interfaces`
/// Ethernet interfaces.
fn tagged(
    name: &str,
    format: OutFormat,
    interfaces: u32,
    packets: &[(i64, u32)],
    tag: u8,
) -> PathBuf {
    let path = temp(name);
    let mut w = Writer::create(&path, format, &Interface::new(1, 0), 1 << 16).unwrap();
    for _ in 1..interfaces {
        w.add_interface(&Interface::new(1, 0)).unwrap();
    }
    for &(ts, iface) in packets {
        w.write_packet(ts, iface, 1, &[tag]).unwrap();
    }
    w.finish().unwrap();
    path
}

/// Input a (`{prefix}a.pcapng`: two interfaces, records at 10 on the first, 20 on the second
/// and 30 on the first) and input b (`{prefix}b.pcap`, records at `b_times`).
fn a_and_b(prefix: &str, b_times: [i64; 3]) -> (PathBuf, PathBuf) {
    let a_records = [(10, 0), (20, 1), (30, 0)];
    let a = tagged(
        &format!("{prefix}a.pcapng"),
        OutFormat::PcapNg,
        2,
        &a_records,
        b'a',
    );
    let b_records = b_times.map(|ts| (ts, 0));
    let b = tagged(
        &format!("{prefix}b.pcap"),
        OutFormat::Pcap,
        1,
        &b_records,
        b'b',
    );
    (a, b)
}

/// (time, tag, interface) of every record of a capture written from `tagged` inputs, and
/// every interface it declares.
fn records(path: &Path) -> (Vec<(i64, u8, u32)>, Vec<Interface>) {
    let mut r = Reader::open(path, false).unwrap();
    let mut got = Vec::new();
    while let Some(rec) = r.next_record().unwrap() {
        got.push((rec.ts_ns, r.data(&rec)[0], rec.iface));
    }
    (got, r.interfaces().to_vec())
}

#[test]
fn append_writes_inputs_in_the_order_given_with_the_merges_interfaces() {
    // The inputs of merge_is_sorted_stable_and_keeps_interfaces, given b first: b's records,
    // then a's, each in its own order (mergecap -a), whatever their times.
    let (a, b) = a_and_b("append-", [5, 40, 20]);
    let (appended, merged) = (temp("appended.pcapng"), temp("merged-ab.pcapng"));
    let append = MergeOptions {
        append: true,
        ..MergeOptions::default()
    };
    let inputs = [b.clone(), a.clone()];
    let stats = merge_with(&inputs, &appended, OutFormat::PcapNg, append).unwrap();
    // b steps back from 40 to 20 in its own order: one record out of order, as in a merge.
    assert_eq!(
        (stats.packets, stats.interfaces, stats.out_of_order),
        (6, 3, 1)
    );
    // b's records as b holds them (its interface is the output's 0), then a's (1 and 2).
    let b_then_a: Vec<(i64, u8, u32)> = [(5, 0), (40, 0), (20, 0)]
        .map(|(ts, iface)| (ts, b'b', iface))
        .into_iter()
        .chain([(10, 1), (20, 2), (30, 1)].map(|(ts, iface)| (ts, b'a', iface)))
        .collect();
    let (got, interfaces) = records(&appended);
    assert_eq!(got, b_then_a);
    merge_with(&inputs, &merged, OutFormat::PcapNg, MergeOptions::default()).unwrap();
    // The merge's interfaces: b's, then a's two, named after their files.
    assert_eq!(interfaces, records(&merged).1);
    let names: Vec<_> = interfaces.iter().map(|i| i.name.as_deref()).collect();
    assert_eq!(
        names,
        [
            Some("append-b.pcap:0"),
            Some("append-a.pcapng:0"),
            Some("append-a.pcapng:1")
        ]
    );
}

#[test]
fn append_of_inputs_already_in_order_is_the_merge_byte_for_byte() {
    let a = tagged(
        "ordered-a.pcapng",
        OutFormat::PcapNg,
        2,
        &[(10, 0), (20, 1)],
        b'a',
    );
    let b = tagged(
        "ordered-b.pcap",
        OutFormat::Pcap,
        1,
        &[(20, 0), (30, 0)],
        b'b',
    );
    for format in [OutFormat::Pcap, OutFormat::PcapNg] {
        let (appended, merged) = (temp("ordered-appended"), temp("ordered-merged"));
        let inputs = [a.clone(), b.clone()];
        let append = MergeOptions {
            append: true,
            ..MergeOptions::default()
        };
        let one = merge_with(&inputs, &appended, format, append).unwrap();
        let other = merge_with(&inputs, &merged, format, MergeOptions::default()).unwrap();
        assert_eq!(one, other);
        assert_eq!(
            std::fs::read(&appended).unwrap(),
            std::fs::read(&merged).unwrap()
        );
    }
}

#[test]
fn synthetic_frames_carry_valid_headers() {
    let mut frame = vec![0u8; 60];
    fill_udp_frame(&mut frame, 0x0001_0203);
    // IPv4 total length = 60 - 14 = 46; UDP length = 46 - 20 = 26.
    assert_eq!(u16::from_be_bytes([frame[16], frame[17]]), 46);
    assert_eq!(u16::from_be_bytes([frame[38], frame[39]]), 26);
    // A header with its checksum in place sums to 0xFFFF (RFC 1071).
    let sum: u32 = frame[14..34]
        .chunks(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
        .sum();
    assert_eq!((sum & 0xFFFF) + (sum >> 16), 0xFFFF);
    let path = temp("s.pcap");
    let stats = synthesize(&path, OutFormat::Pcap, &[1, 2], &[60, 1514], 4).unwrap();
    assert_eq!(stats.bytes, 24 + 16 + 60 + 16 + 1514);
    assert!(synthesize(&path, OutFormat::Pcap, &[1], &[20], 1).is_err());
}

// --- statistics -------------------------------------------------------------------------------

/// The statistics configuration `trace.py` passes: 1 ms and 1 s windows, 40 GbE (20 bytes of
/// preamble, SFD and IFG per frame), RMON buckets, the 50th and 99th gap percentiles.
fn stats_config() -> StatsConfig {
    StatsConfig {
        windows_ns: vec![1_000_000, 1_000_000_000],
        eth_gbps: 40.0,
        overhead_bytes: 20,
        fcs_bytes: 4,
        min_frame_bytes: 64,
        ethernet_header_bytes: 14,
        link_header_bytes: vec![(1, 14), (113, 16), (276, 20), (101, 0), (228, 0), (229, 0)],
        size_bins: vec![0, 64, 65, 128, 256, 512, 1024, 1519],
        percentiles: vec![50.0, 99.0],
        distinct_gap_limit: DISTINCT_GAP_LIMIT,
    }
}

fn stats_of(name: &str, bytes: &[u8], config: &StatsConfig) -> FileStats {
    let path = temp(name);
    std::fs::write(&path, bytes).unwrap();
    let stats = file_stats(&path, ReadOptions::default(), config).unwrap();
    std::fs::remove_file(&path).unwrap();
    stats
}

/// The same packets as columns in file order (what `trace.stats` hands over for a trace in
/// memory), with the file's interfaces.
fn stats_of_columns(bytes: Vec<u8>, config: &StatsConfig) -> Summary {
    let (records, reader) = read_all(bytes, false).unwrap();
    let column = |f: fn(&Record) -> u32| records.iter().map(f).collect::<Vec<_>>();
    let ts: Vec<i64> = records.iter().map(|r| r.ts_ns).collect();
    let (cap, wire, iface) = (
        column(|r| r.caplen),
        column(|r| r.wirelen),
        column(|r| r.iface),
    );
    columns_stats(&ts, &cap, &wire, &iface, reader.interfaces(), config).unwrap()
}

#[test]
fn stats_of_a_small_capture_by_hand() {
    // µs pcap, 60 captured / 64 wire bytes each, at 0, 1, 2, 1000 and 1500 µs after 1000 s.
    let data = [0u8; 60];
    let at = |usec: u32| (1000 + usec / 1_000_000, usec % 1_000_000, &data[..]);
    let file = pcap(false, false, 0, &[at(0), at(1), at(2), at(1000), at(1500)]);
    let s = stats_of("small.pcap", &file, &stats_config());
    let t = s.summary.counted.totals;
    assert_eq!((t.packets, t.bytes_captured, t.bytes_wire), (5, 300, 320));
    assert_eq!(
        (t.first_ts_ns, t.last_ts_ns),
        (1_000_000_000_000, 1_000_001_500_000)
    );
    assert_eq!((s.summary.counted.out_of_order, s.facts.reads), (0, 1));
    // 1 ms windows: [0, 1 ms) holds 3 packets (3 x 512 bits recorded, 3 x 544 bits of 68-byte
    // frames incl. FCS); the last covers 0.5 ms up to the last packet and holds 2. One 1 s
    // window covers the 1.5 ms span.
    let ms = &s.summary.rates[0];
    assert_eq!(ms.last_index, 1);
    assert_eq!(
        ms.groups,
        vec![(1_000_000, 3, 1536, 1632), (500_000, 2, 1024, 1088)]
    );
    assert_eq!(s.summary.rates[1].groups, vec![(1_500_000, 5, 2560, 2720)]);
    // Frames of 64 + 4 (FCS) bytes: RMON bucket 65-127 (index 2), 5 x 68 bytes in all.
    assert_eq!(s.summary.size_histogram, vec![0, 0, 5, 0, 0, 0, 0, 0]);
    assert_eq!(s.summary.frame_bytes, vec![340]);
    // Back to back: gap <= (68 + 20) * 8 / 40 ns + 1000 ns (µs resolution) = 1017.6 ns, so the
    // first three packets (gaps 1000, 1000) are one burst; gaps 998 000 and 500 000 are not.
    let b = s.summary.bursts.unwrap();
    assert_eq!(
        (b.bursts, b.packets_in_bursts, b.max_burst, b.gap_min_ns),
        (1, 3, 3, 1000)
    );
    // numpy.percentile([1000, 1000, 998000, 500000], 50 and 99).
    assert_eq!(b.gap_percentiles, vec![250_500.0, 983_059.999_999_999_9]);
}

#[test]
fn a_last_packet_on_a_window_start_belongs_to_the_window_before() {
    // ns pcap at 0, 0.5 ms and `last`: exactly 1 ms makes the span one whole 1 ms window
    // holding all three (not a second window covering nothing); one ns earlier, the one window
    // covers the 999 999 ns up to the last packet.
    let data = [0u8; 60];
    for (last, covered) in [(1_000_000, 1_000_000), (999_999, 999_999)] {
        let file = pcap(
            false,
            true,
            0,
            &[(7, 0, &data), (7, 500_000, &data), (7, last, &data)],
        );
        let ms = &stats_of("edge.pcap", &file, &stats_config()).summary.rates[0];
        assert_eq!(
            (ms.last_index, ms.groups.clone()),
            (0, vec![(covered, 3, 1536, 1632)]),
            "last packet at {last} ns"
        );
    }
}

#[test]
fn resolution_follows_if_tsresol() {
    // 10^-6 s, 10^-9 s, 10^-3 s, 2^-10 s = 976 562.5 ns (rounded up), 2^-30 s < 1 ns, 1 s.
    let got: Vec<i64> = [6, 9, 3, 0x80 | 10, 0x80 | 30, 0, 12]
        .map(resolution_ns)
        .to_vec();
    assert_eq!(got, vec![1000, 1, 1_000_000, 976_563, 1, 1_000_000_000, 1]);
}

#[test]
fn an_unsorted_capture_is_read_again_and_summarised_sorted() {
    let data = [0u8; 60];
    let file = pcap(
        false,
        true,
        0,
        &[(5, 300, &data), (5, 100, &data), (5, 200, &data)],
    );
    let sorted = pcap(
        false,
        true,
        0,
        &[(5, 100, &data), (5, 200, &data), (5, 300, &data)],
    );
    let s = stats_of("unsorted.pcap", &file, &stats_config());
    assert_eq!((s.facts.reads, s.summary.counted.out_of_order), (2, 1)); // 100 after 300; 200 after 100 is fine
    assert_eq!(s.summary.counted.max_step_back_ns, 200);
    let in_order = stats_of("sorted.pcap", &sorted, &stats_config()).summary;
    assert_eq!(
        Summary {
            counted: Counted {
                out_of_order: 0,
                max_step_back_ns: 0,
                ..s.summary.counted.clone()
            },
            ..s.summary.clone()
        },
        in_order
    );
    assert_eq!(s.summary, stats_of_columns(file, &stats_config()));
}

#[test]
fn an_interface_defined_late_sizes_every_frame_again() {
    // Ethernet packets, then a second section whose interface has link type 147 (no Ethernet
    // equivalent): every frame is then sized by its wire length, the first ones too.
    let mut file = shb(false);
    file.extend(idb(false, 0, Some(9), None));
    file.extend(epb(false, 0, 1_000, &[0; 60], 60));
    file.extend(epb(false, 0, 2_000, &[0; 60], 60));
    file.extend(shb(false));
    let mut user = idb(false, 0, Some(9), None);
    user[8..10].copy_from_slice(&147u16.to_le_bytes()); // the IDB's link type field
    file.extend(user);
    file.extend(epb(false, 0, 3_000, &[0; 10], 10));
    let s = stats_of("late.pcapng", &file, &stats_config());
    assert_eq!(s.facts.reads, 2);
    // Wire lengths 60, 60 and 10 are all below 64: the first bucket ("<64").
    assert_eq!(s.summary.size_histogram, vec![3, 0, 0, 0, 0, 0, 0, 0]);
    assert_eq!(s.summary, stats_of_columns(file, &stats_config()));
}

#[test]
fn gaps_beyond_the_distinct_limit_are_refined_by_a_second_read() {
    // 300 packets 70 000 + 7k ns apart (all distinct, above the dense table): with room for 10
    // distinct gaps the first read keeps buckets and the second collects the percentiles' ones.
    let data = [0u8; 60];
    let mut ts = 0u64;
    let records: Vec<(u32, u32, &[u8])> = (0..300u64)
        .map(|k| {
            ts += 70_000 + 7 * k;
            (
                (ts / 1_000_000_000) as u32,
                (ts % 1_000_000_000) as u32,
                &data[..],
            )
        })
        .collect();
    let file = pcap(false, true, 0, &records);
    let small = StatsConfig {
        distinct_gap_limit: 10,
        ..stats_config()
    };
    let refined = stats_of("gaps.pcap", &file, &small);
    let exact = stats_of("gaps.pcap", &file, &stats_config());
    assert_eq!((refined.facts.reads, exact.facts.reads), (2, 1));
    assert_eq!(refined.summary, exact.summary);
    // 299 gaps 70 007 .. 72 093 ns: the median is the 150th, 70 000 + 7 * 150.
    assert_eq!(exact.summary.bursts.unwrap().gap_percentiles[0], 71_050.0);
}

/// A ns pcap of `n` packets out of time order: times drawn from 3000 values (so many are
/// equal), 150 ns apart in 30 blocks with distinct gaps of 70 us or more between the blocks.
/// Wire lengths vary (60..=1514): whether a gap of 150 ns is back to back depends on the
/// frame before it, the last of its time in file order, so the summary shows whether the
/// sort kept equal times in file order.
fn shuffled_pcap(n: u32) -> Vec<u8> {
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let mut file = pcap(false, true, 0, &[]);
    for k in 0..n {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let v = state % 3000;
        let block = v / 100;
        let ts = 1_000_000_000_000 + v * 150 + block * (70_000 + block * block * 37);
        let wirelen = 60 + (k * 7919) % 1455;
        file.extend(pcap_record((ts / 1_000_000_000) as u32, 0, wirelen, 0));
        let frac = (ts % 1_000_000_000) as u32;
        let at = file.len() - 12;
        file[at..at + 4].copy_from_slice(&frac.to_le_bytes());
    }
    file
}

/// The summary of `bytes` sorted in runs of `run` packets spilled to a folder of its own,
/// and how many files that folder holds afterwards.
fn spilled(bytes: Vec<u8>, config: &StatsConfig, run: usize) -> (Result<Summary, String>, usize) {
    let dir = temp("spill").parent().unwrap().to_path_buf();
    let mut reader = Reader::from_bytes("t.cap", bytes, false).unwrap();
    let summary = read_unsorted_in(&mut reader, config, run, &dir).map_err(|e| e.to_string());
    (summary, std::fs::read_dir(&dir).unwrap().count())
}

#[test]
fn packets_sorted_through_run_files_summarise_as_sorted_in_memory() {
    let file = shuffled_pcap(20_000);
    // The top percentiles fall among the 29 gaps between blocks, so with room for only 10
    // distinct gaps the sorted packets are walked a second time to collect them.
    let config = StatsConfig {
        percentiles: vec![50.0, 99.0, 99.95, 100.0],
        ..stats_config()
    };
    let small_limit = StatsConfig {
        distinct_gap_limit: 10,
        ..config.clone()
    };
    let exact = StatsConfig {
        distinct_gap_limit: usize::MAX,
        ..config.clone()
    };
    let in_memory = stats_of_columns(file.clone(), &exact);
    assert!(in_memory.counted.out_of_order > 5000);
    assert!(in_memory.ties.max_equal_timestamps > 5);
    assert!(in_memory.bursts.as_ref().unwrap().bursts > 100);
    // 20 runs of 1000 merged at once, 200 runs of 100 merged in groups first, and one run in
    // memory.
    for run in [1000, 100, 20_000] {
        for config in [&config, &small_limit] {
            let (summary, left) = spilled(file.clone(), config, run);
            assert_eq!(summary.unwrap(), in_memory, "runs of {run}");
            assert_eq!(left, 0, "runs of {run}: every run file removed");
        }
    }
    // The file itself (read twice: out of order) agrees too.
    assert_eq!(stats_of("shuffled.pcap", &file, &config).summary, in_memory);
}

#[test]
fn run_files_go_when_the_capture_fails_midway() {
    // 5000 packets (five runs of 1000 written), then a record longer than any link type allows.
    let mut file = shuffled_pcap(5000);
    file.extend(pcap_record(0, 0, 0, 0));
    let at = file.len() - 8;
    file[at..at + 4].copy_from_slice(&300_000u32.to_le_bytes());
    let (summary, left) = spilled(file, &stats_config(), 1000);
    let err = summary.unwrap_err();
    assert!(err.contains("caplen 300000 exceeds"), "{err}");
    assert_eq!(left, 0);
}

#[test]
fn columns_must_agree_with_each_other_and_the_interfaces() {
    let config = stats_config();
    let iface = Interface::new(1, 0);
    let err = columns_stats(
        &[1, 2],
        &[60],
        &[60, 60],
        &[0, 0],
        std::slice::from_ref(&iface),
        &config,
    );
    assert!(err.unwrap_err().to_string().contains("same length"));
    let err = columns_stats(&[1], &[60], &[60], &[1], &[iface], &config);
    assert_eq!(
        err.unwrap_err().to_string(),
        "packet for interface 1, but 1 are defined"
    );
}

// --- archive partials -------------------------------------------------------------------------

/// The partial of a capture written to a file; read with and without read-ahead, which must
/// not change it.
fn partial_of(name: &str, bytes: &[u8], origin: i64) -> Partial {
    let path = temp(name);
    std::fs::write(&path, bytes).unwrap();
    let read = |ahead| {
        file_partial(
            &path,
            ReadOptions::default(),
            &stats_config(),
            origin,
            None,
            ahead,
        )
    };
    let (ahead, inline) = (read(true), read(false));
    std::fs::remove_file(&path).unwrap();
    assert_eq!(ahead, inline, "read-ahead changed the partial of {name}");
    ahead.unwrap()
}

#[test]
fn a_burst_and_a_window_split_between_two_files_merge_into_one() {
    // The capture of `stats_of_a_small_capture_by_hand` cut after its second packet: the burst
    // of the first three packets (0, 1, 2 µs) and the first 1 ms window straddle the files.
    let data = [0u8; 60];
    let at = |usec: u32| (1000 + usec / 1_000_000, usec % 1_000_000, &data[..]);
    let whole = pcap(false, false, 0, &[at(0), at(1), at(2), at(1000), at(1500)]);
    let first = pcap(false, false, 0, &[at(0), at(1)]);
    let second = pcap(false, false, 0, &[at(2), at(1000), at(1500)]);
    let origin = 1_000_000_000_000; // the first packet, 1000 s
    let mut merged = partial_of("a.pcap", &first, origin);
    let next = partial_of("b.pcap", &second, origin);
    merged.append(&next, &stats_config(), None).unwrap();
    let summary = merged.summary(&stats_config()).unwrap();
    assert_eq!(
        summary,
        stats_of("whole.pcap", &whole, &stats_config()).summary
    );
    // Hand-computed in stats_of_a_small_capture_by_hand: one burst of 3, windows of 3 and 2.
    let b = summary.bursts.unwrap();
    assert_eq!((b.bursts, b.packets_in_bursts, b.max_burst), (1, 3, 3));
    assert_eq!(
        summary.rates[0].groups,
        vec![(1_000_000, 3, 1536, 1632), (500_000, 2, 1024, 1088)]
    );
}

#[test]
fn overlapping_files_sorted_through_run_files_give_the_in_memory_partial() {
    // Two shuffled captures over the same time span: their 27 000 packets sorted in runs of
    // 1000 (27 run files, merged) and in one run held in memory give one partial.
    let paths: Vec<PathBuf> = [("a.pcap", 20_000), ("b.pcap", 7_000)]
        .iter()
        .map(|&(name, n)| {
            let path = temp(name);
            std::fs::write(&path, shuffled_pcap(n)).unwrap();
            path
        })
        .collect();
    let dir = temp("spill").parent().unwrap().to_path_buf();
    let config = stats_config();
    let partial =
        |run| files_partial_in(&paths, ReadOptions::default(), &config, None, run, &dir).unwrap();
    let (spilled, held) = (partial(1000), partial(1 << 20));
    assert_eq!(spilled, held);
    assert_eq!(spilled.counted.totals.packets, 27_000);
    assert!(spilled.counted.out_of_order > 5000);
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0); // every run file removed
}

#[test]
fn files_that_overlap_in_time_do_not_append() {
    let data = [0u8; 60];
    let at = |usec: u32| (1000, usec, &data[..]);
    let origin = 1_000_000_000_000;
    let mut a = partial_of("a.pcap", &pcap(false, false, 0, &[at(0), at(10)]), origin);
    let b = partial_of("b.pcap", &pcap(false, false, 0, &[at(5), at(20)]), origin);
    let err = a.append(&b, &stats_config(), None).unwrap_err();
    assert_eq!(err, CoreError::Unmergeable("the files overlap in time"));
}

#[test]
fn a_partial_round_trips_through_its_bytes() {
    let data = [0u8; 60];
    let at = |usec: u32| (1000, usec, &data[..]);
    let file = pcap(false, false, 0, &[at(0), at(3), at(7_000)]);
    let partial = partial_of("p.pcap", &file, 1_000_000_000_000);
    let bytes = partial.to_bytes();
    assert_eq!(Partial::from_bytes(&bytes).unwrap(), partial);
    assert!(Partial::from_bytes(&bytes[..bytes.len() - 1]).is_err());
    assert!(Partial::from_bytes(b"not a partial").is_err());
}

#[test]
fn a_partial_is_a_few_bytes_a_distinct_gap_and_round_trips_at_the_extremes() {
    // 1 001 ns-resolution packets with gaps 1, 2, ..., 1000 ns: 1 000 distinct gaps. Fixed
    // 8-byte integers took 16 bytes a gap (16 000 bytes); as LEB128 differences each is a
    // 1-byte step and a 1-byte count, so the whole partial stays under 3 bytes a gap.
    let data = [0u8; 60];
    let mut usec = 0u32;
    let times: Vec<u32> = (0..=1000u32)
        .map(|k| {
            usec += k;
            usec
        })
        .collect();
    let records: Vec<_> = times.iter().map(|&t| (5, t, &data[..])).collect();
    let partial = partial_of("gaps.pcap", &pcap(false, true, 0, &records), 5_000_000_000);
    let bytes = partial.to_bytes();
    assert!(bytes.len() < 3 * 1000, "{} bytes", bytes.len());
    assert_eq!(Partial::from_bytes(&bytes).unwrap(), partial);
    // The largest gap a u32-seconds pcap holds (~136 years) and timestamps near the u32 end:
    // zigzag LEB128 must carry them back exactly (10 bytes each at most).
    let far = pcap(
        false,
        false,
        0,
        &[(0, 0, &data[..]), (u32::MAX, 999_999, &data[..])],
    );
    let partial = partial_of("far.pcap", &far, 0);
    assert_eq!(Partial::from_bytes(&partial.to_bytes()).unwrap(), partial);
}

#[test]
fn a_stats_config_names_its_first_bad_value() {
    // The rules the glue used to check by hand (rust/py trace.rs), one message each.
    assert_eq!(stats_config().check(), Ok(()));
    let bad = |config: StatsConfig| config.check().unwrap_err().to_string();
    let base = stats_config;
    assert_eq!(
        bad(StatsConfig {
            windows_ns: vec![1, 0],
            ..base()
        }),
        "rate windows must be at least 1 ns"
    );
    assert_eq!(
        bad(StatsConfig {
            size_bins: vec![1, 64],
            ..base()
        }),
        "size bins must ascend from at most 0 (lower bounds of the buckets)"
    );
    assert_eq!(
        bad(StatsConfig {
            size_bins: vec![0, 64, 64],
            ..base()
        }),
        "size bins must ascend from at most 0 (lower bounds of the buckets)"
    );
    assert_eq!(
        bad(StatsConfig {
            percentiles: vec![100.5],
            ..base()
        }),
        "percentiles must lie within 0..=100"
    );
    assert_eq!(
        bad(StatsConfig {
            eth_gbps: f64::NAN,
            ..base()
        }),
        "the Ethernet rate must be a positive number"
    );
}

// --- can the capture be trusted? ---------------------------------------------------------------

/// A ns pcapng of `(ts, epb_flags)` packets on one interface.
fn ns_pcapng(be: bool, packets: &[(u64, u32)]) -> Vec<u8> {
    let mut f = shb(be);
    f.extend(idb(be, 0, Some(9), None));
    for &(ts, flags) in packets {
        f.extend(epb_flags(be, ts, flags));
    }
    f
}

#[test]
fn epb_flags_give_each_packet_its_direction() {
    for be in [false, true] {
        // Bits 0-1: 1 inbound, 2 outbound, 0 and the reserved 3 unknown; higher bits (an FCS
        // length of 4, bits 5-8) do not matter.
        let file = ns_pcapng(be, &[(1, 1), (2, 2), (3, 0), (4, 3), (5, 0x81), (6, 0x82)]);
        let (records, _) = read_all(file.clone(), false).unwrap();
        let got: Vec<u8> = records.iter().map(|r| r.direction).collect();
        assert_eq!(got, vec![1, 2, 0, 0, 1, 2]);
        let s = stats_of("dir.pcapng", &file, &stats_config()).summary;
        assert_eq!(s.counted.directions, vec![[2, 2, 2]]);
        // A conversion keeps each known direction as an epb_flags option of its own.
        let (input, output) = (temp("dir-in.pcapng"), temp("dir-out.pcapng"));
        std::fs::write(&input, &file).unwrap();
        convert(&input, &output, OutFormat::PcapNg, false, false, 0).unwrap();
        let (back, _) = read_all(std::fs::read(&output).unwrap(), false).unwrap();
        let kept: Vec<u8> = back.iter().map(|r| r.direction).collect();
        assert_eq!(kept, got);
        for path in [input, output] {
            std::fs::remove_file(path).unwrap();
        }
    }
    let (records, _) = read_all(pcap(false, true, 0, &[(1, 0, &[0; 60])]), false).unwrap();
    assert_eq!(records[0].direction, 0, "pcap has no direction");
}

#[test]
fn times_past_2262_are_read_modulo_2_64_counted_and_written_back_unchanged() {
    // The first packet of a DPDK 22.11 dumpcap file (two-long.pcapng, byte 34404560): Wireshark
    // dates it 2476-07-24; the last ones wrapped past 2^64 ns to 1981.
    let ticks = [
        15_985_604_461_518_558_038u64,
        u64::MAX,
        0,
        376_000_000_000_000_000,
    ];
    let file = ns_pcapng(false, &ticks.map(|t| (t, 1)));
    let (records, reader) = read_all(file.clone(), false).unwrap();
    let got: Vec<u64> = records.iter().map(|r| r.ts_ns as u64).collect();
    assert_eq!(got, ticks.to_vec());
    assert_eq!(reader.quirks().ts_wrapped, 2);
    let s = stats_of("wrap.pcapng", &file, &stats_config());
    assert_eq!(s.facts.quirks.ts_wrapped, 2);
    // In i64 the times are -2461139612190993578, -1, 0, 376e15: in order.
    assert_eq!(s.summary.counted.out_of_order, 0);
    let input = temp("wrap-in.pcapng");
    let output = temp("wrap-out.pcapng");
    std::fs::write(&input, &file).unwrap();
    convert(&input, &output, OutFormat::PcapNg, false, false, 0).unwrap();
    let (back, _) = read_all(std::fs::read(&output).unwrap(), false).unwrap();
    assert_eq!(
        back.iter().map(|r| r.ts_ns as u64).collect::<Vec<_>>(),
        ticks.to_vec()
    );
    for path in [input, output] {
        std::fs::remove_file(path).unwrap();
    }
}

#[test]
fn ties_and_steps_back_by_hand() {
    // File order 10 10 10 20 20 15 30 ns: sorted 10 10 10 15 20 20 30, so 4 distinct times,
    // at most 3 at one; 15 after 20 is the one step back, of 5 ns.
    let times = [10, 10, 10, 20, 20, 15, 30];
    let file = ns_pcapng(false, &times.map(|t| (t, 1)));
    let s = stats_of("ties.pcapng", &file, &stats_config()).summary;
    assert_eq!(
        (s.ties.distinct_timestamps, s.ties.max_equal_timestamps),
        (4, 3)
    );
    assert_eq!((s.counted.out_of_order, s.counted.max_step_back_ns), (1, 5));
    // Columns carry no direction: the same summary but for that.
    let columns = stats_of_columns(file, &stats_config());
    assert_eq!(columns.counted.directions, vec![[7, 0, 0]]);
    let directions = s.counted.directions.clone();
    assert_eq!(
        s,
        Summary {
            counted: Counted {
                directions,
                ..columns.counted.clone()
            },
            ..columns
        }
    );
}

#[test]
fn ties_and_directions_of_two_files_merge_into_those_of_one() {
    // A run of 3 packets at 20 ns straddles the files; directions add up.
    let whole = [(10, 1), (20, 2), (20, 1), (20, 2), (30, 1), (30, 1)];
    let origin = 10;
    let mut merged = partial_of("a.pcapng", &ns_pcapng(false, &whole[..2]), origin);
    let next = partial_of("b.pcapng", &ns_pcapng(false, &whole[2..]), origin);
    merged.append(&next, &stats_config(), None).unwrap();
    let summary = merged.summary(&stats_config()).unwrap();
    let one = stats_of("whole.pcapng", &ns_pcapng(false, &whole), &stats_config()).summary;
    assert_eq!(summary, one);
    assert_eq!(
        (
            summary.ties.distinct_timestamps,
            summary.ties.max_equal_timestamps
        ),
        (3, 3)
    );
    assert_eq!(summary.counted.directions, vec![[0, 4, 2]]);
    let bytes = merged.to_bytes();
    assert_eq!(Partial::from_bytes(&bytes).unwrap(), merged);
}

#[test]
fn a_conversion_shifts_every_time() {
    // A DPDK 22.11 dumpcap time (one-lcore.pcapng's first packet, 2251-09-26) shifted back by
    // 2^64 / 2.6 GHz s (7 094 901 566.8 s) lands on 2026-11-27; the pcap output takes the
    // rewriting path, never the as-is one.
    let first = 8_890_702_860_389_673_534u64;
    let shift = -7_094_901_566_811_366_006i64; // -2^64 / 2.6 ns, rounded
    let file = ns_pcapng(false, &[(first, 1), (first + 500, 2)]);
    let input = temp("shift-in.pcapng");
    std::fs::write(&input, &file).unwrap();
    for format in [OutFormat::Pcap, OutFormat::PcapNg] {
        let output = temp("shift-out.cap");
        convert(&input, &output, format, false, false, shift).unwrap();
        let (back, _) = read_all(std::fs::read(&output).unwrap(), false).unwrap();
        let got: Vec<i64> = back.iter().map(|r| r.ts_ns).collect();
        let want = first as i64 + shift;
        assert_eq!(got, vec![want, want + 500]);
        assert_eq!(want / 1_000_000_000, 1_795_801_293); // 2026-11-27T17:01:33Z
        std::fs::remove_file(output).unwrap();
    }
    std::fs::remove_file(input).unwrap();
}
