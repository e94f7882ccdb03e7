//! Reading into shared buffers (`Reader::share_buffers`) and the conversion that passes records
//! on from them as they were read, against what they replace: the buffered reader and the
//! one-input merge. Same records, bytes, counts and errors; output byte for byte the same.

use std::fs::OpenOptions;
use std::path::Path;

use super::super::merge::{convert_with, merge_with, MergeOptions, MergeStats};
use super::super::read::{Quirks, ReadOptions, Reader, Record};
use super::super::write::OutFormat;
use super::{epb, idb, pcap, shb, temp};

/// What a reader makes of a capture: each record with its bytes, records skipped, why it was
/// cut short, quirks and bytes consumed; or the error that stopped it.
type Outcome = Result<(Vec<(Record, Vec<u8>)>, u64, Option<String>, Quirks, u64), String>;

fn open(path: &Path, options: ReadOptions, windows: bool) -> Result<Reader, String> {
    let mut reader = Reader::open_with(path, options).map_err(|e| e.to_string())?;
    if windows {
        reader.share_buffers(options.chunk);
    }
    Ok(reader)
}

fn read_outcome(path: &Path, options: ReadOptions, windows: bool) -> Outcome {
    outcome(open(path, options, windows)?)
}

/// The rest of what `reader` reads.
fn outcome(mut reader: Reader) -> Outcome {
    let mut records = Vec::new();
    while let Some(r) = reader.next_record().map_err(|e| e.to_string())? {
        records.push((r, reader.data(&r).to_vec()));
    }
    let cut = reader.cut_short().map(ToString::to_string);
    let (skipped, quirks, read) = (reader.skipped(), reader.quirks(), reader.bytes_read());
    Ok((records, skipped, cut, quirks, read))
}

/// Payloads of 0 to 70 000 bytes: longer than a 4 KiB shared buffer and than a 64 KiB span.
fn payloads(count: u32) -> Vec<Vec<u8>> {
    (0..count)
        .map(|i| vec![i as u8; [0, 60, 1500, 9000, 70_000][i as usize % 5]])
        .collect()
}

/// pcap records (second, fraction, data); every 17th has a fraction of 10^9 or more, which a
/// ns pcap reader carries into the seconds and the writer so does not write as it was.
fn records(data: &[Vec<u8>]) -> Vec<(u32, u32, &[u8])> {
    data.iter()
        .enumerate()
        .map(|(i, d)| {
            let frac = if i % 17 == 5 {
                1_000_000_000 + i as u32
            } else {
                (i as u32 * 7919) % 1_000_000
            };
            (1_700_000_000 + i as u32, frac, &d[..])
        })
        .collect()
}

/// Captures of every layout, damaged or cut short some of them, by name.
fn captures() -> Vec<(&'static str, Vec<u8>)> {
    let data = payloads(120);
    let recs = records(&data);
    let le_ns = pcap(false, true, 0, &recs);
    let mut garbage = pcap(false, true, 0, &recs[..60]);
    garbage.extend([0xEE; 13]);
    garbage.extend(&pcap(false, true, 0, &recs[60..])[24..]);
    let mut bad_caplen = le_ns.clone();
    bad_caplen[24 + 8..24 + 12].copy_from_slice(&0xFFFF_FFF0u32.to_le_bytes());
    let cut = le_ns[..le_ns.len() - 1000].to_vec();
    let mut ng = shb(false);
    ng.extend(idb(false, 0, Some(9), None));
    for (i, d) in data.iter().enumerate() {
        if i == 60 {
            ng.extend(shb(true));
            ng.extend(idb(true, 1500, None, Some(3)));
        }
        ng.extend(epb(i >= 60, 0, 1 << 40 | i as u64, d, d.len() as u32 + 4));
    }
    let small = [0x5A; 60];
    let many: Vec<(u32, u32, &[u8])> = (0..60_000).map(|i| (i, i * 16, &small[..])).collect();
    vec![
        ("le-ns.pcap", le_ns),
        ("be-us.pcap", pcap(true, false, 1500, &recs)),
        ("garbage.pcap", garbage),
        ("bad-caplen.pcap", bad_caplen),
        ("cut.pcap", cut),
        ("sections.pcapng", ng),
        ("many.pcap", pcap(false, true, 0, &many)),
        ("empty.pcap", Vec::new()),
    ]
}

/// Read options: each damage mode, with shared buffers of one page and of 256 KiB.
fn option_sets() -> Vec<ReadOptions> {
    let mut sets = Vec::new();
    for chunk in [4096, 256 << 10] {
        for (skip_bad, strict) in [(false, false), (true, false), (false, true)] {
            sets.push(ReadOptions {
                skip_bad,
                strict,
                chunk,
            });
        }
    }
    sets
}

#[test]
fn reading_into_windows_gives_what_buffered_reading_gives() {
    for (name, bytes) in captures() {
        let path = temp(&format!("windows-read-{name}"));
        std::fs::write(&path, bytes).unwrap();
        for options in option_sets() {
            let shared = read_outcome(&path, options, true);
            assert_eq!(
                shared,
                read_outcome(&path, options, false),
                "{name} {options:?}"
            );
        }
        std::fs::remove_file(&path).unwrap();
    }
}

/// The output file's bytes and the counts (write calls aside: fewer when records pass as they
/// are), or the error.
fn written(
    path: &Path,
    stats: Result<MergeStats, String>,
) -> Result<(Vec<u8>, MergeStats), String> {
    let stats = MergeStats {
        writes: 0,
        ..stats?
    };
    Ok((std::fs::read(path).unwrap(), stats))
}

#[test]
fn conversion_writes_what_the_one_input_merge_writes() {
    for (name, bytes) in captures() {
        let input = temp(&format!("convert-in-{name}"));
        std::fs::write(&input, bytes).unwrap();
        for format in [OutFormat::Pcap, OutFormat::PcapNg] {
            for read in option_sets() {
                let (ours, theirs) = (temp("convert-ours"), temp("convert-theirs"));
                let options = MergeOptions {
                    skip_bad: read.skip_bad,
                    strict: read.strict,
                    keep_names: true,
                    ..MergeOptions::default()
                };
                let merged = merge_with(std::slice::from_ref(&input), &theirs, format, options);
                let converted = convert_with(&input, &ours, format, read, read.chunk, 0);
                let expected = written(&theirs, merged.map_err(|e| e.to_string()));
                let got = written(&ours, converted.map_err(|e| e.to_string()));
                assert_eq!(got, expected, "{name} {format:?} {read:?}");
            }
        }
        std::fs::remove_file(&input).unwrap();
    }
}

#[test]
fn a_file_cut_shorter_while_it_is_read_reads_as_buffered_reading_does() {
    // 200 records of 1016 bytes after the 24-byte header, cut once the first record is read: to
    // nothing, inside the first 4 KiB shared buffer, and inside record 49 (24 + 49 * 1016 = 49
    // 808). Both readers decode what they hold already, then find the new end: the same records and
    // the same cut, and no SIGBUS (nothing is mapped).
    let data = vec![7u8; 1000];
    let recs: Vec<(u32, u32, &[u8])> = (0..200).map(|i| (i, 0, &data[..])).collect();
    let options = ReadOptions {
        chunk: 4096,
        ..ReadOptions::default()
    };
    for (cut, whole) in [(0, 4), (2000, 4), (50_500, 49)] {
        let path = temp(&format!("shrinks-{cut}.pcap"));
        std::fs::write(&path, pcap(false, true, 0, &recs)).unwrap();
        let mut readers = [true, false].map(|windows| open(&path, options, windows).unwrap());
        for reader in &mut readers {
            reader.next_record().unwrap().unwrap();
        }
        OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(cut)
            .unwrap();
        let [shared, buffered] = readers.map(outcome);
        let shared = shared.unwrap();
        assert_eq!(
            (shared.0.len() + 1, shared.2.is_some()),
            (whole, true),
            "cut at {cut}"
        );
        assert_eq!(Ok(shared), buffered, "cut at {cut}");
        std::fs::remove_file(&path).unwrap();
    }
}
