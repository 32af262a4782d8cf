//! Every backend this build offers, by name.

use reel_core::Backend;

/// The names [`backend_by_name`] accepts, in the order benchmarks report them.
pub fn backend_names() -> Vec<&'static str> {
    let mut names = vec!["pread", "mmap", "memory"];
    if cfg!(all(target_os = "linux", feature = "io-uring")) {
        names.extend(["io_uring", "io_uring-direct"]);
    }
    names.push("auto");
    names
}

/// The backend called `name` (`pread`, `mmap`, `memory`, `io_uring`, `io_uring-direct`,
/// `auto`). Without io_uring (another OS, or the feature off), `auto` means `mmap`.
/// `io_uring+direct`, as [`RecordSource::backend_name`](crate::RecordSource::backend_name)
/// and `reel inspect` spell it, names `io_uring-direct` too, so a name printed can be given
/// back.
pub fn backend_by_name(name: &str) -> Option<Backend> {
    Some(match name {
        "pread" => Backend::Pread,
        "mmap" => Backend::Mmap,
        "memory" => Backend::Memory,
        #[cfg(all(target_os = "linux", feature = "io-uring"))]
        "io_uring" => crate::uring::uring_backend(crate::uring::UringOptions::default()),
        #[cfg(all(target_os = "linux", feature = "io-uring"))]
        "io_uring-direct" | "io_uring+direct" => {
            crate::uring::uring_backend(crate::uring::UringOptions::default().direct(true))
        }
        "auto" => default_backend(),
        _ => return None,
    })
}

/// Every backend of this build (see [`backend_names`]).
pub fn all_backends() -> Vec<Backend> {
    backend_names().into_iter().filter_map(backend_by_name).collect()
}

/// What [`open`](crate::open) uses: `auto` where io_uring is built in, `mmap` otherwise.
pub fn default_backend() -> Backend {
    #[cfg(all(target_os = "linux", feature = "io-uring"))]
    {
        crate::auto::auto_backend()
    }
    #[cfg(not(all(target_os = "linux", feature = "io-uring")))]
    {
        Backend::Mmap
    }
}

/// Whether a local Arrow IPC file is mapped (its batches decoded where they lie) under the
/// backend called `name`: under `auto` and `mmap`, which map record files too; the others
/// read each batch into memory. One rule for the reader and for `reel bench`'s row labels.
pub fn maps_ipc_files(name: &str) -> bool {
    matches!(name, "auto" | "mmap")
}
