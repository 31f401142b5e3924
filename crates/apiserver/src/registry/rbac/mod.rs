//! `rbac.authorization.k8s.io`.

pub mod clusterrole;
pub mod clusterrolebinding;
pub mod role;
pub mod rolebinding;
