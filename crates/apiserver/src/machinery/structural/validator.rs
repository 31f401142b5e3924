//! Port of kube-openapi's `validate.SchemaValidator` as apiextensions uses it for
//! custom resources (schema converted with `ConvertJSONSchemaProps` and unsupported
//! formats stripped), and of `kubeOpenAPIResultToFieldErrors`.

use crate::machinery::structural::formats;
use apimachinery::field;
use apimachinery::field::Cause;
use apimachinery::gofmt::{self, num, quote, value_v, Num};
use regex::Regex;
use serde_json::{Map, Value};
use std::cell::RefCell;
use std::collections::HashMap;

/// kube-openapi error codes that `kubeOpenAPIResultToFieldErrors` distinguishes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    /// InvalidTypeCode.
    InvalidType,
    /// RequiredFailCode.
    Required,
    /// TooLongFailCode.
    TooLong,
    /// EnumFailCode.
    Enum,
    /// MaxItemsFailCode.
    MaxItems,
    /// TooManyPropertiesCode.
    TooManyProperties,
    /// Any other `errors.Validation` code.
    Other,
}

/// One kube-openapi error.
#[derive(Debug, Clone)]
pub struct OaErr {
    /// `err.Error()`.
    pub msg: String,
    /// Present for `*errors.Validation`; absent for plain/composite errors.
    pub val: Option<ValErr>,
}

/// The fields of an `*errors.Validation`.
#[derive(Debug, Clone)]
pub struct ValErr {
    /// The error code.
    pub code: Code,
    /// `Name` (the data path, e.g. `spec.replicas`).
    pub name: String,
    /// `Value` (None for Go nil).
    pub value: Option<Value>,
    /// `Valid` as int64 when it is one.
    pub valid: Option<i64>,
    /// `Values` (enum).
    pub values: Vec<Value>,
}

/// `validate.Result`.
#[derive(Debug, Default, Clone)]
pub struct Res {
    /// Errors, deduplicated by message.
    pub errors: Vec<OaErr>,
    /// `MatchCount`.
    pub mc: usize,
}

impl Res {
    fn add(&mut self, e: OaErr) {
        if !self.errors.iter().any(|x| x.msg == e.msg) {
            self.errors.push(e);
        }
    }
    fn merge(&mut self, o: Res) {
        for e in o.errors {
            self.add(e);
        }
        self.mc += o.mc;
    }
    fn valid(&self) -> bool {
        self.errors.is_empty()
    }
    fn one(e: OaErr) -> Res {
        Res {
            errors: vec![e],
            mc: 0,
        }
    }
}

fn verr(code: Code, name: &str, value: Option<Value>, msg: String) -> OaErr {
    OaErr {
        msg,
        val: Some(ValErr {
            code,
            name: name.to_string(),
            value,
            valid: None,
            values: vec![],
        }),
    }
}

fn plain(msg: String) -> OaErr {
    OaErr { msg, val: None }
}

fn invalid_type(name: &str, type_name: &str, value: &str) -> OaErr {
    verr(
        Code::InvalidType,
        name,
        Some(Value::String(value.to_string())),
        format!(
            "{name} in body must be of type {type_name}: {}",
            quote(value)
        ),
    )
}

/// Kind of a decoded value, as Go's reflect sees unstructured data.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Null,
    Bool,
    Str,
    Int,
    Float,
    Slice,
    Map,
}

fn kind(v: &Value) -> Kind {
    match v {
        Value::Null => Kind::Null,
        Value::Bool(_) => Kind::Bool,
        Value::String(_) => Kind::Str,
        Value::Number(n) => match num(n) {
            Num::Int(_) => Kind::Int,
            Num::Float(_) => Kind::Float,
        },
        Value::Array(_) => Kind::Slice,
        Value::Object(_) => Kind::Map,
    }
}

/// Read-only view of a JSONSchemaProps object, tolerant of malformed shapes.
#[derive(Clone, Copy)]
pub struct S<'a>(pub &'a Map<String, Value>);

impl<'a> S<'a> {
    /// Wraps a schema value; non-objects yield None.
    pub fn new(v: &'a Value) -> Option<S<'a>> {
        v.as_object().map(S)
    }
    /// A string field.
    pub fn str(&self, k: &str) -> &'a str {
        self.0.get(k).and_then(Value::as_str).unwrap_or("")
    }
    /// A boolean field (false when absent or malformed).
    pub fn flag(&self, k: &str) -> bool {
        self.0.get(k).and_then(Value::as_bool).unwrap_or(false)
    }
    /// A number field.
    pub fn f64(&self, k: &str) -> Option<f64> {
        self.0.get(k).and_then(Value::as_f64)
    }
    /// An integer field.
    pub fn i64(&self, k: &str) -> Option<i64> {
        let v = self.0.get(k)?;
        v.as_i64()
            .or_else(|| v.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64))
    }
    /// A sub-schema.
    pub fn sub(&self, k: &str) -> Option<S<'a>> {
        self.0.get(k).and_then(S::new)
    }
    /// `properties` entries in document order.
    pub fn props(&self) -> Vec<(&'a String, S<'a>)> {
        match self.0.get("properties").and_then(Value::as_object) {
            Some(m) => m
                .iter()
                .filter_map(|(k, v)| S::new(v).map(|s| (k, s)))
                .collect(),
            None => vec![],
        }
    }
    /// A property schema.
    pub fn prop(&self, k: &str) -> Option<S<'a>> {
        self.0
            .get("properties")
            .and_then(Value::as_object)
            .and_then(|m| m.get(k))
            .and_then(S::new)
    }
    /// Whether `properties` has `k`.
    pub fn has_prop(&self, k: &str) -> bool {
        self.0
            .get("properties")
            .and_then(Value::as_object)
            .is_some_and(|m| m.contains_key(k))
    }
    /// A list of sub-schemas (allOf/anyOf/oneOf).
    pub fn list(&self, k: &str) -> Vec<S<'a>> {
        match self.0.get(k).and_then(Value::as_array) {
            Some(a) => a.iter().filter_map(S::new).collect(),
            None => vec![],
        }
    }
    /// A list of strings.
    pub fn strs(&self, k: &str) -> Vec<&'a str> {
        match self.0.get(k).and_then(Value::as_array) {
            Some(a) => a.iter().filter_map(Value::as_str).collect(),
            None => vec![],
        }
    }
    /// `items` when it is a single schema.
    pub fn items(&self) -> Option<S<'a>> {
        self.sub("items")
    }
    /// `additionalProperties`: None when absent, Some((allows, schema)).
    pub fn additional(&self) -> Option<(bool, Option<S<'a>>)> {
        match self.0.get("additionalProperties")? {
            Value::Bool(b) => Some((*b, None)),
            Value::Object(m) => Some((true, Some(S(m)))),
            _ => None,
        }
    }
    /// The `default` value (JSON null counts as unset).
    pub fn default(&self) -> Option<&'a Value> {
        self.0.get("default").filter(|v| !v.is_null())
    }
    /// OpenAPI type list after conversion (int-or-string becomes `integer,string`).
    pub fn types(&self) -> Vec<&'a str> {
        if self.flag("x-kubernetes-int-or-string") {
            return vec!["integer", "string"];
        }
        match self.str("type") {
            "" => vec![],
            t => vec![t],
        }
    }
}

thread_local! {
    static REGEX_CACHE: RefCell<HashMap<String, Result<Regex, String>>> = RefCell::new(HashMap::new());
}

/// Rewrites Perl classes to Go's ASCII-only semantics.
fn translate_pattern(p: &str) -> String {
    let mut out = String::with_capacity(p.len() + 8);
    let mut in_class = false;
    let mut chars = p.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            let Some(n) = chars.next() else {
                out.push(c);
                break;
            };
            let rep = match (in_class, n) {
                (false, 'd') => "[0-9]",
                (false, 'D') => "[^0-9]",
                (false, 'w') => "[0-9A-Za-z_]",
                (false, 'W') => "[^0-9A-Za-z_]",
                (false, 's') => "[\\t\\n\\f\\r ]",
                (false, 'S') => "[^\\t\\n\\f\\r ]",
                (false, 'b') => "(?-u:\\b)",
                (false, 'B') => "(?-u:\\B)",
                (true, 'd') => "0-9",
                (true, 'w') => "0-9A-Za-z_",
                (true, 's') => "\\t\\n\\f\\r ",
                (true, 'D') => "[:^digit:]",
                (true, 'W') => "[:^word:]",
                _ => "",
            };
            if rep.is_empty() {
                out.push('\\');
                out.push(n);
            } else {
                out.push_str(rep);
            }
            continue;
        }
        if c == '[' && !in_class {
            in_class = true;
            out.push(c);
            if chars.peek() == Some(&'^') {
                out.push('^');
                chars.next();
            }
            if chars.peek() == Some(&']') {
                out.push_str("\\]");
                chars.next();
            }
            continue;
        }
        if c == '[' && in_class && chars.peek() == Some(&':') {
            // POSIX class inside a class: copy through the closing ":]"
            out.push(c);
            for d in chars.by_ref() {
                out.push(d);
                if d == ']' {
                    break;
                }
            }
            continue;
        }
        if c == ']' && in_class {
            in_class = false;
        }
        out.push(c);
    }
    out
}

/// Compiles a Go RE2 pattern (cached); Err carries a Go-like message.
pub fn compile(pattern: &str) -> Result<Regex, String> {
    REGEX_CACHE.with(|c| {
        let mut c = c.borrow_mut();
        if let Some(r) = c.get(pattern) {
            return r.clone();
        }
        if c.len() > 4096 {
            c.clear();
        }
        let r = regex::RegexBuilder::new(&translate_pattern(pattern))
            .size_limit(1 << 22)
            .build()
            .map_err(|e| {
                let text = e.to_string();
                let last = text
                    .lines()
                    .rev()
                    .find(|l| l.starts_with("error:"))
                    .unwrap_or("error: invalid pattern");
                format!(
                    "error parsing regexp: {}: `{}`",
                    last.trim_start_matches("error: "),
                    pattern
                )
            });
        c.insert(pattern.to_string(), r.clone());
        r
    })
}

/// swag.IsFloat64AJSONInteger.
pub fn is_json_integer(f: f64) -> bool {
    const MAX: f64 = 9007199254740991.0;
    if f.is_nan() || f.is_infinite() || !(-MAX..=MAX).contains(&f) {
        return false;
    }
    let fa = f.abs();
    let g = f.trunc();
    let ga = g.abs();
    let diff = (f - g).abs();
    if f == g {
        true
    } else if fa <= 1.0 || ga <= 1.0 {
        diff < 1e-9
    } else {
        diff / (fa + ga).min(f64::MAX) < 1e-9
    }
}

fn as_f64(v: &Value) -> f64 {
    v.as_f64().unwrap_or(0.0)
}

/// `IsValueValidAgainstRange`.
fn range_err(n: Num, type_name: &str, format: &str, prefix: &str, path: &str) -> Option<OaErr> {
    let rep = match n {
        Num::Int(i) => i.to_string(),
        Num::Float(f) => format!("{f}"),
    };
    let bad = match type_name {
        "integer" => match format {
            "int32" => rep.parse::<i32>().is_err(),
            _ => rep.parse::<i64>().is_err(),
        },
        _ => match format {
            "float" => rep
                .parse::<f64>()
                .map_or(true, |v| v.is_finite() && (v as f32).is_infinite()),
            _ => false,
        },
    };
    if !bad {
        return None;
    }
    Some(plain(if format.is_empty() {
        format!("{prefix} value must be of type {type_name} (default format) in {path}")
    } else {
        format!("{prefix} value must be of type {type_name} with format {format} in {path}")
    }))
}

fn enum_match(data: &Value, e: &Value) -> bool {
    match (data, e) {
        (Value::Number(a), Value::Number(b)) => match (num(a), num(b)) {
            (Num::Int(x), Num::Int(y)) => x == y,
            (Num::Int(x), Num::Float(y)) => (x as f64) == y,
            (Num::Float(x), Num::Float(y)) => x == y,
            (Num::Float(x), Num::Int(y)) => (x as i64) == y,
        },
        (Value::Number(a), Value::String(s)) => match num(a) {
            // Go converts an integer to the string of that rune.
            Num::Int(x) => {
                let c = u32::try_from(x)
                    .ok()
                    .and_then(char::from_u32)
                    .unwrap_or('\u{FFFD}');
                s.chars().eq(std::iter::once(c))
            }
            Num::Float(_) => false,
        },
        (Value::Null, _) => false,
        (a, b) => std::mem::discriminant(a) == std::mem::discriminant(b) && a == b,
    }
}

/// Validates `data` against `schema` at kube-openapi path `path` ("" at the root).
pub fn validate(schema: S<'_>, data: &Value, path: &str) -> Res {
    validate_ratcheting(schema, data, None, path)
}

/// [`validate`] on an update, with `old` the correlated old value: errors of a value
/// equal to its old value are dropped (upstream's CRDValidationRatcheting). Values
/// correlate through object properties and the keys of `x-kubernetes-list-type: map`
/// lists; items of sets and atomic lists do not.
pub fn validate_ratcheting(schema: S<'_>, data: &Value, old: Option<&Value>, path: &str) -> Res {
    let mut result = validate_node(schema, data, old, path);
    if !result.valid() && old == Some(data) {
        result.errors.clear();
    }
    result
}

fn validate_node(schema: S<'_>, data: &Value, old: Option<&Value>, path: &str) -> Res {
    let mut result = Res::default();
    let types = schema.types();
    let format = formats::effective_format(&types, schema.str("format"));
    let nullable = schema.flag("nullable");
    if data.is_null() {
        let mut t = Res {
            errors: vec![],
            mc: 1,
        };
        if !types.is_empty() && !types.contains(&"null") && !nullable {
            t = Res::one(invalid_type(path, &types.join(","), "null"));
        }
        result.merge(t);
        result.merge(common(schema, data, path));
        return result;
    }
    let k = kind(data);
    // type validator
    if !types.is_empty() || !format.is_empty() {
        result.merge(type_check(&types, format, data, k, path));
        result.mc += 1;
    }
    // schema props validator
    result.merge(schema_props(schema, data, old, path));
    result.mc += 1;
    if k == Kind::Str {
        let s = data.as_str().unwrap_or("");
        if let Some(e) = string_check(schema, s, path) {
            result.merge(Res::one(e));
        }
        result.mc += 1;
        if formats::is_known(format) {
            if !formats::validates(format, s) {
                result.merge(Res::one(invalid_type(path, format, s)));
            }
            result.mc += 1;
        }
    }
    if k == Kind::Int || k == Kind::Float {
        result.merge(number_check(schema, &types, data, path));
        result.mc += 1;
    }
    if let Value::Array(a) = data {
        result.merge(slice_check(schema, a, old, path));
        result.mc += 1;
    }
    result.merge(common(schema, data, path));
    result.mc += 1;
    if let Value::Object(m) = data {
        result.merge(object_check(schema, m, old, path));
        result.mc += 1;
    }
    result.mc += 1;
    result
}

fn type_check(types: &[&str], format: &str, data: &Value, k: Kind, path: &str) -> Res {
    let (sch_type, fmt) = match k {
        Kind::Bool => ("boolean", ""),
        Kind::Str => ("string", ""),
        Kind::Int => ("integer", "int64"),
        Kind::Float => ("number", "float64"),
        Kind::Slice => ("array", ""),
        Kind::Map | Kind::Null => ("object", ""),
    };
    let has = |t: &str| types.contains(&t);
    let is_float_int = sch_type == "number" && is_json_integer(as_f64(data)) && has("integer");
    let is_int_float = sch_type == "integer" && has("number");
    if k != Kind::Str
        && k != Kind::Slice
        && !format.is_empty()
        && !(has(sch_type) || fmt == format || is_float_int || is_int_float)
    {
        return Res::one(invalid_type(path, format, fmt));
    }
    if !(has("number") || has("integer") || format.is_empty())
        && (k == Kind::Str || k == Kind::Slice)
    {
        return Res {
            errors: vec![],
            mc: 1,
        };
    }
    if !(has(sch_type) || is_float_int || is_int_float) {
        return Res::one(invalid_type(path, &types.join(","), sch_type));
    }
    Res {
        errors: vec![],
        mc: 1,
    }
}

fn schema_props(schema: S<'_>, data: &Value, old: Option<&Value>, path: &str) -> Res {
    let mut main = Res::default();
    let any_of = schema.list("anyOf");
    if !any_of.is_empty() {
        let mut best: Option<Res> = None;
        let mut first_success: Option<Res> = None;
        let mut succeeded = false;
        for b in any_of {
            let r = validate_ratcheting(b, data, old, path);
            if r.valid() {
                best = None;
                succeeded = true;
                first_success = Some(r);
                break;
            }
            if best.as_ref().is_none_or(|x| r.mc > x.mc) {
                best = Some(r);
            }
        }
        if !succeeded {
            main.add(plain(format!(
                "{} must validate at least one schema (anyOf)",
                quote(path)
            )));
        }
        if let Some(b) = best {
            main.merge(b);
        } else if let Some(f) = first_success {
            main.merge(f);
        }
    }
    let one_of = schema.list("oneOf");
    if !one_of.is_empty() {
        let mut best: Option<Res> = None;
        let mut first_success: Option<Res> = None;
        let mut validated = 0;
        for b in one_of {
            let r = validate_ratcheting(b, data, old, path);
            if r.valid() {
                validated += 1;
                best = None;
                if first_success.is_none() {
                    first_success = Some(r);
                }
                continue;
            }
            if validated == 0 && best.as_ref().is_none_or(|x| r.mc > x.mc) {
                best = Some(r);
            }
        }
        if validated != 1 {
            let extra = if validated == 0 {
                "Found none valid".to_string()
            } else {
                format!("Found {validated} valid alternatives")
            };
            main.add(plain(format!(
                "{} must validate one and only one schema (oneOf). {extra}",
                quote(path)
            )));
            if let Some(b) = best {
                main.merge(b);
            }
        } else if let Some(f) = first_success {
            main.merge(f);
        }
    }
    let all_of = schema.list("allOf");
    if !all_of.is_empty() {
        let mut validated = 0;
        let n = all_of.len();
        for b in all_of {
            let r = validate_ratcheting(b, data, old, path);
            if r.valid() {
                validated += 1;
            }
            main.merge(r);
        }
        if validated != n {
            let extra = if validated == 0 {
                ". None validated"
            } else {
                ""
            };
            main.add(plain(format!(
                "{} must validate all the schemas (allOf){extra}",
                quote(path)
            )));
        }
    }
    if let Some(not) = schema.sub("not") {
        if validate_ratcheting(not, data, old, path).valid() {
            main.add(plain(format!(
                "{} must not validate the schema (not)",
                quote(path)
            )));
        }
    }
    main.mc += 1;
    main
}

fn string_check(schema: S<'_>, s: &str, path: &str) -> Option<OaErr> {
    let len = s.chars().count() as i64;
    let val = Some(Value::String(s.to_string()));
    if let Some(max) = schema.i64("maxLength") {
        if len > max {
            let mut e = verr(
                Code::TooLong,
                path,
                val,
                format!("{path} in body should be at most {max} chars long"),
            );
            if let Some(v) = e.val.as_mut() {
                v.valid = Some(max);
            }
            return Some(e);
        }
    }
    if let Some(min) = schema.i64("minLength") {
        if len < min {
            return Some(verr(
                Code::Other,
                path,
                val,
                format!("{path} in body should be at least {min} chars long"),
            ));
        }
    }
    let pattern = schema.str("pattern");
    if !pattern.is_empty() {
        match compile(pattern) {
            Err(e) => {
                return Some(verr(
                    Code::Other,
                    path,
                    val,
                    format!("{path} in body should match '{pattern}, but pattern is invalid: {e}'"),
                ));
            }
            Ok(r) if !r.is_match(s) => {
                return Some(verr(
                    Code::Other,
                    path,
                    val,
                    format!("{path} in body should match '{pattern}'"),
                ));
            }
            Ok(_) => {}
        }
    }
    None
}

fn number_check(schema: S<'_>, types: &[&str], data: &Value, path: &str) -> Res {
    let mut res = Res::default();
    let Value::Number(n) = data else { return res };
    let val = num(n);
    let fdata = as_f64(data);
    let (type_name, format) = if types.len() == 1 {
        let f = schema.str("format");
        match types[0] {
            "integer" => ("integer", if f == "int32" || f == "int64" { f } else { "" }),
            "number" => ("number", if f == "float" || f == "double" { f } else { "" }),
            _ => ("", ""),
        }
    } else {
        ("", "")
    };
    let as_num = Num::Float;
    if let Some(e) = range_err(val, type_name, format, "Checked", path) {
        res.add(e);
    }
    let value = Some(data.clone());
    let fvalue = Some(Value::from(fdata));
    let mut r_mult = Res::default();
    let mut r_min = Res::default();
    let mut r_max = Res::default();
    if let Some(factor) = schema.f64("multipleOf") {
        let range_bad = range_err(as_num(factor), type_name, format, "MultipleOf", path);
        let native = range_bad.is_none();
        if let Some(e) = range_bad {
            r_mult.add(e);
        }
        let err = match (native, val) {
            (true, Num::Int(i)) => {
                let fi = factor as i64;
                if fi <= 0 {
                    Some(verr(
                        Code::Other,
                        path,
                        Some(Value::from(fi)),
                        format!("factor MultipleOf declared for {path} must be positive: {fi}"),
                    ))
                } else if i.wrapping_div(fi).wrapping_mul(fi) != i {
                    Some(verr(
                        Code::Other,
                        path,
                        value.clone(),
                        format!("{path} in body should be a multiple of {fi}"),
                    ))
                } else {
                    None
                }
            }
            _ => multiple_of_float(
                path,
                fdata,
                factor,
                if native {
                    value.clone()
                } else {
                    fvalue.clone()
                },
            ),
        };
        if let Some(e) = err {
            r_mult.add(e);
        }
    }
    if let Some(max) = schema.f64("maximum") {
        let excl = schema.flag("exclusiveMaximum");
        let range_bad = range_err(as_num(max), type_name, format, "Maximum boundary", path);
        let native = range_bad.is_none();
        if let Some(e) = range_bad {
            r_max.add(e);
        }
        let word = if excl {
            "less than"
        } else {
            "less than or equal to"
        };
        let err = match (native, val) {
            (true, Num::Int(i)) => {
                let m = max as i64;
                ((!excl && i > m) || (excl && i >= m)).then(|| {
                    verr(
                        Code::Other,
                        path,
                        value.clone(),
                        format!("{path} in body should be {word} {m}"),
                    )
                })
            }
            _ => ((!excl && fdata > max) || (excl && fdata >= max)).then(|| {
                verr(
                    Code::Other,
                    path,
                    if native {
                        value.clone()
                    } else {
                        fvalue.clone()
                    },
                    format!("{path} in body should be {word} {}", gofmt::float_v(max)),
                )
            }),
        };
        if let Some(e) = err {
            r_max.add(e);
        }
    }
    if let Some(min) = schema.f64("minimum") {
        let excl = schema.flag("exclusiveMinimum");
        let range_bad = range_err(as_num(min), type_name, format, "Minimum boundary", path);
        let native = range_bad.is_none();
        if let Some(e) = range_bad {
            r_min.add(e);
        }
        let word = if excl {
            "greater than"
        } else {
            "greater than or equal to"
        };
        let err = match (native, val) {
            (true, Num::Int(i)) => {
                let m = min as i64;
                ((!excl && i < m) || (excl && i <= m)).then(|| {
                    verr(
                        Code::Other,
                        path,
                        value.clone(),
                        format!("{path} in body should be {word} {m}"),
                    )
                })
            }
            _ => ((!excl && fdata < min) || (excl && fdata <= min)).then(|| {
                verr(
                    Code::Other,
                    path,
                    if native {
                        value.clone()
                    } else {
                        fvalue.clone()
                    },
                    format!("{path} in body should be {word} {}", gofmt::float_v(min)),
                )
            }),
        };
        if let Some(e) = err {
            r_min.add(e);
        }
    }
    res.merge(r_mult);
    res.merge(r_min);
    res.merge(r_max);
    res.mc += 1;
    res
}

fn multiple_of_float(path: &str, data: f64, factor: f64, value: Option<Value>) -> Option<OaErr> {
    if factor <= 0.0 {
        return Some(verr(
            Code::Other,
            path,
            Some(Value::from(factor)),
            format!(
                "factor MultipleOf declared for {path} must be positive: {}",
                gofmt::float_v(factor)
            ),
        ));
    }
    let mult = if factor < 1.0 {
        1.0 / factor * data
    } else {
        data / factor
    };
    if !is_json_integer(mult) {
        return Some(verr(
            Code::Other,
            path,
            value,
            format!(
                "{path} in body should be a multiple of {}",
                gofmt::float_v(factor)
            ),
        ));
    }
    None
}

fn slice_check(schema: S<'_>, a: &[Value], old: Option<&Value>, path: &str) -> Res {
    let mut res = Res::default();
    if let Some(items) = schema.items() {
        // only the items of list-type map lists correlate with old items (by their keys)
        let keys = (schema.str("x-kubernetes-list-type") == "map")
            .then(|| schema.strs("x-kubernetes-list-map-keys"));
        let olds = old.and_then(Value::as_array);
        for (i, v) in a.iter().enumerate() {
            let o = match (&keys, olds) {
                (Some(keys), Some(olds)) => olds
                    .iter()
                    .find(|o| keys.iter().all(|k| o.get(k) == v.get(k))),
                _ => None,
            };
            res.merge(validate_ratcheting(items, v, o, &format!("{path}[{i}]")));
        }
    }
    let size = a.len() as i64;
    if let Some(min) = schema.i64("minItems") {
        if size < min {
            res.add(verr(
                Code::Other,
                path,
                Some(Value::from(size)),
                format!("{path} in body should have at least {min} items"),
            ));
        }
    }
    if let Some(max) = schema.i64("maxItems") {
        if size > max {
            let mut e = verr(
                Code::MaxItems,
                path,
                Some(Value::from(size)),
                format!("{path} in body should have at most {max} items"),
            );
            if let Some(v) = e.val.as_mut() {
                v.valid = Some(max);
            }
            res.add(e);
        }
    }
    if schema.flag("uniqueItems") {
        let dup = a
            .iter()
            .enumerate()
            .any(|(i, x)| a[..i].iter().any(|y| x == y));
        if dup {
            res.add(verr(
                Code::Other,
                path,
                None,
                format!("{path} in body shouldn't contain duplicates"),
            ));
        }
    }
    res.mc += 1;
    res
}

fn common(schema: S<'_>, data: &Value, path: &str) -> Res {
    let Some(Value::Array(values)) = schema.0.get("enum") else {
        return Res::default();
    };
    if values.is_empty() || values.iter().any(|e| enum_match(data, e)) {
        return Res::default();
    }
    let list: Vec<String> = values.iter().map(value_v).collect();
    let mut e = verr(
        Code::Enum,
        path,
        Some(data.clone()),
        format!("{path} in body should be one of [{}]", list.join(" ")),
    );
    if let Some(v) = e.val.as_mut() {
        v.values = values.clone();
        if data.is_null() {
            v.value = None;
        }
    }
    Res::one(e)
}

fn object_check(schema: S<'_>, m: &Map<String, Value>, old: Option<&Value>, path: &str) -> Res {
    let old_of = |k: &str| old.and_then(|o| o.get(k));
    let mut res = Res::default();
    let n = m.len() as i64;
    if let Some(min) = schema.i64("minProperties") {
        if n < min {
            res.add(verr(
                Code::Other,
                path,
                Some(Value::from(n)),
                format!("{path} in body should have at least {min} properties"),
            ));
        }
    }
    if let Some(max) = schema.i64("maxProperties") {
        if n > max {
            let mut e = verr(
                Code::TooManyProperties,
                path,
                Some(Value::from(n)),
                format!("{path} in body should have at most {max} properties"),
            );
            if let Some(v) = e.val.as_mut() {
                v.valid = Some(max);
            }
            res.add(e);
        }
    }
    let additional = schema.additional();
    match additional {
        Some((false, _)) => {
            for k in m.keys() {
                if !schema.has_prop(k) {
                    res.add(verr(
                        Code::Other,
                        path,
                        Some(Value::String(k.clone())),
                        format!("{path}.{k} in body is a forbidden property"),
                    ));
                }
            }
        }
        _ => {
            if let Some((_, Some(ap))) = additional {
                for (k, v) in m {
                    if !schema.has_prop(k) {
                        res.merge(validate_ratcheting(
                            ap,
                            v,
                            old_of(k),
                            &format!("{path}.{k}"),
                        ));
                    }
                }
            }
        }
    }
    for (name, ps) in schema.props() {
        if let Some(v) = m.get(name.as_str()) {
            let r = if path.is_empty() {
                name.clone()
            } else {
                format!("{path}.{name}")
            };
            res.merge(validate_ratcheting(ps, v, old_of(name), &r));
        }
    }
    for k in schema.strs("required") {
        if !m.contains_key(k) {
            let name = format!("{path}.{k}");
            let msg = format!("{name} in body is required");
            res.add(verr(Code::Required, &name, None, msg));
        }
    }
    res
}

/// `kubeOpenAPIResultToFieldErrors`: `base` is the `fldPath` (None for nil).
pub fn to_causes(res: &Res, base: Option<&str>) -> Vec<Cause> {
    let nil = || base.map_or("<nil>".to_string(), str::to_string);
    res.errors
        .iter()
        .map(|e| match &e.val {
            None => field::invalid(&nil(), "", &e.msg),
            Some(v) => {
                let field = if !v.name.is_empty() && v.name != "." {
                    field::child(
                        base.unwrap_or(""),
                        v.name.strip_prefix('.').unwrap_or(&v.name),
                    )
                } else {
                    nil()
                };
                let value_or_empty = || v.value.clone().unwrap_or(Value::String(String::new()));
                match v.code {
                    Code::Required => field::required(&field, ""),
                    Code::Enum => {
                        let vals: Vec<String> = v
                            .values
                            .iter()
                            .map(|x| match x {
                                Value::String(s) => s.clone(),
                                other => gofmt::json(other),
                            })
                            .collect();
                        field::not_supported(&field, v.value.clone().unwrap_or(Value::Null), &vals)
                    }
                    Code::TooLong => field::too_long(&field, v.valid.unwrap_or(-1)),
                    Code::MaxItems | Code::TooManyProperties => {
                        let actual = v.value.as_ref().and_then(Value::as_i64).unwrap_or(-1);
                        field::too_many(&field, actual, v.valid.unwrap_or(-1))
                    }
                    Code::InvalidType => field::type_invalid(&field, value_or_empty(), &e.msg),
                    Code::Other => field::invalid(&field, value_or_empty(), &e.msg),
                }
            }
        })
        .collect()
}
