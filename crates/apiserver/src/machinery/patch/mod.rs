//! Strategic merge patch for built-in kinds: the generic engine in
//! [`crate::machinery::patch::strategic`] driven by the generated schemas ([`crate::machinery::schema`]) for
//! field types and by the patch metadata table ([`crate::machinery::schema::patch_meta`]) for strategies
//! and merge keys.

pub mod strategic;

use serde_json::Value;

use crate::machinery::patch::strategic::{
    apply_strategic_merge_patch, FieldPatchInfo, PatchSchema,
};
use crate::machinery::schema::{ref_name, Definitions};
use apimachinery::status::{ApiError, ApiResult};

const MAP_PREFIX: &str = "map:";

/// Schema lookups in generated definitions (built-in kinds).
pub struct BuiltinPatchSchema<'a>(pub &'a Definitions);

impl PatchSchema for BuiltinPatchSchema<'_> {
    fn field(&self, ty: &str, field: &str) -> Option<FieldPatchInfo> {
        if let Some(value_type) = ty.strip_prefix(MAP_PREFIX) {
            return Some(FieldPatchInfo {
                elem_type: Some(value_type.to_string()),
                ..Default::default()
            });
        }
        let meta = crate::machinery::schema::patch_meta::field_meta(ty, field);
        let elem = self.0.field_elem_type(ty, field).map(|(name, prop)| {
            let is_map = ref_name(prop).is_none()
                && prop.get("items").is_none()
                && prop.get("additionalProperties").is_some();
            if is_map {
                format!("{MAP_PREFIX}{name}")
            } else {
                name.to_string()
            }
        });
        if meta.is_none() && elem.is_none() {
            // known primitive field or unknown field: default behaviour
            return None;
        }
        let strategies = meta
            .and_then(|m| m.patch_strategy)
            .map(|s| s.split(',').map(str::to_string).collect())
            .unwrap_or_default();
        Some(FieldPatchInfo {
            strategies,
            merge_key: meta.and_then(|m| m.patch_merge_key).map(str::to_string),
            elem_type: elem,
        })
    }
}

/// Apply a strategic merge patch to an object of definition `definition` in `defs`.
pub fn strategic(
    defs: &Definitions,
    original: &Value,
    patch: &Value,
    definition: &str,
) -> ApiResult<Value> {
    apply_strategic_merge_patch(original, patch, &BuiltinPatchSchema(defs), definition)
        .map_err(|e| ApiError::bad_request(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machinery::schema::{register, Register};
    use k8s_openapi::api::{apps, core};
    use std::sync::OnceLock;

    fn strategic(original: &Value, patch: &Value, definition: &str) -> ApiResult<Value> {
        static D: OnceLock<Definitions> = OnceLock::new();
        let defs = D.get_or_init(|| {
            Definitions::generate([
                register::<apps::v1::Deployment> as Register,
                register::<core::v1::Pod>,
                register::<core::v1::Service>,
                register::<core::v1::ConfigMap>,
            ])
        });
        super::strategic(defs, original, patch, definition)
    }
    use serde_json::json;

    #[test]
    fn containers_merge_by_name() {
        let orig = json!({"spec": {"template": {"spec": {"containers": [
            {"name": "a", "image": "a:1"}, {"name": "b", "image": "b:1"}
        ]}}}});
        let patch = json!({"spec": {"template": {"spec": {"containers": [{"name": "b", "image": "b:2"}]}}}});
        let out = strategic(&orig, &patch, "io.k8s.api.apps.v1.Deployment").expect("patch");
        let cs = &out["spec"]["template"]["spec"]["containers"];
        assert_eq!(cs.as_array().map(Vec::len), Some(2));
        assert_eq!(cs[1]["image"], "b:2");
        assert_eq!(cs[0]["image"], "a:1");
    }

    #[test]
    fn finalizers_merge_and_args_replace() {
        let orig = json!({"metadata": {"finalizers": ["a"]}, "spec": {"containers": [{"name": "c", "args": ["1", "2"]}]}});
        let patch = json!({"metadata": {"finalizers": ["b"]}, "spec": {"containers": [{"name": "c", "args": ["3"]}]}});
        let out = strategic(&orig, &patch, "io.k8s.api.core.v1.Pod").expect("patch");
        let mut fins: Vec<&str> = out["metadata"]["finalizers"]
            .as_array()
            .expect("finalizers")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        fins.sort_unstable();
        assert_eq!(fins, ["a", "b"], "merge strategy keeps both finalizers");
        assert_eq!(out["spec"]["containers"][0]["args"], json!(["3"]));
    }

    #[test]
    fn labels_map_merges() {
        let orig = json!({"metadata": {"labels": {"a": "1", "b": "2"}}});
        let patch = json!({"metadata": {"labels": {"a": null, "c": "3"}}});
        let out = strategic(&orig, &patch, "io.k8s.api.core.v1.ConfigMap").expect("patch");
        assert_eq!(out["metadata"]["labels"], json!({"b": "2", "c": "3"}));
    }
}
