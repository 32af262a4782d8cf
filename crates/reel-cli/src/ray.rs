//! `reel convert --ray`: the conversion run on a Ray cluster by the Python package.
//!
//! Ray is a Python system, so the command hands the conversion to `python -m reel.ray_cli`
//! (the `reel` Python package with `ray[data]` installed), which splits the records into
//! parts and runs reel's own conversion of each part as a Ray task (`reel.ray.convert`).
//! The interpreter is `$REEL_PYTHON` when set, else `python3` on the `PATH`.

use std::ffi::OsString;
use std::process::Command;

use reel::Error;

/// The environment variable naming the Python interpreter to run.
pub const PYTHON_VAR: &str = "REEL_PYTHON";

/// What `reel convert --ray` passes on.
pub struct RayConvert<'a> {
    /// The dataset to read.
    pub src: &'a std::path::Path,
    /// Where the converted dataset appears.
    pub dst: &'a std::path::Path,
    /// The target format's name.
    pub to: &'a str,
    /// The cluster's address (`None`: the one Ray finds, or a local one).
    pub address: Option<&'a str>,
    /// How many parts (Ray tasks); `None` lets the package choose.
    pub parts: Option<u64>,
    /// Replace an existing destination once the new dataset is complete.
    pub overwrite: bool,
    /// Skip checksum verification while reading.
    pub no_verify: bool,
    /// Print the report as JSON.
    pub json: bool,
}

impl RayConvert<'_> {
    /// The interpreter and its arguments.
    pub fn command_line(&self) -> (OsString, Vec<OsString>) {
        let python = std::env::var_os(PYTHON_VAR).unwrap_or_else(|| "python3".into());
        let mut args: Vec<OsString> = vec![
            "-m".into(),
            "reel.ray_cli".into(),
            "convert".into(),
            self.src.into(),
            self.dst.into(),
            "--to".into(),
            self.to.into(),
        ];
        if let Some(address) = self.address {
            args.extend(["--address".into(), address.into()]);
        }
        if let Some(parts) = self.parts {
            args.extend(["--parts".into(), parts.to_string().into()]);
        }
        for (on, flag) in [
            (self.overwrite, "--overwrite"),
            (self.no_verify, "--no-verify"),
            (self.json, "--json"),
        ] {
            if on {
                args.push(flag.into());
            }
        }
        (python, args)
    }

    /// Runs the conversion; the Python side prints its report and its errors.
    pub fn run(&self) -> reel::Result<()> {
        let (python, args) = self.command_line();
        let status = Command::new(&python).args(&args).status().map_err(|e| {
            Error::io(
                e,
                format!(
                    "cannot run {} for --ray (set {PYTHON_VAR} to a Python with reel and ray[data])",
                    python.to_string_lossy()
                ),
            )
        })?;
        if status.success() {
            Ok(())
        } else {
            Err(Error::new(
                reel::ErrorKind::Io,
                format!("the Ray conversion failed ({} {status})", python.to_string_lossy()),
            ))
        }
    }
}
