//! The numpy-compatible generator and Granular's step → index mappings against the test
//! vectors of granular.md §9.3, plus vectors produced with numpy 2.4.6 and granular 0.24.2
//! for the code paths the spec's table does not reach (long permutations, multi-word and
//! 64-bit seeds, every bounded-integer branch, weighted choice over 9 and 200 weights).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::Arc;

use reel_core::RecordSource;
use reel_loader::granular::{epoch_permutation, epochs_index, mix_choice, sample_index};
use reel_loader::{
    Loader, LoaderBuilder, LoaderState, NumpyRng, Schedule, SeedSequence, Shuffle, pairwise_sum_f32,
};

use common::{TestSource, drain};

#[test]
fn seed_sequence_pool_and_state() {
    let seq = SeedSequence::new(&[0, 0]);
    assert_eq!(seq.pool(), [0xfe40eb07, 0x4f363a36, 0x4eb2009d, 0xc89a7aa7]);
    assert_eq!(
        seq.generate_state_u64(),
        [0xdb2cd7e7b0f478be, 0xabf4641a2c71ba49, 0x20c6ed6d9d7b8d41, 0x2c4099de223c39d4]
    );
    // [0, 0] is the same entropy as 0, and trailing zero words up to four change nothing.
    assert_eq!(SeedSequence::new(&[0]), seq);
    assert_eq!(SeedSequence::new(&[0, 0, 0, 0]), seq);
}

#[test]
fn pcg64_seeding_and_outputs() {
    let mut rng = NumpyRng::new(&[0, 0]);
    let (state, inc) = rng.state_and_increment();
    assert_eq!(state, 35399562948360463058890781895381311971);
    assert_eq!(inc, 87136372517582989555478159403783844777);
    assert_eq!(rng.next_u64(), 0xa30febcfd9c2825f);
    assert_eq!(rng.next_u64(), 0x4510bdf882d9d721);
    assert_eq!(rng.next_u64(), 0x0a7d3da94ecde8b8);
    assert_eq!(NumpyRng::new(&[0, 0]).next_f64(), 0.6369616873214543);
}

#[test]
fn buffered_u32_halves_one_u64() {
    let mut a = NumpyRng::new(&[3, 9]);
    let mut b = a.clone();
    let x = b.next_u64();
    assert_eq!(a.next_u32(), x as u32);
    assert_eq!(a.next_u32(), (x >> 32) as u32);
    assert_eq!(a.next_u64(), b.next_u64());
}

#[test]
fn spec_permutations() {
    let cases: [(&[u64], u64, &[u64]); 5] = [
        (&[0, 0], 10, &[4, 6, 2, 7, 3, 5, 9, 0, 8, 1]),
        (&[0, 1], 10, &[9, 1, 3, 8, 7, 6, 0, 4, 2, 5]),
        (&[123, 0], 10, &[7, 4, 0, 2, 1, 5, 6, 8, 3, 9]),
        (&[0, 0], 5, &[2, 4, 3, 0, 1]),
        (&[0, 2], 5, &[4, 2, 1, 0, 3]),
    ];
    for (seed, n, want) in cases {
        assert_eq!(NumpyRng::new(seed).permutation(n), want, "seed {seed:?}, n {n}");
    }
}

#[test]
fn spec_granular_sources() {
    // Epochs(len 10, any seed) steps 0..19.
    let epochs: Vec<u64> = (0..20).map(|s| epochs_index(10, s).unwrap()).collect();
    assert_eq!(epochs, [4, 6, 2, 7, 3, 5, 9, 0, 8, 1, 9, 1, 3, 8, 7, 6, 0, 4, 2, 5]);
    // Sample(len 10, seed 0) steps 0..9.
    let sample: Vec<u64> = (0..10).map(|s| sample_index(10, 0, s)).collect();
    assert_eq!(sample, [8, 5, 9, 5, 4, 6, 4, 7, 3, 2]);
    // Mix(2 sources, weights [0.2, 0.8], seed 0) chosen source, steps 0..9.
    let mix: Vec<usize> = (0..10).map(|s| mix_choice(&[0.2, 0.8], 0, s).unwrap()).collect();
    assert_eq!(mix, [1, 1, 0, 1, 1, 1, 1, 0, 1, 1]);
}

#[test]
fn numpy_long_permutation_and_shuffle() {
    let p = epoch_permutation(1000, 7, 3);
    assert_eq!(&p[..12], [919, 225, 21, 78, 70, 40, 82, 156, 66, 517, 275, 127]);
    let weighted: u64 = p.iter().enumerate().map(|(i, &v)| i as u64 * v).sum();
    assert_eq!(weighted, 252518634);
    let mut a: Vec<u32> = (0..20).collect();
    NumpyRng::new(&[11, 0]).shuffle(&mut a);
    assert_eq!(a, [18, 2, 15, 9, 8, 1, 11, 6, 17, 5, 13, 4, 0, 3, 19, 12, 10, 7, 16, 14]);
}

#[test]
fn numpy_wide_and_long_seeds() {
    let raw = |seed: &[u64], n: usize| {
        let mut r = NumpyRng::new(seed);
        (0..n).map(|_| r.next_u64()).collect::<Vec<_>>()
    };
    let big = [6092868293840384069, 13511556829932664613, 16201820691834854282];
    // 2^32 + 5 splits into the words [5, 1].
    assert_eq!(raw(&[(1 << 32) + 5, 3], 3), big);
    assert_eq!(raw(&[5, 1, 3], 3), big);
    // More than four words are mixed in after the pool.
    assert_eq!(raw(&[1, 2, 3, 4, 5, 6], 2), [11470276255390519954, 2202564630955117089]);
    assert_eq!(raw(&[u64::MAX, 1 << 40], 2), [13538770655609441082, 13731179237180591346]);
}

#[test]
fn numpy_bounded_integers_every_branch() {
    let mut r = NumpyRng::new(&[9, 9]);
    let bounds = [
        1,
        2,
        3,
        1000,
        (1 << 31) + 7,
        1 << 32,
        (1 << 32) + 1,
        (1 << 40) + 3,
        (1 << 63) + 5,
        u64::MAX,
    ];
    let got: Vec<u64> = bounds.iter().map(|&n| r.integers(n)).collect();
    assert_eq!(
        got,
        [
            0,
            0,
            1,
            395,
            1420501198,
            3176343145,
            1904420180,
            146885312811,
            4865015436155616865,
            3621319547606174462
        ]
    );
}

#[test]
fn numpy_doubles() {
    let mut r = NumpyRng::new(&[3, 4]);
    let got: Vec<f64> = (0..3).map(|_| r.next_f64()).collect();
    assert_eq!(got, [0.8983874397838618, 0.45577517933777767, 0.1173129568901814]);
}

#[test]
fn numpy_pairwise_sums_and_weighted_choice() {
    let w9: Vec<f32> = (0..9).map(|i| (0.1 * i as f64 + 0.05) as f32).collect();
    let w200: Vec<f32> =
        (0..200).map(|i| (((i * 37) % 17) as f64 * 0.013 + 0.001) as f32).collect();
    let w1000: Vec<f32> =
        (0..1000).map(|i| (((i * 7919) % 101) as f64 * 0.37 + 0.5) as f32).collect();
    assert_eq!(pairwise_sum_f32(&w9).to_bits(), 1082235290);
    assert_eq!(pairwise_sum_f32(&w200).to_bits(), 1101488193);
    assert_eq!(pairwise_sum_f32(&w1000).to_bits(), 1184119291);
    let mix9: Vec<usize> = (0..20).map(|s| mix_choice(&w9, 1, s).unwrap()).collect();
    assert_eq!(mix9, [6, 5, 6, 1, 5, 5, 3, 5, 6, 7, 8, 2, 7, 8, 6, 8, 3, 7, 1, 6]);
    let mix200: Vec<usize> = (0..20).map(|s| mix_choice(&w200, 2, s).unwrap()).collect();
    assert_eq!(
        mix200,
        [53, 179, 169, 71, 104, 164, 178, 25, 33, 101, 166, 49, 163, 169, 2, 49, 59, 132, 5, 111]
    );
    assert_eq!(mix_choice(&[], 0, 0), None);
    assert_eq!(mix_choice(&[0.0, 0.0], 0, 0), None);
}

fn granular_builder(source: &Arc<TestSource>, rank: u64) -> LoaderBuilder {
    LoaderBuilder::new(source.clone() as Arc<dyn RecordSource>)
        .batch_size(3)
        .shard(rank, 2)
        .shuffle(Shuffle::Granular)
        .schedule(Schedule::Stream)
        .endless()
        .workers(2)
}

/// Batches of granular 0.24.2's `Loader(Epochs(data), batch=3, shard_id=r, num_shards=2)`
/// over 7 datapoints whose value is their index, recorded by running the reference.
const GRANULAR_RANK0: [[u64; 3]; 6] =
    [[2, 4, 3], [1, 1, 3], [2, 5, 5], [1, 4, 3], [6, 2, 5], [2, 1, 4]];
const GRANULAR_RANK1: [[u64; 3]; 6] =
    [[6, 5, 0], [6, 0, 4], [2, 0, 6], [1, 3, 0], [4, 5, 0], [6, 3, 5]];

#[test]
fn granular_loader_order_is_reproduced() {
    let source = Arc::new(TestSource::new(7));
    for (rank, want) in [(0, GRANULAR_RANK0), (1, GRANULAR_RANK1)] {
        let loader = granular_builder(&source, rank).build().unwrap();
        let got: Vec<Vec<u64>> = drain_n(loader, 6);
        let want: Vec<Vec<u64>> = want.iter().map(|b| b.to_vec()).collect();
        assert_eq!(got, want, "rank {rank}");
    }
}

#[test]
fn granular_save_and_load_are_reproduced() {
    // The reference: after 6 batches save() gives {'step': 36}; load({'step': 12}) on
    // rank 1 continues with its third batch.
    let source = Arc::new(TestSource::new(7));
    let mut loader = granular_builder(&source, 1).build().unwrap();
    for _ in 0..6 {
        loader.next().unwrap().unwrap();
    }
    assert_eq!(loader.state().granular_step(), Some(36));
    let state = LoaderState::from_granular_step(12, 0, 7).unwrap();
    let resumed = granular_builder(&source, 1).resume(state).build().unwrap();
    let want: Vec<Vec<u64>> = GRANULAR_RANK1[2..5].iter().map(|b| b.to_vec()).collect();
    assert_eq!(drain_n(resumed, 3), want);
}

fn drain_n(loader: Loader, n: usize) -> Vec<Vec<u64>> {
    loader.take(n).map(|b| common::indices(&b.unwrap())).collect()
}

#[test]
fn granular_epochs_mode_is_the_numpy_permutation() {
    // Without sharding and with whole batches, each epoch is exactly the permutation.
    let source = Arc::new(TestSource::new(10));
    let loader = Loader::builder(source.clone())
        .batch_size(5)
        .shuffle(Shuffle::Granular)
        .epochs(2)
        .build()
        .unwrap();
    let all: Vec<u64> = drain(loader).into_iter().flat_map(|(_, b)| b).collect();
    assert_eq!(all, [4, 6, 2, 7, 3, 5, 9, 0, 8, 1, 9, 1, 3, 8, 7, 6, 0, 4, 2, 5]);
    // The old Loader's seed argument selects [seed, epoch].
    let seeded = Loader::builder(source)
        .batch_size(10)
        .shuffle(Shuffle::Granular)
        .seed(123)
        .build()
        .unwrap();
    assert_eq!(drain(seeded)[0].1, [7, 4, 0, 2, 1, 5, 6, 8, 3, 9]);
}
