//! `flowcontrol.apiserver.k8s.io/v1`: the bootstrap configuration a kube-apiserver
//! creates, defaults, validation with upstream's messages, tables, the `Dangling`
//! condition of FlowSchemas, and how mandatory and suggested objects are kept.

use serde_json::{json, Value};

use crate::common::{start, Server};

const FC: &str = "/apis/flowcontrol.apiserver.k8s.io/v1";
const JSON: &str = "application/json";
const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";

fn get(s: &Server, path: &str) -> (u16, Value) {
    s.json("GET", path, JSON, JSON, &Value::Null)
}

fn names(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| i["metadata"]["name"].as_str().expect("name").to_string())
        .collect()
}

fn dangling(fs: &Value) -> (String, String, String) {
    let c = fs["status"]["conditions"]
        .as_array()
        .expect("conditions")
        .iter()
        .find(|c| c["type"] == "Dangling")
        .expect("Dangling condition")
        .clone();
    (
        c["status"].as_str().unwrap_or_default().into(),
        c["reason"].as_str().unwrap_or_default().into(),
        c["message"].as_str().unwrap_or_default().into(),
    )
}

#[test]
fn bootstrap_configuration_is_created_with_status() {
    let s = start();
    let (code, fs) = get(&s, &format!("{FC}/flowschemas"));
    assert_eq!(code, 200);
    let mut got = names(&fs);
    got.sort();
    let mut want = vec![
        "catch-all",
        "exempt",
        "global-default",
        "kube-controller-manager",
        "kube-scheduler",
        "kube-system-service-accounts",
        "probes",
        "service-accounts",
        "system-leader-election",
        "system-node-high",
        "system-nodes",
    ];
    want.sort();
    assert_eq!(got, want);
    let (_, pls) = get(&s, &format!("{FC}/prioritylevelconfigurations"));
    let mut got = names(&pls);
    got.sort();
    assert_eq!(
        got,
        [
            "catch-all",
            "exempt",
            "global-default",
            "leader-election",
            "node-high",
            "system",
            "workload-high",
            "workload-low"
        ]
    );
    for item in fs["items"].as_array().expect("items") {
        assert_eq!(
            item["metadata"]["annotations"]["apf.kubernetes.io/autoupdate-spec"],
            "true"
        );
        let pl = item["spec"]["priorityLevelConfiguration"]["name"]
            .as_str()
            .expect("pl");
        assert_eq!(
            dangling(item),
            (
                "False".into(),
                "Found".into(),
                format!("This FlowSchema references the PriorityLevelConfiguration object named \"{pl}\" and it exists")
            )
        );
    }
    let (_, exempt) = get(&s, &format!("{FC}/prioritylevelconfigurations/exempt"));
    assert_eq!(
        exempt["spec"],
        json!({"type": "Exempt", "exempt": {"nominalConcurrencyShares": 0, "lendablePercent": 0}})
    );
}

#[test]
fn defaults_and_dangling_condition() {
    let s = start();
    let (code, pl) = s.json(
        "POST",
        &format!("{FC}/prioritylevelconfigurations"),
        JSON,
        JSON,
        &json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "PriorityLevelConfiguration",
                "metadata": {"name": "team-a"},
                "spec": {"type": "Limited", "limited": {"limitResponse": {"type": "Queue", "queuing": {}}}}}),
    );
    assert_eq!(code, 201, "{pl}");
    assert_eq!(
        pl["spec"]["limited"],
        json!({"nominalConcurrencyShares": 30, "lendablePercent": 0,
               "limitResponse": {"type": "Queue", "queuing": {"handSize": 8, "queues": 64, "queueLengthLimit": 50}}})
    );
    let body = json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
        "metadata": {"name": "team-b"},
        "spec": {"priorityLevelConfiguration": {"name": "team-b"},
                 "rules": [{"subjects": [{"kind": "Group", "group": {"name": "team-b"}}],
                            "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["/metrics"]}]}]}});
    let (code, fs) = s.json("POST", &format!("{FC}/flowschemas"), JSON, JSON, &body);
    assert_eq!(code, 201, "{fs}");
    assert_eq!(fs["spec"]["matchingPrecedence"], 1000);
    let (_, fs) = get(&s, &format!("{FC}/flowschemas/team-b"));
    assert_eq!(
        dangling(&fs),
        (
            "True".into(),
            "NotFound".into(),
            "This FlowSchema references the PriorityLevelConfiguration object named \"team-b\" but there is no such object".into()
        )
    );
    // the priority level appears: the condition turns False
    let (code, _) = s.json(
        "POST",
        &format!("{FC}/prioritylevelconfigurations"),
        JSON,
        JSON,
        &json!({"metadata": {"name": "team-b"},
                "spec": {"type": "Limited", "limited": {"limitResponse": {"type": "Reject"}}}}),
    );
    assert_eq!(code, 201);
    let (_, fs) = get(&s, &format!("{FC}/flowschemas/team-b"));
    assert_eq!(dangling(&fs).1, "Found");
    let (_, table) = s.json(
        "GET",
        &format!("{FC}/flowschemas/team-b"),
        JSON,
        TABLE,
        &Value::Null,
    );
    let cols: Vec<&str> = table["columnDefinitions"]
        .as_array()
        .expect("columns")
        .iter()
        .map(|c| c["name"].as_str().expect("name"))
        .collect();
    assert_eq!(
        cols,
        [
            "Name",
            "PriorityLevel",
            "MatchingPrecedence",
            "DistinguisherMethod",
            "Age",
            "MissingPL"
        ]
    );
    let cells = &table["rows"][0]["cells"];
    assert_eq!(cells[1], "team-b");
    assert_eq!(cells[2], 1000);
    assert_eq!(cells[3], "<none>");
    assert_eq!(cells[5], "False");
    let (_, table) = s.json(
        "GET",
        &format!("{FC}/prioritylevelconfigurations"),
        JSON,
        TABLE,
        &Value::Null,
    );
    let cols: Vec<&str> = table["columnDefinitions"]
        .as_array()
        .expect("columns")
        .iter()
        .map(|c| c["name"].as_str().expect("name"))
        .collect();
    assert_eq!(
        cols,
        [
            "Name",
            "Type",
            "NominalConcurrencyShares",
            "Queues",
            "HandSize",
            "QueueLengthLimit",
            "Age"
        ]
    );
    let row = table["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .find(|r| r["cells"][0] == "exempt")
        .expect("exempt row");
    assert_eq!(row["cells"][1], "Exempt");
    assert_eq!(row["cells"][2], "<none>");
}

#[test]
fn validation_messages_are_upstreams() {
    let s = start();
    let (code, st) = s.json(
        "POST",
        &format!("{FC}/flowschemas"),
        JSON,
        JSON,
        &json!({"metadata": {"name": "bad"},
                "spec": {"matchingPrecedence": 1, "priorityLevelConfiguration": {"name": ""},
                         "distinguisherMethod": {"type": "ByFoo"},
                         "rules": [{"subjects": [{"kind": "User"}],
                                    "resourceRules": [{"verbs": ["*", "get"], "apiGroups": ["*"], "resources": ["pods"]}]}]}}),
    );
    assert_eq!(code, 422, "{st}");
    let causes: Vec<(String, String)> = st["details"]["causes"]
        .as_array()
        .expect("causes")
        .iter()
        .map(|c| {
            (
                c["field"].as_str().unwrap_or_default().to_string(),
                c["message"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    let want = [
        ("spec.matchingPrecedence", "Invalid value: 1: only the schema named 'exempt' may have matchingPrecedence 1"),
        ("spec.distinguisherMethod.type", "Unsupported value: {\"type\":\"ByFoo\"}: supported values: \"ByNamespace\", \"ByUser\""),
        ("spec.priorityLevelConfiguration.name", "Required value: must reference a priority level"),
        ("spec.rules[0].subjects[0].user", "Required value: user is required when subject kind is 'User'"),
        ("spec.rules[0].resourceRules[0].verbs", "Invalid value: [\"*\",\"get\"]: if '*' is present, must not specify other verbs"),
        ("spec.rules[0].resourceRules[0].namespaces", "Required value: resource rules that are not cluster scoped must supply at least one namespace"),
    ];
    let want: Vec<(String, String)> = want
        .iter()
        .map(|(f, m)| (f.to_string(), m.to_string()))
        .collect();
    assert_eq!(causes, want);
    let (code, st) = s.json(
        "POST",
        &format!("{FC}/prioritylevelconfigurations"),
        JSON,
        JSON,
        &json!({"metadata": {"name": "bad"},
                "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": -1, "lendablePercent": 101,
                         "limitResponse": {"type": "Queue", "queuing": {"queues": 4, "handSize": 5}}}}}),
    );
    assert_eq!(code, 422, "{st}");
    let messages: Vec<&str> = st["details"]["causes"]
        .as_array()
        .expect("causes")
        .iter()
        .map(|c| c["message"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(
        messages,
        [
            "Invalid value: -1: must be a non-negative integer",
            "Invalid value: 5: should not be greater than queues (4)",
            "Invalid value: 101: must be between 0 and 100, inclusive",
        ]
    );
}

#[test]
fn mandatory_objects_are_restored_and_suggested_ones_kept_when_asked() {
    let s = start();
    // the catch-all spec is fixed
    let (_, mut pl) = get(&s, &format!("{FC}/prioritylevelconfigurations/catch-all"));
    pl["spec"]["limited"]["nominalConcurrencyShares"] = json!(50);
    let (code, st) = s.json(
        "PUT",
        &format!("{FC}/prioritylevelconfigurations/catch-all"),
        JSON,
        JSON,
        &pl,
    );
    assert_eq!(code, 422);
    assert!(
        st["message"]
            .as_str()
            .unwrap_or_default()
            .contains("spec of 'catch-all' must equal the fixed value"),
        "{st}"
    );
    // deleted: created again
    let (code, _) = s.json(
        "DELETE",
        &format!("{FC}/flowschemas/catch-all"),
        JSON,
        JSON,
        &Value::Null,
    );
    assert_eq!(code, 200);
    let (code, fs) = get(&s, &format!("{FC}/flowschemas/catch-all"));
    assert_eq!(code, 200);
    assert_eq!(fs["spec"]["matchingPrecedence"], 10000);
    // a suggested schema changed with autoupdate off keeps the change
    let (_, mut fs) = get(&s, &format!("{FC}/flowschemas/service-accounts"));
    fs["spec"]["matchingPrecedence"] = json!(8000);
    fs["metadata"]["annotations"]["apf.kubernetes.io/autoupdate-spec"] = json!("false");
    let (code, _) = s.json(
        "PUT",
        &format!("{FC}/flowschemas/service-accounts"),
        JSON,
        JSON,
        &fs,
    );
    assert_eq!(code, 200);
    let (_, fs) = get(&s, &format!("{FC}/flowschemas/service-accounts"));
    assert_eq!(fs["spec"]["matchingPrecedence"], 8000);
    // with autoupdate on, the server puts the suggested spec back
    let (_, mut fs) = get(&s, &format!("{FC}/flowschemas/global-default"));
    fs["spec"]["matchingPrecedence"] = json!(9800);
    let (code, _) = s.json(
        "PUT",
        &format!("{FC}/flowschemas/global-default"),
        JSON,
        JSON,
        &fs,
    );
    assert_eq!(code, 200);
    let (_, fs) = get(&s, &format!("{FC}/flowschemas/global-default"));
    assert_eq!(fs["spec"]["matchingPrecedence"], 9900);
}
