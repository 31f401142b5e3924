//! The TTL-after-finished controller against the embedded API server, with the garbage
//! collector (the Jobs are deleted in the foreground, as upstream). The tests finish the
//! Jobs themselves through the status subresource (no Job controller here).

use crate::common;

use common::{wait_for, Harness};
use coxswain_controllers::{garbagecollector, ttlafterfinished};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{Patch, PatchParams, PostParams};
use kube::Api;
use serde_json::json;

const NS: &str = "ttl";

async fn create(jobs: &Api<Job>, name: &str, ttl: Option<i32>) {
    let job: Job = serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "ttlSecondsAfterFinished": ttl,
            "template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "c", "image": "busybox"}],
            }},
        },
    }))
    .expect("job");
    jobs.create(&PostParams::default(), &job)
        .await
        .expect("job created");
}

async fn finish(jobs: &Api<Job>, name: &str, at: Timestamp) {
    let at = at.to_string();
    jobs.patch_status(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {
            "startTime": at, "completionTime": at, "succeeded": 1,
            "conditions": [{"type": "Complete", "status": "True", "lastTransitionTime": at}],
        }})),
    )
    .await
    .expect("job finished");
}

#[tokio::test]
async fn finished_jobs_are_deleted_after_their_ttl() {
    common::logs();
    let h = Harness::start(&[
        ttlafterfinished::descriptor(),
        garbagecollector::descriptor(),
    ])
    .await;
    h.namespace(NS).await;
    let jobs = Api::<Job>::namespaced(h.client(), NS);
    create(&jobs, "short", Some(2)).await;
    create(&jobs, "expired", Some(5)).await;
    create(&jobs, "kept", None).await;
    create(&jobs, "running", Some(0)).await;
    create(&jobs, "later", Some(3600)).await;
    let now = Timestamp::now();
    finish(&jobs, "short", now).await;
    finish(&jobs, "expired", now - SignedDuration::from_mins(10)).await;
    finish(&jobs, "kept", now - SignedDuration::from_mins(10)).await;
    finish(&jobs, "later", now).await;
    for name in ["expired", "short"] {
        wait_for(&format!("job {name} deleted"), || async {
            jobs.get_opt(name)
                .await
                .expect("get")
                .is_none()
                .then_some(())
        })
        .await;
    }
    // no TTL, not finished, or not yet expired: still there
    for name in ["kept", "running", "later"] {
        let j = jobs.get(name).await.expect("still there");
        assert!(j.metadata.deletion_timestamp.is_none(), "{name}");
    }
    // a TTL set on an expired finished Job later deletes it
    jobs.patch(
        "kept",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"ttlSecondsAfterFinished": 1}})),
    )
    .await
    .expect("ttl set");
    wait_for("job kept deleted", || async {
        jobs.get_opt("kept")
            .await
            .expect("get")
            .is_none()
            .then_some(())
    })
    .await;
    h.stop().await;
}
