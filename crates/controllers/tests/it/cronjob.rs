//! The CronJob controller against the embedded API server (no Job controller: the tests
//! finish Jobs themselves through the status subresource).
//!
//! To avoid waiting for minute boundaries, the tests give a `*/1 * * * *` CronJob a
//! `status.lastScheduleTime` some minutes back: the controller then runs the most recent
//! missed time at once, as upstream does after downtime.

use crate::common;

use common::{wait_for, Harness};
use coxswain_controllers::cronjob;
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::{json, Value};

const NS: &str = "cron";
const SCHEDULED: &str = "batch.kubernetes.io/cronjob-scheduled-timestamp";

async fn start() -> Harness {
    common::logs();
    let h = Harness::start(&[cronjob::descriptor()]).await;
    h.namespace(NS).await;
    h
}

fn job_template() -> Value {
    json!({
        "metadata": {"labels": {"app": "tick"}, "annotations": {"x": "y"}},
        "spec": {"template": {"spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "c", "image": "busybox"}],
        }}},
    })
}

async fn create_cronjob(c: &kube::Client, name: &str, spec: Value) -> CronJob {
    let mut spec = spec;
    spec["jobTemplate"] = job_template();
    let cj: CronJob =
        serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec})).expect("cronjob");
    Api::<CronJob>::namespaced(c.clone(), NS)
        .create(&PostParams::default(), &cj)
        .await
        .expect("cronjob created")
}

fn minutes_ago(n: i64) -> String {
    let now = Timestamp::now().as_second();
    let t = Timestamp::from_second((now / 60 - n) * 60).expect("time");
    t.to_string()
}

async fn set_last_schedule(c: &kube::Client, name: &str, at: &str) {
    Api::<CronJob>::namespaced(c.clone(), NS)
        .patch_status(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"lastScheduleTime": at}})),
        )
        .await
        .expect("status patched");
}

async fn jobs_of(c: &kube::Client, cj: &CronJob) -> Vec<Job> {
    let uid = cj.uid();
    Api::<Job>::namespaced(c.clone(), NS)
        .list(&ListParams::default())
        .await
        .expect("jobs")
        .items
        .into_iter()
        .filter(|j| {
            j.owner_references()
                .iter()
                .any(|r| r.controller == Some(true) && Some(&r.uid) == uid.as_ref())
        })
        .collect()
}

async fn events(c: &kube::Client, name: &str) -> Vec<(String, String, String)> {
    Api::<Event>::namespaced(c.clone(), NS)
        .list(&ListParams::default())
        .await
        .expect("events")
        .items
        .into_iter()
        .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name))
        .map(|e| {
            (
                e.type_.unwrap_or_default(),
                e.reason.unwrap_or_default(),
                e.note.unwrap_or_default(),
            )
        })
        .collect()
}

async fn wait_event(c: &kube::Client, name: &str, reason: &str, note: &str) {
    wait_for(&format!("event {reason}: {note}"), || async {
        events(c, name)
            .await
            .iter()
            .any(|(_, r, n)| r == reason && n == note)
            .then_some(())
    })
    .await
}

/// Mark a Job finished (`Complete` or `Failed`) through the status subresource.
async fn finish(c: &kube::Client, name: &str, condition: &str, start: &str, end: &str) {
    let mut status = json!({
        "startTime": start,
        "conditions": [{
            "type": condition, "status": "True", "lastTransitionTime": end,
            "reason": "Test", "message": "finished by the test",
        }],
    });
    if condition == "Complete" {
        status["completionTime"] = json!(end);
        status["succeeded"] = json!(1);
    } else {
        status["failed"] = json!(1);
    }
    Api::<Job>::namespaced(c.clone(), NS)
        .patch_status(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({ "status": status })),
        )
        .await
        .expect("job status patched");
}

#[tokio::test]
async fn runs_the_most_recent_missed_time_and_tracks_the_job() {
    let h = start().await;
    let c = h.client();
    let cjs = Api::<CronJob>::namespaced(c.clone(), NS);
    let cj = create_cronjob(&c, "tick", json!({"schedule": "*/1 * * * *"})).await;
    set_last_schedule(&c, "tick", &minutes_ago(5)).await;

    // one Job, for the most recent minute: the older missed ones are dropped
    let job = wait_for("the job of the most recent minute", || async {
        jobs_of(&c, &cj).await.into_iter().next()
    })
    .await;
    let stamp: Timestamp = job.annotations()[SCHEDULED].parse().expect("RFC 3339");
    assert_eq!(stamp.as_second() % 60, 0);
    let age = Timestamp::now().duration_since(stamp);
    assert!(age >= SignedDuration::ZERO && age < SignedDuration::from_mins(2));
    assert_eq!(job.name_any(), format!("tick-{}", stamp.as_second() / 60));
    assert_eq!(job.labels()["app"], "tick");
    assert_eq!(job.annotations()["x"], "y");
    let owner = &job.owner_references()[0];
    assert_eq!(
        (
            owner.kind.as_str(),
            owner.controller,
            owner.block_owner_deletion
        ),
        ("CronJob", Some(true), Some(true))
    );
    wait_event(
        &c,
        "tick",
        "SuccessfulCreate",
        &format!("Created job {}", job.name_any()),
    )
    .await;

    // the status names it active and the time it was scheduled for
    let cj = wait_for("status.active", || async {
        let cj = cjs.get("tick").await.expect("cronjob");
        let s = cj.status.clone()?;
        (s.active.as_ref()?.len() == 1).then_some(cj)
    })
    .await;
    let status = cj.status.clone().expect("status");
    assert_eq!(status.active.expect("active")[0].uid, job.uid());
    assert_eq!(status.last_schedule_time.expect("last").0, stamp);

    // the Job completes: it leaves the active list, lastSuccessfulTime is its completion
    let end = Timestamp::now().to_string();
    finish(&c, &job.name_any(), "Complete", &stamp.to_string(), &end).await;
    let cj = wait_for("the completed job to leave status.active", || async {
        let cj = cjs.get("tick").await.expect("cronjob");
        let s = cj.status.clone()?;
        (s.active.unwrap_or_default().is_empty() && s.last_successful_time.is_some()).then_some(cj)
    })
    .await;
    let last_ok = cj.status.unwrap().last_successful_time.unwrap().0;
    assert_eq!(
        last_ok.as_second(),
        end.parse::<Timestamp>().unwrap().as_second()
    );
    wait_event(
        &c,
        "tick",
        "SawCompletedJob",
        &format!("Saw completed job: {}, condition: Complete", job.name_any()),
    )
    .await;
    h.stop().await;
}

#[tokio::test]
async fn keeps_the_history_limits() {
    let h = start().await;
    let c = h.client();
    // suspended: the controller only cleans up
    let cj = create_cronjob(
        &c,
        "hist",
        json!({"schedule": "*/1 * * * *", "suspend": true,
               "successfulJobsHistoryLimit": 1, "failedJobsHistoryLimit": 1}),
    )
    .await;
    let jobs = Api::<Job>::namespaced(c.clone(), NS);
    let owner = json!({
        "apiVersion": "batch/v1", "kind": "CronJob", "name": "hist",
        "uid": cj.uid(), "controller": true,
    });
    // Each Job is finished as soon as it is created: every sync reports each unfinished
    // Job it did not start (UnexpectedJob), and those events count against the
    // per-object event budget (burst 25, as client-go's spam filter), which would
    // otherwise swallow the deletion events this test looks for.
    // Finished at increasing start times: the oldest go first.
    let finished = [
        ("ok-1", "Complete", 10),
        ("bad-1", "Failed", 10),
        ("ok-2", "Complete", 9),
        ("bad-2", "Failed", 9),
        ("ok-3", "Complete", 8),
    ];
    let create = |name: &'static str| {
        let jobs = jobs.clone();
        let owner = owner.clone();
        async move {
            let job: Job = serde_json::from_value(json!({
                "metadata": {"name": name, "ownerReferences": [owner]},
                "spec": job_template()["spec"],
            }))
            .expect("job");
            jobs.create(&PostParams::default(), &job)
                .await
                .expect("job created");
        }
    };
    for (name, condition, ago) in finished {
        create(name).await;
        let t = minutes_ago(ago);
        finish(&c, name, condition, &t, &t).await;
    }
    create("running").await;
    // any change wakes the CronJob
    Api::<CronJob>::namespaced(c.clone(), NS)
        .patch(
            "hist",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"poke": "1"}}})),
        )
        .await
        .expect("poked");
    let left = wait_for("the oldest finished jobs to go", || async {
        let mut left: Vec<String> = jobs_of(&c, &cj)
            .await
            .into_iter()
            .filter(|j| j.metadata.deletion_timestamp.is_none())
            .map(|j| j.name_any())
            .collect();
        left.sort();
        (left.len() == 3).then_some(left)
    })
    .await;
    assert_eq!(left, ["bad-2", "ok-3", "running"]);
    for gone in ["ok-1", "ok-2", "bad-1"] {
        wait_event(
            &c,
            "hist",
            "SuccessfulDelete",
            &format!("Deleted job {gone}"),
        )
        .await;
    }
    // the running Job it did not start (kubectl create job --from) is reported, not adopted
    wait_event(
        &c,
        "hist",
        "UnexpectedJob",
        "Saw a job that the controller did not create or forgot: running",
    )
    .await;
    let cj = Api::<CronJob>::namespaced(c.clone(), NS)
        .get("hist")
        .await
        .unwrap();
    assert!(cj
        .status
        .and_then(|s| s.active)
        .unwrap_or_default()
        .is_empty());
    h.stop().await;
}

#[tokio::test]
async fn forbid_waits_for_the_active_job_and_replace_replaces_it() {
    let h = start().await;
    let c = h.client();
    let cjs = Api::<CronJob>::namespaced(c.clone(), NS);
    let jobs = Api::<Job>::namespaced(c.clone(), NS);
    for (name, policy) in [("forbid", "Forbid"), ("replace", "Replace")] {
        let cj = create_cronjob(
            &c,
            name,
            json!({"schedule": "*/1 * * * *", "concurrencyPolicy": policy}),
        )
        .await;
        // a Job of an earlier run, still running and in status.active
        let owner = json!({
            "apiVersion": "batch/v1", "kind": "CronJob", "name": name,
            "uid": cj.uid(), "controller": true,
        });
        let old: Job = serde_json::from_value(json!({
            "metadata": {"name": format!("{name}-old"), "ownerReferences": [owner]},
            "spec": job_template()["spec"],
        }))
        .expect("job");
        let old = jobs
            .create(&PostParams::default(), &old)
            .await
            .expect("job created");
        let reference = json!({
            "apiVersion": "batch/v1", "kind": "Job", "namespace": NS,
            "name": old.name_any(), "uid": old.uid(),
        });
        cjs.patch_status(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {
                "lastScheduleTime": minutes_ago(5), "active": [reference],
            }})),
        )
        .await
        .expect("status patched");
        if policy == "Forbid" {
            wait_event(
                &c,
                name,
                "JobAlreadyActive",
                "Not starting job because prior execution is running and concurrency policy is Forbid",
            )
            .await;
            let names: Vec<String> = jobs_of(&c, &cj)
                .await
                .iter()
                .map(|j| j.name_any())
                .collect();
            assert_eq!(names, [old.name_any()]);
        } else {
            wait_event(
                &c,
                name,
                "SuccessfulDelete",
                &format!("Deleted job {}", old.name_any()),
            )
            .await;
            let new = wait_for("the replacement job", || async {
                let cj = cjs.get(name).await.expect("cronjob");
                let active = cj.status?.active?;
                (active.len() == 1 && active[0].uid != old.uid()).then_some(active[0].clone())
            })
            .await;
            assert!(new.name.expect("name").starts_with("replace-"));
        }
    }
    h.stop().await;
}
