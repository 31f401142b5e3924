//! ValidatingAdmissionPolicy and MutatingAdmissionPolicy through the API: denials with
//! upstream's Status (message, messageExpression, reason and code), the Warn action's
//! `Warning` header, params from ConfigMaps (by name and selector, parameterNotFoundAction),
//! `namespaceObject`, DELETE requests, failurePolicy, and mutations by apply
//! configuration and JSON patch.

use crate::common::{self, Server};
use serde_json::{json, Value};

const JSON: &str = "application/json";
const AR: &str = "/apis/admissionregistration.k8s.io/v1";

fn post(s: &Server, path: &str, body: Value) -> (u16, Value) {
    s.json("POST", path, JSON, JSON, &body)
}

fn created(s: &Server, path: &str, body: Value) -> Value {
    let (code, v) = post(s, path, body);
    assert_eq!(code, 201, "POST {path}: {v}");
    v
}

/// POST returning the `Warning` header texts too.
fn post_warned(s: &Server, path: &str, body: Value) -> (u16, Value, Vec<String>) {
    let (code, head, b) = common::request(
        s.running.addr,
        "POST",
        path,
        JSON,
        JSON,
        body.to_string().as_bytes(),
    );
    let warnings = head
        .lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("warning").then(|| {
                let v = v.trim();
                let v = v.strip_prefix("299 - \"").unwrap_or(v);
                v.strip_suffix('"').unwrap_or(v).replace("\\\"", "\"")
            })
        })
        .collect();
    (
        code,
        serde_json::from_slice(&b).unwrap_or(Value::Null),
        warnings,
    )
}

fn namespace(s: &Server, name: &str, labels: Value) {
    created(
        s,
        "/api/v1/namespaces",
        json!({"metadata": {"name": name, "labels": labels}}),
    );
}

fn deployment(name: &str, replicas: i64) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "app", "image": "nginx"}]}}}})
}

fn deployments_rule() -> Value {
    json!({"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"],
        "operations": ["CREATE", "UPDATE"], "resources": ["deployments"]}]})
}

fn policy(s: &Server, name: &str, spec: Value) {
    created(
        s,
        &format!("{AR}/validatingadmissionpolicies"),
        json!({"metadata": {"name": name}, "spec": spec}),
    );
}

fn binding(s: &Server, name: &str, spec: Value) {
    created(
        s,
        &format!("{AR}/validatingadmissionpolicybindings"),
        json!({"metadata": {"name": name}, "spec": spec}),
    );
}

fn only_ns(ns: &str) -> Value {
    json!({"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}}})
}

#[test]
fn validating_policy_denies_with_message_reason_and_warns() {
    let s = common::start();
    namespace(&s, "vap", json!({}));
    namespace(&s, "other", json!({}));
    let mut spec = json!({
        "failurePolicy": "Fail",
        "matchConstraints": deployments_rule(),
        "validations": [
            {"expression": "object.spec.replicas <= 5", "message": "replicas must be no more than 5"},
            {"expression": "object.spec.replicas != 4",
             "messageExpression": "'replicas ' + string(object.spec.replicas) + ' are unlucky'",
             "reason": "Forbidden"},
            {"expression": "object.spec.replicas != 3"},
        ],
    });
    policy(&s, "max-replicas", spec.clone());
    binding(
        &s,
        "max-replicas-binding",
        json!({"policyName": "max-replicas", "validationActions": ["Deny"],
               "matchResources": only_ns("vap")}),
    );
    let path = "/apis/apps/v1/namespaces/vap/deployments";
    // allowed
    created(&s, path, deployment("ok", 2));
    // message, 422 Invalid
    let (code, e) = post(&s, path, deployment("big", 7));
    assert_eq!(code, 422, "{e}");
    let msg = "ValidatingAdmissionPolicy 'max-replicas' with binding 'max-replicas-binding' denied request: replicas must be no more than 5";
    assert_eq!(
        e,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": format!("deployments.apps \"big\" is forbidden: {msg}"),
            "reason": "Invalid",
            "details": {"name": "big", "group": "apps", "kind": "deployments", "causes": [{"message": msg}]},
            "code": 422})
    );
    // messageExpression and reason Forbidden: 403
    let (code, e) = post(&s, path, deployment("four", 4));
    assert_eq!(code, 403, "{e}");
    assert_eq!(e["reason"], "Forbidden");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .ends_with("denied request: replicas 4 are unlucky"),
        "{e}"
    );
    // neither message: the expression
    let (code, e) = post(&s, path, deployment("three", 3));
    assert_eq!(code, 422);
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .ends_with("denied request: failed expression: object.spec.replicas != 3"),
        "{e}"
    );
    // other namespaces are not bound
    created(
        &s,
        "/apis/apps/v1/namespaces/other/deployments",
        deployment("big", 7),
    );
    // updates too
    let (code, e) = s.json(
        "PUT",
        &format!("{path}/ok"),
        JSON,
        JSON,
        &deployment("ok", 9),
    );
    assert_eq!(code, 422, "{e}");

    // Warn: the request passes with a warning
    binding(
        &s,
        "warn-binding",
        json!({"policyName": "warn-only", "validationActions": ["Warn"],
               "matchResources": only_ns("other")}),
    );
    spec["validations"] =
        json!([{"expression": "object.spec.replicas <= 5", "message": "too many"}]);
    policy(&s, "warn-only", spec);
    let (code, v, warnings) = post_warned(
        &s,
        "/apis/apps/v1/namespaces/other/deployments",
        deployment("warned", 8),
    );
    assert_eq!(code, 201, "{v}");
    assert_eq!(
        warnings,
        vec!["Validation failed for ValidatingAdmissionPolicy 'warn-only' with binding 'warn-binding': too many".to_string()]
    );
    // deleting the binding lifts the policy
    let (code, _) = s.json(
        "DELETE",
        &format!("{AR}/validatingadmissionpolicybindings/max-replicas-binding"),
        JSON,
        JSON,
        &Value::Null,
    );
    assert_eq!(code, 200);
    created(&s, path, deployment("big", 7));
}

#[test]
fn params_from_configmaps() {
    let s = common::start();
    namespace(&s, "params", json!({"team": "a"}));
    created(
        &s,
        "/api/v1/namespaces/params/configmaps",
        json!({"metadata": {"name": "limit", "labels": {"policy": "replicas"}}, "data": {"max": "3"}}),
    );
    created(
        &s,
        "/api/v1/namespaces/params/configmaps",
        json!({"metadata": {"name": "limit2", "labels": {"policy": "replicas"}}, "data": {"max": "5"}}),
    );
    policy(
        &s,
        "param-limit",
        json!({
            "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
            "matchConstraints": deployments_rule(),
            "variables": [{"name": "max", "expression": "int(params.data.max)"}],
            "validations": [{
                "expression": "object.spec.replicas <= variables.max",
                "messageExpression": "'at most ' + params.data.max + ' replicas (' + params.metadata.name + ', team ' + namespaceObject.metadata.labels.team + ')'",
            }],
        }),
    );
    // by selector: every selected param is evaluated
    binding(
        &s,
        "by-selector",
        json!({"policyName": "param-limit", "validationActions": ["Deny"],
               "paramRef": {"selector": {"matchLabels": {"policy": "replicas"}}, "parameterNotFoundAction": "Allow"},
               "matchResources": only_ns("params")}),
    );
    let path = "/apis/apps/v1/namespaces/params/deployments";
    created(&s, path, deployment("three", 3));
    let (code, e) = post(&s, path, deployment("four", 4));
    assert_eq!(code, 422, "{e}");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .ends_with("denied request: at most 3 replicas (limit, team a)"),
        "{e}"
    );
    // a missing named param with Deny denies; with Allow it admits
    namespace(&s, "noparams", json!({}));
    binding(
        &s,
        "missing-deny",
        json!({"policyName": "param-limit", "validationActions": ["Deny"],
               "paramRef": {"name": "absent", "parameterNotFoundAction": "Deny"},
               "matchResources": only_ns("noparams")}),
    );
    let (code, e) = post(
        &s,
        "/apis/apps/v1/namespaces/noparams/deployments",
        deployment("x", 1),
    );
    assert_eq!(code, 422, "{e}");
    assert_eq!(
        e["details"]["causes"][0]["message"],
        "ValidatingAdmissionPolicy 'param-limit' with binding 'missing-deny' denied request: failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"
    );
    let (code, _) = s.json(
        "DELETE",
        &format!("{AR}/validatingadmissionpolicybindings/missing-deny"),
        JSON,
        JSON,
        &Value::Null,
    );
    assert_eq!(code, 200);
    binding(
        &s,
        "missing-allow",
        json!({"policyName": "param-limit", "validationActions": ["Deny"],
               "paramRef": {"name": "absent", "parameterNotFoundAction": "Allow"},
               "matchResources": only_ns("noparams")}),
    );
    created(
        &s,
        "/apis/apps/v1/namespaces/noparams/deployments",
        deployment("y", 9),
    );
}

#[test]
fn delete_requests_and_failure_policy() {
    let s = common::start();
    namespace(&s, "del", json!({}));
    created(
        &s,
        "/api/v1/namespaces/del/configmaps",
        json!({"metadata": {"name": "keep", "labels": {"protected": "true"}}}),
    );
    created(
        &s,
        "/api/v1/namespaces/del/configmaps",
        json!({"metadata": {"name": "free"}}),
    );
    policy(
        &s,
        "no-delete",
        json!({
            "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                "operations": ["DELETE"], "resources": ["configmaps"]}],
                "objectSelector": {"matchLabels": {"protected": "true"}}},
            "validations": [{"expression": "object == null && oldObject.metadata.name != 'keep'",
                             "message": "protected", "reason": "Forbidden"}],
        }),
    );
    binding(
        &s,
        "no-delete",
        json!({"policyName": "no-delete", "validationActions": ["Deny"], "matchResources": only_ns("del")}),
    );
    let (code, e) = s.json(
        "DELETE",
        "/api/v1/namespaces/del/configmaps/keep",
        JSON,
        JSON,
        &Value::Null,
    );
    assert_eq!(code, 403, "{e}");
    assert_eq!(
        e["message"],
        "configmaps \"keep\" is forbidden: ValidatingAdmissionPolicy 'no-delete' with binding 'no-delete' denied request: protected"
    );
    let (code, _) = s.json(
        "DELETE",
        "/api/v1/namespaces/del/configmaps/free",
        JSON,
        JSON,
        &Value::Null,
    );
    assert_eq!(code, 200);

    // an expression that fails: Fail denies with the error, Ignore admits
    for (name, fp) in [("fails", "Fail"), ("ignores", "Ignore")] {
        policy(
            &s,
            name,
            json!({
                "failurePolicy": fp,
                "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                    "operations": ["CREATE"], "resources": ["secrets"]}]},
                "validations": [{"expression": "object.data.missing == 'x'"}],
            }),
        );
        binding(
            &s,
            name,
            json!({"policyName": name, "validationActions": ["Deny"], "matchResources": only_ns("del")}),
        );
    }
    let (code, e) = post(
        &s,
        "/api/v1/namespaces/del/secrets",
        json!({"metadata": {"name": "s"}, "data": {"other": "eA=="}}),
    );
    assert_eq!(code, 422, "{e}");
    assert_eq!(
        e["details"]["causes"],
        json!([{"message": "ValidatingAdmissionPolicy 'fails' with binding 'fails' denied request: expression 'object.data.missing == 'x'' resulted in error: no such key: missing"}])
    );
}

#[test]
fn mutating_policies_apply_configuration_and_json_patch() {
    let s = common::start();
    namespace(&s, "map", json!({}));
    created(
        &s,
        &format!("{AR}/mutatingadmissionpolicies"),
        json!({"metadata": {"name": "add-label"}, "spec": {
            "matchConstraints": deployments_rule(),
            "matchConditions": [{"name": "not-opted-out", "expression": "!has(object.metadata.labels) || !('skip' in object.metadata.labels)"}],
            "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {"expression":
                "Object{metadata: Object.metadata{labels: {'mutated-by': 'policy'}}, spec: Object.spec{template: Object.spec.template{spec: Object.spec.template.spec{containers: [Object.spec.template.spec.containers{name: 'app', imagePullPolicy: 'Always'}]}}}}"}}],
        }}),
    );
    created(
        &s,
        &format!("{AR}/mutatingadmissionpolicybindings"),
        json!({"metadata": {"name": "add-label"}, "spec": {"policyName": "add-label", "matchResources": only_ns("map")}}),
    );
    created(
        &s,
        &format!("{AR}/mutatingadmissionpolicies"),
        json!({"metadata": {"name": "patch-replicas"}, "spec": {
            "matchConstraints": deployments_rule(),
            "mutations": [{"patchType": "JSONPatch", "jsonPatch": {"expression":
                "object.spec.replicas > 3 ? [JSONPatch{op: 'replace', path: '/spec/replicas', value: 3}, JSONPatch{op: 'add', path: '/metadata/annotations', value: {}}, JSONPatch{op: 'add', path: '/metadata/annotations/' + jsonpatch.escapeKey('example.com/capped'), value: 'true'}] : []"}}],
        }}),
    );
    created(
        &s,
        &format!("{AR}/mutatingadmissionpolicybindings"),
        json!({"metadata": {"name": "patch-replicas"}, "spec": {"policyName": "patch-replicas", "matchResources": only_ns("map")}}),
    );
    let path = "/apis/apps/v1/namespaces/map/deployments";
    let d = created(&s, path, deployment("web", 10));
    assert_eq!(
        d["metadata"]["labels"],
        json!({"app": "web", "mutated-by": "policy"})
    );
    assert_eq!(d["spec"]["replicas"], 3);
    assert_eq!(
        d["metadata"]["annotations"]["example.com/capped"], "true",
        "{d}"
    );
    let c = &d["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(c["image"], "nginx");
    assert_eq!(c["imagePullPolicy"], "Always");
    // the match condition opts out
    let mut skip = deployment("skip", 1);
    skip["metadata"]["labels"]["skip"] = json!("yes");
    let d = created(&s, path, skip);
    assert!(d["metadata"]["labels"].get("mutated-by").is_none(), "{d}");
    // other namespaces are untouched
    namespace(&s, "plain", json!({}));
    let d = created(
        &s,
        "/apis/apps/v1/namespaces/plain/deployments",
        deployment("web", 10),
    );
    assert_eq!(d["spec"]["replicas"], 10);

    // an apply configuration may not set atomic structs: with failurePolicy Fail the
    // request is denied with the policy's error
    namespace(&s, "mapfail", json!({}));
    created(
        &s,
        &format!("{AR}/mutatingadmissionpolicies"),
        json!({"metadata": {"name": "bad-selector"}, "spec": {
            "matchConstraints": deployments_rule(),
            "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {"expression":
                "Object{spec: Object.spec{selector: Object.spec.selector{matchLabels: {'x': 'y'}}}}"}}],
        }}),
    );
    created(
        &s,
        &format!("{AR}/mutatingadmissionpolicybindings"),
        json!({"metadata": {"name": "bad-selector"}, "spec": {"policyName": "bad-selector", "matchResources": only_ns("mapfail")}}),
    );
    let (code, e) = post(
        &s,
        "/apis/apps/v1/namespaces/mapfail/deployments",
        deployment("web", 1),
    );
    assert_eq!(code, 403, "{e}");
    let msg = "policy 'bad-selector' with binding 'bad-selector' denied request: error applying patch: invalid ApplyConfiguration: may not mutate atomic arrays, maps or structs: .spec.selector";
    assert_eq!(e["reason"], "Invalid");
    assert_eq!(e["message"], msg);
    assert_eq!(e["details"]["causes"], json!([{"message": msg}]));
}

#[test]
fn validating_policy_status_reports_type_checking() {
    let s = common::start();
    policy(
        &s,
        "typed",
        json!({
            "matchConstraints": deployments_rule(),
            "validations": [
                {"expression": "object.spec.replicas <= 5"},
                {"expression": "object.spec.replicaz <= 5"},
            ],
        }),
    );
    let (code, p) = s.json(
        "GET",
        &format!("{AR}/validatingadmissionpolicies/typed"),
        JSON,
        JSON,
        &Value::Null,
    );
    assert_eq!(code, 200);
    assert_eq!(p["status"]["observedGeneration"], 1, "{p}");
    let warnings = p["status"]["typeChecking"]["expressionWarnings"]
        .as_array()
        .expect("warnings");
    assert_eq!(warnings.len(), 1, "{p}");
    assert_eq!(warnings[0]["fieldRef"], "spec.validations[1].expression");
    assert!(
        warnings[0]["warning"]
            .as_str()
            .unwrap()
            .starts_with("apps/v1, Kind=Deployment: compilation failed: ERROR: <input>:1:12: undefined field 'replicaz'"),
        "{p}"
    );
    // defaults as kube-apiserver writes them
    assert_eq!(p["spec"]["failurePolicy"], "Fail");
    assert_eq!(
        p["spec"]["matchConstraints"],
        json!({"matchPolicy": "Equivalent", "namespaceSelector": {}, "objectSelector": {},
            "resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"],
                "operations": ["CREATE", "UPDATE"], "resources": ["deployments"], "scope": "*"}]})
    );
    // a fixed expression clears the warnings at the next generation
    let mut fixed = p.clone();
    fixed["spec"]["validations"][1]["expression"] = json!("object.spec.replicas >= 0");
    let (code, v) = s.json(
        "PUT",
        &format!("{AR}/validatingadmissionpolicies/typed"),
        JSON,
        JSON,
        &fixed,
    );
    assert_eq!(code, 200, "{v}");
    let (_, p) = s.json(
        "GET",
        &format!("{AR}/validatingadmissionpolicies/typed"),
        JSON,
        JSON,
        &Value::Null,
    );
    assert_eq!(
        p["status"],
        json!({"observedGeneration": 2, "typeChecking": {}})
    );
    // a policy that does not compile is refused
    let (code, e) = post(
        &s,
        &format!("{AR}/validatingadmissionpolicies"),
        json!({"metadata": {"name": "broken"}, "spec": {"matchConstraints": deployments_rule(),
            "validations": [{"expression": "object.spec.replicas <"}]}}),
    );
    assert_eq!(code, 422, "{e}");
    assert_eq!(
        e["details"]["causes"][0]["field"],
        "spec.validations[0].expression"
    );
}

#[test]
fn params_from_a_custom_resource() {
    let s = common::start();
    created(
        &s,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        json!({"metadata": {"name": "replicalimits.example.com"}, "spec": {
            "group": "example.com", "scope": "Cluster",
            "names": {"plural": "replicalimits", "singular": "replicalimit", "kind": "ReplicaLimit"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                "type": "object", "properties": {"maxReplicas": {"type": "integer"}}}}}]}}),
    );
    created(
        &s,
        "/apis/example.com/v1/replicalimits",
        json!({"apiVersion": "example.com/v1", "kind": "ReplicaLimit",
               "metadata": {"name": "default"}, "maxReplicas": 2}),
    );
    namespace(&s, "crparams", json!({}));
    policy(
        &s,
        "cr-limit",
        json!({
            "paramKind": {"apiVersion": "example.com/v1", "kind": "ReplicaLimit"},
            "matchConstraints": deployments_rule(),
            "validations": [{"expression": "object.spec.replicas <= params.maxReplicas",
                             "messageExpression": "'at most ' + string(params.maxReplicas)"}],
        }),
    );
    binding(
        &s,
        "cr-limit",
        json!({"policyName": "cr-limit", "validationActions": ["Deny"],
               "paramRef": {"name": "default"}, "matchResources": only_ns("crparams")}),
    );
    let (_, b) = s.json(
        "GET",
        &format!("{AR}/validatingadmissionpolicybindings/cr-limit"),
        JSON,
        JSON,
        &Value::Null,
    );
    assert_eq!(b["spec"]["paramRef"]["parameterNotFoundAction"], "Deny");
    let path = "/apis/apps/v1/namespaces/crparams/deployments";
    created(&s, path, deployment("two", 2));
    let (code, e) = post(&s, path, deployment("three", 3));
    assert_eq!(code, 422, "{e}");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .ends_with("denied request: at most 2"),
        "{e}"
    );
    // the param changes take effect at once
    let (code, v) = s.json(
        "PUT",
        "/apis/example.com/v1/replicalimits/default",
        JSON,
        JSON,
        &json!({"apiVersion": "example.com/v1", "kind": "ReplicaLimit",
                "metadata": {"name": "default"}, "maxReplicas": 5}),
    );
    assert_eq!(code, 200, "{v}");
    created(&s, path, deployment("three", 3));
}

#[test]
fn request_and_authorizer_variables() {
    let s = common::start();
    namespace(&s, "reqs", json!({"team": "blue"}));
    policy(
        &s,
        "request-shape",
        json!({
            "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                "operations": ["CREATE"], "resources": ["configmaps"]}]},
            "matchConditions": [{"name": "not-exempt", "expression": "!has(object.metadata.labels) || !('exempt' in object.metadata.labels)"}],
            "variables": [{"name": "team", "expression": "namespaceObject.metadata.labels.team"}],
            "validations": [
                {"expression": "request.operation == 'CREATE' && request.namespace == 'reqs' && request.kind.kind == 'ConfigMap' && request.resource.resource == 'configmaps' && request.name == object.metadata.name && request.dryRun == false && request.uid != ''"},
                {"expression": "authorizer.group('').resource('secrets').namespace('reqs').check('get').allowed()"},
                {"expression": "object.data.team == variables.team",
                 "messageExpression": "'team must be ' + variables.team"},
            ],
        }),
    );
    binding(
        &s,
        "request-shape",
        json!({"policyName": "request-shape", "validationActions": ["Deny"], "matchResources": only_ns("reqs")}),
    );
    let path = "/api/v1/namespaces/reqs/configmaps";
    created(
        &s,
        path,
        json!({"metadata": {"name": "ok", "labels": {}}, "data": {"team": "blue"}}),
    );
    let (code, e) = post(
        &s,
        path,
        json!({"metadata": {"name": "bad", "labels": {}}, "data": {"team": "red"}}),
    );
    assert_eq!(code, 422, "{e}");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .ends_with("denied request: team must be blue"),
        "{e}"
    );
    // the match condition exempts
    created(
        &s,
        path,
        json!({"metadata": {"name": "exempt", "labels": {"exempt": "yes"}}, "data": {"team": "red"}}),
    );
}
