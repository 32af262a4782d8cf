//! What `reel.compat.gulpio2` needs beyond records: the directory's ids, chunks and frame
//! tables, as reel-gulp reads them (in the reference's chunk order).

use std::path::PathBuf;

use pyo3::prelude::*;
use reel_gulp::GulpReader;

use crate::errors::IntoPyResult;
use crate::fspath::fs_path;

/// One video of a gulp directory: (id, chunk number, frame_info as (loc, pad, length)
/// triples, the `meta_data` list as JSON text).
type VideoEntry = (String, u64, Vec<(u64, u64, u64)>, String);

/// The chunk numbers of the gulp directory at `path` and every video in reel's (and
/// gulpio2's) order, without reading any frame.
#[pyfunction]
pub(crate) fn gulp_index(
    py: Python<'_>,
    #[pyo3(from_py_with = fs_path)] path: PathBuf,
) -> PyResult<(Vec<u64>, Vec<VideoEntry>)> {
    crate::shutdown::detach(py, || {
        let reader = GulpReader::open(&path)?;
        let chunks = reader.chunks().iter().map(|c| c.number).collect();
        let mut out = Vec::new();
        for (index, id) in reader.ids().enumerate() {
            let index = index as u64;
            let chunk = reader.chunk_of(id).unwrap_or_default();
            let frames = reader
                .frame_info(index)
                .unwrap_or_default()
                .iter()
                .map(|f| (f.loc, f.pad, f.length))
                .collect();
            let meta = reader.meta_data(index)?;
            let json: Vec<String> = meta.iter().map(|m| m.to_python_json()).collect();
            out.push((id.to_string(), chunk, frames, format!("[{}]", json.join(", "))));
        }
        Ok((chunks, out))
    })
    .py_err(py)
}
