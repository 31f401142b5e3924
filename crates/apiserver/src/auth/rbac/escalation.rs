//! Privilege-escalation prevention on RBAC writes (upstream
//! `pkg/registry/rbac/{role,clusterrole,rolebinding,clusterrolebinding}/policybased`,
//! `pkg/registry/rbac/escalation_check.go` and `validation.ConfirmNoEscalation`).
//!
//! A user may create or update a Role or ClusterRole only with rules they hold
//! themselves, unless they may `escalate` it; a RoleBinding or ClusterRoleBinding only
//! to a role whose rules they hold, unless they may `bind` it. Members of
//! `system:masters` are exempt, and so are the server's own writes (no user).
//!
//! The write path asks [`prepare`] before it writes (it may call the authorizer, which
//! reads the store) and runs the returned [`Guard`]'s pure check on the object it is
//! about to store (inside the store's write, where the store cannot be read again).

use serde_json::Value;

use crate::auth::rbac::rule::{self, PolicyRule};
use crate::auth::rbac::{aggregate, CLUSTER_ROLES, GROUP, ROLES};
use crate::auth::{Attributes, Authorizer, Decision, RequestInfo, RuleSet, UserInfo};
use crate::machinery::user::SYSTEM_PRIVILEGED_GROUP;
use apimachinery::status::{ApiError, ApiResult};

/// Which RBAC kind a write is of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RbacKind {
    /// `roles`.
    Role,
    /// `clusterroles`.
    ClusterRole,
    /// `rolebindings`.
    RoleBinding,
    /// `clusterrolebindings`.
    ClusterRoleBinding,
}

impl RbacKind {
    /// The kind of `group`/`plural`, when it is an RBAC one.
    pub fn of(group: &str, plural: &str) -> Option<RbacKind> {
        if group != GROUP {
            return None;
        }
        match plural {
            "roles" => Some(RbacKind::Role),
            "clusterroles" => Some(RbacKind::ClusterRole),
            "rolebindings" => Some(RbacKind::RoleBinding),
            "clusterrolebindings" => Some(RbacKind::ClusterRoleBinding),
            _ => None,
        }
    }

    fn plural(self) -> &'static str {
        match self {
            RbacKind::Role => "roles",
            RbacKind::ClusterRole => "clusterroles",
            RbacKind::RoleBinding => "rolebindings",
            RbacKind::ClusterRoleBinding => "clusterrolebindings",
        }
    }

    fn is_binding(self) -> bool {
        matches!(self, RbacKind::RoleBinding | RbacKind::ClusterRoleBinding)
    }
}

/// Reads a stored object: `(storage key of the resource, object key)` → object.
pub type Lookup<'a> = &'a dyn Fn(&str, &str) -> Option<Value>;

/// The check a non-exempt user's RBAC write must pass.
#[derive(Debug)]
pub struct Guard {
    kind: RbacKind,
    user: UserInfo,
    namespace: String,
    /// The rules the user holds (in the write's namespace; cluster-wide for cluster
    /// objects) and the errors met resolving them.
    owner: RuleSet,
}

fn allowed(authorizer: &dyn Authorizer, user: &UserInfo, request: RequestInfo) -> bool {
    authorizer
        .authorize(&Attributes {
            user,
            request: &request,
        })
        .0
        == Decision::Allow
}

fn role_ref(obj: &Value) -> (String, String) {
    let s = |k: &str| {
        obj.pointer(&format!("/roleRef/{k}"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    (s("kind"), s("name"))
}

/// Whether the write of `obj` (the new object of a create, the stored one of an update)
/// by `user` needs the escalation check: `None` for other kinds, no user (the server's
/// own writes), `system:masters`, and users allowed to `escalate` the role or `bind`
/// the binding's role (upstream `EscalationAllowed`, `RoleEscalationAuthorized`,
/// `BindingAuthorized`).
pub fn prepare(
    authorizer: &dyn Authorizer,
    user: Option<&UserInfo>,
    group: &str,
    plural: &str,
    namespace: &str,
    name: &str,
    obj: &Value,
) -> Option<Guard> {
    let kind = RbacKind::of(group, plural)?;
    let user = user?;
    if user.in_group(SYSTEM_PRIVILEGED_GROUP) {
        return None;
    }
    let authorized = if kind.is_binding() {
        let (rk, rn) = role_ref(obj);
        let resource = match rk.as_str() {
            "ClusterRole" => Some("clusterroles"),
            "Role" => Some("roles"),
            _ => None,
        };
        resource.is_some_and(|resource| {
            allowed(
                authorizer,
                user,
                RequestInfo {
                    resource_request: true,
                    verb: "bind".into(),
                    api_group: obj
                        .pointer("/roleRef/apiGroup")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .into(),
                    namespace: namespace.into(),
                    resource: resource.into(),
                    name: rn,
                    ..RequestInfo::default()
                },
            )
        })
    } else {
        allowed(
            authorizer,
            user,
            RequestInfo {
                resource_request: true,
                verb: "escalate".into(),
                api_group: GROUP.into(),
                api_version: "v1".into(),
                namespace: namespace.into(),
                resource: kind.plural().into(),
                name: name.into(),
                ..RequestInfo::default()
            },
        )
    };
    if authorized {
        return None;
    }
    Some(Guard {
        kind,
        user: user.clone(),
        namespace: namespace.to_string(),
        owner: authorizer.rules_for(user, namespace),
    })
}

/// Upstream's `fullAuthority`: everything (what an aggregation rule may gather).
fn full_authority() -> Vec<PolicyRule> {
    vec![
        PolicyRule::resource(&["*"], &["*"], &["*"]),
        PolicyRule::urls(&["*"], &["*"]),
    ]
}

/// Upstream `IsOnlyMutatingGCFields`: the objects differ at most in owner references
/// and finalizers (and what the server maintains).
fn only_gc_fields(old: &Value, new: &Value) -> bool {
    let strip = |v: &Value| {
        let mut c = v.clone();
        if let Some(m) = c.get_mut("metadata").and_then(Value::as_object_mut) {
            for k in [
                "ownerReferences",
                "finalizers",
                "resourceVersion",
                "managedFields",
            ] {
                m.remove(k);
            }
        }
        c
    };
    strip(old) == strip(new)
}

impl Guard {
    fn forbidden(&self, name: &str, message: &str) -> ApiError {
        ApiError::forbidden(format!(
            "{}.{GROUP} {name:?} is forbidden: {message}",
            self.kind.plural()
        ))
        .with_details(GROUP, self.kind.plural(), name)
    }

    /// Upstream `ConfirmNoEscalation`: the rules the user does not hold, as its message.
    fn confirm_no_escalation(&self, rules: &[PolicyRule]) -> Result<(), String> {
        let mut owner = self.owner.resource_rules.clone();
        owner.extend(self.owner.non_resource_rules.iter().cloned());
        let (covered, missing) = rule::covers(&owner, rules);
        if covered {
            return Ok(());
        }
        let mut descriptions: Vec<String> = rule::compact(&missing)
            .iter()
            .map(PolicyRule::compact_string)
            .collect();
        descriptions.sort();
        descriptions.dedup();
        let groups: Vec<String> = self.user.groups.iter().map(|g| format!("{g:?}")).collect();
        let mut msg = format!(
            "user {:?} (groups=[{}]) is attempting to grant RBAC permissions not currently held:\n{}",
            self.user.name,
            groups.join(" "),
            descriptions.join("\n")
        );
        if let Some(e) = aggregate(&self.owner.errors) {
            msg.push_str(&format!("; resolution errors: [{e}]"));
        }
        Err(msg)
    }

    fn check_role(&self, name: &str, obj: &Value, old: Option<&Value>) -> ApiResult<()> {
        self.confirm_no_escalation(&PolicyRule::of_role(obj))
            .map_err(|m| self.forbidden(name, &m))?;
        let rule = obj.get("aggregationRule").filter(|v| !v.is_null());
        let changed = old.is_none_or(|o| o.get("aggregationRule").filter(|v| !v.is_null()) != rule);
        if self.kind == RbacKind::ClusterRole && rule.is_some() && changed {
            self.confirm_no_escalation(&full_authority()).map_err(|_| {
                self.forbidden(
                    name,
                    "must have cluster-admin privileges to use the aggregationRule",
                )
            })?;
        }
        Ok(())
    }

    fn check_binding(&self, name: &str, obj: &Value, lookup: Lookup<'_>) -> ApiResult<()> {
        let (kind, role) = role_ref(obj);
        let rules = match kind.as_str() {
            "ClusterRole" => lookup(CLUSTER_ROLES, &role)
                .map(|r| PolicyRule::of_role(&r))
                .ok_or_else(|| format!("clusterrole.{GROUP} {role:?} not found")),
            "Role" => lookup(ROLES, &format!("{}/{role}", self.namespace))
                .map(|r| PolicyRule::of_role(&r))
                .ok_or_else(|| format!("role.{GROUP} {role:?} not found")),
            k => Err(format!("unsupported role reference kind: {k:?}")),
        }
        .map_err(|m| self.forbidden(name, &m))?;
        self.confirm_no_escalation(&rules)
            .map_err(|m| self.forbidden(name, &m))
    }

    /// The check of a create of `obj` named `name`.
    pub fn check_create(&self, name: &str, obj: &Value, lookup: Lookup<'_>) -> ApiResult<()> {
        if self.kind.is_binding() {
            self.check_binding(name, obj, lookup)
        } else {
            self.check_role(name, obj, None)
        }
    }

    /// The check of an update from `old` to `new`: nothing when only garbage-collection
    /// fields change.
    pub fn check_update(
        &self,
        name: &str,
        old: &Value,
        new: &Value,
        lookup: Lookup<'_>,
    ) -> ApiResult<()> {
        if only_gc_fields(old, new) {
            return Ok(());
        }
        if self.kind.is_binding() {
            self.check_binding(name, new, lookup)
        } else {
            self.check_role(name, new, Some(old))
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::auth::rbac::Policy;

    struct PolicyAuthorizer(Policy);

    impl Authorizer for PolicyAuthorizer {
        fn authorize(&self, attrs: &Attributes<'_>) -> (Decision, String) {
            self.0.authorize(attrs)
        }
        fn rules_for(&self, user: &UserInfo, namespace: &str) -> RuleSet {
            let (rules, err) = self.0.rules_for(user, namespace);
            RuleSet {
                resource_rules: rules,
                errors: err.into_iter().collect(),
                ..RuleSet::default()
            }
        }
    }

    fn authorizer() -> PolicyAuthorizer {
        PolicyAuthorizer(Policy::build(
            vec![
                json!({"metadata": {"name": "pod-reader"}, "rules": [{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]}]}),
                json!({"metadata": {"name": "rbac-writer"}, "rules": [{"verbs": ["create", "update"], "apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles", "rolebindings"]}]}),
                json!({"metadata": {"name": "escalator"}, "rules": [{"verbs": ["escalate"], "apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles"]}]}),
                json!({"metadata": {"name": "binder"}, "rules": [{"verbs": ["bind"], "apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"], "resourceNames": ["admin"]}]}),
            ],
            vec![],
            vec![
                json!({"metadata": {"name": "a"}, "roleRef": {"kind": "ClusterRole", "name": "pod-reader"}, "subjects": [{"kind": "User", "name": "alice"}, {"kind": "User", "name": "bob"}, {"kind": "User", "name": "carol"}]}),
                json!({"metadata": {"name": "b"}, "roleRef": {"kind": "ClusterRole", "name": "escalator"}, "subjects": [{"kind": "User", "name": "bob"}]}),
            ],
            vec![
                json!({"metadata": {"name": "c", "namespace": "ns"}, "roleRef": {"kind": "ClusterRole", "name": "binder"}, "subjects": [{"kind": "User", "name": "carol"}]}),
            ],
        ))
    }

    fn role(verbs: &[&str]) -> Value {
        json!({"metadata": {"name": "r", "namespace": "ns"}, "rules": [{"verbs": verbs, "apiGroups": [""], "resources": ["pods"]}]})
    }

    #[test]
    fn exempt_users() {
        let a = authorizer();
        let admin = UserInfo::new("root", &[SYSTEM_PRIVILEGED_GROUP]);
        let obj = role(&["delete"]);
        assert!(prepare(&a, Some(&admin), GROUP, "roles", "ns", "r", &obj).is_none());
        assert!(prepare(&a, None, GROUP, "roles", "ns", "r", &obj).is_none());
        assert!(prepare(&a, Some(&admin), "", "pods", "ns", "r", &obj).is_none());
        // escalate on roles
        let bob = UserInfo::new("bob", &["system:authenticated"]);
        assert!(prepare(&a, Some(&bob), GROUP, "roles", "ns", "r", &obj).is_none());
        // bind on the admin ClusterRole in ns only
        let carol = UserInfo::new("carol", &["system:authenticated"]);
        let binding =
            json!({"roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": "admin"}});
        assert!(prepare(&a, Some(&carol), GROUP, "rolebindings", "ns", "x", &binding).is_none());
        assert!(prepare(
            &a,
            Some(&carol),
            GROUP,
            "rolebindings",
            "other",
            "x",
            &binding
        )
        .is_some());
    }

    #[test]
    fn roles_only_with_rules_held() {
        let a = authorizer();
        let alice = UserInfo::new("alice", &["system:authenticated", "devs"]);
        let none: Lookup<'_> = &|_, _| None;
        let ok = role(&["get"]);
        let g = prepare(&a, Some(&alice), GROUP, "roles", "ns", "r", &ok).expect("guard");
        g.check_create("r", &ok, none).expect("held rules");
        let bad = role(&["get", "delete", "create"]);
        let e = g.check_create("r", &bad, none).expect_err("escalation");
        assert_eq!(e.code, 403);
        assert_eq!(
            e.message,
            "roles.rbac.authorization.k8s.io \"r\" is forbidden: user \"alice\" (groups=[\"system:authenticated\" \"devs\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"pods\"], Verbs:[\"delete\" \"create\"]}"
        );
        // an update changing only owner references is not checked
        let mut owned = bad.clone();
        owned["metadata"]["ownerReferences"] = json!([{"name": "x"}]);
        g.check_update("r", &bad, &owned, none)
            .expect("gc fields only");
        g.check_update("r", &ok, &bad, none)
            .expect_err("escalating update");
    }

    #[test]
    fn aggregation_rule_needs_everything() {
        let a = authorizer();
        let alice = UserInfo::new("alice", &[]);
        let none: Lookup<'_> = &|_, _| None;
        let cr = json!({"metadata": {"name": "agg"}, "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"x": "y"}}]}, "rules": []});
        let g = prepare(&a, Some(&alice), GROUP, "clusterroles", "", "agg", &cr).expect("guard");
        let e = g.check_create("agg", &cr, none).expect_err("aggregation");
        assert_eq!(
            e.message,
            "clusterroles.rbac.authorization.k8s.io \"agg\" is forbidden: must have cluster-admin privileges to use the aggregationRule"
        );
        // the same rule on update is not re-checked (the controller fills in rules)
        let mut filled = cr.clone();
        filled["rules"] = json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]);
        g.check_update("agg", &cr, &filled, none)
            .expect("rules held, rule unchanged");
    }

    #[test]
    fn bindings_to_roles_held() {
        let a = authorizer();
        let alice = UserInfo::new("alice", &[]);
        let roles = |r: &str, k: &str| -> Option<Value> {
            match (r, k) {
                (CLUSTER_ROLES, "pod-reader") => Some(
                    json!({"rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]}),
                ),
                (CLUSTER_ROLES, "admin") => Some(
                    json!({"rules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}]}),
                ),
                _ => None,
            }
        };
        let b = |role: &str| json!({"roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": role}});
        let g = prepare(
            &a,
            Some(&alice),
            GROUP,
            "rolebindings",
            "ns",
            "x",
            &b("pod-reader"),
        )
        .expect("guard");
        g.check_create("x", &b("pod-reader"), &roles).expect("held");
        let e = g
            .check_create("x", &b("admin"), &roles)
            .expect_err("not held");
        assert!(e.message.starts_with("rolebindings.rbac.authorization.k8s.io \"x\" is forbidden: user \"alice\" (groups=[]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"*\"], Resources:[\"*\"], Verbs:[\"*\"]}"), "{}", e.message);
        let e = g
            .check_create("x", &b("missing"), &roles)
            .expect_err("missing role");
        assert_eq!(
            e.message,
            "rolebindings.rbac.authorization.k8s.io \"x\" is forbidden: clusterrole.rbac.authorization.k8s.io \"missing\" not found"
        );
    }
}
