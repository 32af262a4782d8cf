//! A small HTTP/1.1 file server on loopback for tests: GET with `Range`, HEAD, and WebDAV
//! `PROPFIND` (depth 1) for listings, which is what object_store's HTTP store speaks. It
//! answers faithfully and counts requests; faults are added by
//! `reel_store::testing::FaultProxy` in front of it (tests/object_store_faults.rs).
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// A running server; it stops when dropped.
pub struct HttpServer {
    pub port: u16,
    gets: Arc<AtomicU64>,
    requests: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    /// Whether `PROPFIND` is refused (405), as by a plain file server that speaks no WebDAV.
    no_listings: Arc<AtomicBool>,
}

impl HttpServer {
    /// Serves the directory `root` at `http://127.0.0.1:<port>/`.
    pub fn start(root: &Path) -> HttpServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = HttpServer {
            port,
            gets: Arc::default(),
            requests: Arc::default(),
            stop: Arc::default(),
            no_listings: Arc::default(),
        };
        let root = root.to_path_buf();
        let (gets, requests, stop) =
            (server.gets.clone(), server.requests.clone(), server.stop.clone());
        let no_listings = server.no_listings.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let (root, gets, requests, stop) =
                    (root.clone(), gets.clone(), requests.clone(), stop.clone());
                let no_listings = no_listings.clone();
                std::thread::spawn(move || {
                    serve(stream, &root, &gets, &requests, &stop, &no_listings);
                });
            }
        });
        server
    }

    /// The base URL, without a trailing slash.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// From now on refuses `PROPFIND` with 405, as a plain file server does.
    pub fn refuse_listings(&self) {
        self.no_listings.store(true, Ordering::Relaxed);
    }

    /// GET requests answered so far.
    pub fn gets(&self) -> u64 {
        self.gets.load(Ordering::Relaxed)
    }

    /// Requests of any method so far.
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

struct Request {
    method: String,
    path: String,
    range: Option<(u64, Option<u64>)>,
}

fn read_request(reader: &mut BufReader<TcpStream>) -> Option<Request> {
    let mut line = String::new();
    if reader.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_string();
    let target = parts.next()?.to_string();
    let mut range = None;
    let mut body_len = 0usize;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).ok()? == 0 {
            return None;
        }
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        let (name, value) = header.split_once(':')?;
        let value = value.trim();
        match name.to_ascii_lowercase().as_str() {
            "range" => {
                let spec = value.strip_prefix("bytes=")?;
                let (a, b) = spec.split_once('-')?;
                range = Some((a.parse().ok()?, if b.is_empty() { None } else { b.parse().ok() }));
            }
            "content-length" => body_len = value.parse().ok()?,
            _ => {}
        }
    }
    let mut body = vec![0u8; body_len];
    reader.read_exact(&mut body).ok()?;
    let path = percent_decode(target.split('?').next().unwrap_or(""));
    Some(Request { method, path, range })
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Ok(b) = u8::from_str_radix(&s[i + 1..i + 3], 16)
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn local(root: &Path, url_path: &str) -> Option<PathBuf> {
    let rel = url_path.trim_start_matches('/');
    if rel.split('/').any(|c| c == "..") {
        return None;
    }
    Some(root.join(rel))
}

fn respond(stream: &mut TcpStream, status: &str, headers: &[(&str, String)], body: &[u8]) {
    let mut head = format!("HTTP/1.1 {status}\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    let mut answer = head.into_bytes();
    answer.extend_from_slice(body);
    let _ = stream.write_all(&answer);
}

const LAST_MODIFIED: &str = "Tue, 24 Nov 2026 10:00:00 GMT";

fn serve(
    stream: TcpStream,
    root: &Path,
    gets: &AtomicU64,
    requests: &AtomicU64,
    stop: &AtomicBool,
    no_listings: &AtomicBool,
) {
    // Answers go out as soon as they are written: with Nagle's algorithm a head and body
    // written separately wait for the client's delayed ACK (40 ms) on every request.
    let _ = stream.set_nodelay(true);
    let mut writer = stream.try_clone().unwrap();
    let mut reader = BufReader::new(stream);
    while let Some(req) = read_request(&mut reader) {
        if stop.load(Ordering::Relaxed) {
            return;
        }
        requests.fetch_add(1, Ordering::Relaxed);
        let Some(path) = local(root, &req.path) else {
            respond(&mut writer, "400 Bad Request", &[], b"");
            continue;
        };
        match req.method.as_str() {
            "PROPFIND" if no_listings.load(Ordering::Relaxed) => {
                respond(&mut writer, "405 Method Not Allowed", &[], b"");
            }
            "PROPFIND" => propfind(&mut writer, root, &path, &req.path),
            "HEAD" | "GET" => {
                let Ok(meta) = std::fs::metadata(&path) else {
                    respond(&mut writer, "404 Not Found", &[], b"");
                    continue;
                };
                if !meta.is_file() {
                    respond(&mut writer, "404 Not Found", &[], b"");
                    continue;
                }
                let len = meta.len();
                let common = vec![
                    ("Last-Modified", LAST_MODIFIED.to_string()),
                    ("ETag", format!("\"{len}\"")),
                    ("Accept-Ranges", "bytes".to_string()),
                ];
                if req.method == "HEAD" {
                    let mut head = String::from("HTTP/1.1 200 OK\r\n");
                    for (n, v) in &common {
                        head.push_str(&format!("{n}: {v}\r\n"));
                    }
                    head.push_str(&format!("Content-Length: {len}\r\n\r\n"));
                    let _ = writer.write_all(head.as_bytes());
                    continue;
                }
                gets.fetch_add(1, Ordering::Relaxed);
                let (start, end) = match req.range {
                    Some((a, b)) => (a, b.map_or(len, |b| (b + 1).min(len))),
                    None => (0, len),
                };
                if start > end || start > len {
                    respond(&mut writer, "416 Range Not Satisfiable", &[], b"");
                    continue;
                }
                // Only the range is read, as a real server does: reading the whole file
                // for each request made large files look slow to open.
                let body = &read_range(&path, start, end - start);
                let mut headers = common.clone();
                let status = if req.range.is_some() {
                    headers.push((
                        "Content-Range",
                        format!("bytes {start}-{}/{len}", end.saturating_sub(1)),
                    ));
                    "206 Partial Content"
                } else {
                    "200 OK"
                };
                respond(&mut writer, status, &headers, body);
            }
            _ => respond(&mut writer, "405 Method Not Allowed", &[], b""),
        }
    }
}

/// `len` bytes of the file at `path` from `start` (fewer where it ends sooner, none where
/// it cannot be read).
fn read_range(path: &Path, start: u64, len: u64) -> Vec<u8> {
    use std::io::{Seek, SeekFrom};
    let mut bytes = Vec::new();
    if let Ok(mut file) = std::fs::File::open(path)
        && file.seek(SeekFrom::Start(start)).is_ok()
    {
        let _ = file.take(len).read_to_end(&mut bytes);
    }
    bytes
}

fn entry_xml(href: &str, len: Option<u64>) -> String {
    let (kind, size) = match len {
        Some(n) => (String::new(), format!("<D:getcontentlength>{n}</D:getcontentlength>")),
        None => ("<D:collection/>".to_string(), String::new()),
    };
    format!(
        "<D:response><D:href>{href}</D:href><D:propstat><D:prop>\
         <D:getlastmodified>{LAST_MODIFIED}</D:getlastmodified>{size}\
         <D:resourcetype>{kind}</D:resourcetype></D:prop>\
         <D:status>HTTP/1.1 200 OK</D:status></D:propstat></D:response>"
    )
}

fn propfind(stream: &mut TcpStream, root: &Path, path: &Path, url_path: &str) {
    let Ok(meta) = std::fs::metadata(path) else {
        respond(stream, "404 Not Found", &[], b"");
        return;
    };
    let base = format!("/{}", url_path.trim_matches('/'));
    let mut xml = String::from("<?xml version=\"1.0\"?><D:multistatus xmlns:D=\"DAV:\">");
    if meta.is_file() {
        xml.push_str(&entry_xml(&base, Some(meta.len())));
    } else {
        xml.push_str(&entry_xml(&format!("{}/", base.trim_end_matches('/')), None));
        let mut names: Vec<_> = std::fs::read_dir(path)
            .unwrap()
            .flatten()
            .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
            .collect();
        names.sort();
        for (name, p) in names {
            let href = format!("{}/{}", base.trim_end_matches('/'), name);
            match std::fs::metadata(&p) {
                Ok(m) if m.is_dir() => xml.push_str(&entry_xml(&format!("{href}/"), None)),
                Ok(m) => xml.push_str(&entry_xml(&href, Some(m.len()))),
                Err(_) => {}
            }
        }
    }
    let _ = root;
    xml.push_str("</D:multistatus>");
    respond(
        stream,
        "207 Multi-Status",
        &[("Content-Type", "application/xml".into())],
        xml.as_bytes(),
    );
}
