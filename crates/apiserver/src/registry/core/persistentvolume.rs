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

    fn default(&self, _def: &ResourceDef, obj: &mut Value, phase: Phase) {
        if let Some(o) = obj.as_object_mut() {
            defaults::apply(o, phase);
        }
    }

    fn validate(&self, def: &ResourceDef, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        Ctx::new(def, old).meta_only(obj, NameRule::Subdomain)
    }

    fn printer(&self) -> Option<&'static Printer> {
        crate::registry::table::legacy("", "PersistentVolume")
    }
}

pub(crate) mod defaults {
    use crate::registry::core::podspec::defaults::volume_sources;
    use crate::registry::defaults::prelude::*;

    /// The kind's defaults in `phase`.
    pub(crate) fn apply(o: &mut Obj, phase: Phase) {
        let _ = phase;
        persistent_volume(o);
    }

    pub(crate) fn persistent_volume(o: &mut Obj) {
        if let Some(spec) = child(o, "spec") {
            default_str(spec, "persistentVolumeReclaimPolicy", "Retain");
            default_ptr(spec, "volumeMode", json!("Filesystem"));
            resource_list(spec, "capacity", true);
            volume_sources(spec);
        }
        if let Some(status) = child_or_insert(o, "status") {
            default_str(status, "phase", "Pending");
        }
    }
}
