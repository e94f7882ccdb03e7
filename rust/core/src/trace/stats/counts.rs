//! What needs no sorting: totals per file and interface, directions and the time order.

use super::ordered::InTimeOrder;
use super::{Summary, Totals};
use crate::trace::read::Record;

/// Totals per file and interface, directions and the time order, which need no sorting. While
/// every packet is on interface 0 (a pcap file, most pcapng ones) its totals are the file's,
/// and only those are counted.
#[derive(Debug, Clone)]
pub(in crate::trace) struct Counts {
    pub(in crate::trace) totals: Totals,
    per_interface: Vec<Totals>,
    only_first: bool,
    pub(in crate::trace) out_of_order: u64,
    pub(in crate::trace) max_step_back_ns: u64,
    directions: Vec<[u64; 3]>,
    last_ts: i64,
}

impl Default for Counts {
    fn default() -> Self {
        Counts {
            totals: Totals::default(),
            per_interface: Vec::new(),
            only_first: true,
            out_of_order: 0,
            max_step_back_ns: 0,
            directions: Vec::new(),
            last_ts: 0,
        }
    }
}

impl Counts {
    #[inline(always)]
    pub(in crate::trace) fn push(&mut self, r: &Record) -> bool {
        let (ts, caplen, wirelen, iface) = (r.ts_ns, r.caplen, r.wirelen, r.iface);
        let in_order = self.totals.packets == 0 || ts >= self.last_ts;
        if !in_order {
            self.out_of_order += 1;
            let step = self.last_ts.wrapping_sub(ts) as u64;
            self.max_step_back_ns = self.max_step_back_ns.max(step);
        }
        self.last_ts = ts;
        let i = iface as usize;
        if self.directions.len() <= i {
            self.directions.resize(i + 1, [0; 3]);
        }
        self.directions[i][usize::from(r.direction)] += 1;
        if iface != 0 && self.only_first {
            self.only_first = false;
            self.per_interface = vec![self.totals];
        }
        self.totals.add(ts, caplen, wirelen);
        if !self.only_first {
            if self.per_interface.len() <= i {
                self.per_interface.resize(i + 1, Totals::default());
            }
            self.per_interface[i].add(ts, caplen, wirelen);
        }
        in_order
    }

    /// Totals per interface, one for each of `interfaces` interfaces (packets name only
    /// interfaces that exist).
    pub(in crate::trace) fn per_interface(&self, interfaces: usize) -> Vec<Totals> {
        let mut per_interface = match (self.only_first, self.totals.packets) {
            (true, 0) => Vec::new(),
            (true, _) => vec![self.totals],
            (false, _) => self.per_interface.clone(),
        };
        per_interface.resize(interfaces, Totals::default());
        per_interface
    }

    /// Packets per direction (unknown, inbound, outbound) of each of `interfaces` interfaces.
    pub(in crate::trace) fn directions(&self, interfaces: usize) -> Vec<[u64; 3]> {
        let mut directions = self.directions.clone();
        directions.resize(interfaces, [0; 3]);
        directions
    }

    /// The summary of the counted packets with what their time order gave.
    pub(super) fn summary(&self, interfaces: usize, ordered: InTimeOrder) -> Summary {
        let (rates, size_histogram, bursts, ties, mut frame_bytes) = ordered;
        frame_bytes.resize(interfaces, 0);
        Summary {
            totals: self.totals,
            per_interface: self.per_interface(interfaces),
            out_of_order: self.out_of_order,
            max_step_back_ns: self.max_step_back_ns,
            directions: self.directions(interfaces),
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
