//! The ValidatingAdmissionPolicy plugin (upstream `.../policy/validating`: `plugin.go`,
//! `dispatcher.go`, `validator.go`).

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use serde_json::{json, Value};

use super::{forbidden, reason_code, reason_static, Common, Ctx, Expr, Server, VARS};
use crate::admission::{Attributes, BoxFuture, Outcome, Plugin};
use crate::machinery::cel::admission::Want;
use apimachinery::status::{ApiError, ApiResult, Cause};

/// Upstream `MaxEvaluatedMessageExpressionSizeBytes`.
const MAX_MESSAGE_BYTES: usize = 5 * 1024;
/// Upstream `maxAuditAnnotationValueLength`.
const MAX_AUDIT_VALUE: usize = 10 * 1024;

/// One `validations[]` entry.
#[derive(Clone, Debug)]
struct Validation {
    expr: Expr,
    message: String,
    message_expr: Option<Expr>,
    reason: Option<String>,
}

/// A compiled ValidatingAdmissionPolicy.
#[derive(Clone, Debug)]
struct Policy {
    common: Common,
    validations: Vec<Validation>,
    audit_annotations: Vec<(String, Expr)>,
}

impl super::Compiled for Policy {
    fn name(&self) -> &str {
        &self.common.name
    }

    fn from_json(p: &Value) -> Policy {
        let spec = p.get("spec").cloned().unwrap_or(Value::Null);
        let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        Policy {
            common: Common::from_json(p),
            validations: spec
                .get("validations")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .map(|v| Validation {
                            expr: Expr::new(&s(v, "expression"), Want::Bool, VARS),
                            message: s(v, "message"),
                            message_expr: v
                                .get("messageExpression")
                                .and_then(Value::as_str)
                                .filter(|m| !m.is_empty())
                                .map(|m| Expr::new(m, Want::String, VARS)),
                            reason: v.get("reason").and_then(Value::as_str).map(str::to_string),
                        })
                        .collect()
                })
                .unwrap_or_default(),
            audit_annotations: spec
                .get("auditAnnotations")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .map(|v| {
                            (
                                s(v, "key"),
                                Expr::new(&s(v, "valueExpression"), Want::Any, VARS),
                            )
                        })
                        .collect()
                })
                .unwrap_or_default(),
        }
    }
}

/// The compiled policies with their bindings.
type State = super::View<Policy>;

/// The ValidatingAdmissionPolicy admission plugin.
pub struct ValidatingPolicies {
    server: Arc<Server>,
    state: RwLock<Arc<State>>,
}

impl ValidatingPolicies {
    /// The plugin over the server's stored policies and bindings. Register it in the
    /// admission chain where it belongs in upstream's order.
    pub fn new(server: Arc<Server>) -> Arc<ValidatingPolicies> {
        Arc::new(ValidatingPolicies {
            server,
            state: RwLock::new(Arc::new(super::View::default())),
        })
    }

    /// The compiled view of the current tables (compiled again when either changed).
    fn state(&self) -> Arc<State> {
        super::view(
            &self.server,
            &self.state,
            "validatingadmissionpolicies",
            "validatingadmissionpolicybindings",
        )
    }
}

/// A decision of one validation (upstream `PolicyDecision`).
struct Decision {
    deny: bool,
    message: String,
    reason: Option<String>,
}

/// What one request's evaluation found.
#[derive(Default)]
struct Found {
    /// (policy, binding, decision) denied by a binding with the `Deny` action.
    denied: Vec<(String, String, Decision)>,
    warnings: Vec<String>,
    audit_failures: Vec<Value>,
    annotations: BTreeMap<String, Vec<String>>,
}

impl Plugin for ValidatingPolicies {
    fn name(&self) -> &'static str {
        "ValidatingAdmissionPolicy"
    }

    fn handles(&self, attrs: &Attributes) -> bool {
        if super::matching::exempt(attrs) {
            return false;
        }
        self.state()
            .hooks
            .iter()
            .any(|(p, _)| p.common.matcher.matches_rules(attrs))
    }

    fn validate<'a>(
        &'a self,
        attrs: &'a Attributes,
        obj: Option<&'a Value>,
        out: &'a mut Outcome,
    ) -> BoxFuture<'a, ApiResult<()>> {
        Box::pin(async move {
            let state = self.state();
            let api = &self.server;
            evaluate(api, &state, attrs, obj, out)
        })
    }
}

fn evaluate(
    api: &Server,
    state: &State,
    attrs: &Attributes,
    obj: Option<&Value>,
    out: &mut Outcome,
) -> ApiResult<()> {
    let ctx = Ctx::new(api, attrs, obj)?;
    let request = ctx.request();
    let ns_obj = ctx.namespace_object();
    let mut found = Found::default();
    for (policy, bindings) in &state.hooks {
        let c = &policy.common;
        if !ctx.matches(&c.matcher) {
            continue;
        }
        let mut annotations: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for b in bindings {
            if let Some(m) = &b.matcher {
                if !ctx.matches(m) {
                    continue;
                }
            }
            let params = match ctx.params(c.param_kind.as_ref(), b.param_ref.as_ref()) {
                Ok(p) => p,
                Err(e) => {
                    if c.fail {
                        found.denied.push((
                            c.name.clone(),
                            b.name.clone(),
                            Decision {
                                deny: true,
                                message: format!("failed to configure binding: {e}"),
                                reason: None,
                            },
                        ));
                    }
                    continue;
                }
            };
            for param in &params {
                let (decisions, notes) =
                    validate_one(&ctx, policy, &request, &ns_obj, param.as_ref());
                for (i, d) in decisions.into_iter().enumerate() {
                    if !d.deny {
                        continue;
                    }
                    for action in &b.actions {
                        match action.as_str() {
                            "Deny" => found.denied.push((
                                c.name.clone(),
                                b.name.clone(),
                                Decision {
                                    deny: true,
                                    message: d.message.clone(),
                                    reason: d.reason.clone(),
                                },
                            )),
                            "Warn" => found.warnings.push(format!(
                                "Validation failed for ValidatingAdmissionPolicy '{}' with binding '{}': {}",
                                c.name, b.name, d.message
                            )),
                            "Audit" => found.audit_failures.push(json!({
                                "message": d.message,
                                "policy": c.name,
                                "binding": b.name,
                                "expressionIndex": i,
                                "validationActions": b.actions,
                            })),
                            _ => {}
                        }
                    }
                }
                for note in notes {
                    match note {
                        Ok((k, v)) => {
                            let vs = annotations.entry(k).or_default();
                            if !vs.contains(&v) {
                                vs.push(v);
                            }
                        }
                        Err(e) => found.denied.push((
                            c.name.clone(),
                            b.name.clone(),
                            Decision {
                                deny: true,
                                message: e,
                                reason: None,
                            },
                        )),
                    }
                }
            }
        }
        for (k, vs) in annotations {
            found.annotations.insert(format!("{}/{k}", c.name), vs);
        }
    }
    for (k, vs) in found.annotations {
        out.audit_annotations.insert(k, vs.join(", "));
    }
    if !found.audit_failures.is_empty() {
        found.audit_failures.truncate(50);
        out.audit_annotations.insert(
            "validation.policy.admission.k8s.io/validation_failure".into(),
            Value::Array(found.audit_failures).to_string(),
        );
    }
    out.warnings.append(&mut found.warnings);
    if let Some((policy, binding, d)) = found.denied.into_iter().next() {
        let message = format!(
            "ValidatingAdmissionPolicy '{policy}' with binding '{binding}' denied request: {}",
            d.message
        );
        let mut e: ApiError = forbidden(attrs, obj, &message);
        let reason = d.reason.as_deref().unwrap_or("Invalid");
        e.reason = reason_static(reason);
        e.code = reason_code(reason);
        e.causes.push(Cause {
            reason: "".into(),
            message,
            field: String::new(),
        });
        return Err(e);
    }
    Ok(())
}

type Note = Result<(String, String), String>;

/// Evaluate one policy for one binding and param (upstream `validator.Validate`): the
/// decisions of its validations and its audit annotations.
fn validate_one(
    ctx: &Ctx<'_>,
    policy: &Policy,
    request: &Value,
    ns_obj: &Value,
    param: Option<&Value>,
) -> (Vec<Decision>, Vec<Note>) {
    let c = &policy.common;
    let on_error = |message: String| Decision {
        deny: c.fail,
        message,
        reason: None,
    };
    let mut act = ctx.activation(request, ns_obj, param);
    for (name, e) in &c.variables {
        act.add_variable_with(name, |a| e.eval(a));
    }
    for (_, cond) in &c.match_conditions {
        match cond.eval(&mut act) {
            Ok(Value::Bool(true)) => {}
            Ok(Value::Bool(false)) => return (Vec::new(), Vec::new()),
            Ok(_) => return (vec![on_error("no such overload".into())], Vec::new()),
            Err(e) => return (vec![on_error(e)], Vec::new()),
        }
    }
    let mut decisions = Vec::new();
    for v in &policy.validations {
        let d = match v.expr.eval(&mut act) {
            Err(e) => on_error(e),
            Ok(Value::Bool(true)) => Decision {
                deny: false,
                message: String::new(),
                reason: None,
            },
            Ok(Value::Bool(false)) => {
                let mut message = String::new();
                if let Some(me) = &v.message_expr {
                    if let Ok(Value::String(m)) = me.eval(&mut act) {
                        let m = m.trim();
                        if m.len() <= MAX_MESSAGE_BYTES && !m.contains('\n') {
                            message = m.to_string();
                        }
                    }
                }
                if message.is_empty() && !v.message.trim().is_empty() {
                    message = v.message.trim().to_string();
                }
                if message.is_empty() {
                    message = format!("failed expression: {}", v.expr.src.trim());
                }
                Decision {
                    deny: true,
                    message,
                    reason: Some(v.reason.clone().unwrap_or_else(|| "Invalid".into())),
                }
            }
            Ok(other) => on_error(format!(
                "expression '{}' resulted in error: no such overload (got {other})",
                v.expr.src
            )),
        };
        decisions.push(d);
    }
    let mut notes = Vec::new();
    for (key, e) in &policy.audit_annotations {
        match e.eval(&mut act) {
            Ok(Value::String(s)) => {
                let s = s.trim();
                if !s.is_empty() {
                    let mut s = s.to_string();
                    if s.len() > MAX_AUDIT_VALUE {
                        let mut cut = MAX_AUDIT_VALUE;
                        while !s.is_char_boundary(cut) {
                            cut -= 1;
                        }
                        s.truncate(cut);
                    }
                    notes.push(Ok((key.clone(), s)));
                }
            }
            Ok(Value::Null) => {}
            Ok(_) => {
                if c.fail {
                    notes.push(Err(format!(
                        "valueExpression '{}' resulted in unsupported return type: expected string or null",
                        e.src
                    )));
                }
            }
            Err(err) => {
                if c.fail {
                    notes.push(Err(err));
                }
            }
        }
    }
    (decisions, notes)
}
