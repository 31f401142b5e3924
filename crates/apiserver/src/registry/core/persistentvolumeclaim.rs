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
        let mut causes = Ctx::new(def, old).meta_only(obj, NameRule::Subdomain);
        causes.extend(validation::claim(obj, old));
        causes
    }

    fn printer(&self) -> Option<&'static Printer> {
        Some(&printer::PERSISTENT_VOLUME_CLAIM)
    }
}

/// Upstream's `ValidatePersistentVolumeClaimSpec` and
/// `ValidatePersistentVolumeClaimUpdate` (with RecoverVolumeExpansionFailure, GA in 1.34).
pub(crate) mod validation {
    use crate::registry::validation::prelude::*;
    use apimachinery::quantity;

    const ACCESS_MODES: [&str; 4] = [
        "ReadOnlyMany",
        "ReadWriteMany",
        "ReadWriteOnce",
        "ReadWriteOncePod",
    ];
    const VOLUME_MODES: [&str; 2] = ["Block", "Filesystem"];
    const BETA_CLASS: &str = "volume.beta.kubernetes.io/storage-class";

    /// The claim's spec on create and update, and what an update may not change.
    pub(crate) fn claim(obj: &Value, old: Option<&Value>) -> Vec<apimachinery::field::Cause> {
        let mut e = Errs::default();
        let empty = Value::Object(Map::new());
        spec(&mut e, get(obj, "spec").unwrap_or(&empty), "spec");
        if let Some(old) = old {
            update(&mut e, obj, old);
        }
        e.0
    }

    /// `ValidatePersistentVolumeClaimSpec`.
    pub(crate) fn spec(e: &mut Errs, spec: &Value, path: &str) {
        let modes: Vec<&str> = items(spec, "accessModes")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        let modes_path = child(path, "accessModes");
        if modes.is_empty() {
            e.required(&modes_path, "at least 1 access mode is required");
        }
        if let Some(sel) = get(spec, "selector").filter(|v| !v.is_null()) {
            validate_label_selector(e, sel, &child(path, "selector"));
        }
        let (mut once_pod, mut others) = (false, false);
        for m in &modes {
            if !ACCESS_MODES.contains(m) {
                e.not_supported(&modes_path, js(m), &ACCESS_MODES);
            } else if *m == "ReadWriteOncePod" {
                once_pod = true;
            } else {
                others = true;
            }
        }
        if once_pod && others {
            e.forbidden(
                &modes_path,
                "may not use ReadWriteOncePod with other access modes",
            );
        }
        let storage_path = key(&child(path, "resources"), "storage");
        match spec.pointer("/resources/requests/storage") {
            None | Some(Value::Null) => e.required(&storage_path, ""),
            Some(v) => match quantity::from_json(v) {
                Some(q) if q.is_zero() || q.is_negative() => e.invalid(
                    &storage_path,
                    Bad::Str(q.canonical()),
                    "must be greater than zero",
                ),
                _ => {}
            },
        }
        if let Some(class) = st(spec, "storageClassName").filter(|c| !c.is_empty()) {
            e.each(
                &child(path, "storageClassName"),
                class,
                dns1123_subdomain_errs(class),
            );
        }
        if let Some(mode) = st(spec, "volumeMode") {
            if !VOLUME_MODES.contains(&mode) {
                e.not_supported(&child(path, "volumeMode"), js(mode), &VOLUME_MODES);
            }
        }
        if let Some(class) = st(spec, "volumeAttributesClassName").filter(|c| !c.is_empty()) {
            e.each(
                &child(path, "volumeAttributesClassName"),
                class,
                dns1123_subdomain_errs(class),
            );
        }
    }

    fn storage(v: &Value, pointer: &str) -> Option<quantity::Quantity> {
        v.pointer(pointer).and_then(quantity::from_json)
    }

    /// The spec with its storage quantities in canonical form, so that `1024Mi` and
    /// `1Gi` compare equal as upstream's semantic equality has them.
    fn canonical_spec(obj: &Value) -> Value {
        let mut spec = get(obj, "spec")
            .cloned()
            .unwrap_or(Value::Object(Map::new()));
        for part in ["requests", "limits"] {
            if let Some(list) = spec
                .pointer_mut(&format!("/resources/{part}"))
                .and_then(Value::as_object_mut)
            {
                for q in list.values_mut() {
                    if let Some(parsed) = quantity::from_json(q) {
                        *q = Value::String(parsed.canonical());
                    }
                }
            }
        }
        spec
    }

    /// `ValidatePersistentVolumeClaimUpdate`: the spec is immutable, except that the
    /// volume name may be set once, a class may be set where none was (or the beta
    /// annotation named it), a bound claim's storage request may change (not below
    /// its capacity) and the volume attributes class may change.
    fn update(e: &mut Errs, new: &Value, old: &Value) {
        let mut old_spec = canonical_spec(old);
        let mut new_spec = canonical_spec(new);
        let set = |spec: &mut Value, field: &str, v: Option<Value>| {
            if let Some(o) = spec.as_object_mut() {
                match v {
                    Some(v) => o.insert(field.into(), v),
                    None => o.remove(field),
                };
            }
        };
        if st(&old_spec, "volumeName").unwrap_or("").is_empty() {
            set(
                &mut old_spec,
                "volumeName",
                new_spec.get("volumeName").cloned(),
            );
        }
        let annotation = |o: &Value| {
            o.pointer("/metadata/annotations")
                .and_then(|a| a.get(BETA_CLASS))
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        let (old_beta, new_beta) = (annotation(old), annotation(new));
        let old_class = st(&old_spec, "storageClassName").map(str::to_string);
        let new_class = st(&new_spec, "storageClassName").map(str::to_string);
        let from_annotation = old_beta.is_some()
            && old_class.is_none()
            && new_class.is_some()
            && new_class == old_beta
            && (new_beta.is_none() || new_beta == old_beta);
        if from_annotation {
            set(&mut new_spec, "storageClassName", None);
        } else {
            if old_beta != new_beta {
                e.invalid(
                    &format!("metadata.annotations[{BETA_CLASS}]"),
                    Bad::Str(new_beta.clone().unwrap_or_default()),
                    IMMUTABLE,
                );
            }
            let from_nil = new_class.is_some()
                && old_class.is_none()
                && (old_beta.is_none() || new_class == old_beta);
            if from_nil {
                set(&mut new_spec, "storageClassName", None);
            }
        }
        let bound = new.pointer("/status/phase").and_then(Value::as_str) == Some("Bound");
        if bound && new_spec.pointer("/resources/requests").is_some() {
            let old_storage = old_spec.pointer("/resources/requests/storage").cloned();
            if let Some(r) = new_spec
                .pointer_mut("/resources/requests")
                .and_then(Value::as_object_mut)
            {
                match old_storage {
                    Some(v) => r.insert("storage".into(), v),
                    None => r.remove("storage"),
                };
            }
        }
        let vac = old_spec.get("volumeAttributesClassName").cloned();
        set(&mut new_spec, "volumeAttributesClassName", vac);
        if old_spec != new_spec {
            e.forbidden(
                "spec",
                "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims",
            );
        }
        let old_size = storage(old, "/spec/resources/requests/storage");
        let new_size = storage(new, "/spec/resources/requests/storage");
        if let (Some(o), Some(n)) = (old_size, new_size) {
            if n.cmp_value(&o).is_lt() {
                let capacity = storage(old, "/status/capacity/storage")
                    .unwrap_or_else(quantity::Quantity::zero);
                if n.cmp_value(&capacity).is_le() {
                    e.forbidden(
                        "spec.resources.requests.storage",
                        "field can not be less than status.capacity",
                    );
                }
            }
        }
        if get(old, "spec").and_then(|s| s.get("volumeMode"))
            != get(new, "spec").and_then(|s| s.get("volumeMode"))
        {
            let mode = new
                .pointer("/spec/volumeMode")
                .and_then(Value::as_str)
                .unwrap_or("");
            e.invalid("volumeMode", js(mode), IMMUTABLE);
        }
        if let Some(old_vac) = old
            .pointer("/spec/volumeAttributesClassName")
            .and_then(Value::as_str)
        {
            let _ = old_vac;
            match new
                .pointer("/spec/volumeAttributesClassName")
                .and_then(Value::as_str)
            {
                None => e.forbidden(
                    "spec.volumeAttributesClassName",
                    "update from non-nil value to nil is forbidden",
                ),
                Some("") => e.forbidden(
                    "spec.volumeAttributesClassName",
                    "update from non-nil value to an empty string is forbidden",
                ),
                Some(_) => {}
            }
        }
    }
}

#[cfg(test)]
mod validation_tests {
    use super::validation::claim;
    use serde_json::{json, Value};

    fn pvc(spec: Value) -> Value {
        json!({"metadata": {"name": "c", "namespace": "default"}, "spec": spec})
    }

    fn ok_spec() -> Value {
        json!({"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
               "volumeMode": "Filesystem"})
    }

    fn messages(obj: &Value, old: Option<&Value>) -> Vec<String> {
        claim(obj, old)
            .into_iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    /// Cases after upstream's TestValidatePersistentVolumeClaim.
    #[test]
    fn create_rules() {
        assert!(messages(&pvc(ok_spec()), None).is_empty());
        let cases = [
            (json!({"resources": {"requests": {"storage": "1Gi"}}}),
             "spec.accessModes: Required value: at least 1 access mode is required"),
            (json!({"accessModes": ["ReadWriteOnce"]}), "spec.resources[storage]: Required value"),
            (json!({"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "0"}}}),
             "spec.resources[storage]: Invalid value: \"0\": must be greater than zero"),
            (json!({"accessModes": ["Sometimes"], "resources": {"requests": {"storage": "1Gi"}}}),
             "spec.accessModes: Unsupported value: \"Sometimes\": supported values: \"ReadOnlyMany\", \"ReadWriteMany\", \"ReadWriteOnce\", \"ReadWriteOncePod\""),
            (json!({"accessModes": ["ReadWriteOncePod", "ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}),
             "spec.accessModes: Forbidden: may not use ReadWriteOncePod with other access modes"),
            (json!({"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}, "volumeMode": "Raw"}),
             "spec.volumeMode: Unsupported value: \"Raw\": supported values: \"Block\", \"Filesystem\""),
            (json!({"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}, "storageClassName": "Fast_Disk"}),
             "spec.storageClassName: Invalid value: \"Fast_Disk\": a lowercase RFC 1123 subdomain must consist of"),
        ];
        for (spec, want) in cases {
            let got = messages(&pvc(spec.clone()), None);
            assert!(got.iter().any(|m| m.starts_with(want)), "{spec}: {got:?}");
        }
    }

    fn with_status(mut obj: Value, phase: &str, capacity: &str) -> Value {
        obj["status"] = json!({"phase": phase, "capacity": {"storage": capacity}});
        obj
    }

    /// Cases after upstream's TestValidatePersistentVolumeClaimUpdate.
    #[test]
    fn update_rules() {
        let immutable = "spec: Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims";
        let old = with_status(pvc(ok_spec()), "Bound", "1Gi");
        // a bound claim may grow, and a request written differently is the same
        let mut grown = old.clone();
        grown["spec"]["resources"]["requests"]["storage"] = json!("2Gi");
        assert!(messages(&grown, Some(&old)).is_empty());
        let mut same = old.clone();
        same["spec"]["resources"]["requests"]["storage"] = json!("1024Mi");
        assert!(messages(&same, Some(&old)).is_empty());
        // ...but not shrink to its capacity, nor change anything else
        let mut big = old.clone();
        big["spec"]["resources"]["requests"]["storage"] = json!("4Gi");
        let mut shrunk = big.clone();
        shrunk["spec"]["resources"]["requests"]["storage"] = json!("1Gi");
        assert_eq!(
            messages(&shrunk, Some(&big)),
            ["spec.resources.requests.storage: Forbidden: field can not be less than status.capacity"]
        );
        // shrinking back above the capacity recovers from a failed expansion
        let mut recovered = big.clone();
        recovered["spec"]["resources"]["requests"]["storage"] = json!("2Gi");
        assert!(messages(&recovered, Some(&big)).is_empty());
        let mut modes = old.clone();
        modes["spec"]["accessModes"] = json!(["ReadWriteMany"]);
        assert_eq!(messages(&modes, Some(&old)), [immutable]);
        // an unbound claim's request is immutable too
        let pending = with_status(pvc(ok_spec()), "Pending", "0");
        let mut asked = pending.clone();
        asked["spec"]["resources"]["requests"]["storage"] = json!("2Gi");
        assert_eq!(messages(&asked, Some(&pending)), [immutable]);
        // the binder sets the volume name once, and a class where there was none
        let mut named = pending.clone();
        named["spec"]["volumeName"] = json!("pv-1");
        named["spec"]["storageClassName"] = json!("standard");
        assert!(messages(&named, Some(&pending)).is_empty());
        let mut renamed = named.clone();
        renamed["spec"]["volumeName"] = json!("pv-2");
        assert_eq!(messages(&renamed, Some(&named)), [immutable]);
        let mut reclassed = named.clone();
        reclassed["spec"]["storageClassName"] = json!("fast");
        assert_eq!(messages(&reclassed, Some(&named)), [immutable]);
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
