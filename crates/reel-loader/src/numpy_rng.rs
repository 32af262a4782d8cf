//! numpy's `default_rng([a, b, …])`, bit for bit: `SeedSequence` → `PCG64` → `Generator`.
//!
//! Granular (and its older name, bags) derives every shuffle and every random pick from
//! numpy generators seeded with short integer lists (`[0, epoch]`, `[seed, step]`). To
//! reproduce its orders exactly — and so to resume a Granular training run, or to compare
//! against one — reel re-implements the exact algorithms numpy uses
//! (`granular.md` §9.3). Only the draws Granular needs are provided: raw 32/64-bit words,
//! uniform doubles, `permutation`/`shuffle`, bounded integers and weighted choice.

/// numpy `SeedSequence` constants (`numpy/random/bit_generator.pyx`).
const INIT_A: u32 = 0x43b0_d7e5;
const MULT_A: u32 = 0x931e_8875;
const INIT_B: u32 = 0x8b51_f9dd;
const MULT_B: u32 = 0x58f3_8ded;
const MIX_MULT_L: u32 = 0xca01_f9dd;
const MIX_MULT_R: u32 = 0x4973_f715;
const XSHIFT: u32 = 16;
const POOL_SIZE: usize = 4;

/// The 128-bit LCG multiplier of PCG64.
const PCG_MULT: u128 = 0x2360_ED05_1FC6_5DA4_4385_DF64_9FCC_F645;

/// numpy's `SeedSequence` with the default pool size of four 32-bit words and no spawn key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SeedSequence {
    pool: [u32; POOL_SIZE],
}

impl SeedSequence {
    /// The sequence numpy builds from `SeedSequence([seed[0], seed[1], …])`.
    ///
    /// Each element contributes its 32-bit little-endian limbs (0 contributes one zero
    /// word), so `[0, 0]` and `0` give the same sequence, as in numpy.
    pub fn new(seed: &[u64]) -> Self {
        let mut words = Vec::with_capacity(seed.len() * 2);
        for &s in seed {
            words.push(s as u32);
            let high = (s >> 32) as u32;
            if high != 0 {
                words.push(high);
            }
        }
        Self::from_words(&words)
    }

    fn from_words(words: &[u32]) -> Self {
        let mut hash_const = INIT_A;
        let mut hashmix = |value: u32| {
            let mut v = value ^ hash_const;
            hash_const = hash_const.wrapping_mul(MULT_A);
            v = v.wrapping_mul(hash_const);
            v ^ (v >> XSHIFT)
        };
        let mix = |x: u32, y: u32| {
            let r = MIX_MULT_L.wrapping_mul(x).wrapping_sub(MIX_MULT_R.wrapping_mul(y));
            r ^ (r >> XSHIFT)
        };
        let mut pool = [0u32; POOL_SIZE];
        for (i, slot) in pool.iter_mut().enumerate() {
            *slot = hashmix(words.get(i).copied().unwrap_or(0));
        }
        for src in 0..POOL_SIZE {
            for dst in 0..POOL_SIZE {
                if src != dst {
                    let h = hashmix(pool[src]);
                    pool[dst] = mix(pool[dst], h);
                }
            }
        }
        for &w in words.iter().skip(POOL_SIZE) {
            for slot in &mut pool {
                let h = hashmix(w);
                *slot = mix(*slot, h);
            }
        }
        SeedSequence { pool }
    }

    /// The mixed entropy pool.
    pub fn pool(&self) -> [u32; POOL_SIZE] {
        self.pool
    }

    /// `generate_state(4, dtype=uint64)`: the words numpy seeds PCG64 with.
    pub fn generate_state_u64(&self) -> [u64; 4] {
        let mut hash_const = INIT_B;
        let mut words = [0u32; 8];
        for (j, w) in words.iter_mut().enumerate() {
            let mut v = self.pool[j % POOL_SIZE] ^ hash_const;
            hash_const = hash_const.wrapping_mul(MULT_B);
            v = v.wrapping_mul(hash_const);
            *w = v ^ (v >> XSHIFT);
        }
        let mut out = [0u64; 4];
        for (k, o) in out.iter_mut().enumerate() {
            *o = u64::from(words[2 * k]) | (u64::from(words[2 * k + 1]) << 32);
        }
        out
    }
}

/// numpy's `default_rng(seed)`: a PCG64 generator with numpy's buffered 32-bit draws and
/// numpy's algorithms for permutations, bounded integers, uniform doubles and weighted
/// choice.
///
/// ```
/// use reel_loader::NumpyRng;
/// // numpy: np.random.default_rng([0, 0]).permutation(10)
/// assert_eq!(NumpyRng::new(&[0, 0]).permutation(10), [4, 6, 2, 7, 3, 5, 9, 0, 8, 1]);
/// ```
#[derive(Clone, Debug)]
pub struct NumpyRng {
    state: u128,
    inc: u128,
    buffered: Option<u32>,
}

impl NumpyRng {
    /// The generator of `numpy.random.default_rng(seed)` for a list of non-negative
    /// integers.
    pub fn new(seed: &[u64]) -> Self {
        Self::from_seed_sequence(&SeedSequence::new(seed))
    }

    /// The PCG64 generator numpy seeds from `seq`.
    pub fn from_seed_sequence(seq: &SeedSequence) -> Self {
        let s = seq.generate_state_u64();
        let initstate = (u128::from(s[0]) << 64) | u128::from(s[1]);
        let initseq = (u128::from(s[2]) << 64) | u128::from(s[3]);
        let mut rng = NumpyRng { state: 0, inc: (initseq << 1) | 1, buffered: None };
        rng.step();
        rng.state = rng.state.wrapping_add(initstate);
        rng.step();
        rng
    }

    /// The LCG state and increment (for comparing with numpy's `bit_generator.state`).
    pub fn state_and_increment(&self) -> (u128, u128) {
        (self.state, self.inc)
    }

    fn step(&mut self) {
        self.state = self.state.wrapping_mul(PCG_MULT).wrapping_add(self.inc);
    }

    /// The next 64-bit word (PCG64's XSL-RR output of the advanced state).
    pub fn next_u64(&mut self) -> u64 {
        self.step();
        let x = ((self.state >> 64) as u64) ^ (self.state as u64);
        x.rotate_right((self.state >> 122) as u32)
    }

    /// The next 32-bit word, numpy style: a fresh 64-bit word gives its low half now and
    /// its high half on the following call.
    pub fn next_u32(&mut self) -> u32 {
        if let Some(high) = self.buffered.take() {
            return high;
        }
        let x = self.next_u64();
        self.buffered = Some((x >> 32) as u32);
        x as u32
    }

    /// A uniform double in `[0, 1)` (numpy's `random()`).
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / 9_007_199_254_740_992.0)
    }

    /// A uniform integer in `[0, max]` by masked rejection (numpy's `random_interval`, the
    /// draw `shuffle` and `permutation` use).
    pub fn interval(&mut self, max: u64) -> u64 {
        if max == 0 {
            return 0;
        }
        let mask = u64::MAX >> max.leading_zeros();
        if max <= u64::from(u32::MAX) {
            loop {
                let v = u64::from(self.next_u32()) & mask;
                if v <= max {
                    return v;
                }
            }
        }
        loop {
            let v = self.next_u64() & mask;
            if v <= max {
                return v;
            }
        }
    }

    /// Shuffles `items` in place the way numpy's `Generator.shuffle` does for a 1-D array.
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.interval(i as u64) as usize;
            items.swap(i, j);
        }
    }

    /// `permutation(n)`: a shuffled `0..n`.
    pub fn permutation(&mut self, n: u64) -> Vec<u64> {
        let mut v: Vec<u64> = (0..n).collect();
        self.shuffle(&mut v);
        v
    }

    /// A uniform integer in `[0, n)` (numpy's `integers(n)`, Lemire's method with numpy's
    /// buffered 32-bit draws for ranges that fit). `n == 0` gives 0 without drawing, as
    /// numpy does for an empty range of width one.
    pub fn integers(&mut self, n: u64) -> u64 {
        let rng = n.saturating_sub(1);
        if rng == 0 {
            return 0;
        }
        if rng == u64::from(u32::MAX) {
            return u64::from(self.next_u32());
        }
        if rng < u64::from(u32::MAX) {
            let excl = rng + 1;
            let mut m = u64::from(self.next_u32()) * excl;
            let mut low = m & u64::from(u32::MAX);
            if low < excl {
                let threshold = (u64::from(u32::MAX) - rng) % excl;
                while low < threshold {
                    m = u64::from(self.next_u32()) * excl;
                    low = m & u64::from(u32::MAX);
                }
            }
            return m >> 32;
        }
        if rng == u64::MAX {
            return self.next_u64();
        }
        let excl = rng + 1;
        let mut m = u128::from(self.next_u64()) * u128::from(excl);
        let mut low = m as u64;
        if low < excl {
            let threshold = (u64::MAX - rng) % excl;
            while low < threshold {
                m = u128::from(self.next_u64()) * u128::from(excl);
                low = m as u64;
            }
        }
        (m >> 64) as u64
    }

    /// `choice(len(weights), p=weights / weights.sum())` with `float32` weights, the way
    /// Granular's `Mix` source picks a source: the weights are normalised in `float32`
    /// (numpy's pairwise sum), then the cumulative distribution is searched in `float64`.
    /// Returns `None` when `weights` is empty or does not sum to a positive finite number.
    pub fn weighted_index(&mut self, weights: &[f32]) -> Option<usize> {
        let total = pairwise_sum_f32(weights);
        if weights.is_empty() || !total.is_finite() || total <= 0.0 {
            return None;
        }
        let mut cdf = Vec::with_capacity(weights.len());
        let mut acc = 0.0f64;
        for &w in weights {
            acc += f64::from(w / total);
            cdf.push(acc);
        }
        let last = acc;
        for c in &mut cdf {
            *c /= last;
        }
        let u = self.next_f64();
        Some(cdf.partition_point(|&c| c <= u))
    }
}

/// numpy's pairwise summation of a `float32` array (`np.sum` on `float32`).
pub fn pairwise_sum_f32(a: &[f32]) -> f32 {
    const BLOCK: usize = 128;
    let n = a.len();
    if n < 8 {
        let mut res = 0.0f32;
        for &x in a {
            res += x;
        }
        res
    } else if n <= BLOCK {
        let mut r = [0.0f32; 8];
        r.copy_from_slice(&a[..8]);
        let mut i = 8;
        while i < n - (n % 8) {
            for (k, acc) in r.iter_mut().enumerate() {
                *acc += a[i + k];
            }
            i += 8;
        }
        let mut res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for &x in &a[i..] {
            res += x;
        }
        res
    } else {
        let mut n2 = n / 2;
        n2 -= n2 % 8;
        pairwise_sum_f32(&a[..n2]) + pairwise_sum_f32(&a[n2..])
    }
}
