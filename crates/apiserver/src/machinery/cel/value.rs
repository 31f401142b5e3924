//! CEL values, and the schema-aware conversion of JSON data (with the time and
//! duration formats) into them.
//!
//! Runtime error strings follow cel-go (`no such key: x`, `index out of bounds: 3`,
//! `division by zero`, `integer overflow`, `no such overload`, ...), because
//! upstream embeds them into the validation error messages.

use serde_json::Value as J;
use std::rc::Rc;

/// Error text signalling that the per-call cost limit was hit.
pub const COST_EXCEEDED: &str = "operation cancelled: actual cost limit exceeded";

/// `x-kubernetes-list-type` semantics relevant to equality and concatenation.
#[derive(Debug, Clone, PartialEq)]
pub enum ListKind {
    Atomic,
    Set,
    Map(Vec<String>),
}

/// A CEL runtime value.
#[derive(Debug, Clone)]
pub enum Val {
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Double(f64),
    Str(Rc<str>),
    Bytes(Rc<[u8]>),
    List(Rc<Vec<Val>>, Rc<ListKind>),
    /// Map entries; `object` marks schema objects (field access only, no indexing).
    Map(Rc<Vec<(Val, Val)>>, bool),
    /// Nanoseconds.
    Duration(i128),
    /// Nanoseconds since the Unix epoch.
    Timestamp(i128),
    Type(Rc<str>),
    Optional(Option<Box<Val>>),
    /// Data that does not match its schema; raises the error when used.
    Err(Rc<str>),
}

pub(crate) type R = Result<Val, String>;

pub(crate) fn s(v: &str) -> Val {
    Val::Str(Rc::from(v))
}

// ---------------------------------------------------------------------------
// Schema-aware conversion
// ---------------------------------------------------------------------------

/// Whether `name` is a CEL keyword or reserved word (the parser's list plus the
/// literals and `in`), which property names must escape.
pub(crate) fn is_cel_reserved(name: &str) -> bool {
    matches!(name, "true" | "false" | "null" | "in") || super::parse::RESERVED.contains(&name)
}

/// Escapes a property name the way `k8s.io/apiserver/pkg/cel.Escape` does;
/// `None` when the name cannot be accessed from CEL.
pub fn escape(name: &str) -> Option<String> {
    if is_cel_reserved(name) {
        return Some(format!("__{name}__"));
    }
    let mut out = String::new();
    let b = name.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'_' && b.get(i + 1) == Some(&b'_') {
            out.push_str("__underscores__");
            i += 2;
            continue;
        }
        match c {
            b'.' => out.push_str("__dot__"),
            b'-' => out.push_str("__dash__"),
            b'/' => out.push_str("__slash__"),
            c if c.is_ascii_alphanumeric() || c == b'_' => out.push(c as char),
            _ => return None,
        }
        i += 1;
    }
    if out.is_empty() || out.as_bytes()[0].is_ascii_digit() {
        return None;
    }
    Some(out)
}

pub(crate) fn stype(schema: &J) -> &str {
    schema.get("type").and_then(J::as_str).unwrap_or("")
}

pub(crate) fn flag(schema: &J, k: &str) -> bool {
    schema.get(k).and_then(J::as_bool).unwrap_or(false)
}

/// Whether a property schema has a CEL type (untyped, non-int-or-string properties are omitted).
pub(crate) fn has_cel_type(schema: &J) -> bool {
    !stype(schema).is_empty() || flag(schema, "x-kubernetes-int-or-string")
}

/// Properties of an object schema as seen by CEL (escaped names), including the
/// implicit `apiVersion`/`kind`/`metadata` of resource roots.
pub(crate) fn cel_props(schema: &J, resource_root: bool) -> Vec<(String, String, J)> {
    // upstream WithTypeAndObjectMeta keeps schemas that already declare the type and object meta
    let p = |path: &[&str]| {
        let mut s = schema;
        for k in path {
            s = match s.get("properties").and_then(|x| x.get(*k)) {
                Some(x) => x,
                None => return "",
            };
        }
        stype(s)
    };
    let resource_root = resource_root
        && !(p(&["kind"]) == "string"
            && p(&["apiVersion"]) == "string"
            && p(&["metadata"]) == "object"
            && p(&["metadata", "name"]) == "string"
            && p(&["metadata", "generateName"]) == "string");
    let mut out: Vec<(String, String, J)> = Vec::new();
    if let Some(props) = schema.get("properties").and_then(J::as_object) {
        for (k, v) in props {
            if resource_root && (k == "apiVersion" || k == "kind" || k == "metadata") {
                continue;
            }
            if !has_cel_type(v) {
                continue;
            }
            if let Some(e) = escape(k) {
                out.push((e, k.clone(), v.clone()));
            }
        }
    }
    if resource_root {
        let st = serde_json::json!({"type": "string"});
        out.push(("apiVersion".into(), "apiVersion".into(), st.clone()));
        out.push(("kind".into(), "kind".into(), st.clone()));
        out.push((
            "metadata".into(),
            "metadata".into(),
            serde_json::json!({"type": "object", "properties": {"name": st, "generateName": st}}),
        ));
    }
    out
}

pub(crate) fn is_embedded(schema: &J) -> bool {
    flag(schema, "x-kubernetes-embedded-resource")
}

/// Converts JSON data to a CEL value following its structural schema
/// (`UnstructuredToVal`).
pub fn to_val(v: &J, schema: &J, resource_root: bool) -> Val {
    if v.is_null() {
        return Val::Null;
    }
    if flag(schema, "x-kubernetes-int-or-string") {
        return match v {
            J::String(x) => s(x),
            J::Number(n) => num_to_int(n).map(Val::Int).unwrap_or(Val::Err(Rc::from(
                "invalid data, expected XIntOrString value to be either a string or integer",
            ))),
            _ => Val::Err(Rc::from(
                "invalid data, expected XIntOrString value to be either a string or integer",
            )),
        };
    }
    let t = stype(schema);
    match t {
        "object" => {
            let Some(m) = v.as_object() else {
                return Val::Err(Rc::from(
                    "invalid data, expected a map for the provided schema with type=object",
                ));
            };
            let root = resource_root || is_embedded(schema);
            if let Some(ap) = schema.get("additionalProperties").filter(|a| a.is_object()) {
                if !root || schema.get("properties").is_none() {
                    let entries = m
                        .iter()
                        .map(|(k, x)| (s(k), to_val(x, ap, is_embedded(ap))))
                        .collect();
                    return Val::Map(Rc::new(entries), false);
                }
            }
            let mut entries = Vec::new();
            for (esc, orig, ps) in cel_props(schema, root) {
                if let Some(x) = m.get(&orig) {
                    // null fields are treated as absent (upstream "field nullability")
                    if x.is_null() {
                        continue;
                    }
                    entries.push((Val::Str(Rc::from(esc)), to_val(x, &ps, is_embedded(&ps))));
                }
            }
            Val::Map(Rc::new(entries), true)
        }
        "array" => {
            let Some(a) = v.as_array() else {
                return Val::Err(Rc::from(
                    "invalid data, expected an array for the provided schema with type=array",
                ));
            };
            let null = J::Null;
            let items = schema.get("items").unwrap_or(&null);
            let kind = match schema.get("x-kubernetes-list-type").and_then(J::as_str) {
                Some("set") => ListKind::Set,
                Some("map") => ListKind::Map(
                    schema
                        .get("x-kubernetes-list-map-keys")
                        .and_then(J::as_array)
                        .map(|a| {
                            a.iter()
                                .filter_map(|k| k.as_str())
                                .filter_map(escape)
                                .collect()
                        })
                        .unwrap_or_default(),
                ),
                _ => ListKind::Atomic,
            };
            let nullable = flag(items, "nullable");
            let vals = a
                .iter()
                .map(|x| {
                    if x.is_null() && !nullable {
                        Val::Err(Rc::from(
                            "invalid data, got null for schema with nullable=false",
                        ))
                    } else {
                        to_val(x, items, is_embedded(items))
                    }
                })
                .collect();
            Val::List(Rc::new(vals), Rc::new(kind))
        }
        "string" => {
            let Some(x) = v.as_str() else {
                return Val::Err(Rc::from("invalid data, expected string"));
            };
            match schema.get("format").and_then(J::as_str) {
                Some("byte") => match base64_decode(x) {
                    Some(b) => Val::Bytes(Rc::from(b)),
                    None => Val::Err(Rc::from("invalid data, expected base64 encoded bytes")),
                },
                Some("duration") => match parse_go_duration(x) {
                    Some(d) => Val::Duration(d),
                    None => Val::Err(Rc::from("invalid data, expected duration")),
                },
                Some("date") => match parse_date(x) {
                    Some(t) => Val::Timestamp(t),
                    None => Val::Err(Rc::from("invalid data, expected date")),
                },
                Some("date-time") => match parse_rfc3339(x) {
                    Some(t) => Val::Timestamp(t),
                    None => Val::Err(Rc::from("invalid data, expected date-time")),
                },
                _ => s(x),
            }
        }
        "integer" => match v {
            J::Number(n) => num_to_int(n)
                .map(Val::Int)
                .unwrap_or(Val::Err(Rc::from("invalid data, expected integer"))),
            _ => Val::Err(Rc::from("invalid data, expected integer")),
        },
        "number" => match v.as_f64() {
            Some(f) => Val::Double(f),
            None => Val::Err(Rc::from("invalid data, expected number")),
        },
        "boolean" => match v.as_bool() {
            Some(b) => Val::Bool(b),
            None => Val::Err(Rc::from("invalid data, expected boolean")),
        },
        _ => json_dyn(v),
    }
}

pub(crate) fn num_to_int(n: &serde_json::Number) -> Option<i64> {
    if let Some(i) = n.as_i64() {
        return Some(i);
    }
    let f = n.as_f64()?;
    if f.fract() == 0.0 && (-9.223372036854776e18..9.223372036854776e18).contains(&f) {
        Some(f as i64)
    } else {
        None
    }
}

/// Schema-less conversion (for untyped/preserve-unknown-fields data).
pub fn json_dyn(v: &J) -> Val {
    match v {
        J::Null => Val::Null,
        J::Bool(b) => Val::Bool(*b),
        J::Number(n) => n
            .as_i64()
            .map(Val::Int)
            .unwrap_or_else(|| Val::Double(n.as_f64().unwrap_or(0.0))),
        J::String(x) => s(x),
        J::Array(a) => Val::List(
            Rc::new(a.iter().map(json_dyn).collect()),
            Rc::new(ListKind::Atomic),
        ),
        J::Object(m) => Val::Map(
            Rc::new(m.iter().map(|(k, x)| (s(k), json_dyn(x))).collect()),
            false,
        ),
    }
}

pub(crate) fn base64_decode(x: &str) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let mut buf = 0u32;
    let mut bits = 0;
    for c in x.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            b'=' => break,
            _ => return None,
        } as u32;
        buf = (buf << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((buf >> bits) as u8);
            buf &= (1 << bits) - 1;
        }
    }
    Some(out)
}

/// Parses a Go `time.ParseDuration` string into nanoseconds.
pub fn parse_go_duration(x: &str) -> Option<i128> {
    apimachinery::duration::parse(x).ok().map(i128::from)
}

pub(crate) use apimachinery::time::{
    civil_from_days, parse_date_nanos as parse_date, parse_rfc3339_nanos as parse_rfc3339,
};

pub(crate) const MIN_TS_SECS: i128 = -62135596800; // 0001-01-01
pub(crate) const MAX_TS_SECS: i128 = 253402300799; // 9999-12-31T23:59:59

pub(crate) fn check_ts(ns: i128) -> R {
    let secs = ns.div_euclid(1_000_000_000);
    if !(MIN_TS_SECS..=MAX_TS_SECS).contains(&secs) {
        return Err("timestamp out of range".into());
    }
    Ok(Val::Timestamp(ns))
}

pub(crate) const MAX_DUR_NS: i128 = 315_576_000_000 * 1_000_000_000 + 999_999_999;

pub(crate) fn check_dur(ns: i128) -> R {
    if ns.abs() > MAX_DUR_NS {
        return Err("duration out of range".into());
    }
    Ok(Val::Duration(ns))
}

/// Formats a timestamp as RFC 3339 (UTC).
pub fn fmt_ts(ns: i128) -> String {
    let secs = ns.div_euclid(1_000_000_000) as i64;
    let frac = ns.rem_euclid(1_000_000_000);
    let (y, m, d) = civil_from_days(secs.div_euclid(86400));
    let sod = secs.rem_euclid(86400);
    let mut out = format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}",
        sod / 3600,
        sod % 3600 / 60,
        sod % 60
    );
    if frac != 0 {
        let f = format!("{frac:09}");
        out.push('.');
        out.push_str(f.trim_end_matches('0'));
    }
    out.push('Z');
    out
}

/// Formats a duration the way CEL's `string(duration)` does (seconds with `s`).
pub fn fmt_dur(ns: i128) -> String {
    let secs = ns / 1_000_000_000;
    let frac = (ns % 1_000_000_000).abs();
    if frac == 0 {
        format!("{secs}s")
    } else {
        let sign = if ns < 0 && secs == 0 { "-" } else { "" };
        let f = format!("{frac:09}");
        format!("{sign}{secs}.{}s", f.trim_end_matches('0'))
    }
}
