//! StatefulSet benchmark (not a test): 100 StatefulSets of 5 replicas (OrderedReady) on
//! the embedded API server, scaled up from nothing and then rolled to a new image by
//! the controller manager running in a child process; pods are made ready by a kubelet
//! stand-in in the parent. Prints the wall time until every StatefulSet is up, then
//! until every one is rolled (current revision = update revision, all pods updated and
//! ready), the controller manager's CPU seconds and its peak resident memory.
//!
//! Run: `cargo bench -p coxswain-controllers --bench statefulsets` (`BENCH_STATEFULSETS`,
//! `BENCH_REPLICAS` change the 100 and 5).

use std::io::BufRead;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::Api;
use tokio_util::sync::CancellationToken;

/// The allocator of the `coxswain` binary, so the figures are the product's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// `/proc/self/status` field in KiB.
fn status_kib(field: &str) -> u64 {
    coxswain_runtime::metrics::process_status_kib(field).unwrap_or(0)
}

/// User + system CPU seconds of this process.
fn cpu_seconds() -> f64 {
    coxswain_runtime::metrics::process_cpu_seconds().unwrap_or(f64::NAN)
}

/// Child: the controller manager until SIGTERM; then prints "STATS <cpu s> <peak KiB>".
async fn child(kubeconfig: &str) {
    let kc = kube::config::Kubeconfig::read_from(kubeconfig).expect("kubeconfig");
    let kube = kube::Config::from_custom_kubeconfig(kc, &Default::default())
        .await
        .expect("config");
    let config = coxswain_controllers::controller_manager::ControllerManagerConfig {
        leader_elect: false,
        kube_api_qps: 0.0,
        secure_port: 0,
        min_resync_period: Duration::ZERO,
        ..Default::default()
    };
    let registry = coxswain_controllers::builtin();
    let cancel = coxswain_runtime::manager::shutdown_signal();
    println!("READY");
    let result =
        coxswain_controllers::controller_manager::run(kube, &config, &registry, cancel, |_| {})
            .await;
    if let Err(e) = result {
        eprintln!("controller manager: {e}");
    }
    println!("STATS {} {}", cpu_seconds(), status_kib("VmHWM:"));
}

fn template(name: &str, replicas: usize) -> StatefulSet {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "serviceName": name,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "main", "image": "nginx:1.27"}]},
            },
        },
    }))
    .expect("statefulset")
}

/// Every pod updated and ready, and the update revision current.
fn rolled(s: &StatefulSet, replicas: usize) -> bool {
    let Some(st) = &s.status else { return false };
    let r = replicas as i32;
    st.observed_generation == s.metadata.generation
        && st.replicas == r
        && st.ready_replicas == Some(r)
        && st.updated_replicas == Some(r)
        && st.current_revision.is_some()
        && st.current_revision == st.update_revision
}

async fn wait_all(api: &Api<StatefulSet>, n: usize, replicas: usize, start: Instant) -> usize {
    let mut done = 0;
    while start.elapsed() < Duration::from_secs(1800) {
        let list = api.list(&ListParams::default()).await.expect("list");
        done = list.items.iter().filter(|s| rolled(s, replicas)).count();
        if done == n {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    done
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(pos) = args.iter().position(|a| a == "--child") {
        child(&args[pos + 1]).await;
        return;
    }
    let n = env_usize("BENCH_STATEFULSETS", 100);
    let replicas = env_usize("BENCH_REPLICAS", 5);
    let env = coxswain_runtime::envtest::start().await.expect("server");
    let cancel = CancellationToken::new();
    let kubelet = coxswain_runtime::envtest::fake_kubelet(env.client.clone(), None, cancel.clone());
    let kubeconfig = env.server().kubeconfig.display().to_string();
    let mut cm = Command::new(std::env::current_exe().expect("exe"))
        .args(["--child", &kubeconfig])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("controller manager child");
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = cm.stdout.take().expect("stdout");
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            let _ = tx.send(line);
        }
    });
    assert_eq!(rx.recv().expect("child starts"), "READY");
    let namespaces: Api<Namespace> = Api::all(env.client.clone());
    let ns: Namespace =
        serde_json::from_value(serde_json::json!({"metadata": {"name": "bench"}})).expect("ns");
    namespaces
        .create(&PostParams::default(), &ns)
        .await
        .expect("namespace");
    let api: Api<StatefulSet> = Api::namespaced(env.client.clone(), "bench");

    // scale up: every set from nothing to `replicas`, one pod at a time in ordinal order
    let start = Instant::now();
    futures::stream::iter(0..n)
        .map(|i| {
            let api = api.clone();
            async move {
                api.create(
                    &PostParams::default(),
                    &template(&format!("s{i:03}"), replicas),
                )
                .await
                .map(|_| ())
            }
        })
        .buffer_unordered(32)
        .try_collect::<Vec<()>>()
        .await
        .expect("create statefulsets");
    let up = wait_all(&api, n, replicas, start).await;
    let up_took = start.elapsed();

    // roll: a new image everywhere, replaced from the highest ordinal down
    let start = Instant::now();
    futures::stream::iter(0..n)
        .map(|i| {
            let api = api.clone();
            async move {
                let body = serde_json::json!({"spec": {"template": {"spec": {
                    "containers": [{"name": "main", "image": "nginx:1.28"}]}}}});
                api.patch(
                    &format!("s{i:03}"),
                    &PatchParams::default(),
                    &Patch::Strategic(&body),
                )
                .await
                .map(|_| ())
            }
        })
        .buffer_unordered(32)
        .try_collect::<Vec<()>>()
        .await
        .expect("update statefulsets");
    // the status must first show the new generation before `rolled` can hold again
    let rolled_n = wait_all(&api, n, replicas, start).await;
    let roll_took = start.elapsed();

    let pid = cm.id().to_string();
    let _ = Command::new("kill").args(["-TERM", &pid]).status();
    let mut stats = String::new();
    while let Ok(line) = rx.recv_timeout(Duration::from_secs(60)) {
        if let Some(s) = line.strip_prefix("STATS ") {
            stats = s.to_string();
            break;
        }
    }
    let _ = cm.wait();
    cancel.cancel();
    let _ = kubelet.await;
    let mut parts = stats.split_whitespace();
    let cpu: f64 = parts
        .next()
        .and_then(|v| v.parse().ok())
        .unwrap_or(f64::NAN);
    let peak_kib: f64 = parts
        .next()
        .and_then(|v| v.parse().ok())
        .unwrap_or(f64::NAN);
    println!("{n} StatefulSets x {replicas} replicas (OrderedReady) on the embedded API server");
    println!(
        "  up:                            {up} of {n} in {:.2} s",
        up_took.as_secs_f64()
    );
    println!(
        "  rolled to a new image:         {rolled_n} of {n} in {:.2} s",
        roll_took.as_secs_f64()
    );
    println!("  controller manager CPU         {cpu:.2} s");
    println!(
        "  controller manager peak RSS    {:.1} MiB",
        peak_kib / 1024.0
    );
}
