//! PodDisruptionBudget (`policy/v1`): what it does differently from the generic store.

use serde_json::Value;

use crate::registry::catalog::{Kind, Phase, ResourceDef, Strategy, Subresource};
use crate::registry::table::Printer;
use crate::registry::validation::Ctx;
use apimachinery::field::Cause;

/// The `policy/v1` kind.
pub static KIND: Kind = Kind::new(&["pdb"], &PodDisruptionBudgetStrategy);

/// What PodDisruptionBudget does differently.
pub struct PodDisruptionBudgetStrategy;

impl Strategy for PodDisruptionBudgetStrategy {
    fn subresources(&self) -> &'static [Subresource] {
        &[Subresource::Status]
    }

    fn uses_generation(&self) -> bool {
        true
    }

    fn default(&self, _def: &ResourceDef, obj: &mut Value, phase: Phase) {
        if let Some(o) = obj.as_object_mut() {
            defaults::apply(o, phase);
        }
    }

    fn validate(&self, def: &ResourceDef, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        Ctx::new(def, old).check(|v, e| v.pdb(e, obj))
    }

    fn printer(&self) -> Option<&'static Printer> {
        Some(&printer::PDB)
    }
}

pub(crate) mod validation {
    use crate::registry::validation::prelude::*;

    impl Ctx<'_> {
        pub(crate) fn pdb(&self, e: &mut Errs, o: &Value) {
            let empty = Value::Object(Map::new());
            let spec = get(o, "spec").unwrap_or(&empty);
            let before = e.0.len();
            let (min, max) = (get(spec, "minAvailable"), get(spec, "maxUnavailable"));
            if min.is_some() && max.is_some() {
                e.invalid(
                    "spec",
                    Bad::Json(spec.clone()),
                    "minAvailable and maxUnavailable cannot be both set",
                );
            }
            for (v, p) in [(min, "spec.minAvailable"), (max, "spec.maxUnavailable")] {
                if v.is_some() {
                    validate_positive_int_or_percent(e, v, p);
                    not_more_than_100_percent(e, v, p);
                }
            }
            if let Some(sel) = get(spec, "selector") {
                validate_label_selector(e, sel, "spec.selector");
            }
            if let Some(p) = st(spec, "unhealthyPodEvictionPolicy") {
                if p != "IfHealthyBudget" && p != "AlwaysAllow" {
                    e.not_supported(
                        "spec.unhealthyPodEvictionPolicy",
                        js(p),
                        &["AlwaysAllow", "IfHealthyBudget"],
                    );
                }
            }
            // The generic registry validates object metadata (path-segment names) only
            // after the kind-specific validation passed.
            if e.0.len() == before {
                self.meta(e, o, NameRule::PathSegment, false);
            }
        }
    }
}

pub(crate) mod defaults {
    use crate::registry::defaults::prelude::*;

    /// The kind's defaults in `phase`.
    pub(crate) fn apply(o: &mut Obj, phase: Phase) {
        if phase.create() {
            status_shape(
                o,
                &[
                    ("disruptionsAllowed", json!(0)),
                    ("currentHealthy", json!(0)),
                    ("desiredHealthy", json!(0)),
                    ("expectedPods", json!(0)),
                ],
            );
        }
    }
}

pub(crate) mod printer {
    use crate::registry::table::prelude::*;

    /// PodDisruptionBudgets (`policy/v1`).
    pub(crate) static PDB: Printer = Printer {
        columns: &[
            NAME,
            string(
                "Min Available",
                text("The minimum number of pods that must be available."),
            ),
            string(
                "Max Unavailable",
                text("The maximum number of pods that may be unavailable."),
            ),
            integer(
                "Allowed Disruptions",
                text("Calculated number of pods that may be disrupted at this time."),
            ),
            AGE,
        ],
        print: |v, now| {
            let or_na = |ptr: &str| {
                v.pointer(ptr)
                    .filter(|x| !x.is_null())
                    .map_or_else(|| "N/A".to_string(), int_or_string)
            };
            Row::of(vec![
                name(v),
                json!(or_na("/spec/minAvailable")),
                json!(or_na("/spec/maxUnavailable")),
                json!(int(v, "/status/disruptionsAllowed")),
                age(v, now),
            ])
        },
    };
}
