//! What the conversions between the versions of one kind share (each kind converts in
//! its own registry file: `core/event.rs`, `autoscaling/conversion.rs`).
//!
//! Objects are JSON values; output keys are `kind`, `apiVersion`, `metadata`, then the
//! target version's fields in the order upstream's Go structs declare them. Values are
//! moved rather than re-typed: a field of an unexpected JSON type is carried over as it
//! is where it has a counterpart, and otherwise left out (never a panic). Zero values Go
//! would print for absent non-pointer fields are only produced where a conversion creates
//! the containing structure (annotation payloads, v1 HPA status replica counts).

use serde_json::{Map, Value};

/// The object `obj` of `kind` as a map, or the error of converting a non-object.
pub(crate) fn object(
    kind: &str,
    from: &str,
    to: &str,
    obj: Value,
) -> Result<Map<String, Value>, String> {
    match obj {
        Value::Object(map) => Ok(map),
        other => Err(format!(
            "cannot convert {kind} from {from} to {to}: expected a JSON object, got {}",
            json_type(&other)
        )),
    }
}

pub(crate) fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// `kind`, `apiVersion` and (when present) `metadata`, in that order.
pub(crate) fn header(kind: &str, api_version: &str, metadata: Option<Value>) -> Map<String, Value> {
    let mut out = Map::new();
    out.insert("kind".into(), Value::String(kind.into()));
    out.insert("apiVersion".into(), Value::String(api_version.into()));
    if let Some(m) = metadata {
        out.insert("metadata".into(), m);
    }
    out
}

/// Insert `value` under `key` when there is one.
pub(crate) fn put(out: &mut Map<String, Value>, key: &str, value: Option<Value>) {
    if let Some(v) = value {
        out.insert(key.into(), v);
    }
}

/// Go's `omitempty` for scalars and pointers: null, `""`, `0` and `false` are left out.
pub(crate) fn omit_empty(v: Option<Value>) -> Option<Value> {
    match v {
        None | Some(Value::Null) | Some(Value::Bool(false)) => None,
        Some(Value::String(s)) if s.is_empty() => None,
        Some(Value::Number(n)) if n.as_f64() == Some(0.0) => None,
        other => other,
    }
}

/// Null and absent are the same for Go pointers.
pub(crate) fn omit_null(v: Option<Value>) -> Option<Value> {
    v.filter(|v| !v.is_null())
}
