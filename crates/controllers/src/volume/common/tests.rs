use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use serde_json::json;

use super::*;

fn pod(ns: &str, uid: &str) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": "my-pod", "namespace": ns, "uid": uid},
        "spec": {"containers": [], "volumes": [
            {"name": "data", "persistentVolumeClaim": {"claimName": "claim"}},
            {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}},
            {"name": "tmp", "emptyDir": {}},
        ]},
    }))
    .unwrap()
}

fn pvc(ns: &str, owner: Option<(&str, bool)>) -> PersistentVolumeClaim {
    let mut v = json!({"metadata": {"name": "my-pod-scratch", "namespace": ns}});
    if let Some((uid, controller)) = owner {
        v["metadata"]["ownerReferences"] = json!([{
            "apiVersion": "v1", "kind": "Pod", "name": "my-pod", "uid": uid,
            "controller": controller,
        }]);
    }
    serde_json::from_value(v).unwrap()
}

/// Upstream `component-helpers/storage/ephemeral` `TestVolumeIsForPod`.
#[test]
fn volume_is_for_pod_follows_upstream_table() {
    let cases: Vec<(&str, Pod, PersistentVolumeClaim, Option<&str>)> = vec![
        (
            "owned",
            pod("ns", "pod-uid"),
            pvc("ns", Some(("pod-uid", true))),
            None,
        ),
        (
            "other-pod",
            pod("ns", "pod-uid"),
            pvc("ns", Some(("other-uid", true))),
            Some("PVC ns/my-pod-scratch was not created for pod ns/my-pod (pod is not owner)"),
        ),
        (
            "no-owner",
            pod("ns", "pod-uid"),
            pvc("ns", None),
            Some("PVC ns/my-pod-scratch was not created for pod ns/my-pod (pod is not owner)"),
        ),
        (
            "owner-but-not-controller",
            pod("ns", "pod-uid"),
            pvc("ns", Some(("pod-uid", false))),
            Some("PVC ns/my-pod-scratch was not created for pod ns/my-pod (pod is not owner)"),
        ),
        (
            "different-namespace",
            pod("ns", "pod-uid"),
            pvc("other", Some(("pod-uid", true))),
            Some("PVC other/my-pod-scratch belongs to a different namespace than pod ns/my-pod"),
        ),
    ];
    for (name, pod, pvc, want) in cases {
        assert_eq!(
            volume_is_for_pod(&pod, &pvc).err().as_deref(),
            want,
            "{name}"
        );
    }
}

#[test]
fn pod_pvc_index_covers_claims_and_ephemeral_volumes() {
    let p = pod("ns", "u");
    assert_eq!(pod_pvc_keys(&p), ["ns/claim", "ns/my-pod-scratch"]);
    let v = &p.spec.as_ref().unwrap().volumes.as_ref().unwrap()[1];
    assert_eq!(volume_claim_name(&p, v), "my-pod-scratch");
}
