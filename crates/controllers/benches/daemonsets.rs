//! DaemonSet rollout benchmark (not a test): a DaemonSet on 500 nodes of the embedded
//! API server, rolled out by the controller manager (the DaemonSet controller only)
//! running in a child process; pods are made ready by a kubelet stand-in in the parent.
//! The DaemonSet first starts on every node (create), then its image changes with
//! `maxUnavailable: 10%` (rollout). Prints the wall time of each phase until the status
//! says every node runs an available pod of the current template (as `kubectl rollout
//! status` judges it), the controller manager's CPU seconds and its peak resident
//! memory.
//!
//! Run: `cargo bench -p coxswain-controllers --bench daemonsets` (`BENCH_NODES` changes
//! the 500, `BENCH_MAX_UNAVAILABLE` the 10%).

use std::io::BufRead;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{Namespace, Node};
use kube::api::{Patch, PatchParams, PostParams};
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
        controllers: vec!["daemonset".to_string()],
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

fn daemon_set(max_unavailable: &str) -> DaemonSet {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": "agent"},
        "spec": {
            "selector": {"matchLabels": {"app": "agent"}},
            "updateStrategy": {"type": "RollingUpdate",
                               "rollingUpdate": {"maxUnavailable": max_unavailable}},
            "template": {
                "metadata": {"labels": {"app": "agent"}},
                "spec": {"containers": [{"name": "main", "image": "agent:1"}]},
            },
        },
    }))
    .expect("daemon set")
}

/// Whether every one of `nodes` runs an available pod of the current template.
fn rolled_out(ds: &DaemonSet, nodes: i32) -> bool {
    let Some(st) = &ds.status else { return false };
    st.observed_generation == ds.metadata.generation
        && st.desired_number_scheduled == nodes
        && st.updated_number_scheduled == Some(nodes)
        && st.number_available == Some(nodes)
}

async fn wait_rolled_out(api: &Api<DaemonSet>, nodes: i32) -> bool {
    let deadline = Instant::now() + Duration::from_secs(1800);
    while Instant::now() < deadline {
        let ds = api.get_status("agent").await.expect("daemon set");
        if rolled_out(&ds, nodes) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(pos) = args.iter().position(|a| a == "--child") {
        child(&args[pos + 1]).await;
        return;
    }
    let n = env_usize("BENCH_NODES", 500);
    let max_unavailable = std::env::var("BENCH_MAX_UNAVAILABLE").unwrap_or_else(|_| "10%".into());
    let env = coxswain_runtime::envtest::start().await.expect("server");
    let nodes: Api<Node> = Api::all(env.client.clone());
    futures::stream::iter(0..n)
        .map(|i| {
            let nodes = nodes.clone();
            async move {
                let node: Node = serde_json::from_value(serde_json::json!({
                    "metadata": {"name": format!("node-{i:04}")}
                }))
                .expect("node");
                nodes
                    .create(&PostParams::default(), &node)
                    .await
                    .map(|_| ())
            }
        })
        .buffer_unordered(32)
        .try_collect::<Vec<()>>()
        .await
        .expect("create nodes");
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
    let api: Api<DaemonSet> = Api::namespaced(env.client.clone(), "bench");
    let start = Instant::now();
    api.create(&PostParams::default(), &daemon_set(&max_unavailable))
        .await
        .expect("create daemon set");
    let started = wait_rolled_out(&api, n as i32).await;
    let create_took = start.elapsed();
    let start = Instant::now();
    let image = serde_json::json!({"spec": {"template": {"spec": {"containers": [{"name": "main", "image": "agent:2"}]}}}});
    api.patch("agent", &PatchParams::default(), &Patch::Strategic(&image))
        .await
        .expect("image update");
    let rolled = wait_rolled_out(&api, n as i32).await;
    let rollout_took = start.elapsed();
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
    println!(
        "DaemonSet on {n} nodes, image rollout with maxUnavailable {max_unavailable}, embedded API server"
    );
    println!(
        "  started on every node:         {} in {:.2} s",
        if started { "yes" } else { "NO" },
        create_took.as_secs_f64()
    );
    println!(
        "  rolled out to every node:      {} in {:.2} s",
        if rolled { "yes" } else { "NO" },
        rollout_took.as_secs_f64()
    );
    println!("  controller manager CPU         {cpu:.2} s");
    println!(
        "  controller manager peak RSS    {:.1} MiB",
        peak_kib / 1024.0
    );
}
