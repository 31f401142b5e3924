//! kube-apiserver's RBAC bootstrap policy (upstream
//! `plugin/pkg/auth/authorizer/rbac/bootstrappolicy`): the ClusterRoles, ClusterRoleBindings,
//! Roles and RoleBindings the server creates on start and keeps up to date
//! ([`reconcile`], upstream `pkg/registry/rbac/reconciliation`), with the default feature
//! gates of Kubernetes 1.36.
//!
//! The tables are in one module per upstream file: [`policy`] (`policy.go`: the
//! user-facing, discovery, node and component roles and their bindings), [`controller`]
//! (`controller_policy.go`: one `system:controller:<name>` role and binding per
//! kube-controller-manager controller) and [`namespace`] (`namespace_policy.go`: the
//! roles of `kube-system` and `kube-public`). They are written with the helpers below,
//! as upstream's with `rbacv1helpers.NewRule(...).Groups(...).Resources(...)`; every
//! object gets the `kubernetes.io/bootstrapping: rbac-defaults` label and the
//! `rbac.authorization.kubernetes.io/autoupdate: "true"` annotation
//! (upstream `addDefaultMetadata`). `tests/fixtures/rbac-bootstrap` holds upstream's
//! test data these tables must reproduce.

pub mod controller;
pub mod namespace;
pub mod policy;
pub mod reconcile;

use serde_json::{json, Map, Value};

/// The label every bootstrap object carries (upstream `bootstrappolicy` `addDefaultMetadata`).
pub const BOOTSTRAP_LABEL: &str = "kubernetes.io/bootstrapping";
/// The value of [`BOOTSTRAP_LABEL`].
pub const BOOTSTRAP_LABEL_VALUE: &str = "rbac-defaults";
/// `"false"` here keeps the server from changing an object on start
/// (upstream `rbacv1.AutoUpdateAnnotationKey`).
pub const AUTOUPDATE_ANNOTATION: &str = "rbac.authorization.kubernetes.io/autoupdate";
/// The API group of the RBAC kinds.
pub const RBAC_GROUP: &str = "rbac.authorization.k8s.io";
/// The prefix of the label that aggregates a role into `admin`, `edit` or `view`.
pub const AGGREGATE_TO_PREFIX: &str = "rbac.authorization.k8s.io/aggregate-to-";

/// The core API group (upstream `legacyGroup`).
pub const LEGACY: &str = "";
/// Read verbs (upstream `Read`).
pub const READ: &[&str] = &["get", "list", "watch"];
/// Read and write verbs (upstream `ReadWrite`).
pub const READ_WRITE: &[&str] = &[
    "get",
    "list",
    "watch",
    "create",
    "update",
    "patch",
    "delete",
    "deletecollection",
];
/// Write verbs (upstream `Write`).
pub const WRITE: &[&str] = &["create", "update", "patch", "delete", "deletecollection"];
/// Read and update verbs (upstream `ReadUpdate`).
pub const READ_UPDATE: &[&str] = &["get", "list", "watch", "update", "patch"];

/// A policy rule, built as upstream's `PolicyRuleBuilder`: every list is sorted when
/// the rule is rendered ([`Rule::to_json`]), as `RuleOrDie` sorts them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rule {
    /// Verbs.
    pub verbs: Vec<String>,
    /// API groups.
    pub api_groups: Vec<String>,
    /// Resources (`pods`, `pods/status`, `*`).
    pub resources: Vec<String>,
    /// Resource names.
    pub resource_names: Vec<String>,
    /// Non-resource URLs (`/healthz`, `/api/*`).
    pub non_resource_urls: Vec<String>,
}

fn owned(xs: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = xs.iter().map(|s| s.to_string()).collect();
    v.sort();
    v.dedup();
    v
}

/// A rule granting `verbs` (upstream `rbacv1helpers.NewRule`).
pub fn rule(verbs: &[&str]) -> Rule {
    Rule {
        verbs: owned(verbs),
        ..Rule::default()
    }
}

/// The rule every controller and component needs to record events, in both event APIs
/// (upstream `eventsRule`).
pub fn event_rule() -> Rule {
    rule(&["create", "update", "patch"])
        .groups(&[LEGACY, "events.k8s.io"])
        .resources(&["events"])
}

impl Rule {
    /// In these API groups.
    pub fn groups(mut self, groups: &[&str]) -> Rule {
        self.api_groups = owned(groups);
        self
    }

    /// On these resources.
    pub fn resources(mut self, resources: &[&str]) -> Rule {
        self.resources = owned(resources);
        self
    }

    /// Only for these object names.
    pub fn names(mut self, names: &[&str]) -> Rule {
        self.resource_names = owned(names);
        self
    }

    /// On these non-resource URLs.
    pub fn urls(mut self, urls: &[&str]) -> Rule {
        self.non_resource_urls = owned(urls);
        self
    }

    /// The `rbac.authorization.k8s.io/v1` `PolicyRule` (empty lists omitted).
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        for (key, list) in [
            ("apiGroups", &self.api_groups),
            ("nonResourceURLs", &self.non_resource_urls),
            ("resourceNames", &self.resource_names),
            ("resources", &self.resources),
            ("verbs", &self.verbs),
        ] {
            if !list.is_empty() || key == "verbs" {
                m.insert(key.into(), json!(list));
            }
        }
        Value::Object(m)
    }
}

/// The metadata of a bootstrap object: its name (and namespace), the bootstrap label plus
/// `labels`, and the autoupdate annotation.
fn metadata(namespace: Option<&str>, name: &str, labels: &[(String, String)]) -> Value {
    let mut l = Map::new();
    l.insert(BOOTSTRAP_LABEL.into(), json!(BOOTSTRAP_LABEL_VALUE));
    for (k, v) in labels {
        l.insert(k.clone(), json!(v));
    }
    let mut m = json!({
        "name": name,
        "labels": l,
        "annotations": {AUTOUPDATE_ANNOTATION: "true"},
    });
    if let Some(ns) = namespace {
        m["namespace"] = json!(ns);
    }
    m
}

/// A bootstrap ClusterRole.
#[derive(Clone, Debug)]
pub struct ClusterRole {
    /// Name.
    pub name: String,
    /// Labels besides the bootstrap label (`aggregate-to-*`).
    pub labels: Vec<(String, String)>,
    /// Names whose `aggregate-to-<name>` label this role's aggregation rule selects.
    pub aggregated_from: Vec<String>,
    /// Rules (none for an aggregated role: the aggregation controller fills them).
    pub rules: Vec<Rule>,
}

impl ClusterRole {
    /// A role `name` with `rules`.
    pub fn new(name: &str, rules: Vec<Rule>) -> ClusterRole {
        ClusterRole {
            name: name.into(),
            labels: Vec::new(),
            aggregated_from: Vec::new(),
            rules,
        }
    }

    /// Labelled to be aggregated into `target` (`admin`, `edit`, `view`).
    pub fn aggregate_to(mut self, target: &str) -> ClusterRole {
        self.labels
            .push((format!("{AGGREGATE_TO_PREFIX}{target}"), "true".into()));
        self
    }

    /// Aggregates the roles labelled `aggregate-to-<source>`.
    pub fn aggregated_from(mut self, source: &str) -> ClusterRole {
        self.aggregated_from.push(source.into());
        self
    }

    /// The `rbac.authorization.k8s.io/v1` object.
    pub fn to_object(&self) -> Value {
        let mut o = json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": metadata(None, &self.name, &self.labels),
        });
        if !self.rules.is_empty() {
            o["rules"] = self.rules.iter().map(Rule::to_json).collect();
        }
        if !self.aggregated_from.is_empty() {
            let selectors: Vec<Value> = self
                .aggregated_from
                .iter()
                .map(|s| json!({"matchLabels": {format!("{AGGREGATE_TO_PREFIX}{s}"): "true"}}))
                .collect();
            o["aggregationRule"] = json!({ "clusterRoleSelectors": selectors });
        }
        o
    }
}

/// A bootstrap Role of one namespace.
#[derive(Clone, Debug)]
pub struct Role {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// Rules.
    pub rules: Vec<Rule>,
}

impl Role {
    /// A role `name` in `namespace` with `rules`.
    pub fn new(namespace: &str, name: &str, rules: Vec<Rule>) -> Role {
        Role {
            namespace: namespace.into(),
            name: name.into(),
            rules,
        }
    }

    /// The `rbac.authorization.k8s.io/v1` object.
    pub fn to_object(&self) -> Value {
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": metadata(Some(&self.namespace), &self.name, &[]),
            "rules": self.rules.iter().map(Rule::to_json).collect::<Vec<_>>(),
        })
    }
}

/// Who a binding grants its role to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Subject {
    /// A user name.
    User(String),
    /// A group.
    Group(String),
    /// A service account (namespace, name).
    ServiceAccount(String, String),
}

impl Subject {
    /// The user `name`.
    pub fn user(name: &str) -> Subject {
        Subject::User(name.into())
    }

    /// The group `name`.
    pub fn group(name: &str) -> Subject {
        Subject::Group(name.into())
    }

    /// The service account `namespace/name`.
    pub fn service_account(namespace: &str, name: &str) -> Subject {
        Subject::ServiceAccount(namespace.into(), name.into())
    }

    /// The `rbac.authorization.k8s.io/v1` `Subject` (upstream's helpers leave the API group
    /// of a service account empty).
    pub fn to_json(&self) -> Value {
        match self {
            Subject::User(n) => json!({"apiGroup": RBAC_GROUP, "kind": "User", "name": n}),
            Subject::Group(n) => json!({"apiGroup": RBAC_GROUP, "kind": "Group", "name": n}),
            Subject::ServiceAccount(ns, n) => {
                json!({"kind": "ServiceAccount", "name": n, "namespace": ns})
            }
        }
    }
}

/// A bootstrap ClusterRoleBinding (no namespace) or RoleBinding.
#[derive(Clone, Debug)]
pub struct Binding {
    /// Namespace of a RoleBinding.
    pub namespace: Option<String>,
    /// Name.
    pub name: String,
    /// `ClusterRole` or `Role`.
    pub role_kind: &'static str,
    /// The role's name.
    pub role: String,
    /// Subjects (a binding may have none: upstream's `system:node`).
    pub subjects: Vec<Subject>,
}

impl Binding {
    /// A ClusterRoleBinding `name` of the ClusterRole `role` (upstream
    /// `NewClusterBinding(role)`, named as its role unless renamed with [`Binding::named`]).
    pub fn cluster(role: &str, subjects: Vec<Subject>) -> Binding {
        Binding {
            namespace: None,
            name: role.into(),
            role_kind: "ClusterRole",
            role: role.into(),
            subjects,
        }
    }

    /// A RoleBinding in `namespace` of the Role `role` (upstream `NewRoleBinding`).
    pub fn namespaced(namespace: &str, role: &str, subjects: Vec<Subject>) -> Binding {
        Binding {
            namespace: Some(namespace.into()),
            name: role.into(),
            role_kind: "Role",
            role: role.into(),
            subjects,
        }
    }

    /// The binding under another name than its role's.
    pub fn named(mut self, name: &str) -> Binding {
        self.name = name.into();
        self
    }

    /// The `rbac.authorization.k8s.io/v1` object.
    pub fn to_object(&self) -> Value {
        let kind = if self.namespace.is_some() {
            "RoleBinding"
        } else {
            "ClusterRoleBinding"
        };
        let mut o = json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": kind,
            "metadata": metadata(self.namespace.as_deref(), &self.name, &[]),
            "roleRef": {"apiGroup": RBAC_GROUP, "kind": self.role_kind, "name": self.role},
        });
        if !self.subjects.is_empty() {
            o["subjects"] = self.subjects.iter().map(Subject::to_json).collect();
        }
        o
    }
}

/// Everything the server keeps on start (upstream `storage_rbac.go`'s `PolicyData`), as
/// `rbac.authorization.k8s.io/v1` objects in the order they are reconciled.
#[derive(Clone, Debug)]
pub struct Policy {
    /// ClusterRoles: [`policy::cluster_roles`] then [`controller::controller_roles`].
    pub cluster_roles: Vec<Value>,
    /// ClusterRoleBindings: [`policy::cluster_role_bindings`] then
    /// [`controller::controller_role_bindings`].
    pub cluster_role_bindings: Vec<Value>,
    /// Roles of `kube-system` and `kube-public` ([`namespace::namespace_roles`]).
    pub roles: Vec<Value>,
    /// RoleBindings of `kube-system` and `kube-public`
    /// ([`namespace::namespace_role_bindings`]).
    pub role_bindings: Vec<Value>,
}

/// The whole bootstrap policy.
pub fn bootstrap_policy() -> Policy {
    Policy {
        cluster_roles: policy::cluster_roles()
            .iter()
            .chain(controller::controller_roles().iter())
            .map(ClusterRole::to_object)
            .collect(),
        cluster_role_bindings: policy::cluster_role_bindings()
            .iter()
            .chain(controller::controller_role_bindings().iter())
            .map(Binding::to_object)
            .collect(),
        roles: namespace::namespace_roles()
            .iter()
            .map(Role::to_object)
            .collect(),
        role_bindings: namespace::namespace_role_bindings()
            .iter()
            .map(Binding::to_object)
            .collect(),
    }
}

#[cfg(test)]
mod tests;
