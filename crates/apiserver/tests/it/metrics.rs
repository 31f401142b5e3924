//! `metrics.k8s.io/v1beta1` served from the simulated pods' usage annotations, as
//! metrics-server serves it: discovery only with the option on, NodeMetrics and
//! PodMetrics get and list with selectors, metrics-server's NotFound answers, methods it
//! does not serve, and a warning for an annotation that does not parse.

use crate::common::{self, Server};
use serde_json::{json, Value};

const JSON: &str = "application/json";
const MERGE: &str = "application/merge-patch+json";
const AGGREGATED: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

fn ok(s: &Server, method: &str, path: &str, ct: &str, body: Value) -> Value {
    let (code, v) = s.json(method, path, ct, JSON, &body);
    assert!((200..300).contains(&code), "{method} {path}: {code} {v}");
    v
}

fn groups(s: &Server) -> Vec<String> {
    let (_, v) = s.json("GET", "/apis", JSON, JSON, &Value::Null);
    v["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["name"].as_str().unwrap().to_string())
        .collect()
}

/// A Ready node `name`.
fn node(s: &Server, name: &str, labels: Value) {
    ok(
        s,
        "POST",
        "/api/v1/nodes",
        JSON,
        json!({"metadata": {"name": name, "labels": labels}}),
    );
    ok(
        s,
        "PATCH",
        &format!("/api/v1/nodes/{name}/status"),
        MERGE,
        json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}}),
    );
}

fn pod(s: &Server, name: &str, labels: Value, annotations: Value, node: &str, phase: &str) {
    ok(
        s,
        "POST",
        "/api/v1/namespaces/m/pods",
        JSON,
        json!({"metadata": {"name": name, "labels": labels, "annotations": annotations},
               "spec": {"nodeName": node, "containers": [
                   {"name": "app", "image": "x"}, {"name": "side", "image": "x"}]}}),
    );
    ok(
        s,
        "PATCH",
        &format!("/api/v1/namespaces/m/pods/{name}/status"),
        MERGE,
        json!({"status": {"phase": phase, "startTime": "2026-01-01T00:00:00Z"}}),
    );
}

fn names(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn group_is_served_only_when_configured() {
    let plain = common::start();
    assert!(!groups(&plain).contains(&"metrics.k8s.io".to_string()));
    let (code, _) = plain.json(
        "GET",
        "/apis/metrics.k8s.io/v1beta1/nodes",
        JSON,
        JSON,
        &Value::Null,
    );
    assert_eq!(code, 404);

    let s = common::start_with(|c| c.metrics_api = true);
    let gs = groups(&s);
    assert_eq!(gs.last().map(String::as_str), Some("metrics.k8s.io"));
    let (_, g) = s.json("GET", "/apis/metrics.k8s.io", JSON, JSON, &Value::Null);
    assert_eq!(
        g,
        json!({"kind": "APIGroup", "apiVersion": "v1", "name": "metrics.k8s.io",
               "versions": [{"groupVersion": "metrics.k8s.io/v1beta1", "version": "v1beta1"}],
               "preferredVersion": {"groupVersion": "metrics.k8s.io/v1beta1", "version": "v1beta1"}})
    );
    let (_, rl) = s.json(
        "GET",
        "/apis/metrics.k8s.io/v1beta1",
        JSON,
        JSON,
        &Value::Null,
    );
    assert_eq!(rl["groupVersion"], "metrics.k8s.io/v1beta1");
    assert_eq!(
        rl["resources"],
        json!([
            {"name": "nodes", "singularName": "", "namespaced": false, "kind": "NodeMetrics", "verbs": ["get", "list"]},
            {"name": "pods", "singularName": "", "namespaced": true, "kind": "PodMetrics", "verbs": ["get", "list"]},
        ])
    );
    let (_, agg) = s.json("GET", "/apis", JSON, AGGREGATED, &Value::Null);
    let last = agg["items"].as_array().unwrap().last().cloned().unwrap();
    assert_eq!(last["metadata"]["name"], "metrics.k8s.io");
    assert_eq!(last["versions"][0]["resources"][1]["resource"], "pods");
    assert_eq!(last["versions"][0]["resources"][1]["scope"], "Namespaced");
}

#[test]
fn node_and_pod_metrics_from_annotations() {
    let s = common::start_with(|c| c.metrics_api = true);
    ok(
        &s,
        "POST",
        "/api/v1/namespaces",
        JSON,
        json!({"metadata": {"name": "m"}}),
    );
    node(&s, "n1", json!({"pool": "a"}));
    node(&s, "n2", json!({"pool": "b"}));
    pod(
        &s,
        "web",
        json!({"app": "web"}),
        json!({"sim.coxswain.dev/cpu-usage": "500m", "sim.coxswain.dev/memory-usage.side": "32Mi",
               "sim.coxswain.dev/memory-usage": "64Mi"}),
        "n1",
        "Running",
    );
    pod(&s, "db", json!({"app": "db"}), json!({}), "n1", "Running");
    pod(
        &s,
        "waiting",
        json!({"app": "web"}),
        json!({}),
        "n2",
        "Pending",
    );

    let web = ok(
        &s,
        "GET",
        "/apis/metrics.k8s.io/v1beta1/namespaces/m/pods/web",
        JSON,
        Value::Null,
    );
    assert_eq!(web["kind"], "PodMetrics");
    assert_eq!(web["metadata"]["namespace"], "m");
    assert_eq!(web["window"], "15s");
    assert_eq!(
        web["containers"],
        json!([
            {"name": "app", "usage": {"cpu": "250m", "memory": "64Mi"}},
            {"name": "side", "usage": {"cpu": "250m", "memory": "32Mi"}},
        ])
    );

    // only Running pods; ordered by namespace and name; selectors as metrics-server
    let all = ok(
        &s,
        "GET",
        "/apis/metrics.k8s.io/v1beta1/pods",
        JSON,
        Value::Null,
    );
    assert_eq!(all["kind"], "PodMetricsList");
    assert_eq!(names(&all), ["db", "web"]);
    let sel = ok(
        &s,
        "GET",
        "/apis/metrics.k8s.io/v1beta1/namespaces/m/pods?labelSelector=app%3Dweb",
        JSON,
        Value::Null,
    );
    assert_eq!(names(&sel), ["web"]);
    let by_name = ok(
        &s,
        "GET",
        "/apis/metrics.k8s.io/v1beta1/pods?fieldSelector=metadata.name%3Ddb",
        JSON,
        Value::Null,
    );
    assert_eq!(names(&by_name), ["db"]);
    // other fields are not known to metrics-server: they read as empty
    let other = ok(
        &s,
        "GET",
        "/apis/metrics.k8s.io/v1beta1/pods?fieldSelector=spec.nodeName%3Dn1",
        JSON,
        Value::Null,
    );
    assert_eq!(names(&other), Vec::<String>::new());

    // node usage: its running pods (500m + 2 x 1m, 96Mi + 2 x 8Mi) plus 100m / 512Mi
    let n1 = ok(
        &s,
        "GET",
        "/apis/metrics.k8s.io/v1beta1/nodes/n1",
        JSON,
        Value::Null,
    );
    assert_eq!(n1["kind"], "NodeMetrics");
    assert_eq!(n1["usage"], json!({"cpu": "602m", "memory": "624Mi"}));
    assert_eq!(n1["metadata"]["labels"], json!({"pool": "a"}));
    let nodes = ok(
        &s,
        "GET",
        "/apis/metrics.k8s.io/v1beta1/nodes?labelSelector=pool%3Db",
        JSON,
        Value::Null,
    );
    assert_eq!(nodes["kind"], "NodeMetricsList");
    assert_eq!(names(&nodes), ["n2"]);
    assert_eq!(
        nodes["items"][0]["usage"],
        json!({"cpu": "100m", "memory": "512Mi"})
    );

    // a change of the annotation shows at once
    ok(
        &s,
        "PATCH",
        "/api/v1/namespaces/m/pods/db",
        MERGE,
        json!({"metadata": {"annotations": {"sim.coxswain.dev/cpu-usage": "0,1s=2"}}}),
    );
    let db = ok(
        &s,
        "GET",
        "/apis/metrics.k8s.io/v1beta1/namespaces/m/pods/db",
        JSON,
        Value::Null,
    );
    assert_eq!(db["containers"][0]["usage"]["cpu"], "1");

    // NotFound as metrics-server answers it
    let (code, e) = s.json(
        "GET",
        "/apis/metrics.k8s.io/v1beta1/namespaces/m/pods/waiting",
        JSON,
        JSON,
        &Value::Null,
    );
    assert_eq!(code, 404);
    assert_eq!(
        e["message"],
        "podmetrics.metrics.k8s.io \"m/waiting\" not found"
    );
    let (code, e) = s.json(
        "GET",
        "/apis/metrics.k8s.io/v1beta1/namespaces/m/pods/nope",
        JSON,
        JSON,
        &Value::Null,
    );
    assert_eq!(code, 404);
    assert_eq!(e["message"], "pods \"nope\" not found");
    let (code, e) = s.json(
        "GET",
        "/apis/metrics.k8s.io/v1beta1/nodes/nope",
        JSON,
        JSON,
        &Value::Null,
    );
    assert_eq!(code, 404);
    assert_eq!(e["message"], "nodes \"nope\" not found");
    // a node whose kubelet stopped answering has no metrics, nor have its pods
    ok(
        &s,
        "PATCH",
        "/api/v1/nodes/n1/status",
        MERGE,
        json!({"status": {"conditions": [{"type": "Ready", "status": "Unknown"}]}}),
    );
    let (code, e) = s.json(
        "GET",
        "/apis/metrics.k8s.io/v1beta1/nodes/n1",
        JSON,
        JSON,
        &Value::Null,
    );
    assert_eq!(code, 404);
    assert_eq!(e["message"], "nodemetrics.metrics.k8s.io \"n1\" not found");
    let all = ok(
        &s,
        "GET",
        "/apis/metrics.k8s.io/v1beta1/pods",
        JSON,
        Value::Null,
    );
    assert_eq!(names(&all), Vec::<String>::new());

    // only get and list
    let (code, _) = s.json(
        "POST",
        "/apis/metrics.k8s.io/v1beta1/nodes",
        JSON,
        JSON,
        &json!({}),
    );
    assert_eq!(code, 405);
    let (code, e) = s.json(
        "GET",
        "/apis/metrics.k8s.io/v1beta1/pods?watch=true",
        JSON,
        JSON,
        &Value::Null,
    );
    assert_eq!(code, 405);
    assert_eq!(
        e["message"],
        "watch is not supported on resources of kind \"pods.metrics.k8s.io\""
    );
}

#[test]
fn bad_annotation_is_ignored_with_a_warning_and_tables_sum_containers() {
    let s = common::start_with(|c| c.metrics_api = true);
    ok(
        &s,
        "POST",
        "/api/v1/namespaces",
        JSON,
        json!({"metadata": {"name": "m"}}),
    );
    node(&s, "n1", json!({}));
    pod(
        &s,
        "web",
        json!({}),
        json!({"sim.coxswain.dev/cpu-usage": "fast", "sim.coxswain.dev/memory-usage": "10Mi"}),
        "n1",
        "Running",
    );
    let (code, head, body) = common::request(
        s.running.addr,
        "GET",
        "/apis/metrics.k8s.io/v1beta1/namespaces/m/pods/web",
        JSON,
        JSON,
        b"",
    );
    assert_eq!(code, 200);
    assert!(
        head.contains("annotation sim.coxswain.dev/cpu-usage=\\\"fast\\\" of pod m/web is ignored: \\\"fast\\\" is not a quantity"),
        "{head}"
    );
    let v: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(v["containers"][0]["usage"]["cpu"], "1m");
    let (_, table) = s.json(
        "GET",
        "/apis/metrics.k8s.io/v1beta1/namespaces/m/pods",
        JSON,
        "application/json;as=Table;v=v1;g=meta.k8s.io",
        &Value::Null,
    );
    assert_eq!(table["kind"], "Table");
    let cols: Vec<&str> = table["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(cols, ["Name", "cpu", "memory", "Window"]);
    assert_eq!(
        table["rows"][0]["cells"],
        json!(["web", "2m", "10Mi", "15s"])
    );
}
