//! The core's one pseudo-random generator, shared by the simulator's address generator, the
//! IOTLB's random replacement and the DPDK port model (a leaf module: it imports nothing).

/// SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number generators",
/// OOPSLA 2014; constants as in Vigna's reference `splitmix64.c`): small, fast and good enough
/// for drawing window units and victims.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n`, without a division.
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        // Lemire's multiply-shift; the tiny bias is irrelevant for unit selection.
        ((u128::from(self.next()) * u128::from(n)) >> 64) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sequence_is_splitmix64() {
        // Vigna's splitmix64.c seeded with 0 gives these first three outputs.
        let mut rng = Rng(0);
        let firsts = [rng.next(), rng.next(), rng.next()];
        assert_eq!(
            firsts,
            [
                0xE220_A839_7B1D_CDAF,
                0x6E78_9E6A_A1B9_65F4,
                0x06C4_5D18_8009_454F
            ]
        );
    }

    #[test]
    fn below_stays_in_range_and_reaches_both_ends() {
        // 10 000 draws of 0..7: each value is hit (expected 1 250 times each).
        let mut rng = Rng(42);
        let mut seen = [0u32; 7];
        for _ in 0..10_000 {
            seen[rng.below(7) as usize] += 1;
        }
        assert!(seen.iter().all(|&n| n > 1_000), "{seen:?}");
        assert_eq!(Rng(5).below(1), 0);
    }
}
