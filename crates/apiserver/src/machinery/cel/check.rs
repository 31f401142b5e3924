//! A light static checker approximating cel-go's type checker for rules
//! declared against a structural schema: undeclared references, undefined
//! fields, mismatched `==`/arithmetic operand types, invalid constant regex,
//! duration and timestamp arguments, and the rule's result type.

use crate::machinery::cel::eval::{cel_props, stype};
use crate::machinery::cel::funcs;
use crate::machinery::cel::parse::{Expr, Issue, Kind, Lit, Macro, Macro2};
use serde_json::Value as J;

/// Static type of an expression.
#[derive(Debug, Clone)]
pub enum Ty {
    Dyn,
    Null,
    Bool,
    Int,
    Uint,
    Double,
    String,
    Bytes,
    Duration,
    Timestamp,
    TypeT,
    List(Box<Ty>),
    Map(Box<Ty>, Box<Ty>),
    /// Schema object; `true` for resource roots (implicit apiVersion/kind/metadata).
    Object(J, bool),
    Opt(Box<Ty>),
}

impl Ty {
    fn name(&self) -> String {
        match self {
            Ty::Dyn => "dyn".into(),
            Ty::Null => "null".into(),
            Ty::Bool => "bool".into(),
            Ty::Int => "int".into(),
            Ty::Uint => "uint".into(),
            Ty::Double => "double".into(),
            Ty::String => "string".into(),
            Ty::Bytes => "bytes".into(),
            Ty::Duration => "google.protobuf.Duration".into(),
            Ty::Timestamp => "google.protobuf.Timestamp".into(),
            Ty::TypeT => "type".into(),
            Ty::List(e) => format!("list({})", e.name()),
            Ty::Map(k, v) => format!("map({}, {})", k.name(), v.name()),
            Ty::Object(..) => "object".into(),
            Ty::Opt(t) => format!("optional_type({})", t.name()),
        }
    }
    fn known(&self) -> bool {
        !matches!(self, Ty::Dyn)
    }
}

/// CEL type of a schema node.
pub fn schema_ty(s: &J, root: bool) -> Ty {
    if s.get("x-kubernetes-int-or-string").and_then(J::as_bool) == Some(true) {
        return Ty::Dyn;
    }
    let embedded = s.get("x-kubernetes-embedded-resource").and_then(J::as_bool) == Some(true);
    match stype(s) {
        "object" => match s.get("additionalProperties").filter(|a| a.is_object()) {
            Some(ap) if s.get("properties").is_none() => {
                Ty::Map(Box::new(Ty::String), Box::new(schema_ty(ap, false)))
            }
            _ => Ty::Object(s.clone(), root || embedded),
        },
        "array" => Ty::List(Box::new(
            s.get("items")
                .map(|i| schema_ty(i, false))
                .unwrap_or(Ty::Dyn),
        )),
        "string" => match s.get("format").and_then(J::as_str) {
            Some("byte") => Ty::Bytes,
            Some("duration") => Ty::Duration,
            Some("date") | Some("date-time") => Ty::Timestamp,
            _ => Ty::String,
        },
        "integer" => Ty::Int,
        "number" => Ty::Double,
        "boolean" => Ty::Bool,
        _ => Ty::Dyn,
    }
}

fn compatible(a: &Ty, b: &Ty) -> bool {
    match (a, b) {
        (Ty::Dyn, _) | (_, Ty::Dyn) => true,
        (Ty::Null, Ty::Null | Ty::Object(..) | Ty::Duration | Ty::Timestamp | Ty::Opt(_)) => true,
        (Ty::Object(..) | Ty::Duration | Ty::Timestamp | Ty::Opt(_), Ty::Null) => true,
        (Ty::List(x), Ty::List(y)) => compatible(x, y),
        (Ty::Map(k1, v1), Ty::Map(k2, v2)) => compatible(k1, k2) && compatible(v1, v2),
        (Ty::Opt(x), Ty::Opt(y)) => compatible(x, y),
        (Ty::Object(..), Ty::Object(..)) => true,
        _ => std::mem::discriminant(a) == std::mem::discriminant(b),
    }
}

/// Checker state: variables in scope.
pub struct Checker {
    vars: Vec<(String, Ty)>,
}

fn issue(pos: usize, msg: impl Into<String>) -> Issue {
    Issue {
        pos,
        msg: msg.into(),
    }
}

fn field_of(t: &Ty, f: &str, pos: usize) -> Result<Ty, Issue> {
    match t {
        Ty::Object(s, root) => {
            for (esc, _, ps) in cel_props(s, *root) {
                if esc == f || crate::machinery::cel::eval::field_key(f) == esc {
                    return Ok(schema_ty(
                        &ps,
                        ps.get("x-kubernetes-embedded-resource")
                            .and_then(J::as_bool)
                            == Some(true),
                    ));
                }
            }
            Err(issue(pos, format!("undefined field '{f}'")))
        }
        Ty::Map(_, v) => Ok((**v).clone()),
        Ty::Dyn => Ok(Ty::Dyn),
        Ty::Opt(inner) => field_of(inner, f, pos).map(|t| Ty::Opt(Box::new(t))),
        other => Err(issue(
            pos,
            format!("type '{}' does not support field selection", other.name()),
        )),
    }
}

impl Checker {
    /// New checker with the given variables.
    pub fn new(vars: Vec<(String, Ty)>) -> Checker {
        Checker { vars }
    }

    /// Infers the type of `e`, or the first issue found.
    pub fn check(&mut self, e: &Expr) -> Result<Ty, Issue> {
        match &e.kind {
            Kind::Lit(l) => Ok(match l {
                Lit::Null => Ty::Null,
                Lit::Bool(_) => Ty::Bool,
                Lit::Int(_) => Ty::Int,
                Lit::Uint(_) => Ty::Uint,
                Lit::Double(_) => Ty::Double,
                Lit::Str(_) => Ty::String,
                Lit::Bytes(_) => Ty::Bytes,
            }),
            Kind::Ident(..) => self.k_ident_0(e),
            Kind::Select(..) => self.k_select_1(e),
            Kind::Has(..) => self.k_has_2(e),
            Kind::Index(..) => self.k_index_3(e),
            Kind::List(..) => self.k_list_4(e),
            Kind::Map(..) => self.k_map_5(e),
            Kind::Not(..) | Kind::Neg(..) => self.k_not_6(e),
            Kind::And(..) | Kind::Or(..) => self.k_and_7(e),
            Kind::Cond(..) => self.k_cond_8(e),
            Kind::Bin(..) => self.k_bin_9(e),
            Kind::Comp(..) => self.k_comp_10(e),
            Kind::Comp2(..) => self.k_comp2_11(e),
            Kind::Bind(..) => self.k_bind_12(e),
            Kind::Call(target, name, args) => self.call(e, target.as_deref(), name, args),
            Kind::Struct(_, fields) => {
                for (_, v, _) in fields {
                    self.check(v)?;
                }
                Ok(Ty::Dyn)
            }
        }
    }

    #[inline(never)]
    fn k_ident_0(&mut self, e: &Expr) -> Result<Ty, Issue> {
        match &e.kind {
            Kind::Ident(n) => {
                if let Some((_, t)) = self.vars.iter().rev().find(|(k, _)| k == n) {
                    return Ok(t.clone());
                }
                if crate::machinery::cel::eval::type_ident(n).is_some() {
                    return Ok(Ty::TypeT);
                }
                Err(issue(
                    e.pos,
                    format!("undeclared reference to '{n}' (in container '')"),
                ))
            }
            _ => Ok(Ty::Dyn),
        }
    }

    #[inline(never)]
    fn k_select_1(&mut self, e: &Expr) -> Result<Ty, Issue> {
        match &e.kind {
            Kind::Select(op, f, opt) => {
                if let Some(q) = qualified(e) {
                    let head = q.split('.').next().unwrap_or("");
                    if !self.vars.iter().any(|(k, _)| k == head)
                        && crate::machinery::cel::eval::type_ident(&q).is_some()
                    {
                        return Ok(Ty::TypeT);
                    }
                }
                let t = self.check(op)?;
                let ft = field_of(&t, f, e.pos)?;
                if *opt && !matches!(ft, Ty::Opt(_)) {
                    return Ok(Ty::Opt(Box::new(ft)));
                }
                Ok(ft)
            }
            _ => Ok(Ty::Dyn),
        }
    }

    #[inline(never)]
    fn k_has_2(&mut self, e: &Expr) -> Result<Ty, Issue> {
        match &e.kind {
            Kind::Has(op, f) => {
                let t = self.check(op)?;
                field_of(&t, f, e.pos)?;
                Ok(Ty::Bool)
            }
            _ => Ok(Ty::Dyn),
        }
    }

    #[inline(never)]
    fn k_index_3(&mut self, e: &Expr) -> Result<Ty, Issue> {
        match &e.kind {
            Kind::Index(op, i, opt) => {
                let t = self.check(op)?;
                let it = self.check(i)?;
                let inner = match &t {
                    Ty::Opt(x) if *opt => (**x).clone(),
                    x => x.clone(),
                };
                let r = match &inner {
                    Ty::List(el) => {
                        if it.known() && !matches!(it, Ty::Int | Ty::Uint) {
                            return Err(issue(
                                e.pos,
                                format!(
                                    "found no matching overload for '_[_]' applied to '({}, {})'",
                                    inner.name(),
                                    it.name()
                                ),
                            ));
                        }
                        (**el).clone()
                    }
                    Ty::Map(_, v) => (**v).clone(),
                    Ty::Dyn => Ty::Dyn,
                    _ => {
                        return Err(issue(
                            e.pos,
                            format!(
                                "found no matching overload for '_[_]' applied to '({}, {})'",
                                inner.name(),
                                it.name()
                            ),
                        ))
                    }
                };
                Ok(if *opt { Ty::Opt(Box::new(r)) } else { r })
            }
            _ => Ok(Ty::Dyn),
        }
    }

    #[inline(never)]
    fn k_list_4(&mut self, e: &Expr) -> Result<Ty, Issue> {
        match &e.kind {
            Kind::List(items) => {
                let mut first: Option<Ty> = None;
                for it in items {
                    let t = self.check(it)?;
                    match &first {
                        None => first = Some(t),
                        Some(f) if f.known() && t.known() && !compatible(f, &t) => {
                            return Err(issue(
                                it.pos,
                                format!("expected type '{}' but found '{}'", f.name(), t.name()),
                            ))
                        }
                        _ => {}
                    }
                }
                Ok(Ty::List(Box::new(first.unwrap_or(Ty::Dyn))))
            }
            _ => Ok(Ty::Dyn),
        }
    }

    #[inline(never)]
    fn k_map_5(&mut self, e: &Expr) -> Result<Ty, Issue> {
        match &e.kind {
            Kind::Map(entries) => {
                let mut fk: Option<Ty> = None;
                let mut fv: Option<Ty> = None;
                for (k, v) in entries {
                    let kt = self.check(k)?;
                    let vt = self.check(v)?;
                    for (slot, t, pos) in [(&mut fk, kt, k.pos), (&mut fv, vt, v.pos)] {
                        match slot {
                            None => *slot = Some(t),
                            Some(f) if f.known() && t.known() && !compatible(f, &t) => {
                                return Err(issue(
                                    pos,
                                    format!(
                                        "expected type '{}' but found '{}'",
                                        f.name(),
                                        t.name()
                                    ),
                                ))
                            }
                            _ => {}
                        }
                    }
                }
                Ok(Ty::Map(
                    Box::new(fk.unwrap_or(Ty::Dyn)),
                    Box::new(fv.unwrap_or(Ty::Dyn)),
                ))
            }
            _ => Ok(Ty::Dyn),
        }
    }

    #[inline(never)]
    fn k_not_6(&mut self, e: &Expr) -> Result<Ty, Issue> {
        match &e.kind {
            Kind::Not(x) | Kind::Neg(x) => {
                let t = self.check(x)?;
                Ok(if matches!(e.kind, Kind::Not(_)) {
                    Ty::Bool
                } else {
                    t
                })
            }
            _ => Ok(Ty::Dyn),
        }
    }

    #[inline(never)]
    fn k_and_7(&mut self, e: &Expr) -> Result<Ty, Issue> {
        match &e.kind {
            Kind::And(a, b) | Kind::Or(a, b) => {
                self.check(a)?;
                self.check(b)?;
                Ok(Ty::Bool)
            }
            _ => Ok(Ty::Dyn),
        }
    }

    #[inline(never)]
    fn k_cond_8(&mut self, e: &Expr) -> Result<Ty, Issue> {
        match &e.kind {
            Kind::Cond(c, a, b) => {
                self.check(c)?;
                let x = self.check(a)?;
                let y = self.check(b)?;
                Ok(if compatible(&x, &y) && x.known() {
                    x
                } else {
                    Ty::Dyn
                })
            }
            _ => Ok(Ty::Dyn),
        }
    }

    #[inline(never)]
    fn k_bin_9(&mut self, e: &Expr) -> Result<Ty, Issue> {
        match &e.kind {
            Kind::Bin(op, a, b) => {
                let x = self.check(a)?;
                let y = self.check(b)?;
                let bad = || {
                    issue(
                        e.pos,
                        format!(
                            "found no matching overload for '_{op}_' applied to '({}, {})'",
                            x.name(),
                            y.name()
                        ),
                    )
                };
                match *op {
                    "==" | "!=" => {
                        if !compatible(&x, &y) {
                            return Err(bad());
                        }
                        Ok(Ty::Bool)
                    }
                    "<" | "<=" | ">" | ">=" => {
                        let num = |t: &Ty| matches!(t, Ty::Int | Ty::Uint | Ty::Double);
                        if x.known() && y.known() && !(num(&x) && num(&y)) && !compatible(&x, &y) {
                            return Err(bad());
                        }
                        Ok(Ty::Bool)
                    }
                    "in" => Ok(Ty::Bool),
                    _ => {
                        if !x.known() || !y.known() {
                            return Ok(Ty::Dyn);
                        }
                        match (&x, &y, *op) {
                            (Ty::Timestamp, Ty::Duration, "+" | "-")
                            | (Ty::Duration, Ty::Timestamp, "+") => Ok(Ty::Timestamp),
                            (Ty::Timestamp, Ty::Timestamp, "-") => Ok(Ty::Duration),
                            (Ty::List(_), Ty::List(_), "+") => Ok(x.clone()),
                            _ if std::mem::discriminant(&x) == std::mem::discriminant(&y)
                                && matches!(
                                    x,
                                    Ty::Int
                                        | Ty::Uint
                                        | Ty::Double
                                        | Ty::String
                                        | Ty::Bytes
                                        | Ty::Duration
                                ) =>
                            {
                                if matches!(x, Ty::String | Ty::Bytes | Ty::Duration)
                                    && *op != "+"
                                    && !(matches!(x, Ty::Duration) && *op == "-")
                                {
                                    return Err(bad());
                                }
                                Ok(x.clone())
                            }
                            _ => Err(bad()),
                        }
                    }
                }
            }
            _ => Ok(Ty::Dyn),
        }
    }

    #[inline(never)]
    fn k_comp_10(&mut self, e: &Expr) -> Result<Ty, Issue> {
        match &e.kind {
            Kind::Comp(m, range, var, body, extra) => {
                let rt = self.check(range)?;
                let vt = match &rt {
                    Ty::List(el) => (**el).clone(),
                    Ty::Map(k, _) => (**k).clone(),
                    Ty::Object(..) => Ty::String,
                    _ => Ty::Dyn,
                };
                self.vars.push((var.clone(), vt.clone()));
                let r = (|| {
                    let bt = self.check(body)?;
                    let et = match extra {
                        Some(x) => Some(self.check(x)?),
                        None => None,
                    };
                    Ok(match m {
                        Macro::All | Macro::Exists | Macro::ExistsOne => Ty::Bool,
                        Macro::Map => Ty::List(Box::new(bt)),
                        Macro::MapFilter => Ty::List(Box::new(et.unwrap_or(Ty::Dyn))),
                        Macro::Filter | Macro::SortBy => Ty::List(Box::new(vt.clone())),
                    })
                })();
                self.vars.pop();
                r
            }
            _ => Ok(Ty::Dyn),
        }
    }

    #[inline(never)]
    fn k_comp2_11(&mut self, e: &Expr) -> Result<Ty, Issue> {
        match &e.kind {
            Kind::Comp2(m, range, v1, v2, args) => {
                let rt = self.check(range)?;
                let (t1, t2) = match &rt {
                    Ty::List(el) => (Ty::Int, (**el).clone()),
                    Ty::Map(k, v) => ((**k).clone(), (**v).clone()),
                    _ => (Ty::Dyn, Ty::Dyn),
                };
                self.vars.push((v1.clone(), t1));
                self.vars.push((v2.clone(), t2));
                let mut last = Ty::Dyn;
                let mut res = Ok(());
                for a in args {
                    match self.check(a) {
                        Ok(t) => last = t,
                        Err(e) => {
                            res = Err(e);
                            break;
                        }
                    }
                }
                self.vars.pop();
                self.vars.pop();
                res?;
                Ok(match m {
                    Macro2::All | Macro2::Exists | Macro2::ExistsOne => Ty::Bool,
                    Macro2::TransformList => Ty::List(Box::new(last)),
                    Macro2::TransformMap => match &rt {
                        Ty::Map(k, _) => Ty::Map(k.clone(), Box::new(last)),
                        _ => Ty::Map(Box::new(Ty::Dyn), Box::new(last)),
                    },
                    Macro2::TransformMapEntry => last,
                })
            }
            _ => Ok(Ty::Dyn),
        }
    }

    #[inline(never)]
    fn k_bind_12(&mut self, e: &Expr) -> Result<Ty, Issue> {
        match &e.kind {
            Kind::Bind(var, init, body) => {
                let t = self.check(init)?;
                self.vars.push((var.clone(), t));
                let r = self.check(body);
                self.vars.pop();
                r
            }
            _ => Ok(Ty::Dyn),
        }
    }

    #[inline(never)]
    fn call(
        &mut self,
        e: &Expr,
        target: Option<&Expr>,
        name: &str,
        args: &[Expr],
    ) -> Result<Ty, Issue> {
        let tt = match target {
            Some(t) => Some(self.check(t)?),
            None => None,
        };
        let mut ats = Vec::new();
        for a in args {
            ats.push(self.check(a)?);
        }
        let str_lit = |i: usize| match args.get(i).map(|a| &a.kind) {
            Some(Kind::Lit(Lit::Str(s))) => Some(s.clone()),
            _ => None,
        };
        match tt {
            None => {
                if !funcs::GLOBALS.contains(&name) {
                    return Err(issue(
                        e.pos,
                        format!("undeclared reference to '{name}' (in container '')"),
                    ));
                }
                match name {
                    "duration" => {
                        if let Some(s) = str_lit(0) {
                            if crate::machinery::cel::eval::parse_go_duration(&s).is_none() {
                                return Err(issue(args[0].pos, "invalid duration argument"));
                            }
                        }
                        Ok(Ty::Duration)
                    }
                    "timestamp" => {
                        let bad = match args.first().map(|a| &a.kind) {
                            Some(Kind::Lit(Lit::Str(s))) => {
                                crate::machinery::cel::eval::parse_rfc3339(s)
                                    .and_then(|t| {
                                        crate::machinery::cel::eval::check_timestamp(t).ok()
                                    })
                                    .is_none()
                            }
                            Some(Kind::Lit(Lit::Int(i))) => {
                                crate::machinery::cel::eval::check_timestamp(
                                    *i as i128 * 1_000_000_000,
                                )
                                .is_err()
                            }
                            _ => false,
                        };
                        if bad {
                            return Err(issue(args[0].pos, "invalid timestamp"));
                        }
                        Ok(Ty::Timestamp)
                    }
                    "matches" => {
                        if let Some(s) = str_lit(1) {
                            if funcs::regex(&s).is_err() {
                                return Err(issue(args[1].pos, "invalid matches argument"));
                            }
                        }
                        Ok(Ty::Bool)
                    }
                    "isIP" | "isCIDR" | "ip.isCanonical" => {
                        if !matches!(ats.first(), Some(Ty::String | Ty::Dyn)) {
                            let a: Vec<String> = ats.iter().map(Ty::name).collect();
                            return Err(issue(
                                e.pos,
                                format!(
                                    "found no matching overload for '{name}' applied to '({})'",
                                    a.join(", ")
                                ),
                            ));
                        }
                        Ok(Ty::Bool)
                    }
                    "size" | "int" => Ok(Ty::Int),
                    "uint" => Ok(Ty::Uint),
                    "double" => Ok(Ty::Double),
                    "string" => {
                        if matches!(ats.first(), Some(Ty::TypeT)) {
                            return Err(issue(
                                e.pos,
                                "found no matching overload for 'string' applied to '(type)'",
                            ));
                        }
                        Ok(Ty::String)
                    }
                    "bool" => Ok(Ty::Bool),
                    "bytes" => Ok(Ty::Bytes),
                    "type" => Ok(Ty::TypeT),
                    "optional.of" | "optional.ofNonZeroValue" => {
                        Ok(Ty::Opt(Box::new(ats.first().cloned().unwrap_or(Ty::Dyn))))
                    }
                    "optional.none" => Ok(Ty::Opt(Box::new(Ty::Dyn))),
                    _ => Ok(Ty::Dyn),
                }
            }
            Some(t) => {
                if !funcs::MEMBERS.contains(&name) {
                    return Err(issue(
                        e.pos,
                        format!("undeclared reference to '{name}' (in container '')"),
                    ));
                }
                let bad = |t: &Ty| {
                    let a: Vec<String> = ats.iter().map(Ty::name).collect();
                    issue(
                        e.pos,
                        format!(
                            "found no matching overload for '{name}' applied to '{}.({})'",
                            t.name(),
                            a.join(", ")
                        ),
                    )
                };
                match name {
                    "matches" | "find" | "findAll" => {
                        if let Some(s) = str_lit(0) {
                            if let Err(err) = funcs::regex(&s) {
                                return Err(if name == "matches" {
                                    issue(args[0].pos, "invalid matches argument")
                                } else {
                                    issue(
                                        usize::MAX,
                                        format!("program instantiation failed: {err}"),
                                    )
                                });
                            }
                        }
                    }
                    "sum" | "min" | "max" | "isSorted" => {
                        if let Ty::List(el) = &t {
                            let ok = match name {
                                "sum" => matches!(
                                    **el,
                                    Ty::Int | Ty::Uint | Ty::Double | Ty::Duration | Ty::Dyn
                                ),
                                _ => !matches!(
                                    **el,
                                    Ty::List(_)
                                        | Ty::Map(..)
                                        | Ty::Object(..)
                                        | Ty::Null
                                        | Ty::Opt(_)
                                ),
                            };
                            if !ok {
                                return Err(bad(&t));
                            }
                            return Ok(if name == "isSorted" {
                                Ty::Bool
                            } else {
                                (**el).clone()
                            });
                        }
                    }
                    _ => {}
                }
                let is_str = matches!(t, Ty::String | Ty::Dyn);
                let res = match name {
                    "size" => Ty::Int,
                    "contains" | "startsWith" | "endsWith" | "matches" if is_str => Ty::Bool,
                    "charAt" | "lowerAscii" | "upperAscii" | "replace" | "substring" | "trim"
                    | "find" | "format"
                        if is_str =>
                    {
                        Ty::String
                    }
                    "indexOf" | "lastIndexOf" => Ty::Int,
                    "split" | "findAll" if is_str => Ty::List(Box::new(Ty::String)),
                    "join" => Ty::String,
                    "hasValue" => Ty::Bool,
                    "value" | "orValue" => match &t {
                        Ty::Opt(x) => (**x).clone(),
                        _ => Ty::Dyn,
                    },
                    "getHours" | "getMinutes" | "getSeconds" | "getMilliseconds"
                    | "getFullYear" | "getMonth" | "getDate" | "getDayOfMonth" | "getDayOfWeek"
                    | "getDayOfYear" => Ty::Int,
                    "contains" | "startsWith" | "endsWith" | "matches" | "charAt"
                    | "lowerAscii" | "upperAscii" | "replace" | "substring" | "trim" | "split"
                    | "find" | "findAll" | "format" => return Err(bad(&t)),
                    _ => Ty::Dyn,
                };
                Ok(res)
            }
        }
    }
}

fn qualified(e: &Expr) -> Option<String> {
    match &e.kind {
        Kind::Ident(n) => Some(n.clone()),
        Kind::Select(op, f, false) => qualified(op).map(|q| format!("{q}.{f}")),
        _ => None,
    }
}

/// Whether the expression references `oldSelf`.
pub fn uses_old_self(e: &Expr) -> bool {
    let mut found = false;
    walk(e, &mut |x| {
        if matches!(&x.kind, Kind::Ident(n) if n == "oldSelf") {
            found = true;
        }
    });
    found
}

fn walk(e: &Expr, f: &mut dyn FnMut(&Expr)) {
    f(e);
    match &e.kind {
        Kind::Lit(_) | Kind::Ident(_) => {}
        Kind::Select(a, _, _) | Kind::Has(a, _) | Kind::Not(a) | Kind::Neg(a) => walk(a, f),
        Kind::Index(a, b, _)
        | Kind::Bin(_, a, b)
        | Kind::And(a, b)
        | Kind::Or(a, b)
        | Kind::Bind(_, a, b) => {
            walk(a, f);
            walk(b, f);
        }
        Kind::Cond(a, b, c) => {
            walk(a, f);
            walk(b, f);
            walk(c, f);
        }
        Kind::Comp(_, a, _, b, c) => {
            walk(a, f);
            walk(b, f);
            if let Some(c) = c {
                walk(c, f);
            }
        }
        Kind::Call(t, _, args) => {
            if let Some(t) = t {
                walk(t, f);
            }
            for a in args {
                walk(a, f);
            }
        }
        Kind::Comp2(_, r, _, _, args) => {
            walk(r, f);
            args.iter().for_each(|x| walk(x, f));
        }
        Kind::List(items) => items.iter().for_each(|x| walk(x, f)),
        Kind::Map(es) => es.iter().for_each(|(k, v)| {
            walk(k, f);
            walk(v, f);
        }),
        Kind::Struct(_, fields) => fields.iter().for_each(|(_, v, _)| walk(v, f)),
    }
}
