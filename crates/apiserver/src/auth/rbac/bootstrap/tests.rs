//! The tables against upstream's test data (`bootstrappolicy/testdata/*.yaml`, copied to
//! `tests/fixtures/rbac-bootstrap`), as upstream's `TestBootstrapClusterRoles`,
//! `TestBootstrapControllerRoles`, `TestBootstrapNamespaceRoles` and their binding twins
//! compare `ClusterRoles()` and friends with those files.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::*;

fn fixture(file: &str) -> Vec<Value> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/rbac-bootstrap")
        .join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{file}: {e}"));
    let list: Value = serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("{file}: {e}"));
    list["items"].as_array().cloned().unwrap_or_default()
}

/// What the comparison looks at: identity, labels, annotations, rules, aggregation rule,
/// role reference and subjects (`rules: null` and absent rules are the same).
fn essence(o: &Value) -> Value {
    let mut e = json!({
        "apiVersion": o["apiVersion"],
        "kind": o["kind"],
        "name": o["metadata"]["name"],
        "namespace": o["metadata"]["namespace"],
        "labels": o["metadata"]["labels"],
        "annotations": o["metadata"]["annotations"],
    });
    for key in ["rules", "aggregationRule", "roleRef", "subjects"] {
        if !o[key].is_null() {
            e[key] = o[key].clone();
        }
    }
    e
}

fn by_name(objects: &[Value]) -> BTreeMap<String, Value> {
    objects
        .iter()
        .map(|o| {
            let e = essence(o);
            let key = format!(
                "{}/{}",
                e["namespace"].as_str().unwrap_or(""),
                e["name"].as_str().unwrap_or("")
            );
            (key, e)
        })
        .collect()
}

fn assert_same(file: &str, ours: Vec<Value>) {
    let want = by_name(&fixture(file));
    let got = by_name(&ours);
    assert_eq!(
        ours.len(),
        got.len(),
        "{file}: duplicate names in the tables"
    );
    let want_names: Vec<&String> = want.keys().collect();
    let got_names: Vec<&String> = got.keys().collect();
    assert_eq!(got_names, want_names, "{file}: names");
    for (name, w) in &want {
        assert_eq!(&got[name], w, "{file}: {name}");
    }
}

#[test]
fn cluster_roles_are_upstreams() {
    let roles = policy::cluster_roles()
        .iter()
        .map(ClusterRole::to_object)
        .collect();
    assert_same("cluster-roles.yaml", roles);
}

#[test]
fn cluster_role_bindings_are_upstreams() {
    let bindings = policy::cluster_role_bindings()
        .iter()
        .map(Binding::to_object)
        .collect();
    assert_same("cluster-role-bindings.yaml", bindings);
}

#[test]
fn controller_roles_are_upstreams() {
    let roles = controller::controller_roles()
        .iter()
        .map(ClusterRole::to_object)
        .collect();
    assert_same("controller-roles.yaml", roles);
}

#[test]
fn controller_role_bindings_are_upstreams() {
    let bindings = controller::controller_role_bindings()
        .iter()
        .map(Binding::to_object)
        .collect();
    assert_same("controller-role-bindings.yaml", bindings);
}

#[test]
fn namespace_roles_are_upstreams() {
    let roles = namespace::namespace_roles()
        .iter()
        .map(Role::to_object)
        .collect();
    assert_same("namespace-roles.yaml", roles);
}

#[test]
fn namespace_role_bindings_are_upstreams() {
    let bindings = namespace::namespace_role_bindings()
        .iter()
        .map(Binding::to_object)
        .collect();
    assert_same("namespace-role-bindings.yaml", bindings);
}

/// Upstream `TestControllerRoleLabel` and `TestClusterRoleLabel`: every object carries
/// the bootstrap label and the autoupdate annotation.
#[test]
fn every_object_is_labelled_and_autoupdated() {
    let p = bootstrap_policy();
    for o in p
        .cluster_roles
        .iter()
        .chain(&p.cluster_role_bindings)
        .chain(&p.roles)
        .chain(&p.role_bindings)
    {
        assert_eq!(
            o["metadata"]["labels"][BOOTSTRAP_LABEL], BOOTSTRAP_LABEL_VALUE,
            "{o}"
        );
        assert_eq!(o["metadata"]["annotations"][AUTOUPDATE_ANNOTATION], "true");
    }
}

/// Rules are rendered sorted, whatever order the tables list verbs in (upstream
/// `RuleOrDie`).
#[test]
fn rules_render_sorted() {
    let r = rule(READ_WRITE)
        .groups(&["b", LEGACY])
        .resources(&["z", "a"]);
    assert_eq!(
        r.to_json(),
        json!({
            "apiGroups": ["", "b"],
            "resources": ["a", "z"],
            "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
        })
    );
    assert_eq!(
        rule(&["get"]).urls(&["/b", "/a"]).to_json(),
        json!({"nonResourceURLs": ["/a", "/b"], "verbs": ["get"]})
    );
}
