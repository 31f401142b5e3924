//! `rbac.authorization.k8s.io`.

pub mod clusterrole;
pub mod clusterrolebinding;
pub mod role;
pub mod rolebinding;

use crate::registry::defaults::prelude::*;

/// Defaults of RoleBindings and ClusterRoleBindings: the role reference's and the
/// subjects' API groups.
pub(crate) fn binding_defaults(o: &mut Obj) {
    if let Some(rr) = child(o, "roleRef") {
        default_str(rr, "apiGroup", "rbac.authorization.k8s.io");
    }
    each_obj(o, "subjects", |s| {
        if is_empty_str(s, "apiGroup") {
            match str_at(s, "kind") {
                "ServiceAccount" => {
                    s.insert("apiGroup".into(), json!(""));
                }
                "User" | "Group" => {
                    s.insert("apiGroup".into(), json!("rbac.authorization.k8s.io"));
                }
                _ => {}
            }
        }
    });
}
