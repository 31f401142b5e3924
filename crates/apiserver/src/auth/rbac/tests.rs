//! Upstream's tables: `plugin/pkg/auth/authorizer/rbac/rbac_test.go` (`TestAuthorizer`)
//! and `pkg/registry/rbac/validation/rule_test.go` (`TestAppliesTo`, `TestDefaultRuleResolver`).

use serde_json::{json, Value};

use super::*;
use crate::auth::RequestInfo;
use crate::storage::store::Store;

/// upstream `newRule("verbs", "groups", "resources", "urls")`: comma-separated lists,
/// an empty string being one empty entry as `strings.Split` gives
fn rule(verbs: &str, groups: &str, resources: &str, urls: &str) -> Value {
    let split = |s: &str| s.split(',').map(str::to_string).collect::<Vec<_>>();
    json!({"verbs": split(verbs), "apiGroups": split(groups), "resources": split(resources), "nonResourceURLs": split(urls)})
}

fn cluster_role(name: &str, rules: Vec<Value>) -> Value {
    json!({"metadata": {"name": name}, "rules": rules})
}

fn role(ns: &str, name: &str, rules: Vec<Value>) -> Value {
    json!({"metadata": {"name": name, "namespace": ns}, "rules": rules})
}

fn subjects(list: &[&str]) -> Value {
    Value::Array(
        list.iter()
            .map(|s| {
                let (kind, name) = s.split_once(':').expect("Kind:name");
                let group = if kind == "ServiceAccount" { "" } else { GROUP };
                json!({"kind": kind, "name": name, "apiGroup": group})
            })
            .collect(),
    )
}

fn crb(name: &str, role: &str, subj: &[&str]) -> Value {
    json!({"metadata": {"name": name}, "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": role}, "subjects": subjects(subj)})
}

fn rb(ns: &str, name: &str, kind: &str, role: &str, subj: &[&str]) -> Value {
    json!({"metadata": {"name": name, "namespace": ns}, "roleRef": {"apiGroup": GROUP, "kind": kind, "name": role}, "subjects": subjects(subj)})
}

fn user(name: &str, groups: &str) -> UserInfo {
    let groups: Vec<&str> = groups.split(',').collect();
    UserInfo::new(name, &groups)
}

fn res(verb: &str, resource: &str, sub: &str, ns: &str) -> RequestInfo {
    RequestInfo {
        resource_request: true,
        verb: verb.into(),
        resource: resource.into(),
        subresource: sub.into(),
        namespace: ns.into(),
        ..RequestInfo::default()
    }
}

fn path(verb: &str, p: &str) -> RequestInfo {
    RequestInfo {
        verb: verb.into(),
        path: p.into(),
        ..RequestInfo::default()
    }
}

fn allowed(p: &Policy, u: &UserInfo, r: &RequestInfo) -> bool {
    p.authorize(&Attributes {
        user: u,
        request: r,
    })
    .0 == Decision::Allow
}

#[test]
fn authorizer_table() {
    struct Case {
        policy: Policy,
        pass: Vec<(UserInfo, RequestInfo)>,
        fail: Vec<(UserInfo, RequestInfo)>,
    }
    let cases = [
        Case {
            policy: Policy::build(
                vec![cluster_role("admin", vec![rule("*", "*", "*", "*")])],
                vec![],
                vec![],
                vec![rb(
                    "ns1",
                    "b",
                    "ClusterRole",
                    "admin",
                    &["User:admin", "Group:admins"],
                )],
            ),
            pass: vec![
                (user("admin", ""), res("get", "Pods", "", "ns1")),
                (user("admin", ""), res("watch", "Pods", "", "ns1")),
                (user("admin", "group1"), res("watch", "Foobar", "", "ns1")),
                (user("joe", "admins"), res("watch", "Foobar", "", "ns1")),
                (
                    user("joe", "group1,admins"),
                    res("watch", "Foobar", "", "ns1"),
                ),
            ],
            fail: vec![
                (user("admin", ""), res("GET", "Pods", "", "ns2")),
                (user("admin", ""), res("GET", "Nodes", "", "")),
                (user("admin", "admins"), res("GET", "Pods", "", "ns2")),
                (user("admin", "admins"), res("GET", "Nodes", "", "")),
            ],
        },
        Case {
            policy: Policy::build(
                vec![
                    cluster_role(
                        "non-resource-url-getter",
                        vec![rule("get", "", "", "/apis")],
                    ),
                    cluster_role("non-resource-url", vec![rule("*", "", "", "/apis")]),
                    cluster_role(
                        "non-resource-url-prefix",
                        vec![rule("get", "", "", "/apis/*")],
                    ),
                ],
                vec![],
                vec![
                    crb("a", "non-resource-url-getter", &["User:foo", "Group:bar"]),
                    crb("b", "non-resource-url", &["User:admin", "Group:admin"]),
                    crb(
                        "c",
                        "non-resource-url-prefix",
                        &["User:prefixed", "Group:prefixed"],
                    ),
                ],
                vec![],
            ),
            pass: vec![
                (user("foo", ""), path("get", "/apis")),
                (user("", "bar"), path("get", "/apis")),
                (user("admin", ""), path("get", "/apis")),
                (user("", "admin"), path("get", "/apis")),
                (user("admin", ""), path("watch", "/apis")),
                (user("", "admin"), path("watch", "/apis")),
                (user("prefixed", ""), path("get", "/apis/v1")),
                (user("", "prefixed"), path("get", "/apis/v1")),
                (user("prefixed", ""), path("get", "/apis/v1/foobar")),
                (user("", "prefixed"), path("get", "/apis/v1/foorbar")),
            ],
            fail: vec![
                (user("foo", ""), path("watch", "/apis")),
                (user("", "bar"), path("watch", "/apis")),
                (user("foo", ""), path("get", "/api/v1")),
                (user("", "bar"), path("get", "/api/v1")),
                (user("admin", ""), path("get", "/api/v1")),
                (user("", "admin"), path("get", "/api/v1")),
                (user("prefixed", ""), path("get", "/api/v1")),
                (user("", "prefixed"), path("get", "/api/v1")),
            ],
        },
        Case {
            policy: Policy::build(
                vec![cluster_role("admin", vec![rule("*", "*", "pods", "*")])],
                vec![],
                vec![],
                vec![rb(
                    "ns1",
                    "b",
                    "ClusterRole",
                    "admin",
                    &["User:admin", "Group:admins"],
                )],
            ),
            pass: vec![(user("admin", ""), res("get", "pods", "", "ns1"))],
            fail: vec![(user("admin", ""), res("get", "pods", "status", "ns1"))],
        },
        Case {
            policy: Policy::build(
                vec![cluster_role(
                    "admin",
                    vec![rule("*", "*", "pods/status", "*")],
                )],
                vec![],
                vec![],
                vec![rb(
                    "ns1",
                    "b",
                    "ClusterRole",
                    "admin",
                    &["User:admin", "Group:admins"],
                )],
            ),
            pass: vec![(user("admin", ""), res("get", "pods", "status", "ns1"))],
            fail: vec![(user("admin", ""), res("get", "pods", "", "ns1"))],
        },
        // a Role bound in its namespace; service accounts by binding namespace
        Case {
            policy: Policy::build(
                vec![],
                vec![role(
                    "ns1",
                    "reader",
                    vec![rule("get,list", "", "pods", "")],
                )],
                vec![],
                vec![rb("ns1", "b", "Role", "reader", &["ServiceAccount:robot"])],
            ),
            pass: vec![(
                user("system:serviceaccount:ns1:robot", ""),
                res("list", "pods", "", "ns1"),
            )],
            fail: vec![
                (
                    user("system:serviceaccount:ns2:robot", ""),
                    res("list", "pods", "", "ns1"),
                ),
                (
                    user("system:serviceaccount:ns1:robot", ""),
                    res("list", "pods", "", "ns2"),
                ),
                (
                    user("system:serviceaccount:ns1:robot", ""),
                    res("delete", "pods", "", "ns1"),
                ),
            ],
        },
    ];
    for (i, c) in cases.iter().enumerate() {
        for (u, r) in &c.pass {
            assert!(
                allowed(&c.policy, u, r),
                "case {i}: incorrectly restricted {u:?} {r:?}"
            );
        }
        for (u, r) in &c.fail {
            assert!(
                !allowed(&c.policy, u, r),
                "case {i}: incorrectly passed {u:?} {r:?}"
            );
        }
    }
}

#[test]
#[allow(clippy::type_complexity)]
fn applies_to_table() {
    // upstream TestAppliesTo: (subjects, user, namespace, applies, index)
    let sa = |ns: &str, name: &str| Subject {
        kind: "ServiceAccount".into(),
        name: name.into(),
        namespace: ns.into(),
        ..Subject::default()
    };
    let u = |name: &str| Subject {
        kind: "User".into(),
        api_group: GROUP.into(),
        name: name.into(),
        ..Subject::default()
    };
    let g = |name: &str| Subject {
        kind: "Group".into(),
        api_group: GROUP.into(),
        name: name.into(),
        ..Subject::default()
    };
    let cases: Vec<(&str, Vec<Subject>, UserInfo, &str, Option<usize>)> = vec![
        (
            "single subject that matches username",
            vec![u("foobar")],
            UserInfo::new("foobar", &[]),
            "",
            Some(0),
        ),
        (
            "multiple subjects, one that matches username",
            vec![u("barfoo"), u("foobar")],
            UserInfo::new("foobar", &[]),
            "",
            Some(1),
        ),
        (
            "multiple subjects, none that match username",
            vec![u("barfoo"), u("foobar")],
            UserInfo::new("zimzam", &[]),
            "",
            None,
        ),
        (
            "multiple subjects, one that match group",
            vec![u("barfoo"), g("foobar")],
            UserInfo::new("zimzam", &["foobar"]),
            "",
            Some(1),
        ),
        (
            "multiple subjects, one that match group, should ignore namespace",
            vec![u("barfoo"), g("foobar")],
            UserInfo::new("zimzam", &["foobar"]),
            "namespace1",
            Some(1),
        ),
        (
            "multiple subjects, one that match group, one that matches service account",
            vec![u("barfoo"), g("foobar"), sa("kube-system", "default")],
            UserInfo::new("system:serviceaccount:kube-system:default", &[]),
            "default",
            Some(2),
        ),
        (
            "service account with no namespace",
            vec![sa("", "default")],
            UserInfo::new("system:serviceaccount:default:default", &[]),
            "",
            None,
        ),
        (
            "service account with no namespace specified in binding",
            vec![sa("", "default")],
            UserInfo::new("system:serviceaccount:default:default", &[]),
            "default",
            Some(0),
        ),
        (
            "service account with different namespace",
            vec![sa("other", "default")],
            UserInfo::new("system:serviceaccount:default:default", &[]),
            "default",
            None,
        ),
        (
            "multiple service accounts",
            vec![sa("ns1", "foo"), sa("kube-system", "default")],
            UserInfo::new("system:serviceaccount:kube-system:default", &[]),
            "default",
            Some(1),
        ),
        (
            "unknown subject kind",
            vec![Subject {
                kind: "Unknown".into(),
                name: "x".into(),
                ..Subject::default()
            }],
            UserInfo::new("x", &[]),
            "",
            None,
        ),
    ];
    for (name, subj, user, ns, want) in cases {
        assert_eq!(applies_to(&user, &subj, ns), want, "{name}");
    }
}

#[test]
fn reasons_as_upstream() {
    let p = Policy::build(
        vec![cluster_role("view", vec![rule("get", "", "pods", "")])],
        vec![role("ns1", "r", vec![rule("list", "", "pods", "")])],
        vec![
            crb("viewers", "view", &["Group:g", "User:alice"]),
            crb("broken", "missing", &["User:alice"]),
        ],
        vec![
            rb("ns1", "rb", "Role", "r", &["ServiceAccount:robot"]),
            rb("ns1", "gone", "Role", "nope", &["ServiceAccount:robot"]),
        ],
    );
    let alice = user("alice", "system:authenticated");
    let (d, reason) = p.authorize(&Attributes {
        user: &alice,
        request: &res("get", "pods", "", "ns1"),
    });
    assert_eq!(d, Decision::Allow);
    assert_eq!(
        reason,
        r#"RBAC: allowed by ClusterRoleBinding "viewers" of ClusterRole "view" to User "alice""#
    );
    let robot = user("system:serviceaccount:ns1:robot", "");
    let (d, reason) = p.authorize(&Attributes {
        user: &robot,
        request: &res("list", "pods", "", "ns1"),
    });
    assert_eq!(d, Decision::Allow);
    assert_eq!(
        reason,
        r#"RBAC: allowed by RoleBinding "rb/ns1" of Role "r" to ServiceAccount "robot/ns1""#
    );
    // no opinion: the resolution errors met
    let (d, reason) = p.authorize(&Attributes {
        user: &alice,
        request: &res("delete", "pods", "", "ns1"),
    });
    assert_eq!(d, Decision::NoOpinion);
    assert_eq!(
        reason,
        r#"RBAC: clusterrole.rbac.authorization.k8s.io "missing" not found"#
    );
    let (d, reason) = p.authorize(&Attributes {
        user: &robot,
        request: &res("delete", "pods", "", "ns1"),
    });
    assert_eq!(d, Decision::NoOpinion);
    assert_eq!(
        reason,
        r#"RBAC: role.rbac.authorization.k8s.io "nope" not found"#
    );
    let nobody = user("nobody", "");
    assert_eq!(
        p.authorize(&Attributes {
            user: &nobody,
            request: &res("get", "pods", "", "ns1")
        }),
        (Decision::NoOpinion, String::new())
    );
    // rules for: cluster-wide plus the namespace's, errors aggregated
    let (rules, err) = p.rules_for(&robot, "ns1");
    assert_eq!(
        rules,
        vec![PolicyRule::from_json(&rule("list", "", "pods", ""))]
    );
    assert_eq!(
        err.as_deref(),
        Some(r#"role.rbac.authorization.k8s.io "nope" not found"#)
    );
    let (rules, err) = p.rules_for(&alice, "");
    assert_eq!(rules.len(), 1);
    assert_eq!(
        err.as_deref(),
        Some(r#"clusterrole.rbac.authorization.k8s.io "missing" not found"#)
    );
}

#[test]
fn aggregate_as_upstream() {
    assert_eq!(aggregate(&[]), None);
    assert_eq!(aggregate(&["a".into()]).as_deref(), Some("a"));
    assert_eq!(aggregate(&["a".into(), "a".into()]).as_deref(), Some("a"));
    assert_eq!(
        aggregate(&["a".into(), "b".into(), "a".into()]).as_deref(),
        Some("[a, b]")
    );
}

async fn put(store: &Store, resource: &str, key: &str, obj: Value) {
    store
        .write(resource, key, &[], false, |_, _| {
            Ok(crate::storage::store::WriteAction::Put(obj))
        })
        .await
        .expect("write");
}

#[tokio::test]
async fn policy_is_rebuilt_only_when_rbac_objects_change() {
    let store = Store::new(
        0,
        std::collections::HashMap::new(),
        crate::storage::persist::Committer::start(None),
        100,
    );
    store.attach_committer();
    let source = PolicySource::new(std::sync::Arc::clone(&store));
    let first = source.policy();
    assert!(std::sync::Arc::ptr_eq(&first, &source.policy()));
    // another resource's write moves the resourceVersion but not the RBAC tables
    put(
        &store,
        "/configmaps",
        "default/x",
        json!({"metadata": {"name": "x", "namespace": "default"}}),
    )
    .await;
    assert!(std::sync::Arc::ptr_eq(&first, &source.policy()));
    // a binding is seen at once
    let alice = user("alice", "");
    let list = res("list", "pods", "", "ns1");
    assert!(!allowed(&source.policy(), &alice, &list));
    put(
        &store,
        CLUSTER_ROLES,
        "reader",
        cluster_role("reader", vec![rule("list", "", "pods", "")]),
    )
    .await;
    put(
        &store,
        ROLE_BINDINGS,
        "ns1/b",
        rb("ns1", "b", "ClusterRole", "reader", &["User:alice"]),
    )
    .await;
    let second = source.policy();
    assert!(!std::sync::Arc::ptr_eq(&first, &second));
    assert!(allowed(&second, &alice, &list));
    assert!(!allowed(&second, &alice, &res("list", "pods", "", "ns2")));
    put(
        &store,
        "/configmaps",
        "default/y",
        json!({"metadata": {"name": "y", "namespace": "default"}}),
    )
    .await;
    assert!(std::sync::Arc::ptr_eq(&second, &source.policy()));
}
