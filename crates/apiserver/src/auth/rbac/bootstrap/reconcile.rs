//! What the server does with a bootstrap object it finds stored (upstream
//! `pkg/registry/rbac/reconciliation`, as `storage_rbac.go`'s post-start hook runs it:
//! union, never removing anything).
//!
//! - Missing: create it.
//! - Stored with `rbac.authorization.kubernetes.io/autoupdate: "false"`: leave it alone
//!   (upstream: "protected").
//! - Otherwise add what is missing: labels and annotations (stored values win), rules the
//!   stored ones do not cover (each as its broken-down rules, upstream `Covers`), selectors
//!   of the aggregation rule, subjects of a binding. An aggregated role's rules are the
//!   aggregation controller's: they are not compared when both roles aggregate. A role
//!   that aggregates but should not loses its aggregation rule.
//! - A binding whose `roleRef` differs (immutable) is deleted and created again.
//!
//! Nothing changes when everything is there, so a restart on the same data writes nothing.

use serde_json::{Map, Value};

use super::AUTOUPDATE_ANNOTATION;
use crate::auth::rbac::rule::{self, PolicyRule};

/// What to write for one bootstrap object.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// Up to date.
    None,
    /// Stored with autoupdate `"false"` and different from the policy: left alone.
    Protected,
    /// Not stored: create this object.
    Create(Value),
    /// Stored: replace it with this (the stored object plus what was missing; keeps its
    /// `resourceVersion`, so the update is conditional).
    Update(Value),
    /// A binding with another `roleRef`: delete it and create this.
    Recreate(Value),
}

fn protected(existing: &Value) -> bool {
    existing["metadata"]["annotations"][AUTOUPDATE_ANNOTATION] == "false"
}

/// `expected`'s labels and annotations added to `merged` where missing (upstream `merge`:
/// the stored values win); whether anything was added.
fn merge_metadata(merged: &mut Value, expected: &Value) -> bool {
    let mut changed = false;
    for key in ["labels", "annotations"] {
        let Some(want) = expected["metadata"][key].as_object() else {
            continue;
        };
        let meta = &mut merged["metadata"];
        if !meta[key].is_object() {
            meta[key] = Value::Object(Map::new());
        }
        if let Some(have) = meta[key].as_object_mut() {
            for (k, v) in want {
                if !have.contains_key(k) {
                    have.insert(k.clone(), v.clone());
                    changed = true;
                }
            }
        }
    }
    changed
}

fn array(v: &Value) -> Vec<Value> {
    v.as_array().cloned().unwrap_or_default()
}

/// What to do about the (Cluster)Role `expected` given what is stored (upstream
/// `computeReconciledRole` with `removeExtraPermissions: false`).
pub fn reconcile_role(existing: Option<&Value>, expected: &Value) -> Action {
    let Some(existing) = existing else {
        return Action::Create(expected.clone());
    };
    let mut merged = existing.clone();
    let mut changed = merge_metadata(&mut merged, expected);

    // upstream `validation.Covers`: the broken-down expected rules no stored rule covers
    let (_, missing) = rule::covers(
        &PolicyRule::of_role(existing),
        &PolicyRule::of_role(expected),
    );
    let missing: Vec<Value> = missing.iter().map(PolicyRule::to_json).collect();
    if !missing.is_empty() {
        let mut rules = array(&existing["rules"]);
        rules.extend(missing);
        merged["rules"] = Value::Array(rules);
        changed = true;
    }

    let want_selectors = array(&expected["aggregationRule"]["clusterRoleSelectors"]);
    let have_aggregation = existing
        .get("aggregationRule")
        .is_some_and(|a| !a.is_null());
    if expected.get("aggregationRule").is_none() && have_aggregation {
        if let Some(m) = merged.as_object_mut() {
            m.remove("aggregationRule");
        }
        changed = true;
    } else {
        let have = array(&existing["aggregationRule"]["clusterRoleSelectors"]);
        let missing: Vec<Value> = want_selectors
            .into_iter()
            .filter(|s| !have.contains(s))
            .collect();
        if !missing.is_empty() {
            let mut selectors = have;
            selectors.extend(missing);
            merged["aggregationRule"] = serde_json::json!({ "clusterRoleSelectors": selectors });
            changed = true;
        }
    }
    decide(existing, merged, changed)
}

/// What to do about the (Cluster)RoleBinding `expected` given what is stored (upstream
/// `computeReconciledRoleBinding` with `removeExtraSubjects: false`).
pub fn reconcile_binding(existing: Option<&Value>, expected: &Value) -> Action {
    let Some(existing) = existing else {
        return Action::Create(expected.clone());
    };
    if existing["roleRef"] != expected["roleRef"] {
        return if protected(existing) {
            Action::Protected
        } else {
            Action::Recreate(expected.clone())
        };
    }
    let mut merged = existing.clone();
    let mut changed = merge_metadata(&mut merged, expected);
    let have = array(&existing["subjects"]);
    let missing: Vec<Value> = array(&expected["subjects"])
        .into_iter()
        .filter(|s| !have.iter().any(|h| same_subject(h, s)))
        .collect();
    if !missing.is_empty() {
        let mut subjects = have;
        subjects.extend(missing);
        merged["subjects"] = Value::Array(subjects);
        changed = true;
    }
    decide(existing, merged, changed)
}

/// Subjects are equal when kind, API group, name and namespace are (an absent API group
/// and `""` are the same).
fn same_subject(a: &Value, b: &Value) -> bool {
    let s = |v: &Value, k: &str| v[k].as_str().unwrap_or("").to_string();
    ["kind", "apiGroup", "name", "namespace"]
        .iter()
        .all(|k| s(a, k) == s(b, k))
}

fn decide(existing: &Value, merged: Value, changed: bool) -> Action {
    match (changed, protected(existing)) {
        (false, _) => Action::None,
        (true, true) => Action::Protected,
        (true, false) => Action::Update(merged),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::auth::rbac::bootstrap::{bootstrap_policy, rule, READ};

    fn role(rules: Value) -> Value {
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "r", "resourceVersion": "7",
                "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"},
                "annotations": {AUTOUPDATE_ANNOTATION: "true"}},
            "rules": rules,
        })
    }

    #[test]
    fn a_missing_object_is_created() {
        let p = bootstrap_policy();
        let want = &p.cluster_roles[0];
        assert_eq!(reconcile_role(None, want), Action::Create(want.clone()));
        let b = &p.cluster_role_bindings[0];
        assert_eq!(reconcile_binding(None, b), Action::Create(b.clone()));
    }

    #[test]
    fn every_bootstrap_object_reconciles_to_nothing_against_itself() {
        let p = bootstrap_policy();
        for r in p.cluster_roles.iter().chain(&p.roles) {
            assert_eq!(reconcile_role(Some(r), r), Action::None, "{r}");
        }
        for b in p.cluster_role_bindings.iter().chain(&p.role_bindings) {
            assert_eq!(reconcile_binding(Some(b), b), Action::None, "{b}");
        }
    }

    #[test]
    fn missing_rules_are_added_broken_down_and_extra_rules_kept() {
        let expected = role(json!([rule(READ)
            .groups(&[""])
            .resources(&["pods"])
            .to_json()]));
        let extra = json!({"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get"]});
        let have = json!({"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]});
        let existing = role(json!([extra, have]));
        let Action::Update(merged) = reconcile_role(Some(&existing), &expected) else {
            panic!("expected an update");
        };
        assert_eq!(
            merged["rules"],
            json!([extra, have, {"apiGroups": [""], "resources": ["pods"], "verbs": ["watch"]}])
        );
        assert_eq!(merged["metadata"]["resourceVersion"], "7");
    }

    #[test]
    fn wildcards_cover() {
        let expected = role(json!([rule(READ)
            .groups(&[""])
            .resources(&["pods/status"])
            .to_json()]));
        for owner in [
            json!({"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}),
            json!({"apiGroups": [""], "resources": ["*/status"], "verbs": ["get", "list", "watch"]}),
        ] {
            assert_eq!(
                reconcile_role(Some(&role(json!([owner]))), &expected),
                Action::None
            );
        }
        let urls = role(json!([{"nonResourceURLs": ["/api", "/apis/*"], "verbs": ["get"]}]));
        let have = role(json!([{"nonResourceURLs": ["/ap*"], "verbs": ["get"]}]));
        assert_eq!(reconcile_role(Some(&have), &urls), Action::None);
        // a rule limited to names does not cover the whole resource
        let named = role(
            json!([{"apiGroups": [""], "resources": ["pods/status"], "resourceNames": ["a"], "verbs": ["*"]}]),
        );
        assert!(matches!(
            reconcile_role(Some(&named), &expected),
            Action::Update(_)
        ));
    }

    #[test]
    fn protected_objects_are_left_alone() {
        let expected = role(json!([rule(READ)
            .groups(&[""])
            .resources(&["pods"])
            .to_json()]));
        let mut existing = role(json!([]));
        existing["metadata"]["annotations"][AUTOUPDATE_ANNOTATION] = json!("false");
        assert_eq!(
            reconcile_role(Some(&existing), &expected),
            Action::Protected
        );
    }

    #[test]
    fn labels_and_annotations_are_added_stored_values_win() {
        let expected = role(json!([]));
        let mut existing = role(json!([]));
        existing["metadata"]["labels"] = json!({"kubernetes.io/bootstrapping": "mine"});
        existing["metadata"]["annotations"] = json!({});
        let Action::Update(merged) = reconcile_role(Some(&existing), &expected) else {
            panic!("expected an update");
        };
        assert_eq!(
            merged["metadata"]["labels"]["kubernetes.io/bootstrapping"],
            "mine"
        );
        assert_eq!(
            merged["metadata"]["annotations"][AUTOUPDATE_ANNOTATION],
            "true"
        );
    }

    #[test]
    fn aggregated_roles_keep_their_aggregated_rules_and_gain_selectors() {
        let p = bootstrap_policy();
        let admin = p
            .cluster_roles
            .iter()
            .find(|r| r["metadata"]["name"] == "admin")
            .expect("admin")
            .clone();
        let mut stored = admin.clone();
        stored["rules"] = json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]);
        assert_eq!(reconcile_role(Some(&stored), &admin), Action::None);
        stored["aggregationRule"] = json!({"clusterRoleSelectors": []});
        let Action::Update(merged) = reconcile_role(Some(&stored), &admin) else {
            panic!("expected an update");
        };
        assert_eq!(merged["aggregationRule"], admin["aggregationRule"]);
        assert_eq!(merged["rules"], stored["rules"]);
        // a role that should not aggregate loses its aggregation rule
        let mut plain = role(json!([]));
        let expected = plain.clone();
        plain["aggregationRule"] = admin["aggregationRule"].clone();
        let Action::Update(merged) = reconcile_role(Some(&plain), &expected) else {
            panic!("expected an update");
        };
        assert!(merged.get("aggregationRule").is_none());
    }

    #[test]
    fn bindings_gain_missing_subjects_and_are_recreated_for_another_role() {
        let p = bootstrap_policy();
        let want = p
            .cluster_role_bindings
            .iter()
            .find(|b| b["metadata"]["name"] == "system:public-info-viewer")
            .expect("binding")
            .clone();
        let mut stored = want.clone();
        stored["subjects"] = json!([{"kind": "User", "name": "someone", "apiGroup": "rbac.authorization.k8s.io"},
            want["subjects"][1].clone()]);
        let Action::Update(merged) = reconcile_binding(Some(&stored), &want) else {
            panic!("expected an update");
        };
        assert_eq!(
            merged["subjects"],
            json!([
                stored["subjects"][0],
                want["subjects"][1],
                want["subjects"][0]
            ])
        );
        stored["roleRef"]["name"] = json!("view");
        assert_eq!(
            reconcile_binding(Some(&stored), &want),
            Action::Recreate(want.clone())
        );
        stored["metadata"]["annotations"][AUTOUPDATE_ANNOTATION] = json!("false");
        assert_eq!(reconcile_binding(Some(&stored), &want), Action::Protected);
    }
}
