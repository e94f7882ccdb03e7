//! The partials of capture files: one file read once in time order (twice where its frame rule
//! changes), or files sorted by time in bounded runs spilled to disk where they are not in order.

use std::path::{Path, PathBuf};

use super::demand::DemandConfig;
use super::{Builder, Partial};
use crate::trace::read::{ReadOptions, Reader};
use crate::trace::spill::{Packet, Sorter, RUN_PACKETS};
use crate::trace::stats::counts::Counts;
use crate::trace::stats::frames::{FrameRule, RuleWatch};
use crate::trace::stats::ReadFacts;
use crate::trace::stats::StatsConfig;
use crate::trace::Interface;
use crate::CoreError;

/// How one read in file order went.
enum Pass {
    Done(Box<Partial>),
    /// Frames were sized under a rule that changed later: read again with the final one.
    Again(FrameRule),
    Unsorted,
}

fn read_in_order(
    reader: &mut Reader,
    config: &StatsConfig,
    origin: i64,
    fixed: Option<&FrameRule>,
    reads: u32,
    cost: Option<&DemandConfig>,
) -> Result<Pass, CoreError> {
    let mut watch = RuleWatch::new(reader, config, fixed);
    let mut built = Builder::new(config, origin, watch.rule.clone(), cost);
    let mut counts = Counts::default();
    let mut first_record = None;
    while let Some(r) = reader.next_record()? {
        if let Some(rule) = watch.changed(reader, config, counts.counted.totals.packets) {
            built.set_rule(rule.clone());
        }
        first_record.get_or_insert(r.ts_ns);
        if !counts.push(&r) {
            return Ok(Pass::Unsorted);
        }
        built.push(r.ts_ns, r.wirelen, r.iface, config);
    }
    let (last, stale) = watch.finish(reader, config, counts.counted.totals.packets);
    if stale {
        return Ok(Pass::Again(last));
    }
    let records = (first_record.unwrap_or(0), counts.counted.totals.last_ts_ns);
    let facts = ReadFacts::of(reader, reads);
    Ok(Pass::Done(Box::new(Partial::new(
        facts, &counts, records, built, origin,
    ))))
}

/// Packets of files read in file order, with their counts: sorted by time in bounded runs
/// spilled to disk (`spill::Sorter`, as `stats::file_stats` sorts a capture out of order).
struct Held {
    sorter: Sorter,
    counts: Counts,
    records: Option<(i64, i64)>,
}

impl Held {
    /// Packets sorted in runs of `run_packets`, spilled to `dir`.
    fn new(run_packets: usize, dir: &Path) -> Self {
        Held {
            sorter: Sorter::new(run_packets, dir),
            counts: Counts::default(),
            records: None,
        }
    }

    fn read(&mut self, reader: &mut Reader) -> Result<(), CoreError> {
        while let Some(r) = reader.next_record()? {
            self.counts.push(&r);
            self.sorter.push(Packet {
                ts_ns: r.ts_ns,
                wirelen: r.wirelen,
                iface: r.iface,
            })?;
            let first = self.records.map_or(r.ts_ns, |f| f.0);
            self.records = Some((first, r.ts_ns));
        }
        Ok(())
    }

    /// The partial of the held packets sorted by time (stably), windows from `origin` (None:
    /// the first packet).
    fn partial(
        self,
        facts: ReadFacts,
        config: &StatsConfig,
        origin: Option<i64>,
        cost: Option<&DemandConfig>,
    ) -> Result<Partial, CoreError> {
        let sorted = self.sorter.finish()?;
        let origin = origin.unwrap_or(self.counts.counted.totals.first_ts_ns);
        let rule = FrameRule::new(&facts.interfaces, config);
        let mut built = Builder::new(config, origin, rule, cost);
        sorted.for_each(|p| built.push(p.ts_ns, p.wirelen, p.iface, config))?;
        let records = self.records.unwrap_or((0, 0));
        Ok(Partial::new(facts, &self.counts, records, built, origin))
    }
}

/// Opens `path`, reading ahead on a thread of its own where `ahead` (a file's reads end).
fn open(path: &Path, read: ReadOptions, ahead: bool) -> Result<Reader, CoreError> {
    let mut reader = Reader::open_with(path, read)?;
    if ahead {
        reader.read_ahead();
    }
    Ok(reader)
}

/// The partial of one capture file with windows counted from `origin` (`-`: standard input).
/// Read once where it is in time order; otherwise as `stats::file_stats` reads it.
///
/// `read_ahead` lets a regular file be read on a second thread, a block ahead of the parsing:
/// faster where a core is free for it, but a task then keeps about 1.7 cores busy, so a caller
/// that runs one task per core (a Dask worker thread) turns it off (docs/scale.md). The
/// partial is the same either way.
pub fn file_partial(
    path: &Path,
    read: ReadOptions,
    config: &StatsConfig,
    origin: i64,
    cost: Option<&DemandConfig>,
    read_ahead: bool,
) -> Result<Partial, CoreError> {
    let rereadable = path.as_os_str() != "-" && std::fs::metadata(path).is_ok_and(|m| m.is_file());
    let ahead = rereadable && read_ahead;
    let mut reader = open(path, read, ahead)?;
    if rereadable {
        let expected_rule = match read_in_order(&mut reader, config, origin, None, 1, cost)? {
            Pass::Done(partial) => return Ok(*partial),
            Pass::Again(rule) => Some(rule),
            Pass::Unsorted => None,
        };
        reader = open(path, read, ahead)?;
        if let Some(rule) = expected_rule {
            return match read_in_order(&mut reader, config, origin, Some(&rule), 2, cost)? {
                Pass::Done(partial) => Ok(*partial),
                _ => Err(CoreError::whole(
                    &path.display().to_string(),
                    "the capture changed while it was read twice",
                )),
            };
        }
    }
    let mut held = Held::new(RUN_PACKETS, &std::env::temp_dir());
    held.read(&mut reader)?;
    let reads = if rereadable { 2 } else { 1 };
    held.partial(ReadFacts::of(&reader, reads), config, Some(origin), cost)
}

/// The partial of files that overlap in time, concatenated in the order given: their packets
/// are sorted by time in bounded memory (runs of `spill::RUN_PACKETS` spilled under TMPDIR),
/// as for one file out of time order; windows count from the first packet.
pub fn files_partial(
    paths: &[PathBuf],
    read: ReadOptions,
    config: &StatsConfig,
    cost: Option<&DemandConfig>,
) -> Result<Partial, CoreError> {
    files_partial_in(
        paths,
        read,
        config,
        cost,
        RUN_PACKETS,
        &std::env::temp_dir(),
    )
}

/// `files_partial` with runs of `run_packets` spilled to `dir`.
pub(in crate::trace) fn files_partial_in(
    paths: &[PathBuf],
    read: ReadOptions,
    config: &StatsConfig,
    cost: Option<&DemandConfig>,
    run_packets: usize,
    dir: &Path,
) -> Result<Partial, CoreError> {
    let mut held = Held::new(run_packets, dir);
    let mut facts: Option<ReadFacts> = None;
    for path in paths {
        let mut reader = Reader::open_with(path, read)?;
        held.read(&mut reader)?;
        let these = ReadFacts::of(&reader, 1);
        match &mut facts {
            None => facts = Some(these),
            Some(all) => all.add(&these),
        }
    }
    held.partial(facts.unwrap_or_default(), config, None, cost)
}

/// Time of the first record of a capture and its interfaces then (None without packets).
pub fn first_record(
    path: &Path,
    read: ReadOptions,
) -> Result<(Option<i64>, Vec<Interface>), CoreError> {
    let mut reader = Reader::open_with(path, read)?;
    let first = reader.next_record()?.map(|r| r.ts_ns);
    Ok((first, reader.interfaces().to_vec()))
}
