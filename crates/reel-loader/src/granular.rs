//! Granular's step → index mappings (`granular.sources`), reproduced exactly.
//!
//! Granular's loader asks a *source* for global step `t`; its sources turn `t` into a
//! record index with numpy generators (`granular.md` §9.1, §9.3). These functions give the
//! same answers, so a reel loader in [`Shuffle::Granular`](crate::Shuffle::Granular) mode
//! with [`Schedule::Stream`](crate::Schedule::Stream) visits records in the order a
//! Granular `Loader(Epochs(dataset), …)` does.

use crate::NumpyRng;

/// The order of epoch `epoch` of `Epochs(source, shuffle=True, seed=seed)` in Granular
/// 0.12–0.20 (the `Loader(..., seed=seed)` of those versions): numpy's
/// `default_rng([seed, epoch]).permutation(len)`.
///
/// Granular ≥ 0.21 ignores the `seed` argument of `Epochs` (it always uses 0; a known
/// bug), so its order is `epoch_permutation(len, 0, epoch)` whatever seed was passed.
pub fn epoch_permutation(len: u64, seed: u64, epoch: u64) -> Vec<u64> {
    NumpyRng::new(&[seed, epoch]).permutation(len)
}

/// The record `Epochs(source, length=len)` (Granular ≥ 0.21, seed ignored) reads at
/// global step `step`. Computes a whole permutation: call it for checks, not in a loop.
pub fn epochs_index(len: u64, step: u64) -> Option<u64> {
    if len == 0 {
        return None;
    }
    let perm = epoch_permutation(len, 0, step / len);
    perm.get((step % len) as usize).copied()
}

/// The record `Sample(source, length=len, seed=seed)` reads at global step `step`:
/// `default_rng([seed, step]).integers(len)`.
pub fn sample_index(len: u64, seed: u64, step: u64) -> u64 {
    NumpyRng::new(&[seed, step]).integers(len)
}

/// The source `Mix(sources, weights, seed=seed)` reads from at global step `step`, or
/// `None` when the weights do not sum to a positive finite number.
pub fn mix_choice(weights: &[f32], seed: u64, step: u64) -> Option<usize> {
    NumpyRng::new(&[seed, step]).weighted_index(weights)
}
