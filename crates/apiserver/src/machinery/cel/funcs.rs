//! Standard, string-extension, Kubernetes list/regex and optional functions.

use crate::machinery::cel::ops::{self as eval, Env, ListKind, Val};
use std::rc::Rc;

type R = Result<Val, String>;

fn no() -> String {
    "no such overload".to_string()
}

fn st(x: impl Into<String>) -> Val {
    Val::Str(Rc::from(x.into()))
}

fn list(v: Vec<Val>) -> Val {
    Val::List(Rc::new(v), Rc::new(ListKind::Atomic))
}

/// Names of global functions known to the checker.
pub const GLOBALS: &[&str] = &[
    "jsonpatch.escapeKey",
    "quantity",
    "isQuantity",
    "url",
    "isURL",
    "size",
    "int",
    "uint",
    "double",
    "string",
    "bool",
    "bytes",
    "duration",
    "timestamp",
    "type",
    "dyn",
    "matches",
    "optional.of",
    "optional.none",
    "optional.ofNonZeroValue",
    "math.greatest",
    "math.least",
    "sets.contains",
    "sets.equivalent",
    "sets.intersects",
    "lists.range",
    "isIP",
    "isCIDR",
    "ip.isCanonical",
];

/// Names of receiver-style functions known to the checker.
pub const MEMBERS: &[&str] = &[
    "getScheme",
    "getHost",
    "getHostname",
    "getPort",
    "getEscapedPath",
    "getQuery",
    "isInteger",
    "asInteger",
    "asApproximateFloat",
    "sign",
    "add",
    "sub",
    "isGreaterThan",
    "isLessThan",
    "compareTo",
    "path",
    "group",
    "serviceAccount",
    "resource",
    "subresource",
    "namespace",
    "name",
    "check",
    "allowed",
    "reason",
    "errored",
    "error",
    "size",
    "contains",
    "startsWith",
    "endsWith",
    "matches",
    "charAt",
    "indexOf",
    "lastIndexOf",
    "lowerAscii",
    "upperAscii",
    "replace",
    "split",
    "substring",
    "trim",
    "join",
    "find",
    "findAll",
    "isSorted",
    "sum",
    "min",
    "max",
    "hasValue",
    "value",
    "orValue",
    "or",
    "getHours",
    "getMinutes",
    "getSeconds",
    "getMilliseconds",
    "getFullYear",
    "getMonth",
    "getDate",
    "getDayOfMonth",
    "getDayOfWeek",
    "getDayOfYear",
    "format",
    "reverse",
    "slice",
    "flatten",
    "distinct",
    "sort",
];

/// An IP address as the Kubernetes CEL IP library parses it (Go's `netip.ParseAddr`):
/// no zone, no IPv4-mapped IPv6 address, no leading zeros in IPv4 octets.
pub fn parse_ip(s: &str) -> Result<std::net::IpAddr, String> {
    if s.contains('%') {
        return Err(format!("IP address {s:?} with zone value is not allowed"));
    }
    let addr: std::net::IpAddr = s.parse().map_err(|_| {
        format!("IP Address {s:?} parse error during conversion from string: ParseAddr({s:?}): unable to parse IP")
    })?;
    if let std::net::IpAddr::V6(v6) = addr {
        if v6.to_ipv4_mapped().is_some() {
            return Err(format!("IPv4-mapped IPv6 address {s:?} is not allowed"));
        }
    }
    Ok(addr)
}

/// A CIDR as the Kubernetes CEL CIDR library parses it (Go's `netip.ParsePrefix`): an
/// address as [`parse_ip`] and a decimal prefix length without leading zeros.
pub fn parse_cidr(s: &str) -> Result<(std::net::IpAddr, u8), String> {
    let bad = || format!("network address {s:?} parse error during conversion from string");
    let (addr, bits) = s.split_once('/').ok_or_else(bad)?;
    let addr = parse_ip(addr).map_err(|_| bad())?;
    let max = if addr.is_ipv4() { 32 } else { 128 };
    let digits_ok = !bits.is_empty()
        && bits.bytes().all(|b| b.is_ascii_digit())
        && (bits == "0" || !bits.starts_with('0'));
    match bits.parse::<u8>() {
        Ok(n) if digits_ok && n <= max => Ok((addr, n)),
        _ => Err(bad()),
    }
}

/// `ip.isCanonical`: whether the address is written as Go prints it (RFC 5952 for
/// IPv6); an unparsable address is an error, as upstream.
fn is_canonical_ip(s: &str) -> Result<bool, String> {
    let addr = parse_ip(s)?;
    Ok(addr.to_string() == s)
}

/// Compiles a regular expression with RE2-compatible syntax.
pub fn regex(p: &str) -> Result<regex::Regex, String> {
    if let Some(op) = nested_repetition(p) {
        return Err(format!(
            "error parsing regexp: invalid nested repetition operator: `{op}`"
        ));
    }
    regex::RegexBuilder::new(p)
        .size_limit(1 << 20)
        .build()
        .map_err(|e| format!("error parsing regexp: {e}"))
}

/// RE2 rejects repetition of a repetition (`x++`, `a**`, `a{2}*`), which the
/// `regex` crate accepts; returns the offending operator pair.
fn nested_repetition(p: &str) -> Option<String> {
    let c: Vec<char> = p.chars().collect();
    let mut i = 0;
    let mut in_class = false;
    // start of the previous repetition operator and whether a lazy `?` may still follow
    let mut rep: Option<(usize, bool)> = None;
    while i < c.len() {
        let ch = c[i];
        if ch == '\\' {
            i += 2;
            rep = None;
            continue;
        }
        if in_class {
            in_class = ch != ']';
            i += 1;
            continue;
        }
        let counted =
            ch == '{' && c.get(i + 1).is_some_and(|d| d.is_ascii_digit()) && c[i..].contains(&'}');
        match (ch, rep) {
            ('?', Some((start, true))) => rep = Some((start, false)),
            ('*' | '+' | '?', Some((start, _))) => return Some(c[start..=i].iter().collect()),
            ('{', Some((start, _))) if counted => return Some(c[start..=i].iter().collect()),
            ('*' | '+' | '?', None) => rep = Some((i, true)),
            ('{', None) if counted => {
                let end = c[i..].iter().position(|&x| x == '}').unwrap_or(0);
                rep = Some((i, true));
                i += end + 1;
                continue;
            }
            ('[', _) => {
                in_class = true;
                rep = None;
            }
            _ => rep = None,
        }
        i += 1;
    }
    None
}

fn chars(x: &str) -> Vec<char> {
    x.chars().collect()
}

fn int_arg(v: &Val) -> Result<i64, String> {
    match v {
        Val::Int(i) => Ok(*i),
        _ => Err(no()),
    }
}

/// Dispatches a function call.
#[inline(never)]
pub fn call(target: Option<Val>, name: &str, a: Vec<Val>, env: &mut Env) -> R {
    match target {
        None => global(name, a, env),
        Some(t) => member(t, name, a, env),
    }
}

fn global(name: &str, mut a: Vec<Val>, env: &mut Env) -> R {
    if name == "optional.none" && a.is_empty() {
        return Ok(Val::Optional(None));
    }
    if name.starts_with("math.") {
        let items: Vec<Val> = if a.len() == 1 {
            match &a[0] {
                Val::List(l, _) => l.to_vec(),
                x => vec![x.clone()],
            }
        } else {
            a.clone()
        };
        if items.is_empty() {
            return Err(format!("{name}(list) argument must not be empty"));
        }
        let mut best = items[0].clone();
        for x in &items[1..] {
            let o = eval::val_cmp(x, &best)?;
            if (name == "math.greatest" && o.is_gt()) || (name == "math.least" && o.is_lt()) {
                best = x.clone();
            }
        }
        return Ok(best);
    }
    if name.starts_with("sets.") && a.len() == 2 {
        let (Val::List(x, _), Val::List(y, _)) = (&a[0], &a[1]) else {
            return Err(no());
        };
        eval::set_charge(env, (x.len() * y.len()) as i64)?;
        let has = |l: &[Val], v: &Val| l.iter().any(|o| eval::equals(o, v));
        return Ok(Val::Bool(match name {
            "sets.contains" => y.iter().all(|v| has(x, v)),
            "sets.equivalent" => y.iter().all(|v| has(x, v)) && x.iter().all(|v| has(y, v)),
            _ => y.iter().any(|v| has(x, v)),
        }));
    }
    if name == "lists.range" && a.len() == 1 {
        let n = int_arg(&a[0])?;
        eval::set_charge(env, n.max(0))?;
        return Ok(list((0..n.max(0)).map(Val::Int).collect()));
    }
    if a.len() == 2 && name == "matches" {
        let p = a.pop().unwrap_or(Val::Null);
        let x = a.pop().unwrap_or(Val::Null);
        return member(x, "matches", vec![p], env);
    }
    if a.len() != 1 {
        return Err(no());
    }
    let x = a.pop().unwrap_or(Val::Null);
    match name {
        "url" | "isURL" => {
            let Val::Str(u) = &x else {
                return Err(no());
            };
            let parsed = parse_url(u);
            if name == "isURL" {
                return Ok(Val::Bool(parsed.is_some()));
            }
            match parsed {
                Some(_) => Ok(Val::Map(
                    Rc::new(vec![(Val::Str(Rc::from(URL)), Val::Str(u.clone()))]),
                    true,
                )),
                None => Err(format!("URL parse error during conversion from string: parse {u:?}: invalid URI for request")),
            }
        }
        "quantity" | "isQuantity" => {
            let Val::Str(q) = &x else {
                return Err(no());
            };
            let parsed = apimachinery::quantity::parse(q);
            if name == "isQuantity" {
                return Ok(Val::Bool(parsed.is_some()));
            }
            match parsed {
                Some(p) => Ok(quantity_val(p)),
                None => Err(format!("quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$' ({q})")),
            }
        }
        "jsonpatch.escapeKey" => {
            let Val::Str(k) = &x else {
                return Err(no());
            };
            Ok(Val::Str(Rc::from(
                k.replace('~', "~0").replace('/', "~1").as_str(),
            )))
        }
        "isIP" | "isCIDR" | "ip.isCanonical" => {
            let Val::Str(s) = &x else {
                return Err(no());
            };
            Ok(Val::Bool(match name {
                "isIP" => parse_ip(s).is_ok(),
                "isCIDR" => parse_cidr(s).is_ok(),
                _ => is_canonical_ip(s)?,
            }))
        }
        "optional.of" => Ok(Val::Optional(Some(Box::new(x)))),
        "optional.ofNonZeroValue" => {
            let zero = match &x {
                Val::Null => true,
                Val::Bool(b) => !b,
                Val::Int(i) => *i == 0,
                Val::Uint(u) => *u == 0,
                Val::Double(d) => *d == 0.0,
                Val::Str(s) => s.is_empty(),
                Val::Bytes(b) => b.is_empty(),
                Val::List(l, _) => l.is_empty(),
                Val::Map(m, _) => m.is_empty(),
                Val::Duration(d) | Val::Timestamp(d) => *d == 0,
                _ => false,
            };
            Ok(Val::Optional(if zero { None } else { Some(Box::new(x)) }))
        }
        "size" => member(x, "size", vec![], env),
        "dyn" => Ok(x),
        "type" => Ok(Val::Type(Rc::from(eval::type_name(&x)))),
        "int" => match x {
            Val::Int(i) => Ok(Val::Int(i)),
            Val::Uint(u) => i64::try_from(u)
                .map(Val::Int)
                .map_err(|_| "integer overflow".into()),
            Val::Double(d) => {
                if d.is_nan() || d <= -9.223372036854776e18 || d >= 9.223372036854776e18 {
                    Err("integer overflow".into())
                } else {
                    Ok(Val::Int(d as i64))
                }
            }
            Val::Str(s) => s
                .parse()
                .map(Val::Int)
                .map_err(|_| format!("cannot convert '{s}' to int")),
            Val::Timestamp(t) => Ok(Val::Int(t.div_euclid(1_000_000_000) as i64)),
            Val::Duration(d) => Ok(Val::Int(d as i64)),
            _ => Err(no()),
        },
        "uint" => match x {
            Val::Uint(u) => Ok(Val::Uint(u)),
            Val::Int(i) => u64::try_from(i)
                .map(Val::Uint)
                .map_err(|_| "unsigned integer overflow".into()),
            Val::Double(d) => {
                if d.is_nan() || !(0.0..1.8446744073709552e19).contains(&d) {
                    Err("unsigned integer overflow".into())
                } else {
                    Ok(Val::Uint(d as u64))
                }
            }
            Val::Str(s) => s
                .parse()
                .map(Val::Uint)
                .map_err(|_| format!("cannot convert '{s}' to uint")),
            _ => Err(no()),
        },
        "double" => match x {
            Val::Double(d) => Ok(Val::Double(d)),
            Val::Int(i) => Ok(Val::Double(i as f64)),
            Val::Uint(u) => Ok(Val::Double(u as f64)),
            Val::Str(s) => s
                .parse()
                .map(Val::Double)
                .map_err(|_| format!("cannot convert '{s}' to double")),
            _ => Err(no()),
        },
        "bool" => match x {
            Val::Bool(b) => Ok(Val::Bool(b)),
            Val::Str(s) => match &*s {
                "1" | "t" | "true" | "TRUE" | "True" => Ok(Val::Bool(true)),
                "0" | "f" | "false" | "FALSE" | "False" => Ok(Val::Bool(false)),
                _ => Err("type conversion error from 'string' to 'bool'".to_string()),
            },
            _ => Err(no()),
        },
        "string" => match x {
            Val::Str(s) => Ok(Val::Str(s)),
            Val::Int(i) => Ok(st(i.to_string())),
            Val::Uint(u) => Ok(st(u.to_string())),
            Val::Double(d) => Ok(st(fmt_double(d))),
            Val::Bool(b) => Ok(st(b.to_string())),
            Val::Bytes(b) => String::from_utf8(b.to_vec())
                .map(st)
                .map_err(|_| "invalid UTF-8 in bytes, cannot convert to string".into()),
            Val::Duration(d) => Ok(st(eval::fmt_dur(d))),
            Val::Timestamp(t) => Ok(st(eval::fmt_ts(t))),
            Val::Type(t) => Ok(Val::Str(t)),
            _ => Err(no()),
        },
        "bytes" => match x {
            Val::Bytes(b) => Ok(Val::Bytes(b)),
            Val::Str(s) => Ok(Val::Bytes(Rc::from(s.as_bytes()))),
            _ => Err(no()),
        },
        "duration" => match x {
            Val::Duration(d) => Ok(Val::Duration(d)),
            Val::Str(s) => eval::parse_go_duration(&s)
                .ok_or_else(|| {
                    "type conversion error from 'string' to 'google.protobuf.Duration'".to_string()
                })
                .and_then(eval::check_duration),
            _ => Err(no()),
        },
        "timestamp" => match x {
            Val::Timestamp(t) => Ok(Val::Timestamp(t)),
            Val::Str(s) => eval::parse_rfc3339(&s)
                .ok_or_else(|| {
                    "type conversion error from 'string' to 'google.protobuf.Timestamp'".to_string()
                })
                .and_then(eval::check_timestamp),
            Val::Int(i) => eval::check_timestamp(i as i128 * 1_000_000_000),
            _ => Err(no()),
        },
        _ => Err(no()),
    }
}

/// Formats a double like cel-go's `string(double)` (Go `%g`-like shortest form).
pub fn fmt_double(d: f64) -> String {
    if d.is_infinite() {
        return if d > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        };
    }
    if d.is_nan() {
        return "NaN".into();
    }
    let a = d.abs();
    if a != 0.0 && !(1e-4..1e21).contains(&a) {
        let s = format!("{d:e}");
        // Go renders exponent with sign and at least two digits
        if let Some((m, e)) = s.split_once('e') {
            let (sign, digits) = if let Some(x) = e.strip_prefix('-') {
                ("-", x)
            } else {
                ("+", e)
            };
            return format!("{m}e{sign}{digits:0>2}");
        }
        return s;
    }
    format!("{d}")
}

/// The `authorizer` library: building a check, running it, reading the decision.
fn authz_member(
    stage: &str,
    mut c: eval::Authz,
    t: &Val,
    name: &str,
    a: &[Val],
    env: &mut Env,
) -> R {
    let arg = |i: usize| match a.get(i) {
        Some(Val::Str(x)) => Ok(x.to_string()),
        _ => Err(no()),
    };
    match (stage, name, a.len()) {
        ("authorizer", "path", 1) => {
            c.path = Some(arg(0)?);
            Ok(eval::authz_check("path", &c))
        }
        ("authorizer", "group", 1) => {
            c.group = arg(0)?;
            Ok(eval::authz_check("group", &c))
        }
        ("authorizer", "serviceAccount", 2) => {
            let mut m = match t {
                Val::Map(m, _) => (**m).clone(),
                _ => return Err(no()),
            };
            m.retain(|(k, _)| !matches!(k, Val::Str(x) if x.starts_with("\u{0}sa")));
            m.push((
                Val::Str(Rc::from("\u{0}saNamespace")),
                Val::Str(Rc::from(arg(0)?.as_str())),
            ));
            m.push((
                Val::Str(Rc::from("\u{0}saName")),
                Val::Str(Rc::from(arg(1)?.as_str())),
            ));
            m.retain(|(k, _)| !matches!(k, Val::Str(x) if &**x == "requestResource"));
            Ok(Val::Map(Rc::new(m), true))
        }
        ("group", "resource", 1) => {
            c.resource = arg(0)?;
            Ok(eval::authz_check("resource", &c))
        }
        ("resource", "subresource" | "namespace" | "name", 1) => {
            let v = arg(0)?;
            match name {
                "subresource" => c.subresource = v,
                "namespace" => c.namespace = v,
                _ => c.name = v,
            }
            Ok(eval::authz_check("resource", &c))
        }
        ("resource" | "path", "check", 1) => {
            let verb = arg(0)?;
            eval::set_charge(env, 350_000)?;
            let (decision, reason, error) = match &env.authorizer {
                Some(f) => match f(&c, &verb) {
                    Ok((d, r)) => (d, r, String::new()),
                    Err(e) => ("noOpinion", String::new(), e),
                },
                None => ("noOpinion", String::new(), String::new()),
            };
            let m = vec![
                (
                    Val::Str(Rc::from("\u{0}authz")),
                    Val::Str(Rc::from("decision")),
                ),
                (
                    Val::Str(Rc::from("\u{0}decision")),
                    Val::Str(Rc::from(decision)),
                ),
                (
                    Val::Str(Rc::from("\u{0}reason")),
                    Val::Str(Rc::from(reason.as_str())),
                ),
                (
                    Val::Str(Rc::from("\u{0}error")),
                    Val::Str(Rc::from(error.as_str())),
                ),
            ];
            Ok(Val::Map(Rc::new(m), true))
        }
        ("decision", "allowed" | "reason" | "errored" | "error", 0) => {
            let get = |k: &str| {
                match t {
                    Val::Map(m, _) => m.iter().find_map(|(kk, vv)| match (kk, vv) {
                        (Val::Str(a), Val::Str(b)) if &**a == k => Some(b.to_string()),
                        _ => None,
                    }),
                    _ => None,
                }
                .unwrap_or_default()
            };
            Ok(match name {
                "allowed" => Val::Bool(get("\u{0}decision") == "allow"),
                "reason" => Val::Str(Rc::from(get("\u{0}reason").as_str())),
                "errored" => Val::Bool(!get("\u{0}error").is_empty()),
                _ => Val::Str(Rc::from(get("\u{0}error").as_str())),
            })
        }
        _ => Err(no()),
    }
}

const QUANTITY: &str = "\u{0}quantity";
const URL: &str = "\u{0}url";

/// Go's `url.ParseRequestURI` as the `url` library uses it: an absolute URL or an
/// absolute path.
fn parse_url(u: &str) -> Option<http::Uri> {
    if u.is_empty() || u.contains(char::is_whitespace) {
        return None;
    }
    let uri: http::Uri = u.parse().ok()?;
    if uri.scheme().is_none() && !u.starts_with('/') {
        return None;
    }
    Some(uri)
}

fn url_of(v: &Val) -> Option<http::Uri> {
    let Val::Map(m, true) = v else { return None };
    match m.first() {
        Some((Val::Str(k), Val::Str(u))) if &**k == URL => parse_url(u),
        _ => None,
    }
}

fn url_member(u: http::Uri, name: &str, a: &[Val]) -> R {
    if !a.is_empty() {
        return Err(no());
    }
    let st = |x: &str| Val::Str(Rc::from(x));
    let authority = u
        .authority()
        .map(|a| a.as_str().rsplit('@').next().unwrap_or("").to_string());
    match name {
        "getScheme" => Ok(st(u.scheme_str().unwrap_or(""))),
        "getHost" => Ok(st(authority.as_deref().unwrap_or(""))),
        "getHostname" => {
            let h = u.host().unwrap_or("");
            Ok(st(h.trim_start_matches('[').trim_end_matches(']')))
        }
        "getPort" => Ok(st(&u
            .port()
            .map(|p| p.as_str().to_string())
            .unwrap_or_default())),
        "getEscapedPath" => Ok(st(
            if u.authority().is_some() && u.path() == "/" && !u.to_string().ends_with('/') {
                ""
            } else {
                u.path()
            },
        )),
        "getQuery" => {
            let mut out: Vec<(Val, Val)> = Vec::new();
            for pair in u.query().unwrap_or("").split('&').filter(|p| !p.is_empty()) {
                let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
                let (k, v) = (st(&percent_decode(k)), st(&percent_decode(v)));
                match out.iter_mut().find(|(kk, _)| eval::equals(kk, &k)) {
                    Some((_, Val::List(l, _))) => Rc::make_mut(l).push(v),
                    _ => out.push((k, list(vec![v]))),
                }
            }
            Ok(Val::Map(Rc::new(out), false))
        }
        _ => Err(no()),
    }
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => {
                let hex = |c: u8| (c as char).to_digit(16);
                match (hex(b[i + 1]), hex(b[i + 2])) {
                    (Some(h), Some(l)) => {
                        out.push((h * 16 + l) as u8);
                        i += 2;
                    }
                    _ => out.push(b'%'),
                }
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A Kubernetes quantity as a CEL value (the `quantity` library of
/// `k8s.io/apiserver/pkg/cel/library/quantity.go`), held as its canonical string.
fn quantity_val(q: apimachinery::quantity::Quantity) -> Val {
    Val::Map(
        Rc::new(vec![(
            Val::Str(Rc::from(QUANTITY)),
            Val::Str(Rc::from(q.canonical().as_str())),
        )]),
        true,
    )
}

fn quantity_of(v: &Val) -> Option<apimachinery::quantity::Quantity> {
    let Val::Map(m, true) = v else { return None };
    match m.first() {
        Some((Val::Str(k), Val::Str(q))) if &**k == QUANTITY => apimachinery::quantity::parse(q),
        _ => None,
    }
}

fn quantity_member(q: apimachinery::quantity::Quantity, name: &str, a: &[Val]) -> R {
    use apimachinery::quantity::{Format, Quantity};
    let other = |i: usize| -> Result<Quantity, String> {
        match a.get(i) {
            Some(Val::Int(n)) => Ok(Quantity::from_value(*n, Format::DecimalSi)),
            Some(v) => quantity_of(v).ok_or_else(no),
            None => Err(no()),
        }
    };
    let nanos = q.nanos();
    match (name, a.len()) {
        ("isInteger", 0) => Ok(Val::Bool(
            nanos % 1_000_000_000 == 0 && i64::try_from(nanos / 1_000_000_000).is_ok(),
        )),
        ("asInteger", 0) => {
            if nanos % 1_000_000_000 != 0 {
                return Err("cannot convert value to integer".into());
            }
            i64::try_from(nanos / 1_000_000_000)
                .map(Val::Int)
                .map_err(|_| "cannot convert value to integer".into())
        }
        ("asApproximateFloat", 0) => Ok(Val::Double(nanos as f64 / 1e9)),
        ("sign", 0) => Ok(Val::Int(nanos.signum() as i64)),
        ("add", 1) => Ok(quantity_val(q + other(0)?)),
        ("sub", 1) => Ok(quantity_val(q - other(0)?)),
        ("isGreaterThan", 1) => Ok(Val::Bool(q.cmp_value(&other(0)?).is_gt())),
        ("isLessThan", 1) => Ok(Val::Bool(q.cmp_value(&other(0)?).is_lt())),
        ("compareTo", 1) => Ok(Val::Int(match q.cmp_value(&other(0)?) {
            std::cmp::Ordering::Less => -1,
            std::cmp::Ordering::Equal => 0,
            std::cmp::Ordering::Greater => 1,
        })),
        _ => Err(no()),
    }
}

fn member(t: Val, name: &str, mut a: Vec<Val>, env: &mut Env) -> R {
    if let Some(q) = quantity_of(&t) {
        return quantity_member(q, name, &a);
    }
    if let Some(u) = url_of(&t) {
        return url_member(u, name, &a);
    }
    if let Some((stage, c)) = eval::authz_of(&t) {
        return authz_member(&stage, c, &t, name, &a, env);
    }
    match (&t, name, a.len()) {
        (Val::Optional(o), "hasValue", 0) => return Ok(Val::Bool(o.is_some())),
        (Val::Optional(o), "value", 0) => {
            return o
                .as_ref()
                .map(|x| (**x).clone())
                .ok_or_else(|| "optional.none() dereference".into())
        }
        (Val::Optional(o), "orValue", 1) => {
            return Ok(match o {
                Some(x) => (**x).clone(),
                None => a.pop().unwrap_or(Val::Null),
            })
        }
        (Val::Optional(o), "or", 1) => {
            return Ok(match o {
                Some(_) => t.clone(),
                None => a.pop().unwrap_or(Val::Null),
            })
        }
        _ => {}
    }
    if name == "size" && a.is_empty() {
        return match &t {
            Val::Str(s) => Ok(Val::Int(s.chars().count() as i64)),
            Val::Bytes(b) => Ok(Val::Int(b.len() as i64)),
            Val::List(l, _) => Ok(Val::Int(l.len() as i64)),
            Val::Map(m, _) => Ok(Val::Int(m.len() as i64)),
            _ => Err(no()),
        };
    }
    match &t {
        Val::Str(s) => string_fn(s, name, a, env),
        Val::List(l, _) => list_fn(l, name, a, env),
        Val::Duration(d) => {
            let d = *d;
            match name {
                "getHours" => Ok(Val::Int((d / 3_600_000_000_000) as i64)),
                "getMinutes" => Ok(Val::Int((d / 60_000_000_000) as i64)),
                "getSeconds" => Ok(Val::Int((d / 1_000_000_000) as i64)),
                "getMilliseconds" => Ok(Val::Int((d / 1_000_000) as i64)),
                _ => Err(no()),
            }
        }
        Val::Timestamp(ts) => {
            if !(a.is_empty()
                || matches!(a.first(), Some(Val::Str(z)) if &**z == "UTC" || &**z == "Z"))
            {
                return Err("unsupported time zone".into());
            }
            let secs = ts.div_euclid(1_000_000_000) as i64;
            let days = secs.div_euclid(86400);
            let sod = secs.rem_euclid(86400);
            let (y, m, d) = eval::civil(days);
            match name {
                "getFullYear" => Ok(Val::Int(y)),
                "getMonth" => Ok(Val::Int(m as i64 - 1)),
                "getDate" => Ok(Val::Int(d as i64)),
                "getDayOfMonth" => Ok(Val::Int(d as i64 - 1)),
                "getDayOfWeek" => Ok(Val::Int((days + 4).rem_euclid(7))),
                "getDayOfYear" => {
                    let (y0, _, _) = eval::civil(days);
                    let jan1 = days_from(y0);
                    Ok(Val::Int(days - jan1))
                }
                "getHours" => Ok(Val::Int(sod / 3600)),
                "getMinutes" => Ok(Val::Int(sod % 3600 / 60)),
                "getSeconds" => Ok(Val::Int(sod % 60)),
                "getMilliseconds" => {
                    Ok(Val::Int((ts.rem_euclid(1_000_000_000) / 1_000_000) as i64))
                }
                _ => Err(no()),
            }
        }
        _ => Err(no()),
    }
}

fn days_from(y: i64) -> i64 {
    // days from epoch to Jan 1 of year y
    let mut lo = (y - 1970) * 365 - 400;
    // step forward until civil year matches
    loop {
        let (yy, _, _) = eval::civil(lo);
        if yy >= y {
            break;
        }
        lo += 1;
    }
    lo
}

fn string_fn(s: &Rc<str>, name: &str, a: Vec<Val>, env: &mut Env) -> R {
    eval::set_charge(env, (s.len() / 10) as i64)?;
    let sarg = |i: usize| -> Result<Rc<str>, String> {
        match a.get(i) {
            Some(Val::Str(x)) => Ok(x.clone()),
            _ => Err(no()),
        }
    };
    match (name, a.len()) {
        ("contains", 1) => Ok(Val::Bool(s.contains(&*sarg(0)?))),
        ("startsWith", 1) => Ok(Val::Bool(s.starts_with(&*sarg(0)?))),
        ("endsWith", 1) => Ok(Val::Bool(s.ends_with(&*sarg(0)?))),
        ("matches", 1) => {
            let re = regex(&sarg(0)?)?;
            Ok(Val::Bool(re.is_match(s)))
        }
        ("find", 1) => {
            let re = regex(&sarg(0)?)?;
            Ok(st(re
                .find(s)
                .map(|m| m.as_str().to_string())
                .unwrap_or_default()))
        }
        ("findAll", 1) | ("findAll", 2) => {
            let re = regex(&sarg(0)?)?;
            let lim = if a.len() == 2 { int_arg(&a[1])? } else { -1 };
            let mut out = Vec::new();
            for m in re.find_iter(s) {
                if lim >= 0 && out.len() as i64 >= lim {
                    break;
                }
                out.push(st(m.as_str()));
            }
            Ok(list(out))
        }
        ("charAt", 1) => {
            let i = int_arg(&a[0])?;
            let c = chars(s);
            if i < 0 || i as usize > c.len() {
                return Err(format!("index out of range: {i}"));
            }
            Ok(st(c
                .get(i as usize)
                .map(|c| c.to_string())
                .unwrap_or_default()))
        }
        ("indexOf", 1) | ("indexOf", 2) | ("lastIndexOf", 1) | ("lastIndexOf", 2) => {
            let sub = chars(&sarg(0)?);
            let c = chars(s);
            let last = name == "lastIndexOf";
            let start = if a.len() == 2 {
                int_arg(&a[1])?
            } else if last {
                c.len() as i64
            } else {
                0
            };
            if start < 0 || start as usize > c.len() {
                return Err(format!("index out of range: {start}"));
            }
            let start = start as usize;
            let fits = |i: usize| i + sub.len() <= c.len() && c[i..i + sub.len()] == sub[..];
            let r = if last {
                (0..=start.min(c.len())).rev().find(|&i| fits(i))
            } else {
                (start..=c.len()).find(|&i| fits(i))
            };
            Ok(Val::Int(r.map(|i| i as i64).unwrap_or(-1)))
        }
        ("lowerAscii", 0) => Ok(st(s.to_ascii_lowercase())),
        ("upperAscii", 0) => Ok(st(s.to_ascii_uppercase())),
        ("trim", 0) => Ok(st(s.trim())),
        ("reverse", 0) => Ok(st(s.chars().rev().collect::<String>())),
        ("replace", 2) | ("replace", 3) => {
            let from = sarg(0)?;
            let to = sarg(1)?;
            let n = if a.len() == 3 { int_arg(&a[2])? } else { -1 };
            Ok(st(if n < 0 {
                s.replace(&*from, &to)
            } else {
                s.replacen(&*from, &to, n as usize)
            }))
        }
        ("split", 1) | ("split", 2) => {
            let sep = sarg(0)?;
            let n = if a.len() == 2 { int_arg(&a[1])? } else { -1 };
            if n == 0 {
                return Ok(list(vec![]));
            }
            let parts: Vec<Val> = if sep.is_empty() {
                let c = chars(s);
                let mut v: Vec<Val> = Vec::new();
                for (i, ch) in c.iter().enumerate() {
                    if n > 0 && v.len() as i64 == n - 1 {
                        v.push(st(c[i..].iter().collect::<String>()));
                        break;
                    }
                    v.push(st(ch.to_string()));
                }
                v
            } else if n < 0 {
                s.split(&*sep).map(st).collect()
            } else {
                s.splitn(n as usize, &*sep).map(st).collect()
            };
            Ok(list(parts))
        }
        ("substring", 1) | ("substring", 2) => {
            let c = chars(s);
            let b = int_arg(&a[0])?;
            let e = if a.len() == 2 {
                int_arg(&a[1])?
            } else {
                c.len() as i64
            };
            if b < 0 || b as usize > c.len() {
                return Err(format!("index out of range: {b}"));
            }
            if e < 0 || e as usize > c.len() {
                return Err(format!("index out of range: {e}"));
            }
            if b > e {
                return Err(format!("invalid substring range. start: {b}, end: {e}"));
            }
            Ok(st(c[b as usize..e as usize].iter().collect::<String>()))
        }
        ("format", 1) => format(s, &a[0]),
        _ => Err(no()),
    }
}

fn format(f: &str, args: &Val) -> R {
    let Val::List(args, _) = args else {
        return Err(no());
    };
    let mut out = String::new();
    let mut it = f.chars().peekable();
    let mut idx = 0;
    while let Some(c) = it.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let mut prec: Option<usize> = None;
        if it.peek() == Some(&'.') {
            it.next();
            let mut p = String::new();
            while let Some(d) = it.peek().filter(|d| d.is_ascii_digit()) {
                p.push(*d);
                it.next();
            }
            prec = p.parse().ok();
        }
        let Some(verb) = it.next() else {
            return Err("unexpected end of format string".into());
        };
        if verb == '%' {
            out.push('%');
            continue;
        }
        let Some(arg) = args.get(idx) else {
            return Err(format!("index {idx} out of range"));
        };
        idx += 1;
        let text = match (verb, arg) {
            ('s', Val::Str(x)) => x.to_string(),
            ('s', Val::List(..)) | ('s', Val::Map(..)) => {
                return Err("list/map formatting not supported".into())
            }
            ('s', v) => match global("string", vec![v.clone()], &mut Env::new(vec![], i64::MAX)) {
                Ok(Val::Str(x)) => x.to_string(),
                _ => return Err(no()),
            },
            ('d', Val::Int(i)) => i.to_string(),
            ('d', Val::Uint(u)) => u.to_string(),
            ('f', v) => match v {
                Val::Double(d) => format!("{d:.*}", prec.unwrap_or(6)),
                Val::Int(i) => format!("{:.*}", prec.unwrap_or(6), *i as f64),
                _ => return Err(no()),
            },
            ('x', Val::Int(i)) => format!("{i:x}"),
            ('X', Val::Int(i)) => format!("{i:X}"),
            ('o', Val::Int(i)) => format!("{i:o}"),
            ('b', Val::Int(i)) => format!("{i:b}"),
            ('x', Val::Str(x)) => x.bytes().map(|b| format!("{b:02x}")).collect(),
            _ => return Err(format!("could not format {verb}")),
        };
        out.push_str(&text);
    }
    Ok(st(out))
}

fn flatten(l: &[Val], level: i64) -> Vec<Val> {
    let mut out = Vec::new();
    for x in l {
        match x {
            Val::List(inner, _) if level > 0 => out.extend(flatten(inner, level - 1)),
            v => out.push(v.clone()),
        }
    }
    out
}

fn list_fn(l: &Rc<Vec<Val>>, name: &str, a: Vec<Val>, env: &mut Env) -> R {
    eval::set_charge(env, l.len() as i64)?;
    match (name, a.len()) {
        ("isSorted", 0) => {
            for w in l.windows(2) {
                if eval::val_cmp(&w[0], &w[1])?.is_gt() {
                    return Ok(Val::Bool(false));
                }
            }
            Ok(Val::Bool(true))
        }
        ("sum", 0) => {
            let mut acc = match l.first() {
                Some(Val::Double(_)) => Val::Double(0.0),
                Some(Val::Uint(_)) => Val::Uint(0),
                Some(Val::Duration(_)) => Val::Duration(0),
                _ => Val::Int(0),
            };
            for x in l.iter() {
                acc = eval::add(acc, x.clone())?;
            }
            Ok(acc)
        }
        ("min", 0) | ("max", 0) => {
            let Some(mut best) = l.first().cloned() else {
                return Err(format!("{name} called on empty list"));
            };
            for x in &l[1..] {
                let o = eval::val_cmp(x, &best)?;
                if (name == "min" && o.is_lt()) || (name == "max" && o.is_gt()) {
                    best = x.clone();
                }
            }
            Ok(best)
        }
        ("indexOf", 1) => Ok(Val::Int(
            l.iter()
                .position(|x| eval::equals(x, &a[0]))
                .map(|i| i as i64)
                .unwrap_or(-1),
        )),
        ("lastIndexOf", 1) => Ok(Val::Int(
            l.iter()
                .rposition(|x| eval::equals(x, &a[0]))
                .map(|i| i as i64)
                .unwrap_or(-1),
        )),
        ("join", 0) | ("join", 1) => {
            let sep = match a.first() {
                Some(Val::Str(x)) => x.to_string(),
                None => String::new(),
                _ => return Err(no()),
            };
            let mut parts = Vec::new();
            for x in l.iter() {
                match x {
                    Val::Str(p) => parts.push(p.to_string()),
                    _ => return Err(no()),
                }
            }
            Ok(st(parts.join(&sep)))
        }
        ("slice", 2) => {
            let b = int_arg(&a[0])?;
            let e = int_arg(&a[1])?;
            if b < 0 || e < 0 {
                return Err(format!(
                    "cannot slice({b}, {e}), negative indexes not supported"
                ));
            }
            if b > e {
                return Err(format!(
                    "cannot slice({b}, {e}), start index must be less than or equal to end index"
                ));
            }
            if e as usize > l.len() {
                return Err(format!(
                    "cannot slice({b}, {e}), list is length {}",
                    l.len()
                ));
            }
            Ok(list(l[b as usize..e as usize].to_vec()))
        }
        ("flatten", 0) | ("flatten", 1) => {
            let level = if a.len() == 1 { int_arg(&a[0])? } else { 1 };
            if level < 0 {
                return Err("level must be non-negative".into());
            }
            Ok(list(flatten(l, level)))
        }
        ("distinct", 0) => {
            let mut out: Vec<Val> = Vec::new();
            for x in l.iter() {
                if !out.iter().any(|o| eval::equals(o, x)) {
                    out.push(x.clone());
                }
            }
            Ok(list(out))
        }
        ("reverse", 0) => Ok(list(l.iter().rev().cloned().collect())),
        ("sort", 0) => {
            let mut v = l.to_vec();
            let mut err = None;
            v.sort_by(|x, y| match eval::val_cmp(x, y) {
                Ok(o) => o,
                Err(e) => {
                    err = Some(e);
                    std::cmp::Ordering::Equal
                }
            });
            match err {
                Some(e) => Err(e),
                None => Ok(list(v)),
            }
        }
        _ => Err(no()),
    }
}

#[cfg(test)]
mod tests {
    use super::nested_repetition;

    #[test]
    fn re2_nested_repetition() {
        for ok in [
            "a+", "a+?", "a*?", "a??", "a{2}", "a{2}?", "[+*]+", "\\++", "a{", "(a+)+",
        ] {
            assert_eq!(nested_repetition(ok), None, "{ok}");
        }
        for bad in ["x++", "a**", "a*+", "a{2}*", "a+?+", "a???"] {
            assert!(nested_repetition(bad).is_some(), "{bad}");
        }
    }
}
