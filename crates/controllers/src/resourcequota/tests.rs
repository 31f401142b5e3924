use serde_json::json;

use super::*;

#[test]
fn evaluators_add_object_counts_named_by_the_quota() {
    let hard: Vec<String> = [
        "pods",
        "count/deployments.apps",
        "count/widgets.example.com",
        "count/secrets",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let got = QuotaReconciler::evaluators(&hard);
    assert!(got.contains(&Evaluator::Pods));
    assert!(got.contains(&Evaluator::for_resource("apps", "deployments").unwrap()));
    assert!(got.contains(&Evaluator::for_resource("example.com", "widgets").unwrap()));
    // secrets are a built-in (legacy) object count, listed once
    let secrets = Evaluator::for_resource("", "secrets").unwrap();
    assert_eq!(got.iter().filter(|e| **e == secrets).count(), 1);
}

// upstream DefaultUpdateFilter
#[test]
fn update_filters() {
    let running = json!({"status": {"phase": "Running"}});
    let done = json!({"status": {"phase": "Succeeded"}});
    assert!(pod_changed(&running, &done));
    assert!(!pod_changed(&running, &running));
    assert!(!pod_changed(&done, &done));
    let cluster = json!({"spec": {"type": "ClusterIP"}});
    let node_port = json!({"spec": {"type": "NodePort"}});
    assert!(service_changed(&cluster, &node_port));
    assert!(!service_changed(&cluster, &json!({"spec": {}})));
    let small = json!({"status": {"allocatedResources": {"storage": "1Gi"}}});
    let big = json!({"status": {"allocatedResources": {"storage": "2Gi"}}});
    assert!(claim_changed(&small, &big));
    assert!(!claim_changed(&small, &small));
}

#[test]
fn on_by_default_under_upstream_name_and_alias() {
    let r = crate::builtin();
    let all: Vec<&str> = r
        .select(&["*".to_string()])
        .unwrap()
        .iter()
        .map(|d| d.name)
        .collect();
    assert!(all.contains(&"resourcequota-controller"));
    let by_alias: Vec<&str> = r
        .select(&["resourcequota".to_string()])
        .unwrap()
        .iter()
        .map(|d| d.name)
        .collect();
    assert_eq!(by_alias, ["resourcequota-controller"]);
}
