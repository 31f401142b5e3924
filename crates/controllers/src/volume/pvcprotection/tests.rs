//! Cases of upstream `TestPVCProtectionController` that decide whether a claim is in use
//! and which claims a pod change enqueues.

use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use serde_json::{json, Value};

use super::*;

fn pvc(name: &str, owner_uid: Option<&str>) -> PersistentVolumeClaim {
    let mut v = json!({"metadata": {"name": name, "namespace": "default"}});
    if let Some(uid) = owner_uid {
        v["metadata"]["ownerReferences"] = json!([{"apiVersion": "v1", "kind": "Pod",
            "name": "pod1", "uid": uid, "controller": true}]);
    }
    serde_json::from_value(v).unwrap()
}

fn pod(node: Option<&str>, volumes: Value, extra: Value) -> Pod {
    let mut v = json!({
        "metadata": {"name": "pod1", "namespace": "default", "uid": "pod-uid"},
        "spec": {"containers": [], "volumes": volumes},
    });
    if let Some(n) = node {
        v["spec"]["nodeName"] = json!(n);
    }
    json_merge(&mut v, extra);
    serde_json::from_value(v).unwrap()
}

fn json_merge(a: &mut Value, b: Value) {
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                json_merge(a.entry(k).or_insert(Value::Null), v);
            }
        }
        (a, b) => *a = b,
    }
}

fn claim_volume() -> Value {
    json!([{"name": "vol", "persistentVolumeClaim": {"claimName": "pvc1"}}])
}

fn ephemeral_volume() -> Value {
    json!([{"name": "vol", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}])
}

#[test]
fn pod_uses_pvc_follows_upstream() {
    let deleting_now = json!({"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z",
        "deletionGracePeriodSeconds": 0}});
    let deleting_later = json!({"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z",
        "deletionGracePeriodSeconds": 30}});
    let cases: Vec<(&str, Pod, PersistentVolumeClaim, bool)> = vec![
        (
            "scheduled pod uses the claim",
            pod(Some("node1"), claim_volume(), json!({})),
            pvc("pvc1", None),
            true,
        ),
        (
            "unscheduled pod does not block",
            pod(None, claim_volume(), json!({})),
            pvc("pvc1", None),
            false,
        ),
        (
            "other claim",
            pod(Some("node1"), claim_volume(), json!({})),
            pvc("pvc2", None),
            false,
        ),
        (
            "terminated pod still present blocks (phase is not checked)",
            pod(
                Some("node1"),
                claim_volume(),
                json!({"status": {"phase": "Succeeded"}}),
            ),
            pvc("pvc1", None),
            true,
        ),
        (
            "shut down pod still blocks through a plain claim",
            pod(Some("node1"), claim_volume(), deleting_now.clone()),
            pvc("pvc1", None),
            true,
        ),
        (
            "ephemeral claim owned by the pod",
            pod(Some("node1"), ephemeral_volume(), json!({})),
            pvc("pod1-vol", Some("pod-uid")),
            true,
        ),
        (
            "ephemeral claim of the same name not owned by the pod",
            pod(Some("node1"), ephemeral_volume(), json!({})),
            pvc("pod1-vol", Some("other-uid")),
            false,
        ),
        (
            "ephemeral claim of a shut down pod",
            pod(Some("node1"), ephemeral_volume(), deleting_now),
            pvc("pod1-vol", Some("pod-uid")),
            false,
        ),
        (
            "ephemeral claim of a pod deleting with a grace period",
            pod(Some("node1"), ephemeral_volume(), deleting_later),
            pvc("pod1-vol", Some("pod-uid")),
            true,
        ),
    ];
    for (name, pod, pvc, want) in cases {
        assert_eq!(pod_uses_pvc(&pod, &pvc), want, "{name}");
    }
}

#[test]
fn pod_changes_enqueue_claims_only_when_they_can_free_them() {
    let keys = |p: &Pod, deleted: bool| -> Vec<String> {
        pvcs_to_enqueue(p, deleted)
            .iter()
            .map(|k| k.to_string())
            .collect()
    };
    let running = pod(
        Some("node1"),
        claim_volume(),
        json!({"status": {"phase": "Running"}}),
    );
    assert!(keys(&running, false).is_empty());
    assert_eq!(keys(&running, true), ["default/pvc1"]);
    let unscheduled = pod(None, claim_volume(), json!({}));
    assert_eq!(keys(&unscheduled, false), ["default/pvc1"]);
    let done = pod(
        Some("node1"),
        ephemeral_volume(),
        json!({"status": {"phase": "Failed"}}),
    );
    assert_eq!(keys(&done, false), ["default/pod1-vol"]);
    let deleting_stopped = pod(
        Some("node1"),
        claim_volume(),
        json!({"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"},
               "status": {"phase": "Running", "containerStatuses": [{"name": "c", "image": "i",
                 "imageID": "", "ready": false, "restartCount": 0,
                 "state": {"terminated": {"exitCode": 0}}}]}}),
    );
    assert_eq!(keys(&deleting_stopped, false), ["default/pvc1"]);
}
