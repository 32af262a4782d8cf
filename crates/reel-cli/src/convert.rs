//! `reel convert`: any supported format to any other.

use std::path::PathBuf;

use clap::Args;
use reel::convert::FieldMap;
use reel::{ConvertOptions, Format};
use serde_json::json;

use crate::common::{OpenArgs, parse_codec};
use crate::progress::bar;

/// Options of `reel convert`.
#[derive(Args, Debug)]
pub struct ConvertArgs {
    /// The dataset to read.
    src: PathBuf,
    /// Where to write the new dataset (must not exist unless --force; with --shard, a
    /// directory that receives one part). Never the source or a path inside it.
    dst: PathBuf,
    /// Target format and generation: ffrecord, syrah, ofrecord, granular (granular 0.24's
    /// `<key>.bag` + `<key>.idx` layout, whatever the source), bags (bags 0.5.1's refs
    /// layout, only when asked for), gulp, parquet or arrow (an Arrow IPC file).
    #[arg(long)]
    to: String,
    /// Write only part K of N (e.g. `3/8`), so N processes can convert one dataset at once.
    /// Parts already in DST that were cut for another N or from another source are
    /// refused (a few of them are opened to check their record counts).
    #[arg(long)]
    shard: Option<String>,
    /// OFRecord, Granular and bags targets: files of about SIZE (K, M, G suffixes, e.g.
    /// 256M): OFRecord parts of at most SIZE (a larger record gets a part of its own), a
    /// sharded Granular dataset (000000/, 000001/, …) of shards of about SIZE. To a bucket,
    /// each part or shard goes up as soon as the next one starts, so local disk holds a few
    /// of them, not the dataset.
    #[arg(long, value_name = "SIZE", conflicts_with = "shard")]
    part_size: Option<String>,
    /// Refuse the conversion if the target would lose anything.
    #[arg(long)]
    lossless_only: bool,
    /// Replace an existing DST (only once the new dataset is complete).
    #[arg(long)]
    force: bool,
    /// Write only these fields, in this order (e.g. `--fields image,label`).
    #[arg(long, value_delimiter = ',')]
    fields: Option<Vec<String>>,
    /// Leave these fields out (e.g. `--drop meta,debug`).
    #[arg(long, value_delimiter = ',')]
    drop: Vec<String>,
    /// Write field OLD as NEW (repeatable: `--rename img=image --rename y=label`).
    #[arg(long, value_name = "OLD=NEW")]
    rename: Vec<String>,
    /// Store all fields of each record as one bytes value `data`, in msgpack or json
    /// (`--payload msgpack|json` reads them back).
    #[arg(long, value_name = "CODEC")]
    pack: Option<String>,
    /// Store map, list and tree fields the target has no type for as msgpack or json bytes.
    #[arg(long, value_name = "CODEC")]
    encode_nested: Option<String>,
    /// Granular and bags targets: write these fields as msgpack, which holds null (a null
    /// cell of a Parquet or Arrow column) beside any other value (e.g. `--nullable caption`).
    #[arg(long, value_delimiter = ',', value_name = "FIELDS")]
    nullable: Vec<String>,
    /// Run the conversion on a Ray cluster, one Ray task per part (needs a Python with the
    /// reel package and ray[data]: `$REEL_PYTHON`, else `python3`). `--ray` joins the cluster
    /// Ray finds (`RAY_ADDRESS`, a local `ray start`) or starts a local one; `--ray=ADDRESS`
    /// joins that one. DST becomes a multi-part dataset with the local convert's records.
    #[arg(
        long,
        value_name = "ADDRESS",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "",
        conflicts_with_all = [
            "shard", "part_size", "lossless_only", "fields", "drop", "rename", "pack", "encode_nested", "nullable",
            "backend", "payload", "payload_field", "lenient_jpeg", "compression",
            "row_group_rows", "row_group_bytes", "batch_bytes", "sample", "schema_from",
            "with_index", "with_location", "large_types",
        ]
    )]
    ray: Option<String>,
    /// With --ray: how many parts (Ray tasks); by default one per 256 MiB of source, at
    /// least one per CPU of the cluster.
    #[arg(long, requires = "ray")]
    ray_parts: Option<u64>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
    #[command(flatten)]
    open: OpenArgs,
    #[command(flatten)]
    arrow: Box<crate::arrow_args::ArrowArgs>,
}

fn parse_shard(s: &str) -> reel::Result<(u64, u64)> {
    let bad = || reel::Error::invalid_input(format!("--shard {s:?}: expected K/N with K < N"));
    let (k, n) = s.split_once('/').ok_or_else(bad)?;
    let (k, n): (u64, u64) =
        (k.trim().parse().map_err(|_| bad())?, n.trim().parse().map_err(|_| bad())?);
    if n == 0 || k >= n {
        return Err(bad());
    }
    Ok((k, n))
}

/// Runs `reel convert`.
pub fn run(args: &ConvertArgs) -> reel::Result<()> {
    if let Some(address) = &args.ray {
        return crate::ray::RayConvert {
            src: &args.src,
            dst: &args.dst,
            to: &args.to,
            address: Some(address.as_str()).filter(|a| !a.is_empty()),
            parts: args.ray_parts,
            overwrite: args.force,
            no_verify: args.open.no_verify,
            json: args.json,
        }
        .run();
    }
    let to = Format::from_name(&args.to).ok_or_else(|| {
        reel::Error::invalid_input(format!(
            "unknown format {:?} (choose from ffrecord, syrah, ofrecord, granular, bags, gulp, parquet, arrow)",
            args.to
        ))
    })?;
    let mut options = ConvertOptions::new(to);
    options.open = args.open.options()?;
    // --retries holds for the requests that write as for those that read.
    options.output_store.set("retries", &args.open.retries.to_string())?;
    options.lossless_only = args.lossless_only;
    options.overwrite = args.force;
    options.fields.keep = args.fields.clone();
    options.fields.drop = args.drop.clone();
    options.fields.rename =
        args.rename.iter().map(|r| FieldMap::parse_rename(r)).collect::<reel::Result<_>>()?;
    options.pack = args.pack.as_deref().map(|c| parse_codec(c, "--pack")).transpose()?;
    options.encode_nested =
        args.encode_nested.as_deref().map(|c| parse_codec(c, "--encode-nested")).transpose()?;
    options.nullable = args.nullable.clone();
    options.arrow = args.arrow.options(to)?;
    if let Some(s) = &args.shard {
        let (k, n) = parse_shard(s)?;
        options = options.shard(k, n);
    }
    if let Some(size) = &args.part_size {
        let bytes = reel::store::parse_size(size).ok_or_else(|| {
            reel::Error::invalid_input(format!(
                "--part-size {size:?}: expected a size such as 256M"
            ))
        })?;
        options = options.part_size(bytes)?;
    }
    let pb = bar(0, "convert", args.quiet || args.json);
    let report = reel::convert::convert_with_progress(
        &args.src,
        &args.dst,
        &options,
        &mut |done, total| {
            pb.set_length(total);
            pb.set_position(done);
        },
    )?;
    pb.finish_and_clear();
    if args.json {
        let out = json!({
            "from": report.from.name(), "to": report.to.name(), "records": report.records, "bytes": report.bytes,
            "outputs": report.outputs.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
            "losses": report.losses.iter().map(|l| json!({"field": l.field, "what": l.what})).collect::<Vec<_>>(),
        });
        outln!("{out}");
    } else {
        for l in &report.losses {
            outln!("lost: {l}");
        }
        let outputs: Vec<String> = report.outputs.iter().map(|p| p.display().to_string()).collect();
        outln!(
            "converted {} records from {} to {} ({} bytes): {}",
            report.records,
            report.from,
            report.to,
            report.bytes,
            outputs.join(", ")
        );
    }
    Ok(())
}
