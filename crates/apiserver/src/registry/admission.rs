//! Admission: defaulting and validation of built-in kinds before they are stored.
//!
//! The pipeline for every create and update is: decode → prune unknown fields (per
//! `fieldValidation`) → type check → default → strategy → validate. This module is the
//! single entry for the kind-specific parts, so handlers never branch on kinds.

use serde_json::Value;

use crate::registry::catalog::ResourceDef;
use apimachinery::status::{ApiError, ApiResult, Cause};

/// Apply upstream defaults for the kind: on create the decode-time defaults plus what
/// upstream adds at creation (namespace finalizer, pod priority, ...), on update only the
/// decode-time defaults.
pub fn default_object(def: &ResourceDef, obj: &mut Value, create: bool) {
    if let Some(custom) = def.custom {
        if let Some(schema) = &custom.schema {
            crate::machinery::structural::default(schema, obj);
        }
        return;
    }
    if def.group.is_empty() && def.kind == "Secret" {
        merge_string_data(obj);
    }
    if create {
        crate::registry::defaults::apply_defaults(def.group, def.version, def.kind, obj);
        if def.kind == "Job" {
            let uid = obj
                .pointer("/metadata/uid")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            crate::registry::defaults::generate_job_selector(obj, &uid);
        }
    } else {
        crate::registry::defaults::apply_scheme_defaults(def.group, def.version, def.kind, obj);
    }
}

/// Validate an object about to be stored; `old` is the stored object on update.
pub fn validate_object(def: &ResourceDef, obj: &Value, old: Option<&Value>) -> ApiResult<()> {
    let mut found = crate::registry::validation::validate(
        def.group,
        def.version,
        def.kind,
        def.namespaced,
        obj,
        old,
    );
    if let Some(custom) = def.custom {
        if let Some(schema) = &custom.schema {
            found.extend(crate::machinery::structural::validate_update(
                schema, obj, old,
            ));
        }
        found.extend(crate::registry::custom::scale_causes(custom, obj));
        if let Some(schema) = &custom.schema {
            // upstream's hasBlockingErr: the CEL rules are not run on an object whose
            // shape is wrong (type, required, enum or size violations)
            const BLOCKING: [&str; 5] = [
                "FieldValueNotSupported",
                "FieldValueRequired",
                "FieldValueTooLong",
                "FieldValueTooMany",
                "FieldValueTypeInvalid",
            ];
            if found.iter().any(|c| BLOCKING.contains(&c.reason.as_ref())) {
                found.push(apimachinery::field::invalid(
                    "<nil>",
                    serde_json::Value::Null,
                    "some validation rules were not checked because the object was invalid; \
                     correct the existing errors to complete validation",
                ));
            } else {
                found.extend(crate::machinery::cel::validate(schema, obj, old));
            }
        }
    } else if def.group == "apiextensions.k8s.io" && def.kind == "CustomResourceDefinition" {
        found.extend(crate::registry::custom::crd_validation::validate_crd(
            obj, old,
        ));
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
    }
    let causes: Vec<Cause> = found;
    if causes.is_empty() {
        return Ok(());
    }
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    Err(ApiError::invalid(def.group, def.kind, name, causes))
}

/// A Secret's `stringData` is write-only: its entries are base64-encoded into `data`
/// (overwriting keys there) and the field is dropped, as upstream's v1 → internal
/// conversion does on every write.
fn merge_string_data(obj: &mut Value) {
    use base64::Engine as _;
    let Some(o) = obj.as_object_mut() else {
        return;
    };
    let Some(string_data) = o.remove("stringData") else {
        return;
    };
    let Some(entries) = string_data.as_object() else {
        return;
    };
    if entries.is_empty() {
        return;
    }
    let data = o
        .entry("data")
        .or_insert_with(|| Value::Object(serde_json::Map::new()));
    if !data.is_object() {
        *data = Value::Object(serde_json::Map::new());
    }
    if let Some(d) = data.as_object_mut() {
        for (k, v) in entries {
            let text = v.as_str().unwrap_or_default();
            d.insert(
                k.clone(),
                Value::String(base64::engine::general_purpose::STANDARD.encode(text)),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn string_data_is_merged_into_data_and_dropped() {
        let mut s =
            json!({"data": {"a": "eA==", "b": "eQ=="}, "stringData": {"b": "new", "c": "z"}});
        merge_string_data(&mut s);
        assert_eq!(s, json!({"data": {"a": "eA==", "b": "bmV3", "c": "eg=="}}));
        let mut only = json!({"stringData": {"k": "v"}});
        merge_string_data(&mut only);
        assert_eq!(only, json!({"data": {"k": "dg=="}}));
        let mut empty = json!({"stringData": {}});
        merge_string_data(&mut empty);
        assert_eq!(empty, json!({}));
    }
}
