//! The kinds issue 20 adds (webhook configurations' validation and defaults, RuntimeClass
//! and its admission plugin, the `resource.k8s.io` DRA kinds): upstream's validation
//! test tables (`pkg/apis/admissionregistration/validation/validation_test.go`,
//! `pkg/apis/node/validation/validation_test.go`, `pkg/apis/resource/validation/*_test.go`,
//! `pkg/util/tolerations/tolerations_test.go`, `plugin/pkg/admission/runtimeclass`),
//! their defaults and their tables.

use super::printer;
use crate::registry::catalog::{Catalog, Phase, ResourceDef};
use crate::registry::node::runtimeclass::admission as rc_admission;
use serde_json::{json, Value};

fn def(group: &str, kind: &str) -> &'static ResourceDef {
    Catalog::builtin()
        .by_kind(group, "v1", kind)
        .unwrap_or_else(|| panic!("{group} {kind} served"))
}

/// The causes of validating `obj` (defaulted first, as a create is) as `field: message`.
fn causes(group: &str, kind: &str, mut obj: Value, old: Option<&Value>) -> Vec<String> {
    let d = def(group, kind);
    d.strategy.default(d, &mut obj, Phase::Create);
    d.strategy
        .validate(d, &obj, old)
        .into_iter()
        .map(|c| format!("{}: {}", c.field, c.message))
        .collect()
}

fn defaulted(group: &str, kind: &str, mut obj: Value) -> Value {
    let d = def(group, kind);
    d.strategy.default(d, &mut obj, Phase::Create);
    obj
}

const ARG: &str = "admissionregistration.k8s.io";

fn hook(extra: Value) -> Value {
    let mut h = json!({
        "name": "webhook.k8s.io",
        "clientConfig": {"url": "https://example.com"},
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    });
    for (k, v) in extra.as_object().expect("object") {
        if v.is_null() {
            h.as_object_mut().expect("object").remove(k);
        } else {
            h[k] = v.clone();
        }
    }
    h
}

fn vwc(hooks: Vec<Value>) -> Value {
    json!({"metadata": {"name": "config"}, "webhooks": hooks})
}

#[test]
fn webhook_configuration_validation_table() {
    // upstream's TestValidateValidatingWebhookConfiguration, the main cases
    let cases: Vec<(Value, Vec<&str>)> = vec![
        (vwc(vec![hook(json!({}))]), vec![]),
        (
            vwc(vec![hook(json!({"name": "k8s.io"}))]),
            vec!["webhooks[0].name: Invalid value: \"k8s.io\": should be a domain with at least three segments separated by dots"],
        ),
        (
            vwc(vec![hook(json!({"name": ""}))]),
            vec!["webhooks[0].name: Required value"],
        ),
        (
            vwc(vec![hook(json!({})), hook(json!({}))]),
            vec!["webhooks[1].name: Duplicate value: \"webhook.k8s.io\""],
        ),
        (
            vwc(vec![hook(json!({"admissionReviewVersions": null}))]),
            vec!["webhooks[0].admissionReviewVersions: Required value: must specify one of v1, v1beta1"],
        ),
        (
            vwc(vec![hook(json!({"admissionReviewVersions": ["v1", "v1"]}))]),
            vec!["webhooks[0].admissionReviewVersions[1]: Invalid value: \"v1\": duplicate version"],
        ),
        (
            vwc(vec![hook(json!({"admissionReviewVersions": ["invalidVersion"]}))]),
            vec![
                "webhooks[0].admissionReviewVersions[0]: Invalid value: \"invalidVersion\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
                "webhooks[0].admissionReviewVersions: Invalid value: [\"invalidVersion\"]: must include at least one of v1, v1beta1",
            ],
        ),
        (
            vwc(vec![hook(json!({"sideEffects": null}))]),
            vec!["webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun"],
        ),
        (
            vwc(vec![hook(json!({"sideEffects": "Some"}))]),
            vec!["webhooks[0].sideEffects: Unsupported value: \"Some\": supported values: \"None\", \"NoneOnDryRun\""],
        ),
        (
            vwc(vec![hook(json!({"timeoutSeconds": 31}))]),
            vec!["webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds"],
        ),
        (
            vwc(vec![hook(json!({"timeoutSeconds": 0}))]),
            vec!["webhooks[0].timeoutSeconds: Invalid value: 0: the timeout value must be between 1 and 30 seconds"],
        ),
        (
            vwc(vec![hook(json!({"failurePolicy": "other"}))]),
            vec!["webhooks[0].failurePolicy: Unsupported value: \"other\": supported values: \"Fail\", \"Ignore\""],
        ),
        (
            vwc(vec![hook(json!({"matchPolicy": "other"}))]),
            vec!["webhooks[0].matchPolicy: Unsupported value: \"other\": supported values: \"Equivalent\", \"Exact\""],
        ),
        (
            vwc(vec![hook(json!({"clientConfig": {}}))]),
            vec!["webhooks[0].clientConfig: Required value: exactly one of url or service is required"],
        ),
        (
            vwc(vec![hook(json!({"clientConfig": {"url": "http://example.com", "service": {"namespace": "ns", "name": "n"}}}))]),
            vec!["webhooks[0].clientConfig: Required value: exactly one of url or service is required"],
        ),
        (
            vwc(vec![hook(json!({"clientConfig": {"url": "http://example.com"}}))]),
            vec!["webhooks[0].clientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme; desired format: https://host[/path]"],
        ),
        (
            vwc(vec![hook(json!({"clientConfig": {"url": "https:///fancy/webhook"}}))]),
            vec!["webhooks[0].clientConfig.url: Invalid value: \"\": host must be specified; desired format: https://host[/path]"],
        ),
        (
            vwc(vec![hook(json!({"clientConfig": {"url": "https://example.com/#bookmark"}}))]),
            vec!["webhooks[0].clientConfig.url: Invalid value: \"bookmark\": fragments are not permitted in the URL"],
        ),
        (
            vwc(vec![hook(json!({"clientConfig": {"url": "https://example.com?arg=value"}}))]),
            vec!["webhooks[0].clientConfig.url: Invalid value: \"arg=value\": query parameters are not permitted in the URL"],
        ),
        (
            vwc(vec![hook(json!({"clientConfig": {"url": "https://user:pass@example.com"}}))]),
            vec!["webhooks[0].clientConfig.url: Invalid value: \"user:pass\": user information is not permitted in the URL"],
        ),
        (
            vwc(vec![hook(json!({"clientConfig": {"service": {"namespace": "ns", "name": "n", "path": "foo/"}}}))]),
            vec!["webhooks[0].clientConfig.service.path: Invalid value: \"foo/\": must start with a '/'"],
        ),
        (
            vwc(vec![hook(json!({"clientConfig": {"service": {"namespace": "ns", "name": "n", "path": "/foo//bar/"}}}))]),
            vec!["webhooks[0].clientConfig.service.path: Invalid value: \"/foo//bar/\": segment[1] may not be empty"],
        ),
        (
            vwc(vec![hook(json!({"clientConfig": {"service": {"namespace": "ns", "name": "n", "path": "/apis/foo.bar/v1alpha1/--bad"}}}))]),
            vec!["webhooks[0].clientConfig.service.path: Invalid value: \"/apis/foo.bar/v1alpha1/--bad\": segment[3]: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"],
        ),
        (
            vwc(vec![hook(json!({"clientConfig": {"service": {"namespace": "", "name": "", "port": 65536}}}))]),
            vec![
                "webhooks[0].clientConfig.service.name: Required value",
                "webhooks[0].clientConfig.service.namespace: Required value",
                "webhooks[0].clientConfig.service.port: Invalid value: 65536: port is not valid: must be between 1 and 65535, inclusive",
            ],
        ),
        (
            vwc(vec![hook(json!({"rules": [{"operations": [], "apiGroups": [], "apiVersions": [], "resources": []}]}))]),
            vec![
                "webhooks[0].rules[0].operations: Required value",
                "webhooks[0].rules[0].apiGroups: Required value",
                "webhooks[0].rules[0].apiVersions: Required value",
                "webhooks[0].rules[0].resources: Required value",
            ],
        ),
        (
            vwc(vec![hook(json!({"rules": [{"operations": ["CREATE", "*"], "apiGroups": ["a", "*"], "apiVersions": ["v1", "*"], "resources": ["pods"], "scope": "Other"}]}))]),
            vec![
                "webhooks[0].rules[0].operations: Invalid value: [\"CREATE\",\"*\"]: if '*' is present, must not specify other operations",
                "webhooks[0].rules[0].apiGroups: Invalid value: [\"a\",\"*\"]: if '*' is present, must not specify other API groups",
                "webhooks[0].rules[0].apiVersions: Invalid value: [\"v1\",\"*\"]: if '*' is present, must not specify other API versions",
                "webhooks[0].rules[0].scope: Unsupported value: \"Other\": supported values: \"*\", \"Cluster\", \"Namespaced\"",
            ],
        ),
        (
            vwc(vec![hook(json!({"rules": [{"operations": ["PATCH"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*/*", "pods"]}]}))]),
            vec![
                "webhooks[0].rules[0].operations[0]: Unsupported value: \"PATCH\": supported values: \"*\", \"CONNECT\", \"CREATE\", \"DELETE\", \"UPDATE\"",
                "webhooks[0].rules[0].resources: Invalid value: [\"*/*\",\"pods\"]: if '*/*' is present, must not specify other resources",
            ],
        ),
        (
            vwc(vec![hook(json!({"rules": [{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["pods/*", "pods/status", "*/scale", "deployments/scale", "*", "pods"]}]}))]),
            vec![
                "webhooks[0].rules[0].resources[1]: Invalid value: \"pods/status\": if 'pods/*' is present, must not specify pods/status",
                "webhooks[0].rules[0].resources[3]: Invalid value: \"deployments/scale\": if '*/scale' is present, must not specify deployments/scale",
                "webhooks[0].rules[0].resources: Invalid value: [\"pods/*\",\"pods/status\",\"*/scale\",\"deployments/scale\",\"*\",\"pods\"]: if '*' is present, must not specify other resources without subresources",
            ],
        ),
        (
            vwc(vec![hook(json!({"namespaceSelector": {"matchExpressions": [{"key": "a", "operator": "Bogus"}]}}))]),
            vec!["webhooks[0].namespaceSelector.matchExpressions[0].operator: Invalid value: \"Bogus\": not a valid selector operator"],
        ),
        (
            vwc(vec![hook(json!({"matchConditions": [{"name": "", "expression": ""}, {"name": "a", "expression": "true"}, {"name": "a", "expression": "1 +"}]}))]),
            vec![
                "webhooks[0].matchConditions[0].expression: Required value",
                "webhooks[0].matchConditions[0].name: Required value",
                "webhooks[0].matchConditions[2].expression: Invalid value: \"1 +\": compilation failed: ERROR: <input>:1:4: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}\n | 1 +\n | ...^",
                "webhooks[0].matchConditions[2].name: Duplicate value: \"a\"",
            ],
        ),
    ];
    for (i, (obj, want)) in cases.into_iter().enumerate() {
        let got = causes(ARG, "ValidatingWebhookConfiguration", obj, None);
        if want.iter().any(|w| w.contains("Syntax error")) {
            // the syntax error text only approximates ANTLR's: compare its start
            assert_eq!(got.len(), want.len(), "case {i}: {got:#?}");
            for (g, w) in got.iter().zip(&want) {
                let cut = w.find("Syntax error").unwrap_or(w.len());
                assert!(g.starts_with(&w[..cut]), "case {i}: {g}");
            }
            continue;
        }
        assert_eq!(got, want, "case {i}");
    }
}

#[test]
fn webhook_configuration_updates_keep_what_was_stored() {
    // a stored configuration with side effects `Some` or unrecognized versions may be
    // updated as long as the stored one had them (upstream's update options)
    let old = vwc(vec![hook(
        json!({"sideEffects": "Some", "admissionReviewVersions": ["v2"]}),
    )]);
    let new = vwc(vec![hook(
        json!({"sideEffects": "Some", "admissionReviewVersions": ["v2"], "timeoutSeconds": 5}),
    )]);
    assert_eq!(
        causes(
            ARG,
            "ValidatingWebhookConfiguration",
            new.clone(),
            Some(&old)
        ),
        Vec::<String>::new()
    );
    // but not on create
    assert_eq!(
        causes(ARG, "ValidatingWebhookConfiguration", new, None).len(),
        2
    );
    // unchanged match conditions are not compiled again
    let bad = vwc(vec![hook(
        json!({"matchConditions": [{"name": "a", "expression": "1 +"}]}),
    )]);
    assert_eq!(
        causes(
            ARG,
            "ValidatingWebhookConfiguration",
            bad.clone(),
            Some(&bad)
        ),
        Vec::<String>::new()
    );
}

#[test]
fn mutating_webhook_reinvocation_policy() {
    let obj = vwc(vec![hook(json!({"reinvocationPolicy": "Always"}))]);
    assert_eq!(
        causes(ARG, "MutatingWebhookConfiguration", obj.clone(), None),
        vec!["webhooks[0].reinvocationPolicy: Unsupported value: \"Always\": supported values: \"IfNeeded\", \"Never\""]
    );
    // not a field of validating webhooks: nothing checks it there
    assert!(causes(ARG, "ValidatingWebhookConfiguration", obj, None).is_empty());
}

#[test]
fn webhook_defaults() {
    let obj = vwc(vec![json!({
        "name": "w.example.com",
        "clientConfig": {"service": {"namespace": "ns", "name": "svc"}},
        "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}],
        "sideEffects": "None", "admissionReviewVersions": ["v1"]
    })]);
    let want_hook = json!({
        "name": "w.example.com",
        "clientConfig": {"service": {"namespace": "ns", "name": "svc", "port": 443}},
        "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"], "scope": "*"}],
        "sideEffects": "None", "admissionReviewVersions": ["v1"],
        "failurePolicy": "Fail", "matchPolicy": "Equivalent",
        "namespaceSelector": {}, "objectSelector": {}, "timeoutSeconds": 10
    });
    let v = defaulted(ARG, "ValidatingWebhookConfiguration", obj.clone());
    assert_eq!(v["webhooks"][0], want_hook);
    let m = defaulted(ARG, "MutatingWebhookConfiguration", obj);
    let mut want_m = want_hook;
    want_m["reinvocationPolicy"] = json!("Never");
    assert_eq!(m["webhooks"][0], want_m);
}

fn now() -> chrono::DateTime<chrono::Utc> {
    apimachinery::time::parse_time("2026-01-10T12:00:00Z").expect("time")
}

#[test]
fn tables() {
    let p = printer(ARG, "ValidatingWebhookConfiguration");
    let names: Vec<&str> = p.columns.iter().map(|c| c.name).collect();
    assert_eq!(names, ["Name", "Webhooks", "Age"]);
    let v = json!({"metadata": {"name": "c", "creationTimestamp": "2026-01-10T11:00:00Z"}, "webhooks": [{}, {}]});
    assert_eq!(
        (p.print)(&v, now()).cells,
        [json!("c"), json!(2), json!("60m")]
    );
    let p = printer(ARG, "MutatingWebhookConfiguration");
    assert_eq!(
        (p.print)(&json!({"metadata": {"name": "m"}}), now()).cells[1],
        json!(0)
    );

    let p = printer("node.k8s.io", "RuntimeClass");
    let names: Vec<&str> = p.columns.iter().map(|c| c.name).collect();
    assert_eq!(names, ["Name", "Handler", "Age"]);
    let v = json!({"metadata": {"name": "gvisor"}, "handler": "runsc"});
    assert_eq!(
        (p.print)(&v, now()).cells[..2],
        [json!("gvisor"), json!("runsc")]
    );

    let p = printer("resource.k8s.io", "ResourceClaim");
    let names: Vec<&str> = p.columns.iter().map(|c| c.name).collect();
    assert_eq!(names, ["Name", "State", "Age"]);
    let state = |v: Value| (p.print)(&v, now()).cells[1].clone();
    assert_eq!(state(json!({"metadata": {"name": "c"}})), json!("pending"));
    assert_eq!(
        state(json!({"metadata": {"name": "c", "deletionTimestamp": "2026-01-10T11:00:00Z"}})),
        json!("deleted")
    );
    assert_eq!(
        state(json!({"metadata": {"name": "c"}, "status": {"allocation": {"devices": {}}}})),
        json!("allocated")
    );
    assert_eq!(
        state(
            json!({"metadata": {"name": "c", "deletionTimestamp": "2026-01-10T11:00:00Z"},
            "status": {"allocation": {}, "reservedFor": [{"resource": "pods", "name": "p", "uid": "u"}]}})
        ),
        json!("deleted,allocated,reserved")
    );
    let p = printer("resource.k8s.io", "ResourceSlice");
    let names: Vec<&str> = p.columns.iter().map(|c| c.name).collect();
    assert_eq!(names, ["Name", "Node", "Driver", "Pool", "Age"]);
    let v = json!({"metadata": {"name": "s"}, "spec": {"nodeName": "n1", "driver": "gpu.example.com", "pool": {"name": "p"}}});
    assert_eq!(
        (p.print)(&v, now()).cells[..4],
        [
            json!("s"),
            json!("n1"),
            json!("gpu.example.com"),
            json!("p")
        ]
    );
    for kind in ["DeviceClass", "ResourceClaimTemplate"] {
        let names: Vec<&str> = printer("resource.k8s.io", kind)
            .columns
            .iter()
            .map(|c| c.name)
            .collect();
        assert_eq!(names, ["Name", "Age"], "{kind}");
    }
}

// ---------------------------------------------------------------------------------
// RuntimeClass

const NODE: &str = "node.k8s.io";

#[test]
fn runtime_class_validation_table() {
    let rc = |extra: Value| {
        let mut v = json!({"metadata": {"name": "rc"}, "handler": "bar"});
        for (k, x) in extra.as_object().expect("object") {
            v[k] = x.clone();
        }
        v
    };
    // upstream TestValidateRuntimeClass (handlers) and TestValidateOverhead/Scheduling
    let label_msg = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
    let cases: Vec<(Value, Vec<String>)> = vec![
        (rc(json!({})), vec![]),
        (rc(json!({"handler": "a-b-c"})), vec![]),
        (rc(json!({"handler": "1"})), vec![]),
        (rc(json!({"handler": ""})), vec![format!("handler: Invalid value: \"\": {label_msg}")]),
        (rc(json!({"handler": "A"})), vec![format!("handler: Invalid value: \"A\": {label_msg}")]),
        (rc(json!({"handler": "foo.bar"})), vec!["handler: Invalid value: \"foo.bar\": must not contain dots".into()]),
        (rc(json!({"overhead": {"podFixed": {"memory": "1000", "cpu": "1"}}})), vec![]),
        (
            rc(json!({"overhead": {"podFixed": {"cpu": "-1"}}})),
            vec!["overhead.limits[cpu]: Invalid value: \"-1\": must be greater than or equal to 0".into()],
        ),
        (
            rc(json!({"overhead": {"podFixed": {"foo": "1"}}})),
            vec!["overhead.limits[foo]: Invalid value: \"foo\": must be a standard resource for containers".into()],
        ),
        (
            rc(json!({"scheduling": {"nodeSelector": {"valid": "yes"}, "tolerations": [
                {"key": "valid", "operator": "Exists", "effect": "NoSchedule"}]}})),
            vec![],
        ),
        (
            rc(json!({"scheduling": {"nodeSelector": {"not a valid key!!!": "nope"}}})),
            vec!["scheduling.nodeSelector: Invalid value: \"not a valid key!!!\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')".into()],
        ),
        (
            rc(json!({"scheduling": {"tolerations": [
                {"key": "", "operator": "Equal", "value": "x"},
                {"key": "k", "operator": "Exists", "value": "x"},
                {"key": "k", "operator": "Lt", "tolerationSeconds": 5, "effect": "NoSchedule"},
                {"key": "k", "effect": "Bogus"}]}})),
            vec![
                "scheduling.tolerations[0].operator: Invalid value: \"Equal\": operator must be Exists when `key` is empty, which means \"match all values and all keys\"".into(),
                "scheduling.tolerations[1].operator: Invalid value: {\"key\":\"k\",\"operator\":\"Exists\",\"value\":\"x\"}: value must be empty when `operator` is 'Exists'".into(),
                "scheduling.tolerations[2].effect: Invalid value: \"NoSchedule\": effect must be 'NoExecute' when `tolerationSeconds` is set".into(),
                "scheduling.tolerations[2].operator: Unsupported value: \"Lt\": supported values: \"Equal\", \"Exists\"".into(),
                "scheduling.tolerations[3].effect: Unsupported value: \"Bogus\": supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\"".into(),
            ],
        ),
    ];
    for (i, (obj, want)) in cases.into_iter().enumerate() {
        assert_eq!(causes(NODE, "RuntimeClass", obj, None), want, "case {i}");
    }
    // updates: only the handler is immutable
    let old = rc(json!({}));
    assert!(causes(
        NODE,
        "RuntimeClass",
        rc(json!({"overhead": {"podFixed": {"cpu": "1"}}})),
        Some(&old)
    )
    .is_empty());
    assert_eq!(
        causes(
            NODE,
            "RuntimeClass",
            rc(json!({"handler": "other"})),
            Some(&old)
        ),
        vec!["handler: Invalid value: \"other\": field is immutable"]
    );
}

#[test]
fn merge_tolerations_table() {
    // upstream pkg/util/tolerations TestMergeTolerations (a selection)
    let t = |k: &str, op: &str, v: &str, e: &str| {
        let mut x = json!({"key": k, "operator": op, "effect": e});
        if !v.is_empty() {
            x["value"] = json!(v);
        }
        x
    };
    let all = json!({"operator": "Exists"});
    let eq_a = t("foo", "Equal", "a", "NoSchedule");
    let eq_b = t("foo", "Equal", "b", "NoSchedule");
    let exists_foo = t("foo", "Exists", "", "NoSchedule");
    let exists_any_effect = t("foo", "Exists", "", "");
    let cases: Vec<(Vec<Value>, Vec<Value>, Vec<Value>)> = vec![
        (vec![], vec![], vec![]),
        (vec![eq_a.clone()], vec![], vec![eq_a.clone()]),
        (vec![], vec![eq_a.clone()], vec![eq_a.clone()]),
        (vec![eq_a.clone()], vec![eq_a.clone()], vec![eq_a.clone()]),
        (
            vec![eq_a.clone()],
            vec![eq_b.clone()],
            vec![eq_a.clone(), eq_b.clone()],
        ),
        (
            vec![eq_a.clone(), eq_b.clone()],
            vec![exists_foo.clone()],
            vec![exists_foo.clone()],
        ),
        (
            vec![exists_foo.clone()],
            vec![exists_any_effect.clone()],
            vec![exists_any_effect.clone()],
        ),
        (
            vec![eq_a.clone(), exists_foo.clone()],
            vec![all.clone()],
            vec![all.clone()],
        ),
    ];
    for (i, (a, b, want)) in cases.into_iter().enumerate() {
        assert_eq!(rc_admission::merge_tolerations(&a, &b), want, "case {i}");
    }
    // NoExecute: a shorter toleration time is covered by a longer one
    let long =
        json!({"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60});
    let short =
        json!({"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 10});
    assert_eq!(
        rc_admission::merge_tolerations(&[short], std::slice::from_ref(&long)),
        vec![long]
    );
}

#[test]
fn runtime_class_admission() {
    let class = json!({"metadata": {"name": "kata"}, "handler": "kata",
        "overhead": {"podFixed": {"cpu": "250m", "memory": "120Mi"}},
        "scheduling": {"nodeSelector": {"runtime": "kata"},
            "tolerations": [{"key": "kata", "operator": "Exists", "effect": "NoSchedule"}]}});
    let pod = |spec: Value| json!({"metadata": {"name": "p"}, "spec": spec});

    // overhead, node selector and tolerations come from the class
    let mut p = pod(
        json!({"runtimeClassName": "kata", "nodeSelector": {"zone": "a"},
        "tolerations": [{"key": "x", "operator": "Exists"}]}),
    );
    rc_admission::mutate(&mut p, Some(&class)).expect("admitted");
    assert_eq!(
        p["spec"]["overhead"],
        json!({"cpu": "250m", "memory": "120Mi"})
    );
    assert_eq!(
        p["spec"]["nodeSelector"],
        json!({"zone": "a", "runtime": "kata"})
    );
    assert_eq!(
        p["spec"]["tolerations"],
        json!([{"key": "x", "operator": "Exists"}, {"key": "kata", "operator": "Exists", "effect": "NoSchedule"}])
    );
    assert_eq!(rc_admission::validate(&p, Some(&class)), Ok(()));

    // the same overhead in another notation is accepted
    let mut same =
        pod(json!({"runtimeClassName": "kata", "overhead": {"cpu": "0.25", "memory": "120Mi"}}));
    assert_eq!(rc_admission::mutate(&mut same, Some(&class)), Ok(()));

    // a different overhead is refused
    let mut other = pod(json!({"runtimeClassName": "kata", "overhead": {"cpu": "1"}}));
    assert_eq!(
        rc_admission::mutate(&mut other, Some(&class)),
        Err("pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead".into())
    );
    // a conflicting node selector is refused
    let mut conflict =
        pod(json!({"runtimeClassName": "kata", "nodeSelector": {"runtime": "runc"}}));
    assert_eq!(
        rc_admission::mutate(&mut conflict, Some(&class)),
        Err("conflict: runtimeClass.scheduling.nodeSelector[runtime] = kata; pod.spec.nodeSelector[runtime] = runc".into())
    );
    // a missing class is refused
    let mut missing = pod(json!({"runtimeClassName": "gone"}));
    assert_eq!(
        rc_admission::mutate(&mut missing, None),
        Err("pod rejected: RuntimeClass \"gone\" not found".into())
    );
    // an overhead without a class is refused at validation
    let no_class = pod(json!({"overhead": {"cpu": "1"}}));
    assert_eq!(
        rc_admission::validate(&no_class, None),
        Err(
            "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead"
                .into()
        )
    );
    // a class without overhead or scheduling changes nothing
    let plain = json!({"metadata": {"name": "runc"}, "handler": "runc"});
    let mut p = pod(json!({"runtimeClassName": "runc"}));
    let before = p.clone();
    rc_admission::mutate(&mut p, Some(&plain)).expect("admitted");
    assert_eq!(p, before);
    assert_eq!(rc_admission::validate(&p, Some(&plain)), Ok(()));
}

// ---------------------------------------------------------------------------------
// resource.k8s.io

const DRA: &str = "resource.k8s.io";

fn claim(requests: Value) -> Value {
    json!({"metadata": {"name": "claim", "namespace": "default"}, "spec": {"devices": {"requests": requests}}})
}

#[test]
fn resource_claim_defaults() {
    let v = defaulted(
        DRA,
        "ResourceClaim",
        claim(json!([
            {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com",
                "tolerations": [{"key": "k", "effect": "NoSchedule"}]}},
            {"name": "any", "firstAvailable": [{"name": "a", "deviceClassName": "c", "allocationMode": "All"}]}
        ])),
    );
    assert_eq!(
        v["spec"]["devices"]["requests"][0]["exactly"],
        json!({"deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": 1,
            "tolerations": [{"key": "k", "effect": "NoSchedule", "operator": "Equal"}]})
    );
    assert_eq!(
        v["spec"]["devices"]["requests"][1]["firstAvailable"][0],
        json!({"name": "a", "deviceClassName": "c", "allocationMode": "All"})
    );
    let t = defaulted(
        DRA,
        "ResourceClaimTemplate",
        json!({"metadata": {"name": "t", "namespace": "d"},
        "spec": {"spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "c"}}]}}}}),
    );
    assert_eq!(
        t["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"],
        json!(1)
    );
}

#[test]
fn resource_claim_validation_table() {
    let cases: Vec<(Value, Vec<&str>)> = vec![
        (claim(json!([{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}])), vec![]),
        (claim(json!([])), vec![]),
        (
            claim(json!([{"name": "gpu"}])),
            vec!["spec.devices.requests[0]: Required value: exactly one of `exactly` or `firstAvailable` is required"],
        ),
        (
            claim(json!([{"name": "gpu", "exactly": {"deviceClassName": "c"}, "firstAvailable": [{"name": "a", "deviceClassName": "c"}]}])),
            vec!["spec.devices.requests[0]: Invalid value: \"null\": exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set"],
        ),
        (
            claim(json!([{"name": "Bad_Name", "exactly": {"deviceClassName": ""}}])),
            vec![
                "spec.devices.requests[0].name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
                "spec.devices.requests[0].exactly.deviceClassName: Required value",
            ],
        ),
        (
            claim(json!([{"name": "gpu", "exactly": {"deviceClassName": "c", "allocationMode": "All", "count": 2}}])),
            vec!["spec.devices.requests[0].exactly.count: Invalid value: 2: must not be specified when allocationMode is 'All'"],
        ),
        (
            claim(json!([{"name": "gpu", "exactly": {"deviceClassName": "c", "allocationMode": "ExactCount", "count": -1}}])),
            vec!["spec.devices.requests[0].exactly.count: Invalid value: -1: must be greater than zero"],
        ),
        (
            claim(json!([{"name": "gpu", "exactly": {"deviceClassName": "c", "allocationMode": "Some"}}])),
            vec!["spec.devices.requests[0].exactly.allocationMode: Unsupported value: \"Some\": supported values: \"All\", \"ExactCount\""],
        ),
        (
            claim(json!([{"name": "gpu", "exactly": {"deviceClassName": "c", "selectors": [{}, {"cel": {"expression": "device.driver == "}}]}}])),
            vec![
                "spec.devices.requests[0].exactly.selectors[0].cel: Required value",
                "spec.devices.requests[0].exactly.selectors[1].cel.expression: Invalid value: \"device.driver == \": compilation failed: ERROR:",
            ],
        ),
        (
            claim(json!([{"name": "gpu", "exactly": {"deviceClassName": "c"}}, {"name": "gpu", "exactly": {"deviceClassName": "c"}}])),
            vec!["spec.devices.requests[1]: Duplicate value: {\"name\":\"gpu\",\"exactly\":{\"deviceClassName\":\"c\",\"allocationMode\":\"ExactCount\",\"count\":1}}"],
        ),
    ];
    for (i, (obj, want)) in cases.into_iter().enumerate() {
        let got = causes(DRA, "ResourceClaim", obj, None);
        assert_eq!(got.len(), want.len(), "case {i}: {got:#?}");
        for (g, w) in got.iter().zip(&want) {
            assert!(g.starts_with(w), "case {i}: {g} vs {w}");
        }
    }
    // constraints and config name the claim's requests
    let mut c = claim(
        json!([{"name": "gpu", "firstAvailable": [{"name": "big", "deviceClassName": "c"}]}]),
    );
    c["spec"]["devices"]["constraints"] = json!([{"requests": ["gpu/big", "nic"], "matchAttribute": "dra.example.com/numa"}, {"requests": ["gpu"]}]);
    c["spec"]["devices"]["config"] = json!([{"requests": ["gpu/small"], "opaque": {"driver": "dra.example.com", "parameters": {"a": 1}}}, {"requests": []}]);
    assert_eq!(
        causes(DRA, "ResourceClaim", c, None),
        vec![
            "spec.devices.constraints[0].requests[1]: Invalid value: \"nic\": must be the name of a request in the claim or the name of a request and a subrequest separated by '/'",
            "spec.devices.constraints[1].matchAttribute: Required value",
            "spec.devices.config[0].requests[0]: Invalid value: \"gpu/small\": must be the name of a request in the claim or the name of a request and a subrequest separated by '/'",
            "spec.devices.config[1].opaque: Required value",
        ]
    );
    // the spec is immutable
    let old = defaulted(
        DRA,
        "ResourceClaim",
        claim(json!([{"name": "gpu", "exactly": {"deviceClassName": "c"}}])),
    );
    let new = claim(json!([{"name": "gpu", "exactly": {"deviceClassName": "d"}}]));
    let got = causes(DRA, "ResourceClaim", new, Some(&old));
    assert_eq!(got.len(), 1);
    assert!(
        got[0].starts_with("spec: Invalid value: ") && got[0].ends_with(": field is immutable"),
        "{got:?}"
    );
}

#[test]
fn resource_claim_status_updates() {
    let d = def(DRA, "ResourceClaim");
    let base = defaulted(
        DRA,
        "ResourceClaim",
        claim(json!([{"name": "gpu", "exactly": {"deviceClassName": "c"}}])),
    );
    let status_causes = |new: &Value, old: &Value| -> Vec<String> {
        d.strategy
            .validate_subresource_update(d, crate::registry::catalog::Subresource::Status, new, old)
            .into_iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    };
    let allocation = json!({"devices": {"results": [{"request": "gpu", "driver": "dra.example.com", "pool": "node-1", "device": "gpu-0"}]}});
    let mut allocated = base.clone();
    allocated["status"] = json!({"allocation": allocation});
    assert!(status_causes(&allocated, &base).is_empty());

    // reservations need an allocation
    let mut reserved = base.clone();
    reserved["status"] = json!({"reservedFor": [{"resource": "pods", "name": "p", "uid": "1"}]});
    assert_eq!(
        status_causes(&reserved, &base),
        vec!["status.reservedFor: Forbidden: may not be specified when `allocated` is not set"]
    );
    // an allocation is immutable once set
    let mut changed = allocated.clone();
    changed["status"]["allocation"]["devices"]["results"][0]["device"] = json!("gpu-1");
    let got = status_causes(&changed, &allocated);
    assert_eq!(got.len(), 1);
    assert!(
        got[0].starts_with("status.allocation: Invalid value: ")
            && got[0].ends_with("field is immutable")
    );
    // a new allocation names the claim's requests
    let mut wrong = base.clone();
    wrong["status"] = json!({"allocation": {"devices": {"results": [{"request": "nic", "driver": "dra.example.com", "pool": "p", "device": "d"}]}}});
    assert_eq!(
        status_causes(&wrong, &base),
        vec!["status.allocation.devices.results[0].request: Invalid value: \"nic\": must be the name of a request in the claim or the name of a request and a subrequest separated by '/'"]
    );
}

#[test]
fn device_class_validation() {
    let dc = |spec: Value| json!({"metadata": {"name": "gpu.example.com"}, "spec": spec});
    assert!(causes(
        DRA,
        "DeviceClass",
        dc(json!({"selectors": [{"cel": {"expression": "device.driver == \"gpu.example.com\""}}]})),
        None
    )
    .is_empty());
    assert_eq!(
        causes(DRA, "DeviceClass", dc(json!({"selectors": [{}], "config": [{"opaque": {"driver": "", "parameters": {}}}], "extendedResourceName": "cpu"})), None),
        vec![
            "spec.selectors[0].cel: Required value",
            "spec.config[0].opaque.driver: Required value",
            "spec.extendedResourceName: Invalid value: \"cpu\": must be a valid extended resource name",
        ]
    );
    assert!(causes(
        DRA,
        "DeviceClass",
        dc(json!({"extendedResourceName": "example.com/gpu"})),
        None
    )
    .is_empty());
}

fn slice(spec: Value) -> Value {
    json!({"metadata": {"name": "slice"}, "spec": spec})
}

#[test]
fn resource_slice_validation_table() {
    let good = json!({"driver": "dra.example.com", "pool": {"name": "pool", "resourceSliceCount": 1}, "nodeName": "worker",
        "devices": [{"name": "gpu-0", "attributes": {"model": {"string": "a100"}, "dra.example.com/numa": {"int": 1}}, "capacity": {"memory": {"value": "40Gi"}}}]});
    assert_eq!(
        causes(DRA, "ResourceSlice", slice(good.clone()), None),
        Vec::<String>::new()
    );
    let cases: Vec<(Value, Vec<&str>)> = vec![
        (
            json!({"pool": {"name": "", "resourceSliceCount": 0, "generation": -1}}),
            vec![
                "spec.driver: Required value",
                "spec.pool.name: Required value",
                "spec.pool.resourceSliceCount: Invalid value: 0: must be greater than zero",
                "spec.pool.generation: Invalid value: -1: must be greater than or equal to zero",
                "spec: Required value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required",
            ],
        ),
        (
            json!({"driver": "dra.example.com", "pool": {"name": "p", "resourceSliceCount": 1}, "nodeName": "n", "allNodes": true}),
            vec!["spec: Invalid value: \"{`nodeName`, `allNodes`}\": exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required, but multiple fields are set"],
        ),
        (
            json!({"driver": "dra.example.com", "pool": {"name": "p", "resourceSliceCount": 1}, "allNodes": false, "nodeName": ""}),
            vec![
                "spec.nodeName: Invalid value: \"\": must be either unset or set to a non-empty string",
                "spec.allNodes: Invalid value: false: must be either unset or set to true",
                "spec: Required value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required",
            ],
        ),
        (
            json!({"driver": "dra.example.com", "pool": {"name": "p", "resourceSliceCount": 1}, "allNodes": true,
                "devices": [{"name": "d"}, {"name": "d"}, {"name": "e", "attributes": {"": {"int": 1}, "x": {"bool": true, "int": 1}}}]}),
            vec![
                "spec.devices[1]: Duplicate value: {\"name\":\"d\"}",
                "spec.devices[2].attributes[]: Required value: name required",
                "spec.devices[2].attributes[x]: Invalid value: {\"int\":1,\"bool\":true}: exactly one value must be specified",
            ],
        ),
    ];
    for (i, (spec, want)) in cases.into_iter().enumerate() {
        assert_eq!(
            causes(DRA, "ResourceSlice", slice(spec), None),
            want,
            "case {i}"
        );
    }
    let devices: Vec<Value> = (0..129).map(|i| json!({"name": format!("d{i}")})).collect();
    let mut many = good.clone();
    many["devices"] = json!(devices);
    assert_eq!(
        causes(DRA, "ResourceSlice", slice(many), None),
        vec!["spec.devices: Too many: 129: must have at most 128 items"]
    );
    // pool name, driver and node are immutable
    let old = slice(good.clone());
    let mut moved = good;
    moved["driver"] = json!("other.example.com");
    moved["nodeName"] = json!("elsewhere");
    assert_eq!(
        causes(DRA, "ResourceSlice", slice(moved), Some(&old)),
        vec![
            "spec.driver: Invalid value: \"other.example.com\": field is immutable",
            "spec.nodeName: Invalid value: \"elsewhere\": field is immutable",
        ]
    );
    assert_eq!(
        def(DRA, "ResourceSlice").strategy.selectable_fields(),
        ["spec.nodeName", "spec.driver"]
    );
}

#[test]
fn device_attributes_and_per_device_nodes() {
    let base = |devices: Value, per_device: bool| {
        let mut spec = json!({"driver": "dra.example.com", "pool": {"name": "p", "resourceSliceCount": 1}, "devices": devices});
        if per_device {
            spec["perDeviceNodeSelection"] = json!(true);
        } else {
            spec["allNodes"] = json!(true);
        }
        slice(spec)
    };
    let long = "x".repeat(65);
    assert_eq!(
        causes(DRA, "ResourceSlice", base(json!([{"name": "d", "attributes": {
            "empty": {}, "long": {"string": long}, "ver": {"version": "1.02.3"}, "ok": {"version": "1.2.3-rc.1+b.5"},
            "list": {"ints": []}}}]), false), None),
        vec![
            "spec.devices[0].attributes[empty]: Invalid value: \"\": exactly one value must be specified",
            "spec.devices[0].attributes[list].ints: Invalid value: []: must not be empty if specified",
            "spec.devices[0].attributes[long].string: Too long: may not be more than 64 bytes",
            "spec.devices[0].attributes[ver].version: Invalid value: \"1.02.3\": must be a string compatible with semver.org spec 2.0.0",
        ]
    );
    assert_eq!(
        causes(DRA, "ResourceSlice", base(json!([{"name": "d", "nodeName": "n",
            "capacity": {"mem": {"value": "1Gi", "requestPolicy": {}}}}]), false), None),
        vec![
            "spec.devices[0].capacity[mem].requestPolicy: Forbidden: allowMultipleAllocations must be true",
            "spec.devices[0]: Invalid value: \"null\": `nodeName`, `nodeSelector` and `allNodes` can only be set if `perDeviceNodeSelection` is set to true in the ResourceSlice spec",
        ]
    );
    assert_eq!(
        causes(DRA, "ResourceSlice", base(json!([{"name": "a", "nodeName": "n"}, {"name": "b"}, {"name": "c", "nodeName": "n", "allNodes": true}]), true), None),
        vec![
            "spec.devices[1]: Required value: exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when `perDeviceNodeSelection` is set to true in the ResourceSlice spec",
            "spec.devices[2]: Invalid value: \"{`nodeName`, `allNodes`}\": exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when `perDeviceNodeSelection` is set to true in the ResourceSlice spec",
        ]
    );
    for (v, ok) in [
        ("1.2.3", true),
        ("0.0.0", true),
        ("1.2.3-alpha.0.x-y+build.01", true),
        ("1.2", false),
        ("01.2.3", false),
        ("1.2.3-01", false),
        ("1.2.3+", false),
        ("v1.2.3", false),
    ] {
        assert_eq!(
            crate::registry::resource::validation::is_semver(v),
            ok,
            "{v}"
        );
    }
}

#[test]
fn device_taints_and_tolerations() {
    let s = slice(
        json!({"driver": "dra.example.com", "pool": {"name": "p", "resourceSliceCount": 1}, "allNodes": true,
        "devices": [{"name": "d", "taints": [
            {"key": "ok.example.com/k", "value": "v", "effect": "NoExecute"},
            {"key": "", "effect": ""},
            {"key": "k", "value": "not ok", "effect": "Later"}]}]}),
    );
    assert_eq!(
        causes(DRA, "ResourceSlice", s.clone(), None),
        vec![
            "spec.devices[0].taints[1].key: Invalid value: \"\": name part must be non-empty",
            "spec.devices[0].taints[1].key: Invalid value: \"\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
            "spec.devices[0].taints[1].effect: Required value",
            "spec.devices[0].taints[2].value: Invalid value: \"not ok\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
            "spec.devices[0].taints[2].effect: Unsupported value: \"Later\": supported values: \"NoExecute\", \"NoSchedule\", \"None\"",
        ]
    );
    // unchanged taints of a stored slice are not checked again
    let mut relabelled = s.clone();
    relabelled["metadata"]["labels"] = json!({"a": "b"});
    assert!(causes(DRA, "ResourceSlice", relabelled, Some(&s)).is_empty());

    let c = claim(
        json!([{"name": "gpu", "exactly": {"deviceClassName": "c", "tolerations": [
        {"key": "k", "operator": "Exists", "value": "v"},
        {"key": "k", "value": "v", "effect": "None"},
        {"key": "k", "operator": "Lt", "effect": "Sometimes"}]}}]),
    );
    assert_eq!(
        causes(DRA, "ResourceClaim", c, None),
        vec![
            "spec.devices.requests[0].exactly.tolerations[0].value: Invalid value: \"v\": must be empty for operator `Exists`",
            "spec.devices.requests[0].exactly.tolerations[2].operator: Unsupported value: \"Lt\": supported values: \"Equal\", \"Exists\"",
            "spec.devices.requests[0].exactly.tolerations[2].effect: Unsupported value: \"Sometimes\": supported values: \"NoExecute\", \"NoSchedule\", \"None\"",
        ]
    );
}

#[test]
fn resource_claim_template_validation() {
    let t = |meta: Value, requests: Value| {
        json!({"metadata": {"name": "t", "namespace": "d"},
            "spec": {"metadata": meta, "spec": {"devices": {"requests": requests}}}})
    };
    let ok = json!([{"name": "gpu", "exactly": {"deviceClassName": "c"}}]);
    assert!(causes(
        DRA,
        "ResourceClaimTemplate",
        t(json!({"labels": {"a": "b"}}), ok.clone()),
        None
    )
    .is_empty());
    assert_eq!(
        causes(DRA, "ResourceClaimTemplate", t(json!({"labels": {"a": "b c"}, "annotations": {"bad key!": "v"}}), json!([{"name": "gpu"}])), None),
        vec![
            "spec.metadata.labels: Invalid value: \"b c\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
            "spec.metadata.annotations: Invalid value: \"bad key!\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
            "spec.spec.devices.requests[0]: Required value: exactly one of `exactly` or `firstAvailable` is required",
        ]
    );
    // the spec is immutable
    let old = defaulted(DRA, "ResourceClaimTemplate", t(json!({}), ok.clone()));
    let mut new = old.clone();
    new["spec"]["metadata"] = json!({"labels": {"x": "y"}});
    let got = causes(DRA, "ResourceClaimTemplate", new, Some(&old));
    assert_eq!(got.len(), 1);
    assert!(got[0].starts_with("spec: Invalid value: ") && got[0].ends_with("field is immutable"));
    let mut relabelled = old.clone();
    relabelled["metadata"]["labels"] = json!({"x": "y"});
    assert!(causes(DRA, "ResourceClaimTemplate", relabelled, Some(&old)).is_empty());
}
