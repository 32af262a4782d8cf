//! Judges JPEG files the way reel decodes gulp frames: prints one line per file,
//! `name<TAB>accept` or `name<TAB>reject<TAB>why`. Used by `tools/jpeg_sweep.py` to compare
//! reel's verdicts with the reference's (simplejpeg).
//!
//! ```text
//! jpeg_judge [--lenient] DIR_OR_FILE...
//! ```

use std::path::{Path, PathBuf};

use reel_gulp::{FrameDecode, JpegStrictness, decode_jpeg_with};

fn judge(path: &Path, strictness: JpegStrictness) {
    let name = path.file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let verdict = std::fs::read(path).map_err(|e| e.to_string()).and_then(|b| {
        decode_jpeg_with(&b, FrameDecode::Auto, strictness).map_err(|e| e.message().to_string())
    });
    match verdict {
        Ok(_) => println!("{name}\taccept"),
        Err(why) => println!("{name}\treject\t{}", why.replace(['\t', '\n'], " ")),
    }
}

fn main() {
    let mut strictness = JpegStrictness::Strict;
    let mut paths: Vec<PathBuf> = Vec::new();
    for arg in std::env::args_os().skip(1) {
        if arg == "--lenient" {
            strictness = JpegStrictness::Lenient;
        } else {
            paths.push(arg.into());
        }
    }
    if paths.is_empty() {
        eprintln!("usage: jpeg_judge [--lenient] DIR_OR_FILE...");
        std::process::exit(2);
    }
    for p in paths {
        if p.is_dir() {
            let mut files: Vec<PathBuf> = match std::fs::read_dir(&p) {
                Ok(entries) => entries.flatten().map(|e| e.path()).collect(),
                Err(e) => {
                    eprintln!("{}: {e}", p.display());
                    std::process::exit(2);
                }
            };
            files.retain(|f| f.extension().is_some_and(|x| x == "jpg"));
            files.sort();
            for f in files {
                judge(&f, strictness);
            }
        } else {
            judge(&p, strictness);
        }
    }
}
