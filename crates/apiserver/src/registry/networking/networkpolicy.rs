//! NetworkPolicy (`networking.k8s.io/v1`): what it does differently from the generic store.

use serde_json::Value;

use crate::registry::catalog::{Kind, ResourceDef};
use crate::registry::catalog::{Phase, Strategy};
use crate::registry::table::Printer;
use crate::registry::validation::Ctx;
use apimachinery::field::Cause;
use apimachinery::names::NameRule;

/// The `networking.k8s.io/v1` kind.
pub static KIND: Kind = Kind::new(&["netpol"], &NetworkPolicyStrategy);

/// What NetworkPolicy does differently.
pub struct NetworkPolicyStrategy;

impl Strategy for NetworkPolicyStrategy {
    fn uses_generation(&self) -> bool {
        true
    }

    fn default(&self, def: &ResourceDef, obj: &mut Value, phase: Phase) {
        crate::registry::defaults::legacy(def, obj, phase);
    }

    fn validate(&self, def: &ResourceDef, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        Ctx::new(def, old).meta_only(obj, NameRule::Subdomain)
    }

    fn printer(&self) -> Option<&'static Printer> {
        crate::registry::table::legacy("networking.k8s.io", "NetworkPolicy")
    }
}
