//! Upstream's validation test tables (`pkg/apis/flowcontrol/validation/
//! validation_test.go`: `TestFlowSchemaValidation`,
//! `TestPriorityLevelConfigurationValidation`, the status tests), on JSON objects. As
//! upstream's `assert.ElementsMatch`, the order of the errors is not compared.

use serde_json::{json, Value};

use crate::registry::catalog::{Catalog, ResourceDef};

/// Field errors: (field, message).
type Errors = Vec<(String, String)>;
/// One case of a table: name, object, expected errors.
type Case = (&'static str, Value, Errors);

fn def(plural: &str) -> &'static ResourceDef {
    Catalog::builtin()
        .lookup("flowcontrol.apiserver.k8s.io", "v1", plural)
        .expect("served")
}

fn errors(plural: &str, obj: &Value) -> Vec<(String, String)> {
    let mut got: Vec<(String, String)> = def(plural)
        .strategy
        .validate(def(plural), obj, None)
        .into_iter()
        .map(|c| (c.field, c.message))
        .collect();
    got.sort();
    got
}

fn want(list: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut w: Vec<(String, String)> = list
        .iter()
        .map(|(f, m)| (f.to_string(), m.to_string()))
        .collect();
    w.sort();
    w
}

fn fs(name: &str, spec: Value) -> Value {
    json!({"metadata": {"name": name}, "spec": spec})
}

fn user_rule(extra: Value) -> Value {
    let mut r = json!({"subjects": [{"kind": "User", "user": {"name": "noxu"}}]});
    if let (Some(r), Some(x)) = (r.as_object_mut(), extra.as_object()) {
        r.extend(x.clone());
    }
    r
}

fn spec(rule: Value) -> Value {
    json!({"matchingPrecedence": 50, "priorityLevelConfiguration": {"name": "system-bar"}, "rules": [rule]})
}

fn all_resources() -> Value {
    json!([{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "namespaces": ["*"]}])
}

#[test]
fn flow_schema_validation() {
    let r0 = "spec.rules[0]";
    let s0 = "spec.rules[0].subjects[0]";
    let rr0 = "spec.rules[0].resourceRules[0]";
    let everything = json!({
        "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "clusterScope": true, "namespaces": ["*"]}],
        "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
    });
    let with_subjects = |subjects: Value| {
        let mut r = everything.clone();
        r["subjects"] = subjects;
        r
    };
    let mut bad_exempt =
        with_subjects(json!([{"kind": "Group", "group": {"name": "system:masters"}}]));
    bad_exempt["nonResourceRules"][0]["nonResourceURLs"] = json!(["/"]);
    let cases: Vec<Case> = vec![
        (
            "missing both resource and non-resource policy-rule should fail",
            fs("system-foo", spec(user_rule(json!({})))),
            want(&[(r0, "Required value: at least one of resourceRules and nonResourceRules has to be non-empty")]),
        ),
        (
            "normal flow-schema w/ * verbs/apiGroups/resources should work",
            fs("system-foo", spec(json!({"subjects": [{"kind": "Group", "group": {"name": "noxu"}}], "resourceRules": all_resources()}))),
            vec![],
        ),
        (
            "malformed Subject union in ServiceAccount case",
            fs("system-foo", spec(json!({"subjects": [{"kind": "ServiceAccount", "user": {"name": "fred"}, "group": {"name": "fred"}}],
                                          "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]}))),
            want(&[
                (&format!("{s0}.serviceAccount"), "Required value: serviceAccount is required when subject kind is 'ServiceAccount'"),
                (&format!("{s0}.user"), "Forbidden: user is forbidden when subject kind is not 'User'"),
                (&format!("{s0}.group"), "Forbidden: group is forbidden when subject kind is not 'Group'"),
            ]),
        ),
        (
            "Subject union malformed in User case",
            fs("system-foo", spec(json!({"subjects": [{"kind": "User", "group": {"name": "fred"}, "serviceAccount": {"namespace": "s", "name": "n"}}],
                                          "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]}))),
            want(&[
                (&format!("{s0}.serviceAccount"), "Forbidden: serviceAccount is forbidden when subject kind is not 'ServiceAccount'"),
                (&format!("{s0}.user"), "Required value: user is required when subject kind is 'User'"),
                (&format!("{s0}.group"), "Forbidden: group is forbidden when subject kind is not 'Group'"),
            ]),
        ),
        (
            "malformed Subject union in Group case",
            fs("system-foo", spec(json!({"subjects": [{"kind": "Group", "user": {"name": "fred"}, "serviceAccount": {"namespace": "s", "name": "n"}}],
                                          "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]}))),
            want(&[
                (&format!("{s0}.serviceAccount"), "Forbidden: serviceAccount is forbidden when subject kind is not 'ServiceAccount'"),
                (&format!("{s0}.user"), "Forbidden: user is forbidden when subject kind is not 'User'"),
                (&format!("{s0}.group"), "Required value: group is required when subject kind is 'Group'"),
            ]),
        ),
        (
            "exempt flow-schema should work",
            fs("exempt", json!({"matchingPrecedence": 1, "priorityLevelConfiguration": {"name": "exempt"},
                                "rules": [with_subjects(json!([{"kind": "Group", "group": {"name": "system:masters"}}]))]})),
            vec![],
        ),
        (
            "bad exempt flow-schema should fail",
            fs("exempt", json!({"matchingPrecedence": 1, "priorityLevelConfiguration": {"name": "exempt"}, "rules": [bad_exempt]})),
            vec![],
        ),
        (
            "catch-all flow-schema should work",
            fs("catch-all", json!({"matchingPrecedence": 10000, "priorityLevelConfiguration": {"name": "catch-all"},
                                   "distinguisherMethod": {"type": "ByUser"},
                                   "rules": [with_subjects(json!([{"kind": "Group", "group": {"name": "system:unauthenticated"}},
                                                                  {"kind": "Group", "group": {"name": "system:authenticated"}}]))]})),
            vec![],
        ),
        (
            "non-exempt flow-schema with matchingPrecedence==1 should fail",
            fs("fred", json!({"matchingPrecedence": 1, "priorityLevelConfiguration": {"name": "exempt"},
                              "rules": [{"subjects": [{"kind": "Group", "group": {"name": "gorp"}}],
                                         "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]}]})),
            want(&[("spec.matchingPrecedence", "Invalid value: 1: only the schema named 'exempt' may have matchingPrecedence 1")]),
        ),
        (
            "flow-schema mixes * verbs/apiGroups/resources should fail",
            fs("system-foo", spec(user_rule(json!({"resourceRules": [{"verbs": ["*", "create"], "apiGroups": ["*", "tak"], "resources": ["*", "tok"], "namespaces": ["*"]}]})))),
            want(&[
                (&format!("{rr0}.verbs"), "Invalid value: [\"*\",\"create\"]: if '*' is present, must not specify other verbs"),
                (&format!("{rr0}.apiGroups"), "Invalid value: [\"*\",\"tak\"]: if '*' is present, must not specify other api groups"),
                (&format!("{rr0}.resources"), "Invalid value: [\"*\",\"tok\"]: if '*' is present, must not specify other resources"),
            ]),
        ),
        (
            "flow-schema has both resource rules and non-resource rules should work",
            fs("system-foo", spec(user_rule(json!({"resourceRules": all_resources(), "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["/apis/*"]}]})))),
            vec![],
        ),
        (
            "flow-schema mixes * non-resource URLs should fail",
            fs("system-foo", spec(user_rule(json!({"nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*", "tik"]}]})))),
            want(&[("spec.rules[0].nonResourceRules[0].nonResourceURLs", "Invalid value: [\"*\",\"tik\"]: if '*' is present, must not specify other non-resource URLs")]),
        ),
        (
            "invalid subject kind should fail",
            fs("system-foo", spec(json!({"subjects": [{"kind": "FooKind"}], "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]}))),
            want(&[(&format!("{s0}.kind"), "Unsupported value: \"FooKind\": supported values: \"Group\", \"ServiceAccount\", \"User\"")]),
        ),
        (
            "flow-schema w/ invalid verb should fail",
            fs("system-foo", spec(user_rule(json!({"resourceRules": [{"verbs": ["feed"], "apiGroups": ["*"], "resources": ["*"], "namespaces": ["*"]}]})))),
            want(&[(&format!("{rr0}.verbs"), "Unsupported value: [\"feed\"]: supported values: \"create\", \"delete\", \"deletecollection\", \"get\", \"list\", \"patch\", \"proxy\", \"update\", \"watch\"")]),
        ),
        (
            "flow-schema w/ invalid priority level configuration name should fail",
            fs("system-foo", json!({"matchingPrecedence": 50, "priorityLevelConfiguration": {"name": "system+++$$"},
                                    "rules": [user_rule(json!({"resourceRules": all_resources()}))]})),
            want(&[("spec.priorityLevelConfiguration.name", "Invalid value: \"system+++$$\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")]),
        ),
        (
            "flow-schema w/ service-account kind missing namespace should fail",
            fs("system-foo", spec(json!({"subjects": [{"kind": "ServiceAccount", "serviceAccount": {"name": "noxu"}}], "resourceRules": all_resources()}))),
            want(&[(&format!("{s0}.serviceAccount.namespace"), "Required value: must specify namespace for service account")]),
        ),
        (
            "flow-schema missing kind should fail",
            fs("system-foo", spec(json!({"subjects": [{"kind": ""}], "resourceRules": all_resources()}))),
            want(&[(&format!("{s0}.kind"), "Unsupported value: \"\": supported values: \"Group\", \"ServiceAccount\", \"User\"")]),
        ),
        (
            "Omitted ResourceRule.Namespaces should fail",
            fs("system-foo", spec(user_rule(json!({"resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}]})))),
            want(&[(&format!("{rr0}.namespaces"), "Required value: resource rules that are not cluster scoped must supply at least one namespace")]),
        ),
        (
            "ClusterScope is allowed, with no Namespaces",
            fs("system-foo", spec(user_rule(json!({"resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "clusterScope": true}]})))),
            vec![],
        ),
        (
            "ClusterScope is allowed with NamespaceEvery",
            fs("system-foo", spec(user_rule(json!({"resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "clusterScope": true, "namespaces": ["*"]}]})))),
            vec![],
        ),
        (
            "NamespaceEvery may not be combined with particulars",
            fs("system-foo", spec(user_rule(json!({"resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "namespaces": ["foo", "*"]}]})))),
            want(&[(&format!("{rr0}.namespaces"), "Invalid value: [\"foo\",\"*\"]: if '*' is present, must not specify other namespaces")]),
        ),
        (
            "ResourceRule.Namespaces must be well formed",
            fs("system-foo", spec(user_rule(json!({"resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "namespaces": ["-foo"]}]})))),
            want(&[(&format!("{rr0}.namespaces[0]"), "Invalid value: \"-foo\": each member of this list must be '*' or a DNS-1123 label; a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")]),
        ),
        (
            "MatchingPrecedence must not be greater than 10000",
            fs("system-foo", json!({"matchingPrecedence": 10001, "priorityLevelConfiguration": {"name": "system-bar"},
                                    "rules": [user_rule(json!({"resourceRules": all_resources()}))]})),
            want(&[("spec.matchingPrecedence", "Invalid value: 10001: must not be greater than 10000")]),
        ),
    ];
    for (name, obj, mut expected) in cases {
        if name == "bad exempt flow-schema should fail" {
            // the value shown is the spec as JSON
            expected = vec![(
                "spec".to_string(),
                format!(
                    "Invalid value: {}: spec of 'exempt' must equal the fixed value",
                    serde_json::to_string(&obj["spec"]).expect("json")
                ),
            )];
        }
        assert_eq!(errors("flowschemas", &obj), expected, "{name}");
    }
}

fn plc(name: &str, spec: Value) -> Value {
    json!({"metadata": {"name": name}, "spec": spec})
}

fn limited(extra: Value) -> Value {
    json!({"type": "Limited", "limited": extra})
}

#[test]
fn priority_level_configuration_validation() {
    let q = "spec.limited.limitResponse.queuing";
    let bad_spec =
        limited(json!({"nominalConcurrencyShares": 42, "limitResponse": {"type": "Reject"}}));
    let invalid_spec = |spec: &Value, name: &str, except: bool| {
        let tail = if except {
            " except the 'spec.exempt' field"
        } else {
            ""
        };
        (
            "spec".to_string(),
            format!(
                "Invalid value: {}: spec of '{name}'{tail} must equal the fixed value",
                serde_json::to_string(spec).expect("json")
            ),
        )
    };
    let repurposed = json!({"type": "Limited", "exempt": {},
                            "limited": {"nominalConcurrencyShares": 42, "limitResponse": {"type": "Reject"}}});
    let bad_exempt3 = json!({"type": "Exempt", "exempt": {},
                             "limited": {"nominalConcurrencyShares": 42, "limitResponse": {"type": "Reject"}}});
    let with = |mut v: Vec<(String, String)>, extra: (String, String)| {
        v.push(extra);
        v.sort();
        v
    };
    let cases: Vec<Case> = vec![
        (
            "exempt should work",
            plc("exempt", json!({"type": "Exempt", "exempt": {"nominalConcurrencyShares": 0, "lendablePercent": 0}})),
            vec![],
        ),
        (
            "wrong exempt spec should fail",
            plc("exempt", bad_spec.clone()),
            with(
                want(&[("spec.type", "Invalid value: \"Limited\": type must be 'Exempt' if and only if name is 'exempt'")]),
                invalid_spec(&bad_spec, "exempt", true),
            ),
        ),
        (
            "exempt priority level should have appropriate values for Exempt field",
            plc("exempt", json!({"type": "Exempt", "exempt": {"nominalConcurrencyShares": -1, "lendablePercent": 101}})),
            want(&[
                ("spec.exempt.nominalConcurrencyShares", "Invalid value: -1: must be a non-negative integer"),
                ("spec.exempt.lendablePercent", "Invalid value: 101: must be between 0 and 100, inclusive"),
            ]),
        ),
        (
            "exempt priority level should have appropriate values for Exempt field (2)",
            plc("exempt", json!({"type": "Exempt", "exempt": {"nominalConcurrencyShares": -1, "lendablePercent": -1}})),
            want(&[
                ("spec.exempt.nominalConcurrencyShares", "Invalid value: -1: must be a non-negative integer"),
                ("spec.exempt.lendablePercent", "Invalid value: -1: must be between 0 and 100, inclusive"),
            ]),
        ),
        (
            "admins are not allowed to repurpose the 'exempt' pl to a limited type",
            plc("exempt", repurposed.clone()),
            with(
                want(&[
                    ("spec.type", "Invalid value: \"Limited\": type must be 'Exempt' if and only if name is 'exempt'"),
                    ("spec.exempt", "Forbidden: must be nil if the type is Limited"),
                ]),
                invalid_spec(&repurposed, "exempt", true),
            ),
        ),
        (
            "admins are not allowed to change any field of the 'exempt' pl except 'Exempt'",
            plc("exempt", bad_exempt3.clone()),
            with(
                want(&[("spec.limited", "Forbidden: must be nil if the type is not Limited")]),
                invalid_spec(&bad_exempt3, "exempt", true),
            ),
        ),
        (
            "admins are allowed to change the Exempt field of the 'exempt' pl",
            plc("exempt", json!({"type": "Exempt", "exempt": {"nominalConcurrencyShares": 10, "lendablePercent": 10}})),
            vec![],
        ),
        (
            "limited must not set exempt priority level configuration for borrowing",
            plc("broken-limited", json!({"type": "Limited", "exempt": {}})),
            want(&[
                ("spec.exempt", "Forbidden: must be nil if the type is Limited"),
                ("spec.limited", "Required value: must not be empty when type is Limited"),
            ]),
        ),
        (
            "limited requires more details",
            plc("broken-limited", json!({"type": "Limited"})),
            want(&[("spec.limited", "Required value: must not be empty when type is Limited")]),
        ),
        ("max-in-flight should work", plc("max-in-flight", bad_spec.clone()), vec![]),
        (
            "forbid queuing details when not queuing",
            plc("system-foo", limited(json!({"nominalConcurrencyShares": 100, "limitResponse": {"type": "Reject",
                "queuing": {"queues": 512, "handSize": 4, "queueLengthLimit": 100}}}))),
            want(&[(q, "Forbidden: must be nil if limited.limitResponse.type is not Limited")]),
        ),
        (
            "wrong backstop spec should fail",
            plc("catch-all", bad_spec.clone()),
            vec![invalid_spec(&bad_spec, "catch-all", false)],
        ),
        (
            "backstop should work",
            plc("catch-all", limited(json!({"nominalConcurrencyShares": 5, "lendablePercent": 0, "limitResponse": {"type": "Reject"}}))),
            vec![],
        ),
        (
            "broken queuing level should fail",
            plc("system-foo", limited(json!({"nominalConcurrencyShares": 100, "limitResponse": {"type": "Queue"}}))),
            want(&[(q, "Required value: must not be empty if limited.limitResponse.type is Limited")]),
        ),
        (
            "normal customized priority level should work",
            plc("system-foo", limited(json!({"nominalConcurrencyShares": 100, "limitResponse": {"type": "Queue",
                "queuing": {"queues": 512, "handSize": 4, "queueLengthLimit": 100}}}))),
            vec![],
        ),
        (
            "customized priority level w/ overflowing handSize/queues should fail 1",
            plc("system-foo", limited(json!({"nominalConcurrencyShares": 100, "limitResponse": {"type": "Queue",
                "queuing": {"queues": 512, "handSize": 8, "queueLengthLimit": 100}}}))),
            want(&[(&format!("{q}.handSize"), "Invalid value: 8: required entropy bits of deckSize 512 and handSize 8 should not be greater than 60")]),
        ),
        (
            "customized priority level w/ overflowing handSize/queues should fail 2",
            plc("system-foo", limited(json!({"nominalConcurrencyShares": 100, "limitResponse": {"type": "Queue",
                "queuing": {"queues": 128, "handSize": 10, "queueLengthLimit": 100}}}))),
            want(&[(&format!("{q}.handSize"), "Invalid value: 10: required entropy bits of deckSize 128 and handSize 10 should not be greater than 60")]),
        ),
        (
            "customized priority level w/ overflowing handSize/queues should fail 3",
            plc("system-foo", limited(json!({"nominalConcurrencyShares": 100, "limitResponse": {"type": "Queue",
                "queuing": {"queues": 2147483647_i64, "handSize": 3, "queueLengthLimit": 100}}}))),
            want(&[
                (&format!("{q}.handSize"), "Invalid value: 3: required entropy bits of deckSize 2147483647 and handSize 3 should not be greater than 60"),
                (&format!("{q}.queues"), "Invalid value: 2147483647: must not be greater than 10000000"),
            ]),
        ),
        (
            "customized priority level w/ handSize=2 and queues=10^7 should work",
            plc("system-foo", limited(json!({"nominalConcurrencyShares": 100, "limitResponse": {"type": "Queue",
                "queuing": {"queues": 10_000_000, "handSize": 2, "queueLengthLimit": 100}}}))),
            vec![],
        ),
        (
            "customized priority level w/ handSize greater than queues should fail",
            plc("system-foo", limited(json!({"nominalConcurrencyShares": 100, "limitResponse": {"type": "Queue",
                "queuing": {"queues": 7, "handSize": 8, "queueLengthLimit": 100}}}))),
            want(&[(&format!("{q}.handSize"), "Invalid value: 8: should not be greater than queues (7)")]),
        ),
    ];
    for (name, obj, expected) in cases {
        assert_eq!(
            errors("prioritylevelconfigurations", &obj),
            expected,
            "{name}"
        );
    }
}

#[test]
fn status_validation() {
    for plural in ["flowschemas", "prioritylevelconfigurations"] {
        let base = if plural == "flowschemas" {
            fs(
                "system-foo",
                spec(user_rule(json!({"resourceRules": all_resources()}))),
            )
        } else {
            plc(
                "system-foo",
                limited(
                    json!({"nominalConcurrencyShares": 1, "limitResponse": {"type": "Reject"}}),
                ),
            )
        };
        assert_eq!(errors(plural, &base), vec![], "{plural}: empty status");
        let mut dup = base.clone();
        dup["status"] = json!({"conditions": [{"type": "1"}, {"type": "1"}]});
        assert_eq!(
            errors(plural, &dup),
            want(&[("status.conditions[1].type", "Duplicate value: \"1\"")]),
            "{plural}"
        );
        let mut missing = base.clone();
        missing["status"] = json!({"conditions": [{"type": ""}]});
        assert_eq!(
            errors(plural, &missing),
            want(&[(
                "status.conditions[0].type",
                "Required value: must not be empty"
            )]),
            "{plural}"
        );
    }
}
