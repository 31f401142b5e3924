//! HorizontalPodAutoscaler benchmark (not a test): 1,000 HPAs over 1,000 Deployments on
//! the embedded API server serving metrics.k8s.io, reconciled by the controller manager
//! (the HPA controller only, default 15 s sync period) in a child process. Each
//! Deployment has one running pod requesting 100m cpu and using 50m (the simulated usage
//! annotation), so every HPA reads its target's `/scale`, lists its pods' metrics and
//! computes a proposal each round, and writes its status when it changes (the first
//! round). Prints the wall time until every HPA has a status, then the controller
//! manager's CPU seconds per sync round over the following rounds, and its peak RSS.
//!
//! Run: `cargo bench -p coxswain-controllers --bench hpa` (`BENCH_HPAS` changes the
//! 1,000, `BENCH_ROUNDS` the 4 measured rounds).

use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::Api;
use serde_json::json;

/// The allocator of the `coxswain` binary, so the figures are the product's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod common;

const SYNC: Duration = Duration::from_secs(15);

fn now() -> String {
    k8s_openapi::jiff::Timestamp::now().to_string()
}

async fn create_one(client: kube::Client, i: usize) -> Result<(), kube::Error> {
    let ns = common::NS;
    let name = format!("app-{i:04}");
    let deployment: Deployment = serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": {"containers": [{"name": "main", "image": "app:1",
                                       "resources": {"requests": {"cpu": "100m"}}}]}}},
    }))
    .expect("deployment");
    Api::<Deployment>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), &deployment)
        .await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": format!("{name}-0"), "labels": {"app": name},
                     "annotations": {"sim.coxswain.dev/cpu-usage": "50m"}},
        "spec": {"nodeName": "node-0", "containers": [{"name": "main", "image": "app:1",
                 "resources": {"requests": {"cpu": "100m"}}}]},
    }))
    .expect("pod");
    pods.create(&PostParams::default(), &pod).await?;
    pods.patch_status(
        &format!("{name}-0"),
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"phase": "Running", "startTime": now(),
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": now()}]}})),
    )
    .await?;
    let hpa: HorizontalPodAutoscaler = serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
                 "minReplicas": 1, "maxReplicas": 10,
                 "metrics": [{"type": "Resource", "resource": {"name": "cpu",
                              "target": {"type": "Utilization", "averageUtilization": 50}}}]},
    }))
    .expect("hpa");
    Api::<HorizontalPodAutoscaler>::namespaced(client, ns)
        .create(&PostParams::default(), &hpa)
        .await?;
    Ok(())
}

#[tokio::main]
async fn main() {
    if common::run_child_if_asked().await {
        return;
    }
    let n = common::env_usize("BENCH_HPAS", 1000);
    let rounds = common::env_usize("BENCH_ROUNDS", 4);
    let env = coxswain_runtime::envtest::start_with(|c| c.metrics_api = true)
        .await
        .expect("server");
    let client = env.client.clone();
    let nodes: Api<Node> = Api::all(client.clone());
    let node: Node = serde_json::from_value(json!({"metadata": {"name": "node-0"}})).unwrap();
    nodes
        .create(&PostParams::default(), &node)
        .await
        .expect("node");
    nodes
        .patch_status(
            "node-0",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"status": {"conditions": [{"type": "Ready", "status": "True",
                "lastHeartbeatTime": now(), "lastTransitionTime": now()}]}}),
            ),
        )
        .await
        .expect("node ready");
    common::create_namespace(&client).await;
    futures::stream::iter(0..n)
        .map(|i| create_one(client.clone(), i))
        .buffer_unordered(32)
        .try_collect::<Vec<()>>()
        .await
        .expect("create deployments, pods and HPAs");
    let kubeconfig = env.server().kubeconfig.display().to_string();
    let start = Instant::now();
    let cm = common::ControllerManagerChild::spawn(&kubeconfig, "horizontalpodautoscaling");
    let hpas: Api<HorizontalPodAutoscaler> = Api::namespaced(client.clone(), common::NS);
    let deadline = Instant::now() + Duration::from_secs(1800);
    let mut synced = 0;
    while Instant::now() < deadline {
        let list = hpas.list(&ListParams::default()).await.expect("hpas");
        synced = list
            .items
            .iter()
            .filter(|h| {
                h.status
                    .as_ref()
                    .is_some_and(|s| s.current_metrics.as_ref().is_some_and(|m| !m.is_empty()))
            })
            .count();
        if synced == n {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let first_round = start.elapsed();
    let cpu_first = cm.cpu_seconds_now();
    // steady state: every HPA is reconciled once per sync period
    let measure = Instant::now();
    tokio::time::sleep(SYNC * rounds as u32).await;
    let measured = measure.elapsed();
    let cpu_after = cm.cpu_seconds_now();
    let (cpu_total, peak_kib) = cm.stop();
    let scaled = Api::<Deployment>::namespaced(client, common::NS)
        .list(&ListParams::default())
        .await
        .expect("deployments")
        .items
        .iter()
        .filter(|d| d.spec.replicas != Some(1))
        .count();
    println!("{n} HPAs over {n} Deployments (1 pod each, 50% of the 50% cpu target), 15 s sync, embedded API server with metrics.k8s.io");
    println!(
        "  every HPA with a status:        {synced}/{n} after {:.1} s (includes the first 15 s queue delay)",
        first_round.as_secs_f64()
    );
    println!("  controller manager CPU, start to first full round: {cpu_first:.2} s");
    println!(
        "  controller manager CPU per sync round (steady):    {:.3} s ({:.2} s over {:.0} s = {rounds} rounds)",
        (cpu_after - cpu_first) / (measured.as_secs_f64() / SYNC.as_secs_f64()),
        cpu_after - cpu_first,
        measured.as_secs_f64()
    );
    println!("  controller manager CPU total    {cpu_total:.2} s");
    println!(
        "  controller manager peak RSS     {:.1} MiB",
        peak_kib / 1024.0
    );
    println!("  Deployments rescaled (expected 0): {scaled}");
}
