//! CSIStorageCapacity (`storage.k8s.io/v1`): what it does differently from the generic store.

use serde_json::Value;

use crate::registry::catalog::{Kind, ResourceDef, Strategy};
use crate::registry::table::Printer;
use crate::registry::validation::Ctx;
use apimachinery::field::Cause;
use apimachinery::names::NameRule;

/// The `storage.k8s.io/v1` kind.
pub static KIND: Kind = Kind::new(&[], &CSIStorageCapacityStrategy);

/// What CSIStorageCapacity does differently.
pub struct CSIStorageCapacityStrategy;

impl Strategy for CSIStorageCapacityStrategy {
    fn validate(&self, def: &ResourceDef, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        Ctx::new(def, old).meta_only(obj, NameRule::Subdomain)
    }

    fn printer(&self) -> Option<&'static Printer> {
        Some(&printer::CSI_STORAGE_CAPACITY)
    }
}

pub(crate) mod printer {
    use crate::registry::table::prelude::*;

    const CAPACITY_DEF: &str = "io.k8s.api.storage.v1.CSIStorageCapacity";

    /// CSIStorageCapacities (no age column upstream).
    pub(crate) static CSI_STORAGE_CAPACITY: Printer = Printer {
        columns: &[
            NAME,
            string("StorageClassName", field(CAPACITY_DEF, "storageClassName")),
            string("Capacity", field(CAPACITY_DEF, "capacity")),
        ],
        print: |v, _| {
            let capacity = v.get("capacity").filter(|c| !c.is_null()).map_or_else(
                || "<unset>".to_string(),
                crate::registry::table::int_or_string,
            );
            Row::of(vec![
                name(v),
                json!(s(v, "/storageClassName")),
                json!(capacity),
            ])
        },
    };
}
