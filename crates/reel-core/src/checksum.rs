//! CRC-32 (IEEE 802.3, the polynomial of zlib and FFRecord): the one place reel computes it.
//!
//! Every checksum reel reads or writes goes through [`crc32`] or [`Crc32`], so the
//! implementation is chosen once. It is `crc32fast`: since 1.5, built with Rust 1.89 or
//! later, it folds with AVX-512 `VPCLMULQDQ` (512-bit carry-less multiplies) where the CPU
//! has it, and with 128-bit `PCLMULQDQ` (x86-64) or `PMULL` (ARM) elsewhere, choosing at run
//! time. `reel bench --crc` measures it against `crc-fast`, which has the same AVX-512 path:
//! on the development VM (AMD EPYC with AVX-512) both checksum cached data at about 60 GB/s
//! at 100 KiB and 1 MiB (within ±4 % of each other), and crc32fast is about 8 % faster at
//! 1 KiB; see the README's Performance section. The one addition is
//! [`Crc32::copy_update`], which copies bytes and checksums them in one loop (the `copy`
//! module: crc32fast's AVX-512 fold with a store per block, or the same fold on 256-bit
//! registers where the CPU has `VPCLMULQDQ` without AVX-512, for readers copying records
//! out of memory), and leaves the rest to crc32fast. (The 256-bit fold without the copy
//! measured no faster than crc32fast's 128-bit one on such a CPU, AMD Zen 3: 24.7 GB/s
//! both, at 100 KiB: the multiplier's throughput per 128 bits is the same.)

mod copy;

/// The CRC-32 of `bytes`.
#[inline]
pub fn crc32(bytes: &[u8]) -> u32 {
    crc32fast::hash(bytes)
}

/// The CRC-32 of `a` followed by `b`, from the CRC-32s of both and the length of `b`: what a
/// record read in several parts (checksummed as each arrives) is compared with.
pub fn crc32_combine(crc_a: u32, crc_b: u32, len_b: u64) -> u32 {
    let mut a = crc32fast::Hasher::new_with_initial(crc_a);
    a.combine(&crc32fast::Hasher::new_with_initial_len(crc_b, len_b));
    a.finalize()
}

/// The CRC-32 of `bytes` continued from `crc` (the CRC-32 of the bytes before them).
fn continue_crc32(crc: u32, bytes: &[u8]) -> u32 {
    let mut hasher = crc32fast::Hasher::new_with_initial(crc);
    hasher.update(bytes);
    hasher.finalize()
}

/// A CRC-32 computed over bytes that come in pieces.
#[derive(Clone, Debug, Default)]
pub struct Crc32 {
    /// The CRC-32 of the bytes seen so far (0 for none); crc32fast continues from it.
    crc: u32,
}

impl Crc32 {
    /// The CRC-32 of no bytes so far.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `bytes` after those seen so far.
    #[inline]
    pub fn update(&mut self, bytes: &[u8]) {
        self.crc = continue_crc32(self.crc, bytes);
    }

    /// Copies `from` into `to` and adds `from` after the bytes seen so far, in one pass over
    /// the bytes where the CPU allows (see the `copy` module): what a reader copying records
    /// out of memory uses to check them.
    ///
    /// # Panics
    ///
    /// If `from` and `to` differ in length, like `copy_from_slice`.
    #[inline]
    pub fn copy_update(&mut self, from: &[u8], to: &mut [u8]) {
        self.crc = copy::copy_and_crc32(self.crc, from, to);
    }

    /// The CRC-32 of every byte seen so far.
    pub fn finalize(self) -> u32 {
        self.crc
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The check value of CRC-32/ISO-HDLC, and the CRC of nothing.
    #[test]
    fn matches_the_catalogue_check_values() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
    }

    /// Pieces, combination and one pass agree at every split of buffers long enough to take
    /// each SIMD path (and their tails).
    #[test]
    fn pieces_and_combination_equal_one_pass() {
        let data: Vec<u8> =
            (0..5000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
        for len in [0, 1, 15, 16, 63, 64, 255, 256, 1024, 4097, 5000] {
            let whole = crc32(&data[..len]);
            for split in [0, 1, len / 3, len / 2, len.saturating_sub(1), len].map(|s| s.min(len)) {
                let (a, b) = data[..len].split_at(split);
                let mut c = Crc32::new();
                c.update(a);
                c.update(b);
                assert_eq!(c.finalize(), whole, "pieces at {split} of {len}");
                let (mut c, mut copied) = (Crc32::new(), vec![0; len]);
                let (to_a, to_b) = copied.split_at_mut(split);
                c.copy_update(a, to_a);
                c.copy_update(b, to_b);
                assert_eq!((c.finalize(), &copied[..]), (whole, &data[..len]), "copied at {split}");
                assert_eq!(crc32_combine(crc32(a), crc32(b), b.len() as u64), whole);
            }
        }
    }
}
