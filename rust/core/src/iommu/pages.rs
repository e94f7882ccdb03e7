//! The pages a DMA stream touches (its working set), counted as the stream plays: how many
//! distinct IOMMU pages a DPDK port's descriptors and buffers occupy.

use crate::error::CoreError;

/// The distinct pages of `0..=span` that transfers have touched so far.
pub struct PagesTouched {
    shift: u32,
    /// Whether each page has been touched; counted when asked (once per run), so marking a
    /// page, once per translated page, is one store.
    seen: Vec<bool>,
}

impl PagesTouched {
    /// Nothing touched yet, in pages of `page_bytes` (a power of two) over addresses `0..=span`.
    pub fn new(page_bytes: u64, span: u64) -> Result<Self, CoreError> {
        if !page_bytes.is_power_of_two() {
            return Err(CoreError::NotPowerOfTwo {
                name: "page size",
                value: page_bytes,
            });
        }
        let shift = page_bytes.trailing_zeros();
        Ok(Self {
            shift,
            seen: vec![false; (span >> shift) as usize + 1],
        })
    }

    /// Marks every page of a transfer of `bytes` at `addr` (a 0-byte one touches its first).
    #[inline]
    pub fn mark(&mut self, addr: u64, bytes: u64) {
        let (first, last) = (addr >> self.shift, (addr + bytes.max(1) - 1) >> self.shift);
        for page in first..last + 1 {
            self.seen[page as usize] = true;
        }
    }

    /// How many distinct pages have been touched (a pass over the pages).
    pub fn count(&self) -> usize {
        self.seen.iter().filter(|&&seen| seen).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_counts_once_however_often_it_is_touched() {
        // 4 KiB pages: 0..4095 is page 0; 4000 + 200 B spans pages 0 and 1; 8192 is page 2.
        let mut pages = PagesTouched::new(4096, 3 * 4096).unwrap();
        pages.mark(0, 64);
        pages.mark(100, 1);
        assert_eq!(pages.count(), 1);
        pages.mark(4000, 200);
        assert_eq!(pages.count(), 2);
        pages.mark(8192, 0);
        pages.mark(8192, 4096);
        assert_eq!(pages.count(), 3);
    }

    #[test]
    fn a_page_size_that_is_no_power_of_two_is_refused() {
        assert!(matches!(
            PagesTouched::new(3000, 4096),
            Err(CoreError::NotPowerOfTwo { value: 3000, .. })
        ));
    }
}
