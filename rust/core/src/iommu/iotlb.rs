//! The IOMMU's translation caches: a set-associative IOTLB and an optional page-walk cache.
//!
//! One implementation serves both the pcie-bench simulator and the DPDK address-stream model,
//! so the parameters fitted to pcie-bench's window sweeps apply unchanged to DPDK ports.
//! Pages are numbered densely from 0 (callers lay their address space out compactly), which
//! lets a lookup be one array index instead of a hash.

use crate::error::CoreError;
use crate::rng::Rng;

/// How a full set picks its victim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replacement {
    /// Exact least-recently-used.
    Lru,
    /// A uniformly random way of the set (seeded, reproducible).
    Random,
}

/// Shape of an IOTLB: how many entries, how they are grouped and replaced.
/// From Python: a dict's `iotlb_entries`, `iotlb_ways` and `replacement`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "pyo3", derive(pyo3::FromPyObject), pyo3(from_item_all))]
pub struct CacheShape {
    #[cfg_attr(feature = "pyo3", pyo3(item("iotlb_entries")))]
    pub entries: u32,
    /// Entries per set; 0 or `entries` means fully associative.
    #[cfg_attr(feature = "pyo3", pyo3(item("iotlb_ways")))]
    pub ways: u32,
    pub replacement: Replacement,
}

impl CacheShape {
    /// A fully associative cache of `entries` entries that evicts the least recently used.
    pub const fn lru(entries: u32) -> Self {
        CacheShape {
            entries,
            ways: 0,
            replacement: Replacement::Lru,
        }
    }
}

const NONE: u32 = u32::MAX;

/// A slot's neighbours on its set's recency list (`NONE` at either end).
#[derive(Clone, Copy)]
struct Link {
    prev: u32,
    next: u32,
}

/// A page's slot (`NONE` when not cached), the sentinel of its set's recency ring and whether
/// a caller marked it touched: one entry, so a look-up that also marks checks one index, not
/// two, and a hit relinks without working out the page's set.
#[derive(Clone, Copy)]
struct PageSlot {
    slot: u32,
    sentinel: u32,
    marked: bool,
}

/// A set-associative translation cache over dense page numbers `0..pages`.
///
/// Each set keeps its ways on a doubly linked recency list (head = most recent), so LRU
/// lookups and updates are O(1) whatever the associativity.
pub struct Iotlb {
    ways: u32,
    replacement: Replacement,
    rng: Rng,
    slot_of_page: Vec<PageSlot>,
    /// The page in each slot; a power-of-two length, indexed through `slot_mask`.
    page_of_slot: Vec<u64>,
    slot_mask: usize,
    /// Each slot's neighbours on its set's recency list, side by side (one load for both),
    /// then one sentinel per set (`entries + set`): the list is a ring through its sentinel,
    /// whose `next` is the most recent slot and `prev` the least, so linking and unlinking
    /// never test for an end. A power-of-two length, indexed through `link_mask`: every
    /// index is in range, so the relinks of a look-up check bounds once, not per link.
    links: Vec<Link>,
    link_mask: usize,
    entries: u32,
    used: Vec<u32>,
    /// Whether every set has a way for each page that maps to it: nothing is ever evicted,
    /// so recency is never consulted and a hit leaves it alone.
    never_evicts: bool,
}

/// The recency links of an [`Iotlb`] as one slice of `mask + 1` entries, indexed `& mask`
/// (no index can be out of range, so none is checked).
struct Links<'a> {
    links: &'a mut [Link],
    mask: usize,
}

impl Links<'_> {
    #[inline(always)]
    fn get(&self, i: u32) -> Link {
        self.links[i as usize & self.mask]
    }

    #[inline(always)]
    fn at(&mut self, i: u32) -> &mut Link {
        &mut self.links[i as usize & self.mask]
    }

    #[inline(always)]
    fn unlink(&mut self, s: u32) {
        let Link { prev, next } = self.get(s);
        self.at(prev).next = next;
        self.at(next).prev = prev;
    }

    #[inline(always)]
    fn push_front(&mut self, sentinel: u32, s: u32) {
        let head = self.get(sentinel).next;
        *self.at(s) = Link {
            prev: sentinel,
            next: head,
        };
        self.at(head).prev = s;
        self.at(sentinel).next = s;
    }
}

impl Iotlb {
    /// An empty cache of `shape` for pages `0..pages`; `seed` drives random replacement.
    pub fn new(shape: CacheShape, pages: u64, seed: u64) -> Result<Self, CoreError> {
        let ways = if shape.ways == 0 {
            shape.entries
        } else {
            shape.ways
        };
        if shape.entries == 0 || ways > shape.entries || !shape.entries.is_multiple_of(ways) {
            return Err(CoreError::BadParameter {
                what: "IOTLB entries must be >= 1 and a multiple of its ways",
            });
        }
        let sets = shape.entries / ways;
        let n = shape.entries;
        // Slots start unlinked; each set's sentinel starts as a ring of one; the padding up
        // to a power of two is never reached.
        let link_len = (n as usize + sets as usize).next_power_of_two();
        let links = (0..link_len as u32)
            .map(|i| {
                let to = if i < n || i >= n + sets { NONE } else { i };
                Link { prev: to, next: to }
            })
            .collect();
        let slot_len = (n as usize).next_power_of_two();
        let sets = u64::from(sets);
        // Set s holds the pages p = s mod sets: at most ceil(pages / sets) of them.
        let never_evicts = pages.div_ceil(sets) <= u64::from(ways);
        Ok(Self {
            ways,
            replacement: shape.replacement,
            rng: Rng(seed),
            slot_of_page: (0..pages)
                .map(|page| PageSlot {
                    slot: NONE,
                    sentinel: n + (page % sets) as u32,
                    marked: false,
                })
                .collect(),
            page_of_slot: vec![0; slot_len],
            slot_mask: slot_len - 1,
            links,
            link_mask: link_len - 1,
            entries: n,
            used: vec![0; sets as usize],
            never_evicts,
        })
    }

    /// The recency links, checked against their length once.
    #[inline(always)]
    fn links(&mut self) -> Links<'_> {
        Links {
            links: &mut self.links[..=self.link_mask],
            mask: self.link_mask,
        }
    }

    /// Looks `page` up; true on a hit. A miss installs it, evicting a victim of its set.
    #[inline(always)]
    pub fn access(&mut self, page: u64) -> bool {
        let hit = self.touch::<false>(page);
        if !hit {
            self.install(page);
        }
        hit
    }

    /// Looks `page` up, marking it touched if `MARK`: on a hit makes it its set's most
    /// recent and returns true; a miss changes nothing else (the caller installs it:
    /// [`Self::install`]).
    #[inline(always)]
    fn touch<const MARK: bool>(&mut self, page: u64) -> bool {
        let entry = &mut self.slot_of_page[page as usize];
        if MARK {
            entry.marked = true;
        }
        let PageSlot { slot, sentinel, .. } = *entry;
        if slot == NONE {
            return false;
        }
        if self.never_evicts {
            return true;
        }
        // No test for a slot that is already its set's most recent: relinking it leaves the
        // ring as it was, and the one caller that repeats a page (`Translator`) skips the
        // look-up altogether, so in a fully associative cache the test never held.
        let mut links = self.links();
        links.unlink(slot);
        links.push_front(sentinel, slot);
        true
    }

    /// Puts a missed `page` at the front of its set, in a free way or over the victim's.
    /// Inlined into the callers' miss paths ([`Translator`]'s and [`Self::access`]'s): a
    /// miss is at most one call, not two.
    #[inline(always)]
    fn install(&mut self, page: u64) {
        let sentinel = self.slot_of_page[page as usize].sentinel;
        let set = (sentinel - self.entries) as usize;
        // The fields apart, each slice checked against its length once per miss.
        let Self {
            ways,
            replacement,
            rng,
            slot_of_page,
            page_of_slot,
            slot_mask,
            links,
            link_mask,
            used,
            ..
        } = self;
        let (ways, slot_mask) = (*ways, *slot_mask);
        let mut links = Links {
            links: &mut links[..=*link_mask],
            mask: *link_mask,
        };
        let page_of_slot = &mut page_of_slot[..=slot_mask];
        let used = &mut used[set];
        let slot = if *used < ways {
            // A free way: a set fills its ways in order.
            let slot = set as u32 * ways + *used;
            *used += 1;
            page_of_slot[slot as usize & slot_mask] = page;
            slot
        } else {
            let victim = match replacement {
                Replacement::Lru => links.get(sentinel).prev,
                Replacement::Random => set as u32 * ways + rng.below(u64::from(ways)) as u32,
            };
            let old = std::mem::replace(&mut page_of_slot[victim as usize & slot_mask], page);
            slot_of_page[old as usize].slot = NONE;
            links.unlink(victim);
            victim
        };
        slot_of_page[page as usize].slot = slot;
        links.push_front(sentinel, slot);
    }
}

impl Iotlb {
    /// How many pages have been marked touched since [`Self::clear_marks`].
    pub fn marked(&self) -> usize {
        self.slot_of_page.iter().filter(|p| p.marked).count()
    }

    /// Forgets which pages were marked.
    pub fn clear_marks(&mut self) {
        for p in &mut self.slot_of_page {
            p.marked = false;
        }
    }
}

/// Page-table entries per table page (x86-64 / VT-d second-level tables: 4 KiB of 8 B PTEs).
pub const ENTRIES_PER_TABLE: u64 = 512;

/// What a translation cost: nothing, one walk, or a walk that also missed the page-walk cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup {
    Hit,
    Walk,
    LongWalk,
}

/// The IOMMU's caches for one address space of fixed-size pages.
pub struct Translator {
    page_shift: u32,
    tlb: Iotlb,
    /// Caches the last-level table page covering 512 pages; a miss costs one more table read.
    pwc: Option<Iotlb>,
    /// The page looked up last: it is its set's most recent, so looking it up again is a hit
    /// that changes nothing (most transactions follow one to the same page).
    last_page: u64,
    pub misses: u64,
    pub pwc_misses: u64,
}

impl Translator {
    /// Caches for addresses `0..span` in pages of `page_bytes` (a power of two).
    pub fn new(
        shape: CacheShape,
        pwc_entries: u32,
        page_bytes: u64,
        span: u64,
        seed: u64,
    ) -> Result<Self, CoreError> {
        if !page_bytes.is_power_of_two() {
            return Err(CoreError::NotPowerOfTwo {
                name: "page size",
                value: page_bytes,
            });
        }
        let pages = span.div_ceil(page_bytes) + 1;
        let pwc_shape = CacheShape::lru(pwc_entries);
        let pwc = (pwc_entries > 0)
            .then(|| Iotlb::new(pwc_shape, pages.div_ceil(ENTRIES_PER_TABLE) + 1, seed ^ 1))
            .transpose()?;
        Ok(Self {
            page_shift: page_bytes.trailing_zeros(),
            tlb: Iotlb::new(shape, pages, seed)?,
            pwc,
            last_page: u64::MAX,
            misses: 0,
            pwc_misses: 0,
        })
    }

    /// Zeroes the miss counts and the pages marked touched, and forgets the page looked
    /// up last (its next look-up walks the IOTLB: a hit on its most recent entry, which
    /// changes nothing), so a caller that skips repeats ([`Self::is_last`]) sees and marks
    /// every page again after the reset.
    pub fn reset_counts(&mut self) {
        (self.misses, self.pwc_misses, self.last_page) = (0, 0, u64::MAX);
        self.tlb.clear_marks();
    }

    /// The distinct pages marked touched ([`Self::mark_and_lookup_new_page`]) since the
    /// caches were made or their counts reset.
    pub fn pages_marked(&self) -> usize {
        self.tlb.marked()
    }

    /// The numbers of the pages a transfer touches (a half-open range: the plain `Range`
    /// iterator, without the inclusive one's exhaustion flag in the per-transaction loop).
    #[inline]
    pub fn page_numbers(&self, addr: u64, bytes: u64) -> std::ops::Range<u64> {
        let shift = self.page_shift;
        (addr >> shift)..((addr + bytes.max(1) - 1) >> shift) + 1
    }

    /// Translates `addr`, counting misses.
    #[inline]
    pub fn lookup(&mut self, addr: u64) -> Lookup {
        self.lookup_page(addr >> self.page_shift)
    }

    /// The first and last page numbers a transfer touches (a 0-byte one touches its first).
    #[inline]
    pub fn page_span(&self, addr: u64, bytes: u64) -> (u64, u64) {
        let shift = self.page_shift;
        (addr >> shift, (addr + bytes.max(1) - 1) >> shift)
    }

    /// The number of the page `addr` lies in.
    #[inline]
    pub fn page_of(&self, addr: u64) -> u64 {
        addr >> self.page_shift
    }

    /// Translates page number `page`, counting misses.
    #[inline]
    pub fn lookup_page(&mut self, page: u64) -> Lookup {
        if self.is_last(page) {
            return Lookup::Hit;
        }
        self.lookup_new_page(page)
    }

    /// Whether `page` is the page looked up last: looking it up again is a hit that changes
    /// nothing.
    #[inline(always)]
    pub fn is_last(&self, page: u64) -> bool {
        page == self.last_page
    }

    /// Translates page number `page`, which is not the one looked up last
    /// ([`Self::is_last`]: a caller that skips repeats itself), counting misses.
    #[inline(always)]
    pub fn lookup_new_page(&mut self, page: u64) -> Lookup {
        self.lookup_new::<false>(page)
    }

    /// [`Self::lookup_new_page`], marking the page touched ([`Self::pages_marked`]).
    #[inline(always)]
    pub fn mark_and_lookup_new_page(&mut self, page: u64) -> Lookup {
        self.lookup_new::<true>(page)
    }

    #[inline(always)]
    fn lookup_new<const MARK: bool>(&mut self, page: u64) -> Lookup {
        self.last_page = page;
        if self.tlb.touch::<MARK>(page) {
            return Lookup::Hit;
        }
        self.miss(page)
    }

    /// [`Self::finish_miss`] out of line, for [`Self::lookup_new_page`]: the look-up that
    /// inlines into the stream's loops is the hit path, and a miss is one call.
    #[inline(never)]
    fn miss(&mut self, page: u64) -> Lookup {
        self.finish_miss(page)
    }

    /// Looks up page number `page` on the hit path only: true on a hit (as
    /// [`Self::lookup_page`]'s; the page looked up last is always one, and its look-up changes
    /// nothing); on a miss, false with nothing installed or counted, and the caller must
    /// finish the look-up with [`Self::finish_miss`]. The simulator's transaction loop inlines
    /// both.
    #[inline(always)]
    pub fn hit_new_page(&mut self, page: u64) -> bool {
        self.last_page = page;
        self.tlb.touch::<false>(page)
    }

    /// Finishes the look-up of a page [`Self::hit_new_page`] missed, as [`Self::lookup_new_page`]
    /// would have: installs it, counts the miss and asks the page-walk cache for the page's
    /// table. Inlined: the simulator's transaction loop then makes no call on a miss.
    #[inline(always)]
    pub fn finish_miss(&mut self, page: u64) -> Lookup {
        self.tlb.install(page);
        self.misses += 1;
        let table_cached = self
            .pwc
            .as_mut()
            .is_none_or(|pwc| pwc.access(page / ENTRIES_PER_TABLE));
        if table_cached {
            Lookup::Walk
        } else {
            self.pwc_misses += 1;
            Lookup::LongWalk
        }
    }

    /// Whether a miss may also miss a page-walk cache ([`Lookup::LongWalk`]): whether there
    /// is one.
    pub fn has_walk_cache(&self) -> bool {
        self.pwc.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(entries: u32, ways: u32, replacement: Replacement) -> CacheShape {
        CacheShape {
            entries,
            ways,
            replacement,
        }
    }

    fn misses(tlb: &mut Iotlb, pages: impl Iterator<Item = u64>) -> usize {
        pages.filter(|&p| !tlb.access(p)).count()
    }

    #[test]
    fn lru_thrashes_on_a_cycle_one_page_longer_than_it_holds() {
        // Textbook LRU pathology: cycling over entries + 1 pages misses every time.
        let mut tlb = Iotlb::new(shape(4, 0, Replacement::Lru), 16, 1).unwrap();
        assert_eq!(misses(&mut tlb, (0..100).map(|i| i % 5)), 100);
    }

    #[test]
    fn random_replacement_keeps_some_of_a_cycle_that_lru_loses() {
        let mut tlb = Iotlb::new(shape(4, 0, Replacement::Random), 16, 1).unwrap();
        let missed = misses(&mut tlb, (0..10_000).map(|i| i % 5));
        assert!(missed < 9_000, "{missed}");
    }

    #[test]
    fn a_cycle_that_fits_only_takes_compulsory_misses() {
        for replacement in [Replacement::Lru, Replacement::Random] {
            let mut tlb = Iotlb::new(shape(8, 0, replacement), 16, 7).unwrap();
            assert_eq!(misses(&mut tlb, (0..1000).map(|i| i % 8)), 8);
        }
    }

    #[test]
    fn direct_mapped_pages_of_one_set_evict_each_other() {
        // 4 sets of 1 way: pages 0 and 4 share set 0 and keep evicting each other.
        let mut tlb = Iotlb::new(shape(4, 1, Replacement::Lru), 16, 1).unwrap();
        assert_eq!(misses(&mut tlb, (0..100).map(|i| (i % 2) * 4)), 100);
        // Pages 0..4 land in different sets: compulsory misses only.
        let mut tlb = Iotlb::new(shape(4, 1, Replacement::Lru), 16, 1).unwrap();
        assert_eq!(misses(&mut tlb, (0..100).map(|i| i % 4)), 4);
    }

    #[test]
    fn the_page_walk_cache_covers_512_pages_per_entry() {
        let tlb = shape(1, 0, Replacement::Lru);
        let mut t = Translator::new(tlb, 1, 4096, 4096 * 2048, 1).unwrap();
        assert_eq!(t.lookup(0), Lookup::LongWalk);
        assert_eq!(t.lookup(4096), Lookup::Walk); // same table page, new IOTLB page
        assert_eq!(t.lookup(4096), Lookup::Hit);
        assert_eq!(t.lookup(4096 * 512), Lookup::LongWalk);
        assert_eq!((t.misses, t.pwc_misses), (3, 2));
    }

    /// Which look-ups of `pages` miss an exact-LRU cache of `sets` x `ways`, the plain way:
    /// each set's pages in a list, most recent last.
    fn reference_lru_misses(sets: u64, ways: usize, pages: &[u64]) -> Vec<bool> {
        let mut lists = vec![Vec::new(); sets as usize];
        pages
            .iter()
            .map(|&page| {
                let list = &mut lists[(page % sets) as usize];
                let at = list.iter().position(|&p| p == page);
                if let Some(i) = at {
                    list.remove(i);
                } else if list.len() == ways {
                    list.remove(0);
                }
                list.push(page);
                at.is_none()
            })
            .collect()
    }

    #[test]
    fn lru_misses_exactly_where_a_plain_lru_list_does() {
        // Random look-ups over a few more pages than fit (so victims are chosen all the
        // time), with runs of one page (the skip of a repeated most recent way) and enough
        // look-ups to fill and compact every recency queue many times over.
        for (entries, ways, pages) in [(4, 0, 6), (96, 0, 130), (64, 4, 100), (8, 2, 9)] {
            let mut rng = Rng(u64::from(entries) * 31 + u64::from(ways));
            let stream: Vec<u64> = (0..50_000)
                .map(|_| rng.below(pages))
                .flat_map(|p| std::iter::repeat_n(p, 1 + (p % 3) as usize))
                .collect();
            let mut tlb = Iotlb::new(shape(entries, ways, Replacement::Lru), pages, 1).unwrap();
            let got: Vec<bool> = stream.iter().map(|&p| !tlb.access(p)).collect();
            let sets = u64::from(entries / if ways == 0 { entries } else { ways });
            let ways = (entries as u64 / sets) as usize;
            assert_eq!(
                got,
                reference_lru_misses(sets, ways, &stream),
                "{entries}/{ways}"
            );
        }
    }

    #[test]
    fn a_cache_with_a_way_for_every_page_misses_each_page_once() {
        // 8 pages: 4 sets of 2 ways hold pages {0, 4}, {1, 5}, ... (nothing is evicted, so
        // hits skip the recency update), fully associative 8 entries all of them; 4 sets of
        // 1 way do not (pages 0 and 4 share a way) and miss as the plain LRU list does.
        for (entries, ways, expect) in [(8, 2, Some(8)), (8, 0, Some(8)), (4, 1, None)] {
            let mut rng = Rng(5);
            let stream: Vec<u64> = (0..20_000).map(|_| rng.below(8)).collect();
            for replacement in [Replacement::Lru, Replacement::Random] {
                let mut tlb = Iotlb::new(shape(entries, ways, replacement), 8, 1).unwrap();
                assert_eq!(tlb.never_evicts, expect.is_some());
                let missed = misses(&mut tlb, stream.iter().copied());
                if let Some(compulsory) = expect {
                    assert_eq!(missed, compulsory);
                }
            }
            let mut tlb = Iotlb::new(shape(entries, ways, Replacement::Lru), 8, 1).unwrap();
            let got: Vec<bool> = stream.iter().map(|&p| !tlb.access(p)).collect();
            let sets = u64::from(entries / if ways == 0 { entries } else { ways });
            let reference = reference_lru_misses(sets, (entries as u64 / sets) as usize, &stream);
            assert_eq!(got, reference, "{entries}/{ways}");
        }
    }

    #[test]
    fn pages_marked_count_once_and_clear_with_the_counts() {
        // 2 entries, LRU: pages 1 and 2 miss, 1 hits, 5 misses and evicts 2: 3 misses over
        // 3 distinct pages. The reset zeroes both; the caches keep {1, 5}, so 1 then hits.
        let mut t = Translator::new(shape(2, 0, Replacement::Lru), 0, 4096, 4096 * 8, 1).unwrap();
        for page in [1, 2, 1, 5] {
            t.mark_and_lookup_new_page(page);
        }
        assert_eq!((t.misses, t.pages_marked()), (3, 3));
        t.reset_counts();
        assert_eq!((t.misses, t.pages_marked()), (0, 0));
        assert_eq!(t.mark_and_lookup_new_page(1), Lookup::Hit);
        assert_eq!(t.pages_marked(), 1);
    }

    #[test]
    fn shapes_that_cannot_exist_are_rejected() {
        assert!(Iotlb::new(shape(0, 0, Replacement::Lru), 4, 1).is_err());
        assert!(Iotlb::new(shape(6, 4, Replacement::Lru), 4, 1).is_err());
        assert!(Translator::new(shape(4, 0, Replacement::Lru), 0, 3000, 4096, 1).is_err());
    }
}
