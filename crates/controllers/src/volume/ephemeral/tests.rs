//! The pure parts of upstream `TestSyncHandler`: which pods are synced and the claim
//! created for each ephemeral volume.

use k8s_openapi::api::core::v1::Pod;
use serde_json::json;

use super::*;

fn pod(volumes: serde_json::Value, deleting: bool) -> Pod {
    let mut v = json!({
        "metadata": {"name": "my-pod", "namespace": "my-namespace", "uid": "12345"},
        "spec": {"containers": [], "volumes": volumes},
    });
    if deleting {
        v["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
    }
    serde_json::from_value(v).unwrap()
}

fn ephemeral() -> serde_json::Value {
    json!({"name": "my-volume", "ephemeral": {"volumeClaimTemplate": {
        "metadata": {"labels": {"app": "db"}, "annotations": {"note": "kept"}},
        "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "fast",
                 "resources": {"requests": {"storage": "1Gi"}}},
    }}})
}

#[test]
fn pods_with_ephemeral_volumes_are_synced_unless_deleting() {
    assert!(wants_sync(&pod(json!([ephemeral()]), false)));
    assert!(!wants_sync(&pod(json!([ephemeral()]), true)));
    assert!(!wants_sync(&pod(
        json!([{"name": "v", "emptyDir": {}}]),
        false
    )));
    assert!(!wants_sync(&pod(json!([]), false)));
}

#[test]
fn the_claim_is_named_after_pod_and_volume_and_controlled_by_the_pod() {
    let p = pod(json!([ephemeral(), {"name": "v", "emptyDir": {}}]), false);
    let vols = p.spec.as_ref().unwrap().volumes.as_ref().unwrap();
    assert!(claim_for(&p, &vols[1]).is_none());
    let claim = serde_json::to_value(claim_for(&p, &vols[0]).unwrap()).unwrap();
    assert_eq!(
        claim,
        json!({
            "apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {
                "name": "my-pod-my-volume", "namespace": "my-namespace",
                "labels": {"app": "db"}, "annotations": {"note": "kept"},
                "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "my-pod",
                    "uid": "12345", "controller": true, "blockOwnerDeletion": true}],
            },
            "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "fast",
                     "resources": {"requests": {"storage": "1Gi"}}},
        })
    );
}
