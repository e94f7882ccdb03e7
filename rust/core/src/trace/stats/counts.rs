//! What needs no sorting: totals per file and interface, directions and the time order.

use super::ordered::InTimeOrder;
use super::{Counted, Summary, Totals};
use crate::trace::read::Record;

/// Counts packets in file order (`Counted`). While every packet is on interface 0 (a pcap
/// file, most pcapng ones) its totals are the file's, and only those are counted.
#[derive(Debug, Clone)]
pub(in crate::trace) struct Counts {
    /// So far; `per_interface` is empty while `only_first`, and both per-interface lists
    /// reach only the highest interface a packet named.
    pub(in crate::trace) counted: Counted,
    only_first: bool,
    last_ts: i64,
}

impl Default for Counts {
    fn default() -> Self {
        Counts {
            counted: Counted::default(),
            only_first: true,
            last_ts: 0,
        }
    }
}

impl Counts {
    #[inline(always)]
    pub(in crate::trace) fn push(&mut self, r: &Record) -> bool {
        let (ts, caplen, wirelen, iface) = (r.ts_ns, r.caplen, r.wirelen, r.iface);
        let c = &mut self.counted;
        let in_order = c.totals.packets == 0 || ts >= self.last_ts;
        if !in_order {
            c.out_of_order += 1;
            let step = self.last_ts.wrapping_sub(ts) as u64;
            c.max_step_back_ns = c.max_step_back_ns.max(step);
        }
        self.last_ts = ts;
        let i = iface as usize;
        if c.directions.len() <= i {
            c.directions.resize(i + 1, [0; 3]);
        }
        c.directions[i][usize::from(r.direction)] += 1;
        if iface != 0 && self.only_first {
            self.only_first = false;
            c.per_interface = vec![c.totals];
        }
        c.totals.add(ts, caplen, wirelen);
        if !self.only_first {
            if c.per_interface.len() <= i {
                c.per_interface.resize(i + 1, Totals::default());
            }
            c.per_interface[i].add(ts, caplen, wirelen);
        }
        in_order
    }

    /// What was counted, with one per-interface entry for each of `interfaces` interfaces
    /// (packets name only interfaces that exist).
    pub(in crate::trace) fn counted(&self, interfaces: usize) -> Counted {
        let c = &self.counted;
        let mut per_interface = match (self.only_first, c.totals.packets) {
            (true, 0) => Vec::new(),
            (true, _) => vec![c.totals],
            (false, _) => c.per_interface.clone(),
        };
        per_interface.resize(interfaces, Totals::default());
        let mut directions = c.directions.clone();
        directions.resize(interfaces, [0; 3]);
        Counted {
            totals: c.totals,
            per_interface,
            out_of_order: c.out_of_order,
            max_step_back_ns: c.max_step_back_ns,
            directions,
        }
    }

    /// The summary of the counted packets with what their time order gave.
    pub(super) fn summary(&self, interfaces: usize, ordered: InTimeOrder) -> Summary {
        let (rates, size_histogram, bursts, ties, mut frame_bytes) = ordered;
        frame_bytes.resize(interfaces, 0);
        Summary {
            counted: self.counted(interfaces),
            ties,
            rates,
            size_histogram,
            bursts,
            frame_bytes,
        }
    }
}

/// Adds `n` to `sums[index]`, growing `sums` to hold it.
#[inline(always)]
pub(in crate::trace) fn add_at(sums: &mut Vec<u64>, index: u32, n: u64) {
    let i = index as usize;
    if sums.len() <= i {
        sums.resize(i + 1, 0);
    }
    sums[i] += n;
}
