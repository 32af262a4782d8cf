//! `reel demo`: the whole tour on data the command makes itself.

use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::Args;
use reel::ffrecord::FfrecordWriter;
use reel::{Backend, OpenOptions, RecordBatch, RecordSource};

use crate::synth::{SplitMix, payload};
use crate::table::Table;

/// Options of `reel demo`.
#[derive(Args, Debug)]
pub struct DemoArgs {
    /// Number of records to generate.
    #[arg(long, default_value_t = 20_000)]
    records: u64,
    /// Largest record, in bytes (sizes are spread between 0 and this).
    #[arg(long, default_value_t = 16 * 1024)]
    max_record: usize,
    /// Records per random batch.
    #[arg(long, default_value_t = 256)]
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

fn mb_per_s(bytes: u64, secs: f64) -> String {
    format!("{:.0}", bytes as f64 / 1e6 / secs.max(1e-9))
}

/// Runs the demo.
pub fn run(args: &DemoArgs) -> reel::Result<()> {
    let work = work_dir(args.dir.as_deref())?;
    println!(
        "reel demo: {} records of 0..{} bytes in {}",
        args.records,
        args.max_record,
        work.path.display()
    );

    let path = work.path.join("demo.ffr");
    let started = Instant::now();
    let mut writer = FfrecordWriter::create_counted(&path)?;
    let mut total_bytes = 0u64;
    for i in 0..args.records {
        let p = payload(i, args.max_record);
        total_bytes += p.len() as u64;
        writer.write_one(&p)?;
    }
    let summary = writer.finish()?;
    let write_secs = started.elapsed().as_secs_f64();
    println!(
        "wrote ffrecord: {} records, {} bytes in {:.2} s ({} MB/s)\n",
        summary.records,
        summary.bytes,
        write_secs,
        mb_per_s(summary.bytes, write_secs)
    );

    let mut table = Table::new(&[
        "format",
        "backend",
        "records",
        "batches",
        "read MB/s",
        "records/s",
        "verified",
    ]);
    for backend in Backend::core_backends() {
        let source = reel::open_with(&path, &OpenOptions::default().backend(backend.clone()))?;
        let row = random_batches(&*source, args)?;
        table.row(vec![
            source.info().format.to_string(),
            backend.name().to_string(),
            row.records.to_string(),
            row.batches.to_string(),
            mb_per_s(total_bytes, row.secs),
            format!("{:.0}", row.records as f64 / row.secs.max(1e-9)),
            if row.mismatches == 0 { "all".to_string() } else { format!("{} BAD", row.mismatches) },
        ]);
        if row.mismatches != 0 {
            print!("{}", table.render());
            return Err(reel::Error::corrupt(format!(
                "{} records read back wrong",
                row.mismatches
            )));
        }
    }
    print!("{}", table.render());
    println!(
        "\nevery record was read once, in random batches of {}, and compared with what was written",
        args.batch
    );
    Ok(())
}

struct Measured {
    records: u64,
    batches: u64,
    secs: f64,
    mismatches: u64,
}

fn random_batches(source: &dyn RecordSource, args: &DemoArgs) -> reel::Result<Measured> {
    let order = SplitMix::new(42).permutation(source.len());
    let mut batch = RecordBatch::new();
    let mut m = Measured { records: 0, batches: 0, secs: 0.0, mismatches: 0 };
    for chunk in order.chunks(args.batch.max(1)) {
        // Only the read is timed; checking the bytes is the demo's own cost.
        let started = Instant::now();
        source.read_batch_into(chunk, &mut batch)?;
        m.secs += started.elapsed().as_secs_f64();
        for record in batch.iter() {
            let got = record.bytes(reel::RAW_FIELD).unwrap_or_default();
            if got != payload(record.index(), args.max_record).as_slice() {
                m.mismatches += 1;
            }
        }
        m.records += chunk.len() as u64;
        m.batches += 1;
    }
    Ok(m)
}
