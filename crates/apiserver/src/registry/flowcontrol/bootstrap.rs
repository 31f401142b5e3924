//! Upstream's bootstrap APF configuration (`k8s.io/apiserver/pkg/apis/flowcontrol/
//! bootstrap`): the mandatory and suggested FlowSchemas and priority levels every
//! kube-apiserver creates, and how its configuration ensurer revises the stored ones
//! (`pkg/registry/flowcontrol/ensurer`).

use serde_json::{json, Value};

use super::{normalized, AUTO_UPDATE_ANNOTATION, CATCH_ALL, EXEMPT};

fn plc(name: &str, spec: Value) -> Value {
    json!({
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
        "kind": "PriorityLevelConfiguration",
        "metadata": {"name": name, "annotations": {AUTO_UPDATE_ANNOTATION: "true"}},
        "spec": spec,
    })
}

fn limited(shares: i64, lendable: i64, queuing: Option<(i64, i64, i64)>) -> Value {
    let response = match queuing {
        Some((queues, hand_size, queue_length_limit)) => json!({
            "type": "Queue",
            "queuing": {"queues": queues, "handSize": hand_size, "queueLengthLimit": queue_length_limit},
        }),
        None => json!({"type": "Reject"}),
    };
    json!({
        "type": "Limited",
        "limited": {"nominalConcurrencyShares": shares, "lendablePercent": lendable, "limitResponse": response},
    })
}

fn fs(name: &str, pl: &str, precedence: i64, distinguisher: Option<&str>, rule: Value) -> Value {
    let mut spec = json!({
        "priorityLevelConfiguration": {"name": pl},
        "matchingPrecedence": precedence,
        "rules": [rule],
    });
    if let Some(d) = distinguisher {
        spec["distinguisherMethod"] = json!({"type": d});
    }
    json!({
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
        "kind": "FlowSchema",
        "metadata": {"name": name, "annotations": {AUTO_UPDATE_ANNOTATION: "true"}},
        "spec": spec,
    })
}

fn groups(names: &[&str]) -> Vec<Value> {
    names
        .iter()
        .map(|n| json!({"kind": "Group", "group": {"name": n}}))
        .collect()
}

fn users(names: &[&str]) -> Vec<Value> {
    names
        .iter()
        .map(|n| json!({"kind": "User", "user": {"name": n}}))
        .collect()
}

fn kube_system_service_accounts() -> Vec<Value> {
    vec![
        json!({"kind": "ServiceAccount", "serviceAccount": {"name": "*", "namespace": "kube-system"}}),
    ]
}

fn everything(subjects: Vec<Value>) -> Value {
    json!({
        "subjects": subjects,
        "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "namespaces": ["*"], "clusterScope": true}],
        "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
    })
}

/// The mandatory priority levels (`catch-all`, `exempt`): always present, their spec
/// restored (but for `exempt`'s `spec.exempt`).
pub fn mandatory_priority_levels() -> Vec<Value> {
    vec![
        plc(CATCH_ALL, limited(5, 0, None)),
        plc(
            EXEMPT,
            json!({"type": "Exempt", "exempt": {"nominalConcurrencyShares": 0, "lendablePercent": 0}}),
        ),
    ]
}

/// The mandatory FlowSchemas (`exempt`, `catch-all`).
pub fn mandatory_flow_schemas() -> Vec<Value> {
    vec![
        fs(
            EXEMPT,
            EXEMPT,
            1,
            None,
            everything(groups(&["system:masters"])),
        ),
        fs(
            CATCH_ALL,
            CATCH_ALL,
            10000,
            Some("ByUser"),
            everything(groups(&["system:unauthenticated", "system:authenticated"])),
        ),
    ]
}

/// The suggested priority levels: created when missing, kept up to date unless
/// annotated `apf.kubernetes.io/autoupdate-spec: "false"`.
pub fn suggested_priority_levels() -> Vec<Value> {
    vec![
        plc("system", limited(30, 33, Some((64, 6, 50)))),
        plc("node-high", limited(40, 25, Some((64, 6, 50)))),
        plc("leader-election", limited(10, 0, Some((16, 4, 50)))),
        plc("workload-high", limited(40, 50, Some((128, 6, 50)))),
        plc("workload-low", limited(100, 90, Some((128, 6, 50)))),
        plc("global-default", limited(20, 50, Some((128, 6, 50)))),
    ]
}

/// The suggested FlowSchemas.
pub fn suggested_flow_schemas() -> Vec<Value> {
    let mut leader_election_subjects =
        users(&["system:kube-controller-manager", "system:kube-scheduler"]);
    leader_election_subjects.extend(kube_system_service_accounts());
    vec![
        fs(
            "system-nodes",
            "system",
            500,
            Some("ByUser"),
            everything(groups(&["system:nodes"])),
        ),
        fs(
            "system-node-high",
            "node-high",
            400,
            Some("ByUser"),
            json!({
                "subjects": groups(&["system:nodes"]),
                "resourceRules": [
                    {"verbs": ["*"], "apiGroups": [""], "resources": ["nodes", "nodes/status"], "namespaces": ["*"], "clusterScope": true},
                    {"verbs": ["*"], "apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "namespaces": ["*"]},
                ],
            }),
        ),
        fs(
            "probes",
            EXEMPT,
            2,
            None,
            json!({
                "subjects": groups(&["system:unauthenticated", "system:authenticated"]),
                "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz", "/readyz", "/livez"]}],
            }),
        ),
        fs(
            "system-leader-election",
            "leader-election",
            100,
            Some("ByUser"),
            json!({
                "subjects": leader_election_subjects,
                "resourceRules": [{"verbs": ["get", "create", "update"], "apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "namespaces": ["*"]}],
            }),
        ),
        fs(
            "kube-controller-manager",
            "workload-high",
            800,
            Some("ByNamespace"),
            everything(users(&["system:kube-controller-manager"])),
        ),
        fs(
            "kube-scheduler",
            "workload-high",
            800,
            Some("ByNamespace"),
            everything(users(&["system:kube-scheduler"])),
        ),
        fs(
            "kube-system-service-accounts",
            "workload-high",
            900,
            Some("ByNamespace"),
            everything(kube_system_service_accounts()),
        ),
        fs(
            "service-accounts",
            "workload-low",
            9000,
            Some("ByUser"),
            everything(groups(&["system:serviceaccounts"])),
        ),
        fs(
            "global-default",
            "global-default",
            9900,
            Some("ByUser"),
            everything(groups(&["system:unauthenticated", "system:authenticated"])),
        ),
    ]
}

/// The spec a mandatory object of `plural` named `name` must have, if it is one.
pub fn mandatory_spec(plural: &str, name: &str) -> Option<Value> {
    let objs = match plural {
        "flowschemas" => mandatory_flow_schemas(),
        _ => mandatory_priority_levels(),
    };
    objs.into_iter()
        .find(|o| o["metadata"]["name"] == name)
        .map(|o| o["spec"].clone())
}

/// What the ensurer does with one bootstrap object.
#[derive(Debug, PartialEq)]
pub enum Revision {
    /// Create it.
    Create(Value),
    /// Store this revised object.
    Update(Value),
    /// Leave the stored object alone.
    Keep,
}

/// Upstream's `shouldUpdateSpec`: the annotation when it parses as a boolean, else
/// whether the object was never changed since it was created (generation 1).
fn should_update_spec(current: &Value) -> bool {
    let annotation = current
        .pointer(&format!(
            "/metadata/annotations/{}",
            AUTO_UPDATE_ANNOTATION.replace('/', "~1")
        ))
        .and_then(Value::as_str);
    if let Some(b) = annotation.and_then(parse_go_bool) {
        return b;
    }
    current
        .pointer("/metadata/generation")
        .and_then(Value::as_i64)
        == Some(1)
}

/// Go's `strconv.ParseBool`.
fn parse_go_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// How the ensurer revises `current` (the stored object, `None` when missing) given
/// the `bootstrap` object (defaulted): mandatory objects always get the bootstrap spec
/// (the `exempt` priority level keeps its `spec.exempt`), suggested ones only while
/// their autoupdate annotation (or, without one, generation 1) says so; the
/// annotation is set to what was decided.
pub fn revise(current: Option<&Value>, bootstrap: &Value, mandatory: bool) -> Revision {
    let Some(current) = current else {
        return Revision::Create(bootstrap.clone());
    };
    let auto_update = mandatory || should_update_spec(current);
    let annotation = current
        .pointer(&format!(
            "/metadata/annotations/{}",
            AUTO_UPDATE_ANNOTATION.replace('/', "~1")
        ))
        .and_then(Value::as_str)
        .and_then(parse_go_bool);
    let update_annotation = annotation != Some(auto_update);
    let mut wanted_spec = bootstrap["spec"].clone();
    let is_exempt_pl = bootstrap["kind"] == "PriorityLevelConfiguration"
        && bootstrap["metadata"]["name"] == EXEMPT;
    if is_exempt_pl {
        if let Some(e) = current.pointer("/spec/exempt") {
            wanted_spec["exempt"] = e.clone();
        }
    }
    let spec_changed = auto_update
        && normalized(current.get("spec").unwrap_or(&Value::Null)) != normalized(&wanted_spec);
    if !update_annotation && !spec_changed {
        return Revision::Keep;
    }
    let mut revised = current.clone();
    if spec_changed {
        revised["spec"] = wanted_spec;
    }
    if update_annotation {
        if !revised["metadata"]["annotations"].is_object() {
            revised["metadata"]["annotations"] = json!({});
        }
        revised["metadata"]["annotations"][AUTO_UPDATE_ANNOTATION] =
            json!(if auto_update { "true" } else { "false" });
    }
    Revision::Update(revised)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored(mut o: Value, generation: i64) -> Value {
        o["metadata"]["generation"] = json!(generation);
        o
    }

    #[test]
    fn every_bootstrap_object_names_its_priority_level() {
        let pls: Vec<Value> = mandatory_priority_levels()
            .into_iter()
            .chain(suggested_priority_levels())
            .collect();
        for f in mandatory_flow_schemas()
            .into_iter()
            .chain(suggested_flow_schemas())
        {
            let pl = &f["spec"]["priorityLevelConfiguration"]["name"];
            assert!(
                pls.iter().any(|p| &p["metadata"]["name"] == pl),
                "{} references {pl}",
                f["metadata"]["name"]
            );
        }
        assert_eq!(suggested_flow_schemas().len(), 9);
        assert_eq!(suggested_priority_levels().len(), 6);
    }

    #[test]
    fn missing_objects_are_created() {
        let b = &suggested_priority_levels()[0];
        assert_eq!(revise(None, b, false), Revision::Create(b.clone()));
    }

    #[test]
    fn mandatory_spec_is_restored_and_annotation_set() {
        let b = &mandatory_priority_levels()[0];
        let mut cur = stored(b.clone(), 2);
        cur["spec"]["limited"]["nominalConcurrencyShares"] = json!(50);
        cur["metadata"]["annotations"][AUTO_UPDATE_ANNOTATION] = json!("false");
        let Revision::Update(r) = revise(Some(&cur), b, true) else {
            panic!("not updated")
        };
        assert_eq!(r["spec"], b["spec"]);
        assert_eq!(r["metadata"]["annotations"][AUTO_UPDATE_ANNOTATION], "true");
    }

    #[test]
    fn exempt_priority_level_keeps_its_exempt_settings() {
        let b = &mandatory_priority_levels()[1];
        let mut cur = stored(b.clone(), 2);
        cur["spec"]["exempt"]["nominalConcurrencyShares"] = json!(10);
        assert_eq!(revise(Some(&cur), b, true), Revision::Keep);
    }

    #[test]
    fn suggested_objects_follow_their_annotation() {
        let b = &suggested_flow_schemas()[0];
        let mut changed = stored(b.clone(), 5);
        changed["spec"]["matchingPrecedence"] = json!(600);
        // annotated true: the spec is restored
        let Revision::Update(r) = revise(Some(&changed), b, false) else {
            panic!("not updated")
        };
        assert_eq!(r["spec"]["matchingPrecedence"], 500);
        // annotated false: kept as the user left it
        changed["metadata"]["annotations"][AUTO_UPDATE_ANNOTATION] = json!("false");
        assert_eq!(revise(Some(&changed), b, false), Revision::Keep);
        // no annotation, changed since creation: kept, and marked false
        changed["metadata"]["annotations"] = json!({});
        let Revision::Update(r) = revise(Some(&changed), b, false) else {
            panic!("annotation not written")
        };
        assert_eq!(r["spec"]["matchingPrecedence"], 600);
        assert_eq!(
            r["metadata"]["annotations"][AUTO_UPDATE_ANNOTATION],
            "false"
        );
        // no annotation, generation 1: updated and marked true
        let fresh = stored(changed.clone(), 1);
        let Revision::Update(r) = revise(Some(&fresh), b, false) else {
            panic!("not updated")
        };
        assert_eq!(r["spec"]["matchingPrecedence"], 500);
        assert_eq!(r["metadata"]["annotations"][AUTO_UPDATE_ANNOTATION], "true");
    }
}
