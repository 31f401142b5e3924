//! Rollout benchmark (not a test): 1,000 Deployments of 5 replicas on the embedded API
//! server, rolled out by the controller manager (Deployment and ReplicaSet controllers)
//! running in a child process; pods are made ready by a kubelet stand-in in the parent.
//! Prints the wall time until every Deployment is complete (as `kubectl rollout status`
//! judges it), the controller manager's CPU seconds and its peak resident memory.
//!
//! Run: `cargo bench -p coxswain-controllers --bench rollout` (`BENCH_DEPLOYMENTS`,
//! `BENCH_REPLICAS` change the 1,000 and 5).

use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use kube::api::ListParams;
use kube::Api;
use tokio_util::sync::CancellationToken;

/// The allocator of the `coxswain` binary, so the figures are the product's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod common;

fn template(name: &str, replicas: usize) -> Deployment {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "main", "image": "nginx:1.27"}]},
            },
        },
    }))
    .expect("deployment")
}

fn complete(d: &Deployment, replicas: usize) -> bool {
    let Some(st) = &d.status else { return false };
    let r = replicas as i32;
    st.observed_generation == d.metadata.generation
        && st.updated_replicas == Some(r)
        && st.available_replicas == Some(r)
        && st.replicas == Some(r)
}

#[tokio::main]
async fn main() {
    if common::run_child_if_asked().await {
        return;
    }
    let n = common::env_usize("BENCH_DEPLOYMENTS", 1000);
    let replicas = common::env_usize("BENCH_REPLICAS", 5);
    let env = coxswain_runtime::envtest::start().await.expect("server");
    let cancel = CancellationToken::new();
    let kubelet = coxswain_runtime::envtest::fake_kubelet(env.client.clone(), None, cancel.clone());
    let kubeconfig = env.server().kubeconfig.display().to_string();
    let cm = common::ControllerManagerChild::spawn(&kubeconfig, "*");
    common::create_namespace(&env.client).await;
    let api: Api<Deployment> = Api::namespaced(env.client.clone(), common::NS);
    let start = Instant::now();
    common::create_all(
        &api,
        n,
        |i| template(&format!("d{i:04}"), replicas),
        "deployments",
    )
    .await;
    let created = start.elapsed();
    let mut done = 0;
    while start.elapsed() < Duration::from_secs(1800) {
        let list = api.list(&ListParams::default()).await.expect("list");
        done = list.items.iter().filter(|d| complete(d, replicas)).count();
        if done == n {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let took = start.elapsed();
    let (cpu, peak_kib) = cm.stop();
    cancel.cancel();
    let _ = kubelet.await;
    println!(
        "rollout of {n} Deployments x {replicas} replicas on the embedded API server, 2 cores"
    );
    println!("  complete:                      {done} of {n}");
    println!(
        "  created in                     {:.2} s",
        created.as_secs_f64()
    );
    println!(
        "  all rolled out in              {:.2} s",
        took.as_secs_f64()
    );
    common::print_controller_manager(cpu, peak_kib);
}
