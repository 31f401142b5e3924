//! StorageClass (`storage.k8s.io/v1`): what it does differently from the generic store.

use serde_json::Value;

use crate::registry::catalog::{Kind, Phase, ResourceDef, Strategy};
use crate::registry::table::Printer;
use crate::registry::validation::Ctx;
use apimachinery::field::Cause;
use apimachinery::names::NameRule;

/// The `storage.k8s.io/v1` kind.
pub static KIND: Kind = Kind::new(&["sc"], &StorageClassStrategy);

/// What StorageClass does differently.
pub struct StorageClassStrategy;

impl Strategy for StorageClassStrategy {
    fn default(&self, _def: &ResourceDef, obj: &mut Value, phase: Phase) {
        if let Some(o) = obj.as_object_mut() {
            defaults::apply(o, phase);
        }
    }

    fn validate(&self, def: &ResourceDef, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        Ctx::new(def, old).meta_only(obj, NameRule::Subdomain)
    }

    fn printer(&self) -> Option<&'static Printer> {
        Some(&printer::STORAGE_CLASS)
    }
}

pub(crate) mod defaults {
    use crate::registry::defaults::prelude::*;

    /// The kind's defaults in `phase`.
    pub(crate) fn apply(o: &mut Obj, phase: Phase) {
        let _ = phase;
        default_ptr(o, "reclaimPolicy", json!("Delete"));
        default_ptr(o, "volumeBindingMode", json!("Immediate"));
    }
}

pub(crate) mod printer {
    use crate::registry::table::prelude::*;

    const STORAGE_CLASS_DEF: &str = "io.k8s.api.storage.v1.StorageClass";

    /// StorageClasses.
    pub(crate) static STORAGE_CLASS: Printer = Printer {
        columns: &[
            NAME,
            string("Provisioner", field(STORAGE_CLASS_DEF, "provisioner")),
            string("ReclaimPolicy", field(STORAGE_CLASS_DEF, "reclaimPolicy")),
            string(
                "VolumeBindingMode",
                field(STORAGE_CLASS_DEF, "volumeBindingMode"),
            ),
            string(
                "AllowVolumeExpansion",
                field(STORAGE_CLASS_DEF, "allowVolumeExpansion"),
            ),
            AGE,
        ],
        print: |v, now| {
            let mut n = s(v, "/metadata/name").to_string();
            if annotation_true(v, "storageclass.kubernetes.io/is-default-class")
                || annotation_true(v, "storageclass.beta.kubernetes.io/is-default-class")
            {
                n.push_str(" (default)");
            }
            Row::of(vec![
                json!(n),
                json!(s(v, "/provisioner")),
                json!(opt_s(v, "/reclaimPolicy").unwrap_or("Delete")),
                json!(opt_s(v, "/volumeBindingMode").unwrap_or("Immediate")),
                json!(flag(v, "/allowVolumeExpansion")),
                age(v, now),
            ])
        },
    };
}
