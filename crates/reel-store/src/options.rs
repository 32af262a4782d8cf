//! Settings of a store: builder configuration, retries and request deadlines.

use std::time::Duration;

use object_store::{BackoffConfig, RetryConfig};
use reel_core::{Error, Result};

/// How a store is configured, on top of (or instead of) the environment.
///
/// Every request has a deadline ([`timeout`](Self::timeout)) and failed requests (timeouts,
/// 5xx, throttling, connection resets) are retried with exponential backoff and jitter
/// ([`retry`](Self::retry)), object_store's own retry loop.
#[derive(Debug, Clone, PartialEq)]
pub struct StoreOptions {
    /// Read the store's standard environment variables (`AWS_*` for S3, `GOOGLE_*` for GCS,
    /// `AZURE_*` for Azure) before applying [`config`](Self::config). Default: true.
    pub use_env: bool,
    /// Builder settings by object_store's names, applied after the environment, for example
    /// `("aws_endpoint", "http://127.0.0.1:9000")`, `("aws_region", "eu-west-1")`,
    /// `("allow_http", "true")`, `("google_service_account", "/path/key.json")`.
    /// A name the store does not know is an error, not ignored.
    pub config: Vec<(String, String)>,
    /// Retry policy for failed requests.
    pub retry: RetrySettings,
    /// Deadline of one request, from sending it to the end of its body. Default 30 s.
    pub timeout: Duration,
    /// Deadline for establishing a connection. Default 5 s.
    pub connect_timeout: Duration,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            use_env: true,
            config: Vec::new(),
            retry: RetrySettings::default(),
            timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(5),
        }
    }
}

/// The names [`StoreOptions::set`] takes for reel's own settings rather than the builder's.
pub const REEL_STORE_KEYS: [&str; 4] = ["timeout", "connect_timeout", "retries", "retry_timeout"];

impl StoreOptions {
    /// Adds one builder setting (see [`config`](Self::config)).
    pub fn with(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.config.push((key.into(), value.into()));
        self
    }

    /// Sets one option by name, as a `storage_options` mapping gives it: reel's own
    /// settings ([`REEL_STORE_KEYS`]: `timeout`, `connect_timeout` and `retry_timeout` as
    /// durations such as `"30s"`, `"500ms"` or `"2m"`, `retries` a count), and any other
    /// name as a builder setting by object_store's names (see [`config`](Self::config)),
    /// checked when the store is built. A value that does not parse is an
    /// [`InvalidInput`](reel_core::ErrorKind::InvalidInput) error naming the option.
    pub fn set(&mut self, key: &str, value: &str) -> Result<()> {
        // A duration with its unit ("30s", "500ms"), or a plain number of seconds (what
        // a Python `timeout=30` means).
        let duration = || {
            let text = value.trim();
            let seconds = text.parse::<f64>().ok().filter(|s| s.is_finite() && *s > 0.0);
            let parsed = match seconds {
                Some(s) => Duration::try_from_secs_f64(s).ok(),
                None => humantime::parse_duration(text).ok(),
            };
            let longest = Duration::from_secs(10 * 365 * 86_400);
            parsed.filter(|d| !d.is_zero() && *d <= longest).ok_or_else(|| {
                Error::invalid_input(format!(
                    "storage option {key}={value:?}: not a duration above zero and below ten \
                     years (write it like \"30s\", \"500ms\", \"2m\", or a number of seconds)"
                ))
            })
        };
        match key {
            "timeout" => self.timeout = duration()?,
            "connect_timeout" => self.connect_timeout = duration()?,
            "retry_timeout" => self.retry.retry_timeout = duration()?,
            "retries" => {
                self.retry.max_retries = value.trim().parse().map_err(|_| {
                    Error::invalid_input(format!(
                        "storage option retries={value:?}: not a count (0 or more)"
                    ))
                })?;
            }
            _ => self.config.push((key.to_string(), value.to_string())),
        }
        Ok(())
    }
}

/// Retries with exponential backoff and jitter.
#[derive(Debug, Clone, PartialEq)]
pub struct RetrySettings {
    /// Retries after the first attempt; 0 disables retrying. Default 10.
    pub max_retries: usize,
    /// No retry starts once this much time has passed since the first attempt. Default 3 min.
    pub retry_timeout: Duration,
    /// The first backoff. Default 100 ms.
    pub initial_backoff: Duration,
    /// The largest backoff. Default 15 s.
    pub max_backoff: Duration,
    /// Growth factor of the backoff (each wait is drawn at random up to the grown value).
    /// Default 2.
    pub backoff_base: f64,
}

impl Default for RetrySettings {
    fn default() -> Self {
        RetrySettings {
            max_retries: 10,
            retry_timeout: Duration::from_secs(180),
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(15),
            backoff_base: 2.0,
        }
    }
}

impl RetrySettings {
    pub(crate) fn to_object_store(&self) -> RetryConfig {
        RetryConfig {
            backoff: BackoffConfig {
                init_backoff: self.initial_backoff,
                max_backoff: self.max_backoff,
                base: self.backoff_base,
            },
            max_retries: self.max_retries,
            retry_timeout: self.retry_timeout,
        }
    }
}

/// A duration as object_store's string settings take it (humantime).
pub(crate) fn duration_setting(d: Duration) -> String {
    format!("{}ms", d.as_millis().max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storage_options_set_reels_own_settings_and_pass_the_rest_to_the_builder() {
        let mut options = StoreOptions::default();
        options.set("timeout", "1.5").unwrap();
        assert_eq!(options.timeout, Duration::from_millis(1500));
        options.set("timeout", "2s").unwrap();
        options.set("connect_timeout", "250ms").unwrap();
        options.set("retries", "0").unwrap();
        options.set("retry_timeout", "1m").unwrap();
        options.set("aws_endpoint", "http://127.0.0.1:9000").unwrap();
        assert_eq!(options.timeout, Duration::from_secs(2));
        assert_eq!(options.connect_timeout, Duration::from_millis(250));
        assert_eq!(options.retry.max_retries, 0);
        assert_eq!(options.retry.retry_timeout, Duration::from_secs(60));
        let endpoint = ("aws_endpoint".to_string(), "http://127.0.0.1:9000".to_string());
        assert_eq!(options.config, vec![endpoint]);
        for (key, value) in [
            ("timeout", "soon"),
            ("timeout", "0s"),
            ("timeout", "1e20s"),
            ("timeout", "-3"),
            ("retries", "-1"),
            ("retries", "many"),
        ] {
            let e = options.set(key, value).unwrap_err();
            assert_eq!(e.kind(), reel_core::ErrorKind::InvalidInput);
            assert!(e.to_string().contains(key), "{e}");
        }
    }
}
