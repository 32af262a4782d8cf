//! JPEG: decoding stored frames (zune-jpeg) and encoding raw frames (jpeg-encoder), both
//! pure Rust.
//!
//! gulpio2 encodes with simplejpeg (libjpeg-turbo) at quality 90 with 4:4:4 chroma, RGB for
//! `H×W×3` frames and grayscale for `H×W`; reel encodes with the same settings. The JPEG
//! bytes differ from simplejpeg's (another encoder), so a frame encoded by reel is not
//! byte-identical to one encoded by the reference, only an equally valid JPEG of the same
//! pixels within JPEG tolerance. Frames given as JPEG bytes are stored unchanged, so
//! copying a gulp directory through reel reproduces its `.gulp` files byte for byte.
//!
//! Decoding follows gulpio2's `jpeg_bytes_to_img`: a grayscale JPEG becomes an `H×W`
//! `uint8` array, a colour one an `H×W×3` RGB array. Pixel values differ slightly from the
//! reference's (libjpeg-turbo with fast DCT and fast upsampling), as they do between any two
//! JPEG decoders.
//!
//! Which frames decode at all follows the reference too: by default
//! ([`JpegStrictness::Strict`]) a frame is first checked the way libjpeg-turbo reads it
//! (`jpeg_strict`), and every condition libjpeg-turbo reports, warning or error, is a
//! [`Corrupt`](ErrorKind::Corrupt) error, as simplejpeg raises it.
//! [`JpegStrictness::Lenient`] skips that check and decodes whatever zune-jpeg can.

use std::borrow::Cow;
use std::panic::{AssertUnwindSafe, catch_unwind};

use jpeg_encoder::{ColorType, Encoder, SamplingFactor};
use reel_core::{DType, Error, ErrorKind, Limits, RecordOut, Result, Shape, Span, Value, ValueRef};
use zune_core::bytestream::ZCursor;
use zune_core::colorspace::ColorSpace;
use zune_core::options::DecoderOptions;
use zune_jpeg::JpegDecoder;

/// The JPEG quality gulpio2 encodes with (`_JPEG_WRITE_QUALITY`).
pub const REFERENCE_QUALITY: u8 = 90;

/// How strictly a frame's JPEG data is judged before it is decoded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum JpegStrictness {
    /// Like the reference (simplejpeg, strict): every condition libjpeg-turbo reports as a
    /// warning or an error is an error — extraneous bytes before a marker, a scan that runs
    /// out of data or leaves more than libjpeg-turbo's bit buffer takes in, invalid Huffman
    /// codes where libjpeg-turbo checks them, restart markers out of sequence, damaged
    /// tables, a missing end-of-image marker. The default.
    #[default]
    Strict,
    /// Forgiving: decodes whatever zune-jpeg can, filling a truncated or damaged scan as
    /// it sees fit; only a JPEG without an end-of-image marker after its image data or one
    /// zune-jpeg cannot parse is an error. For pixels from slightly damaged frames.
    Lenient,
}

/// What a reader returns for each frame.
///
/// Decoding uses zune-jpeg; pixel values differ slightly from the reference's
/// (libjpeg-turbo with fast DCT and fast upsampling), as between any two JPEG decoders.
/// Which frames fail is the reference's choice by default: see [`JpegStrictness`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum FrameDecode {
    /// The stored JPEG bytes, without their padding and without decoding (what
    /// `GulpDirectory(dir, jpeg_decoder=lambda b: b)` returns). The default: lossless and
    /// zero-copy.
    #[default]
    Raw,
    /// Decoded like gulpio2's default decoder: grayscale JPEGs as `H×W`, all others as
    /// `H×W×3` RGB `uint8` arrays.
    Auto,
    /// Decoded to `H×W×3` RGB whatever the JPEG holds.
    Rgb,
    /// Decoded to `H×W` grayscale whatever the JPEG holds.
    Gray,
}

/// A decoded frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodedFrame {
    /// Pixels per row.
    pub width: u32,
    /// Rows.
    pub height: u32,
    /// 1 (grayscale) or 3 (RGB).
    pub channels: u8,
    /// `height × width × channels` bytes, row-major.
    pub pixels: Vec<u8>,
}

impl DecodedFrame {
    /// The array shape the reference returns: `[h, w]` for grayscale, `[h, w, 3]` for RGB.
    pub fn shape(&self) -> Vec<u64> {
        shape_of(self.height, self.width, self.channels)
    }
}

fn shape_of(height: u32, width: u32, channels: u8) -> Vec<u64> {
    if channels == 1 {
        vec![u64::from(height), u64::from(width)]
    } else {
        vec![u64::from(height), u64::from(width), u64::from(channels)]
    }
}

fn jpeg_error(e: impl std::fmt::Display) -> Error {
    Error::corrupt(format!("the frame is not a decodable JPEG: {e}"))
}

/// zune-jpeg's options. After the strict check has accepted a frame, zune-jpeg must decode
/// everything libjpeg-turbo does (an invalid Huffman code on libjpeg-turbo's fast path, a
/// run past the last coefficient), so its own strict mode is off then; the lenient decode
/// keeps zune-jpeg's strict mode as it always had.
fn decoder_options(out: ColorSpace, strictness: JpegStrictness) -> DecoderOptions {
    DecoderOptions::new_fast()
        .jpeg_set_out_colorspace(out)
        .set_max_width(usize::from(u16::MAX))
        .set_max_height(usize::from(u16::MAX))
        .set_strict_mode(strictness == JpegStrictness::Lenient)
}

/// Runs the decoder, turning a panic inside it into an error so that no input can bring
/// the reader down.
fn guarded<T>(f: impl FnOnce() -> Result<T>) -> Result<T> {
    catch_unwind(AssertUnwindSafe(f))
        .unwrap_or_else(|_| Err(Error::corrupt("the JPEG decoder failed on this frame")))
}

/// Fails unless an end-of-image marker follows the first scan. libjpeg-turbo (the
/// reference's decoder) reports a JPEG without one as "Premature end of JPEG file", which
/// simplejpeg raises as an error; zune-jpeg would fill the missing part with gray. Inside
/// entropy-coded data `FF` is always followed by `00` or a restart marker, so the first
/// `FF D9` after the scan starts is the real end.
fn check_complete(jpeg: &[u8]) -> Result<()> {
    let scan = jpeg.windows(2).position(|w| w == [0xff, 0xda]);
    let ended = scan.is_some_and(|at| jpeg[at..].windows(2).any(|w| w == [0xff, 0xd9]));
    if ended {
        Ok(())
    } else {
        Err(jpeg_error("premature end of JPEG file (no end-of-image marker after the image data)"))
    }
}

/// Checks `jpeg` as the reference's decoder (libjpeg-turbo through simplejpeg, strict)
/// would read it, without decoding pixels: a [`Corrupt`](ErrorKind::Corrupt) error names
/// the first condition libjpeg-turbo reports, in its words ("Corrupt JPEG data: premature
/// end of data segment", …). Arithmetic-coded and lossless JPEGs are
/// [`Unsupported`](ErrorKind::Unsupported). `max_decoded_bytes` bounds the state kept for
/// progressive JPEGs (an eighth of their decoded size).
pub fn check_jpeg(jpeg: &[u8], max_decoded_bytes: u64) -> Result<()> {
    strict_check(jpeg, max_decoded_bytes).map(drop)
}

fn strict_check(jpeg: &[u8], max_decoded_bytes: u64) -> Result<crate::jpeg_strict::Accepted> {
    crate::jpeg_strict::check(jpeg, max_decoded_bytes).map_err(|condition| {
        let kind = if condition.starts_with("arithmetic-coded") {
            ErrorKind::Unsupported
        } else {
            ErrorKind::Corrupt
        };
        Error::new(kind, format!("the frame is not a valid JPEG: {condition}"))
    })
}

/// The JPEG zune-jpeg is given for a frame the strict check accepted, when it differs from
/// the frame: without the bytes libjpeg-turbo swallowed at the ends of scans (zune-jpeg
/// may refuse a scan not followed by its marker) and the invalid Huffman tables no scan
/// uses (zune-jpeg validates every table), and with the standard Huffman tables
/// first when the frame relies on them (zune-jpeg does not fill undefined slots), so that
/// every table the file defines replaces them.
fn as_libjpeg_reads_it(jpeg: &[u8], accepted: &crate::jpeg_strict::Accepted) -> Option<Vec<u8>> {
    if !accepted.standard_tables && accepted.edits.is_empty() {
        return None;
    }
    let tables =
        if accepted.standard_tables { crate::jpeg_strict::standard_dht() } else { Vec::new() };
    let mut out = Vec::with_capacity(jpeg.len() + tables.len());
    out.extend_from_slice(jpeg.get(..2)?);
    out.extend_from_slice(&tables);
    let mut at = 2;
    for (start, end, replacement) in &accepted.edits {
        out.extend_from_slice(jpeg.get(at..*start)?);
        out.extend_from_slice(replacement);
        at = *end;
    }
    out.extend_from_slice(jpeg.get(at..)?);
    Some(out)
}

/// How to decode one frame: its size, and the output colour space and channel count for
/// a mode.
struct Plan {
    width: u32,
    height: u32,
    space: ColorSpace,
    channels: u8,
}

/// A decoder over a frame's bytes whose headers are read (its Huffman tables built, the
/// costly part of a small frame's decode), set up for one output colour space. Boxed: the
/// decoder holds its tables inline (tens of KiB), and moving it by value between functions
/// cost several copies of them.
type HeadersRead<'a> = Box<JpegDecoder<ZCursor<&'a [u8]>>>;

/// Checks `jpeg` (strictly, like the reference, or leniently) and returns the bytes to
/// decode when they differ from the frame's (see `as_libjpeg_reads_it`).
fn check_frame(
    jpeg: &[u8],
    strictness: JpegStrictness,
    max_decoded_bytes: u64,
) -> Result<Option<Vec<u8>>> {
    match strictness {
        JpegStrictness::Strict => {
            Ok(as_libjpeg_reads_it(jpeg, &strict_check(jpeg, max_decoded_bytes)?))
        }
        JpegStrictness::Lenient => check_complete(jpeg).map(|()| None),
    }
}

/// A decoder over `source` set up for `space`, its headers read. Call inside [`guarded`].
fn headers_read(
    source: &[u8],
    space: ColorSpace,
    strictness: JpegStrictness,
) -> Result<HeadersRead<'_>> {
    let options = decoder_options(space, strictness);
    let mut d = Box::new(JpegDecoder::new_with_options(ZCursor::new(source), options));
    d.decode_headers().map_err(jpeg_error)?;
    Ok(d)
}

/// Reads the headers of `source` (the bytes to decode, checked by [`check_frame`]) and
/// plans the decode: the size, and the colour space and channels `mode` gives this frame.
/// Also returns the decoder, ready to decode when it was set up for that colour space (a
/// mode's usual one: RGB, or grayscale for [`FrameDecode::Gray`]), so the headers are read
/// once; `None` when the frame needs another (a grayscale JPEG in [`FrameDecode::Auto`]).
fn read_headers(
    source: &[u8],
    mode: FrameDecode,
    strictness: JpegStrictness,
) -> Result<(Plan, Option<HeadersRead<'_>>)> {
    let asked = if mode == FrameDecode::Gray { ColorSpace::Luma } else { ColorSpace::RGB };
    guarded(|| {
        let d = headers_read(source, asked, strictness)?;
        let info = d.info().ok_or_else(|| jpeg_error("no image header"))?;
        let gray_input = matches!(d.input_colorspace(), Some(ColorSpace::Luma));
        let (space, channels) = match mode {
            FrameDecode::Gray => (ColorSpace::Luma, 1),
            FrameDecode::Auto | FrameDecode::Raw if gray_input => (ColorSpace::Luma, 1),
            _ => (ColorSpace::RGB, 3),
        };
        let plan =
            Plan { width: u32::from(info.width), height: u32::from(info.height), space, channels };
        Ok((plan, (space == asked).then_some(d)))
    })
}

/// Decodes `source` into `dest` (`height × width × channels` bytes) with `decoder` when
/// [`read_headers`] gave one, else with a new one set up for `space`.
fn decode_to<'a>(
    source: &'a [u8],
    decoder: Option<HeadersRead<'a>>,
    space: ColorSpace,
    channels: u8,
    strictness: JpegStrictness,
    dest: &mut [u8],
) -> Result<()> {
    guarded(|| {
        let mut d = match decoder {
            Some(d) => d,
            None => headers_read(source, space, strictness)?,
        };
        if d.output_colorspace().map(|c| c.num_components()) != Some(usize::from(channels)) {
            return Err(Error::unsupported(format!(
                "cannot decode this JPEG ({:?}) to {channels} channel(s)",
                d.input_colorspace()
            )));
        }
        if d.output_buffer_size() != Some(dest.len()) {
            return Err(jpeg_error("the image size changed between header reads"));
        }
        d.decode_into(dest).map_err(jpeg_error)
    })
}

fn decoded_len(width: u32, height: u32, channels: u8, max: u64) -> Result<usize> {
    let len = u64::from(width) * u64::from(height) * u64::from(channels);
    Limits::check(len, max, "decoded frame size")?;
    reel_core::to_usize(len, "decoded frame")
}

/// Decodes one JPEG (the reference's `jpeg_bytes_to_img`), strictly like the reference
/// ([`JpegStrictness::Strict`]). [`FrameDecode::Raw`] decodes like [`FrameDecode::Auto`]
/// here.
pub fn decode_jpeg(jpeg: &[u8], mode: FrameDecode) -> Result<DecodedFrame> {
    decode_jpeg_with(jpeg, mode, JpegStrictness::Strict)
}

/// [`decode_jpeg`] with a choice of strictness.
pub fn decode_jpeg_with(
    jpeg: &[u8],
    mode: FrameDecode,
    strictness: JpegStrictness,
) -> Result<DecodedFrame> {
    let max = Limits::default().max_decoded_bytes;
    let with_tables = check_frame(jpeg, strictness, max)?;
    let source = with_tables.as_deref().unwrap_or(jpeg);
    let (plan, decoder) = read_headers(source, mode, strictness)?;
    let len = decoded_len(plan.width, plan.height, plan.channels, max)?;
    let mut pixels = vec![0; len];
    decode_to(source, decoder, plan.space, plan.channels, strictness, &mut pixels)?;
    Ok(DecodedFrame { width: plan.width, height: plan.height, channels: plan.channels, pixels })
}

/// Decodes the JPEG at `jpeg` (a span of `out`'s buffer) into a new `uint8` array value of
/// `out`, checking the decoded size against `max_decoded_bytes` before allocating.
pub(crate) fn decode_into_record(
    out: &mut RecordOut<'_>,
    jpeg: Span,
    mode: FrameDecode,
    strictness: JpegStrictness,
    max_decoded_bytes: u64,
) -> Result<Value> {
    let with_tables = check_frame(out.bytes(jpeg), strictness, max_decoded_bytes)?;
    // The decoder reads the frame while its pixels are appended to `out`'s buffer, which
    // may move: it reads a copy (a frame's JPEG is small next to its pixels, and reading
    // the headers once saves far more than the copy costs).
    let source = with_tables.unwrap_or_else(|| out.bytes(jpeg).to_vec());
    let (plan, decoder) = read_headers(&source, mode, strictness)?;
    let Plan { width, height, space, channels } = plan;
    let len = decoded_len(width, height, channels, max_decoded_bytes)?;
    let data = out.append_with(len, |_, dest| {
        decode_to(&source, decoder, space, channels, strictness, dest)
    })?;
    out.array_value(DType::U8, Shape::new(&shape_of(height, width, channels)), data)
}

/// One frame to store: JPEG bytes as they are, or pixels to encode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Frame<'a> {
    /// A complete JPEG file, stored unchanged.
    Jpeg(&'a [u8]),
    /// `height × width × 3` RGB bytes, encoded like gulpio2 (quality 90, 4:4:4).
    Rgb {
        /// Pixels per row.
        width: u32,
        /// Rows.
        height: u32,
        /// Row-major RGB bytes.
        pixels: &'a [u8],
    },
    /// `height × width` grayscale bytes, encoded as a grayscale JPEG.
    Gray {
        /// Pixels per row.
        width: u32,
        /// Rows.
        height: u32,
        /// Row-major bytes.
        pixels: &'a [u8],
    },
}

impl<'a> Frame<'a> {
    /// The frame a record value stands for: `Bytes` are JPEG bytes; a `uint8` array of shape
    /// `[h, w, 3]` is RGB and `[h, w]` grayscale (the arrays gulpio2's writer accepts; like
    /// it, reel refuses other shapes).
    pub fn from_value(value: ValueRef<'a>) -> Result<Frame<'a>> {
        match value {
            ValueRef::Bytes(b) => Ok(Frame::Jpeg(b)),
            ValueRef::Array(a) if a.dtype == DType::U8 => {
                let dim = |d: u64| u32::try_from(d).map_err(|_| Error::schema("frame too large"));
                match *a.shape {
                    [h, w, 3] => Ok(Frame::Rgb { width: dim(w)?, height: dim(h)?, pixels: a.data }),
                    [h, w] => Ok(Frame::Gray { width: dim(w)?, height: dim(h)?, pixels: a.data }),
                    _ => Err(Error::schema(format!(
                        "a frame array must have shape [h, w, 3] (RGB) or [h, w] (grayscale), \
                         not {:?}",
                        a.shape
                    ))),
                }
            }
            other => Err(Error::schema(format!(
                "a frame must be JPEG bytes or a uint8 image array, not {}",
                match other {
                    ValueRef::Array(a) => format!("an array of {}", a.dtype),
                    v => v.kind_name().to_string(),
                }
            ))),
        }
    }

    /// The JPEG bytes to store for this frame: given bytes as they are (checked to start
    /// with the JPEG start-of-image marker when `check_jpeg` is set), pixels encoded.
    pub fn to_jpeg(&self, quality: u8, check_jpeg: bool) -> Result<Cow<'a, [u8]>> {
        match *self {
            Frame::Jpeg(bytes) => {
                if bytes.is_empty() {
                    return Err(Error::invalid_input("a frame's JPEG bytes are empty"));
                }
                if check_jpeg && !bytes.starts_with(&[0xff, 0xd8]) {
                    return Err(Error::invalid_input(
                        "a frame's bytes do not start with the JPEG start-of-image marker \
                         (FF D8); turn off GulpWriteOptions::check_jpeg to store them anyway",
                    ));
                }
                Ok(Cow::Borrowed(bytes))
            }
            Frame::Rgb { width, height, pixels } => {
                encode_jpeg(pixels, width, height, 3, quality).map(Cow::Owned)
            }
            Frame::Gray { width, height, pixels } => {
                encode_jpeg(pixels, width, height, 1, quality).map(Cow::Owned)
            }
        }
    }
}

/// An owned [`Frame`], for adapters that produce frames.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OwnedFrame {
    /// A complete JPEG file.
    Jpeg(Vec<u8>),
    /// `height × width × 3` RGB bytes.
    Rgb {
        /// Pixels per row.
        width: u32,
        /// Rows.
        height: u32,
        /// Row-major RGB bytes.
        pixels: Vec<u8>,
    },
    /// `height × width` grayscale bytes.
    Gray {
        /// Pixels per row.
        width: u32,
        /// Rows.
        height: u32,
        /// Row-major bytes.
        pixels: Vec<u8>,
    },
}

impl OwnedFrame {
    /// The borrowed form.
    pub fn as_frame(&self) -> Frame<'_> {
        match self {
            OwnedFrame::Jpeg(b) => Frame::Jpeg(b),
            OwnedFrame::Rgb { width, height, pixels } => {
                Frame::Rgb { width: *width, height: *height, pixels }
            }
            OwnedFrame::Gray { width, height, pixels } => {
                Frame::Gray { width: *width, height: *height, pixels }
            }
        }
    }
}

/// Encodes `height × width × channels` bytes (1 = grayscale, 3 = RGB) as a baseline JPEG
/// with 4:4:4 chroma at `quality`: the settings of the reference's `img_to_jpeg_bytes`
/// (simplejpeg, quality 90). The encoder is another one (jpeg-encoder), so the bytes are
/// not identical to the reference's, only an equally valid JPEG of the same pixels within
/// JPEG tolerance.
pub fn encode_jpeg(
    pixels: &[u8],
    width: u32,
    height: u32,
    channels: u8,
    quality: u8,
) -> Result<Vec<u8>> {
    let color = match channels {
        1 => ColorType::Luma,
        3 => ColorType::Rgb,
        n => {
            return Err(Error::invalid_input(format!("cannot encode a {n}-channel frame as JPEG")));
        }
    };
    let (Ok(w), Ok(h)) = (u16::try_from(width), u16::try_from(height)) else {
        return Err(Error::invalid_input(format!(
            "a {width}×{height} frame is larger than JPEG allows (65535×65535)"
        )));
    };
    if w == 0 || h == 0 {
        return Err(Error::invalid_input(format!("cannot encode an empty {width}×{height} frame")));
    }
    let expected = usize::from(w) * usize::from(h) * usize::from(channels);
    if pixels.len() != expected {
        return Err(Error::invalid_input(format!(
            "a {width}×{height}×{channels} frame needs {expected} bytes, got {}",
            pixels.len()
        )));
    }
    if !(1..=100).contains(&quality) {
        return Err(Error::invalid_input(format!("JPEG quality {quality} is not in 1..=100")));
    }
    let mut out = Vec::with_capacity(expected / 4 + 1024);
    let mut encoder = Encoder::new(&mut out, quality);
    encoder.set_sampling_factor(SamplingFactor::R_4_4_4);
    encoder
        .encode(pixels, w, h, color)
        .map_err(|e| Error::new(ErrorKind::InvalidInput, format!("JPEG encoding failed: {e}")))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn encode_then_decode_is_close() {
        let (w, h) = (17u32, 9u32);
        // A smooth gradient: what JPEG is meant for, so the error must be small.
        let rgb: Vec<u8> = (0..h)
            .flat_map(|y| {
                (0..w).flat_map(move |x| (0..3).map(move |c| (x * 6 + y * 5 + c * 30) as u8))
            })
            .collect();
        let jpeg = encode_jpeg(&rgb, w, h, 3, REFERENCE_QUALITY).unwrap();
        assert!(jpeg.starts_with(&[0xff, 0xd8]) && jpeg.ends_with(&[0xff, 0xd9]));
        let d = decode_jpeg(&jpeg, FrameDecode::Auto).unwrap();
        assert_eq!((d.width, d.height, d.channels), (w, h, 3));
        assert_eq!(d.shape(), vec![9, 17, 3]);
        let worst = d.pixels.iter().zip(&rgb).map(|(a, b)| a.abs_diff(*b)).max().unwrap();
        assert!(worst < 16, "worst pixel error {worst}");

        let gray: Vec<u8> = (0..w * h).map(|i| (i * 3) as u8).collect();
        let jpeg = encode_jpeg(&gray, w, h, 1, REFERENCE_QUALITY).unwrap();
        let d = decode_jpeg(&jpeg, FrameDecode::Auto).unwrap();
        assert_eq!(d.shape(), vec![9, 17]);
        assert_eq!(decode_jpeg(&jpeg, FrameDecode::Rgb).unwrap().shape(), vec![9, 17, 3]);
    }

    #[test]
    fn a_jpeg_without_its_end_is_refused_like_libjpeg_does() {
        let gray: Vec<u8> = (0..64 * 64).map(|i| (i % 256) as u8).collect();
        let jpeg = encode_jpeg(&gray, 64, 64, 1, 90).unwrap();
        assert!(decode_jpeg(&jpeg, FrameDecode::Auto).is_ok());
        // Trailing bytes after the end marker are ignored, as by libjpeg.
        assert!(decode_jpeg(&[&jpeg[..], b"\0\0\0"].concat(), FrameDecode::Auto).is_ok());
        for cut in [jpeg.len() - 1, jpeg.len() - 2, jpeg.len() - 40] {
            let e = decode_jpeg(&jpeg[..cut], FrameDecode::Auto).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Corrupt, "{e}");
        }
    }

    #[test]
    fn bad_input_is_an_error() {
        assert!(decode_jpeg(b"", FrameDecode::Auto).is_err());
        assert!(decode_jpeg(b"\xff\xd8\xff", FrameDecode::Auto).is_err());
        assert!(encode_jpeg(&[0; 5], 2, 2, 3, 90).is_err());
        assert!(encode_jpeg(&[], 0, 2, 1, 90).is_err());
        assert!(Frame::Jpeg(b"GIF89a").to_jpeg(90, true).is_err());
        assert!(Frame::Jpeg(b"").to_jpeg(90, false).is_err());
    }
}
