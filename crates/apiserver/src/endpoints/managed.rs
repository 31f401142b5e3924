//! Field management: `metadata.managedFields` recorded on every create, update and
//! patch, and server-side apply (`application/apply-patch+yaml`), with the engine in
//! [`crate::machinery::ssa`] driven by the resource's OpenAPI schema (built-in kinds: the generated
//! definitions; custom resources: the CRD's schema).

use serde_json::{json, Value};

use crate::endpoints::request::WriteOptions;
use crate::machinery::schema::REF_PREFIX;
use crate::machinery::ssa::fieldpath::{field_path, Set};
use crate::machinery::ssa::schema::AtomCache;
use crate::machinery::ssa::{ApplyError, Operation, Schema};
use crate::registry::catalog::{ResourceDef, Subresource};
use apimachinery::status::{ApiError, ApiResult, Cause};

/// The schema field management reads for `def`.
fn schema_root(def: &ResourceDef) -> std::borrow::Cow<'static, Value> {
    match def.custom {
        Some(custom) => {
            std::borrow::Cow::Borrowed(crate::registry::custom::published_schema(custom))
        }
        None => {
            std::borrow::Cow::Owned(json!({"$ref": format!("{REF_PREFIX}{}", def.definition())}))
        }
    }
}

/// Fields an operation never owns (upstream strategies' `GetResetFields`): the status
/// on the main resource of kinds with a status subresource, the spec on `/status`.
fn reset_fields(def: &ResourceDef, sub: Option<Subresource>) -> Option<Set> {
    match sub {
        None if def.has_status() => Some(Set::from_paths(&[field_path(&["status"])])),
        Some(Subresource::Status) => Some(Set::from_paths(&[field_path(&["spec"])])),
        _ => None,
    }
}

/// Parse the write options of a request, check them (upstream `ValidateFieldManager`,
/// apply-only options) and settle the field manager: `fieldManager`, else the
/// User-Agent up to its first `/` (upstream `prefixFromUserAgent`).
pub fn write_options(
    query: &crate::endpoints::request::Query,
    headers: &axum::http::HeaderMap,
    options_kind: &str,
    apply: bool,
) -> ApiResult<WriteOptions> {
    let mut opts = WriteOptions::parse(query)?;
    validate_options(&opts, options_kind, apply)?;
    if opts.field_manager.as_deref().is_none_or(str::is_empty) {
        let ua = headers
            .get("user-agent")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        opts.field_manager = Some(ua.split('/').next().unwrap_or("").to_string());
    }
    Ok(opts)
}

/// Upstream `ValidateFieldManager` and the apply-only options: 422 on the request's
/// options kind (`CreateOptions`, `UpdateOptions`, `PatchOptions`).
pub fn validate_options(opts: &WriteOptions, options_kind: &str, apply: bool) -> ApiResult<()> {
    let mut causes = Vec::new();
    let manager = opts.field_manager.as_deref().unwrap_or("");
    if apply && manager.is_empty() {
        causes.push(Cause {
            reason: "FieldValueRequired".into(),
            message: "Required value: is required for apply patch".into(),
            field: "fieldManager".into(),
        });
    }
    if !apply && opts.force {
        causes.push(Cause {
            reason: "FieldValueForbidden".into(),
            message: "Forbidden: may not be specified for non-apply patch".into(),
            field: "force".into(),
        });
    }
    if manager.chars().count() > 128 {
        causes.push(Cause {
            reason: "FieldValueTooLong".into(),
            message: "Too long: may not be more than 128 bytes".into(),
            field: "fieldManager".into(),
        });
    }
    if manager.chars().any(char::is_control) {
        causes.push(Cause {
            reason: "FieldValueInvalid".into(),
            message: format!(
                "Invalid value: {}: must only contain printable characters",
                json!(manager)
            ),
            field: "fieldManager".into(),
        });
    }
    if causes.is_empty() {
        return Ok(());
    }
    Err(ApiError::invalid("meta.k8s.io", options_kind, "", causes))
}

fn operation<'a>(
    def: &'a ResourceDef,
    api_version: &'a str,
    manager: &'a str,
    sub: Option<Subresource>,
    time: &'a str,
    reset: Option<&'a Set>,
    empty: Option<&'a Value>,
) -> Operation<'a> {
    Operation {
        manager,
        api_version,
        kind: def.kind,
        subresource: sub.map(Subresource::name),
        time,
        reset,
        empty,
    }
}

/// Record a non-apply write of `new` over `old` (`None`: create) by `manager`: set
/// `new`'s `metadata.managedFields`. Never fails (upstream `UpdateNoErrors`).
pub fn record_update(
    def: &ResourceDef,
    sub: Option<Subresource>,
    manager: &str,
    old: Option<&Value>,
    new: &mut Value,
) {
    let root = schema_root(def);
    let resolve =
        |name: &str| -> Option<&Value> { crate::registry::catalog::definitions().get(name) };
    let cache = AtomCache::default();
    let mut schema = Schema::new(&root, &resolve).with_cache(&cache);
    if def.custom.is_none() {
        schema = schema.fixed();
    }
    let reset = reset_fields(def, sub);
    let api_version = def.api_version();
    let time = apimachinery::time::now_rfc3339();
    let empty = crate::machinery::ssa::empty::empty_object(def.group, def.version, def.kind);
    let op = operation(
        def,
        &api_version,
        manager,
        sub,
        &time,
        reset.as_ref(),
        empty.as_ref(),
    );
    // the request's managedFields are moved, not copied: unchanged sets are written
    // back as they came
    let new_mf = new
        .get_mut("metadata")
        .and_then(|m| m.get_mut("managedFields"))
        .map(Value::take)
        .filter(|v| !v.is_null());
    let managed =
        crate::machinery::ssa::fieldmanager::update_no_errors(&schema, old, new, new_mf, &op);
    crate::machinery::ssa::fieldmanager::set_managed_fields(new, managed);
}

/// Apply `config` by `manager` over `live` (`None`: create): the merged object with its
/// `managedFields`, or a 409 listing the conflicts.
pub fn apply(
    def: &ResourceDef,
    sub: Option<Subresource>,
    manager: &str,
    live: Option<&Value>,
    config: &Value,
    force: bool,
) -> ApiResult<Value> {
    let root = schema_root(def);
    let resolve =
        |name: &str| -> Option<&Value> { crate::registry::catalog::definitions().get(name) };
    let cache = AtomCache::default();
    let mut schema = Schema::new(&root, &resolve).with_cache(&cache);
    if def.custom.is_none() {
        schema = schema.fixed();
    }
    let reset = reset_fields(def, sub);
    let api_version = def.api_version();
    let time = apimachinery::time::now_rfc3339();
    let empty = crate::machinery::ssa::empty::empty_object(def.group, def.version, def.kind);
    let op = operation(
        def,
        &api_version,
        manager,
        sub,
        &time,
        reset.as_ref(),
        empty.as_ref(),
    );
    // upstream's lastAppliedManager and lastAppliedUpdater act for kubectl only
    let last = if manager == "kubectl" {
        live.and_then(last_applied)
    } else {
        None
    };
    let applied =
        match crate::machinery::ssa::fieldmanager::apply(&schema, live, config, &op, force) {
            // `kubectl apply --server-side` takes over what `kubectl apply` (client-side)
            // applied without conflicts
            Err(ApplyError::Conflicts(conflicts)) if last.is_some() => {
                let allowed = last
                    .as_ref()
                    .map(|obj| crate::machinery::ssa::merge::field_set(&schema, obj));
                match allowed {
                    Some(set) if conflicts.iter().all(|c| set.has(&c.path)) => {
                        crate::machinery::ssa::fieldmanager::apply(&schema, live, config, &op, true)
                    }
                    _ => Err(ApplyError::Conflicts(conflicts)),
                }
            }
            other => other,
        };
    let mut object = applied.map(|a| a.object).map_err(|e| apply_error(&e))?;
    // keep the client-side apply annotation in step
    if last.is_some() {
        set_last_applied(&mut object, config);
    }
    Ok(object)
}

const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// The object in `obj`'s last-applied-configuration annotation.
fn last_applied(obj: &Value) -> Option<Value> {
    let text = obj
        .pointer("/metadata/annotations")?
        .get(LAST_APPLIED)?
        .as_str()?;
    serde_json::from_str::<Value>(text)
        .ok()
        .filter(Value::is_object)
}

/// Record `config` (without the annotation itself) as `object`'s last-applied
/// configuration.
fn set_last_applied(object: &mut Value, config: &Value) {
    let mut applied = config.clone();
    if let Some(a) = applied
        .pointer_mut("/metadata/annotations")
        .and_then(Value::as_object_mut)
    {
        a.remove(LAST_APPLIED);
    }
    let Ok(text) = serde_json::to_string(&applied) else {
        return;
    };
    // upstream refuses annotations over 256 KiB in total; leave it as it was then
    if text.len() > 256 * 1024 {
        return;
    }
    if let Some(a) = object
        .pointer_mut("/metadata/annotations")
        .and_then(Value::as_object_mut)
    {
        a.insert(LAST_APPLIED.into(), Value::String(text));
    }
}

fn apply_error(e: &ApplyError) -> ApiError {
    let mut err = match e {
        ApplyError::Conflicts(_) => ApiError::new(409, "Conflict", e.message()),
        ApplyError::BadRequest(m) => ApiError::bad_request(m.clone()),
        ApplyError::Invalid(m) => ApiError::internal(m.clone()),
    };
    err.causes = e
        .causes()
        .into_iter()
        .map(|c| Cause {
            reason: c.cause_type.to_string().into(),
            message: c.message,
            field: c.field,
        })
        .collect();
    err
}
