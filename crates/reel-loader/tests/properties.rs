//! Property tests: every epoch is a permutation, ranks are disjoint and cover the epoch
//! whatever the world size, resuming gives the uninterrupted run's batches without reading
//! the skipped ones, and the batches do not depend on the worker count.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::Arc;

use proptest::prelude::*;
use reel_core::RecordSource;
use reel_loader::{BatchIndices, LoaderBuilder, LoaderState, Schedule, Shuffle};

use common::{TestSource, indices};

fn shuffles() -> impl Strategy<Value = Shuffle> {
    prop_oneof![Just(Shuffle::None), Just(Shuffle::Feistel), Just(Shuffle::Granular)]
}

fn builder(len: u64) -> LoaderBuilder {
    LoaderBuilder::new(Arc::new(TestSource::new(len)) as Arc<dyn RecordSource>)
}

/// The global order of an epoch, position by position.
fn epoch_order(shuffle: Shuffle, seed: u64, epoch: u64, len: u64) -> Vec<u64> {
    let order = shuffle.epoch_order(seed, epoch, len);
    (0..len).map(|p| order.index_at(p)).collect()
}

/// For each rank, its batches of the run.
fn per_rank(b: &LoaderBuilder, world: u64) -> Vec<Vec<BatchIndices>> {
    (0..world).map(|r| b.clone().shard(r, world).index_batches().unwrap().collect()).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn every_epoch_is_a_permutation(
        len in 0u64..300, batch in 1usize..20, shuffle in shuffles(), seed: u64,
    ) {
        let b = builder(len).batch_size(batch).shuffle(shuffle).seed(seed).epochs(3);
        let mut epochs = vec![Vec::new(); 3];
        for bi in b.index_batches().unwrap() {
            prop_assert!(bi.indices.len() <= batch);
            epochs[bi.epoch as usize].extend(bi.indices);
        }
        for (e, mut seen) in epochs.into_iter().enumerate() {
            prop_assert_eq!(&seen, &epoch_order(shuffle, seed, e as u64, len));
            seen.sort_unstable();
            prop_assert_eq!(seen, (0..len).collect::<Vec<_>>(), "epoch {}", e);
        }
    }

    #[test]
    fn ranks_are_disjoint_cover_and_elastic(
        len in 0u64..200, batch in 1usize..9, world in 1u64..6, drop_last: bool,
        shuffle in shuffles(), seed: u64,
    ) {
        let b = builder(len).batch_size(batch).shuffle(shuffle).seed(seed).epochs(2)
            .drop_last(drop_last);
        let ranks = per_rank(&b, world);
        let steps = ranks[0].len();
        for r in &ranks {
            prop_assert_eq!(r.len(), steps, "every rank sees the same number of steps");
        }
        let gbs = batch as u64 * world;
        let mut epochs: Vec<Vec<u64>> = vec![Vec::new(); 2];
        for k in 0..steps {
            let epoch = ranks[0][k].epoch;
            for r in &ranks {
                prop_assert_eq!(r[k].epoch, epoch);
                prop_assert_eq!(&r[k].resume, &ranks[0][k].resume, "the state is global");
                // Full steps give every rank a full batch; only an epoch's tail is short.
                if (ranks[0][k].position + gbs) <= len {
                    prop_assert_eq!(r[k].indices.len(), batch);
                }
                epochs[epoch as usize].extend(&r[k].indices);
            }
        }
        for (e, got) in epochs.iter().enumerate() {
            // Rank blocks in rank order, steps in order: exactly the global order (elastic:
            // it does not depend on the world size), cut at the dropped tail.
            let full = epoch_order(shuffle, seed, e as u64, len);
            let kept = if drop_last { (len / gbs * gbs) as usize } else { len as usize };
            prop_assert_eq!(got.as_slice(), &full[..kept]);
        }
    }

    #[test]
    fn stream_schedule_concatenates_epochs(
        len in 1u64..60, batch in 1usize..7, world in 1u64..4, shuffle in shuffles(), seed: u64,
    ) {
        let b = builder(len).batch_size(batch).shuffle(shuffle).seed(seed)
            .schedule(Schedule::Stream).epochs(3);
        let ranks = per_rank(&b, world);
        let mut stream: Vec<u64> = Vec::new();
        for k in 0..ranks[0].len() {
            for r in &ranks {
                prop_assert_eq!(r[k].indices.len(), batch);
                stream.extend(&r[k].indices);
            }
        }
        let gbs = batch as u64 * world;
        let want: Vec<u64> =
            (0..4 + gbs).flat_map(|e| epoch_order(shuffle, seed, e, len)).collect();
        prop_assert_eq!(&stream[..], &want[..stream.len()]);
        // It stops before the first step that starts in epoch 3.
        prop_assert_eq!(stream.len() as u64, (3 * len).div_ceil(gbs) * gbs);
    }

    #[test]
    fn skipping_batches_gives_the_state_after_them(
        len in 0u64..150, batch in 1usize..8, world in 1u64..4, drop_last: bool,
        shuffle in shuffles(), seed: u64, n in 0u64..80, every in 1u64..4, first in 0u64..3,
    ) {
        let b = builder(len).batch_size(batch).shuffle(shuffle).seed(seed).epochs(2)
            .drop_last(drop_last).shard(world - 1, world).interleave(every, first % every);
        let all: Vec<BatchIndices> = b.clone().index_batches().unwrap().collect();
        let mut plan = b.clone().index_batches().unwrap();
        let passed = plan.skip_batches(n);
        prop_assert_eq!(passed, n.min(all.len() as u64));
        let want = match passed {
            0 => b.clone().index_batches().unwrap().state(),
            k => all[k as usize - 1].resume.clone(),
        };
        prop_assert_eq!(plan.state(), want);
        // And the batches after them are the rest of the plan.
        let rest: Vec<BatchIndices> = plan.collect();
        prop_assert_eq!(&rest[..], &all[passed as usize..]);
    }

    #[test]
    fn resume_continues_exactly_even_with_another_world_size(
        len in 1u64..150, batch in 1usize..8, world in 1u64..5, new_world in 1u64..5,
        drop_last: bool, shuffle in shuffles(), seed: u64, cut in 0usize..60,
    ) {
        let b = builder(len).batch_size(batch).shuffle(shuffle).seed(seed).epochs(3)
            .drop_last(drop_last);
        let ranks = per_rank(&b, world);
        let steps = ranks[0].len();
        let cut = cut.min(steps);
        let state = if cut == 0 {
            b.clone().index_batches().unwrap().state()
        } else {
            ranks[0][cut - 1].resume.clone()
        };
        let state = LoaderState::from_json(&state.to_json()).unwrap();

        // Same world size: exactly the uninterrupted run's remaining batches.
        for (r, batches) in ranks.iter().enumerate() {
            let resumed: Vec<BatchIndices> = b.clone().shard(r as u64, world)
                .resume(state.clone()).index_batches().unwrap().collect();
            prop_assert_eq!(&resumed[..], &batches[cut..]);
        }

        // Another world size: the epoch in progress is finished without repeating or
        // skipping a record (drop_last aside), later epochs are unchanged.
        let resumed = per_rank(&b.clone().resume(state.clone()), new_world);
        let mut epochs: Vec<Vec<u64>> = vec![Vec::new(); 3];
        for k in 0..cut {
            for r in &ranks {
                epochs[r[k].epoch as usize].extend(&r[k].indices);
            }
        }
        for k in 0..resumed[0].len() {
            for r in &resumed {
                epochs[r[k].epoch as usize].extend(&r[k].indices);
            }
        }
        for (e, got) in epochs.iter().enumerate() {
            let full = epoch_order(shuffle, seed, e as u64, len);
            if !drop_last {
                prop_assert_eq!(got.as_slice(), full.as_slice(), "epoch {}", e);
            } else {
                // Every record read once at most, in global order.
                prop_assert!(full.starts_with(got), "epoch {}", e);
            }
        }
    }
}

proptest! {
    // These start threads: fewer cases.
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn batches_do_not_depend_on_the_worker_count(
        len in 0u64..120, batch in 1usize..9, world in 1u64..4, drop_last: bool,
        shuffle in shuffles(), seed: u64, prefetch in 1usize..5,
    ) {
        let rank = seed % world;
        let b = builder(len).batch_size(batch).shuffle(shuffle).seed(seed).epochs(2)
            .drop_last(drop_last).shard(rank, world).prefetch(prefetch);
        let planned: Vec<(u64, Vec<u64>)> =
            b.index_batches().unwrap().map(|bi| (bi.epoch, bi.indices)).collect();
        let configs = [(0, false), (1, false), (2, false), (5, false), (1, true), (3, true)];
        for (workers, helps) in configs {
            let loader = b.clone().workers(workers).consumer_helps(helps).build().unwrap();
            let got = common::drain(loader);
            prop_assert_eq!(&got, &planned, "{} workers, consumer helps: {}", workers, helps);
        }
    }

    #[test]
    fn resumed_loader_reads_only_what_it_delivers(
        len in 1u64..120, batch in 1usize..9, shuffle in shuffles(), seed: u64,
        cut in 0usize..40, workers in 0usize..4, new_workers in 0usize..4,
    ) {
        let source = Arc::new(TestSource::new(len));
        let b = LoaderBuilder::new(source.clone() as Arc<dyn RecordSource>)
            .batch_size(batch).shuffle(shuffle).seed(seed).epochs(2);
        let all = common::drain(b.clone().workers(workers).build().unwrap());
        let cut = cut.min(all.len());
        let mut loader = b.clone().workers(workers).build().unwrap();
        for (_, want) in &all[..cut] {
            let got = loader.next().unwrap().unwrap();
            prop_assert_eq!(&indices(&got), want);
        }
        let saved = loader.state().to_json();
        drop(loader);

        let fresh = Arc::new(TestSource::new(len));
        let resumed = LoaderBuilder::new(fresh.clone() as Arc<dyn RecordSource>)
            .batch_size(batch).shuffle(shuffle).seed(seed).epochs(2).workers(new_workers)
            .resume(LoaderState::from_json(&saved).unwrap())
            .build().unwrap();
        let rest = common::drain(resumed);
        prop_assert_eq!(&rest[..], &all[cut..]);
        let delivered: usize = rest.iter().map(|(_, b)| b.len()).sum();
        prop_assert_eq!(fresh.reads(), delivered as u64, "skipped batches must not be read");
    }
}
