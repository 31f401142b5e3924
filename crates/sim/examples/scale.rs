//! Scale measurement of the simulator (not a test): N simulated nodes, P pods created
//! as fast as the API server takes them, time until every pod is Running and Ready,
//! and the simulator's memory.
//!
//! ```text
//! cargo run --release --example scale -- [--nodes 1000] [--pods 100000] [--concurrency 32]
//!     [--no-scheduled-events] [--replicaset]
//! ```
//!
//! The pods are bare (no owner, so no default topology spreading), or with
//! `--replicaset` all controlled by one ReplicaSet (created first, with 0 replicas as
//! no controller runs), so that the scheduler scores every pod with the default
//! PodTopologySpread constraints against all the others.
//!
//! The embedded API server and the pod creator run in a child process (this binary
//! again), so the resident memory reported is the simulator's alone (its informer
//! cache of nodes and pods included).

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use coxswain_runtime::cache::Change;
use coxswain_runtime::manager::{Manager, ManagerOptions};
use coxswain_sim::{SimConfig, Simulator};
use futures::StreamExt;
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, PostParams};

/// The allocator of the `coxswain` binary, so the figures are the product's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// CPU seconds this process used (user + system).
fn cpu_seconds() -> f64 {
    coxswain_runtime::metrics::process_cpu_seconds().unwrap_or(f64::NAN)
}

/// Resident and peak resident memory in MiB.
fn memory() -> (u64, u64) {
    let kb = |field| coxswain_runtime::metrics::process_status_kib(field).unwrap_or(0);
    (kb("VmRSS:") / 1024, kb("VmHWM:") / 1024)
}

/// The child: API server and pod creator.
async fn serve() -> Result<(), BoxError> {
    let env = coxswain_runtime::envtest::start_with(|c| c.history = 200_000).await?;
    println!("{}", env.server().kubeconfig.display());
    let pods_wanted = arg("--pods", 100_000);
    let concurrency = arg("--concurrency", 32);
    let mut lines = BufReader::new(std::io::stdin()).lines();
    // wait for "go"
    let _ = tokio::task::spawn_blocking(move || {
        let l = lines.next();
        (l, lines)
    })
    .await?;
    let api: Api<Pod> = Api::default_namespaced(env.client.clone());
    let owner = if std::env::args().any(|a| a == "--replicaset") {
        let rs: ReplicaSet = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "load"},
            "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "load"}},
                "template": {"metadata": {"labels": {"app": "load"}},
                    "spec": {"containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10"}]}}},
        }))?;
        let rs = Api::<ReplicaSet>::default_namespaced(env.client.clone())
            .create(&PostParams::default(), &rs)
            .await?;
        serde_json::json!([{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "load",
            "uid": rs.metadata.uid, "controller": true, "blockOwnerDeletion": true}])
    } else {
        serde_json::Value::Null
    };
    let failed = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    futures::stream::iter(0..pods_wanted)
        .map(|i| {
            let api = api.clone();
            let failed = failed.clone();
            let owner = owner.clone();
            async move {
                let p: Pod = serde_json::from_value(serde_json::json!({
                    "metadata": {"name": format!("load-{i}"), "labels": {"app": "load"},
                        "ownerReferences": owner},
                    "spec": {"containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10"}]},
                }))
                .unwrap_or_default();
                if api.create(&PostParams::default(), &p).await.is_err() {
                    failed.fetch_add(1, Ordering::Relaxed);
                }
            }
        })
        .buffer_unordered(concurrency)
        .collect::<Vec<()>>()
        .await;
    eprintln!(
        "creator: {pods_wanted} pods created in {:.1}s ({} failed)",
        started.elapsed().as_secs_f64(),
        failed.load(Ordering::Relaxed)
    );
    // keep serving until the parent closes our stdin
    tokio::task::spawn_blocking(|| {
        let mut sink = String::new();
        while std::io::stdin()
            .read_line(&mut sink)
            .map(|n| n > 0)
            .unwrap_or(false)
        {}
    })
    .await?;
    Ok(())
}

fn ready(p: &Pod) -> bool {
    p.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    if std::env::var_os("SCALE_SERVE").is_some() {
        return serve().await;
    }
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "error".into()),
        )
        .try_init();
    let nodes_wanted = arg("--nodes", 1000);
    let pods_wanted = arg("--pods", 100_000);
    let mut child = Command::new(std::env::current_exe()?)
        .args(std::env::args().skip(1))
        .env("SCALE_SERVE", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()?;
    let mut out = BufReader::new(child.stdout.take().ok_or("no child stdout")?);
    let mut kubeconfig = String::new();
    out.read_line(&mut kubeconfig)?;
    let kc = kube::config::Kubeconfig::read_from(kubeconfig.trim())?;
    let config =
        kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
            .await?;
    let client = kube::Client::try_from(config)?;
    let (rss0, _) = memory();

    let mgr = Manager::with_client(
        client.clone(),
        ManagerOptions {
            metrics_bind_address: "0".into(),
            ..Default::default()
        },
    );
    let sim = Simulator::new(SimConfig {
        nodes: nodes_wanted,
        scheduled_events: !std::env::args().any(|a| a == "--no-scheduled-events"),
        ..SimConfig::default()
    })?;
    sim.add_to(&mgr)?;
    let cache = mgr.cache().clone();
    let cancel = tokio_util::sync::CancellationToken::new();
    let c = cancel.clone();
    let mgr = Arc::new(mgr);
    let m = mgr.clone();
    let run = tokio::spawn(async move { m.start(c).await });

    let t0 = Instant::now();
    loop {
        let nodes = cache.list::<Node>(None).await;
        let n = nodes
            .iter()
            .filter(|n| {
                n.status
                    .as_ref()
                    .and_then(|s| s.conditions.as_ref())
                    .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
            })
            .count();
        if n >= nodes_wanted {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let nodes_time = t0.elapsed();
    let (rss_nodes, _) = memory();
    println!(
        "{nodes_wanted} nodes Ready in {:.1}s; simulator RSS {rss_nodes} MiB (baseline {rss0} MiB)",
        nodes_time.as_secs_f64()
    );

    // count pods and their first transition to Ready, with the created->Ready latency
    // from the pod's creationTimestamp (second precision)
    let seen = Arc::new(AtomicUsize::new(0));
    let ready_count = Arc::new(AtomicUsize::new(0));
    let latencies = Arc::new(std::sync::Mutex::new(Vec::<i64>::new()));
    let started = Instant::now();
    let last_ready_ms = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let per_node = Arc::new(std::sync::Mutex::new(std::collections::HashMap::<
        String,
        usize,
    >::new()));
    let cpu0 = cpu_seconds();
    {
        let per_node = per_node.clone();
        let (seen, ready_count, latencies) = (seen.clone(), ready_count.clone(), latencies.clone());
        let last_ready_ms = last_ready_ms.clone();
        cache.informer::<Pod>().add_handler(move |c| {
            let (old, new) = match c {
                Change::Added(p) => {
                    seen.fetch_add(1, Ordering::Relaxed);
                    (None, p)
                }
                Change::Updated { old, new } => (Some(old), new),
                Change::Deleted(_) => return,
            };
            if ready(new) && !old.is_some_and(|o| ready(o)) {
                ready_count.fetch_add(1, Ordering::Relaxed);
                last_ready_ms.store(started.elapsed().as_millis() as u64, Ordering::Relaxed);
                if let (Some(node), Ok(mut m)) = (
                    new.spec.as_ref().and_then(|s| s.node_name.clone()),
                    per_node.lock(),
                ) {
                    *m.entry(node).or_default() += 1;
                }
                if let Some(created) = new.metadata.creation_timestamp.as_ref() {
                    let now = k8s_openapi::jiff::Timestamp::now().as_second();
                    if let Ok(mut l) = latencies.lock() {
                        l.push(now - created.0.as_second());
                    }
                }
            }
        });
    }

    let stdin = child.stdin.as_mut().ok_or("no child stdin")?;
    stdin.write_all(b"go\n")?;
    stdin.flush()?;
    let t1 = started;
    let mut last_change = Instant::now();
    let mut last_ready = 0;
    let mut peak_rss = 0;
    loop {
        tokio::time::sleep(Duration::from_secs(2)).await;
        let total = seen.load(Ordering::Relaxed);
        let ready_n = ready_count.load(Ordering::Relaxed);
        let (rss, _) = memory();
        peak_rss = peak_rss.max(rss);
        println!(
            "t={:>6.1}s pods seen {total:>6} ready {ready_n:>6} rss {rss} MiB",
            t1.elapsed().as_secs_f64()
        );
        if ready_n != last_ready {
            last_ready = ready_n;
            last_change = Instant::now();
        }
        if ready_n >= pods_wanted || last_change.elapsed() > Duration::from_secs(120) {
            break;
        }
    }
    let elapsed = last_ready_ms.load(Ordering::Relaxed) as f64 / 1000.0;
    let mut latencies = latencies.lock().map(|l| l.clone()).unwrap_or_default();
    latencies.sort_unstable();
    let pct = |q: f64| {
        latencies
            .get(((latencies.len() as f64 - 1.0) * q) as usize)
            .copied()
            .unwrap_or(-1)
    };
    let (rss, hwm) = memory();
    println!(
        "{last_ready}/{pods_wanted} pods Ready in {elapsed:.1}s: {:.0} pods/s; created->Ready p50 {}s p90 {}s p99 {}s max {}s",
        last_ready as f64 / elapsed,
        pct(0.5),
        pct(0.9),
        pct(0.99),
        pct(1.0)
    );
    let counts: Vec<usize> = per_node
        .lock()
        .map(|m| m.values().copied().collect())
        .unwrap_or_default();
    println!(
        "pods per node: {} nodes used, min {} max {}; simulator CPU {:.1}s during the pod phase",
        counts.len(),
        counts.iter().min().copied().unwrap_or(0),
        counts.iter().max().copied().unwrap_or(0),
        cpu_seconds() - cpu0
    );
    println!(
        "simulator memory: RSS now {rss} MiB, peak sampled {peak_rss} MiB, high-water {hwm} MiB"
    );
    cancel.cancel();
    let _ = tokio::time::timeout(Duration::from_secs(60), run).await;
    // exit before the API server does (it stops when its stdin closes with this
    // process): tasks of this process still reconnecting would log an error each
    drop(child);
    std::process::exit(0)
}
