//! Operations on CEL values shared by the evaluator and the function library:
//! equality and ordering, arithmetic, list concatenation, type names, cost charging and
//! the variable environment.

pub use crate::machinery::cel::value::*;
use std::cmp::Ordering;
use std::rc::Rc;

/// A number of any of CEL's three numeric types, for mixed comparisons.
#[derive(Clone, Copy)]
pub(crate) enum Num {
    I(i64),
    U(u64),
    D(f64),
}

/// Variable bindings: a small stack of `(name, value)`.
pub struct Env {
    pub(crate) vars: Vec<(String, Val)>,
    /// Remaining cost units for this call.
    pub budget: i64,
    /// Cost consumed so far.
    pub used: i64,
    /// What answers the `authorizer` library's checks (admission policies).
    pub authorizer: Option<Rc<AuthorizerFn>>,
}

/// One check of the `authorizer` library (upstream `k8s.io/apiserver/pkg/cel/library/authz.go`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Authz {
    /// A non-resource path (`authorizer.path('/healthz')`).
    pub path: Option<String>,
    /// API group.
    pub group: String,
    /// Resource (plural).
    pub resource: String,
    /// Subresource.
    pub subresource: String,
    /// Namespace.
    pub namespace: String,
    /// Object name.
    pub name: String,
    /// The service account to check instead of the requesting user (`namespace`, `name`).
    pub service_account: Option<(String, String)>,
}

/// Answers a check: `(decision, reason)` where decision is `allow`, `deny` or `noOpinion`
/// (`Err`: the authorizer failed).
pub type AuthorizerFn = dyn Fn(&Authz, &str) -> Result<(&'static str, String), String>;

const AUTHZ: &str = "\u{0}authz";

/// The value of the `authorizer` variable, with `requestResource` when given.
pub fn authorizer_val(request_resource: Option<Authz>) -> Val {
    let mut m = vec![(s(AUTHZ), s("authorizer"))];
    if let Some(rr) = request_resource {
        m.push((s("requestResource"), authz_check("resource", &rr)));
    }
    Val::Map(Rc::new(m), true)
}

/// A stage of an authorizer check as a value (`group`, `resource`, `path` checks).
pub(crate) fn authz_check(stage: &str, a: &Authz) -> Val {
    let mut m = vec![
        (s(AUTHZ), s(stage)),
        (s("\u{0}group"), s(&a.group)),
        (s("\u{0}resource"), s(&a.resource)),
        (s("\u{0}subresource"), s(&a.subresource)),
        (s("\u{0}namespace"), s(&a.namespace)),
        (s("\u{0}name"), s(&a.name)),
    ];
    if let Some(p) = &a.path {
        m.push((s("\u{0}path"), s(p)));
    }
    if let Some((ns, n)) = &a.service_account {
        m.push((s("\u{0}saNamespace"), s(ns)));
        m.push((s("\u{0}saName"), s(n)));
    }
    Val::Map(Rc::new(m), true)
}

/// The stage and check of an authorizer value, if `v` is one.
pub(crate) fn authz_of(v: &Val) -> Option<(String, Authz)> {
    let Val::Map(m, true) = v else { return None };
    let get = |k: &str| -> Option<String> {
        m.iter().find_map(|(kk, vv)| match (kk, vv) {
            (Val::Str(a), Val::Str(b)) if &**a == k => Some(b.to_string()),
            _ => None,
        })
    };
    let stage = get(AUTHZ)?;
    let g = |k: &str| get(&format!("\u{0}{k}")).unwrap_or_default();
    let sa = get("\u{0}saName").map(|n| (g("saNamespace"), n));
    Some((
        stage,
        Authz {
            path: get("\u{0}path"),
            group: g("group"),
            resource: g("resource"),
            subresource: g("subresource"),
            namespace: g("namespace"),
            name: g("name"),
            service_account: sa,
        },
    ))
}

impl Env {
    /// New environment with the given variables and per-call budget.
    pub fn new(vars: Vec<(String, Val)>, budget: i64) -> Env {
        Env {
            vars,
            budget,
            used: 0,
            authorizer: None,
        }
    }
    pub(crate) fn lookup(&self, n: &str) -> Option<&Val> {
        self.vars.iter().rev().find(|(k, _)| k == n).map(|(_, v)| v)
    }
    pub(crate) fn charge(&mut self, c: i64) -> Result<(), String> {
        self.used += c;
        if self.used > self.budget {
            return Err(COST_EXCEEDED.to_string());
        }
        Ok(())
    }
}

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

pub(crate) fn no_overload() -> String {
    "no such overload".to_string()
}

pub(crate) fn map_get<'a>(m: &'a [(Val, Val)], k: &Val) -> Option<&'a Val> {
    m.iter().find(|(x, _)| equals(x, k)).map(|(_, v)| v)
}

pub(crate) fn key_str(k: &Val) -> String {
    match k {
        Val::Str(x) => x.to_string(),
        Val::Int(i) => i.to_string(),
        Val::Uint(u) => u.to_string(),
        Val::Bool(b) => b.to_string(),
        Val::Double(d) => d.to_string(),
        _ => format!("{k:?}"),
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

pub(crate) fn map_keys(v: &Val, keys: &[String]) -> Vec<String> {
    match v {
        Val::Map(m, _) => keys
            .iter()
            .map(|k| map_get(m, &s(k)).map(key_str).unwrap_or_default())
            .collect(),
        _ => vec![],
    }
}

pub(crate) fn num(v: &Val) -> Option<Num> {
    match v {
        Val::Int(i) => Some(Num::I(*i)),
        Val::Uint(u) => Some(Num::U(*u)),
        Val::Double(d) => Some(Num::D(*d)),
        _ => None,
    }
}

pub(crate) fn num_cmp(a: Num, b: Num) -> Option<Ordering> {
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

pub(crate) fn compare(a: &Val, b: &Val) -> Result<Option<Ordering>, String> {
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

pub(crate) fn overflow() -> String {
    "integer overflow".to_string()
}

pub(crate) fn arith(op: &str, a: Val, b: Val) -> R {
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

pub(crate) fn concat_lists(x: &[Val], kind: Rc<ListKind>, y: &[Val]) -> Val {
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

pub(crate) fn set_charge(env: &mut Env, c: i64) -> Result<(), String> {
    env.charge(c)
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
