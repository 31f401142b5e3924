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
    #[cfg(test)]
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
