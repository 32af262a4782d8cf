//! A fault-injecting HTTP proxy on loopback, for tests and benchmarks (feature `testing`).
//!
//! It sits between a client and a server that the test started (moto's S3 server, the
//! HTTP test server), forwards each HTTP/1.1 request to the server on a fresh connection
//! and adds what the network and a busy store add: latency before each answer, `503`
//! (S3's `SlowDown`) and `429` throttling answers, connections cut in the middle of a body,
//! and bodies shorter than their range (with a matching `Content-Length`, which only the
//! client's own length check can catch). Faults are counted over `GET`s (writes can be refused as a whole); everything is
//! bounded in time, so a test that goes wrong fails rather than hangs.

use std::io::{BufRead, BufReader, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use reel_core::{Error, Result};

/// How long the proxy waits for the server, and the longest it keeps a request that
/// [`Faults::hang`]s.
const UPSTREAM_DEADLINE: Duration = Duration::from_secs(60);

/// Faults to add. Each `*_every` counts `GET` requests: with `n`, request k (1-based) gets
/// the fault when `k % n == 0`; 0 turns it off.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Faults {
    /// Added before every answer (of any method), as a round trip would.
    pub latency: Duration,
    /// Answer `503 Slow Down` with S3's `SlowDown` error document.
    pub unavailable_every: u64,
    /// Answer `429 Too Many Requests`.
    pub throttle_every: u64,
    /// Send the headers and half the body, then close the connection.
    pub cut_every: u64,
    /// Send half the body with a `Content-Length` that says so.
    pub short_every: u64,
    /// Never answer `GET`s (the connection stays open and silent until the proxy stops).
    pub hang: bool,
    /// Answer `503 Slow Down` to every request that writes (`PUT`, `POST`): uploads fail
    /// while reads and deletes go through.
    pub refuse_writes: bool,
}

/// A running proxy; it stops when dropped.
#[derive(Debug)]
pub struct FaultProxy {
    port: u16,
    shared: Arc<Shared>,
}

#[derive(Debug, Default)]
struct Shared {
    faults: Mutex<Faults>,
    gets: AtomicU64,
    requests: AtomicU64,
    stop: AtomicBool,
}

impl FaultProxy {
    /// Starts a proxy on a free loopback port in front of `upstream`
    /// (`http://127.0.0.1:PORT`).
    pub fn start(upstream: &str) -> Result<FaultProxy> {
        let bad = || Error::invalid_input(format!("{upstream}: expected http://127.0.0.1:PORT"));
        let rest = upstream.strip_prefix("http://").ok_or_else(bad)?;
        let upstream: SocketAddr = rest.trim_end_matches('/').parse().map_err(|_| bad())?;
        let listener = TcpListener::bind("127.0.0.1:0")
            .map_err(|e| Error::io(e, "cannot bind the fault proxy"))?;
        let port = listener.local_addr().map_err(|e| Error::io(e, "no local address"))?.port();
        let shared = Arc::new(Shared::default());
        let accepting = Arc::clone(&shared);
        std::thread::spawn(move || {
            for client in listener.incoming() {
                if accepting.stop.load(Ordering::Relaxed) {
                    break;
                }
                let Ok(client) = client else { continue };
                let shared = Arc::clone(&accepting);
                std::thread::spawn(move || serve(client, upstream, &shared));
            }
        });
        Ok(FaultProxy { port, shared })
    }

    /// The proxy's endpoint, `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Replaces the faults (for the requests that arrive from now on).
    pub fn set_faults(&self, faults: Faults) {
        *self.shared.faults.lock().unwrap_or_else(PoisonError::into_inner) = faults;
    }

    /// `GET` requests received so far (faulty ones included).
    pub fn gets(&self) -> u64 {
        self.shared.gets.load(Ordering::Relaxed)
    }

    /// Requests of any method received so far.
    pub fn requests(&self) -> u64 {
        self.shared.requests.load(Ordering::Relaxed)
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// One HTTP/1.1 message: its start line, headers and (de-chunked) body.
struct Message {
    start: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Message {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// The message with framing headers replaced: `Content-Length` of `body_len`, and
    /// `Connection` as given.
    fn head(&self, content_length: Option<usize>, connection: &str) -> Vec<u8> {
        let mut out = format!("{}\r\n", self.start);
        for (name, value) in &self.headers {
            let framing = ["content-length", "transfer-encoding", "connection", "keep-alive"];
            if !framing.contains(&name.to_ascii_lowercase().as_str()) {
                out.push_str(&format!("{name}: {value}\r\n"));
            }
        }
        if let Some(len) = content_length {
            out.push_str(&format!("Content-Length: {len}\r\n"));
        }
        out.push_str(&format!("Connection: {connection}\r\n\r\n"));
        out.into_bytes()
    }
}

/// Reads one message; `None` at a clean end of the connection or on anything malformed.
/// `has_body` is false for answers to `HEAD`, whose `Content-Length` describes no body.
fn read_message(reader: &mut impl BufRead, has_body: bool, to_eof: bool) -> Option<Message> {
    let mut start = String::new();
    if reader.read_line(&mut start).ok()? == 0 {
        return None;
    }
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':')?;
        headers.push((name.trim().to_string(), value.trim().to_string()));
        if headers.len() > 200 {
            return None;
        }
    }
    let mut message = Message { start: start.trim_end().to_string(), headers, body: Vec::new() };
    if !has_body {
        return Some(message);
    }
    let chunked = message.header("transfer-encoding").is_some_and(|v| v.contains("chunked"));
    if chunked {
        loop {
            let mut size = String::new();
            reader.read_line(&mut size).ok()?;
            let size = usize::from_str_radix(size.trim().split(';').next()?, 16).ok()?;
            let mut chunk = vec![0u8; size + 2];
            reader.read_exact(&mut chunk).ok()?;
            if size == 0 {
                break;
            }
            message.body.extend_from_slice(&chunk[..size]);
        }
    } else if let Some(len) = message.header("content-length") {
        let len: usize = len.parse().ok()?;
        message.body = vec![0u8; len];
        reader.read_exact(&mut message.body).ok()?;
    } else if to_eof {
        reader.read_to_end(&mut message.body).ok()?;
    }
    Some(message)
}

/// A fault answer: status line and S3-style error document.
fn refusal(status: &str, code: &str) -> Vec<u8> {
    let body = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>{code}</Code>\
         <Message>injected by the fault proxy</Message></Error>"
    );
    format!(
        "HTTP/1.1 {status}\r\nContent-Type: application/xml\r\nContent-Length: {}\r\n\
         Connection: keep-alive\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Forwards `request` to `upstream` on a new connection and reads the whole answer.
fn forward(request: &Message, upstream: SocketAddr) -> Option<Message> {
    let mut conn = TcpStream::connect_timeout(&upstream, Duration::from_secs(5)).ok()?;
    conn.set_read_timeout(Some(UPSTREAM_DEADLINE)).ok()?;
    let _ = conn.set_nodelay(true);
    let mut out = request.head(Some(request.body.len()), "close");
    out.extend_from_slice(&request.body);
    conn.write_all(&out).ok()?;
    let is_head = request.start.starts_with("HEAD ");
    let mut reader = BufReader::new(conn);
    read_message(&mut reader, !is_head, true)
}

fn serve(client: TcpStream, upstream: SocketAddr, shared: &Shared) {
    let _ = client.set_nodelay(true);
    let _ = client.set_read_timeout(Some(UPSTREAM_DEADLINE));
    let Ok(mut writer) = client.try_clone() else { return };
    let mut reader = BufReader::new(client);
    while let Some(request) = read_message(&mut reader, true, false) {
        if shared.stop.load(Ordering::Relaxed) {
            return;
        }
        shared.requests.fetch_add(1, Ordering::Relaxed);
        let faults = shared.faults.lock().unwrap_or_else(PoisonError::into_inner).clone();
        if !faults.latency.is_zero() {
            std::thread::sleep(faults.latency);
        }
        let is_get = request.start.starts_with("GET ");
        let k = if is_get { shared.gets.fetch_add(1, Ordering::Relaxed) + 1 } else { 0 };
        let hit = |n: u64| is_get && n != 0 && k % n == 0;
        if is_get && faults.hang {
            let started = Instant::now();
            while !shared.stop.load(Ordering::Relaxed) && started.elapsed() < UPSTREAM_DEADLINE {
                std::thread::sleep(Duration::from_millis(20));
            }
            return;
        }
        let writes = request.start.starts_with("PUT ") || request.start.starts_with("POST ");
        if hit(faults.unavailable_every) || (faults.refuse_writes && writes) {
            if writer.write_all(&refusal("503 Slow Down", "SlowDown")).is_err() {
                return;
            }
            continue;
        }
        if hit(faults.throttle_every) {
            if writer.write_all(&refusal("429 Too Many Requests", "TooManyRequests")).is_err() {
                return;
            }
            continue;
        }
        let Some(answer) = forward(&request, upstream) else {
            let _ = writer.write_all(&refusal("502 Bad Gateway", "BadGateway"));
            return;
        };
        let is_head = request.start.starts_with("HEAD ");
        let body = &answer.body;
        if hit(faults.cut_every) && body.len() >= 2 {
            let mut out = answer.head(Some(body.len()), "keep-alive");
            out.extend_from_slice(&body[..body.len() / 2]);
            let _ = writer.write_all(&out);
            let _ = writer.flush();
            let _ = writer.shutdown(Shutdown::Both);
            return;
        }
        let sent = if hit(faults.short_every) && body.len() >= 2 {
            &body[..body.len() / 2]
        } else {
            &body[..]
        };
        let length = if is_head {
            answer.header("content-length").and_then(|v| v.parse().ok())
        } else {
            Some(sent.len())
        };
        let mut out = answer.head(length, "keep-alive");
        if !is_head {
            out.extend_from_slice(sent);
        }
        if writer.write_all(&out).is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A one-answer server: every connection gets `answer` and is closed.
    fn answering(answer: &'static [u8]) -> (String, std::thread::JoinHandle<()>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let handle = std::thread::spawn(move || {
            for _ in 0..2 {
                let Ok((mut conn, _)) = listener.accept() else { return };
                let mut reader = BufReader::new(conn.try_clone().unwrap());
                let _ = read_message(&mut reader, true, false);
                let _ = conn.write_all(answer);
            }
        });
        (format!("http://127.0.0.1:{port}"), handle)
    }

    fn get(endpoint: &str) -> String {
        let addr: SocketAddr = endpoint.strip_prefix("http://").unwrap().parse().unwrap();
        let mut conn = TcpStream::connect(addr).unwrap();
        conn.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        conn.write_all(b"GET /x HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n").unwrap();
        let mut reader = BufReader::new(conn);
        let answer = read_message(&mut reader, true, false).unwrap();
        format!("{} {}", answer.start, String::from_utf8_lossy(&answer.body))
    }

    #[test]
    fn forwards_de_chunks_and_injects() {
        let (upstream, server) =
            answering(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nabcd\r\n2\r\nef\r\n0\r\n\r\n");
        let proxy = FaultProxy::start(&upstream).unwrap();
        assert_eq!(get(&proxy.endpoint()), "HTTP/1.1 200 OK abcdef");
        proxy.set_faults(Faults { short_every: 1, ..Faults::default() });
        assert_eq!(get(&proxy.endpoint()), "HTTP/1.1 200 OK abc");
        proxy.set_faults(Faults { unavailable_every: 1, ..Faults::default() });
        assert!(get(&proxy.endpoint()).starts_with("HTTP/1.1 503 Slow Down"));
        assert_eq!(proxy.gets(), 3);
        drop(proxy);
        server.join().unwrap();
    }
}
