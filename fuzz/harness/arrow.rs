//! Arrow targets: bytes as a Parquet file and as an Arrow IPC file, each read from a
//! mapping (IPC under `auto`/`mmap`) and into memory, record by record and in batches.

use reel::arrow::{ArrowFileSource, FileKind, ReadOptions};

use super::exercise;

/// Bytes as a Parquet file and as an Arrow IPC file (whatever they start with), mapped and
/// read: opening and reading may fail, never panic, abort or hang.
pub fn arrow_file(data: &[u8]) {
    #[cfg(fuzzing)]
    let_reel_catch_decoder_panics();
    let dir = tempfile::tempdir().expect("a temporary directory");
    for (name, kind) in [("fuzz.arrow", FileKind::ArrowIpc), ("fuzz.parquet", FileKind::Parquet)] {
        let path = dir.path().join(name);
        std::fs::write(&path, data).expect("the input written to a file");
        for map in [true, false] {
            let options = ReadOptions { map, window_rows: 64, ..ReadOptions::default() };
            let store = reel::local_store();
            if let Ok(source) = ArrowFileSource::open_in(&store, &path, kind, &options) {
                exercise(&source);
            }
        }
    }
}

/// arrow-rs and parquet panic on some damaged files (an array breaking its own invariants,
/// a page naming a dictionary its column chunk lacks), and reel catches those panics around
/// every decoder call and reports `Corrupt` errors: by design, no panic leaves reel. The
/// hook libfuzzer-sys installs aborts on every panic, caught or not, so this target keeps
/// that hook only for panics raised outside the crates of the registry: a panic in reel's
/// own code still fails the run, with its message, even where reel would catch it.
#[cfg(fuzzing)]
fn let_reel_catch_decoder_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let fuzzer_hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let foreign = info.location().is_some_and(|l| l.file().contains("/registry/src/"));
            if !foreign {
                fuzzer_hook(info);
            }
        }));
    });
}
