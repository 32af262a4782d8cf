//! A keyed bijection on `[0, n)` in O(1) memory: a Feistel network with cycle walking.

/// Number of Feistel rounds. Four rounds of a good round function already give a
/// pseudo-random permutation (Luby–Rackoff); eight leave a wide margin for small halves.
const ROUNDS: usize = 8;

/// A pseudo-random permutation of `0..n` computed one element at a time.
///
/// The domain is widened to the next power of two, `2^b ≥ n` (so `2^b < 2n`), and split
/// into a high and a low half of `⌊b/2⌋` and `⌈b/2⌉` bits. Each round replaces
/// `(high, low)` by `(low, high ⊕ F_k(low))` and swaps the half widths, which is invertible
/// whatever `F` is; the round function `F` is a keyed 64-bit mixer. An input that the
/// network maps outside `[0, n)` is fed through it again (cycle walking) until the result
/// lands inside; because the network is a bijection on `[0, 2^b)`, this restricts it to a
/// bijection on `[0, n)`, and since `2^b < 2n`, fewer than two passes are needed on average.
///
/// The permutation depends only on `(n, key)`. It is pseudo-random, not drawn uniformly
/// from all `n!` permutations, which is what shuffling for training needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FeistelPermutation {
    n: u64,
    bits: u32,
    keys: [u64; ROUNDS],
}

impl FeistelPermutation {
    /// The permutation of `0..n` selected by `key`.
    pub fn new(n: u64, key: u64) -> Self {
        let bits = if n <= 1 { 0 } else { 64 - (n - 1).leading_zeros() };
        let mut state = key;
        let mut keys = [0u64; ROUNDS];
        for k in &mut keys {
            *k = splitmix64(&mut state);
        }
        FeistelPermutation { n, bits, keys }
    }

    /// The size of the domain.
    pub fn len(&self) -> u64 {
        self.n
    }

    /// Whether the domain is empty.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The image of `i`, for `i < n` (other inputs are returned unchanged).
    pub fn apply(&self, i: u64) -> u64 {
        if i >= self.n {
            return i;
        }
        let mut x = i;
        loop {
            x = self.encrypt(x);
            if x < self.n {
                return x;
            }
        }
    }

    /// The `i` with `apply(i) == j`, for `j < n` (other inputs are returned unchanged).
    pub fn invert(&self, j: u64) -> u64 {
        if j >= self.n {
            return j;
        }
        let mut x = j;
        loop {
            x = self.decrypt(x);
            if x < self.n {
                return x;
            }
        }
    }

    /// One pass of the network over `[0, 2^bits)`.
    fn encrypt(&self, x: u64) -> u64 {
        let mut high_bits = self.bits / 2;
        let mut low_bits = self.bits - high_bits;
        let mut x = x;
        for &k in &self.keys {
            let high = x >> low_bits;
            let low = x & mask(low_bits);
            let new_low = (high ^ round(low, k)) & mask(high_bits);
            // The old low half becomes the high half: widths swap.
            x = (low << high_bits) | new_low;
            std::mem::swap(&mut high_bits, &mut low_bits);
        }
        x
    }

    /// The inverse of [`encrypt`](Self::encrypt).
    fn decrypt(&self, x: u64) -> u64 {
        // Widths as they are after all rounds (they swap once per round).
        let (mut high_bits, mut low_bits) = if ROUNDS.is_multiple_of(2) {
            (self.bits / 2, self.bits - self.bits / 2)
        } else {
            (self.bits - self.bits / 2, self.bits / 2)
        };
        let mut x = x;
        for &k in self.keys.iter().rev() {
            // x = (old_low << old_high_bits) | new_low, where now high_bits = old_low_bits
            // and low_bits = old_high_bits.
            let old_low = x >> low_bits;
            let new_low = x & mask(low_bits);
            let old_high = (new_low ^ round(old_low, k)) & mask(low_bits);
            std::mem::swap(&mut high_bits, &mut low_bits);
            x = (old_high << low_bits) | old_low;
        }
        x
    }
}

/// A mask of the low `bits` bits (`bits <= 32` here, since halves never exceed 32 bits).
fn mask(bits: u32) -> u64 {
    if bits >= 64 { u64::MAX } else { (1u64 << bits) - 1 }
}

/// The keyed round function: the half-block mixed with the round key, multiplied by an
/// odd constant, and the high half of the product kept — every output bit depends on
/// every input bit, at the cost of one multiplication, since it runs eight times per
/// index on the loader's hot path.
fn round(half: u64, key: u64) -> u64 {
    (half ^ key).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32
}

/// SplitMix64: expands one seed into independent-looking 64-bit words.
pub(crate) fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn is_a_permutation_for_small_sizes() {
        for n in 0..300u64 {
            for key in [0u64, 1, 0xdead_beef] {
                let p = FeistelPermutation::new(n, key);
                let mut seen = vec![false; n as usize];
                for i in 0..n {
                    let j = p.apply(i);
                    assert!(j < n, "n={n} key={key}: {i} -> {j}");
                    assert!(!seen[j as usize], "n={n} key={key}: {j} hit twice");
                    seen[j as usize] = true;
                    assert_eq!(p.invert(j), i, "n={n} key={key}: inverse of {j}");
                }
            }
        }
    }

    #[test]
    fn huge_domains_invert() {
        for n in [u64::MAX, u64::MAX / 3, 1 << 40, (1 << 33) + 7] {
            let p = FeistelPermutation::new(n, 42);
            for i in [0, 1, n / 2, n - 1] {
                let j = p.apply(i);
                assert!(j < n);
                assert_eq!(p.invert(j), i);
            }
        }
    }

    #[test]
    fn orders_look_random() {
        // Over many keys: about one ascending neighbour pair and one fixed point per
        // permutation, as for uniformly random ones, and record 0 lands in every tenth of
        // the order about equally often.
        let n = 1000u64;
        let (mut ascending, mut fixed) = (0u64, 0u64);
        let mut tenths = [0u32; 10];
        for key in 0..200u64 {
            let p = FeistelPermutation::new(n, key.wrapping_mul(0x1234_5678_9abc_def1));
            let v: Vec<u64> = (0..n).map(|i| p.apply(i)).collect();
            ascending += v.windows(2).filter(|w| w[1] == w[0] + 1).count() as u64;
            fixed += v.iter().enumerate().filter(|&(i, &j)| i as u64 == j).count() as u64;
            tenths[(p.invert(0) * 10 / n) as usize] += 1;
        }
        assert!(ascending < 2 * 200, "{ascending} ascending pairs");
        assert!(fixed < 2 * 200, "{fixed} fixed points");
        assert!(tenths.iter().all(|&t| (8..=40).contains(&t)), "{tenths:?}");
    }

    #[test]
    fn different_keys_give_different_orders() {
        let a: Vec<u64> = (0..1000).map(|i| FeistelPermutation::new(1000, 1).apply(i)).collect();
        let b: Vec<u64> = (0..1000).map(|i| FeistelPermutation::new(1000, 2).apply(i)).collect();
        assert_ne!(a, b);
        // Mixed, not nearly the identity.
        let fixed = a.iter().enumerate().filter(|&(i, &j)| i as u64 == j).count();
        assert!(fixed < 20, "{fixed} fixed points");
    }
}
