//! Fault-injection scenarios (issue 21) of the batch and set controllers: Job, CronJob,
//! TTL-after-finished, StatefulSet, DaemonSet and the disruption controller. See
//! `mod.rs`; each scenario states upstream's invariants for its controller (safety ones
//! checked on every observed change, convergence once the workload is done).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use futures::FutureExt;
use k8s_openapi::api::apps::v1::{ControllerRevision, DaemonSet, ReplicaSet, StatefulSet};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::{Node, PersistentVolumeClaim, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{DeleteParams, EvictParams, Patch, PatchParams, PostParams};
use kube::Api;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use coxswain_runtime::fault::FaultKind;
use coxswain_runtime::testing::{check, run, Invariant, Scenario, World};

use super::{builtin, kubelet};

// ---------------------------------------------------------------------------------------
// shared helpers

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

fn name_of<K: kube::Resource>(o: &K) -> &str {
    o.meta().name.as_deref().unwrap_or_default()
}

fn live(p: &Pod) -> bool {
    p.metadata.deletion_timestamp.is_none()
}

fn phase(p: &Pod) -> &str {
    p.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or_default()
}

fn is_ready(p: &Pod) -> bool {
    phase(p) == "Running"
        && p.status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

fn label<'a>(p: &'a Pod, key: &str) -> &'a str {
    p.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(key))
        .map_or("", String::as_str)
}

fn annotation<'a>(p: &'a Pod, key: &str) -> &'a str {
    p.metadata
        .annotations
        .as_ref()
        .and_then(|l| l.get(key))
        .map_or("", String::as_str)
}

fn controller_uid<K: kube::Resource>(o: &K) -> Option<&str> {
    o.meta()
        .owner_references
        .as_ref()?
        .iter()
        .find(|r| r.controller == Some(true))
        .map(|r| r.uid.as_str())
}

/// Whether `o` holds `want`: `Ok` or why not.
fn expect_eq<T: PartialEq + std::fmt::Debug>(what: &str, got: T, want: T) -> Result<(), String> {
    if got == want {
        Ok(())
    } else {
        Err(format!("{what}: {got:?}, want {want:?}"))
    }
}

// ---------------------------------------------------------------------------------------
// Job

const TRACKING: &str = "batch.kubernetes.io/job-tracking";
const JOB_NAME: &str = "batch.kubernetes.io/job-name";
const COMPLETION_INDEX: &str = "batch.kubernetes.io/job-completion-index";

/// What the Job kubelet finished: per Job name, the pods it made `Succeeded`.
#[derive(Default)]
struct Finished(Mutex<HashMap<String, BTreeSet<String>>>);

/// The highest `succeeded`/`failed` each Job (by uid) was seen with: they never go down.
#[derive(Default)]
struct JobCounters(Mutex<HashMap<String, (i32, i32)>>);

fn job(name: &str, spec: serde_json::Value, annotations: serde_json::Value) -> Job {
    let mut spec = spec;
    spec["template"] = json!({
        "metadata": {"annotations": annotations},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]},
    });
    serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec})).expect("job")
}

fn job_condition(j: &Job, type_: &str) -> bool {
    j.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == type_ && c.status == "True"))
}

fn has_tracking(p: &Pod) -> bool {
    p.metadata
        .finalizers
        .iter()
        .flatten()
        .any(|f| f == TRACKING)
}

fn job_pods(w: &World, job: &str) -> Vec<Arc<Pod>> {
    w.list::<Pod>()
        .into_iter()
        .filter(|p| label(p, JOB_NAME) == job)
        .collect()
}

/// Start the Job kubelet on the observer's pods: each new pod of the run's namespace
/// runs forever (template annotation `test/run: forever`) or succeeds at once, recorded
/// in [`Finished`] before its status says so. Only it sets a terminal phase. (It is
/// started by the setup rather than as a component, to share the world's state.)
fn start_job_kubelet(w: &World) {
    use coxswain_runtime::cache::Change;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Arc<Pod>>();
    let ns = w.namespace().to_string();
    w.cache().informer::<Pod>().add_handler(move |c| {
        if let Change::Added(p) = c {
            let fresh = matches!(phase(p), "" | "Pending") && live(p);
            if fresh && p.metadata.namespace.as_deref() == Some(ns.as_str()) {
                let _ = tx.send(p.clone());
            }
        }
    });
    let finished = w.state::<Finished>();
    let pods: Api<Pod> = Api::namespaced(w.client(), w.namespace());
    tokio::spawn(async move {
        while let Some(pod) = rx.recv().await {
            let name = name_of(&*pod).to_string();
            let now = Timestamp::now().to_string();
            let status = if annotation(&pod, "test/run") == "forever" {
                json!({"phase": "Running", "containerStatuses": [{"name": "main", "image": "busybox",
                    "imageID": "", "ready": true, "restartCount": 0,
                    "state": {"running": {"startedAt": now}}}]})
            } else {
                finished
                    .0
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .entry(label(&pod, JOB_NAME).to_string())
                    .or_default()
                    .insert(name.clone());
                json!({"phase": "Succeeded", "containerStatuses": [{"name": "main", "image": "busybox",
                    "imageID": "", "ready": false, "restartCount": 0,
                    "state": {"terminated": {"exitCode": 0, "reason": "Completed",
                        "startedAt": now, "finishedAt": now}}}]})
            };
            // a pod deleted meanwhile is gone: nothing to report
            let _ = pods
                .patch_status(
                    &name,
                    &PatchParams::default(),
                    &Patch::Merge(json!({ "status": status })),
                )
                .await;
        }
    });
}

/// Job: an Indexed Job runs to completion while a second Job with pods that run
/// forever is deleted (orphaning its pods, as batch/v1 deletes do by default).
///
/// Upstream's invariants (`pkg/controller/job`, `test/integration/job`): a finished pod
/// is counted once (`succeeded` never exceeds the pods that succeeded, never goes down,
/// and an Indexed Job counts each index once, never beyond `completions`); at most
/// `parallelism` pods run and one per index; at the end the Job is `Complete` with
/// exact counts, no pod keeps the tracking finalizer (the deleted Job's orphans
/// included) and nothing is left uncounted.
fn job_scenario() -> Scenario {
    use coxswain_controllers::job;
    let s = Scenario::new("job")
        .controllers(builtin(vec![job::descriptor()]))
        .observe::<Pod>()
        .observe::<Job>()
        .setup(|w: World| {
            start_job_kubelet(&w);
            async { Ok(()) }.boxed()
        })
        .workload(|w: World| {
            async move {
                let jobs: Api<Job> = Api::namespaced(w.client(), w.namespace());
                let indexed =
                    json!({"completions": 3, "parallelism": 2, "completionMode": "Indexed"});
                jobs.create(&PostParams::default(), &job("indexed", indexed, json!({})))
                    .await
                    .map_err(err)?;
                let forever = json!({"parallelism": 2});
                let anns = json!({"test/run": "forever"});
                jobs.create(&PostParams::default(), &job("forever", forever, anns))
                    .await
                    .map_err(err)?;
                w.wait("two running pods of job forever", |w| {
                    let running = job_pods(w, "forever")
                        .iter()
                        .filter(|p| live(p) && phase(p) == "Running")
                        .count();
                    expect_eq("running pods", running, 2)
                })
                .await?;
                jobs.delete("forever", &DeleteParams::default())
                    .await
                    .map_err(err)?;
                w.wait("job indexed complete", |w| {
                    let j = w.get::<Job>("indexed").ok_or("no job indexed")?;
                    job_condition(&j, "Complete")
                        .then_some(())
                        .ok_or_else(|| "not complete".to_string())
                })
                .await
            }
            .boxed()
        })
        .invariant(Invariant::new("succeeded pods are counted once", |w| {
            let finished = w.state::<Finished>();
            let finished = finished.0.lock().unwrap_or_else(|e| e.into_inner());
            let counters = w.state::<JobCounters>();
            let mut counters = counters.0.lock().unwrap_or_else(|e| e.into_inner());
            for j in w.list::<Job>() {
                let s = j.status.clone().unwrap_or_default();
                let (succeeded, failed) = (s.succeeded.unwrap_or(0), s.failed.unwrap_or(0));
                let done = finished.get(name_of(&*j)).map_or(0, BTreeSet::len);
                if usize::try_from(succeeded).unwrap_or(usize::MAX) > done {
                    return Err(format!(
                        "job {} counts {succeeded} succeeded, {done} pods succeeded",
                        name_of(&*j)
                    ));
                }
                let completions = j.spec.as_ref().and_then(|s| s.completions);
                if let Some(c) = completions {
                    let indexed = j.spec.as_ref().and_then(|s| s.completion_mode.as_deref())
                        == Some("Indexed");
                    if indexed && succeeded > c {
                        return Err(format!(
                            "job {} counts {succeeded} of {c} indexes",
                            name_of(&*j)
                        ));
                    }
                }
                let uid = j.metadata.uid.clone().unwrap_or_default();
                let seen = counters.entry(uid).or_default();
                if succeeded < seen.0 || failed < seen.1 {
                    return Err(format!(
                        "job {}: counters went down from {seen:?} to {:?}",
                        name_of(&*j),
                        (succeeded, failed)
                    ));
                }
                *seen = (succeeded, failed);
            }
            Ok(())
        }))
        // an ambiguous create (the answer lost, or a restart on a lagging cache) may
        // create a pod the controller does not know of; upstream's then deletes the
        // extra one (more than `parallelism` active, or two for one index)
        .invariant(
            Invariant::new("at most parallelism pods, one per index", |w| {
                for j in w.list::<Job>() {
                    let parallelism = j.spec.as_ref().and_then(|s| s.parallelism).unwrap_or(1);
                    let active: Vec<_> = job_pods(w, name_of(&*j))
                        .into_iter()
                        .filter(|p| live(p) && !matches!(phase(p), "Succeeded" | "Failed"))
                        .collect();
                    if active.len() > usize::try_from(parallelism).unwrap_or(0) {
                        return Err(format!(
                            "job {}: {} active pods",
                            name_of(&*j),
                            active.len()
                        ));
                    }
                    let mut per_index = BTreeMap::<&str, usize>::new();
                    for p in &active {
                        let i = annotation(p, COMPLETION_INDEX);
                        if !i.is_empty() {
                            *per_index.entry(i).or_default() += 1;
                        }
                    }
                    if let Some((i, n)) = per_index.iter().find(|(_, n)| **n > 1) {
                        return Err(format!(
                            "job {}: {n} active pods for index {i}",
                            name_of(&*j)
                        ));
                    }
                }
                Ok(())
            })
            .except(&[
                FaultKind::Timeout,
                FaultKind::CrashStale,
                FaultKind::LeaderMove,
            ]),
        )
        .converged("job complete, counted exactly, no finalizer left", |w| {
            let j = w.get::<Job>("indexed").ok_or("no job indexed")?;
            if !job_condition(&j, "Complete") {
                return Err("job indexed not complete".into());
            }
            let s = j.status.clone().unwrap_or_default();
            expect_eq("succeeded", s.succeeded, Some(3))?;
            expect_eq("failed", s.failed.unwrap_or(0), 0)?;
            expect_eq("active", s.active.unwrap_or(0), 0)?;
            expect_eq(
                "completedIndexes",
                s.completed_indexes.as_deref(),
                Some("0-2"),
            )?;
            let u = s.uncounted_terminated_pods.unwrap_or_default();
            expect_eq(
                "uncounted succeeded",
                u.succeeded.unwrap_or_default().len(),
                0,
            )?;
            expect_eq("uncounted failed", u.failed.unwrap_or_default().len(), 0)?;
            if w.get::<Job>("forever").is_some() {
                return Err("job forever still there".into());
            }
            match w.list::<Pod>().iter().find(|p| has_tracking(p)) {
                Some(p) => Err(format!(
                    "pod {} keeps the tracking finalizer",
                    name_of(&**p)
                )),
                None => Ok(()),
            }
        });
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn job_under_faults() {
    crate::common::logs();
    check(&job_scenario()).await;
}

// ---------------------------------------------------------------------------------------
// CronJob

const SCHEDULED: &str = "batch.kubernetes.io/cronjob-scheduled-timestamp";

/// The most recent 1 January (00:00 UTC) and a time after the one before: a yearly
/// CronJob last scheduled then has exactly one missed time, run at once, and no other
/// for months (no waiting for a minute boundary, no second run mid-scenario).
fn new_year() -> (String, String) {
    let year: i32 = Timestamp::now()
        .strftime("%Y")
        .to_string()
        .parse()
        .unwrap_or(2026);
    (
        format!("{year}-01-01T00:00:00Z"),
        format!("{}-01-02T00:00:00Z", year - 1),
    )
}

fn cronjob(name: &str, history: i32) -> CronJob {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "schedule": "0 0 1 1 *",
            "concurrencyPolicy": "Forbid",
            "successfulJobsHistoryLimit": history,
            "jobTemplate": {"spec": {"template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "c", "image": "busybox"}],
            }}}},
        },
    }))
    .expect("cronjob")
}

fn jobs_of(w: &World, cj: &CronJob) -> Vec<Arc<Job>> {
    let uid = cj.metadata.uid.as_deref();
    w.list::<Job>()
        .into_iter()
        .filter(|j| controller_uid(&**j).is_some() && controller_uid(&**j) == uid)
        .collect()
}

/// The Jobs (uid) seen per CronJob.
#[derive(Default)]
struct Runs(Mutex<HashMap<String, BTreeSet<String>>>);

fn is_finished(j: &Job) -> bool {
    job_condition(j, "Complete") || job_condition(j, "Failed")
}

/// CronJob: two yearly CronJobs (`Forbid`) with one missed run each; the test finishes
/// their Jobs (there is no Job controller); one keeps its finished Jobs, the other
/// (`successfulJobsHistoryLimit: 0`) has it deleted.
///
/// Upstream's invariants (`pkg/controller/cronjob`, `test/integration/cronjob`): a
/// scheduled time runs once (one Job, never a second while one is active under
/// `Forbid`); `status.active` names each Job once; `lastScheduleTime` only moves
/// forward; at the end nothing is active, `lastScheduleTime` is the missed time, the
/// kept Job's completion is `lastSuccessfulTime` and the history limit holds.
fn cronjob_scenario() -> Scenario {
    use coxswain_controllers::cronjob;
    let (scheduled, before) = new_year();
    let s = Scenario::new("cronjob")
        .controllers(builtin(vec![cronjob::descriptor()]))
        .observe::<CronJob>()
        .observe::<Job>()
        .workload(move |w: World| {
            let before = before.clone();
            async move {
                let cjs: Api<CronJob> = Api::namespaced(w.client(), w.namespace());
                let jobs: Api<Job> = Api::namespaced(w.client(), w.namespace());
                for (name, history) in [("kept", 3), ("cleaned", 0)] {
                    cjs.create(&PostParams::default(), &cronjob(name, history))
                        .await
                        .map_err(err)?;
                    let status = json!({"status": {"lastScheduleTime": before}});
                    cjs.patch_status(name, &PatchParams::default(), &Patch::Merge(status))
                        .await
                        .map_err(err)?;
                }
                for name in ["kept", "cleaned"] {
                    let job_of = |w: &World| {
                        let cj = w.get::<CronJob>(name)?;
                        jobs_of(w, &cj).first().map(|j| name_of(&**j).to_string())
                    };
                    w.wait(&format!("the job of cronjob {name}"), move |w| {
                        job_of(w).map(drop).ok_or_else(|| "no job yet".to_string())
                    })
                    .await?;
                    let job = job_of(&w).ok_or("the job went away")?;
                    let now = Timestamp::now().to_string();
                    let status = json!({"status": {
                        "startTime": now, "completionTime": now, "succeeded": 1,
                        "conditions": [
                            {"type": "SuccessCriteriaMet", "status": "True", "lastTransitionTime": now},
                            {"type": "Complete", "status": "True", "lastTransitionTime": now},
                        ],
                    }});
                    jobs.patch_status(&job, &PatchParams::default(), &Patch::Merge(status))
                        .await
                        .map_err(err)?;
                }
                Ok(())
            }
            .boxed()
        })
        .invariant(Invariant::new("one run per scheduled time, active listed once", {
            let (scheduled, before) = new_year();
            move |w: &World| {
                let runs = w.state::<Runs>();
                let mut runs = runs.0.lock().unwrap_or_else(|e| e.into_inner());
                for cj in w.list::<CronJob>() {
                    let n = name_of(&*cj);
                    // one scheduled time: one Job, ever (a deleted one is not run again)
                    let seen = runs.entry(n.to_string()).or_default();
                    seen.extend(jobs_of(w, &cj).iter().filter_map(|j| j.metadata.uid.clone()));
                    if seen.len() > 1 {
                        return Err(format!("cronjob {n} ran its time {} times", seen.len()));
                    }
                    let running = jobs_of(w, &cj).iter().filter(|j| !is_finished(j)).count();
                    if running > 1 {
                        return Err(format!("cronjob {n}: {running} active jobs under Forbid"));
                    }
                    let st = cj.status.clone().unwrap_or_default();
                    let active = st.active.unwrap_or_default();
                    let uids: BTreeSet<_> = active.iter().map(|r| r.uid.clone()).collect();
                    if active.len() > 1 || uids.len() != active.len() {
                        return Err(format!("cronjob {n}: status.active {active:?}"));
                    }
                    let last = st.last_schedule_time.map(|t| t.0.to_string());
                    match last.as_deref() {
                        None => {}
                        Some(t) if t == scheduled || t == before => {}
                        Some(t) => return Err(format!("cronjob {n}: lastScheduleTime {t}")),
                    }
                }
                Ok(())
            }
        }))
        .converged("nothing active, the run recorded, the history limit kept", move |w| {
            for (name, history) in [("kept", 1), ("cleaned", 0)] {
                let cj = w.get::<CronJob>(name).ok_or("no cronjob")?;
                let st = cj.status.clone().unwrap_or_default();
                expect_eq(&format!("{name}: active"), st.active.unwrap_or_default().len(), 0)?;
                expect_eq(
                    &format!("{name}: lastScheduleTime"),
                    st.last_schedule_time.map(|t| t.0.to_string()),
                    Some(scheduled.clone()),
                )?;
                let jobs = jobs_of(w, &cj);
                expect_eq(&format!("{name}: jobs"), jobs.len(), history)?;
                if let Some(j) = jobs.first() {
                    let stamp = j.metadata.annotations.as_ref().and_then(|a| a.get(SCHEDULED)).cloned();
                    expect_eq("scheduled timestamp", stamp, Some(scheduled.clone()))?;
                    let completion = j.status.as_ref().and_then(|s| s.completion_time.clone());
                    expect_eq(&format!("{name}: lastSuccessfulTime"), st.last_successful_time, completion)?;
                }
            }
            Ok(())
        });
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cronjob_under_faults() {
    crate::common::logs();
    check(&cronjob_scenario()).await;
}

// ---------------------------------------------------------------------------------------
// TTL after finished

/// Mark a Job `Complete` at `at` through its status.
async fn finish_job(jobs: &Api<Job>, name: &str, at: Timestamp) -> Result<(), String> {
    let at = at.to_string();
    let status = json!({"status": {
        "startTime": at, "completionTime": at, "succeeded": 1,
        "conditions": [
            {"type": "SuccessCriteriaMet", "status": "True", "lastTransitionTime": at},
            {"type": "Complete", "status": "True", "lastTransitionTime": at},
        ],
    }});
    jobs.patch_status(name, &PatchParams::default(), &Patch::Merge(status))
        .await
        .map(drop)
        .map_err(err)
}

/// TTL-after-finished: Jobs finished long ago or just now with a short TTL are
/// deleted; one without a TTL, one still running and one whose TTL has not expired
/// stay; a TTL added to an expired Job deletes it. There is no garbage collector: the
/// controller's foreground delete leaves a Job terminating.
///
/// Upstream's invariants (`pkg/controller/ttlafterfinished`,
/// `test/integration/ttlcontroller`): a Job is deleted only once it finished and its
/// TTL expired (never early, never one without a TTL or still running); at the end
/// every expired Job is being deleted and the others are untouched.
fn ttl_after_finished_scenario() -> Scenario {
    use coxswain_controllers::ttlafterfinished;
    let s = Scenario::new("ttl-after-finished")
        .controllers(builtin(vec![ttlafterfinished::descriptor()]))
        .observe::<Job>()
        .workload(|w: World| {
            async move {
                let jobs: Api<Job> = Api::namespaced(w.client(), w.namespace());
                for (name, ttl) in [
                    ("short", Some(1)),
                    ("expired", Some(5)),
                    ("kept", None),
                    ("running", Some(0)),
                    ("later", Some(3600)),
                ] {
                    let j = job(name, json!({"ttlSecondsAfterFinished": ttl}), json!({}));
                    jobs.create(&PostParams::default(), &j).await.map_err(err)?;
                }
                let now = Timestamp::now();
                let long_ago = now - SignedDuration::from_mins(10);
                finish_job(&jobs, "short", now).await?;
                finish_job(&jobs, "expired", long_ago).await?;
                finish_job(&jobs, "kept", long_ago).await?;
                finish_job(&jobs, "later", now).await?;
                w.wait("jobs short and expired deleted", |w| {
                    for n in ["short", "expired"] {
                        if w.get::<Job>(n)
                            .is_some_and(|j| j.metadata.deletion_timestamp.is_none())
                        {
                            return Err(format!("job {n} not deleted"));
                        }
                    }
                    Ok(())
                })
                .await?;
                let ttl = json!({"spec": {"ttlSecondsAfterFinished": 1}});
                jobs.patch("kept", &PatchParams::default(), &Patch::Merge(ttl))
                    .await
                    .map_err(err)?;
                Ok(())
            }
            .boxed()
        })
        .invariant(Invariant::new(
            "only finished Jobs past their TTL are deleted",
            |w| {
                for j in w.list::<Job>() {
                    let Some(deleted) = &j.metadata.deletion_timestamp else {
                        continue;
                    };
                    let expiry = ttlafterfinished::finish_and_expire_time(&j)
                        .map_err(|e| format!("job {} deleted: {e}", name_of(&*j)))?
                        .1;
                    // deletion timestamps have whole seconds
                    if expiry > deleted.0 + SignedDuration::from_secs(1) {
                        return Err(format!(
                            "job {} deleted at {} before it expired at {expiry}",
                            name_of(&*j),
                            deleted.0
                        ));
                    }
                }
                Ok(())
            },
        ))
        .converged("expired Jobs deleted, the others kept", |w| {
            for n in ["short", "expired", "kept"] {
                if w.get::<Job>(n)
                    .is_some_and(|j| j.metadata.deletion_timestamp.is_none())
                {
                    return Err(format!("job {n} not deleted"));
                }
            }
            for n in ["running", "later"] {
                let j = w.get::<Job>(n).ok_or_else(|| format!("job {n} gone"))?;
                if j.metadata.deletion_timestamp.is_some() {
                    return Err(format!("job {n} deleted"));
                }
            }
            Ok(())
        });
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ttl_after_finished_under_faults() {
    crate::common::logs();
    check(&ttl_after_finished_scenario()).await;
}

// ---------------------------------------------------------------------------------------
// StatefulSet

fn ordinal(name: &str) -> Option<usize> {
    name.rsplit('-').next()?.parse().ok()
}

fn statefulset(name: &str, replicas: i32) -> StatefulSet {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "serviceName": name,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "img:1"}]}
            },
            "volumeClaimTemplates": [{
                "metadata": {"name": "data"},
                "spec": {"accessModes": ["ReadWriteOnce"],
                         "resources": {"requests": {"storage": "1Gi"}}},
            }],
        }
    }))
    .expect("statefulset")
}

/// What the StatefulSet invariants remember between two checks.
#[derive(Default)]
struct SetHistory {
    /// Pods (uid) seen so far.
    seen: Mutex<BTreeSet<String>>,
    /// The live ordinals at the previous check, and whether the scale-down started.
    live: Mutex<(BTreeSet<usize>, bool)>,
}

fn live_by_ordinal(w: &World) -> BTreeMap<usize, Arc<Pod>> {
    w.list::<Pod>()
        .into_iter()
        .filter(|p| live(p))
        .filter_map(|p| Some((ordinal(name_of(&*p))?, p)))
        .collect()
}

fn image_of(p: &Pod) -> &str {
    p.spec
        .as_ref()
        .and_then(|s| s.containers.first())
        .and_then(|c| c.image.as_deref())
        .unwrap_or_default()
}

/// The set settled at `n` replicas of `image` (the image is what tells a settled
/// status of the spec before an update from one after it).
fn sts_settled(w: &World, name: &str, n: i32, image: &str) -> Result<(), String> {
    let s = w.get::<StatefulSet>(name).ok_or("no statefulset")?;
    let st = s.status.clone().unwrap_or_default();
    expect_eq(
        "observedGeneration",
        st.observed_generation,
        s.metadata.generation,
    )?;
    expect_eq(
        "replicas, ready, available, current, updated",
        (
            st.replicas,
            st.ready_replicas.unwrap_or(0),
            st.available_replicas.unwrap_or(0),
            st.current_replicas.unwrap_or(0),
            st.updated_replicas.unwrap_or(0),
        ),
        (n, n, n, n, n),
    )?;
    expect_eq("currentRevision", &st.current_revision, &st.update_revision)?;
    let update = st.update_revision.clone().unwrap_or_default();
    let pods = live_by_ordinal(w);
    let want: Vec<usize> = (0..usize::try_from(n).unwrap_or(0)).collect();
    expect_eq("ordinals", pods.keys().copied().collect::<Vec<_>>(), want)?;
    for p in pods.values() {
        expect_eq(
            &format!("revision of {}", name_of(&**p)),
            label(p, "controller-revision-hash"),
            update.as_str(),
        )?;
        expect_eq(&format!("image of {}", name_of(&**p)), image_of(p), image)?;
        if !is_ready(p) {
            return Err(format!("pod {} not ready", name_of(&**p)));
        }
    }
    Ok(())
}

/// StatefulSet: an `OrderedReady` set of 3 is created, rolled to a new image, and
/// scaled down to 1, with a kubelet making its pods Running and Ready.
///
/// Upstream's invariants (`pkg/controller/statefulset`, `test/e2e/apps/statefulset.go`):
/// one pod per ordinal, none beyond the replicas; a pod is created only once its
/// predecessor is Running and Ready; a scale-down removes the highest ordinal first and
/// one at a time; at the end the status counts the pods, every pod runs the update
/// revision, one ControllerRevision exists per template (none duplicated) and one claim
/// per ordinal, kept after the scale-down (`Retain`).
fn statefulset_scenario() -> Scenario {
    use coxswain_controllers::statefulset;
    let s = Scenario::new("statefulset")
        .controllers(builtin(vec![statefulset::descriptor()]))
        .observe::<Pod>()
        .observe::<StatefulSet>()
        .observe::<ControllerRevision>()
        .observe::<PersistentVolumeClaim>()
        .component(kubelet())
        .workload(|w: World| {
            async move {
                let api: Api<StatefulSet> = Api::namespaced(w.client(), w.namespace());
                api.create(&PostParams::default(), &statefulset("web", 3))
                    .await
                    .map_err(err)?;
                w.wait("3 ready replicas", |w| sts_settled(w, "web", 3, "img:1")).await?;
                let image = json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "img:2"}]}}}});
                api.patch("web", &PatchParams::default(), &Patch::Strategic(image))
                    .await
                    .map_err(err)?;
                w.wait("3 updated replicas", |w| sts_settled(w, "web", 3, "img:2")).await?;
                w.state::<SetHistory>().live.lock().unwrap_or_else(|e| e.into_inner()).1 = true;
                let scale = json!({"spec": {"replicas": 1}});
                api.patch("web", &PatchParams::default(), &Patch::Merge(scale))
                    .await
                    .map_err(err)?;
                Ok(())
            }
            .boxed()
        })
        .invariant(Invariant::new("ordinals below the replicas, created in order", |w| {
            let pods = live_by_ordinal(w);
            if let Some(o) = pods.keys().find(|o| **o >= 3) {
                return Err(format!("pod of ordinal {o}"));
            }
            let h = w.state::<SetHistory>();
            let mut seen = h.seen.lock().unwrap_or_else(|e| e.into_inner());
            for (o, p) in &pods {
                let uid = p.metadata.uid.clone().unwrap_or_default();
                if !seen.insert(uid) || *o == 0 {
                    continue;
                }
                if !pods.get(&(o - 1)).is_some_and(|prev| is_ready(prev)) {
                    return Err(format!(
                        "pod {} created before its predecessor was ready",
                        name_of(&**p)
                    ));
                }
            }
            Ok(())
        }))
        .invariant(Invariant::new("scale-down removes the highest ordinal first", |w| {
            let now: BTreeSet<usize> = live_by_ordinal(w).into_keys().collect();
            let h = w.state::<SetHistory>();
            let mut prev = h.live.lock().unwrap_or_else(|e| e.into_inner());
            if prev.1 {
                for gone in prev.0.difference(&now) {
                    if let Some(higher) = now.iter().find(|o| *o > gone) {
                        return Err(format!(
                            "ordinal {gone} removed while {higher} is still there"
                        ));
                    }
                }
            }
            prev.0 = now;
            Ok(())
        }))
        .converged("1 replica at the update revision, 2 revisions, claims kept", |w| {
            sts_settled(w, "web", 1, "img:2")?;
            expect_eq("controller revisions", w.list::<ControllerRevision>().len(), 2)?;
            // one claim per ordinal ever run, retained (no owner) after the scale-down
            let claims: Vec<(String, bool)> = w
                .list::<PersistentVolumeClaim>()
                .iter()
                .map(|c| {
                    let owned = c.metadata.owner_references.as_ref().is_some_and(|o| !o.is_empty());
                    (name_of(&**c).to_string(), owned)
                })
                .collect();
            let want: Vec<(String, bool)> =
                (0..3).map(|i| (format!("data-web-{i}"), false)).collect();
            expect_eq("claims", claims, want)
        });
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statefulset_under_faults() {
    crate::common::logs();
    check(&statefulset_scenario()).await;
}

// ---------------------------------------------------------------------------------------
// DaemonSet

/// Whether the rolling update is under way (its availability bound applies).
#[derive(Default)]
struct Rolling(std::sync::atomic::AtomicBool);

/// Create node `name` schedulable: without the not-ready taint the API server gives a
/// new node (there is no node lifecycle controller here to take it off).
async fn add_node(w: &World, name: &str) -> Result<(), String> {
    let nodes: Api<Node> = Api::all(w.client());
    let node: Node = serde_json::from_value(json!({"metadata": {"name": name}})).map_err(err)?;
    nodes
        .create(&PostParams::default(), &node)
        .await
        .map_err(err)?;
    let untaint = json!({"spec": {"taints": null}});
    nodes
        .patch(name, &PatchParams::default(), &Patch::Merge(untaint))
        .await
        .map(drop)
        .map_err(err)
}

/// The scheduler and the rest of the kubelet for daemon pods: binds each new pod to
/// the node its `metadata.name` affinity names (`pods/binding`), and removes pods being
/// deleted at once (their containers stop). The DaemonSet controller counts a node's
/// pods by `spec.nodeName`, as upstream's.
fn binder(
) -> impl Fn(kube::Client, CancellationToken) -> BoxFuture<'static, ()> + Send + Sync + 'static {
    |client, cancel| {
        async move {
            use coxswain_controllers::daemon::util::get_target_node_name;
            use coxswain_runtime::cache::{Cache, Change};
            let cache = Cache::new(client.clone(), cancel.clone());
            let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Arc<Pod>>();
            cache.informer::<Pod>().add_handler(move |c| {
                if let Change::Added(p) | Change::Updated { new: p, .. } = c {
                    let unbound = p.spec.as_ref().is_none_or(|s| s.node_name.is_none());
                    if unbound || !live(p) {
                        let _ = tx.send(p.clone());
                    }
                }
            });
            loop {
                let pod = tokio::select! {
                    _ = cancel.cancelled() => return,
                    p = rx.recv() => match p { Some(p) => p, None => return },
                };
                let ns = pod.metadata.namespace.clone().unwrap_or_default();
                let name = name_of(&*pod).to_string();
                let api: Api<Pod> = Api::namespaced(client.clone(), &ns);
                if !live(&pod) {
                    let now = DeleteParams {
                        grace_period_seconds: Some(0),
                        ..Default::default()
                    };
                    let _ = api.delete(&name, &now).await;
                    continue;
                }
                let Ok(node) = get_target_node_name(&pod) else {
                    continue;
                };
                let binding = json!({
                    "apiVersion": "v1", "kind": "Binding",
                    "metadata": {"name": name, "namespace": ns, "uid": pod.metadata.uid},
                    "target": {"apiVersion": "v1", "kind": "Node", "name": node},
                });
                let _ = api
                    .create_subresource::<_, serde_json::Value>(
                        "binding",
                        &name,
                        &PostParams::default(),
                        &binding,
                    )
                    .await;
            }
        }
        .boxed()
    }
}

fn daemon_set(name: &str) -> DaemonSet {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "img:1"}]}
            },
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
        }
    }))
    .expect("daemon set")
}

/// The live daemon pods by the node they are pinned to.
fn daemon_pods(w: &World) -> BTreeMap<String, Vec<Arc<Pod>>> {
    use coxswain_controllers::daemon::util::get_target_node_name;
    let mut map: BTreeMap<String, Vec<Arc<Pod>>> = BTreeMap::new();
    for p in w.list::<Pod>() {
        if let (true, Ok(node)) = (live(&p), get_target_node_name(&p)) {
            map.entry(node).or_default().push(p);
        }
    }
    map
}

/// The set settled with one ready pod of `image` on each of `nodes` and none elsewhere.
fn ds_settled(w: &World, nodes: &[&str], image: &str) -> Result<(), String> {
    let ds = w.get::<DaemonSet>("agent").ok_or("no daemon set")?;
    let pods = daemon_pods(w);
    expect_eq(
        "nodes with pods",
        pods.keys().map(String::as_str).collect::<Vec<_>>(),
        nodes.to_vec(),
    )?;
    for (node, ps) in &pods {
        let [p] = ps.as_slice() else {
            return Err(format!("{} pods on {node}", ps.len()));
        };
        expect_eq(&format!("image on {node}"), image_of(p), image)?;
        if !is_ready(p) {
            return Err(format!("pod on {node} not ready"));
        }
    }
    let st = ds.status.clone().unwrap_or_default();
    let n = i32::try_from(nodes.len()).unwrap_or(0);
    expect_eq(
        "observedGeneration",
        st.observed_generation,
        ds.metadata.generation,
    )?;
    expect_eq(
        "desired, current, ready, updated, available, misscheduled",
        (
            st.desired_number_scheduled,
            st.current_number_scheduled,
            st.number_ready,
            st.updated_number_scheduled.unwrap_or(0),
            st.number_available.unwrap_or(0),
            st.number_misscheduled,
        ),
        (n, n, n, n, n, 0),
    )
}

/// DaemonSet: a set on two nodes gets a third node, is rolled to a new image
/// (`maxUnavailable: 1`), then one node is tainted `NoExecute` (a node failure the
/// pods do not tolerate). A kubelet makes the pods Running and Ready.
///
/// Upstream's invariants (`pkg/controller/daemon`, `test/integration/daemonset`): one
/// daemon pod per node (`maxSurge: 0`); during the rolling update at most
/// `maxUnavailable` nodes lack a ready pod; at the end each eligible node runs one
/// ready pod of the new template, the tainted node none, the status counts them and
/// one ControllerRevision exists per template.
fn daemonset_scenario() -> Scenario {
    use coxswain_controllers::daemon;
    let s = Scenario::new("daemonset")
        .controllers(builtin(vec![daemon::descriptor()]))
        .observe::<Pod>()
        .observe::<DaemonSet>()
        .observe::<ControllerRevision>()
        .component(kubelet())
        .component(binder())
        .setup(|w: World| {
            async move {
                add_node(&w, "node-1").await?;
                add_node(&w, "node-2").await
            }
            .boxed()
        })
        .workload(|w: World| {
            async move {
                let api: Api<DaemonSet> = Api::namespaced(w.client(), w.namespace());
                api.create(&PostParams::default(), &daemon_set("agent"))
                    .await
                    .map_err(err)?;
                w.wait("a pod on each of 2 nodes", |w| {
                    ds_settled(w, &["node-1", "node-2"], "img:1")
                })
                .await?;
                add_node(&w, "node-3").await?;
                let all = ["node-1", "node-2", "node-3"];
                w.wait("a pod on the new node", move |w| ds_settled(w, &all, "img:1"))
                    .await?;
                let rolling = w.state::<Rolling>();
                rolling.0.store(true, std::sync::atomic::Ordering::SeqCst);
                let image = json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "img:2"}]}}}});
                api.patch("agent", &PatchParams::default(), &Patch::Strategic(image))
                    .await
                    .map_err(err)?;
                w.wait("the update rolled out", move |w| ds_settled(w, &all, "img:2"))
                    .await?;
                rolling.0.store(false, std::sync::atomic::Ordering::SeqCst);
                let taint = json!({"spec": {"taints": [
                    {"key": "example.com/broken", "effect": "NoExecute"},
                ]}});
                Api::<Node>::all(w.client())
                    .patch("node-2", &PatchParams::default(), &Patch::Merge(taint))
                    .await
                    .map_err(err)?;
                Ok(())
            }
            .boxed()
        })
        // an ambiguous create (answer lost, or a restart or a new leader on a lagging
        // cache) may give a node a second pod; upstream deletes all but the oldest
        .invariant(
            Invariant::new("at most one daemon pod per node", |w| {
                match daemon_pods(w).iter().find(|(_, ps)| ps.len() > 1) {
                    Some((node, ps)) => Err(format!("{} pods on {node}", ps.len())),
                    None => Ok(()),
                }
            })
            .except(&[FaultKind::Timeout, FaultKind::CrashStale, FaultKind::LeaderMove]),
        )
        // a delete whose answer is lost, or a lagging cache after a restart or a
        // leader move, shows the deleted pod still ready: upstream's then takes the
        // next node down too
        .invariant(
            Invariant::new("rolling update: at most maxUnavailable nodes down", |w| {
                if !w.state::<Rolling>().0.load(std::sync::atomic::Ordering::SeqCst) {
                    return Ok(());
                }
                let pods = daemon_pods(w);
                let down: Vec<&str> = ["node-1", "node-2", "node-3"]
                    .into_iter()
                    .filter(|n| !pods.get(*n).is_some_and(|ps| ps.iter().any(|p| is_ready(p))))
                    .collect();
                if down.len() > 1 {
                    return Err(format!("nodes without a ready pod: {down:?}"));
                }
                Ok(())
            })
            .except(&[FaultKind::Timeout, FaultKind::CrashStale, FaultKind::LeaderMove]),
        )
        .converged("a ready pod of the new template per untainted node", |w| {
            ds_settled(w, &["node-1", "node-3"], "img:2")?;
            expect_eq("controller revisions", w.list::<ControllerRevision>().len(), 2)
        });
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn daemonset_under_faults() {
    crate::common::logs();
    check(&daemonset_scenario()).await;
}

// ---------------------------------------------------------------------------------------
// Disruption

fn budget_pod(name: &str, rs: &ReplicaSet) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"app": "web"}, "ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs.metadata.name,
             "uid": rs.metadata.uid, "controller": true},
        ]},
        "spec": {"nodeName": "node-1", "containers": [{"name": "c", "image": "nginx"}]},
    }))
    .expect("pod")
}

async fn set_ready(pods: &Api<Pod>, name: &str, ready: bool) -> Result<(), String> {
    let ready = if ready { "True" } else { "False" };
    let status = json!({"status": {"phase": "Running",
        "conditions": [{"type": "Ready", "status": ready}]}});
    pods.patch_status(name, &PatchParams::default(), &Patch::Merge(status))
        .await
        .map(drop)
        .map_err(err)
}

/// The budget's status as (expected, currentHealthy, desiredHealthy, allowed,
/// disrupted pods, observed generation is the generation).
fn budget(w: &World) -> Result<(i32, i32, i32, i32, usize, bool), String> {
    let b = w.get::<PodDisruptionBudget>("web").ok_or("no budget")?;
    let s = b.status.clone().ok_or("no status")?;
    Ok((
        s.expected_pods.unwrap_or(0),
        s.current_healthy.unwrap_or(0),
        s.desired_healthy.unwrap_or(0),
        s.disruptions_allowed.unwrap_or(0),
        s.disrupted_pods.map_or(0, |d| d.len()),
        s.observed_generation == b.metadata.generation,
    ))
}

/// Disruption: a budget (`minAvailable: 2`) over the 3 pods of a ReplicaSet (the test
/// plays the ReplicaSet controller and the kubelet): a pod is evicted, replaced, and
/// another one becomes unready.
///
/// Upstream's invariants (`pkg/controller/disruption`, `test/integration/disruption`):
/// a status never allows more disruptions than its healthy pods above the desired
/// ones, and says so in its `DisruptionAllowed` condition; at the end it counts the
/// world (expected, healthy, desired, allowed) for the current generation and keeps
/// no evicted pod in `disruptedPods` once it is gone.
fn disruption_scenario() -> Scenario {
    use coxswain_controllers::disruption;
    let s = Scenario::new("disruption")
        .controllers(builtin(vec![disruption::descriptor()]))
        .observe::<Pod>()
        .observe::<PodDisruptionBudget>()
        .workload(|w: World| {
            async move {
                let rss: Api<ReplicaSet> = Api::namespaced(w.client(), w.namespace());
                let pods: Api<Pod> = Api::namespaced(w.client(), w.namespace());
                let pdbs: Api<PodDisruptionBudget> = Api::namespaced(w.client(), w.namespace());
                let rs: ReplicaSet = serde_json::from_value(json!({
                    "metadata": {"name": "web"},
                    "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                             "template": {"metadata": {"labels": {"app": "web"}},
                                          "spec": {"containers": [{"name": "c", "image": "nginx"}]}}},
                }))
                .map_err(err)?;
                let rs = rss.create(&PostParams::default(), &rs).await.map_err(err)?;
                for i in 0..3 {
                    let name = format!("web-{i}");
                    pods.create(&PostParams::default(), &budget_pod(&name, &rs))
                        .await
                        .map_err(err)?;
                    set_ready(&pods, &name, true).await?;
                }
                let pdb: PodDisruptionBudget = serde_json::from_value(json!({
                    "metadata": {"name": "web"},
                    "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}},
                }))
                .map_err(err)?;
                pdbs.create(&PostParams::default(), &pdb).await.map_err(err)?;
                w.wait("one disruption allowed", |w| {
                    expect_eq("budget", budget(w)?, (3, 3, 2, 1, 0, true))
                })
                .await?;
                pods.evict("web-0", &EvictParams::default()).await.map_err(err)?;
                // the kubelet stops it; the ReplicaSet controller replaces it
                let now = DeleteParams { grace_period_seconds: Some(0), ..Default::default() };
                pods.delete("web-0", &now).await.map_err(err)?;
                pods.create(&PostParams::default(), &budget_pod("web-3", &rs))
                    .await
                    .map_err(err)?;
                set_ready(&pods, "web-3", true).await?;
                w.wait("the budget after the replacement", |w| {
                    expect_eq("budget", budget(w)?, (3, 3, 2, 1, 0, true))
                })
                .await?;
                set_ready(&pods, "web-1", false).await
            }
            .boxed()
        })
        .invariant(Invariant::new("allowed disruptions within the healthy surplus", |w| {
            for b in w.list::<PodDisruptionBudget>() {
                let Some(s) = &b.status else { continue };
                let (allowed_n, healthy, desired) = (
                    s.disruptions_allowed.unwrap_or(0),
                    s.current_healthy.unwrap_or(0),
                    s.desired_healthy.unwrap_or(0),
                );
                if allowed_n < 0 || allowed_n > (healthy - desired).max(0) {
                    return Err(format!(
                        "{allowed_n} disruptions allowed, {healthy} healthy, {desired} desired"
                    ));
                }
                let allowed = s
                    .conditions
                    .iter()
                    .flatten()
                    .find(|c| c.type_ == "DisruptionAllowed")
                    .map(|c| c.status == "True");
                if allowed.is_some_and(|a| a != (allowed_n > 0)) {
                    return Err(format!(
                        "DisruptionAllowed {allowed:?} with {allowed_n} allowed"
                    ));
                }
                if s.observed_generation > b.metadata.generation {
                    return Err("observedGeneration beyond the generation".into());
                }
            }
            Ok(())
        }))
        .converged("the budget counts the world", |w| {
            expect_eq("budget", budget(w)?, (3, 2, 2, 0, 0, true))?;
            let b = w.get::<PodDisruptionBudget>("web").ok_or("no budget")?;
            let reason = b
                .status
                .iter()
                .flat_map(|s| s.conditions.iter().flatten())
                .find(|c| c.type_ == "DisruptionAllowed")
                .map(|c| c.reason.clone());
            expect_eq("reason", reason.as_deref(), Some("InsufficientPods"))
        });
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disruption_under_faults() {
    crate::common::logs();
    check(&disruption_scenario()).await;
}

// ---------------------------------------------------------------------------------------
// Regressions: plans the harness failed before the fixes, replayed

/// Replay `plan` on `scenario`: it must pass.
async fn replay(scenario: Scenario, plan: &str) {
    crate::common::logs();
    let plan = plan.parse().expect("a plan");
    let r = run(&scenario, &plan).await;
    assert!(
        r.failure.is_none(),
        "{} under {plan}: {:?} (injected {:?})",
        scenario.name(),
        r.failure,
        r.injected
    );
}

/// The Job's pod informer lags: its deletion swept no pod, and the pods that arrived
/// later kept their tracking finalizer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn job_regression_delay_at_1() {
    replay(job_scenario(), "delay@1").await;
}

/// A 429 on a pod of the deleted Job's orphan sweep was not retried.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn job_regression_throttle_at_7() {
    replay(job_scenario(), "throttle@7").await;
}

/// A restart on a lagging API server right after a CronJob's status write: the cache
/// showed its Job finished but its time unmet, and the history limit's deletion let
/// that time run a second time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cronjob_regression_crash_stale_at_4() {
    replay(cronjob_scenario(), "crash-stale@4").await;
}

/// A crash right after a CronJob's Job was created: the restarted process found the
/// Job finished and unrecorded, deleted it for the history limit and ran the time again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cronjob_regression_crash_at_3() {
    replay(cronjob_scenario(), "crash@3").await;
}
