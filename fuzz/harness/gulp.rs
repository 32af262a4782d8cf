//! GulpIO2 targets: the `.gmeta` JSON dialect, a chunk (meta and data file) read raw and
//! decoded, and videos written and read back.

use reel::gulp::json::{parse_json, write_python_json};
use reel::gulp::{
    Frame, FrameDecode, FrameSelection, GulpOptions, GulpReader, GulpWriteOptions, GulpWriter,
    JsonStr, JsonValue, decode_jpeg,
};
use reel::{MemFiles, Record, RecordBatch, RecordSource, RecordSourceExt, ValueRef};

use super::input::Input;
use super::{exercise, limits};

/// Nesting allowed when parsing metadata.
const DEPTH: u32 = 64;

fn is_lossless_as_value(v: &JsonValue) -> bool {
    match v {
        JsonValue::BigInt(_) | JsonValue::Str(JsonStr::Utf16(_)) => false,
        JsonValue::Array(items) => items.iter().all(is_lossless_as_value),
        JsonValue::Object(pairs) => {
            pairs.iter().all(|(k, v)| matches!(k, JsonStr::Text(_)) && is_lossless_as_value(v))
        }
        _ => true,
    }
}

/// The JSON parser on arbitrary text: what parses must be written by the Python-style
/// writer as text that parses to the same value and writes the same again; values without
/// big integers or lone surrogates must survive conversion to record values and back.
pub fn gulp_meta(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(value) = parse_json(text, DEPTH) else { return };
    let mut written = String::new();
    write_python_json(&value, &mut written);
    let again = parse_json(&written, DEPTH).expect("written JSON must parse");
    assert_eq!(again, value, "parse(write(v)) != v for {written}");
    let mut rewritten = String::new();
    write_python_json(&again, &mut rewritten);
    assert_eq!(written, rewritten);
    if is_lossless_as_value(&value) {
        let mut r = Record::new();
        let mut out = r.out();
        let v = value.to_value(&mut out).expect("a JSON value without big integers converts");
        out.push("m".into(), v);
        let back = JsonValue::from_value(r.get("m").unwrap()).expect("converts back");
        assert_eq!(back, value, "JSON -> record value -> JSON changed it");
    }
}

const DECODES: [FrameDecode; 4] =
    [FrameDecode::Raw, FrameDecode::Auto, FrameDecode::Rgb, FrameDecode::Gray];

fn selection(input: &mut Input<'_>) -> FrameSelection {
    let pos = |b: u8| i64::from(b as i8);
    match input.small(3) {
        0 => FrameSelection::All,
        1 => {
            let (a, b, c, flags) = (input.byte(), input.byte(), input.byte(), input.byte());
            FrameSelection::Slice {
                start: (flags & 1 != 0).then(|| pos(a)),
                stop: (flags & 2 != 0).then(|| pos(b)),
                step: pos(c),
            }
        }
        2 => FrameSelection::Indices((0..input.small(5)).map(|_| pos(input.byte())).collect()),
        _ => FrameSelection::every(1 + input.small(3) as i64),
    }
}

/// The reader and frame selection [`gulp_chunk`] uses for `data`, if the chunk opens.
pub fn chunk_reader(data: &[u8]) -> Option<(GulpReader<MemFiles>, FrameSelection)> {
    let mut input = Input::new(data);
    let decode = DECODES[input.small(DECODES.len() - 1)];
    let sel = selection(&mut input);
    let meta = input.chunk();
    let gulp = input.rest();
    let files = MemFiles::new([("data_0.gulp", gulp), ("meta_0.gmeta", meta)]);
    let options = GulpOptions::default().limits(limits()).decode(decode);
    Some((GulpReader::from_files(files, &options).ok()?, sel))
}

/// A chunk from the input: a mode byte (frame decoding), a frame selection, the
/// `meta_0.gmeta` text (u16 length, bytes), and the rest as `data_0.gulp`. Selected frames
/// must equal the same frames of the whole video, and ids must find their videos.
pub fn gulp_chunk(data: &[u8]) {
    let Some((reader, sel)) = chunk_reader(data) else { return };
    exercise(&reader);
    for i in 0..reader.len().min(32) {
        let id = reader.id(i).expect("every video has an id").to_string();
        assert_eq!(reader.index_of(&id), Some(i), "id {id:?} finds another video");
        let _ = reader.meta_data(i);
        let whole = reader.read(i);
        let count = reader.frame_info(i).map_or(0, <[_]>::len);
        let mut some = Record::new();
        let got = reader.read_video(i, &sel, &mut some);
        let (Ok(whole), Ok(positions)) = (&whole, sel.resolve(count)) else { continue };
        let Ok(()) = got else {
            // Decoding only the chosen frames cannot fail where decoding all of them works.
            panic!("video {i}: the whole video reads but frames {positions:?} fail");
        };
        let all = whole.get("frames").and_then(|v| v.as_list()).expect("a frame list");
        let chosen = some.get("frames").and_then(|v| v.as_list()).expect("a frame list");
        assert_eq!(chosen.len(), positions.len());
        for (k, &p) in positions.iter().enumerate() {
            assert!(chosen.get(k) == all.get(p), "video {i}: frame {p} differs when selected");
        }
        assert!(some.get("id") == whole.get("id"));
        assert!(some.get("meta") == whole.get("meta"));
    }
    let n = reader.len().min(16);
    let indices: Vec<u64> = (0..n).collect();
    let _ = reader.read_videos(&indices, &sel, FrameDecode::Raw, &mut RecordBatch::new());
}

/// A JSON value from the input (floats as Python writes them: NaN has one form).
fn json(input: &mut Input<'_>, depth: u32) -> JsonValue {
    match input.small(7) {
        0 => JsonValue::Null,
        1 => JsonValue::Bool(input.byte() & 1 != 0),
        2 => JsonValue::Int(input.u64() as i64),
        3 => JsonValue::from_u64(input.u64()),
        4 => {
            let f = f64::from_bits(input.u64());
            JsonValue::Float(if f.is_nan() { f64::NAN } else { f })
        }
        5 => JsonValue::from(input.text()),
        6 if depth > 0 => {
            JsonValue::Array((0..input.small(4)).map(|_| json(input, depth - 1)).collect())
        }
        7 if depth > 0 => JsonValue::object(
            (0..input.small(4)).map(|_| (input.text(), json(input, depth - 1))).collect::<Vec<_>>(),
        ),
        _ => JsonValue::empty_object(),
    }
}

/// How a written frame must read back.
enum Expect {
    Bytes(Vec<u8>),
    /// A JPEG of these decoded dimensions (`[h, w]` or `[h, w, 3]`).
    Shape(Vec<u64>),
}

/// Videos with arbitrary ids, metadata and frames (JPEG bytes stored as given, pixels
/// encoded) through `GulpWriter` over several chunks, read back: same ids, metadata and
/// frame bytes; encoded pixels decode to the shape they had.
pub fn gulp_roundtrip(data: &[u8]) {
    let mut input = Input::new(data);
    let per_chunk = 1 + input.small(3) as u64;
    let count = input.small(12);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("clips");
    let options = GulpWriteOptions::default().videos_per_chunk(per_chunk).check_jpeg(false);
    let mut w = GulpWriter::create(&dir, &options).unwrap();
    let mut videos = Vec::with_capacity(count);
    for k in 0..count {
        let id = format!("{}#{k}", input.text());
        let meta = json(&mut input, 3);
        let mut pixels: Vec<(u32, u32, Vec<u8>, bool)> = Vec::new();
        let mut jpegs: Vec<Vec<u8>> = Vec::new();
        let mut order = Vec::new();
        for _ in 0..input.small(4) {
            match input.small(2) {
                0 => {
                    order.push((false, jpegs.len()));
                    // The writers refuse an empty frame: no JPEG is empty.
                    let bytes = input.short();
                    jpegs.push(if bytes.is_empty() { vec![0] } else { bytes.to_vec() });
                }
                kind => {
                    let (h, w) = (1 + input.small(7) as u32, 1 + input.small(7) as u32);
                    let rgb = kind == 2;
                    let n = (h * w * if rgb { 3 } else { 1 }) as usize;
                    let mut px = input.bytes(n).to_vec();
                    px.resize(n, 0);
                    order.push((true, pixels.len()));
                    pixels.push((h, w, px, rgb));
                }
            }
        }
        let frames: Vec<Frame<'_>> = order
            .iter()
            .map(|&(is_pixels, j)| {
                if is_pixels {
                    let (height, width, ref px, rgb) = pixels[j];
                    if rgb {
                        Frame::Rgb { width, height, pixels: px }
                    } else {
                        Frame::Gray { width, height, pixels: px }
                    }
                } else {
                    Frame::Jpeg(&jpegs[j])
                }
            })
            .collect();
        w.write_video(&id, meta.clone(), &frames).unwrap();
        let expect = order
            .iter()
            .map(|&(is_pixels, j)| {
                if is_pixels {
                    let (h, w, _, rgb) = pixels[j];
                    let (h, w) = (u64::from(h), u64::from(w));
                    Expect::Shape(if rgb { vec![h, w, 3] } else { vec![h, w] })
                } else {
                    Expect::Bytes(jpegs[j].clone())
                }
            })
            .collect::<Vec<_>>();
        videos.push((id, meta, expect));
    }
    w.finish().unwrap();

    let reader = GulpReader::open_with(&dir, &GulpOptions::default().limits(limits())).unwrap();
    assert_eq!(reader.len(), videos.len() as u64);
    for (id, meta, expect) in &videos {
        let i = reader.index_of(id).unwrap_or_else(|| panic!("no video {id:?}"));
        assert_eq!(reader.meta_data(i).unwrap(), vec![meta.clone()], "video {id:?} meta");
        let r = reader.read(i).unwrap();
        assert_eq!(r.get("id").and_then(|v| v.as_str()), Some(id.as_str()));
        let frames = r.get("frames").and_then(|v| v.as_list()).unwrap();
        assert_eq!(frames.len(), expect.len());
        for (k, e) in expect.iter().enumerate() {
            let Some(ValueRef::Bytes(stored)) = frames.get(k) else {
                panic!("frame {k} not bytes")
            };
            match e {
                Expect::Bytes(b) => assert_eq!(stored, &b[..], "video {id:?} frame {k}"),
                Expect::Shape(shape) => {
                    let d =
                        decode_jpeg(stored, FrameDecode::Auto).expect("an encoded frame decodes");
                    assert_eq!(&d.shape(), shape, "video {id:?} frame {k}");
                }
            }
        }
    }
}
