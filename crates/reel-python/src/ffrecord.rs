//! What `reel.compat.ffrecord` needs beyond records: a file's offset and checksum tables
//! (ffrecord's `get_offsets` / `get_checksums`) and its metadata check (`validate`), as
//! reel-ffrecord reads and checks them.

use std::path::PathBuf;

use numpy::{IntoPyArray, PyArray1};
use pyo3::prelude::*;
use reel::ffrecord::{FfrecordOptions, FfrecordReader};

use crate::errors::IntoPyResult;
use crate::fspath::fs_path;

/// The two tables of one FFRecord file: `n + 1` offsets (the last is the file's size) and
/// `n` CRC-32 checksums.
type Tables<'py> = (Bound<'py, PyArray1<i64>>, Bound<'py, PyArray1<u32>>);

/// The offset table (with the file's size after the last record) and the checksum table
/// of the FFRecord file at `path`, as stored. The header's structure is validated (offsets
/// in order and inside the file); its checksum only when `check_data`.
#[pyfunction]
#[pyo3(signature = (path, check_data = true))]
pub(crate) fn ffrecord_tables<'py>(
    py: Python<'py>,
    #[pyo3(from_py_with = fs_path)] path: PathBuf,
    check_data: bool,
) -> PyResult<Tables<'py>> {
    let (offsets, checksums) = crate::shutdown::detach(py, || {
        let options = FfrecordOptions::default().check_data(check_data);
        let reader = FfrecordReader::open_with(&path, &options)?;
        // One file: `open_with` on a directory reads each `*.ffr` in it, and the caller
        // asks for one file's tables.
        if reader.fnames().len() != 1 {
            let count = reader.fnames().len();
            return Err(reel::Error::invalid_input(format!(
                "a directory of {count} FFRecord files, not one file"
            ))
            .with_path(&path));
        }
        // Offsets lie inside the file (checked at open), whose size is below i64::MAX.
        let offsets: Vec<i64> =
            reader.get_offsets(0).unwrap_or_default().iter().map(|&o| o as i64).collect();
        let checksums = reader.get_checksums(0).unwrap_or_default().to_vec();
        Ok((offsets, checksums))
    })
    .py_err(py)?;
    Ok((offsets.into_pyarray(py), checksums.into_pyarray(py)))
}

/// Checks the metadata checksum of the FFRecord file at `path` (ffrecord's `validate()`:
/// the header and its tables, not the records). A legacy file, whose stored checksum is
/// 0, passes.
#[pyfunction]
pub(crate) fn ffrecord_validate(
    py: Python<'_>,
    #[pyo3(from_py_with = fs_path)] path: PathBuf,
) -> PyResult<()> {
    crate::shutdown::detach(py, || {
        let options = FfrecordOptions::default().check_data(false);
        FfrecordReader::open_with(&path, &options)?.validate()
    })
    .py_err(py)
}
