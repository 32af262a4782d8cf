//! A copy that computes the CRC-32 of what it copies in the same pass.
//!
//! Reading a record out of memory (mmap, memory) is a copy, and checking it is a CRC pass.
//! Done one after the other, the copy waits on memory and the CRC then waits on the
//! carry-less multiplier, so their times add up: measured at 100 KiB on the development VM,
//! copying ran at 23–25 GB/s and copying then checksumming each 64 KiB piece at 16–17
//! (+41 … +48 %). In one loop the multiplies run while the next loads are still on their way,
//! and the copy with its CRC ran at 19–20 GB/s.
//!
//! The fold is crc32fast's AVX-512 `VPCLMULQDQ` fold (16 streams of 128 bits in four 512-bit
//! registers, the constants of Gopal et al., "Fast CRC computation for generic polynomials
//! using PCLMULQDQ", Intel 2009), with each 256-byte block stored to the destination as it
//! is loaded. The 16 streams are then folded together in 4 steps (each register into the
//! next, 64 bytes on, then the last register's lanes at once) where crc32fast chains 15
//! (7 in its 256-bit kernel, which it uses below 2 KiB). With the fused path taken from
//! 256 bytes up, checksums on 1 KiB records in the CPU cache cost +38 … +47 % over reading
//! without them, against +66 … +74 % for a copy and then crc32fast. The 128-bit remainder and the tail after the last whole block go through
//! crc32fast. On CPUs without AVX-512 and `VPCLMULQDQ`, and below 256 bytes, it copies and
//! then calls crc32fast; on CPUs with `VPCLMULQDQ` but not AVX-512 the same loop runs on
//! 256-bit registers (`x86_256`).
//!
//! `unsafe` here is only for the SIMD intrinsics and their raw pointers; every block says
//! why it is sound. The crate allows `unsafe` in this module and in `io::mmap` only.
#![allow(unsafe_code)]

use super::continue_crc32;

/// The fused loop needs one whole 256-byte block; below that crc32fast's 128-bit folds are
/// as quick.
#[cfg(target_arch = "x86_64")]
const MIN_FUSED_BYTES: usize = x86::STEP;

/// Copies `from` into `to` (of the same length) and returns the CRC-32 of `from` continued
/// from `crc` (the CRC-32 of the bytes before it, 0 for none), as
/// `crc32fast::Hasher::new_with_initial(crc)` would after `update(from)`.
///
/// # Panics
///
/// If `from` and `to` differ in length, like `copy_from_slice`.
pub(super) fn copy_and_crc32(crc: u32, from: &[u8], to: &mut [u8]) -> u32 {
    assert_eq!(from.len(), to.len(), "copy_and_crc32 needs equal lengths");
    #[cfg(target_arch = "x86_64")]
    if from.len() >= MIN_FUSED_BYTES {
        if x86::supported() {
            // SAFETY: `supported` checked at run time that the CPU has every feature the
            // kernel is compiled for (`avx512f`, `vpclmulqdq`).
            return unsafe { x86::copy_and_crc32(crc, from, to) };
        }
        if x86_256::supported() {
            // SAFETY: `supported` checked at run time that the CPU has every feature the
            // kernel is compiled for (`avx2`, `vpclmulqdq`).
            return unsafe { x86_256::copy_and_crc32(crc, from, to) };
        }
    }
    to.copy_from_slice(from);
    // The copy's bytes, not the source's: they are what the reader decodes (a mapped file
    // may change between two reads of it), and they are in the cache.
    continue_crc32(crc, to)
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64 as arch;

    /// Fold constants: a 128-bit stream moved `D` bits further on is multiplied, low half
    /// by `k(D + 32)` and high half by `k(D - 32)`, where `k(d)` is `x^d mod P` (the CRC-32
    /// polynomial), bit-reflected in 32 bits and shifted left by one: the convention of
    /// crc32fast, whose `K3`/`K4` (D = 128), `K1`/`K2` (D = 512) and `K_2048` these are.
    /// The 256- and 384-bit pairs are computed the same way; `tests::fold_constants`
    /// recomputes every one from the polynomial.
    pub(super) const K3: i64 = 0x1751997d0;
    pub(super) const K4: i64 = 0x0ccaa009e;
    pub(super) const K_256_LO: i64 = 0x0f1da05aa;
    pub(super) const K_256_HI: i64 = 0x15a546366;
    pub(super) const K_384_LO: i64 = 0x03db1ecdc;
    pub(super) const K_384_HI: i64 = 0x174359406;
    pub(super) const K_512_LO: i64 = 0x154442bd4;
    pub(super) const K_512_HI: i64 = 0x1c6e41596;
    pub(super) const K_2048_LOW: i64 = 0x11542778a;
    pub(super) const K_2048_HIGH: i64 = 0x1322d1430;

    /// How far ahead of the loads the loop asks for source lines. The hardware prefetcher
    /// alone fell behind the fused loop; 4 KiB ahead measured best of 0.5–16 KiB
    /// (100 KiB records out of a 1 GB buffer on the development VM).
    const PREFETCH_AHEAD: usize = 4096;

    /// Bytes per step of the loop: four 512-bit registers.
    pub(super) const STEP: usize = 256;

    /// Whether the CPU runs the fused kernel. `is_x86_feature_detected!` caches its answer.
    pub(super) fn supported() -> bool {
        // `pclmulqdq` too, though `vpclmulqdq` implies it, in case a VM reports one CPUID bit
        // without the other (crc32fast checks both as well).
        is_x86_feature_detected!("avx512f")
            && is_x86_feature_detected!("vpclmulqdq")
            && is_x86_feature_detected!("pclmulqdq")
    }

    /// The fused copy and CRC. Needs `from.len() == to.len() >= STEP`.
    ///
    /// # Safety
    ///
    /// The CPU must have the features in the `target_feature` list ([`supported`]).
    #[target_feature(enable = "avx512f,vpclmulqdq")]
    pub(super) unsafe fn copy_and_crc32(crc: u32, from: &[u8], to: &mut [u8]) -> u32 {
        assert!(from.len() == to.len() && from.len() >= STEP);
        let body = from.len() / STEP * STEP;
        let src = from.as_ptr();
        let dst = to.as_mut_ptr();
        // Every `load` and `store` below passes an `at` with `at + 64 <= body <= len` of both
        // slices: `at` steps by STEP up to `body`, and a block's four offsets end at
        // `at + STEP`.
        // So those 64 bytes are inside `from` (readable) and `to` (writable), and the CPU
        // has AVX-512F (this function's contract).
        let load = |at: usize| {
            debug_assert!(at + 64 <= body);
            // SAFETY: as above.
            unsafe { load64(src, at) }
        };
        let store = |at: usize, v: arch::__m512i| {
            debug_assert!(at + 64 <= body);
            // SAFETY: as above.
            unsafe { store64(dst, at, v) }
        };
        let mut v = [load(0), load(64), load(128), load(192)];
        for (i, &x) in v.iter().enumerate() {
            store(i * 64, x);
        }
        // The CRC so far enters as the first four bytes' complement, as in crc32fast.
        v[0] = arch::_mm512_xor_si512(
            v[0],
            arch::_mm512_castsi128_si512(arch::_mm_cvtsi32_si128(!crc as i32)),
        );
        let k = keys(K_2048_LOW, K_2048_HIGH);
        let mut at = STEP;
        while at < body {
            prefetch_block(&from[..body], at);
            for (i, acc) in v.iter_mut().enumerate() {
                let x = load(at + i * 64);
                store(at + i * 64, x);
                *acc = fold512(*acc, x, k);
            }
            at += STEP;
        }

        // Collapse the 16 streams in 4 dependent steps rather than crc32fast's 15: each
        // register into the next, whose lanes lie 64 bytes further on, then the last
        // register's first three lanes into its fourth at once.
        let k_512 = keys(K_512_LO, K_512_HI);
        let mut last = v[0];
        for &next in &v[1..] {
            last = fold512(last, next, k_512);
        }
        // Lane j of `last` lies (3 - j) * 16 bytes before lane 3; lane 3 is not moved.
        let k_lanes = arch::_mm512_set_epi64(0, 0, K4, K3, K_256_HI, K_256_LO, K_384_HI, K_384_LO);
        let moved = arch::_mm512_xor_si512(
            arch::_mm512_clmulepi64_epi128::<0x00>(last, k_lanes),
            arch::_mm512_clmulepi64_epi128::<0x11>(last, k_lanes),
        );
        let mut x = arch::_mm512_extracti32x4_epi32::<3>(last);
        x = arch::_mm_xor_si128(x, arch::_mm512_castsi512_si128(moved));
        x = arch::_mm_xor_si128(x, arch::_mm512_extracti32x4_epi32::<1>(moved));
        x = arch::_mm_xor_si128(x, arch::_mm512_extracti32x4_epi32::<2>(moved));
        // `x` now stands for the whole body with the incoming CRC already folded in: its CRC
        // from a zero register (crc32fast's initial value !0) is the body's CRC.
        finish(x, from, to, body)
    }

    /// The CRC of the whole of `from` once its first `body` bytes are folded into `x` (the
    /// incoming CRC with them) and copied: `x`'s CRC from crc32fast's initial register,
    /// continued over the tail after `body`, which is copied here too.
    #[inline]
    pub(super) fn finish(x: arch::__m128i, from: &[u8], to: &mut [u8], body: usize) -> u32 {
        let mut remainder = [0u8; 16];
        // SAFETY: `remainder` is 16 writable bytes; the store needs no alignment, and SSE2
        // is part of every x86-64 CPU.
        unsafe { arch::_mm_storeu_si128(remainder.as_mut_ptr().cast(), x) };
        to[body..].copy_from_slice(&from[body..]);
        let mut hasher = crc32fast::Hasher::new_with_initial(!0);
        hasher.update(&remainder);
        hasher.update(&to[body..]);
        hasher.finalize()
    }

    /// Asks for the source lines of the block `PREFETCH_AHEAD` bytes past `at` in `body`,
    /// if it lies within it (the hardware prefetcher alone fell behind the fused loop).
    #[inline]
    pub(super) fn prefetch_block(body: &[u8], at: usize) {
        let Some(block) = body.get(at + PREFETCH_AHEAD..at + PREFETCH_AHEAD + STEP) else {
            return;
        };
        for line in block.iter().step_by(64) {
            // SAFETY: a prefetch never faults and reads nothing into the program (the address
            // is a live reference's anyway); SSE is part of every x86-64 CPU.
            unsafe { arch::_mm_prefetch::<{ arch::_MM_HINT_T0 }>(std::ptr::from_ref(line).cast()) };
        }
    }

    /// A fold's key pair (`low` for each lane's low half, `high` for its high half) in all
    /// four lanes.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn keys(low: i64, high: i64) -> arch::__m512i {
        arch::_mm512_broadcast_i32x4(arch::_mm_set_epi64x(high, low))
    }

    /// The 64 bytes at `src + at`.
    ///
    /// # Safety
    ///
    /// They must be readable, and the CPU must have AVX-512F.
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn load64(src: *const u8, at: usize) -> arch::__m512i {
        // SAFETY: the caller's contract.
        unsafe { arch::_mm512_loadu_si512(src.add(at).cast()) }
    }

    /// Writes `v` to the 64 bytes at `dst + at`.
    ///
    /// The store is written in assembly because LLVM recognises a loop that stores what it
    /// loaded as a copy: it took the stores out of the loop into one `memcpy` before it,
    /// which is the two passes this module exists to avoid.
    ///
    /// # Safety
    ///
    /// They must be writable, and the CPU must have AVX-512F.
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn store64(dst: *mut u8, at: usize, v: arch::__m512i) {
        // SAFETY: the caller's contract: 64 writable bytes; `vmovdqu64` needs no alignment,
        // touches no stack and leaves the flags alone.
        unsafe {
            std::arch::asm!(
                "vmovdqu64 [{to}], {v}",
                to = in(reg) dst.add(at),
                v = in(zmm_reg) v,
                options(nostack, preserves_flags),
            );
        }
    }

    /// Folds the four 128-bit streams of `a` forward over the distance in `keys` (low
    /// halves times the low key, high halves times the high key) and adds `b`.
    #[inline]
    #[target_feature(enable = "avx512f,vpclmulqdq")]
    fn fold512(a: arch::__m512i, b: arch::__m512i, keys: arch::__m512i) -> arch::__m512i {
        let low = arch::_mm512_clmulepi64_epi128::<0x00>(a, keys);
        let high = arch::_mm512_clmulepi64_epi128::<0x11>(a, keys);
        arch::_mm512_xor_si512(arch::_mm512_xor_si512(b, low), high)
    }
}

/// The same fused loop on 256-bit registers, for CPUs with `VPCLMULQDQ` but without AVX-512
/// (AMD Zen 3, on which this VM's CI runs; Intel Alder Lake and later): eight `ymm`
/// registers hold the same 16 streams of 128 bits per 256-byte block, folded by the same
/// 2048-bit constants. There crc32fast has only its 128-bit `PCLMULQDQ` fold (about 23 GB/s
/// on cached data), so a copy and then crc32fast cost +43 … +61 % warm at 100 KiB.
#[cfg(target_arch = "x86_64")]
mod x86_256 {
    use std::arch::x86_64 as arch;

    use super::x86::{
        K_256_HI, K_256_LO, K_2048_HIGH, K_2048_LOW, K3, K4, STEP, finish, prefetch_block,
    };

    /// Registers per block, 32 bytes each.
    const REGS: usize = STEP / 32;

    /// Whether the CPU runs this kernel. `is_x86_feature_detected!` caches its answer.
    pub(super) fn supported() -> bool {
        is_x86_feature_detected!("avx2")
            && is_x86_feature_detected!("vpclmulqdq")
            && is_x86_feature_detected!("pclmulqdq")
    }

    /// The fused copy and CRC. Needs `from.len() == to.len() >= STEP`.
    ///
    /// # Safety
    ///
    /// The CPU must have the features in the `target_feature` list ([`supported`]).
    #[target_feature(enable = "avx2,vpclmulqdq,pclmulqdq")]
    pub(super) unsafe fn copy_and_crc32(crc: u32, from: &[u8], to: &mut [u8]) -> u32 {
        assert!(from.len() == to.len() && from.len() >= STEP);
        // SAFETY: `to` is as long as `from`: writable wherever the fold stores.
        let (x, body) = unsafe { fold(crc, from, to.as_mut_ptr()) };
        finish(x, from, to, body)
    }

    /// Folds the whole 256-byte blocks of `from` (the CRC so far, `crc`, folded in), storing
    /// each block at `dst` as it is loaded; returns the 128 bits the blocks come down to
    /// (see [`finish`]) and the blocks' length. Needs `from.len() >= STEP`.
    ///
    /// # Safety
    ///
    /// `dst` must be writable for `from.len()` bytes. The CPU must have the
    /// features in the `target_feature` list ([`supported`]).
    #[target_feature(enable = "avx2,vpclmulqdq,pclmulqdq")]
    unsafe fn fold(crc: u32, from: &[u8], dst: *mut u8) -> (arch::__m128i, usize) {
        assert!(from.len() >= STEP);
        let body = from.len() / STEP * STEP;
        let src = from.as_ptr();
        // Every `load` and `store` below passes an `at` with `at + 32 <= body <= len`:
        // `at` steps by STEP up to `body`, and a block's eight offsets end at `at + STEP`.
        // So those 32 bytes are inside `from` (readable) and at `dst` (writable, the
        // caller's contract); the CPU has AVX2 (this function's contract).
        let load = |at: usize| {
            debug_assert!(at + 32 <= body);
            // SAFETY: as above.
            unsafe { arch::_mm256_loadu_si256(src.add(at).cast()) }
        };
        let store = |at: usize, v: arch::__m256i| {
            debug_assert!(at + 32 <= body);
            // SAFETY: as above.
            unsafe { store32(dst, at, v) }
        };
        let mut v = [arch::_mm256_setzero_si256(); REGS];
        for (i, acc) in v.iter_mut().enumerate() {
            *acc = load(i * 32);
            store(i * 32, *acc);
        }
        // The CRC so far enters as the first four bytes' complement, as in crc32fast.
        v[0] = arch::_mm256_xor_si256(
            v[0],
            arch::_mm256_castsi128_si256(arch::_mm_cvtsi32_si128(!crc as i32)),
        );
        let k = keys(K_2048_LOW, K_2048_HIGH);
        let mut at = STEP;
        while at < body {
            prefetch_block(&from[..body], at);
            for (i, acc) in v.iter_mut().enumerate() {
                let x = load(at + i * 32);
                store(at + i * 32, x);
                *acc = fold256(*acc, x, k);
            }
            at += STEP;
        }
        // Collapse the 16 streams: each register into the next, whose lanes lie 32 bytes
        // further on, then the last register's first lane into its second, 16 bytes on.
        let k_256 = keys(K_256_LO, K_256_HI);
        let mut last = v[0];
        for &next in &v[1..] {
            last = fold256(last, next, k_256);
        }
        let k_128 = arch::_mm_set_epi64x(K4, K3);
        let first = arch::_mm256_castsi256_si128(last);
        let mut x = arch::_mm256_extracti128_si256::<1>(last);
        x = arch::_mm_xor_si128(x, arch::_mm_clmulepi64_si128::<0x00>(first, k_128));
        x = arch::_mm_xor_si128(x, arch::_mm_clmulepi64_si128::<0x11>(first, k_128));
        // `x` now stands for the whole body with the incoming CRC already folded in: its CRC
        // from a zero register (crc32fast's initial value !0) is the body's CRC.
        (x, body)
    }

    /// A fold's key pair (`low` for each lane's low half, `high` for its high half) in both
    /// lanes.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn keys(low: i64, high: i64) -> arch::__m256i {
        arch::_mm256_broadcastsi128_si256(arch::_mm_set_epi64x(high, low))
    }

    /// Writes `v` to the 32 bytes at `dst + at`, in assembly for the reason the AVX-512
    /// kernel's `store64` gives (LLVM would turn the loop's stores into one `memcpy`).
    ///
    /// # Safety
    ///
    /// They must be writable, and the CPU must have AVX.
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn store32(dst: *mut u8, at: usize, v: arch::__m256i) {
        // SAFETY: the caller's contract: 32 writable bytes; `vmovdqu` needs no alignment,
        // touches no stack and leaves the flags alone.
        unsafe {
            std::arch::asm!(
                "vmovdqu [{to}], {v}",
                to = in(reg) dst.add(at),
                v = in(ymm_reg) v,
                options(nostack, preserves_flags),
            );
        }
    }

    /// Folds the two 128-bit streams of `a` forward over the distance in `keys` and adds
    /// `b`.
    #[inline]
    #[target_feature(enable = "avx2,vpclmulqdq")]
    fn fold256(a: arch::__m256i, b: arch::__m256i, keys: arch::__m256i) -> arch::__m256i {
        let low = arch::_mm256_clmulepi64_epi128::<0x00>(a, keys);
        let high = arch::_mm256_clmulepi64_epi128::<0x11>(a, keys);
        arch::_mm256_xor_si256(arch::_mm256_xor_si256(b, low), high)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every length around the fused loop's crossover and block size, at several source and
    /// destination alignments and incoming CRCs: the bytes are copied exactly and the CRC
    /// equals crc32fast's.
    #[test]
    fn copies_exactly_and_matches_crc32fast() {
        let data: Vec<u8> =
            (0..20_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8).collect();
        let lengths = [0, 1, 255, 256, 511, 512, 513, 2047, 2048, 2049, 2303, 4096, 4097, 8191];
        let lengths = lengths.into_iter().chain([12_345, 16_384 + 300]);
        for len in lengths {
            for (from_at, to_at) in [(0, 0), (1, 0), (0, 3), (7, 13), (64, 64)] {
                for crc in [0, 0xFFFF_FFFF, 0x1234_5678] {
                    let from = &data[from_at..from_at + len];
                    let mut out = vec![0xAAu8; len + to_at + 5];
                    let got = copy_and_crc32(crc, from, &mut out[to_at..to_at + len]);
                    assert_eq!(got, continue_crc32(crc, from), "crc at {len} {from_at} {to_at}");
                    assert_eq!(&out[to_at..to_at + len], from, "bytes at {len}");
                    assert!(out[..to_at].iter().chain(&out[to_at + len..]).all(|&b| b == 0xAA));
                }
            }
        }
    }

    /// The AVX-512 kernel itself, called directly, where the CPU has it. Where it does not,
    /// the test above covered the copy-then-crc32fast path that runs instead, and this one
    /// says so; `REEL_EXPECT_FUSED_CRC=1` makes it fail there instead.
    #[test]
    fn the_fused_kernel_matches_crc32fast_where_the_cpu_runs_it() {
        #[cfg(target_arch = "x86_64")]
        if x86::supported() {
            let data: Vec<u8> = (0..9000u32).map(|i| (i.wrapping_mul(40_503) >> 3) as u8).collect();
            for len in [256, 257, 272, 384, 496, 511, 512, 513, 767, 768, 1024, 2048, 4351, 8999] {
                let from = &data[1..1 + len];
                let mut to = vec![0u8; len];
                // SAFETY: `supported` said the CPU has the kernel's features.
                let got = unsafe { x86::copy_and_crc32(0x89AB_CDEF, from, &mut to) };
                assert_eq!(got, continue_crc32(0x89AB_CDEF, from), "crc at {len}");
                assert_eq!(to, from, "bytes at {len}");
            }
            return;
        }
        #[cfg(target_arch = "x86_64")]
        if x86_256::supported() {
            // The 256-bit kernel runs instead, and the test below checks it.
            return;
        }
        let expected = std::env::var_os("REEL_EXPECT_FUSED_CRC").is_some();
        assert!(!expected, "REEL_EXPECT_FUSED_CRC is set but this CPU cannot run the kernel");
        eprintln!(
            "this CPU lacks AVX-512 VPCLMULQDQ: only the copy-then-crc32fast path was tested"
        );
    }

    /// The 256-bit kernel, called directly, where the CPU has it (every CPU with AVX-512
    /// `VPCLMULQDQ` has it too, so it is tested there as well).
    #[test]
    fn the_256_bit_kernel_matches_crc32fast_where_the_cpu_runs_it() {
        #[cfg(target_arch = "x86_64")]
        if x86_256::supported() {
            let data: Vec<u8> = (0..9000u32).map(|i| (i.wrapping_mul(40_503) >> 3) as u8).collect();
            for len in [256, 257, 272, 384, 496, 511, 512, 513, 767, 768, 1024, 2048, 4351, 8999] {
                for crc in [0, 0x89AB_CDEF] {
                    let from = &data[1..1 + len];
                    let mut to = vec![0u8; len];
                    // SAFETY: `supported` said the CPU has the kernel's features.
                    let got = unsafe { x86_256::copy_and_crc32(crc, from, &mut to) };
                    assert_eq!(got, continue_crc32(crc, from), "crc at {len}");
                    assert_eq!(to, from, "bytes at {len}");
                }
            }
            return;
        }
        let expected = std::env::var_os("REEL_EXPECT_FUSED_CRC").is_some();
        assert!(!expected, "REEL_EXPECT_FUSED_CRC is set but this CPU cannot run a kernel");
        eprintln!("this CPU lacks VPCLMULQDQ: only the copy-then-crc32fast path was tested");
    }

    /// Every fold constant, recomputed from the polynomial (see the constants' docs).
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn fold_constants() {
        /// `x^d mod P`, P = 0x1_04C1_1DB7.
        fn x_pow_mod(d: u32) -> u64 {
            let mut r: u64 = 1;
            for _ in 0..d {
                r <<= 1;
                if r >> 32 != 0 {
                    r ^= 0x1_04C1_1DB7;
                }
            }
            r
        }
        let k = |d: u32| i64::from((x_pow_mod(d) as u32).reverse_bits()) << 1;
        let pairs = [
            (128, x86::K3, x86::K4),
            (256, x86::K_256_LO, x86::K_256_HI),
            (384, x86::K_384_LO, x86::K_384_HI),
            (512, x86::K_512_LO, x86::K_512_HI),
            (2048, x86::K_2048_LOW, x86::K_2048_HIGH),
        ];
        for (distance, low, high) in pairs {
            assert_eq!((k(distance + 32), k(distance - 32)), (low, high), "D = {distance}");
        }
    }

    #[test]
    #[should_panic(expected = "equal lengths")]
    fn refuses_unequal_lengths() {
        copy_and_crc32(0, &[1, 2, 3], &mut [0; 2]);
    }
}
