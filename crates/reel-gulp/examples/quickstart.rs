//! What a program that depends on `reel-gulp` alone does: write a gulp directory of
//! videos (frames given as pixels, encoded to JPEG like the reference), read videos back by
//! index and id, with frame selection. CI checks that this file builds in a crate whose only
//! dependency is `reel-gulp`.
//!
//! ```text
//! cargo run -p reel-gulp --example quickstart
//! ```

use reel_gulp::prelude::*;

fn main() -> reel_gulp::core::Result<()> {
    let dir = std::env::temp_dir().join(format!("reel-gulp-quickstart-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("clips");

    let (width, height) = (16u32, 8u32);
    let options = GulpWriteOptions::default().videos_per_chunk(4);
    let mut writer = GulpWriter::create(&path, &options)?;
    for v in 0..10u8 {
        let frames: Vec<Vec<u8>> =
            (0..3u8).map(|f| vec![v * 20 + f; (width * height * 3) as usize]).collect();
        let frames: Vec<Frame<'_>> =
            frames.iter().map(|pixels| Frame::Rgb { width, height, pixels }).collect();
        let meta = JsonValue::object([("label", JsonValue::from("wave"))]);
        // `write_video` takes the reference's arguments; `append(&record)` takes a record.
        writer.write_video(&format!("clip-{v}"), meta, &frames)?;
    }
    println!("wrote {} videos", writer.records());
    writer.finish()?;

    let gulp = GulpReader::open(&path)?;
    assert_eq!(gulp.len(), 10);
    let video = gulp.get("clip-7", &FrameSelection::every(2))?;
    let frames = video.get("frames").and_then(|f| f.as_list()).map_or(0, |l| l.len());
    println!(
        "clip-7: {frames} of 3 frames, meta {}",
        video.get("meta").map(|m| m.to_string()).unwrap_or_default()
    );
    assert_eq!(frames, 2);

    for record in &gulp.read_batch(&[0, 9])? {
        println!("video {}: {}", record.index(), record.str("id").unwrap_or_default());
    }

    std::fs::remove_dir_all(&dir)?;
    Ok(())
}
