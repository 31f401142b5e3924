//! The CEL evaluator. Runtime error strings follow cel-go (`no such key: x`,
//! `index out of bounds: 3`, `division by zero`, `integer overflow`, `no such
//! overload`, ...), because upstream embeds them into the validation error messages.

pub use crate::machinery::cel::ops::*;
use crate::machinery::cel::parse::{Expr, Kind, Lit, Macro, Macro2};
use std::cmp::Ordering;
use std::rc::Rc;
// ---------------------------------------------------------------------------
// Evaluation
// ---------------------------------------------------------------------------

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

/// Map key under which field `f` is stored: reserved words used as field names
/// (`self.spec.if`) resolve to their escaped form (`__if__`).
pub fn field_key(f: &str) -> String {
    if is_cel_reserved(f) {
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
        Kind::Struct(..) => e_struct(e, env),
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

/// Object construction: a map marked as an object (absent optional fields are left out).
#[inline(never)]
fn e_struct(e: &Expr, env: &mut Env) -> R {
    let Kind::Struct(_, fields) = &e.kind else {
        return Err(no_overload());
    };
    let mut out: Vec<(Val, Val)> = Vec::new();
    for (name, v, optional) in fields {
        let v = chk(eval(v, env)?)?;
        let v = match (optional, v) {
            (true, Val::Optional(None)) => continue,
            (true, Val::Optional(Some(x))) => *x,
            (_, v) => v,
        };
        let k = s(name);
        if map_get(&out, &k).is_some() {
            return Err(format!("Failed with repeated key: {name}"));
        }
        out.push((k, v));
    }
    Ok(Val::Map(Rc::new(out), true))
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
            crate::machinery::cel::funcs::call(t, name, a, env)
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
