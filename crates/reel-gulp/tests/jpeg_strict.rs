//! Strict frame decoding: damaged JPEGs of every class the reference (libjpeg-turbo through
//! simplejpeg) rejects are rejected, with libjpeg-turbo's words; intact ones and damage the
//! reference tolerates still decode; the lenient mode keeps the forgiving decode.
//!
//! The frames are made here from an encoder's valid output, so the test needs no Python.
//! The agreement with the reference itself is measured by `tools/jpeg_sweep.py`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use jpeg_encoder::{ColorType, Encoder, SamplingFactor};
use reel_core::ErrorKind;
use reel_gulp::{FrameDecode, JpegStrictness, check_jpeg, decode_jpeg, decode_jpeg_with};

const W: u16 = 96;
const H: u16 = 64;

/// Smooth pixels with some noise, like a video frame.
fn pixels(channels: usize) -> Vec<u8> {
    let mut state: u32 = 12345;
    let mut out = Vec::with_capacity(usize::from(W) * usize::from(H) * channels);
    for y in 0..usize::from(H) {
        for x in 0..usize::from(W) {
            for c in 0..channels {
                state = state.wrapping_mul(1_103_515_245).wrapping_add(12345);
                let noise = (state >> 16) % 24;
                out.push(((x * 2 + y * (c + 1) + noise as usize) % 256) as u8);
            }
        }
    }
    out
}

struct Options {
    restart: u16,
    progressive: bool,
    gray: bool,
}

const BASELINE: Options = Options { restart: 0, progressive: false, gray: false };

fn encode(o: &Options) -> Vec<u8> {
    let mut out = Vec::new();
    let mut e = Encoder::new(&mut out, 90);
    e.set_sampling_factor(SamplingFactor::R_4_4_4);
    if o.restart > 0 {
        e.set_restart_interval(o.restart);
    }
    e.set_progressive(o.progressive);
    let (data, color) =
        if o.gray { (pixels(1), ColorType::Luma) } else { (pixels(3), ColorType::Rgb) };
    e.encode(&data, W, H, color).unwrap();
    out
}

/// Start of the `FF xx` marker segment of type `marker` (the `n`-th one).
fn segment(jpeg: &[u8], marker: u8, n: usize) -> usize {
    let mut i = 2;
    let mut seen = 0;
    while i + 4 <= jpeg.len() {
        assert_eq!(jpeg[i], 0xff, "lost in the header at {i}");
        let m = jpeg[i + 1];
        if m == marker {
            if seen == n {
                return i;
            }
            seen += 1;
        }
        assert!(m != 0xda || marker == 0xda, "no segment 0x{marker:02x} #{n} before the scan");
        i += 2 + (usize::from(jpeg[i + 2]) << 8 | usize::from(jpeg[i + 3]));
    }
    panic!("no segment 0x{marker:02x}");
}

/// Where the first scan's entropy-coded data starts.
fn scan_data(jpeg: &[u8]) -> usize {
    let sos = segment(jpeg, 0xda, 0);
    sos + 2 + (usize::from(jpeg[sos + 2]) << 8 | usize::from(jpeg[sos + 3]))
}

/// Where the end-of-image marker is (the file's last two bytes).
fn eoi(jpeg: &[u8]) -> usize {
    assert_eq!(&jpeg[jpeg.len() - 2..], [0xff, 0xd9]);
    jpeg.len() - 2
}

fn rejected(jpeg: &[u8]) -> String {
    match decode_jpeg(jpeg, FrameDecode::Auto) {
        Ok(_) => panic!("a damaged frame was accepted"),
        Err(e) => {
            assert_eq!(e.kind(), ErrorKind::Corrupt, "{e}");
            e.message().to_string()
        }
    }
}

fn assert_rejected(class: &str, jpeg: &[u8], any_of: &[&str]) {
    let why = rejected(jpeg);
    assert!(
        any_of.iter().any(|w| why.contains(w)),
        "{class}: rejected for {why:?}, expected one of {any_of:?}"
    );
}

#[test]
fn intact_frames_decode() {
    for o in [
        BASELINE,
        Options { restart: 2, ..BASELINE },
        Options { progressive: true, ..BASELINE },
        Options { gray: true, ..BASELINE },
        Options { restart: 3, progressive: true, gray: true },
    ] {
        let f = decode_jpeg(&encode(&o), FrameDecode::Auto).unwrap();
        assert_eq!((f.width, f.height), (u32::from(W), u32::from(H)));
        assert_eq!(f.channels, if o.gray { 1 } else { 3 });
    }
}

#[test]
fn truncated_scan_without_end_marker() {
    for o in [BASELINE, Options { progressive: true, ..BASELINE }] {
        let j = encode(&o);
        let cut = (scan_data(&j) + eoi(&j)) / 2;
        assert_rejected("truncated scan", &j[..cut], &["Premature end of JPEG file"]);
    }
}

#[test]
fn scan_that_stops_short_of_its_marker() {
    let j = encode(&BASELINE);
    let end = eoi(&j);
    for k in [1, 4, 16, 200] {
        let mut d = j[..end - k].to_vec();
        d.extend_from_slice(&[0xff, 0xd9]);
        assert_rejected(
            "scan cut short",
            &d,
            &["premature end of data segment", "bad Huffman code"],
        );
        // The forgiving decode fills the missing part, as it always did.
        decode_jpeg_with(&d, FrameDecode::Auto, JpegStrictness::Lenient).unwrap();
    }
}

#[test]
fn extraneous_bytes_before_markers() {
    let j = encode(&BASELINE);
    // Before the end-of-image marker: more than libjpeg-turbo's bit buffer swallows.
    let end = eoi(&j);
    let mut d = j[..end].to_vec();
    d.extend_from_slice(&[0x55; 40]);
    d.extend_from_slice(&j[end..]);
    assert_rejected("bytes before EOI", &d, &["extraneous bytes before marker 0xd9"]);
    // Before a header marker, where nothing swallows them.
    let dqt = segment(&j, 0xdb, 0);
    let mut d = j.clone();
    d.insert(dqt, 0x00);
    assert_rejected("byte before DQT", &d, &["1 extraneous bytes before marker 0xdb"]);
    // Bytes removed before a marker: the segment before it runs into the marker.
    let dht = segment(&j, 0xc4, 0);
    let mut d = j.clone();
    d.remove(dht - 1);
    rejected(&d);
}

#[test]
fn invalid_huffman_codes_near_the_end() {
    // All-one bits are never a valid code; libjpeg-turbo checks codes on its slow path,
    // which it takes near the end of the data.
    let j = encode(&BASELINE);
    let end = eoi(&j);
    let mut d = j[..end - 8].to_vec();
    d.extend_from_slice(&[0xff, 0x00, 0xff, 0x00, 0xff, 0x00, 0xff, 0x00, 0xff, 0xd9]);
    assert_rejected("invalid code", &d, &["bad Huffman code", "premature end of data segment"]);
}

#[test]
fn restart_markers_out_of_sequence() {
    let j = encode(&Options { restart: 2, ..BASELINE });
    let data = scan_data(&j);
    let rst: Vec<usize> = (data..j.len() - 1)
        .filter(|&i| j[i] == 0xff && (0xd0..=0xd7).contains(&j[i + 1]))
        .collect();
    assert!(rst.len() > 3, "the encoder wrote no restart markers");
    let mut d = j.clone();
    d[rst[1] + 1] = 0xd5;
    assert_rejected("restart number", &d, &["found marker 0xd5 instead of RST1"]);
    // Bytes inserted before a restart marker are counted when the interval ends.
    let mut d = j.clone();
    d.splice(rst[2]..rst[2], [0x12, 0x34, 0x56, 0x78, 0x12, 0x34, 0x56, 0x78, 0x9a]);
    assert_rejected("bytes before RST", &d, &["extraneous bytes before marker 0xd"]);
}

#[test]
fn damaged_huffman_tables() {
    let j = encode(&BASELINE);
    let dht = segment(&j, 0xc4, 0);
    // More codes of length 1 than the segment holds values for.
    let mut d = j.clone();
    d[dht + 5] = 0xff;
    assert_rejected("DHT counts", &d, &["Bogus Huffman table definition"]);
    // Codes that do not fit their lengths (3 codes of length 1), length kept consistent.
    let mut d = j.clone();
    let (a, b) = (d[dht + 5], d[dht + 6]);
    d[dht + 5] = 3;
    d[dht + 6] = (u16::from(a) + u16::from(b)).saturating_sub(3) as u8;
    assert_rejected("DHT lengths", &d, &["Bogus Huffman table definition"]);
    // A table index libjpeg-turbo does not have.
    let mut d = j.clone();
    d[dht + 4] = 0x07;
    assert_rejected("DHT index", &d, &["Bogus DHT index 7"]);
}

#[test]
fn damaged_quantisation_tables() {
    let j = encode(&BASELINE);
    let dqt = segment(&j, 0xdb, 0);
    let mut d = j.clone();
    d[dqt + 4] = 0x05;
    assert_rejected("DQT index", &d, &["Bogus DQT index 5"]);
    let mut d = j.clone();
    d[dqt + 3] = d[dqt + 3].wrapping_add(1);
    rejected(&d);
    // A changed quantisation value is no damage libjpeg-turbo can see: the frame decodes.
    let mut d = j.clone();
    d[dqt + 10] = d[dqt + 10].wrapping_add(3).max(1);
    decode_jpeg(&d, FrameDecode::Auto).unwrap();
}

#[test]
fn bad_scan_parameters() {
    let j = encode(&BASELINE);
    let sos = segment(&j, 0xda, 0);
    let n = usize::from(j[sos + 4]);
    let mut d = j.clone();
    d[sos + 5 + 2 * n + 1] = 0x20; // Se
    assert_rejected("sequential Se", &d, &["Invalid SOS parameters for sequential JPEG"]);
    let p = encode(&Options { progressive: true, ..BASELINE });
    let sos = segment(&p, 0xda, 0);
    let n = usize::from(p[sos + 4]);
    let mut d = p.clone();
    d[sos + 5 + 2 * n + 2] = 0x31; // Ah=3, Al=1 on a first scan
    assert_rejected("progressive Ah/Al", &d, &["Invalid progressive parameters"]);
}

#[test]
fn what_the_reference_tolerates_still_decodes() {
    let j = encode(&BASELINE);
    // Bytes after the end-of-image marker are never read.
    let mut d = j.clone();
    d.extend_from_slice(b"trailing junk");
    decode_jpeg(&d, FrameDecode::Auto).unwrap();
    // Huffman tables left out (as in Motion-JPEG frames): libjpeg-turbo uses the standard
    // ones, which are what this encoder writes.
    let dht = segment(&j, 0xc4, 0);
    let sos = segment(&j, 0xda, 0);
    let mut d = j[..dht].to_vec();
    d.extend_from_slice(&j[sos..]);
    let without = decode_jpeg(&d, FrameDecode::Auto).unwrap();
    assert_eq!(without, decode_jpeg(&j, FrameDecode::Auto).unwrap());
}

#[test]
fn hostile_frames_never_panic() {
    // Random multi-byte damage, truncation and splicing of valid frames of every kind:
    // each must come back as a verdict, never a panic.
    let frames = [
        encode(&BASELINE),
        encode(&Options { restart: 1, ..BASELINE }),
        encode(&Options { progressive: true, ..BASELINE }),
        encode(&Options { restart: 2, progressive: true, gray: true }),
    ];
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move |n: usize| {
        state =
            state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        ((state >> 33) as usize) % n.max(1)
    };
    let (mut accepted, mut undecodable) = (0, 0);
    for round in 0..1500 {
        let mut d = frames[round % frames.len()].clone();
        for _ in 0..1 + next(6) {
            let at = next(d.len());
            match next(4) {
                0 => d[at] ^= 1 << next(8),
                1 => d[at] = next(256) as u8,
                2 => d.truncate(at.max(2)),
                _ => {
                    let len = next(16);
                    let from = next(d.len());
                    let piece: Vec<u8> = d[from..(from + len).min(d.len())].to_vec();
                    d.splice(at..at, piece);
                }
            }
        }
        let _ = decode_jpeg_with(&d, FrameDecode::Auto, JpegStrictness::Lenient);
        // What the check accepts, the decoder decodes: libjpeg-turbo would give pixels.
        if check_jpeg(&d, 1 << 30).is_ok() {
            accepted += 1;
            if decode_jpeg(&d, FrameDecode::Auto).is_err() {
                undecodable += 1;
            }
        }
    }
    assert!(accepted > 100, "only {accepted} damaged frames passed the check");
    assert!(
        undecodable * 100 <= accepted,
        "{undecodable} of {accepted} accepted frames do not decode"
    );
}

#[test]
fn what_libjpeg_turbo_reads_past_does_not_stop_the_decoder() {
    // Stray bytes before the marker that ends a progressive scan: libjpeg-turbo's bit
    // buffer takes in up to seven and ignores them (how many depends on where the scan's
    // last bits fall); whenever the check accepts the frame, it decodes.
    let j = encode(&Options { progressive: true, ..BASELINE });
    // Every marker after the first scan's data: the ends of the scans.
    let ends: Vec<usize> = (scan_data(&j)..j.len() - 1)
        .filter(|&i| j[i] == 0xff && j[i + 1] != 0 && !(0xd0..=0xd7).contains(&j[i + 1]))
        .collect();
    let mut passed = 0;
    for &end in &ends {
        for k in 1..=7 {
            let mut d = j.clone();
            d.splice(end..end, std::iter::repeat_n(0x5a, k));
            if check_jpeg(&d, 1 << 30).is_ok() {
                passed += 1;
                decode_jpeg(&d, FrameDecode::Auto).unwrap();
            }
        }
    }
    assert!(passed > 0, "no stray byte count was swallowed");
    // A Huffman table no scan uses is never checked by libjpeg-turbo, however invalid.
    let sos = segment(&j, 0xda, 0);
    let mut d = j[..sos].to_vec();
    let mut table = vec![0xff, 0xc4, 0, 20, 0x02, 1];
    table.extend_from_slice(&[0; 15]);
    table.push(200); // a DC symbol above 15
    d.extend_from_slice(&table);
    d.extend_from_slice(&j[sos..]);
    assert_eq!(
        decode_jpeg(&d, FrameDecode::Auto).unwrap(),
        decode_jpeg(&j, FrameDecode::Auto).unwrap()
    );
}
