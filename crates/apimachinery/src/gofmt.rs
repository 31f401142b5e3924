//! Go's renderings of values, as Kubernetes prints them in messages: `strconv.Quote`
//! (`%q`), `%v` of numbers and unstructured values, `%T`, and `encoding/json`.
//!
//! Upstream builds its error messages with these verbs (`field.Error.ErrorBody`, the
//! selector parsers, `time.ParseDuration`), so a client comparing texts sees the same
//! bytes from coxswain as from kube-apiserver.

use std::fmt::Write as _;

use serde_json::{Map, Number, Value};

/// Go's `strconv.Quote` (and so `%q`): printable characters kept, `"` and `\` escaped,
/// C escapes where Go uses them, every other character as `\xNN`, `\uNNNN` or
/// `\UNNNNNNNN`.
///
/// Go's notion of "printable" relies on the full Unicode tables; here it is approximated
/// (control, format, separator, private-use and non-character code points are not
/// printable; unassigned code points are).
///
/// ```
/// use coxswain_apimachinery::gofmt::quote;
/// assert_eq!(quote("a\"b\n"), r#""a\"b\n""#);
/// assert_eq!(quote("\u{200b}"), r#""\u200b""#);
/// ```
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if is_print(c) => out.push(c),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if (c as u32) < 0x10000 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => {
                let _ = write!(out, "\\U{:08x}", c as u32);
            }
        }
    }
    out.push('"');
    out
}

/// An approximation of Go's `unicode.IsPrint`.
fn is_print(c: char) -> bool {
    if c == ' ' {
        return true;
    }
    if c.is_control() || c.is_whitespace() {
        return false;
    }
    let u = c as u32;
    let format_or_private = matches!(
        u,
        0xAD | 0x600..=0x605
            | 0x61C
            | 0x6DD
            | 0x70F
            | 0x890..=0x891
            | 0x8E2
            | 0x180E
            | 0x200B..=0x200F
            | 0x202A..=0x202E
            | 0x2060..=0x2064
            | 0x2066..=0x206F
            | 0xE000..=0xF8FF
            | 0xFDD0..=0xFDEF
            | 0xFEFF
            | 0xFFF9..=0xFFFB
            | 0x110BD
            | 0x110CD
            | 0x13430..=0x1343F
            | 0x1BCA0..=0x1BCA3
            | 0x1D173..=0x1D17A
            | 0xE0001
            | 0xE0020..=0xE007F
            | 0xF0000..=0x10FFFF
    );
    !format_or_private && (u & 0xFFFE) != 0xFFFE
}

/// A JSON number as Go's unstructured decoding sees it: `int64` or `float64`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Num {
    /// A number without fraction or exponent that fits an int64.
    Int(i64),
    /// Any other number.
    Float(f64),
}

/// Classifies a JSON number the way Kubernetes' JSON decoder does.
pub fn num(n: &Number) -> Num {
    match n.as_i64() {
        Some(i) => Num::Int(i),
        None => Num::Float(n.as_f64().unwrap_or(0.0)),
    }
}

/// Go's `%v` of a float64: the shortest representation, in exponent form below 1e-4
/// and from 1e21 (`1e+21`, `1e-05`).
pub fn float_v(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf" } else { "-Inf" }.into();
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0" } else { "0" }.into();
    }
    // Rust's `{:e}` prints the shortest round-tripping digits, as Go's shortest format.
    let s = format!("{:e}", f.abs());
    let (mant, exp) = s.split_once('e').unwrap_or((s.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let sign = if f < 0.0 { "-" } else { "" };
    if !(-4..21).contains(&exp) {
        let es = if exp < 0 { '-' } else { '+' };
        format!("{sign}{mant}e{es}{:02}", exp.abs())
    } else {
        format!("{f}")
    }
}

/// Go's `%v` of a JSON number.
pub fn num_v(n: &Number) -> String {
    match num(n) {
        Num::Int(i) => i.to_string(),
        Num::Float(f) => float_v(f),
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

/// The JSON type of a value as Go's decoding errors name it (`cannot unmarshal number
/// into ...`).
pub fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn sorted(m: &Map<String, Value>) -> Vec<(&String, &Value)> {
    let mut v: Vec<_> = m.iter().collect();
    v.sort_by(|a, b| a.0.cmp(b.0));
    v
}

/// How [`write_json`] orders object keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyOrder {
    /// As the value holds them: a Go struct's fields in declaration order.
    AsGiven,
    /// Sorted: a Go `map`.
    Sorted,
}

/// Appends `v` as compact JSON the way Go's `encoding/json` marshals it: HTML
/// characters and line separators escaped in strings, floats in Go's format.
pub fn write_json(out: &mut String, v: &Value, order: KeyOrder) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => write_json_number(out, n),
        Value::String(s) => write_json_string(out, s, true),
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json(out, x, order);
            }
            out.push(']');
        }
        Value::Object(m) => {
            out.push('{');
            let entries: Vec<(&String, &Value)> = match order {
                KeyOrder::AsGiven => m.iter().collect(),
                KeyOrder::Sorted => sorted(m),
            };
            for (i, (k, x)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json_string(out, k, true);
                out.push(':');
                write_json(out, x, order);
            }
            out.push('}');
        }
    }
}

/// Go's `json.Marshal` of an unstructured value (map keys sorted).
pub fn json(v: &Value) -> String {
    let mut out = String::new();
    write_json(&mut out, v, KeyOrder::Sorted);
    out
}

/// Go's `json.Marshal` of a value whose objects are structs (keys in the given order).
pub fn json_ordered(v: &Value) -> String {
    let mut out = String::new();
    write_json(&mut out, v, KeyOrder::AsGiven);
    out
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Appends a JSON string as `encoding/json` writes it; `html` escapes `<`, `>` and `&`
/// (Go's default `SetEscapeHTML(true)`).
pub fn write_json_string(out: &mut String, s: &str, html: bool) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '<' | '>' | '&' if html => push_u(out, c as u32),
            '\u{2028}' | '\u{2029}' => push_u(out, c as u32),
            c if (c as u32) < 0x20 => push_u(out, c as u32),
            c => out.push(c),
        }
    }
    out.push('"');
}

fn push_u(out: &mut String, c: u32) {
    out.push_str("\\u");
    for shift in [12, 8, 4, 0] {
        out.push(HEX[((c >> shift) & 0xf) as usize] as char);
    }
}

/// A float as Go's `encoding/json` writes it (exponent form below 1e-6 and from 1e21).
pub fn json_float(f: f64) -> String {
    if !f.is_finite() {
        return "null".into();
    }
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let s = format!("{f:e}");
        match s.split_once('e') {
            Some((m, e)) if !e.starts_with('-') => format!("{m}e+{e}"),
            _ => s,
        }
    } else {
        format!("{f}")
    }
}

fn write_json_number(out: &mut String, n: &Number) {
    if let Some(i) = n.as_i64() {
        let _ = write!(out, "{i}");
    } else if let Some(u) = n.as_u64() {
        let _ = write!(out, "{u}");
    } else {
        out.push_str(&json_float(n.as_f64().unwrap_or(0.0)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    // Cases after Go's strconv TestQuote.
    #[test]
    fn quote_matches_strconv_quote() {
        assert_eq!(quote("abc"), "\"abc\"");
        assert_eq!(quote("\x07\x08\x0c\r\n\t\x0b"), r#""\a\b\f\r\n\t\v""#);
        assert_eq!(quote("\\"), r#""\\""#);
        assert_eq!(quote("\x7f"), r#""\x7f""#);
        assert_eq!(quote("☺"), "\"☺\"");
        assert_eq!(quote("\u{feff}"), r#""\ufeff""#);
        assert_eq!(quote("\u{f0000}"), r#""\U000f0000""#);
        assert_eq!(quote(""), "\"\"");
    }

    #[test]
    fn floats_print_as_go() {
        assert_eq!(float_v(1.5), "1.5");
        assert_eq!(float_v(1e21), "1e+21");
        assert_eq!(float_v(1e20), "100000000000000000000");
        assert_eq!(float_v(0.00001), "1e-05");
        assert_eq!(float_v(-0.0), "-0");
        assert_eq!(json_float(1e-7), "1e-7");
        assert_eq!(json_float(1e21), "1e+21");
        assert_eq!(json_float(0.5), "0.5");
    }

    #[test]
    fn json_escapes_html_and_orders_keys() {
        let v = json!({"b": "<a&b>", "a": [1, 2.5, null, true]});
        assert_eq!(
            json(&v),
            r#"{"a":[1,2.5,null,true],"b":"\u003ca\u0026b\u003e"}"#
        );
        assert_eq!(
            json_ordered(&v),
            r#"{"b":"\u003ca\u0026b\u003e","a":[1,2.5,null,true]}"#
        );
        assert_eq!(
            value_v(&json!({"b": [1, "x"], "a": null})),
            "map[a:<nil> b:[1 x]]"
        );
        assert_eq!(type_name(&json!(1.5)), "float64");
        assert_eq!(json_kind(&json!([])), "array");
    }
}
