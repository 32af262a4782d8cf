//! `jpg`/`jpeg`/`png`: images kept as their encoded bytes, or decoded to pixel arrays.
//!
//! The reference encodes with Pillow and decodes with `np.asarray(Image.open(…))`. reel
//! keeps the encoded bytes by default (a copy of a dataset then reproduces them exactly);
//! with decoding on, it decodes with zune-jpeg / zune-png to `uint8` (or `uint16` for 16-bit
//! PNGs) arrays of shape `(H, W)` for grey images and `(H, W, C)` otherwise, which is what
//! Pillow gives for the modes its encoder writes (L, RGB, RGBA, 16-bit grey). As Pillow
//! does, a palette PNG decodes to its palette indices (`uint8`, `(H, W)`: a segmentation
//! mask's class numbers), a 1-bit grey PNG to booleans, and an Adobe CMYK JPEG to its inks
//! un-inverted ([`super::image_headers`]). JPEG pixels depend on the decoder (Pillow's
//! libjpeg and zune-jpeg can differ by a few levels).
//!
//! Encoding a pixel array writes a baseline JPEG at quality 75 with 4:2:0 chroma
//! subsampling (Pillow's defaults — the reference ignores its `quality` argument) or a PNG.
//! The bytes differ from Pillow's (encoders are not byte-reproducible); both read back.

use reel_core::{ArrayValue, DType, Error, RecordOut, Result, Shape, Span, Value, ValueRef};
use zune_core::bit_depth::BitDepth;
use zune_core::bytestream::ZCursor;
use zune_core::colorspace::ColorSpace;
use zune_core::options::{DecoderOptions, EncoderOptions};

use super::image_headers::{PngPixels, jpeg_has_adobe_marker, png_pixels, png_with_index_palette};
use super::wrong_value;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ImageFormat {
    Jpeg,
    Png,
}

#[derive(Clone, Debug)]
pub(crate) struct ImageCodec {
    format: ImageFormat,
    decode: bool,
    max_decoded_bytes: u64,
}

impl ImageCodec {
    pub(crate) fn new(name: &str, decode: bool, max_decoded_bytes: u64) -> Self {
        let format = if name == "png" { ImageFormat::Png } else { ImageFormat::Jpeg };
        ImageCodec { format, decode, max_decoded_bytes }
    }

    pub(crate) fn decode(&self, raw: Span, out: &mut RecordOut<'_>) -> Result<Value> {
        if !self.decode {
            return Ok(Value::Bytes(raw));
        }
        match self.format {
            ImageFormat::Jpeg => self.decode_jpeg(raw, out),
            ImageFormat::Png => self.decode_png(raw, out),
        }
    }

    fn check_size(&self, dims: &[u64], item: u64) -> Result<usize> {
        let bytes = dims
            .iter()
            .try_fold(item, |a, &d| a.checked_mul(d))
            .ok_or_else(|| Error::corrupt("image dimensions overflow"))?;
        reel_core::Limits::check(bytes, self.max_decoded_bytes, "decoded image size")?;
        reel_core::to_usize(bytes, "decoded image")
    }

    fn decode_jpeg(&self, raw: Span, out: &mut RecordOut<'_>) -> Result<Value> {
        let (dims, options) = guarded("JPEG", || {
            let mut d = zune_jpeg::JpegDecoder::new(ZCursor::new(out.bytes(raw)));
            d.decode_headers().map_err(|e| Error::corrupt(format!("invalid JPEG: {e:?}")))?;
            let info = d.info().ok_or_else(|| Error::corrupt("invalid JPEG: no frame header"))?;
            let (channels, colorspace) = match d.input_colorspace() {
                Some(ColorSpace::Luma) => (1u64, ColorSpace::Luma),
                Some(ColorSpace::CMYK | ColorSpace::YCCK) => (4, ColorSpace::CMYK),
                _ => (3, ColorSpace::RGB),
            };
            let (h, w) = (u64::from(info.height), u64::from(info.width));
            let dims = if channels == 1 { vec![h, w] } else { vec![h, w, channels] };
            Ok((dims, d.options().jpeg_set_out_colorspace(colorspace)))
        })?;
        let len = self.check_size(&dims, 1)?;
        // Photoshop's CMYK is stored inverted, which its APP14 marker says; Pillow inverts
        // it back (its raw mode "CMYK;I"), zune-jpeg does not.
        let invert = dims.len() == 3 && dims[2] == 4 && jpeg_has_adobe_marker(out.bytes(raw));
        let data = out.append_with(len, |old, new| {
            guarded("JPEG", || {
                let mut d =
                    zune_jpeg::JpegDecoder::new_with_options(ZCursor::new(raw.get(old)), options);
                d.decode_into(new).map_err(|e| Error::corrupt(format!("invalid JPEG: {e:?}")))
            })?;
            if invert {
                new.iter_mut().for_each(|v| *v = 255 - *v);
            }
            Ok(())
        })?;
        Ok(Value::Array(ArrayValue { dtype: DType::U8, shape: Shape::new(&dims), data }))
    }

    /// A palette or 1-bit PNG as Pillow gives it: palette indices (`uint8`) or booleans,
    /// `(H, W)`. `None` when the chunks do not parse (the plain decode then reports it).
    fn decode_png_as_pillow(&self, raw: Span, out: &mut RecordOut<'_>) -> Result<Option<Value>> {
        let (png, dtype) = match png_pixels(out.bytes(raw)) {
            PngPixels::Palette => match png_with_index_palette(out.bytes(raw)) {
                Some(indexed) => (indexed, DType::U8),
                None => return Ok(None),
            },
            PngPixels::Bits => (out.bytes(raw).to_vec(), DType::Bool),
            PngPixels::Other => return Ok(None),
        };
        let (h, w, pixels) = guarded("PNG", || {
            let mut d = zune_png::PngDecoder::new(ZCursor::new(&png[..]));
            d.decode_headers().map_err(|e| Error::corrupt(format!("invalid PNG: {e:?}")))?;
            let (w, h) = d.dimensions().ok_or_else(|| Error::corrupt("invalid PNG: no header"))?;
            let channels = d.colorspace().map_or(1, |c| c.num_components()).max(1);
            self.check_size(&[h as u64, w as u64, channels as u64], 1)?;
            let pixels =
                d.decode_raw().map_err(|e| Error::corrupt(format!("invalid PNG: {e:?}")))?;
            Ok((h, w, pixels.chunks_exact(channels).map(|p| p[0]).collect::<Vec<u8>>()))
        })?;
        if pixels.len() != h * w {
            return Err(Error::corrupt("invalid PNG: fewer pixels than its size"));
        }
        let data = out.append_with(pixels.len(), |_, new| {
            match dtype {
                // The index palette's red channel is the index; a 1-bit pixel is 0 or 255.
                DType::Bool => {
                    new.iter_mut().zip(&pixels).for_each(|(o, &p)| *o = u8::from(p != 0))
                }
                _ => new.copy_from_slice(&pixels),
            }
            Ok(())
        })?;
        let dims = [h as u64, w as u64];
        Ok(Some(Value::Array(ArrayValue { dtype, shape: Shape::new(&dims), data })))
    }

    fn decode_png(&self, raw: Span, out: &mut RecordOut<'_>) -> Result<Value> {
        if let Some(value) = self.decode_png_as_pillow(raw, out)? {
            return Ok(value);
        }
        let options =
            DecoderOptions::default().set_byte_endian(zune_core::bit_depth::ByteEndian::LE);
        let (dims, dtype) = guarded("PNG", || {
            let mut d =
                zune_png::PngDecoder::new_with_options(ZCursor::new(out.bytes(raw)), options);
            d.decode_headers().map_err(|e| Error::corrupt(format!("invalid PNG: {e:?}")))?;
            let (w, h) = d.dimensions().ok_or_else(|| Error::corrupt("invalid PNG: no header"))?;
            let channels = d.colorspace().map_or(0, |c| c.num_components()) as u64;
            let dtype = match d.depth() {
                Some(BitDepth::Sixteen) => DType::U16,
                _ => DType::U8,
            };
            let (h, w) = (h as u64, w as u64);
            let dims = if channels == 1 { vec![h, w] } else { vec![h, w, channels] };
            Ok((dims, dtype))
        })?;
        let len = self.check_size(&dims, dtype.item_size())?;
        let data = out.append_with(len, |old, new| {
            guarded("PNG", || {
                let mut d =
                    zune_png::PngDecoder::new_with_options(ZCursor::new(raw.get(old)), options);
                d.decode_into(new).map_err(|e| Error::corrupt(format!("invalid PNG: {e:?}")))
            })
        })?;
        Ok(Value::Array(ArrayValue { dtype, shape: Shape::new(&dims), data }))
    }

    pub(crate) fn encode(&self, value: ValueRef<'_>, buf: &mut Vec<u8>) -> Result<()> {
        let a = match value {
            // Already encoded (read with decoding off, or produced elsewhere): stored as is.
            ValueRef::Bytes(b) => {
                buf.extend_from_slice(b);
                return Ok(());
            }
            ValueRef::Array(a) => a,
            other => return Err(wrong_value("encoded image bytes or a pixel array", other)),
        };
        let (h, w, channels) = match *a.shape {
            [h, w] => (h, w, 1),
            [h, w, c] => (h, w, c),
            _ => {
                return Err(Error::schema(format!(
                    "an image must have shape (H, W) or (H, W, C), not {:?}",
                    a.shape
                )));
            }
        };
        if h == 0 || w == 0 {
            return Err(Error::schema("an image cannot have zero width or height"));
        }
        match self.format {
            ImageFormat::Jpeg => encode_jpeg(a.dtype, h, w, channels, a.data, buf),
            ImageFormat::Png => encode_png(a.dtype, h, w, channels, a.data, buf),
        }
    }
}

fn encode_jpeg(
    dtype: DType,
    h: u64,
    w: u64,
    channels: u64,
    data: &[u8],
    buf: &mut Vec<u8>,
) -> Result<()> {
    let color = match (dtype, channels) {
        (DType::U8, 1) => jpeg_encoder::ColorType::Luma,
        (DType::U8, 3) => jpeg_encoder::ColorType::Rgb,
        _ => {
            return Err(Error::schema(format!(
                "JPEG stores uint8 grey or RGB images, not {dtype} with {channels} channel(s)"
            )));
        }
    };
    let (Ok(h16), Ok(w16)) = (u16::try_from(h), u16::try_from(w)) else {
        return Err(Error::schema("JPEG images are at most 65535 pixels wide and high"));
    };
    let mut encoded = Vec::new();
    let enc = jpeg_encoder::Encoder::new(&mut encoded, 75);
    enc.encode(data, w16, h16, color)
        .map_err(|e| Error::invalid_input(format!("cannot encode JPEG: {e}")))?;
    buf.extend_from_slice(&encoded);
    Ok(())
}

fn encode_png(
    dtype: DType,
    h: u64,
    w: u64,
    channels: u64,
    data: &[u8],
    buf: &mut Vec<u8>,
) -> Result<()> {
    let colorspace = match channels {
        1 => ColorSpace::Luma,
        2 => ColorSpace::LumaA,
        3 => ColorSpace::RGB,
        4 => ColorSpace::RGBA,
        _ => return Err(Error::schema(format!("PNG cannot store {channels} channels"))),
    };
    let depth = match dtype {
        DType::U8 => BitDepth::Eight,
        DType::U16 => BitDepth::Sixteen,
        _ => return Err(Error::schema(format!("PNG stores uint8 or uint16 pixels, not {dtype}"))),
    };
    let (h, w) = (reel_core::to_usize(h, "image height")?, reel_core::to_usize(w, "image width")?);
    // zune-png takes 16-bit samples big-endian, as PNG stores them.
    let swapped: Vec<u8>;
    let pixels = if depth == BitDepth::Sixteen {
        swapped = data.chunks_exact(2).flat_map(|c| [c[1], c[0]]).collect();
        &swapped[..]
    } else {
        data
    };
    let options = EncoderOptions::new(w, h, colorspace, depth);
    let mut encoded = Vec::new();
    guarded("PNG", || {
        zune_png::PngEncoder::new(pixels, options)
            .encode(&mut encoded)
            .map(|_| ())
            .map_err(|e| Error::invalid_input(format!("cannot encode PNG: {e:?}")))
    })?;
    buf.extend_from_slice(&encoded);
    Ok(())
}

/// Runs a third-party codec, turning a panic inside it into a `Corrupt` error: hostile
/// bytes must never bring the process down.
fn guarded<T>(what: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(_) => Err(Error::corrupt(format!("the {what} decoder rejected the data"))),
    }
}
