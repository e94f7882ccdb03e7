//! The generic DMA engine / root-complex model: plays any transaction stream ([`run`]), such
//! as pcie-bench's ([`super::bench`]) or a DPDK port's ([`crate::iommu::port_stream`]).
//!
//!
//! Each class belongs to an in-order queue (pcie-bench: one; a NIC: Rx and Tx), and the queue
//! whose next transaction can start first goes next. A transaction holds its class's number of
//! the device's `tags` until it completes (a NIC: one per read request, taken when the link can
//! carry the request, none for a posted write; the NFP's pcie-bench firmware: one per transfer,
//! taken at issue). Each one passes, in order: its queue's DMA engine (reads and writes have
//! separate engines, each a serial per-transaction cost), the device's shared data path (a serial cost per transaction,
//! whichever its direction), the upstream link (its request or write TLP bytes), the IOMMU (an
//! IOTLB from [`crate::iommu::iotlb`]; a miss waits for one of `walkers` page walkers, occupies it for
//! `walk_busy_ns` and is translated `walk_ns` after the walk began; a walk that also misses the
//! page-walk cache costs twice both), then for a read the
//! host memory (latency depending on whether the line is warm in the cache) and the downstream
//! link (completion bytes). Posted writes are retired by the root complex (a serial `write_ns`
//! per write) and occupy one of `posted_credits` buffer slots until then, which back-pressures
//! the link the way PCIe flow control does. Times are in nanoseconds.

use std::collections::VecDeque;

use super::servers::{InOrderPool, Pool};
use super::translation::Iommu;
use crate::error::CoreError;

/// What a run measured.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SimResult {
    pub elapsed_ns: f64,
    pub transactions: u64,
    pub iotlb_misses: u64,
    pub cache_hits: u64,
    pub latencies_ns: Vec<f64>,
    /// Time each resource was busy: the upstream and downstream link, the tags (summed over
    /// tags, so tags x elapsed means all were always held) and the root complex's write path.
    pub up_busy_ns: f64,
    pub down_busy_ns: f64,
    pub tag_busy_ns: f64,
    pub rc_busy_ns: f64,
}

impl SimResult {
    /// Transactions per second over the whole run.
    pub fn rate_per_s(&self) -> f64 {
        self.transactions as f64 / self.elapsed_ns * 1e9
    }
}

/// The later of two times: `f64::max` without its NaN handling. A run's times are finite
/// and never -0.0 (its costs go through [`nonneg`] first, and every time is a sum of costs
/// starting from +0.0: a sum is -0.0 only if both terms are), so this picks the same value,
/// bit for bit, with a compare and a select.
#[inline(always)]
pub(super) fn later(a: f64, b: f64) -> f64 {
    if b > a {
        b
    } else {
        a
    }
}

/// `v` with -0.0 made +0.0 (adding +0.0 changes no other value): costs enter a run this way,
/// so no time in it is -0.0 and [`later`] is exact.
pub(super) fn nonneg(v: f64) -> f64 {
    v + 0.0
}

/// Marks the branch that calls it as rare, so the loops keep their registers and straight-line
/// layout for the usual paths: the stable-Rust form of `std::hint::cold_path` (Rust 1.95), so
/// the crate still builds with older toolchains.
#[cold]
#[inline(never)]
pub(super) fn cold_path() {}

/// One kind of DMA transaction: direction, device costs, TLP bytes and host service times.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "pyo3", derive(pyo3::FromPyObject), pyo3(from_item_all))]
pub struct TxnClass {
    pub read: bool,
    /// The in-order DMA queue that issues it, each with a read and a write engine (pcie-bench:
    /// 0 for all; a NIC: 0 for Rx DMA, 1 for Tx DMA).
    pub queue: usize,
    /// Tags it holds from issue to completion: one per read request (a read larger than MRRS
    /// is several); 0 for a posted write, which needs none (PCIe Base 3.0 §2.2.6.2).
    pub tags: u32,
    /// Serial time on its DMA engine.
    pub issue_ns: f64,
    /// Serial time on the device's shared data path.
    pub datapath_ns: f64,
    /// Wire bytes upstream (request or posted write) and downstream (a read's completions; for
    /// a write, host-to-device bytes that go with it, such as the core's doorbell writes).
    pub up_bytes: f64,
    pub down_bytes: f64,
    /// Root-complex time to retire a posted write.
    pub write_ns: f64,
    /// Host latency of a read whose address is warm in the cache, and of one that is not.
    pub hit_ns: f64,
    pub miss_ns: f64,
}

/// Which latency a transaction contributes to the result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Measure {
    Skip,
    /// From its own start to its completion.
    Own,
    /// From the previous transaction's start to this one's completion (write-then-read pairs).
    SincePrevious,
}

/// One DMA transaction of a stream.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Txn {
    pub addr: u64,
    /// Bytes it moves; a transfer that spans pages needs a translation for each of them.
    pub bytes: u64,
    /// Index into the class table.
    pub class: usize,
    /// Earliest time it may start (its packet's arrival); 0 for a closed loop. Finite and
    /// never -0.0, as the streams here make it (a sum of arrival gaps from +0.0): `later`
    /// relies on it.
    pub not_before: f64,
    pub measure: Measure,
}

/// The device's tag pool and fixed latency, the link's two directions and the host's caches.
/// From Python, a NIC's: every read warm and tags taken at the link unless the dict says.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "pyo3", derive(pyo3::FromPyObject), pyo3(from_item_all))]
pub struct Machine {
    pub tags: u32,
    pub fixed_latency_ns: f64,
    pub up_bytes_per_ns: f64,
    pub down_bytes_per_ns: f64,
    /// Reads below this address are warm (hit latency); the rest are cold.
    #[cfg_attr(feature = "pyo3", pyo3(default = u64::MAX))]
    pub warm_bytes: u64,
    pub posted_credits: u32,
    /// A transaction takes its tags when the link can carry its request (a NIC queues requests
    /// on chip until then), not when its engine is ready (the NFP's pcie-bench firmware).
    #[cfg_attr(feature = "pyo3", pyo3(default = true))]
    pub tags_from_link: bool,
    /// How many transactions may be held back from the stream while another queue goes first:
    /// how far one queue may run ahead of the stream's order (irrelevant with one queue).
    pub lookahead: usize,
}

/// Checks a machine and its classes as [`run`] does, for a caller that then runs a stream over
/// some of them only (pcie-bench's read-only and write-only mixes) and must refuse the same
/// parameters as a run over all of them.
pub(super) fn check(m: &Machine, classes: &[TxnClass]) -> Result<(), CoreError> {
    check_machine(m, classes)?;
    Costs::prepare(m, classes).map(drop)
}

fn check_machine(m: &Machine, classes: &[TxnClass]) -> Result<(), CoreError> {
    let costs = classes.iter().flat_map(|c| {
        [
            c.issue_ns,
            c.datapath_ns,
            c.up_bytes,
            c.down_bytes,
            c.write_ns,
            c.hit_ns,
            c.miss_ns,
        ]
    });
    if costs
        .chain([m.fixed_latency_ns])
        .any(|v| !v.is_finite() || v < 0.0)
        || !(m.up_bytes_per_ns > 0.0 && m.down_bytes_per_ns > 0.0)
    {
        return Err(CoreError::BadParameter {
            what: "times, byte counts and rates must be finite, >= 0 (rates > 0)",
        });
    }
    if m.tags == 0 || m.posted_credits == 0 {
        return Err(CoreError::BadParameter {
            what: "tags and posted_credits must be >= 1",
        });
    }
    if classes.iter().any(|c| c.tags > m.tags) {
        return Err(CoreError::BadParameter {
            what: "a transaction class needs more tags than the device has",
        });
    }
    Ok(())
}

/// A class as a run plays it: its costs through [`nonneg`], its engine and its link times
/// (bytes over the link's rate) worked out once instead of per transaction.
#[derive(Debug, Clone, Copy)]
struct Costs {
    c: TxnClass,
    engine: usize,
    up_ns: f64,
    down_ns: f64,
    /// Its tags as a float (they weigh its tag-busy time) and its root-complex time (0 for a
    /// read), so the transaction loop converts and chooses nothing.
    tags: f64,
    rc_ns: f64,
}

impl Costs {
    /// Every class of a checked machine, prepared; link times must be finite.
    fn prepare(m: &Machine, classes: &[TxnClass]) -> Result<Vec<Self>, CoreError> {
        classes
            .iter()
            .map(|c| {
                let c = TxnClass {
                    issue_ns: nonneg(c.issue_ns),
                    datapath_ns: nonneg(c.datapath_ns),
                    up_bytes: nonneg(c.up_bytes),
                    down_bytes: nonneg(c.down_bytes),
                    write_ns: nonneg(c.write_ns),
                    hit_ns: nonneg(c.hit_ns),
                    miss_ns: nonneg(c.miss_ns),
                    ..*c
                };
                let (up_ns, down_ns) = (
                    c.up_bytes / m.up_bytes_per_ns,
                    c.down_bytes / m.down_bytes_per_ns,
                );
                if !(up_ns.is_finite() && down_ns.is_finite()) {
                    return Err(CoreError::BadParameter {
                        what: "bytes over link rates must be finite times",
                    });
                }
                Ok(Self {
                    engine: 2 * c.queue + usize::from(!c.read),
                    c,
                    up_ns,
                    down_ns,
                    tags: f64::from(c.tags),
                    rc_ns: if c.read { 0.0 } else { c.write_ns },
                })
            })
            .collect()
    }
}

/// What serving a transaction moves besides the pools: when the data path, both link
/// directions and the root complex are next free, and the run's sums. Plain values that a
/// loop owns (no pointer to them escapes, unlike the pools'), so a loop that makes no call
/// can keep them in registers instead of loading and storing each one per transaction.
#[derive(Debug, Clone, Copy, Default)]
struct Lane {
    datapath_free: f64,
    up_free: f64,
    down_free: f64,
    rc_free: f64,
    transactions: u64,
    cache_hits: u64,
    up_busy_ns: f64,
    down_busy_ns: f64,
    tag_busy_ns: f64,
    rc_busy_ns: f64,
    /// When the last transaction finished, and when the one before started (write-then-read
    /// pairs measure from it).
    last_done: f64,
    previous_start: f64,
}

/// What a run keeps in memory: the tags and posted-write credits, and the latencies if asked.
struct Held {
    tags: Pool,
    credits: InOrderPool,
    latencies: Vec<f64>,
    record_latencies: bool,
}

impl Held {
    fn new(m: &Machine, record_latencies: bool) -> Self {
        Self {
            tags: Pool::new(m.tags),
            credits: InOrderPool::new(m.posted_credits),
            latencies: Vec::new(),
            record_latencies,
        }
    }

    /// Takes `n` tags for a transaction ready at `ready`; returns when it holds them all.
    /// One tag is the usual case (every pcie-bench transaction, a NIC's small reads).
    #[inline(always)]
    fn take_tags(&mut self, n: u32, ready: f64) -> f64 {
        match n {
            // later(ready, acquire(ready)) is acquire(ready): it is never earlier than ready.
            1 => self.tags.acquire(ready),
            n => {
                cold_path();
                (0..n).fold(ready, |s, _| later(s, self.tags.acquire(ready)))
            }
        }
    }

    /// Gives back `n` tags free from `at`.
    #[inline(always)]
    fn give_tags(&mut self, n: u32, at: f64) {
        match n {
            1 => self.tags.release(at),
            n => {
                cold_path();
                (0..n).for_each(|_| self.tags.release(at));
            }
        }
    }
}

/// Whether class `k` reads, in a stream that holds reads only if `READS`, writes only if
/// `WRITES` (a one-kind stream decides nothing per transaction).
#[inline(always)]
fn reads<const READS: bool, const WRITES: bool>(k: &Costs) -> bool {
    match (READS, WRITES) {
        (true, false) => true,
        (false, true) => false,
        _ => k.c.read,
    }
}

impl Lane {
    /// When a transaction of class `k` whose engine is free at `engine_free` is ready to take
    /// its tags: its engine and its arrival, and the link if tags are taken there.
    #[inline(always)]
    fn ready(&self, m: &Machine, engine_free: f64, txn: &Txn) -> f64 {
        let ready = later(engine_free, txn.not_before);
        if m.tags_from_link {
            later(ready, self.up_free)
        } else {
            ready
        }
    }

    /// Plays one transaction of class `k`, whose engine is free at `engine_free`, through
    /// every stage (module docs); returns when its engine is free next. `translate` gives when
    /// a transfer whose request reached the IOMMU at a time is translated. Inlined into each
    /// loop, specialised to the stream's kinds (`READS`, `WRITES`), to its IOMMU and to
    /// whether latencies may be recorded (`RECORD`: a loop without has no call in it).
    #[inline(always)]
    fn serve<const READS: bool, const WRITES: bool, const RECORD: bool>(
        &mut self,
        held: &mut Held,
        engine_free: f64,
        m: &Machine,
        k: &Costs,
        txn: &Txn,
        translate: &mut impl FnMut(&Txn, f64) -> f64,
    ) -> f64 {
        let c = &k.c;
        let read = reads::<READS, WRITES>(k);
        self.transactions += 1;
        let ready = self.ready(m, engine_free, txn);
        let start = held.take_tags(c.tags, ready);
        let engine_free = start + c.issue_ns;
        self.datapath_free = later(self.datapath_free, engine_free) + c.datapath_ns;
        let up_ns = k.up_ns;
        self.up_free = if read {
            // A read waits for no credit (later(x, 0.0) is x for every time, see `later`).
            later(self.up_free, self.datapath_free) + up_ns
        } else {
            // The oldest credit; a time is never below 0, so this is when one is free.
            later(
                later(self.up_free, self.datapath_free),
                held.credits.first(),
            ) + up_ns
        };
        let t = translate(txn, self.up_free);
        let down_ns = k.down_ns;
        let done = if read {
            let warm = txn.addr < m.warm_bytes;
            self.cache_hits += u64::from(warm);
            let ready = t + if warm { c.hit_ns } else { c.miss_ns };
            self.down_free = later(self.down_free, ready) + down_ns;
            self.down_free
        } else {
            if down_ns > 0.0 {
                self.down_free = later(self.down_free, self.up_free - up_ns) + down_ns;
            }
            self.rc_free = later(self.rc_free, t) + c.write_ns;
            held.credits.cycle(self.rc_free);
            self.up_free
        };
        let finished = done + m.fixed_latency_ns;
        held.give_tags(c.tags, finished);
        self.up_busy_ns += up_ns;
        self.down_busy_ns += down_ns;
        self.tag_busy_ns += k.tags * (finished - start);
        if WRITES {
            // A read's root-complex time is +0.0, which adds nothing: a read-only stream skips it.
            self.rc_busy_ns += k.rc_ns;
        }
        // A posted write leaves the link before its walk ends: the run lasts until the walk
        // has (so a rate never outruns the walkers that served its misses).
        self.last_done = later(later(later(self.last_done, finished), self.down_free), t);
        if RECORD && held.record_latencies {
            match txn.measure {
                Measure::Skip => {}
                Measure::Own => held.latencies.push(finished - start),
                Measure::SincePrevious => held.latencies.push(finished - self.previous_start),
            }
        }
        self.previous_start = start;
        engine_free
    }

    /// Calls `observe` after every [`OBSERVE_EVERY`] transactions (a no-op observer compiles
    /// to nothing).
    #[inline(always)]
    fn observe(&self, observe: &mut impl FnMut(u64, f64)) {
        if self.transactions.is_multiple_of(OBSERVE_EVERY) {
            observe(self.transactions, self.last_done);
        }
    }

    /// The run's result from its sums.
    fn result(self, latencies_ns: Vec<f64>) -> SimResult {
        SimResult {
            elapsed_ns: self.last_done,
            transactions: self.transactions,
            iotlb_misses: 0,
            cache_hits: self.cache_hits,
            latencies_ns,
            up_busy_ns: self.up_busy_ns,
            down_busy_ns: self.down_busy_ns,
            tag_busy_ns: self.tag_busy_ns,
            rc_busy_ns: self.rc_busy_ns,
        }
    }
}

/// The class a transaction names.
#[inline(always)]
fn class_of<'a>(classes: &'a [Costs], txn: &Txn) -> Result<&'a Costs, CoreError> {
    classes.get(txn.class).ok_or(CoreError::BadParameter {
        what: "a transaction names a class that does not exist",
    })
}

/// Plays a transaction stream through the device, link, IOMMU and host (module docs). Each
/// class's queue is served in order; when there are several, the transaction that can start
/// first goes next, so one queue waiting for tags does not hold up the others.
pub fn run(
    m: &Machine,
    classes: &[TxnClass],
    iommu: Option<&mut Iommu>,
    txns: impl Iterator<Item = Txn>,
    record_latencies: bool,
) -> Result<SimResult, CoreError> {
    run_observed(m, classes, iommu, txns, record_latencies, &mut |_, _| {})
}

/// Transactions served between two calls of a run's observer ([`run_observed`]).
pub const OBSERVE_EVERY: u64 = 1024;

/// [`run`], calling `observe(transactions served, time the last of them finished)` after every
/// [`OBSERVE_EVERY`] transactions: what a caller needs to judge the run's rate while it runs
/// (and to end its stream early). The observer cannot change the run.
pub fn run_observed(
    m: &Machine,
    classes: &[TxnClass],
    mut iommu: Option<&mut Iommu>,
    txns: impl Iterator<Item = Txn>,
    record_latencies: bool,
    observe: &mut impl FnMut(u64, f64),
) -> Result<SimResult, CoreError> {
    check_machine(m, classes)?;
    let queues = classes.iter().map(|c| c.queue + 1).max().unwrap_or(1);
    let m = &Machine {
        fixed_latency_ns: nonneg(m.fixed_latency_ns),
        ..m.clone()
    };
    let classes = &Costs::prepare(m, classes)?;
    let misses_before = iommu.as_ref().map_or(0, |i| i.translator.misses);
    let mut held = Held::new(m, record_latencies);
    let lane = if queues == 1 {
        in_order(m, classes, iommu.as_deref_mut(), txns, &mut held, observe)?
    } else {
        schedule(
            m,
            classes,
            queues,
            iommu.as_deref_mut(),
            txns,
            &mut held,
            observe,
        )?
    };
    let mut result = lane.result(held.latencies);
    result.iotlb_misses = iommu.map_or(0, |i| i.translator.misses - misses_before);
    Ok(result)
}

/// Serves one queue in stream order, with a loop specialised to the kinds of transaction its
/// classes can be: reads only, writes only, or both.
fn in_order(
    m: &Machine,
    classes: &[Costs],
    iommu: Option<&mut Iommu>,
    txns: impl Iterator<Item = Txn>,
    held: &mut Held,
    observe: &mut impl FnMut(u64, f64),
) -> Result<Lane, CoreError> {
    let reads = classes.iter().any(|k| k.c.read);
    let writes = classes.iter().any(|k| !k.c.read);
    match (reads, writes, held.record_latencies) {
        (true, false, false) => {
            one_queue::<true, false, false>(m, classes, iommu, txns, held, observe)
        }
        (false, true, false) => {
            one_queue::<false, true, false>(m, classes, iommu, txns, held, observe)
        }
        (_, _, false) => one_queue::<true, true, false>(m, classes, iommu, txns, held, observe),
        (true, false, true) => {
            one_queue::<true, false, true>(m, classes, iommu, txns, held, observe)
        }
        (false, true, true) => {
            one_queue::<false, true, true>(m, classes, iommu, txns, held, observe)
        }
        (_, _, true) => one_queue::<true, true, true>(m, classes, iommu, txns, held, observe),
    }
}

/// The one-queue loops, one with the IOMMU and one without. Their lane and engine times are
/// locals never lent to a call, and neither loop makes a call (an IOTLB miss is inlined too,
/// [`Iommu::translate`]), so both keep most of them in registers.
fn one_queue<const READS: bool, const WRITES: bool, const RECORD: bool>(
    m: &Machine,
    classes: &[Costs],
    iommu: Option<&mut Iommu>,
    txns: impl Iterator<Item = Txn>,
    held: &mut Held,
    observe: &mut impl FnMut(u64, f64),
) -> Result<Lane, CoreError> {
    match iommu {
        Some(iommu) => {
            let mut translate = |txn: &Txn, t| iommu.translate(txn.addr, txn.bytes, t);
            one_queue_loop::<READS, WRITES, RECORD>(m, classes, txns, held, &mut translate, observe)
        }
        None => {
            one_queue_loop::<READS, WRITES, RECORD>(m, classes, txns, held, &mut |_, t| t, observe)
        }
    }
}

#[inline(always)]
fn one_queue_loop<const READS: bool, const WRITES: bool, const RECORD: bool>(
    m: &Machine,
    classes: &[Costs],
    txns: impl Iterator<Item = Txn>,
    held: &mut Held,
    translate: &mut impl FnMut(&Txn, f64) -> f64,
    observe: &mut impl FnMut(u64, f64),
) -> Result<Lane, CoreError> {
    let mut lane = Lane::default();
    // The queue's read and write engines (engine 0 and 1 of queue 0).
    let (mut read_engine, mut write_engine) = (0.0, 0.0);
    for txn in txns {
        let k = class_of(classes, &txn)?;
        let read = reads::<READS, WRITES>(k);
        let engine = if read { read_engine } else { write_engine };
        let engine = lane.serve::<READS, WRITES, RECORD>(held, engine, m, k, &txn, translate);
        if read {
            read_engine = engine;
        } else {
            write_engine = engine;
        }
        lane.observe(observe);
    }
    Ok(lane)
}

/// Serves several queues: up to `lookahead` transactions are held back while another queue
/// goes first; the one that can start first goes next, ties round-robin from the one after
/// the last served.
fn schedule(
    m: &Machine,
    classes: &[Costs],
    queues: usize,
    mut iommu: Option<&mut Iommu>,
    mut txns: impl Iterator<Item = Txn>,
    held: &mut Held,
    observe: &mut impl FnMut(u64, f64),
) -> Result<Lane, CoreError> {
    let mut lane = Lane::default();
    let mut engine_free = vec![0.0; 2 * queues];
    let mut translate = |txn: &Txn, t| match iommu.as_deref_mut() {
        Some(iommu) => iommu.translate(txn.addr, txn.bytes, t),
        None => t,
    };
    let mut pending: Vec<VecDeque<Txn>> = (0..queues).map(|_| VecDeque::new()).collect();
    let mut last_queue = queues - 1;
    loop {
        let mut buffered: usize = pending.iter().map(VecDeque::len).sum();
        while buffered < m.lookahead.max(1) && pending.iter().any(VecDeque::is_empty) {
            let Some(txn) = txns.next() else { break };
            pending[class_of(classes, &txn)?.c.queue].push_back(txn);
            buffered += 1;
        }
        let mut next: Option<(f64, usize)> = None;
        let waiting = pending.iter().filter(|q| !q.is_empty()).count();
        let mut q = last_queue;
        for _ in 0..queues {
            q = if q + 1 == queues { 0 } else { q + 1 }; // round-robin without a division
            if let Some(txn) = pending[q].front() {
                if waiting == 1 {
                    next = Some((0.0, q));
                    break;
                }
                let k = &classes[txn.class];
                let t = earliest_start(&lane, held, m, k, engine_free[k.engine], txn);
                if next.is_none_or(|(best, _)| t < best) {
                    next = Some((t, q));
                }
            }
        }
        let Some((_, q)) = next else { break };
        last_queue = q;
        let txn = pending[q].pop_front().expect("a queue with a head");
        let k = &classes[txn.class];
        let engine = engine_free[k.engine];
        engine_free[k.engine] =
            lane.serve::<true, true, true>(held, engine, m, k, &txn, &mut translate);
        lane.observe(observe);
    }
    Ok(lane)
}

/// Earliest time a transaction of class `k` could go on the link, without taking anything:
/// its engine, its arrival, its tags and, for a write, a posted-write credit.
fn earliest_start(
    lane: &Lane,
    held: &Held,
    m: &Machine,
    k: &Costs,
    engine_free: f64,
    txn: &Txn,
) -> f64 {
    let ready = lane.ready(m, engine_free, txn);
    let start = match k.c.tags {
        0 => ready,
        1 => later(ready, held.tags.first()),
        n => held.tags.earliest(n).fold(ready, later),
    };
    if k.c.read {
        start
    } else {
        later(start, held.credits.first())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iommu::iotlb::{CacheShape, Translator};
    use crate::rng::Rng;
    use crate::sim::translation::Walks;

    #[test]
    fn a_pool_gives_the_earliest_free_server_like_a_sorted_list() {
        // Reference: every free time in one sorted list. Releases in order, in two
        // interleaved orderly streams and at random, all against it (values in 1/8 ns
        // steps, so ties happen).
        let mut rng = Rng(7);
        for servers in [1, 3, 4, 32] {
            let mut pool = Pool::new(servers);
            let mut reference: Vec<f64> = vec![0.0; servers as usize];
            let mut clock = 0.0;
            for step in 0..20_000u64 {
                let ready = rng.below(64) as f64 / 8.0 + clock;
                let expected = reference.remove(0).max(ready);
                assert_eq!(pool.acquire(ready), expected);
                clock += 1.0;
                let at = match step % 3 {
                    0 => clock + 400.0,
                    1 => clock + 10.0,
                    _ => clock + rng.below(800) as f64 / 8.0,
                };
                pool.release(at);
                let i = reference.partition_point(|&t| t <= at);
                reference.insert(i, at);
                let firsts: Vec<f64> = pool.earliest(servers).collect();
                assert_eq!(firsts, reference);
                assert_eq!(pool.first(), reference[0]);
            }
        }
    }

    #[test]
    fn an_in_order_pool_gives_what_a_pool_gives_when_servers_come_back_in_order() {
        // Posted-write credits: each taken, then given back no earlier than the one before
        // (steps of 0..15 eighths of a ns, so ties happen): both pools say the same.
        let mut rng = Rng(3);
        for servers in [1, 2, 5, 64] {
            let (mut pool, mut ring) = (Pool::new(servers), InOrderPool::new(servers));
            let mut at = 0.0;
            for _ in 0..10_000 {
                assert_eq!(ring.first(), pool.first());
                pool.acquire(0.0);
                at += rng.below(16) as f64 / 8.0;
                pool.release(at);
                ring.cycle(at);
            }
        }
    }

    #[test]
    fn later_is_max_for_every_time_a_run_can_hold() {
        // Non-negative finite values, never -0.0 (what nonneg lets in): later == f64::max,
        // bit for bit, including ties and zeros.
        let values = [
            0.0,
            nonneg(-0.0),
            1e-300,
            0.5,
            1.0,
            1.0 + f64::EPSILON,
            1e300,
        ];
        for a in values {
            for b in values {
                assert_eq!(later(a, b).to_bits(), a.max(b).to_bits(), "{a} {b}");
            }
        }
        assert_eq!(nonneg(-0.0).to_bits(), 0.0f64.to_bits());
    }

    /// A device of `tags` tags on a link of 8 B/ns each way, fixed latency 0, no IOMMU.
    fn machine(tags: u32) -> Machine {
        Machine {
            tags,
            fixed_latency_ns: 0.0,
            up_bytes_per_ns: 8.0,
            down_bytes_per_ns: 8.0,
            warm_bytes: u64::MAX,
            posted_credits: 1024,
            tags_from_link: true,
            lookahead: 64,
        }
    }

    fn nic_read(tags: u32) -> TxnClass {
        TxnClass {
            read: true,
            queue: 0,
            tags,
            issue_ns: 0.0,
            datapath_ns: 0.0,
            up_bytes: 24.0,
            down_bytes: 84.0,
            write_ns: 0.0,
            hit_ns: 500.0,
            miss_ns: 500.0,
        }
    }

    fn posted_write(tags: u32, down_bytes: f64) -> TxnClass {
        TxnClass {
            read: false,
            up_bytes: 88.0,
            down_bytes,
            hit_ns: 0.0,
            miss_ns: 0.0,
            ..nic_read(tags)
        }
    }

    fn stream(classes: &[usize], n: usize) -> impl Iterator<Item = Txn> + '_ {
        (0..n).map(move |i| Txn {
            addr: 0,
            bytes: 64,
            class: classes[i % classes.len()],
            not_before: 0.0,
            measure: Measure::Own,
        })
    }

    #[test]
    fn an_observer_sees_every_1024th_transaction_and_changes_nothing() {
        // Two queues (Rx writes, Tx reads) as a NIC's, and one queue: the observer is called at
        // 1024, 2048, ... served transactions with the finish time so far (never falling), and
        // the run is bit for bit the one without an observer.
        let rx_tx = [
            posted_write(0, 0.0),
            TxnClass {
                queue: 1,
                ..nic_read(1)
            },
        ];
        for (classes, kinds) in [(&rx_tx[..], &[0, 1][..]), (&rx_tx[..1], &[0][..])] {
            let m = machine(32);
            let plain = run(&m, classes, None, stream(kinds, 5000), true).unwrap();
            let mut seen = Vec::new();
            let observed =
                run_observed(&m, classes, None, stream(kinds, 5000), true, &mut |n, t| {
                    seen.push((n, t));
                })
                .unwrap();
            assert_eq!(observed, plain);
            let counts: Vec<u64> = seen.iter().map(|&(n, _)| n).collect();
            assert_eq!(counts, [1024, 2048, 3072, 4096]);
            assert!(seen.windows(2).all(|w| w[0].1 <= w[1].1));
            assert!(seen[3].1 <= plain.elapsed_ns && seen[0].1 > 0.0);
        }
    }

    #[test]
    fn a_read_split_into_requests_holds_a_tag_for_each() {
        // 30 tags, 3 requests per read: 10 reads in flight of 3 + 500 + 10.5 ns each, so
        // 10 / 513.5 ns = 19.47 M reads/s, and every tag is held all the time.
        let r = run(
            &machine(30),
            &[nic_read(3)],
            None,
            stream(&[0], 60_000),
            false,
        )
        .unwrap();
        let expected = 10.0 / 513.5 * 1e9;
        assert!(
            (r.rate_per_s() / expected - 1.0).abs() < 0.01,
            "{}",
            r.rate_per_s()
        );
        assert!((r.tag_busy_ns / (30.0 * r.elapsed_ns) - 1.0).abs() < 0.01);
    }

    #[test]
    fn posted_writes_that_take_no_tag_do_not_wait_for_one() {
        // One tag; a read (513.5 ns) then three 11 ns writes. Untagged, the writes go while the
        // read is out: 4 transactions per 513.5 ns. Holding the tag, each waits for the one
        // before: 4 per 513.5 + 3 x 11 = 546.5 ns.
        let pattern = [0, 1, 1, 1];
        let rate = |write_tags| {
            let classes = [nic_read(1), posted_write(write_tags, 0.0)];
            run(&machine(1), &classes, None, stream(&pattern, 40_000), false)
                .unwrap()
                .rate_per_s()
        };
        assert!(
            (rate(0) / (4.0 / 513.5 * 1e9) - 1.0).abs() < 0.01,
            "{}",
            rate(0)
        );
        assert!(
            (rate(1) / (4.0 / 546.5 * 1e9) - 1.0).abs() < 0.01,
            "{}",
            rate(1)
        );
    }

    #[test]
    fn a_writes_host_bytes_occupy_the_downstream_link() {
        // Writes of 88 B up that carry 160 B of doorbells down: the downstream link binds at
        // 8 / 160 = 50 M writes/s (the upstream alone would allow 8 / 88 = 90.9 M/s).
        let r = run(
            &machine(1),
            &[posted_write(0, 160.0)],
            None,
            stream(&[0], 50_000),
            false,
        )
        .unwrap();
        assert!(
            (r.rate_per_s() / 50e6 - 1.0).abs() < 0.01,
            "{}",
            r.rate_per_s()
        );
        assert!((r.down_busy_ns - 50_000.0 * 20.0).abs() < 1e-6);
        assert!((r.up_busy_ns - 50_000.0 * 11.0).abs() < 1e-6);
    }

    #[test]
    fn a_nic_holds_tags_from_the_link_not_while_its_requests_queue() {
        // Reads arrive all at once behind a slow request link (240 B requests at 8 B/ns: 30 ns
        // each) with 64 tags: the link binds at 33.3 M reads/s either way, but only a tag
        // taken at issue is held through the queue (all 64 busy); taken at the link, a read
        // holds it 30 + 500 + 10.5 ns, so 33.3 M/s x 540.5 ns = 18 tags are busy on average.
        let slow = TxnClass {
            up_bytes: 240.0,
            ..nic_read(1)
        };
        let busy = |from_link| {
            let m = Machine {
                tags_from_link: from_link,
                ..machine(64)
            };
            let r = run(&m, &[slow], None, stream(&[0], 50_000), false).unwrap();
            assert!((r.rate_per_s() / (8.0 / 240.0 * 1e9) - 1.0).abs() < 0.01);
            r.tag_busy_ns / (64.0 * r.elapsed_ns)
        };
        assert!(busy(false) > 0.99);
        assert!(
            (busy(true) - 540.5 / 30.0 / 64.0).abs() < 0.01,
            "{}",
            busy(true)
        );
    }

    #[test]
    fn a_queue_waiting_for_tags_does_not_hold_up_another() {
        // Bursts of 8 reads (4 tags, 513.5 ns each: two waves, about 1027 ns) then 8 writes of
        // 110 ns on the link (880 B at 8 B/ns). In one queue the writes wait for the last read's
        // request, which waits for the fourth tag: completions leave the down link 10.5 ns
        // apart, so it goes at 513.5 + 3 x 10.5 and is sent 3 ns later; the next burst's reads
        // wait for the writes: 513.5 + 31.5 + 3 + 880 = 1428 ns per 16. With the writes on a
        // queue of their own they overlap the read waves, and the reads bind.
        let write = TxnClass {
            up_bytes: 880.0,
            ..posted_write(0, 0.0)
        };
        let pattern = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1];
        let rate = |write_queue| {
            let classes = [
                nic_read(1),
                TxnClass {
                    queue: write_queue,
                    ..write
                },
            ];
            run(&machine(4), &classes, None, stream(&pattern, 64_000), false)
                .unwrap()
                .rate_per_s()
        };
        let (one, two) = (rate(0), rate(1));
        assert!((one / (16.0 / 1428.0 * 1e9) - 1.0).abs() < 0.01, "{one}");
        assert!(two <= 16.0 / 1027.0 * 1e9 * 1.01, "{two}");
        assert!(two > 1.25 * one, "{two} vs {one}");
    }

    #[test]
    fn a_one_kind_stream_plays_alike_in_its_own_loop_and_in_the_mixed_one() {
        // A table of one class plays in the loop for its kind, which skips what cannot apply
        // (a credit for a read, a read's +0.0 root-complex time); with a class of the other
        // kind beside it, in the mixed loop. Same stream, same result bit for bit, with and
        // without latencies and an IOMMU (16 entries, 2 walkers, over 64 pages).
        let m = Machine {
            posted_credits: 4,
            ..machine(8)
        };
        let write = TxnClass {
            write_ns: 3.0,
            ..posted_write(1, 16.0)
        };
        let shape = CacheShape::lru(16);
        let walks = Walks {
            walk_ns: 200.0,
            walk_busy_ns: 100.0,
            walkers: 2,
        };
        let mut rng = Rng(11);
        let addrs: Vec<u64> = (0..5_000).map(|_| rng.below(64 << 12)).collect();
        for (alone, other) in [(nic_read(1), write), (write, nic_read(1))] {
            for (record, with_iommu) in [(false, false), (true, false), (false, true), (true, true)]
            {
                let play = |classes: &[TxnClass]| {
                    let translator = Translator::new(shape, 0, 4096, 64 << 12, 1).unwrap();
                    let mut iommu = Iommu::new(translator, walks).unwrap();
                    let txns = addrs.iter().map(|&addr| Txn {
                        addr,
                        ..stream(&[0], 1).next().unwrap()
                    });
                    run(&m, classes, with_iommu.then_some(&mut iommu), txns, record).unwrap()
                };
                let (own, mixed) = (play(&[alone]), play(&[alone, other]));
                assert_eq!(
                    own, mixed,
                    "read {} record {record} iommu {with_iommu}",
                    alone.read
                );
                assert!(own.elapsed_ns > 0.0 && (own.iotlb_misses > 0) == with_iommu);
            }
        }
    }

    #[test]
    fn a_class_needing_more_tags_than_the_device_has_is_refused() {
        assert!(run(&machine(2), &[nic_read(3)], None, stream(&[0], 1), false).is_err());
    }
}
