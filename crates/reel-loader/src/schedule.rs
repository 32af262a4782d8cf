//! Which positions of which epoch each global step gives each rank: pure arithmetic.

use serde::{Deserialize, Serialize};

/// How global steps are laid over epochs.
///
/// A *global step* is one batch for every rank: `world × batch_size` consecutive positions
/// of the epoch's global order, of which rank `r` takes the `r`-th block of `batch_size`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Schedule {
    /// Epochs are separate, as in PyTorch: a global step never spans two epochs. The last
    /// `len mod (world × batch_size)` positions of an epoch are dropped with `drop_last`;
    /// otherwise they form one shorter final global step, split as evenly as possible
    /// between the ranks (rank `r` takes positions `⌊r·t/world⌋ .. ⌊(r+1)·t/world⌋` of the
    /// `t` left, so sizes differ by at most one), so that every rank
    /// sees the same number of steps — a rank whose share is empty gets an empty batch.
    #[default]
    Epochs,
    /// Epochs follow each other without a break, as in Granular's `Loader`: the orders of
    /// epochs 0, 1, 2, … are concatenated into one stream and cut into global steps, so a
    /// batch can hold the end of one epoch and the start of the next. `drop_last` does not
    /// apply. A bounded run ([`LoaderBuilder::epochs`](crate::LoaderBuilder::epochs)) stops
    /// before the first step that starts at or after the end epoch.
    Stream,
}

/// The start of a global step: position `position` of epoch `epoch`'s order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Cursor {
    pub(crate) epoch: u64,
    /// Global steps started in this epoch before this one (informational).
    pub(crate) step: u64,
    pub(crate) position: u64,
}

/// One global step as seen by one rank.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Step {
    /// Where the global step starts.
    pub(crate) at: Cursor,
    /// Epoch and position of this rank's first record.
    pub(crate) first_epoch: u64,
    pub(crate) first_position: u64,
    /// Records of this rank in the step.
    pub(crate) count: u64,
    /// Where the following global step starts.
    pub(crate) next: Cursor,
}

/// The step arithmetic of one rank.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Planner {
    pub(crate) len: u64,
    pub(crate) batch: u64,
    pub(crate) world: u64,
    pub(crate) rank: u64,
    pub(crate) drop_last: bool,
    pub(crate) schedule: Schedule,
    pub(crate) end_epoch: Option<u64>,
}

impl Planner {
    /// Positions per full global step (checked not to overflow when the planner is built).
    pub(crate) fn global_batch(&self) -> u64 {
        self.batch.saturating_mul(self.world)
    }

    /// Global steps in a whole epoch (`None` for [`Schedule::Stream`], where steps do not
    /// align with epochs).
    pub(crate) fn steps_per_epoch(&self) -> Option<u64> {
        match self.schedule {
            Schedule::Epochs => {
                let g = self.global_batch();
                let tail = !self.len.is_multiple_of(g) && !self.drop_last;
                Some(self.len / g + u64::from(tail))
            }
            Schedule::Stream => None,
        }
    }

    /// Whether no step exists at all (an empty dataset, or every epoch dropped whole).
    fn is_void(&self) -> bool {
        self.len == 0 || self.steps_per_epoch() == Some(0)
    }

    /// Moves a cursor that points past what its epoch offers to the next epoch.
    pub(crate) fn normalize(&self, c: Cursor) -> Cursor {
        if self.len == 0 {
            return c;
        }
        match self.schedule {
            Schedule::Epochs => {
                let remaining = self.len.saturating_sub(c.position);
                if remaining == 0 || (self.drop_last && remaining < self.global_batch()) {
                    Cursor { epoch: c.epoch.saturating_add(1), step: 0, position: 0 }
                } else {
                    c
                }
            }
            Schedule::Stream => {
                if c.position < self.len {
                    c
                } else {
                    let (epoch, position) = self.advance(c.epoch, 0, c.position);
                    Cursor { epoch, step: 0, position }
                }
            }
        }
    }

    /// `(epoch, position)` moved `by` positions forward along the stream of epochs.
    pub(crate) fn advance(&self, epoch: u64, position: u64, by: u64) -> (u64, u64) {
        let len = u128::from(self.len.max(1));
        let p = u128::from(position) + u128::from(by);
        let epochs = u64::try_from(p / len).unwrap_or(u64::MAX);
        (epoch.saturating_add(epochs), (p % len) as u64)
    }

    /// The global step starting at `c` (normalised first), or `None` when the run is over.
    pub(crate) fn step_at(&self, c: Cursor) -> Option<Step> {
        if self.is_void() {
            return None;
        }
        let at = self.normalize(c);
        if self.end_epoch.is_some_and(|end| at.epoch >= end) {
            return None;
        }
        let g = self.global_batch();
        match self.schedule {
            Schedule::Epochs => {
                let remaining = self.len - at.position;
                let (offset, count, used) = if remaining >= g {
                    (self.rank * self.batch, self.batch, g)
                } else {
                    let share = |r: u64| {
                        (u128::from(r) * u128::from(remaining) / u128::from(self.world)) as u64
                    };
                    let start = share(self.rank);
                    (start, share(self.rank + 1) - start, remaining)
                };
                let next = self.normalize(Cursor {
                    epoch: at.epoch,
                    step: at.step.saturating_add(1),
                    position: at.position + used,
                });
                Some(Step {
                    at,
                    first_epoch: at.epoch,
                    first_position: at.position + offset,
                    count,
                    next,
                })
            }
            Schedule::Stream => {
                let (first_epoch, first_position) =
                    self.advance(at.epoch, at.position, self.rank * self.batch);
                let (epoch, position) = self.advance(at.epoch, at.position, g);
                let step = if epoch == at.epoch { at.step.saturating_add(1) } else { 0 };
                Some(Step {
                    at,
                    first_epoch,
                    first_position,
                    count: self.batch,
                    next: Cursor { epoch, step, position },
                })
            }
        }
    }

    /// Calls `visit(epoch, position)` for each record of `step` of this rank, in order.
    pub(crate) fn for_each_position(&self, step: &Step, mut visit: impl FnMut(u64, u64)) {
        let (mut epoch, mut position) = (step.first_epoch, step.first_position);
        for _ in 0..step.count {
            if position >= self.len {
                (epoch, position) = self.advance(epoch, position, 0);
            }
            visit(epoch, position);
            position += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn planner(len: u64, batch: u64, world: u64, rank: u64, drop_last: bool) -> Planner {
        Planner {
            len,
            batch,
            world,
            rank,
            drop_last,
            schedule: Schedule::Epochs,
            end_epoch: Some(2),
        }
    }

    fn positions(p: &Planner) -> Vec<Vec<(u64, u64)>> {
        let mut c = Cursor { epoch: 0, step: 0, position: 0 };
        let mut out = Vec::new();
        while let Some(step) = p.step_at(c) {
            let mut v = Vec::new();
            p.for_each_position(&step, |e, q| v.push((e, q)));
            out.push(v);
            c = step.next;
        }
        out
    }

    #[test]
    fn epoch_tail_is_split_evenly() {
        // 10 records, 2 ranks of batch 4: one full step of 8, then 2 left: one each.
        let r0 = positions(&planner(10, 4, 2, 0, false));
        let r1 = positions(&planner(10, 4, 2, 1, false));
        assert_eq!(r0.len(), 4);
        assert_eq!(r0[0], [(0, 0), (0, 1), (0, 2), (0, 3)]);
        assert_eq!(r1[0], [(0, 4), (0, 5), (0, 6), (0, 7)]);
        assert_eq!(r0[1], [(0, 8)]);
        assert_eq!(r1[1], [(0, 9)]);
        assert_eq!(r1[2][0], (1, 4));
        // With drop_last the tail disappears.
        let d0 = positions(&planner(10, 4, 2, 0, true));
        assert_eq!(d0.len(), 2);
        assert_eq!(d0[1][0], (1, 0));
    }

    #[test]
    fn tail_smaller_than_world_gives_empty_batches() {
        let shares: Vec<usize> =
            (0..4).map(|r| positions(&planner(2, 1, 4, r, false))[0].len()).collect();
        assert_eq!(shares, [0, 1, 0, 1]);
        let shares: Vec<usize> =
            (0..4).map(|r| positions(&planner(6, 4, 4, r, false))[0].len()).collect();
        assert_eq!(shares, [1, 2, 1, 2]);
    }

    #[test]
    fn stream_crosses_epochs() {
        let p = Planner { schedule: Schedule::Stream, ..planner(7, 3, 2, 1, false) };
        let steps = positions(&p);
        // Rank 1 takes stream positions 3..6, 9..12, ... of 7-record epochs.
        assert_eq!(steps[0], [(0, 3), (0, 4), (0, 5)]);
        assert_eq!(steps[1], [(1, 2), (1, 3), (1, 4)]);
        // Steps start at stream positions 0, 6, 12, 18; 18 is in epoch 2, the end.
        assert!(steps.iter().all(|s| s.len() == 3));
        assert_eq!(steps.len(), 3);
    }

    #[test]
    fn drop_last_with_too_few_records_is_empty() {
        assert!(positions(&planner(3, 4, 1, 0, true)).is_empty());
        assert!(positions(&planner(0, 4, 1, 0, false)).is_empty());
    }
}
