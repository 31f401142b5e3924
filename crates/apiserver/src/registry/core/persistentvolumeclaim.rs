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

/// The admission plugins of PersistentVolumeClaims (upstream
/// `plugin/pkg/admission/storage/...`): pure functions over the claim and the
/// StorageClasses the write endpoints read from the store.
///
/// - `StorageObjectInUseProtection` (mutating, create): every new claim gets the
///   `kubernetes.io/pvc-protection` finalizer, so deleting a claim a pod still uses only
///   marks it (`Terminating`) until the `pvc-protection` controller lets it go.
/// - `DefaultStorageClass` (mutating, create): a claim that asks for no class at all
///   (neither `spec.storageClassName` nor the beta annotation; `""` is a request for no
///   class) gets the default one; with several defaults the newest wins, then the
///   smallest name.
/// - `PersistentVolumeClaimResize` (validating, update): a claim may only grow when it
///   is Bound and its StorageClass sets `allowVolumeExpansion: true`.
pub mod admission {
    use serde_json::{json, Value};

    use apimachinery::status::ApiError;

    /// The finalizer `StorageObjectInUseProtection` puts on every claim.
    pub const PVC_PROTECTION_FINALIZER: &str = "kubernetes.io/pvc-protection";
    /// The class annotation claims used before `spec.storageClassName`.
    pub const BETA_STORAGE_CLASS_ANNOTATION: &str = "volume.beta.kubernetes.io/storage-class";
    /// The annotation marking the default StorageClass.
    pub const IS_DEFAULT_CLASS_ANNOTATION: &str = "storageclass.kubernetes.io/is-default-class";
    /// Its beta spelling, still honoured.
    pub const BETA_IS_DEFAULT_CLASS_ANNOTATION: &str =
        "storageclass.beta.kubernetes.io/is-default-class";

    /// Append `finalizer` to the object's finalizers unless it is there
    /// (`StorageObjectInUseProtection`'s admitPV/admitPVC).
    pub fn add_finalizer(obj: &mut Value, finalizer: &str) {
        let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) else {
            return;
        };
        let list = meta.entry("finalizers").or_insert_with(|| json!([]));
        if !list.is_array() {
            *list = json!([]);
        }
        if let Some(items) = list.as_array_mut() {
            if !items.iter().any(|f| f.as_str() == Some(finalizer)) {
                items.push(json!(finalizer));
            }
        }
    }

    /// The class a claim asks for (upstream `GetPersistentVolumeClaimClass`): the beta
    /// annotation first, then `spec.storageClassName`, else `""`.
    pub fn claim_class(claim: &Value) -> &str {
        if let Some(c) = claim
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(BETA_STORAGE_CLASS_ANNOTATION))
            .and_then(Value::as_str)
        {
            return c;
        }
        claim
            .pointer("/spec/storageClassName")
            .and_then(Value::as_str)
            .unwrap_or("")
    }

    /// Whether the claim asked for a class at all (upstream
    /// `PersistentVolumeClaimHasClass`): the beta annotation or a non-null
    /// `spec.storageClassName`, even `""`.
    pub fn claim_has_class(claim: &Value) -> bool {
        claim
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(BETA_STORAGE_CLASS_ANNOTATION))
            .is_some()
            || claim
                .pointer("/spec/storageClassName")
                .is_some_and(|v| !v.is_null())
    }

    /// Whether a StorageClass is marked default (upstream `IsDefaultAnnotation`: either
    /// annotation is exactly `"true"`).
    pub fn is_default_class(class: &Value) -> bool {
        let Some(a) = class
            .pointer("/metadata/annotations")
            .and_then(Value::as_object)
        else {
            return false;
        };
        [
            IS_DEFAULT_CLASS_ANNOTATION,
            BETA_IS_DEFAULT_CLASS_ANNOTATION,
        ]
        .iter()
        .any(|k| a.get(*k).and_then(Value::as_str) == Some("true"))
    }

    /// The default StorageClass among `classes` (upstream `GetDefaultClass`): of the
    /// classes marked default, the newest by creationTimestamp, then the smallest name;
    /// `None` without one.
    pub fn default_class<'a>(classes: impl IntoIterator<Item = &'a Value>) -> Option<&'a Value> {
        let created = |c: &Value| {
            c.pointer("/metadata/creationTimestamp")
                .and_then(Value::as_str)
                .and_then(|t| t.parse::<k8s_openapi::jiff::Timestamp>().ok())
        };
        let name = |c: &'a Value| {
            c.pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or("")
        };
        classes
            .into_iter()
            .filter(|c| is_default_class(c))
            .min_by(|a, b| {
                created(b)
                    .cmp(&created(a))
                    .then_with(|| name(a).cmp(name(b)))
            })
    }

    /// `DefaultStorageClass`: give a claim that asks for no class the default class's
    /// name. Returns the name set, if any.
    pub fn set_default_class<'a>(
        claim: &mut Value,
        classes: impl IntoIterator<Item = &'a Value>,
    ) -> Option<String> {
        if claim_has_class(claim) {
            return None;
        }
        let class = default_class(classes)?;
        let name = class.pointer("/metadata/name").and_then(Value::as_str)?;
        let spec = claim
            .as_object_mut()?
            .entry("spec")
            .or_insert_with(|| json!({}));
        spec.as_object_mut()?
            .insert("storageClassName".into(), json!(name));
        Some(name.to_string())
    }

    fn requested_storage(claim: &Value) -> Option<apimachinery::quantity::Quantity> {
        claim
            .pointer("/spec/resources/requests/storage")
            .and_then(apimachinery::quantity::from_json)
    }

    /// `PersistentVolumeClaimResize`: an update of claim `name` from `old` to `new` that
    /// grows `spec.resources.requests.storage` needs a Bound claim whose (unchanged)
    /// class exists and allows expansion; `class` looks a StorageClass up by name. The
    /// 403 answers carry upstream's messages.
    pub fn check_resize(
        name: &str,
        old: &Value,
        new: &Value,
        class: impl Fn(&str) -> Option<Value>,
    ) -> Result<(), ApiError> {
        let old_size = requested_storage(old).map_or(0, |q| q.nanos());
        let new_size = requested_storage(new).map_or(0, |q| q.nanos());
        if new_size <= old_size {
            return Ok(());
        }
        if old.pointer("/status/phase").and_then(Value::as_str) != Some("Bound") {
            return Err(forbidden(
                name,
                "Only bound persistent volume claims can be expanded",
            ));
        }
        let (class_name, old_class) = (claim_class(new), claim_class(old));
        let allowed = !class_name.is_empty()
            && class_name == old_class
            && class(class_name)
                .and_then(|c| c.get("allowVolumeExpansion").and_then(Value::as_bool))
                .unwrap_or(false);
        if !allowed {
            return Err(forbidden(
                name,
                "only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize",
            ));
        }
        Ok(())
    }

    /// Upstream `admission.NewForbidden` for a claim.
    fn forbidden(name: &str, why: &str) -> ApiError {
        let mut e = ApiError::forbidden(format!(
            "persistentvolumeclaims \"{name}\" is forbidden: {why}"
        ));
        e.kind = Some("persistentvolumeclaims".into());
        e.name = Some(name.to_string());
        e
    }
}
