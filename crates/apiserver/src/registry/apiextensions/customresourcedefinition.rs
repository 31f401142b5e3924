//! CustomResourceDefinition (`apiextensions.k8s.io/v1`): what it does differently from the generic store.

use serde_json::Value;

use crate::registry::catalog::{
    DeleteRequest, Deletion, Kind, Phase, ResourceDef, Strategy, Subresource,
};
use crate::registry::rest;
use crate::registry::validation::Ctx;
use apimachinery::field::Cause;
use apimachinery::names::NameRule;
use serde_json::json;

/// The `apiextensions.k8s.io/v1` kind.
pub static KIND: Kind = Kind::new(&["crd", "crds"], &CustomResourceDefinitionStrategy)
    .in_categories(&["api-extensions"]);

/// What CustomResourceDefinition does differently.
pub struct CustomResourceDefinitionStrategy;

impl Strategy for CustomResourceDefinitionStrategy {
    fn subresources(&self) -> &'static [Subresource] {
        &[Subresource::Status]
    }

    fn uses_generation(&self) -> bool {
        true
    }

    fn default(&self, _def: &ResourceDef, obj: &mut Value, phase: Phase) {
        if let Some(o) = obj.as_object_mut() {
            defaults::apply(o, phase);
        }
    }

    /// Metadata, upstream's CRD validation and the CEL rules of every version's schema
    /// (an uncompilable rule makes the CRD invalid).
    fn validate(&self, def: &ResourceDef, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        let mut found = Ctx::new(def, old).meta_only(obj, NameRule::Subdomain);
        found.extend(super::validation::validate_crd(obj, old));
        if let Some(versions) = obj.pointer("/spec/versions").and_then(Value::as_array) {
            for (i, v) in versions.iter().enumerate() {
                if let Some(schema) = v.pointer("/schema/openAPIV3Schema") {
                    found.extend(crate::machinery::cel::check_rules(
                        schema,
                        &format!("spec.versions[{i}].schema.openAPIV3Schema"),
                    ));
                }
            }
        }
        found
    }

    /// Upstream's `PrepareForUpdate`: a new storage version joins
    /// `status.storedVersions`.
    fn prepare_for_update(&self, _old: &Value, new: &mut Value) {
        record_stored_version(new);
    }

    /// Upstream's CRD REST `Delete`: the cleanup finalizer and the `Terminating`
    /// condition; the CRD controller deletes the objects, then the finalizer.
    fn delete(&self, obj: &mut Value, _req: &DeleteRequest<'_>) -> Deletion {
        if obj.pointer("/metadata/deletionTimestamp").is_some() {
            return Deletion::Generic;
        }
        rest::add_finalizer(obj, crate::registry::custom::CLEANUP_FINALIZER);
        let mut conditions: Vec<Value> = obj
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        crate::registry::custom::names::set_condition(
            &mut conditions,
            "Terminating",
            true,
            "InstanceDeletionPending",
            "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
            &apimachinery::time::now_rfc3339(),
        );
        if !obj["status"].is_object() {
            obj["status"] = json!({});
        }
        obj["status"]["conditions"] = Value::Array(conditions);
        Deletion::Generic
    }
}

/// A new storage version joins `status.storedVersions`.
fn record_stored_version(crd: &mut Value) {
    let storage: Option<Value> = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .and_then(|vs| vs.iter().find(|v| v["storage"] == true))
        .and_then(|v| v.get("name").cloned());
    let Some(storage) = storage else {
        return;
    };
    let Some(o) = crd.as_object_mut() else {
        return;
    };
    let status = o.entry("status").or_insert_with(|| json!({}));
    if !status.is_object() {
        *status = json!({});
    }
    let stored = &mut status["storedVersions"];
    if !stored.is_array() {
        *stored = json!([]);
    }
    if let Some(a) = stored.as_array_mut() {
        if !a.contains(&storage) {
            a.push(storage);
        }
    }
}

pub(crate) mod defaults {
    use crate::registry::defaults::prelude::*;

    /// The kind's defaults in `phase`.
    pub(crate) fn apply(o: &mut Obj, phase: Phase) {
        let _ = phase;
        crd_v1(o);
    }

    pub(crate) fn crd_v1(o: &mut Obj) {
        let mut storage_version = None;
        if let Some(spec) = child(o, "spec") {
            if let Some(names) = child(spec, "names") {
                let kind = str_at(names, "kind").to_string();
                if is_empty_str(names, "singular") {
                    names.insert("singular".into(), json!(kind.to_lowercase()));
                }
                if is_empty_str(names, "listKind") && !kind.is_empty() {
                    names.insert("listKind".into(), json!(format!("{kind}List")));
                }
            }
            default_ptr(spec, "conversion", json!({"strategy": "None"}));
            if let Some(svc) = child(spec, "conversion")
                .and_then(|c| child(c, "webhook"))
                .and_then(|w| child(w, "clientConfig"))
                .and_then(|c| child(c, "service"))
            {
                default_ptr(svc, "port", json!(443));
            }
            if let Some(Value::Array(versions)) = spec.get("versions") {
                storage_version = versions
                    .iter()
                    .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
                    .and_then(|v| v.get("name").cloned());
            }
        }
        if let Some(name) = storage_version {
            if let Some(status) = child_or_insert(o, "status") {
                if is_empty_coll(status, "storedVersions") {
                    status.insert("storedVersions".into(), json!([name]));
                }
            }
        }
    }
}
