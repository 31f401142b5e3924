//! API server benchmark (not a test): starts `coxswain apiserver` with durable storage
//! as a child process and measures, with kube-rs as the client:
//!
//! * creates/s of 1 KiB ConfigMaps with 32 requests in flight (each acknowledged only
//!   once durable),
//! * LIST latency with 10,000 and 50,000 ConfigMaps, decoded by kube-rs into typed
//!   `ConfigMap`s (median and minimum of `BENCH_RUNS` runs), and raw: the time to the
//!   body's first byte and to its last,
//! * watch events/s delivered to 50 concurrent watchers (and that none is dropped),
//! * the server's resident memory holding 50,000 ConfigMaps, at the end of the run
//!   (after the watchers and a second round of LISTs) and at its peak (`VmHWM`).
//!
//! The table has the targets beside the figures and the load average, so runs
//! before and after a change compare line by line.
//!
//! Run: `cargo bench -p coxswain --bench apiserver` (`BENCH_OBJECTS` changes the 50,000,
//! `BENCH_RUNS` the 7 runs of each LIST measure, `BENCH_BIN` the server binary).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{ListParams, PostParams, WatchEvent, WatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Api, Client};

/// The allocator of the `coxswain` binary, so the figures are the product's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

struct Server {
    child: Child,
    client: Client,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn start(dir: &std::path::Path) -> Server {
    // BENCH_BIN: another build of the server (a copy of an earlier build, for a
    // before/after comparison with the same client)
    let bin = std::env::var("BENCH_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_coxswain").into());
    let mut child = Command::new(bin)
        .args(["apiserver", "--data-dir"])
        .arg(dir)
        .args(["--bind", "127.0.0.1:0", "--log", "warn"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("start coxswain apiserver");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    loop {
        match lines.next() {
            Some(Ok(l)) if l.starts_with("export KUBECONFIG=") => break,
            Some(Ok(_)) => continue,
            _ => panic!("server exited before it was ready"),
        }
    }
    let kc = Kubeconfig::read_from(dir.join("kubeconfig")).expect("kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .expect("config");
    let client = Client::try_from(config).expect("client");
    Server { child, client }
}

/// A memory figure of `/proc/<pid>/status` (`VmRSS`, `VmHWM`) in MiB.
fn status_mib(pid: u32, field: &str) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map(|kb| kb / 1024.0)
        .unwrap_or(f64::NAN)
}

fn configmap(name: String, payload: &str) -> ConfigMap {
    let mut c = ConfigMap::default();
    c.metadata.name = Some(name);
    c.data = Some(BTreeMap::from([(
        "payload".to_string(),
        payload.to_string(),
    )]));
    c
}

async fn create_range(
    api: &Api<ConfigMap>,
    prefix: &str,
    range: std::ops::Range<usize>,
    payload: &str,
) -> Duration {
    let start = Instant::now();
    futures::stream::iter(range)
        .map(|i| {
            let api = api.clone();
            let cm = configmap(format!("{prefix}-{i:06}"), payload);
            async move { api.create(&PostParams::default(), &cm).await.map(|_| ()) }
        })
        .buffer_unordered(32)
        .try_collect::<Vec<()>>()
        .await
        .expect("creates succeed");
    start.elapsed()
}

/// Median and minimum of some durations.
fn median_min(mut samples: Vec<Duration>) -> (Duration, Duration) {
    samples.sort();
    (samples[samples.len() / 2], samples[0])
}

/// A LIST decoded by kube-rs into typed `ConfigMap`s (client cost included): median and
/// minimum of `runs`.
async fn typed_list(api: &Api<ConfigMap>, expect: usize, runs: usize) -> (Duration, Duration) {
    let mut samples = Vec::new();
    for _ in 0..runs {
        let start = Instant::now();
        let list = api.list(&ListParams::default()).await.expect("list");
        samples.push(start.elapsed());
        assert_eq!(list.items.len(), expect, "list returns every object");
    }
    median_min(samples)
}

/// Raw LIST bodies, not decoded: medians of the time to the first body byte and to the
/// last one over `runs`.
async fn raw_list(client: &Client, ns: &str, expect: usize, runs: usize) -> (Duration, Duration) {
    use futures::AsyncReadExt;
    let mut first = Vec::new();
    let mut last = Vec::new();
    let mut buf = vec![0u8; 256 * 1024];
    for _ in 0..runs {
        let req = http::Request::get(format!("/api/v1/namespaces/{ns}/configmaps"))
            .body(Vec::new())
            .expect("request");
        let start = Instant::now();
        let mut body = Box::pin(client.request_stream(req).await.expect("list"));
        let mut total = Vec::new();
        let mut first_at = None;
        loop {
            let n = body.read(&mut buf).await.expect("list body");
            if n == 0 {
                break;
            }
            first_at.get_or_insert_with(|| start.elapsed());
            total.extend_from_slice(&buf[..n]);
        }
        last.push(start.elapsed());
        first.push(first_at.unwrap_or_default());
        let text = std::str::from_utf8(&total).expect("utf-8");
        assert_eq!(
            text.matches("\"payload\"").count(),
            expect,
            "list returns every object"
        );
    }
    (median_min(first).0, median_min(last).0)
}

/// The load average, as `uptime` prints it.
fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

async fn ensure_ns(client: &Client, name: &str) {
    let api: Api<Namespace> = Api::all(client.clone());
    let mut ns = Namespace::default();
    ns.metadata.name = Some(name.to_string());
    api.create(&PostParams::default(), &ns)
        .await
        .expect("namespace");
}

/// 50 watchers of their own namespace see 2,000 creates: events/s delivered and how many
/// watchers were dropped.
async fn watch_fanout(client: &Client, payload: &str) -> (f64, usize) {
    ensure_ns(client, "watched").await;
    let watched: Api<ConfigMap> = Api::namespaced(client.clone(), "watched");
    let events = 2_000usize;
    let watchers = 50usize;
    let mut handles = Vec::new();
    for _ in 0..watchers {
        let w = watched.clone();
        let (ready_tx, ready_rx) = tokio::sync::oneshot::channel();
        handles.push((
            tokio::spawn(async move {
                let stream = w
                    .watch(&WatchParams::default().timeout(120), "0")
                    .await
                    .expect("watch");
                let _ = ready_tx.send(());
                let mut stream = Box::pin(stream);
                let mut seen = 0usize;
                while let Some(ev) = stream.next().await {
                    match ev {
                        Ok(WatchEvent::Added(_)) => {
                            seen += 1;
                            if seen == events {
                                return Ok(Instant::now());
                            }
                        }
                        Ok(WatchEvent::Error(e)) => return Err(format!("watch error: {e:?}")),
                        Ok(_) => {}
                        Err(e) => return Err(format!("stream error: {e}")),
                    }
                }
                Err(format!("watch ended after {seen} events"))
            }),
            ready_rx,
        ));
    }
    let mut joins = Vec::new();
    for (h, ready) in handles {
        let _ = ready.await;
        joins.push(h);
    }
    let start = Instant::now();
    create_range(&watched, "w", 0..events, payload).await;
    let mut last = start;
    let mut dropped = 0;
    for j in joins {
        match j.await.expect("watcher task") {
            Ok(t) => last = last.max(t),
            Err(e) => {
                eprintln!("{e}");
                dropped += 1;
            }
        }
    }
    let delivered = (watchers - dropped) * events;
    (delivered as f64 / (last - start).as_secs_f64(), dropped)
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

fn mib(v: f64) -> String {
    format!("{v:.1} MiB")
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let total: usize = std::env::var("BENCH_OBJECTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50_000);
    let runs: usize = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(7)
        .max(1);
    let load_start = load();
    let first = total.min(10_000);
    let dir = tempfile::tempdir().expect("temp dir");
    let server = start(dir.path()).await;
    let pid = server.child.id();
    let client = server.client.clone();
    ensure_ns(&client, "bench").await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "bench");
    let payload = "x".repeat(1024);
    let rss_empty = status_mib(pid, "VmRSS:");

    let t1 = create_range(&api, "cm", 0..first, &payload).await;
    let (typed_first, _) = typed_list(&api, first, runs).await;
    let t2 = create_range(&api, "cm", first..total, &payload).await;
    let creates_per_s = total as f64 / (t1 + t2).as_secs_f64();
    let rss_created = status_mib(pid, "VmRSS:");
    let (typed_median, typed_min) = typed_list(&api, total, runs).await;
    let (raw_first_byte, raw_last_byte) = raw_list(&client, "bench", total, runs).await;
    let rss_listed = status_mib(pid, "VmRSS:");
    let (watch_rate, dropped) = watch_fanout(&client, &payload).await;
    // lists again after the watchers, then the memory the server keeps
    typed_list(&api, total, runs).await;
    raw_list(&client, "bench", total, runs).await;
    let rss_end = status_mib(pid, "VmRSS:");
    let hwm = status_mib(pid, "VmHWM:");
    let load_end = load();

    println!(
        "coxswain apiserver benchmark: {total} ConfigMaps of 1 KiB, durable storage, \
         LISTs {runs} runs each (BENCH_RUNS), load average {load_start} at start, {load_end} at end"
    );
    let rows: Vec<(String, String, &str, &str)> = vec![
        (
            "durable creates/s (32 in flight)".into(),
            format!("{creates_per_s:.0}"),
            ">= 10000",
            "~1600",
        ),
        (
            format!("LIST {first}, typed kube-rs, median"),
            ms(typed_first),
            "",
            "",
        ),
        (
            format!("LIST {total}, typed kube-rs, median"),
            ms(typed_median),
            "<= 250 ms",
            "620 ms",
        ),
        (
            format!("LIST {total}, typed kube-rs, min"),
            ms(typed_min),
            "",
            "",
        ),
        (
            format!("LIST {total}, raw, first byte (median)"),
            ms(raw_first_byte),
            "",
            "",
        ),
        (
            format!("LIST {total}, raw, last byte (median)"),
            ms(raw_last_byte),
            "",
            "",
        ),
        (
            "watch events/s delivered to 50 watchers".into(),
            format!("{watch_rate:.0}"),
            "",
            "",
        ),
        ("watchers dropped".into(), dropped.to_string(), "0", ""),
        ("server RSS, empty".into(), mib(rss_empty), "", ""),
        (
            format!("server RSS, {total} created"),
            mib(rss_created),
            "",
            "",
        ),
        (
            "server RSS, after the LISTs".to_string(),
            mib(rss_listed),
            "",
            "",
        ),
        (
            "server RSS at end (after watchers, LISTs again)".into(),
            mib(rss_end),
            "<= 150 MiB",
            "~890 MiB",
        ),
        ("server peak RSS (VmHWM)".into(), mib(hwm), "", ""),
    ];
    println!(
        "{:<48} {:>14} {:>12} {:>22}",
        "measure", "coxswain", "target", "kube-apiserver+etcd"
    );
    for (measure, value, target, upstream) in rows {
        println!("{measure:<48} {value:>14} {target:>12} {upstream:>22}");
    }
}
