//! The disruption controller against the embedded API server (no kubelet: the tests
//! set pod readiness themselves): budget status from the pods' controller's scale, the
//! eviction subresource taking from it, the fail-safe, and the stale DisruptionTarget
//! cleanup (1 s here instead of upstream's 2 minutes).

use std::time::Duration;

use crate::common;

use common::{wait_for, Harness};
use coxswain_controllers::disruption::{self, DisruptionControllerOptions};
use coxswain_controllers::registry::ControllerManagerOptions;
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{EvictParams, Patch, PatchParams, PostParams};
use kube::Api;
use serde_json::json;

const NS: &str = "disruption";

async fn start() -> Harness {
    common::logs();
    let options = ControllerManagerOptions {
        disruption: DisruptionControllerOptions {
            stale_pod_disruption_timeout: Duration::from_secs(1),
        },
        ..Default::default()
    };
    let h = Harness::start_with(&[disruption::descriptor()], options).await;
    h.namespace(NS).await;
    h
}

async fn ready_pod(pods: &Api<Pod>, name: &str, owner: Option<&ReplicaSet>) {
    let owners: Vec<serde_json::Value> = owner
        .map(|rs| {
            vec![
                json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs.metadata.name,
                        "uid": rs.metadata.uid, "controller": true}),
            ]
        })
        .unwrap_or_default();
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"app": "web"}, "ownerReferences": owners},
        "spec": {"nodeName": "node-1", "containers": [{"name": "c", "image": "nginx"}]},
    }))
    .expect("pod");
    pods.create(&PostParams::default(), &pod)
        .await
        .expect("pod created");
    pods.patch_status(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}})),
    )
    .await
    .expect("pod ready");
}

async fn status_of(pdbs: &Api<PodDisruptionBudget>, name: &str) -> Option<serde_json::Value> {
    let b = pdbs.get(name).await.ok()?;
    serde_json::to_value(b.status?).ok()
}

#[tokio::test]
async fn budgets_follow_their_pods_and_evictions() {
    let h = start().await;
    let c = h.client();
    let rss: Api<ReplicaSet> = Api::namespaced(c.clone(), NS);
    let pods: Api<Pod> = Api::namespaced(c.clone(), NS);
    let pdbs: Api<PodDisruptionBudget> = Api::namespaced(c.clone(), NS);
    let rs: ReplicaSet = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "c", "image": "nginx"}]}}},
    }))
    .unwrap();
    let rs = rss.create(&PostParams::default(), &rs).await.expect("rs");
    for i in 0..3 {
        ready_pod(&pods, &format!("web-{i}"), Some(&rs)).await;
    }
    let pdb: PodDisruptionBudget = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {"minAvailable": "50%", "selector": {"matchLabels": {"app": "web"}}},
    }))
    .unwrap();
    pdbs.create(&PostParams::default(), &pdb)
        .await
        .expect("pdb");
    let s = wait_for("the budget's status", || async {
        status_of(&pdbs, "web")
            .await
            .filter(|s| s["currentHealthy"] == 3)
    })
    .await;
    // 50% of the ReplicaSet's 3 rounds up to 2
    assert_eq!(s["expectedPods"], 3);
    assert_eq!(s["desiredHealthy"], 2);
    assert_eq!(s["disruptionsAllowed"], 1);
    assert_eq!(s["observedGeneration"], 1);
    assert_eq!(s["conditions"][0]["type"], "DisruptionAllowed");
    assert_eq!(s["conditions"][0]["status"], "True");
    assert_eq!(s["conditions"][0]["reason"], "SufficientPods");

    // one eviction is allowed, the pod goes and the budget is recomputed
    pods.evict("web-0", &EvictParams::default())
        .await
        .expect("evicted");
    let s = wait_for("the budget after the eviction", || async {
        status_of(&pdbs, "web")
            .await
            .filter(|s| s["currentHealthy"] == 2)
    })
    .await;
    assert_eq!(s["disruptionsAllowed"], 0);
    assert_eq!(s["conditions"][0]["reason"], "InsufficientPods");
    // the evicted pod is terminating (graceful) and says why
    let p = pods.get("web-0").await.expect("terminating pod");
    assert!(p.metadata.deletion_timestamp.is_some());
    let dt = p.status.and_then(|s| s.conditions).unwrap_or_default();
    assert!(dt
        .iter()
        .any(|c| c.type_ == "DisruptionTarget" && c.status == "True"));
    // (the refusal of the next eviction is the API server's, tested there: kube-rs
    // retries 429 answers itself)
    // a new generation is observed
    pdbs.patch(
        "web",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"minAvailable": 1}})),
    )
    .await
    .expect("patched");
    let s = wait_for("the new generation", || async {
        status_of(&pdbs, "web")
            .await
            .filter(|s| s["observedGeneration"] == 2)
    })
    .await;
    // an integer minAvailable counts the selected pods (the terminating one too)
    assert_eq!(
        (s["expectedPods"].as_i64(), s["desiredHealthy"].as_i64()),
        (Some(3), Some(1))
    );
    assert_eq!(s["disruptionsAllowed"], 1);
    h.stop().await;
}

#[tokio::test]
async fn unknown_controllers_fail_safe_and_stale_conditions_are_reset() {
    let h = start().await;
    let c = h.client();
    let pods: Api<Pod> = Api::namespaced(c.clone(), NS);
    let pdbs: Api<PodDisruptionBudget> = Api::namespaced(c.clone(), NS);
    // a pod whose controller does not exist: the budget cannot be computed
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "lost", "labels": {"app": "lost"},
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "gone",
                                          "uid": "00000000-0000-0000-0000-000000000001", "controller": true}]},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
    }))
    .unwrap();
    pods.create(&PostParams::default(), &pod)
        .await
        .expect("pod");
    let pdb: PodDisruptionBudget = serde_json::from_value(json!({
        "metadata": {"name": "lost"},
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "lost"}}},
    }))
    .unwrap();
    pdbs.create(&PostParams::default(), &pdb)
        .await
        .expect("pdb");
    let s = wait_for("the fail-safe status", || async {
        status_of(&pdbs, "lost")
            .await
            .filter(|s| s["conditions"][0]["reason"] == "SyncFailed")
    })
    .await;
    assert_eq!(s["disruptionsAllowed"], 0);
    assert_eq!(s["conditions"][0]["status"], "False");
    assert_eq!(
        s["conditions"][0]["message"],
        "found no controllers for pod \"lost\""
    );

    // a DisruptionTarget that no deletion followed is reset after the timeout
    pods.patch_status(
        "lost",
        &PatchParams::default(),
        &Patch::Merge(
            json!({"status": {"conditions": [{"type": "DisruptionTarget", "status": "True",
            "reason": "EvictionByEvictionAPI", "message": "Eviction API: evicting"}]}}),
        ),
    )
    .await
    .expect("condition set");
    let c = wait_for("the condition reset", || async {
        let p = pods.get("lost").await.ok()?;
        p.status?
            .conditions?
            .into_iter()
            .find(|c| c.type_ == "DisruptionTarget" && c.status == "False")
    })
    .await;
    assert_eq!(c.reason, None);
    h.stop().await;
}
