//! What a write stores is kube-apiserver's round trip of the object (decode into the Go
//! struct, protobuf storage, JSON encode): checked here for what only the server's
//! paths show, custom resources (only their `metadata` is a Go struct) and the
//! deletion's own writes; kubectl and the Python client check the built-in kinds in
//! `tests/e2e/test_kubectl_patch.py`.

use serde_json::{json, Value};

use crate::common::{start, Server};

fn call(s: &Server, method: &str, path: &str, ct: &str, body: Value) -> Value {
    let (code, v) = s.json(method, path, ct, "application/json", &body);
    assert!((200..300).contains(&code), "{method} {path}: {code} {v}");
    v
}

const JSON: &str = "application/json";
const MERGE: &str = "application/merge-patch+json";

#[test]
fn custom_resources_round_trip_only_their_metadata() {
    let s = start();
    call(
        &s,
        "POST",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        JSON,
        json!({
            "metadata": {"name": "things.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"plural": "things", "singular": "thing", "kind": "Thing"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}
        }),
    );
    let things = "/apis/example.com/v1/namespaces/default/things";
    let content = json!({"list": [], "map": {}, "zero": 0, "no": false, "empty": ""});
    let v = call(
        &s,
        "POST",
        things,
        JSON,
        json!({"apiVersion": "example.com/v1", "kind": "Thing",
            "metadata": {"name": "t", "labels": {}, "finalizers": ["example.com/hold"], "ownerReferences": []},
            "spec": content}),
    );
    assert!(v["metadata"].get("labels").is_none(), "{v}");
    assert!(v["metadata"].get("ownerReferences").is_none(), "{v}");
    assert_eq!(
        v["spec"], content,
        "a custom resource's content is stored as sent"
    );
    let v = call(
        &s,
        "PATCH",
        &format!("{things}/t"),
        MERGE,
        json!({"metadata": {"finalizers": []}}),
    );
    assert!(v["metadata"].get("finalizers").is_none(), "{v}");
    assert_eq!(v["spec"], content);
}

#[test]
fn a_finalizer_list_emptied_during_deletion_goes() {
    let s = start();
    let cms = "/api/v1/namespaces/default/configmaps";
    call(
        &s,
        "POST",
        cms,
        JSON,
        json!({"metadata": {"name": "c", "finalizers": ["orphan"]}}),
    );
    // an Orphan deletion of an object that has the orphan finalizer already: a
    // Background one takes it out, leaving no finalizers (then the object goes)
    let v = call(
        &s,
        "DELETE",
        &format!("{cms}/c"),
        JSON,
        json!({"propagationPolicy": "Orphan"}),
    );
    assert_eq!(v["metadata"]["finalizers"], json!(["orphan"]), "{v}");
    let v = call(
        &s,
        "PATCH",
        &format!("{cms}/c"),
        MERGE,
        json!({"metadata": {"finalizers": []}}),
    );
    assert!(v["metadata"].get("finalizers").is_none(), "{v}");
    let (code, _) = s.json("GET", &format!("{cms}/c"), "", JSON, &Value::Null);
    assert_eq!(code, 404);
}
