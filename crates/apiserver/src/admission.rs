//! Admission: defaulting and validation of built-in kinds before they are stored.
//!
//! The pipeline for every create and update is: decode → prune unknown fields (per
//! `fieldValidation`) → type check → default → strategy → validate. This module is the
//! single entry for the kind-specific parts, so handlers never branch on kinds.

use serde_json::Value;

use crate::catalog::ResourceDef;
use crate::status::{ApiError, ApiResult, Cause};

/// Apply upstream defaults for the kind: on create the decode-time defaults plus what
/// upstream adds at creation (namespace finalizer, pod priority, ...), on update only the
/// decode-time defaults.
pub fn default_object(def: &ResourceDef, obj: &mut Value, create: bool) {
    if create {
        crate::defaults::apply_defaults(def.group, def.version, def.kind, obj);
        if def.kind == "Job" {
            let uid = obj
                .pointer("/metadata/uid")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            crate::defaults::generate_job_selector(obj, &uid);
        }
    } else {
        crate::defaults::apply_scheme_defaults(def.group, def.version, def.kind, obj);
    }
}

/// Validate an object about to be stored; `old` is the stored object on update.
pub fn validate_object(def: &ResourceDef, obj: &Value, old: Option<&Value>) -> ApiResult<()> {
    let causes: Vec<Cause> =
        crate::validation::validate(def.group, def.version, def.kind, def.namespaced, obj, old)
            .into_iter()
            .map(|c| Cause {
                reason: c.reason.to_string(),
                message: c.message,
                field: c.field,
            })
            .collect();
    if causes.is_empty() {
        return Ok(());
    }
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    Err(ApiError::invalid(def.group, def.kind, name, causes))
}
