//! MutatingAdmissionPolicyBinding (`admissionregistration.k8s.io/v1`): what it does differently from the generic store.

use serde_json::Value;

use crate::registry::catalog::{Kind, ResourceDef, Strategy};
use crate::registry::validation::Ctx;
use apimachinery::field::Cause;
use apimachinery::names::NameRule;

/// The `admissionregistration.k8s.io/v1` kind.
pub static KIND: Kind =
    Kind::new(&[], &MutatingAdmissionPolicyBindingStrategy).in_categories(&["api-extensions"]);

/// What MutatingAdmissionPolicyBinding does differently.
pub struct MutatingAdmissionPolicyBindingStrategy;

impl Strategy for MutatingAdmissionPolicyBindingStrategy {
    fn uses_generation(&self) -> bool {
        true
    }

    /// Upstream's `PrepareForUpdate`: the generation moves when `spec` changes.
    fn bumps_generation(&self, _def: &ResourceDef, old: &Value, new: &Value) -> bool {
        old.get("spec") != new.get("spec")
    }

    fn validate(&self, def: &ResourceDef, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        Ctx::new(def, old).meta_only(obj, NameRule::Subdomain)
    }
}
