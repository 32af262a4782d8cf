//! What the image decoders do not say about an encoded image, read from its headers, so
//! that decoded pixels are what Pillow gives (`np.asarray(Image.open(…))`, the reference's
//! decoding):
//!
//! * a palette PNG is its palette indices (Pillow's mode `P`), a 1-bit grey PNG booleans
//!   (mode `1`), where zune-png expands both to colours and 0/255 grey;
//! * an Adobe CMYK or YCCK JPEG stores its inks inverted (Photoshop's convention, which the
//!   APP14 "Adobe" marker announces); Pillow inverts them back, zune-jpeg does not.
//!
//! Everything here only reads bytes, bounds-checked: malformed headers give `None`, and the
//! decoder then reports the damage on the original bytes.

/// The PNG signature.
const PNG_SIGNATURE: &[u8; 8] = b"\x89PNG\r\n\x1a\n";

/// How a PNG stores its pixels, from its `IHDR` chunk, as far as decoding them as Pillow
/// does needs to know.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PngPixels {
    /// Indices into a palette (colour type 3).
    Palette,
    /// One bit of grey per pixel (colour type 0, bit depth 1).
    Bits,
    /// Anything else: what zune-png gives is what Pillow gives.
    Other,
}

/// The chunks of a PNG after its signature: (type, data) pairs, until the data ends or a
/// chunk does not fit.
fn png_chunks(png: &[u8]) -> impl Iterator<Item = (&[u8], &[u8])> {
    let mut at = PNG_SIGNATURE.len();
    let valid = png.starts_with(PNG_SIGNATURE);
    std::iter::from_fn(move || {
        if !valid {
            return None;
        }
        let len = u32::from_be_bytes(png.get(at..at + 4)?.try_into().ok()?) as usize;
        let kind = png.get(at + 4..at + 8)?;
        let data = png.get(at + 8..(at + 8).checked_add(len)?)?;
        // Data, then its 4-byte CRC, which must be there too.
        let end = (at + 8 + len).checked_add(4)?;
        png.get(at + 8 + len..end)?;
        at = end;
        Some((kind, data))
    })
}

/// How `png` stores its pixels (see [`PngPixels`]).
pub(crate) fn png_pixels(png: &[u8]) -> PngPixels {
    match png_chunks(png).next() {
        Some((b"IHDR", ihdr)) if ihdr.len() >= 10 => match (ihdr[9], ihdr[8]) {
            (3, _) => PngPixels::Palette,
            (0, 1) => PngPixels::Bits,
            _ => PngPixels::Other,
        },
        _ => PngPixels::Other,
    }
}

/// A copy of the palette PNG `png` whose palette entry `i` is the colour `(i, 0, 0)` and
/// that has no transparency chunk: decoded to colours, its red channel is then the pixels'
/// palette indices, whatever colours (repeated ones included) the real palette holds.
/// `None` if the chunks do not parse.
pub(crate) fn png_with_index_palette(png: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(png.len());
    out.extend_from_slice(PNG_SIGNATURE);
    let mut palette_seen = false;
    for (kind, data) in png_chunks(png) {
        match kind {
            b"tRNS" => continue,
            b"PLTE" => {
                palette_seen = true;
                let entries = data.len() / 3;
                let fake: Vec<u8> = (0..entries).flat_map(|i| [i as u8, 0, 0]).collect();
                push_chunk(&mut out, kind, &fake);
            }
            _ => push_chunk(&mut out, kind, data),
        }
        // Bytes after the end chunk are not the image's (Pillow ignores them too).
        if kind == b"IEND" {
            return palette_seen.then_some(out);
        }
    }
    None // no end chunk: the chunks do not add up
}

/// Appends a PNG chunk (length, type, data, CRC of type and data).
fn push_chunk(out: &mut Vec<u8>, kind: &[u8], data: &[u8]) {
    out.extend_from_slice(&(data.len() as u32).to_be_bytes());
    out.extend_from_slice(kind);
    out.extend_from_slice(data);
    let mut crc = reel_core::checksum::Crc32::new();
    crc.update(kind);
    crc.update(data);
    out.extend_from_slice(&crc.finalize().to_be_bytes());
}

/// Whether the JPEG `jpeg` has an APP14 "Adobe" marker before its first scan: its CMYK or
/// YCCK samples are then stored inverted, and Pillow inverts them back.
pub(crate) fn jpeg_has_adobe_marker(jpeg: &[u8]) -> bool {
    if !jpeg.starts_with(&[0xFF, 0xD8]) {
        return false;
    }
    let mut at = 2;
    // Markers with a length up to the first scan (SOS): each is FF, its code, and a
    // big-endian length that counts itself.
    while let Some(&[0xFF, code, hi, lo]) = jpeg.get(at..at + 4) {
        if code == 0xDA {
            break;
        }
        let len = usize::from(u16::from_be_bytes([hi, lo]));
        if len < 2 {
            return false;
        }
        if code == 0xEE && jpeg.get(at + 4..at + 9) == Some(b"Adobe") {
            return true;
        }
        at += 2 + len;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A PNG of `chunks` (type, data), with correct lengths and CRCs.
    fn png(chunks: &[(&[u8], &[u8])]) -> Vec<u8> {
        let mut out = PNG_SIGNATURE.to_vec();
        for (kind, data) in chunks {
            push_chunk(&mut out, kind, data);
        }
        out
    }

    fn ihdr(depth: u8, colour: u8) -> Vec<u8> {
        let mut d = vec![0, 0, 0, 2, 0, 0, 0, 1, depth, colour];
        d.extend_from_slice(&[0, 0, 0]);
        d
    }

    #[test]
    fn png_pixels_come_from_the_header() {
        assert_eq!(png_pixels(&png(&[(b"IHDR", &ihdr(8, 3))])), PngPixels::Palette);
        assert_eq!(png_pixels(&png(&[(b"IHDR", &ihdr(1, 0))])), PngPixels::Bits);
        assert_eq!(png_pixels(&png(&[(b"IHDR", &ihdr(8, 0))])), PngPixels::Other);
        assert_eq!(png_pixels(&png(&[(b"IHDR", &ihdr(8, 2))])), PngPixels::Other);
        assert_eq!(png_pixels(b"\x89PNG\r\n\x1a\n\0\0"), PngPixels::Other);
        assert_eq!(png_pixels(b"not a png at all"), PngPixels::Other);
        assert_eq!(png_pixels(&[]), PngPixels::Other);
    }

    #[test]
    fn the_index_palette_replaces_the_colours_and_drops_transparency() {
        let original = png(&[
            (b"IHDR", &ihdr(8, 3)),
            (b"PLTE", &[9, 9, 9, 9, 9, 9, 1, 2, 3]),
            (b"tRNS", &[0, 128]),
            (b"IDAT", b"pixels"),
            (b"IEND", b""),
        ]);
        let rewritten = png_with_index_palette(&original).unwrap();
        assert_eq!(
            rewritten,
            png(&[
                (b"IHDR", &ihdr(8, 3)),
                (b"PLTE", &[0, 0, 0, 1, 0, 0, 2, 0, 0]),
                (b"IDAT", b"pixels"),
                (b"IEND", b""),
            ])
        );
        // Bytes after the end chunk are left out.
        let mut trailing = original.clone();
        trailing.extend_from_slice(b"junk after IEND");
        assert_eq!(png_with_index_palette(&trailing).as_ref(), Some(&rewritten));
        // No palette, or chunks that do not add up: not rewritten.
        assert_eq!(png_with_index_palette(&png(&[(b"IHDR", &ihdr(8, 3))])), None);
        let no_palette = png(&[(b"IHDR", &ihdr(8, 3)), (b"IEND", b"")]);
        assert_eq!(png_with_index_palette(&no_palette), None);
        let mut cut = original.clone();
        cut.truncate(original.len() - 3);
        assert_eq!(png_with_index_palette(&cut), None);
        let mut huge = original.clone();
        huge[8..12].copy_from_slice(&u32::MAX.to_be_bytes());
        assert_eq!(png_with_index_palette(&huge), None);
    }

    #[test]
    fn the_adobe_marker_is_found_before_the_scan_only() {
        let app = |code: u8, body: &[u8]| {
            let mut m = vec![0xFF, code];
            m.extend_from_slice(&((body.len() + 2) as u16).to_be_bytes());
            m.extend_from_slice(body);
            m
        };
        let jpeg = |markers: &[Vec<u8>]| {
            let mut j = vec![0xFF, 0xD8];
            for m in markers {
                j.extend_from_slice(m);
            }
            j
        };
        let adobe = app(0xEE, b"Adobe\0\x64\0\0\0\0\x02");
        assert!(jpeg_has_adobe_marker(&jpeg(&[app(0xE0, b"JFIF\0"), adobe.clone()])));
        assert!(!jpeg_has_adobe_marker(&jpeg(&[app(0xE0, b"JFIF\0")])));
        assert!(!jpeg_has_adobe_marker(&jpeg(&[app(0xDA, b"scan"), adobe.clone()])));
        assert!(!jpeg_has_adobe_marker(&jpeg(&[app(0xEE, b"Other")])));
        assert!(!jpeg_has_adobe_marker(&[0xFF, 0xD8, 0xFF, 0xE0, 0, 0]));
        assert!(!jpeg_has_adobe_marker(&adobe));
    }
}
