//! API server benchmark (not a test): starts `coxswain apiserver` with durable storage
//! as a child process and measures, with kube-rs as the client:
//!
//! * creates/s of 1 KiB ConfigMaps with 32 requests in flight (each acknowledged only
//!   once durable),
//! * LIST latency with 10,000 and 50,000 ConfigMaps,
//! * watch events/s delivered to 50 concurrent watchers (and that none is dropped),
//! * the server's resident memory holding 50,000 ConfigMaps.
//!
//! Run: `cargo bench -p coxswain --bench apiserver` (`BENCH_OBJECTS` changes the 50,000).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{PostParams, WatchEvent, WatchParams};
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
    let mut child = Command::new(env!("CARGO_BIN_EXE_coxswain"))
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

fn rss_mib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
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

async fn list_latency(client: &Client, ns: &str, expect: usize) -> Duration {
    let mut samples = Vec::new();
    for _ in 0..5 {
        let req = http::Request::get(format!("/api/v1/namespaces/{ns}/configmaps"))
            .body(Vec::new())
            .expect("request");
        let start = Instant::now();
        let body = client.request_text(req).await.expect("list");
        samples.push(start.elapsed());
        let items = body.matches("\"payload\"").count();
        assert_eq!(items, expect, "list returns every object");
    }
    samples.sort();
    samples[samples.len() / 2]
}

async fn ensure_ns(client: &Client, name: &str) {
    let api: Api<Namespace> = Api::all(client.clone());
    let mut ns = Namespace::default();
    ns.metadata.name = Some(name.to_string());
    api.create(&PostParams::default(), &ns)
        .await
        .expect("namespace");
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let total: usize = std::env::var("BENCH_OBJECTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50_000);
    let first = total.min(10_000);
    let dir = tempfile::tempdir().expect("temp dir");
    let server = start(dir.path()).await;
    let pid = server.child.id();
    let client = server.client.clone();
    ensure_ns(&client, "bench").await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "bench");
    let payload = "x".repeat(1024);
    let rss_empty = rss_mib(pid);

    let t1 = create_range(&api, "cm", 0..first, &payload).await;
    let list_10k = list_latency(&client, "bench", first).await;
    let t2 = create_range(&api, "cm", first..total, &payload).await;
    let creates_per_s = total as f64 / (t1 + t2).as_secs_f64();
    let list_50k = list_latency(&client, "bench", total).await;
    let rss_full = rss_mib(pid);

    // 50 watchers on their own namespace, 2,000 creates
    ensure_ns(&client, "watched").await;
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
    create_range(&watched, "w", 0..events, &payload).await;
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
    let watch_rate = delivered as f64 / (last - start).as_secs_f64();

    println!(
        "coxswain apiserver benchmark ({total} ConfigMaps of 1 KiB, durable storage, 2 cores)"
    );
    println!(
        "{:<48} {:>14} {:>16} {:>22}",
        "measure", "coxswain", "target", "kube-apiserver+etcd"
    );
    println!(
        "{:<48} {:>14.0} {:>16} {:>22}",
        "durable creates/s (32 in flight)", creates_per_s, ">= 5000", "~1600"
    );
    println!(
        "{:<48} {:>11.1} ms {:>16} {:>22}",
        format!("LIST latency, {first} ConfigMaps (median of 5)"),
        list_10k.as_secs_f64() * 1e3,
        "",
        ""
    );
    println!(
        "{:<48} {:>11.1} ms {:>16} {:>22}",
        format!("LIST latency, {total} ConfigMaps (median of 5)"),
        list_50k.as_secs_f64() * 1e3,
        "<= 250 ms",
        "700-850 ms"
    );
    println!(
        "{:<48} {:>14.0} {:>16} {:>22}",
        "watch events/s delivered to 50 watchers", watch_rate, "", ""
    );
    println!(
        "{:<48} {:>14} {:>16} {:>22}",
        "watchers dropped", dropped, "0", ""
    );
    println!(
        "{:<48} {:>10.1} MiB {:>16} {:>22}",
        "server RSS, empty", rss_empty, "", ""
    );
    println!(
        "{:<48} {:>10.1} MiB {:>16} {:>22}",
        format!("server RSS holding {total} ConfigMaps"),
        rss_full,
        "<= 150 MiB",
        "~850 MiB"
    );
}
