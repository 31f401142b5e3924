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

use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Patch, PatchParams, PostParams};
use kube::Api;
use tokio_util::sync::CancellationToken;

/// The allocator of the `coxswain` binary, so the figures are the product's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod common;

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
    if common::run_child_if_asked().await {
        return;
    }
    let n = common::env_usize("BENCH_NODES", 500);
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
                let name = node.metadata.name.clone().unwrap_or_default();
                nodes.create(&PostParams::default(), &node).await?;
                // these nodes stand for Ready ones: lift the not-ready taint the API
                // server puts on every new node (the node lifecycle controller's work
                // on a real cluster, which this bench does not run)
                let untaint = serde_json::json!({"spec": {"taints": null}});
                nodes
                    .patch(&name, &PatchParams::default(), &Patch::Merge(&untaint))
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
    let cm = common::ControllerManagerChild::spawn(&kubeconfig, "daemonset");
    common::create_namespace(&env.client).await;
    let api: Api<DaemonSet> = Api::namespaced(env.client.clone(), common::NS);
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
    let (cpu, peak_kib) = cm.stop();
    cancel.cancel();
    let _ = kubelet.await;
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
    common::print_controller_manager(cpu, peak_kib);
}
