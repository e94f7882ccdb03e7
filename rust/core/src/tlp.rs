//! TLP-by-TLP enumeration of DMA transfers.
//!
//! pcieperf splits a transfer at naturally aligned boundaries: every cut falls on a multiple of
//! the limit (MPS for writes, MRRS for read requests, RCB or MPS for completions). Because every
//! limit is a power of two no larger than 4096, no TLP crosses a 4 KiB boundary (PCIe Base
//! Specification 6.0, section 2.2.7), and every TLP but the first starts aligned.

use crate::error::CoreError;

/// The pieces of a batch of transfers after splitting; `parent[i]` indexes the input transfer.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Split {
    pub parent: Vec<u32>,
    pub addr: Vec<u64>,
    pub len: Vec<u64>,
}

impl Split {
    /// Number of pieces produced.
    pub fn len(&self) -> usize {
        self.addr.len()
    }

    /// True when no piece was produced (only for an empty input).
    pub fn is_empty(&self) -> bool {
        self.addr.is_empty()
    }

    fn push(&mut self, parent: usize, addr: u64, len: u64) {
        // Inputs are indexed by u32 on the Python side; a batch beyond 4 G transfers is not a use case.
        self.parent.push(parent as u32);
        self.addr.push(addr);
        self.len.push(len);
    }
}

/// Splits each transfer `[addrs[i], addrs[i] + lens[i])` at every multiple of `cut`.
pub fn split_aligned(addrs: &[u64], lens: &[u64], cut: u64) -> Result<Split, CoreError> {
    if !cut.is_power_of_two() {
        return Err(CoreError::NotPowerOfTwo {
            name: "cut",
            value: cut,
        });
    }
    if addrs.len() != lens.len() {
        return Err(CoreError::LengthMismatch {
            left: addrs.len(),
            right: lens.len(),
        });
    }
    let mut out = Split::default();
    for (index, (&start, &len)) in addrs.iter().zip(lens).enumerate() {
        if len == 0 {
            return Err(CoreError::ZeroLength { index });
        }
        let end = start
            .checked_add(len)
            .ok_or(CoreError::AddressOverflow { index })?;
        let mut cur = start;
        while cur < end {
            let next_cut = (cur / cut + 1).saturating_mul(cut);
            let piece_end = next_cut.min(end);
            out.push(index, cur, piece_end - cur);
            cur = piece_end;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_transfer_splits_into_equal_pieces() {
        // 1024 bytes at 0 with MPS 256 -> four 256-byte TLPs.
        let s = split_aligned(&[0], &[1024], 256).unwrap();
        assert_eq!(s.addr, vec![0, 256, 512, 768]);
        assert_eq!(s.len, vec![256; 4]);
    }

    #[test]
    fn unaligned_start_gives_short_first_piece() {
        // 300 bytes at 200 with cut 256: [200,256) [256,500).
        let s = split_aligned(&[200], &[300], 256).unwrap();
        assert_eq!(s.addr, vec![200, 256]);
        assert_eq!(s.len, vec![56, 244]);
    }

    #[test]
    fn pieces_never_cross_4k() {
        let s = split_aligned(&[4000], &[200], 4096).unwrap();
        assert_eq!(s.len, vec![96, 104]);
    }

    #[test]
    fn parents_index_inputs() {
        let s = split_aligned(&[0, 64], &[128, 64], 64).unwrap();
        assert_eq!(s.parent, vec![0, 0, 1]);
    }

    #[test]
    fn bad_inputs_are_reported() {
        assert_eq!(
            split_aligned(&[0], &[1], 100),
            Err(CoreError::NotPowerOfTwo {
                name: "cut",
                value: 100
            })
        );
        assert_eq!(
            split_aligned(&[0], &[0], 64),
            Err(CoreError::ZeroLength { index: 0 })
        );
        assert_eq!(
            split_aligned(&[0, 1], &[1], 64),
            Err(CoreError::LengthMismatch { left: 2, right: 1 })
        );
        assert_eq!(
            split_aligned(&[u64::MAX], &[2], 64),
            Err(CoreError::AddressOverflow { index: 0 })
        );
    }
}
