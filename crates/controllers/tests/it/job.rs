//! The Job controller against the embedded API server. A kubelet stand-in finishes each
//! new pod at once through its status subresource: `Succeeded` (container exit code 0),
//! or `Failed` with the exit code of the template annotation `test/exit-code`; with
//! `test/run: forever` it leaves the pod `Running`. Only it sets a terminal phase, so the
//! pods left in a terminal phase are what a Job must have counted, each exactly once.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use coxswain_controllers::job::job_controller;
use coxswain_runtime::cache::{Cache, Change};
use coxswain_runtime::envtest::{self, TestEnv};
use coxswain_runtime::manager::{Manager, ManagerOptions};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::Timestamp;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::Api;
use rand::{Rng, SeedableRng};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::common::wait_for;

const NS: &str = "default";
const TRACKING: &str = "batch.kubernetes.io/job-tracking";

/// Finishes new pods (see the module documentation).
fn kubelet(client: kube::Client, cancel: CancellationToken) -> Cache {
    let cache = Cache::new(client.clone(), cancel);
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Arc<Pod>>();
    cache.informer::<Pod>().add_handler(move |c| {
        if let Change::Added(p) = c {
            let phase = p.status.as_ref().and_then(|s| s.phase.as_deref());
            let fresh = matches!(phase, None | Some("Pending"));
            if fresh && p.metadata.deletion_timestamp.is_none() {
                let _ = tx.send(p.clone());
            }
        }
    });
    tokio::spawn(async move {
        while let Some(pod) = rx.recv().await {
            let client = client.clone();
            tokio::spawn(async move {
                let annotations = pod.metadata.annotations.clone().unwrap_or_default();
                let name = pod.metadata.name.clone().unwrap_or_default();
                let ns = pod.metadata.namespace.clone().unwrap_or_default();
                let pods: Api<Pod> = Api::namespaced(client, &ns);
                let now = Timestamp::now().to_string();
                let (phase, state) =
                    if annotations.get("test/run").map(String::as_str) == Some("forever") {
                        ("Running", json!({"running": {"startedAt": now}}))
                    } else {
                        let code: i32 = annotations
                            .get("test/exit-code")
                            .and_then(|c| c.parse().ok())
                            .unwrap_or(0);
                        let phase = if code == 0 { "Succeeded" } else { "Failed" };
                        let reason = if code == 0 { "Completed" } else { "Error" };
                        (
                            phase,
                            json!({"terminated": {"exitCode": code, "reason": reason,
                            "startedAt": now, "finishedAt": now}}),
                        )
                    };
                let status = json!({"status": {
                    "phase": phase,
                    "containerStatuses": [{"name": "main", "image": "busybox", "imageID": "",
                        "ready": false, "restartCount": 0, "state": state}],
                }});
                // a pod deleted meanwhile is gone: nothing to report
                let _ = pods
                    .patch_status(&name, &PatchParams::default(), &Patch::Merge(&status))
                    .await;
            });
        }
    });
    cache
}

/// A manager running only the Job controller, in a runtime of its own so that killing it
/// drops every task it spawned at its next await, as a killed process would.
struct Controller {
    runtime: Option<tokio::runtime::Runtime>,
}

impl Controller {
    async fn start(env: &TestEnv) -> Controller {
        let config = env.kube_config().await.expect("config");
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("controller runtime");
        runtime.spawn(async move {
            let mgr = Manager::new(
                config,
                ManagerOptions {
                    metrics_bind_address: "0".into(),
                    ..Default::default()
                },
            )
            .expect("manager");
            mgr.add(job_controller(&mgr, 5)).expect("job controller");
            let _ = mgr.start(CancellationToken::new()).await;
        });
        Controller {
            runtime: Some(runtime),
        }
    }

    /// Kill it: no request is sent after this, in-memory state is lost.
    fn kill(mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

fn job(name: &str, spec: serde_json::Value) -> Job {
    let mut spec = spec;
    let template = json!({
        "metadata": {"annotations": spec.get("annotations").cloned().unwrap_or(json!({}))},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]},
    });
    if let Some(o) = spec.as_object_mut() {
        o.remove("annotations");
        o.insert("template".into(), template);
    }
    serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec})).expect("job")
}

fn jobs(client: &kube::Client) -> Api<Job> {
    Api::namespaced(client.clone(), NS)
}

fn condition(job: &Job, type_: &str) -> Option<(String, String)> {
    job.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == type_ && c.status == "True")
        .map(|c| {
            (
                c.reason.clone().unwrap_or_default(),
                c.message.clone().unwrap_or_default(),
            )
        })
}

async fn wait_condition(client: &kube::Client, name: &str, type_: &str) -> Job {
    let api = jobs(client);
    wait_for(&format!("job {name} {type_}"), || {
        let api = api.clone();
        async move {
            let j = api.get(name).await.ok()?;
            condition(&j, type_).map(|_| j)
        }
    })
    .await
}

async fn pods_of(client: &kube::Client, job: &Job) -> Vec<Pod> {
    let uid = job.metadata.uid.clone().unwrap_or_default();
    Api::<Pod>::namespaced(client.clone(), NS)
        .list(&ListParams::default().labels(&format!("batch.kubernetes.io/controller-uid={uid}")))
        .await
        .expect("pods")
        .items
}

fn has_tracking_finalizer(p: &Pod) -> bool {
    p.metadata
        .finalizers
        .iter()
        .flatten()
        .any(|f| f == TRACKING)
}

#[tokio::test]
async fn job_runs_to_completion() {
    crate::common::logs();
    let env = envtest::start().await.expect("test server");
    let cancel = CancellationToken::new();
    let _kubelet = kubelet(env.client.clone(), cancel.clone());
    let ctl = Controller::start(&env).await;
    let client = env.client.clone();
    jobs(&client)
        .create(
            &PostParams::default(),
            &job("pi", json!({"completions": 3, "parallelism": 2})),
        )
        .await
        .expect("create job");
    let done = wait_condition(&client, "pi", "Complete").await;
    let status = done.status.clone().unwrap_or_default();
    assert_eq!(status.succeeded, Some(3));
    assert_eq!(status.failed.unwrap_or(0), 0);
    assert!(status.completion_time.is_some() && status.start_time.is_some());
    assert_eq!(
        condition(&done, "Complete"),
        Some((
            "CompletionsReached".into(),
            "Reached expected number of succeeded pods".into()
        ))
    );
    assert!(condition(&done, "SuccessCriteriaMet").is_some());
    let pods = pods_of(&client, &done).await;
    assert!(pods.len() >= 3);
    assert!(
        pods.iter().all(|p| !has_tracking_finalizer(p)),
        "finalizers removed"
    );
    ctl.kill();
    cancel.cancel();
}

#[tokio::test]
async fn pod_failure_policy_fails_the_job_at_once() {
    crate::common::logs();
    let env = envtest::start().await.expect("test server");
    let cancel = CancellationToken::new();
    let _kubelet = kubelet(env.client.clone(), cancel.clone());
    let ctl = Controller::start(&env).await;
    let client = env.client.clone();
    let spec = json!({
        "completions": 2, "parallelism": 1, "backoffLimit": 6,
        "annotations": {"test/exit-code": "42"},
        "podFailurePolicy": {"rules": [
            {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}},
        ]},
    });
    jobs(&client)
        .create(&PostParams::default(), &job("pfp", spec))
        .await
        .expect("create job");
    let failed = wait_condition(&client, "pfp", "Failed").await;
    let (reason, message) = condition(&failed, "Failed").unwrap_or_default();
    assert_eq!(reason, "PodFailurePolicy");
    assert!(
        message.starts_with("Container main for pod default/pfp-")
            && message.ends_with("failed with exit code 42 matching FailJob rule at index 0"),
        "{message}"
    );
    assert_eq!(
        condition(&failed, "FailureTarget").map(|c| c.0),
        Some(reason)
    );
    let status = failed.status.clone().unwrap_or_default();
    assert_eq!((status.failed, status.succeeded.unwrap_or(0)), (Some(1), 0));
    ctl.kill();
    cancel.cancel();
}

#[tokio::test]
async fn deleted_job_leaves_no_finalizer_behind() {
    crate::common::logs();
    let env = envtest::start().await.expect("test server");
    let cancel = CancellationToken::new();
    let _kubelet = kubelet(env.client.clone(), cancel.clone());
    let ctl = Controller::start(&env).await;
    let client = env.client.clone();
    let created = jobs(&client)
        .create(
            &PostParams::default(),
            &job(
                "forever",
                json!({"parallelism": 2, "annotations": {"test/run": "forever"}}),
            ),
        )
        .await
        .expect("create job");
    let pods_api: Api<Pod> = Api::namespaced(client.clone(), NS);
    let selector = format!(
        "batch.kubernetes.io/controller-uid={}",
        created.metadata.uid.clone().unwrap_or_default()
    );
    wait_for("two running pods with the finalizer", || {
        let (api, selector) = (pods_api.clone(), selector.clone());
        async move {
            let pods = api
                .list(&ListParams::default().labels(&selector))
                .await
                .ok()?
                .items;
            let running = pods
                .iter()
                .filter(|p| {
                    has_tracking_finalizer(p)
                        && p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
                })
                .count();
            (running == 2).then_some(())
        }
    })
    .await;
    // batch/v1 deletes orphan the pods by default: the orphan queue strips their finalizer
    jobs(&client)
        .delete("forever", &DeleteParams::default())
        .await
        .expect("delete job");
    wait_for("orphaned pods without the finalizer", || {
        let (api, selector) = (pods_api.clone(), selector.clone());
        async move {
            let pods = api
                .list(&ListParams::default().labels(&selector))
                .await
                .ok()?
                .items;
            (pods.len() == 2 && pods.iter().all(|p| !has_tracking_finalizer(p))).then_some(())
        }
    })
    .await;
    ctl.kill();
    cancel.cancel();
}

/// The restart test: the controller is killed at random points, including
/// right after it wrote uncounted pods to a status (between the two phases of
/// counting), while a 200-pod Indexed Job and a 200-completion NonIndexed Job run. Each
/// completes; the Indexed one with exactly 200 succeeded, and each counts exactly the
/// pods the kubelet finished, none twice and none lost.
#[tokio::test]
async fn controller_restarts_never_count_a_pod_twice() {
    crate::common::logs();
    let seed: u64 = std::env::var("JOB_RESTART_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| rand::rng().random());
    eprintln!("restart test seed {seed} (JOB_RESTART_SEED to replay)");
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let env = envtest::start().await.expect("test server");
    let client = env.client.clone();
    let cancel = CancellationToken::new();
    let _kubelet = kubelet(client.clone(), cancel.clone());

    // observe the Jobs: every status written, and the moments uncounted pods appear
    let watch = Cache::new(client.clone(), cancel.clone());
    let uncounted = Arc::new(tokio::sync::Notify::new());
    let regressions = Arc::new(Mutex::new(Vec::<String>::new()));
    {
        let (uncounted, regressions) = (uncounted.clone(), regressions.clone());
        watch.informer::<Job>().add_handler(move |c| {
            if let Change::Updated { old, new } = c {
                let (o, n) = (
                    old.status.clone().unwrap_or_default(),
                    new.status.clone().unwrap_or_default(),
                );
                if n.succeeded.unwrap_or(0) < o.succeeded.unwrap_or(0)
                    || n.failed.unwrap_or(0) < o.failed.unwrap_or(0)
                {
                    regressions
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push(format!("{:?} -> {:?}", o, n));
                }
                let u = n.uncounted_terminated_pods.unwrap_or_default();
                if !u.succeeded.unwrap_or_default().is_empty()
                    || !u.failed.unwrap_or_default().is_empty()
                {
                    uncounted.notify_one();
                }
            }
        });
    }

    let indexed = job(
        "indexed",
        json!({"completions": 200, "parallelism": 50, "completionMode": "Indexed"}),
    );
    let plain = job("plain", json!({"completions": 200, "parallelism": 50}));
    for j in [&indexed, &plain] {
        jobs(&client)
            .create(&PostParams::default(), j)
            .await
            .expect("create job");
    }
    let complete = |client: kube::Client| async move {
        let mut all = true;
        for name in ["indexed", "plain"] {
            let j = jobs(&client).get(name).await.ok();
            all &= j.as_ref().and_then(|j| condition(j, "Complete")).is_some();
        }
        all
    };

    let mut kills = 0;
    for _round in 0..12 {
        let ctl = Controller::start(&env).await;
        let at_uncounted = rng.random_bool(0.5);
        let delay = Duration::from_millis(rng.random_range(20..1500));
        if at_uncounted {
            // right after a first-phase status write, or a little later
            let extra = Duration::from_millis(rng.random_range(0..30));
            tokio::select! {
                _ = uncounted.notified() => tokio::time::sleep(extra).await,
                _ = tokio::time::sleep(Duration::from_secs(3)) => {}
            }
        } else {
            tokio::time::sleep(delay).await;
        }
        ctl.kill();
        kills += 1;
        if complete(client.clone()).await {
            break;
        }
    }
    eprintln!("controller killed {kills} times");
    let ctl = Controller::start(&env).await;
    let indexed = wait_condition(&client, "indexed", "Complete").await;
    let plain = wait_condition(&client, "plain", "Complete").await;

    let s = indexed.status.clone().unwrap_or_default();
    assert_eq!(s.succeeded, Some(200), "{s:?}");
    assert_eq!(s.completed_indexes.as_deref(), Some("0-199"));
    assert_eq!(s.failed.unwrap_or(0), 0);
    for j in [&indexed, &plain] {
        let s = j.status.clone().unwrap_or_default();
        let u = s.uncounted_terminated_pods.clone().unwrap_or_default();
        assert!(
            u.succeeded.unwrap_or_default().is_empty() && u.failed.unwrap_or_default().is_empty()
        );
        let pods = pods_of(&client, j).await;
        assert!(
            pods.iter().all(|p| !has_tracking_finalizer(p)),
            "no pod left uncounted"
        );
    }
    // the NonIndexed Job counted exactly the pods that finished: a pod the kubelet
    // finished after the controller chose to delete it (an extra pod) loses its finalizer
    // uncounted and is gone; every finished pod left was counted, once
    let phases: Vec<String> = pods_of(&client, &plain)
        .await
        .into_iter()
        .filter_map(|p| p.status.and_then(|s| s.phase))
        .collect();
    let finished =
        |phase: &str| i32::try_from(phases.iter().filter(|p| *p == phase).count()).unwrap_or(-1);
    let s = plain.status.clone().unwrap_or_default();
    assert_eq!(
        (s.succeeded.unwrap_or(0), s.failed.unwrap_or(0)),
        (finished("Succeeded"), finished("Failed")),
        "counted vs finished pods"
    );
    assert!(s.succeeded.unwrap_or(0) >= 200);
    let regressions = regressions
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    assert!(
        regressions.is_empty(),
        "counters went down: {regressions:?}"
    );
    ctl.kill();
    cancel.cancel();
}
