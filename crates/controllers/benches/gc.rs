//! Garbage collector benchmark (not a test): 1,000 ConfigMap owners with 100 Secret
//! dependents each (100,000 owned objects) on the embedded API server; the collector
//! runs alone in a child process (no client rate limit). Prints the collector's memory
//! once its graph holds every object (live heap counted by the allocator, and resident
//! memory, each above the child's baseline), the time to build the graph, and the time
//! to collect the dependents of the 1,000 owners once they are deleted.
//!
//! Run: `cargo bench --bench gc` (`BENCH_OWNERS`, `BENCH_DEPENDENTS` change the 1,000
//! and 100).

// The counting allocator below wraps the global one: the one unsafe code in the
// workspace, and only in this benchmark.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout};
use std::io::{BufRead, Write};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use kube::api::{DeleteParams, ListParams, PostParams};
use kube::Api;

/// Counts live heap bytes, allocating with mimalloc as the `coxswain` binary does.
struct Counting;

static INNER: mimalloc::MiMalloc = mimalloc::MiMalloc;

static LIVE: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded to mimalloc with the caller's layout
        let p = unsafe { INNER.alloc(layout) };
        if !p.is_null() {
            LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `alloc` with this layout
        unsafe { INNER.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as `GlobalAlloc::realloc`'s contract
        let p = unsafe { INNER.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            LIVE.fetch_add(new_size, Ordering::Relaxed);
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        }
        p
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

mod common;

use common::NS;

/// Child: the collector alone. Prints `BASE`, then `SYNCED` once the graph holds
/// `expected` objects, then `STATS` when stdin closes.
async fn child(kubeconfig: &str, expected: usize) {
    let kc = kube::config::Kubeconfig::read_from(kubeconfig).expect("kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(kc, &Default::default())
        .await
        .expect("config");
    let client = kube::Client::try_from(config).expect("client");
    let base_heap = LIVE.load(Ordering::Relaxed);
    let base_rss = common::status_kib("VmRSS:");
    println!("BASE {base_heap} {base_rss}");
    let cache = std::sync::Arc::new(coxswain_runtime::cache::Cache::new(
        client.clone(),
        tokio_util::sync::CancellationToken::new(),
    ));
    let gc = coxswain_controllers::garbagecollector::GarbageCollector::new(
        cache,
        coxswain_runtime::discovery::SharedDiscovery::new(client),
        None,
        Default::default(),
    );
    let handle = gc.handle();
    let cancel = tokio_util::sync::CancellationToken::new();
    let task = tokio::spawn(gc.run(cancel.clone()));
    let start = Instant::now();
    loop {
        let (pending, _, _) = handle.backlog();
        if handle.is_synced() && pending == 0 && handle.graph_len() >= expected {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let took = start.elapsed().as_secs_f64();
    // let transient buffers go before measuring
    tokio::time::sleep(Duration::from_millis(500)).await;
    println!(
        "SYNCED {} {} {} {took}",
        handle.graph_len(),
        LIVE.load(Ordering::Relaxed),
        common::status_kib("VmRSS:")
    );
    let _ = std::io::stdout().flush();
    tokio::task::spawn_blocking(|| {
        let mut line = String::new();
        while std::io::stdin()
            .read_line(&mut line)
            .map(|n| n > 0)
            .unwrap_or(false)
        {
            line.clear();
        }
    })
    .await
    .ok();
    println!(
        "STATS {} {} {}",
        common::cpu_seconds(),
        common::status_kib("VmHWM:"),
        handle.graph_len()
    );
    cancel.cancel();
    let _ = task.await;
}

async fn create_all(client: &kube::Client, owners: usize, per: usize) -> Vec<(String, String)> {
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), NS);
    let secrets: Api<Secret> = Api::namespaced(client.clone(), NS);
    let made: Vec<(String, String)> = futures::stream::iter(0..owners)
        .map(|i| {
            let cms = cms.clone();
            async move {
                let cm: ConfigMap = serde_json::from_value(serde_json::json!({
                    "metadata": {"name": format!("owner-{i:05}")}, "data": {"k": "v"}
                }))
                .expect("configmap");
                let cm = cms.create(&PostParams::default(), &cm).await?;
                Ok::<_, kube::Error>((
                    cm.metadata.name.unwrap_or_default(),
                    cm.metadata.uid.unwrap_or_default(),
                ))
            }
        })
        .buffer_unordered(32)
        .try_collect()
        .await
        .expect("owners created");
    let jobs: Vec<(String, String, usize)> = made
        .iter()
        .flat_map(|(n, u)| (0..per).map(move |j| (n.clone(), u.clone(), j)))
        .collect();
    futures::stream::iter(jobs)
        .map(|(owner, uid, j)| {
            let secrets = secrets.clone();
            async move {
                let s: Secret = serde_json::from_value(serde_json::json!({
                    "metadata": {
                        "name": format!("{owner}-dep-{j:03}"),
                        "ownerReferences": [{
                            "apiVersion": "v1", "kind": "ConfigMap", "name": owner, "uid": uid,
                            "controller": true, "blockOwnerDeletion": true,
                        }],
                    },
                    "stringData": {"k": "v"},
                }))
                .expect("secret");
                secrets.create(&PostParams::default(), &s).await.map(|_| ())
            }
        })
        .buffer_unordered(64)
        .try_collect::<Vec<()>>()
        .await
        .expect("dependents created");
    made
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(pos) = args.iter().position(|a| a == "--child") {
        let expected = args.get(pos + 2).and_then(|v| v.parse().ok()).unwrap_or(0);
        child(&args[pos + 1], expected).await;
        return;
    }
    let owners = common::env_usize("BENCH_OWNERS", 1000);
    let per = common::env_usize("BENCH_DEPENDENTS", 100);
    let env = coxswain_runtime::envtest::start().await.expect("server");
    let client = env.client.clone();
    let ns: Namespace =
        serde_json::from_value(serde_json::json!({"metadata": {"name": NS}})).expect("ns");
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .expect("namespace");
    let t = Instant::now();
    let made = create_all(&client, owners, per).await;
    let created = t.elapsed();
    let expected = owners * (per + 1);

    let kubeconfig = env.server().kubeconfig.display().to_string();
    let mut gc = Command::new(std::env::current_exe().expect("exe"))
        .args(["--child", &kubeconfig, &expected.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("collector child");
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = gc.stdout.take().expect("stdout");
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            let _ = tx.send(line);
        }
    });
    let wait_line = |prefix: &str| loop {
        match rx.recv_timeout(Duration::from_secs(1800)) {
            Ok(l) if l.starts_with(prefix) => {
                break l[prefix.len()..]
                    .split_whitespace()
                    .map(|v| v.parse::<f64>().unwrap_or(f64::NAN))
                    .collect::<Vec<f64>>()
            }
            Ok(_) => continue,
            Err(e) => panic!("child said nothing ({e})"),
        }
    };
    let base = wait_line("BASE ");
    let synced = wait_line("SYNCED ");

    // delete every owner; the collector deletes their dependents
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), NS);
    let secrets: Api<Secret> = Api::namespaced(client.clone(), NS);
    let t = Instant::now();
    futures::stream::iter(made)
        .map(|(name, _)| {
            let cms = cms.clone();
            async move {
                cms.delete(&name, &DeleteParams::default())
                    .await
                    .map(|_| ())
            }
        })
        .buffer_unordered(32)
        .try_collect::<Vec<()>>()
        .await
        .expect("owners deleted");
    let deleted = t.elapsed();
    loop {
        let left = secrets
            .list_metadata(&ListParams::default().limit(1))
            .await
            .expect("list");
        if left.items.is_empty() {
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(3600),
            "collection did not finish"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let collected = t.elapsed();
    drop(gc.stdin.take());
    let stats = wait_line("STATS ");
    let _ = gc.wait();

    let heap = (synced[1] - base[0]) / expected as f64;
    let rss = (synced[2] - base[1]) * 1024.0 / expected as f64;
    println!(
        "garbage collector: {owners} owners x {per} dependents ({} owned objects), embedded API server, 2 cores",
        owners * per
    );
    println!(
        "  objects created in             {:.2} s",
        created.as_secs_f64()
    );
    println!("  graph nodes                    {}", synced[0]);
    println!("  graph built (initial sync) in  {:.2} s", synced[3]);
    println!(
        "  collector heap after sync      {:.1} MiB ({heap:.0} B per object)",
        (synced[1] - base[0]) / 1048576.0
    );
    println!(
        "  collector RSS after sync       {:.1} MiB above baseline ({rss:.0} B per object)",
        (synced[2] - base[1]) / 1024.0
    );
    println!(
        "  owners deleted in              {:.2} s",
        deleted.as_secs_f64()
    );
    println!(
        "  dependents collected in        {:.2} s after the first delete ({:.0} objects/s)",
        collected.as_secs_f64(),
        (owners * per) as f64 / collected.as_secs_f64()
    );
    println!("  collector CPU                  {:.2} s", stats[0]);
    println!(
        "  collector peak RSS             {:.1} MiB",
        stats[1] / 1024.0
    );
}
