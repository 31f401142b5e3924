//! PersistentVolume binding benchmark (not a test): 10,000 PersistentVolumeClaims of an
//! `Immediate` StorageClass of the simulated CSI driver on the embedded API server. The
//! PV binder (kube-controller-manager with `--controllers=persistentvolume-binder`) runs
//! in a child process and hands every claim to the simulated external provisioner, which
//! runs in the parent next to the server with the node simulator (10 nodes) and creates
//! a volume pre-bound to the claim; the binder then binds the two. Prints the wall time
//! until every claim is `Bound`, the controller manager's CPU seconds and its peak
//! resident memory.
//!
//! Run: `cargo bench -p coxswain-controllers --bench volumes` (`BENCH_PVCS`,
//! `BENCH_NODES` change the 10,000 and 10).

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use k8s_openapi::api::storage::v1::StorageClass;
use kube::api::PostParams;
use kube::Api;
use tokio_util::sync::CancellationToken;

/// The allocator of the `coxswain` binary, so the figures are the product's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod common;

const CLASS: &str = "fast";

fn claim(name: &str) -> PersistentVolumeClaim {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": name},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}},
            "storageClassName": CLASS,
        },
    }))
    .expect("pvc")
}

fn bound(c: &PersistentVolumeClaim) -> bool {
    c.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Bound")
}

#[tokio::main]
async fn main() {
    if common::run_child_if_asked().await {
        return;
    }
    let n = common::env_usize("BENCH_PVCS", 10_000);
    let nodes = common::env_usize("BENCH_NODES", 10);
    let env = coxswain_runtime::envtest::start().await.expect("server");
    let cancel = CancellationToken::new();

    // an Immediate class of the simulated driver
    let class: StorageClass = serde_json::from_value(serde_json::json!({
        "metadata": {"name": CLASS},
        "provisioner": coxswain_sim::storage::DRIVER,
        "volumeBindingMode": "Immediate",
        "reclaimPolicy": "Delete",
    }))
    .expect("class");
    Api::<StorageClass>::all(env.client.clone())
        .create(&PostParams::default(), &class)
        .await
        .expect("storage class");

    // the simulator (provisioner included), and a watch that counts the bound claims
    let mgr = common::simulated_cluster(&env, nodes).await;
    let (done, mut rx) = common::count_reaching::<PersistentVolumeClaim>(&mgr, bound);
    let c = cancel.clone();
    let sim_task = tokio::spawn(async move { mgr.start(c).await });

    let kubeconfig = env.server().kubeconfig.display().to_string();
    let cm = common::ControllerManagerChild::spawn(&kubeconfig, "persistentvolume-binder");
    common::create_namespace(&env.client).await;
    let api: Api<PersistentVolumeClaim> = Api::namespaced(env.client.clone(), common::NS);
    let start = Instant::now();
    common::create_all(&api, n, |i| claim(&format!("c{i:05}")), "claims").await;
    let created = start.elapsed();
    let finished = tokio::time::timeout(Duration::from_secs(1800), rx.wait_for(|d| *d >= n))
        .await
        .is_ok();
    let took = start.elapsed();
    let (cpu, peak_kib) = cm.stop();
    cancel.cancel();
    let _ = sim_task.await;
    println!(
        "{n} PersistentVolumeClaims of an Immediate class of the simulated CSI driver on the \
         embedded API server, {nodes} simulated nodes, 2 cores"
    );
    println!(
        "  Bound:                         {} of {n}{}",
        done.load(Ordering::SeqCst),
        if finished {
            ""
        } else {
            " (gave up after 30 min)"
        }
    );
    println!(
        "  created in                     {:.2} s",
        created.as_secs_f64()
    );
    println!(
        "  all Bound in                   {:.2} s",
        took.as_secs_f64()
    );
    common::print_controller_manager(cpu, peak_kib);
}
