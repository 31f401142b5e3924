//! ResourceClaimTemplate (`resource.k8s.io/v1`): what it does differently from the
//! generic store.

use serde_json::Value;

use crate::registry::catalog::{Kind, Phase, ResourceDef, Strategy};
use crate::registry::table::Printer;
use crate::registry::validation::Ctx;
use apimachinery::field::Cause;

/// The `resource.k8s.io/v1` kind.
pub static KIND: Kind = Kind::new(&[], &ResourceClaimTemplateStrategy);

/// What ResourceClaimTemplate does differently.
pub struct ResourceClaimTemplateStrategy;

impl Strategy for ResourceClaimTemplateStrategy {
    fn default(&self, _def: &ResourceDef, obj: &mut Value, _phase: Phase) {
        if let Some(spec) = obj.pointer_mut("/spec/spec").and_then(Value::as_object_mut) {
            crate::registry::resource::defaults::device_claim(spec);
        }
    }

    fn validate(&self, def: &ResourceDef, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        Ctx::new(def, old).check(|v, e| v.resource_claim_template(e, obj))
    }

    fn printer(&self) -> Option<&'static Printer> {
        Some(&printer::RESOURCE_CLAIM_TEMPLATE)
    }
}

pub(crate) mod validation {
    use crate::registry::resource::validation as dra;
    use crate::registry::validation::prelude::*;

    impl Ctx<'_> {
        /// `ValidateResourceClaimTemplate` / `ValidateResourceClaimTemplateUpdate` (the
        /// spec is immutable).
        pub(crate) fn resource_claim_template(&self, e: &mut Errs, o: &Value) {
            self.meta(e, o, NameRule::Subdomain, false);
            let empty = Value::Object(Map::new());
            let spec = get(o, "spec").unwrap_or(&empty);
            if let Some(old) = self.old {
                let old_spec = get(old, "spec");
                if !json_eq(Some(spec), old_spec) {
                    e.invalid("spec", Bad::Json(spec.clone()), IMMUTABLE);
                }
                return;
            }
            if let Some(m) = get(spec, "metadata") {
                // ValidateTemplateObjectMeta
                validate_labels(e, obj(m, "labels"), "spec.metadata.labels");
                validate_annotations(e, obj(m, "annotations"), "spec.metadata.annotations");
            }
            let claim_spec = get(spec, "spec").unwrap_or(&empty);
            let devices = get(claim_spec, "devices").unwrap_or(&empty);
            dra::device_claim(e, devices, "spec.spec.devices", false);
        }
    }
}

pub(crate) mod printer {
    use crate::registry::table::prelude::*;

    /// ResourceClaimTemplates.
    pub(crate) static RESOURCE_CLAIM_TEMPLATE: Printer = Printer {
        columns: &[NAME, AGE],
        print: |v, now| Row::of(vec![name(v), age(v, now)]),
    };
}
