//! CEL for admission policies (upstream `k8s.io/apiserver/pkg/admission/plugin/cel` and
//! `.../policy/validating`, `.../policy/mutating`): expressions compiled once against
//! dynamically typed variables (`object`, `oldObject`, `request`, `params`,
//! `namespaceObject`, `variables`, `authorizer`), evaluated on JSON data, with results
//! converted back to JSON (booleans, message strings, apply configurations, JSON
//! patches).

use serde_json::Value as J;

use super::check::{Checker, Ty};
use super::eval::{self, Env, Val, COST_EXCEEDED};
use super::parse::{self, render_issues, Expr};

/// Upstream's per-expression cost limit of admission expressions (`PerCallLimit`).
pub const PER_CALL_LIMIT: i64 = super::PER_CALL_LIMIT;
/// Upstream's cost budget of all expressions of one policy for one request
/// (`RuntimeCELCostBudget`).
pub const RUNTIME_BUDGET: i64 = super::RUNTIME_BUDGET;

/// What a compiled expression must evaluate to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Want {
    /// A bool (validations, match conditions).
    Bool,
    /// A string (`messageExpression`, audit annotation values may also be null).
    String,
    /// Anything (variables, mutations).
    Any,
}

/// One compiled admission expression.
#[derive(Clone, Debug)]
pub struct Program {
    expr: Expr,
}

/// Compile `src` with `vars` declared (as `dyn`); the error is upstream's
/// `compilation failed: ERROR: <input>:1:2: ...` text.
pub fn compile(src: &str, vars: &[&str], want: Want) -> Result<Program, String> {
    let e = parse::parse(src)
        .map_err(|i| format!("compilation failed: {}", render_issues(src, &[i])))?;
    let decl: Vec<(String, Ty)> = vars.iter().map(|v| (v.to_string(), Ty::Dyn)).collect();
    match Checker::new(decl).check(&e) {
        Err(i) if i.pos == usize::MAX => return Err(i.msg),
        Err(i) => return Err(format!("compilation failed: {}", render_issues(src, &[i]))),
        Ok(t) => match (want, t) {
            (Want::Bool, Ty::Bool | Ty::Dyn) => {}
            (Want::String, Ty::String | Ty::Dyn) => {}
            (Want::Any, _) => {}
            (Want::Bool, t) => {
                return Err(format!(
                    "compilation failed: expected type bool but found {}",
                    ty_name(&t)
                ))
            }
            (Want::String, t) => {
                return Err(format!(
                    "compilation failed: expected type string but found {}",
                    ty_name(&t)
                ))
            }
        },
    }
    Ok(Program { expr: e })
}

/// Type-check `src` with `object`/`oldObject` typed by `object_schema` (a resolved
/// structural schema of the kind, a resource root) and `params` by `params_schema`
/// (`dyn` when `None`); the other variables are `dyn`. `None` when it checks, else
/// upstream's `compilation failed: ERROR: <input>:...` text.
pub fn type_check(
    src: &str,
    object_schema: &J,
    params_schema: Option<&J>,
    has_params: bool,
    want: Want,
) -> Option<String> {
    let e = match parse::parse(src) {
        Ok(e) => e,
        Err(i) => return Some(format!("compilation failed: {}", render_issues(src, &[i]))),
    };
    let obj = super::check::schema_ty(object_schema, true);
    let mut vars = vec![
        ("object".to_string(), obj.clone()),
        ("oldObject".to_string(), obj),
        ("request".to_string(), Ty::Dyn),
        ("namespaceObject".to_string(), Ty::Dyn),
        ("variables".to_string(), Ty::Dyn),
        ("authorizer".to_string(), Ty::Dyn),
    ];
    if has_params {
        vars.push((
            "params".to_string(),
            params_schema
                .map(|s| super::check::schema_ty(s, true))
                .unwrap_or(Ty::Dyn),
        ));
    }
    match Checker::new(vars).check(&e) {
        Err(i) if i.pos == usize::MAX => Some(i.msg),
        Err(i) => Some(format!("compilation failed: {}", render_issues(src, &[i]))),
        Ok(t) => match (want, t) {
            (Want::Bool, Ty::Bool | Ty::Dyn)
            | (Want::String, Ty::String | Ty::Dyn)
            | (Want::Any, _) => None,
            (Want::Bool, t) => Some(format!(
                "compilation failed: expected type bool but found {}",
                ty_name(&t)
            )),
            (Want::String, t) => Some(format!(
                "compilation failed: expected type string but found {}",
                ty_name(&t)
            )),
        },
    }
}

thread_local! {
    /// Programs parsed on this thread, by source, variables and result kind.
    static PROGRAMS: std::cell::RefCell<std::collections::HashMap<(String, usize, u8), std::rc::Rc<Program>>> =
        std::cell::RefCell::new(std::collections::HashMap::new());
}

/// Run `f` on the program of `src` (compiled on first use on this thread, kept
/// afterwards; the compiled tree is not `Send`, so each worker thread keeps its own).
pub fn with_program<T>(
    src: &str,
    vars: &'static [&'static str],
    want: Want,
    f: impl FnOnce(&Program) -> Result<T, String>,
) -> Result<T, String> {
    let key = (src.to_string(), vars.as_ptr() as usize, want as u8);
    let cached = PROGRAMS.with(|c| c.borrow().get(&key).cloned());
    let p = match cached {
        Some(p) => p,
        None => {
            let p = std::rc::Rc::new(compile(src, vars, want)?);
            PROGRAMS.with(|c| {
                let mut c = c.borrow_mut();
                if c.len() > 4096 {
                    c.clear();
                }
                c.insert(key, p.clone());
            });
            p
        }
    };
    f(&p)
}

fn ty_name(t: &Ty) -> String {
    format!("{t:?}").to_lowercase()
}

impl Program {
    /// Upstream's check of object constructions (`CheckTypeNamesMatchFieldPathNames`):
    /// an object built for a field must be named after the field's path from the root
    /// (`Object.spec{selector: Object.spec.selector{...}}`); one message per mismatch.
    pub fn object_type_errors(&self) -> Vec<String> {
        let mut errs = Vec::new();
        type_names(&self.expr, None, &mut errs);
        errs
    }
}

fn type_names(e: &Expr, expected: Option<&str>, errs: &mut Vec<String>) {
    use super::parse::Kind;
    match &e.kind {
        Kind::Struct(name, fields) => {
            if let Some(exp) = expected {
                if name != exp {
                    errs.push(format!(
                        "unexpected type name {name:?}, expected {exp:?}, which matches field name path from root Object type"
                    ));
                }
            }
            let base = expected.unwrap_or(name);
            for (f, v, _) in fields {
                type_names(v, Some(&format!("{base}.{f}")), errs);
            }
        }
        Kind::List(items) => items.iter().for_each(|x| type_names(x, expected, errs)),
        Kind::Map(entries) => entries
            .iter()
            .for_each(|(_, v)| type_names(v, expected, errs)),
        Kind::Cond(_, a, b) => {
            type_names(a, expected, errs);
            type_names(b, expected, errs);
        }
        _ => {}
    }
}

/// The variables of one evaluation. Not `Send`: build it, evaluate, drop it, all
/// without awaiting in between.
pub struct Activation {
    vars: Vec<(String, Val)>,
    variables: Vec<(Val, Val)>,
    /// Cost used so far by the evaluations on this activation.
    pub used: i64,
    authorizer: Option<std::rc::Rc<eval::AuthorizerFn>>,
}

impl Default for Activation {
    fn default() -> Self {
        Activation::new()
    }
}

impl Activation {
    /// An activation without variables.
    pub fn new() -> Activation {
        Activation {
            vars: Vec::new(),
            variables: Vec::new(),
            used: 0,
            authorizer: None,
        }
    }

    /// Bind `name` to JSON data (`null` stays `null`).
    pub fn bind_json(&mut self, name: &str, v: &J) {
        self.vars.push((name.to_string(), eval::json_dyn(v)));
    }

    /// Declare the `authorizer` variable answered by `f`, for the user `user` (as
    /// `authorizer`) and `authorizer.requestResource` from `request`.
    pub fn bind_authorizer(&mut self, f: Box<eval::AuthorizerFn>, request_resource: eval::Authz) {
        self.authorizer = Some(std::rc::Rc::from(f));
        self.vars.push((
            "authorizer".into(),
            eval::authorizer_val(Some(request_resource)),
        ));
    }

    fn env(&self, budget: i64) -> Env {
        let mut vars = self.vars.clone();
        vars.push((
            "variables".into(),
            Val::Map(std::rc::Rc::new(self.variables.clone()), true),
        ));
        let mut env = Env::new(vars, budget);
        env.authorizer = self.authorizer.clone();
        env
    }

    /// Add variable `name` with the value `f` computes on this activation (JSON); an
    /// error is kept and raised where the variable is used.
    pub fn add_variable_with(
        &mut self,
        name: &str,
        f: impl FnOnce(&mut Activation) -> Result<J, String>,
    ) {
        let v = match f(self) {
            Ok(v) => eval::json_dyn(&v),
            Err(e) => Val::Err(std::rc::Rc::from(e.as_str())),
        };
        self.variables.push((eval::s(name), v));
    }

    /// Evaluate `p` and convert its result to JSON. Errors are cel-go's texts
    /// (`no such key: x`, `operation cancelled: actual cost limit exceeded`, ...).
    pub fn eval(&mut self, p: &Program) -> Result<J, String> {
        let mut env = self.env(PER_CALL_LIMIT);
        let r = eval::eval(&p.expr, &mut env);
        self.used += env.used;
        match r {
            Ok(Val::Err(e)) => Err(e.to_string()),
            Ok(v) => to_json(&v),
            Err(e) => Err(e),
        }
    }

    /// Whether the cost budget of the request is spent.
    pub fn over_budget(&self) -> bool {
        self.used > RUNTIME_BUDGET
    }
}

/// Whether `e` is the cost-limit error.
pub fn is_cost_error(e: &str) -> bool {
    e == COST_EXCEEDED
}

/// A CEL value as JSON (durations and timestamps as their string forms, bytes base64).
pub fn to_json(v: &Val) -> Result<J, String> {
    Ok(match v {
        Val::Null => J::Null,
        Val::Bool(b) => J::Bool(*b),
        Val::Int(i) => J::from(*i),
        Val::Uint(u) => J::from(*u),
        Val::Double(d) => serde_json::Number::from_f64(*d)
            .map(J::Number)
            .unwrap_or(J::Null),
        Val::Str(s) => J::String(s.to_string()),
        Val::Bytes(b) => J::String(base64(b)),
        Val::List(l, _) => J::Array(l.iter().map(to_json).collect::<Result<_, _>>()?),
        Val::Map(m, _) => {
            let mut out = serde_json::Map::new();
            for (k, x) in m.iter() {
                let key = match k {
                    Val::Str(s) => s.to_string(),
                    Val::Int(i) => i.to_string(),
                    Val::Uint(u) => u.to_string(),
                    Val::Bool(b) => b.to_string(),
                    _ => return Err("unsupported map key type".into()),
                };
                if key.starts_with('\u{0}') {
                    return Err("unsupported type: authorizer".into());
                }
                out.insert(key, to_json(x)?);
            }
            J::Object(out)
        }
        Val::Duration(d) => J::String(eval::fmt_dur(*d)),
        Val::Timestamp(t) => J::String(eval::fmt_ts(*t)),
        Val::Type(t) => J::String(t.to_string()),
        Val::Optional(o) => match o {
            Some(x) => to_json(x)?,
            None => J::Null,
        },
        Val::Err(e) => return Err(e.to_string()),
    })
}

fn base64(b: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for c in b.chunks(3) {
        let n = (c[0] as u32) << 16
            | (*c.get(1).unwrap_or(&0) as u32) << 8
            | *c.get(2).unwrap_or(&0) as u32;
        for i in 0..4 {
            if i <= c.len() {
                out.push(T[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(src: &str, obj: J) -> Result<J, String> {
        let p = compile(
            src,
            &["object", "oldObject", "params", "variables"],
            Want::Any,
        )?;
        let mut a = Activation::new();
        a.bind_json("object", &obj);
        a.bind_json("oldObject", &J::Null);
        a.eval(&p)
    }

    #[test]
    fn dynamic_objects() {
        let d = json!({"spec": {"replicas": 7}, "metadata": {"labels": {"a": "b"}}});
        assert_eq!(
            run("object.spec.replicas <= 5", d.clone()),
            Ok(json!(false))
        );
        assert_eq!(run("has(object.spec.paused)", d.clone()), Ok(json!(false)));
        assert_eq!(run("oldObject == null", d.clone()), Ok(json!(true)));
        assert_eq!(
            run("object.metadata.labels['a'] + '!'", d.clone()),
            Ok(json!("b!"))
        );
        assert_eq!(
            run("object.spec.foo", d),
            Err("no such key: foo".to_string())
        );
    }

    #[test]
    fn object_construction() {
        let d = json!({});
        assert_eq!(
            run("Object{spec: Object.spec{replicas: 3}}", d.clone()),
            Ok(json!({"spec": {"replicas": 3}}))
        );
        assert_eq!(
            run(
                "[JSONPatch{op: 'add', path: '/metadata/labels/' + jsonpatch.escapeKey('a/b~c'), value: 'x'}]",
                d.clone()
            ),
            Ok(json!([{"op": "add", "path": "/metadata/labels/a~1b~0c", "value": "x"}]))
        );
        assert_eq!(
            run("Object{?spec: optional.none(), kind: 'X'}", d),
            Ok(json!({"kind": "X"}))
        );
    }

    #[test]
    fn object_type_names_follow_field_paths() {
        let p = compile(
            "Object{spec: Object.spec{selector: Object.spec.wrong{}, template: Object.spec.template{}}}",
            &[],
            Want::Any,
        )
        .unwrap();
        assert_eq!(
            p.object_type_errors(),
            vec!["unexpected type name \"Object.spec.wrong\", expected \"Object.spec.selector\", which matches field name path from root Object type".to_string()]
        );
        let ok = compile(
            "Object{spec: Object.spec{template: Object.spec.template{spec: Object.spec.template.spec{containers: [Object.spec.template.spec.containers{name: 'a'}]}}}}",
            &[],
            Want::Any,
        )
        .unwrap();
        assert!(ok.object_type_errors().is_empty());
    }

    #[test]
    fn variables_are_lazy_errors() {
        let p = compile("object.spec.missing", &["object"], Want::Any).unwrap();
        let q = compile("variables.ok == 1", &["object", "variables"], Want::Bool).unwrap();
        let r = compile("variables.bad == 1", &["object", "variables"], Want::Bool).unwrap();
        let one = compile("1", &[], Want::Any).unwrap();
        let mut a = Activation::new();
        a.bind_json("object", &json!({"spec": {}}));
        a.add_variable_with("bad", |a| a.eval(&p));
        a.add_variable_with("ok", |a| a.eval(&one));
        assert_eq!(a.eval(&q), Ok(json!(true)));
        assert_eq!(a.eval(&r), Err("no such key: missing".to_string()));
    }

    #[test]
    fn quantities() {
        let d = json!({"spec": {"memory": "1Gi"}});
        assert_eq!(
            run(
                "quantity(object.spec.memory).isGreaterThan(quantity('512Mi'))",
                d.clone()
            ),
            Ok(json!(true))
        );
        assert_eq!(
            run("quantity('1500m').compareTo(quantity('2'))", d.clone()),
            Ok(json!(-1))
        );
        assert_eq!(
            run("quantity('2k').add(3).asInteger()", d.clone()),
            Ok(json!(2003))
        );
        assert_eq!(
            run("quantity('1.5').isInteger()", d.clone()),
            Ok(json!(false))
        );
        assert_eq!(run("isQuantity('12x')", d), Ok(json!(false)));
    }

    #[test]
    fn urls() {
        let d = json!({});
        let u = "url('https://user@example.com:8443/a/b?x=1&x=2&y=z%20w')";
        assert_eq!(
            run(&format!("{u}.getScheme()"), d.clone()),
            Ok(json!("https"))
        );
        assert_eq!(
            run(&format!("{u}.getHost()"), d.clone()),
            Ok(json!("example.com:8443"))
        );
        assert_eq!(
            run(&format!("{u}.getHostname()"), d.clone()),
            Ok(json!("example.com"))
        );
        assert_eq!(run(&format!("{u}.getPort()"), d.clone()), Ok(json!("8443")));
        assert_eq!(
            run(&format!("{u}.getEscapedPath()"), d.clone()),
            Ok(json!("/a/b"))
        );
        assert_eq!(
            run(&format!("{u}.getQuery()"), d.clone()),
            Ok(json!({"x": ["1", "2"], "y": ["z w"]}))
        );
        assert_eq!(
            run("url('https://[::1]:80/').getHostname()", d.clone()),
            Ok(json!("::1"))
        );
        assert_eq!(run("isURL('/just/a/path')", d.clone()), Ok(json!(true)));
        assert_eq!(run("isURL('not a url')", d.clone()), Ok(json!(false)));
        assert_eq!(run("isURL('relative/path')", d), Ok(json!(false)));
    }

    #[test]
    fn authorizer_checks() {
        let p = compile(
            "authorizer.group('apps').resource('deployments').namespace('ns').check('delete').allowed() && authorizer.requestResource.check('create').reason() == 'ok apps/deployments'",
            &["authorizer"],
            Want::Bool,
        )
        .unwrap();
        let mut a = Activation::new();
        a.bind_authorizer(
            Box::new(|c: &eval::Authz, verb: &str| {
                if c.path.is_some() {
                    return Ok(("noOpinion", String::new()));
                }
                let ok = c.group == "apps" && c.resource == "deployments" && !verb.is_empty();
                Ok((
                    if ok { "allow" } else { "deny" },
                    format!("ok {}/{}", c.group, c.resource),
                ))
            }),
            eval::Authz {
                group: "apps".into(),
                resource: "deployments".into(),
                ..Default::default()
            },
        );
        assert_eq!(a.eval(&p), Ok(json!(true)));
        let path = compile(
            "authorizer.path('/metrics').check('get').allowed()",
            &["authorizer"],
            Want::Bool,
        )
        .unwrap();
        assert_eq!(a.eval(&path), Ok(json!(false)));
        // a check costs 350000 (upstream's cost of the library): three exceed the call limit
        let three = compile(
            "[1, 2, 3].all(i, authorizer.path('/x').check('get').errored() == false)",
            &["authorizer"],
            Want::Bool,
        )
        .unwrap();
        assert_eq!(a.eval(&three), Err(COST_EXCEEDED.to_string()));
    }

    #[test]
    fn compile_errors() {
        let e = compile("object.", &["object"], Want::Bool).unwrap_err();
        assert!(
            e.starts_with("compilation failed: ERROR: <input>:1:8"),
            "{e}"
        );
        let e = compile("nope == 1", &["object"], Want::Bool).unwrap_err();
        assert!(e.contains("undeclared reference to 'nope'"), "{e}");
        let e = compile("'a'", &["object"], Want::Bool).unwrap_err();
        assert!(e.contains("expected type bool"), "{e}");
    }
}
