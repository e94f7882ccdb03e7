//! Capture statistics computed while the capture is decoded, with no per-packet columns:
//! totals per file and per interface, time order, peak rates over any number of windows, a
//! frame-size histogram, back-to-back bursts at line rate and gap percentiles.
//!
//! Everything but the time order needs the packets sorted by time. Captures almost always are,
//! so a file is read once, in order, holding a few counters per window and one count per
//! distinct gap. Where that is not enough the file is read again:
//! - a packet earlier than the one before it: the packets are sorted (stably) by time and
//!   summarised; standard input, pipes and devices, which cannot be read twice, are always
//!   read so. The sort holds at most a run of packets in memory and spills longer captures to
//!   temporary files, merged back in time order (`spill`), so any capture is summarised in
//!   bounded memory;
//! - an interface defined after packets were counted that changes how frames are sized (a link
//!   type without an Ethernet equivalent) or the timestamp resolution bursts are judged at;
//! - more distinct gaps of 65 536 ns or more than `distinct_gap_limit`: the first read keeps
//!   exact counts in log-linear buckets (1/256 of an octave wide), the second collects the gaps
//!   of the buckets that hold the percentiles' order statistics. Sorted packets are walked
//!   twice for the same reason, from memory or from the spilled runs.
//!
//! Results are exact integers (counts, sums, the largest window sums) for the caller to turn
//! into rates with one rounding each; the gap percentiles are numpy's default ("linear",
//! Hyndman & Fan's method 7) evaluated in the same floating-point operations as
//! `numpy.percentile` on the sorted gaps, so they are bit for bit what it returns.

pub(super) mod bursts;
pub(super) mod counts;
pub(super) mod frames;
mod ordered;
pub(super) mod percentiles;
pub(super) mod window_peaks;

use std::path::Path;

use self::bursts::Chain;
use self::counts::Counts;
use self::frames::{FrameRule, RuleWatch};
use self::ordered::Ordered;
use super::read::{Quirks, ReadOptions, Reader, Record};
use super::spill::{Packet, Sorted, Sorter, RUN_PACKETS};
use super::Interface;
use crate::CoreError;

/// Default number of distinct gaps of DENSE_GAPS ns or more counted exactly before a file is
/// summarised in buckets and read a second time (a hash map of this many entries is ~9 MiB).
pub const DISTINCT_GAP_LIMIT: usize = 1 << 18;

/// What the statistics need to know beyond the packets: rate windows, how a frame is sized
/// from a record and what the Ethernet line does with it, the size buckets and percentiles.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "pyo3", derive(pyo3::FromPyObject), pyo3(from_item_all))]
pub struct StatsConfig {
    /// Rate windows in ns, each reported in this order.
    pub windows_ns: Vec<u64>,
    /// Ethernet line rate in Gb/s, which sets the wire time of a frame.
    pub eth_gbps: f64,
    /// Wire bytes per frame besides the frame (preamble, SFD, IFG).
    pub overhead_bytes: i64,
    pub fcs_bytes: i64,
    pub min_frame_bytes: i64,
    pub ethernet_header_bytes: i64,
    /// Link-layer header bytes of the link types that have an Ethernet equivalent; a file with
    /// any other link type sizes frames by their wire length alone.
    pub link_header_bytes: Vec<(u16, i64)>,
    /// Lower bounds of the frame-size buckets, ascending, the first at most 0.
    pub size_bins: Vec<i64>,
    /// Gap percentiles to report, 0..=100.
    pub percentiles: Vec<f64>,
    /// Distinct gaps above 65 535 ns counted exactly in one read (see the module notes).
    #[cfg_attr(feature = "pyo3", pyo3(default = DISTINCT_GAP_LIMIT))]
    pub distinct_gap_limit: usize,
}

impl StatsConfig {
    /// Whether the configuration can be used: windows of at least 1 ns, size bins ascending
    /// from at most 0, percentiles within 0..=100, a positive finite Ethernet rate.
    pub fn check(&self) -> Result<(), CoreError> {
        let bins = &self.size_bins;
        let problem = if self.windows_ns.contains(&0) {
            "rate windows must be at least 1 ns"
        } else if bins.is_empty() || bins.windows(2).any(|w| w[0] >= w[1]) || bins[0] > 0 {
            "size bins must ascend from at most 0 (lower bounds of the buckets)"
        } else if self.percentiles.iter().any(|p| !(0.0..=100.0).contains(p)) {
            "percentiles must lie within 0..=100"
        } else if !(self.eth_gbps.is_finite() && self.eth_gbps > 0.0) {
            "the Ethernet rate must be a positive number"
        } else {
            return Ok(());
        };
        Err(CoreError::Invalid(problem.to_owned()))
    }
}

/// Packets, bytes and first/last (smallest/largest) timestamp of a set of packets.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "pyo3", derive(pyo3::IntoPyObject))]
pub struct Totals {
    pub packets: u64,
    pub bytes_captured: u64,
    pub bytes_wire: u64,
    pub first_ts_ns: i64,
    pub last_ts_ns: i64,
}

impl Totals {
    fn add(&mut self, ts: i64, caplen: u32, wirelen: u32) {
        if self.packets == 0 {
            (self.first_ts_ns, self.last_ts_ns) = (ts, ts);
        } else {
            self.first_ts_ns = self.first_ts_ns.min(ts);
            self.last_ts_ns = self.last_ts_ns.max(ts);
        }
        self.packets += 1;
        self.bytes_captured += u64::from(caplen);
        self.bytes_wire += u64::from(wirelen);
    }

    /// Adds the totals of another set of packets.
    fn append(&mut self, other: &Totals) {
        if other.packets == 0 {
            return;
        }
        if self.packets == 0 {
            *self = *other;
            return;
        }
        self.packets += other.packets;
        self.bytes_captured += other.bytes_captured;
        self.bytes_wire += other.bytes_wire;
        self.first_ts_ns = self.first_ts_ns.min(other.first_ts_ns);
        self.last_ts_ns = self.last_ts_ns.max(other.last_ts_ns);
    }

    /// Last minus first timestamp (0 without packets); it fits u64 whatever the two are.
    pub fn span_ns(&self) -> u64 {
        self.last_ts_ns.wrapping_sub(self.first_ts_ns) as u64
    }
}

/// Windows of one length from the first packet: the last covers only up to the last packet.
/// `groups` holds, per covered time (the full window, and the last one's where it differs),
/// the largest packet count, bit sum of the recorded lengths and bit sum of the frames (incl.
/// FCS, as `FrameRule::frame` sizes them) of a window, for peak rates as exact ratios.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "pyo3", derive(pyo3::IntoPyObject))]
pub struct WindowPeaks {
    pub window_ns: u64,
    /// Index of the last window (their number minus one).
    pub last_index: u64,
    /// (covered ns, largest packet count, largest bit sum, largest frame-bit sum).
    pub groups: Vec<(u64, u64, u64, u64)>,
}

/// Runs of back-to-back packets and the gaps between packets (at least two packets).
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "pyo3", derive(pyo3::IntoPyObject))]
pub struct Bursts {
    pub bursts: u64,
    pub packets_in_bursts: u64,
    pub max_burst: u64,
    pub gap_min_ns: i64,
    /// One value per configured percentile.
    pub gap_percentiles: Vec<f64>,
}

/// How packets share timestamps (in time order): distinct times and the most packets at one.
/// DPDK's pcapng copies take one TSC reading per burst, so a dumpcap file has 32 a time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "pyo3", derive(pyo3::IntoPyObject))]
pub struct Ties {
    pub distinct_timestamps: u64,
    pub max_equal_timestamps: u64,
}

impl Ties {
    /// The ties of `packets` packets whose equal-time runs `equal` linked.
    pub(super) fn of(equal: &Chain, packets: u64) -> Self {
        let (runs, packets_in_runs, longest) = equal.finish();
        Ties {
            distinct_timestamps: packets - (packets_in_runs - runs),
            max_equal_timestamps: if packets == 0 { 0 } else { longest },
        }
    }
}

/// What the statistics count in file order, needing no sort: totals per file and interface,
/// the time order and directions (`counts::Counts` counts them, `archive::Partial` appends them).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counted {
    pub totals: Totals,
    /// One per interface, in interface order.
    pub per_interface: Vec<Totals>,
    /// Packets earlier than the one before them, in file order.
    pub out_of_order: u64,
    /// The largest step back in time from one packet to the next, in file order (ns).
    pub max_step_back_ns: u64,
    /// Packets per interface (interface order) and direction: unknown, inbound, outbound.
    pub directions: Vec<[u64; 3]>,
}

impl Counted {
    /// Adds the counts of the packets that follow in file order; a step back across the two
    /// is the caller's to count, since only it knows the last record's time.
    pub(super) fn append(&mut self, next: &Counted) {
        self.totals.append(&next.totals);
        self.out_of_order += next.out_of_order;
        self.max_step_back_ns = self.max_step_back_ns.max(next.max_step_back_ns);
        if next.per_interface.len() > self.per_interface.len() {
            self.per_interface
                .resize(next.per_interface.len(), Totals::default());
        }
        for (mine, theirs) in self.per_interface.iter_mut().zip(&next.per_interface) {
            mine.append(theirs);
        }
        if next.directions.len() > self.directions.len() {
            self.directions.resize(next.directions.len(), [0; 3]);
        }
        for (mine, theirs) in self.directions.iter_mut().zip(&next.directions) {
            for (m, t) in mine.iter_mut().zip(theirs) {
                *m += t;
            }
        }
    }
}

/// Everything the statistics report about a set of packets.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    pub counted: Counted,
    pub ties: Ties,
    pub rates: Vec<WindowPeaks>,
    pub size_histogram: Vec<u64>,
    /// Frame bytes (incl. FCS, as `FrameRule::frame` sizes them) per interface, in interface
    /// order.
    pub frame_bytes: Vec<u64>,
    /// None below two packets.
    pub bursts: Option<Bursts>,
}

/// The statistics of one capture file, with what the reader found.
#[derive(Debug, Clone, PartialEq)]
pub struct FileStats {
    pub summary: Summary,
    pub facts: ReadFacts,
}

/// What the reader found in a capture file (added up over files by `archive::Partial`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadFacts {
    pub format: String,
    pub compression: String,
    pub interfaces: Vec<Interface>,
    pub skipped: u64,
    pub untimed: u64,
    pub quirks: Quirks,
    pub cut_short: Option<String>,
    /// How many times the capture was read (1 unless the module notes say otherwise).
    pub reads: u32,
}

impl ReadFacts {
    /// What `reader` found in the `reads` reads of its file.
    pub(super) fn of(reader: &Reader, reads: u32) -> Self {
        ReadFacts {
            format: reader.format().to_owned(),
            compression: reader.compression().name().to_owned(),
            interfaces: reader.interfaces().to_vec(),
            skipped: reader.skipped(),
            untimed: reader.untimed(),
            quirks: reader.quirks(),
            cut_short: reader.cut_short().map(ToString::to_string),
            reads,
        }
    }

    /// Adds what the reader found in the files that follow.
    pub(super) fn add(&mut self, next: &ReadFacts) {
        for (mine, theirs) in [
            (&mut self.format, &next.format),
            (&mut self.compression, &next.compression),
        ] {
            if mine != theirs {
                *mine = "mixed".to_owned();
            }
        }
        if next.interfaces.len() > self.interfaces.len() {
            self.interfaces = next.interfaces.clone();
        }
        self.skipped += next.skipped;
        self.untimed += next.untimed;
        self.quirks.snaplen_exceeded += next.quirks.snaplen_exceeded;
        self.quirks.wirelen_below_caplen += next.quirks.wirelen_below_caplen;
        self.quirks.ts_wrapped += next.quirks.ts_wrapped;
        if self.cut_short.is_none() {
            self.cut_short = next.cut_short.clone();
        }
        self.reads += next.reads;
    }
}

/// ns of timestamp resolution of an `if_tsresol` byte, rounded up, at least 1: 10^-n s, or
/// 2^-n s with the top bit set (pcapng §4.2). In integers, equal to ceil(1e9 * base ** -n)
/// in doubles for all 256 bytes.
pub fn resolution_ns(tsresol: u8) -> i64 {
    let exponent = u32::from(tsresol & 0x7F);
    if tsresol & 0x80 != 0 {
        match 1_000_000_000i64.checked_shr(exponent) {
            Some(whole) if exponent < 63 => {
                let exact = whole << exponent == 1_000_000_000;
                (whole + i64::from(!exact)).max(1)
            }
            _ => 1,
        }
    } else {
        10i64.pow(9u32.saturating_sub(exponent))
    }
}

/// How one read went: sorted all along or not, and whether the frame rule held throughout.
enum Pass {
    Done(Box<Summary>),
    Again { collect: Vec<(i64, i64)> },
    Unsorted,
}

/// One read of a capture in file order, assuming time order; `fixed` is the frame rule of the
/// whole file where a previous read learnt it.
fn read_in_order(
    reader: &mut Reader,
    config: &StatsConfig,
    fixed: Option<&FrameRule>,
    collect: &[(i64, i64)],
) -> Result<Pass, CoreError> {
    let mut watch = RuleWatch::new(reader, config, fixed);
    let mut ordered = Ordered::new(
        watch.rule.clone(),
        config,
        Some(config.distinct_gap_limit),
        collect,
    );
    let mut counts = Counts::default();
    while let Some(r) = reader.next_record()? {
        if let Some(rule) = watch.changed(reader, config, counts.counted.totals.packets) {
            ordered.set_rule(rule.clone());
        }
        if !counts.push(&r) {
            return Ok(Pass::Unsorted);
        }
        ordered.push(r.ts_ns, r.wirelen, r.iface, config);
    }
    let (_, stale) = watch.finish(reader, config, counts.counted.totals.packets);
    let finished = ordered.finish(&counts.counted.totals, config);
    if stale {
        // Sizes and bursts counted under another rule: a second read with the final one.
        return Ok(Pass::Again {
            collect: finished.err().unwrap_or_default(),
        });
    }
    Ok(match finished {
        Ok(ordered) => Pass::Done(Box::new(counts.summary(reader.interfaces().len(), ordered))),
        Err(collect) => Pass::Again { collect },
    })
}

/// The statistics of packets sorted by time, counted in file order by `counts`: walked once,
/// or twice where the gaps outnumber the distinct limit (see the module notes).
fn summarise_sorted(
    sorted: &Sorted,
    counts: &Counts,
    interfaces: &[Interface],
    config: &StatsConfig,
) -> Result<Summary, CoreError> {
    let rule = FrameRule::new(interfaces, config);
    let mut collect = Vec::new();
    for _ in 0..2 {
        let limit = Some(config.distinct_gap_limit);
        let mut ordered = Ordered::new(rule.clone(), config, limit, &collect);
        sorted.for_each(|p| ordered.push(p.ts_ns, p.wirelen, p.iface, config))?;
        match ordered.finish(&counts.counted.totals, config) {
            Ok(finished) => return Ok(counts.summary(interfaces.len(), finished)),
            Err(ranges) => collect = ranges,
        }
    }
    unreachable!("a second walk collects every gap the percentiles need")
}

/// Reads every packet of `reader`, sorts them by time in runs of `run_packets` spilled to
/// `dir` (see `spill`) and summarises them.
pub(super) fn read_unsorted_in(
    reader: &mut Reader,
    config: &StatsConfig,
    run_packets: usize,
    dir: &Path,
) -> Result<Summary, CoreError> {
    let mut sorter = Sorter::new(run_packets, dir);
    let mut counts = Counts::default();
    while let Some(r) = reader.next_record()? {
        counts.push(&r);
        sorter.push(Packet {
            ts_ns: r.ts_ns,
            wirelen: r.wirelen,
            iface: r.iface,
        })?;
    }
    let sorted = sorter.finish()?;
    summarise_sorted(&sorted, &counts, reader.interfaces(), config)
}

/// Reads every packet of `reader` and summarises them sorted by time, in bounded memory.
fn read_unsorted(reader: &mut Reader, config: &StatsConfig) -> Result<Summary, CoreError> {
    read_unsorted_in(reader, config, RUN_PACKETS, &std::env::temp_dir())
}

/// The statistics of a capture file (`-`: standard input), read once where it is in time
/// order (see the module notes for when it is read again; what cannot be read twice, standard
/// input, a pipe or a device, is sorted by time as it is read).
pub fn file_stats(
    path: &Path,
    read: ReadOptions,
    config: &StatsConfig,
) -> Result<FileStats, CoreError> {
    // Only a regular file can be read twice (standard input, a pipe or a device is sorted as
    // it is read), and only a file is read ahead: its reads end.
    let rereadable = path.as_os_str() != "-" && std::fs::metadata(path).is_ok_and(|m| m.is_file());
    let open = || {
        let mut reader = Reader::open_with(path, read)?;
        if rereadable {
            reader.read_ahead();
        }
        Ok::<_, CoreError>(reader)
    };
    let mut reader = open()?;
    let mut reads = 1;
    let summary = if !rereadable {
        read_unsorted(&mut reader, config)?
    } else {
        match read_in_order(&mut reader, config, None, &[])? {
            Pass::Done(summary) => *summary,
            Pass::Unsorted => {
                reader = open()?;
                reads += 1;
                read_unsorted(&mut reader, config)?
            }
            Pass::Again { collect } => {
                let rule = FrameRule::new(reader.interfaces(), config);
                let expected = reader.bytes_read();
                reader = open()?;
                reads += 1;
                match read_in_order(&mut reader, config, Some(&rule), &collect)? {
                    Pass::Done(summary) if reader.bytes_read() == expected => *summary,
                    _ => {
                        return Err(CoreError::whole(
                            &path.display().to_string(),
                            "the capture changed while it was read twice",
                        ))
                    }
                }
            }
        }
    };
    Ok(FileStats {
        summary,
        facts: ReadFacts::of(&reader, reads),
    })
}

/// The statistics of packets given as columns in file order (an in-memory trace). Fails when
/// the columns differ in length or a packet names an interface that is not there.
pub fn columns_stats(
    ts_ns: &[i64],
    caplen: &[u32],
    wirelen: &[u32],
    iface: &[u32],
    interfaces: &[Interface],
    config: &StatsConfig,
) -> Result<Summary, CoreError> {
    let n = ts_ns.len();
    if [caplen.len(), wirelen.len(), iface.len()]
        .iter()
        .any(|&l| l != n)
    {
        return Err(CoreError::Invalid(
            "ts_ns, caplen, wirelen and iface must have the same length".into(),
        ));
    }
    if let Some(bad) = iface.iter().find(|&&i| i as usize >= interfaces.len()) {
        return Err(CoreError::Invalid(format!(
            "packet for interface {bad}, but {} are defined",
            interfaces.len()
        )));
    }
    let mut counts = Counts::default();
    let mut packets = Vec::with_capacity(n);
    for k in 0..n {
        // Columns carry no direction: every packet's is unknown.
        counts.push(&Record {
            ts_ns: ts_ns[k],
            caplen: caplen[k],
            wirelen: wirelen[k],
            iface: iface[k],
            data_offset: 0,
            direction: 0,
        });
        packets.push(Packet {
            ts_ns: ts_ns[k],
            wirelen: wirelen[k],
            iface: iface[k],
        });
    }
    summarise_sorted(&Sorted::in_memory(packets), &counts, interfaces, config)
}
