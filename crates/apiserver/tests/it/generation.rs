//! `metadata.generation` over HTTP: the bumps upstream makes outside a kind's update
//! strategy (a deletion that starts, `BeforeDelete` and `markAsDeleting`), the custom
//! resource rule, and updates that differ from the stored object only by what decoding
//! defaults (which upstream compares after defaulting: no bump).

use serde_json::{json, Value};

use crate::common::{start, Server};

fn call(s: &Server, method: &str, path: &str, ct: &str, body: Value) -> Value {
    let (code, v) = s.json(method, path, ct, "application/json", &body);
    assert!((200..300).contains(&code), "{method} {path}: {code} {v}");
    v
}

fn generation(v: &Value) -> Option<i64> {
    v.pointer("/metadata/generation").and_then(Value::as_i64)
}

const JSON: &str = "application/json";
const MERGE: &str = "application/merge-patch+json";

fn deployment(name: &str) -> Value {
    json!({
        "metadata": {"name": name},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]}
            }
        }
    })
}

#[test]
fn a_deletion_that_starts_bumps_the_generation() {
    let s = start();
    let deps = "/apis/apps/v1/namespaces/default/deployments";
    let mut d = deployment("held");
    d["metadata"]["finalizers"] = json!(["example.com/hold"]);
    call(&s, "POST", deps, JSON, d);
    // markAsDeleting: the first deletion counts, the next ones do not
    let v = call(&s, "DELETE", &format!("{deps}/held"), JSON, Value::Null);
    assert_eq!(generation(&v), Some(2), "{v}");
    let v = call(&s, "DELETE", &format!("{deps}/held"), JSON, Value::Null);
    assert_eq!(generation(&v), Some(2), "{v}");

    // BeforeDelete: a (scheduled) pod's graceful deletion, then a shorter grace period
    let pods = "/api/v1/namespaces/default/pods";
    call(
        &s,
        "POST",
        pods,
        JSON,
        json!({"metadata": {"name": "p"}, "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "nginx"}]}}),
    );
    let v = call(&s, "DELETE", &format!("{pods}/p"), JSON, Value::Null);
    assert_eq!(generation(&v), Some(2), "{v}");
    let v = call(
        &s,
        "DELETE",
        &format!("{pods}/p"),
        JSON,
        json!({"gracePeriodSeconds": 5}),
    );
    assert_eq!(generation(&v), Some(2), "{v}");

    // any kind with a generation: a ConfigMap keeps the one it was created with
    let cms = "/api/v1/namespaces/default/configmaps";
    let v = call(
        &s,
        "POST",
        cms,
        JSON,
        json!({"metadata": {"name": "c", "generation": 5, "finalizers": ["example.com/hold"]}}),
    );
    assert_eq!(generation(&v), Some(5), "{v}");
    let v = call(
        &s,
        "PATCH",
        &format!("{cms}/c"),
        MERGE,
        json!({"metadata": {"generation": 9}, "data": {"k": "v"}}),
    );
    assert_eq!(generation(&v), Some(5), "{v}");
    let v = call(&s, "DELETE", &format!("{cms}/c"), JSON, Value::Null);
    assert_eq!(generation(&v), Some(6), "{v}");
}

#[test]
fn updates_compare_defaulted_objects() {
    let s = start();
    let deps = "/apis/apps/v1/namespaces/default/deployments";
    call(&s, "POST", deps, JSON, deployment("web"));
    // a PUT of the object as first sent (no defaults) changes nothing upstream
    let v = call(&s, "PUT", &format!("{deps}/web"), JSON, deployment("web"));
    assert_eq!(generation(&v), Some(1), "{v}");
    // annotations count for Deployments, labels do not
    let v = call(
        &s,
        "PATCH",
        &format!("{deps}/web"),
        MERGE,
        json!({"metadata": {"labels": {"l": "1"}}}),
    );
    assert_eq!(generation(&v), Some(1), "{v}");
    let v = call(
        &s,
        "PATCH",
        &format!("{deps}/web"),
        MERGE,
        json!({"metadata": {"annotations": {"a": "1"}}}),
    );
    assert_eq!(generation(&v), Some(2), "{v}");
}

#[test]
fn custom_resources_count_every_change_but_metadata() {
    let s = start();
    for (plural, kind, subresources) in [
        ("plains", "Plain", json!({})),
        ("statuses", "WithStatus", json!({"status": {}})),
    ] {
        call(
            &s,
            "POST",
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            JSON,
            json!({
                "metadata": {"name": format!("{plural}.example.com")},
                "spec": {"group": "example.com", "scope": "Namespaced",
                    "names": {"plural": plural, "singular": kind.to_lowercase(), "kind": kind},
                    "versions": [{"name": "v1", "served": true, "storage": true,
                        "subresources": subresources,
                        "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}
            }),
        );
        let path = format!("/apis/example.com/v1/namespaces/default/{plural}");
        let v = call(
            &s,
            "POST",
            &path,
            JSON,
            json!({"apiVersion": "example.com/v1", "kind": kind, "metadata": {"name": "x", "generation": 7}, "spec": {"a": 1}}),
        );
        assert_eq!(generation(&v), Some(1), "{kind}: {v}");
        let one = format!("{path}/x");
        let v = call(
            &s,
            "PATCH",
            &one,
            MERGE,
            json!({"metadata": {"labels": {"l": "1"}}}),
        );
        assert_eq!(generation(&v), Some(1), "{kind}: {v}");
        let v = call(&s, "PATCH", &one, MERGE, json!({"other": true}));
        assert_eq!(generation(&v), Some(2), "{kind}: {v}");
        // the status counts when it has no subresource of its own
        let v = call(&s, "PATCH", &one, MERGE, json!({"status": {"s": 1}}));
        let want = if kind == "Plain" { 3 } else { 2 };
        assert_eq!(generation(&v), Some(want), "{kind}: {v}");
    }
}
