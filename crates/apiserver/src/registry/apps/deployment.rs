//! Deployment (`apps/v1`): what it does differently from the generic store.

use serde_json::Value;

use crate::registry::catalog::{Kind, ResourceDef, Subresource};
use crate::registry::catalog::{Phase, StatusMeta, Strategy};
use crate::registry::table::Printer;
use crate::registry::validation::Ctx;
use apimachinery::field::Cause;

/// The `apps/v1` kind.
pub static KIND: Kind = Kind::new(&["deploy"], &DeploymentStrategy).in_all();

/// What Deployment does differently.
pub struct DeploymentStrategy;

impl Strategy for DeploymentStrategy {
    fn subresources(&self) -> &'static [Subresource] {
        &[Subresource::Scale, Subresource::Status]
    }

    fn uses_generation(&self) -> bool {
        true
    }

    fn status_update_metadata(&self) -> StatusMeta {
        StatusMeta::KeepExcept(&["labels"])
    }

    fn default(&self, def: &ResourceDef, obj: &mut Value, phase: Phase) {
        crate::registry::defaults::legacy(def, obj, phase);
    }

    fn validate(&self, def: &ResourceDef, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        Ctx::new(def, old).legacy(obj)
    }

    fn printer(&self) -> Option<&'static Printer> {
        crate::registry::table::legacy("apps", "Deployment")
    }
}
