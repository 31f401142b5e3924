//! LimitRanger admission through the API: defaults written into a created Pod with the
//! `kubernetes.io/limit-ranger` annotation, 403 Forbidden with upstream's messages for
//! Pods and PersistentVolumeClaims that violate a LimitRange, other namespaces untouched.

use crate::common::{self, Server};
use serde_json::{json, Value};

const JSON: &str = "application/json";

fn post(s: &Server, path: &str, body: Value) -> (u16, Value) {
    s.json("POST", path, JSON, JSON, &body)
}

fn pod(name: &str, resources: Value) -> Value {
    json!({"metadata": {"name": name},
           "spec": {"containers": [{"name": "app", "image": "x", "resources": resources}]}})
}

#[test]
fn limit_ranges_default_and_limit_pods_and_claims() {
    let s = common::start();
    for ns in ["lr", "free"] {
        let (code, _) = post(&s, "/api/v1/namespaces", json!({"metadata": {"name": ns}}));
        assert_eq!(code, 201);
    }
    let (code, v) = post(
        &s,
        "/api/v1/namespaces/lr/limitranges",
        json!({"metadata": {"name": "limits"}, "spec": {"limits": [
            {"type": "Container", "max": {"cpu": "1"}, "default": {"cpu": "500m", "memory": "256Mi"},
             "defaultRequest": {"cpu": "100m", "memory": "128Mi"}},
            {"type": "PersistentVolumeClaim", "max": {"storage": "1Gi"}},
        ]}}),
    );
    assert_eq!(code, 201, "{v}");

    // a pod without resources gets the defaults and the annotation
    let (code, created) = post(&s, "/api/v1/namespaces/lr/pods", pod("plain", json!({})));
    assert_eq!(code, 201, "{created}");
    assert_eq!(
        created["spec"]["containers"][0]["resources"],
        json!({"limits": {"cpu": "500m", "memory": "256Mi"}, "requests": {"cpu": "100m", "memory": "128Mi"}})
    );
    assert_eq!(
        created["metadata"]["annotations"]["kubernetes.io/limit-ranger"],
        "LimitRanger plugin set: cpu, memory request for container app; cpu, memory limit for container app"
    );
    // one with its own keeps them; only the missing ones are set
    let (_, own) = post(
        &s,
        "/api/v1/namespaces/lr/pods",
        pod(
            "own",
            json!({"requests": {"cpu": "200m"}, "limits": {"cpu": "800m"}}),
        ),
    );
    assert_eq!(
        own["spec"]["containers"][0]["resources"],
        json!({"limits": {"cpu": "800m", "memory": "256Mi"}, "requests": {"cpu": "200m", "memory": "128Mi"}})
    );

    // a violation is 403 Forbidden with upstream's message, nothing stored
    let (code, e) = post(
        &s,
        "/api/v1/namespaces/lr/pods",
        pod("big", json!({"limits": {"cpu": "2"}})),
    );
    assert_eq!(code, 403, "{e}");
    assert_eq!(e["reason"], "Forbidden");
    assert_eq!(
        e["message"],
        "pods \"big\" is forbidden: maximum cpu usage per Container is 1, but limit is 2"
    );
    assert_eq!(e["details"], json!({"name": "big", "kind": "pods"}));
    let (code, _) = s.json(
        "GET",
        "/api/v1/namespaces/lr/pods/big",
        JSON,
        JSON,
        &Value::Null,
    );
    assert_eq!(code, 404);
    // a generated name is not known yet: the message names the prefix
    let mut generated = pod("", json!({"limits": {"cpu": "3"}}));
    generated["metadata"] = json!({"generateName": "web-"});
    let (code, e) = post(&s, "/api/v1/namespaces/lr/pods", generated);
    assert_eq!(code, 403);
    assert_eq!(
        e["message"],
        "pods \"web-\" is forbidden: maximum cpu usage per Container is 1, but limit is 3"
    );

    // other namespaces are not limited
    let (code, free) = post(
        &s,
        "/api/v1/namespaces/free/pods",
        pod("big", json!({"limits": {"cpu": "2"}})),
    );
    assert_eq!(code, 201);
    assert!(free["metadata"].get("annotations").is_none());

    // claims: max storage, never defaulted
    let claim = |name: &str, size: &str| {
        json!({"metadata": {"name": name}, "spec": {"accessModes": ["ReadWriteOnce"],
               "resources": {"requests": {"storage": size}}}})
    };
    let (code, v) = post(
        &s,
        "/api/v1/namespaces/lr/persistentvolumeclaims",
        claim("small", "1Gi"),
    );
    assert_eq!(code, 201, "{v}");
    let (code, e) = post(
        &s,
        "/api/v1/namespaces/lr/persistentvolumeclaims",
        claim("large", "2Gi"),
    );
    assert_eq!(code, 403);
    assert_eq!(
        e["message"],
        "persistentvolumeclaims \"large\" is forbidden: maximum storage usage per PersistentVolumeClaim is 1Gi, but request is 2Gi"
    );

    // a bound claim grown past the maximum is refused on update too
    let mut bound = claim("bound", "1Gi");
    bound["spec"]["volumeName"] = json!("pv-bound");
    let (code, v) = post(&s, "/api/v1/namespaces/lr/persistentvolumeclaims", bound);
    assert_eq!(code, 201, "{v}");
    let (code, v) = s.json(
        "PATCH",
        "/api/v1/namespaces/lr/persistentvolumeclaims/bound/status",
        "application/merge-patch+json",
        JSON,
        &json!({"status": {"phase": "Bound"}}),
    );
    assert_eq!(code, 200, "{v}");
    let (code, e) = s.json(
        "PATCH",
        "/api/v1/namespaces/lr/persistentvolumeclaims/bound",
        "application/merge-patch+json",
        JSON,
        &json!({"spec": {"resources": {"requests": {"storage": "3Gi"}}}}),
    );
    assert_eq!(code, 403, "{e}");
    assert_eq!(
        e["message"],
        "persistentvolumeclaims \"bound\" is forbidden: maximum storage usage per PersistentVolumeClaim is 1Gi, but request is 3Gi"
    );
}
