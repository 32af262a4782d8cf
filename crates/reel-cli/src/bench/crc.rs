//! `reel bench --crc`: the CRC-32 implementations reel could use, side by side.
//!
//! Each implementation checksums the same buffer over and over (so the bytes are in the CPU
//! cache, as they are when reel checks a record it has just copied), alternating between
//! implementations `repeat` times and keeping each one's best run. reel uses whichever
//! `reel::checksum::crc32` calls; the others are there to show that it is the faster one.

use std::hint::black_box;
use std::time::{Duration, Instant};

use crate::table::Table;

/// A CRC-32 implementation under test.
struct Implementation {
    name: &'static str,
    crc32: fn(&[u8]) -> u32,
}

const IMPLEMENTATIONS: [Implementation; 3] = [
    Implementation { name: "crc32fast", crc32: crc32fast::hash },
    Implementation { name: "crc-fast", crc32: crc_fast::crc32_iso_hdlc },
    Implementation { name: "reel::checksum::crc32", crc32: reel::checksum::crc32 },
];

/// Record sizes measured.
const SIZES: [usize; 3] = [1 << 10, 100 << 10, 1 << 20];

/// Measures every implementation at every size for about `budget` each, `repeat` times, and
/// prints GB/s and the ratio to crc32fast. Fails if two implementations disagree.
pub fn run(budget: Duration, repeat: usize, json: bool) -> reel::Result<()> {
    let mut rows = Vec::new();
    for size in SIZES {
        let data: Vec<u8> =
            (0..size as u64).map(|i| (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as u8).collect();
        let expected = crc32fast::hash(&data);
        let mut best = [0f64; IMPLEMENTATIONS.len()];
        for _ in 0..repeat.max(1) {
            for (k, imp) in IMPLEMENTATIONS.iter().enumerate() {
                if (imp.crc32)(&data) != expected {
                    return Err(reel::Error::invalid_input(format!(
                        "{} computes a different CRC-32 than crc32fast",
                        imp.name
                    )));
                }
                best[k] = best[k].max(gb_per_sec(imp.crc32, &data, budget));
            }
        }
        for (k, imp) in IMPLEMENTATIONS.iter().enumerate() {
            rows.push((size, imp.name, best[k], best[k] / best[0]));
        }
    }
    if json {
        let rows: Vec<_> = rows
            .iter()
            .map(|(size, name, gbs, ratio)| {
                serde_json::json!({"bytes": size, "implementation": name, "gb_per_sec": gbs,
                                   "vs_crc32fast": ratio})
            })
            .collect();
        outln!("{}", serde_json::Value::Array(rows));
        return Ok(());
    }
    let mut t = Table::new(&["size", "implementation", "GB/s", "×crc32fast"]);
    for (size, name, gbs, ratio) in rows {
        t.row(vec![
            super::human(size),
            name.to_string(),
            format!("{gbs:.2}"),
            format!("{ratio:.2}"),
        ]);
    }
    out!("{}", t.render());
    outln!(
        "\nGB/s = 10^9 bytes per second over one buffer in the CPU cache; best of {repeat} runs."
    );
    Ok(())
}

/// Checksums `data` repeatedly for `budget` and returns the rate.
fn gb_per_sec(crc32: fn(&[u8]) -> u32, data: &[u8], budget: Duration) -> f64 {
    // Calls between clock reads, so that reading the clock costs nothing at 1 KiB.
    let calls = (1 << 20) / data.len().max(1) + 1;
    let mut done = 0u64;
    let t0 = Instant::now();
    while t0.elapsed() < budget {
        for _ in 0..calls {
            black_box(crc32(black_box(data)));
        }
        done += calls as u64;
    }
    done as f64 * data.len() as f64 / 1e9 / t0.elapsed().as_secs_f64()
}
