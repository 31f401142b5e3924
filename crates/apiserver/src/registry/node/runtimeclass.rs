//! RuntimeClass (`node.k8s.io/v1`): what it does differently from the generic store,
//! and the RuntimeClass admission plugin (upstream `plugin/pkg/admission/runtimeclass`).

use serde_json::Value;

use crate::registry::catalog::{Kind, ResourceDef, Strategy};
use crate::registry::table::Printer;
use crate::registry::validation::Ctx;
use apimachinery::field::Cause;

/// The `node.k8s.io/v1` kind.
pub static KIND: Kind = Kind::new(&[], &RuntimeClassStrategy);

/// What RuntimeClass does differently.
pub struct RuntimeClassStrategy;

impl Strategy for RuntimeClassStrategy {
    /// `runtimeClassStrategy` keeps the generation as given (no spec).
    fn validate(&self, def: &ResourceDef, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        Ctx::new(def, old).check(|v, e| v.runtime_class(e, obj))
    }

    fn printer(&self) -> Option<&'static Printer> {
        Some(&printer::RUNTIME_CLASS)
    }
}

pub(crate) mod validation {
    use crate::registry::validation::prelude::*;
    use apimachinery::quantity;

    impl Ctx<'_> {
        /// `ValidateRuntimeClass` / `ValidateRuntimeClassUpdate`.
        pub(crate) fn runtime_class(&self, e: &mut Errs, o: &Value) {
            self.meta(e, o, NameRule::Subdomain, false);
            let handler = st(o, "handler").unwrap_or("");
            if let Some(old) = self.old {
                if st(old, "handler").unwrap_or("") != handler {
                    e.invalid("handler", s(handler), IMMUTABLE);
                }
                return;
            }
            e.each("handler", handler, dns1123_label_errs(handler));
            if let Some(fixed) = get(o, "overhead").and_then(|ov| obj(ov, "podFixed")) {
                // upstream reuses ValidateResourceRequirements{Limits: podFixed}
                resource_limits(e, fixed, "overhead.limits");
            }
            if let Some(sched) = get(o, "scheduling") {
                validate_labels(e, obj(sched, "nodeSelector"), "scheduling.nodeSelector");
                validate_tolerations(e, items(sched, "tolerations"), "scheduling.tolerations");
            }
        }
    }

    /// `helper.IsStandardContainerResourceName`.
    fn standard_container_resource(name: &str) -> bool {
        matches!(name, "cpu" | "memory" | "ephemeral-storage") || name.starts_with("hugepages-")
    }

    /// The limits half of `ValidateResourceRequirements`: resource names
    /// (`validateContainerResourceName`) and non-negative quantities.
    pub(crate) fn resource_limits(e: &mut Errs, list: &Map<String, Value>, path: &str) {
        let mut names: Vec<&String> = list.keys().collect();
        names.sort();
        for name in names {
            let p = key(path, name);
            let msgs = qualified_name_errs(name);
            if !msgs.is_empty() {
                for m in msgs {
                    e.invalid(&p, js(name), &m);
                }
            } else if !name.contains('/') && !standard_container_resource(name) {
                e.invalid(&p, js(name), "must be a standard resource for containers");
            }
            let raw = &list[name.as_str()];
            match quantity::from_json(raw) {
                Some(q) if q.is_negative() => {
                    let shown = raw.as_str().map(str::to_string).unwrap_or(raw.to_string());
                    e.invalid(&p, Bad::Json(Value::String(shown)), NEGATIVE_MSG);
                }
                _ => {}
            }
        }
    }

    const NEGATIVE_MSG: &str = "must be greater than or equal to 0";

    /// `ValidateTolerations` (core validation).
    pub(crate) fn validate_tolerations(e: &mut Errs, tolerations: &[Value], path: &str) {
        for (i, t) in tolerations.iter().enumerate() {
            let p = index(path, i);
            let k = st(t, "key").unwrap_or("");
            let op = st(t, "operator").unwrap_or("");
            let value = st(t, "value").unwrap_or("");
            let effect = st(t, "effect").unwrap_or("");
            if !k.is_empty() {
                e.each(&child(&p, "key"), k, qualified_name_errs(k));
            }
            if k.is_empty() && op != "Exists" {
                e.invalid(
                    &child(&p, "operator"),
                    js(op),
                    "operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
                );
            }
            if get(t, "tolerationSeconds").is_some() && effect != "NoExecute" {
                e.invalid(
                    &child(&p, "effect"),
                    js(effect),
                    "effect must be 'NoExecute' when `tolerationSeconds` is set",
                );
            }
            match op {
                "Equal" | "" => {
                    let msgs = apimachinery::names::is_label_value(value);
                    if !msgs.is_empty() {
                        e.invalid(&child(&p, "operator"), s(value), &msgs.join(";"));
                    }
                }
                "Exists" => {
                    if !value.is_empty() {
                        e.invalid(
                            &child(&p, "operator"),
                            Bad::Json(t.clone()),
                            "value must be empty when `operator` is 'Exists'",
                        );
                    }
                }
                other => e.not_supported(&child(&p, "operator"), js(other), &["Equal", "Exists"]),
            }
            if !effect.is_empty()
                && !matches!(effect, "NoSchedule" | "PreferNoSchedule" | "NoExecute")
            {
                e.not_supported(
                    &child(&p, "effect"),
                    js(effect),
                    &["NoSchedule", "PreferNoSchedule", "NoExecute"],
                );
            }
        }
    }
}

pub(crate) mod printer {
    use crate::registry::table::prelude::*;

    /// RuntimeClasses: upstream describes `Handler` with `ObjectMeta`'s (absent) `handler`
    /// documentation, an empty text.
    pub(crate) static RUNTIME_CLASS: Printer = Printer {
        columns: &[NAME, string("Handler", text("")), AGE],
        print: |v, now| Row::of(vec![name(v), json!(s(v, "/handler")), age(v, now)]),
    };
}

/// The RuntimeClass admission plugin (upstream `plugin/pkg/admission/runtimeclass`): on a
/// pod create, the pod's RuntimeClass gives it its `overhead` and the class's scheduling
/// node selector and tolerations.
pub(crate) mod admission {
    use serde_json::{json, Map, Value};

    /// What the plugin refuses: the reason of the 403 (`admission.NewForbidden`).
    pub(crate) type Refusal = String;

    /// Whether the plugin looks at a request: pods, not their subresources (it only
    /// acts on creates).
    pub(crate) fn handles(group: &str, plural: &str, subresource: bool) -> bool {
        group.is_empty() && plural == "pods" && !subresource
    }

    /// The RuntimeClass a pod names, if any.
    pub(crate) fn class_name(pod: &Value) -> Option<&str> {
        pod.pointer("/spec/runtimeClassName")
            .and_then(Value::as_str)
    }

    /// `prepareObjects`: the class a pod names must exist (`class` is what the store
    /// holds under that name).
    fn require<'a>(pod: &Value, class: Option<&'a Value>) -> Result<Option<&'a Value>, Refusal> {
        match (class_name(pod), class) {
            (None, _) => Ok(None),
            (Some(_), Some(rc)) => Ok(Some(rc)),
            (Some(n), None) => Err(format!(
                "pod rejected: RuntimeClass {} not found",
                apimachinery::gofmt::quote(n)
            )),
        }
    }

    /// `Admit`: the class's overhead becomes the pod's (refused when the pod sets a
    /// different one), its node selector is merged into the pod's (refused on a
    /// conflicting value) and its tolerations are merged with the pod's.
    pub(crate) fn mutate(pod: &mut Value, class: Option<&Value>) -> Result<(), Refusal> {
        let Some(rc) = require(pod, class)? else {
            return Ok(());
        };
        set_overhead(pod, rc)?;
        set_scheduling(pod, rc)
    }

    /// `Validate`: the pod's overhead is the class's, and a pod without a class with an
    /// overhead sets none.
    pub(crate) fn validate(pod: &Value, class: Option<&Value>) -> Result<(), Refusal> {
        let rc = require(pod, class)?;
        validate_overhead(pod, rc)
    }

    fn spec_mut(pod: &mut Value) -> Option<&mut Map<String, Value>> {
        pod.as_object_mut()?
            .entry("spec")
            .or_insert_with(|| json!({}))
            .as_object_mut()
    }

    fn class_overhead(rc: &Value) -> Option<&Value> {
        rc.pointer("/overhead/podFixed").filter(|v| !v.is_null())
    }

    /// `apiequality.Semantic.DeepEqual` of two resource lists: same names, equal
    /// quantities.
    fn same_resources(a: Option<&Value>, b: Option<&Value>) -> bool {
        let empty = Map::new();
        let (a, b) = match (a, b) {
            (None, None) => return true,
            (Some(_), None) | (None, Some(_)) => return false,
            (Some(a), Some(b)) => (
                a.as_object().unwrap_or(&empty),
                b.as_object().unwrap_or(&empty),
            ),
        };
        a.len() == b.len()
            && a.iter().all(|(k, v)| {
                let (x, y) = (
                    apimachinery::quantity::from_json(v),
                    b.get(k).and_then(apimachinery::quantity::from_json),
                );
                match (x, y) {
                    (Some(x), Some(y)) => x.cmp_value(&y).is_eq(),
                    _ => Some(v) == b.get(k),
                }
            })
    }

    const MISMATCH: &str =
        "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead";

    fn set_overhead(pod: &mut Value, rc: &Value) -> Result<(), Refusal> {
        let Some(fixed) = class_overhead(rc) else {
            return Ok(());
        };
        let current = pod.pointer("/spec/overhead").filter(|v| !v.is_null());
        if current.is_some() && !same_resources(Some(fixed), current) {
            return Err(MISMATCH.into());
        }
        let fixed = fixed.clone();
        if let Some(spec) = spec_mut(pod) {
            spec.insert("overhead".into(), fixed);
        }
        Ok(())
    }

    fn set_scheduling(pod: &mut Value, rc: &Value) -> Result<(), Refusal> {
        let Some(sched) = rc.get("scheduling").filter(|v| v.is_object()) else {
            return Ok(());
        };
        let class_selector = sched.get("nodeSelector").and_then(Value::as_object);
        let mut selector = pod
            .pointer("/spec/nodeSelector")
            .and_then(Value::as_object)
            .cloned();
        match (&mut selector, class_selector) {
            (None, Some(c)) => selector = Some(c.clone()),
            (Some(sel), Some(c)) => {
                let mut keys: Vec<&String> = c.keys().collect();
                keys.sort();
                for k in keys {
                    let want = c[k].as_str().unwrap_or("");
                    if let Some(have) = sel.get(k).and_then(Value::as_str) {
                        if have != want {
                            return Err(format!(
                                "conflict: runtimeClass.scheduling.nodeSelector[{k}] = {want}; pod.spec.nodeSelector[{k}] = {have}"
                            ));
                        }
                    }
                    sel.insert(k.clone(), json!(want));
                }
            }
            _ => {}
        }
        let tolerations = merge_tolerations(
            pod.pointer("/spec/tolerations")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or(&[]),
            sched
                .get("tolerations")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or(&[]),
        );
        if let Some(spec) = spec_mut(pod) {
            if let Some(sel) = selector {
                spec.insert("nodeSelector".into(), Value::Object(sel));
            }
            if !tolerations.is_empty() {
                spec.insert("tolerations".into(), Value::Array(tolerations));
            }
        }
        Ok(())
    }

    fn tol_str<'a>(t: &'a Value, k: &str) -> &'a str {
        t.get(k).and_then(Value::as_str).unwrap_or("")
    }

    /// `tolerations.isSuperset`: whether `ss` tolerates everything `t` does.
    fn is_superset(ss: &Value, t: &Value) -> bool {
        if crate::registry::validation::json_eq(Some(ss), Some(t)) {
            return true;
        }
        if tol_str(t, "key") != tol_str(ss, "key")
            && (!tol_str(ss, "key").is_empty() || tol_str(ss, "operator") != "Exists")
        {
            return false;
        }
        if tol_str(t, "effect") != tol_str(ss, "effect") && !tol_str(ss, "effect").is_empty() {
            return false;
        }
        if tol_str(ss, "effect") == "NoExecute" {
            let secs = |x: &Value| x.get("tolerationSeconds").and_then(Value::as_i64);
            if let Some(limit) = secs(ss) {
                match secs(t) {
                    Some(v) if v <= limit => {}
                    _ => return false,
                }
            }
        }
        match tol_str(ss, "operator") {
            "Equal" | "" => {
                tol_str(t, "operator") == "Equal" && tol_str(t, "value") == tol_str(ss, "value")
            }
            "Exists" => true,
            _ => false,
        }
    }

    /// `tolerations.MergeTolerations`: both lists, dropping a toleration that one kept
    /// before it or a different one after it covers (of equal ones the first stays).
    pub(crate) fn merge_tolerations(first: &[Value], second: &[Value]) -> Vec<Value> {
        let all: Vec<&Value> = first.iter().chain(second.iter()).collect();
        let mut out: Vec<Value> = Vec::new();
        for (i, t) in all.iter().enumerate() {
            if out.iter().any(|kept| is_superset(kept, t)) {
                continue;
            }
            let later = all[i + 1..].iter().any(|t2| {
                !crate::registry::validation::json_eq(Some(t), Some(t2)) && is_superset(t2, t)
            });
            if !later {
                out.push((*t).clone());
            }
        }
        out
    }

    fn validate_overhead(pod: &Value, class: Option<&Value>) -> Result<(), Refusal> {
        let current = pod.pointer("/spec/overhead").filter(|v| !v.is_null());
        match class.and_then(class_overhead) {
            Some(fixed) => {
                if !same_resources(Some(fixed), current) {
                    return Err(MISMATCH.into());
                }
            }
            None => {
                if current.is_some() {
                    return Err(
                        "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead"
                            .into(),
                    );
                }
            }
        }
        Ok(())
    }
}
