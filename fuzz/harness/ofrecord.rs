//! OFRecord targets: the frame index of a part file against the streaming reader, the
//! protobuf decoder, and records written and read back.

use std::io::Cursor;

use reel::ofrecord::{
    EncodeOptions, OfrecordOptions, OfrecordReader, OfrecordStream, OfrecordWriter,
    OfrecordWriterOptions, decode_record, encode_record,
};
use reel::{DType, ErrorKind, MemFiles, Record, RecordSource, RecordSourceExt, Value};

use super::input::Input;
use super::{exercise, limits};

fn options(strict: bool) -> OfrecordOptions {
    OfrecordOptions::default().limits(limits()).oneflow_strict(strict)
}

/// Most records a stream is followed for (the reader caps at the same count).
const STREAM_CAP: usize = 4_000;

/// What one record of a stream gave.
type Outcome = Result<Record, ErrorKind>;

fn stream_outcomes(data: &[u8], known_len: bool, strict: bool) -> Vec<Outcome> {
    let len = known_len.then_some(data.len() as u64);
    let mut stream = OfrecordStream::from_reader(
        Cursor::new(data.to_vec()),
        len,
        "part-00000",
        &options(strict),
    );
    let mut out = Vec::new();
    while out.len() < STREAM_CAP {
        let mut r = Record::new();
        match stream.next_into(&mut r) {
            Ok(true) => out.push(Ok(r)),
            Ok(false) => break,
            Err(e) => out.push(Err(e.kind())),
        }
    }
    out
}

/// Bytes as one part file, indexed by `OfrecordReader` and streamed by `OfrecordStream`
/// (with and without a known size, OneFlow-strict or not): both must see the same
/// records, and a part the reader refuses must end the stream with the same error.
pub fn ofrecord_frames(data: &[u8]) {
    for strict in [false, true] {
        let reader =
            OfrecordReader::from_files(MemFiles::single("part-00000", data), &options(strict));
        if let Ok(r) = &reader {
            exercise(r);
            for i in 0..r.len().min(64) {
                let frame = r.frame(i).expect("every record has a frame");
                let raw = r.read_serialized(i).unwrap();
                assert_eq!(raw.len() as u64, frame.length);
                let start = frame.payload_offset() as usize;
                assert_eq!(&raw[..], &data[start..start + raw.len()]);
                match (decode_record(&raw), r.read(i)) {
                    (Ok(a), Ok(b)) => assert!(a.view() == b.view(), "record {i}: decode differs"),
                    (a, b) => assert_eq!(
                        a.err().map(|e| e.kind()),
                        b.err().map(|e| e.kind()),
                        "record {i}: decode and read disagree"
                    ),
                }
                let _ = r.read_proto(i);
            }
        }
        for known_len in [true, false] {
            let streamed = stream_outcomes(data, known_len, strict);
            match &reader {
                Ok(r) => {
                    if r.len() as usize >= STREAM_CAP {
                        continue;
                    }
                    assert_eq!(streamed.len() as u64, r.len(), "stream and index count differ");
                    for (i, s) in streamed.iter().enumerate() {
                        let got = r.read(i as u64).map_err(|e| e.kind());
                        match (s, &got) {
                            (Ok(a), Ok(b)) => assert!(a.view() == b.view(), "record {i} differs"),
                            _ => assert_eq!(
                                s.as_ref().err(),
                                got.as_ref().err(),
                                "record {i}: stream and index disagree"
                            ),
                        }
                    }
                }
                Err(e) => {
                    let last = streamed.last().and_then(|s| s.as_ref().err()).copied();
                    // Without the part's size the stream cannot tell that a huge length runs
                    // past the end; it stops at the record size limit instead.
                    let limit_instead = !known_len
                        && e.kind() == ErrorKind::Corrupt
                        && last == Some(ErrorKind::Limit);
                    assert!(
                        last == Some(e.kind()) || limit_instead,
                        "the index refuses the part ({e}) but the stream ends with {last:?}"
                    );
                }
            }
        }
    }
}

/// The protobuf decoder on arbitrary bytes: what decodes must encode (the reader's mapping
/// is what the writer takes), and the encoding must decode to the same record and encode
/// to the same bytes again.
pub fn ofrecord_protobuf(data: &[u8]) {
    let Ok(record) = decode_record(data) else { return };
    let bytes = encode_record(record.view(), EncodeOptions::default())
        .expect("a decoded record must encode");
    let again = decode_record(&bytes).expect("an encoded record must decode");
    assert!(again.view() == record.view(), "decode(encode(r)) != r");
    let bytes2 = encode_record(again.view(), EncodeOptions::default()).unwrap();
    assert_eq!(bytes, bytes2, "encoding is not deterministic");
}

/// Arbitrary records of every feature kind through `OfrecordWriter` (rolling parts), read
/// back equal by the indexed reader and by the stream.
pub fn ofrecord_roundtrip(data: &[u8]) {
    let mut input = Input::new(data);
    let per_part = 1 + input.small(4) as u64;
    let count = input.small(24);
    let mut records = Vec::with_capacity(count);
    for _ in 0..count {
        let mut r = Record::new();
        let mut names: Vec<String> = Vec::new();
        for _ in 0..input.small(4) {
            let name = input.text();
            let kind = input.small(5);
            let n = input.small(15);
            if names.contains(&name) {
                continue;
            }
            let mut out = r.out();
            let value = match kind {
                0 => Value::Null,
                1 => Value::List((0..n).map(|_| Value::Bytes(out.append(input.short()))).collect()),
                k => {
                    let dtype = [DType::F32, DType::F64, DType::I32, DType::I64][k - 2];
                    let size = dtype.item_size() as usize;
                    let mut bytes = input.bytes(n * size).to_vec();
                    bytes.truncate(bytes.len() / size * size);
                    let len = (bytes.len() / size) as u64;
                    let span = out.append(&bytes);
                    out.array_value(dtype, reel::Shape::vector(len), span).unwrap()
                }
            };
            out.push(name.as_str().into(), value);
            names.push(name);
        }
        records.push(r);
    }

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rt");
    let mut w = OfrecordWriter::create_with(
        &path,
        &OfrecordWriterOptions { max_records_per_part: Some(per_part), ..Default::default() },
    )
    .unwrap();
    for r in &records {
        w.write_record(r.view()).unwrap();
    }
    w.finish().unwrap();

    let check = |i: usize, got: &Record| {
        let want = &records[i];
        assert_eq!(got.len(), want.len(), "record {i}: field count");
        for (name, value) in want.iter() {
            assert!(got.get(name) == Some(value), "record {i} field {name:?} differs");
        }
    };
    let reader = OfrecordReader::open_with(&path, &options(false)).unwrap();
    assert_eq!(reader.len(), records.len() as u64);
    for i in 0..records.len() {
        check(i, &reader.read(i as u64).unwrap());
    }
    let stream = OfrecordStream::open(&path, &options(false)).unwrap();
    let mut n = 0;
    for (i, r) in stream.enumerate() {
        check(i, &r.unwrap());
        n += 1;
    }
    assert_eq!(n, records.len());
}
