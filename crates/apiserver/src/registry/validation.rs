//! Upstream-compatible validation of built-in Kubernetes objects.
//!
//! This module ports the parts of kube-apiserver's hand-written validation
//! (`k8s.io/apimachinery/pkg/api/validation`, `pkg/apis/{core,apps,batch,
//! coordination,policy}/validation`) that reject obviously bad input, and
//! reproduces the resulting `field.Error` causes with upstream wording:
//! the cause `reason` is the upstream `field.ErrorType`, the `message` is what
//! `field.Error.ErrorBody()` renders (type prefix, rendered bad value, detail)
//! and `field` is the upstream field path (`spec.template.spec.containers[0].image`).
//!
//! Objects are validated as `serde_json::Value` in their versioned (v1) JSON
//! form, after defaulting. Fields that upstream defaulting always fills in
//! (`terminationMessagePolicy`, `imagePullPolicy`, `protocol`, `restartPolicy`,
//! `dnsPolicy`, `sessionAffinity`, service `type`, strategy types, ...) are only
//! checked when present, so a server with incomplete defaulting does not emit
//! spurious `Required value` causes. Values of unexpected JSON types are skipped
//! (the server reports type errors separately); nothing here panics.
//!
//! Value rendering follows `ErrorBody()` of apimachinery 1.36: plain Go strings
//! are `%q`-quoted, integers are printed plainly and every other value
//! (typed strings, maps, structs, pointers) is rendered with `encoding/json`
//! (sorted map keys, struct field order, HTML-safe escaping).

use crate::registry::catalog::ResourceDef;
use apimachinery::field::{Bad, Cause, ErrorList as Errs, IMMUTABLE};
use apimachinery::gofmt::quote as go_quote;
use apimachinery::names::{
    is_label_value as label_value_errs, is_percent as percent_errs,
    is_qualified_name as qualified_name_errs, NameRule,
};
use apimachinery::selector::LabelSelector;
use serde_json::{Map, Value};

/// What the kinds' validation code uses: the shared checks and JSON accessors.
pub(crate) mod prelude {
    pub(crate) use super::*;
    pub(crate) use apimachinery::field::{Bad, ErrorList as Errs, IMMUTABLE};
    pub(crate) use apimachinery::gofmt::quote as go_quote;
    pub(crate) use apimachinery::names::{
        is_config_map_key as config_map_key_errs, is_dns1123_label as dns1123_label_errs,
        is_dns1123_subdomain as dns1123_subdomain_errs, is_env_var_name as env_var_name_errs,
        is_port_name as port_name_errs, is_qualified_name as qualified_name_errs, NameRule,
    };
    pub(crate) use apimachinery::selector::LabelSelector;
    pub(crate) use serde_json::{Map, Value};
}

pub(crate) const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;
pub(crate) const MAX_SECRET_SIZE: usize = 1024 * 1024;
pub(crate) const PORT_RANGE: &str = "must be between 1 and 65535, inclusive";

// ---------------------------------------------------------------------------
// Public entry points
// ---------------------------------------------------------------------------

/// Validates `obj` (already defaulted) of the built-in kind `group`/`version`/`kind`
/// through its strategy; `old` is the stored object on update.
#[cfg(test)]
pub fn validate(
    group: &str,
    version: &str,
    kind: &str,
    _namespaced: bool,
    obj: &Value,
    old: Option<&Value>,
) -> Vec<Cause> {
    let def = crate::registry::catalog::Catalog::builtin()
        .by_kind(group, version, kind)
        .unwrap_or_else(|| panic!("no built-in kind {group}/{version} {kind}"));
    def.strategy.validate(def, obj, old)
}

// ---------------------------------------------------------------------------
// field.Error construction and rendering
// ---------------------------------------------------------------------------

pub(crate) fn s(v: &str) -> Bad {
    Bad::str(v)
}

/// A typed Go string (e.g. `core.Protocol`), rendered through encoding/json.
pub(crate) fn js(v: &str) -> Bad {
    Bad::typed(v)
}

/// A Go `map[string]string` as encoding/json renders it: sorted keys, `null` when absent.
pub(crate) fn map_json(m: Option<&Map<String, Value>>) -> Value {
    match m {
        None => Value::Null,
        Some(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let mut out = Map::new();
            for k in keys {
                out.insert(k.clone(), m[k].clone());
            }
            Value::Object(out)
        }
    }
}

/// A `*metav1.LabelSelector` as encoding/json renders it (json tags, omitempty).
pub(crate) fn selector_json(sel: Option<&Value>) -> Value {
    let Some(sel) = sel.filter(|v| v.is_object()) else {
        return Value::Null;
    };
    let mut out = Map::new();
    if let Some(ml) = obj(sel, "matchLabels").filter(|m| !m.is_empty()) {
        out.insert("matchLabels".into(), map_json(Some(ml)));
    }
    if let Some(me) = arr(sel, "matchExpressions").filter(|a| !a.is_empty()) {
        let exprs = me
            .iter()
            .map(|x| {
                let mut r = Map::new();
                r.insert(
                    "key".into(),
                    Value::String(st(x, "key").unwrap_or("").into()),
                );
                r.insert(
                    "operator".into(),
                    Value::String(st(x, "operator").unwrap_or("").into()),
                );
                if let Some(vals) = arr(x, "values").filter(|a| !a.is_empty()) {
                    r.insert("values".into(), Value::Array(vals.clone()));
                }
                Value::Object(r)
            })
            .collect();
        out.insert("matchExpressions".into(), Value::Array(exprs));
    }
    Value::Object(out)
}

/// An `intstr.IntOrString` as encoding/json renders it.
pub(crate) fn intstr_json(v: Option<&Value>) -> Value {
    match v {
        Some(Value::String(s)) => Value::String(s.clone()),
        Some(Value::Number(n)) => Value::Number(n.clone()),
        _ => Value::from(0),
    }
}

// ---------------------------------------------------------------------------
// JSON access helpers (never panic on unexpected types)
// ---------------------------------------------------------------------------

pub(crate) fn get<'a>(v: &'a Value, k: &str) -> Option<&'a Value> {
    v.as_object()?.get(k).filter(|x| !x.is_null())
}
pub(crate) fn st<'a>(v: &'a Value, k: &str) -> Option<&'a str> {
    get(v, k)?.as_str()
}
pub(crate) fn int(v: &Value, k: &str) -> Option<i64> {
    as_int(get(v, k)?)
}
pub(crate) fn as_int(x: &Value) -> Option<i64> {
    x.as_i64()
        .or_else(|| x.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64))
}
pub(crate) fn obj<'a>(v: &'a Value, k: &str) -> Option<&'a Map<String, Value>> {
    get(v, k)?.as_object()
}
pub(crate) fn arr<'a>(v: &'a Value, k: &str) -> Option<&'a Vec<Value>> {
    get(v, k)?.as_array()
}
pub(crate) fn boolean(v: &Value, k: &str) -> Option<bool> {
    get(v, k)?.as_bool()
}
pub(crate) fn items<'a>(v: &'a Value, k: &str) -> &'a [Value] {
    arr(v, k).map(|a| a.as_slice()).unwrap_or(&[])
}
pub(crate) fn str_entries(m: Option<&Map<String, Value>>) -> Vec<(&str, &str)> {
    m.map(|m| {
        m.iter()
            .filter_map(|(k, v)| v.as_str().map(|v| (k.as_str(), v)))
            .collect()
    })
    .unwrap_or_default()
}
pub(crate) fn child(p: &str, name: &str) -> String {
    if p.is_empty() {
        name.to_string()
    } else {
        format!("{p}.{name}")
    }
}
pub(crate) fn index(p: &str, i: usize) -> String {
    format!("{p}[{i}]")
}
pub(crate) fn key(p: &str, k: &str) -> String {
    format!("{p}[{k}]")
}
/// Semantic JSON equality where `null` and an absent key are the same.
pub(crate) fn json_eq(a: Option<&Value>, b: Option<&Value>) -> bool {
    fn norm(v: Option<&Value>) -> Option<&Value> {
        v.filter(|x| !x.is_null())
    }
    match (norm(a), norm(b)) {
        (None, None) => true,
        (Some(Value::Object(x)), Some(Value::Object(y))) => {
            x.iter().all(|(k, v)| json_eq(Some(v), y.get(k)))
                && y.iter().all(|(k, v)| json_eq(x.get(k), Some(v)))
        }
        (Some(Value::Array(x)), Some(Value::Array(y))) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_eq(Some(a), Some(b)))
        }
        (Some(Value::Number(x)), Some(Value::Number(y))) => x.as_f64() == y.as_f64(),
        (Some(x), Some(y)) => x == y,
        _ => false,
    }
}

// ---------------------------------------------------------------------------
// Label selectors
// ---------------------------------------------------------------------------

/// `ValidateLabels`.
pub(crate) fn validate_labels(e: &mut Errs, m: Option<&Map<String, Value>>, path: &str) {
    for (k, v) in str_entries(m) {
        e.each(path, k, qualified_name_errs(k));
        e.each(path, v, label_value_errs(v));
    }
}

/// `ValidateLabelSelector`; returns true when `LabelSelectorAsSelector` would succeed.
pub(crate) fn validate_label_selector(e: &mut Errs, sel: &Value, path: &str) -> bool {
    let before = e.0.len();
    validate_labels(e, obj(sel, "matchLabels"), &child(path, "matchLabels"));
    for (i, expr) in items(sel, "matchExpressions").iter().enumerate() {
        let p = index(&child(path, "matchExpressions"), i);
        let op = st(expr, "operator").unwrap_or("");
        let values = items(expr, "values");
        match op {
            "In" | "NotIn" => {
                if values.is_empty() {
                    e.required(
                        &child(&p, "values"),
                        "must be specified when `operator` is 'In' or 'NotIn'",
                    );
                }
            }
            "Exists" | "DoesNotExist" => {
                if !values.is_empty() {
                    e.forbidden(
                        &child(&p, "values"),
                        "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                    );
                }
            }
            _ => e.invalid(
                &child(&p, "operator"),
                js(op),
                "not a valid selector operator",
            ),
        }
        let k = st(expr, "key").unwrap_or("");
        e.each(&child(&p, "key"), k, qualified_name_errs(k));
        for (j, v) in values.iter().enumerate() {
            if let Some(v) = v.as_str() {
                e.each(&index(&child(&p, "values"), j), v, label_value_errs(v));
            }
        }
    }
    e.0.len() == before
}

/// `LabelSelectorAsSelector` of a selector that passed validation: `labels.Nothing()`
/// when absent or not an object.
pub(crate) fn parse_selector(sel: Option<&Value>) -> LabelSelector {
    sel.and_then(|s| LabelSelector::from_label_selector_json(s).ok())
        .unwrap_or_else(LabelSelector::nothing)
}

/// Whether `sel` matches the labels of an object's metadata (none: the empty set).
pub(crate) fn selects(sel: &LabelSelector, labels: Option<&Map<String, Value>>) -> bool {
    sel.matches(|k| labels.and_then(|m| m.get(k)).and_then(Value::as_str))
}

// ---------------------------------------------------------------------------
// IntOrString helpers (apps validation)
// ---------------------------------------------------------------------------

/// `ValidatePositiveIntOrPercent`.
pub(crate) fn validate_positive_int_or_percent(e: &mut Errs, v: Option<&Value>, path: &str) {
    match v {
        Some(Value::String(s)) => {
            for m in percent_errs(s) {
                e.invalid(path, js(s), &m);
            }
        }
        Some(x) => e.nonnegative(path, as_int(x)),
        None => {}
    }
}

pub(crate) fn percent_value(v: Option<&Value>) -> Option<i64> {
    match v {
        Some(Value::String(s)) if percent_errs(s).is_empty() => s[..s.len() - 1].parse().ok(),
        _ => None,
    }
}

/// `getIntOrPercentValue`.
pub(crate) fn int_or_percent_value(v: Option<&Value>) -> i64 {
    if let Some(p) = percent_value(v) {
        return p;
    }
    match v {
        Some(Value::String(s)) => s.parse().unwrap_or(0),
        Some(x) => as_int(x).unwrap_or(0),
        None => 0,
    }
}

/// `IsNotMoreThan100Percent`.
pub(crate) fn not_more_than_100_percent(e: &mut Errs, v: Option<&Value>, path: &str) {
    if percent_value(v).is_some_and(|p| p > 100) {
        e.invalid(
            path,
            Bad::Json(intstr_json(v)),
            "must not be greater than 100%",
        );
    }
}

// ---------------------------------------------------------------------------
// Per-kind validation
// ---------------------------------------------------------------------------

/// What validation of one object knows: the kind's catalogue entry and, on update, the
/// stored object.
pub struct Ctx<'a> {
    pub(crate) group: &'a str,
    pub(crate) version: &'a str,
    pub(crate) namespaced: bool,
    /// The stored object on update; `None` on create.
    pub old: Option<&'a Value>,
}

impl<'a> Ctx<'a> {
    /// Validation of an object of `def` (`old`: the stored object on update).
    pub fn new(def: &'a ResourceDef, old: Option<&'a Value>) -> Ctx<'a> {
        Ctx {
            group: def.group,
            version: def.version,
            namespaced: def.namespaced,
            old,
        }
    }

    /// The metadata checks alone (`ValidateObjectMeta` / `ValidateObjectMetaUpdate`),
    /// with the name rule of the kind. Kinds whose upstream validation calls core's
    /// `ValidateObjectMeta` (core, apps, batch) also run the legacy "standard finalizer
    /// name" check.
    pub fn meta_only(&self, obj: &Value, rule: NameRule) -> Vec<Cause> {
        let mut e = Errs::default();
        let kube_finalizers =
            self.group.is_empty() || self.group == "apps" || self.group == "batch";
        self.meta(&mut e, obj, rule, kube_finalizers);
        e.0
    }

    /// Run the kind's checks, collecting their causes.
    pub fn check(&self, f: impl FnOnce(&Self, &mut Errs)) -> Vec<Cause> {
        let mut e = Errs::default();
        f(self, &mut e);
        e.0
    }
}

impl Ctx<'_> {
    /// Object metadata: `ValidateObjectMeta` on create, `ValidateObjectMetaUpdate` on update.
    pub(crate) fn meta(&self, e: &mut Errs, o: &Value, rule: NameRule, kube_finalizers: bool) {
        match self.old {
            None => self.meta_create(e, o, rule, kube_finalizers),
            Some(old) => self.meta_update(e, o, old, kube_finalizers),
        }
    }

    /// `ValidateObjectMeta` (core wrapper when `kube_finalizers`).
    pub(crate) fn meta_create(
        &self,
        e: &mut Errs,
        o: &Value,
        rule: NameRule,
        kube_finalizers: bool,
    ) {
        let empty = Value::Object(Map::new());
        let m = get(o, "metadata").unwrap_or(&empty);
        if let Some(gn) = st(m, "generateName").filter(|g| !g.is_empty()) {
            e.each("metadata.generateName", gn, rule.check(gn, true));
        }
        match st(m, "name").filter(|n| !n.is_empty()) {
            None => e.required("metadata.name", "name or generateName is required"),
            Some(n) => e.each("metadata.name", n, rule.check(n, false)),
        }
        if self.namespaced {
            match st(m, "namespace").filter(|n| !n.is_empty()) {
                None => e.required("metadata.namespace", ""),
                Some(ns) => e.each("metadata.namespace", ns, NameRule::Label.check(ns, false)),
            }
        } else if st(m, "namespace").is_some_and(|n| !n.is_empty()) {
            e.forbidden("metadata.namespace", "not allowed on this type");
        }
        e.nonnegative("metadata.generation", int(m, "generation"));
        validate_labels(e, obj(m, "labels"), "metadata.labels");
        validate_annotations(e, obj(m, "annotations"), "metadata.annotations");
        validate_owner_references(e, m);
        validate_finalizers(e, m);
        if kube_finalizers {
            kube_finalizer_checks(e, m);
        }
    }

    /// `ValidateObjectMetaUpdate` (core wrapper when `kube_finalizers`).
    pub(crate) fn meta_update(&self, e: &mut Errs, o: &Value, old: &Value, kube_finalizers: bool) {
        let empty = Value::Object(Map::new());
        let m = get(o, "metadata").unwrap_or(&empty);
        let om = get(old, "metadata").unwrap_or(&empty);
        if get(om, "deletionTimestamp").is_some() {
            let old_f: Vec<&str> = items(om, "finalizers")
                .iter()
                .filter_map(|v| v.as_str())
                .collect();
            let mut extra: Vec<&str> = items(m, "finalizers")
                .iter()
                .filter_map(|v| v.as_str())
                .filter(|f| !old_f.contains(f))
                .collect();
            extra.sort();
            extra.dedup();
            if !extra.is_empty() {
                let list: Vec<String> = extra.iter().map(|f| go_quote(f)).collect();
                e.forbidden(
                    "metadata.finalizers",
                    &format!(
                        "no new finalizers can be added if the object is being deleted, found new finalizers []string{{{}}}",
                        list.join(", ")
                    ),
                );
            }
        }
        if let (Some(n), Some(on)) = (int(m, "generation"), int(om, "generation")) {
            if n < on {
                e.invalid(
                    "metadata.generation",
                    Bad::Int(n),
                    "must not be decremented",
                );
            }
        }
        for f in ["name", "namespace"] {
            let (n, on) = (st(m, f).unwrap_or(""), st(om, f).unwrap_or(""));
            if n != on {
                e.invalid(&format!("metadata.{f}"), s(n), IMMUTABLE);
            }
        }
        // An empty uid is filled from the stored object by the registry.
        if let (Some(u), Some(ou)) = (st(m, "uid").filter(|u| !u.is_empty()), st(om, "uid")) {
            if u != ou {
                e.invalid("metadata.uid", js(u), IMMUTABLE);
            }
        }
        validate_labels(e, obj(m, "labels"), "metadata.labels");
        validate_annotations(e, obj(m, "annotations"), "metadata.annotations");
        validate_owner_references(e, m);
        if kube_finalizers {
            kube_finalizer_checks(e, m);
        }
    }

    pub(crate) fn is_update(&self) -> bool {
        self.old.is_some()
    }

    // ----- core/v1 -----

    // ----- apps/v1 -----

    // ----- batch/v1 -----

    // ----- coordination.k8s.io/v1, policy/v1 -----
}

// ---------------------------------------------------------------------------
// Shared object-meta helpers
// ---------------------------------------------------------------------------

/// `ValidateAnnotations`.
pub(crate) fn validate_annotations(e: &mut Errs, m: Option<&Map<String, Value>>, path: &str) {
    let mut total = 0usize;
    for (k, v) in m.into_iter().flatten() {
        e.each(path, k, qualified_name_errs(&k.to_lowercase()));
        total += k.len() + v.as_str().map_or(0, str::len);
    }
    if total > TOTAL_ANNOTATION_SIZE_LIMIT {
        e.too_long(path, TOTAL_ANNOTATION_SIZE_LIMIT);
    }
}

/// `ValidateOwnerReferences`.
pub(crate) fn validate_owner_references(e: &mut Errs, meta: &Value) {
    let path = "metadata.ownerReferences";
    let refs = items(meta, "ownerReferences");
    let mut first_controller: Option<String> = None;
    for r in refs {
        let api_version = st(r, "apiVersion").unwrap_or("");
        let kind = st(r, "kind").unwrap_or("");
        let (group, version) = match api_version.rsplit_once('/') {
            Some((g, v)) => (g, v),
            None => ("", api_version),
        };
        if version.is_empty() {
            e.invalid(
                &child(path, "apiVersion"),
                s(api_version),
                "version must not be empty",
            );
        }
        if kind.is_empty() {
            e.invalid(&child(path, "kind"), s(kind), "must not be empty");
        }
        if st(r, "name").unwrap_or("").is_empty() {
            e.invalid(&child(path, "name"), s(""), "must not be empty");
        }
        if st(r, "uid").unwrap_or("").is_empty() {
            e.invalid(&child(path, "uid"), js(""), "must not be empty");
        }
        if group.is_empty() && version == "v1" && kind == "Event" {
            e.invalid(
                path,
                Bad::Json(r.clone()),
                "/v1, Kind=Event is disallowed from being an owner",
            );
        }
        if boolean(r, "controller") == Some(true) {
            let cur = format!("{kind}/{}", st(r, "name").unwrap_or(""));
            match &first_controller {
                Some(first) => e.invalid(
                    path,
                    Bad::Json(Value::Array(refs.to_vec())),
                    &format!(
                        "Only one reference can have Controller set to true. Found \"true\" in references for {first} and {cur}"
                    ),
                ),
                None => first_controller = Some(cur),
            }
        }
    }
}

/// `ValidateFinalizers` (apimachinery).
pub(crate) fn validate_finalizers(e: &mut Errs, meta: &Value) {
    let path = "metadata.finalizers";
    let fins: Vec<&str> = items(meta, "finalizers")
        .iter()
        .filter_map(|v| v.as_str())
        .collect();
    for f in &fins {
        e.each(path, f, qualified_name_errs(f));
    }
    if fins.contains(&"orphan") && fins.contains(&"foregroundDeletion") {
        let v = Value::Array(fins.iter().map(|f| Value::from(*f)).collect());
        e.invalid(
            path,
            Bad::Json(v),
            "finalizer orphan and foregroundDeletion cannot be both set",
        );
    }
}

/// Core's `validateKubeFinalizerName` for every `metadata.finalizers[i]`.
pub(crate) fn kube_finalizer_checks(e: &mut Errs, meta: &Value) {
    for (i, f) in items(meta, "finalizers").iter().enumerate() {
        if let Some(f) = f.as_str() {
            kube_finalizer_name(e, f, &index("metadata.finalizers", i));
        }
    }
}

pub(crate) fn kube_finalizer_name(e: &mut Errs, f: &str, path: &str) {
    if !f.contains('/') && !["kubernetes", "orphan", "foregroundDeletion"].contains(&f) {
        e.invalid(
            path,
            s(f),
            "name is neither a standard finalizer name nor is it fully qualified",
        );
    }
}

pub(crate) fn base64_decoded_len(v: &str) -> usize {
    let trimmed = v.trim_end_matches('=');
    trimmed.len() * 3 / 4
}

// ---------------------------------------------------------------------------
// Pod templates and pod specs (core validation)
// ---------------------------------------------------------------------------

// ---------------------------------------------------------------------------
// CronJob schedule and time zone
// ---------------------------------------------------------------------------

// ---------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    /// The messages the kind's name rule gives for `metadata.name` (through the kind's
    /// validation).
    fn object_name_errors(kind: &str, group: &str, name: &str) -> Vec<String> {
        let def = crate::registry::catalog::Catalog::builtin()
            .by_kind(group, "v1", kind)
            .expect("known kind");
        let mut obj = json!({"metadata": {"name": name}});
        if def.namespaced {
            obj["metadata"]["namespace"] = json!("ns");
        }
        let prefix = format!("Invalid value: {}: ", go_quote(name));
        def.strategy
            .validate(def, &obj, None)
            .into_iter()
            .filter(|c| c.field == "metadata.name")
            .filter_map(|c| c.message.strip_prefix(&prefix).map(str::to_string))
            .collect()
    }

    use super::*;
    use serde_json::json;

    fn msgs(c: &[Cause]) -> Vec<String> {
        c.iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    const SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

    fn good_deployment() -> Value {
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "golden"},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"app": "x"}},
                "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
                "template": {
                    "metadata": {"labels": {"app": "x"}},
                    "spec": {
                        "containers": [{"name": "c", "image": "nginx", "imagePullPolicy": "IfNotPresent",
                            "terminationMessagePolicy": "File"}],
                        "restartPolicy": "Always", "dnsPolicy": "ClusterFirst", "terminationGracePeriodSeconds": 30
                    }
                }
            }
        })
    }

    /// The recorded kube-apiserver answer `errors/invalid-deployment.json`.
    #[test]
    fn invalid_deployment_fixture() {
        let mut d = good_deployment();
        d["metadata"]["name"] = json!("Bad_Name");
        d["spec"]["replicas"] = json!(-1);
        d["spec"]["template"]["metadata"]["labels"] = json!({"app": "y"});
        d["spec"]["template"]["spec"]["containers"][0]
            .as_object_mut()
            .unwrap()
            .remove("image");
        let got = validate("apps", "v1", "Deployment", true, &d, None);
        let want = vec![
            Cause {
                reason: "FieldValueInvalid".into(),
                message: format!("Invalid value: \"Bad_Name\": {SUBDOMAIN_MSG}"),
                field: "metadata.name".into(),
            },
            Cause {
                reason: "FieldValueInvalid".into(),
                message: "Invalid value: -1: must be greater than or equal to 0".into(),
                field: "spec.replicas".into(),
            },
            Cause {
                reason: "FieldValueInvalid".into(),
                message:
                    "Invalid value: {\"app\":\"y\"}: `selector` does not match template `labels`"
                        .into(),
                field: "spec.template.metadata.labels".into(),
            },
            Cause {
                reason: "FieldValueRequired".into(),
                message: "Required value".into(),
                field: "spec.template.spec.containers[0].image".into(),
            },
        ];
        assert_eq!(got, want);
        // The recorded answer agrees cause for cause.
        {
            let v = crate::reference::fixture("errors/invalid-deployment.json");
            let causes = v["body"]["details"]["causes"].as_array().unwrap();
            assert_eq!(causes.len(), got.len());
            for (c, g) in causes.iter().zip(&got) {
                assert_eq!(c["field"], g.field.as_str());
                assert_eq!(c["message"], g.message.as_str());
                assert_eq!(c["reason"], g.reason.as_ref());
            }
        }
    }

    #[test]
    fn valid_objects_have_no_causes() {
        assert!(validate("apps", "v1", "Deployment", true, &good_deployment(), None).is_empty());
        let cm = json!({"metadata": {"name": "cm1", "namespace": "ns"}, "data": {"a.b": "x"}});
        assert!(validate("", "v1", "ConfigMap", true, &cm, None).is_empty());
        let ns = json!({"metadata": {"name": "golden"}, "spec": {"finalizers": ["kubernetes"]}});
        assert!(validate("", "v1", "Namespace", false, &ns, None).is_empty());
        let svc = json!({"metadata": {"name": "svc", "namespace": "ns"},
            "spec": {"ports": [{"port": 80, "protocol": "TCP", "targetPort": 8080}], "type": "ClusterIP",
                     "sessionAffinity": "None", "internalTrafficPolicy": "Cluster", "selector": {"app": "x"}}});
        assert!(validate("", "v1", "Service", true, &svc, None).is_empty());
        let cj = json!({"metadata": {"name": "cj", "namespace": "ns"}, "spec": {"schedule": "*/5 * * * *",
            "concurrencyPolicy": "Allow",
            "jobTemplate": {"spec": {"template": {"spec": {"restartPolicy": "OnFailure",
                "containers": [{"name": "c", "image": "busybox"}]}}}}}});
        assert!(
            validate("batch", "v1", "CronJob", true, &cj, None).is_empty(),
            "{:?}",
            validate("batch", "v1", "CronJob", true, &cj, None)
        );
        let role = json!({"metadata": {"name": "system:Anything_Goes", "namespace": "n"}});
        assert!(validate("rbac.authorization.k8s.io", "v1", "Role", true, &role, None).is_empty());
        // custom resources: DNS-1123 subdomain names
        let cr = json!({"metadata": {"name": "Bad_Name"}});
        let any = crate::registry::catalog::Catalog::builtin()
            .by_kind("", "v1", "Node")
            .expect("nodes");
        assert_eq!(
            msgs(&Ctx::new(any, None).meta_only(&cr, NameRule::Subdomain)),
            vec![format!(
                "metadata.name: Invalid value: \"Bad_Name\": {SUBDOMAIN_MSG}"
            )]
        );
    }

    #[test]
    fn object_names_follow_each_kinds_rule() {
        assert_eq!(
            object_name_errors("Role", "rbac.authorization.k8s.io", "a/b%"),
            vec![
                "may not contain '/'".to_string(),
                "may not contain '%'".to_string()
            ]
        );
        assert_eq!(
            object_name_errors("ClusterRole", "rbac.authorization.k8s.io", ".."),
            vec!["may not be '..'".to_string()]
        );
        assert!(object_name_errors("Role", "rbac.authorization.k8s.io", "system:admin").is_empty());
        assert_eq!(
            object_name_errors("Namespace", "", "a.b"),
            vec!["must not contain dots".to_string()]
        );
        assert_eq!(
            object_name_errors("Service", "", "1abc"),
            vec!["a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')".to_string()]
        );
        assert_eq!(
            object_name_errors("ConfigMap", "", &"a".repeat(254)),
            vec!["must be no more than 253 characters".to_string()]
        );
    }

    // Ported from TestValidateObjectMeta* in
    // staging/src/k8s.io/apimachinery/pkg/api/validation/objectmeta_test.go.
    #[test]
    fn object_meta() {
        let cm = json!({"metadata": {"generateName": "x-", "namespace": "ns"}});
        assert_eq!(
            msgs(&validate("", "v1", "ConfigMap", true, &cm, None)),
            vec!["metadata.name: Required value: name or generateName is required"]
        );
        let cm = json!({"metadata": {"name": "a", "namespace": "Bad", "generation": -2,
            "labels": {"bad key!": "ok", "k": "-bad"},
            "finalizers": ["orphan", "foregroundDeletion", "x/y", "custom"],
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Event", "name": "e", "uid": "1"},
                {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "a", "uid": "2", "controller": true},
                {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "b", "uid": "3", "controller": true}]}});
        let got = validate("", "v1", "ConfigMap", true, &cm, None);
        let fields: Vec<&str> = got.iter().map(|c| c.field.as_str()).collect();
        assert_eq!(
            fields,
            vec![
                "metadata.namespace",
                "metadata.generation",
                "metadata.labels",
                "metadata.labels",
                "metadata.ownerReferences",
                "metadata.ownerReferences",
                "metadata.finalizers",
                "metadata.finalizers[3]"
            ]
        );
        assert_eq!(
            got[1].message,
            "Invalid value: -2: must be greater than or equal to 0"
        );
        assert!(got[4]
            .message
            .ends_with(": /v1, Kind=Event is disallowed from being an owner"));
        assert!(got[4]
            .message
            .starts_with("Invalid value: {\"apiVersion\":\"v1\",\"kind\":\"Event\""));
        assert!(got[5]
            .message
            .ends_with("Only one reference can have Controller set to true. Found \"true\" in references for ReplicaSet/a and ReplicaSet/b"));
        assert_eq!(
            got[6].message,
            "Invalid value: [\"orphan\",\"foregroundDeletion\",\"x/y\",\"custom\"]: finalizer orphan and foregroundDeletion cannot be both set"
        );
        assert_eq!(
            got[7].message,
            "Invalid value: \"custom\": name is neither a standard finalizer name nor is it fully qualified"
        );
        // Cluster-scoped kinds forbid a namespace.
        let ns = json!({"metadata": {"name": "a", "namespace": "b"}});
        assert_eq!(
            msgs(&validate("", "v1", "Namespace", false, &ns, None)),
            vec!["metadata.namespace: Forbidden: not allowed on this type"]
        );
        // Annotation size limit (TestValidateAnnotations "too big").
        let big = "x".repeat(TOTAL_ANNOTATION_SIZE_LIMIT);
        let cm = json!({"metadata": {"name": "a", "namespace": "n", "annotations": {"a": big}}});
        assert_eq!(
            msgs(&validate("", "v1", "ConfigMap", true, &cm, None)),
            vec!["metadata.annotations: Too long: may not be more than 262144 bytes"]
        );
        // generateName with a trailing dash is accepted (maskTrailingDash).
        let cm = json!({"metadata": {"name": "x-abcde", "generateName": "x-", "namespace": "n"}});
        assert!(validate("", "v1", "ConfigMap", true, &cm, None).is_empty());
    }

    #[test]
    fn object_meta_update() {
        let old = json!({"metadata": {"name": "a", "namespace": "n", "uid": "1", "generation": 3,
            "deletionTimestamp": "2024-01-01T00:00:00Z", "finalizers": ["x/a"]}});
        let new = json!({"metadata": {"name": "b", "namespace": "n", "uid": "2", "generation": 2,
            "finalizers": ["x/a", "x/b"]}});
        assert_eq!(
            msgs(&validate("", "v1", "Namespace", false, &new, Some(&old))),
            vec![
                "metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{\"x/b\"}",
                "metadata.generation: Invalid value: 2: must not be decremented",
                "metadata.name: Invalid value: \"b\": field is immutable",
                "metadata.uid: Invalid value: \"2\": field is immutable",
            ]
        );
    }

    // Ported from TestValidateDeployment / TestValidateDeploymentUpdate (pkg/apis/apps/validation).
    #[test]
    fn deployment_cases() {
        let mut d = good_deployment();
        d["spec"]["selector"] = json!({});
        assert_eq!(
            msgs(&validate("apps", "v1", "Deployment", true, &d, None)),
            vec!["spec.selector: Invalid value: {}: empty selector is invalid for deployment"]
        );
        let mut d = good_deployment();
        d["spec"].as_object_mut().unwrap().remove("selector");
        assert_eq!(
            msgs(&validate("apps", "v1", "Deployment", true, &d, None)),
            vec![
                "spec.selector: Required value",
                "spec.template.metadata.labels: Invalid value: {\"app\":\"x\"}: `selector` does not match template `labels`"
            ]
        );
        let mut d = good_deployment();
        d["spec"]["selector"] = json!({"matchExpressions": [{"key": "app", "operator": "Bogus"}]});
        assert_eq!(
            msgs(&validate("apps", "v1", "Deployment", true, &d, None)),
            vec![
                "spec.selector.matchExpressions[0].operator: Invalid value: \"Bogus\": not a valid selector operator",
                "spec.selector: Invalid value: {\"matchExpressions\":[{\"key\":\"app\",\"operator\":\"Bogus\"}]}: invalid label selector"
            ]
        );
        let mut d = good_deployment();
        d["spec"]["strategy"] = json!({"type": "Foo"});
        assert_eq!(
            msgs(&validate("apps", "v1", "Deployment", true, &d, None)),
            vec!["spec.strategy: Unsupported value: {\"Type\":\"Foo\",\"RollingUpdate\":null}: supported values: \"Recreate\", \"RollingUpdate\""]
        );
        let mut d = good_deployment();
        d["spec"]["strategy"] = json!({"type": "Recreate", "rollingUpdate": {}});
        assert_eq!(
            msgs(&validate("apps", "v1", "Deployment", true, &d, None)),
            vec!["spec.strategy.rollingUpdate: Forbidden: may not be specified when strategy `type` is 'Recreate'"]
        );
        let mut d = good_deployment();
        d["spec"]["strategy"]["rollingUpdate"] = json!({"maxUnavailable": "110%", "maxSurge": 0});
        assert_eq!(
            msgs(&validate("apps", "v1", "Deployment", true, &d, None)),
            vec!["spec.strategy.rollingUpdate.maxUnavailable: Invalid value: \"110%\": must not be greater than 100%"]
        );
        let mut d = good_deployment();
        d["spec"]["strategy"]["rollingUpdate"] = json!({"maxUnavailable": 0, "maxSurge": "0%"});
        assert_eq!(
            msgs(&validate("apps", "v1", "Deployment", true, &d, None)),
            vec!["spec.strategy.rollingUpdate.maxUnavailable: Invalid value: 0: may not be 0 when `maxSurge` is 0"]
        );
        let mut d = good_deployment();
        d["spec"]["strategy"]["rollingUpdate"] = json!({"maxUnavailable": "abc", "maxSurge": -1});
        assert_eq!(
            msgs(&validate("apps", "v1", "Deployment", true, &d, None)),
            vec![
                "spec.strategy.rollingUpdate.maxUnavailable: Invalid value: \"abc\": a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')",
                "spec.strategy.rollingUpdate.maxSurge: Invalid value: -1: must be greater than or equal to 0"
            ]
        );
        let mut d = good_deployment();
        d["spec"]["progressDeadlineSeconds"] = json!(5);
        d["spec"]["minReadySeconds"] = json!(5);
        assert_eq!(
            msgs(&validate("apps", "v1", "Deployment", true, &d, None)),
            vec!["spec.progressDeadlineSeconds: Invalid value: 5: must be greater than minReadySeconds"]
        );
        let mut d = good_deployment();
        d["spec"]["template"]["spec"]["restartPolicy"] = json!("OnFailure");
        d["spec"]["template"]["spec"]["activeDeadlineSeconds"] = json!(10);
        assert_eq!(
            msgs(&validate("apps", "v1", "Deployment", true, &d, None)),
            vec![
                "spec.template.spec.restartPolicy: Unsupported value: \"OnFailure\": supported values: \"Always\"",
                "spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in ReplicaSet is not Supported"
            ]
        );
        // Immutable selector for apps/v1.
        let old = good_deployment();
        let mut d = good_deployment();
        d["spec"]["selector"] = json!({"matchLabels": {"app": "x", "tier": "b"}});
        d["spec"]["template"]["metadata"]["labels"] = json!({"tier": "b", "app": "x"});
        assert_eq!(
            msgs(&validate("apps", "v1", "Deployment", true, &d, Some(&old))),
            vec!["spec.selector: Invalid value: {\"matchLabels\":{\"app\":\"x\",\"tier\":\"b\"}}: field is immutable"]
        );
        assert!(validate(
            "apps",
            "v1",
            "Deployment",
            true,
            &good_deployment(),
            Some(&old)
        )
        .is_empty());
    }

    #[test]
    fn replicaset_daemonset_statefulset() {
        let mut rs = good_deployment();
        rs["spec"].as_object_mut().unwrap().remove("strategy");
        rs["spec"]["replicas"] = json!(-3);
        assert_eq!(
            msgs(&validate("apps", "v1", "ReplicaSet", true, &rs, None)),
            vec!["spec.replicas: Invalid value: -3: must be greater than or equal to 0"]
        );
        let mut ds = good_deployment();
        ds["spec"].as_object_mut().unwrap().remove("strategy");
        ds["spec"].as_object_mut().unwrap().remove("replicas");
        ds["spec"]["updateStrategy"] = json!({"type": "Bogus"});
        ds["spec"]["selector"] = json!({"matchLabels": {"app": "z"}});
        assert_eq!(
            msgs(&validate("apps", "v1", "DaemonSet", true, &ds, None)),
            vec![
                "spec.template.metadata.labels: Invalid value: {\"app\":\"x\"}: `selector` does not match template `labels`",
                "spec.updateStrategy: Unsupported value: {\"Type\":\"Bogus\",\"RollingUpdate\":null}: supported values: \"RollingUpdate\", \"OnDelete\""
            ]
        );
        let mut ss = good_deployment();
        ss["spec"].as_object_mut().unwrap().remove("strategy");
        ss["metadata"]["name"] = json!("a.b");
        ss["spec"]["podManagementPolicy"] = json!("Sometimes");
        ss["spec"]["template"]["spec"]["containers"][0]
            .as_object_mut()
            .unwrap()
            .remove("image");
        assert_eq!(
            msgs(&validate("apps", "v1", "StatefulSet", true, &ss, None)),
            vec![
                "metadata.name: Invalid value: \"a.b\": must not contain dots",
                "spec.podManagementPolicy: Invalid value: \"Sometimes\": must be 'OrderedReady' or 'Parallel'"
            ]
        );
        let mut old = ss.clone();
        old["metadata"]["name"] = json!("ab");
        old["spec"]["podManagementPolicy"] = json!("Parallel");
        let mut new = old.clone();
        new["spec"]["serviceName"] = json!("other");
        assert_eq!(
            msgs(&validate("apps", "v1", "StatefulSet", true, &new, Some(&old))),
            vec!["spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"]
        );
    }

    // Ported from TestValidatePodSpec / TestValidateContainers (pkg/apis/core/validation).
    #[test]
    fn pod_cases() {
        let pod = json!({"metadata": {"name": "p", "namespace": "n"}, "spec": {
            "containers": [
                {"name": "Bad", "image": " img", "ports": [{"containerPort": 70000, "protocol": "HTTP", "name": "a--b"}],
                 "env": [{"name": "A=B"}], "volumeMounts": [{"name": "missing", "mountPath": "/x"}]},
                {"name": "dup", "image": "x", "imagePullPolicy": "Sometimes"},
                {"name": "dup", "image": "x", "terminationMessagePolicy": "Nope"}],
            "restartPolicy": "Sometimes", "dnsPolicy": "Bogus", "activeDeadlineSeconds": 0}});
        assert_eq!(
            msgs(&validate("", "v1", "Pod", true, &pod, None)),
            vec![
                "spec.containers[0].name: Invalid value: \"Bad\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
                "spec.containers[0].ports[0].name: Invalid value: \"a--b\": must not contain consecutive hyphens",
                "spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive",
                "spec.containers[0].ports[0].protocol: Unsupported value: \"HTTP\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
                "spec.containers[0].env[0].name: Invalid value: \"A=B\": a valid environment variable name must consist only of printable ASCII characters other than '='",
                "spec.containers[0].volumeMounts[0].name: Not found: \"missing\"",
                "spec.containers[1].imagePullPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"IfNotPresent\", \"Never\"",
                "spec.containers[2].terminationMessagePolicy: Unsupported value: \"Nope\": supported values: \"File\", \"FallbackToLogsOnError\"",
                "spec.containers[2].name: Duplicate value: \"dup\"",
                "spec.restartPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"OnFailure\", \"Never\"",
                "spec.dnsPolicy: Unsupported value: \"Bogus\": supported values: \"ClusterFirstWithHostNet\", \"ClusterFirst\", \"Default\", \"None\"",
                "spec.activeDeadlineSeconds: Invalid value: 0: must be between 1 and 2147483647, inclusive",
                "spec.containers[0].image: Invalid value: \" img\": must not have leading or trailing whitespace",
            ]
        );
        let pod = json!({"metadata": {"name": "p", "namespace": "n"}, "spec": {"containers": []}});
        assert_eq!(
            msgs(&validate("", "v1", "Pod", true, &pod, None)),
            vec!["spec.containers: Required value"]
        );
        let pod = json!({"metadata": {"name": "p", "namespace": "n"}, "spec": {
            "volumes": [{"name": "v", "emptyDir": {}, "hostPath": {"path": "/"}}, {"name": "w"}],
            "containers": [{"name": "a", "image": "i", "ports": [{"containerPort": 80, "hostPort": 80}]},
                           {"name": "b", "image": "i", "ports": [{"containerPort": 81, "hostPort": 80}]}]}});
        assert_eq!(
            msgs(&validate("", "v1", "Pod", true, &pod, None)),
            vec![
                "spec.volumes[0].hostPath: Forbidden: may not specify more than 1 volume type",
                "spec.volumes[1]: Required value: must specify a volume type",
                "spec.containers[1].ports[0].hostPort: Duplicate value: \"TCP//80\"",
            ]
        );
    }

    // Ported from TestValidateService (pkg/apis/core/validation).
    #[test]
    fn service_cases() {
        let svc = json!({"metadata": {"name": "1svc", "namespace": "n"}, "spec": {"type": "Bogus",
            "ports": [{"port": 0, "protocol": "TCP"}, {"name": "a", "port": 80, "protocol": "XYZ", "targetPort": "a_b"},
                      {"name": "a", "port": 80, "protocol": "TCP", "nodePort": 30000}],
            "sessionAffinity": "Sticky"}});
        assert_eq!(
            msgs(&validate("", "v1", "Service", true, &svc, None)),
            vec![
                "metadata.name: Invalid value: \"1svc\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
                "spec.ports[0].name: Required value",
                "spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive",
                "spec.ports[1].protocol: Unsupported value: \"XYZ\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
                "spec.ports[1].targetPort: Invalid value: \"a_b\": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
                "spec.ports[2].name: Duplicate value: \"a\"",
                "spec.sessionAffinity: Unsupported value: \"Sticky\": supported values: \"ClientIP\", \"None\"",
                "spec.type: Unsupported value: \"Bogus\": supported values: \"ClusterIP\", \"ExternalName\", \"LoadBalancer\", \"NodePort\"",
            ]
        );
        let svc = json!({"metadata": {"name": "svc", "namespace": "n"}, "spec": {"type": "NodePort",
            "ports": [{"name": "a", "port": 80, "nodePort": 30000}, {"name": "b", "port": 80, "nodePort": 30000}]}});
        assert_eq!(
            msgs(&validate("", "v1", "Service", true, &svc, None)),
            vec![
                "spec.ports[1].nodePort: Duplicate value: 30000",
                "spec.ports[1]: Duplicate value: {\"Name\":\"\",\"Protocol\":\"TCP\",\"AppProtocol\":null,\"Port\":80,\"TargetPort\":0,\"NodePort\":0}",
            ]
        );
        let svc = json!({"metadata": {"name": "svc", "namespace": "n"}, "spec": {"type": "ClusterIP", "ports": []}});
        assert_eq!(
            msgs(&validate("", "v1", "Service", true, &svc, None)),
            vec!["spec.ports: Required value"]
        );
        let svc = json!({"metadata": {"name": "svc", "namespace": "n"}, "spec": {"type": "ExternalName", "externalName": "Bad_Name."}});
        assert_eq!(
            msgs(&validate("", "v1", "Service", true, &svc, None)),
            vec![format!(
                "spec.externalName: Invalid value: \"Bad_Name\": {SUBDOMAIN_MSG}"
            )]
        );
    }

    // Ported from TestValidateConfigMap / TestValidateSecret / TestValidateNamespace.
    #[test]
    fn configmap_secret_namespace() {
        let cm = json!({"metadata": {"name": "cm", "namespace": "n"}, "data": {"a b": "x", "k": "v"},
            "binaryData": {"k": "eA=="}});
        assert_eq!(
            msgs(&validate("", "v1", "ConfigMap", true, &cm, None)),
            vec![
                "data[a b]: Invalid value: \"a b\": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')",
                "data[k]: Invalid value: \"k\": duplicate of key present in binaryData",
            ]
        );
        let cm = json!({"metadata": {"name": "cm", "namespace": "n"}, "data": {"..x": "y".repeat(MAX_SECRET_SIZE + 1)}});
        assert_eq!(
            msgs(&validate("", "v1", "ConfigMap", true, &cm, None)),
            vec![
                "data[..x]: Invalid value: \"..x\": must not start with '..'",
                ": Too long: may not be more than 1048576 bytes",
            ]
        );
        let old = json!({"metadata": {"name": "cm", "namespace": "n"}, "immutable": true, "data": {"a": "1"}});
        let new = json!({"metadata": {"name": "cm", "namespace": "n"}, "data": {"a": "2"}});
        assert_eq!(
            msgs(&validate("", "v1", "ConfigMap", true, &new, Some(&old))),
            vec![
                "immutable: Forbidden: field is immutable when `immutable` is set",
                "data: Forbidden: field is immutable when `immutable` is set",
            ]
        );
        let sec = json!({"metadata": {"name": "s", "namespace": "n"}, "type": "kubernetes.io/tls", "data": {"tls.crt": "eA=="}});
        assert_eq!(
            msgs(&validate("", "v1", "Secret", true, &sec, None)),
            vec!["data[tls.key]: Required value"]
        );
        let old = json!({"metadata": {"name": "s", "namespace": "n"}, "type": "Opaque"});
        let new = json!({"metadata": {"name": "s", "namespace": "n"}, "type": "kubernetes.io/basic-auth", "data": {"username": ""}});
        assert_eq!(
            msgs(&validate("", "v1", "Secret", true, &new, Some(&old))),
            vec!["type: Invalid value: \"kubernetes.io/basic-auth\": field is immutable"]
        );
        let ns = json!({"metadata": {"name": "Bad.Ns"}, "spec": {"finalizers": ["custom"]}});
        let got = msgs(&validate("", "v1", "Namespace", false, &ns, None));
        assert_eq!(got.len(), 2);
        assert!(got[0]
            .starts_with("metadata.name: Invalid value: \"Bad.Ns\": a lowercase RFC 1123 label"));
        assert_eq!(
            got[1],
            "spec.finalizers: Invalid value: \"custom\": name is neither a standard finalizer name nor is it fully qualified"
        );
    }

    // Ported from TestValidateJob / TestValidateCronJob (pkg/apis/batch/validation).
    #[test]
    fn job_and_cronjob() {
        let job = json!({"metadata": {"name": "j", "namespace": "n"}, "spec": {"parallelism": -1, "backoffLimit": -1,
            "selector": {"matchLabels": {"a": "b"}},
            "template": {"metadata": {"labels": {"a": "c"}}, "spec": {"restartPolicy": "Always",
                "containers": [{"name": "c", "image": "i"}]}}}});
        assert_eq!(
            msgs(&validate("batch", "v1", "Job", true, &job, None)),
            vec![
                "spec.parallelism: Invalid value: -1: must be greater than or equal to 0",
                "spec.backoffLimit: Invalid value: -1: must be greater than or equal to 0",
                "spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\"",
                "spec.template.metadata.labels: Invalid value: {\"a\":\"c\"}: `selector` does not match template `labels`",
            ]
        );
        let cj = json!({"metadata": {"name": "cj", "namespace": "n"}, "spec": {"schedule": "",
            "concurrencyPolicy": "Sometimes",
            "jobTemplate": {"spec": {"template": {"spec": {"restartPolicy": "Never",
                "containers": [{"name": "c", "image": "i"}]}}}}}});
        assert_eq!(
            msgs(&validate("batch", "v1", "CronJob", true, &cj, None)),
            vec![
                "spec.schedule: Required value",
                "spec.concurrencyPolicy: Unsupported value: \"Sometimes\": supported values: \"Allow\", \"Forbid\", \"Replace\"",
            ]
        );
        let mut cj2 = cj.clone();
        cj2["spec"]["schedule"] = json!("* * *");
        cj2["spec"]["concurrencyPolicy"] = json!("Allow");
        assert_eq!(
            msgs(&validate("batch", "v1", "CronJob", true, &cj2, None)),
            vec!["spec.schedule: Invalid value: \"* * *\": expected exactly 5 fields, found 3: [* * *]"]
        );
        cj2["spec"]["schedule"] = json!("TZ=UTC 0 0 * * *");
        assert_eq!(
            msgs(&validate("batch", "v1", "CronJob", true, &cj2, None)),
            vec!["spec.schedule: Invalid value: \"TZ=UTC 0 0 * * *\": cannot use TZ or CRON_TZ in schedule, use timeZone field instead"]
        );
    }

    // Cron/duration parsing errors follow robfig/cron v3 and Go's time package.

    #[test]
    fn events_follow_the_strict_rules_only_through_events_k8s_io() {
        let ev = |extra: Value| {
            let mut o = json!({
                "metadata": {"name": "e1", "namespace": "default"},
                "regarding": {"kind": "Pod", "name": "p", "namespace": "default"},
                "eventTime": "2026-11-29T10:00:00.000000Z",
                "reportingController": "example.com/ctl",
                "reportingInstance": "ctl-1",
                "action": "Reconcile",
                "reason": "Done",
                "type": "Normal",
                "note": "ok",
            });
            if let (Some(m), Some(x)) = (o.as_object_mut(), extra.as_object()) {
                for (k, v) in x {
                    if v.is_null() {
                        m.remove(k);
                    } else {
                        m.insert(k.clone(), v.clone());
                    }
                }
            }
            o
        };
        let strict = |o: &Value| msgs(&validate("events.k8s.io", "v1", "Event", true, o, None));
        assert!(strict(&ev(json!({}))).is_empty());
        assert_eq!(
            strict(&ev(
                json!({"action": null, "eventTime": null, "note": "x".repeat(1025)})
            )),
            ["eventTime: Required value"]
        );
        assert_eq!(
            strict(&ev(
                json!({"action": null, "note": "x".repeat(1025), "type": "Odd", "series": {"count": 1}})
            )),
            [
                "action: Required value",
                "message: Invalid value: \"\": can have at most 1024 characters",
                "series.count: Invalid value: \"\": should be at least 2",
                "series.lastObservedTime: Required value",
                "type: Invalid value: \"\": has invalid value: Odd",
            ]
        );
        // core/v1 keeps the legacy rules only: no eventTime, namespaces must agree
        let core = json!({
            "metadata": {"name": "e1", "namespace": "default"},
            "involvedObject": {"kind": "Pod", "name": "p", "namespace": "other"},
            "reason": "x",
        });
        assert_eq!(
            msgs(&validate("", "v1", "Event", true, &core, None)),
            ["involvedObject.namespace: Invalid value: \"other\": does not match event.namespace"]
        );
        // updates through events.k8s.io: series may change, the rest is immutable
        let old = ev(json!({}));
        let bumped =
            ev(json!({"series": {"count": 3, "lastObservedTime": "2026-11-29T10:01:00.000000Z"}}));
        assert!(msgs(&validate(
            "events.k8s.io",
            "v1",
            "Event",
            true,
            &bumped,
            Some(&old)
        ))
        .is_empty());
        let changed = ev(json!({"reason": "Other"}));
        assert_eq!(
            msgs(&validate(
                "events.k8s.io",
                "v1",
                "Event",
                true,
                &changed,
                Some(&old)
            )),
            ["reason: Invalid value: \"Other\": field is immutable"]
        );
    }

    #[test]
    fn lease_and_pdb() {
        let lease = json!({"metadata": {"name": "l", "namespace": "n"}, "spec": {"leaseDurationSeconds": 0, "leaseTransitions": -1}});
        assert_eq!(
            msgs(&validate(
                "coordination.k8s.io",
                "v1",
                "Lease",
                true,
                &lease,
                None
            )),
            vec![
                "spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0",
                "spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0",
            ]
        );
        let pdb =
            json!({"metadata": {"name": "p", "namespace": "n"}, "spec": {"minAvailable": "120%"}});
        assert_eq!(
            msgs(&validate(
                "policy",
                "v1",
                "PodDisruptionBudget",
                true,
                &pdb,
                None
            )),
            vec!["spec.minAvailable: Invalid value: \"120%\": must not be greater than 100%"]
        );
    }

    #[test]
    fn value_rendering() {
        use apimachinery::gofmt::json_ordered as go_json;
        assert_eq!(go_quote("a\"b\\c\n\u{1}é"), "\"a\\\"b\\\\c\\n\\x01é\"");
        assert_eq!(
            go_json(&json!({"a": "<&>"})),
            "{\"a\":\"\\u003c\\u0026\\u003e\"}"
        );
        assert_eq!(
            go_json(&map_json(json!({"b": "1", "a": "2"}).as_object())),
            "{\"a\":\"2\",\"b\":\"1\"}"
        );
        assert_eq!(go_json(&map_json(None)), "null");
    }

    #[test]
    fn never_panics_on_odd_types() {
        for v in [
            json!(null),
            json!(1),
            json!("x"),
            json!([]),
            json!({"metadata": 5, "spec": "x"}),
            json!({"metadata": {"name": 5, "labels": [1], "finalizers": "x"}, "spec": {"containers": {"a": 1},
                        "template": [], "selector": "x", "ports": 7, "strategy": 3}, "data": 4}),
        ] {
            for (g, k) in [
                ("", "Pod"),
                ("", "Service"),
                ("", "ConfigMap"),
                ("", "Secret"),
                ("", "Namespace"),
                ("apps", "Deployment"),
                ("apps", "StatefulSet"),
                ("apps", "DaemonSet"),
                ("apps", "ReplicaSet"),
                ("batch", "Job"),
                ("batch", "CronJob"),
                ("policy", "PodDisruptionBudget"),
                ("coordination.k8s.io", "Lease"),
                ("", "ReplicationController"),
                ("", "PodTemplate"),
            ] {
                let _ = validate(g, "v1", k, true, &v, None);
                let _ = validate(g, "v1", k, true, &v, Some(&v));
            }
        }
    }
}
