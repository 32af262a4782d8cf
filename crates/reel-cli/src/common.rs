//! Options and helpers every subcommand shares.

use clap::Args;
use reel::OpenOptions;

/// How to open datasets.
#[derive(Args, Debug, Clone)]
pub struct OpenArgs {
    /// I/O backend: pread, mmap, memory, io_uring, io_uring-direct (also spelt
    /// io_uring+direct, as inspect prints it) or auto.
    #[arg(long, default_value = "auto")]
    pub backend: String,
    /// Skip checksum verification while reading.
    #[arg(long)]
    pub no_verify: bool,
    /// Decode each record's bytes into fields: raw (as bytes), pickle (strict: plain data
    /// and NumPy arrays, no other global is run), msgpack or json (the --pack layouts).
    #[arg(long, default_value = "raw")]
    pub payload: String,
    /// The bytes field to decode with --payload (default: the record's only field); its
    /// decoded value replaces it.
    #[arg(long)]
    pub payload_field: Option<String>,
    /// GulpIO2: accept JPEG frames that decode with damage (today's forgiving decode)
    /// instead of rejecting every frame the reference's decoder (libjpeg-turbo) rejects.
    #[arg(long)]
    pub lenient_jpeg: bool,
    /// Keep record bytes read from object storage in this local directory, so later runs
    /// read them from disk (several processes may share it); default $REEL_CACHE_DIR.
    #[arg(long, value_name = "DIR")]
    pub cache: Option<std::path::PathBuf>,
    /// The most bytes the cache directory holds (with K, M, G or T); default 10G, or
    /// $REEL_CACHE_SIZE.
    #[arg(long, value_name = "SIZE", requires = "cache")]
    pub cache_size: Option<String>,
    /// Object storage: retries of a failed request (a timeout, a refused connection, a 5xx
    /// or throttling answer), with exponential backoff; 0 fails at the first error.
    #[arg(long, value_name = "N", default_value_t = reel::store::RetrySettings::default().max_retries)]
    pub retries: usize,
    /// Read the dataset as this format (ffrecord, syrah, ofrecord, granular, bags, gulp,
    /// parquet, arrow) instead of telling it from its files: for files that say too
    /// little, such as an empty GulpIO2 directory.
    #[arg(long, value_name = "FORMAT")]
    pub format: Option<String>,
}

impl OpenArgs {
    /// The facade's options for these arguments.
    pub fn options(&self) -> reel::Result<OpenOptions> {
        let backend = reel::backend_by_name(&self.backend).ok_or_else(|| {
            reel::Error::invalid_input(format!(
                "unknown backend {:?} (choose from {})",
                self.backend,
                reel::backend_names().join(", ")
            ))
        })?;
        let payload = reel::Payload::from_name(&self.payload).ok_or_else(|| {
            reel::Error::invalid_input(format!(
                "unknown payload {:?} (choose from raw, pickle, msgpack, json)",
                self.payload
            ))
        })?;
        let mut options = OpenOptions::default()
            .backend(backend)
            .verify(!self.no_verify)
            .payload(payload)
            .lenient_jpeg(self.lenient_jpeg);
        options.payload_field = self.payload_field.clone();
        if let Some(name) = &self.format {
            let format = reel::Format::from_name(name).ok_or_else(|| {
                let known: Vec<&str> = reel::Format::enabled().map(reel::Format::name).collect();
                reel::Error::invalid_input(format!(
                    "--format {name:?}: not a format reel reads (choose from {})",
                    known.join(", ")
                ))
            })?;
            options.format = Some(format);
        }
        options.storage_option("retries", &self.retries.to_string())?;
        let bound = self.cache_size.as_deref().map(crate::bench::parse_size).transpose()?;
        if let Some(cache) = reel::store::CacheSettings::from_options(self.cache.as_deref(), bound)?
        {
            options.read_settings.cache = Some(cache);
        }
        Ok(options)
    }
}

/// Parses a codec name for --pack and --encode-nested.
pub fn parse_codec(name: &str, option: &str) -> reel::Result<reel::Codec> {
    reel::Codec::from_name(name).ok_or_else(|| {
        reel::Error::invalid_input(format!("{option} {name:?}: choose msgpack or json"))
    })
}

/// Parses an index list such as `3,7,10-20` (ranges inclusive) against `len` records.
pub fn parse_indices(spec: &str, len: u64) -> reel::Result<Vec<u64>> {
    let bad = |why: &str| reel::Error::invalid_input(format!("index list {spec:?}: {why}"));
    let mut out = Vec::new();
    for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (a.trim(), b.trim()),
            None => (part, part),
        };
        let a: u64 = a.parse().map_err(|_| bad(&format!("{a:?} is not a number")))?;
        let b: u64 = b.parse().map_err(|_| bad(&format!("{b:?} is not a number")))?;
        if a > b {
            return Err(bad(&format!("range {a}-{b} runs backwards")));
        }
        if b >= len {
            return Err(reel::Error::out_of_range(b, len));
        }
        out.extend(a..=b);
    }
    // An empty list (`--index ''`, `--index ,`) is a mistake, not a request for nothing:
    // printing no records and succeeding would hide it.
    if out.is_empty() {
        return Err(bad("names no records (give indices such as 3,7,10-20)"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_lists() {
        assert_eq!(parse_indices("3,7,10-12", 20).unwrap(), vec![3, 7, 10, 11, 12]);
        assert!(parse_indices("5-3", 20).is_err());
        assert_eq!(parse_indices("20", 20).unwrap_err().kind(), reel::ErrorKind::OutOfRange);
        assert!(parse_indices("x", 20).is_err());
        for empty in ["", ",", " , "] {
            let e = parse_indices(empty, 20).unwrap_err();
            assert_eq!(e.kind(), reel::ErrorKind::InvalidInput);
            assert!(e.to_string().contains("names no records"), "{e}");
        }
    }
}
