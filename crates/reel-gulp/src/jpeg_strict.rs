//! Strict JPEG checking: every condition libjpeg-turbo reports as a warning or an error.
//!
//! The reference decodes frames with simplejpeg, which runs libjpeg-turbo 3 through its
//! TurboJPEG API with "stop on warning" set, so a frame that libjpeg-turbo would decode
//! with a warning ("Corrupt JPEG data: 3 extraneous bytes before marker 0xd9", "premature
//! end of data segment", "bad Huffman code", "Premature end of JPEG file", …) is an error
//! there. Pure-Rust decoders repair such frames silently, and checking "the scan ends at
//! its marker" from the outside does not say what libjpeg-turbo says: it reads the
//! entropy-coded data through a 64-bit bit buffer that swallows up to seven bytes ahead,
//! so a few stray bytes before the end-of-image marker go unnoticed while more are
//! reported; and its fast Huffman path turns an invalid code into a zero without a
//! warning while its slow path, used near the end of the data and with restart markers,
//! reports it.
//!
//! So this module walks the file the way libjpeg-turbo's decompressor reads it —
//! `jdmarker.c` (markers and tables), `jdinput.c` (frame and scan set-up), `jdhuff.c`
//! (sequential Huffman decoding, fast and slow path, restart markers) and `jdphuff.c`
//! (progressive Huffman decoding) — keeping only what decides whether a warning or an
//! error is raised: bit positions, Huffman tables, restart numbers, which coefficients
//! are non-zero (progressive refinement). No pixels are produced; decoding them is left
//! to the decoder proper. Arithmetic-coded and lossless JPEGs, which simplejpeg decodes
//! but reel's decoder cannot, are reported as unsupported.

/// A condition libjpeg-turbo reports, in its own words where it has them.
pub(crate) type Damage = String;
type Check<T> = std::result::Result<T, Damage>;

const MAX_DIMENSION: u32 = 65500;
const MAX_COMPONENTS: usize = 10;
const MAX_BLOCKS_IN_MCU: usize = 10;
const HUFF_LOOKAHEAD: u32 = 8;
/// `MIN_GET_BITS` for a 64-bit bit buffer: libjpeg-turbo fills it to at least this many bits.
const MIN_GET_BITS: i32 = 57;
/// Scans checked in one progressive JPEG at most. A scan can cover every block of the image
/// with a few bytes (end-of-band runs), so without a limit a small file could keep the
/// check busy for hours; libjpeg-turbo's documentation recommends this limit for
/// untrusted input (`TJPARAM_SCANLIMIT`), and real encoders write about ten.
const MAX_SCANS: usize = 500;
/// The fast Huffman path runs only while this many bytes per block of an MCU remain.
const FAST_PATH_BYTES_PER_BLOCK: usize = 64 * 8;

const M_SOI: u8 = 0xd8;
const M_EOI: u8 = 0xd9;
const M_SOS: u8 = 0xda;
const M_DQT: u8 = 0xdb;
const M_DNL: u8 = 0xdc;
const M_DRI: u8 = 0xdd;
const M_DHT: u8 = 0xc4;
const M_DAC: u8 = 0xcc;
const M_APP0: u8 = 0xe0;
const M_APP14: u8 = 0xee;
const M_COM: u8 = 0xfe;
const M_RST0: u8 = 0xd0;

/// The standard tables (ITU T.81 Annex K.3) libjpeg-turbo installs for slots 0 and 1
/// that no DHT defines (Motion-JPEG frames leave them out).
const STD_DC_LUMA: ([u8; 17], &[u8]) =
    ([0, 0, 1, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0], &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
const STD_DC_CHROMA: ([u8; 17], &[u8]) =
    ([0, 0, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0], &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
const STD_AC_LUMA: ([u8; 17], &[u8]) = (
    [0, 0, 2, 1, 3, 3, 2, 4, 3, 5, 5, 4, 4, 0, 0, 1, 0x7d],
    &[
        0x01, 0x02, 0x03, 0x00, 0x04, 0x11, 0x05, 0x12, 0x21, 0x31, 0x41, 0x06, 0x13, 0x51, 0x61,
        0x07, 0x22, 0x71, 0x14, 0x32, 0x81, 0x91, 0xa1, 0x08, 0x23, 0x42, 0xb1, 0xc1, 0x15, 0x52,
        0xd1, 0xf0, 0x24, 0x33, 0x62, 0x72, 0x82, 0x09, 0x0a, 0x16, 0x17, 0x18, 0x19, 0x1a, 0x25,
        0x26, 0x27, 0x28, 0x29, 0x2a, 0x34, 0x35, 0x36, 0x37, 0x38, 0x39, 0x3a, 0x43, 0x44, 0x45,
        0x46, 0x47, 0x48, 0x49, 0x4a, 0x53, 0x54, 0x55, 0x56, 0x57, 0x58, 0x59, 0x5a, 0x63, 0x64,
        0x65, 0x66, 0x67, 0x68, 0x69, 0x6a, 0x73, 0x74, 0x75, 0x76, 0x77, 0x78, 0x79, 0x7a, 0x83,
        0x84, 0x85, 0x86, 0x87, 0x88, 0x89, 0x8a, 0x92, 0x93, 0x94, 0x95, 0x96, 0x97, 0x98, 0x99,
        0x9a, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8, 0xa9, 0xaa, 0xb2, 0xb3, 0xb4, 0xb5, 0xb6,
        0xb7, 0xb8, 0xb9, 0xba, 0xc2, 0xc3, 0xc4, 0xc5, 0xc6, 0xc7, 0xc8, 0xc9, 0xca, 0xd2, 0xd3,
        0xd4, 0xd5, 0xd6, 0xd7, 0xd8, 0xd9, 0xda, 0xe1, 0xe2, 0xe3, 0xe4, 0xe5, 0xe6, 0xe7, 0xe8,
        0xe9, 0xea, 0xf1, 0xf2, 0xf3, 0xf4, 0xf5, 0xf6, 0xf7, 0xf8, 0xf9, 0xfa,
    ],
);
const STD_AC_CHROMA: ([u8; 17], &[u8]) = (
    [0, 0, 2, 1, 2, 4, 4, 3, 4, 7, 5, 4, 4, 0, 1, 2, 0x77],
    &[
        0x00, 0x01, 0x02, 0x03, 0x11, 0x04, 0x05, 0x21, 0x31, 0x06, 0x12, 0x41, 0x51, 0x07, 0x61,
        0x71, 0x13, 0x22, 0x32, 0x81, 0x08, 0x14, 0x42, 0x91, 0xa1, 0xb1, 0xc1, 0x09, 0x23, 0x33,
        0x52, 0xf0, 0x15, 0x62, 0x72, 0xd1, 0x0a, 0x16, 0x24, 0x34, 0xe1, 0x25, 0xf1, 0x17, 0x18,
        0x19, 0x1a, 0x26, 0x27, 0x28, 0x29, 0x2a, 0x35, 0x36, 0x37, 0x38, 0x39, 0x3a, 0x43, 0x44,
        0x45, 0x46, 0x47, 0x48, 0x49, 0x4a, 0x53, 0x54, 0x55, 0x56, 0x57, 0x58, 0x59, 0x5a, 0x63,
        0x64, 0x65, 0x66, 0x67, 0x68, 0x69, 0x6a, 0x73, 0x74, 0x75, 0x76, 0x77, 0x78, 0x79, 0x7a,
        0x82, 0x83, 0x84, 0x85, 0x86, 0x87, 0x88, 0x89, 0x8a, 0x92, 0x93, 0x94, 0x95, 0x96, 0x97,
        0x98, 0x99, 0x9a, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8, 0xa9, 0xaa, 0xb2, 0xb3, 0xb4,
        0xb5, 0xb6, 0xb7, 0xb8, 0xb9, 0xba, 0xc2, 0xc3, 0xc4, 0xc5, 0xc6, 0xc7, 0xc8, 0xc9, 0xca,
        0xd2, 0xd3, 0xd4, 0xd5, 0xd6, 0xd7, 0xd8, 0xd9, 0xda, 0xe2, 0xe3, 0xe4, 0xe5, 0xe6, 0xe7,
        0xe8, 0xe9, 0xea, 0xf2, 0xf3, 0xf4, 0xf5, 0xf6, 0xf7, 0xf8, 0xf9, 0xfa,
    ],
);

/// What a frame is, as far as the check goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Coding {
    Sequential,
    Progressive,
    Lossless,
    Arithmetic,
}

#[derive(Clone, Copy, Debug)]
struct Component {
    id: u8,
    h: usize,
    v: usize,
    quant: u8,
    width_in_blocks: usize,
    height_in_blocks: usize,
    /// Whether a quantisation table was latched for it (at its first scan).
    quant_latched: bool,
}

#[derive(Clone, Debug)]
struct Frame {
    coding: Coding,
    precision: u8,
    width: u32,
    height: u32,
    components: Vec<Component>,
    max_h: usize,
    max_v: usize,
}

/// A DHT table as defined (libjpeg's `JHUFF_TBL`).
#[derive(Clone)]
struct HuffTable {
    bits: [u8; 17],
    vals: [u8; 256],
}

impl HuffTable {
    fn standard((bits, vals): ([u8; 17], &[u8])) -> Self {
        let mut t = HuffTable { bits, vals: [0; 256] };
        t.vals[..vals.len()].copy_from_slice(vals);
        t
    }
}

/// The decoding form of a table (libjpeg's `d_derived_tbl`).
#[derive(Clone)]
struct Derived {
    maxcode: [i64; 18],
    valoffset: [i64; 18],
    /// `(length << 8) | symbol` for codes of up to 8 bits, `9 << 8` otherwise.
    lookup: [u16; 256],
    vals: [u8; 256],
}

impl Derived {
    fn symbol(&self, code: i64, len: usize) -> u8 {
        let at = (code + self.valoffset[len]) & 0xff;
        self.vals[at as usize]
    }
}

/// `jpeg_make_d_derived_tbl`, with its errors.
fn derive(table: &HuffTable, is_dc: bool) -> Check<Derived> {
    let bad = || "Bogus Huffman table definition".to_string();
    // On the stack: a frame derives four tables or more, and two heap buffers each were a
    // visible share of a small frame's check.
    let mut sizes = [0usize; 256];
    let mut n = 0;
    for l in 1..=16 {
        let count = usize::from(table.bits[l]);
        if n + count > 256 {
            return Err(bad());
        }
        sizes[n..n + count].fill(l);
        n += count;
    }
    let huffsize = &sizes[..n];
    let mut codes = [0i64; 256];
    let huffcode = &mut codes[..n];
    let mut code: i64 = 0;
    let mut p = 0;
    if let Some(&first) = huffsize.first() {
        let mut si = first;
        while p < huffsize.len() {
            while p < huffsize.len() && huffsize[p] == si {
                huffcode[p] = code;
                code += 1;
                p += 1;
            }
            if code >= (1i64 << si) {
                return Err(bad());
            }
            code <<= 1;
            si += 1;
        }
    }
    let mut d = Derived {
        maxcode: [-1; 18],
        valoffset: [0; 18],
        lookup: [((HUFF_LOOKAHEAD + 1) << HUFF_LOOKAHEAD) as u16; 256],
        vals: table.vals,
    };
    let mut p = 0usize;
    for l in 1..=16 {
        let count = usize::from(table.bits[l]);
        if count > 0 {
            d.valoffset[l] = p as i64 - huffcode[p];
            p += count;
            d.maxcode[l] = huffcode[p - 1];
        }
    }
    d.maxcode[17] = 0xfffff;
    let mut p = 0usize;
    for l in 1..=HUFF_LOOKAHEAD as usize {
        for _ in 0..table.bits[l] {
            let look = (huffcode[p] as usize) << (HUFF_LOOKAHEAD as usize - l);
            for slot in look..look + (1 << (HUFF_LOOKAHEAD as usize - l)) {
                if let Some(e) = d.lookup.get_mut(slot) {
                    *e = ((l as u16) << HUFF_LOOKAHEAD) | u16::from(table.vals[p]);
                }
            }
            p += 1;
        }
    }
    if is_dc && huffsize.iter().enumerate().any(|(i, _)| table.vals[i] > 15) {
        return Err(bad());
    }
    Ok(d)
}

fn premature_eof() -> Damage {
    "Premature end of JPEG file".to_string()
}

fn hit_marker() -> Damage {
    "Corrupt JPEG data: premature end of data segment".to_string()
}

fn bad_code() -> Damage {
    "Corrupt JPEG data: bad Huffman code".to_string()
}

fn shr(x: u64, n: i32) -> u64 {
    if (0..64).contains(&n) { x >> n } else { 0 }
}

fn mask(n: i32) -> u64 {
    if n >= 64 { u64::MAX } else { (1u64 << n) - 1 }
}

/// The reading state: libjpeg's source manager, marker reader and bit buffer in one.
struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
    /// A marker the entropy decoder ran into and left for the marker reader (0: none).
    unread_marker: u8,
    /// Bytes skipped before the next marker (reported by `next_marker`).
    discarded: u64,
    bit_buffer: u64,
    bits_left: i32,
    /// Where the last bytes loaded into the bit buffer by the slow path lie (a ring of
    /// start and end offsets, stuffing included) and how many were loaded since the scan
    /// began (0 after the fast path ran: unknown), so that bytes libjpeg-turbo swallows at
    /// the end of a scan can be found.
    loaded_at: [(usize, usize); 8],
    loaded: usize,
}

impl<'a> Reader<'a> {
    fn byte(&mut self) -> Check<u8> {
        // libjpeg-turbo's memory source inserts a fake EOI at the end with a warning.
        let b = *self.data.get(self.pos).ok_or_else(premature_eof)?;
        self.pos += 1;
        Ok(b)
    }

    fn two_bytes(&mut self) -> Check<u16> {
        Ok(u16::from(self.byte()?) << 8 | u16::from(self.byte()?))
    }

    fn skip(&mut self, n: i64) -> Check<()> {
        if n > 0 {
            let n = usize::try_from(n).map_err(|_| premature_eof())?;
            if n > self.data.len().saturating_sub(self.pos) {
                return Err(premature_eof());
            }
            self.pos += n;
        }
        Ok(())
    }

    /// `next_marker`: skips to the next marker, reporting skipped bytes.
    fn next_marker(&mut self) -> Check<u8> {
        let marker = loop {
            let mut c = self.byte()?;
            while c != 0xff {
                self.discarded += 1;
                c = self.byte()?;
            }
            loop {
                c = self.byte()?;
                if c != 0xff {
                    break;
                }
            }
            if c != 0 {
                break c;
            }
            self.discarded += 2;
        };
        if self.discarded != 0 {
            return Err(format!(
                "Corrupt JPEG data: {} extraneous bytes before marker 0x{marker:02x}",
                self.discarded
            ));
        }
        Ok(marker)
    }

    /// `jpeg_fill_bit_buffer`: loads bytes until 57 bits are buffered or a marker is hit;
    /// fails when fewer than `nbits` bits remain before the marker.
    fn fill(&mut self, nbits: i32) -> Check<()> {
        if self.unread_marker == 0 {
            while self.bits_left < MIN_GET_BITS {
                let start = self.pos;
                let mut c = self.byte()?;
                if c == 0xff {
                    loop {
                        c = self.byte()?;
                        if c != 0xff {
                            break;
                        }
                    }
                    if c == 0 {
                        c = 0xff;
                    } else {
                        self.unread_marker = c;
                        break;
                    }
                }
                self.bit_buffer = (self.bit_buffer << 8) | u64::from(c);
                self.bits_left += 8;
                self.loaded_at[self.loaded % 8] = (start, self.pos);
                self.loaded += 1;
            }
            if self.unread_marker == 0 {
                return Ok(());
            }
        }
        if nbits > self.bits_left { Err(hit_marker()) } else { Ok(()) }
    }

    fn ensure(&mut self, nbits: i32) -> Check<()> {
        if self.bits_left < nbits { self.fill(nbits) } else { Ok(()) }
    }

    fn get_bits(&mut self, n: i32) -> u64 {
        self.bits_left -= n;
        shr(self.bit_buffer, self.bits_left) & mask(n)
    }

    fn peek_bits(&self, n: i32) -> u64 {
        shr(self.bit_buffer, self.bits_left - n) & mask(n)
    }

    /// `HUFF_DECODE` (the slow path's symbol decoder).
    fn decode(&mut self, t: &Derived) -> Check<u8> {
        if self.bits_left < HUFF_LOOKAHEAD as i32 {
            self.fill(0)?;
            if self.bits_left < HUFF_LOOKAHEAD as i32 {
                return self.decode_long(t, 1);
            }
        }
        let e = t.lookup[self.peek_bits(HUFF_LOOKAHEAD as i32) as usize];
        let nb = i32::from(e >> HUFF_LOOKAHEAD);
        if nb <= HUFF_LOOKAHEAD as i32 {
            self.bits_left -= nb;
            Ok((e & 0xff) as u8)
        } else {
            self.decode_long(t, nb)
        }
    }

    /// `jpeg_huff_decode`.
    fn decode_long(&mut self, t: &Derived, min_bits: i32) -> Check<u8> {
        let mut l = min_bits;
        self.ensure(l)?;
        let mut code = self.get_bits(l) as i64;
        while code > t.maxcode[l as usize] {
            code <<= 1;
            self.ensure(1)?;
            code |= self.get_bits(1) as i64;
            l += 1;
        }
        if l > 16 {
            return Err(bad_code());
        }
        Ok(t.symbol(code, l as usize))
    }

    /// Skips `n` bits of a coefficient value.
    fn skip_bits(&mut self, n: i32) -> Check<()> {
        if n > 0 {
            self.ensure(n)?;
            self.bits_left -= n;
        }
        Ok(())
    }
}

/// Sequential decoding of one block (the slow path of `decode_mcu_slow`).
fn block_slow(r: &mut Reader<'_>, dc: &Derived, ac: &Derived) -> Check<()> {
    let s = r.decode(dc)?;
    r.skip_bits(i32::from(s))?;
    let mut k = 1;
    while k < 64 {
        let rs = r.decode(ac)?;
        let (run, size) = (i32::from(rs >> 4), i32::from(rs & 15));
        if size != 0 {
            k += run;
            r.skip_bits(size)?;
        } else if run != 15 {
            break;
        } else {
            k += 15;
        }
        k += 1;
    }
    Ok(())
}

/// `decode_mcu_fast`: decodes one MCU from a bit buffer filled six bytes at a time with no
/// end-of-data checks. Invalid codes decode as 0 without a warning. Returns `false` (and
/// leaves the reader as it was) when it ran into a marker; the MCU is then decoded again
/// on the slow path.
fn mcu_fast(r: &mut Reader<'_>, blocks: &[(&Derived, &Derived)]) -> bool {
    struct Fast<'b> {
        data: &'b [u8],
        at: usize,
        buf: u64,
        left: i32,
        marker: bool,
    }
    impl Fast<'_> {
        fn byte(&self, i: usize) -> u8 {
            self.data.get(i).copied().unwrap_or(0)
        }
        fn fill(&mut self) {
            if self.left <= 16 {
                for _ in 0..6 {
                    let c0 = self.byte(self.at);
                    let c1 = self.byte(self.at + 1);
                    self.at += 1;
                    self.buf = (self.buf << 8) | u64::from(c0);
                    self.left += 8;
                    if c0 == 0xff {
                        self.at += 1;
                        if c1 != 0 {
                            self.marker = true;
                            self.at -= 2;
                            self.buf &= !0xff;
                        }
                    }
                }
            }
        }
        fn get(&mut self, n: i32) -> u64 {
            self.left -= n;
            shr(self.buf, self.left) & mask(n)
        }
        fn decode(&mut self, t: &Derived) -> u8 {
            self.fill();
            let e = t.lookup[(shr(self.buf, self.left - 8) & 0xff) as usize];
            let mut nb = i32::from(e >> HUFF_LOOKAHEAD);
            self.left -= nb;
            if nb <= HUFF_LOOKAHEAD as i32 {
                return (e & 0xff) as u8;
            }
            let mut s = (shr(self.buf, self.left) & mask(nb)) as i64;
            while nb <= 17 && s > t.maxcode[nb as usize] {
                s <<= 1;
                s |= self.get(1) as i64;
                nb += 1;
            }
            if nb > 16 { 0 } else { t.symbol(s, nb as usize) }
        }
    }
    let mut f =
        Fast { data: r.data, at: r.pos, buf: r.bit_buffer, left: r.bits_left, marker: false };
    for &(dc, ac) in blocks {
        let s = f.decode(dc);
        if s != 0 {
            f.fill();
            f.get(i32::from(s));
        }
        let mut k = 1;
        while k < 64 {
            let rs = f.decode(ac);
            let (run, size) = (i32::from(rs >> 4), i32::from(rs & 15));
            if size != 0 {
                k += run;
                f.fill();
                f.get(size);
            } else if run != 15 {
                break;
            } else {
                k += 15;
            }
            k += 1;
        }
    }
    if f.marker {
        return false;
    }
    r.pos = f.at;
    r.bit_buffer = f.buf;
    r.bits_left = f.left;
    r.loaded = 0;
    true
}

/// One scan's set-up (`per_scan_setup` and the SOS fields).
struct Scan {
    /// Indices into the frame's components.
    comps: Vec<usize>,
    dc_tables: Vec<u8>,
    ac_tables: Vec<u8>,
    ss: u8,
    se: u8,
    ah: u8,
    al: u8,
}

struct Checker<'a> {
    r: Reader<'a>,
    frame: Option<Frame>,
    /// The DC and AC tables defined, each in its decoding form (or why it has none),
    /// derived once at its definition rather than for every scan component using it.
    dc: [Option<Check<Derived>>; 4],
    ac: [Option<Check<Derived>>; 4],
    quant: [bool; 4],
    restart_interval: u16,
    next_restart: u8,
    saw_jfif: bool,
    adobe_transform: Option<u8>,
    /// Progressive: the successive-approximation bit of every coefficient per component
    /// (`coef_bits`, -1 = not yet coded).
    coef_bits: Vec<[i8; 64]>,
    /// Whether a scan used a standard table because no DHT defined its slot.
    used_standard_table: bool,
    /// Byte ranges libjpeg-turbo ignores and their replacements (see [`Accepted::edits`]).
    edits: Vec<Edit>,
    /// Progressive AC refinement: per component, which coefficients of each block are
    /// non-zero so far (one 64-bit mask per block).
    nonzero: Vec<Vec<u64>>,
}

/// A scan's derived DC and AC tables, per scan component (`None` where the scan needs none).
type ScanTables = (Vec<Option<Derived>>, Vec<Option<Derived>>);

/// MCUs per row, MCU rows, and per block of an MCU its scan component and its column and
/// row inside the MCU.
type McuLayout = (usize, usize, Vec<(usize, usize, usize)>);

/// What `read_markers` stopped at.
enum Stop {
    Sos(Scan),
    Eoi,
}

impl<'a> Checker<'a> {
    fn new(data: &'a [u8]) -> Self {
        Checker {
            r: Reader {
                data,
                pos: 0,
                unread_marker: 0,
                discarded: 0,
                bit_buffer: 0,
                bits_left: 0,
                loaded_at: [(0, 0); 8],
                loaded: 0,
            },
            frame: None,
            dc: [None, None, None, None],
            ac: [None, None, None, None],
            quant: [false; 4],
            restart_interval: 0,
            next_restart: 0,
            saw_jfif: false,
            adobe_transform: None,
            coef_bits: Vec::new(),
            used_standard_table: false,
            edits: Vec::new(),
            nonzero: Vec::new(),
        }
    }

    /// `read_markers`: processes markers up to the next SOS or EOI.
    fn read_markers(&mut self) -> Check<Stop> {
        loop {
            let marker = match std::mem::take(&mut self.r.unread_marker) {
                0 => self.r.next_marker()?,
                m => m,
            };
            match marker {
                M_SOI => return Err("Invalid JPEG file structure: two SOI markers".into()),
                0xc0 | 0xc1 => self.sof(Coding::Sequential)?,
                0xc2 => self.sof(Coding::Progressive)?,
                0xc3 => self.sof(Coding::Lossless)?,
                0xc9..=0xcb => self.sof(Coding::Arithmetic)?,
                0xc5..=0xc7 | 0xc8 | 0xcd..=0xcf => {
                    return Err(format!("Unsupported JPEG process: SOF type 0x{marker:02x}"));
                }
                M_SOS => return self.sos().map(Stop::Sos),
                M_EOI => return Ok(Stop::Eoi),
                M_DAC => self.dac()?,
                M_DHT => self.dht()?,
                M_DQT => self.dqt()?,
                M_DRI => self.dri()?,
                M_APP0 | M_APP14 => self.interesting_app(marker)?,
                0xe1..=0xed | 0xef | M_COM | M_DNL => {
                    let len = i64::from(self.r.two_bytes()?) - 2;
                    self.r.skip(len)?;
                }
                0xd0..=0xd7 | 0x01 => {}
                _ => return Err(format!("Unsupported marker type 0x{marker:02x}")),
            }
        }
    }

    fn sof(&mut self, coding: Coding) -> Check<()> {
        if self.frame.is_some() {
            return Err("Invalid JPEG file structure: two SOF markers".into());
        }
        let length = i64::from(self.r.two_bytes()?);
        let precision = self.r.byte()?;
        let height = u32::from(self.r.two_bytes()?);
        let width = u32::from(self.r.two_bytes()?);
        let n = usize::from(self.r.byte()?);
        if height == 0 || width == 0 || n == 0 {
            return Err("Empty JPEG image (DNL not supported)".into());
        }
        if length - 8 != 3 * n as i64 {
            return Err("Bogus marker length".into());
        }
        let mut components = Vec::with_capacity(n);
        for _ in 0..n {
            let id = self.r.byte()?;
            let hv = self.r.byte()?;
            let quant = self.r.byte()?;
            components.push(Component {
                id,
                h: usize::from(hv >> 4),
                v: usize::from(hv & 15),
                quant,
                width_in_blocks: 0,
                height_in_blocks: 0,
                quant_latched: false,
            });
        }
        self.frame =
            Some(Frame { coding, precision, width, height, components, max_h: 1, max_v: 1 });
        Ok(())
    }

    fn sos(&mut self) -> Check<Scan> {
        let Some(frame) = &self.frame else {
            return Err("Invalid JPEG file structure: SOS before SOF".into());
        };
        let length = i64::from(self.r.two_bytes()?);
        let n = usize::from(self.r.byte()?);
        if length != (n as i64) * 2 + 6 || !(1..=4).contains(&n) {
            return Err("Bogus marker length".into());
        }
        let mut scan = Scan {
            comps: Vec::with_capacity(n),
            dc_tables: Vec::with_capacity(n),
            ac_tables: Vec::with_capacity(n),
            ss: 0,
            se: 0,
            ah: 0,
            al: 0,
        };
        for _ in 0..n {
            let cc = self.r.byte()?;
            let c = self.r.byte()?;
            let found = frame
                .components
                .iter()
                .take(4)
                .enumerate()
                .position(|(ci, comp)| comp.id == cc && !scan.comps.contains(&ci));
            let Some(ci) = found else {
                return Err(format!("Invalid component ID {cc} in SOS"));
            };
            scan.comps.push(ci);
            scan.dc_tables.push(c >> 4);
            scan.ac_tables.push(c & 15);
        }
        scan.ss = self.r.byte()?;
        scan.se = self.r.byte()?;
        let a = self.r.byte()?;
        scan.ah = a >> 4;
        scan.al = a & 15;
        self.next_restart = 0;
        Ok(scan)
    }

    fn dac(&mut self) -> Check<()> {
        let mut length = i64::from(self.r.two_bytes()?) - 2;
        while length > 0 {
            let index = self.r.byte()?;
            let val = self.r.byte()?;
            length -= 2;
            if index >= 32 {
                return Err(format!("Bogus DAC index {index}"));
            }
            if index < 16 && (val & 15) > (val >> 4) {
                return Err(format!("Bogus DAC value 0x{val:x}"));
            }
        }
        if length != 0 {
            return Err("Bogus marker length".into());
        }
        Ok(())
    }

    fn dht(&mut self) -> Check<()> {
        let segment_start = self.r.pos.saturating_sub(2);
        let mut length = i64::from(self.r.two_bytes()?) - 2;
        // Tables that libjpeg-turbo validates only when a scan uses them; a decoder that
        // validates every table it is given gets the segment without the invalid ones.
        let mut valid_tables = Vec::new();
        let mut any_invalid = false;
        while length > 16 {
            let table_start = self.r.pos;
            let index = self.r.byte()?;
            let mut bits = [0u8; 17];
            let mut count = 0usize;
            for b in bits.iter_mut().skip(1) {
                *b = self.r.byte()?;
                count += usize::from(*b);
            }
            length -= 17;
            if count > 256 || count as i64 > length {
                return Err("Bogus Huffman table definition".into());
            }
            let mut vals = [0u8; 256];
            for v in vals.iter_mut().take(count) {
                *v = self.r.byte()?;
            }
            length -= count as i64;
            let slot = usize::from(index & 0x0f);
            let (table, is_ac) = (index & !0x10, index & 0x10 != 0);
            if table >= 4 {
                return Err(format!("Bogus DHT index {table}"));
            }
            let derived = derive(&HuffTable { bits, vals }, !is_ac);
            if derived.is_ok() {
                valid_tables.extend_from_slice(&self.r.data[table_start..self.r.pos]);
            } else {
                any_invalid = true;
            }
            if is_ac {
                self.ac[slot] = Some(derived);
            } else {
                self.dc[slot] = Some(derived);
            }
        }
        if length != 0 {
            return Err("Bogus marker length".into());
        }
        if any_invalid {
            let mut replacement = Vec::new();
            if !valid_tables.is_empty() {
                replacement.extend_from_slice(&[0xff, M_DHT]);
                let len = u16::try_from(valid_tables.len() + 2).unwrap_or(u16::MAX);
                replacement.extend_from_slice(&len.to_be_bytes());
                replacement.extend_from_slice(&valid_tables);
            }
            self.edits.push((segment_start, self.r.pos, replacement));
        }
        Ok(())
    }

    fn dqt(&mut self) -> Check<()> {
        let mut length = i64::from(self.r.two_bytes()?) - 2;
        while length > 0 {
            let n = self.r.byte()?;
            let (prec, n) = (n >> 4, usize::from(n & 15));
            if n >= 4 {
                return Err(format!("Bogus DQT index {n}"));
            }
            self.quant[n] = true;
            for _ in 0..64 {
                if prec != 0 {
                    self.r.two_bytes()?;
                } else {
                    self.r.byte()?;
                }
            }
            length -= if prec != 0 { 129 } else { 65 };
        }
        if length != 0 {
            return Err("Bogus marker length".into());
        }
        Ok(())
    }

    fn dri(&mut self) -> Check<()> {
        if self.r.two_bytes()? != 4 {
            return Err("Bogus marker length".into());
        }
        self.restart_interval = self.r.two_bytes()?;
        Ok(())
    }

    /// `get_interesting_appn` for APP0 (JFIF) and APP14 (Adobe).
    fn interesting_app(&mut self, marker: u8) -> Check<()> {
        let mut length = i64::from(self.r.two_bytes()?) - 2;
        let n = length.clamp(0, 14) as usize;
        let mut b = [0u8; 14];
        for x in b.iter_mut().take(n) {
            *x = self.r.byte()?;
        }
        length -= n as i64;
        if marker == M_APP0 && n >= 14 && b[..5] == *b"JFIF\0" {
            self.saw_jfif = true;
            if b[5] != 1 {
                return Err(format!("Warning: unknown JFIF revision number {}.{:02}", b[5], b[6]));
            }
        } else if marker == M_APP14 && n >= 12 && b[..5] == *b"Adobe" {
            self.adobe_transform = Some(b[11]);
        }
        self.r.skip(length)
    }

    /// `initial_setup` at the first SOS, plus what the TurboJPEG header call and
    /// `default_decompress_parms` check.
    fn initial_setup(&mut self, first: &Scan, max_state_bytes: u64) -> Check<bool> {
        let Some(frame) = self.frame.as_mut() else {
            return Err("Invalid JPEG file structure: SOS before SOF".into());
        };
        if frame.width > MAX_DIMENSION || frame.height > MAX_DIMENSION {
            return Err(format!("Maximum supported image dimension is {MAX_DIMENSION} pixels"));
        }
        match frame.coding {
            Coding::Lossless | Coding::Arithmetic => {
                return Err(
                    "arithmetic-coded and lossless JPEGs are not supported by reel's decoder"
                        .into(),
                );
            }
            Coding::Sequential | Coding::Progressive => {}
        }
        if frame.precision != 8 {
            return Err(format!("Unsupported JPEG data precision {}", frame.precision));
        }
        let n = frame.components.len();
        if n > MAX_COMPONENTS {
            return Err(format!("Too many color components: {n}, max {MAX_COMPONENTS}"));
        }
        for c in &frame.components {
            if !(1..=4).contains(&c.h) || !(1..=4).contains(&c.v) {
                return Err("Bogus sampling factors".into());
            }
        }
        frame.max_h = frame.components.iter().map(|c| c.h).max().unwrap_or(1);
        frame.max_v = frame.components.iter().map(|c| c.v).max().unwrap_or(1);
        let (w, h, max_h, max_v) =
            (frame.width as usize, frame.height as usize, frame.max_h, frame.max_v);
        for c in &mut frame.components {
            c.width_in_blocks = (w * c.h).div_ceil(max_h * 8);
            c.height_in_blocks = (h * c.v).div_ceil(max_v * 8);
        }
        match (n, self.adobe_transform) {
            (3, Some(t)) if !self.saw_jfif && t > 1 => {
                return Err(format!("Unrecognized Adobe transform {t}"));
            }
            (4, Some(t)) if t != 0 && t != 2 => {
                return Err(format!("Unrecognized Adobe transform {t}"));
            }
            (1 | 3 | 4, _) => {}
            _ => return Err("Could not determine colorspace of JPEG image".into()),
        }
        if n != 1 && !known_subsampling(frame) {
            return Err("Could not determine subsampling level of JPEG image".into());
        }
        if frame.coding == Coding::Progressive {
            self.coef_bits = vec![[-1; 64]; n];
            // Eight bytes of state per block: an eighth of the decoded size, so bounded
            // by the limit the decoded frame must meet anyway.
            let mut total = 0u64;
            for c in &frame.components {
                total = total.saturating_add((c.width_in_blocks * c.height_in_blocks) as u64);
            }
            if total.saturating_mul(8) > max_state_bytes {
                return Err(format!(
                    "the progressive image needs {} bytes of state to check, over the limit \
                     of {max_state_bytes} bytes",
                    total.saturating_mul(8)
                ));
            }
            self.nonzero = frame
                .components
                .iter()
                .map(|c| vec![0u64; c.width_in_blocks * c.height_in_blocks])
                .collect();
        }
        let multiple = first.comps.len() < n || frame.coding == Coding::Progressive;
        Ok(multiple)
    }

    /// Table set-up for a scan; returns the derived DC and AC tables per scan component.
    fn scan_tables(&mut self, scan: &Scan) -> Check<ScanTables> {
        let frame = self.frame.as_mut().ok_or_else(|| "no frame".to_string())?;
        for &ci in &scan.comps {
            let c = &mut frame.components[ci];
            if !c.quant_latched {
                if c.quant >= 4 || !self.quant[usize::from(c.quant)] {
                    return Err(format!("Quantization table 0x{:02x} was not defined", c.quant));
                }
                c.quant_latched = true;
            }
        }
        let used_standard = std::cell::Cell::new(false);
        let table = |slots: &[Option<Check<Derived>>; 4],
                     no: u8,
                     std: [([u8; 17], &[u8]); 2],
                     is_dc: bool| {
            let no = usize::from(no);
            match slots.get(no) {
                Some(Some(derived)) => derived.clone(),
                Some(None) if no < 2 => {
                    used_standard.set(true);
                    derive(&HuffTable::standard(std[no]), is_dc)
                }
                _ => Err(format!("Huffman table 0x{no:02x} was not defined")),
            }
        };
        let mut dcs = Vec::new();
        let mut acs = Vec::new();
        let progressive = frame.coding == Coding::Progressive;
        for i in 0..scan.comps.len() {
            let want_dc = !progressive || scan.ss == 0 && scan.ah == 0;
            let want_ac = !progressive || scan.ss != 0;
            dcs.push(if want_dc {
                Some(table(&self.dc, scan.dc_tables[i], [STD_DC_LUMA, STD_DC_CHROMA], true)?)
            } else {
                None
            });
            acs.push(if want_ac {
                Some(table(&self.ac, scan.ac_tables[i], [STD_AC_LUMA, STD_AC_CHROMA], false)?)
            } else {
                None
            });
        }
        self.used_standard_table |= used_standard.get();
        Ok((dcs, acs))
    }

    /// The MCU layout of a scan: MCUs per row, MCU rows, and per block of an MCU its scan
    /// component and block offset inside the MCU.
    fn mcu_layout(&self, scan: &Scan) -> Check<McuLayout> {
        let frame = self.frame.as_ref().ok_or_else(|| "no frame".to_string())?;
        if scan.comps.len() == 1 {
            let c = &frame.components[scan.comps[0]];
            return Ok((c.width_in_blocks, c.height_in_blocks, vec![(0, 0, 0)]));
        }
        let per_row = (frame.width as usize).div_ceil(frame.max_h * 8);
        let rows = (frame.height as usize).div_ceil(frame.max_v * 8);
        let mut blocks = Vec::new();
        for (i, &ci) in scan.comps.iter().enumerate() {
            let c = &frame.components[ci];
            if blocks.len() + c.h * c.v > MAX_BLOCKS_IN_MCU {
                return Err("Sampling factors too large for interleaved scan".into());
            }
            for y in 0..c.v {
                for x in 0..c.h {
                    blocks.push((i, x, y));
                }
            }
        }
        Ok((per_row, rows, blocks))
    }

    /// At the end of a scan: whole bytes still in the bit buffer are bytes libjpeg-turbo
    /// took in and ignores (a valid scan leaves fewer than 8 padding bits), so no warning
    /// names them. Records where they are, when the slow path loaded them.
    fn note_swallowed(&mut self) {
        let r = &self.r;
        let k = usize::try_from(r.bits_left / 8).unwrap_or(0);
        if k == 0 || k > r.loaded.min(8) {
            return;
        }
        let (start, _) = r.loaded_at[(r.loaded - k) % 8];
        let (_, end) = r.loaded_at[(r.loaded - 1) % 8];
        if start < end {
            self.edits.push((start, end, Vec::new()));
        }
    }

    /// `process_restart`.
    fn restart(&mut self) -> Check<()> {
        self.r.discarded += (self.r.bits_left / 8) as u64;
        self.r.bits_left = 0;
        let marker = match std::mem::take(&mut self.r.unread_marker) {
            0 => self.r.next_marker()?,
            m => m,
        };
        if marker != M_RST0 + self.next_restart {
            return Err(format!(
                "Corrupt JPEG data: found marker 0x{marker:02x} instead of RST{}",
                self.next_restart
            ));
        }
        self.next_restart = (self.next_restart + 1) & 7;
        Ok(())
    }

    fn sequential_scan(&mut self, scan: &Scan) -> Check<()> {
        if scan.ss != 0 || scan.se != 63 || scan.ah != 0 || scan.al != 0 {
            return Err("Invalid SOS parameters for sequential JPEG".into());
        }
        let (dcs, acs) = self.scan_tables(scan)?;
        let (per_row, rows, layout) = self.mcu_layout(scan)?;
        let mut blocks = Vec::with_capacity(layout.len());
        for &(i, _, _) in &layout {
            match (&dcs[i], &acs[i]) {
                (Some(dc), Some(ac)) => blocks.push((dc, ac)),
                _ => return Err("no Huffman table".into()),
            }
        }
        self.r.bits_left = 0;
        self.r.bit_buffer = 0;
        self.r.loaded = 0;
        let interval = usize::from(self.restart_interval);
        let mut to_go = interval;
        for _ in 0..per_row * rows {
            let mut fast = true;
            if interval != 0 {
                if to_go == 0 {
                    self.restart()?;
                    to_go = interval;
                }
                fast = false;
            }
            if self.r.data.len().saturating_sub(self.r.pos)
                < FAST_PATH_BYTES_PER_BLOCK * blocks.len()
                || self.r.unread_marker != 0
            {
                fast = false;
            }
            if !(fast && mcu_fast(&mut self.r, &blocks)) {
                for &(dc, ac) in &blocks {
                    block_slow(&mut self.r, dc, ac)?;
                }
            }
            if interval != 0 {
                to_go -= 1;
            }
        }
        Ok(())
    }

    /// `start_pass_phuff_decoder`'s checks.
    fn progressive_params(&mut self, scan: &Scan) -> Check<()> {
        let (ss, se, ah, al) = (scan.ss, scan.se, scan.ah, scan.al);
        let mut bad = false;
        if ss == 0 {
            if se != 0 {
                bad = true;
            }
        } else if se < ss || se > 63 || scan.comps.len() != 1 {
            bad = true;
        }
        if ah != 0 && al != ah - 1 {
            bad = true;
        }
        if al > 13 {
            bad = true;
        }
        if bad {
            return Err(format!("Invalid progressive parameters Ss={ss} Se={se} Ah={ah} Al={al}"));
        }
        for &ci in &scan.comps {
            let bits = &mut self.coef_bits[ci];
            if ss != 0 && bits[0] < 0 {
                return Err(format!(
                    "Corrupt JPEG data: inconsistent progression sequence for component {ci} coefficient 0"
                ));
            }
            for (k, bit) in
                bits.iter_mut().enumerate().take(usize::from(se) + 1).skip(usize::from(ss))
            {
                let expected = (*bit).max(0);
                if i32::from(ah) != i32::from(expected) {
                    return Err(format!(
                        "Corrupt JPEG data: inconsistent progression sequence for component {ci} coefficient {k}"
                    ));
                }
                *bit = al as i8;
            }
        }
        Ok(())
    }

    fn progressive_scan(&mut self, scan: &Scan) -> Check<()> {
        self.progressive_params(scan)?;
        let (dcs, acs) = self.scan_tables(scan)?;
        let (per_row, rows, layout) = self.mcu_layout(scan)?;
        self.r.bits_left = 0;
        self.r.bit_buffer = 0;
        self.r.loaded = 0;
        let interval = usize::from(self.restart_interval);
        let mut to_go = interval;
        let mut eobrun: u32 = 0;
        let frame = self.frame.clone().ok_or_else(|| "no frame".to_string())?;
        for mcu in 0..per_row * rows {
            if interval != 0 && to_go == 0 {
                self.restart()?;
                eobrun = 0;
                to_go = interval;
            }
            let (mx, my) = (mcu % per_row, mcu / per_row);
            for &(i, bx, by) in &layout {
                let ci = scan.comps[i];
                let c = &frame.components[ci];
                let (x, y) =
                    if scan.comps.len() == 1 { (mx, my) } else { (mx * c.h + bx, my * c.v + by) };
                // Blocks of an interleaved MCU beyond the component's edge are coded but
                // never refined, so they need no state.
                let slot = (x < c.width_in_blocks && y < c.height_in_blocks)
                    .then(|| y * c.width_in_blocks + x);
                if scan.ss == 0 {
                    if scan.ah == 0 {
                        let dc = dcs[i].as_ref().ok_or_else(|| "no DC table".to_string())?;
                        let s = self.r.decode(dc)?;
                        self.r.skip_bits(i32::from(s))?;
                    } else {
                        self.r.skip_bits(1)?;
                    }
                } else {
                    let ac = acs[i].as_ref().ok_or_else(|| "no AC table".to_string())?;
                    let mut bits = slot.and_then(|s| self.nonzero[ci].get(s).copied()).unwrap_or(0);
                    let result = if scan.ah == 0 {
                        ac_first(&mut self.r, ac, scan.ss, scan.se, &mut eobrun, &mut bits)
                    } else {
                        ac_refine(&mut self.r, ac, scan.ss, scan.se, &mut eobrun, &mut bits)
                    };
                    if let Some(m) = slot.and_then(|s| self.nonzero[ci].get_mut(s)) {
                        *m = bits;
                    }
                    result?;
                }
            }
            if interval != 0 {
                to_go -= 1;
            }
        }
        Ok(())
    }
}

/// `decode_mcu_AC_first` for one block; `nonzero` gains the coefficients coded non-zero.
fn ac_first(
    r: &mut Reader<'_>,
    t: &Derived,
    ss: u8,
    se: u8,
    eobrun: &mut u32,
    nonzero: &mut u64,
) -> Check<()> {
    if *eobrun > 0 {
        *eobrun -= 1;
        return Ok(());
    }
    let mut k = i32::from(ss);
    while k <= i32::from(se) {
        let rs = r.decode(t)?;
        let (run, size) = (i32::from(rs >> 4), i32::from(rs & 15));
        if size != 0 {
            k += run;
            r.skip_bits(size)?;
            // Past the band's end libjpeg writes to coefficient 63 (its zigzag table's
            // padding entries), so that is the one that becomes non-zero.
            *nonzero |= 1u64 << k.clamp(0, 63);
        } else if run == 15 {
            k += 15;
        } else {
            let mut run_len = 1u32 << run;
            if run != 0 {
                r.ensure(run)?;
                run_len += r.get_bits(run) as u32;
            }
            *eobrun = run_len - 1;
            break;
        }
        k += 1;
    }
    Ok(())
}

/// `decode_mcu_AC_refine` for one block.
fn ac_refine(
    r: &mut Reader<'_>,
    t: &Derived,
    ss: u8,
    se: u8,
    eobrun: &mut u32,
    nonzero: &mut u64,
) -> Check<()> {
    let (ss, se) = (i32::from(ss), i32::from(se));
    let is_nz = |m: u64, k: i32| (0..64).contains(&k) && m & (1u64 << k) != 0;
    let mut k = ss;
    if *eobrun == 0 {
        while k <= se {
            let rs = r.decode(t)?;
            let mut run = i32::from(rs >> 4);
            let size = i32::from(rs & 15);
            let mut new_coef = false;
            if size != 0 {
                if size != 1 {
                    return Err(bad_code());
                }
                r.ensure(1)?;
                r.get_bits(1);
                new_coef = true;
            } else if run != 15 {
                let mut run_len = 1u32 << run;
                if run != 0 {
                    r.ensure(run)?;
                    run_len += r.get_bits(run) as u32;
                }
                *eobrun = run_len;
                break;
            }
            loop {
                if is_nz(*nonzero, k) {
                    r.ensure(1)?;
                    r.get_bits(1);
                } else {
                    if run == 0 {
                        break;
                    }
                    run -= 1;
                }
                k += 1;
                if k > se {
                    break;
                }
            }
            if new_coef {
                *nonzero |= 1u64 << k.clamp(0, 63);
            }
            k += 1;
        }
    }
    if *eobrun > 0 {
        while k <= se {
            if is_nz(*nonzero, k) {
                r.ensure(1)?;
                r.get_bits(1);
            }
            k += 1;
        }
        *eobrun -= 1;
    }
    Ok(())
}

/// The MCU sizes (in blocks) of TurboJPEG's subsampling levels in libjpeg-turbo 3.0/3.1:
/// 4:4:4, 4:2:2, 4:2:0, gray (not matched on factors), 4:4:0, 4:1:1, 4:4:1.
const SUBSAMPLING_MCU: [(usize, usize); 7] =
    [(1, 1), (2, 1), (2, 2), (0, 0), (1, 2), (4, 1), (1, 4)];

/// TurboJPEG's `getSubsamp`: whether it can name the chroma subsampling (its header call
/// refuses a JPEG it cannot: "Could not determine subsampling level of JPEG image").
fn known_subsampling(frame: &Frame) -> bool {
    let c = &frame.components;
    let n = c.len();
    if n == 1 {
        return true;
    }
    if n != 3 && n != 4 {
        return false;
    }
    // Four components are CMYK or YCCK, whose fourth samples like the first.
    let matches =
        |refs: &dyn Fn(usize) -> (usize, usize)| (1..n).all(|k| (c[k].h, c[k].v) == refs(k));
    for (i, &(mw, mh)) in SUBSAMPLING_MCU.iter().enumerate() {
        if i == 3 {
            continue;
        }
        if (c[0].h, c[0].v) == (mw, mh)
            && matches(&|k| if n == 4 && k == 3 { (mw, mh) } else { (1, 1) })
        {
            return true;
        }
        // 4:2:2 and 4:4:0 written with doubled factors.
        if (c[0].h, c[0].v) == (2, 2)
            && (i == 1 || i == 4)
            && matches(&|k| if n == 4 && k == 3 { (2, 2) } else { (mh, mw) })
        {
            return true;
        }
        // 4:4:4 written with equal factors above 1.
        if i == 0 && c[0].h * c[0].v <= MAX_BLOCKS_IN_MCU / 3 && matches(&|_| (c[0].h, c[0].v)) {
            return true;
        }
    }
    false
}

/// What [`check`] found about a JPEG it accepts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Accepted {
    /// A scan uses a Huffman table slot (0 or 1) that no DHT defines; libjpeg-turbo then
    /// uses the standard table (Motion-JPEG frames rely on it).
    pub standard_tables: bool,
    /// Byte ranges (ascending, apart) that libjpeg-turbo reads past without a warning and
    /// what to put in their place for a decoder that would refuse them: bytes its bit buffer
    /// took in at the end of a scan and ignored (replaced by nothing), and Huffman tables no
    /// scan uses that would fail validation (the DHT segment without them).
    pub edits: Vec<Edit>,
}

/// A byte range `start..end` of the frame and its replacement.
pub(crate) type Edit = (usize, usize, Vec<u8>);

/// A DHT segment defining the four standard tables (DC and AC, slots 0 and 1), for a
/// decoder that does not fill undefined slots with them.
pub(crate) fn standard_dht() -> Vec<u8> {
    let tables =
        [(0x00, STD_DC_LUMA), (0x01, STD_DC_CHROMA), (0x10, STD_AC_LUMA), (0x11, STD_AC_CHROMA)];
    let mut body = Vec::new();
    for (index, (bits, vals)) in tables {
        body.push(index);
        body.extend_from_slice(&bits[1..]);
        body.extend_from_slice(vals);
    }
    let len = (body.len() + 2) as u16;
    let mut seg = vec![0xff, M_DHT];
    seg.extend_from_slice(&len.to_be_bytes());
    seg.extend_from_slice(&body);
    seg
}

/// Checks `jpeg` the way libjpeg-turbo (through simplejpeg, strict) reads it: `Err` names
/// the first condition it would report as a warning or an error. A progressive JPEG whose
/// checking state (8 bytes per block) would exceed `max_state_bytes` is refused.
pub(crate) fn check(jpeg: &[u8], max_state_bytes: u64) -> Check<Accepted> {
    let mut c = Checker::new(jpeg);
    if jpeg.len() < 2 || jpeg[0] != 0xff || jpeg[1] != M_SOI {
        let (a, b) = (jpeg.first().copied().unwrap_or(0), jpeg.get(1).copied().unwrap_or(0));
        return Err(format!("Not a JPEG file: starts with 0x{a:02x} 0x{b:02x}"));
    }
    c.r.pos = 2;
    let first = match c.read_markers()? {
        Stop::Sos(scan) => scan,
        Stop::Eoi if c.frame.is_some() => {
            return Err("Invalid JPEG file structure: missing SOS marker".into());
        }
        Stop::Eoi => return Err("JPEG datastream contains no image".into()),
    };
    let multiple = c.initial_setup(&first, max_state_bytes)?;
    let progressive = c.frame.as_ref().is_some_and(|f| f.coding == Coding::Progressive);
    let mut scan = first;
    let mut scans = 0;
    loop {
        scans += 1;
        if scans > MAX_SCANS {
            return Err(format!("more than {MAX_SCANS} scans; reel does not check further"));
        }
        if progressive {
            c.progressive_scan(&scan)?;
        } else {
            c.sequential_scan(&scan)?;
        }
        c.note_swallowed();
        match c.read_markers()? {
            Stop::Eoi => {
                return Ok(Accepted { standard_tables: c.used_standard_table, edits: c.edits });
            }
            Stop::Sos(next) if multiple => scan = next,
            Stop::Sos(_) => {
                return Err("Invalid JPEG file structure: SOS marker after the last scan".into());
            }
        }
    }
}
