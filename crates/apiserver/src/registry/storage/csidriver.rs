//! CSIDriver (`storage.k8s.io/v1`): what it does differently from the generic store.

use serde_json::Value;

use crate::registry::catalog::{Kind, Phase, ResourceDef, Strategy};
use crate::registry::table::Printer;
use crate::registry::validation::Ctx;
use apimachinery::field::Cause;
use apimachinery::names::NameRule;

/// The `storage.k8s.io/v1` kind.
pub static KIND: Kind = Kind::new(&[], &CSIDriverStrategy);

/// What CSIDriver does differently.
pub struct CSIDriverStrategy;

impl Strategy for CSIDriverStrategy {
    fn uses_generation(&self) -> bool {
        true
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
        Some(&printer::CSI_DRIVER)
    }
}

pub(crate) mod defaults {
    use crate::registry::defaults::prelude::*;

    /// The kind's defaults in `phase`.
    pub(crate) fn apply(o: &mut Obj, phase: Phase) {
        let _ = phase;
        if let Some(spec) = child_or_insert(o, "spec") {
            default_ptr(spec, "attachRequired", json!(true));
            default_ptr(spec, "podInfoOnMount", json!(false));
            default_ptr(spec, "storageCapacity", json!(false));
            default_ptr(spec, "fsGroupPolicy", json!("ReadWriteOnceWithFSType"));
            if is_empty_coll(spec, "volumeLifecycleModes") {
                spec.insert("volumeLifecycleModes".into(), json!(["Persistent"]));
            }
            default_ptr(spec, "requiresRepublish", json!(false));
            default_ptr(spec, "seLinuxMount", json!(false));
        }
    }
}

pub(crate) mod printer {
    use crate::registry::table::prelude::*;

    const CSI_DRIVER_SPEC: &str = "io.k8s.api.storage.v1.CSIDriverSpec";

    /// CSIDrivers.
    pub(crate) static CSI_DRIVER: Printer = Printer {
        columns: &[
            NAME,
            boolean("AttachRequired", field(CSI_DRIVER_SPEC, "attachRequired")),
            boolean("PodInfoOnMount", field(CSI_DRIVER_SPEC, "podInfoOnMount")),
            boolean("StorageCapacity", field(CSI_DRIVER_SPEC, "storageCapacity")),
            string("TokenRequests", field(CSI_DRIVER_SPEC, "tokenRequests")),
            boolean(
                "RequiresRepublish",
                field(CSI_DRIVER_SPEC, "requiresRepublish"),
            ),
            string("Modes", field(CSI_DRIVER_SPEC, "volumeLifecycleModes")),
            AGE,
        ],
        print: |v, now| {
            let modes: Vec<&str> = arr(v, "/spec/volumeLifecycleModes")
                .iter()
                .filter_map(Value::as_str)
                .collect();
            let tokens = match v.pointer("/spec/tokenRequests").and_then(Value::as_array) {
                Some(list) => list
                    .iter()
                    .map(|t| s(t, "/audience"))
                    .collect::<Vec<_>>()
                    .join(","),
                None => "<unset>".into(),
            };
            Row::of(vec![
                name(v),
                json!(v
                    .pointer("/spec/attachRequired")
                    .and_then(Value::as_bool)
                    .unwrap_or(true)),
                json!(flag(v, "/spec/podInfoOnMount")),
                json!(flag(v, "/spec/storageCapacity")),
                json!(tokens),
                json!(flag(v, "/spec/requiresRepublish")),
                json!(if modes.is_empty() {
                    "<none>".to_string()
                } else {
                    modes.join(",")
                }),
                age(v, now),
            ])
        },
    };
}
