//! The RBAC bootstrap policy on a persisted data dir: created on the first start, and on
//! every later start nothing is rewritten, objects marked
//! `rbac.authorization.kubernetes.io/autoupdate: "false"` keep a user's edits, and what a
//! user removed from the others (a rule, a binding) comes back, as upstream's
//! `rbac/bootstrap-roles` post-start hook reconciles.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{json, Value};

use crate::common::Durable;

const RBAC: &str = "/apis/rbac.authorization.k8s.io/v1";

struct Node(Durable);

impl Node {
    fn start(dir: &Path) -> Node {
        Node(Durable::start(dir, |_| {}))
    }

    fn restart(&mut self, dir: &Path) {
        self.0.boot(dir, |_| {});
    }

    fn json(&self, method: &str, path: &str, body: &Value) -> (u16, Value) {
        self.0.json(method, path, body)
    }

    fn get(&self, path: &str) -> Value {
        let (code, v) = self.json("GET", path, &Value::Null);
        assert_eq!(code, 200, "GET {path}: {v}");
        v
    }

    /// name (namespace/name) → resourceVersion of every RBAC object.
    fn versions(&self) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        for plural in [
            "clusterroles",
            "clusterrolebindings",
            "roles",
            "rolebindings",
        ] {
            for o in self.get(&format!("{RBAC}/{plural}"))["items"]
                .as_array()
                .cloned()
                .unwrap_or_default()
            {
                let m = &o["metadata"];
                out.insert(
                    format!(
                        "{plural}/{}/{}",
                        m["namespace"].as_str().unwrap_or(""),
                        m["name"].as_str().unwrap_or("")
                    ),
                    m["resourceVersion"].as_str().unwrap_or("").to_string(),
                );
            }
        }
        out
    }
}

fn count(v: &BTreeMap<String, String>, prefix: &str) -> usize {
    v.keys().filter(|k| k.starts_with(prefix)).count()
}

#[test]
fn bootstrap_policy_is_created_once_and_reconciled_on_restart() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut node = Node::start(dir.path());

    let first = node.versions();
    // upstream's 31 cluster roles and 38 controller roles, 12 + 38 cluster role bindings,
    // 6 roles and bindings in kube-system and 1 in kube-public
    assert_eq!(count(&first, "clusterroles/"), 69, "{first:#?}");
    assert_eq!(count(&first, "clusterrolebindings/"), 50);
    assert_eq!(count(&first, "roles/kube-system/"), 6);
    assert_eq!(count(&first, "roles/kube-public/"), 1);
    assert_eq!(count(&first, "rolebindings/kube-system/"), 6);
    assert_eq!(count(&first, "rolebindings/kube-public/"), 1);
    let admin = node.get(&format!("{RBAC}/clusterroles/cluster-admin"));
    assert_eq!(
        admin["rules"],
        json!([
            {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
            {"nonResourceURLs": ["*"], "verbs": ["*"]}
        ])
    );
    assert_eq!(
        admin["metadata"]["labels"]["kubernetes.io/bootstrapping"],
        "rbac-defaults"
    );
    assert_eq!(
        admin["metadata"]["annotations"]["rbac.authorization.kubernetes.io/autoupdate"],
        "true"
    );
    let view = node.get(&format!("{RBAC}/clusterroles/view"));
    assert_eq!(
        view["aggregationRule"],
        json!({"clusterRoleSelectors": [{"matchLabels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}}]})
    );
    let sa = node.get(&format!(
        "{RBAC}/clusterrolebindings/system:controller:job-controller"
    ));
    assert_eq!(
        sa["subjects"],
        json!([{"kind": "ServiceAccount", "name": "job-controller", "namespace": "kube-system"}])
    );

    // a restart writes nothing
    node.restart(dir.path());
    assert_eq!(
        node.versions(),
        first,
        "a restart rewrote bootstrap objects"
    );

    // a user pins system:heapster (autoupdate=false) with fewer rules, trims system:kube-dns
    // (still autoupdate=true) and deletes the system:basic-user binding
    let mut heapster = node.get(&format!("{RBAC}/clusterroles/system:heapster"));
    heapster["metadata"]["annotations"]["rbac.authorization.kubernetes.io/autoupdate"] =
        json!("false");
    heapster["rules"] = json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]);
    let (code, heapster) = node.json(
        "PUT",
        &format!("{RBAC}/clusterroles/system:heapster"),
        &heapster,
    );
    assert_eq!(code, 200, "{heapster}");
    let mut dns = node.get(&format!("{RBAC}/clusterroles/system:kube-dns"));
    dns["rules"] = json!([{"apiGroups": [""], "resources": ["services"], "verbs": ["list"]}]);
    let (code, dns) = node.json("PUT", &format!("{RBAC}/clusterroles/system:kube-dns"), &dns);
    assert_eq!(code, 200, "{dns}");
    let (code, v) = node.json(
        "DELETE",
        &format!("{RBAC}/clusterrolebindings/system:basic-user"),
        &Value::Null,
    );
    assert_eq!(code, 200, "{v}");
    let edited = node.versions();

    node.restart(dir.path());
    let after = node.versions();
    // the pinned role keeps the user's edit
    assert_eq!(
        node.get(&format!("{RBAC}/clusterroles/system:heapster")),
        heapster,
        "an autoupdate=false role was changed"
    );
    // the trimmed role gets its missing rules back, broken down, the kept rule first
    let dns_after = node.get(&format!("{RBAC}/clusterroles/system:kube-dns"));
    assert_ne!(
        after["clusterroles//system:kube-dns"],
        edited["clusterroles//system:kube-dns"]
    );
    assert_eq!(
        dns_after["rules"],
        json!([
            {"apiGroups": [""], "resources": ["services"], "verbs": ["list"]},
            {"apiGroups": [""], "resources": ["endpoints"], "verbs": ["list"]},
            {"apiGroups": [""], "resources": ["endpoints"], "verbs": ["watch"]},
            {"apiGroups": [""], "resources": ["services"], "verbs": ["watch"]},
        ])
    );
    // the deleted binding is back
    let basic = node.get(&format!("{RBAC}/clusterrolebindings/system:basic-user"));
    assert_eq!(
        basic["subjects"],
        json!([{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:authenticated"}])
    );
    // and nothing else was written
    let changed: Vec<&String> = after
        .iter()
        .filter(|(k, v)| edited.get(*k) != Some(v))
        .map(|(k, _)| k)
        .collect();
    assert_eq!(
        changed,
        vec![
            "clusterrolebindings//system:basic-user",
            "clusterroles//system:kube-dns"
        ]
    );

    // and the next restart writes nothing again
    node.restart(dir.path());
    assert_eq!(node.versions(), after);
}
