//! CRD validation rules (`x-kubernetes-validations`, CEL) with the behaviour of
//! upstream `apiextensions-apiserver/pkg/apiserver/schema/cel/validation.go`.
//!
//! The CEL implementation is self-contained (`parse`, `check`, `eval`, `funcs`):
//! a recursive-descent parser, a light schema-aware checker and an evaluator
//! whose error strings follow cel-go, because upstream embeds them in the
//! messages it returns. Nothing here panics on malformed schemas, rules or data.
//!
//! Known deviations from upstream: cost is a step count, not cel-go's cost model
//! (per-call limit 1,000,000 and budget 10,000,000 units are kept); the checker
//! reports only the first issue, and syntax-error texts only approximate ANTLR's;
//! parentheses/brackets/calls nest at most ~50 levels (to bound stack use);
//! no cidr/semver/format-`%e` libraries (quantity, url and the authorizer library
//! are there for admission policies, `admission`), ratcheting only looks
//! at the node's own correlated old value (not the nearest correlatable parent),
//! and no "oldSelf on uncorrelatable schema" check.

pub mod admission;
mod check;
mod eval;
mod funcs;
mod ops;
mod parse;
#[cfg(test)]
mod tests;
mod value;

use apimachinery::field::child;
use apimachinery::gofmt::quote as go_quote;
use check::{schema_ty, Checker, Ty};
use eval::{Env, Val, COST_EXCEEDED};
use parse::{render_issues, Expr};
use serde_json::Value as J;

pub use apimachinery::field::Cause;
pub use eval::Authz;

/// Upstream `PerCallLimit` (cost units per rule evaluation).
pub const PER_CALL_LIMIT: i64 = 1_000_000;
/// Upstream `RuntimeCELCostBudget` (cost units per object).
pub const RUNTIME_BUDGET: i64 = 10_000_000;
/// Upstream `MaxEvaluatedMessageExpressionSizeBytes`.
const MAX_MESSAGE_EXPRESSION_BYTES: usize = 5 * 1024;

const INVALID: &str = "FieldValueInvalid";
const FORBIDDEN: &str = "FieldValueForbidden";
const REQUIRED: &str = "FieldValueRequired";
const DUPLICATE: &str = "FieldValueDuplicate";

/// A compiled rule.
struct Compiled {
    expr: Option<Expr>,
    error: Option<String>,
    msg_expr: Option<Expr>,
    uses_old_self: bool,
}

fn rule_str<'a>(r: &'a J, k: &str) -> &'a str {
    r.get(k).and_then(J::as_str).unwrap_or("")
}

fn compile_one(src: &str, vars: &[(String, Ty)], want_string: bool) -> Result<Expr, String> {
    let prefix = if want_string {
        "messageExpression compilation failed: "
    } else {
        "compilation failed: "
    };
    let e = parse::parse(src).map_err(|i| format!("{prefix}{}", render_issues(src, &[i])))?;
    let t = Checker::new(vars.to_vec()).check(&e);
    match t {
        Err(i) if i.pos == usize::MAX => Err(i.msg),
        Err(i) => Err(format!("{prefix}{}", render_issues(src, &[i]))),
        Ok(t) => {
            if want_string && !matches!(t, Ty::String | Ty::Dyn) {
                return Err("messageExpression must evaluate to a string".into());
            }
            if !want_string && !matches!(t, Ty::Bool | Ty::Dyn) {
                return Err("cel expression must evaluate to a bool".into());
            }
            Ok(e)
        }
    }
}

fn compile(rule: &J, node: &J, root: bool) -> Compiled {
    let src = rule_str(rule, "rule");
    let ty = schema_ty(node, root);
    let mut c = Compiled {
        expr: None,
        error: None,
        msg_expr: None,
        uses_old_self: false,
    };
    if src.trim().is_empty() {
        return c;
    }
    let optional = rule.get("optionalOldSelf").and_then(J::as_bool) == Some(true);
    // Upstream compiles with oldSelf declared; only transition rules may use it.
    let old_ty = if optional {
        Ty::Opt(Box::new(ty.clone()))
    } else {
        ty.clone()
    };
    let vars = vec![
        ("self".to_string(), ty.clone()),
        ("oldSelf".to_string(), old_ty),
    ];
    match compile_one(src, &vars, false) {
        Ok(e) => {
            c.uses_old_self = check::uses_old_self(&e);
            c.expr = Some(e);
        }
        Err(m) => c.error = Some(m),
    }
    let me = rule_str(rule, "messageExpression");
    if !me.trim().is_empty() {
        if let Ok(e) = compile_one(me, &vars, true) {
            c.msg_expr = Some(e);
        }
    }
    c
}

fn render_value(v: &J) -> String {
    match v {
        J::String(s) => go_quote(s),
        other => apimachinery::gofmt::json(other),
    }
}

struct State {
    budget: i64,
    errs: Vec<Cause>,
    stop: bool,
}

fn shown(p: &str) -> String {
    if p.is_empty() {
        "<nil>".to_string()
    } else {
        p.to_string()
    }
}

/// Evaluates every `x-kubernetes-validations` rule of `schema` (a CRD version's
/// `openAPIV3Schema`) against `obj`; `old` is the stored object on update.
///
/// Transition rules (using `oldSelf`) only run where a correlatable old value
/// exists, unless the rule sets `optionalOldSelf: true`, in which case `oldSelf`
/// is an optional value. Causes are returned in evaluation order.
pub fn validate(schema: &J, obj: &J, old: Option<&J>) -> Vec<Cause> {
    let mut st = State {
        budget: RUNTIME_BUDGET,
        errs: Vec::new(),
        stop: false,
    };
    walk(schema, schema, obj, old, "", true, &mut st, 0);
    st.errs
}

#[allow(clippy::too_many_arguments)]
fn walk(
    vs: &J,
    ns: &J,
    v: &J,
    old: Option<&J>,
    path: &str,
    root: bool,
    st: &mut State,
    depth: usize,
) {
    if v.is_null() || st.stop || depth > 256 || !vs.is_object() || !ns.is_object() {
        return;
    }
    let old = old.filter(|o| !o.is_null());
    node_rules(vs, ns, v, old, path, root, st);
    if st.stop {
        return;
    }
    if let Some(all) = vs.get("allOf").and_then(J::as_array) {
        for a in all {
            walk(a, ns, v, old, path, root, st, depth + 1);
            if st.stop {
                return;
            }
        }
    }
    match v {
        J::Array(items) => {
            let (Some(vi), Some(ni)) = (vs.get("items"), ns.get("items")) else {
                return;
            };
            let map_keys: Option<Vec<&str>> =
                if ns.get("x-kubernetes-list-type").and_then(J::as_str) == Some("map") {
                    ns.get("x-kubernetes-list-map-keys")
                        .and_then(J::as_array)
                        .map(|a| a.iter().filter_map(J::as_str).collect())
                } else {
                    None
                };
            let embedded = ni
                .get("x-kubernetes-embedded-resource")
                .and_then(J::as_bool)
                == Some(true);
            for (i, it) in items.iter().enumerate() {
                let o = match (&map_keys, old.and_then(J::as_array)) {
                    (Some(keys), Some(olds)) => olds
                        .iter()
                        .find(|o| keys.iter().all(|k| o.get(k) == it.get(k))),
                    _ => None,
                };
                walk(
                    vi,
                    ni,
                    it,
                    o,
                    &format!("{path}[{i}]"),
                    embedded,
                    st,
                    depth + 1,
                );
                if st.stop {
                    return;
                }
            }
        }
        J::Object(m) => {
            if let (Some(va), Some(na)) = (
                vs.get("additionalProperties").filter(|a| a.is_object()),
                ns.get("additionalProperties").filter(|a| a.is_object()),
            ) {
                let embedded = na
                    .get("x-kubernetes-embedded-resource")
                    .and_then(J::as_bool)
                    == Some(true);
                for (k, x) in m {
                    let o = old.and_then(|o| o.get(k));
                    walk(
                        va,
                        na,
                        x,
                        o,
                        &format!("{}[{k}]", path),
                        embedded,
                        st,
                        depth + 1,
                    );
                    if st.stop {
                        return;
                    }
                }
            }
            if let (Some(vp), Some(np)) = (
                vs.get("properties").and_then(J::as_object),
                ns.get("properties").and_then(J::as_object),
            ) {
                for (k, x) in m {
                    let (Some(vsub), Some(nsub)) = (vp.get(k), np.get(k)) else {
                        continue;
                    };
                    let embedded = nsub
                        .get("x-kubernetes-embedded-resource")
                        .and_then(J::as_bool)
                        == Some(true);
                    let o = old.and_then(|o| o.get(k));
                    walk(vsub, nsub, x, o, &child(path, k), embedded, st, depth + 1);
                    if st.stop {
                        return;
                    }
                }
            }
        }
        _ => {}
    }
}

fn invalid_typed(path: &str, ns: &J, msg: String) -> Cause {
    Cause {
        reason: INVALID.into(),
        message: format!("Invalid value: {}: {msg}", go_quote(eval::stype(ns))),
        field: shown(path),
    }
}

fn node_rules(vs: &J, ns: &J, v: &J, old: Option<&J>, path: &str, root: bool, st: &mut State) {
    let Some(rules) = vs.get("x-kubernetes-validations").and_then(J::as_array) else {
        return;
    };
    if rules.is_empty() {
        return;
    }
    if st.budget <= 0 {
        st.errs.push(invalid_typed(path, ns, "validation failed due to running out of cost budget, no further validation rules will be run".into()));
        st.stop = true;
        return;
    }
    let self_val = eval::to_val(v, ns, root);
    let old_val = old.map(|o| eval::to_val(o, ns, root));
    for rule in rules {
        let c = compile(rule, ns, root);
        let rule_text = rule_str(rule, "rule");
        let message = rule_str(rule, "message");
        let rule_err = if message.is_empty() {
            rule_text.trim()
        } else {
            message.trim()
        };
        if let Some(e) = &c.error {
            st.errs
                .push(invalid_typed(path, ns, format!("rule compile error: {e}")));
            continue;
        }
        let Some(expr) = &c.expr else { continue };
        let optional = rule.get("optionalOldSelf").and_then(J::as_bool) == Some(true);
        if c.uses_old_self && old_val.is_none() && !optional {
            continue;
        }
        let mut vars = vec![("self".to_string(), self_val.clone())];
        if optional {
            vars.push((
                "oldSelf".to_string(),
                Val::Optional(old_val.clone().map(Box::new)),
            ));
        } else if let Some(o) = &old_val {
            vars.push(("oldSelf".to_string(), o.clone()));
        }
        let mut env = Env::new(vars.clone(), PER_CALL_LIMIT);
        let r = eval::eval(expr, &mut env);
        st.budget -= env.used;
        if st.budget < 0 {
            st.errs.push(invalid_typed(path, ns, "validation failed due to running out of cost budget, no further validation rules will be run".into()));
            st.stop = true;
            return;
        }
        let ok = match r {
            Ok(Val::Bool(true)) => continue,
            Ok(Val::Bool(false)) => false,
            Ok(Val::Err(e)) => {
                st.errs.push(invalid_typed(
                    path,
                    ns,
                    format!("{e} evaluating rule: {rule_err}"),
                ));
                continue;
            }
            Ok(_) => {
                st.errs.push(invalid_typed(path, ns, format!("'no such overload': call arguments did not match a supported operator, function or macro signature for rule: {rule_err}")));
                continue;
            }
            Err(e) if e == COST_EXCEEDED => {
                st.errs.push(invalid_typed(path, ns, format!("'{e}': no further validation rules will be run due to call cost exceeds limit for rule: {rule_err}")));
                st.stop = true;
                return;
            }
            Err(e) if e.starts_with("no such overload") => {
                st.errs.push(invalid_typed(path, ns, format!("'{e}': call arguments did not match a supported operator, function or macro signature for rule: {rule_err}")));
                continue;
            }
            Err(e) => {
                st.errs.push(invalid_typed(
                    path,
                    ns,
                    format!("{e} evaluating rule: {rule_err}"),
                ));
                continue;
            }
        };
        debug_assert!(!ok);
        let mut fpath = path.to_string();
        let fp = rule_str(rule, "fieldPath");
        if !fp.trim().is_empty() {
            if let Some(n) = normalize_field_path(fp.trim(), ns) {
                fpath = child(path, &n);
            }
        }
        let mut detail: Option<String> = None;
        if let Some(me) = &c.msg_expr {
            let mut env = Env::new(vars.clone(), PER_CALL_LIMIT);
            let r = eval::eval(me, &mut env);
            if r.as_ref().err().map(String::as_str) == Some(COST_EXCEEDED) {
                let src = rule_str(rule, "messageExpression");
                st.errs.push(invalid_typed(&fpath, ns, format!("no further validation rules will be run due to call cost exceeds limit for messageExpression: {}", go_quote(src))));
                st.stop = true;
                return;
            }
            st.budget -= env.used;
            if st.budget < 0 {
                st.errs.push(invalid_typed(&fpath, ns, "messageExpression evaluation failed due to running out of cost budget, no further validation rules will be run".into()));
                st.stop = true;
                return;
            }
            if let Ok(Val::Str(s)) = r {
                let t = s.trim();
                if !t.is_empty() && t.len() <= MAX_MESSAGE_EXPRESSION_BYTES && !t.contains('\n') {
                    detail = Some(t.to_string());
                }
            }
        }
        let detail = detail.unwrap_or_else(|| {
            if message.is_empty() {
                format!("failed rule: {}", rule_text.trim())
            } else {
                message.trim().to_string()
            }
        });
        let omit = matches!(eval::stype(ns), "object" | "array");
        let value = if omit { None } else { Some(render_value(v)) };
        // CRDValidationRatcheting: failures of rules that do not use oldSelf on
        // values unchanged from the stored object are only warnings upstream.
        if !c.uses_old_self && old == Some(v) {
            continue;
        }
        let cause = match rule_str(rule, "reason") {
            "FieldValueForbidden" => Cause {
                reason: FORBIDDEN.into(),
                message: format!("Forbidden: {detail}"),
                field: shown(&fpath),
            },
            "FieldValueRequired" => Cause {
                reason: REQUIRED.into(),
                message: format!("Required value: {detail}"),
                field: shown(&fpath),
            },
            "FieldValueDuplicate" => Cause {
                reason: DUPLICATE.into(),
                message: match value {
                    Some(v) => format!("Duplicate value: {v}"),
                    None => "Duplicate value".to_string(),
                },
                field: shown(&fpath),
            },
            _ => Cause {
                reason: INVALID.into(),
                message: match value {
                    Some(v) => format!("Invalid value: {v}: {detail}"),
                    None => format!("Invalid value: {detail}"),
                },
                field: shown(&fpath),
            },
        };
        st.errs.push(cause);
    }
}

/// Validates a rule's `fieldPath` against the node schema (upstream
/// `ValidFieldPath`) and returns its normalized `field.Path` rendering.
pub fn normalize_field_path(fp: &str, schema: &J) -> Option<String> {
    let mut out = String::new();
    let mut s = schema;
    let b = fp.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'.' => {
                let start = i + 1;
                let mut j = start;
                while j < b.len() && b[j] != b'.' && b[j] != b'[' {
                    j += 1;
                }
                let name = &fp[start..j];
                if name.is_empty() {
                    return None;
                }
                if let Some(p) = s.get("properties").and_then(J::as_object) {
                    s = p.get(name)?;
                    if !out.is_empty() {
                        out.push('.');
                    }
                    out.push_str(name);
                } else if let Some(ap) = s.get("additionalProperties").filter(|a| a.is_object()) {
                    s = ap;
                    out.push_str(&format!("[{name}]"));
                } else {
                    return None;
                }
                i = j;
            }
            b'[' => {
                if b.get(i + 1) != Some(&b'\'') {
                    return None;
                }
                let mut j = i + 2;
                let mut key = String::new();
                while j < b.len() && b[j] != b'\'' {
                    if b[j] == b'\\' {
                        let c = *b.get(j + 1)?;
                        key.push(match c {
                            b'n' => '\n',
                            b't' => '\t',
                            b'\'' => '\'',
                            b'\\' => '\\',
                            _ => return None,
                        });
                        j += 2;
                        continue;
                    }
                    let ch = fp[j..].chars().next()?;
                    key.push(ch);
                    j += ch.len_utf8();
                }
                if b.get(j + 1) != Some(&b']') {
                    return None;
                }
                if let Some(p) = s.get("properties").and_then(J::as_object) {
                    s = p.get(&key)?;
                    if !out.is_empty() {
                        out.push('.');
                    }
                    out.push_str(&key);
                } else if let Some(ap) = s.get("additionalProperties").filter(|a| a.is_object()) {
                    s = ap;
                    out.push_str(&format!("[{key}]"));
                } else {
                    return None;
                }
                i = j + 2;
            }
            _ => return None,
        }
    }
    Some(out)
}

/// Compile-checks the rules of a CRD schema: one cause per rule (or
/// `messageExpression`) that does not compile, at
/// `{path}...x-kubernetes-validations[j].rule`, shaped like upstream's
/// `field.Invalid(path, rule, detail)` with the rule rendered as JSON.
pub fn check_rules(schema: &J, path: &str) -> Vec<Cause> {
    let mut out = Vec::new();
    check_node(schema, schema, path, true, &mut out, 0);
    out
}

fn rule_json(rule: &J) -> String {
    let o = serde_json::json!({
        "Rule": rule_str(rule, "rule"),
        "Message": rule_str(rule, "message"),
        "MessageExpression": rule_str(rule, "messageExpression"),
        "Reason": rule.get("reason").filter(|r| r.is_string()),
        "FieldPath": rule_str(rule, "fieldPath"),
        "OptionalOldSelf": rule.get("optionalOldSelf").filter(|r| r.is_boolean()),
    });
    apimachinery::gofmt::json_ordered(&o)
}

fn check_node(vs: &J, ns: &J, path: &str, root: bool, out: &mut Vec<Cause>, depth: usize) {
    if depth > 256 || !vs.is_object() {
        return;
    }
    if let Some(rules) = vs.get("x-kubernetes-validations").and_then(J::as_array) {
        for (j, rule) in rules.iter().enumerate() {
            let c = compile(rule, ns, root);
            let rp = format!("{path}.x-kubernetes-validations[{j}]");
            if let Some(e) = c.error {
                out.push(Cause {
                    reason: INVALID.into(),
                    message: format!("Invalid value: {}: {e}", rule_json(rule)),
                    field: format!("{rp}.rule"),
                });
            }
            if c.expr.is_some() && !c.uses_old_self {
                if let Some(b) = rule.get("optionalOldSelf").and_then(J::as_bool) {
                    out.push(Cause {
                        reason: INVALID.into(),
                        message: format!(
                            "Invalid value: {b}: may not be set if oldSelf is not used in rule"
                        ),
                        field: format!("{rp}.optionalOldSelf"),
                    });
                }
            }
            let me = rule_str(rule, "messageExpression");
            if !me.trim().is_empty() && c.msg_expr.is_none() {
                let ty = schema_ty(ns, root);
                let vars = vec![
                    ("self".to_string(), ty.clone()),
                    ("oldSelf".to_string(), ty),
                ];
                if let Err(e) = compile_one(me, &vars, true) {
                    out.push(Cause {
                        reason: INVALID.into(),
                        message: format!("Invalid value: {}: {e}", rule_json(rule)),
                        field: format!("{rp}.messageExpression"),
                    });
                }
            }
        }
    }
    if let Some(all) = vs.get("allOf").and_then(J::as_array) {
        for (i, a) in all.iter().enumerate() {
            check_node(a, ns, &format!("{path}.allOf[{i}]"), root, out, depth + 1);
        }
    }
    if let Some(props) = vs.get("properties").and_then(J::as_object) {
        for (k, p) in props {
            let nsub = ns.get("properties").and_then(|x| x.get(k)).unwrap_or(p);
            let emb = nsub
                .get("x-kubernetes-embedded-resource")
                .and_then(J::as_bool)
                == Some(true);
            check_node(
                p,
                nsub,
                &format!("{path}.properties[{k}]"),
                emb,
                out,
                depth + 1,
            );
        }
    }
    if let Some(it) = vs.get("items").filter(|x| x.is_object()) {
        let emb = it
            .get("x-kubernetes-embedded-resource")
            .and_then(J::as_bool)
            == Some(true);
        check_node(
            it,
            ns.get("items").unwrap_or(it),
            &format!("{path}.items"),
            emb,
            out,
            depth + 1,
        );
    }
    if let Some(ap) = vs.get("additionalProperties").filter(|x| x.is_object()) {
        let emb = ap
            .get("x-kubernetes-embedded-resource")
            .and_then(J::as_bool)
            == Some(true);
        check_node(
            ap,
            ns.get("additionalProperties").unwrap_or(ap),
            &format!("{path}.additionalProperties"),
            emb,
            out,
            depth + 1,
        );
    }
}

/// The compile error of a CEL expression another API validates at write time (webhook
/// match conditions, DRA device selectors): `compilation failed: ERROR: <input>:…` as
/// cel-go renders a syntax error, `None` when it parses. Only the syntax is checked.
pub fn syntax_error(src: &str) -> Option<String> {
    parse::parse(src)
        .err()
        .map(|i| format!("compilation failed: {}", render_issues(src, &[i])))
}
