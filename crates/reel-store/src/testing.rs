//! A moto S3 server on loopback for tests (feature `testing`), and a fault-injecting proxy
//! to put in front of it or any other HTTP server ([`FaultProxy`]).
//!
//! Tests that need it are `#[ignore = "needs the moto S3 server; .ci/run runs them"]` and
//! call [`MotoServer::start`], which fails loudly when [`MOTO_PYTHON_ENV`] is not set, so a
//! run with `--ignored` never skips them silently. `.ci/run` sets it to a Python that has
//! `moto[server]` installed.

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use reel_core::{Error, ErrorKind, Result};

use crate::StoreOptions;

mod fault_proxy;
pub use fault_proxy::{FaultProxy, Faults};

/// The environment variable naming a Python interpreter that has `moto[server]`.
pub const MOTO_PYTHON_ENV: &str = "REEL_TEST_MOTO_PYTHON";

/// How long the server may take to start answering.
const START_DEADLINE: Duration = Duration::from_secs(60);

/// A running `python -m moto.server` on 127.0.0.1, stopped when dropped.
#[derive(Debug)]
pub struct MotoServer {
    child: Child,
    port: u16,
}

impl MotoServer {
    /// Starts the server on a free loopback port and waits (bounded) until it answers.
    pub fn start() -> Result<MotoServer> {
        let python = std::env::var_os(MOTO_PYTHON_ENV).ok_or_else(|| {
            Error::invalid_input(format!(
                "{MOTO_PYTHON_ENV} is not set: point it at a Python with moto[server] \
                 (python -m pip install 'moto[server]'), as .ci/run does"
            ))
        })?;
        let mut last = None;
        // A free port can be taken by someone else before the server binds it: try again.
        for _ in 0..3 {
            let port = free_port()?;
            let child = Command::new(&python)
                .args(["-m", "moto.server", "-H", "127.0.0.1", "-p", &port.to_string()])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .map_err(|e| Error::io(e, format!("cannot start moto with {python:?}")))?;
            let mut server = MotoServer { child, port };
            match server.wait_until_up() {
                Ok(()) => return Ok(server),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| Error::new(ErrorKind::Io, "moto did not start")))
    }

    /// Waits until the server answers an HTTP request. A bare TCP connect is not proof:
    /// while moto imports, a connect to a port in the ephemeral range can be answered by the
    /// connecting socket itself (TCP self-connect). A child that exits (it could not bind
    /// its port) fails the start, which then tries another port. That another process's
    /// server took the port and answers in its place is not ruled out; within this process
    /// [`free_port`] never hands a port out twice.
    fn wait_until_up(&mut self) -> Result<()> {
        let started = Instant::now();
        while started.elapsed() < START_DEADLINE {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(Error::new(ErrorKind::Io, format!("moto exited at start: {status}")));
            }
            if self.answers_http() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Err(Error::new(ErrorKind::Io, format!("moto did not answer within {START_DEADLINE:?}")))
    }

    /// Whether a `GET /` on the port gets an HTTP status line back, within short timeouts.
    fn answers_http(&self) -> bool {
        matches!(self.request("GET", "/", Duration::from_secs(2)), Ok((status, answer))
            if answer.starts_with("HTTP/1.") && status.parse::<u16>().is_ok())
    }

    /// The server's endpoint, `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Store options for this server (its endpoint, plain HTTP, a region, moto's dummy
    /// credentials), ignoring the environment so a developer's AWS settings do not leak in.
    pub fn options(&self) -> StoreOptions {
        self.options_through(&self.endpoint())
    }

    /// [`options`](Self::options) for reaching this server at `endpoint` instead: a proxy
    /// in front of it, such as [`FaultProxy`].
    pub fn options_through(&self, endpoint: &str) -> StoreOptions {
        StoreOptions { use_env: false, ..StoreOptions::default() }
            .with("aws_endpoint", endpoint)
            .with("aws_allow_http", "true")
            .with("aws_region", "us-east-1")
            .with("aws_access_key_id", "testing")
            .with("aws_secret_access_key", "testing")
    }

    /// The environment variables that point a child process (the `reel` command, Python) at
    /// this server through the standard AWS settings.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ENDPOINT_URL", self.endpoint()),
            ("AWS_ALLOW_HTTP", "true".into()),
            ("AWS_REGION", "us-east-1".into()),
            ("AWS_ACCESS_KEY_ID", "testing".into()),
            ("AWS_SECRET_ACCESS_KEY", "testing".into()),
        ]
    }

    /// Creates a bucket (moto accepts unsigned requests).
    pub fn create_bucket(&self, name: &str) -> Result<()> {
        let (status, answer) = self.unsigned("PUT", &format!("/{name}"))?;
        if status != "200" {
            let first = answer.lines().next().unwrap_or("");
            return Err(Error::new(ErrorKind::Io, format!("cannot create bucket {name}: {first}")));
        }
        Ok(())
    }

    /// The multipart uploads of `bucket` that were started and neither completed nor
    /// aborted (S3's ListMultipartUploads), as their keys.
    pub fn pending_uploads(&self, bucket: &str) -> Result<Vec<String>> {
        let (status, answer) = self.unsigned("GET", &format!("/{bucket}?uploads"))?;
        if status != "200" {
            let first = answer.lines().next().unwrap_or("");
            return Err(Error::new(
                ErrorKind::Io,
                format!("cannot list the multipart uploads of {bucket}: {first}"),
            ));
        }
        // Each <Upload> element holds one <Key>; moto answers with one small XML document.
        let keys = answer
            .split("<Upload>")
            .skip(1)
            .filter_map(|upload| {
                let start = upload.find("<Key>")? + "<Key>".len();
                let end = upload[start..].find("</Key>")? + start;
                Some(upload[start..end].to_string())
            })
            .collect();
        Ok(keys)
    }

    /// One unsigned HTTP/1.1 request to the server (moto accepts them): the status code and
    /// the whole answer.
    fn unsigned(&self, method: &str, target: &str) -> Result<(String, String)> {
        self.request(method, target, Duration::from_secs(30))
    }

    /// [`unsigned`](Self::unsigned), waiting at most `timeout` for each read. A connection
    /// the socket made to itself (TCP self-connect: nothing listens on the port yet) is
    /// refused rather than read back.
    fn request(&self, method: &str, target: &str, timeout: Duration) -> Result<(String, String)> {
        let addr = SocketAddr::from(([127, 0, 0, 1], self.port));
        let io = |e| Error::io(e, format!("{method} {target} on moto"));
        let mut conn = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).map_err(io)?;
        if conn.local_addr().ok() == Some(addr) {
            return Err(Error::new(ErrorKind::Io, "connected to itself: nothing listens there"));
        }
        conn.set_read_timeout(Some(timeout)).map_err(io)?;
        write!(
            conn,
            "{method} {target} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Length: 0\r\n\
             Connection: close\r\n\r\n",
            self.port
        )
        .map_err(io)?;
        let mut answer = String::new();
        conn.read_to_string(&mut answer).map_err(io)?;
        let status = answer.split_whitespace().nth(1).unwrap_or("").to_string();
        Ok((status, answer))
    }
}

impl Drop for MotoServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A loopback port that was free a moment ago and that this process has not handed out
/// before: two tests starting servers at once must not both be given the port the kernel
/// returned to one of them and then released.
fn free_port() -> Result<u16> {
    static GIVEN: Mutex<BTreeSet<u16>> = Mutex::new(BTreeSet::new());
    let mut given = GIVEN.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    // Hold every candidate until one is new, so the kernel cannot return the same one again.
    let mut held = Vec::new();
    for _ in 0..64 {
        let listener = TcpListener::bind("127.0.0.1:0")
            .map_err(|e| Error::io(e, "cannot find a free loopback port"))?;
        let port = listener.local_addr().map_err(|e| Error::io(e, "no local address"))?.port();
        if given.insert(port) {
            return Ok(port);
        }
        held.push(listener);
    }
    Err(Error::new(ErrorKind::Io, "every free loopback port offered was handed out before"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_ports_are_never_handed_out_twice() {
        let mut seen = BTreeSet::new();
        for _ in 0..200 {
            let port = free_port().unwrap();
            assert!(seen.insert(port), "port {port} was handed out twice");
        }
    }

    /// A listener that accepts and closes without a word is not a server that is up.
    #[test]
    fn a_port_that_does_not_answer_http_is_not_up() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let mute = std::thread::spawn(move || {
            if let Some(conn) = listener.incoming().next() {
                drop(conn);
            }
        });
        let child = Command::new("sleep").arg("30").spawn().unwrap();
        let server = MotoServer { child, port };
        assert!(!server.answers_http());
        drop(server);
        mute.join().unwrap();
    }
}
