//! PersistentVolumeClaim (`core/v1`): what it does differently from the generic store.

use serde_json::Value;

use crate::registry::catalog::{Kind, Phase, ResourceDef, Strategy, Subresource};
use crate::registry::table::Printer;
use crate::registry::validation::Ctx;
use apimachinery::field::Cause;
use apimachinery::names::NameRule;

/// The `core/v1` kind.
pub static KIND: Kind = Kind::new(&["pvc"], &PersistentVolumeClaimStrategy);

/// What PersistentVolumeClaim does differently.
pub struct PersistentVolumeClaimStrategy;

impl Strategy for PersistentVolumeClaimStrategy {
    fn subresources(&self) -> &'static [Subresource] {
        &[Subresource::Status]
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
        Some(&printer::PERSISTENT_VOLUME_CLAIM)
    }
}

pub(crate) mod defaults {
    use crate::registry::core::podspec::defaults::pvc_spec;
    use crate::registry::defaults::prelude::*;

    /// The kind's defaults in `phase`.
    pub(crate) fn apply(o: &mut Obj, phase: Phase) {
        let _ = phase;
        if let Some(spec) = child(o, "spec") {
            pvc_spec(spec);
        }
        if let Some(status) = child_or_insert(o, "status") {
            default_str(status, "phase", "Pending");
            resource_list(status, "capacity", true);
            resource_list(status, "allocatedResources", true);
        }
    }
}

pub(crate) mod printer {
    use crate::registry::table::prelude::*;

    const PVC_SPEC: &str = "io.k8s.api.core.v1.PersistentVolumeClaimSpec";

    const PVC_STATUS: &str = "io.k8s.api.core.v1.PersistentVolumeClaimStatus";

    /// PersistentVolumeClaims.
    pub(crate) static PERSISTENT_VOLUME_CLAIM: Printer = Printer {
        columns: &[
            NAME,
            string("Status", field(PVC_STATUS, "phase")),
            string("Volume", field(PVC_SPEC, "volumeName")),
            string("Capacity", field(PVC_STATUS, "capacity")),
            string("Access Modes", field(PVC_STATUS, "accessModes")),
            string("StorageClass", text("StorageClass of the pvc")),
            string(
                "VolumeAttributesClass",
                text("VolumeAttributesClass of the pvc"),
            ),
            AGE,
            wide(string("VolumeMode", field(PVC_SPEC, "volumeMode"))),
        ],
        print: |v, now| {
            let volume = s(v, "/spec/volumeName");
            let (capacity, modes) = if volume.is_empty() {
                (String::new(), String::new())
            } else {
                (
                    quantity(v, "/status/capacity/storage"),
                    access_modes(v, "/status/accessModes"),
                )
            };
            Row::of(vec![
                name(v),
                json!(phase_or_terminating(v)),
                json!(volume),
                json!(capacity),
                json!(modes),
                json!(storage_class(v)),
                unset(v, "/spec/volumeAttributesClassName"),
                age(v, now),
                unset(v, "/spec/volumeMode"),
            ])
        },
    };
}
