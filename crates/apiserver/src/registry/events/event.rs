//! Event (`events.k8s.io/v1`): what it does differently from the generic store.

use serde_json::Value;

use crate::registry::catalog::{Kind, ResourceDef, Strategy};
use crate::registry::table::Printer;
use crate::registry::validation::Ctx;
use apimachinery::field::Cause;

/// The `events.k8s.io/v1` kind.
pub static KIND: Kind = Kind::new(&["ev"], &EventStrategy).stored_as("", "v1");

/// What Event does differently.
pub struct EventStrategy;

impl Strategy for EventStrategy {
    fn validate(&self, def: &ResourceDef, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        Ctx::new(def, old).check(|v, e| v.event(e, obj, true))
    }

    fn printer(&self) -> Option<&'static Printer> {
        Some(&crate::registry::core::event::printer::EVENT)
    }

    fn convert(&self, obj: Value, from: &str, to: &str) -> Result<Value, String> {
        crate::registry::core::event::conversion::convert(from, to, obj)
    }
}
