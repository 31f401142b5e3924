//! Jobs benchmark (not a test): 1,000 Jobs of 10 completions (parallelism 10) on the
//! embedded API server, run to completion by the Job controller (kube-controller-manager
//! with `--controllers=job`) in a child process; the pods are scheduled and run by the
//! node simulator (100 nodes, pods exit 0 after a second) in the parent, next to the
//! server. Prints the wall time until every Job is `Complete`, the controller manager's
//! CPU seconds and its peak resident memory.
//!
//! Run: `cargo bench -p coxswain-controllers --bench jobs` (`BENCH_JOBS`,
//! `BENCH_COMPLETIONS`, `BENCH_PARALLELISM`, `BENCH_NODES` change the 1,000, 10, 10 and
//! 100).

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use k8s_openapi::api::batch::v1::Job;
use kube::Api;
use tokio_util::sync::CancellationToken;

/// The allocator of the `coxswain` binary, so the figures are the product's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod common;

fn job(name: &str, completions: usize, parallelism: usize) -> Job {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": name},
        "spec": {
            "completions": completions,
            "parallelism": parallelism,
            "template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "main", "image": "busybox:1.36"}],
            }},
        },
    }))
    .expect("job")
}

fn complete(j: &Job) -> bool {
    j.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| c.type_ == "Complete" && c.status == "True")
        })
}

#[tokio::main]
async fn main() {
    if common::run_child_if_asked().await {
        return;
    }
    let n = common::env_usize("BENCH_JOBS", 1000);
    let completions = common::env_usize("BENCH_COMPLETIONS", 10);
    let parallelism = common::env_usize("BENCH_PARALLELISM", 10);
    let nodes = common::env_usize("BENCH_NODES", 100);
    let env = coxswain_runtime::envtest::start().await.expect("server");
    let cancel = CancellationToken::new();

    // the simulator, and a watch on the Jobs that counts the complete ones
    let mgr = common::simulated_cluster(&env, nodes).await;
    let (done, mut rx) = common::count_reaching::<Job>(&mgr, complete);
    let c = cancel.clone();
    let sim_task = tokio::spawn(async move { mgr.start(c).await });

    let kubeconfig = env.server().kubeconfig.display().to_string();
    let cm = common::ControllerManagerChild::spawn(&kubeconfig, "job");
    common::create_namespace(&env.client).await;
    let api: Api<Job> = Api::namespaced(env.client.clone(), common::NS);
    let start = Instant::now();
    common::create_all(
        &api,
        n,
        |i| job(&format!("j{i:04}"), completions, parallelism),
        "jobs",
    )
    .await;
    let created = start.elapsed();
    let finished = tokio::time::timeout(Duration::from_secs(1800), rx.wait_for(|d| *d >= n))
        .await
        .is_ok();
    let took = start.elapsed();
    let (cpu, peak_kib) = cm.stop();
    cancel.cancel();
    let _ = sim_task.await;
    println!(
        "{n} Jobs x {completions} completions (parallelism {parallelism}) on the embedded API \
         server, {nodes} simulated nodes, 2 cores"
    );
    println!(
        "  complete:                      {} of {n}{}",
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
        "  all Complete in                {:.2} s",
        took.as_secs_f64()
    );
    common::print_controller_manager(cpu, peak_kib);
}
