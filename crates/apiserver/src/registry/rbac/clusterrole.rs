//! ClusterRole (`rbac.authorization.k8s.io/v1`): what it does differently from the generic store.

use serde_json::Value;

use crate::registry::catalog::{Kind, ResourceDef, Strategy};
use crate::registry::validation::Ctx;
use apimachinery::field::Cause;
use apimachinery::names::NameRule;

/// The `rbac.authorization.k8s.io/v1` kind.
pub static KIND: Kind = Kind::new(&[], &ClusterRoleStrategy);

/// What ClusterRole does differently.
pub struct ClusterRoleStrategy;

impl Strategy for ClusterRoleStrategy {
    fn validate(&self, def: &ResourceDef, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        Ctx::new(def, old).meta_only(obj, NameRule::PathSegment)
    }
}
