//! The store against a real S3 protocol server (moto) on loopback. Ignored by a plain
//! `cargo test`; `.ci/run` runs them with `--ignored` and `REEL_TEST_MOTO_PYTHON` set (see the
//! README, "Object storage").
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write;

use reel_core::ErrorKind;
use reel_store::object_store::ObjectStoreExt;
use reel_store::testing::MotoServer;
use reel_store::{ObjectPath, ObjectUrl, Store, UploadItem};

fn store(server: &MotoServer, bucket: &str) -> Store {
    server.create_bucket(bucket).unwrap();
    let url = ObjectUrl::parse(&format!("s3://{bucket}/data")).unwrap();
    Store::new(&url, &server.options()).unwrap()
}

fn file_with(dir: &std::path::Path, name: &str, bytes: &[u8]) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::File::create(&path).unwrap().write_all(bytes).unwrap();
    path
}

#[test]
#[ignore = "needs the moto S3 server; .ci/run runs them"]
fn put_read_list_delete_and_errors() {
    let server = MotoServer::start().unwrap();
    let store = store(&server, "basic");
    let key = ObjectPath::from("data/a.bin");
    let bytes: Vec<u8> = (0..10_000u32).map(|i| (i * 7) as u8).collect();
    store.put(&key, bytes.clone().into()).unwrap();
    assert_eq!(store.size(&key).unwrap(), 10_000);
    assert_eq!(&store.read_range(&key, 100..300).unwrap()[..], &bytes[100..300]);
    assert_eq!(&store.read_all(&key).unwrap()[..], &bytes[..]);
    store.put(&ObjectPath::from("data/sub/b"), vec![1u8].into()).unwrap();
    let listed = store.list(&ObjectPath::from("data")).unwrap();
    let names: Vec<_> = listed.iter().map(|(k, n)| (k.to_string(), *n)).collect();
    assert_eq!(names, [("data/a.bin".to_string(), 10_000), ("data/sub/b".to_string(), 1)]);

    // Past the end and missing objects are errors naming the object.
    let e = store.read_range(&key, 9_000..11_000).unwrap_err();
    assert!(e.to_string().contains("s3://basic/data/a.bin"), "{e}");
    let missing = ObjectPath::from("data/none");
    assert_eq!(store.size(&missing).unwrap_err().kind(), ErrorKind::NotFound);
    assert_eq!(store.read_all(&missing).unwrap_err().kind(), ErrorKind::NotFound);

    store.delete(&key).unwrap();
    store.delete(&key).unwrap(); // deleting what is gone is fine
    assert_eq!(store.size(&key).unwrap_err().kind(), ErrorKind::NotFound);
}

#[test]
#[ignore = "needs the moto S3 server; .ci/run runs them"]
fn large_files_go_up_in_parts_and_stages_in_order() {
    let server = MotoServer::start().unwrap();
    let store = store(&server, "upload");
    let dir = tempfile::tempdir().unwrap();
    // Two and a half parts, so the multipart path with a short last part is taken.
    let big: Vec<u8> =
        (0..(reel_store::MULTIPART_PART_BYTES * 5 / 2)).map(|i| (i % 251) as u8).collect();
    let big_path = file_with(dir.path(), "big", &big);
    let small_path = file_with(dir.path(), "small", b"meta");
    let items = [
        UploadItem { local: small_path, key: ObjectPath::from("data/meta.json"), stage: 1 },
        UploadItem { local: big_path, key: ObjectPath::from("data/big"), stage: 0 },
    ];
    let sent = store.upload_staged(&items).unwrap();
    assert_eq!(sent, big.len() as u64 + 4);
    let got = store.read_all(&ObjectPath::from("data/big")).unwrap();
    assert!(got[..] == big[..], "the multipart object differs from the file");
    assert_eq!(&store.read_all(&ObjectPath::from("data/meta.json")).unwrap()[..], b"meta");
}

#[test]
#[ignore = "needs the moto S3 server; .ci/run runs them"]
fn a_failed_staged_upload_removes_what_it_wrote() {
    let server = MotoServer::start().unwrap();
    let store = store(&server, "failing");
    let dir = tempfile::tempdir().unwrap();
    let ok = file_with(dir.path(), "ok", b"data");
    let items = [
        UploadItem { local: ok, key: ObjectPath::from("data/part-0"), stage: 0 },
        // A local file that vanished: its stage fails after stage 0 went up.
        UploadItem {
            local: dir.path().join("missing"),
            key: ObjectPath::from("data/spec.json"),
            stage: 1,
        },
    ];
    let e = store.upload_staged(&items).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
    assert!(store.list(&ObjectPath::from("data")).unwrap().is_empty());
}

#[test]
#[ignore = "needs the moto S3 server; .ci/run runs them"]
fn environment_configuration_reaches_the_store() {
    let server = MotoServer::start().unwrap();
    server.create_bucket("fromenv").unwrap();
    // A child process sees only the standard AWS variables; here the same settings are
    // given as options by their environment names, which the S3 builder reads alike.
    let mut options = reel_store::StoreOptions { use_env: false, ..Default::default() };
    for (name, value) in server.env() {
        options = options.with(name.to_ascii_lowercase(), value);
    }
    let url = ObjectUrl::parse("s3://fromenv/x").unwrap();
    let store = Store::new(&url, &options).unwrap();
    store.put(&ObjectPath::from("x/y"), vec![5u8; 3].into()).unwrap();
    assert_eq!(store.size(&ObjectPath::from("x/y")).unwrap(), 3);
}

/// Gives `good` bytes of a pattern, then fails (or, with `fail` false, ends early).
struct Failing {
    good: usize,
    given: usize,
    fail: bool,
}

impl std::io::Read for Failing {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.given >= self.good {
            return if self.fail {
                Err(std::io::Error::other("the disk went away"))
            } else {
                Ok(0)
            };
        }
        let n = buf.len().min(self.good - self.given);
        buf[..n].fill(7);
        self.given += n;
        Ok(n)
    }
}

#[test]
#[ignore = "needs the moto S3 server; .ci/run runs them"]
fn a_failed_multipart_upload_is_aborted() {
    let server = MotoServer::start().unwrap();
    let store = store(&server, "aborted");
    let part = reel_store::MULTIPART_PART_BYTES;
    let key = ObjectPath::from("data/big");
    // Fails after two parts went up; then a reader that ends early; then one that runs long.
    let cases = [
        (Failing { good: part * 2 + 5, given: 0, fail: true }, (part * 3) as u64, "disk went away"),
        (Failing { good: part * 2 + 5, given: 0, fail: false }, (part * 3) as u64, "changed size"),
        (Failing { good: part * 3, given: 0, fail: false }, (part * 2) as u64, "changed size"),
    ];
    for (mut reader, size, message) in cases {
        let e = store.upload_reader(&mut reader, size, &key, "the test reader").unwrap_err();
        assert!(e.to_string().contains(message), "{e}");
        assert!(e.to_string().contains("s3://aborted/data/big"), "{e}");
        assert_eq!(store.size(&key).unwrap_err().kind(), ErrorKind::NotFound);
        assert_eq!(server.pending_uploads("aborted").unwrap(), Vec::<String>::new());
    }
    // The control: an upload left open is seen by `pending_uploads`, so the check above
    // can fail.
    let client = store.client().unwrap();
    let _open = reel_store::block_on(async { client.put_multipart(&key).await }).unwrap().unwrap();
    assert_eq!(server.pending_uploads("aborted").unwrap(), ["data/big"]);
}
