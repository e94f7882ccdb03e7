//! Address translation in time: the IOMMU's caches ([`crate::iommu::iotlb`]) plus the page
//! walkers that serve their misses.

use super::engine::{cold_path, later, nonneg};
use super::servers::{InOrderPool, Pool};
use crate::error::CoreError;
use crate::iommu::iotlb::{Lookup, Translator};

/// Page-walk timing: the walk's latency, how long it keeps a walker busy, how many walkers.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "pyo3", derive(pyo3::FromPyObject), pyo3(from_item_all))]
pub struct Walks {
    pub walk_ns: f64,
    pub walk_busy_ns: f64,
    pub walkers: u32,
}

/// An IOMMU in time: the translation caches plus the walkers that serve their misses.
pub struct Iommu {
    pub translator: Translator,
    walks: Walks,
    walkers: Walkers,
}

/// The page walkers. Walks are requested in time order (when a request leaves the link, a
/// time that never decreases); without a page-walk cache each keeps its walker as long, so
/// walkers come back in the order taken ([`InOrderPool`]: one overwrite per walk, the same
/// times a [`Pool`] gives); with one, a walk that misses it takes twice as long and may come
/// back before an earlier one.
enum Walkers {
    InOrder(InOrderPool),
    Any(Pool),
}

impl Iommu {
    pub fn new(translator: Translator, walks: Walks) -> Result<Self, CoreError> {
        if walks.walkers == 0
            || !(walks.walk_ns.is_finite() && walks.walk_ns >= 0.0)
            || !(walks.walk_busy_ns.is_finite() && walks.walk_busy_ns >= 0.0)
        {
            return Err(CoreError::BadParameter {
                what: "page walks need walkers >= 1 and finite walk times >= 0",
            });
        }
        let walks = Walks {
            walk_ns: nonneg(walks.walk_ns),
            walk_busy_ns: nonneg(walks.walk_busy_ns),
            ..walks
        };
        let walkers = if translator.has_walk_cache() {
            Walkers::Any(Pool::new(walks.walkers))
        } else {
            Walkers::InOrder(InOrderPool::new(walks.walkers))
        };
        Ok(Self {
            translator,
            walks,
            walkers,
        })
    }

    /// When a transfer whose request reached the IOMMU at `t` is translated (every page it
    /// spans; their walks may overlap on different walkers). Inlined into the transaction loop:
    /// most transfers lie in one page that hits, and that path is a compare and a lookup; a
    /// miss ([`Self::walk_missed`]) is inlined too, so the loop makes no call and keeps its
    /// clocks in registers.
    #[inline(always)]
    pub(super) fn translate(&mut self, addr: u64, bytes: u64, t: f64) -> f64 {
        let (first, last) = self.translator.page_span(addr, bytes);
        if first == last {
            // No test for the page looked up last: a hit that changes nothing either way, and
            // with random pages over a small window an unpredictable branch.
            if self.translator.hit_new_page(first) {
                return t;
            }
            return later(t, self.walk_missed(first, t));
        }
        cold_path();
        let mut done = t;
        for page in first..=last {
            let lookup = self.translator.lookup_page(page);
            if lookup != Lookup::Hit {
                done = later(done, self.walk(lookup, t));
            }
        }
        done
    }

    /// Finishes the look-up of a page the IOTLB missed and walks it for a request at `t`;
    /// returns when the translation is done. Inlined: as one call per miss it made the loop
    /// save and restore its clocks around the call (callgrind, bench_sim's 4 KiB-page points:
    /// reads 234.4 -> 208.6, writes 241.3 -> 220.7, rw 280.6 -> 250.3 instructions per
    /// transaction).
    #[inline(always)]
    fn walk_missed(&mut self, page: u64, t: f64) -> f64 {
        let missed = self.translator.finish_miss(page);
        self.walk(missed, t)
    }

    /// Serves a missed translation requested at `t` on the walker that frees first; returns
    /// when the translation is done.
    #[inline(always)]
    fn walk(&mut self, missed: Lookup, t: f64) -> f64 {
        let levels = if missed == Lookup::LongWalk { 2.0 } else { 1.0 };
        let busy = levels * self.walks.walk_busy_ns;
        let began = match &mut self.walkers {
            Walkers::InOrder(walkers) => {
                let began = later(walkers.first(), t);
                walkers.cycle(began + busy);
                began
            }
            Walkers::Any(walkers) => {
                let began = walkers.acquire(t);
                walkers.release(began + busy);
                began
            }
        };
        began + levels * self.walks.walk_ns
    }
}
