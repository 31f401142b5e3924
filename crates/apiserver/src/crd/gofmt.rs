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
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if c.is_control() => {
                let v = c as u32;
                if v < 0x80 {
                    out.push_str(&format!("\\x{v:02x}"));
                } else if v < 0x10000 {
                    out.push_str(&format!("\\u{v:04x}"));
                } else {
                    out.push_str(&format!("\\U{v:08x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
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

/// Go's `encoding/json` rendering of a float64.
pub fn float_json(f: f64) -> String {
    if !f.is_finite() {
        return "null".into();
    }
    let a = f.abs();
    if a != 0.0 && !(1e-6..1e21).contains(&a) {
        let (mant, exp) = split_exp(f);
        let sign = if f < 0.0 { "-" } else { "" };
        let es = if exp < 0 { '-' } else { '+' };
        format!("{sign}{mant}e{es}{}", exp.abs())
    } else if f == 0.0 {
        "0".into()
    } else {
        format!("{f}")
    }
}

fn json_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

fn sorted(m: &Map<String, Value>) -> Vec<(&String, &Value)> {
    let mut v: Vec<_> = m.iter().collect();
    v.sort_by(|a, b| a.0.cmp(b.0));
    v
}

/// Go's `json.Marshal` of an unstructured value (sorted keys, Go float and string escaping).
pub fn json(v: &Value) -> String {
    let mut out = String::new();
    json_into(v, &mut out);
    out
}

fn json_into(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match num(n) {
            Num::Int(i) => out.push_str(&i.to_string()),
            Num::Float(f) => out.push_str(&float_json(f)),
        },
        Value::String(s) => json_string(s, out),
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                json_into(x, out);
            }
            out.push(']');
        }
        Value::Object(m) => {
            out.push('{');
            for (i, (k, x)) in sorted(m).into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                json_string(k, out);
                out.push(':');
                json_into(x, out);
            }
            out.push('}');
        }
    }
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

fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{msg} (regex used for validation is '{fmt}')");
    }
    let ex: Vec<String> = examples.iter().map(|e| format!("'{e}', ")).collect();
    format!(
        "{msg} (e.g. {}regex used for validation is '{fmt}')",
        ex.join(" or ")
    )
}

fn is_label_char(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit()
}

fn matches_dns1123_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && is_label_char(b[0])
        && is_label_char(b[b.len() - 1])
        && b.iter().all(|&c| is_label_char(c) || c == b'-')
}

fn matches_dns1123_subdomain(s: &str) -> bool {
    s.split('.').all(matches_dns1123_label)
}

const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";

/// `validation.IsDNS1123Label`.
pub fn is_dns1123_label(v: &str) -> Vec<String> {
    let mut errs = vec![];
    if v.len() > 63 {
        errs.push("must be no more than 63 characters".to_string());
    }
    if !matches_dns1123_label(v) {
        if matches_dns1123_subdomain(v) {
            errs.push("must not contain dots".to_string());
        } else {
            errs.push(regex_error(
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character",
                DNS1123_LABEL_FMT,
                &["my-name", "123-abc"],
            ));
        }
    }
    errs
}

/// `validation.IsDNS1123Subdomain`.
pub fn is_dns1123_subdomain(v: &str) -> Vec<String> {
    let mut errs = vec![];
    if v.len() > 253 {
        errs.push("must be no more than 253 characters".to_string());
    }
    if !matches_dns1123_subdomain(v) {
        errs.push(regex_error(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
            "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*",
            &["example.com"],
        ));
    }
    errs
}

/// `validation.IsDNS1035Label`.
pub fn is_dns1035_label(v: &str) -> Vec<String> {
    let mut errs = vec![];
    if v.len() > 63 {
        errs.push("must be no more than 63 characters".to_string());
    }
    let b = v.as_bytes();
    let ok = !b.is_empty()
        && b[0].is_ascii_lowercase()
        && is_label_char(b[b.len() - 1])
        && b.iter().all(|&c| is_label_char(c) || c == b'-');
    if !ok {
        errs.push(regex_error(
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character",
            "[a-z]([-a-z0-9]*[a-z0-9])?",
            &["my-name", "abc-123"],
        ));
    }
    errs
}

const LABEL_KEY_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_KEY_ERR: &str =
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

fn matches_label_name(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|&c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_' || c == b'.')
}

/// `validation.IsQualifiedName` (label keys, annotation keys, finalizers).
pub fn is_qualified_name(v: &str) -> Vec<String> {
    let mut errs = vec![];
    let parts: Vec<&str> = v.split('/').collect();
    let name = match parts.len() {
        1 => parts[0],
        2 => {
            let prefix = parts[0];
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                let mut m = vec![];
                if prefix.len() > 253 {
                    m.push("must be no more than 253 bytes".to_string());
                }
                if !matches_dns1123_subdomain(prefix) {
                    m.push(regex_error(
                        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
                        "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*",
                        &["example.com"],
                    ));
                }
                errs.extend(m.into_iter().map(|x| format!("prefix part {x}")));
            }
            parts[1]
        }
        _ => {
            errs.push(format!(
                "a valid label key {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(LABEL_KEY_ERR, LABEL_KEY_FMT, &["MyName", "my.name", "123-abc"])
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        errs.push("name part must be no more than 63 bytes".to_string());
    }
    if !matches_label_name(name) {
        errs.push(format!(
            "name part {}",
            regex_error(
                LABEL_KEY_ERR,
                LABEL_KEY_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errs
}

/// `validation.IsValidLabelValue`.
pub fn is_label_value(v: &str) -> Vec<String> {
    let mut errs = vec![];
    if v.len() > 63 {
        errs.push("must be no more than 63 bytes".to_string());
    }
    if !(v.is_empty() || matches_label_name(v)) {
        errs.push(regex_error(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
            &format!("({LABEL_KEY_FMT})?"),
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

/// `content.IsPathSegmentName` / `IsPathSegmentPrefix`.
pub fn is_path_segment(name: &str, prefix: bool) -> Vec<String> {
    if !prefix {
        for bad in [".", ".."] {
            if name == bad {
                return vec![format!("may not be '{bad}'")];
            }
        }
    }
    let mut errs = vec![];
    for bad in ["/", "%"] {
        if name.contains(bad) {
            errs.push(format!("may not contain '{bad}'"));
        }
    }
    errs
}
