//! One capture's packets in time order, gone over as many times as a computation needs, in
//! memory that does not grow with the capture (`nic --trace`, `dpdk-fwd --trace`): a file in
//! time order is read again for each pass; a file out of order is sorted once, and standard
//! input or a pipe (which cannot be read twice) as it is read, into runs spilled to disk
//! (`spill::Sorter`), which each pass merges. Each pass checks between runs of packets whether
//! it was asked to stop (`interrupt`).
//!
//! The passes: PCIe bytes per rate window from per-frame-size costs (`windows`, by the rule of
//! `rate_windows`), and the Rx batches of a PMD polling the capture (`poll_batches`).

use std::path::{Path, PathBuf};

use super::rate_windows::{no_packets, windows_over, Series, Span};
use super::read::{ReadOptions, Reader};
use super::spill::{Packet, Sorted, Sorter, RUN_PACKETS};
use super::stats::frames::FrameRule;
use super::stats::{ReadFacts, StatsConfig};
use crate::interrupt::Watch;
use crate::CoreError;

/// Packets between two checks for a request to stop.
const CHECK_EVERY: u64 = 1 << 16;

/// A capture ready for passes over its packets in time order.
pub struct Timeline {
    path: PathBuf,
    read: ReadOptions,
    /// What the reader found (`reads`: 2 where the file was out of order and read again).
    pub facts: ReadFacts,
    pub packets: u64,
    /// Packets per interface (the interfaces of `facts`).
    pub per_interface: Vec<u64>,
    /// The earliest and the latest packet's time (0, 0 without packets).
    pub first_ts_ns: i64,
    pub last_ts_ns: i64,
    /// The longest wire length (a bound on the frames, and so on the costs a pass needs).
    pub max_wirelen: u32,
    /// The packets sorted (None: the file is in time order and is read again).
    sorted: Option<Sorted>,
}

/// What one read in file order found.
struct FirstRead {
    packets: u64,
    per_interface: Vec<u64>,
    first: i64,
    last: i64,
    previous: i64,
    in_order: bool,
    max_wirelen: u32,
}

impl FirstRead {
    fn new() -> Self {
        FirstRead {
            packets: 0,
            per_interface: Vec::new(),
            first: i64::MAX,
            last: i64::MIN,
            previous: i64::MIN,
            in_order: true,
            max_wirelen: 0,
        }
    }

    fn push(&mut self, ts_ns: i64, wirelen: u32, iface: u32) {
        self.max_wirelen = self.max_wirelen.max(wirelen);
        self.in_order &= ts_ns >= self.previous;
        self.previous = ts_ns;
        self.first = self.first.min(ts_ns);
        self.last = self.last.max(ts_ns);
        let at = iface as usize;
        if self.per_interface.len() <= at {
            self.per_interface.resize(at + 1, 0);
        }
        self.per_interface[at] += 1;
        self.packets += 1;
    }
}

impl Timeline {
    /// Reads `path` (`-`: standard input) once, and sorts it where it is out of time order or
    /// cannot be read again.
    pub fn open(path: &Path, read: ReadOptions) -> Result<Self, CoreError> {
        Self::open_in(path, read, RUN_PACKETS, &std::env::temp_dir())
    }

    /// `open` sorting in runs of `run_packets` spilled to `dir`.
    pub(in crate::trace) fn open_in(
        path: &Path,
        read: ReadOptions,
        run_packets: usize,
        dir: &Path,
    ) -> Result<Self, CoreError> {
        let rereadable =
            path.as_os_str() != "-" && std::fs::metadata(path).is_ok_and(|m| m.is_file());
        let mut reader = Reader::open_with(path, read)?;
        let mut found = FirstRead::new();
        let mut sorter = (!rereadable).then(|| Sorter::new(run_packets, dir));
        while let Some(r) = reader.next_record()? {
            found.push(r.ts_ns, r.wirelen, r.iface);
            if let Some(sorter) = &mut sorter {
                sorter.push(packet(r.ts_ns, r.wirelen, r.iface))?;
            }
        }
        let mut reads = 1;
        if rereadable && !found.in_order {
            let mut again = Sorter::new(run_packets, dir);
            each_record(path, read, found.packets, |p| again.push(*p))?;
            sorter = Some(again);
            reads = 2;
        }
        let sorted = sorter.map(Sorter::finish).transpose()?;
        let mut per_interface = found.per_interface;
        per_interface.resize(reader.interfaces().len().max(per_interface.len()), 0);
        let (first, last) = if found.packets > 0 {
            (found.first, found.last)
        } else {
            (0, 0)
        };
        Ok(Timeline {
            path: path.to_path_buf(),
            read,
            facts: ReadFacts::of(&reader, reads),
            packets: found.packets,
            per_interface,
            first_ts_ns: first,
            last_ts_ns: last,
            max_wirelen: found.max_wirelen,
            sorted,
        })
    }

    /// Calls `f` with every packet in time order (equal times in file order), stopping with
    /// `CoreError::Interrupted` when asked to.
    fn for_each(
        &self,
        mut f: impl FnMut(&Packet) -> Result<(), CoreError>,
    ) -> Result<(), CoreError> {
        match &self.sorted {
            Some(sorted) => {
                let watch = Watch::start();
                let mut seen = 0u64;
                sorted.try_for_each(|p| {
                    seen += 1;
                    if seen.is_multiple_of(CHECK_EVERY) {
                        watch.check()?;
                    }
                    f(p)
                })
            }
            None => each_record(&self.path, self.read, self.packets, f),
        }
    }

    /// The time from the first to the last packet.
    fn span_ns(&self) -> u64 {
        self.last_ts_ns.wrapping_sub(self.first_ts_ns) as u64
    }

    /// PCIe bytes per window of `window_ns` from the first packet, as rates by the rule of
    /// `rate_windows`: `costs[k][frame]` is series `k`'s bytes for a frame of `frame` bytes
    /// incl. FCS (sized by `config`; every packet is on a link type with an Ethernet
    /// equivalent, which the caller checked). Also returns the frame bytes of all packets.
    pub fn windows(
        &self,
        config: &StatsConfig,
        costs: &[Vec<f64>],
        window_ns: u64,
        max_windows: u64,
    ) -> Result<(Span, Vec<Series>, u64), CoreError> {
        if self.packets == 0 {
            return Err(no_packets());
        }
        let span_ns = self.span_ns();
        let span = windows_over(span_ns, window_ns, max_windows)?;
        let priced = costs.iter().map(Vec::len).min().unwrap_or(0);
        let rule = FrameRule::ethernet(&self.facts.interfaces, config);
        let mut sums = vec![vec![0.0; span.count() as usize]; costs.len()];
        let mut frame_bytes = 0u64;
        self.for_each(|p| {
            let frame = rule.frame(p.wirelen, p.iface, config);
            let Some(at) = usize::try_from(frame).ok().filter(|&f| f < priced) else {
                return Err(CoreError::Invalid(format!(
                    "a frame of {frame} bytes is larger than the {} priced",
                    priced.saturating_sub(1)
                )));
            };
            let window = span.index(p.ts_ns.wrapping_sub(self.first_ts_ns) as u64);
            for (sum, cost) in sums.iter_mut().zip(costs) {
                sum[window] += cost[at];
            }
            frame_bytes += at as u64;
            Ok(())
        })?;
        let series = sums
            .into_iter()
            .map(|s| Series::of_sums(&span, span_ns, s))
            .collect();
        Ok((span, series, frame_bytes))
    }

    /// The Rx batches of a PMD that polls every `poll_ns` from the first packet and takes up to
    /// `burst` packets a call: packets that arrive within one poll period share calls. Returns
    /// the calls that take `burst` packets, then (batch, calls) for the smaller batches,
    /// ascending.
    pub fn poll_batches(
        &self,
        poll_ns: u64,
        burst: u64,
    ) -> Result<(u64, Vec<(u64, u64)>), CoreError> {
        if self.packets == 0 {
            return Err(no_packets());
        }
        if poll_ns == 0 || burst == 0 {
            return Err(CoreError::Invalid(
                "a poll period and a burst of 0 are not allowed; give values > 0".into(),
            ));
        }
        let mut full = 0u64;
        let mut rest = vec![0u64; burst as usize];
        let mut count_slot = |packets: u64| {
            full += packets / burst;
            rest[(packets % burst) as usize] += 1;
        };
        let (mut slot, mut in_slot) = (0u64, 0u64);
        self.for_each(|p| {
            let this = p.ts_ns.wrapping_sub(self.first_ts_ns) as u64 / poll_ns;
            if this != slot && in_slot > 0 {
                count_slot(in_slot);
                in_slot = 0;
            }
            slot = this;
            in_slot += 1;
            Ok(())
        })?;
        if in_slot > 0 {
            count_slot(in_slot);
        }
        let smaller = (1..burst)
            .filter(|&b| rest[b as usize] > 0)
            .map(|b| (b, rest[b as usize]))
            .collect();
        Ok((full, smaller))
    }
}

fn packet(ts_ns: i64, wirelen: u32, iface: u32) -> Packet {
    Packet {
        ts_ns,
        wirelen,
        iface,
    }
}

/// Calls `f` with every packet of `path` in file order; the capture must still hold the
/// `packets` it held when it was first read.
fn each_record(
    path: &Path,
    read: ReadOptions,
    packets: u64,
    mut f: impl FnMut(&Packet) -> Result<(), CoreError>,
) -> Result<(), CoreError> {
    let mut reader = Reader::open_with(path, read)?;
    let mut seen = 0u64;
    while let Some(r) = reader.next_record()? {
        f(&packet(r.ts_ns, r.wirelen, r.iface))?;
        seen += 1;
    }
    if seen != packets {
        return Err(CoreError::whole(
            &path.display().to_string(),
            "the capture changed while it was read again",
        ));
    }
    Ok(())
}
