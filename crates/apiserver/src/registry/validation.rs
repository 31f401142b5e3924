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
    is_config_map_key as config_map_key_errs, is_dns1123_label as dns1123_label_errs,
    is_dns1123_subdomain as dns1123_subdomain_errs, is_env_var_name as env_var_name_errs,
    is_label_value as label_value_errs, is_percent as percent_errs, is_port_name as port_name_errs,
    is_qualified_name as qualified_name_errs, NameRule,
};
use apimachinery::selector::LabelSelector;
use serde_json::{Map, Value};

const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;
const MAX_SECRET_SIZE: usize = 1024 * 1024;
const PORT_RANGE: &str = "must be between 1 and 65535, inclusive";

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

/// Returns the upstream messages for `metadata.name` according to the name rule
/// of `kind` in `group` (DNS-1123 subdomain for most kinds, DNS-1123 label for
/// Namespace and StatefulSet, DNS-1035 label for Service, path-segment names for
/// RBAC roles/bindings and kinds without a specific rule). Empty means valid.
#[cfg(test)]
pub fn validate_object_name(kind: &str, group: &str, name: &str) -> Vec<String> {
    name_rule(kind, group).check(name, false)
}

// ---------------------------------------------------------------------------
// field.Error construction and rendering
// ---------------------------------------------------------------------------

fn s(v: &str) -> Bad {
    Bad::str(v)
}

/// A typed Go string (e.g. `core.Protocol`), rendered through encoding/json.
fn js(v: &str) -> Bad {
    Bad::typed(v)
}

/// A Go `map[string]string` as encoding/json renders it: sorted keys, `null` when absent.
fn map_json(m: Option<&Map<String, Value>>) -> Value {
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
fn selector_json(sel: Option<&Value>) -> Value {
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
fn intstr_json(v: Option<&Value>) -> Value {
    match v {
        Some(Value::String(s)) => Value::String(s.clone()),
        Some(Value::Number(n)) => Value::Number(n.clone()),
        _ => Value::from(0),
    }
}

// ---------------------------------------------------------------------------
// JSON access helpers (never panic on unexpected types)
// ---------------------------------------------------------------------------

fn get<'a>(v: &'a Value, k: &str) -> Option<&'a Value> {
    v.as_object()?.get(k).filter(|x| !x.is_null())
}
fn st<'a>(v: &'a Value, k: &str) -> Option<&'a str> {
    get(v, k)?.as_str()
}
fn int(v: &Value, k: &str) -> Option<i64> {
    as_int(get(v, k)?)
}
fn as_int(x: &Value) -> Option<i64> {
    x.as_i64()
        .or_else(|| x.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64))
}
fn obj<'a>(v: &'a Value, k: &str) -> Option<&'a Map<String, Value>> {
    get(v, k)?.as_object()
}
fn arr<'a>(v: &'a Value, k: &str) -> Option<&'a Vec<Value>> {
    get(v, k)?.as_array()
}
fn boolean(v: &Value, k: &str) -> Option<bool> {
    get(v, k)?.as_bool()
}
fn items<'a>(v: &'a Value, k: &str) -> &'a [Value] {
    arr(v, k).map(|a| a.as_slice()).unwrap_or(&[])
}
fn str_entries(m: Option<&Map<String, Value>>) -> Vec<(&str, &str)> {
    m.map(|m| {
        m.iter()
            .filter_map(|(k, v)| v.as_str().map(|v| (k.as_str(), v)))
            .collect()
    })
    .unwrap_or_default()
}
fn child(p: &str, name: &str) -> String {
    if p.is_empty() {
        name.to_string()
    } else {
        format!("{p}.{name}")
    }
}
fn index(p: &str, i: usize) -> String {
    format!("{p}[{i}]")
}
fn key(p: &str, k: &str) -> String {
    format!("{p}[{k}]")
}
/// Semantic JSON equality where `null` and an absent key are the same.
fn json_eq(a: Option<&Value>, b: Option<&Value>) -> bool {
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

fn name_rule(kind: &str, group: &str) -> NameRule {
    match (group, kind) {
        ("", "Namespace") | ("apps", "StatefulSet") => NameRule::Label,
        ("", "Service") => NameRule::Label1035,
        // RBAC uses path-segment names; PDBs and CSRs only get the generic registry check.
        ("rbac.authorization.k8s.io", _)
        | ("policy", "PodDisruptionBudget")
        | ("certificates.k8s.io", "CertificateSigningRequest") => NameRule::PathSegment,
        // Everything else, including custom resources, uses DNS-1123 subdomain names.
        _ => NameRule::Subdomain,
    }
}

// ---------------------------------------------------------------------------
// Label selectors
// ---------------------------------------------------------------------------

/// `ValidateLabels`.
fn validate_labels(e: &mut Errs, m: Option<&Map<String, Value>>, path: &str) {
    for (k, v) in str_entries(m) {
        e.each(path, k, qualified_name_errs(k));
        e.each(path, v, label_value_errs(v));
    }
}

/// `ValidateLabelSelector`; returns true when `LabelSelectorAsSelector` would succeed.
fn validate_label_selector(e: &mut Errs, sel: &Value, path: &str) -> bool {
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
fn parse_selector(sel: Option<&Value>) -> LabelSelector {
    sel.and_then(|s| LabelSelector::from_label_selector_json(s).ok())
        .unwrap_or_else(LabelSelector::nothing)
}

/// Whether `sel` matches the labels of an object's metadata (none: the empty set).
fn selects(sel: &LabelSelector, labels: Option<&Map<String, Value>>) -> bool {
    sel.matches(|k| labels.and_then(|m| m.get(k)).and_then(Value::as_str))
}

// ---------------------------------------------------------------------------
// IntOrString helpers (apps validation)
// ---------------------------------------------------------------------------

/// `ValidatePositiveIntOrPercent`.
fn validate_positive_int_or_percent(e: &mut Errs, v: Option<&Value>, path: &str) {
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

fn percent_value(v: Option<&Value>) -> Option<i64> {
    match v {
        Some(Value::String(s)) if percent_errs(s).is_empty() => s[..s.len() - 1].parse().ok(),
        _ => None,
    }
}

/// `getIntOrPercentValue`.
fn int_or_percent_value(v: Option<&Value>) -> i64 {
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
fn not_more_than_100_percent(e: &mut Errs, v: Option<&Value>, path: &str) {
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
    /// The kind.
    pub def: &'a ResourceDef,
    group: &'a str,
    version: &'a str,
    namespaced: bool,
    /// The stored object on update; `None` on create.
    pub old: Option<&'a Value>,
}

impl<'a> Ctx<'a> {
    /// Validation of an object of `def` (`old`: the stored object on update).
    pub fn new(def: &'a ResourceDef, old: Option<&'a Value>) -> Ctx<'a> {
        Ctx {
            def,
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

    /// The validation of the kind as the central table knew it (being moved into the
    /// kinds' registry files).
    pub fn legacy(&self, obj: &Value) -> Vec<Cause> {
        let mut e = Errs::default();
        match (self.group, self.def.kind) {
            ("", "Pod") => self.pod(&mut e, obj),
            ("", "PodTemplate") => self.pod_template(&mut e, obj),
            ("", "ReplicationController") => self.replication_controller(&mut e, obj),
            ("", "Service") => self.service(&mut e, obj),
            ("", "ConfigMap") => self.config_map(&mut e, obj),
            ("", "Secret") => self.secret(&mut e, obj),
            ("", "Namespace") => self.namespace(&mut e, obj),
            ("apps", "Deployment") => self.deployment(&mut e, obj),
            ("apps", "ReplicaSet") => self.replica_set(&mut e, obj),
            ("apps", "StatefulSet") => self.stateful_set(&mut e, obj),
            ("apps", "DaemonSet") => self.daemon_set(&mut e, obj),
            ("batch", "Job") => self.job(&mut e, obj),
            ("batch", "CronJob") => self.cron_job(&mut e, obj),
            ("coordination.k8s.io", "Lease") => self.lease(&mut e, obj),
            ("", "Event") => self.event(&mut e, obj, false),
            ("events.k8s.io", "Event") => self.event(&mut e, obj, true),
            ("policy", "PodDisruptionBudget") => self.pdb(&mut e, obj),
            _ => {
                return self.meta_only(obj, name_rule(self.def.kind, self.group));
            }
        }
        e.0
    }
}

impl Ctx<'_> {
    /// Object metadata: `ValidateObjectMeta` on create, `ValidateObjectMetaUpdate` on update.
    fn meta(&self, e: &mut Errs, o: &Value, rule: NameRule, kube_finalizers: bool) {
        match self.old {
            None => self.meta_create(e, o, rule, kube_finalizers),
            Some(old) => self.meta_update(e, o, old, kube_finalizers),
        }
    }

    /// `ValidateObjectMeta` (core wrapper when `kube_finalizers`).
    fn meta_create(&self, e: &mut Errs, o: &Value, rule: NameRule, kube_finalizers: bool) {
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
    fn meta_update(&self, e: &mut Errs, o: &Value, old: &Value, kube_finalizers: bool) {
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

    fn is_update(&self) -> bool {
        self.old.is_some()
    }

    // ----- core/v1 -----

    fn pod(&self, e: &mut Errs, o: &Value) {
        let empty = Value::Object(Map::new());
        let spec = get(o, "spec").unwrap_or(&empty);
        self.meta(e, o, NameRule::Subdomain, true);
        if self.is_update() {
            // Pod spec updates are restricted upstream with a diff-bearing message; only
            // metadata is checked here.
            return;
        }
        pod_spec(e, spec, "spec");
        for (list, path) in [
            ("containers", "spec.containers"),
            ("initContainers", "spec.initContainers"),
        ] {
            for (i, c) in items(spec, list).iter().enumerate() {
                if let Some(img) = st(c, "image") {
                    if img.trim() != img {
                        e.invalid(
                            &child(&index(path, i), "image"),
                            s(img),
                            "must not have leading or trailing whitespace",
                        );
                    }
                }
            }
        }
        if !items(spec, "ephemeralContainers").is_empty() {
            e.forbidden("spec.ephemeralContainers", "cannot be set on create");
        }
        if st(spec, "nodeName").is_some_and(|n| !n.is_empty())
            && !items(spec, "schedulingGates").is_empty()
        {
            e.forbidden(
                "spec.nodeName",
                "cannot be set until all schedulingGates have been cleared",
            );
        }
    }

    fn pod_template(&self, e: &mut Errs, o: &Value) {
        self.meta(e, o, NameRule::Subdomain, true);
        let empty = Value::Object(Map::new());
        pod_template_spec(e, get(o, "template").unwrap_or(&empty), "template");
    }

    fn replication_controller(&self, e: &mut Errs, o: &Value) {
        self.meta(e, o, NameRule::Subdomain, true);
        let empty = Value::Object(Map::new());
        let spec = get(o, "spec").unwrap_or(&empty);
        e.nonnegative("spec.minReadySeconds", int(spec, "minReadySeconds"));
        let selector = obj(spec, "selector");
        if selector.is_none_or(|m| m.is_empty()) {
            e.required("spec.selector", "");
        }
        e.nonnegative("spec.replicas", int(spec, "replicas"));
        match get(spec, "template") {
            None => e.required("spec.template", ""),
            Some(t) => {
                let labels = get(t, "metadata").and_then(|m| obj(m, "labels"));
                if let Some(sel) = selector.filter(|m| !m.is_empty()) {
                    let ok = str_entries(Some(sel)).iter().all(|(k, v)| {
                        labels.and_then(|l| l.get(*k)).and_then(|x| x.as_str()) == Some(*v)
                    });
                    if !ok {
                        e.invalid(
                            "spec.template.metadata.labels",
                            Bad::Json(map_json(labels)),
                            "`selector` does not match template `labels`",
                        );
                    }
                }
                pod_template_spec(e, t, "spec.template");
                replica_template_policy(e, t, "spec.template", "ReplicationController");
            }
        }
    }

    fn service(&self, e: &mut Errs, o: &Value) {
        if let Some(old) = self.old {
            self.meta_update(e, o, old, true);
        }
        self.meta_create(e, o, NameRule::Label1035, true);
        let empty = Value::Object(Map::new());
        let spec = get(o, "spec").unwrap_or(&empty);
        let ty = st(spec, "type").unwrap_or("ClusterIP");
        let cluster_ips: Vec<&str> = match arr(spec, "clusterIPs") {
            Some(a) => a.iter().filter_map(|v| v.as_str()).collect(),
            None => st(spec, "clusterIP")
                .filter(|c| !c.is_empty())
                .into_iter()
                .collect(),
        };
        let headless = cluster_ips.first() == Some(&"None");
        let ports = items(spec, "ports");
        if ports.is_empty() && !headless && ty != "ExternalName" {
            e.required("spec.ports", "");
        }
        match ty {
            "LoadBalancer" => {
                for (i, p) in ports.iter().enumerate() {
                    if int(p, "port") == Some(10250) {
                        e.invalid(
                            &index("spec.ports", i),
                            Bad::Int(10250),
                            "may not expose port 10250 externally since it is used by kubelet",
                        );
                    }
                }
                if headless {
                    e.invalid(
                        "spec.clusterIPs[0]",
                        s("None"),
                        "may not be set to 'None' for LoadBalancer services",
                    );
                }
            }
            "NodePort" if headless => {
                e.invalid(
                    "spec.clusterIPs[0]",
                    s("None"),
                    "may not be set to 'None' for NodePort services",
                );
            }
            "ExternalName" => {
                if !cluster_ips.is_empty() {
                    e.forbidden(
                        "spec.clusterIPs",
                        "may not be set for ExternalName services",
                    );
                }
                if !items(spec, "ipFamilies").is_empty() {
                    e.forbidden(
                        "spec.ipFamilies",
                        "may not be set for ExternalName services",
                    );
                }
                if get(spec, "ipFamilyPolicy").is_some() {
                    e.forbidden(
                        "spec.ipFamilyPolicy",
                        "may not be set for ExternalName services",
                    );
                }
                let en = st(spec, "externalName").unwrap_or("");
                let cname = en.strip_suffix('.').unwrap_or(en);
                if cname.is_empty() {
                    e.required("spec.externalName", "");
                } else {
                    e.each("spec.externalName", cname, dns1123_subdomain_errs(cname));
                }
            }
            _ => {}
        }
        let mut names: Vec<&str> = Vec::new();
        for (i, p) in ports.iter().enumerate() {
            let pp = index("spec.ports", i);
            let name = st(p, "name").unwrap_or("");
            if ports.len() > 1 && name.is_empty() {
                e.required(&child(&pp, "name"), "");
            } else if !name.is_empty() {
                e.each(&child(&pp, "name"), name, dns1123_label_errs(name));
                if names.contains(&name) {
                    e.duplicate(&child(&pp, "name"), s(name));
                } else {
                    names.push(name);
                }
            }
            if let Some(port) = int(p, "port").or(Some(0)) {
                if !(1..=65535).contains(&port) {
                    e.invalid(&child(&pp, "port"), Bad::Int(port), PORT_RANGE);
                }
            }
            validate_protocol(e, p, &pp);
            if let Some(tp) = get(p, "targetPort") {
                port_num_or_name(e, tp, &child(&pp, "targetPort"), true);
            }
            if let Some(ap) = st(p, "appProtocol") {
                e.each(&child(&pp, "appProtocol"), ap, qualified_name_errs(ap));
            }
        }
        validate_labels(e, obj(spec, "selector"), "spec.selector");
        if let Some(sa) = st(spec, "sessionAffinity").filter(|x| !x.is_empty()) {
            match sa {
                "ClientIP" => {
                    let t = get(spec, "sessionAffinityConfig")
                        .and_then(|c| get(c, "clientIP"))
                        .and_then(|c| int(c, "timeoutSeconds"));
                    if let Some(t) = t.filter(|t| *t <= 0 || *t > 86400) {
                        e.invalid(
                            "spec.sessionAffinityConfig.clientIP.timeoutSeconds",
                            Bad::Int(t),
                            "must be greater than 0 and less than 86400",
                        );
                    }
                }
                "None" => {
                    if get(spec, "sessionAffinityConfig").is_some() {
                        e.forbidden(
                            "spec.sessionAffinityConfig",
                            "must not be set when session affinity is None",
                        );
                    }
                }
                other => e.not_supported("spec.sessionAffinity", js(other), &["ClientIP", "None"]),
            }
        }
        if let Some(t) = st(spec, "type").filter(|x| !x.is_empty()) {
            if !["ClusterIP", "NodePort", "LoadBalancer", "ExternalName"].contains(&t) {
                e.not_supported(
                    "spec.type",
                    js(t),
                    &["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"],
                );
            }
        }
        if ty == "ClusterIP" {
            for (i, p) in ports.iter().enumerate() {
                if int(p, "nodePort").is_some_and(|n| n != 0) {
                    e.forbidden(
                        &child(&index("spec.ports", i), "nodePort"),
                        "may not be used when `type` is 'ClusterIP'",
                    );
                }
            }
        }
        let proto = |p: &Value| st(p, "protocol").unwrap_or("TCP").to_string();
        let mut node_ports: Vec<(String, i64)> = Vec::new();
        for (i, p) in ports.iter().enumerate() {
            let Some(np) = int(p, "nodePort").filter(|n| *n != 0) else {
                continue;
            };
            let k = (proto(p), np);
            if node_ports.contains(&k) {
                e.duplicate(&child(&index("spec.ports", i), "nodePort"), Bad::Int(np));
            }
            node_ports.push(k);
        }
        let mut seen: Vec<(String, i64)> = Vec::new();
        for (i, p) in ports.iter().enumerate() {
            let k = (proto(p), int(p, "port").unwrap_or(0));
            if seen.contains(&k) {
                let mut key = Map::new();
                key.insert("Name".into(), Value::from(""));
                key.insert("Protocol".into(), Value::from(k.0.clone()));
                key.insert("AppProtocol".into(), Value::Null);
                key.insert("Port".into(), Value::from(k.1));
                key.insert("TargetPort".into(), Value::from(0));
                key.insert("NodePort".into(), Value::from(0));
                e.duplicate(&index("spec.ports", i), Bad::Json(Value::Object(key)));
            }
            seen.push(k);
        }
        if !items(spec, "loadBalancerSourceRanges").is_empty() && ty != "LoadBalancer" {
            e.forbidden(
                "spec.LoadBalancerSourceRanges",
                "may only be used when `type` is 'LoadBalancer'",
            );
        }
        if get(spec, "allocateLoadBalancerNodePorts").is_some() && ty != "LoadBalancer" {
            e.forbidden(
                "spec.allocateLoadBalancerNodePorts",
                "may only be used when `type` is 'LoadBalancer'",
            );
        }
        let externally_accessible = ty == "LoadBalancer"
            || ty == "NodePort"
            || (ty == "ClusterIP" && !items(spec, "externalIPs").is_empty());
        if let Some(etp) = st(spec, "externalTrafficPolicy").filter(|x| !x.is_empty()) {
            if !externally_accessible {
                e.invalid(
                    "spec.externalTrafficPolicy",
                    js(etp),
                    "may only be set for externally-accessible services",
                );
            } else if etp != "Cluster" && etp != "Local" {
                e.not_supported("spec.externalTrafficPolicy", js(etp), &["Cluster", "Local"]);
            }
        }
        if let Some(itp) = st(spec, "internalTrafficPolicy") {
            if itp != "Cluster" && itp != "Local" {
                e.not_supported("spec.internalTrafficPolicy", js(itp), &["Cluster", "Local"]);
            }
        }
    }

    fn config_map(&self, e: &mut Errs, o: &Value) {
        if let Some(old) = self.old {
            self.meta_update(e, o, old, true);
            if boolean(old, "immutable") == Some(true) {
                if boolean(o, "immutable") != Some(true) {
                    e.forbidden("immutable", "field is immutable when `immutable` is set");
                }
                for f in ["data", "binaryData"] {
                    if !json_eq(get(o, f), get(old, f)) {
                        e.forbidden(f, "field is immutable when `immutable` is set");
                    }
                }
            }
        }
        self.meta_create(e, o, NameRule::Subdomain, true);
        let binary = obj(o, "binaryData");
        let mut total = 0usize;
        for (k, v) in obj(o, "data").into_iter().flatten() {
            let p = key("data", k);
            e.each(&p, k, config_map_key_errs(k));
            if binary.is_some_and(|b| b.contains_key(k)) {
                e.invalid(&p, s(k), "duplicate of key present in binaryData");
            }
            total += v.as_str().map_or(0, str::len);
        }
        for (k, v) in binary.into_iter().flatten() {
            e.each(&key("binaryData", k), k, config_map_key_errs(k));
            total += v.as_str().map_or(0, base64_decoded_len);
        }
        if total > MAX_SECRET_SIZE {
            e.too_long("", MAX_SECRET_SIZE);
        }
    }

    fn secret(&self, e: &mut Errs, o: &Value) {
        let ty = st(o, "type").unwrap_or("Opaque");
        if let Some(old) = self.old {
            self.meta_update(e, o, old, true);
            let old_ty = st(old, "type").unwrap_or("Opaque");
            if ty != old_ty {
                e.invalid("type", js(ty), IMMUTABLE);
            }
            if boolean(old, "immutable") == Some(true) {
                if boolean(o, "immutable") != Some(true) {
                    e.forbidden("immutable", "field is immutable when `immutable` is set");
                }
                if !json_eq(get(o, "data"), get(old, "data")) {
                    e.forbidden("data", "field is immutable when `immutable` is set");
                }
            }
        }
        self.meta_create(e, o, NameRule::Subdomain, true);
        // stringData is merged into data by conversion before validation upstream.
        let mut keys: Vec<&str> = Vec::new();
        let mut total = 0usize;
        for (k, v) in obj(o, "data").into_iter().flatten() {
            keys.push(k);
            total += v.as_str().map_or(0, base64_decoded_len);
        }
        for (k, v) in obj(o, "stringData").into_iter().flatten() {
            if !keys.contains(&k.as_str()) {
                keys.push(k);
            }
            total += v.as_str().map_or(0, str::len);
        }
        for k in &keys {
            e.each(&key("data", k), k, config_map_key_errs(k));
        }
        if total > MAX_SECRET_SIZE {
            e.too_long("data", MAX_SECRET_SIZE);
        }
        let has = |k: &str| keys.contains(&k);
        let meta = get(o, "metadata");
        match ty {
            "kubernetes.io/service-account-token" => {
                let sa = meta
                    .and_then(|m| obj(m, "annotations"))
                    .and_then(|a| a.get("kubernetes.io/service-account.name"))
                    .and_then(|v| v.as_str())
                    .unwrap_or("");
                if sa.is_empty() {
                    e.required(
                        "metadata.annotations[kubernetes.io/service-account.name]",
                        "",
                    );
                }
            }
            "kubernetes.io/dockercfg" if !has(".dockercfg") => e.required("data[.dockercfg]", ""),
            "kubernetes.io/dockerconfigjson" if !has(".dockerconfigjson") => {
                e.required("data[.dockerconfigjson]", "")
            }
            "kubernetes.io/basic-auth" if !has("username") && !has("password") => {
                e.required("data[username]", "");
                e.required("data[password]", "");
            }
            "kubernetes.io/ssh-auth" if !has("ssh-privatekey") => {
                e.required("data[ssh-privatekey]", "")
            }
            "kubernetes.io/tls" => {
                if !has("tls.crt") {
                    e.required("data[tls.crt]", "");
                }
                if !has("tls.key") {
                    e.required("data[tls.key]", "");
                }
            }
            _ => {}
        }
    }

    fn namespace(&self, e: &mut Errs, o: &Value) {
        if let Some(old) = self.old {
            self.meta_update(e, o, old, true);
            return;
        }
        self.meta_create(e, o, NameRule::Label, true);
        if let Some(spec) = get(o, "spec") {
            for f in items(spec, "finalizers").iter().filter_map(|v| v.as_str()) {
                e.each("spec.finalizers", f, qualified_name_errs(f));
                kube_finalizer_name(e, f, "spec.finalizers");
            }
        }
    }

    // ----- apps/v1 -----

    fn selector_immutable(&self, e: &mut Errs, spec: &Value) {
        let Some(old) = self.old else { return };
        // Selector updates are tolerated only by the removed apps/v1beta1 and extensions/v1beta1.
        if self.version == "v1beta1" && (self.group == "apps" || self.group == "extensions") {
            return;
        }
        let old_sel = get(old, "spec").and_then(|s| get(s, "selector"));
        if !json_eq(get(spec, "selector"), old_sel) {
            e.invalid(
                "spec.selector",
                Bad::Json(selector_json(get(spec, "selector"))),
                IMMUTABLE,
            );
        }
    }

    /// `ValidateDeploymentSpec` / `ValidateReplicaSetSpec` selector + template part.
    fn replica_selector_and_template(&self, e: &mut Errs, spec: &Value, what: &str) {
        let sel = get(spec, "selector");
        let mut sel_ok = true;
        match sel {
            None => e.required("spec.selector", ""),
            Some(s) => {
                sel_ok = validate_label_selector(e, s, "spec.selector");
                if obj(s, "matchLabels").is_none_or(|m| m.is_empty())
                    && items(s, "matchExpressions").is_empty()
                {
                    e.invalid(
                        "spec.selector",
                        Bad::Json(selector_json(Some(s))),
                        "empty selector is invalid for deployment",
                    );
                }
            }
        }
        if !sel_ok {
            e.invalid(
                "spec.selector",
                Bad::Json(selector_json(sel)),
                "invalid label selector",
            );
            return;
        }
        let empty = Value::Object(Map::new());
        let t = get(spec, "template").unwrap_or(&empty);
        template_selector_match(e, &parse_selector(sel), t, "spec.template");
        pod_template_spec(e, t, "spec.template");
        replica_template_policy(e, t, "spec.template", what);
    }

    fn deployment(&self, e: &mut Errs, o: &Value) {
        self.meta(e, o, NameRule::Subdomain, true);
        let empty = Value::Object(Map::new());
        let spec = get(o, "spec").unwrap_or(&empty);
        e.nonnegative("spec.replicas", int(spec, "replicas"));
        self.replica_selector_and_template(e, spec, "ReplicaSet");
        if let Some(strategy) = get(spec, "strategy") {
            deployment_strategy(e, strategy);
        }
        e.nonnegative("spec.minReadySeconds", int(spec, "minReadySeconds"));
        e.nonnegative(
            "spec.revisionHistoryLimit",
            int(spec, "revisionHistoryLimit"),
        );
        if let Some(rb) = get(spec, "rollbackTo") {
            e.nonnegative("spec.rollback.version", int(rb, "revision"));
        }
        if let Some(pds) = int(spec, "progressDeadlineSeconds") {
            e.nonnegative("spec.progressDeadlineSeconds", Some(pds));
            if pds <= int(spec, "minReadySeconds").unwrap_or(0) {
                e.invalid(
                    "spec.progressDeadlineSeconds",
                    Bad::Int(pds),
                    "must be greater than minReadySeconds",
                );
            }
        }
        self.selector_immutable(e, spec);
    }

    fn replica_set(&self, e: &mut Errs, o: &Value) {
        self.meta(e, o, NameRule::Subdomain, true);
        let empty = Value::Object(Map::new());
        let spec = get(o, "spec").unwrap_or(&empty);
        e.nonnegative("spec.replicas", int(spec, "replicas"));
        e.nonnegative("spec.minReadySeconds", int(spec, "minReadySeconds"));
        self.replica_selector_and_template(e, spec, "ReplicaSet");
        self.selector_immutable(e, spec);
    }

    fn stateful_set(&self, e: &mut Errs, o: &Value) {
        self.meta(e, o, NameRule::Label, true);
        let empty = Value::Object(Map::new());
        let spec = get(o, "spec").unwrap_or(&empty);
        if let Some(pmp) = st(spec, "podManagementPolicy").filter(|x| !x.is_empty()) {
            if pmp != "OrderedReady" && pmp != "Parallel" {
                e.invalid(
                    "spec.podManagementPolicy",
                    js(pmp),
                    "must be 'OrderedReady' or 'Parallel'",
                );
            }
        }
        if let Some(us) = get(spec, "updateStrategy") {
            let ru = get(us, "rollingUpdate");
            match st(us, "type").unwrap_or("") {
                "" => {}
                "OnDelete" => {
                    if let Some(ru) = ru {
                        let mut v = Map::new();
                        v.insert(
                            "Partition".into(),
                            Value::from(int(ru, "partition").unwrap_or(0)),
                        );
                        v.insert(
                            "MaxUnavailable".into(),
                            get(ru, "maxUnavailable").cloned().unwrap_or(Value::Null),
                        );
                        e.invalid(
                            "spec.updateStrategy.rollingUpdate",
                            Bad::Json(Value::Object(v)),
                            "only allowed for updateStrategy 'RollingUpdate'",
                        );
                    }
                }
                "RollingUpdate" => {
                    if let Some(ru) = ru {
                        let p = "spec.updateStrategy.rollingUpdate";
                        e.nonnegative(&child(p, "partition"), int(ru, "partition"));
                        if let Some(mu) = get(ru, "maxUnavailable") {
                            let mp = child(p, "maxUnavailable");
                            validate_positive_int_or_percent(e, Some(mu), &mp);
                            if int_or_percent_value(Some(mu)) == 0 {
                                e.invalid(&mp, Bad::Json(intstr_json(Some(mu))), "cannot be 0");
                            }
                            not_more_than_100_percent(e, Some(mu), &mp);
                        }
                    }
                }
                other => {
                    let mut v = Map::new();
                    v.insert("Type".into(), Value::from(other));
                    v.insert("RollingUpdate".into(), Value::Null);
                    e.invalid(
                        "spec.updateStrategy",
                        Bad::Json(Value::Object(v)),
                        "must be 'RollingUpdate' or 'OnDelete'",
                    );
                }
            }
        }
        if let Some(policy) = get(spec, "persistentVolumeClaimRetentionPolicy") {
            for f in ["whenDeleted", "whenScaled"] {
                let v = st(policy, f).unwrap_or("");
                if v != "Retain" && v != "Delete" && get(policy, f).is_some() {
                    e.not_supported(
                        &format!("spec.persistentVolumeClaimRetentionPolicy.{f}"),
                        js(v),
                        &["Retain", "Delete"],
                    );
                }
            }
        }
        e.nonnegative("spec.replicas", int(spec, "replicas"));
        e.nonnegative("spec.minReadySeconds", int(spec, "minReadySeconds"));
        if let Some(ord) = get(spec, "ordinals") {
            e.nonnegative("spec.ordinals.start", int(ord, "start"));
        }
        let sel = get(spec, "selector");
        let mut sel_ok = true;
        match sel {
            None => e.required("spec.selector", ""),
            Some(s) => {
                sel_ok = validate_label_selector(e, s, "spec.selector");
                if obj(s, "matchLabels").is_none_or(|m| m.is_empty())
                    && items(s, "matchExpressions").is_empty()
                {
                    e.invalid(
                        "spec.selector",
                        Bad::Json(selector_json(Some(s))),
                        "empty selector is invalid for statefulset",
                    );
                }
            }
        }
        let tmpl = get(spec, "template").unwrap_or(&empty);
        if !sel_ok {
            e.invalid("spec.selector", Bad::Json(selector_json(sel)), "");
        } else {
            // Upstream validates only the template's labels and annotations here
            // (ValidatePodTemplateSpecForStatefulSet), note the path `spec.template.labels`.
            template_selector_match(e, &parse_selector(sel), tmpl, "spec.template");
            let tm = get(tmpl, "metadata").unwrap_or(&empty);
            validate_labels(e, obj(tm, "labels"), "spec.template.labels");
            validate_annotations(e, obj(tm, "annotations"), "spec.template.annotations");
        }
        let tspec = get(tmpl, "spec").unwrap_or(&empty);
        if let Some(rp) = st(tspec, "restartPolicy") {
            if rp != "Always" {
                e.not_supported("spec.template.spec.restartPolicy", js(rp), &["Always"]);
            }
        }
        if get(tspec, "activeDeadlineSeconds").is_some() {
            e.forbidden(
                "spec.template.spec.activeDeadlineSeconds",
                "activeDeadlineSeconds in StatefulSet is not Supported",
            );
        }
        if let Some(old) = self.old {
            let old_spec = get(old, "spec").unwrap_or(&empty);
            let mutable = [
                "replicas",
                "template",
                "updateStrategy",
                "minReadySeconds",
                "ordinals",
                "persistentVolumeClaimRetentionPolicy",
            ];
            let strip = |v: &Value| -> Value {
                let mut m = v.as_object().cloned().unwrap_or_default();
                for f in mutable {
                    m.remove(f);
                }
                Value::Object(m)
            };
            if !json_eq(Some(&strip(spec)), Some(&strip(old_spec))) {
                e.forbidden(
                    "spec",
                    "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
                );
            }
        }
    }

    fn daemon_set(&self, e: &mut Errs, o: &Value) {
        self.meta(e, o, NameRule::Subdomain, true);
        let empty = Value::Object(Map::new());
        let spec = get(o, "spec").unwrap_or(&empty);
        let sel = get(spec, "selector");
        let sel_ok = sel.is_none_or(|s| validate_label_selector(e, s, "spec.selector"));
        let tmpl = get(spec, "template").unwrap_or(&empty);
        if sel_ok {
            let labels = get(tmpl, "metadata").and_then(|m| obj(m, "labels"));
            if !selects(&parse_selector(sel), labels) {
                e.invalid(
                    "spec.template.metadata.labels",
                    Bad::Json(map_json(labels)),
                    "`selector` does not match template `labels`",
                );
            }
        }
        if let Some(s) = sel {
            if obj(s, "matchLabels").is_none_or(|m| m.is_empty())
                && items(s, "matchExpressions").is_empty()
            {
                e.invalid(
                    "spec.selector",
                    Bad::Json(selector_json(Some(s))),
                    "empty selector is invalid for daemonset",
                );
            }
        }
        pod_template_spec(e, tmpl, "spec.template");
        replica_template_policy(e, tmpl, "spec.template", "DaemonSet");
        e.nonnegative("spec.minReadySeconds", int(spec, "minReadySeconds"));
        e.nonnegative("spec.templateGeneration", int(spec, "templateGeneration"));
        if let Some(us) = get(spec, "updateStrategy") {
            let p = "spec.updateStrategy";
            match st(us, "type").unwrap_or("") {
                "OnDelete" => {}
                "RollingUpdate" => {
                    if let Some(ru) = get(us, "rollingUpdate") {
                        let rp = child(p, "rollingUpdate");
                        let mu = Some(get(ru, "maxUnavailable").unwrap_or(&Value::from(1)).clone());
                        let ms = get(ru, "maxSurge").cloned();
                        let (mup, msp) = (child(&rp, "maxUnavailable"), child(&rp, "maxSurge"));
                        validate_positive_int_or_percent(e, mu.as_ref(), &mup);
                        validate_positive_int_or_percent(e, ms.as_ref(), &msp);
                        not_more_than_100_percent(e, mu.as_ref(), &mup);
                        not_more_than_100_percent(e, ms.as_ref(), &msp);
                        let has_u = int_or_percent_value(mu.as_ref()) != 0;
                        let has_s = int_or_percent_value(ms.as_ref()) != 0;
                        if has_u && has_s {
                            e.invalid(
                                &msp,
                                Bad::Json(intstr_json(ms.as_ref())),
                                "may not be set when maxUnavailable is non-zero",
                            );
                        } else if !has_u && !has_s {
                            e.required(&mup, "cannot be 0 when maxSurge is 0");
                        }
                    }
                }
                "" => {}
                other => {
                    let mut v = Map::new();
                    v.insert("Type".into(), Value::from(other));
                    v.insert("RollingUpdate".into(), Value::Null);
                    e.not_supported(
                        p,
                        Bad::Json(Value::Object(v)),
                        &["RollingUpdate", "OnDelete"],
                    );
                }
            }
        }
        e.nonnegative(
            "spec.revisionHistoryLimit",
            int(spec, "revisionHistoryLimit"),
        );
        self.selector_immutable(e, spec);
    }

    // ----- batch/v1 -----

    fn job(&self, e: &mut Errs, o: &Value) {
        self.meta(e, o, NameRule::Subdomain, true);
        let empty = Value::Object(Map::new());
        let spec = get(o, "spec").unwrap_or(&empty);
        let meta = get(o, "metadata").unwrap_or(&empty);
        let manual = boolean(spec, "manualSelector") == Some(true);
        let uid = st(meta, "uid").unwrap_or("");
        let name = st(meta, "name").unwrap_or("");
        // validateGeneratedSelector: only meaningful once the server generated the selector.
        let generated = get(spec, "selector")
            .and_then(|s| obj(s, "matchLabels"))
            .is_some_and(|m| {
                m.contains_key("controller-uid")
                    || m.contains_key("batch.kubernetes.io/controller-uid")
            });
        if self.old.is_none() && !manual && generated && !uid.is_empty() {
            let tmeta = get(spec, "template")
                .and_then(|t| get(t, "metadata"))
                .unwrap_or(&empty);
            let labels = obj(tmeta, "labels");
            for (k, want) in [
                ("controller-uid", uid),
                ("job-name", name),
                ("batch.kubernetes.io/controller-uid", uid),
                ("batch.kubernetes.io/job-name", name),
            ] {
                let p = key("spec.template.metadata.labels", k);
                match labels.and_then(|l| l.get(k)) {
                    None => e.required(&p, &format!("must be '{want}'")),
                    Some(v) if v.as_str() != Some(want) => e.invalid(
                        &p,
                        Bad::Json(map_json(labels)),
                        &format!("must be '{want}'"),
                    ),
                    _ => {}
                }
            }
        }
        job_spec(e, spec, "spec");
        let sel = get(spec, "selector");
        let mut sel_ok = true;
        match sel {
            // The registry generates the selector unless manualSelector is set.
            None if manual => e.required("spec.selector", ""),
            None => sel_ok = false,
            Some(s) => sel_ok = validate_label_selector(e, s, "spec.selector"),
        }
        if sel_ok {
            let tmpl = get(spec, "template").unwrap_or(&empty);
            let labels = get(tmpl, "metadata").and_then(|m| obj(m, "labels"));
            if !selects(&parse_selector(sel), labels) {
                e.invalid(
                    "spec.template.metadata.labels",
                    Bad::Json(map_json(labels)),
                    "`selector` does not match template `labels`",
                );
            }
        }
        if let Some(old) = self.old {
            let old_spec = get(old, "spec").unwrap_or(&empty);
            if !json_eq(get(spec, "completions"), get(old_spec, "completions")) {
                let v = get(spec, "completions").cloned().unwrap_or(Value::Null);
                e.invalid("spec.completions", Bad::Json(v), IMMUTABLE);
            }
            if !json_eq(sel, get(old_spec, "selector")) {
                e.invalid("spec.selector", Bad::Json(selector_json(sel)), IMMUTABLE);
            }
            let suspended_never_started = boolean(spec, "suspend") == Some(true)
                && get(old, "status")
                    .and_then(|s| get(s, "startTime"))
                    .is_none();
            if !suspended_never_started
                && !json_eq(get(spec, "template"), get(old_spec, "template"))
            {
                let v = get(spec, "template").cloned().unwrap_or(Value::Null);
                e.invalid("spec.template", Bad::Json(v), IMMUTABLE);
            }
            for f in [
                "completionMode",
                "podFailurePolicy",
                "backoffLimitPerIndex",
                "managedBy",
                "successPolicy",
            ] {
                if !json_eq(get(spec, f), get(old_spec, f)) {
                    let v = get(spec, f).cloned().unwrap_or(Value::Null);
                    e.invalid(&child("spec", f), Bad::Json(v), IMMUTABLE);
                }
            }
        } else if let Some(c) = int(spec, "completions").filter(|c| *c > 0) {
            if st(spec, "completionMode") == Some("Indexed") {
                let host = format!("{name}-{}", c - 1);
                if !dns1123_label_errs(&host).is_empty() {
                    e.invalid(
                        "metadata.name",
                        s(name),
                        &format!("will not able to create pod with invalid DNS label: {host}"),
                    );
                }
            }
        }
    }

    fn cron_job(&self, e: &mut Errs, o: &Value) {
        self.meta(e, o, NameRule::Subdomain, true);
        let empty = Value::Object(Map::new());
        let spec = get(o, "spec").unwrap_or(&empty);
        let sched = st(spec, "schedule").unwrap_or("");
        if sched.is_empty() {
            e.required("spec.schedule", "");
        } else {
            if let Err(msg) = parse_cron_standard(sched) {
                e.invalid("spec.schedule", s(sched), &msg);
            }
            let old_has_tz = self
                .old
                .and_then(|o| get(o, "spec"))
                .and_then(|s| st(s, "schedule"))
                .is_some_and(|s| s.contains("TZ"));
            if old_has_tz && sched.contains("TZ") && get(spec, "timeZone").is_some() {
                e.invalid(
                    "spec.schedule",
                    s(sched),
                    "cannot use both timeZone field and TZ or CRON_TZ in schedule",
                );
            } else if !old_has_tz && sched.contains("TZ") {
                e.invalid(
                    "spec.schedule",
                    s(sched),
                    "cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
                );
            }
        }
        e.nonnegative(
            "spec.startingDeadlineSeconds",
            int(spec, "startingDeadlineSeconds"),
        );
        if let Some(tz) = st(spec, "timeZone") {
            let old_tz = self
                .old
                .and_then(|o| get(o, "spec"))
                .and_then(|s| st(s, "timeZone"));
            if old_tz != Some(tz) {
                validate_time_zone(e, tz);
            }
        }
        if let Some(cp) = st(spec, "concurrencyPolicy").filter(|x| !x.is_empty()) {
            if !["Allow", "Forbid", "Replace"].contains(&cp) {
                e.not_supported(
                    "spec.concurrencyPolicy",
                    js(cp),
                    &["Allow", "Forbid", "Replace"],
                );
            }
        }
        let jt = get(spec, "jobTemplate").unwrap_or(&empty);
        let jspec = get(jt, "spec").unwrap_or(&empty);
        job_spec(e, jspec, "spec.jobTemplate.spec");
        if let Some(sel) = get(jspec, "selector") {
            e.invalid(
                "spec.jobTemplate.spec.selector",
                Bad::Json(selector_json(Some(sel))),
                "`selector` will be auto-generated",
            );
        }
        if boolean(jspec, "manualSelector") == Some(true) {
            e.not_supported(
                "spec.jobTemplate.spec.manualSelector",
                Bad::Json(Value::Bool(true)),
                &["nil", "false"],
            );
        }
        e.nonnegative(
            "spec.successfulJobsHistoryLimit",
            int(spec, "successfulJobsHistoryLimit"),
        );
        e.nonnegative(
            "spec.failedJobsHistoryLimit",
            int(spec, "failedJobsHistoryLimit"),
        );
        if self.old.is_none() {
            let name = get(o, "metadata").and_then(|m| st(m, "name")).unwrap_or("");
            if name.len() > 52 {
                e.invalid(
                    "metadata.name",
                    s(name),
                    "must be no more than 52 characters",
                );
            }
        }
    }

    // ----- coordination.k8s.io/v1, policy/v1 -----

    /// `ValidateEventCreate` / `ValidateEventUpdate`: the legacy checks for every Event,
    /// plus, through `events.k8s.io` (`strict`), object metadata, series, required
    /// `eventTime`, `type`, unset deprecated fields and, on update, immutability. Field
    /// paths are upstream's (internal names: `involvedObject`, `message`, `count`, ...).
    fn event(&self, e: &mut Errs, o: &Value, strict: bool) {
        let field = |core: &'static str, events: &'static str| if strict { events } else { core };
        let empty = Value::Object(Map::new());
        let meta = get(o, "metadata").unwrap_or(&empty);
        let ns = st(meta, "namespace").unwrap_or("");
        let involved = get(o, field("involvedObject", "regarding")).unwrap_or(&empty);
        let inv_ns = st(involved, "namespace").unwrap_or("");
        let event_time = st(o, "eventTime").filter(|t| !t.is_empty());
        let mismatch = |e: &mut Errs| {
            e.invalid(
                "involvedObject.namespace",
                s(inv_ns),
                "does not match event.namespace",
            )
        };
        if event_time.is_none() {
            if inv_ns.is_empty() {
                if !ns.is_empty() && ns != "default" {
                    mismatch(e);
                }
            } else if ns != inv_ns {
                mismatch(e);
            }
        } else {
            if inv_ns.is_empty() && ns != "default" && ns != "kube-system" {
                mismatch(e);
            }
            let rc = st(o, field("reportingComponent", "reportingController")).unwrap_or("");
            if rc.is_empty() {
                e.required("reportingController", "");
            }
            for m in qualified_name_errs(rc) {
                e.invalid("reportingController", s(rc), &m);
            }
            let limited = |e: &mut Errs, path: &str, v: &str, limit: usize, required: bool| {
                if required && v.is_empty() {
                    e.required(path, "");
                }
                if v.len() > limit {
                    e.invalid(path, s(""), &format!("can have at most {limit} characters"));
                }
            };
            limited(
                e,
                "reportingInstance",
                st(o, "reportingInstance").unwrap_or(""),
                128,
                true,
            );
            limited(e, "action", st(o, "action").unwrap_or(""), 128, true);
            limited(e, "reason", st(o, "reason").unwrap_or(""), 128, true);
            limited(
                e,
                "message",
                st(o, field("message", "note")).unwrap_or(""),
                1024,
                false,
            );
        }
        if !ns.is_empty() {
            for m in dns1123_subdomain_errs(ns) {
                e.invalid("namespace", s(ns), &m);
            }
        }
        if !strict {
            return;
        }
        self.meta(e, o, NameRule::Subdomain, false);
        let series_changed = self
            .old
            .is_none_or(|old| get(old, "series") != get(o, "series"));
        if let (Some(series), true) = (get(o, "series"), series_changed) {
            if int(series, "count").unwrap_or(0) < 2 {
                e.invalid("series.count", s(""), "should be at least 2");
            }
            if st(series, "lastObservedTime").is_none_or(str::is_empty) {
                e.required("series.lastObservedTime", "");
            }
        }
        match self.old {
            None => {
                if event_time.is_none() {
                    e.required("eventTime", "");
                }
                let ty = st(o, "type").unwrap_or("");
                if ty != "Normal" && ty != "Warning" {
                    e.invalid("type", s(""), &format!("has invalid value: {ty}"));
                }
                for (f, path) in [
                    ("deprecatedFirstTimestamp", "firstTimestamp"),
                    ("deprecatedLastTimestamp", "lastTimestamp"),
                ] {
                    if st(o, f).is_some_and(|t| !t.is_empty()) {
                        e.invalid(path, s(""), "needs to be unset");
                    }
                }
                if int(o, "deprecatedCount").is_some_and(|c| c != 0) {
                    e.invalid("count", s(""), "needs to be unset");
                }
                let source = get(o, "deprecatedSource").unwrap_or(&empty);
                if st(source, "component").is_some_and(|c| !c.is_empty())
                    || st(source, "host").is_some_and(|h| !h.is_empty())
                {
                    e.invalid("source", s(""), "needs to be unset");
                }
            }
            Some(old) => {
                for (f, path) in [
                    ("regarding", "involvedObject"),
                    ("reason", "reason"),
                    ("note", "message"),
                    ("deprecatedSource", "source"),
                    ("deprecatedFirstTimestamp", "firstTimestamp"),
                    ("deprecatedLastTimestamp", "lastTimestamp"),
                    ("deprecatedCount", "count"),
                    ("type", "type"),
                    ("eventTime", "eventTime"),
                    ("action", "action"),
                    ("related", "related"),
                    ("reportingController", "reportingController"),
                    ("reportingInstance", "reportingInstance"),
                ] {
                    if get(o, f) != get(old, f) {
                        e.invalid(
                            path,
                            Bad::Json(get(o, f).cloned().unwrap_or(Value::Null)),
                            IMMUTABLE,
                        );
                    }
                }
            }
        }
    }

    fn lease(&self, e: &mut Errs, o: &Value) {
        self.meta(e, o, NameRule::Subdomain, false);
        let empty = Value::Object(Map::new());
        let spec = get(o, "spec").unwrap_or(&empty);
        if let Some(d) = int(spec, "leaseDurationSeconds").filter(|d| *d <= 0) {
            e.invalid(
                "spec.leaseDurationSeconds",
                Bad::Int(d),
                "must be greater than 0",
            );
        }
        if let Some(t) = int(spec, "leaseTransitions").filter(|t| *t < 0) {
            e.invalid(
                "spec.leaseTransitions",
                Bad::Int(t),
                "must be greater than or equal to 0",
            );
        }
        let strategy = st(spec, "strategy");
        if let Some(sv) = strategy {
            if !sv.contains('/') {
                if sv != "OldestEmulationVersion" {
                    e.not_supported(
                        "spec.strategy.strategy",
                        js(sv),
                        &["OldestEmulationVersion"],
                    );
                }
            } else {
                for m in qualified_name_errs(sv) {
                    e.invalid("spec.strategy.strategy", js(sv), &m);
                }
            }
        }
        if st(spec, "preferredHolder").is_some_and(|p| !p.is_empty())
            && strategy.is_none_or(|s| s.is_empty())
        {
            e.forbidden(
                "spec.preferredHolder",
                "may only be specified if `strategy` is defined",
            );
        }
    }

    fn pdb(&self, e: &mut Errs, o: &Value) {
        let empty = Value::Object(Map::new());
        let spec = get(o, "spec").unwrap_or(&empty);
        let before = e.0.len();
        let (min, max) = (get(spec, "minAvailable"), get(spec, "maxUnavailable"));
        if min.is_some() && max.is_some() {
            e.invalid(
                "spec",
                Bad::Json(spec.clone()),
                "minAvailable and maxUnavailable cannot be both set",
            );
        }
        for (v, p) in [(min, "spec.minAvailable"), (max, "spec.maxUnavailable")] {
            if v.is_some() {
                validate_positive_int_or_percent(e, v, p);
                not_more_than_100_percent(e, v, p);
            }
        }
        if let Some(sel) = get(spec, "selector") {
            validate_label_selector(e, sel, "spec.selector");
        }
        if let Some(p) = st(spec, "unhealthyPodEvictionPolicy") {
            if p != "IfHealthyBudget" && p != "AlwaysAllow" {
                e.not_supported(
                    "spec.unhealthyPodEvictionPolicy",
                    js(p),
                    &["AlwaysAllow", "IfHealthyBudget"],
                );
            }
        }
        // The generic registry validates object metadata (path-segment names) only
        // after the kind-specific validation passed.
        if e.0.len() == before {
            self.meta(e, o, NameRule::PathSegment, false);
        }
    }
}

// ---------------------------------------------------------------------------
// Shared object-meta helpers
// ---------------------------------------------------------------------------

/// `ValidateAnnotations`.
fn validate_annotations(e: &mut Errs, m: Option<&Map<String, Value>>, path: &str) {
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
fn validate_owner_references(e: &mut Errs, meta: &Value) {
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
fn validate_finalizers(e: &mut Errs, meta: &Value) {
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
fn kube_finalizer_checks(e: &mut Errs, meta: &Value) {
    for (i, f) in items(meta, "finalizers").iter().enumerate() {
        if let Some(f) = f.as_str() {
            kube_finalizer_name(e, f, &index("metadata.finalizers", i));
        }
    }
}

fn kube_finalizer_name(e: &mut Errs, f: &str, path: &str) {
    if !f.contains('/') && !["kubernetes", "orphan", "foregroundDeletion"].contains(&f) {
        e.invalid(
            path,
            s(f),
            "name is neither a standard finalizer name nor is it fully qualified",
        );
    }
}

fn base64_decoded_len(v: &str) -> usize {
    let trimmed = v.trim_end_matches('=');
    trimmed.len() * 3 / 4
}

// ---------------------------------------------------------------------------
// Pod templates and pod specs (core validation)
// ---------------------------------------------------------------------------

fn template_selector_match(e: &mut Errs, sel: &LabelSelector, t: &Value, path: &str) {
    if sel.is_empty() {
        return;
    }
    let labels = get(t, "metadata").and_then(|m| obj(m, "labels"));
    if !selects(sel, labels) {
        e.invalid(
            &format!("{path}.metadata.labels"),
            Bad::Json(map_json(labels)),
            "`selector` does not match template `labels`",
        );
    }
}

/// The restartPolicy/activeDeadlineSeconds checks of ReplicaSet/RC/DaemonSet templates.
fn replica_template_policy(e: &mut Errs, t: &Value, path: &str, what: &str) {
    let empty = Value::Object(Map::new());
    let spec = get(t, "spec").unwrap_or(&empty);
    if let Some(rp) = st(spec, "restartPolicy").filter(|r| !r.is_empty()) {
        if rp != "Always" {
            e.not_supported(&format!("{path}.spec.restartPolicy"), js(rp), &["Always"]);
        }
    }
    if get(spec, "activeDeadlineSeconds").is_some() {
        e.forbidden(
            &format!("{path}.spec.activeDeadlineSeconds"),
            &format!("activeDeadlineSeconds in {what} is not Supported"),
        );
    }
}

/// `ValidatePodTemplateSpec`.
fn pod_template_spec(e: &mut Errs, t: &Value, path: &str) {
    let empty = Value::Object(Map::new());
    let meta = get(t, "metadata").unwrap_or(&empty);
    validate_labels(e, obj(meta, "labels"), &child(path, "labels"));
    validate_annotations(e, obj(meta, "annotations"), &child(path, "annotations"));
    let spec = get(t, "spec").unwrap_or(&empty);
    let sp = child(path, "spec");
    pod_spec(e, spec, &sp);
    if !items(spec, "ephemeralContainers").is_empty() {
        e.forbidden(
            &child(&sp, "ephemeralContainers"),
            "ephemeral containers not allowed in pod template",
        );
    }
}

/// `validateJobSpec` (the part shared by Job and CronJob templates).
fn job_spec(e: &mut Errs, spec: &Value, path: &str) {
    for f in [
        "parallelism",
        "completions",
        "activeDeadlineSeconds",
        "backoffLimit",
        "ttlSecondsAfterFinished",
        "backoffLimitPerIndex",
        "maxFailedIndexes",
    ] {
        e.nonnegative(&child(path, f), int(spec, f));
    }
    if get(spec, "maxFailedIndexes").is_some() && get(spec, "backoffLimitPerIndex").is_none() {
        e.required(
            &child(path, "backoffLimitPerIndex"),
            "when maxFailedIndexes is specified",
        );
    }
    let mode = st(spec, "completionMode");
    if let Some(m) = mode {
        if m != "NonIndexed" && m != "Indexed" {
            e.not_supported(
                &child(path, "completionMode"),
                js(m),
                &["NonIndexed", "Indexed"],
            );
        }
        if m == "Indexed" && get(spec, "completions").is_none() {
            e.required(
                &child(path, "completions"),
                "when completion mode is Indexed",
            );
        }
    }
    if mode.is_none_or(|m| m == "NonIndexed") {
        if let Some(b) = int(spec, "backoffLimitPerIndex") {
            e.invalid(
                &child(path, "backoffLimitPerIndex"),
                Bad::Int(b),
                "requires indexed completion mode",
            );
        }
        if let Some(b) = int(spec, "maxFailedIndexes") {
            e.invalid(
                &child(path, "maxFailedIndexes"),
                Bad::Int(b),
                "requires indexed completion mode",
            );
        }
    }
    if let Some(p) = st(spec, "podReplacementPolicy") {
        if get(spec, "podFailurePolicy").is_some() {
            if p != "Failed" {
                e.not_supported(&child(path, "podReplacementPolicy"), js(p), &["Failed"]);
            }
        } else if p != "Failed" && p != "TerminatingOrFailed" {
            e.not_supported(
                &child(path, "podReplacementPolicy"),
                js(p),
                &["Failed", "TerminatingOrFailed"],
            );
        }
    }
    let empty = Value::Object(Map::new());
    let tmpl = get(spec, "template").unwrap_or(&empty);
    let tp = child(path, "template");
    pod_template_spec(e, tmpl, &tp);
    let rp = get(tmpl, "spec")
        .and_then(|s| st(s, "restartPolicy"))
        .unwrap_or("");
    let rpp = format!("{tp}.spec.restartPolicy");
    if rp == "Always" || rp.is_empty() {
        e.required(&rpp, "valid values: \"OnFailure\", \"Never\"");
    } else if rp != "OnFailure" && rp != "Never" {
        e.not_supported(&rpp, js(rp), &["OnFailure", "Never"]);
    } else if get(spec, "podFailurePolicy").is_some() && rp != "Never" {
        e.invalid(
            &rpp,
            js(rp),
            "only \"Never\" is supported when podFailurePolicy is specified",
        );
    }
}

/// `ValidatePodSpec` (the commonly exercised subset).
fn pod_spec(e: &mut Errs, spec: &Value, path: &str) {
    let grace = int(spec, "terminationGracePeriodSeconds");
    // Volumes: names and a single source each.
    let mut vol_names: Vec<&str> = Vec::new();
    let mut pvc_vols: Vec<&str> = Vec::new();
    for (i, vol) in items(spec, "volumes").iter().enumerate() {
        let vp = index(&child(path, "volumes"), i);
        let mut local = Errs::default();
        let sources: Vec<&String> = vol
            .as_object()
            .map(|m| {
                m.iter()
                    .filter(|(k, v)| *k != "name" && !v.is_null())
                    .map(|(k, _)| k)
                    .collect()
            })
            .unwrap_or_default();
        for extra in sources.iter().skip(1) {
            let name = if extra.as_str() == "downwardAPI" {
                "downwarAPI"
            } else {
                extra.as_str()
            };
            local.forbidden(&child(&vp, name), "may not specify more than 1 volume type");
        }
        if sources.is_empty() {
            local.required(&vp, "must specify a volume type");
        }
        let name = st(vol, "name").unwrap_or("");
        let np = child(&vp, "name");
        if name.is_empty() {
            local.required(&np, "");
        } else {
            local.each(&np, name, dns1123_label_errs(name));
        }
        if vol_names.contains(&name) {
            local.duplicate(&np, s(name));
        }
        if local.0.is_empty() {
            vol_names.push(name);
            if get(vol, "persistentVolumeClaim").is_some() || get(vol, "ephemeral").is_some() {
                pvc_vols.push(name);
            }
        } else {
            e.0.extend(local.0);
        }
    }
    // Containers.
    let containers = items(spec, "containers");
    let cp = child(path, "containers");
    let mut all_names: Vec<&str> = Vec::new();
    if containers.is_empty() {
        e.required(&cp, "");
    } else {
        for (i, c) in containers.iter().enumerate() {
            let p = index(&cp, i);
            container_common(e, c, &p, &vol_names);
            let name = st(c, "name").unwrap_or("");
            if all_names.contains(&name) {
                e.duplicate(&child(&p, "name"), s(name));
            } else {
                all_names.push(name);
            }
            probes(e, c, &p, grace);
            if get(c, "restartPolicy").is_some() {
                e.forbidden(
                    &child(&p, "restartPolicy"),
                    "may not be set for non-init containers",
                );
            }
        }
        host_port_conflicts(e, containers.iter().enumerate(), &cp);
    }
    let icp = child(path, "initContainers");
    for (i, c) in items(spec, "initContainers").iter().enumerate() {
        let p = index(&icp, i);
        container_common(e, c, &p, &vol_names);
        let mut restart_always = false;
        if let Some(rp) = st(c, "restartPolicy") {
            if rp != "Always" {
                e.not_supported(&child(&p, "restartPolicy"), js(rp), &["Always"]);
            }
            restart_always = rp == "Always";
        }
        let name = st(c, "name").unwrap_or("");
        if all_names.contains(&name) {
            e.duplicate(&child(&p, "name"), s(name));
        } else if !name.is_empty() {
            all_names.push(name);
        }
        host_port_conflicts(e, std::iter::once((i, c)), &icp);
        if restart_always {
            probes(e, c, &p, grace);
        } else {
            for f in [
                "lifecycle",
                "livenessProbe",
                "readinessProbe",
                "startupProbe",
            ] {
                if get(c, f).is_some() {
                    e.forbidden(
                        &child(&p, f),
                        "may not be set for init containers without restartPolicy=Always",
                    );
                }
            }
        }
        if !items(c, "resizePolicy").is_empty() {
            e.invalid(
                &child(&p, "resizePolicy"),
                Bad::Json(get(c, "resizePolicy").cloned().unwrap_or(Value::Null)),
                "must not be set for init containers",
            );
        }
    }
    // hostNetwork dependencies.
    if boolean(spec, "hostNetwork") == Some(true) {
        for (i, c) in containers.iter().enumerate() {
            for (j, port) in items(c, "ports").iter().enumerate() {
                let hp = int(port, "hostPort").unwrap_or(0);
                let cport = int(port, "containerPort").unwrap_or(0);
                // Defaulting copies containerPort into an unset hostPort for pods, so an
                // unset (0) hostPort is tolerated for pods as well as templates.
                if hp != 0 && hp != cport {
                    e.invalid(
                        &child(&index(&child(&index(&cp, i), "ports"), j), "hostPort"),
                        Bad::Int(hp),
                        "must match `containerPort` when `hostNetwork` is true",
                    );
                }
            }
        }
    }
    if let Some(rp) = st(spec, "restartPolicy").filter(|x| !x.is_empty()) {
        if !["Always", "OnFailure", "Never"].contains(&rp) {
            e.not_supported(
                &child(path, "restartPolicy"),
                js(rp),
                &["Always", "OnFailure", "Never"],
            );
        }
    }
    let dns_policy = st(spec, "dnsPolicy").filter(|x| !x.is_empty());
    if let Some(dp) = dns_policy {
        if !["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"].contains(&dp) {
            e.not_supported(
                &child(path, "dnsPolicy"),
                js(dp),
                &["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"],
            );
        }
    }
    validate_labels(e, obj(spec, "nodeSelector"), &child(path, "nodeSelector"));
    if let Some(sc) = get(spec, "securityContext") {
        id_ranges(e, sc, &child(path, "securityContext"));
    }
    if dns_policy == Some("None") {
        let dc = get(spec, "dnsConfig");
        match dc {
            None => e.required(
                &child(path, "dnsConfig"),
                "must provide `dnsConfig` when `dnsPolicy` is None",
            ),
            Some(dc) if items(dc, "nameservers").is_empty() => e.required(
                &child(&child(path, "dnsConfig"), "nameservers"),
                "must provide at least one DNS nameserver when `dnsPolicy` is None",
            ),
            _ => {}
        }
    }
    for (i, g) in items(spec, "readinessGates").iter().enumerate() {
        let ct = st(g, "conditionType").unwrap_or("");
        e.each(
            &child(&index(&child(path, "readinessGates"), i), "conditionType"),
            ct,
            qualified_name_errs(ct),
        );
    }
    let mut gates: Vec<&str> = Vec::new();
    for (i, g) in items(spec, "schedulingGates").iter().enumerate() {
        let gp = index(&child(path, "schedulingGates"), i);
        let n = st(g, "name").unwrap_or("");
        e.each(&gp, n, qualified_name_errs(n));
        if gates.contains(&n) {
            e.duplicate(&gp, s(n));
        }
        gates.push(n);
    }
    for (f, rule) in [
        ("serviceAccountName", NameRule::Subdomain),
        ("nodeName", NameRule::Subdomain),
    ] {
        if let Some(v) = st(spec, f).filter(|v| !v.is_empty()) {
            e.each(&child(path, f), v, rule.check(v, false));
        }
    }
    if let Some(ads) = int(spec, "activeDeadlineSeconds") {
        if !(1..=i32::MAX as i64).contains(&ads) {
            e.invalid(
                &child(path, "activeDeadlineSeconds"),
                Bad::Int(ads),
                "must be between 1 and 2147483647, inclusive",
            );
        }
    }
    for f in ["hostname", "subdomain"] {
        if let Some(v) = st(spec, f).filter(|v| !v.is_empty()) {
            e.each(&child(path, f), v, dns1123_label_errs(v));
        }
    }
    if let Some(v) = st(spec, "priorityClassName").filter(|v| !v.is_empty()) {
        e.each(
            &child(path, "priorityClassName"),
            v,
            dns1123_subdomain_errs(v),
        );
    }
    if let Some(v) = st(spec, "runtimeClassName") {
        e.each(
            &child(path, "runtimeClassName"),
            v,
            dns1123_subdomain_errs(v),
        );
    }
    if let Some(pp) = st(spec, "preemptionPolicy") {
        if pp != "PreemptLowerPriority" && pp != "Never" {
            e.not_supported(
                &child(path, "preemptionPolicy"),
                js(pp),
                &["PreemptLowerPriority", "Never"],
            );
        }
    }
    if let Some(os) = get(spec, "os") {
        let n = st(os, "name").unwrap_or("");
        if n.is_empty() {
            e.required(&child(&child(path, "os"), "name"), "cannot be empty");
        } else if n != "linux" && n != "windows" {
            e.not_supported(&child(path, "os"), js(n), &["linux", "windows"]);
        }
    }
}

/// `AccumulateUniqueHostPorts` over the given containers.
fn host_port_conflicts<'a>(e: &mut Errs, cs: impl Iterator<Item = (usize, &'a Value)>, path: &str) {
    let mut seen: Vec<String> = Vec::new();
    for (i, c) in cs {
        for (j, p) in items(c, "ports").iter().enumerate() {
            let hp = int(p, "hostPort").unwrap_or(0);
            if hp == 0 {
                continue;
            }
            let k = format!(
                "{}/{}/{hp}",
                st(p, "protocol").unwrap_or("TCP"),
                st(p, "hostIP").unwrap_or("")
            );
            if seen.contains(&k) {
                e.duplicate(
                    &child(&index(&child(&index(path, i), "ports"), j), "hostPort"),
                    s(&k),
                );
            } else {
                seen.push(k);
            }
        }
    }
}

/// runAsUser / runAsGroup ranges of a (pod or container) security context.
fn id_ranges(e: &mut Errs, sc: &Value, path: &str) {
    for f in ["runAsUser", "runAsGroup"] {
        if let Some(v) = int(sc, f) {
            if !(0..=0xffff_ffff).contains(&v) {
                e.invalid(
                    &child(path, f),
                    Bad::Int(v),
                    "must be between 0 and 4294967295, inclusive",
                );
            }
        }
    }
}

fn validate_protocol(e: &mut Errs, p: &Value, path: &str) {
    if let Some(proto) = st(p, "protocol").filter(|x| !x.is_empty()) {
        if !["TCP", "UDP", "SCTP"].contains(&proto) {
            e.not_supported(&child(path, "protocol"), js(proto), &["SCTP", "TCP", "UDP"]);
        }
    }
}

/// `ValidatePortNumOrName`.
fn port_num_or_name(e: &mut Errs, v: &Value, path: &str, zero_is_default: bool) {
    match v {
        Value::String(name) => e.each(path, name, port_name_errs(name)),
        other => {
            if let Some(n) = as_int(other) {
                if n == 0 && zero_is_default {
                    return;
                }
                if !(1..=65535).contains(&n) {
                    e.invalid(path, Bad::Int(n), PORT_RANGE);
                }
            }
        }
    }
}

/// `validateContainerCommon` (subset).
fn container_common(e: &mut Errs, c: &Value, path: &str, volumes: &[&str]) {
    let name = st(c, "name").unwrap_or("");
    let np = child(path, "name");
    if name.is_empty() {
        e.required(&np, "");
    } else {
        e.each(&np, name, dns1123_label_errs(name));
    }
    if st(c, "image").unwrap_or("").is_empty() {
        e.required(&child(path, "image"), "");
    }
    if let Some(tmp) = st(c, "terminationMessagePolicy").filter(|x| !x.is_empty()) {
        if tmp != "File" && tmp != "FallbackToLogsOnError" {
            e.not_supported(
                &child(path, "terminationMessagePolicy"),
                js(tmp),
                &["File", "FallbackToLogsOnError"],
            );
        }
    }
    // Ports.
    let pp = child(path, "ports");
    let mut port_names: Vec<&str> = Vec::new();
    for (i, p) in items(c, "ports").iter().enumerate() {
        let ip = index(&pp, i);
        if let Some(n) = st(p, "name").filter(|n| !n.is_empty()) {
            let msgs = port_name_errs(n);
            if !msgs.is_empty() {
                e.each(&child(&ip, "name"), n, msgs);
            } else if port_names.contains(&n) {
                e.duplicate(&child(&ip, "name"), s(n));
            } else {
                port_names.push(n);
            }
        }
        match int(p, "containerPort").unwrap_or(0) {
            0 => e.required(&child(&ip, "containerPort"), ""),
            cport if !(1..=65535).contains(&cport) => {
                e.invalid(&child(&ip, "containerPort"), Bad::Int(cport), PORT_RANGE)
            }
            _ => {}
        }
        if let Some(hp) = int(p, "hostPort").filter(|h| *h != 0) {
            if !(1..=65535).contains(&hp) {
                e.invalid(&child(&ip, "hostPort"), Bad::Int(hp), PORT_RANGE);
            }
        }
        validate_protocol(e, p, &ip);
    }
    // Env.
    let ep = child(path, "env");
    for (i, ev) in items(c, "env").iter().enumerate() {
        let ip = index(&ep, i);
        let n = st(ev, "name").unwrap_or("");
        if n.is_empty() {
            e.required(&child(&ip, "name"), "");
        } else {
            e.each(&child(&ip, "name"), n, env_var_name_errs(n));
        }
        if let Some(vf) = get(ev, "valueFrom") {
            env_value_from(e, ev, vf, &child(&ip, "valueFrom"));
        }
    }
    let efp = child(path, "envFrom");
    for (i, ef) in items(c, "envFrom").iter().enumerate() {
        let ip = index(&efp, i);
        if let Some(prefix) = st(ef, "prefix").filter(|p| !p.is_empty()) {
            e.each(&child(&ip, "prefix"), prefix, env_var_name_errs(prefix));
        }
        let mut n = 0;
        for f in ["configMapRef", "secretRef"] {
            if let Some(r) = get(ef, f) {
                n += 1;
                let name = st(r, "name").unwrap_or("");
                let rp = child(&child(&ip, f), "name");
                if name.is_empty() {
                    e.required(&rp, "");
                } else {
                    e.each(&rp, name, NameRule::Subdomain.check(name, true));
                }
            }
        }
        if n == 0 {
            e.invalid(
                &efp,
                s(""),
                "must specify one of: `configMapRef` or `secretRef`",
            );
        } else if n > 1 {
            e.invalid(
                &efp,
                s(""),
                "may not have more than one field specified at a time",
            );
        }
    }
    // Volume mounts.
    let vmp = child(path, "volumeMounts");
    let mut mount_points: Vec<&str> = Vec::new();
    for (i, m) in items(c, "volumeMounts").iter().enumerate() {
        let ip = index(&vmp, i);
        let n = st(m, "name").unwrap_or("");
        if n.is_empty() {
            e.required(&child(&ip, "name"), "");
        }
        if !volumes.contains(&n) {
            e.not_found(&child(&ip, "name"), s(n));
        }
        let mp = st(m, "mountPath").unwrap_or("");
        if mp.is_empty() {
            e.required(&child(&ip, "mountPath"), "");
        }
        if mount_points.contains(&mp) {
            e.invalid(&child(&ip, "mountPath"), s(mp), "must be unique");
        }
        mount_points.push(mp);
    }
    if let Some(pp) = st(c, "imagePullPolicy").filter(|x| !x.is_empty()) {
        if !["Always", "IfNotPresent", "Never"].contains(&pp) {
            e.not_supported(
                &child(path, "imagePullPolicy"),
                js(pp),
                &["Always", "IfNotPresent", "Never"],
            );
        }
    }
    if let Some(sc) = get(c, "securityContext") {
        id_ranges(e, sc, &child(path, "securityContext"));
    }
}

/// `validateEnvVarValueFrom` (subset).
fn env_value_from(e: &mut Errs, ev: &Value, vf: &Value, path: &str) {
    let mut n = 0;
    if let Some(fr) = get(vf, "fieldRef") {
        n += 1;
        let fp = child(path, "fieldRef");
        let av = st(fr, "apiVersion").unwrap_or("v1");
        let fpath = st(fr, "fieldPath").unwrap_or("");
        if fpath.is_empty() {
            e.required(&child(&fp, "fieldPath"), "");
        } else if av != "v1" {
            e.invalid(
                &child(&fp, "fieldPath"),
                s(fpath),
                &format!("error converting fieldPath: unsupported pod version: {av}"),
            );
        } else {
            const ENV_PATHS: [&str; 9] = [
                "metadata.name",
                "metadata.namespace",
                "metadata.uid",
                "spec.nodeName",
                "spec.serviceAccountName",
                "status.hostIP",
                "status.hostIPs",
                "status.podIP",
                "status.podIPs",
            ];
            const CONVERTIBLE: [&str; 14] = [
                "metadata.annotations",
                "metadata.labels",
                "metadata.name",
                "metadata.namespace",
                "metadata.uid",
                "spec.nodeName",
                "spec.restartPolicy",
                "spec.serviceAccountName",
                "spec.schedulerName",
                "status.phase",
                "status.hostIP",
                "status.hostIPs",
                "status.podIP",
                "status.podIPs",
            ];
            let subscripted = fpath
                .strip_suffix("']")
                .and_then(|p| p.split_once("['"))
                .filter(|(base, _)| *base == "metadata.annotations" || *base == "metadata.labels");
            if let Some((base, sub)) = subscripted {
                let sub = if base == "metadata.annotations" {
                    sub.to_lowercase()
                } else {
                    sub.to_string()
                };
                e.each(&fp, &sub, qualified_name_errs(&sub));
            } else if !CONVERTIBLE.contains(&fpath) && fpath != "spec.host" {
                e.invalid(
                    &child(&fp, "fieldPath"),
                    s(fpath),
                    &format!("error converting fieldPath: field label not supported: {fpath}"),
                );
            } else {
                let internal = if fpath == "spec.host" {
                    "spec.nodeName"
                } else {
                    fpath
                };
                if !ENV_PATHS.contains(&internal) {
                    e.not_supported(&child(&fp, "fieldPath"), s(internal), &ENV_PATHS);
                }
            }
        }
    }
    if get(vf, "resourceFieldRef").is_some() {
        n += 1;
    }
    for f in ["configMapKeyRef", "secretKeyRef"] {
        if let Some(r) = get(vf, f) {
            n += 1;
            let rp = child(path, f);
            let name = st(r, "name").unwrap_or("");
            e.each(&child(&rp, "name"), name, dns1123_subdomain_errs(name));
            let k = st(r, "key").unwrap_or("");
            if k.is_empty() {
                e.required(&child(&rp, "key"), "");
            } else {
                e.each(&child(&rp, "key"), k, config_map_key_errs(k));
            }
        }
    }
    if n == 0 {
        e.invalid(
            path,
            s(""),
            "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`",
        );
    } else if st(ev, "value").is_some_and(|v| !v.is_empty()) {
        e.invalid(
            path,
            s(""),
            "may not be specified when `value` is not empty",
        );
    } else if n > 1 {
        e.invalid(
            path,
            s(""),
            "may not have more than one field specified at a time",
        );
    }
}

/// Liveness/readiness/startup probes and lifecycle handlers (subset).
fn probes(e: &mut Errs, c: &Value, path: &str, grace: Option<i64>) {
    if let Some(lc) = get(c, "lifecycle") {
        for h in ["postStart", "preStop"] {
            if let Some(handler) = get(lc, h) {
                validate_handler(
                    e,
                    handler,
                    &child(&child(path, "lifecycle"), h),
                    grace,
                    true,
                );
            }
        }
    }
    for f in ["livenessProbe", "readinessProbe", "startupProbe"] {
        let Some(p) = get(c, f) else { continue };
        let pp = child(path, f);
        validate_handler(e, p, &pp, grace, false);
        for n in [
            "initialDelaySeconds",
            "timeoutSeconds",
            "periodSeconds",
            "successThreshold",
            "failureThreshold",
        ] {
            e.nonnegative(&child(&pp, n), int(p, n));
        }
        if let Some(t) = int(p, "terminationGracePeriodSeconds") {
            if f == "readinessProbe" {
                e.invalid(
                    &child(&pp, "terminationGracePeriodSeconds"),
                    Bad::Int(t),
                    "must not be set for readinessProbes",
                );
            } else if t <= 0 {
                e.invalid(
                    &child(&pp, "terminationGracePeriodSeconds"),
                    Bad::Int(t),
                    "must be greater than 0",
                );
            }
        }
        if f != "readinessProbe" {
            if let Some(st) = int(p, "successThreshold").filter(|s| *s != 1) {
                e.invalid(&child(&pp, "successThreshold"), Bad::Int(st), "must be 1");
            }
        }
    }
}

/// `validateHandler`.
fn validate_handler(e: &mut Errs, h: &Value, path: &str, grace: Option<i64>, lifecycle: bool) {
    let kinds: &[&str] = if lifecycle {
        &["exec", "httpGet", "tcpSocket", "sleep"]
    } else {
        &["exec", "httpGet", "tcpSocket", "grpc"]
    };
    let mut n = 0;
    for k in kinds {
        let Some(a) = get(h, k) else { continue };
        let ap = child(path, k);
        if n > 0 {
            e.forbidden(&ap, "may not specify more than 1 handler type");
            continue;
        }
        n += 1;
        match *k {
            "exec" => {
                if items(a, "command").is_empty() {
                    e.required(&child(&ap, "command"), "");
                }
            }
            "httpGet" => {
                if let Some(port) = get(a, "port") {
                    port_num_or_name(e, port, &child(&ap, "port"), false);
                }
                if let Some(sc) = st(a, "scheme").filter(|x| !x.is_empty()) {
                    if sc != "HTTP" && sc != "HTTPS" {
                        e.not_supported(&child(&ap, "scheme"), js(sc), &["HTTP", "HTTPS"]);
                    }
                }
            }
            "tcpSocket" | "grpc" => {
                let port = get(a, "port").cloned().unwrap_or(Value::from(0));
                port_num_or_name(e, &port, &child(&ap, "port"), false);
            }
            _ => {
                let secs = int(a, "seconds").unwrap_or(0);
                let g = grace.unwrap_or(30);
                if secs <= 0 || secs > g {
                    e.invalid(
                        &ap,
                        Bad::Int(secs),
                        &format!("must be greater than 0 and less than terminationGracePeriodSeconds ({g})"),
                    );
                }
            }
        }
    }
    if n == 0 {
        e.required(path, "must specify a handler type");
    }
}

/// `ValidateDeploymentStrategy`.
fn deployment_strategy(e: &mut Errs, strategy: &Value) {
    let p = "spec.strategy";
    let ty = st(strategy, "type").unwrap_or("");
    let ru = get(strategy, "rollingUpdate");
    match ty {
        "Recreate" => {
            if ru.is_some() {
                e.forbidden(
                    &child(p, "rollingUpdate"),
                    "may not be specified when strategy `type` is 'Recreate'",
                );
            }
        }
        "RollingUpdate" | "" => {
            // Defaulting fills rollingUpdate and both fields with 25%.
            let pct = Value::from("25%");
            let ru = ru.unwrap_or(&Value::Null);
            let mu = get(ru, "maxUnavailable").unwrap_or(&pct);
            let ms = get(ru, "maxSurge").unwrap_or(&pct);
            let rp = child(p, "rollingUpdate");
            let (mup, msp) = (child(&rp, "maxUnavailable"), child(&rp, "maxSurge"));
            validate_positive_int_or_percent(e, Some(mu), &mup);
            validate_positive_int_or_percent(e, Some(ms), &msp);
            if int_or_percent_value(Some(mu)) == 0 && int_or_percent_value(Some(ms)) == 0 {
                e.invalid(
                    &mup,
                    Bad::Json(intstr_json(Some(mu))),
                    "may not be 0 when `maxSurge` is 0",
                );
            }
            not_more_than_100_percent(e, Some(mu), &mup);
        }
        other => {
            let mut v = Map::new();
            v.insert("Type".into(), Value::from(other));
            let ru_json = match ru {
                None => Value::Null,
                Some(r) => {
                    let mut m = Map::new();
                    m.insert(
                        "MaxUnavailable".into(),
                        intstr_json(get(r, "maxUnavailable")),
                    );
                    m.insert("MaxSurge".into(), intstr_json(get(r, "maxSurge")));
                    Value::Object(m)
                }
            };
            v.insert("RollingUpdate".into(), ru_json);
            e.not_supported(
                p,
                Bad::Json(Value::Object(v)),
                &["Recreate", "RollingUpdate"],
            );
        }
    }
}

// ---------------------------------------------------------------------------
// CronJob schedule and time zone
// ---------------------------------------------------------------------------

/// `validateTimeZone` without the tz-database lookup.
fn validate_time_zone(e: &mut Errs, tz: &str) {
    let p = "spec.timeZone";
    if tz.is_empty() {
        e.invalid(p, js(tz), "timeZone must be nil or non-empty string");
        return;
    }
    for part in tz.split('/') {
        let ok_chars = !part.is_empty()
            && part.len() <= 14
            && part
                .bytes()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'-' | b'_' | b'+'));
        if part == "." || part == ".." || part.starts_with('-') || !ok_chars {
            e.invalid(p, js(tz), &format!("unknown time zone {tz}"));
            return;
        }
    }
    if tz.eq_ignore_ascii_case("local") {
        e.invalid(
            p,
            js(tz),
            "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones",
        );
    }
}

/// robfig/cron v3 `ParseStandard`, returning its error text.
fn parse_cron_standard(spec: &str) -> Result<(), String> {
    let mut spec = spec;
    if spec.starts_with("TZ=") || spec.starts_with("CRON_TZ=") {
        match spec.find(' ') {
            Some(i) => spec = spec[i..].trim(),
            None => return Ok(()),
        }
    }
    if spec.starts_with('@') {
        return match spec {
            "@yearly" | "@annually" | "@monthly" | "@weekly" | "@daily" | "@midnight"
            | "@hourly" => Ok(()),
            _ => match spec.strip_prefix("@every ") {
                Some(d) => apimachinery::duration::parse(d)
                    .map(|_| ())
                    .map_err(|err| format!("failed to parse duration {spec}: {err}")),
                None => Err(format!("unrecognized descriptor: {spec}")),
            },
        };
    }
    let fields: Vec<&str> = spec.split_whitespace().collect();
    if fields.len() != 5 {
        return Err(format!(
            "expected exactly 5 fields, found {}: [{}]",
            fields.len(),
            fields.join(" ")
        ));
    }
    const MONTHS: [&str; 12] = [
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ];
    const DAYS: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];
    let bounds: [(i64, i64, &[&str], i64); 5] = [
        (0, 59, &[], 0),
        (0, 23, &[], 0),
        (1, 31, &[], 0),
        (1, 12, &MONTHS, 1),
        (0, 6, &DAYS, 0),
    ];
    for (f, (min, max, names, base)) in fields.iter().zip(bounds) {
        for expr in f.split(',').filter(|x| !x.is_empty()) {
            cron_range(expr, min, max, names, base)?;
        }
    }
    Ok(())
}

fn cron_int(expr: &str) -> Result<i64, String> {
    match expr.parse::<i64>() {
        Ok(n) if n < 0 => Err(format!("negative number ({n}) not allowed: {expr}")),
        Ok(n) => Ok(n),
        Err(_) => {
            let valid_syntax = {
                let d = expr.strip_prefix(['+', '-']).unwrap_or(expr);
                !d.is_empty() && d.bytes().all(|c| c.is_ascii_digit())
            };
            let why = if valid_syntax {
                "value out of range"
            } else {
                "invalid syntax"
            };
            Err(format!(
                "failed to parse int from {expr}: strconv.Atoi: parsing {}: {why}",
                go_quote(expr)
            ))
        }
    }
}

fn cron_range(expr: &str, min: i64, max: i64, names: &[&str], base: i64) -> Result<(), String> {
    let range_and_step: Vec<&str> = expr.split('/').collect();
    let low_high: Vec<&str> = range_and_step[0].split('-').collect();
    let single = low_high.len() == 1;
    let named = |x: &str| -> Result<i64, String> {
        let lower = x.to_lowercase();
        match names.iter().position(|n| *n == lower) {
            Some(i) => Ok(i as i64 + base),
            None => cron_int(x),
        }
    };
    let (start, mut end);
    if low_high[0] == "*" || low_high[0] == "?" {
        start = min;
        end = max;
    } else {
        start = named(low_high[0])?;
        end = match low_high.len() {
            1 => start,
            2 => named(low_high[1])?,
            _ => return Err(format!("too many hyphens: {expr}")),
        };
    }
    let step = match range_and_step.len() {
        1 => 1,
        2 => {
            let st = cron_int(range_and_step[1])?;
            if single {
                end = max;
            }
            st
        }
        _ => return Err(format!("too many slashes: {expr}")),
    };
    if start < min {
        return Err(format!(
            "beginning of range ({start}) below minimum ({min}): {expr}"
        ));
    }
    if end > max {
        return Err(format!(
            "end of range ({end}) above maximum ({max}): {expr}"
        ));
    }
    if start > end {
        return Err(format!(
            "beginning of range ({start}) beyond end of range ({end}): {expr}"
        ));
    }
    if step == 0 {
        return Err(format!("step of range should be a positive number: {expr}"));
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------

#[cfg(test)]
mod tests {
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
            validate_object_name("Role", "rbac.authorization.k8s.io", "a/b%"),
            vec![
                "may not contain '/'".to_string(),
                "may not contain '%'".to_string()
            ]
        );
        assert_eq!(
            validate_object_name("ClusterRole", "rbac.authorization.k8s.io", ".."),
            vec!["may not be '..'".to_string()]
        );
        assert!(
            validate_object_name("Role", "rbac.authorization.k8s.io", "system:admin").is_empty()
        );
        assert_eq!(
            validate_object_name("Namespace", "", "a.b"),
            vec!["must not contain dots".to_string()]
        );
        assert_eq!(
            validate_object_name("Service", "", "1abc"),
            vec!["a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')".to_string()]
        );
        assert_eq!(
            validate_object_name("ConfigMap", "", &"a".repeat(254)),
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
    fn cron_parser() {
        for good in [
            "* * * * *",
            "*/15 0-5,7 1 jan-mar mon-fri",
            "@hourly",
            "@every 1h30m",
            "0 0 ? * SUN",
        ] {
            assert_eq!(parse_cron_standard(good), Ok(()), "{good}");
        }
        assert_eq!(
            parse_cron_standard("60 * * * *"),
            Err("end of range (60) above maximum (59): 60".into())
        );
        assert_eq!(
            parse_cron_standard("* * 0 * *"),
            Err("beginning of range (0) below minimum (1): 0".into())
        );
        assert_eq!(
            parse_cron_standard("x * * * *"),
            Err("failed to parse int from x: strconv.Atoi: parsing \"x\": invalid syntax".into())
        );
        assert_eq!(
            parse_cron_standard("5-1 * * * *"),
            Err("beginning of range (5) beyond end of range (1): 5-1".into())
        );
        assert_eq!(
            parse_cron_standard("*/0 * * * *"),
            Err("step of range should be a positive number: */0".into())
        );
        assert_eq!(
            parse_cron_standard("@sometimes"),
            Err("unrecognized descriptor: @sometimes".into())
        );
        assert_eq!(
            parse_cron_standard("@every 5"),
            Err("failed to parse duration @every 5: time: missing unit in duration \"5\"".into())
        );
    }

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
