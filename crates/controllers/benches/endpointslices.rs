//! EndpointSlice benchmark (not a test): 1,000 Services over 10,000 pods of 1,000
//! Deployments on the embedded API server and simulated nodes (the node simulator in this
//! process: scheduler, kubelets, pod IPs), with the controller manager (Deployment,
//! ReplicaSet and EndpointSlice controllers) in a child process. First every Service's
//! slices come to list its Deployment's ready pods; then every Deployment's template
//! changes (a rolling update replacing every pod) until each Service lists exactly its
//! new pods again. A watch on EndpointSlices counts the controller's slice writes
//! (creations, updates, deletions) and a watch on pods the pod changes (creations,
//! deletions, readiness flips); printed: the wall time of each phase, slice writes per
//! pod change, the controller manager's CPU seconds and its peak resident memory.
//!
//! Run: `cargo bench -p coxswain-controllers --bench endpointslices` (`BENCH_SERVICES`
//! changes the 1,000, `BENCH_PODS` the 10,000, `BENCH_NODES` the number of nodes; the
//! controller runs with its default 100 endpoints per slice).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use coxswain_runtime::cache::{Change, Store};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{Patch, PatchParams, PostParams};
use kube::Api;
use tokio_util::sync::CancellationToken;

/// The allocator of the `coxswain` binary, so the figures are the product's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod common;

#[derive(Default)]
struct Counters {
    slice_creates: AtomicU64,
    slice_updates: AtomicU64,
    slice_deletes: AtomicU64,
    pod_changes: AtomicU64,
}

impl Counters {
    fn snapshot(&self) -> [u64; 4] {
        [
            self.slice_creates.load(Ordering::SeqCst),
            self.slice_updates.load(Ordering::SeqCst),
            self.slice_deletes.load(Ordering::SeqCst),
            self.pod_changes.load(Ordering::SeqCst),
        ]
    }
}

fn ready(p: &Pod) -> bool {
    p.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

fn deployment(name: &str, replicas: usize) -> Deployment {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "web", "image": "nginx:1",
                    "ports": [{"name": "http", "containerPort": 8080}]}]},
            },
        },
    }))
    .expect("deployment")
}

fn service(name: &str) -> Service {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": name},
        "spec": {"selector": {"app": name},
                 "ports": [{"name": "http", "port": 80, "targetPort": "http"}]},
    }))
    .expect("service")
}

/// Whether every Service's slices list exactly `replicas` endpoints, all ready, and
/// (when given) only pods of the Deployments' current template (`template_hash` per
/// Deployment is the pod-template-hash its ready pods must carry).
fn converged(
    slices: &Store<EndpointSlice>,
    pods: &Store<Pod>,
    deployments: &Store<Deployment>,
    services: usize,
    replicas: usize,
    rolled: bool,
) -> bool {
    let mut per_service: HashMap<String, (usize, usize)> = HashMap::new();
    for s in slices.list() {
        let Some(svc) = s
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("kubernetes.io/service-name"))
        else {
            continue;
        };
        let e = per_service.entry(svc.clone()).or_default();
        for ep in s.endpoints.iter().flatten() {
            e.0 += 1;
            if ep.conditions.as_ref().and_then(|c| c.ready) == Some(true) {
                e.1 += 1;
            }
        }
    }
    if per_service.len() < services
        || per_service
            .values()
            .any(|(n, r)| *n != replicas || *r != replicas)
    {
        return false;
    }
    if !rolled {
        return true;
    }
    // every Deployment rolled out, and no pod of an old template left
    deployments.list().iter().all(|d| {
        let st = d.status.clone().unwrap_or_default();
        st.observed_generation == d.metadata.generation
            && st.updated_replicas == Some(replicas as i32)
            && st.available_replicas == Some(replicas as i32)
            && st.replicas == Some(replicas as i32)
    }) && pods.len() == services * replicas
}

async fn wait(
    slices: &Store<EndpointSlice>,
    pods: &Store<Pod>,
    deployments: &Store<Deployment>,
    services: usize,
    replicas: usize,
    rolled: bool,
) -> bool {
    let deadline = Instant::now() + Duration::from_secs(3600);
    while Instant::now() < deadline {
        if converged(slices, pods, deployments, services, replicas, rolled) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    false
}

#[tokio::main]
async fn main() {
    if common::run_child_if_asked().await {
        return;
    }
    let services = common::env_usize("BENCH_SERVICES", 1000).max(1);
    let pods_wanted = common::env_usize("BENCH_PODS", 10_000);
    let replicas = (pods_wanted / services).max(1);
    // room for the 25% surge of a rolling update at 110 pods per node
    let nodes = common::env_usize("BENCH_NODES", (services * replicas * 13).div_ceil(1100) + 1);
    let env = coxswain_runtime::envtest::start().await.expect("server");
    let cancel = CancellationToken::new();

    // the simulator and the watches, in this process
    let mgr = common::simulated_cluster(&env, nodes).await;
    let counters = Arc::new(Counters::default());
    let cache = mgr.cache();
    let slice_informer = cache.informer::<EndpointSlice>();
    {
        let c = counters.clone();
        slice_informer.add_handler(move |change| {
            let n = match change {
                Change::Added(_) => &c.slice_creates,
                Change::Updated { .. } => &c.slice_updates,
                Change::Deleted(_) => &c.slice_deletes,
            };
            n.fetch_add(1, Ordering::SeqCst);
        });
    }
    let pod_informer = cache.informer::<Pod>();
    {
        let c = counters.clone();
        pod_informer.add_handler(move |change| {
            let changed = match change {
                Change::Added(_) | Change::Deleted(_) => true,
                Change::Updated { old, new } => {
                    ready(old) != ready(new)
                        || old.metadata.deletion_timestamp != new.metadata.deletion_timestamp
                }
            };
            if changed {
                c.pod_changes.fetch_add(1, Ordering::SeqCst);
            }
        });
    }
    let slices = slice_informer.store().clone();
    let pods = pod_informer.store().clone();
    let deployments = cache.informer::<Deployment>().store().clone();
    let c = cancel.clone();
    let mgr_task = tokio::spawn(async move { mgr.start(c).await });

    let kubeconfig = env.server().kubeconfig.display().to_string();
    let cm =
        common::ControllerManagerChild::spawn(&kubeconfig, "deployment,replicaset,endpointslice");
    common::create_namespace(&env.client).await;
    let dapi: Api<Deployment> = Api::namespaced(env.client.clone(), common::NS);
    let sapi: Api<Service> = Api::namespaced(env.client.clone(), common::NS);

    // phase 1: Services and their Deployments
    let before = counters.snapshot();
    let start = Instant::now();
    futures::stream::iter(0..services)
        .map(|i| {
            let (dapi, sapi) = (dapi.clone(), sapi.clone());
            async move {
                let name = format!("web-{i:04}");
                sapi.create(&PostParams::default(), &service(&name)).await?;
                dapi.create(&PostParams::default(), &deployment(&name, replicas))
                    .await
                    .map(|_| ())
            }
        })
        .buffer_unordered(32)
        .try_collect::<Vec<()>>()
        .await
        .expect("create services and deployments");
    let up = wait(&slices, &pods, &deployments, services, replicas, false).await;
    let up_took = start.elapsed();
    let after_up = counters.snapshot();

    // phase 2: a rolling update of every Deployment
    let start = Instant::now();
    futures::stream::iter(0..services)
        .map(|i| {
            let dapi = dapi.clone();
            async move {
                let patch = serde_json::json!({"spec": {"template": {"spec": {"containers": [
                    {"name": "web", "image": "nginx:2"}]}}}});
                dapi.patch(
                    &format!("web-{i:04}"),
                    &PatchParams::default(),
                    &Patch::Strategic(&patch),
                )
                .await
                .map(|_| ())
            }
        })
        .buffer_unordered(32)
        .try_collect::<Vec<()>>()
        .await
        .expect("rolling update");
    let rolled = wait(&slices, &pods, &deployments, services, replicas, true).await;
    let roll_took = start.elapsed();
    let after_roll = counters.snapshot();

    let (cpu, peak_kib) = cm.stop();
    cancel.cancel();
    let _ = mgr_task.await;
    let phase = |a: [u64; 4], b: [u64; 4]| {
        let (c, u, d, p) = (b[0] - a[0], b[1] - a[1], b[2] - a[2], b[3] - a[3]);
        let writes = c + u + d;
        format!(
            "{writes} slice writes ({c} created, {u} updated, {d} deleted) for {p} pod changes: \
             {:.3} writes per pod change",
            writes as f64 / p.max(1) as f64
        )
    };
    println!(
        "{services} Services over {} pods ({replicas} per Deployment) on {nodes} simulated \
         nodes, embedded API server, max 100 endpoints per slice",
        services * replicas
    );
    println!(
        "  endpoints listed:              {} in {:.2} s",
        if up { "yes" } else { "NO" },
        up_took.as_secs_f64()
    );
    println!("    {}", phase(before, after_up));
    println!(
        "  rolling update followed:       {} in {:.2} s",
        if rolled { "yes" } else { "NO" },
        roll_took.as_secs_f64()
    );
    println!("    {}", phase(after_up, after_roll));
    println!("  controller manager CPU         {cpu:.2} s (Deployment, ReplicaSet and EndpointSlice controllers)");
    println!(
        "  controller manager peak RSS    {:.1} MiB",
        peak_kib / 1024.0
    );
}
