//! PriorityClass (`scheduling.k8s.io/v1`): what it does differently from the generic store.

use serde_json::Value;

use crate::registry::catalog::{Kind, Phase, ResourceDef, Strategy};
use crate::registry::table::Printer;
use crate::registry::validation::Ctx;
use apimachinery::field::Cause;
use apimachinery::names::NameRule;

/// The `scheduling.k8s.io/v1` kind.
pub static KIND: Kind = Kind::new(&["pc"], &PriorityClassStrategy);

/// What PriorityClass does differently.
pub struct PriorityClassStrategy;

impl Strategy for PriorityClassStrategy {
    fn uses_generation(&self) -> bool {
        true
    }

    /// `priorityClassStrategy`: 1 at create, never bumped.
    fn bumps_generation(&self, _def: &ResourceDef, _old: &Value, _new: &Value) -> bool {
        false
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
        Some(&printer::PRIORITY_CLASS)
    }
}

pub(crate) mod defaults {
    use crate::registry::defaults::prelude::*;

    /// The kind's defaults in `phase`.
    pub(crate) fn apply(o: &mut Obj, phase: Phase) {
        let _ = phase;
        default_ptr(o, "preemptionPolicy", json!("PreemptLowerPriority"));
        default_ptr(o, "value", json!(0));
    }
}

pub(crate) mod printer {
    use crate::registry::table::prelude::*;

    const PRIORITY_CLASS_DEF: &str = "io.k8s.api.scheduling.v1.PriorityClass";

    /// PriorityClasses.
    pub(crate) static PRIORITY_CLASS: Printer = Printer {
        columns: &[
            NAME,
            integer("Value", field(PRIORITY_CLASS_DEF, "value")),
            boolean("Global-Default", field(PRIORITY_CLASS_DEF, "globalDefault")),
            AGE,
            string(
                "PreemptionPolicy",
                field(PRIORITY_CLASS_DEF, "preemptionPolicy"),
            ),
        ],
        print: |v, now| {
            Row::of(vec![
                name(v),
                json!(int(v, "/value")),
                json!(flag(v, "/globalDefault")),
                age(v, now),
                json!(s(v, "/preemptionPolicy")),
            ])
        },
    };
}
