//! CSINode (`storage.k8s.io/v1`): what it does differently from the generic store.

use serde_json::Value;

use crate::registry::catalog::{Kind, ResourceDef, Strategy};
use crate::registry::table::Printer;
use crate::registry::validation::Ctx;
use apimachinery::field::Cause;
use apimachinery::names::NameRule;

/// The `storage.k8s.io/v1` kind.
pub static KIND: Kind = Kind::new(&[], &CSINodeStrategy);

/// What CSINode does differently.
pub struct CSINodeStrategy;

impl Strategy for CSINodeStrategy {
    fn validate(&self, def: &ResourceDef, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        Ctx::new(def, old).meta_only(obj, NameRule::Subdomain)
    }

    fn printer(&self) -> Option<&'static Printer> {
        Some(&printer::CSI_NODE)
    }
}

pub(crate) mod printer {
    use crate::registry::table::prelude::*;

    /// CSINodes.
    pub(crate) static CSI_NODE: Printer = Printer {
        columns: &[
            NAME,
            integer(
                "Drivers",
                text("Drivers indicates the number of CSI drivers registered on the node"),
            ),
            AGE,
        ],
        print: |v, now| {
            Row::of(vec![
                name(v),
                json!(arr(v, "/spec/drivers").len()),
                age(v, now),
            ])
        },
    };
}
