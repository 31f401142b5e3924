//! `pods/<name>/eviction` over HTTP: upstream's eviction_test.go tables (TestEviction,
//! TestEvictionIgnorePDB, TestEvictionDryRun, TestEvictionPDBStatus) against a server
//! in memory, plus discovery and OpenAPI as kube-apiserver 1.36 serves them.

use serde_json::{json, Value};

use crate::common::{fixture, request, start, Server};

const PODS: &str = "/api/v1/namespaces/default/pods";
const PDBS: &str = "/apis/policy/v1/namespaces/default/poddisruptionbudgets";
const VIOLATES: &str = "Cannot evict pod as it would violate the pod's disruption budget.";

fn req(s: &Server, method: &str, path: &str, body: &Value) -> (u16, Value) {
    s.json(method, path, "application/json", "application/json", body)
}

/// A scheduled pod labelled `a=true` in `phase`, with a Ready condition when `ready`
/// is given.
fn pod(s: &Server, name: &str, phase: &str, ready: Option<bool>) -> Value {
    let (code, created) = req(
        s,
        "POST",
        PODS,
        &json!({"metadata": {"name": name, "labels": {"a": "true"}},
                "spec": {"nodeName": "foo", "containers": [{"name": "c", "image": "nginx"}]}}),
    );
    assert_eq!(code, 201, "{created}");
    let mut p = created;
    p["status"]["phase"] = json!(phase);
    if let Some(r) = ready {
        p["status"]["conditions"] =
            json!([{"type": "Ready", "status": if r { "True" } else { "False" }}]);
    }
    let (code, v) = req(s, "PUT", &format!("{PODS}/{name}/status"), &p);
    assert_eq!(code, 200, "{v}");
    v
}

/// A budget selecting `a=true` with the given status (observed at its generation).
fn pdb(s: &Server, name: &str, spec: Value, allowed: i64, current: i64, desired: i64) -> Value {
    let mut spec = spec;
    spec["selector"] = json!({"matchLabels": {"a": "true"}});
    let (code, created) = req(
        s,
        "POST",
        PDBS,
        &json!({"metadata": {"name": name}, "spec": spec}),
    );
    assert_eq!(code, 201, "{created}");
    let mut b = created;
    b["status"] = json!({"observedGeneration": b["metadata"]["generation"], "disruptionsAllowed": allowed,
                         "currentHealthy": current, "desiredHealthy": desired, "expectedPods": 3});
    let (code, v) = req(s, "PUT", &format!("{PDBS}/{name}/status"), &b);
    assert_eq!(code, 200, "{v}");
    v
}

fn eviction(name: &str, delete_options: Value) -> Value {
    let mut e = json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": "default"}});
    if !delete_options.is_null() {
        e["deleteOptions"] = delete_options;
    }
    e
}

fn evict(s: &Server, name: &str, delete_options: Value) -> (u16, Value) {
    req(
        s,
        "POST",
        &format!("{PODS}/{name}/eviction"),
        &eviction(name, delete_options),
    )
}

fn get(s: &Server, path: &str) -> (u16, Value) {
    req(s, "GET", path, &Value::Null)
}

fn now() -> Value {
    json!({"gracePeriodSeconds": 0})
}

/// Upstream TestEviction.
#[test]
fn eviction_table() {
    let s = start();
    pdb(&s, "foo", json!({}), 0, 0, 0);
    // (pod, phase, expect): a running pod is protected; pending and terminal pods are not
    for (name, phase, deleted) in [
        ("t1", "Running", false),
        ("t2", "Pending", true),
        ("t3", "Succeeded", true),
        ("t4", "Failed", true),
    ] {
        pod(&s, name, phase, Some(true));
        let (code, v) = evict(&s, name, now());
        if deleted {
            assert_eq!(code, 201, "{name}: {v}");
            assert_eq!(
                v,
                json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201})
            );
            assert_eq!(get(&s, &format!("{PODS}/{name}")).0, 404, "{name}");
        } else {
            assert_eq!(code, 429, "{name}: {v}");
            assert_eq!(v["reason"], "TooManyRequests");
            assert_eq!(v["message"], VIOLATES);
            assert_eq!(
                v["details"]["causes"],
                json!([{"reason": "DisruptionBudget", "message": "The disruption budget foo needs 0 healthy pods and has 0 currently"}])
            );
            let (code, p) = get(&s, &format!("{PODS}/{name}"));
            assert_eq!(code, 200);
            assert!(p["metadata"]["deletionTimestamp"].is_null());
        }
    }
    // a budget that does not select the pod
    let s = start();
    let (code, _) = req(
        &s,
        "POST",
        PDBS,
        &json!({"metadata": {"name": "other"}, "spec": {"selector": {"matchLabels": {"b": "true"}}}}),
    );
    assert_eq!(code, 201);
    pod(&s, "t6", "Running", Some(true));
    // the delete options' preconditions hold
    let (code, v) = evict(&s, "t6", json!({"preconditions": {"uid": "not-it"}}));
    assert_eq!(code, 409, "{v}");
    assert_eq!(
        v["message"],
        format!(
            "Operation cannot be fulfilled on Pod \"t6\": the UID in the precondition (not-it) does not match the UID in record ({}). The object might have been deleted and then recreated",
            get(&s, &format!("{PODS}/t6")).1["metadata"]["uid"].as_str().unwrap()
        )
    );
    assert_eq!(evict(&s, "t6", now()).0, 201);
    // the name in the URL must be the Eviction's
    pod(&s, "t7", "Running", Some(true));
    let (code, v) = req(
        &s,
        "POST",
        &format!("{PODS}/t7bad-name/eviction"),
        &eviction("t7", now()),
    );
    assert_eq!(
        (code, v["message"].as_str()),
        (
            400,
            Some("name in URL does not match name in Eviction object")
        ),
        "{v}"
    );
    // a missing pod
    let (code, v) = evict(&s, "missing", now());
    assert_eq!((code, v["reason"].as_str()), (404, Some("NotFound")), "{v}");
    assert_eq!(v["message"], "pods \"missing\" not found");
    // only POST
    let (code, _) = get(&s, &format!("{PODS}/t7/eviction"));
    assert_eq!(code, 405);
}

/// A budget that allows a disruption: the pod is marked, deleted, and the budget
/// decremented with the pod in disruptedPods (upstream TestEvictionPDBStatus).
#[test]
fn allowed_evictions_take_from_the_budget() {
    let s = start();
    pdb(&s, "foo", json!({}), 2, 3, 1);
    pod(&s, "t1", "Running", Some(true));
    pod(&s, "t2", "Running", Some(true));
    pod(&s, "t3", "Running", Some(true));
    // without delete options: the graceful default, and the pod says why it goes
    let (code, v) = evict(&s, "t1", Value::Null);
    assert_eq!(code, 201, "{v}");
    let (_, p) = get(&s, &format!("{PODS}/t1"));
    assert!(p["metadata"]["deletionTimestamp"].is_string(), "{p}");
    assert_eq!(p["metadata"]["deletionGracePeriodSeconds"], 30);
    let dt = p["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "DisruptionTarget")
        .cloned()
        .expect("DisruptionTarget");
    assert_eq!(dt["status"], "True");
    assert_eq!(dt["reason"], "EvictionByEvictionAPI");
    assert_eq!(dt["message"], "Eviction API: evicting");
    let (_, b) = get(&s, &format!("{PDBS}/foo"));
    assert_eq!(b["status"]["disruptionsAllowed"], 1);
    assert!(b["status"]["disruptedPods"]["t1"].is_string(), "{b}");
    assert!(b["status"]["conditions"].is_null(), "{b}");
    // the last allowed disruption: the budget says it is exhausted
    assert_eq!(evict(&s, "t2", now()).0, 201);
    assert_eq!(get(&s, &format!("{PODS}/t2")).0, 404);
    let (_, b) = get(&s, &format!("{PDBS}/foo"));
    assert_eq!(b["status"]["disruptionsAllowed"], 0);
    assert_eq!(b["status"]["disruptedPods"].as_object().unwrap().len(), 2);
    assert_eq!(b["status"]["conditions"][0]["type"], "DisruptionAllowed");
    assert_eq!(b["status"]["conditions"][0]["status"], "False");
    assert_eq!(b["status"]["conditions"][0]["reason"], "InsufficientPods");
    // and refuses the next
    let (code, v) = evict(&s, "t3", now());
    assert_eq!(code, 429, "{v}");
    assert_eq!(
        v["details"]["causes"][0]["message"],
        "The disruption budget foo needs 1 healthy pods and has 3 currently"
    );
    // the 429 of an exhausted budget has no Retry-After (upstream passes 0)
    let body = serde_json::to_vec(&eviction("t3", now())).unwrap();
    let (code, head, _) = request(
        s.running.addr,
        "POST",
        &format!("{PODS}/t3/eviction"),
        "application/json",
        "application/json",
        &body,
    );
    assert_eq!(code, 429);
    assert!(!head.to_ascii_lowercase().contains("retry-after"), "{head}");
}

/// Upstream TestEvictionIgnorePDB: terminating pods, and unready pods whose budget is
/// met or whose policy is AlwaysAllow, go without taking from the budget.
#[test]
fn evictions_that_ignore_the_budget() {
    let s = start();
    pdb(&s, "foo", json!({}), 0, 2, 2);
    // terminating (a graceful delete in progress)
    pod(&s, "t6", "Running", Some(true));
    let (code, _) = req(
        &s,
        "DELETE",
        &format!("{PODS}/t6"),
        &json!({"gracePeriodSeconds": 300}),
    );
    assert_eq!(code, 200);
    assert_eq!(evict(&s, "t6", json!({"gracePeriodSeconds": 300})).0, 201);
    // our pod healthy, the unhealthy pod is not ours: refused
    pod(&s, "t7", "Running", Some(true));
    assert_eq!(evict(&s, "t7", now()).0, 429);
    // our pod unhealthy, the budget met: deleted, the budget untouched
    pod(&s, "t8", "Running", Some(false));
    let (_, before) = get(&s, &format!("{PDBS}/foo"));
    assert_eq!(evict(&s, "t8", now()).0, 201);
    assert_eq!(get(&s, &format!("{PODS}/t8")).0, 404);
    let (_, after) = get(&s, &format!("{PDBS}/foo"));
    assert_eq!(
        before["metadata"]["resourceVersion"],
        after["metadata"]["resourceVersion"]
    );
    // a pending pod goes without the budget, but a user's stale resourceVersion
    // precondition is honoured (a conflict, not retried)
    let p = pod(&s, "t5", "Pending", None);
    let rv = p["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    let mut annotated = p.clone();
    annotated["metadata"]["annotations"] = json!({"x": "y"});
    assert_eq!(req(&s, "PUT", &format!("{PODS}/t5"), &annotated).0, 200);
    let (code, v) = evict(&s, "t5", json!({"preconditions": {"resourceVersion": rv}}));
    assert_eq!((code, v["reason"].as_str()), (409, Some("Conflict")), "{v}");
    assert_eq!(get(&s, &format!("{PODS}/t5")).0, 200);

    // unhealthyPodEvictionPolicy with a budget that is not met
    for (policy, want) in [("IfHealthyBudget", 429), ("AlwaysAllow", 201)] {
        let s = start();
        pdb(
            &s,
            "foo",
            json!({"unhealthyPodEvictionPolicy": policy}),
            0,
            1,
            2,
        );
        pod(&s, "u", "Running", Some(false));
        let (code, v) = evict(&s, "u", now());
        assert_eq!(code, want, "{policy}: {v}");
        // a ready pod is protected whatever the policy
        pod(&s, "r", "Running", Some(true));
        assert_eq!(evict(&s, "r", now()).0, 429, "{policy}");
    }
}

/// Upstream TestEvictionDryRun: a dry run changes neither the pod nor the budget, from
/// the query or from the delete options.
#[test]
fn dry_run_evictions_change_nothing() {
    let s = start();
    pdb(&s, "foo", json!({}), 1, 3, 2);
    let p = pod(&s, "t1", "Running", Some(true));
    let (_, b) = get(&s, &format!("{PDBS}/foo"));
    for (path, opts) in [
        (format!("{PODS}/t1/eviction?dryRun=All"), now()),
        (
            format!("{PODS}/t1/eviction"),
            json!({"dryRun": ["All"], "gracePeriodSeconds": 0}),
        ),
    ] {
        let (code, v) = req(&s, "POST", &path, &eviction("t1", opts));
        assert_eq!(code, 201, "{v}");
        let (_, p2) = get(&s, &format!("{PODS}/t1"));
        assert_eq!(p2, p);
        let (_, b2) = get(&s, &format!("{PDBS}/foo"));
        assert_eq!(b2, b);
    }
    // a budget that forbids it still answers 429 in a dry run
    let s = start();
    pdb(&s, "foo", json!({}), 0, 3, 3);
    pod(&s, "t1", "Running", Some(true));
    let (code, _) = req(
        &s,
        "POST",
        &format!("{PODS}/t1/eviction?dryRun=All"),
        &eviction("t1", now()),
    );
    assert_eq!(code, 429);
}

/// A budget not yet observed at its generation (429 with Retry-After 10), and a pod
/// with two budgets (500).
#[test]
fn unprocessed_and_ambiguous_budgets() {
    let s = start();
    let b = pdb(&s, "foo", json!({"minAvailable": 1}), 5, 3, 1);
    let mut changed = b.clone();
    changed["spec"]["minAvailable"] = json!(2);
    let (code, v) = req(&s, "PUT", &format!("{PDBS}/foo"), &changed);
    assert_eq!(code, 200, "{v}");
    assert_eq!(v["metadata"]["generation"], 2);
    pod(&s, "t1", "Running", Some(true));
    let body = serde_json::to_vec(&eviction("t1", now())).unwrap();
    let (code, head, body) = request(
        s.running.addr,
        "POST",
        &format!("{PODS}/t1/eviction"),
        "application/json",
        "application/json",
        &body,
    );
    let v: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(code, 429, "{v}");
    assert!(
        head.to_ascii_lowercase().contains("retry-after: 10"),
        "{head}"
    );
    assert_eq!(v["details"]["retryAfterSeconds"], 10);
    assert_eq!(
        v["details"]["causes"],
        json!([{"reason": "DisruptionBudget", "message": "The disruption budget foo is still being processed by the server."}])
    );
    // two budgets select the pod
    pdb(&s, "bar", json!({}), 5, 3, 1);
    let (code, v) = evict(&s, "t1", now());
    assert_eq!(code, 500, "{v}");
    assert_eq!(
        v,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
               "code": 500})
    );
    assert_eq!(get(&s, &format!("{PODS}/t1")).0, 200);
}

/// policy/v1beta1 bodies are accepted; other kinds are not.
#[test]
fn v1beta1_bodies() {
    let s = start();
    pod(&s, "t1", "Running", Some(true));
    let mut e = eviction("t1", now());
    e["apiVersion"] = json!("policy/v1beta1");
    let (code, v) = req(&s, "POST", &format!("{PODS}/t1/eviction"), &e);
    assert_eq!(code, 201, "{v}");
    pod(&s, "t2", "Running", Some(true));
    let (code, _) = req(
        &s,
        "POST",
        &format!("{PODS}/t2/eviction"),
        &json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "t2"}}),
    );
    assert_eq!(code, 400);
}

/// Discovery names the subresource's kind as policy/v1 Eviction, and OpenAPI serves
/// `createCoreV1NamespacedPodEviction`, as kube-apiserver 1.36.
#[test]
fn discovery_and_openapi() {
    let s = start();
    let want = fixture("discovery/api_v1.json");
    let want = want["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "pods/eviction")
        .unwrap()
        .clone();
    let (_, got) = get(&s, "/api/v1");
    let got = got["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "pods/eviction")
        .cloned()
        .expect("pods/eviction served");
    assert_eq!(got, want);
    let want = fixture("openapi-v3/api_v1.json");
    let path = "/api/v1/namespaces/{namespace}/pods/{name}/eviction";
    let (code, got) = get(&s, "/openapi/v3/api/v1");
    assert_eq!(code, 200);
    let (w, g) = (&want["paths"][path]["post"], &got["paths"][path]["post"]);
    for k in [
        "operationId",
        "requestBody",
        "x-kubernetes-group-version-kind",
        "x-kubernetes-action",
    ] {
        assert_eq!(g[k], w[k], "{k}");
    }
    let json_schema = |v: &Value| v["responses"]["200"]["content"]["application/json"].clone();
    assert_eq!(json_schema(g), json_schema(w));
    assert!(got["components"]["schemas"]["io.k8s.api.policy.v1.Eviction"].is_object());
    assert!(got["paths"][path].get("get").is_none());
}
