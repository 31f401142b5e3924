//! The round trip against what kube-apiserver returns for the same bodies (the table of
//! the issue's research note, from upstream's struct tags), and against the protobuf
//! decoder that already emulates "decode, then encode" for bodies with nothing on the
//! wire.

use serde_json::{json, Value};

use super::*;
use crate::machinery::protobuf::tests::{body, Enc};

fn storage(av: &str, kind: &str, mut v: Value) -> Value {
    assert!(normalise(av, kind, &mut v, Mode::Storage), "{av} {kind}");
    v
}

fn decoded(av: &str, kind: &str, mut v: Value) -> Value {
    assert!(normalise(av, kind, &mut v, Mode::Decode), "{av} {kind}");
    v
}

fn has(v: &Value, pointer: &str) -> bool {
    v.pointer(pointer).is_some()
}

#[test]
fn empty_metadata_collections_go() {
    let v = storage(
        "v1",
        "ConfigMap",
        json!({"metadata": {"name": "c", "ownerReferences": [], "finalizers": [],
            "labels": {}, "annotations": {}, "generation": 0, "namespace": ""},
            "data": {}, "binaryData": {}}),
    );
    assert_eq!(v, json!({"metadata": {"name": "c"}}));
    // the same right after decoding: these are all omitempty
    let v = decoded(
        "v1",
        "ConfigMap",
        json!({"metadata": {"name": "c", "ownerReferences": [], "labels": {}}}),
    );
    assert_eq!(v, json!({"metadata": {"name": "c"}}));
}

#[test]
fn managed_fields_are_the_field_managers() {
    // a decoded [] resets managed fields upstream; the normaliser leaves it
    let v = decoded(
        "v1",
        "ConfigMap",
        json!({"metadata": {"name": "c", "managedFields": []}}),
    );
    assert_eq!(v["metadata"]["managedFields"], json!([]));
}

#[test]
fn pointers_keep_zeros_and_scalars_lose_them() {
    let v = storage(
        "apps/v1",
        "Deployment",
        json!({"metadata": {"name": "d"}, "spec": {
            "replicas": 0, "paused": false, "minReadySeconds": 0,
            "selector": {"matchLabels": {}, "matchExpressions": []},
            "template": {"metadata": {"creationTimestamp": null}, "spec": {
                "hostNetwork": false, "nodeName": "", "volumes": [], "nodeSelector": {},
                "affinity": {}, "securityContext": {},
                "containers": [{"name": "c", "image": "i", "command": [], "env": [{"name": "X", "value": ""}],
                    "ports": [{"containerPort": 80, "hostPort": 0, "name": ""}],
                    "resources": {"limits": {}, "requests": {}}, "stdin": false,
                    "volumeMounts": [{"name": "v", "mountPath": "/m", "readOnly": false, "subPath": ""}]}]
            }}
        }}),
    );
    let spec = &v["spec"];
    assert_eq!(spec["replicas"], 0);
    assert!(!has(spec, "/paused") && !has(spec, "/minReadySeconds"));
    assert_eq!(spec["selector"], json!({}));
    assert_eq!(spec["strategy"], json!({}), "a struct is always written");
    assert_eq!(spec["template"]["metadata"], json!({}), "omitzero");
    let pod = &spec["template"]["spec"];
    for gone in ["hostNetwork", "nodeName", "volumes", "nodeSelector"] {
        assert!(!has(pod, &format!("/{gone}")), "{gone}: {pod}");
    }
    assert_eq!(
        pod["affinity"],
        json!({}),
        "a pointer to an empty struct stays"
    );
    let c = &pod["containers"][0];
    assert!(!has(c, "/command") && !has(c, "/stdin"));
    assert_eq!(c["env"], json!([{"name": "X"}]));
    assert_eq!(c["ports"], json!([{"containerPort": 80}]));
    assert_eq!(c["resources"], json!({}));
    assert_eq!(c["volumeMounts"], json!([{"name": "v", "mountPath": "/m"}]));
}

#[test]
fn lists_without_omitempty_are_null_after_storage() {
    let role = json!({"metadata": {"name": "r"}, "rules": []});
    assert_eq!(
        storage("rbac.authorization.k8s.io/v1", "Role", role.clone())["rules"],
        Value::Null
    );
    assert_eq!(
        decoded("rbac.authorization.k8s.io/v1", "Role", role)["rules"],
        json!([])
    );
    let v = storage(
        "rbac.authorization.k8s.io/v1",
        "ClusterRole",
        json!({"metadata": {"name": "agg"}}),
    );
    assert!(has(&v, "/rules") && v["rules"].is_null(), "{v}");
    let v = storage(
        "discovery.k8s.io/v1",
        "EndpointSlice",
        json!({"metadata": {"name": "e"}, "addressType": "IPv4", "endpoints": [], "ports": []}),
    );
    assert_eq!((&v["endpoints"], &v["ports"]), (&Value::Null, &Value::Null));
    let v = storage(
        "storage.k8s.io/v1",
        "CSINode",
        json!({"metadata": {"name": "n"}, "spec": {"drivers": []}}),
    );
    assert_eq!(v["spec"], json!({"drivers": null}));
    let v = storage(
        "v1",
        "Namespace",
        json!({"metadata": {"name": "n"}, "spec": {"finalizers": []}}),
    );
    assert_eq!(v["spec"], json!({}));
}

#[test]
fn zero_values_go_writes() {
    // a condition without lastProbeTime / lastTransitionTime: null
    let v = storage(
        "v1",
        "Pod",
        json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]},
            "status": {"conditions": [{"type": "Ready", "status": "True"}],
                "containerStatuses": [{"name": "c", "image": "i"}]}}),
    );
    let cond = &v["status"]["conditions"][0];
    assert!(cond["lastProbeTime"].is_null() && has(cond, "/lastProbeTime"));
    assert!(has(cond, "/lastTransitionTime"));
    let cs = &v["status"]["containerStatuses"][0];
    assert_eq!(
        (
            &cs["ready"],
            &cs["imageID"],
            &cs["state"],
            &cs["lastState"],
            &cs["restartCount"]
        ),
        (&json!(false), &json!(""), &json!({}), &json!({}), &json!(0))
    );
    // a Service without status, an IntOrString and a Quantity given null
    let v = storage(
        "v1",
        "Service",
        json!({"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80, "targetPort": null, "nodePort": 0, "name": ""}], "selector": {}}}),
    );
    assert_eq!(v["status"], json!({"loadBalancer": {}}));
    assert_eq!(v["spec"]["ports"], json!([{"port": 80, "targetPort": 0}]));
    assert!(!has(&v, "/spec/selector"));
    let v = storage(
        "v1",
        "Secret",
        json!({"metadata": {"name": "s"}, "data": {"k": null}}),
    );
    assert_eq!(v["data"], json!({"k": ""}));
    let v = storage(
        "v1",
        "ResourceQuota",
        json!({"metadata": {"name": "q"}, "spec": {"hard": {"cpu": null}}}),
    );
    assert_eq!(v["spec"]["hard"], json!({"cpu": "0"}));
    // an owner reference's pointers and required strings
    let v = storage(
        "v1",
        "ConfigMap",
        json!({"metadata": {"name": "c", "ownerReferences": [{"uid": "u", "controller": null}]}}),
    );
    assert_eq!(
        v["metadata"]["ownerReferences"],
        json!([{"uid": "u", "apiVersion": "", "kind": "", "name": ""}])
    );
    // a core Event's never-omitted fields
    let v = storage(
        "v1",
        "Event",
        json!({"metadata": {"name": "e"}, "message": "m"}),
    );
    for (k, want) in [
        ("reportingComponent", json!("")),
        ("reportingInstance", json!("")),
        ("firstTimestamp", Value::Null),
        ("eventTime", Value::Null),
        ("source", json!({})),
    ] {
        assert_eq!(v.get(k), Some(&want), "{k}: {v}");
    }
}

#[test]
fn raw_extensions_and_unknown_keys_are_left_alone() {
    let v = storage(
        "apps/v1",
        "ControllerRevision",
        json!({"metadata": {"name": "r"}, "revision": 1, "data": {"spec": {"x": [], "y": {}}}}),
    );
    assert_eq!(v["data"], json!({"spec": {"x": [], "y": {}}}));
    let v = storage(
        "v1",
        "ConfigMap",
        json!({"metadata": {"name": "c"}, "notAField": []}),
    );
    assert_eq!(v["notAField"], json!([]));
    assert!(!normalise(
        "example.com/v1",
        "Widget",
        &mut json!({}),
        Mode::Storage
    ));
}

#[test]
fn custom_resource_metadata() {
    let mut meta = json!({"name": "w", "finalizers": [], "labels": {}, "ownerReferences": [],
        "annotations": {"a": "1"}, "generation": 3});
    normalise_object_meta(&mut meta, Mode::Decode);
    assert_eq!(
        meta,
        json!({"name": "w", "annotations": {"a": "1"}, "generation": 3})
    );
}

#[test]
fn idempotent() {
    let inputs = [
        (
            "apps/v1",
            "Deployment",
            json!({"metadata": {"name": "d"}, "spec": {"template": {"spec": {"containers": [{"name": "c"}]}}}}),
        ),
        (
            "v1",
            "Pod",
            json!({"metadata": {"name": "p", "finalizers": []}, "spec": {"containers": [{}]}, "status": {"conditions": [{}]}}),
        ),
        (
            "rbac.authorization.k8s.io/v1",
            "Role",
            json!({"rules": [{"verbs": [], "apiGroups": [""]}]}),
        ),
    ];
    for (av, kind, v) in inputs {
        for mode in [Mode::Decode, Mode::Storage] {
            let mut once = v.clone();
            normalise(av, kind, &mut once, mode);
            let mut twice = once.clone();
            normalise(av, kind, &mut twice, mode);
            assert_eq!(once, twice, "{kind} {mode:?}");
        }
    }
}

/// For every kind, the round trip of `{}` is what the decoder makes of an empty
/// protobuf message (both emulate Go's encoding of the zero struct).
#[test]
fn agrees_with_the_decoder_on_empty_objects() {
    for &(av, kind, _) in schema::KINDS {
        let mut v = json!({});
        normalise(av, kind, &mut v, Mode::Storage);
        let mut decoded = crate::machinery::protobuf::decode(&body(av, kind, Enc::new()))
            .unwrap_or_else(|e| panic!("{av} {kind}: {e}"));
        if let Some(o) = decoded.as_object_mut() {
            o.remove("kind");
            o.remove("apiVersion");
        }
        assert_eq!(v, decoded, "{av} {kind}");
    }
}
