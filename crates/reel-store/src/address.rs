//! Where a dataset lives: a local path or an object-store URL.

use std::fmt;
use std::path::{Path, PathBuf};

use object_store::ObjectStoreScheme;
use object_store::path::Path as ObjectPath;
use reel_core::{Error, Result};
use url::Url;

/// The kind of object store a URL names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StoreKind {
    /// Amazon S3 and S3-compatible stores (`s3://bucket/key`, `s3a://`, and
    /// `https://…amazonaws.com/…` or Cloudflare R2 addresses).
    S3,
    /// Google Cloud Storage (`gs://bucket/key`).
    Gcs,
    /// Azure Blob Storage and Data Lake (`az://`, `azure://`, `adl://`, `abfs://`, `abfss://`,
    /// and `https://…blob.core.windows.net/…` / `…dfs.core.windows.net/…`).
    Azure,
    /// Any HTTP(S) server that answers `GET` with `Range` (read-only unless it speaks WebDAV).
    Http,
}

impl StoreKind {
    /// A short lowercase name for messages: `s3`, `gcs`, `azure`, `http`.
    pub fn as_str(self) -> &'static str {
        match self {
            StoreKind::S3 => "s3",
            StoreKind::Gcs => "gcs",
            StoreKind::Azure => "azure",
            StoreKind::Http => "http",
        }
    }
}

impl fmt::Display for StoreKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An object-store address, split into the store (bucket, container or HTTP origin) and the
/// key prefix inside it.
///
/// ```
/// use reel_store::{ObjectUrl, StoreKind};
/// let u = ObjectUrl::parse("s3://bucket/datasets/train").unwrap();
/// assert_eq!(u.kind(), StoreKind::S3);
/// assert_eq!(u.store_url(), "s3://bucket");
/// assert_eq!(u.path().as_ref(), "datasets/train");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectUrl {
    url: Url,
    kind: StoreKind,
    path: ObjectPath,
}

impl ObjectUrl {
    /// Parses an object-store URL. Local addresses (`file://`, plain paths) are refused here;
    /// [`Address::parse`] takes both.
    pub fn parse(text: &str) -> Result<ObjectUrl> {
        match Address::parse(text)? {
            Address::Remote(url) => Ok(url),
            Address::Local(_) => {
                Err(Error::invalid_input(format!("{text}: a local path, not an object-store URL")))
            }
        }
    }

    fn from_url(url: Url, text: &str) -> Result<ObjectUrl> {
        // Azure Data Lake addresses name the file system there (`abfs://fs@account…`).
        let names_a_file_system = matches!(url.scheme(), "abfs" | "abfss");
        if url.password().is_some() || (!url.username().is_empty() && !names_a_file_system) {
            // Said without them: a message must not carry a secret into logs.
            let mut shown = url.clone();
            let _ = shown.set_password(None);
            let _ = shown.set_username("");
            return Err(Error::invalid_input(format!(
                "{shown}: credentials in the address are not read (they would be ignored \
                 and echoed in messages); give them in the environment or as storage options"
            )));
        }
        let (scheme, path) = ObjectStoreScheme::parse(&url).map_err(|e| {
            Error::invalid_input(format!("{text}: not an object-store address ({e})"))
        })?;
        let kind = match scheme {
            ObjectStoreScheme::AmazonS3 => StoreKind::S3,
            ObjectStoreScheme::GoogleCloudStorage => StoreKind::Gcs,
            ObjectStoreScheme::MicrosoftAzure => StoreKind::Azure,
            ObjectStoreScheme::Http => StoreKind::Http,
            other => {
                return Err(Error::unsupported(format!(
                    "{text}: the {other:?} scheme is not an object store reel opens"
                )));
            }
        };
        if url.host_str().is_none_or(str::is_empty) {
            return Err(Error::invalid_input(format!(
                "{text}: names no bucket, container or host"
            )));
        }
        if url.query().is_some() || url.fragment().is_some() {
            return Err(Error::invalid_input(format!(
                "{text}: object-store addresses take no query or fragment \
                 (pass settings as store options)"
            )));
        }
        Ok(ObjectUrl { url, kind, path })
    }

    /// The store this URL lives in.
    pub fn kind(&self) -> StoreKind {
        self.kind
    }

    /// The whole URL as given (normalised by URL parsing).
    pub fn url(&self) -> &Url {
        &self.url
    }

    /// The key prefix of the dataset inside its store (no leading or trailing `/`).
    pub fn path(&self) -> &ObjectPath {
        &self.path
    }

    /// The address of the store itself: the URL without the key path, e.g. `s3://bucket` or
    /// `http://127.0.0.1:9000`. For `https://` addresses of S3 and Azure the bucket or
    /// container stays in it, because the builders read it from there.
    pub fn store_url(&self) -> String {
        let root = &self.url[..url::Position::BeforePath];
        match self.kind {
            StoreKind::S3 | StoreKind::Azure if matches!(self.url.scheme(), "http" | "https") => {
                // https://host/bucket/key… : keep the first segment (the bucket or container).
                match self.url.path_segments().and_then(|mut s| s.next()) {
                    Some(first) if !first.is_empty() && !is_virtual_host(&self.url) => {
                        format!("{root}/{first}")
                    }
                    _ => root.to_string(),
                }
            }
            _ => root.to_string(),
        }
    }

    /// The location of this URL for [`RemoteStore`](crate::RemoteStore): the store's
    /// address followed by the object key, as the key is, not percent-encoded.
    ///
    /// The key is what the URL's path decodes to (`%20` a space, `%25` a `%`), the key a
    /// writer writes at this URL; the URL's own text would name another object whenever it
    /// holds an escape (`my%20data.ffr` for the object `my data.ffr`).
    ///
    /// ```
    /// use reel_store::ObjectUrl;
    /// let u = ObjectUrl::parse("s3://bucket/my%20data/v%2541.ffr").unwrap();
    /// assert_eq!(u.location().to_str(), Some("s3://bucket/my data/v%41.ffr"));
    /// ```
    pub fn location(&self) -> PathBuf {
        let root = self.store_url();
        let root = root.trim_end_matches('/');
        if self.path.as_ref().is_empty() {
            PathBuf::from(root)
        } else {
            PathBuf::from(format!("{root}/{}", self.path))
        }
    }

    /// This URL with `key` (relative, `/`-separated) appended to its path.
    pub fn join(&self, key: &str) -> Result<ObjectUrl> {
        let mut url = self.url.clone();
        {
            let mut segments = url
                .path_segments_mut()
                .map_err(|()| Error::invalid_input(format!("{}: cannot hold a path", self.url)))?;
            segments.pop_if_empty();
            for part in key.split('/').filter(|p| !p.is_empty()) {
                segments.push(part);
            }
        }
        let text = url.to_string();
        ObjectUrl::from_url(url, &text)
    }
}

/// An S3 `https://bucket.s3.region.amazonaws.com/key` address names the bucket in the host.
fn is_virtual_host(url: &Url) -> bool {
    url.host_str().is_some_and(|h| h.ends_with("amazonaws.com") && !h.starts_with("s3"))
}

impl fmt::Display for ObjectUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.url.as_str())
    }
}

/// The URL of a location as a store names its files (`s3://bucket/my data/q%41.ffr`: the
/// store's address, then the object key as it is), written back as a URL with the key
/// percent-encoded (`s3://bucket/my%20data/q%2541.ffr`), so that opening it reaches the
/// same object: [`ObjectUrl::location`] undone. Text that is no URL is given back as it is.
pub fn location_url(location: &str) -> String {
    let Some((scheme, rest)) = location.split_once("://") else { return location.to_string() };
    let (host, key) = rest.split_once('/').unwrap_or((rest, ""));
    let Ok(mut url) = Url::parse(&format!("{scheme}://{host}/")) else {
        return location.to_string();
    };
    if let Ok(mut segments) = url.path_segments_mut() {
        segments.pop_if_empty();
        for part in key.split('/').filter(|p| !p.is_empty()) {
            segments.push(part);
        }
    }
    url.to_string()
}

/// A dataset address as users write it: a plain path or `file://` URL (local), or an
/// object-store URL (`s3://`, `gs://`, `az://`, `abfs://`, `http(s)://` …).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Address {
    /// A path on the local file system.
    Local(PathBuf),
    /// An object in (or prefix of) an object store.
    Remote(ObjectUrl),
}

impl Address {
    /// Parses `text`. Anything without a `scheme://` prefix is a local path, so Windows drive
    /// letters and names with colons stay paths; `file://` URLs become local paths.
    ///
    /// ```
    /// use reel_store::Address;
    /// assert!(matches!(Address::parse("data/train.ffr").unwrap(), Address::Local(_)));
    /// assert!(matches!(Address::parse("file:///tmp/x").unwrap(), Address::Local(_)));
    /// assert!(matches!(Address::parse("gs://b/k").unwrap(), Address::Remote(_)));
    /// ```
    pub fn parse(text: &str) -> Result<Address> {
        if url_scheme(text).is_none() {
            // No "scheme://" prefix: a path, even a strange one like "some dir://x".
            return Ok(Address::Local(PathBuf::from(text)));
        }
        let url = Url::parse(text)
            .map_err(|e| Error::invalid_input(format!("{text}: not a valid URL ({e})")))?;
        if url.scheme() == "file" {
            if url.host_str().is_some_and(|h| !h.is_empty() && h != "localhost") {
                return Err(Error::unsupported(format!(
                    "{text}: file:// URLs on another host are not supported"
                )));
            }
            let path = url
                .to_file_path()
                .map_err(|()| Error::invalid_input(format!("{text}: not a local file path")))?;
            return Ok(Address::Local(path));
        }
        ObjectUrl::from_url(url, text).map(Address::Remote)
    }

    /// The local path, if this is one.
    pub fn as_local(&self) -> Option<&Path> {
        match self {
            Address::Local(p) => Some(p),
            Address::Remote(_) => None,
        }
    }

    /// The object-store URL, if this is one.
    pub fn as_remote(&self) -> Option<&ObjectUrl> {
        match self {
            Address::Local(_) => None,
            Address::Remote(u) => Some(u),
        }
    }
}

impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Address::Local(p) => write!(f, "{}", p.display()),
            Address::Remote(u) => u.fmt(f),
        }
    }
}

/// Refuses to write at `dest` what is read from `input` when both are object-store
/// addresses in one store and one of them lies in the other, as
/// [`check_destination`](reel_core::paths::check_destination) refuses it for local paths:
/// the same dataset, a destination inside the input, or one holding it. Replacing such a
/// destination deletes the input's objects while they are being read. Keys are compared
/// segment by segment after `.` and `..` segments and empty ones are resolved, so spellings
/// of one prefix (`s3a://` for `s3://`, `b/./ds`, `b/ds/../ds`, a trailing `/`) are one
/// address. Addresses that are not both remote are left to the local check.
pub fn check_remote_destination(dest: &str, input: &str) -> Result<()> {
    let (Ok(Address::Remote(d)), Ok(Address::Remote(i))) =
        (Address::parse(dest), Address::parse(input))
    else {
        return Ok(());
    };
    let store = |u: &ObjectUrl| {
        let root = u.store_url();
        let root = root.split_once("://").map_or(root.clone(), |(_, r)| r.to_string());
        (u.kind(), root)
    };
    if store(&d) != store(&i) {
        return Ok(());
    }
    let (dk, ik) = (key_segments(d.url()), key_segments(i.url()));
    let refuse = |why: &str| Err(Error::invalid_input(format!("{dest}: {why} {input}")));
    if dk == ik {
        refuse("the destination is the input")
    } else if dk.starts_with(&ik) {
        refuse("the destination lies inside the input; write outside it:")
    } else if ik.starts_with(&dk) {
        refuse("the destination holds the input, so replacing it would destroy the input:")
    } else {
        Ok(())
    }
}

/// The key of `url` as segments, `.` and empty segments dropped and `..` taking one back;
/// for `https://` addresses whose path starts with the bucket, that segment included (the
/// store comparison tells the stores apart).
fn key_segments(url: &Url) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let segments = url.path_segments().into_iter().flatten();
    for segment in segments {
        match segment {
            "" | "." => {}
            ".." => {
                out.pop();
            }
            s => out.push(s.to_string()),
        }
    }
    out
}

/// True when `text` is an object-store URL rather than a local path or `file://` URL. Does not
/// validate the rest of the address ([`Address::parse`] does).
pub fn is_remote(text: &str) -> bool {
    url_scheme(text).is_some_and(|s| !s.eq_ignore_ascii_case("file"))
}

/// The scheme of `text` if it starts like a URL (`scheme://`, scheme per RFC 3986).
fn url_scheme(text: &str) -> Option<&str> {
    let (scheme, _) = text.split_once("://")?;
    let mut chars = scheme.chars();
    let first_ok = chars.next().is_some_and(|c| c.is_ascii_alphabetic());
    let rest_ok = chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    (first_ok && rest_ok).then_some(scheme)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_destination_overlapping_its_input_is_refused_in_any_spelling() {
        let refused = |dest: &str, input: &str| check_remote_destination(dest, input).is_err();
        assert!(refused("s3://b/ds", "s3://b/ds"));
        assert!(refused("s3a://b/./ds/", "s3://b/ds"));
        assert!(refused("s3://b/x/../ds", "s3://b/ds"));
        assert!(refused("s3://b/ds/spec.json", "s3://b/ds"));
        assert!(refused("s3://b", "s3://b/ds"));
        assert!(refused("s3://b/par", "s3://b/par/train"));
        assert!(!refused("s3://b/ds-other", "s3://b/ds"));
        assert!(!refused("s3://c/ds", "s3://b/ds"));
        assert!(!refused("gs://b/ds", "s3://b/ds"));
        assert!(!refused("s3://b/ds", "/local/ds"));
    }

    #[test]
    fn a_location_becomes_the_url_that_opens_it_again() {
        for (url, location) in [
            ("s3://b/my%20data/q%2541.ffr", "s3://b/my data/q%41.ffr"),
            ("s3://b/k=a%2520b/part-0.parquet", "s3://b/k=a%20b/part-0.parquet"),
            ("http://127.0.0.1:8080/d/x.ffr", "http://127.0.0.1:8080/d/x.ffr"),
            ("gs://b/caf%C3%A9", "gs://b/café"),
        ] {
            let parsed = ObjectUrl::parse(url).unwrap();
            assert_eq!(parsed.location().to_str(), Some(location), "{url}");
            assert_eq!(location_url(location), url, "{location}");
        }
        assert_eq!(location_url("/local/path"), "/local/path");
    }

    #[test]
    fn credentials_in_an_address_are_refused_without_being_repeated() {
        for text in
            ["s3://AKID:TOPSECRET@b/k.ffr", "http://user:TOPSECRET@127.0.0.1:1/x", "gs://me@b/k"]
        {
            let e = Address::parse(text).unwrap_err();
            let said = e.to_string();
            assert!(said.contains("credentials in the address"), "{said}");
            assert!(
                !said.contains("TOPSECRET") && !said.contains("AKID") && !said.contains("me@"),
                "{said}"
            );
        }
    }

    fn remote(text: &str) -> ObjectUrl {
        match Address::parse(text) {
            Ok(Address::Remote(u)) => u,
            other => panic!("{text}: {other:?}"),
        }
    }

    #[test]
    fn schemes_map_to_stores_and_keys() {
        let cases = [
            ("s3://bucket/a/b", StoreKind::S3, "s3://bucket", "a/b"),
            ("s3a://bucket/a", StoreKind::S3, "s3a://bucket", "a"),
            ("gs://bucket/x/y.ffr", StoreKind::Gcs, "gs://bucket", "x/y.ffr"),
            ("az://container/p", StoreKind::Azure, "az://container", "p"),
            (
                "abfs://fs@account.dfs.core.windows.net/d/e",
                StoreKind::Azure,
                "abfs://fs@account.dfs.core.windows.net",
                "d/e",
            ),
            (
                "https://account.blob.core.windows.net/container/k",
                StoreKind::Azure,
                "https://account.blob.core.windows.net/container",
                "k",
            ),
            (
                "https://s3.eu-west-1.amazonaws.com/bucket/k/l",
                StoreKind::S3,
                "https://s3.eu-west-1.amazonaws.com/bucket",
                "k/l",
            ),
            (
                "http://127.0.0.1:8080/data/set",
                StoreKind::Http,
                "http://127.0.0.1:8080",
                "data/set",
            ),
            ("https://example.com/d", StoreKind::Http, "https://example.com", "d"),
            ("s3://bucket", StoreKind::S3, "s3://bucket", ""),
            ("s3://bucket/dir/", StoreKind::S3, "s3://bucket", "dir"),
        ];
        for (text, kind, store, key) in cases {
            let u = remote(text);
            assert_eq!(u.kind(), kind, "{text}");
            assert_eq!(u.store_url(), store, "{text}");
            assert_eq!(u.path().as_ref(), key, "{text}");
        }
    }

    #[test]
    fn plain_paths_and_file_urls_stay_local() {
        for text in ["data/x.ffr", "/abs/x", "C:\\data\\x", "weird:name", "dir with space://x"] {
            assert_eq!(
                Address::parse(text).unwrap(),
                Address::Local(PathBuf::from(text)),
                "{text}"
            );
        }
        assert_eq!(
            Address::parse("file:///tmp/a%20b").unwrap(),
            Address::Local(PathBuf::from("/tmp/a b"))
        );
        assert!(!is_remote("file:///tmp/x"));
        assert!(!is_remote("/tmp/x"));
        assert!(is_remote("s3://b/k"));
    }

    #[test]
    fn bad_addresses_are_invalid_input_or_unsupported() {
        use reel_core::ErrorKind;
        let kind = |t: &str| Address::parse(t).unwrap_err().kind();
        assert_eq!(kind("s3://"), ErrorKind::InvalidInput);
        assert_eq!(kind("ftp://host/x"), ErrorKind::InvalidInput);
        assert_eq!(kind("memory:///x"), ErrorKind::Unsupported);
        assert_eq!(kind("s3://b/k?versionId=1"), ErrorKind::InvalidInput);
        assert_eq!(kind("file://otherhost/x"), ErrorKind::Unsupported);
        assert!(ObjectUrl::parse("local/path").is_err());
    }

    #[test]
    fn join_appends_keys() {
        let u = remote("s3://bucket/base/");
        let j = u.join("part-00000").unwrap();
        assert_eq!(j.path().as_ref(), "base/part-00000");
        assert_eq!(j.to_string(), "s3://bucket/base/part-00000");
        let j = remote("s3://bucket").join("a/b").unwrap();
        assert_eq!(j.path().as_ref(), "a/b");
    }
}
