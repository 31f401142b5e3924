//! The tables against upstream's test data (`bootstrappolicy/testdata/*.yaml`, copied to
//! `tests/fixtures/rbac-bootstrap`), as upstream's `TestBootstrapClusterRoles`,
//! `TestBootstrapControllerRoles`, `TestBootstrapNamespaceRoles` and their binding twins
//! compare `ClusterRoles()` and friends with those files.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::*;
use crate::auth::rbac::rule::{self, PolicyRule};

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

/// The rules the cluster role bindings grant a user in `groups` (no namespaced binding of
/// the policy is in `default`), in binding order, as upstream's `RulesFor` lists them.
fn rules_of(user: &str, groups: &[&str]) -> Vec<Value> {
    let p = bootstrap_policy();
    let matches = |s: &Value| match s["kind"].as_str() {
        Some("User") => s["name"] == user,
        Some("Group") => groups.iter().any(|g| s["name"] == *g),
        Some("ServiceAccount") => {
            format!(
                "system:serviceaccount:{}:{}",
                s["namespace"].as_str().unwrap_or(""),
                s["name"].as_str().unwrap_or("")
            ) == user
        }
        _ => false,
    };
    let mut rules = Vec::new();
    for b in &p.cluster_role_bindings {
        let subjects = b["subjects"].as_array().cloned().unwrap_or_default();
        if !subjects.iter().any(matches) {
            continue;
        }
        let role = p
            .cluster_roles
            .iter()
            .find(|r| r["metadata"]["name"] == b["roleRef"]["name"])
            .expect("bound role exists");
        rules.extend(role["rules"].as_array().cloned().unwrap_or_default());
    }
    rules
}

fn go_list(v: &Value) -> String {
    let items: Vec<&str> = v
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    format!("[{}]", items.join(" "))
}

/// What `kubectl auth can-i --list` prints for `rules` (kubectl `printStatus`: every rule
/// broken down, simple resource rules compacted, sorted by the Go `PolicyRule.String()`,
/// printed with kubectl's tab writer: minimum width 10, padding 3).
fn kubectl_can_i_list(rules: &[Value]) -> String {
    let mut compact: Vec<Value> = Vec::new();
    let mut simple: Vec<Value> = Vec::new();
    let broken_down = rules
        .iter()
        .flat_map(|r| rule::breakdown(&PolicyRule::from_json(r)))
        .map(|r| r.to_json());
    for r in broken_down {
        if r.get("nonResourceURLs").is_some() {
            compact.push(r);
            continue;
        }
        let same = |s: &&mut Value| {
            s["apiGroups"] == r["apiGroups"]
                && s["resources"] == r["resources"]
                && s["resourceNames"] == r["resourceNames"]
        };
        match simple.iter_mut().find(same) {
            Some(s) => {
                if let (Some(have), Some(more)) = (s["verbs"].as_array_mut(), r["verbs"].as_array())
                {
                    have.extend(more.iter().cloned());
                }
            }
            None => simple.push(r),
        }
    }
    compact.extend(simple);
    let go_string = |r: &Value| {
        format!(
            "&PolicyRule{{Verbs:{},APIGroups:{},Resources:{},ResourceNames:{},NonResourceURLs:{},}}",
            go_list(&r["verbs"]),
            go_list(&r["apiGroups"]),
            go_list(&r["resources"]),
            go_list(&r["resourceNames"]),
            go_list(&r["nonResourceURLs"])
        )
    };
    compact.sort_by_key(|r| go_string(r));
    let mut rows = vec![[
        "Resources".to_string(),
        "Non-Resource URLs".to_string(),
        "Resource Names".to_string(),
        "Verbs".to_string(),
    ]];
    for r in &compact {
        // kubectl's describe.CombineResourceGroup
        let resource = match (r["resources"][0].as_str(), r["apiGroups"][0].as_str()) {
            (Some(res), group) => {
                let (name, sub) = res
                    .split_once('/')
                    .map_or((res, None), |(n, s)| (n, Some(s)));
                let mut c = name.to_string();
                if let Some(g) = group.filter(|g| !g.is_empty()) {
                    c = format!("{c}.{g}");
                }
                if let Some(s) = sub {
                    c = format!("{c}/{s}");
                }
                c
            }
            (None, _) => String::new(),
        };
        rows.push([
            resource,
            go_list(&r["nonResourceURLs"]),
            go_list(&r["resourceNames"]),
            go_list(&r["verbs"]),
        ]);
    }
    let widths: Vec<usize> = (0..3)
        .map(|i| (rows.iter().map(|r| r[i].len()).max().unwrap_or(0) + 3).max(10))
        .collect();
    rows.iter()
        .map(|r| {
            format!(
                "{:w0$}{:w1$}{:w2$}{}\n",
                r[0],
                r[1],
                r[2],
                r[3],
                w0 = widths[0],
                w1 = widths[1],
                w2 = widths[2]
            )
        })
        .collect()
}

/// `kubectl auth can-i --list --as=system:serviceaccount:default:default` against this
/// policy: the impersonated service account is in `system:serviceaccounts`,
/// `system:serviceaccounts:default` and `system:authenticated`, so it gets
/// `system:basic-user`, `system:discovery`, `system:public-info-viewer` and
/// `system:service-account-issuer-discovery`. The fixture is what kubectl prints.
#[test]
fn kubectl_can_i_list_of_the_default_service_account() {
    let rules = rules_of(
        "system:serviceaccount:default:default",
        &[
            "system:serviceaccounts",
            "system:serviceaccounts:default",
            "system:authenticated",
        ],
    );
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/rbac-bootstrap/kubectl-auth-can-i-list-serviceaccount-default.txt");
    let want = std::fs::read_to_string(path).expect("fixture");
    assert_eq!(kubectl_can_i_list(&rules), want);
}
