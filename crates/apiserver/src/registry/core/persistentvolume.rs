//! PersistentVolume (`core/v1`): what it does differently from the generic store.

use serde_json::Value;

use crate::registry::catalog::{Kind, ResourceDef, Subresource};
use crate::registry::catalog::{Phase, Strategy};
use crate::registry::table::Printer;
use crate::registry::validation::Ctx;
use apimachinery::field::Cause;
use apimachinery::names::NameRule;

/// The `core/v1` kind.
pub static KIND: Kind = Kind::new(&["pv"], &PersistentVolumeStrategy);

/// What PersistentVolume does differently.
pub struct PersistentVolumeStrategy;

impl Strategy for PersistentVolumeStrategy {
    fn subresources(&self) -> &'static [Subresource] {
        &[Subresource::Status]
    }

    fn default(&self, def: &ResourceDef, obj: &mut Value, phase: Phase) {
        crate::registry::defaults::legacy(def, obj, phase);
    }

    fn validate(&self, def: &ResourceDef, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        Ctx::new(def, old).meta_only(obj, NameRule::Subdomain)
    }

    fn printer(&self) -> Option<&'static Printer> {
        crate::registry::table::legacy("", "PersistentVolume")
    }
}
