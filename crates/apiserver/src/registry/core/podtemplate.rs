//! PodTemplate (`core/v1`): what it does differently from the generic store.

use serde_json::Value;

use crate::registry::catalog::{Kind, Phase, ResourceDef, Strategy};
use crate::registry::table::Printer;
use crate::registry::validation::Ctx;
use apimachinery::field::Cause;

/// The `core/v1` kind.
pub static KIND: Kind = Kind::new(&[], &PodTemplateStrategy);

/// What PodTemplate does differently.
pub struct PodTemplateStrategy;

impl Strategy for PodTemplateStrategy {
    fn uses_generation(&self) -> bool {
        true
    }

    /// `podTemplateStrategy`: changes of the template.
    fn bumps_generation(&self, _def: &ResourceDef, old: &Value, new: &Value) -> bool {
        old.get("template") != new.get("template")
    }

    fn default(&self, _def: &ResourceDef, obj: &mut Value, phase: Phase) {
        if let Some(o) = obj.as_object_mut() {
            defaults::apply(o, phase);
        }
    }

    fn validate(&self, def: &ResourceDef, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        Ctx::new(def, old).check(|v, e| v.pod_template(e, obj))
    }

    fn printer(&self) -> Option<&'static Printer> {
        Some(&printer::POD_TEMPLATE)
    }
}

pub(crate) mod validation {
    use crate::registry::core::podspec::validation::*;
    use crate::registry::validation::prelude::*;

    impl Ctx<'_> {
        pub(crate) fn pod_template(&self, e: &mut Errs, o: &Value) {
            self.meta(e, o, NameRule::Subdomain, true);
            let empty = Value::Object(Map::new());
            pod_template_spec(e, get(o, "template").unwrap_or(&empty), "template");
        }
    }
}

pub(crate) mod defaults {
    use crate::registry::defaults::prelude::*;

    /// The kind's defaults in `phase`.
    pub(crate) fn apply(o: &mut Obj, _phase: Phase) {
        if let Some(t) = child(o, "template") {
            crate::registry::core::podspec::defaults::pod_template(t);
        }
    }
}

pub(crate) mod printer {
    use crate::registry::table::prelude::*;

    /// PodTemplates (`core/v1`).
    pub(crate) static POD_TEMPLATE: Printer = Printer {
        columns: &[
            NAME,
            string(
                "Containers",
                text("Names of each container in the template."),
            ),
            string(
                "Images",
                text("Images referenced by each container in the template."),
            ),
            string("Pod Labels", text("The labels for the pod template.")),
        ],
        print: |v, _| {
            let (names, images) = containers(v.pointer("/template/spec"));
            Row::of(vec![
                name(v),
                json!(names),
                json!(images),
                json!(format_labels(v.pointer("/template/metadata/labels"))),
            ])
        },
    };
}
