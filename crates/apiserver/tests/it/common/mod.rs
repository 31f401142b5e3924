//! What the API server's integration tests share: the recorded kube-apiserver answers,
//! a one-request HTTP/1.1 client, and servers started in memory.

// each test binary uses its own part of this module
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::time::Duration;

use coxswain_apiserver::server::AdmissionPlugin;
use serde_json::Value;

/// The answers of a real kube-apiserver 1.36, recorded in
/// `tests/fixtures/kube-apiserver-1.36` (see its README).
pub fn reference_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/kube-apiserver-1.36")
}

/// A recorded JSON answer.
pub fn fixture(path: &str) -> Value {
    let p = reference_dir().join(path);
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// One request per connection (User-Agent `curl`, as the reference was recorded);
/// returns the status code, the response head and the de-chunked body.
pub fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    content_type: &str,
    accept: &str,
    body: &[u8],
) -> (u16, String, Vec<u8>) {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nUser-Agent: curl/8.5.0\r\nContent-Type: {content_type}\r\nAccept: {accept}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).expect("write head");
    let _ = s.write_all(body);
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("response head");
    let head = String::from_utf8_lossy(&raw[..end]).to_string();
    let code = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .expect("status code");
    let mut body = raw[end + 4..].to_vec();
    if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        body = dechunk(&body);
    }
    (code, head, body)
}

fn dechunk(mut b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(pos) = b.windows(2).position(|w| w == b"\r\n") {
        let size =
            usize::from_str_radix(String::from_utf8_lossy(&b[..pos]).trim(), 16).unwrap_or(0);
        if size == 0 {
            break;
        }
        let start = pos + 2;
        out.extend_from_slice(&b[start..(start + size).min(b.len())]);
        b = &b[(start + size + 2).min(b.len())..];
    }
    out
}

/// A server on plain HTTP without authentication, in memory, with its own runtime.
pub struct Server {
    pub running: coxswain_apiserver::server::Running,
    _dir: tempfile::TempDir,
    _rt: tokio::runtime::Runtime,
}

impl Server {
    /// One request with a JSON body (none when `body` is null); returns the status code
    /// and the JSON answer (null when empty).
    pub fn json(
        &self,
        method: &str,
        path: &str,
        content_type: &str,
        accept: &str,
        body: &serde_json::Value,
    ) -> (u16, serde_json::Value) {
        let bytes = if body.is_null() {
            Vec::new()
        } else {
            body.to_string().into_bytes()
        };
        let (code, _, b) = request(
            self.running.addr,
            method,
            path,
            content_type,
            accept,
            &bytes,
        );
        if b.is_empty() {
            return (code, serde_json::Value::Null);
        }
        let v = serde_json::from_slice(&b).unwrap_or_else(|e| {
            panic!(
                "{method} {path}: not JSON ({e}): {}",
                String::from_utf8_lossy(&b)
            )
        });
        (code, v)
    }
}

/// Start a [`Server`] on a free loopback port.
pub fn start() -> Server {
    start_with(|_| {})
}

/// [`start`] after `adjust` changed the configuration.
pub fn start_with(adjust: impl FnOnce(&mut coxswain_apiserver::server::Config)) -> Server {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let dir = tempfile::tempdir().expect("temp dir");
    let mut cfg = coxswain_apiserver::server::Config::new(dir.path());
    cfg.bind = "127.0.0.1:0".parse().expect("addr");
    cfg.persist = false;
    cfg.tls = false;
    cfg.auth = false;
    // no service account controller creates the namespaces' `default` accounts (the
    // plugin's own tests turn it back on)
    cfg.admission_plugins
        .disable(AdmissionPlugin::ServiceAccount);
    adjust(&mut cfg);
    let running = rt
        .block_on(coxswain_apiserver::server::start(cfg))
        .expect("start");
    Server {
        running,
        _dir: dir,
        _rt: rt,
    }
}

/// A server with TLS and a token (as `coxswain apiserver` runs) and a kube-rs client
/// configured from the kubeconfig it wrote.
pub async fn start_with_client() -> (
    coxswain_apiserver::server::Running,
    kube::Client,
    tempfile::TempDir,
) {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut cfg = coxswain_apiserver::server::Config::new(dir.path());
    cfg.bind = "127.0.0.1:0".parse().expect("addr");
    cfg.persist = false;
    cfg.bookmark_interval = Duration::from_millis(500);
    cfg.admission_plugins
        .disable(AdmissionPlugin::ServiceAccount);
    let running = coxswain_apiserver::server::start(cfg)
        .await
        .expect("server starts");
    let kubeconfig = kube::config::Kubeconfig::read_from(&running.kubeconfig).expect("kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(
        kubeconfig,
        &kube::config::KubeConfigOptions::default(),
    )
    .await
    .expect("client config");
    let client = kube::Client::try_from(config).expect("client");
    (running, client, dir)
}

/// A persisting server (plain HTTP, no authentication) on a data directory that a test
/// stops and starts again on the same data.
pub struct Durable {
    rt: tokio::runtime::Runtime,
    running: Option<coxswain_apiserver::server::Running>,
}

impl Durable {
    /// Start on `dir` after `adjust` changed the configuration.
    pub fn start(
        dir: &std::path::Path,
        adjust: impl Fn(&mut coxswain_apiserver::server::Config),
    ) -> Durable {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let mut server = Durable { rt, running: None };
        server.boot(dir, adjust);
        server
    }

    /// Stop the running server (if any) and start again on `dir`; the previous
    /// server's database may take a moment to be released, so the start is retried.
    pub fn boot(
        &mut self,
        dir: &std::path::Path,
        adjust: impl Fn(&mut coxswain_apiserver::server::Config),
    ) {
        if let Some(r) = self.running.take() {
            r.shutdown.cancel();
            let _ = self.rt.block_on(r.task);
        }
        let mut cfg = coxswain_apiserver::server::Config::new(dir);
        cfg.bind = "127.0.0.1:0".parse().expect("addr");
        cfg.persist = true;
        cfg.tls = false;
        cfg.auth = false;
        adjust(&mut cfg);
        let mut last = None;
        for _ in 0..100 {
            match self
                .rt
                .block_on(coxswain_apiserver::server::start(cfg.clone()))
            {
                Ok(r) => {
                    self.running = Some(r);
                    return;
                }
                Err(e) => {
                    last = Some(e);
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
        }
        panic!("restart: {last:?}");
    }

    /// The running server's address.
    pub fn addr(&self) -> SocketAddr {
        self.running.as_ref().expect("running").addr
    }

    /// A JSON request to the running server ([`json_request`]).
    pub fn json(&self, method: &str, path: &str, body: &Value) -> (u16, Value) {
        json_request(self.addr(), method, path, body)
    }
}

/// A JSON request (a PATCH is a merge patch; a `Null` body is none): status and body
/// (`Null` if not JSON).
pub fn json_request(addr: SocketAddr, method: &str, path: &str, body: &Value) -> (u16, Value) {
    let bytes = if body.is_null() {
        Vec::new()
    } else {
        body.to_string().into_bytes()
    };
    let content_type = if method == "PATCH" {
        "application/merge-patch+json"
    } else {
        "application/json"
    };
    let (code, _, b) = request(addr, method, path, content_type, "application/json", &bytes);
    (code, serde_json::from_slice(&b).unwrap_or(Value::Null))
}
