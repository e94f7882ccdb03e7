//! Where a port's rings and mbufs sit in IOVA space: pages placed by the IOVA mode
//! (contiguous, or scattered physical frames) and objects laid out as DPDK populates a pool.

use super::config::{bad, Iova, Layout, PortConfig};
use super::LINE_BYTES;
use crate::error::CoreError;
use crate::iommu::ddio::mix;
use crate::iommu::iotlb::ENTRIES_PER_TABLE;
use crate::rng::Rng;

/// Distinct random frames `0..frames` for `count` pages, renumbered densely by last-level
/// table (512 frames each) so that pages sharing a table still share one, without an IOVA
/// space as large as the host's memory.
pub(super) fn scatter(count: u64, frames: u64, rng: &mut Rng) -> Result<Vec<u64>, CoreError> {
    if frames < count {
        return Err(bad(
            "IOVA-as-PA needs host memory of at least the pool's pages",
        ));
    }
    let mut taken = std::collections::HashSet::with_capacity(count as usize);
    let mut picked = Vec::with_capacity(count as usize);
    while (picked.len() as u64) < count {
        let frame = rng.below(frames);
        if taken.insert(frame) {
            picked.push(frame);
        }
    }
    let mut tables: Vec<u64> = picked.iter().map(|f| f / ENTRIES_PER_TABLE).collect();
    tables.sort_unstable();
    tables.dedup();
    Ok(picked
        .iter()
        .map(|f| {
            let rank = tables
                .binary_search(&(f / ENTRIES_PER_TABLE))
                .expect("listed") as u64;
            rank * ENTRIES_PER_TABLE + f % ENTRIES_PER_TABLE
        })
        .collect())
}

/// Where rings and mbufs sit in IOVA space, and in physical memory.
pub(super) struct AddressMap {
    page_bytes: u64,
    /// log2 of `page_bytes` (asked per descriptor line: not worked out each time).
    shift: u32,
    /// IOVA page of each virtual page.
    iova_page: Vec<u64>,
    /// Salt of the random physical frame behind each IOVA page.
    frame_salt: u64,
}

impl AddressMap {
    /// The map, and the IOVA of each mbuf's packet data: the name the mempool and the rings
    /// give each mbuf (the stream asks for it twice per packet, so it is looked up nowhere).
    pub(super) fn new(
        cfg: &PortConfig,
        ring_bytes: u64,
        rng: &mut Rng,
    ) -> Result<(Self, Vec<u64>), CoreError> {
        let page = cfg.page_bytes;
        let pool_base = ring_bytes.div_ceil(page) * page;
        let page_bound = cfg.layout == Layout::PageBound;
        let per_page = page / cfg.elt_bytes; // >= 1 when page-bound (validated)
        let virt_of = |id: u64| {
            if page_bound {
                pool_base + id / per_page * page + id % per_page * cfg.elt_bytes
            } else {
                pool_base + id * cfg.elt_bytes
            }
        };
        let pages = (virt_of(u64::from(cfg.pool)) + cfg.elt_bytes).div_ceil(page);
        let iova_page = match cfg.iova {
            Iova::Va => (0..pages).collect(),
            Iova::Pa => scatter(pages, cfg.host_pages, rng)?,
        };
        let map = Self {
            page_bytes: page,
            shift: page.trailing_zeros(),
            iova_page,
            frame_salt: rng.next(),
        };
        let data = (0..u64::from(cfg.pool))
            .map(|id| map.iova(virt_of(id)) + cfg.data_offset)
            .collect();
        Ok((map, data))
    }

    #[inline]
    fn iova(&self, virt: u64) -> u64 {
        let shift = self.shift;
        (self.iova_page[(virt >> shift) as usize] << shift) | (virt & (self.page_bytes - 1))
    }

    /// The IOVA of each 64 B line of a ring of `n` descriptors of `desc` bytes at `virt`.
    pub(super) fn ring_lines(&self, virt: u64, n: u32, desc: u64) -> Vec<u64> {
        let lines = (u64::from(n) * desc).div_ceil(LINE_BYTES);
        (0..lines)
            .map(|l| self.iova(virt + l * LINE_BYTES))
            .collect()
    }

    /// IOVA bytes a translation can touch (the highest IOVA page plus one).
    pub(super) fn span(&self) -> u64 {
        (self.iova_page.iter().max().map_or(0, |p| p + 1)) * self.page_bytes
    }

    /// Physical line addresses (in 64 B lines) of `bytes` bytes at `iova`.
    pub(super) fn lines(&self, iova: u64, bytes: u64) -> impl Iterator<Item = u64> + '_ {
        let shift = self.shift;
        let per_page = self.page_bytes / LINE_BYTES;
        // The frame is drawn per page: hash it once per page, not once per line.
        let (mut page, mut frame) = (u64::MAX, 0);
        (iova / LINE_BYTES..=(iova + bytes.max(1) - 1) / LINE_BYTES).map(move |line| {
            if (line * LINE_BYTES) >> shift != page {
                page = (line * LINE_BYTES) >> shift;
                frame = mix(page ^ self.frame_salt) >> 24;
            }
            frame * per_page + (line & (per_page - 1))
        })
    }
}
