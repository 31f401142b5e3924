//! Go-compatible rendering helpers (`%q`, `%v`, `encoding/json`) and
//! `field.Error` constructors producing [`FieldCause`]s with upstream texts.

use crate::validation::FieldCause;
use serde_json::{Map, Value};

/// A JSON number as Go's unstructured decoding sees it: `int64` or `float64`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Num {
    /// A number without fraction or exponent that fits an int64.
    Int(i64),
    /// Any other number.
    Float(f64),
}

/// Classifies a JSON number the way Kubernetes' JSON decoder does.
pub fn num(n: &serde_json::Number) -> Num {
    if let Some(i) = n.as_i64() {
        Num::Int(i)
    } else {
        Num::Float(n.as_f64().unwrap_or(0.0))
    }
}

/// Go's `strconv.Quote`.
pub fn quote(s: &str) -> String {
    crate::selector::go_quote(s)
}

fn split_exp(f: f64) -> (String, i32) {
    // Rust's `{:e}` prints the shortest round-tripping digits.
    let s = format!("{:e}", f.abs());
    let (mant, exp) = s.split_once('e').unwrap_or((s.as_str(), "0"));
    (mant.to_string(), exp.parse().unwrap_or(0))
}

/// Go's `%v` for a float64 (`%g` with the shortest representation, exponent from 21).
pub fn float_v(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        };
    }
    if f == 0.0 {
        return if f.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        };
    }
    let (mant, exp) = split_exp(f);
    let sign = if f < 0.0 { "-" } else { "" };
    if !(-4..21).contains(&exp) {
        let es = if exp < 0 { '-' } else { '+' };
        format!("{sign}{mant}e{es}{:02}", exp.abs())
    } else {
        format!("{f}")
    }
}

fn sorted(m: &Map<String, Value>) -> Vec<(&String, &Value)> {
    let mut v: Vec<_> = m.iter().collect();
    v.sort_by(|a, b| a.0.cmp(b.0));
    v
}

/// Go's `json.Marshal` of an unstructured value (sorted keys, Go float and string escaping).
pub fn json(v: &Value) -> String {
    let mut out = String::new();
    crate::ssa::fieldpath::write_go_json(&mut out, v);
    out
}

/// Go's `%v` of an unstructured value (`map[k:v]`, `[a b]`, `<nil>`).
pub fn value_v(v: &Value) -> String {
    match v {
        Value::Null => "<nil>".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => num_v(n),
        Value::String(s) => s.clone(),
        Value::Array(a) => {
            let parts: Vec<String> = a.iter().map(value_v).collect();
            format!("[{}]", parts.join(" "))
        }
        Value::Object(m) => {
            let parts: Vec<String> = sorted(m)
                .into_iter()
                .map(|(k, x)| format!("{k}:{}", value_v(x)))
                .collect();
            format!("map[{}]", parts.join(" "))
        }
    }
}

/// Go's `%T` of an unstructured value.
pub fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(n) => match num(n) {
            Num::Int(_) => "int64",
            Num::Float(_) => "float64",
        },
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

/// Go's `%v` of a JSON number.
pub fn num_v(n: &serde_json::Number) -> String {
    match num(n) {
        Num::Int(i) => i.to_string(),
        Num::Float(f) => float_v(f),
    }
}

/// A `field.Error` bad value.
#[derive(Debug, Clone, PartialEq)]
pub enum Bad {
    /// A Go value of unstructured shape (string, int64, float64, bool, nil, map, slice).
    V(Value),
    /// `field.OmitValue`.
    Omit,
}

impl From<Value> for Bad {
    fn from(v: Value) -> Self {
        Bad::V(v)
    }
}
impl From<&str> for Bad {
    fn from(v: &str) -> Self {
        Bad::V(Value::String(v.to_string()))
    }
}
impl From<String> for Bad {
    fn from(v: String) -> Self {
        Bad::V(Value::String(v))
    }
}
impl From<i64> for Bad {
    fn from(v: i64) -> Self {
        Bad::V(Value::from(v))
    }
}
impl From<bool> for Bad {
    fn from(v: bool) -> Self {
        Bad::V(Value::Bool(v))
    }
}

fn render_bad(b: &Bad) -> Option<String> {
    match b {
        Bad::Omit => None,
        // a nil bad value is rendered as the string "null"
        Bad::V(Value::Null) => Some(quote("null")),
        Bad::V(Value::String(s)) => Some(quote(s)),
        Bad::V(Value::Number(n)) => Some(num_v(n)),
        Bad::V(Value::Bool(b)) => Some(b.to_string()),
        Bad::V(v) => Some(json(v)),
    }
}

fn with_value(kind: &str, bad: &Bad, detail: &str) -> String {
    let mut s = match render_bad(bad) {
        Some(v) => format!("{kind}: {v}"),
        None => kind.to_string(),
    };
    if !detail.is_empty() {
        s.push_str(": ");
        s.push_str(detail);
    }
    s
}

fn plain(kind: &str, detail: &str) -> String {
    if detail.is_empty() {
        kind.to_string()
    } else {
        format!("{kind}: {detail}")
    }
}

fn mk(reason: &'static str, message: String, field: &str) -> FieldCause {
    FieldCause {
        reason,
        message,
        field: field.to_string(),
    }
}

/// `field.Invalid`.
pub fn invalid(field: &str, bad: impl Into<Bad>, detail: &str) -> FieldCause {
    mk(
        "FieldValueInvalid",
        with_value("Invalid value", &bad.into(), detail),
        field,
    )
}
/// `field.TypeInvalid`.
pub fn type_invalid(field: &str, bad: impl Into<Bad>, detail: &str) -> FieldCause {
    mk(
        "FieldValueTypeInvalid",
        with_value("Invalid value", &bad.into(), detail),
        field,
    )
}
/// `field.Required`.
pub fn required(field: &str, detail: &str) -> FieldCause {
    mk("FieldValueRequired", plain("Required value", detail), field)
}
/// `field.Forbidden`.
pub fn forbidden(field: &str, detail: &str) -> FieldCause {
    mk("FieldValueForbidden", plain("Forbidden", detail), field)
}
/// `field.Duplicate`.
pub fn duplicate(field: &str, bad: impl Into<Bad>) -> FieldCause {
    mk(
        "FieldValueDuplicate",
        with_value("Duplicate value", &bad.into(), ""),
        field,
    )
}
/// `field.NotSupported`.
pub fn not_supported<S: AsRef<str>>(field: &str, bad: impl Into<Bad>, valid: &[S]) -> FieldCause {
    let detail = if valid.is_empty() {
        String::new()
    } else {
        let q: Vec<String> = valid.iter().map(|v| quote(v.as_ref())).collect();
        format!("supported values: {}", q.join(", "))
    };
    mk(
        "FieldValueNotSupported",
        with_value("Unsupported value", &bad.into(), &detail),
        field,
    )
}
/// `field.TooLong` (bytes).
pub fn too_long(field: &str, max: i64) -> FieldCause {
    let detail = if max >= 0 {
        format!(
            "may not be more than {max} {}",
            if max == 1 { "byte" } else { "bytes" }
        )
    } else {
        "value is too long".to_string()
    };
    mk("FieldValueTooLong", plain("Too long", &detail), field)
}
/// `field.TooMany`.
pub fn too_many(field: &str, actual: i64, max: i64) -> FieldCause {
    let detail = if max >= 0 {
        format!(
            "must have at most {max} {}",
            if max == 1 { "item" } else { "items" }
        )
    } else {
        "has too many items".to_string()
    };
    let bad = if actual >= 0 {
        Bad::from(actual)
    } else {
        Bad::Omit
    };
    mk(
        "FieldValueTooMany",
        with_value("Too many", &bad, &detail),
        field,
    )
}

/// `field.Path.Child` on a rendered path (`<nil>`-free: an empty parent means root).
pub fn child(parent: &str, name: &str) -> String {
    if parent.is_empty() {
        name.to_string()
    } else {
        format!("{parent}.{name}")
    }
}
/// `field.Path.Index`.
pub fn index(parent: &str, i: usize) -> String {
    format!("{parent}[{i}]")
}
/// `field.Path.Key`.
pub fn key(parent: &str, k: &str) -> String {
    format!("{parent}[{k}]")
}

// ---- apimachinery name validators ----

// The name checks of apimachinery's `util/validation` and `api/validation/path`, shared
// with the built-in kinds' validation.

/// `validation.IsDNS1123Label`.
pub fn is_dns1123_label(v: &str) -> Vec<String> {
    crate::validation::dns1123_label_errs(v)
}

/// `validation.IsDNS1123Subdomain`.
pub fn is_dns1123_subdomain(v: &str) -> Vec<String> {
    crate::validation::dns1123_subdomain_errs(v)
}

/// `validation.IsDNS1035Label`.
pub fn is_dns1035_label(v: &str) -> Vec<String> {
    crate::validation::dns1035_label_errs(v)
}

/// `validation.IsQualifiedName`.
pub fn is_qualified_name(v: &str) -> Vec<String> {
    crate::validation::qualified_name_errs(v)
}

/// `validation.IsValidLabelValue`.
pub fn is_label_value(v: &str) -> Vec<String> {
    crate::validation::label_value_errs(v)
}

/// `content.IsPathSegmentName` / `IsPathSegmentPrefix`.
pub fn is_path_segment(name: &str, prefix: bool) -> Vec<String> {
    crate::validation::path_segment_errs(name, prefix)
}
