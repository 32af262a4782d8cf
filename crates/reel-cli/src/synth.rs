//! Deterministic generated content, so the demo can check every byte it reads back.

/// SplitMix64: a tiny, well-mixed generator; the demo needs reproducible data, not a
/// cryptographic or statistically perfect source.
#[derive(Clone, Debug)]
pub struct SplitMix(u64);

impl SplitMix {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    /// `0..n` in random order.
    pub fn permutation(&mut self, n: u64) -> Vec<u64> {
        let mut v: Vec<u64> = (0..n).collect();
        for i in (1..v.len()).rev() {
            v.swap(i, self.below(i as u64 + 1) as usize);
        }
        v
    }
}

/// The payload of record `i`: a length between 0 and `max_len` and bytes derived from `i`,
/// so a reader can check it without keeping a copy.
pub fn payload(i: u64, max_len: usize) -> Vec<u8> {
    let mut g = SplitMix::new(i ^ 0x5EED);
    let len = g.below(max_len as u64 + 1) as usize;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        out.extend_from_slice(&g.next_u64().to_le_bytes());
    }
    out.truncate(len);
    out
}

/// The fields `record` gives a dataset of `format`, in the format's own type names, for
/// writers that need a schema up front.
pub fn schema(format: reel::Format) -> Option<Vec<reel::FieldSpec>> {
    let _ = format;
    None
}

/// Record `i` of a generated dataset of `format`: a shape the format can store, with
/// content derived from `i` alone so that a reader can check it.
pub fn record(format: reel::Format, i: u64, max_len: usize) -> reel::Record {
    let _ = format;
    reel::Record::from_bytes(&payload(i, max_len))
}
