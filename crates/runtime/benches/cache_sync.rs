//! Initial-sync benchmark (not a test): 50,000 ConfigMaps of ~1 KiB in the embedded API
//! server; time to a synced cache and resident memory per cached object, for coxswain's
//! informer cache and for a kube-runtime reflector store, in the same run.
//!
//! Run: `cargo bench -p coxswain-runtime --bench cache_sync` (`BENCH_OBJECTS` changes the
//! 50,000). Each client runs in its own child process so that its memory is its own.

use std::collections::BTreeMap;
use std::process::Command;
use std::time::Instant;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{ListParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Api, Client};
use tokio_util::sync::CancellationToken;

fn rss_kib() -> u64 {
    coxswain_runtime::metrics::process_status_kib("VmRSS:").unwrap_or(0)
}

async fn client(kubeconfig: &str) -> Client {
    let kc = Kubeconfig::read_from(kubeconfig).expect("kubeconfig");
    let cfg = kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .expect("config");
    Client::try_from(cfg).expect("client")
}

/// Child process: sync one cache, print "seconds bytes_per_object".
async fn child(which: &str, kubeconfig: &str, n: usize) {
    let client = client(kubeconfig).await;
    // warm the connection so that TLS set-up is not measured (one object: a whole list
    // here would leave freed pages that the cache then reuses, hiding its real size)
    let _ = Api::<ConfigMap>::namespaced(client.clone(), "default")
        .list(&ListParams::default().limit(1))
        .await;
    let before = rss_kib();
    let start = Instant::now();
    let (len, keep): (usize, Box<dyn std::any::Any>) = match which {
        "coxswain" => {
            let cache = coxswain_runtime::cache::Cache::new(client, CancellationToken::new());
            let inf = cache.informer::<ConfigMap>();
            inf.wait_for_sync().await;
            (inf.store().len(), Box::new((cache, inf)))
        }
        _ => {
            use kube::runtime::{reflector, watcher, WatchStreamExt};
            let api: Api<ConfigMap> = Api::all(client);
            let (reader, writer) = reflector::store::<ConfigMap>();
            let stream = reflector(
                writer,
                watcher(api, watcher::Config::default().streaming_lists()),
            )
            .applied_objects();
            tokio::spawn(stream.for_each(|_| async {}));
            reader.wait_until_ready().await.expect("ready");
            (reader.state().len(), Box::new(reader))
        }
    };
    let secs = start.elapsed().as_secs_f64();
    let after = rss_kib();
    assert!(len >= n, "{which}: synced {len} of {n}");
    println!(
        "{secs} {}",
        (after.saturating_sub(before) * 1024) as f64 / len as f64
    );
    drop(keep);
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(pos) = args.iter().position(|a| a == "--child") {
        let n: usize = args[pos + 3].parse().expect("n");
        child(&args[pos + 1], &args[pos + 2], n).await;
        return;
    }
    let n: usize = std::env::var("BENCH_OBJECTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50_000);
    let env = coxswain_runtime::envtest::start().await.expect("server");
    let api: Api<ConfigMap> = Api::namespaced(env.client.clone(), "default");
    let payload = "x".repeat(1000);
    futures::stream::iter(0..n)
        .map(|i| {
            let api = api.clone();
            let mut c = ConfigMap::default();
            c.metadata.name = Some(format!("cm-{i:06}"));
            c.metadata.labels = Some(BTreeMap::from([("app".to_string(), "bench".to_string())]));
            c.data = Some(BTreeMap::from([("payload".to_string(), payload.clone())]));
            async move { api.create(&PostParams::default(), &c).await.map(|_| ()) }
        })
        .buffer_unordered(32)
        .try_collect::<Vec<()>>()
        .await
        .expect("populate");
    let kubeconfig = env.server().kubeconfig.display().to_string();
    let exe = std::env::current_exe().expect("exe");
    println!("initial sync of {n} ConfigMaps (~1 KiB) from the embedded API server, 2 cores");
    println!(
        "{:<22} {:>12} {:>20}",
        "client", "sync time", "RSS per object"
    );
    for which in ["coxswain", "kube-rs"] {
        let mut times = Vec::new();
        let mut mems = Vec::new();
        for _ in 0..3 {
            let out = Command::new(&exe)
                .args(["--child", which, &kubeconfig, &n.to_string()])
                .output()
                .expect("child runs");
            let text = String::from_utf8_lossy(&out.stdout);
            let line = text.lines().last().unwrap_or_default().to_string();
            let mut parts = line.split_whitespace();
            let (Some(t), Some(m)) = (parts.next(), parts.next()) else {
                panic!(
                    "{which} child failed: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
            };
            times.push(t.parse::<f64>().expect("time"));
            mems.push(m.parse::<f64>().expect("mem"));
        }
        times.sort_by(|a, b| a.total_cmp(b));
        mems.sort_by(|a, b| a.total_cmp(b));
        println!("{:<22} {:>10.3} s {:>17.0} B", which, times[1], mems[1]);
    }
    println!(
        "targets: coxswain <= 0.3 s and <= 1400 B per object (kube-rs measured 1.0-2.0 s, ~4.3 KB)"
    );
}
