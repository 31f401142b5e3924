//! Server-side tables over HTTP, compared with what a real kube-apiserver 1.36 answered
//! (`tests/fixtures/kube-apiserver-1.36/tables`, copied into this crate) for the same objects: column
//! definitions exactly, cells except ages (and the values that differ on every run:
//! cluster IPs, UIDs in generated selectors, generated names).

use crate::common;

use std::net::SocketAddr;
use std::time::Duration;

use common::{fixture, start, Server};

use serde_json::{json, Value};

const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";
const KUBECTL_ACCEPT: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";

/// One request with a JSON body; returns the status code and the body.
fn http(addr: SocketAddr, method: &str, path: &str, accept: &str, body: &[u8]) -> (u16, Vec<u8>) {
    let (code, _, body) = common::request(addr, method, path, "application/json", accept, body);
    (code, body)
}

impl Server {
    fn req(&self, method: &str, path: &str, accept: &str, body: &Value) -> (u16, Value) {
        self.json(method, path, "application/json", accept, body)
    }

    fn create(&self, path: &str, body: Value) -> Value {
        let (code, v) = self.req("POST", path, "application/json", &body);
        assert!(code < 300, "POST {path}: {code} {v}");
        v
    }

    fn table(&self, path: &str) -> Value {
        let (code, v) = self.req("GET", path, TABLE, &Value::Null);
        assert_eq!(code, 200, "GET {path}: {v}");
        v
    }
}

fn cells(row: &Value) -> &[Value] {
    row["cells"].as_array().map(Vec::as_slice).unwrap_or(&[])
}

fn container(name: &str, image: &str) -> Value {
    json!({"name": name, "image": image})
}

/// The objects the reference tables were recorded with.
fn golden(s: &Server) {
    s.create(
        "/api/v1/namespaces",
        json!({"metadata": {"name": "golden"}}),
    );
    s.create(
        "/api/v1/namespaces",
        json!({"metadata": {"name": "golden-ns"}}),
    );
    let (code, v) = s.req(
        "DELETE",
        "/api/v1/namespaces/golden-ns",
        "application/json",
        &Value::Null,
    );
    assert!(code < 300, "delete namespace: {v}");
    let ns = "/namespaces/golden";
    s.create(
        &format!("/api/v1{ns}/configmaps"),
        json!({"metadata": {"name": "cm1", "labels": {"a": "b"}}, "data": {"k": "v"}}),
    );
    s.create(
        &format!("/api/v1{ns}/configmaps"),
        json!({"metadata": {"generateName": "gen-"}}),
    );
    let tmpl = |labels: Value, c: Value| json!({"metadata": {"labels": labels}, "spec": {"containers": [c]}});
    s.create(
        &format!("/apis/apps/v1{ns}/deployments"),
        json!({"metadata": {"name": "web"}, "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
            "template": tmpl(json!({"app": "web"}), json!({"name": "app", "image": "nginx:1.25", "ports": [{"containerPort": 80}]}))}}),
    );
    s.create(
        &format!("/apis/apps/v1{ns}/replicasets"),
        json!({"metadata": {"name": "rs1"}, "spec": {"replicas": 1, "selector": {"matchLabels": {"rs": "1"}},
            "template": tmpl(json!({"rs": "1"}), container("c", "busybox"))}}),
    );
    s.create(
        &format!("/apis/apps/v1{ns}/statefulsets"),
        json!({"metadata": {"name": "db"}, "spec": {"replicas": 1, "serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
            "template": tmpl(json!({"app": "db"}), container("c", "postgres"))}}),
    );
    s.create(
        &format!("/apis/apps/v1{ns}/daemonsets"),
        json!({"metadata": {"name": "agent"}, "spec": {"selector": {"matchLabels": {"app": "agent"}},
            "template": tmpl(json!({"app": "agent"}), container("c", "busybox"))}}),
    );
    s.create(
        &format!("/apis/batch/v1{ns}/jobs"),
        json!({"metadata": {"name": "once"}, "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [container("c", "busybox")]}}}}),
    );
    s.create(
        &format!("/apis/batch/v1{ns}/cronjobs"),
        json!({"metadata": {"name": "tick"}, "spec": {"schedule": "*/5 * * * *", "jobTemplate": {"spec": {"template": {"spec": {
            "restartPolicy": "OnFailure", "containers": [container("c", "busybox")]}}}}}}),
    );
    s.create(
        &format!("/api/v1{ns}/pods"),
        json!({"metadata": {"name": "p1"}, "spec": {"containers": [container("c", "busybox")]}}),
    );
    s.create(
        &format!("/api/v1{ns}/services"),
        json!({"metadata": {"name": "svc"}, "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}}),
    );
    s.create(
        &format!("/apis/coordination.k8s.io/v1{ns}/leases"),
        json!({"metadata": {"name": "l1"}, "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15}}),
    );
    s.create(
        &format!("/apis/policy/v1{ns}/poddisruptionbudgets"),
        json!({"metadata": {"name": "pdb"}, "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}}),
    );
}

/// Cells that differ on every run, as patterns: `(fixture, column)` → check.
fn volatile(file: &str, column: &str, got: &Value, want: &Value) -> bool {
    let g = got.as_str().unwrap_or_default();
    match (file, column) {
        (_, "Age") => {
            // a fresh object is seconds old
            g.ends_with('s') && g[..g.len() - 1].parse::<u32>().is_ok()
        }
        ("services", "Cluster-IP") => g.parse::<std::net::Ipv4Addr>().is_ok(),
        ("jobs", "Selector") => {
            let prefix = "batch.kubernetes.io/controller-uid=";
            g.starts_with(prefix) && want.as_str().is_some_and(|w| w.starts_with(prefix))
        }
        _ => false,
    }
}

#[test]
fn tables_match_kube_apiserver() {
    let s = start();
    golden(&s);
    for (file, path) in [
        ("configmaps", "/api/v1/namespaces/golden/configmaps"),
        ("cronjobs", "/apis/batch/v1/namespaces/golden/cronjobs"),
        ("daemonsets", "/apis/apps/v1/namespaces/golden/daemonsets"),
        ("deployments", "/apis/apps/v1/namespaces/golden/deployments"),
        ("events", "/api/v1/namespaces/golden/events"),
        ("jobs", "/apis/batch/v1/namespaces/golden/jobs"),
        (
            "leases",
            "/apis/coordination.k8s.io/v1/namespaces/golden/leases",
        ),
        ("namespaces", "/api/v1/namespaces"),
        ("nodes", "/api/v1/nodes"),
        (
            "poddisruptionbudgets",
            "/apis/policy/v1/namespaces/golden/poddisruptionbudgets",
        ),
        ("pods", "/api/v1/namespaces/golden/pods"),
        ("replicasets", "/apis/apps/v1/namespaces/golden/replicasets"),
        ("services", "/api/v1/namespaces/golden/services"),
        (
            "statefulsets",
            "/apis/apps/v1/namespaces/golden/statefulsets",
        ),
    ] {
        let want = fixture(&format!("tables/{file}.json"));
        let got = s.table(path);
        assert_eq!(got["kind"], "Table", "{file}");
        assert_eq!(got["apiVersion"], "meta.k8s.io/v1", "{file}");
        assert!(
            got["metadata"]["resourceVersion"].is_string(),
            "{file}: {}",
            got["metadata"]
        );
        assert_eq!(
            got["columnDefinitions"], want["columnDefinitions"],
            "{file}: column definitions"
        );
        let columns: Vec<&str> = want["columnDefinitions"]
            .as_array()
            .expect("columns")
            .iter()
            .map(|c| c["name"].as_str().unwrap_or_default())
            .collect();
        let rows = got["rows"].as_array().expect("rows");
        let want_rows = want["rows"].as_array().expect("rows");
        for w in want_rows {
            let wname = w["object"]["metadata"]["name"].as_str().unwrap_or_default();
            // generated names differ: match the generated configmap by prefix
            let g = rows
                .iter()
                .find(|r| {
                    let n = r["object"]["metadata"]["name"].as_str().unwrap_or_default();
                    n == wname || (wname.starts_with("gen-") && n.starts_with("gen-"))
                })
                .unwrap_or_else(|| panic!("{file}: no row for {wname} in {got}"));
            assert_eq!(g["object"]["kind"], "PartialObjectMetadata", "{file}");
            assert_eq!(g["object"]["apiVersion"], "meta.k8s.io/v1", "{file}");
            let (gc, wc) = (
                g["cells"].as_array().expect("cells"),
                w["cells"].as_array().expect("cells"),
            );
            assert_eq!(gc.len(), wc.len(), "{file}/{wname}: cells");
            for (i, (gv, wv)) in gc.iter().zip(wc).enumerate() {
                let column = columns[i];
                let name_cell = column == "Name" && wname.starts_with("gen-");
                if name_cell || volatile(file, column, gv, wv) {
                    continue;
                }
                assert_eq!(gv, wv, "{file}/{wname}: column {column}");
            }
        }
        if file != "namespaces" {
            assert_eq!(rows.len(), want_rows.len(), "{file}: rows");
        }
    }
}

#[test]
fn single_objects_include_object_and_versions() {
    let s = start();
    golden(&s);
    let path = "/api/v1/namespaces/golden/configmaps/cm1";
    let (_, cm) = s.req("GET", path, "application/json", &Value::Null);

    let one = s.table(path);
    assert_eq!(
        one["metadata"],
        json!({"resourceVersion": cm["metadata"]["resourceVersion"]})
    );
    assert_eq!(one["rows"].as_array().map(Vec::len), Some(1));
    assert_eq!(cells(&one["rows"][0])[..2], [json!("cm1"), json!(1)]);
    assert_eq!(one["rows"][0]["object"]["metadata"], cm["metadata"]);

    let full = s.table(&format!("{path}?includeObject=Object"));
    assert_eq!(full["rows"][0]["object"], cm);
    let none = s.table(&format!("{path}?includeObject=None"));
    assert_eq!(none["rows"][0]["object"], Value::Null);
    let (code, bad) = s.req(
        "GET",
        &format!("{path}?includeObject=All"),
        TABLE,
        &Value::Null,
    );
    assert_eq!(code, 400, "{bad}");
    assert_eq!(bad["reason"], "BadRequest");

    // kubectl's header: v1 first
    let (code, k) = s.req("GET", path, KUBECTL_ACCEPT, &Value::Null);
    assert_eq!(
        (code, k["apiVersion"].clone()),
        (200, json!("meta.k8s.io/v1"))
    );
    let (_, beta) = s.req(
        "GET",
        path,
        "application/json;as=Table;v=v1beta1;g=meta.k8s.io",
        &Value::Null,
    );
    assert_eq!(beta["apiVersion"], "meta.k8s.io/v1beta1");
    assert_eq!(
        beta["rows"][0]["object"]["apiVersion"],
        "meta.k8s.io/v1beta1"
    );

    // only a table form the server does not serve: 406, as upstream
    let (code, e) = s.req(
        "GET",
        path,
        "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io",
        &Value::Null,
    );
    assert_eq!(code, 406, "{e}");
    assert_eq!(e["reason"], "NotAcceptable");
    assert_eq!(e["code"], 406);
    let (code, _) = s.req(
        "GET",
        path,
        "application/json;as=Table;v=v2;g=meta.k8s.io",
        &Value::Null,
    );
    assert_eq!(code, 406);

    // the default table, and the Scale table
    let roles = s.table("/apis/rbac.authorization.k8s.io/v1/namespaces/golden/roles");
    assert_eq!(roles["columnDefinitions"][1]["name"], "Created At");
    assert_eq!(roles["rows"], json!([]));
    let scale = s.table("/apis/apps/v1/namespaces/golden/deployments/web/scale");
    assert_eq!(
        cells(&scale["rows"][0])[..3],
        [json!("web"), json!(2), json!(0)]
    );

    // events.k8s.io Events print from their core storage
    s.create(
        "/api/v1/namespaces/golden/events",
        json!({"metadata": {"name": "e1"}, "involvedObject": {"kind": "Pod", "name": "p1", "namespace": "golden"},
            "reason": "Started", "message": "started", "type": "Normal", "count": 2,
            "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:00:00Z",
            "source": {"component": "kubelet"}}),
    );
    for p in [
        "/api/v1/namespaces/golden/events",
        "/apis/events.k8s.io/v1/namespaces/golden/events",
    ] {
        let ev = s.table(p);
        assert_eq!(
            cells(&ev["rows"][0])[1..],
            [
                json!("Normal"),
                json!("Started"),
                json!("pod/p1"),
                json!(""),
                json!("kubelet"),
                json!("started"),
                ev["rows"][0]["cells"][0].clone(),
                json!(2),
                json!("e1")
            ],
            "{p}"
        );
    }
}

#[test]
fn lists_page_with_continue() {
    let s = start();
    golden(&s);
    let first = s.table("/api/v1/namespaces/golden/configmaps?limit=1");
    assert_eq!(first["rows"].as_array().map(Vec::len), Some(1));
    let token = first["metadata"]["continue"].as_str().expect("continue");
    assert_eq!(first["metadata"]["remainingItemCount"], 1);
    let next = s.table(&format!(
        "/api/v1/namespaces/golden/configmaps?limit=1&continue={token}"
    ));
    assert_eq!(next["rows"].as_array().map(Vec::len), Some(1));
    assert!(next["metadata"].get("continue").is_none());
    assert_ne!(
        first["rows"][0]["cells"][0], next["rows"][0]["cells"][0],
        "pages hold different objects"
    );
}

#[test]
fn watch_events_are_one_row_tables() {
    let s = start();
    golden(&s);
    let addr = s.running.addr;
    let writer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(500));
        let body = json!({"metadata": {"name": "late"}, "data": {"a": "1", "b": "2"}}).to_string();
        let (code, _) = http(
            addr,
            "POST",
            "/api/v1/namespaces/golden/configmaps",
            "application/json",
            body.as_bytes(),
        );
        assert_eq!(code, 201);
    });
    let (code, body) = http(
        addr,
        "GET",
        "/api/v1/namespaces/golden/configmaps?watch=1&timeoutSeconds=2",
        KUBECTL_ACCEPT,
        &[],
    );
    writer.join().expect("writer");
    assert_eq!(code, 200);
    let events: Vec<Value> = String::from_utf8_lossy(&body)
        .lines()
        .map(|l| serde_json::from_str(l).expect("event JSON"))
        .collect();
    assert_eq!(events.len(), 3, "{events:?}");
    for (i, ev) in events.iter().enumerate() {
        assert_eq!(ev["type"], "ADDED");
        let t = &ev["object"];
        assert_eq!(t["kind"], "Table");
        assert_eq!(t["rows"].as_array().map(Vec::len), Some(1));
        assert!(t["metadata"]["resourceVersion"].is_string());
        // only the first event carries the column definitions
        assert_eq!(t["columnDefinitions"].is_array(), i == 0, "event {i}");
    }
    assert_eq!(events[0]["object"]["columnDefinitions"][1]["name"], "Data");
    assert_eq!(
        cells(&events[2]["object"]["rows"][0])[..2],
        [json!("late"), json!(2)]
    );
}
