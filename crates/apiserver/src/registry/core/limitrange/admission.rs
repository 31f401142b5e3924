//! The LimitRanger admission plugin (upstream `plugin/pkg/admission/limitranger`): the
//! namespace's LimitRanges give a created Pod's containers their default requests and
//! limits (mutation, before validation), then Pods and PersistentVolumeClaims are checked
//! against their `min`, `max` and `maxLimitRequestRatio` (validation, after it); the first
//! LimitRange a request violates rejects it with 403 Forbidden.
//!
//! Pure functions over the JSON objects; the write path (`endpoints/write.rs`) finds the
//! namespace's LimitRanges and calls [`mutate`] and [`validate`].

use serde_json::{json, Map, Value};

use apimachinery::quantity::{self, Quantity};
use apimachinery::status::ApiError;

/// The annotation that lists what the plugin set.
pub const ANNOTATION: &str = "kubernetes.io/limit-ranger";

/// `resource.MaxMilliValue`: the largest value whose milli-value fits an int64.
const MAX_MILLI_VALUE: i128 = (i64::MAX / 1000) as i128;

/// What the plugin handles (upstream `SupportsAttributes`): Pods on create (their
/// containers are immutable afterwards), PersistentVolumeClaims on create and update;
/// no subresource.
pub fn handles(group: &str, plural: &str, subresource: bool, update: bool) -> bool {
    group.is_empty()
        && !subresource
        && match plural {
            "pods" => !update,
            "persistentvolumeclaims" => true,
            _ => false,
        }
}

/// `admission.NewForbidden`: 403 `<resource> "<name>" is forbidden: <reason>`, where the
/// name is the object's name, else its `generateName`, else `Unknown`.
pub fn forbidden(group: &str, plural: &str, obj: &Value, reason: &str) -> ApiError {
    let meta = |f: &str| {
        obj.pointer(&format!("/metadata/{f}"))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    };
    let name = meta("name").or(meta("generateName")).unwrap_or("Unknown");
    let mut e = ApiError::forbidden(format!(
        "{} \"{name}\" is forbidden: {reason}",
        apimachinery::status::qualify(plural, group)
    ));
    if !group.is_empty() {
        e.group = Some(group.to_string());
    }
    e.kind = Some(plural.to_string());
    e.name = Some(name.to_string());
    e
}

/// The LimitRanges of `namespace` in a table of stored LimitRanges.
pub fn in_namespace(table: Option<&crate::storage::store::Table>, namespace: &str) -> Vec<Value> {
    let prefix = format!("{namespace}/");
    table
        .into_iter()
        .flat_map(|t| t.iter())
        .filter(|(k, _)| k.starts_with(&prefix))
        .filter_map(|(_, o)| o.value().ok())
        .collect()
}

fn items(limit_range: &Value) -> impl Iterator<Item = &Map<String, Value>> {
    limit_range
        .pointer("/spec/limits")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object)
}

/// The entries of a resource list of an item, sorted by resource name (upstream ranges
/// over a Go map: its order is random; sorted keeps messages stable).
fn list<'a>(item: &'a Map<String, Value>, key: &str) -> Vec<(&'a str, Quantity)> {
    let mut out: Vec<(&str, Quantity)> = item
        .get(key)
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| quantity::from_json(v).map(|q| (k.as_str(), q)))
        .collect();
    out.sort_by(|a, b| a.0.cmp(b.0));
    out
}

/// Upstream `defaultContainerResourceRequirements`: the `defaultRequest` (requests) and
/// `default` (limits) of the Container items, later items overriding earlier ones.
pub fn default_requirements(limit_range: &Value) -> (Map<String, Value>, Map<String, Value>) {
    let mut requests = Map::new();
    let mut limits = Map::new();
    for item in items(limit_range) {
        if item.get("type").and_then(Value::as_str) != Some("Container") {
            continue;
        }
        for (key, out) in [("defaultRequest", &mut requests), ("default", &mut limits)] {
            for (k, v) in item
                .get(key)
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
            {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    (requests, limits)
}

/// Set each default a container lacks; the sorted names set, per kind.
fn merge_container(
    container: &mut Value,
    requests: &Map<String, Value>,
    limits: &Map<String, Value>,
) -> (Vec<String>, Vec<String>) {
    let mut set = (Vec::new(), Vec::new());
    let Some(c) = container.as_object_mut() else {
        return set;
    };
    for (field, defaults, names) in [
        ("limits", limits, &mut set.1),
        ("requests", requests, &mut set.0),
    ] {
        for (k, v) in defaults {
            let resources = c.entry("resources").or_insert_with(|| json!({}));
            if !resources.is_object() {
                *resources = json!({});
            }
            let Some(r) = resources.as_object_mut() else {
                continue;
            };
            let present = r
                .get(field)
                .and_then(Value::as_object)
                .is_some_and(|m| m.contains_key(k));
            if present {
                continue;
            }
            let m = r.entry(field).or_insert_with(|| json!({}));
            if !m.is_object() {
                *m = json!({});
            }
            if let Some(m) = m.as_object_mut() {
                m.insert(k.clone(), v.clone());
                names.push(k.clone());
            }
        }
        names.sort();
    }
    set
}

/// Upstream `mergePodResourceRequirements`: every container and init container gets
/// the defaults it lacks, and the pod the `kubernetes.io/limit-ranger` annotation
/// saying what was set (only when something was).
pub fn merge_pod(pod: &mut Value, requests: &Map<String, Value>, limits: &Map<String, Value>) {
    let mut notes: Vec<String> = Vec::new();
    for (field, what) in [
        ("containers", "container"),
        ("initContainers", "init container"),
    ] {
        let Some(cs) = pod
            .get_mut("spec")
            .and_then(|s| s.get_mut(field))
            .and_then(Value::as_array_mut)
        else {
            continue;
        };
        for c in cs {
            let name = c
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let (set_requests, set_limits) = merge_container(c, requests, limits);
            if !set_requests.is_empty() {
                notes.push(format!(
                    "{} request for {what} {name}",
                    set_requests.join(", ")
                ));
            }
            if !set_limits.is_empty() {
                notes.push(format!("{} limit for {what} {name}", set_limits.join(", ")));
            }
        }
    }
    if notes.is_empty() {
        return;
    }
    if let Some(meta) = pod.get_mut("metadata").and_then(Value::as_object_mut) {
        let annotations = meta.entry("annotations").or_insert_with(|| json!({}));
        if !annotations.is_object() {
            *annotations = json!({});
        }
        if let Some(a) = annotations.as_object_mut() {
            a.insert(
                ANNOTATION.into(),
                json!(format!("LimitRanger plugin set: {}", notes.join("; "))),
            );
        }
    }
}

/// Upstream `PodMutateLimitFunc` for every LimitRange in turn (the first one's defaults
/// win: later ones only fill what is still missing).
pub fn mutate(limit_ranges: &[Value], plural: &str, obj: &mut Value) {
    if plural != "pods" {
        return;
    }
    for lr in limit_ranges {
        let (requests, limits) = default_requirements(lr);
        merge_pod(obj, &requests, &limits);
    }
}

/// Upstream `ValidateLimit` for every LimitRange in turn: the first violated one's
/// message (the caller answers 403 Forbidden with it).
pub fn validate(limit_ranges: &[Value], plural: &str, obj: &Value) -> Result<(), String> {
    for lr in limit_ranges {
        match plural {
            "pods" => validate_pod(lr, obj)?,
            "persistentvolumeclaims" => validate_pvc(lr, obj)?,
            _ => {}
        }
    }
    Ok(())
}

type Resources = Vec<(String, Quantity)>;

fn get(list: &Resources, name: &str) -> Option<Quantity> {
    list.iter().find(|(k, _)| k == name).map(|(_, q)| *q)
}

fn resource_list(v: Option<&Value>) -> Resources {
    v.and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| quantity::from_json(v).map(|q| (k.clone(), q)))
        .collect()
}

fn zero() -> Quantity {
    Quantity::from_nanos(0, quantity::Format::DecimalSi)
}

/// Upstream `requestLimitEnforcedValues`: milli-values when all three fit, else values.
fn comparable(req: Quantity, lim: Quantity, enforced: Quantity) -> (i128, i128, i128) {
    let (r, l, e) = (req.value(), lim.value(), enforced.value());
    if r <= MAX_MILLI_VALUE && l <= MAX_MILLI_VALUE && e <= MAX_MILLI_VALUE {
        (req.milli_value(), lim.milli_value(), enforced.milli_value())
    } else {
        (r, l, e)
    }
}

fn min_constraint(
    limit_type: &str,
    name: &str,
    enforced: Quantity,
    requests: &Resources,
    limits: &Resources,
) -> Option<String> {
    let req = get(requests, name);
    let lim = get(limits, name);
    let (r, l, e) = comparable(req.unwrap_or_else(zero), lim.unwrap_or_else(zero), enforced);
    let min = enforced.canonical();
    match (req, lim) {
        (None, _) => Some(format!(
            "minimum {name} usage per {limit_type} is {min}.  No request is specified"
        )),
        (Some(req), _) if r < e => Some(format!(
            "minimum {name} usage per {limit_type} is {min}, but request is {}",
            req.canonical()
        )),
        (_, Some(lim)) if l < e => Some(format!(
            "minimum {name} usage per {limit_type} is {min}, but limit is {}",
            lim.canonical()
        )),
        _ => None,
    }
}

fn max_constraint(
    limit_type: &str,
    name: &str,
    enforced: Quantity,
    requests: &Resources,
    limits: &Resources,
) -> Option<String> {
    let req = get(requests, name);
    let lim = get(limits, name);
    let (r, l, e) = comparable(req.unwrap_or_else(zero), lim.unwrap_or_else(zero), enforced);
    let max = enforced.canonical();
    match (req, lim) {
        (_, None) => Some(format!(
            "maximum {name} usage per {limit_type} is {max}.  No limit is specified"
        )),
        (_, Some(lim)) if l > e => Some(format!(
            "maximum {name} usage per {limit_type} is {max}, but limit is {}",
            lim.canonical()
        )),
        (Some(req), _) if r > e => Some(format!(
            "maximum {name} usage per {limit_type} is {max}, but request is {}",
            req.canonical()
        )),
        _ => None,
    }
}

/// Upstream `maxRequestConstraint` (PersistentVolumeClaims: requests only).
fn max_request_constraint(
    limit_type: &str,
    name: &str,
    enforced: Quantity,
    requests: &Resources,
) -> Option<String> {
    let req = get(requests, name);
    let (r, _, e) = comparable(req.unwrap_or_else(zero), zero(), enforced);
    let max = enforced.canonical();
    match req {
        None => Some(format!(
            "maximum {name} usage per {limit_type} is {max}.  No request is specified"
        )),
        Some(req) if r > e => Some(format!(
            "maximum {name} usage per {limit_type} is {max}, but request is {}",
            req.canonical()
        )),
        _ => None,
    }
}

fn ratio_constraint(
    limit_type: &str,
    name: &str,
    enforced: Quantity,
    requests: &Resources,
    limits: &Resources,
) -> Option<String> {
    let req = get(requests, name);
    let lim = get(limits, name);
    let (r, l, _) = comparable(req.unwrap_or_else(zero), lim.unwrap_or_else(zero), enforced);
    let max = enforced.canonical();
    if req.is_none() || r == 0 {
        return Some(format!("{name} max limit to request ratio per {limit_type} is {max}, but no request is specified or request is 0"));
    }
    if lim.is_none() || l == 0 {
        return Some(format!("{name} max limit to request ratio per {limit_type} is {max}, but no limit is specified or limit is 0"));
    }
    let observed = l as f64 / r as f64;
    let (scaled, allowed) = if enforced.value() <= MAX_MILLI_VALUE {
        (observed * 1000.0, enforced.milli_value() as f64)
    } else {
        (observed, enforced.value() as f64)
    };
    (scaled > allowed).then(|| {
        format!("{name} max limit to request ratio per {limit_type} is {max}, but provided ratio is {observed:.6}")
    })
}

/// Min, max and ratio of one item against one set of requests and limits.
fn check(
    errs: &mut Vec<String>,
    item: &Map<String, Value>,
    limit_type: &str,
    requests: &Resources,
    limits: &Resources,
) {
    for (k, v) in list(item, "min") {
        errs.extend(min_constraint(limit_type, k, v, requests, limits));
    }
    for (k, v) in list(item, "max") {
        errs.extend(max_constraint(limit_type, k, v, requests, limits));
    }
    for (k, v) in list(item, "maxLimitRequestRatio") {
        errs.extend(ratio_constraint(limit_type, k, v, requests, limits));
    }
}

/// `utilerrors.NewAggregate(errs).Error()`: one message bare, several (deduplicated)
/// as `[a, b]`.
fn aggregate(errs: Vec<String>) -> Result<(), String> {
    let mut seen: Vec<String> = Vec::new();
    for e in errs {
        if !seen.contains(&e) {
            seen.push(e);
        }
    }
    match seen.len() {
        0 => Ok(()),
        1 => Err(seen.remove(0)),
        _ => Err(format!("[{}]", seen.join(", "))),
    }
}

fn add(into: &mut Resources, from: &Resources) {
    for (k, q) in from {
        match into.iter_mut().find(|(n, _)| n == k) {
            Some((_, have)) => *have = *have + *q,
            None => into.push((k.clone(), *q)),
        }
    }
}

fn max_into(into: &mut Resources, from: &Resources) {
    for (k, q) in from {
        match into.iter_mut().find(|(n, _)| n == k) {
            Some((_, have)) => {
                if q.nanos() > have.nanos() {
                    *have = *q;
                }
            }
            None => into.push((k.clone(), *q)),
        }
    }
}

/// A pod's requests or limits (`field`) from its spec, as upstream's `podRequests` /
/// `podLimits` (component-helpers' aggregation without overhead or status resources):
/// the containers' sum, sidecars (init containers with `restartPolicy: Always`) added,
/// at least each init container plus the sidecars started before it; pod-level cpu and
/// memory override the aggregate.
pub fn pod_resources(pod: &Value, field: &str) -> Resources {
    let of = |c: &Value| resource_list(c.get("resources").and_then(|r| r.get(field)));
    let containers = |key: &str| -> Vec<Value> {
        pod.pointer(&format!("/spec/{key}"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let mut total = Resources::new();
    for c in containers("containers") {
        add(&mut total, &of(&c));
    }
    let mut sidecars = Resources::new();
    let mut init = Resources::new();
    for c in containers("initContainers") {
        let own = of(&c);
        let this = if c.get("restartPolicy").and_then(Value::as_str) == Some("Always") {
            add(&mut total, &own);
            add(&mut sidecars, &own);
            sidecars.clone()
        } else {
            let mut t = own;
            add(&mut t, &sidecars);
            t
        };
        max_into(&mut init, &this);
    }
    max_into(&mut total, &init);
    for (k, q) in resource_list(pod.pointer(&format!("/spec/resources/{field}"))) {
        if k == "cpu" || k == "memory" {
            match total.iter_mut().find(|(n, _)| *n == k) {
                Some((_, have)) => *have = q,
                None => total.push((k, q)),
            }
        }
    }
    total
}

/// Upstream `PodValidateLimitFunc`: Container items against every container and init
/// container, Pod items against the pod's aggregate requests and limits.
pub fn validate_pod(limit_range: &Value, pod: &Value) -> Result<(), String> {
    let mut errs = Vec::new();
    for item in items(limit_range) {
        match item.get("type").and_then(Value::as_str) {
            Some("Container") => {
                for key in ["containers", "initContainers"] {
                    for c in pod
                        .pointer(&format!("/spec/{key}"))
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                    {
                        let resources = c.get("resources");
                        let requests = resource_list(resources.and_then(|r| r.get("requests")));
                        let limits = resource_list(resources.and_then(|r| r.get("limits")));
                        check(&mut errs, item, "Container", &requests, &limits);
                    }
                }
            }
            Some("Pod") => {
                let requests = pod_resources(pod, "requests");
                let limits = pod_resources(pod, "limits");
                check(&mut errs, item, "Pod", &requests, &limits);
            }
            _ => {}
        }
    }
    aggregate(errs)
}

/// Upstream `PersistentVolumeClaimValidateLimitFunc`: min and max of
/// PersistentVolumeClaim items against the claim's requests (its limits are not user
/// input; claims are never defaulted).
pub fn validate_pvc(limit_range: &Value, pvc: &Value) -> Result<(), String> {
    let mut errs = Vec::new();
    let requests = resource_list(pvc.pointer("/spec/resources/requests"));
    for item in items(limit_range) {
        if item.get("type").and_then(Value::as_str) != Some("PersistentVolumeClaim") {
            continue;
        }
        for (k, v) in list(item, "min") {
            errs.extend(min_constraint(
                "PersistentVolumeClaim",
                k,
                v,
                &requests,
                &Vec::new(),
            ));
        }
        for (k, v) in list(item, "max") {
            errs.extend(max_request_constraint(
                "PersistentVolumeClaim",
                k,
                v,
                &requests,
            ));
        }
    }
    aggregate(errs)
}

#[cfg(test)]
mod tests;
