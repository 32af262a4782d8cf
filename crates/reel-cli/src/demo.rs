//! `reel demo`: the whole tour on data the command makes itself.
//!
//! 1. Generates a small multimodal dataset (bytes, text, numbers, n-d arrays, maps, JPEG
//!    frames) and writes it in all five formats.
//! 2. Converts across them: every format into Granular and back, FFRecord through
//!    Syrah and OFRecord, checking that the round trips the mapping table calls lossless
//!    give the same records.
//! 3. Verifies every dataset written (structures and checksums).
//! 4. Reads every dataset in random batches on every backend, checking every record.

use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::Args;
use reel::{
    ConvertOptions, CreateOptions, Format, OpenOptions, Record, RecordBatch, RecordSource,
    RecordSourceExt,
};

use crate::table::Table;
use reel::synth::{SplitMix, record};

/// Options of `reel demo`.
#[derive(Args, Debug)]
pub struct DemoArgs {
    /// Records per dataset.
    #[arg(long, default_value_t = 2_000)]
    records: u64,
    /// Largest bytes payload per record.
    #[arg(long, default_value_t = 8 * 1024)]
    max_record: usize,
    /// Records per random batch.
    #[arg(long, default_value_t = 64)]
    batch: usize,
    /// Where to write the datasets (default: a fresh directory under /dev/shm or the
    /// system temp directory, removed afterwards).
    #[arg(long)]
    dir: Option<PathBuf>,
}

/// A directory removed when dropped, unless the user chose it.
struct WorkDir {
    path: PathBuf,
    remove: bool,
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        if self.remove {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

fn work_dir(chosen: Option<&Path>) -> reel::Result<WorkDir> {
    let (path, remove) = match chosen {
        Some(p) => (p.to_path_buf(), false),
        None => {
            let shm = Path::new("/dev/shm");
            let base = if shm.is_dir() { shm.to_path_buf() } else { std::env::temp_dir() };
            (base.join(format!("reel-demo-{}", std::process::id())), true)
        }
    };
    std::fs::create_dir_all(&path)
        .map_err(|e| reel::Error::io(e, "cannot create work directory").with_path(&path))?;
    Ok(WorkDir { path, remove })
}

const FORMATS: [Format; 5] =
    [Format::Ffrecord, Format::Syrah, Format::Ofrecord, Format::Granular, Format::Gulp];

fn dataset_name(format: Format) -> String {
    match format {
        Format::Ffrecord => "demo.ffr".into(),
        Format::Syrah => "demo.syr".into(),
        other => format!("demo-{other}"),
    }
}

/// A record's fields sorted by name, so that formats storing fields by name compare equal.
fn sorted(r: &Record) -> Vec<(String, Record)> {
    let mut v: Vec<(String, Record)> =
        r.iter().map(|(n, v)| (n.to_string(), Record::new().with_value("v", v))).collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

fn same_records(a: &dyn RecordSource, b: &dyn RecordSource) -> reel::Result<bool> {
    if a.len() != b.len() {
        return Ok(false);
    }
    for i in 0..a.len() {
        if sorted(&a.read(i)?) != sorted(&b.read(i)?) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Runs the demo.
pub fn run(args: &DemoArgs) -> reel::Result<()> {
    // A batch of no records reads nothing: refused up front, not quietly taken as one.
    if args.batch == 0 {
        return Err(reel::Error::invalid_input("--batch 0: --batch must be at least 1"));
    }
    let started = Instant::now();
    let work = work_dir(args.dir.as_deref())?;
    outln!("reel demo: {} records per format in {}\n", args.records, work.path.display());
    // Ctrl-C stops the demo at its next step (a record, a batch, a conversion's batch), so
    // that its work directory is removed; killed, it would stay in /dev/shm, holding memory.

    // 1. Write every format.
    let mut written = Table::new(&["format", "records", "bytes", "write MB/s"]);
    let mut paths = Vec::new();
    for format in FORMATS {
        let path = work.path.join(dataset_name(format));
        let t = Instant::now();
        // The generated records the reads below are compared with (`record`); generating
        // stops at the next record on Ctrl-C.
        let s = reel::synth::generate(
            &path,
            format,
            args.records,
            args.max_record,
            &CreateOptions::default(),
            &mut |_| {},
        )?;
        let secs = t.elapsed().as_secs_f64();
        written.row(vec![
            format.to_string(),
            s.records.to_string(),
            s.bytes.to_string(),
            format!("{:.0}", s.bytes as f64 / 1e6 / secs),
        ]);
        paths.push((format, path));
    }
    outln!("1. written\n{}", written.render());

    // 2. Convert across formats and back.
    let mut conversions = Table::new(&["conversion", "records", "losses stated", "round trip"]);
    let routes: Vec<(Format, Vec<Format>)> = vec![
        (Format::Ffrecord, vec![Format::Syrah, Format::Ffrecord]),
        (Format::Ffrecord, vec![Format::Ofrecord, Format::Ffrecord]),
        (Format::Syrah, vec![Format::Granular, Format::Syrah]),
        (Format::Ofrecord, vec![Format::Granular, Format::Ofrecord]),
        (Format::Gulp, vec![Format::Granular, Format::Gulp]),
        (Format::Granular, vec![Format::Granular]),
    ];
    for (k, (from, hops)) in routes.iter().enumerate() {
        let start =
            &paths.iter().find(|(f, _)| f == from).map(|(_, p)| p.clone()).unwrap_or_default();
        let mut current = start.clone();
        let mut names = vec![from.to_string()];
        let mut losses = 0;
        let mut records = 0;
        for (h, to) in hops.iter().enumerate() {
            let next = work.path.join(format!("conv-{k}-{h}-{to}"));
            let report = reel::convert(&current, &next, &ConvertOptions::new(*to))?;
            losses += report.losses.len();
            records = report.records;
            names.push(to.to_string());
            current = next;
        }
        let same = same_records(&*reel::open(start)?, &*reel::open(&current)?)?;
        conversions.row(vec![
            names.join(" → "),
            records.to_string(),
            losses.to_string(),
            if same { "same records" } else { "DIFFERENT" }.into(),
        ]);
        if !same {
            out!("{}", conversions.render());
            return Err(reel::Error::corrupt(format!(
                "round trip {} changed the records",
                names.join(" → ")
            )));
        }
    }
    outln!(
        "2. converted (losses are stated, e.g. bytes stored as a uint8 array in Syrah; the records come back)\n{}",
        conversions.render()
    );

    // 3. Verify.
    let mut verified = Table::new(&["format", "records", "good", "problems"]);
    for (format, path) in &paths {
        let report = reel::verify(path, &OpenOptions::default())?;
        verified.row(vec![
            format.to_string(),
            report.records.to_string(),
            report.good_records.to_string(),
            report.problems.len().to_string(),
        ]);
        if !report.is_clean() {
            out!("{}", verified.render());
            return Err(reel::Error::corrupt(format!("{format}: {}", report.problems[0])));
        }
    }
    outln!("3. verified\n{}", verified.render());

    // 4. Random batches on every backend.
    let mut reads =
        Table::new(&["format", "backend", "records", "batches", "records/s", "MB/s", "checked"]);
    for (format, path) in &paths {
        let expected: Vec<Vec<(String, Record)>> =
            (0..args.records).map(|i| sorted(&record(*format, i, args.max_record))).collect();
        for name in reel::backend_names() {
            let Some(backend) = reel::backend_by_name(name) else { continue };
            let source = reel::open_with(path, &OpenOptions::default().backend(backend))?;
            let m = random_batches(&*source, args, &expected)?;
            reads.row(vec![
                format.to_string(),
                source.backend_name().to_string(),
                m.records.to_string(),
                m.batches.to_string(),
                format!("{:.0}", m.records as f64 / m.secs.max(1e-9)),
                format!("{:.0}", m.bytes as f64 / 1e6 / m.secs.max(1e-9)),
                if m.mismatches == 0 { "all".into() } else { format!("{} BAD", m.mismatches) },
            ]);
            if m.mismatches != 0 {
                out!("{}", reads.render());
                return Err(reel::Error::corrupt(format!(
                    "{format}: {} records read back wrong",
                    m.mismatches
                )));
            }
        }
    }
    outln!(
        "4. read in random batches of {} on every backend, every record compared with what was written\n{}",
        args.batch,
        reads.render()
    );
    outln!("done in {:.1} s", started.elapsed().as_secs_f64());
    Ok(())
}

struct Measured {
    records: u64,
    batches: u64,
    bytes: u64,
    secs: f64,
    mismatches: u64,
}

fn random_batches(
    source: &dyn RecordSource,
    args: &DemoArgs,
    expected: &[Vec<(String, Record)>],
) -> reel::Result<Measured> {
    let order = SplitMix::new(42).permutation(source.len());
    let mut batch = RecordBatch::new();
    let mut m = Measured { records: 0, batches: 0, bytes: 0, secs: 0.0, mismatches: 0 };
    let cancel = reel::io::cancel::CancelCheck::current();
    for chunk in order.chunks(args.batch) {
        cancel.stop_if_cancelled("the demo")?;
        // Only the read is timed; checking the records is the demo's own cost.
        let t = Instant::now();
        source.read_batch_into(chunk, &mut batch)?;
        m.secs += t.elapsed().as_secs_f64();
        m.bytes += batch.buffer_len() as u64;
        for r in batch.iter() {
            if expected.get(r.index() as usize) != Some(&sorted(&r.to_owned())) {
                m.mismatches += 1;
            }
        }
        m.records += chunk.len() as u64;
        m.batches += 1;
    }
    Ok(m)
}
