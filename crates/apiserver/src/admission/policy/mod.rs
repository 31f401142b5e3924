//! Admission policies: ValidatingAdmissionPolicy and MutatingAdmissionPolicy with their
//! bindings (upstream `staging/src/k8s.io/apiserver/pkg/admission/plugin/policy/`:
//! `generic` (policy + binding dispatch, params), `matching`, `validating`, `mutating`).
//!
//! Each plugin keeps a compiled view of its two tables (policies, bindings), rebuilt
//! when either table changed (the store's tables are persistent maps: a change is a
//! new root, found in O(1)), so that [`Plugin::handles`] is a look at the resource
//! rules. Expressions are parsed and checked when a table changes
//! (a compile error is the expression's evaluation error, as upstream); evaluation
//! reparses them once per worker thread and source (`machinery::cel::admission`).
//!
//! For one request, every policy whose `matchConstraints` match is evaluated once per
//! matching binding and per param the binding's `paramRef` selects (ConfigMaps, custom
//! resources, any stored kind), with the CEL variables `object`, `oldObject`,
//! `request` (the AdmissionRequest), `params`, `namespaceObject`, `variables` and
//! `authorizer` (the server's authorizer for the requesting user).
//!
//! [`Plugin::handles`]: crate::admission::Plugin::handles

pub mod matching;
mod mutating;
pub mod typecheck;
mod validating;

pub use mutating::MutatingPolicies;
pub use validating::ValidatingPolicies;

use std::sync::Arc;

use serde_json::{json, Value};

use crate::admission::Attributes;
use crate::machinery::cel::admission::{self as cel, Activation, Want};
use crate::registry::catalog::{Catalog, ResourceDef};
use crate::storage::store::object_key;
use crate::storage::store::{Store, Table};
use apimachinery::selector::LabelSelector;
use apimachinery::status::ApiError;
use matching::Matcher;

/// An expression with its compile error, if any (checked when its table changed).
#[derive(Clone, Debug)]
pub(crate) struct Expr {
    /// The source.
    pub src: String,
    /// The compile error (`compilation failed: ...`).
    pub error: Option<String>,
    want: Want,
    vars: &'static [&'static str],
}

/// The variables of validation expressions (upstream's `validating` compiler).
pub(crate) const VARS: &[&str] = &[
    "object",
    "oldObject",
    "request",
    "params",
    "namespaceObject",
    "variables",
    "authorizer",
];

impl Expr {
    pub(crate) fn new(src: &str, want: Want, vars: &'static [&'static str]) -> Expr {
        let error = cel::compile(src, vars, want).err();
        Expr {
            src: src.to_string(),
            error,
            want,
            vars,
        }
    }

    /// Evaluate on `act`; errors are upstream's details (`compilation error: ...`,
    /// `expression '...' resulted in error: ...`, the cost budget message).
    pub(crate) fn eval(&self, act: &mut Activation) -> Result<Value, String> {
        if let Some(e) = &self.error {
            return Err(format!("compilation error: {e}"));
        }
        if act.over_budget() {
            return Err(BUDGET.into());
        }
        let r = cel::with_program(&self.src, self.vars, self.want, |p| act.eval(p));
        match r {
            Err(e) if cel::is_cost_error(&e) => Err(BUDGET.into()),
            Err(e) => Err(format!("expression '{}' resulted in error: {e}", self.src)),
            Ok(v) if act.over_budget() => {
                let _ = v;
                Err(BUDGET.into())
            }
            Ok(v) => Ok(v),
        }
    }
}

impl Expr {
    /// Evaluate an apply configuration: first upstream's check that nested object
    /// constructions are named after their field paths (`type mismatch: ...`).
    pub(crate) fn eval_apply_configuration(&self, act: &mut Activation) -> Result<Value, String> {
        if self.error.is_none() {
            let errs = cel::with_program(&self.src, self.vars, self.want, |p| {
                Ok(p.object_type_errors())
            })
            .unwrap_or_default();
            if !errs.is_empty() {
                return Err(format!("type mismatch: {}", errs.join("\n")));
            }
        }
        self.eval(act)
    }
}

const BUDGET: &str =
    "validation failed due to running out of cost budget, no further validation rules will be run";

fn str_at<'a>(v: &'a Value, p: &str) -> &'a str {
    v.pointer(p).and_then(Value::as_str).unwrap_or("")
}

/// The parts both policy kinds share.
#[derive(Clone, Debug)]
pub(crate) struct Common {
    pub name: String,
    /// `paramKind` as (apiVersion, kind).
    pub param_kind: Option<(String, String)>,
    pub matcher: Matcher,
    /// `failurePolicy: Fail` (the default).
    pub fail: bool,
    pub match_conditions: Vec<(String, Expr)>,
    pub variables: Vec<(String, Expr)>,
}

impl Common {
    pub(crate) fn from_json(p: &Value) -> Common {
        let spec = p.get("spec").cloned().unwrap_or(Value::Null);
        let named = |k: &str, field: &str, want: Want| -> Vec<(String, Expr)> {
            spec.get(k)
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .map(|c| {
                            (
                                str_at(c, "/name").to_string(),
                                Expr::new(str_at(c, field), want, VARS),
                            )
                        })
                        .collect()
                })
                .unwrap_or_default()
        };
        Common {
            name: str_at(p, "/metadata/name").to_string(),
            param_kind: spec.get("paramKind").filter(|k| k.is_object()).map(|k| {
                (
                    str_at(k, "/apiVersion").to_string(),
                    str_at(k, "/kind").to_string(),
                )
            }),
            matcher: Matcher::from_json(spec.get("matchConstraints")),
            fail: spec.get("failurePolicy").and_then(Value::as_str) != Some("Ignore"),
            match_conditions: named("matchConditions", "/expression", Want::Bool),
            variables: named("variables", "/expression", Want::Any),
        }
    }
}

/// A binding of either kind.
#[derive(Clone, Debug)]
pub(crate) struct Binding {
    pub name: String,
    pub policy: String,
    pub param_ref: Option<Value>,
    pub matcher: Option<Matcher>,
    /// `validationActions` (validating bindings).
    pub actions: Vec<String>,
}

impl Binding {
    pub(crate) fn from_json(b: &Value) -> Binding {
        let spec = b.get("spec").cloned().unwrap_or(Value::Null);
        Binding {
            name: str_at(b, "/metadata/name").to_string(),
            policy: str_at(&spec, "/policyName").to_string(),
            param_ref: spec.get("paramRef").filter(|r| r.is_object()).cloned(),
            matcher: spec
                .get("matchResources")
                .filter(|m| m.is_object())
                .map(|m| Matcher::from_json(Some(m))),
            actions: spec
                .get("validationActions")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default(),
        }
    }
}

/// What the policy plugins read from the server they run in.
pub struct Server {
    /// The object store (policies, bindings, params, namespaces).
    pub store: Arc<Store>,
    /// The current catalogue (built-in kinds and custom resources, for `paramKind`).
    pub catalog: Box<dyn Fn() -> Option<Arc<Catalog>> + Send + Sync>,
    /// The server's authorizer (the CEL `authorizer` variable); `None`: every check
    /// is allowed (a server without authorization).
    pub authorizer: Option<Arc<dyn crate::auth::Authorizer>>,
}

/// The current table of the built-in `admissionregistration.k8s.io/v1` `plural`.
pub(crate) fn table(server: &Server, plural: &str) -> Table {
    server.store.snapshot(&storage_key(plural)).table
}

/// The objects of a table.
pub(crate) fn objects(t: &Table) -> Vec<Value> {
    t.values().filter_map(|o| o.value().ok()).collect()
}

/// What the evaluation of one request reads from the server.
pub(crate) struct Ctx<'a> {
    pub server: &'a Server,
    pub attrs: &'a Attributes,
    /// The object (the new one; `None` on delete).
    pub obj: Option<&'a Value>,
    /// The request's namespace object (`None` for cluster-scoped requests and
    /// namespaces themselves).
    pub namespace: Option<Value>,
}

impl<'a> Ctx<'a> {
    /// Read the request's namespace; a namespaced request into a namespace that does
    /// not exist is answered 404 as upstream's matcher does.
    pub(crate) fn new(
        server: &'a Server,
        attrs: &'a Attributes,
        obj: Option<&'a Value>,
    ) -> Result<Ctx<'a>, ApiError> {
        let mut namespace = None;
        let is_namespace = attrs.resource.group.is_empty() && attrs.resource.plural == "namespaces";
        if let (Some(ns), false) = (attrs.namespace.as_deref(), is_namespace) {
            if !ns.is_empty() {
                let def = Catalog::builtin().lookup("", "v1", "namespaces");
                let found = def
                    .and_then(|d| server.store.get(&d.storage_key(), ns))
                    .and_then(|o| o.value().ok());
                match found {
                    Some(v) => namespace = Some(v),
                    None => return Err(ApiError::not_found("", "namespaces", ns)),
                }
            }
        }
        Ok(Ctx {
            server,
            attrs,
            obj,
            namespace,
        })
    }

    fn namespace_labels(&self) -> Option<&serde_json::Map<String, Value>> {
        self.namespace
            .as_ref()
            .and_then(|n| n.pointer("/metadata/labels"))
            .and_then(Value::as_object)
    }

    /// Whether `m` admits the request (rules and selectors).
    pub(crate) fn matches(&self, m: &Matcher) -> bool {
        m.matches_rules(self.attrs)
            && m.matches_selectors(self.attrs, self.namespace_labels(), self.obj)
    }

    /// The params a binding selects for a policy with `param_kind` (upstream
    /// `CollectParams`): `[None]` without a paramKind or paramRef; an error is a
    /// configuration error.
    pub(crate) fn params(
        &self,
        param_kind: Option<&(String, String)>,
        param_ref: Option<&Value>,
    ) -> Result<Vec<Option<Value>>, String> {
        let (Some((api_version, kind)), Some(r)) = (param_kind, param_ref) else {
            return Ok(vec![None]);
        };
        let (group, version) = match api_version.split_once('/') {
            Some((g, v)) => (g, v),
            None => ("", api_version.as_str()),
        };
        let Some(catalog) = (self.server.catalog)() else {
            return Err("the server is stopping".into());
        };
        let found = catalog
            .resources()
            .iter()
            .copied()
            .find(|r| r.group == group && r.version == version && r.kind == kind);
        let Some(def) = found else {
            return Err(format!(
                "paramKind kind `{}` not known",
                param_kind_string(api_version, kind)
            ));
        };
        let name = str_at(r, "/name");
        let ref_ns = str_at(r, "/namespace");
        let namespace = if def.namespaced {
            if !ref_ns.is_empty() {
                Some(ref_ns.to_string())
            } else {
                match self.attrs.namespace.as_deref() {
                    Some(ns) if !ns.is_empty() => Some(ns.to_string()),
                    _ => return Err("cannot use namespaced paramRef in policy binding that matches cluster-scoped resources".into()),
                }
            }
        } else {
            if !ref_ns.is_empty() {
                return Err(
                    "paramRef.namespace must not be provided for a cluster-scoped `paramKind`"
                        .into(),
                );
            }
            None
        };
        let selector = r.get("selector").filter(|s| !s.is_null());
        let present = |v: Value| crate::registry::versions::present_value(def, v).ok();
        let params: Vec<Value> = if !name.is_empty() {
            if selector.is_some() {
                return Err("paramRef.name and paramRef.selector are mutually exclusive".into());
            }
            self.server
                .store
                .get(&def.storage_key(), &object_key(namespace.as_deref(), name))
                .and_then(|o| o.value().ok())
                .and_then(present)
                .into_iter()
                .collect()
        } else if let Some(sel) = selector {
            let sel = LabelSelector::from_label_selector_json(sel).map_err(|e| e.to_string())?;
            let prefix = namespace.as_deref().map(|ns| format!("{ns}/"));
            self.server
                .store
                .snapshot(&def.storage_key())
                .table
                .iter()
                .filter(|(k, _)| prefix.as_deref().is_none_or(|p| k.starts_with(p)))
                .filter(|(_, o)| {
                    sel.matches(|k| o.labels.iter().find(|(l, _)| &**l == k).map(|(_, v)| &**v))
                })
                .filter_map(|(_, o)| o.value().ok())
                .filter_map(present)
                .collect()
        } else {
            return Err("one of name or selector must be provided".into());
        };
        if params.is_empty() && str_at(r, "/parameterNotFoundAction") == "Deny" {
            return Err(
                "no params found for policy binding with `Deny` parameterNotFoundAction".into(),
            );
        }
        Ok(params.into_iter().map(Some).collect())
    }

    /// The `request` variable: the AdmissionRequest of this request.
    pub(crate) fn request(&self) -> Value {
        let a = self.attrs;
        let def: &ResourceDef = a.resource;
        let kind = json!({"group": a.kind.group, "version": a.kind.version, "kind": a.kind.kind});
        let resource = json!({"group": def.group, "version": def.version, "resource": def.plural});
        let user = match &a.user {
            Some(u) => json!({
                "username": u.name, "uid": u.uid, "groups": u.groups, "extra": u.extra,
            }),
            None => json!({"username": "", "uid": "", "groups": [], "extra": {}}),
        };
        json!({
            "uid": uuid::Uuid::new_v4().to_string(),
            "kind": kind,
            "resource": resource,
            "subResource": a.subresource.unwrap_or(""),
            "requestKind": kind,
            "requestResource": resource,
            "requestSubResource": a.subresource.unwrap_or(""),
            "name": a.name,
            "namespace": a.namespace.as_deref().unwrap_or(""),
            "operation": a.operation.as_str(),
            "userInfo": user,
            "dryRun": a.dry_run,
            "options": a.options.clone().unwrap_or(Value::Null),
        })
    }

    /// The `namespaceObject` variable (upstream `CreateNamespaceObject`: name, labels,
    /// annotations and the other identifying metadata, spec and status).
    pub(crate) fn namespace_object(&self) -> Value {
        let Some(ns) = &self.namespace else {
            return Value::Null;
        };
        let mut meta = serde_json::Map::new();
        if let Some(m) = ns.get("metadata").and_then(Value::as_object) {
            for k in [
                "name",
                "generateName",
                "namespace",
                "uid",
                "resourceVersion",
                "generation",
                "creationTimestamp",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "labels",
                "annotations",
                "finalizers",
            ] {
                if let Some(v) = m.get(k) {
                    meta.insert(k.into(), v.clone());
                }
            }
        }
        json!({
            "metadata": meta,
            "spec": ns.get("spec").cloned().unwrap_or(json!({})),
            "status": ns.get("status").cloned().unwrap_or(json!({})),
        })
    }

    /// An activation with every variable but `variables` bound.
    pub(crate) fn activation(
        &self,
        request: &Value,
        ns_obj: &Value,
        params: Option<&Value>,
    ) -> Activation {
        let mut act = Activation::new();
        let null = Value::Null;
        act.bind_json("object", self.obj.unwrap_or(&null));
        act.bind_json("oldObject", self.attrs.old_object.as_ref().unwrap_or(&null));
        act.bind_json("request", request);
        act.bind_json("params", params.unwrap_or(&null));
        act.bind_json("namespaceObject", ns_obj);
        bind_authorizer(&mut act, self.server.authorizer.clone(), self.attrs);
        act
    }
}

/// Bind CEL's `authorizer` (checks for the request's user against `authorizer`) and
/// `authorizer.requestResource` (the resource of `attrs`) in `act`: what admission
/// policies and webhook `matchConditions` share.
pub(crate) fn bind_authorizer(
    act: &mut Activation,
    authorizer: Option<Arc<dyn crate::auth::Authorizer>>,
    attrs: &Attributes,
) {
    let user = attrs.user.clone();
    let rr = crate::machinery::cel::Authz {
        group: attrs.resource.group.to_string(),
        resource: attrs.resource.plural.to_string(),
        subresource: attrs.subresource.unwrap_or("").to_string(),
        namespace: attrs.namespace.clone().unwrap_or_default(),
        name: attrs.name.clone(),
        ..Default::default()
    };
    act.bind_authorizer(
        Box::new(move |c, verb| authorize(authorizer.as_deref(), user.as_deref(), c, verb)),
        rr,
    );
}

fn param_kind_string(api_version: &str, kind: &str) -> String {
    format!("{api_version}, Kind={kind}")
}

/// One check of the CEL `authorizer` library against the server's authorizer.
fn authorize(
    authorizer: Option<&dyn crate::auth::Authorizer>,
    user: Option<&crate::machinery::user::UserInfo>,
    c: &crate::machinery::cel::Authz,
    verb: &str,
) -> Result<(&'static str, String), String> {
    use crate::auth::{Attributes as AuthzAttributes, Decision, RequestInfo};
    let Some(authorizer) = authorizer else {
        return Ok(("allow", String::new()));
    };
    let sa_user;
    let user = match &c.service_account {
        Some((ns, name)) => {
            use apimachinery::serviceaccount::claims::{make_group_names, make_username};
            let mut u = crate::machinery::user::UserInfo::new(make_username(ns, name), &[]);
            u.groups = make_group_names(ns);
            u.groups
                .push(crate::machinery::user::ALL_AUTHENTICATED.to_string());
            sa_user = u;
            &sa_user
        }
        None => match user {
            Some(u) => u,
            // the server's own writes act as a member of system:masters
            None => return Ok(("allow", String::new())),
        },
    };
    let request = match &c.path {
        Some(p) => RequestInfo {
            resource_request: false,
            path: p.clone(),
            verb: verb.to_string(),
            ..Default::default()
        },
        None => RequestInfo {
            resource_request: true,
            verb: verb.to_string(),
            api_group: c.group.clone(),
            namespace: c.namespace.clone(),
            resource: c.resource.clone(),
            subresource: c.subresource.clone(),
            name: c.name.clone(),
            ..Default::default()
        },
    };
    let (d, reason) = authorizer.authorize(&AuthzAttributes {
        user,
        request: &request,
    });
    Ok((
        match d {
            Decision::Allow => "allow",
            Decision::Deny => "deny",
            Decision::NoOpinion => "noOpinion",
        },
        reason,
    ))
}

/// Upstream `admission.NewForbidden`'s resource and name: the object's name, or its
/// `generateName` on a create before a name is chosen.
pub(crate) fn forbidden(attrs: &Attributes, obj: Option<&Value>, message: &str) -> ApiError {
    let mut name = attrs.name.clone();
    if name.is_empty() {
        let o = obj.or(attrs.old_object.as_ref());
        name = o
            .map(|o| str_at(o, "/metadata/name"))
            .filter(|n| !n.is_empty())
            .or_else(|| o.map(|o| str_at(o, "/metadata/generateName")))
            .unwrap_or("")
            .to_string();
        if name.is_empty() {
            name = "Unknown".into();
        }
    }
    let def = attrs.resource;
    let qualified = apimachinery::status::qualify(def.plural, def.group);
    ApiError::forbidden(format!(
        "{qualified} {} is forbidden: {message}",
        apimachinery::gofmt::quote(&name)
    ))
    .with_details(def.group, def.plural, &name)
}

/// HTTP code of a validation's `reason` (upstream `reasonToCode`).
pub(crate) fn reason_code(reason: &str) -> u16 {
    match reason {
        "Forbidden" => 403,
        "Unauthorized" => 401,
        "RequestEntityTooLarge" => 413,
        "Invalid" => 422,
        _ => 500,
    }
}

/// The static form of a reason (Status reasons are `&'static str`).
pub(crate) fn reason_static(reason: &str) -> &'static str {
    match reason {
        "Forbidden" => "Forbidden",
        "Unauthorized" => "Unauthorized",
        "RequestEntityTooLarge" => "RequestEntityTooLarge",
        "Invalid" => "Invalid",
        _ => "InternalError",
    }
}

/// The storage keys of the built-in `admissionregistration.k8s.io/v1` `plural`.
pub(crate) fn storage_key(plural: &str) -> String {
    Catalog::builtin()
        .lookup("admissionregistration.k8s.io", "v1", plural)
        .map(|d| d.storage_key())
        .unwrap_or_default()
}

/// A policy kind's compiled form, as the shared [`View`] builds it.
pub(crate) trait Compiled: Sized {
    /// Compile one stored policy.
    fn from_json(p: &Value) -> Self;
    /// The policy's name (what bindings name).
    fn name(&self) -> &str;
}

/// The compiled policies of one flavour, each with the bindings that name it (policies
/// without bindings left out), and the two tables they were compiled from.
pub(crate) struct View<P> {
    tables: Option<(Table, Table)>,
    /// Policies (by name) with their bindings (by name).
    pub(crate) hooks: Vec<(P, Vec<Binding>)>,
}

impl<P> Default for View<P> {
    fn default() -> Self {
        View {
            tables: None,
            hooks: Vec::new(),
        }
    }
}

/// The view of the `policies` and `bindings` tables kept in `cell`, compiled again only
/// when either table changed since.
pub(crate) fn view<P: Compiled>(
    server: &Server,
    cell: &std::sync::RwLock<Arc<View<P>>>,
    policies: &str,
    bindings: &str,
) -> Arc<View<P>> {
    let policies = table(server, policies);
    let bindings = table(server, bindings);
    let current = cell.read().unwrap_or_else(|e| e.into_inner()).clone();
    if let Some((p, b)) = &current.tables {
        if p.ptr_eq(&policies) && b.ptr_eq(&bindings) {
            return current;
        }
    }
    let mut ps: Vec<P> = objects(&policies).iter().map(P::from_json).collect();
    ps.sort_by(|a, b| a.name().cmp(b.name()));
    let mut bs: Vec<Binding> = objects(&bindings).iter().map(Binding::from_json).collect();
    bs.sort_by(|a, b| a.name.cmp(&b.name));
    let hooks = ps
        .into_iter()
        .map(|p| {
            let mine: Vec<Binding> = bs
                .iter()
                .filter(|b| b.policy == p.name())
                .cloned()
                .collect();
            (p, mine)
        })
        .filter(|(_, mine)| !mine.is_empty())
        .collect();
    let view = Arc::new(View {
        tables: Some((policies, bindings)),
        hooks,
    });
    *cell.write().unwrap_or_else(|e| e.into_inner()) = Arc::clone(&view);
    view
}
