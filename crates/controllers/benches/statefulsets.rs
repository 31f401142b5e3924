//! StatefulSet benchmark (not a test): 100 StatefulSets of 5 replicas (OrderedReady) on
//! the embedded API server, scaled up from nothing and then rolled to a new image by
//! the controller manager running in a child process; pods are made ready by a kubelet
//! stand-in in the parent. Prints the wall time until every StatefulSet is up, then
//! until every one is rolled (current revision = update revision, all pods updated and
//! ready), the controller manager's CPU seconds and its peak resident memory.
//!
//! Run: `cargo bench -p coxswain-controllers --bench statefulsets` (`BENCH_STATEFULSETS`,
//! `BENCH_REPLICAS` change the 100 and 5).

use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::StatefulSet;
use kube::api::{ListParams, Patch, PatchParams};
use kube::Api;
use tokio_util::sync::CancellationToken;

/// The allocator of the `coxswain` binary, so the figures are the product's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod common;

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
    if common::run_child_if_asked().await {
        return;
    }
    let n = common::env_usize("BENCH_STATEFULSETS", 100);
    let replicas = common::env_usize("BENCH_REPLICAS", 5);
    let env = coxswain_runtime::envtest::start().await.expect("server");
    let cancel = CancellationToken::new();
    let kubelet = coxswain_runtime::envtest::fake_kubelet(env.client.clone(), None, cancel.clone());
    let kubeconfig = env.server().kubeconfig.display().to_string();
    let cm = common::ControllerManagerChild::spawn(&kubeconfig, "*");
    common::create_namespace(&env.client).await;
    let api: Api<StatefulSet> = Api::namespaced(env.client.clone(), common::NS);

    // scale up: every set from nothing to `replicas`, one pod at a time in ordinal order
    let start = Instant::now();
    common::create_all(
        &api,
        n,
        |i| template(&format!("s{i:03}"), replicas),
        "statefulsets",
    )
    .await;
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

    let (cpu, peak_kib) = cm.stop();
    cancel.cancel();
    let _ = kubelet.await;
    println!("{n} StatefulSets x {replicas} replicas (OrderedReady) on the embedded API server");
    println!(
        "  up:                            {up} of {n} in {:.2} s",
        up_took.as_secs_f64()
    );
    println!(
        "  rolled to a new image:         {rolled_n} of {n} in {:.2} s",
        roll_took.as_secs_f64()
    );
    common::print_controller_manager(cpu, peak_kib);
}
