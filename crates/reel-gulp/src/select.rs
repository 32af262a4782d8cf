//! Choosing frames of a video, with Python's indexing rules (gulpio2's `gd[id, selector]`).

use reel_core::{Error, ErrorKind, Result};

/// Which frames of a video to read.
///
/// Only the chosen frames are read from disk; neighbouring ones are fetched in one read.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum FrameSelection {
    /// Every frame (the reference's `selector=None`).
    #[default]
    All,
    /// A Python slice `start:stop:step`: negative positions count from the end, missing
    /// ends mean "from the start"/"to the end" (reversed for a negative step), positions
    /// beyond the ends are clamped, and a step of 0 is an error.
    Slice {
        /// First position (`None`: the beginning, or the end when stepping backwards).
        start: Option<i64>,
        /// Position to stop before (`None`: past the end, or before the beginning when
        /// stepping backwards).
        stop: Option<i64>,
        /// Stride; negative walks backwards.
        step: i64,
    },
    /// Frame positions in any order, repeats allowed; a negative position counts from the
    /// end; a position outside the video is an [`ErrorKind::OutOfRange`] error (Python's
    /// `IndexError`).
    Indices(Vec<i64>),
}

impl FrameSelection {
    /// The slice `start..stop` with step 1.
    pub fn range(start: usize, stop: usize) -> Self {
        FrameSelection::Slice {
            start: Some(i64::try_from(start).unwrap_or(i64::MAX)),
            stop: Some(i64::try_from(stop).unwrap_or(i64::MAX)),
            step: 1,
        }
    }

    /// Every `step`-th frame from the first (`::step`).
    pub fn every(step: i64) -> Self {
        FrameSelection::Slice { start: None, stop: None, step }
    }

    /// The positions of the chosen frames in a video of `frame_count` frames, in the order
    /// they are returned.
    pub fn resolve(&self, frame_count: usize) -> Result<Vec<usize>> {
        let len = frame_count as i128;
        match self {
            FrameSelection::All => Ok((0..frame_count).collect()),
            FrameSelection::Slice { start, stop, step } => {
                let step = i128::from(*step);
                if step == 0 {
                    return Err(Error::invalid_input("slice step cannot be zero"));
                }
                // CPython's PySlice_AdjustIndices.
                let adjust = |v: Option<i64>, default: i128| -> i128 {
                    let Some(v) = v else { return default };
                    let v = i128::from(v);
                    if v < 0 {
                        let v = v + len;
                        if v < 0 { if step < 0 { -1 } else { 0 } } else { v }
                    } else if v >= len {
                        if step < 0 { len - 1 } else { len }
                    } else {
                        v
                    }
                };
                let (first, end) = if step > 0 {
                    (adjust(*start, 0), adjust(*stop, len))
                } else {
                    (adjust(*start, len - 1), adjust(*stop, -1))
                };
                let mut out = Vec::new();
                let mut i = first;
                while (step > 0 && i < end) || (step < 0 && i > end) {
                    out.push(i as usize);
                    i += step;
                }
                Ok(out)
            }
            FrameSelection::Indices(list) => list
                .iter()
                .map(|&i| {
                    let k = if i < 0 { i128::from(i) + len } else { i128::from(i) };
                    if (0..len).contains(&k) {
                        Ok(k as usize)
                    } else {
                        Err(Error::new(
                            ErrorKind::OutOfRange,
                            format!(
                                "frame index {i} is out of range (the video has {frame_count} \
                                 frames)"
                            ),
                        ))
                    }
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn slice(start: Option<i64>, stop: Option<i64>, step: i64, n: usize) -> Vec<usize> {
        FrameSelection::Slice { start, stop, step }.resolve(n).unwrap()
    }

    #[test]
    fn slices_follow_python() {
        // Checked against list(range(n))[start:stop:step] in CPython.
        assert_eq!(slice(None, None, 1, 5), [0, 1, 2, 3, 4]);
        assert_eq!(slice(Some(1), Some(2), 1, 5), [1]);
        assert_eq!(slice(None, None, 2, 5), [0, 2, 4]);
        assert_eq!(slice(None, None, -1, 5), [4, 3, 2, 1, 0]);
        assert_eq!(slice(Some(-2), None, 1, 5), [3, 4]);
        assert_eq!(slice(None, Some(-2), 1, 5), [0, 1, 2]);
        assert_eq!(slice(Some(10), Some(-10), -3, 5), [4, 1]);
        assert_eq!(slice(Some(-100), Some(100), 1, 3), [0, 1, 2]);
        assert_eq!(slice(Some(3), Some(1), 1, 5), Vec::<usize>::new());
        assert_eq!(slice(Some(3), Some(1), -1, 5), [3, 2]);
        assert_eq!(slice(None, None, -2, 0), Vec::<usize>::new());
        assert_eq!(slice(Some(i64::MIN), Some(i64::MAX), i64::MAX, 4), [0]);
        assert_eq!(slice(None, None, i64::MIN, 4), [3]);
        assert!(FrameSelection::every(0).resolve(3).is_err());
    }

    #[test]
    fn index_lists_follow_python() {
        let sel = FrameSelection::Indices(vec![1, 0, -1, 1]);
        assert_eq!(sel.resolve(3).unwrap(), [1, 0, 2, 1]);
        for bad in [3, -4] {
            let e = FrameSelection::Indices(vec![bad]).resolve(3).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::OutOfRange);
        }
        assert!(FrameSelection::Indices(vec![]).resolve(0).unwrap().is_empty());
    }
}
