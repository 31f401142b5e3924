//! The RBAC authorizer (upstream `plugin/pkg/auth/authorizer/rbac/rbac.go` and the rule
//! resolver of `pkg/registry/rbac/validation/rule.go`).
//!
//! A request is allowed when a rule of a role bound to its user allows it: the
//! ClusterRoleBindings apply everywhere, the RoleBindings of the request's namespace in
//! it. The bindings are indexed by subject ([`Policy`]) and the index is rebuilt only
//! when one of the four RBAC tables changed ([`PolicySource`]), so a request looks up
//! its user's bindings instead of scanning them all.
//!
//! [`bootstrap`] is the policy the server creates on start.

pub mod bootstrap;
pub mod escalation;
pub mod rule;

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, RwLock};

use serde_json::Value;

use crate::auth::{Attributes, Authorizer, Decision, RuleSet, UserInfo};
use crate::storage::store::{Store, Table};
pub use rule::PolicyRule;

/// The API group of RBAC objects.
pub const GROUP: &str = "rbac.authorization.k8s.io";
/// Storage key of ClusterRoles.
pub const CLUSTER_ROLES: &str = "rbac.authorization.k8s.io/clusterroles";
/// Storage key of Roles.
pub const ROLES: &str = "rbac.authorization.k8s.io/roles";
/// Storage key of ClusterRoleBindings.
pub const CLUSTER_ROLE_BINDINGS: &str = "rbac.authorization.k8s.io/clusterrolebindings";
/// Storage key of RoleBindings.
pub const ROLE_BINDINGS: &str = "rbac.authorization.k8s.io/rolebindings";

/// The prefix of service account user names.
pub const SERVICE_ACCOUNT_PREFIX: &str = "system:serviceaccount:";

/// A binding's subject.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Subject {
    /// `User`, `Group` or `ServiceAccount`.
    pub kind: String,
    /// The subject's API group.
    pub api_group: String,
    /// Name.
    pub name: String,
    /// A service account's namespace (empty: the binding's).
    pub namespace: String,
}

impl Subject {
    fn from_json(v: &Value) -> Subject {
        let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        Subject {
            kind: s("kind"),
            api_group: s("apiGroup"),
            name: s("name"),
            namespace: s("namespace"),
        }
    }

    /// Upstream `describeSubject`: `User "u"`, `ServiceAccount "name/ns"`.
    pub fn describe(&self, binding_namespace: &str) -> String {
        if self.kind == "ServiceAccount" {
            let ns = if self.namespace.is_empty() {
                binding_namespace
            } else {
                &self.namespace
            };
            format!("{} {:?}", self.kind, format!("{}/{}", self.name, ns))
        } else {
            format!("{} {:?}", self.kind, self.name)
        }
    }

    /// The user name this subject names, for `User` and `ServiceAccount` subjects
    /// (`system:serviceaccount:ns:name`; a service account in no namespace names nobody).
    fn user_key(&self, binding_namespace: &str) -> Option<String> {
        match self.kind.as_str() {
            "User" => Some(self.name.clone()),
            "ServiceAccount" => {
                let ns = if self.namespace.is_empty() {
                    binding_namespace
                } else {
                    &self.namespace
                };
                (!ns.is_empty()).then(|| service_account_user(ns, &self.name))
            }
            _ => None,
        }
    }
}

/// The user name of service account `name` in `namespace`.
pub fn service_account_user(namespace: &str, name: &str) -> String {
    format!("{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}")
}

/// Upstream `appliesToUser`.
pub fn applies_to_user(user: &UserInfo, subject: &Subject, namespace: &str) -> bool {
    match subject.kind.as_str() {
        "User" => user.name == subject.name,
        "Group" => user.in_group(&subject.name),
        "ServiceAccount" => subject.user_key(namespace).is_some_and(|u| u == user.name),
        _ => false,
    }
}

/// Upstream `appliesTo`: the index of the first subject that applies to the user.
pub fn applies_to(user: &UserInfo, subjects: &[Subject], namespace: &str) -> Option<usize> {
    subjects
        .iter()
        .position(|s| applies_to_user(user, s, namespace))
}

/// A RoleBinding (namespace set) or ClusterRoleBinding.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Binding {
    /// Name.
    pub name: String,
    /// Namespace; empty for a ClusterRoleBinding.
    pub namespace: String,
    /// `roleRef.kind` (`Role` or `ClusterRole`).
    pub role_kind: String,
    /// `roleRef.name`.
    pub role_name: String,
    /// Subjects.
    pub subjects: Vec<Subject>,
}

impl Binding {
    /// A binding as stored.
    pub fn from_json(v: &Value) -> Binding {
        let meta = |k: &str| {
            v.pointer(&format!("/metadata/{k}"))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        let rr = |k: &str| {
            v.pointer(&format!("/roleRef/{k}"))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        Binding {
            name: meta("name"),
            namespace: meta("namespace"),
            role_kind: rr("kind"),
            role_name: rr("name"),
            subjects: v
                .get("subjects")
                .and_then(Value::as_array)
                .map(|a| a.iter().map(Subject::from_json).collect())
                .unwrap_or_default(),
        }
    }
}

/// Where a rule came from (upstream's binding describers).
pub struct Source<'a> {
    /// The binding.
    pub binding: &'a Binding,
    /// The subject of it that applies.
    pub subject: &'a Subject,
}

impl fmt::Display for Source<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.binding;
        if b.namespace.is_empty() {
            write!(
                f,
                "ClusterRoleBinding {:?} of {} {:?} to {}",
                b.name,
                b.role_kind,
                b.role_name,
                self.subject.describe("")
            )
        } else {
            write!(
                f,
                "RoleBinding {:?} of {} {:?} to {}",
                format!("{}/{}", b.name, b.namespace),
                b.role_kind,
                b.role_name,
                self.subject.describe(&b.namespace)
            )
        }
    }
}

/// Bindings of one scope indexed by the user names and groups their subjects name.
#[derive(Default, Debug)]
struct Scope {
    bindings: Vec<Binding>,
    by_user: HashMap<String, Vec<usize>>,
    by_group: HashMap<String, Vec<usize>>,
}

impl Scope {
    fn build(mut bindings: Vec<Binding>) -> Scope {
        bindings.sort_by(|a, b| a.name.cmp(&b.name));
        let mut s = Scope {
            bindings,
            ..Scope::default()
        };
        for (i, b) in s.bindings.iter().enumerate() {
            for subj in &b.subjects {
                if subj.kind == "Group" {
                    s.by_group.entry(subj.name.clone()).or_default().push(i);
                } else if let Some(u) = subj.user_key(&b.namespace) {
                    s.by_user.entry(u).or_default().push(i);
                }
            }
        }
        s
    }

    /// The bindings that may apply to `user`, in name order.
    fn candidates(&self, user: &UserInfo) -> Vec<usize> {
        let mut c: Vec<usize> = Vec::new();
        if let Some(v) = self.by_user.get(&user.name) {
            c.extend(v);
        }
        for g in &user.groups {
            if let Some(v) = self.by_group.get(g) {
                c.extend(v);
            }
        }
        c.sort_unstable();
        c.dedup();
        c
    }
}

/// The RBAC objects at one moment, indexed for lookups by subject.
#[derive(Default, Debug)]
pub struct Policy {
    cluster_roles: HashMap<String, Vec<PolicyRule>>,
    roles: HashMap<(String, String), Vec<PolicyRule>>,
    cluster: Scope,
    namespaced: HashMap<String, Scope>,
}

fn values(table: &Table) -> impl Iterator<Item = Value> + '_ {
    table.values().filter_map(|o| o.value().ok())
}

fn meta_str<'a>(v: &'a Value, k: &str) -> &'a str {
    v.get("metadata")
        .and_then(|m| m.get(k))
        .and_then(Value::as_str)
        .unwrap_or("")
}

impl Policy {
    /// The index of ClusterRoles, Roles, ClusterRoleBindings and RoleBindings.
    pub fn build(
        cluster_roles: impl IntoIterator<Item = Value>,
        roles: impl IntoIterator<Item = Value>,
        cluster_bindings: impl IntoIterator<Item = Value>,
        role_bindings: impl IntoIterator<Item = Value>,
    ) -> Policy {
        let cluster_roles = cluster_roles
            .into_iter()
            .map(|r| (meta_str(&r, "name").to_string(), PolicyRule::of_role(&r)))
            .collect();
        let roles = roles
            .into_iter()
            .map(|r| {
                (
                    (
                        meta_str(&r, "namespace").to_string(),
                        meta_str(&r, "name").to_string(),
                    ),
                    PolicyRule::of_role(&r),
                )
            })
            .collect();
        let cluster = Scope::build(
            cluster_bindings
                .into_iter()
                .map(|b| {
                    let mut b = Binding::from_json(&b);
                    b.namespace.clear();
                    b
                })
                .collect(),
        );
        let mut by_ns: HashMap<String, Vec<Binding>> = HashMap::new();
        for b in role_bindings {
            let b = Binding::from_json(&b);
            by_ns.entry(b.namespace.clone()).or_default().push(b);
        }
        Policy {
            cluster_roles,
            roles,
            cluster,
            namespaced: by_ns
                .into_iter()
                .map(|(ns, bs)| (ns, Scope::build(bs)))
                .collect(),
        }
    }

    fn from_tables(t: &[Table; 4]) -> Policy {
        Policy::build(values(&t[0]), values(&t[1]), values(&t[2]), values(&t[3]))
    }

    /// The rules a role reference grants (upstream `GetRoleReferenceRules`), or the
    /// error upstream's listers give.
    pub fn role_reference_rules(
        &self,
        kind: &str,
        name: &str,
        namespace: &str,
    ) -> Result<&[PolicyRule], String> {
        match kind {
            "Role" => self
                .roles
                .get(&(namespace.to_string(), name.to_string()))
                .map(Vec::as_slice)
                .ok_or_else(|| format!("role.{GROUP} {name:?} not found")),
            "ClusterRole" => self
                .cluster_roles
                .get(name)
                .map(Vec::as_slice)
                .ok_or_else(|| format!("clusterrole.{GROUP} {name:?} not found")),
            k => Err(format!("unsupported role reference kind: {k:?}")),
        }
    }

    /// Visit the rules granted to `user` in `namespace` (empty: cluster-wide only) with
    /// their sources, and resolution errors, until `visit` returns `false` (upstream
    /// `VisitRulesFor`).
    pub fn visit_rules_for<F>(&self, user: &UserInfo, namespace: &str, mut visit: F)
    where
        F: FnMut(Option<&Source<'_>>, Option<&PolicyRule>, Option<&str>) -> bool,
    {
        let mut scopes: Vec<(&Scope, &str)> = vec![(&self.cluster, "")];
        if !namespace.is_empty() {
            if let Some(s) = self.namespaced.get(namespace) {
                scopes.push((s, namespace));
            }
        }
        for (scope, ns) in scopes {
            for i in scope.candidates(user) {
                let b = &scope.bindings[i];
                let Some(si) = applies_to(user, &b.subjects, ns) else {
                    continue;
                };
                match self.role_reference_rules(&b.role_kind, &b.role_name, ns) {
                    Err(e) => {
                        if !visit(None, None, Some(&e)) {
                            return;
                        }
                    }
                    Ok(rules) => {
                        let source = Source {
                            binding: b,
                            subject: &b.subjects[si],
                        };
                        for r in rules {
                            if !visit(Some(&source), Some(r), None) {
                                return;
                            }
                        }
                    }
                }
            }
        }
    }

    /// Every rule granted to `user` in `namespace`, and the resolution errors as one
    /// message (upstream `RulesFor` with its aggregate error).
    pub fn rules_for(&self, user: &UserInfo, namespace: &str) -> (Vec<PolicyRule>, Option<String>) {
        let mut rules = Vec::new();
        let mut errors = Vec::new();
        self.visit_rules_for(user, namespace, |_, r, e| {
            if let Some(r) = r {
                rules.push(r.clone());
            }
            if let Some(e) = e {
                errors.push(e.to_string());
            }
            true
        });
        (rules, aggregate(&errors))
    }

    /// The RBAC decision for a request (upstream `RBACAuthorizer.Authorize`).
    pub fn authorize(&self, attrs: &Attributes<'_>) -> (Decision, String) {
        let mut reason = None;
        let mut errors = Vec::new();
        self.visit_rules_for(attrs.user, &attrs.request.namespace, |src, r, e| {
            if let (Some(src), Some(r)) = (src, r) {
                if rule::rule_allows(attrs.request, r) {
                    reason = Some(format!("RBAC: allowed by {src}"));
                    return false;
                }
            }
            if let Some(e) = e {
                errors.push(e.to_string());
            }
            true
        });
        match reason {
            Some(r) => (Decision::Allow, r),
            None => (
                Decision::NoOpinion,
                aggregate(&errors)
                    .map(|e| format!("RBAC: {e}"))
                    .unwrap_or_default(),
            ),
        }
    }
}

/// Upstream's `utilerrors.NewAggregate(errs).Error()`: one message as it is, several
/// (duplicates dropped) as `[a, b]`.
pub fn aggregate(errors: &[String]) -> Option<String> {
    match errors {
        [] => None,
        [one] => Some(one.clone()),
        many => {
            let mut seen: Vec<&str> = Vec::new();
            for e in many {
                if !seen.contains(&e.as_str()) {
                    seen.push(e);
                }
            }
            if seen.len() == 1 {
                Some(seen[0].to_string())
            } else {
                Some(format!("[{}]", seen.join(", ")))
            }
        }
    }
}

struct Cached {
    rv: u64,
    tables: [Table; 4],
    policy: Arc<Policy>,
}

/// The current [`Policy`] of a store, rebuilt only when an RBAC table changed: a
/// request compares the store's resourceVersion, and when it moved, whether the four
/// tables are still the same (persistent maps: a pointer comparison).
pub struct PolicySource {
    store: Arc<Store>,
    cached: RwLock<Option<Cached>>,
}

impl PolicySource {
    /// The policy of `store`.
    pub fn new(store: Arc<Store>) -> PolicySource {
        PolicySource {
            store,
            cached: RwLock::new(None),
        }
    }

    /// The policy as stored now.
    pub fn policy(&self) -> Arc<Policy> {
        let rv = self.store.current_rv();
        // the common case: nothing was written since the last look (a shared lock)
        if let Some(c) = self
            .cached
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .filter(|c| c.rv == rv)
        {
            return Arc::clone(&c.policy);
        }
        let mut guard = self.cached.write().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = guard.as_ref().filter(|c| c.rv == rv) {
            return Arc::clone(&c.policy);
        }
        let tables = [CLUSTER_ROLES, ROLES, CLUSTER_ROLE_BINDINGS, ROLE_BINDINGS]
            .map(|k| self.store.snapshot(k).table);
        if let Some(c) = guard.as_mut() {
            if c.tables.iter().zip(&tables).all(|(a, b)| a.ptr_eq(b)) {
                c.rv = rv;
                return Arc::clone(&c.policy);
            }
        }
        let policy = Arc::new(Policy::from_tables(&tables));
        *guard = Some(Cached {
            rv,
            tables,
            policy: Arc::clone(&policy),
        });
        policy
    }
}

/// `--authorization-mode=RBAC`'s authorizer (after the privileged groups).
pub struct RbacAuthorizer {
    source: Arc<PolicySource>,
}

impl RbacAuthorizer {
    /// An authorizer reading the RBAC objects of `store`.
    pub fn new(store: Arc<Store>) -> RbacAuthorizer {
        RbacAuthorizer {
            source: Arc::new(PolicySource::new(store)),
        }
    }
}

impl Authorizer for RbacAuthorizer {
    fn authorize(&self, attrs: &Attributes<'_>) -> (Decision, String) {
        self.source.policy().authorize(attrs)
    }

    fn rules_for(&self, user: &UserInfo, namespace: &str) -> RuleSet {
        let (rules, error) = self.source.policy().rules_for(user, namespace);
        let mut set = RuleSet::default();
        for r in rules {
            if !r.resources.is_empty() {
                set.resource_rules.push(PolicyRule {
                    non_resource_urls: Vec::new(),
                    ..r.clone()
                });
            }
            if !r.non_resource_urls.is_empty() {
                set.non_resource_rules
                    .push(PolicyRule::urls(&[], &[]).with(r.verbs, r.non_resource_urls));
            }
        }
        set.errors.extend(error);
        set
    }
}

impl PolicyRule {
    fn with(mut self, verbs: Vec<String>, urls: Vec<String>) -> PolicyRule {
        self.verbs = verbs;
        self.non_resource_urls = urls;
        self
    }
}

#[cfg(test)]
mod tests;
