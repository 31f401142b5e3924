//! What the four admission policy kinds share: their defaults (upstream
//! `pkg/apis/admissionregistration/v1/defaults.go`), their validation (upstream
//! `pkg/apis/admissionregistration/validation/validation.go`) and their table columns
//! (upstream `pkg/printers/internalversion/printers.go`).

use crate::machinery::cel::admission::{compile, Want};
use crate::registry::defaults::prelude::child as child_obj;
use crate::registry::defaults::prelude::{default_ptr, each_obj, Obj};
use crate::registry::validation::prelude::*;
use apimachinery::field;
use serde_json::json;

/// The variables policy expressions may use (`params` only with a `paramKind`).
const VARS: &[&str] = &[
    "object",
    "oldObject",
    "request",
    "params",
    "namespaceObject",
    "variables",
    "authorizer",
];

// ---------------------------------------------------------------------------
// Defaults
// ---------------------------------------------------------------------------

/// `SetDefaults_Rule` for every rule, `SetDefaults_MatchResources`.
pub(crate) fn default_match_resources(m: &mut Obj) {
    default_ptr(m, "matchPolicy", json!("Equivalent"));
    default_ptr(m, "namespaceSelector", json!({}));
    default_ptr(m, "objectSelector", json!({}));
    for k in ["resourceRules", "excludeResourceRules"] {
        each_obj(m, k, |r| default_ptr(r, "scope", json!("*")));
    }
}

/// The defaults of a policy's spec; `mutating` adds `reinvocationPolicy: Never`.
pub(crate) fn default_policy(o: &mut Obj, mutating: bool) {
    let Some(spec) = child_obj(o, "spec") else {
        return;
    };
    default_ptr(spec, "failurePolicy", json!("Fail"));
    if mutating {
        default_ptr(spec, "reinvocationPolicy", json!("Never"));
    }
    if let Some(m) = child_obj(spec, "matchConstraints") {
        default_match_resources(m);
    }
}

/// The defaults of a binding's spec (`SetDefaults_ParamRef`: `parameterNotFoundAction: Deny`).
pub(crate) fn default_binding(o: &mut Obj) {
    let Some(spec) = child_obj(o, "spec") else {
        return;
    };
    if let Some(m) = child_obj(spec, "matchResources") {
        default_match_resources(m);
    }
    if let Some(r) = child_obj(spec, "paramRef") {
        default_ptr(r, "parameterNotFoundAction", json!("Deny"));
    }
}

// ---------------------------------------------------------------------------
// Validation
// ---------------------------------------------------------------------------

fn compile_err(e: &mut Errs, path: &str, src: &str, want: Want, has_params: bool) {
    let vars: Vec<&str> = VARS
        .iter()
        .copied()
        .filter(|v| has_params || *v != "params")
        .collect();
    if let Err(detail) = compile(src, &vars, want) {
        e.0.push(field::invalid(path, s(src), &detail));
    }
}

fn strings(v: &Value, k: &str) -> Vec<String> {
    items(v, k)
        .iter()
        .filter_map(|x| x.as_str().map(str::to_string))
        .collect()
}

fn path_segment_errs(name: &str) -> Vec<String> {
    if name == "." || name == ".." {
        return vec![format!("may not be '{name}'")];
    }
    let mut out = Vec::new();
    for bad in ["/", "%"] {
        if name.contains(bad) {
            out.push(format!("may not contain '{bad}'"));
        }
    }
    out
}

/// `validateRuleWithOperations` with the names of `NamedRuleWithOperations`.
/// The operations a rule may name; `mutating`: a MutatingAdmissionPolicy's, which cannot
/// match DELETE.
fn operations(mutating: bool) -> &'static [&'static str] {
    if mutating {
        &["*", "CONNECT", "CREATE", "UPDATE"]
    } else {
        &["*", "CONNECT", "CREATE", "DELETE", "UPDATE"]
    }
}

fn validate_rule(e: &mut Errs, r: &Value, path: &str, mutating: bool) {
    let names = strings(r, "resourceNames");
    let mut seen = std::collections::BTreeSet::new();
    for (i, n) in names.iter().enumerate() {
        let p = index(&child(path, "resourceNames"), i);
        for msg in path_segment_errs(n) {
            e.0.push(field::invalid(&p, s(n), &msg));
        }
        if !seen.insert(n.clone()) {
            e.0.push(field::duplicate(&p, s(n)));
        }
    }
    let ops = strings(r, "operations");
    if ops.is_empty() {
        e.0.push(field::required(&child(path, "operations"), ""));
    }
    if ops.len() > 1 && ops.iter().any(|o| o == "*") {
        e.0.push(field::invalid(
            &child(path, "operations"),
            Bad::Json(json!(ops)),
            "if '*' is present, must not specify other operations",
        ));
    }
    for (i, o) in ops.iter().enumerate() {
        if !operations(mutating).contains(&o.as_str()) {
            e.0.push(field::not_supported(
                &index(&child(path, "operations"), i),
                s(o),
                operations(mutating),
            ));
        }
    }
    let groups = strings(r, "apiGroups");
    if groups.is_empty() {
        e.0.push(field::required(&child(path, "apiGroups"), ""));
    }
    if groups.len() > 1 && groups.iter().any(|g| g == "*") {
        e.0.push(field::invalid(
            &child(path, "apiGroups"),
            Bad::Json(json!(groups)),
            "if '*' is present, must not specify other API groups",
        ));
    }
    let versions = strings(r, "apiVersions");
    if versions.is_empty() {
        e.0.push(field::required(&child(path, "apiVersions"), ""));
    }
    if versions.len() > 1 && versions.iter().any(|g| g == "*") {
        e.0.push(field::invalid(
            &child(path, "apiVersions"),
            Bad::Json(json!(versions)),
            "if '*' is present, must not specify other API versions",
        ));
    }
    for (i, v) in versions.iter().enumerate() {
        if v.is_empty() {
            e.0.push(field::required(&index(&child(path, "apiVersions"), i), ""));
        }
    }
    let resources = strings(r, "resources");
    if resources.is_empty() {
        e.0.push(field::required(&child(path, "resources"), ""));
    }
    // upstream validateResources (subresources allowed)
    let rp = child(path, "resources");
    let mut wildcard_subs = std::collections::BTreeSet::new(); // x/*
    let mut wildcard_res = std::collections::BTreeSet::new(); // */x
    let (mut double, mut single, mut plain) = (false, false, false);
    for (i, res) in resources.iter().enumerate() {
        let p = index(&rp, i);
        if res.is_empty() {
            e.0.push(field::required(&p, ""));
            continue;
        }
        if res == "*/*" {
            double = true;
        }
        if res == "*" {
            single = true;
        }
        let Some((main, sub)) = res.split_once('/') else {
            plain = res != "*";
            continue;
        };
        if wildcard_subs.contains(main) {
            e.0.push(field::invalid(
                &p,
                s(res),
                &format!("if '{main}/*' is present, must not specify {res}"),
            ));
        }
        if wildcard_res.contains(sub) {
            e.0.push(field::invalid(
                &p,
                s(res),
                &format!("if '*/{sub}' is present, must not specify {res}"),
            ));
        }
        if sub == "*" {
            wildcard_subs.insert(main.to_string());
        }
        if main == "*" {
            wildcard_res.insert(sub.to_string());
        }
    }
    if resources.len() > 1 && double {
        e.0.push(field::invalid(
            &rp,
            Bad::Json(json!(resources)),
            "if '*/*' is present, must not specify other resources",
        ));
    }
    if single && plain {
        e.0.push(field::invalid(
            &rp,
            Bad::Json(json!(resources)),
            "if '*' is present, must not specify other resources without subresources",
        ));
    }
    if let Some(scope) = r.get("scope").and_then(Value::as_str) {
        if !["*", "Cluster", "Namespaced"].contains(&scope) {
            e.0.push(field::not_supported(
                &child(path, "scope"),
                s(scope),
                &["*", "Cluster", "Namespaced"],
            ));
        }
    }
}

/// `validateMatchResources`.
fn validate_match_resources(e: &mut Errs, m: &Value, path: &str, mutating: bool) {
    match m.get("matchPolicy").and_then(Value::as_str) {
        None => e.0.push(field::required(&child(path, "matchPolicy"), "")),
        Some(p) if p != "Exact" && p != "Equivalent" => e.0.push(field::not_supported(
            &child(path, "matchPolicy"),
            s(p),
            &["Equivalent", "Exact"],
        )),
        _ => {}
    }
    for k in ["namespaceSelector", "objectSelector"] {
        match m.get(k).filter(|x| !x.is_null()) {
            None => e.0.push(field::required(&child(path, k), "")),
            Some(sel) => {
                validate_label_selector(e, sel, &child(path, k));
            }
        }
    }
    for k in ["resourceRules", "excludeResourceRules"] {
        for (i, r) in items(m, k).iter().enumerate() {
            validate_rule(e, r, &index(&child(path, k), i), mutating);
        }
    }
}

fn validate_param_kind(e: &mut Errs, k: &Value, path: &str) {
    let av = st(k, "apiVersion").unwrap_or("");
    if av.is_empty() {
        e.0.push(field::required(&child(path, "apiVersion"), ""));
    } else if av.matches('/').count() > 1 {
        e.0.push(field::invalid(
            &child(path, "apiVersion"),
            s(av),
            &format!("unexpected GroupVersion string: {av}"),
        ));
    } else {
        let (group, version) = av.split_once('/').unwrap_or(("", av));
        if !group.is_empty() {
            let errs = apimachinery::names::is_dns1123_subdomain(group);
            if !errs.is_empty() {
                e.0.push(field::invalid(
                    &child(path, "apiVersion"),
                    s(group),
                    &errs.join(","),
                ));
            }
        }
        if version.is_empty() {
            e.0.push(field::invalid(
                &child(path, "apiVersion"),
                s(av),
                "version must be specified",
            ));
        } else {
            let errs = apimachinery::names::is_dns1035_label(version);
            if !errs.is_empty() {
                e.0.push(field::invalid(
                    &child(path, "apiVersion"),
                    s(version),
                    &errs.join(","),
                ));
            }
        }
    }
    let kind = st(k, "kind").unwrap_or("");
    if kind.is_empty() {
        e.0.push(field::required(&child(path, "kind"), ""));
    } else {
        let errs = apimachinery::names::is_dns1035_label(&kind.to_lowercase());
        if !errs.is_empty() {
            e.0.push(field::invalid(
                &child(path, "kind"),
                s(kind),
                &format!(
                    "may have mixed case, but should otherwise match: {}",
                    errs.join(",")
                ),
            ));
        }
    }
}

fn is_cel_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c == '_' || c.is_ascii_alphabetic());
    first_ok
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
        && ![
            "true",
            "false",
            "null",
            "in",
            "as",
            "break",
            "const",
            "continue",
            "else",
            "for",
            "function",
            "if",
            "import",
            "let",
            "loop",
            "package",
            "namespace",
            "return",
            "var",
            "void",
            "while",
        ]
        .contains(&name)
}

/// What both policy kinds check in their spec: failurePolicy, paramKind,
/// matchConstraints (with at least one resource rule), matchConditions, variables.
fn validate_policy_common(e: &mut Errs, spec: &Value, path: &str, mutating: bool) -> bool {
    match spec.get("failurePolicy").and_then(Value::as_str) {
        None => e.0.push(field::required(&child(path, "failurePolicy"), "")),
        Some(f) if f != "Fail" && f != "Ignore" => e.0.push(field::not_supported(
            &child(path, "failurePolicy"),
            s(f),
            &["Fail", "Ignore"],
        )),
        _ => {}
    }
    let has_params = spec.get("paramKind").is_some_and(|k| k.is_object());
    if let Some(k) = spec.get("paramKind").filter(|k| k.is_object()) {
        validate_param_kind(e, k, &child(path, "paramKind"));
    }
    match spec.get("matchConstraints").filter(|m| m.is_object()) {
        None => {
            e.0.push(field::required(&child(path, "matchConstraints"), ""))
        }
        Some(m) => {
            validate_match_resources(e, m, &child(path, "matchConstraints"), mutating);
            if items(m, "resourceRules").is_empty() {
                e.0.push(field::required(
                    &child(&child(path, "matchConstraints"), "resourceRules"),
                    "",
                ));
            }
        }
    }
    let conds = items(spec, "matchConditions");
    let cp = child(path, "matchConditions");
    if conds.len() > 64 {
        e.0.push(field::too_many(&cp, conds.len() as i64, 64));
    }
    let mut names = std::collections::BTreeSet::new();
    for (i, c) in conds.iter().enumerate() {
        let p = index(&cp, i);
        let expr = st(c, "expression").unwrap_or("").trim();
        if expr.is_empty() {
            e.0.push(field::required(&child(&p, "expression"), ""));
        } else {
            compile_err(e, &child(&p, "expression"), expr, Want::Bool, has_params);
        }
        let name = st(c, "name").unwrap_or("");
        if name.is_empty() {
            e.0.push(field::required(&child(&p, "name"), ""));
        } else {
            for msg in qualified_name_errs(name) {
                e.0.push(field::invalid(&child(&p, "name"), s(name), &msg));
            }
            if !names.insert(name.to_string()) {
                e.0.push(field::duplicate(&child(&p, "name"), s(name)));
            }
        }
    }
    for (i, v) in items(spec, "variables").iter().enumerate() {
        let p = index(&child(path, "variables"), i);
        let name = st(v, "name").unwrap_or("");
        if name.trim().is_empty() {
            e.0.push(field::required(&child(&p, "name"), "name is not specified"));
        } else if !is_cel_identifier(name) {
            e.0.push(field::invalid(
                &child(&p, "name"),
                s(name),
                "name is not a valid CEL identifier",
            ));
        }
        let expr = st(v, "expression").unwrap_or("");
        if expr.trim().is_empty() {
            e.0.push(field::required(
                &child(&p, "expression"),
                "expression is not specified",
            ));
        } else {
            compile_err(e, &child(&p, "expression"), expr, Want::Any, has_params);
        }
    }
    has_params
}

/// ValidatingAdmissionPolicy (`validateValidatingAdmissionPolicySpec`).
pub(crate) fn validate_validating_policy(e: &mut Errs, obj: &Value) {
    let null = Value::Null;
    let spec = obj.get("spec").unwrap_or(&null);
    let path = "spec";
    let has_params = validate_policy_common(e, spec, path, false);
    let validations = items(spec, "validations");
    let audits = items(spec, "auditAnnotations");
    if validations.is_empty() && audits.is_empty() {
        let d = "validations or auditAnnotations must contain at least one item";
        e.0.push(field::required("spec.validations", d));
        e.0.push(field::required("spec.auditAnnotations", d));
        return;
    }
    for (i, v) in validations.iter().enumerate() {
        let p = index("spec.validations", i);
        let expr = st(v, "expression").unwrap_or("");
        if expr.trim().is_empty() {
            e.0.push(field::required(
                &child(&p, "expression"),
                "expression is not specified",
            ));
        } else {
            compile_err(e, &child(&p, "expression"), expr, Want::Bool, has_params);
        }
        let me = st(v, "messageExpression").unwrap_or("");
        if !me.is_empty() && me.trim().is_empty() {
            e.0.push(field::invalid(
                &child(&p, "messageExpression"),
                s(me),
                "must be non-empty if specified",
            ));
        } else if !me.trim().is_empty() {
            compile_err(
                e,
                &child(&p, "messageExpression"),
                me,
                Want::String,
                has_params,
            );
        }
        let msg = st(v, "message").unwrap_or("");
        if !msg.is_empty() && msg.trim().is_empty() {
            e.0.push(field::invalid(
                &child(&p, "message"),
                s(msg),
                "message must be non-empty if specified",
            ));
        } else if msg.trim().contains(['\n', '\r']) {
            e.0.push(field::invalid(
                &child(&p, "message"),
                s(msg),
                "message must not contain line breaks",
            ));
        }
        if let Some(r) = st(v, "reason") {
            let ok = [
                "Forbidden",
                "Invalid",
                "RequestEntityTooLarge",
                "Unauthorized",
            ];
            if !ok.contains(&r) {
                e.0.push(field::not_supported(&child(&p, "reason"), s(r), &ok));
            }
        }
    }
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let mut keys = std::collections::BTreeSet::new();
    if audits.len() > 20 {
        e.0.push(field::invalid(
            "spec.auditAnnotations",
            Bad::Json(json!(audits)),
            "must not have more than 20 auditAnnotations",
        ));
    }
    for (i, a) in audits.iter().enumerate() {
        let p = index("spec.auditAnnotations", i);
        let key = st(a, "key").unwrap_or("");
        if name.is_empty() {
            e.0.push(field::invalid(
                &child(&p, "key"),
                s(key),
                "requires metadata.name be non-empty",
            ));
        } else {
            let full = format!("{name}/{key}");
            for msg in qualified_name_errs(&full) {
                e.0.push(field::invalid(&child(&p, "key"), s(&full), &msg));
            }
        }
        let ve = st(a, "valueExpression").unwrap_or("").trim();
        if ve.is_empty() {
            e.0.push(field::required(
                &child(&p, "valueExpression"),
                "valueExpression is not specified",
            ));
        } else if ve.len() > 5 * 1024 {
            e.0.push(field::required(
                &child(&p, "valueExpression"),
                "must not exceed 5120 bytes in length",
            ));
        } else {
            compile_err(e, &child(&p, "valueExpression"), ve, Want::Any, has_params);
        }
        if !keys.insert(key.to_string()) {
            e.0.push(field::duplicate(&child(&p, "key"), s(key)));
        }
    }
}

/// MutatingAdmissionPolicy (`validateMutatingAdmissionPolicySpec`).
pub(crate) fn validate_mutating_policy(e: &mut Errs, obj: &Value) {
    let null = Value::Null;
    let spec = obj.get("spec").unwrap_or(&null);
    let has_params = validate_policy_common(e, spec, "spec", true);
    match spec.get("reinvocationPolicy").and_then(Value::as_str) {
        None => e.0.push(field::required("spec.reinvocationPolicy", "")),
        Some(r) if r != "Never" && r != "IfNeeded" => e.0.push(field::not_supported(
            "spec.reinvocationPolicy",
            s(r),
            &["IfNeeded", "Never"],
        )),
        _ => {}
    }
    let mutations = items(spec, "mutations");
    if mutations.is_empty() {
        e.0.push(field::required(
            "spec.mutations",
            "mutations must contain at least one item",
        ));
    }
    for (i, m) in mutations.iter().enumerate() {
        let p = index("spec.mutations", i);
        let (key, other, pt) = match st(m, "patchType") {
            Some("ApplyConfiguration") => ("applyConfiguration", "jsonPatch", "ApplyConfiguration"),
            Some("JSONPatch") => ("jsonPatch", "applyConfiguration", "JSONPatch"),
            None | Some("") => {
                e.0.push(field::required(&child(&p, "patchType"), ""));
                continue;
            }
            Some(t) => {
                e.0.push(field::not_supported(
                    &child(&p, "patchType"),
                    s(t),
                    &["ApplyConfiguration", "JSONPatch"],
                ));
                continue;
            }
        };
        match m.get(key).filter(|x| !x.is_null()) {
            None => e.0.push(field::required(
                &child(&p, key),
                &format!("must be specified when patchType is {pt}"),
            )),
            Some(body) => {
                let expr = st(body, "expression").unwrap_or("").trim();
                let ep = child(&child(&p, key), "expression");
                if expr.is_empty() {
                    e.0.push(field::required(&ep, ""));
                } else {
                    compile_err(e, &ep, expr, Want::Any, has_params);
                }
            }
        }
        if m.get(other).is_some_and(|x| !x.is_null()) {
            e.0.push(field::invalid(
                &child(&p, other),
                s(&format!("{{{other}}}")),
                &format!("must not be specified when patchType is {pt}"),
            ));
        }
    }
}

fn validate_param_ref(e: &mut Errs, r: &Value, path: &str) {
    let name = st(r, "name").unwrap_or("");
    let selector = r.get("selector").filter(|x| !x.is_null());
    if !name.is_empty() {
        for msg in path_segment_errs(name) {
            e.0.push(field::invalid(&child(path, "name"), s(name), &msg));
        }
        if selector.is_some() {
            e.0.push(field::forbidden(
                &child(path, "name"),
                "name and selector are mutually exclusive",
            ));
        }
    }
    if let Some(sel) = selector {
        validate_label_selector(e, sel, &child(path, "selector"));
        if !name.is_empty() {
            e.0.push(field::forbidden(
                &child(path, "selector"),
                "name and selector are mutually exclusive",
            ));
        }
    }
    if name.is_empty() && selector.is_none() {
        e.0.push(field::required(
            path,
            "one of name or selector must be specified",
        ));
    }
    match st(r, "parameterNotFoundAction") {
        None | Some("") => {
            e.0.push(field::required(&child(path, "parameterNotFoundAction"), ""))
        }
        Some(a) if a != "Deny" && a != "Allow" => e.0.push(field::not_supported(
            &child(path, "parameterNotFoundAction"),
            s(a),
            &["Deny", "Allow"],
        )),
        _ => {}
    }
}

/// Both binding kinds (`validate{Validating,Mutating}AdmissionPolicyBindingSpec`);
/// `validating` adds `validationActions`.
pub(crate) fn validate_binding(e: &mut Errs, obj: &Value, validating: bool) {
    let null = Value::Null;
    let spec = obj.get("spec").unwrap_or(&null);
    let policy = st(spec, "policyName").unwrap_or("");
    if policy.is_empty() {
        e.0.push(field::required("spec.policyName", ""));
    } else {
        for msg in apimachinery::names::is_dns1123_subdomain(policy) {
            e.0.push(field::invalid("spec.policyName", s(policy), &msg));
        }
    }
    if let Some(r) = spec.get("paramRef").filter(|r| r.is_object()) {
        validate_param_ref(e, r, "spec.paramRef");
    }
    if let Some(m) = spec.get("matchResources").filter(|m| m.is_object()) {
        validate_match_resources(e, m, "spec.matchResources", !validating);
    }
    if !validating {
        return;
    }
    let actions = strings(spec, "validationActions");
    let mut seen = std::collections::BTreeSet::new();
    for (i, a) in actions.iter().enumerate() {
        let p = index("spec.validationActions", i);
        if !["Audit", "Deny", "Warn"].contains(&a.as_str()) {
            e.0.push(field::not_supported(&p, s(a), &["Audit", "Deny", "Warn"]));
        }
        if !seen.insert(a.clone()) {
            e.0.push(field::duplicate(&p, s(a)));
        }
    }
    if seen.contains("Deny") && seen.contains("Warn") {
        e.0.push(field::invalid(
            "spec.validationActions",
            Bad::Json(json!(actions)),
            "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)",
        ));
    }
    if seen.is_empty() {
        e.0.push(field::required(
            "spec.validationActions",
            "at least one validation action is required",
        ));
    }
}

// ---------------------------------------------------------------------------
// Tables
// ---------------------------------------------------------------------------

/// The ParamKind cell (`<unset>` or `apiVersion/kind`).
pub(crate) fn param_kind_cell(v: &Value) -> String {
    match v.pointer("/spec/paramKind").filter(|k| k.is_object()) {
        Some(k) => format!(
            "{}/{}",
            st(k, "apiVersion").unwrap_or(""),
            st(k, "kind").unwrap_or("")
        ),
        None => "<unset>".into(),
    }
}

/// The ParamRef cell of a binding (`ns/name`, `*/name`, the selector's Go `String()`).
pub(crate) fn param_ref_cell(v: &Value) -> String {
    let Some(r) = v.pointer("/spec/paramRef").filter(|r| r.is_object()) else {
        return "<unset>".into();
    };
    let name = st(r, "name").unwrap_or("");
    if !name.is_empty() {
        let ns = st(r, "namespace").unwrap_or("");
        return if ns.is_empty() {
            format!("*/{name}")
        } else {
            format!("{ns}/{name}")
        };
    }
    match r.get("selector").filter(|x| x.is_object()) {
        Some(sel) => selector_go_string(sel),
        None => "<unset>".into(),
    }
}

/// A `metav1.LabelSelector`'s generated protobuf `String()`.
fn selector_go_string(sel: &Value) -> String {
    let mut labels: Vec<(String, String)> = sel
        .get("matchLabels")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
                .collect()
        })
        .unwrap_or_default();
    labels.sort();
    let mut out = String::from("&LabelSelector{MatchLabels:map[string]string{");
    for (k, v) in labels {
        out.push_str(&format!("{k}: {v},"));
    }
    out.push_str("},MatchExpressions:[]LabelSelectorRequirement{");
    for x in items(sel, "matchExpressions") {
        out.push_str(&format!(
            "LabelSelectorRequirement{{Key:{},Operator:{},Values:[{}],}},",
            st(x, "key").unwrap_or(""),
            st(x, "operator").unwrap_or(""),
            strings(x, "values").join(" ")
        ));
    }
    out.push_str("},}");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn causes(f: impl FnOnce(&mut Errs)) -> Vec<(String, String)> {
        let mut e = Errs::default();
        f(&mut e);
        e.0.into_iter().map(|c| (c.field, c.message)).collect()
    }

    fn vap(spec: Value) -> Value {
        json!({"metadata": {"name": "p"}, "spec": spec})
    }

    fn defaulted(mut v: Value) -> Value {
        if let Some(o) = v.as_object_mut() {
            default_policy(o, false);
        }
        v
    }

    // upstream validation_test.go TestValidateValidatingAdmissionPolicy (selected cases)
    #[test]
    fn validating_policy_cases() {
        let rule = json!({"operations": ["CREATE"], "apiGroups": ["a"], "apiVersions": ["a"], "resources": ["a"]});
        let ok = defaulted(vap(json!({"matchConstraints": {"resourceRules": [rule]},
            "validations": [{"expression": "object.x < 100"}]})));
        assert!(causes(|e| validate_validating_policy(e, &ok)).is_empty());
        let none = defaulted(vap(json!({"matchConstraints": {"resourceRules": [rule]}})));
        assert_eq!(
            causes(|e| validate_validating_policy(e, &none)),
            vec![
                ("spec.validations".into(), "Required value: validations or auditAnnotations must contain at least one item".into()),
                ("spec.auditAnnotations".into(), "Required value: validations or auditAnnotations must contain at least one item".into()),
            ]
        );
        let bad = defaulted(vap(json!({"failurePolicy": "other",
            "matchConstraints": {"resourceRules": []},
            "validations": [{"expression": "object.x <", "reason": "Nope", "message": "a\nb"}]})));
        let got = causes(|e| validate_validating_policy(e, &bad));
        assert_eq!(
            got[0],
            (
                "spec.failurePolicy".into(),
                "Unsupported value: \"other\": supported values: \"Fail\", \"Ignore\"".into()
            )
        );
        assert_eq!(
            got[1],
            (
                "spec.matchConstraints.resourceRules".into(),
                "Required value".into()
            )
        );
        assert_eq!(got[2].0, "spec.validations[0].expression");
        assert!(got[2].1.starts_with("Invalid value: \"object.x <\": compilation failed: ERROR: <input>:1:11: Syntax error"), "{}", got[2].1);
        assert_eq!(
            got[3],
            (
                "spec.validations[0].message".into(),
                "Invalid value: \"a\\nb\": message must not contain line breaks".into()
            )
        );
        assert_eq!(got[4], ("spec.validations[0].reason".into(), "Unsupported value: \"Nope\": supported values: \"Forbidden\", \"Invalid\", \"RequestEntityTooLarge\", \"Unauthorized\"".into()));
        // params are declared only with a paramKind
        let params = defaulted(vap(json!({"matchConstraints": {"resourceRules": [rule]},
            "validations": [{"expression": "params.x == 1"}]})));
        let got = causes(|e| validate_validating_policy(e, &params));
        assert!(
            got[0].1.contains("undeclared reference to 'params'"),
            "{got:?}"
        );
        let rules = defaulted(vap(json!({"matchConstraints": {"resourceRules": [
            {"operations": ["CREATE", "*"], "apiGroups": [], "apiVersions": ["v1"], "resources": ["a/*", "a/b", "*"], "scope": "x"}]},
            "validations": [{"expression": "true"}]})));
        assert_eq!(
            causes(|e| validate_validating_policy(e, &rules)),
            vec![
                ("spec.matchConstraints.resourceRules[0].operations".into(), "Invalid value: [\"CREATE\",\"*\"]: if '*' is present, must not specify other operations".into()),
                ("spec.matchConstraints.resourceRules[0].apiGroups".into(), "Required value".into()),
                ("spec.matchConstraints.resourceRules[0].resources[1]".into(), "Invalid value: \"a/b\": if 'a/*' is present, must not specify a/b".into()),
                ("spec.matchConstraints.resourceRules[0].scope".into(), "Unsupported value: \"x\": supported values: \"*\", \"Cluster\", \"Namespaced\"".into()),
            ]
        );
    }

    #[test]
    fn mutating_policy_cases() {
        let m = |spec: Value| {
            let mut v = json!({"metadata": {"name": "m"}, "spec": spec});
            if let Some(o) = v.as_object_mut() {
                default_policy(o, true);
            }
            causes(|e| validate_mutating_policy(e, &v))
        };
        let rules = json!({"resourceRules": [{"operations": ["CREATE"], "apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["deployments"]}]});
        assert!(m(json!({"matchConstraints": rules, "mutations": [
            {"patchType": "JSONPatch", "jsonPatch": {"expression": "[JSONPatch{op: 'test', path: '/a', value: 1}]"}}]})).is_empty());
        let deletes = json!({"resourceRules": [{"operations": ["DELETE"], "apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["deployments"]}]});
        assert_eq!(
            m(json!({"matchConstraints": deletes, "mutations": [
                {"patchType": "JSONPatch", "jsonPatch": {"expression": "[]"}}]})),
            vec![("spec.matchConstraints.resourceRules[0].operations[0]".into(),
                  "Unsupported value: \"DELETE\": supported values: \"*\", \"CONNECT\", \"CREATE\", \"UPDATE\"".into())]
        );
        assert_eq!(
            m(json!({"matchConstraints": rules})),
            vec![(
                "spec.mutations".into(),
                "Required value: mutations must contain at least one item".into()
            )]
        );
        assert_eq!(
            m(json!({"matchConstraints": rules, "mutations": [
                {"patchType": "JSONPatch", "applyConfiguration": {"expression": "Object{}"}},
                {"patchType": "Other"},
                {"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": " "}}]})),
            vec![
                ("spec.mutations[0].jsonPatch".into(), "Required value: must be specified when patchType is JSONPatch".into()),
                ("spec.mutations[0].applyConfiguration".into(), "Invalid value: \"{applyConfiguration}\": must not be specified when patchType is JSONPatch".into()),
                ("spec.mutations[1].patchType".into(), "Unsupported value: \"Other\": supported values: \"ApplyConfiguration\", \"JSONPatch\"".into()),
                ("spec.mutations[2].applyConfiguration.expression".into(), "Required value".into()),
            ]
        );
    }

    #[test]
    fn binding_cases() {
        let b = |spec: Value| {
            let mut v = json!({"metadata": {"name": "b"}, "spec": spec});
            if let Some(o) = v.as_object_mut() {
                default_binding(o);
            }
            causes(|e| validate_binding(e, &v, true))
        };
        assert!(b(json!({"policyName": "p", "validationActions": ["Deny"]})).is_empty());
        assert_eq!(
            b(json!({"validationActions": []})),
            vec![
                ("spec.policyName".into(), "Required value".into()),
                (
                    "spec.validationActions".into(),
                    "Required value: at least one validation action is required".into()
                ),
            ]
        );
        assert_eq!(
            b(json!({"policyName": "p", "validationActions": ["Deny", "Warn", "Deny"]})),
            vec![
                ("spec.validationActions[2]".into(), "Duplicate value: \"Deny\"".into()),
                ("spec.validationActions".into(), "Invalid value: [\"Deny\",\"Warn\",\"Deny\"]: must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)".into()),
            ]
        );
        assert_eq!(
            b(
                json!({"policyName": "p", "validationActions": ["Deny"], "paramRef": {"name": "a", "selector": {}}})
            ),
            vec![
                (
                    "spec.paramRef.name".into(),
                    "Forbidden: name and selector are mutually exclusive".into()
                ),
                (
                    "spec.paramRef.selector".into(),
                    "Forbidden: name and selector are mutually exclusive".into()
                ),
            ]
        );
        assert_eq!(
            b(
                json!({"policyName": "p", "validationActions": ["Deny"], "paramRef": {"parameterNotFoundAction": "Maybe"}})
            ),
            vec![
                (
                    "spec.paramRef".into(),
                    "Required value: one of name or selector must be specified".into()
                ),
                (
                    "spec.paramRef.parameterNotFoundAction".into(),
                    "Unsupported value: \"Maybe\": supported values: \"Deny\", \"Allow\"".into()
                ),
            ]
        );
    }

    #[test]
    fn defaults_and_cells() {
        let mut v =
            json!({"spec": {"matchConstraints": {"resourceRules": [{"operations": ["*"]}]}}});
        default_policy(v.as_object_mut().unwrap(), true);
        assert_eq!(
            v,
            json!({"spec": {"failurePolicy": "Fail", "reinvocationPolicy": "Never",
                "matchConstraints": {"matchPolicy": "Equivalent", "namespaceSelector": {}, "objectSelector": {},
                    "resourceRules": [{"operations": ["*"], "scope": "*"}]}}})
        );
        assert_eq!(param_kind_cell(&json!({"spec": {}})), "<unset>");
        assert_eq!(
            param_kind_cell(
                &json!({"spec": {"paramKind": {"apiVersion": "v1", "kind": "ConfigMap"}}})
            ),
            "v1/ConfigMap"
        );
        assert_eq!(
            param_ref_cell(&json!({"spec": {"paramRef": {"name": "a"}}})),
            "*/a"
        );
        assert_eq!(
            param_ref_cell(&json!({"spec": {"paramRef": {"name": "a", "namespace": "n"}}})),
            "n/a"
        );
        assert_eq!(
            param_ref_cell(&json!({"spec": {"paramRef": {"selector": {"matchLabels": {"b": "2", "a": "1"},
                "matchExpressions": [{"key": "k", "operator": "In", "values": ["x", "y"]}]}}}})),
            "&LabelSelector{MatchLabels:map[string]string{a: 1,b: 2,},MatchExpressions:[]LabelSelectorRequirement{LabelSelectorRequirement{Key:k,Operator:In,Values:[x y],},},}"
        );
    }
}
