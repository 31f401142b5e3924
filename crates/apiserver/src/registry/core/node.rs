//! Node (`core/v1`): what it does differently from the generic store.

use serde_json::Value;

use crate::registry::catalog::{Kind, ResourceDef, Subresource};
use crate::registry::catalog::{Phase, StatusMeta, Strategy};
use crate::registry::table::Printer;
use crate::registry::validation::Ctx;
use apimachinery::field::Cause;
use apimachinery::names::NameRule;

/// The `core/v1` kind.
pub static KIND: Kind = Kind::new(&["no"], &NodeStrategy);

/// What Node does differently.
pub struct NodeStrategy;

impl Strategy for NodeStrategy {
    fn subresources(&self) -> &'static [Subresource] {
        &[Subresource::Status]
    }

    fn selectable_fields(&self) -> &'static [&'static str] {
        &["spec.unschedulable"]
    }

    fn status_update_metadata(&self) -> StatusMeta {
        StatusMeta::KeepExcept(&[])
    }

    /// Kubelets register nodes with their status (upstream node `PrepareForCreate` keeps
    /// it).
    fn prepare_for_create(&self, _def: &ResourceDef, _obj: &mut Value) {}

    fn default(&self, _def: &ResourceDef, obj: &mut Value, phase: Phase) {
        if let Some(o) = obj.as_object_mut() {
            defaults::apply(o, phase);
        }
    }

    fn validate(&self, def: &ResourceDef, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        Ctx::new(def, old).meta_only(obj, NameRule::Subdomain)
    }

    fn printer(&self) -> Option<&'static Printer> {
        crate::registry::table::legacy("", "Node")
    }
}

pub(crate) mod defaults {
    use crate::registry::defaults::prelude::*;

    /// The kind's defaults in `phase`.
    pub(crate) fn apply(o: &mut Obj, phase: Phase) {
        let _ = phase;
        if let Some(status) = child(o, "status") {
            if is_nil(status, "allocatable") {
                if let Some(cap @ Value::Object(_)) = status.get("capacity") {
                    let cap = cap.clone();
                    status.insert("allocatable".into(), cap);
                }
            }
            resource_list(status, "capacity", true);
            resource_list(status, "allocatable", true);
        }
    }
}
