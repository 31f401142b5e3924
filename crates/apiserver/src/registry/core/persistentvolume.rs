//! PersistentVolume (`core/v1`): what it does differently from the generic store.

use serde_json::Value;

use crate::registry::catalog::{Kind, Phase, ResourceDef, Strategy, Subresource};
use crate::registry::table::Printer;
use crate::registry::validation::Ctx;
use apimachinery::field::Cause;
use apimachinery::names::NameRule;

/// The `core/v1` kind.
pub static KIND: Kind = Kind::new(&["pv"], &PersistentVolumeStrategy);

/// What PersistentVolume does differently.
pub struct PersistentVolumeStrategy;

impl Strategy for PersistentVolumeStrategy {
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
        Some(&printer::PERSISTENT_VOLUME)
    }
}

pub(crate) mod defaults {
    use crate::registry::core::podspec::defaults::volume_sources;
    use crate::registry::defaults::prelude::*;

    /// The kind's defaults in `phase`.
    pub(crate) fn apply(o: &mut Obj, phase: Phase) {
        let _ = phase;
        persistent_volume(o);
    }

    pub(crate) fn persistent_volume(o: &mut Obj) {
        if let Some(spec) = child(o, "spec") {
            default_str(spec, "persistentVolumeReclaimPolicy", "Retain");
            default_ptr(spec, "volumeMode", json!("Filesystem"));
            resource_list(spec, "capacity", true);
            volume_sources(spec);
        }
        if let Some(status) = child_or_insert(o, "status") {
            default_str(status, "phase", "Pending");
        }
    }
}

pub(crate) mod printer {
    use crate::registry::table::prelude::*;

    const PV_SPEC: &str = "io.k8s.api.core.v1.PersistentVolumeSpec";

    const PV_STATUS: &str = "io.k8s.api.core.v1.PersistentVolumeStatus";

    /// PersistentVolumes.
    pub(crate) static PERSISTENT_VOLUME: Printer = Printer {
        columns: &[
            NAME,
            string("Capacity", field(PV_SPEC, "capacity")),
            string("Access Modes", field(PV_SPEC, "accessModes")),
            string(
                "Reclaim Policy",
                field(PV_SPEC, "persistentVolumeReclaimPolicy"),
            ),
            string("Status", field(PV_STATUS, "phase")),
            string("Claim", field(PV_SPEC, "claimRef")),
            string("StorageClass", text("StorageClass of the pv")),
            string(
                "VolumeAttributesClass",
                text("VolumeAttributesClass of the pv"),
            ),
            string("Reason", field(PV_STATUS, "reason")),
            AGE,
            wide(string("VolumeMode", field(PV_SPEC, "volumeMode"))),
        ],
        print: |v, now| {
            let claim = match v.pointer("/spec/claimRef").filter(|c| c.is_object()) {
                Some(c) => format!(
                    "{}/{}",
                    c.get("namespace").and_then(Value::as_str).unwrap_or(""),
                    c.get("name").and_then(Value::as_str).unwrap_or("")
                ),
                None => String::new(),
            };
            Row::of(vec![
                name(v),
                json!(quantity(v, "/spec/capacity/storage")),
                json!(access_modes(v, "/spec/accessModes")),
                json!(s(v, "/spec/persistentVolumeReclaimPolicy")),
                json!(phase_or_terminating(v)),
                json!(claim),
                json!(storage_class(v)),
                unset(v, "/spec/volumeAttributesClassName"),
                json!(s(v, "/status/reason")),
                age(v, now),
                unset(v, "/spec/volumeMode"),
            ])
        },
    };
}

/// The finalizer the `StorageObjectInUseProtection` admission plugin puts on every new
/// PersistentVolume (the `pv-protection` controller removes it once the volume is no
/// longer Bound); added by the create endpoint with
/// [`super::persistentvolumeclaim::admission::add_finalizer`].
pub const PV_PROTECTION_FINALIZER: &str = "kubernetes.io/pv-protection";
