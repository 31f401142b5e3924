//! VolumeAttributesClass (`storage.k8s.io/v1`): what it does differently from the generic store.

use serde_json::Value;

use crate::registry::catalog::{Kind, ResourceDef, Strategy};
use crate::registry::table::Printer;
use crate::registry::validation::Ctx;
use apimachinery::field::Cause;
use apimachinery::names::NameRule;

/// The `storage.k8s.io/v1` kind.
pub static KIND: Kind = Kind::new(&["vac"], &VolumeAttributesClassStrategy);

/// What VolumeAttributesClass does differently.
pub struct VolumeAttributesClassStrategy;

impl Strategy for VolumeAttributesClassStrategy {
    fn validate(&self, def: &ResourceDef, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        Ctx::new(def, old).meta_only(obj, NameRule::Subdomain)
    }

    fn printer(&self) -> Option<&'static Printer> {
        Some(&printer::VOLUME_ATTRIBUTES_CLASS)
    }
}

pub(crate) mod printer {
    use crate::registry::table::prelude::*;

    /// VolumeAttributesClasses.
    pub(crate) static VOLUME_ATTRIBUTES_CLASS: Printer = Printer {
        columns: &[
            NAME,
            string(
                "DriverName",
                field("io.k8s.api.storage.v1.VolumeAttributesClass", "driverName"),
            ),
            AGE,
        ],
        print: |v, now| {
            let mut n = s(v, "/metadata/name").to_string();
            if annotation_true(
                v,
                "volumeattributesclass.alpha.kubernetes.io/is-default-class",
            ) {
                n.push_str(" (default)");
            }
            Row::of(vec![json!(n), json!(s(v, "/driverName")), age(v, now)])
        },
    };
}
