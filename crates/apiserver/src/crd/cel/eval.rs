//! CEL values, schema-aware conversion of JSON data and the evaluator.
//!
//! Runtime error strings follow cel-go (`no such key: x`, `index out of bounds: 3`,
//! `division by zero`, `integer overflow`, `no such overload`, ...), because
//! upstream embeds them into the validation error messages.

use crate::crd::cel::parse::{Expr, Kind, Lit, Macro, Macro2};
use serde_json::Value as J;
use std::cmp::Ordering;
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

type R = Result<Val, String>;

fn s(v: &str) -> Val {
    Val::Str(Rc::from(v))
}

// ---------------------------------------------------------------------------
// Schema-aware conversion
// ---------------------------------------------------------------------------

const CEL_RESERVED: [&str; 21] = [
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

/// Escapes a property name the way `k8s.io/apiserver/pkg/cel.Escape` does;
/// `None` when the name cannot be accessed from CEL.
pub fn escape(name: &str) -> Option<String> {
    if CEL_RESERVED.contains(&name) {
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

fn flag(schema: &J, k: &str) -> bool {
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

fn is_embedded(schema: &J) -> bool {
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

fn num_to_int(n: &serde_json::Number) -> Option<i64> {
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

fn base64_decode(x: &str) -> Option<Vec<u8>> {
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
    let mut rest = x;
    let mut neg = false;
    if let Some(r) = rest.strip_prefix('-') {
        neg = true;
        rest = r;
    } else if let Some(r) = rest.strip_prefix('+') {
        rest = r;
    }
    if rest == "0" {
        return Some(0);
    }
    if rest.is_empty() {
        return None;
    }
    let mut total: f64 = 0.0;
    while !rest.is_empty() {
        let n = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if n == 0 {
            return None;
        }
        let num: f64 = rest[..n].parse().ok()?;
        rest = &rest[n..];
        let u = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let mult = match &rest[..u] {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return None,
        };
        rest = &rest[u..];
        total += num * mult;
    }
    let v = total.round() as i128;
    Some(if neg { -v } else { v })
}

fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m as i64 + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146097 + doe - 719468
}

fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719468;
    let era = if z >= 0 { z } else { z - 146096 } / 146097;
    let doe = z - era * 146097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        _ => 28,
    }
}

fn parse_date(x: &str) -> Option<i128> {
    let b = x.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let y: i64 = x[0..4].parse().ok()?;
    let m: u32 = x[5..7].parse().ok()?;
    let d: u32 = x[8..10].parse().ok()?;
    if !(1..=12).contains(&m) || d == 0 || d > days_in_month(y, m) {
        return None;
    }
    Some(days_from_civil(y, m, d) as i128 * 86_400 * 1_000_000_000)
}

/// Parses an RFC 3339 timestamp into nanoseconds since the epoch.
pub fn parse_rfc3339(x: &str) -> Option<i128> {
    if x.len() < 20 || !x.is_char_boundary(10) || !x.is_char_boundary(19) {
        return None;
    }
    let days = parse_date(&x[0..10])? / 1_000_000_000;
    let b = x.as_bytes();
    if !(b[10] == b'T' || b[10] == b't') || b[13] != b':' || b[16] != b':' {
        return None;
    }
    let h: i128 = x[11..13].parse().ok()?;
    let mi: i128 = x[14..16].parse().ok()?;
    let se: i128 = x[17..19].parse().ok()?;
    if h > 23 || mi > 59 || se > 60 {
        return None;
    }
    let mut rest = &x[19..];
    let mut nanos: i128 = 0;
    if let Some(r) = rest.strip_prefix('.') {
        let n = r.find(|c: char| !c.is_ascii_digit()).unwrap_or(r.len());
        if n == 0 || n > 9 {
            return None;
        }
        let frac = &r[..n];
        nanos = frac.parse::<i128>().ok()? * 10i128.pow(9 - n as u32);
        rest = &r[n..];
    }
    let off: i128 = match rest {
        "Z" | "z" => 0,
        _ if rest.len() == 6
            && (rest.starts_with('+') || rest.starts_with('-'))
            && &rest[3..4] == ":" =>
        {
            let oh: i128 = rest[1..3].parse().ok()?;
            let om: i128 = rest[4..6].parse().ok()?;
            let o = (oh * 60 + om) * 60;
            if rest.starts_with('-') {
                -o
            } else {
                o
            }
        }
        _ => return None,
    };
    let secs = days + h * 3600 + mi * 60 + se - off;
    Some(secs * 1_000_000_000 + nanos)
}

const MIN_TS_SECS: i128 = -62135596800; // 0001-01-01
const MAX_TS_SECS: i128 = 253402300799; // 9999-12-31T23:59:59

fn check_ts(ns: i128) -> R {
    let secs = ns.div_euclid(1_000_000_000);
    if !(MIN_TS_SECS..=MAX_TS_SECS).contains(&secs) {
        return Err("timestamp out of range".into());
    }
    Ok(Val::Timestamp(ns))
}

const MAX_DUR_NS: i128 = 315_576_000_000 * 1_000_000_000 + 999_999_999;

fn check_dur(ns: i128) -> R {
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

// ---------------------------------------------------------------------------
// Evaluation
// ---------------------------------------------------------------------------

/// Type name of a value as reported by `type()` and overload errors.
pub fn type_name(v: &Val) -> &'static str {
    match v {
        Val::Null => "null_type",
        Val::Bool(_) => "bool",
        Val::Int(_) => "int",
        Val::Uint(_) => "uint",
        Val::Double(_) => "double",
        Val::Str(_) => "string",
        Val::Bytes(_) => "bytes",
        Val::List(..) => "list",
        Val::Map(_, false) => "map",
        Val::Map(_, true) => "object",
        Val::Duration(_) => "google.protobuf.Duration",
        Val::Timestamp(_) => "google.protobuf.Timestamp",
        Val::Type(_) => "type",
        Val::Optional(_) => "optional_type",
        Val::Err(_) => "error",
    }
}

/// Variable bindings: a small stack of `(name, value)`.
pub struct Env {
    vars: Vec<(String, Val)>,
    /// Remaining cost units for this call.
    pub budget: i64,
    /// Cost consumed so far.
    pub used: i64,
}

impl Env {
    /// New environment with the given variables and per-call budget.
    pub fn new(vars: Vec<(String, Val)>, budget: i64) -> Env {
        Env {
            vars,
            budget,
            used: 0,
        }
    }
    fn lookup(&self, n: &str) -> Option<&Val> {
        self.vars.iter().rev().find(|(k, _)| k == n).map(|(_, v)| v)
    }
    fn charge(&mut self, c: i64) -> Result<(), String> {
        self.used += c;
        if self.used > self.budget {
            return Err(COST_EXCEEDED.to_string());
        }
        Ok(())
    }
}

fn no_overload() -> String {
    "no such overload".to_string()
}

fn lit(l: &Lit) -> Val {
    match l {
        Lit::Null => Val::Null,
        Lit::Bool(b) => Val::Bool(*b),
        Lit::Int(i) => Val::Int(*i),
        Lit::Uint(u) => Val::Uint(*u),
        Lit::Double(d) => Val::Double(*d),
        Lit::Str(x) => Val::Str(x.clone()),
        Lit::Bytes(b) => Val::Bytes(b.clone()),
    }
}

fn chk(v: Val) -> R {
    match v {
        Val::Err(e) => Err(e.to_string()),
        v => Ok(v),
    }
}

fn map_get<'a>(m: &'a [(Val, Val)], k: &Val) -> Option<&'a Val> {
    m.iter().find(|(x, _)| equals(x, k)).map(|(_, v)| v)
}

fn key_str(k: &Val) -> String {
    match k {
        Val::Str(x) => x.to_string(),
        Val::Int(i) => i.to_string(),
        Val::Uint(u) => u.to_string(),
        Val::Bool(b) => b.to_string(),
        Val::Double(d) => d.to_string(),
        _ => format!("{k:?}"),
    }
}

/// Map key under which field `f` is stored: reserved words used as field names
/// (`self.spec.if`) resolve to their escaped form (`__if__`).
pub fn field_key(f: &str) -> String {
    if CEL_RESERVED.contains(&f) {
        format!("__{f}__")
    } else {
        f.to_string()
    }
}

fn field_get<'a>(m: &'a [(Val, Val)], f: &str, object: bool) -> Option<&'a Val> {
    map_get(m, &s(f)).or_else(|| {
        if object {
            map_get(m, &s(&field_key(f)))
        } else {
            None
        }
    })
}

fn select(v: Val, f: &str) -> R {
    match chk(v)? {
        Val::Map(m, o) => match field_get(&m, f, o) {
            Some(x) => chk(x.clone()),
            None => Err(format!("no such key: {f}")),
        },
        Val::Optional(o) => match o {
            None => Ok(Val::Optional(None)),
            Some(inner) => match *inner {
                Val::Map(m, o) => Ok(Val::Optional(
                    field_get(&m, f, o).map(|x| Box::new(x.clone())),
                )),
                _ => Err(no_overload()),
            },
        },
        _ => Err(no_overload()),
    }
}

fn index(v: Val, i: Val) -> R {
    match (chk(v)?, chk(i)?) {
        (Val::List(l, _), idx) => {
            let n = match idx {
                Val::Int(n) => n,
                Val::Uint(u) => u as i64,
                Val::Double(d) if d.fract() == 0.0 => d as i64,
                _ => return Err(no_overload()),
            };
            if n < 0 || n as usize >= l.len() {
                return Err(format!("index out of bounds: {n}"));
            }
            chk(l[n as usize].clone())
        }
        (Val::Map(m, _), k) => match map_get(&m, &k) {
            Some(x) => chk(x.clone()),
            None => Err(format!("no such key: {}", key_str(&k))),
        },
        _ => Err(no_overload()),
    }
}

/// Heterogeneous runtime equality (cel-go semantics, numeric types compare by value).
pub fn equals(a: &Val, b: &Val) -> bool {
    match (a, b) {
        (Val::Null, Val::Null) => true,
        (Val::Bool(x), Val::Bool(y)) => x == y,
        (Val::Str(x), Val::Str(y)) => x == y,
        (Val::Bytes(x), Val::Bytes(y)) => x == y,
        (Val::Duration(x), Val::Duration(y)) | (Val::Timestamp(x), Val::Timestamp(y)) => x == y,
        (Val::Type(x), Val::Type(y)) => x == y,
        (Val::Optional(x), Val::Optional(y)) => match (x, y) {
            (None, None) => true,
            (Some(x), Some(y)) => equals(x, y),
            _ => false,
        },
        (Val::List(x, kx), Val::List(y, ky)) => {
            if x.len() != y.len() {
                return false;
            }
            let kind = if **kx == ListKind::Atomic { ky } else { kx };
            match &**kind {
                ListKind::Atomic => x.iter().zip(y.iter()).all(|(a, b)| equals(a, b)),
                ListKind::Set => {
                    x.iter().all(|a| y.iter().any(|b| equals(a, b)))
                        && y.iter().all(|b| x.iter().any(|a| equals(a, b)))
                }
                ListKind::Map(keys) => x.iter().all(|a| {
                    let ka = map_keys(a, keys);
                    y.iter().any(|b| map_keys(b, keys) == ka && equals(a, b))
                }),
            }
        }
        (Val::Map(x, _), Val::Map(y, _)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| map_get(y, k).is_some_and(|w| equals(v, w)))
        }
        _ => match (num(a), num(b)) {
            (Some(x), Some(y)) => num_cmp(x, y) == Some(Ordering::Equal),
            _ => false,
        },
    }
}

fn map_keys(v: &Val, keys: &[String]) -> Vec<String> {
    match v {
        Val::Map(m, _) => keys
            .iter()
            .map(|k| map_get(m, &s(k)).map(key_str).unwrap_or_default())
            .collect(),
        _ => vec![],
    }
}

#[derive(Clone, Copy)]
enum Num {
    I(i64),
    U(u64),
    D(f64),
}

fn num(v: &Val) -> Option<Num> {
    match v {
        Val::Int(i) => Some(Num::I(*i)),
        Val::Uint(u) => Some(Num::U(*u)),
        Val::Double(d) => Some(Num::D(*d)),
        _ => None,
    }
}

fn num_cmp(a: Num, b: Num) -> Option<Ordering> {
    match (a, b) {
        (Num::I(x), Num::I(y)) => Some(x.cmp(&y)),
        (Num::U(x), Num::U(y)) => Some(x.cmp(&y)),
        (Num::D(x), Num::D(y)) => x.partial_cmp(&y),
        (Num::I(x), Num::U(y)) => Some(if x < 0 {
            Ordering::Less
        } else {
            (x as u64).cmp(&y)
        }),
        (Num::U(x), Num::I(y)) => Some(if y < 0 {
            Ordering::Greater
        } else {
            x.cmp(&(y as u64))
        }),
        (Num::I(x), Num::D(y)) => (x as f64).partial_cmp(&y),
        (Num::D(x), Num::I(y)) => x.partial_cmp(&(y as f64)),
        (Num::U(x), Num::D(y)) => (x as f64).partial_cmp(&y),
        (Num::D(x), Num::U(y)) => x.partial_cmp(&(y as f64)),
    }
}

fn compare(a: &Val, b: &Val) -> Result<Option<Ordering>, String> {
    Ok(match (a, b) {
        (Val::Str(x), Val::Str(y)) => Some(x.cmp(y)),
        (Val::Bytes(x), Val::Bytes(y)) => Some(x.cmp(y)),
        (Val::Bool(x), Val::Bool(y)) => Some(x.cmp(y)),
        (Val::Duration(x), Val::Duration(y)) | (Val::Timestamp(x), Val::Timestamp(y)) => {
            Some(x.cmp(y))
        }
        _ => match (num(a), num(b)) {
            (Some(x), Some(y)) => num_cmp(x, y),
            _ => return Err(no_overload()),
        },
    })
}

fn overflow() -> String {
    "integer overflow".to_string()
}

fn arith(op: &str, a: Val, b: Val) -> R {
    use Val::{Bytes, Double, Duration, Int, List, Str, Timestamp, Uint};
    match (op, a, b) {
        ("+", Int(x), Int(y)) => x.checked_add(y).map(Int).ok_or_else(overflow),
        ("-", Int(x), Int(y)) => x.checked_sub(y).map(Int).ok_or_else(overflow),
        ("*", Int(x), Int(y)) => x.checked_mul(y).map(Int).ok_or_else(overflow),
        ("/", Int(_), Int(0)) | ("/", Uint(_), Uint(0)) => Err("division by zero".into()),
        ("%", Int(_), Int(0)) | ("%", Uint(_), Uint(0)) => Err("modulus by zero".into()),
        ("/", Int(x), Int(y)) => x.checked_div(y).map(Int).ok_or_else(overflow),
        ("%", Int(x), Int(y)) => x.checked_rem(y).map(Int).ok_or_else(overflow),
        ("+", Uint(x), Uint(y)) => x.checked_add(y).map(Uint).ok_or_else(overflow),
        ("-", Uint(x), Uint(y)) => x.checked_sub(y).map(Uint).ok_or_else(overflow),
        ("*", Uint(x), Uint(y)) => x.checked_mul(y).map(Uint).ok_or_else(overflow),
        ("/", Uint(x), Uint(y)) => Ok(Uint(x / y)),
        ("%", Uint(x), Uint(y)) => Ok(Uint(x % y)),
        ("+", Double(x), Double(y)) => Ok(Double(x + y)),
        ("-", Double(x), Double(y)) => Ok(Double(x - y)),
        ("*", Double(x), Double(y)) => Ok(Double(x * y)),
        ("/", Double(x), Double(y)) => Ok(Double(x / y)),
        ("+", Str(x), Str(y)) => Ok(Str(Rc::from(format!("{x}{y}")))),
        ("+", Bytes(x), Bytes(y)) => Ok(Bytes(Rc::from([&x[..], &y[..]].concat()))),
        ("+", List(x, kx), List(y, _)) => Ok(concat_lists(&x, kx, &y)),
        ("+", Duration(x), Duration(y)) => check_dur(x + y),
        ("-", Duration(x), Duration(y)) => check_dur(x - y),
        ("+", Timestamp(x), Duration(y)) | ("+", Duration(y), Timestamp(x)) => check_ts(x + y),
        ("-", Timestamp(x), Duration(y)) => check_ts(x - y),
        ("-", Timestamp(x), Timestamp(y)) => check_dur(x - y),
        _ => Err(no_overload()),
    }
}

fn concat_lists(x: &[Val], kind: Rc<ListKind>, y: &[Val]) -> Val {
    let mut out: Vec<Val> = x.to_vec();
    match &*kind {
        ListKind::Atomic => out.extend(y.iter().cloned()),
        ListKind::Set => {
            for v in y {
                if !out.iter().any(|o| equals(o, v)) {
                    out.push(v.clone());
                }
            }
        }
        ListKind::Map(keys) => {
            for v in y {
                let kv = map_keys(v, keys);
                if let Some(p) = out.iter().position(|o| map_keys(o, keys) == kv) {
                    out[p] = v.clone();
                } else {
                    out.push(v.clone());
                }
            }
        }
    }
    Val::List(Rc::new(out), kind)
}

fn truthy(v: R) -> Result<bool, String> {
    match v? {
        Val::Bool(b) => Ok(b),
        Val::Err(e) => Err(e.to_string()),
        _ => Err(no_overload()),
    }
}

/// Evaluates an expression.
pub fn eval(e: &Expr, env: &mut Env) -> R {
    env.charge(1)?;
    match &e.kind {
        Kind::Lit(l) => Ok(lit(l)),
        Kind::Ident(n) => match env.lookup(n) {
            Some(v) => Ok(v.clone()),
            None => type_ident(n).ok_or_else(|| format!("no such attribute(s): {n}")),
        },
        Kind::Select(..) => e_select_0(e, env),
        Kind::Has(op, f) => match chk(eval(op, env)?)? {
            Val::Map(m, o) => match field_get(&m, f, o) {
                Some(Val::Err(e)) => Err(e.to_string()),
                Some(_) => Ok(Val::Bool(true)),
                None => Ok(Val::Bool(false)),
            },
            _ => Err(no_overload()),
        },
        Kind::Index(..) => e_index_1(e, env),
        Kind::List(..) => e_list_2(e, env),
        Kind::Map(..) => e_map_3(e, env),
        Kind::Not(x) => Ok(Val::Bool(!truthy(eval(x, env))?)),
        Kind::Neg(x) => match chk(eval(x, env)?)? {
            Val::Int(i) => i.checked_neg().map(Val::Int).ok_or_else(overflow),
            Val::Double(d) => Ok(Val::Double(-d)),
            Val::Duration(d) => Ok(Val::Duration(-d)),
            _ => Err(no_overload()),
        },
        Kind::And(..) => e_and_4(e, env),
        Kind::Or(..) => e_or_5(e, env),
        Kind::Cond(..) => e_cond_6(e, env),
        Kind::Bin(..) => e_bin_7(e, env),
        Kind::Comp(m, range, var, body, extra) => {
            comprehension(*m, range, var, body, extra.as_deref(), env)
        }
        Kind::Comp2(m, range, v1, v2, args) => comprehension2(*m, range, v1, v2, args, env),
        Kind::Bind(..) => e_bind_8(e, env),
        Kind::Call(..) => e_call_9(e, env),
    }
}

#[inline(never)]
fn e_select_0(e: &Expr, env: &mut Env) -> R {
    match &e.kind {
        Kind::Select(op, f, opt) => {
            if let Some(q) = qualified(e) {
                if env.lookup(q.split('.').next().unwrap_or("")).is_none() {
                    if let Some(t) = type_ident(&q) {
                        return Ok(t);
                    }
                }
            }
            let v = eval(op, env)?;
            if *opt {
                return match chk(v)? {
                    Val::Map(m, o) => Ok(Val::Optional(
                        field_get(&m, f, o).map(|x| Box::new(x.clone())),
                    )),
                    Val::Optional(None) => Ok(Val::Optional(None)),
                    Val::Optional(Some(inner)) => match *inner {
                        Val::Map(m, o) => Ok(Val::Optional(
                            field_get(&m, f, o).map(|x| Box::new(x.clone())),
                        )),
                        _ => Err(no_overload()),
                    },
                    _ => Err(no_overload()),
                };
            }
            select(v, f)
        }
        _ => Err(no_overload()),
    }
}

#[inline(never)]
fn e_index_1(e: &Expr, env: &mut Env) -> R {
    match &e.kind {
        Kind::Index(op, i, opt) => {
            let v = eval(op, env)?;
            let i = eval(i, env)?;
            if *opt {
                let inner = match v {
                    Val::Optional(None) => return Ok(Val::Optional(None)),
                    Val::Optional(Some(x)) => *x,
                    x => x,
                };
                return match index(inner, i) {
                    Ok(x) => Ok(Val::Optional(Some(Box::new(x)))),
                    Err(e)
                        if e.starts_with("no such key") || e.starts_with("index out of bounds") =>
                    {
                        Ok(Val::Optional(None))
                    }
                    Err(e) => Err(e),
                };
            }
            index(v, i)
        }
        _ => Err(no_overload()),
    }
}

#[inline(never)]
fn e_list_2(e: &Expr, env: &mut Env) -> R {
    match &e.kind {
        Kind::List(items) => {
            let mut out = Vec::with_capacity(items.len());
            for it in items {
                out.push(chk(eval(it, env)?)?);
            }
            Ok(Val::List(Rc::new(out), Rc::new(ListKind::Atomic)))
        }
        _ => Err(no_overload()),
    }
}

#[inline(never)]
fn e_map_3(e: &Expr, env: &mut Env) -> R {
    match &e.kind {
        Kind::Map(entries) => {
            let mut out: Vec<(Val, Val)> = Vec::new();
            for (k, v) in entries {
                let k = chk(eval(k, env)?)?;
                let v = chk(eval(v, env)?)?;
                if !matches!(k, Val::Str(_) | Val::Int(_) | Val::Uint(_) | Val::Bool(_)) {
                    return Err(format!("unsupported key type: {}", type_name(&k)));
                }
                if map_get(&out, &k).is_some() {
                    return Err(format!("Failed with repeated key: {}", key_str(&k)));
                }
                out.push((k, v));
            }
            Ok(Val::Map(Rc::new(out), false))
        }
        _ => Err(no_overload()),
    }
}

#[inline(never)]
fn e_and_4(e: &Expr, env: &mut Env) -> R {
    match &e.kind {
        Kind::And(a, b) => {
            let l = truthy(eval(a, env));
            if l == Ok(false) {
                return Ok(Val::Bool(false));
            }
            let r = truthy(eval(b, env));
            if r == Ok(false) {
                return Ok(Val::Bool(false));
            }
            if let Err(x) = &r {
                if x == COST_EXCEEDED {
                    return Err(x.clone());
                }
            }
            l?;
            r?;
            Ok(Val::Bool(true))
        }
        _ => Err(no_overload()),
    }
}

#[inline(never)]
fn e_or_5(e: &Expr, env: &mut Env) -> R {
    match &e.kind {
        Kind::Or(a, b) => {
            let l = truthy(eval(a, env));
            if l == Ok(true) {
                return Ok(Val::Bool(true));
            }
            let r = truthy(eval(b, env));
            if r == Ok(true) {
                return Ok(Val::Bool(true));
            }
            if let Err(x) = &r {
                if x == COST_EXCEEDED {
                    return Err(x.clone());
                }
            }
            l?;
            r?;
            Ok(Val::Bool(false))
        }
        _ => Err(no_overload()),
    }
}

#[inline(never)]
fn e_cond_6(e: &Expr, env: &mut Env) -> R {
    match &e.kind {
        Kind::Cond(c, a, b) => {
            if truthy(eval(c, env))? {
                eval(a, env)
            } else {
                eval(b, env)
            }
        }
        _ => Err(no_overload()),
    }
}

#[inline(never)]
fn e_bin_7(e: &Expr, env: &mut Env) -> R {
    match &e.kind {
        Kind::Bin(op, a, b) => {
            let x = chk(eval(a, env)?)?;
            let y = chk(eval(b, env)?)?;
            match *op {
                "==" => Ok(Val::Bool(equals(&x, &y))),
                "!=" => Ok(Val::Bool(!equals(&x, &y))),
                "<" | "<=" | ">" | ">=" => {
                    let o = compare(&x, &y)?;
                    Ok(Val::Bool(match (op, o) {
                        (_, None) => false,
                        (&"<", Some(o)) => o == Ordering::Less,
                        (&"<=", Some(o)) => o != Ordering::Greater,
                        (&">", Some(o)) => o == Ordering::Greater,
                        (_, Some(o)) => o != Ordering::Less,
                    }))
                }
                "in" => match y {
                    Val::List(l, _) => {
                        env.charge(l.len() as i64)?;
                        Ok(Val::Bool(l.iter().any(|v| equals(v, &x))))
                    }
                    Val::Map(m, false) => Ok(Val::Bool(map_get(&m, &x).is_some())),
                    _ => Err(no_overload()),
                },
                _ => {
                    if let (Val::Str(p), Val::Str(q)) = (&x, &y) {
                        env.charge(((p.len() + q.len()) / 10) as i64)?;
                    }
                    arith(op, x, y)
                }
            }
        }
        _ => Err(no_overload()),
    }
}

#[inline(never)]
fn e_bind_8(e: &Expr, env: &mut Env) -> R {
    match &e.kind {
        Kind::Bind(var, init, body) => {
            let v = eval(init, env)?;
            env.vars.push((var.clone(), v));
            let r = eval(body, env);
            env.vars.pop();
            r
        }
        _ => Err(no_overload()),
    }
}

#[inline(never)]
fn e_call_9(e: &Expr, env: &mut Env) -> R {
    match &e.kind {
        Kind::Call(target, name, args) => {
            let t = match target {
                Some(t) => Some(chk(eval(t, env)?)?),
                None => None,
            };
            let mut a = Vec::with_capacity(args.len());
            for x in args {
                a.push(eval(x, env)?);
            }
            if name != "optional.of" && name != "orValue" {
                for x in a.iter_mut() {
                    if let Val::Err(e) = x {
                        return Err(e.to_string());
                    }
                }
            }
            crate::crd::cel::funcs::call(t, name, a, env)
        }
        _ => Err(no_overload()),
    }
}

/// Dotted name of a select chain made only of identifiers (`google.protobuf.Duration`).
fn qualified(e: &Expr) -> Option<String> {
    match &e.kind {
        Kind::Ident(n) => Some(n.clone()),
        Kind::Select(op, f, false) => qualified(op).map(|q| format!("{q}.{f}")),
        _ => None,
    }
}

/// Type identifiers usable as values (`int`, `string`, ...).
pub fn type_ident(n: &str) -> Option<Val> {
    let t = match n {
        "int" | "uint" | "double" | "bool" | "string" | "bytes" | "list" | "map" | "null_type"
        | "type" => n,
        "google.protobuf.Duration" | "google.protobuf.Timestamp" => n,
        _ => return None,
    };
    Some(Val::Type(Rc::from(t)))
}

pub(crate) fn set_charge(env: &mut Env, c: i64) -> Result<(), String> {
    env.charge(c)
}

#[inline(never)]
fn comprehension(
    m: Macro,
    range: &Expr,
    var: &str,
    body: &Expr,
    extra: Option<&Expr>,
    env: &mut Env,
) -> R {
    let items: Vec<Val> = match chk(eval(range, env)?)? {
        Val::List(l, _) => l.iter().cloned().collect(),
        Val::Map(mm, false) => mm.iter().map(|(k, _)| k.clone()).collect(),
        Val::Map(mm, true) => mm.iter().map(|(k, _)| k.clone()).collect(),
        _ => return Err(no_overload()),
    };
    let mut err: Option<String> = None;
    let mut out = Vec::new();
    let mut count = 0usize;
    for it in items {
        env.vars.push((var.to_string(), it));
        let r = (|| -> Result<Option<bool>, String> {
            match m {
                Macro::All | Macro::Exists | Macro::ExistsOne => Ok(Some(truthy(eval(body, env))?)),
                Macro::Map => {
                    out.push(chk(eval(body, env)?)?);
                    Ok(None)
                }
                Macro::MapFilter => {
                    if truthy(eval(body, env))? {
                        if let Some(x) = extra {
                            out.push(chk(eval(x, env)?)?);
                        }
                    }
                    Ok(None)
                }
                Macro::Filter => {
                    if truthy(eval(body, env))? {
                        if let Some((_, v)) = env.vars.last() {
                            out.push(v.clone());
                        }
                    }
                    Ok(None)
                }
                Macro::SortBy => {
                    let k = chk(eval(body, env)?)?;
                    if let Some((_, v)) = env.vars.last() {
                        out.push(Val::List(
                            Rc::new(vec![k, v.clone()]),
                            Rc::new(ListKind::Atomic),
                        ));
                    }
                    Ok(None)
                }
            }
        })();
        env.vars.pop();
        match (m, r) {
            (_, Err(e)) if e == COST_EXCEEDED => return Err(e),
            (Macro::All, Ok(Some(false))) => return Ok(Val::Bool(false)),
            (Macro::Exists, Ok(Some(true))) => return Ok(Val::Bool(true)),
            (Macro::ExistsOne, Ok(Some(true))) => count += 1,
            (Macro::All | Macro::Exists, Err(e)) if err.is_none() => err = Some(e),
            (Macro::All | Macro::Exists, Err(_)) => {}
            (_, Err(e)) => return Err(e),
            _ => {}
        }
    }
    if let Some(e) = err {
        return Err(e);
    }
    match m {
        Macro::All => Ok(Val::Bool(true)),
        Macro::Exists => Ok(Val::Bool(false)),
        Macro::ExistsOne => Ok(Val::Bool(count == 1)),
        Macro::SortBy => {
            let mut err = None;
            out.sort_by(|a, b| match (a, b) {
                (Val::List(x, _), Val::List(y, _)) => match val_cmp(&x[0], &y[0]) {
                    Ok(o) => o,
                    Err(e) => {
                        err = Some(e);
                        Ordering::Equal
                    }
                },
                _ => Ordering::Equal,
            });
            if let Some(e) = err {
                return Err(e);
            }
            let vals = out
                .into_iter()
                .filter_map(|p| match p {
                    Val::List(x, _) => x.get(1).cloned(),
                    _ => None,
                })
                .collect();
            Ok(Val::List(Rc::new(vals), Rc::new(ListKind::Atomic)))
        }
        _ => Ok(Val::List(Rc::new(out), Rc::new(ListKind::Atomic))),
    }
}

#[inline(never)]
fn comprehension2(m: Macro2, range: &Expr, v1: &str, v2: &str, args: &[Expr], env: &mut Env) -> R {
    let pairs: Vec<(Val, Val)> = match chk(eval(range, env)?)? {
        Val::List(l, _) => l
            .iter()
            .enumerate()
            .map(|(i, v)| (Val::Int(i as i64), v.clone()))
            .collect(),
        Val::Map(mm, _) => mm.iter().cloned().collect(),
        _ => return Err(no_overload()),
    };
    let mut err: Option<String> = None;
    let mut count = 0usize;
    let mut list_out = Vec::new();
    let mut map_out: Vec<(Val, Val)> = Vec::new();
    for (k, v) in pairs {
        env.vars.push((v1.to_string(), k.clone()));
        env.vars.push((v2.to_string(), v));
        let r = (|| -> Result<Option<bool>, String> {
            match m {
                Macro2::All | Macro2::Exists | Macro2::ExistsOne => {
                    Ok(Some(truthy(eval(&args[0], env))?))
                }
                _ => {
                    let (filter, t) = if args.len() == 2 {
                        (Some(&args[0]), &args[1])
                    } else {
                        (None, &args[0])
                    };
                    if let Some(f) = filter {
                        if !truthy(eval(f, env))? {
                            return Ok(None);
                        }
                    }
                    let x = chk(eval(t, env)?)?;
                    match m {
                        Macro2::TransformList => list_out.push(x),
                        Macro2::TransformMap => map_out.push((k.clone(), x)),
                        _ => match x {
                            Val::Map(e, _) => {
                                for (ek, ev) in e.iter() {
                                    if map_get(&map_out, ek).is_some() {
                                        return Err(format!(
                                            "insert failed: key {} already exists",
                                            key_str(ek)
                                        ));
                                    }
                                    map_out.push((ek.clone(), ev.clone()));
                                }
                            }
                            _ => return Err(no_overload()),
                        },
                    }
                    Ok(None)
                }
            }
        })();
        env.vars.pop();
        env.vars.pop();
        match (m, r) {
            (_, Err(e)) if e == COST_EXCEEDED => return Err(e),
            (Macro2::All, Ok(Some(false))) => return Ok(Val::Bool(false)),
            (Macro2::Exists, Ok(Some(true))) => return Ok(Val::Bool(true)),
            (Macro2::ExistsOne, Ok(Some(true))) => count += 1,
            (Macro2::All | Macro2::Exists, Err(e)) if err.is_none() => err = Some(e),
            (Macro2::All | Macro2::Exists, Err(_)) => {}
            (_, Err(e)) => return Err(e),
            _ => {}
        }
    }
    if let Some(e) = err {
        return Err(e);
    }
    match m {
        Macro2::All => Ok(Val::Bool(true)),
        Macro2::Exists => Ok(Val::Bool(false)),
        Macro2::ExistsOne => Ok(Val::Bool(count == 1)),
        Macro2::TransformList => Ok(Val::List(Rc::new(list_out), Rc::new(ListKind::Atomic))),
        _ => Ok(Val::Map(Rc::new(map_out), false)),
    }
}

pub(crate) fn val_cmp(a: &Val, b: &Val) -> Result<Ordering, String> {
    compare(a, b).map(|o| o.unwrap_or(Ordering::Equal))
}

pub(crate) fn check_timestamp(ns: i128) -> R {
    check_ts(ns)
}

pub(crate) fn check_duration(ns: i128) -> R {
    check_dur(ns)
}

pub(crate) fn civil(days: i64) -> (i64, u32, u32) {
    civil_from_days(days)
}

pub(crate) fn add(a: Val, b: Val) -> R {
    arith("+", a, b)
}
