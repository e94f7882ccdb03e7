//! The LLC ways DDIO may allocate into, as seen by a NIC's DMA.
//!
//! With DDIO, a device write allocates its lines in a few "I/O" ways of the last-level cache
//! (Intel DDIO; 2 of 11 ways by default on Skylake-SP: the IIO LLC WAYS register, Farshin et
//! al., "Reexamining Direct Cache Access", USENIX ATC'20, §2); a device read is served from the
//! LLC when its lines are still there and from DRAM otherwise. This module tracks which written
//! lines the I/O ways still hold: per LLC set, `ways` entries with exact LRU.
//!
//! Where a line lands: the set index inside a slice is taken from the physical line address
//! (the bits above the 64 B offset), the slice from a hash of the whole line address (the slice
//! hash is undocumented; any uniform hash has the property that matters here: lines at one
//! offset of many 4 KiB pages only reach the sets that share that offset's index bits).
//! Physical frames are drawn at random per page: neither 4 KiB anonymous memory nor separate
//! hugepages are physically contiguous with each other.

use crate::error::CoreError;

/// Shape of the LLC as DDIO sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "pyo3", derive(pyo3::FromPyObject), pyo3(from_item_all))]
pub struct LlcShape {
    /// Sets per slice (a power of two) and slices.
    pub sets_per_slice: u32,
    pub slices: u32,
    /// Ways a device write may allocate into.
    pub ddio_ways: u32,
}

/// What a way holds before any line was written to it.
const EMPTY: u64 = u64::MAX;

/// 64-bit finaliser (SplitMix64's): spreads frame numbers and line addresses uniformly.
pub fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// `n % d` for a fixed `d` by multiplications instead of a division, exact for every 64-bit
/// `n` (Lemire, Kaser and Kurz, "Faster Remainder by Direct Computation", Software: Practice
/// and Experience 49(6), 2019, Theorem 1 with F = 2N = 128 fraction bits): with
/// c = ceil(2^128 / d), the remainder is the top 64 bits of frac(c n / 2^128) x d.
#[derive(Debug, Clone, Copy)]
struct FastMod {
    c: u128,
    d: u64,
}

impl FastMod {
    fn new(d: u64) -> Self {
        // ceil(2^128 / d) = floor((2^128 - 1) / d) + 1; d = 1 wraps c to 0 (every n % 1 = 0).
        Self {
            c: (u128::MAX / u128::from(d)).wrapping_add(1),
            d,
        }
    }

    #[inline]
    fn rem(self, n: u64) -> u64 {
        // The fraction c n mod 2^128, then (fraction x d) >> 128 from its two 64-bit halves.
        let fraction = self.c.wrapping_mul(u128::from(n));
        let d = u128::from(self.d);
        let low = ((fraction & u128::from(u64::MAX)) * d) >> 64;
        let high = (fraction >> 64) * d;
        ((low + high) >> 64) as u64
    }
}

/// The I/O ways of every LLC set, with what they hold and how often DMA missed them.
pub struct Ddio {
    shape: LlcShape,
    slices: FastMod,
    /// The line each way holds, a set's ways most recently written first: the order is the
    /// exact LRU state, so no stamps are kept (8 bytes a way: the simulated LLC's table is
    /// half the size, and its lookups, cache misses on the host, the cheaper).
    ways: Vec<u64>,
    /// Device writes that had to allocate (the line was not held) and device reads of lines
    /// that were no longer held, out of all device reads checked.
    pub allocations: u64,
    pub read_misses: u64,
    pub reads: u64,
}

impl Ddio {
    pub fn new(shape: LlcShape) -> Result<Self, CoreError> {
        if !shape.sets_per_slice.is_power_of_two() || shape.slices == 0 || shape.ddio_ways == 0 {
            return Err(CoreError::BadParameter {
                what: "the LLC needs a power-of-two sets per slice, >= 1 slice and >= 1 DDIO way",
            });
        }
        let n = shape.sets_per_slice as usize * shape.slices as usize * shape.ddio_ways as usize;
        Ok(Self {
            shape,
            slices: FastMod::new(u64::from(shape.slices)),
            ways: vec![EMPTY; n],
            allocations: 0,
            read_misses: 0,
            reads: 0,
        })
    }

    /// Bytes of LLC the I/O ways hold in all.
    pub fn capacity_bytes(&self) -> u64 {
        self.ways.len() as u64 * 64
    }

    fn ways_of(&self, line: u64) -> std::ops::Range<usize> {
        let s = &self.shape;
        let index = line & u64::from(s.sets_per_slice - 1);
        let slice = self.slices.rem(mix(line));
        let set = (slice * u64::from(s.sets_per_slice) + index) as usize;
        let w = s.ddio_ways as usize;
        set * w..set * w + w
    }

    fn find(&self, ways: std::ops::Range<usize>, line: u64) -> Option<usize> {
        ways.into_iter().find(|&i| self.ways[i] == line)
    }

    /// A device write of one physical line: moves it to the front of its set, allocating it
    /// over the least recently written way (the last) where the set does not hold it.
    pub fn write(&mut self, line: u64) {
        let ways = self.ways_of(line);
        let slot = self.find(ways.clone(), line).unwrap_or_else(|| {
            self.allocations += 1;
            ways.end - 1
        });
        let set = &mut self.ways[ways.start..=slot];
        set.rotate_right(1);
        set[0] = line;
    }

    /// A device read of one physical line: true when the LLC still holds it (no allocation
    /// on a miss: the data comes from DRAM).
    pub fn read(&mut self, line: u64) -> bool {
        self.reads += 1;
        let hit = self.find(self.ways_of(line), line).is_some();
        self.read_misses += u64::from(!hit);
        hit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(sets: u32, slices: u32, ways: u32) -> LlcShape {
        LlcShape {
            sets_per_slice: sets,
            slices,
            ddio_ways: ways,
        }
    }

    #[test]
    fn a_written_line_is_read_back_from_the_llc() {
        let mut d = Ddio::new(shape(64, 1, 2)).unwrap();
        d.write(5);
        assert!(d.read(5));
        assert!(!d.read(6));
        assert_eq!((d.allocations, d.read_misses, d.reads), (1, 1, 2));
    }

    #[test]
    fn three_lines_of_one_set_evict_the_oldest_of_two_ways() {
        // One slice of 64 sets: lines 0, 64 and 128 share set 0 (index = line mod 64).
        let mut d = Ddio::new(shape(64, 1, 2)).unwrap();
        for line in [0, 64, 128] {
            d.write(line);
        }
        assert!(!d.read(0));
        assert!(d.read(64) && d.read(128));
    }

    #[test]
    fn capacity_is_sets_times_slices_times_ways_lines() {
        // Skylake-SP 8180: 28 slices x 2048 sets, 2 DDIO ways -> 114688 lines = 7 MiB.
        let d = Ddio::new(shape(2048, 28, 2)).unwrap();
        assert_eq!(d.capacity_bytes(), 28 * 2048 * 2 * 64);
    }

    #[test]
    fn the_multiply_remainder_equals_the_division_remainder() {
        // Divisors 1..=64 (slice counts) and a few large ones, against `%` on the ends of the
        // range and on SplitMix64-spread values (what the slice hash feeds it).
        let divisors = (1..=64).chain([1000, (1 << 32) + 7, u64::MAX - 1, u64::MAX]);
        for d in divisors {
            let f = FastMod::new(d);
            let edges = [0, 1, d - 1, d, d.wrapping_add(1), u64::MAX - 1, u64::MAX];
            for n in edges.into_iter().chain((0..2000).map(mix)) {
                assert_eq!(f.rem(n), n % d, "{n} % {d}");
            }
        }
    }

    #[test]
    fn shapes_that_cannot_exist_are_rejected() {
        assert!(Ddio::new(shape(100, 1, 2)).is_err());
        assert!(Ddio::new(shape(64, 0, 2)).is_err());
        assert!(Ddio::new(shape(64, 1, 0)).is_err());
    }
}
