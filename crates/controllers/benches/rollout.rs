//! Rollout benchmark (not a test): 1,000 Deployments of 5 replicas in one namespace of
//! the embedded API server, handled by the controller manager (every default
//! controller) in a child process with the client limits qps 1000 / burst 2000; pods are
//! run by a kubelet stand-in in the parent that binds them to stand-in nodes, makes them
//! Running and Ready at once and removes terminating pods at once.
//!
//! Two phases, each ending when a watch has seen every Deployment complete, as
//! `kubectl rollout status` judges (observedGeneration ≥ generation and updated, total
//! and available replicas all equal to the desired count), with exactly that many pods
//! left, all of the current template:
//! 1. create the Deployments → all available;
//! 2. change every Deployment's image → all rolled out, no pod of the old template left.
//!
//! Prints per phase the wall time, the controller manager's CPU seconds and its peak RSS
//! (VmHWM at the end of the phase), with the targets and kube-controller-manager's
//! figures beside them.
//!
//! Run: `cargo bench -p coxswain-controllers --bench rollout` (`BENCH_DEPLOYMENTS`,
//! `BENCH_REPLICAS` change the 1,000 and 5; `BENCH_QPS`, `BENCH_BURST` the client
//! limits; `BENCH_NODES` the 20 stand-in nodes; `BENCH_TIMEOUT` the 1,800 s per phase;
//! `BENCH_CONTROLLERS` the controllers, as `--controllers`, `*` by default).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use coxswain_runtime::cache::{Cache, Change};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Patch, PatchParams};
use kube::Api;
use tokio_util::sync::CancellationToken;

/// The allocator of the `coxswain` binary, so the figures are the product's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod common;

const IMAGE_BEFORE: &str = "nginx:1.27";
const IMAGE_AFTER: &str = "nginx:1.28";

fn template(name: &str, replicas: usize) -> Deployment {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "main", "image": IMAGE_BEFORE}]},
            },
        },
    }))
    .expect("deployment")
}

/// `kubectl rollout status`'s verdict: the controller saw the latest spec, and every
/// replica is updated, available, and no other replica is left.
fn rolled_out(d: &Deployment, replicas: usize) -> bool {
    let Some(st) = &d.status else { return false };
    let r = replicas as i32;
    st.observed_generation.unwrap_or(0) >= d.metadata.generation.unwrap_or(0)
        && st.updated_replicas == Some(r)
        && st.replicas == Some(r)
        && st.available_replicas == Some(r)
}

/// What the parent's watches have seen, per Deployment (the pods' `app` label is the
/// Deployment's name).
#[derive(Default)]
struct Progress {
    replicas: usize,
    /// Deployments whose status says rolled out
    status_ok: HashMap<String, bool>,
    /// pods per Deployment, by pod-template-hash
    pods: HashMap<String, HashMap<String, usize>>,
    /// in phase 2: each Deployment's pod-template-hash before the image change
    old_hash: Option<HashMap<String, String>>,
    /// Deployments done in the current phase
    done: std::collections::HashSet<String>,
    tx: Option<tokio::sync::watch::Sender<usize>>,
}

impl Progress {
    fn check(&mut self, name: &str) {
        let status = self.status_ok.get(name).copied().unwrap_or(false);
        let pods = self.pods.get(name);
        let ok = status
            && pods.is_some_and(|by_hash| {
                let mut live = by_hash.iter().filter(|(_, n)| **n > 0);
                match (live.next(), live.next()) {
                    (Some((hash, n)), None) => {
                        *n == self.replicas
                            && self
                                .old_hash
                                .as_ref()
                                .is_none_or(|old| old.get(name) != Some(hash))
                    }
                    _ => false,
                }
            });
        let changed = if ok {
            self.done.insert(name.to_string())
        } else {
            self.done.remove(name)
        };
        if changed {
            if let Some(tx) = &self.tx {
                let _ = tx.send(self.done.len());
            }
        }
    }

    /// Old-template pods left in phase 2.
    fn old_pods(&self) -> usize {
        let Some(old) = &self.old_hash else { return 0 };
        self.pods
            .iter()
            .map(|(d, by_hash)| {
                old.get(d)
                    .and_then(|h| by_hash.get(h))
                    .copied()
                    .unwrap_or(0)
            })
            .sum()
    }
}

fn app_and_hash(p: &Pod) -> Option<(String, String)> {
    let labels = p.metadata.labels.as_ref()?;
    Some((
        labels.get("app")?.clone(),
        labels.get("pod-template-hash").cloned().unwrap_or_default(),
    ))
}

/// Watch Deployments and pods of the bench namespace into `progress`.
fn watch_progress(cache: &Cache, progress: Arc<Mutex<Progress>>) {
    let p = progress.clone();
    cache.informer::<Deployment>().add_handler(move |c| {
        let d = match c {
            Change::Added(d) | Change::Updated { new: d, .. } => d,
            Change::Deleted(_) => return,
        };
        let name = d.metadata.name.clone().unwrap_or_default();
        let mut p = p.lock().unwrap_or_else(|e| e.into_inner());
        let ok = rolled_out(d, p.replicas);
        p.status_ok.insert(name.clone(), ok);
        p.check(&name);
    });
    cache.informer::<Pod>().add_handler(move |c| {
        let mut p = progress.lock().unwrap_or_else(|e| e.into_inner());
        let mut count = |pod: &Pod, delta: isize| -> Option<String> {
            let (app, hash) = app_and_hash(pod)?;
            let n = p
                .pods
                .entry(app.clone())
                .or_default()
                .entry(hash)
                .or_default();
            *n = n.saturating_add_signed(delta);
            Some(app)
        };
        let touched = match c {
            Change::Added(pod) => count(pod, 1),
            Change::Deleted(pod) => count(pod, -1),
            Change::Updated { old, new } => {
                if app_and_hash(old) == app_and_hash(new) {
                    None
                } else {
                    count(old, -1);
                    count(new, 1)
                }
            }
        };
        if let Some(app) = touched {
            p.check(&app);
        }
    });
}

/// The controller manager's figures over one phase.
struct Phase {
    wall: Duration,
    cpu: f64,
    peak_kib: f64,
    rss_kib: f64,
    done: usize,
    load: String,
}

/// Wait (on the watch, no polling) until `n` Deployments are done or `timeout` passed;
/// returns how many are done.
async fn wait_done(
    rx: &mut tokio::sync::watch::Receiver<usize>,
    n: usize,
    timeout: Duration,
) -> usize {
    let _ = tokio::time::timeout(timeout, rx.wait_for(|d| *d >= n)).await;
    let d = *rx.borrow();
    d
}

#[tokio::main]
async fn main() {
    if common::run_child_if_asked().await {
        return;
    }
    let n = common::env_usize("BENCH_DEPLOYMENTS", 1000);
    let replicas = common::env_usize("BENCH_REPLICAS", 5);
    let nodes = common::env_usize("BENCH_NODES", 20);
    let timeout = Duration::from_secs(common::env_usize("BENCH_TIMEOUT", 1800) as u64);
    let env = coxswain_runtime::envtest::start().await.expect("server");
    let cancel = CancellationToken::new();
    let kubelet = coxswain_runtime::envtest::FakeKubelet {
        delay: None,
        delete_terminating: true,
        nodes,
    }
    .run(env.client.clone(), cancel.clone());
    common::create_namespace(&env.client).await;
    let (tx, mut rx) = tokio::sync::watch::channel(0usize);
    let progress = Arc::new(Mutex::new(Progress {
        replicas,
        tx: Some(tx),
        ..Default::default()
    }));
    let watches = Cache::namespaced(env.client.clone(), common::NS, cancel.clone());
    watch_progress(&watches, progress.clone());
    watches.informer::<Deployment>().wait_for_sync().await;
    watches.informer::<Pod>().wait_for_sync().await;
    let kubeconfig = env.server().kubeconfig.display().to_string();
    // `BENCH_CONTROLLERS` narrows the controllers (as `--controllers`) to tell which one
    // a figure comes from
    let controllers = std::env::var("BENCH_CONTROLLERS").unwrap_or_else(|_| "*".to_string());
    let cm = common::ControllerManagerChild::spawn(&kubeconfig, &controllers);
    let api: Api<Deployment> = Api::namespaced(env.client.clone(), common::NS);
    let load_before = common::load_average();

    // phase 1: create → all available
    let cpu0 = cm.cpu_seconds_now();
    let start = Instant::now();
    common::create_all(
        &api,
        n,
        |i| template(&format!("d{i:04}"), replicas),
        "deployments",
    )
    .await;
    let done = wait_done(&mut rx, n, timeout).await;
    let create = Phase {
        wall: start.elapsed(),
        cpu: cm.cpu_seconds_now() - cpu0,
        peak_kib: cm.status_kib_now("VmHWM:"),
        rss_kib: cm.status_kib_now("VmRSS:"),
        done,
        load: common::load_average(),
    };

    // phase 2: every image changed → all rolled out, no old pod left
    {
        let mut p = progress.lock().unwrap_or_else(|e| e.into_inner());
        let old: HashMap<String, String> = p
            .pods
            .iter()
            .filter_map(|(d, by_hash)| {
                by_hash
                    .iter()
                    .find(|(_, c)| **c > 0)
                    .map(|(h, _)| (d.clone(), h.clone()))
            })
            .collect();
        p.old_hash = Some(old);
        p.done.clear();
        let names: Vec<String> = p.status_ok.keys().cloned().collect();
        for name in names {
            p.check(&name);
        }
        let d = p.done.len();
        if let Some(tx) = &p.tx {
            let _ = tx.send(d);
        }
    }
    let cpu1 = cm.cpu_seconds_now();
    let start = Instant::now();
    let patch = serde_json::json!({"spec": {"template": {"spec": {
        "containers": [{"name": "main", "image": IMAGE_AFTER}],
    }}}});
    {
        use futures::{StreamExt, TryStreamExt};
        futures::stream::iter(0..n)
            .map(|i| {
                let api = api.clone();
                let patch = patch.clone();
                async move {
                    api.patch(
                        &format!("d{i:04}"),
                        &PatchParams::default(),
                        &Patch::Merge(&patch),
                    )
                    .await
                    .map(|_| ())
                }
            })
            .buffer_unordered(32)
            .try_collect::<Vec<()>>()
            .await
            .expect("image change");
    }
    let done = wait_done(&mut rx, n, timeout).await;
    let rollout = Phase {
        wall: start.elapsed(),
        cpu: cm.cpu_seconds_now() - cpu1,
        peak_kib: cm.status_kib_now("VmHWM:"),
        rss_kib: cm.status_kib_now("VmRSS:"),
        done,
        load: common::load_average(),
    };
    let old_left = progress
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .old_pods();
    let (cpu_total, peak_total) = cm.stop();
    cancel.cancel();
    let _ = kubelet.await;
    report(
        n,
        replicas,
        nodes,
        &load_before,
        &create,
        &rollout,
        old_left,
        cpu_total,
        peak_total,
    );
}

#[allow(clippy::too_many_arguments)]
fn report(
    n: usize,
    replicas: usize,
    nodes: usize,
    load_before: &str,
    create: &Phase,
    rollout: &Phase,
    old_left: usize,
    cpu_total: f64,
    peak_total_kib: f64,
) {
    let mib = |kib: f64| kib / 1024.0;
    println!(
        "rollout of {n} Deployments x {replicas} replicas in one namespace, {nodes} stand-in nodes, \
         controller manager qps {} / burst {}",
        common::env_usize("BENCH_QPS", 1000),
        common::env_usize("BENCH_BURST", 2000)
    );
    println!(
        "  complete: create {}/{n}, rollout {}/{n}; old-template pods left: {old_left}",
        create.done, rollout.done
    );
    println!(
        "  load average: before {load_before}, after create {}, after rollout {}",
        create.load, rollout.load
    );
    println!(
        "  controller manager RSS at phase end: {:.1} MiB, {:.1} MiB",
        mib(create.rss_kib),
        mib(rollout.rss_kib)
    );
    println!();
    println!("| | create → available | image rollout → complete | total | target | kube-controller-manager 1.36 (issue) |");
    println!("|---|---|---|---|---|---|");
    println!(
        "| wall time | {:.1} s | {:.1} s | {:.1} s | | 23.1 s / 85.9 s / 109.0 s |",
        create.wall.as_secs_f64(),
        rollout.wall.as_secs_f64(),
        (create.wall + rollout.wall).as_secs_f64()
    );
    println!(
        "| controller manager CPU | {:.1} s | {:.1} s | {:.1} s (process: {:.1} s) | ≤ 26 s | 7.6 s / 45.1 s / 52.7 s |",
        create.cpu,
        rollout.cpu,
        create.cpu + rollout.cpu,
        cpu_total
    );
    println!(
        "| controller manager peak RSS | {:.1} MiB | {:.1} MiB | {:.1} MiB | ≤ 76 MiB | 306 MiB |",
        mib(create.peak_kib),
        mib(rollout.peak_kib),
        mib(peak_total_kib.max(rollout.peak_kib))
    );
}
