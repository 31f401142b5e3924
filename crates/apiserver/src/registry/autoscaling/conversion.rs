//! HorizontalPodAutoscalers are served as `autoscaling/v1` and `autoscaling/v2` (upstream
//! `pkg/apis/autoscaling/v1/conversion.go`, `pkg/apis/autoscaling/v2/conversion.go`).
//! The internal type has the shape of `autoscaling/v2`, so v2 → v1 is the
//! internal → v1 conversion and v1 → v2 is v1 → internal. `targetCPUUtilizationPercentage`
//! is the first `Resource` `cpu` metric with an `averageUtilization` target and
//! `currentCPUUtilizationPercentage` the last such current metric; everything v1 cannot
//! hold travels in annotations, encoded as upstream encodes them (v1 `MetricSpec`s in
//! `autoscaling.alpha.kubernetes.io/metrics`, v1 `MetricStatus`es in
//! `autoscaling.alpha.kubernetes.io/current-metrics`, v1 conditions in
//! `autoscaling.alpha.kubernetes.io/conditions`, and the *internal* behavior type, with Go
//! field names, in `autoscaling.alpha.kubernetes.io/behavior`). Reading v1, annotations
//! that do not decode are ignored, as upstream ignores them, and all round-trip
//! annotations are removed; a v1 object without any metric gets upstream's implicit
//! 80% CPU utilization metric.

use apimachinery::gofmt::json_ordered as go_json;
use serde_json::{Map, Value};

use crate::registry::conversion::{header, object, omit_empty, put};

/// Annotation holding the v2-only metric specs of an `autoscaling/v1` HPA.
const METRIC_SPECS_ANNOTATION: &str = "autoscaling.alpha.kubernetes.io/metrics";
/// Annotation holding the current metric statuses of an `autoscaling/v1` HPA.
const METRIC_STATUSES_ANNOTATION: &str = "autoscaling.alpha.kubernetes.io/current-metrics";
/// Annotation holding the status conditions of an `autoscaling/v1` HPA.
const CONDITIONS_ANNOTATION: &str = "autoscaling.alpha.kubernetes.io/conditions";
/// Annotation holding the scaling behavior of an `autoscaling/v1` HPA.
const BEHAVIOR_SPECS_ANNOTATION: &str = "autoscaling.alpha.kubernetes.io/behavior";
/// Annotations upstream's `v2beta2` uses for per-direction tolerances; dropped with the
/// others whenever round-trip annotations are dropped.
const TOLERANCE_SCALE_DOWN_ANNOTATION: &str =
    "autoscaling.alpha.kubernetes.io/scale-down-tolerance";
const TOLERANCE_SCALE_UP_ANNOTATION: &str = "autoscaling.alpha.kubernetes.io/scale-up-tolerance";
/// Every annotation `DropRoundTripHorizontalPodAutoscalerAnnotations` removes.
const ROUND_TRIP_ANNOTATIONS: [&str; 6] = [
    METRIC_SPECS_ANNOTATION,
    BEHAVIOR_SPECS_ANNOTATION,
    METRIC_STATUSES_ANNOTATION,
    CONDITIONS_ANNOTATION,
    TOLERANCE_SCALE_DOWN_ANNOTATION,
    TOLERANCE_SCALE_UP_ANNOTATION,
];
/// `autoscaling.DefaultCPUUtilization`: the implicit v1 target.
const DEFAULT_CPU_UTILIZATION: i64 = 80;

// ---------------------------------------------------------------------------------------
// Event
// ---------------------------------------------------------------------------------------

// ---------------------------------------------------------------------------------------
// HorizontalPodAutoscaler: shared helpers
// ---------------------------------------------------------------------------------------

/// A non-null member of an object value.
fn member<'a>(v: Option<&'a Value>, key: &str) -> Option<&'a Value> {
    v?.as_object()?.get(key).filter(|v| !v.is_null())
}

/// A non-null member of a map.
fn field<'a>(m: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    m.get(key).filter(|v| !v.is_null())
}

fn is_str(v: Option<&Value>, s: &str) -> bool {
    v.and_then(Value::as_str) == Some(s)
}

/// Quantities are strings in Go's JSON; a bare number is printed as a string.
fn quantity(v: &Value) -> Value {
    match v {
        Value::Number(n) => Value::String(n.to_string()),
        other => other.clone(),
    }
}

/// A Go non-pointer `resource.Quantity`: its zero value prints as `"0"`.
fn quantity_or_zero(v: Option<&Value>) -> Value {
    v.map(quantity).unwrap_or_else(|| Value::String("0".into()))
}

/// A Go non-pointer string (no `omitempty`): absent prints as `""`.
fn string_or_empty(v: Option<&Value>) -> Value {
    v.cloned().unwrap_or_else(|| Value::String(String::new()))
}

/// `metric.type == Resource && metric.resource.name == cpu`.
fn is_cpu_resource(metric: &Value) -> bool {
    let m = Some(metric);
    is_str(member(m, "type"), "Resource") && is_str(member(member(m, "resource"), "name"), "cpu")
}

/// The CPU utilization target of a v2 metric spec, if it is one.
fn cpu_utilization_target(metric: &Value) -> Option<&Value> {
    if !is_cpu_resource(metric) {
        return None;
    }
    member(
        member(member(Some(metric), "resource"), "target"),
        "averageUtilization",
    )
}

/// The current CPU utilization of a v2 metric status, if it is one.
fn cpu_utilization_current(metric: &Value) -> Option<&Value> {
    if !is_cpu_resource(metric) {
        return None;
    }
    member(
        member(member(Some(metric), "resource"), "current"),
        "averageUtilization",
    )
}

/// A `Resource` `cpu` metric spec with a `Utilization` target.
fn cpu_utilization_metric(utilization: Value) -> Value {
    let mut target = Map::new();
    target.insert("type".into(), Value::String("Utilization".into()));
    target.insert("averageUtilization".into(), utilization);
    let mut resource = Map::new();
    resource.insert("name".into(), Value::String("cpu".into()));
    resource.insert("target".into(), Value::Object(target));
    let mut metric = Map::new();
    metric.insert("type".into(), Value::String("Resource".into()));
    metric.insert("resource".into(), Value::Object(resource));
    Value::Object(metric)
}

/// A `Resource` `cpu` metric status carrying only a utilization.
fn cpu_utilization_status(utilization: Value) -> Value {
    let mut current = Map::new();
    current.insert("averageUtilization".into(), utilization);
    let mut resource = Map::new();
    resource.insert("name".into(), Value::String("cpu".into()));
    resource.insert("current".into(), Value::Object(current));
    let mut metric = Map::new();
    metric.insert("type".into(), Value::String("Resource".into()));
    metric.insert("resource".into(), Value::Object(resource));
    Value::Object(metric)
}

/// Remove the round-trip annotations and add `add` (upstream
/// `DropRoundTripHorizontalPodAutoscalerAnnotations` then the conversion's own). Metadata
/// or annotations of an unexpected JSON type are left alone.
fn rewrite_annotations(metadata: Option<Value>, add: Vec<(&str, String)>) -> Option<Value> {
    let mut metadata = match metadata {
        None | Some(Value::Null) if add.is_empty() => return metadata,
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(m)) => m,
        Some(other) => return Some(other),
    };
    let mut annotations = match metadata.remove("annotations") {
        None | Some(Value::Null) if add.is_empty() => {
            return Some(Value::Object(metadata));
        }
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(a)) => a,
        Some(other) => {
            metadata.insert("annotations".into(), other);
            return Some(Value::Object(metadata));
        }
    };
    let before = annotations.len();
    for key in ROUND_TRIP_ANNOTATIONS {
        annotations.shift_remove(key);
    }
    let dropped = annotations.len() != before;
    for (key, value) in add {
        annotations.insert(key.into(), Value::String(value));
    }
    if !(dropped && annotations.is_empty()) {
        metadata.insert("annotations".into(), Value::Object(annotations));
    }
    Some(Value::Object(metadata))
}

// ---------------------------------------------------------------------------------------
// HorizontalPodAutoscaler: autoscaling/v2 (internal) → autoscaling/v1
// ---------------------------------------------------------------------------------------

/// v2 `CrossVersionObjectReference` → v1 (same fields; Go prints `kind`/`name` always).
fn cross_version_ref(v: Option<&Value>) -> Value {
    let mut out = Map::new();
    out.insert("kind".into(), string_or_empty(member(v, "kind")));
    out.insert("name".into(), string_or_empty(member(v, "name")));
    put(
        &mut out,
        "apiVersion",
        omit_empty(member(v, "apiVersion").cloned()),
    );
    Value::Object(out)
}

/// A v2 `MetricSpec` as the v1 `MetricSpec` of the metrics annotation.
fn metric_spec_to_v1(metric: &Map<String, Value>) -> Value {
    let mut out = Map::new();
    out.insert("type".into(), string_or_empty(field(metric, "type")));
    if let Some(src @ Value::Object(_)) = field(metric, "object") {
        let s = Some(src);
        let target = member(s, "target");
        let ident = member(s, "metric");
        let mut o = Map::new();
        o.insert(
            "target".into(),
            cross_version_ref(member(s, "describedObject")),
        );
        o.insert("metricName".into(), string_or_empty(member(ident, "name")));
        o.insert(
            "targetValue".into(),
            quantity_or_zero(member(target, "value")),
        );
        put(&mut o, "selector", member(ident, "selector").cloned());
        put(
            &mut o,
            "averageValue",
            member(target, "averageValue").map(quantity),
        );
        out.insert("object".into(), Value::Object(o));
    }
    if let Some(src @ Value::Object(_)) = field(metric, "pods") {
        let s = Some(src);
        let ident = member(s, "metric");
        let mut o = Map::new();
        o.insert("metricName".into(), string_or_empty(member(ident, "name")));
        o.insert(
            "targetAverageValue".into(),
            quantity_or_zero(member(member(s, "target"), "averageValue")),
        );
        put(&mut o, "selector", member(ident, "selector").cloned());
        out.insert("pods".into(), Value::Object(o));
    }
    for key in ["resource", "containerResource"] {
        if let Some(src @ Value::Object(_)) = field(metric, key) {
            let s = Some(src);
            let target = member(s, "target");
            let mut o = Map::new();
            o.insert("name".into(), string_or_empty(member(s, "name")));
            put(
                &mut o,
                "targetAverageUtilization",
                member(target, "averageUtilization").cloned(),
            );
            put(
                &mut o,
                "targetAverageValue",
                member(target, "averageValue").map(quantity),
            );
            if key == "containerResource" {
                o.insert("container".into(), string_or_empty(member(s, "container")));
            }
            out.insert(key.into(), Value::Object(o));
        }
    }
    if let Some(src @ Value::Object(_)) = field(metric, "external") {
        let s = Some(src);
        let target = member(s, "target");
        let ident = member(s, "metric");
        let mut o = Map::new();
        o.insert("metricName".into(), string_or_empty(member(ident, "name")));
        put(&mut o, "metricSelector", member(ident, "selector").cloned());
        put(&mut o, "targetValue", member(target, "value").map(quantity));
        put(
            &mut o,
            "targetAverageValue",
            member(target, "averageValue").map(quantity),
        );
        out.insert("external".into(), Value::Object(o));
    }
    Value::Object(out)
}

/// A v2 `MetricStatus` as the v1 `MetricStatus` of the current-metrics annotation.
fn metric_status_to_v1(metric: &Map<String, Value>) -> Value {
    let mut out = Map::new();
    out.insert("type".into(), string_or_empty(field(metric, "type")));
    if let Some(src @ Value::Object(_)) = field(metric, "object") {
        let s = Some(src);
        let current = member(s, "current");
        let ident = member(s, "metric");
        let mut o = Map::new();
        o.insert(
            "target".into(),
            cross_version_ref(member(s, "describedObject")),
        );
        o.insert("metricName".into(), string_or_empty(member(ident, "name")));
        o.insert(
            "currentValue".into(),
            quantity_or_zero(member(current, "value")),
        );
        put(&mut o, "selector", member(ident, "selector").cloned());
        put(
            &mut o,
            "averageValue",
            member(current, "averageValue").map(quantity),
        );
        out.insert("object".into(), Value::Object(o));
    }
    if let Some(src @ Value::Object(_)) = field(metric, "pods") {
        let s = Some(src);
        let ident = member(s, "metric");
        let mut o = Map::new();
        o.insert("metricName".into(), string_or_empty(member(ident, "name")));
        o.insert(
            "currentAverageValue".into(),
            quantity_or_zero(member(member(s, "current"), "averageValue")),
        );
        put(&mut o, "selector", member(ident, "selector").cloned());
        out.insert("pods".into(), Value::Object(o));
    }
    for key in ["resource", "containerResource"] {
        if let Some(src @ Value::Object(_)) = field(metric, key) {
            let s = Some(src);
            let current = member(s, "current");
            let mut o = Map::new();
            o.insert("name".into(), string_or_empty(member(s, "name")));
            put(
                &mut o,
                "currentAverageUtilization",
                member(current, "averageUtilization").cloned(),
            );
            o.insert(
                "currentAverageValue".into(),
                quantity_or_zero(member(current, "averageValue")),
            );
            if key == "containerResource" {
                o.insert("container".into(), string_or_empty(member(s, "container")));
            }
            out.insert(key.into(), Value::Object(o));
        }
    }
    if let Some(src @ Value::Object(_)) = field(metric, "external") {
        let s = Some(src);
        let current = member(s, "current");
        let ident = member(s, "metric");
        let mut o = Map::new();
        o.insert("metricName".into(), string_or_empty(member(ident, "name")));
        put(&mut o, "metricSelector", member(ident, "selector").cloned());
        o.insert(
            "currentValue".into(),
            quantity_or_zero(member(current, "value")),
        );
        put(
            &mut o,
            "currentAverageValue",
            member(current, "averageValue").map(quantity),
        );
        out.insert("external".into(), Value::Object(o));
    }
    Value::Object(out)
}

/// A v2 condition as a v1 condition (same fields; Go prints a zero
/// `lastTransitionTime` as null).
fn condition_to_v1(cond: &Map<String, Value>) -> Value {
    let mut out = Map::new();
    out.insert("type".into(), string_or_empty(field(cond, "type")));
    out.insert("status".into(), string_or_empty(field(cond, "status")));
    out.insert(
        "lastTransitionTime".into(),
        field(cond, "lastTransitionTime")
            .cloned()
            .unwrap_or(Value::Null),
    );
    put(&mut out, "reason", omit_empty(cond.get("reason").cloned()));
    put(
        &mut out,
        "message",
        omit_empty(cond.get("message").cloned()),
    );
    put(
        &mut out,
        "observedGeneration",
        field(cond, "observedGeneration").cloned(),
    );
    Value::Object(out)
}

/// A v2 `HPAScalingRules` as the internal Go type prints it (Go field names, no
/// `omitempty`: nil pointers and slices print as null).
fn scaling_rules_to_internal(rules: Option<&Value>) -> Value {
    let Some(r @ Value::Object(_)) = rules else {
        return Value::Null;
    };
    let r = Some(r);
    let mut out = Map::new();
    out.insert(
        "StabilizationWindowSeconds".into(),
        member(r, "stabilizationWindowSeconds")
            .cloned()
            .unwrap_or(Value::Null),
    );
    out.insert(
        "SelectPolicy".into(),
        member(r, "selectPolicy").cloned().unwrap_or(Value::Null),
    );
    let policies = match member(r, "policies") {
        Some(Value::Array(items)) => Value::Array(
            items
                .iter()
                .filter(|p| p.is_object())
                .map(|p| {
                    let p = Some(p);
                    let mut o = Map::new();
                    o.insert("Type".into(), string_or_empty(member(p, "type")));
                    o.insert(
                        "Value".into(),
                        member(p, "value").cloned().unwrap_or(Value::from(0)),
                    );
                    o.insert(
                        "PeriodSeconds".into(),
                        member(p, "periodSeconds")
                            .cloned()
                            .unwrap_or(Value::from(0)),
                    );
                    Value::Object(o)
                })
                .collect(),
        ),
        _ => Value::Null,
    };
    out.insert("Policies".into(), policies);
    out.insert(
        "Tolerance".into(),
        member(r, "tolerance").map(quantity).unwrap_or(Value::Null),
    );
    Value::Object(out)
}

/// A v2 `HorizontalPodAutoscalerBehavior` as the internal Go type prints it.
fn behavior_to_internal(behavior: &Value) -> Value {
    let b = Some(behavior);
    let mut out = Map::new();
    out.insert(
        "ScaleUp".into(),
        scaling_rules_to_internal(member(b, "scaleUp")),
    );
    out.insert(
        "ScaleDown".into(),
        scaling_rules_to_internal(member(b, "scaleDown")),
    );
    Value::Object(out)
}

/// `autoscaling/v2` → `autoscaling/v1` (upstream
/// `Convert_autoscaling_HorizontalPodAutoscaler_To_v1_HorizontalPodAutoscaler` and the
/// spec/status conversions it calls).
fn hpa_v2_to_v1(kind: &str, to: &str, mut src: Map<String, Value>) -> Map<String, Value> {
    let metadata = src.remove("metadata");
    let spec = src.remove("spec");
    let status = src.remove("status");
    let spec = spec.as_ref().and_then(Value::as_object);
    let status = status.as_ref().and_then(Value::as_object);

    let empty = Vec::new();
    let metrics = spec
        .and_then(|s| field(s, "metrics"))
        .and_then(Value::as_array)
        .unwrap_or(&empty);
    let current_metrics = status
        .and_then(|s| field(s, "currentMetrics"))
        .and_then(Value::as_array)
        .unwrap_or(&empty);
    let conditions = status
        .and_then(|s| field(s, "conditions"))
        .and_then(Value::as_array)
        .unwrap_or(&empty);

    let mut v1_spec = Map::new();
    if let Some(s) = spec {
        put(
            &mut v1_spec,
            "scaleTargetRef",
            s.get("scaleTargetRef").cloned(),
        );
        put(
            &mut v1_spec,
            "minReplicas",
            field(s, "minReplicas").cloned(),
        );
        put(&mut v1_spec, "maxReplicas", s.get("maxReplicas").cloned());
    }
    put(
        &mut v1_spec,
        "targetCPUUtilizationPercentage",
        metrics.iter().find_map(cpu_utilization_target).cloned(),
    );

    // Annotations, in the order Go prints map keys (sorted).
    let mut add = Vec::new();
    if let Some(b) = spec.and_then(|s| field(s, "behavior")) {
        add.push((BEHAVIOR_SPECS_ANNOTATION, go_json(&behavior_to_internal(b))));
    }
    if !conditions.is_empty() {
        let v1: Vec<Value> = conditions
            .iter()
            .filter_map(Value::as_object)
            .map(condition_to_v1)
            .collect();
        add.push((CONDITIONS_ANNOTATION, go_json(&Value::Array(v1))));
    }
    // Saved even when they map to the CPU utilization status, to keep the raw values.
    if !current_metrics.is_empty() {
        let v1: Vec<Value> = current_metrics
            .iter()
            .filter_map(Value::as_object)
            .map(metric_status_to_v1)
            .collect();
        add.push((METRIC_STATUSES_ANNOTATION, go_json(&Value::Array(v1))));
    }
    let other_metrics: Vec<Value> = metrics
        .iter()
        .filter(|m| cpu_utilization_target(m).is_none())
        .filter_map(Value::as_object)
        .map(metric_spec_to_v1)
        .collect();
    if !other_metrics.is_empty() {
        add.push((
            METRIC_SPECS_ANNOTATION,
            go_json(&Value::Array(other_metrics)),
        ));
    }

    let mut out = header(kind, to, rewrite_annotations(metadata, add));
    out.insert("spec".into(), Value::Object(v1_spec));
    if let Some(s) = status {
        let mut v1_status = Map::new();
        put(
            &mut v1_status,
            "observedGeneration",
            field(s, "observedGeneration").cloned(),
        );
        put(
            &mut v1_status,
            "lastScaleTime",
            field(s, "lastScaleTime").cloned(),
        );
        v1_status.insert(
            "currentReplicas".into(),
            field(s, "currentReplicas")
                .cloned()
                .unwrap_or(Value::from(0)),
        );
        v1_status.insert(
            "desiredReplicas".into(),
            field(s, "desiredReplicas")
                .cloned()
                .unwrap_or(Value::from(0)),
        );
        // The last CPU utilization wins, as upstream's loop has no break.
        put(
            &mut v1_status,
            "currentCPUUtilizationPercentage",
            current_metrics
                .iter()
                .rev()
                .find_map(cpu_utilization_current)
                .cloned(),
        );
        out.insert("status".into(), Value::Object(v1_status));
    }
    out
}

// ---------------------------------------------------------------------------------------
// HorizontalPodAutoscaler: autoscaling/v1 → autoscaling/v2 (internal)
// ---------------------------------------------------------------------------------------
//
// The annotations are decoded as Go's `json.Unmarshal` decodes them into the v1 (or
// internal) types: keys match case-insensitively (exact match first), unknown keys are
// ignored, null is the zero value, and a value of the wrong JSON type fails the whole
// annotation, which upstream then ignores. Decoders return `Err(())` for such failures.

type Decoded<T> = Result<T, ()>;

/// Member `name` of a Go-decoded object: an exact key first, then a case-insensitive one.
/// Null is treated as absent.
fn go_field<'a>(m: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    m.get(name)
        .or_else(|| {
            m.iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(name))
                .map(|(_, v)| v)
        })
        .filter(|v| !v.is_null())
}

/// A struct (or pointer to one): an object, or absent.
fn go_struct<'a>(m: &'a Map<String, Value>, name: &str) -> Decoded<Option<&'a Map<String, Value>>> {
    match go_field(m, name) {
        None => Ok(None),
        Some(Value::Object(o)) => Ok(Some(o)),
        Some(_) => Err(()),
    }
}

fn go_string(m: &Map<String, Value>, name: &str) -> Decoded<Option<Value>> {
    match go_field(m, name) {
        None => Ok(None),
        Some(v @ Value::String(_)) => Ok(Some(v.clone())),
        Some(_) => Err(()),
    }
}

/// An integer that fits `bits` signed bits.
fn go_int(m: &Map<String, Value>, name: &str, bits: u32) -> Decoded<Option<Value>> {
    match go_field(m, name) {
        None => Ok(None),
        Some(v @ Value::Number(n)) => {
            let limit = 1i128 << (bits - 1);
            let x = n
                .as_i64()
                .map(i128::from)
                .or_else(|| n.as_u64().map(i128::from))
                .ok_or(())?;
            if (-limit..limit).contains(&x) {
                Ok(Some(v.clone()))
            } else {
                Err(())
            }
        }
        Some(_) => Err(()),
    }
}

/// A `resource.Quantity`: a string, or a bare number (printed back as a string).
fn go_quantity(m: &Map<String, Value>, name: &str) -> Decoded<Option<Value>> {
    match go_field(m, name) {
        None => Ok(None),
        Some(v @ (Value::String(_) | Value::Number(_))) => Ok(Some(quantity(v))),
        Some(_) => Err(()),
    }
}

/// A `*metav1.LabelSelector`, carried over as it is.
fn go_selector(m: &Map<String, Value>, name: &str) -> Decoded<Option<Value>> {
    Ok(go_struct(m, name)?.map(|o| Value::Object(o.clone())))
}

/// A JSON array of Go-decoded values (null decodes to no elements).
fn go_array<T>(v: &Value, each: impl Fn(&Map<String, Value>) -> Decoded<T>) -> Decoded<Vec<T>> {
    let empty = Map::new();
    match v {
        Value::Null => Ok(Vec::new()),
        Value::Array(items) => items
            .iter()
            .map(|item| match item {
                Value::Null => each(&empty),
                Value::Object(o) => each(o),
                _ => Err(()),
            })
            .collect(),
        _ => Err(()),
    }
}

fn string_value(v: Option<Value>) -> Value {
    v.unwrap_or_else(|| Value::String(String::new()))
}

/// v1 `CrossVersionObjectReference` → v2.
fn decode_cross_version_ref(m: &Map<String, Value>, name: &str) -> Decoded<Value> {
    let empty = Map::new();
    let r = go_struct(m, name)?.unwrap_or(&empty);
    let mut out = Map::new();
    out.insert("kind".into(), string_value(go_string(r, "kind")?));
    out.insert("name".into(), string_value(go_string(r, "name")?));
    put(
        &mut out,
        "apiVersion",
        omit_empty(go_string(r, "apiVersion")?),
    );
    Ok(Value::Object(out))
}

/// A v2 `MetricIdentifier`.
fn metric_identifier(name: Option<Value>, selector: Option<Value>) -> Value {
    let mut out = Map::new();
    out.insert("name".into(), string_value(name));
    put(&mut out, "selector", selector);
    Value::Object(out)
}

/// A v2 `MetricTarget` (or, without a type, a `MetricValueStatus`).
fn metric_value(
    target_type: Option<&str>,
    value: Option<Value>,
    average_value: Option<Value>,
    average_utilization: Option<Value>,
) -> Value {
    let mut out = Map::new();
    if let Some(t) = target_type {
        out.insert("type".into(), Value::String(t.into()));
    }
    put(&mut out, "value", value);
    put(&mut out, "averageValue", average_value);
    put(&mut out, "averageUtilization", average_utilization);
    Value::Object(out)
}

fn zero_quantity(v: Option<Value>) -> Value {
    v.unwrap_or_else(|| Value::String("0".into()))
}

/// One v1 `MetricSpec` of the metrics annotation → v2 (upstream
/// `Convert_v1_*MetricSource_To_autoscaling_*MetricSource`).
fn decode_metric_spec(m: &Map<String, Value>) -> Decoded<Value> {
    let mut out = Map::new();
    out.insert("type".into(), string_value(go_string(m, "type")?));
    if let Some(s) = go_struct(m, "object")? {
        let average_value = go_quantity(s, "averageValue")?;
        let target_type = if average_value.is_none() {
            "Value"
        } else {
            "AverageValue"
        };
        let target_value = zero_quantity(go_quantity(s, "targetValue")?);
        let mut o = Map::new();
        o.insert(
            "describedObject".into(),
            decode_cross_version_ref(s, "target")?,
        );
        o.insert(
            "target".into(),
            metric_value(Some(target_type), Some(target_value), average_value, None),
        );
        o.insert(
            "metric".into(),
            metric_identifier(go_string(s, "metricName")?, go_selector(s, "selector")?),
        );
        out.insert("object".into(), Value::Object(o));
    }
    if let Some(s) = go_struct(m, "pods")? {
        let average_value = zero_quantity(go_quantity(s, "targetAverageValue")?);
        let mut o = Map::new();
        o.insert(
            "metric".into(),
            metric_identifier(go_string(s, "metricName")?, go_selector(s, "selector")?),
        );
        o.insert(
            "target".into(),
            metric_value(Some("AverageValue"), None, Some(average_value), None),
        );
        out.insert("pods".into(), Value::Object(o));
    }
    for key in ["resource", "containerResource"] {
        if let Some(s) = go_struct(m, key)? {
            let utilization = go_int(s, "targetAverageUtilization", 32)?;
            let target_type = if utilization.is_none() {
                "AverageValue"
            } else {
                "Utilization"
            };
            let average_value = go_quantity(s, "targetAverageValue")?;
            let mut o = Map::new();
            o.insert("name".into(), string_value(go_string(s, "name")?));
            o.insert(
                "target".into(),
                metric_value(Some(target_type), None, average_value, utilization),
            );
            if key == "containerResource" {
                o.insert("container".into(), string_value(go_string(s, "container")?));
            }
            out.insert(key.into(), Value::Object(o));
        }
    }
    if let Some(s) = go_struct(m, "external")? {
        let value = go_quantity(s, "targetValue")?;
        let target_type = if value.is_none() {
            "AverageValue"
        } else {
            "Value"
        };
        let average_value = go_quantity(s, "targetAverageValue")?;
        let mut o = Map::new();
        o.insert(
            "metric".into(),
            metric_identifier(
                go_string(s, "metricName")?,
                go_selector(s, "metricSelector")?,
            ),
        );
        o.insert(
            "target".into(),
            metric_value(Some(target_type), value, average_value, None),
        );
        out.insert("external".into(), Value::Object(o));
    }
    Ok(Value::Object(out))
}

/// One v1 `MetricStatus` of the current-metrics annotation → v2 (upstream
/// `Convert_v1_*MetricStatus_To_autoscaling_*MetricStatus`).
fn decode_metric_status(m: &Map<String, Value>) -> Decoded<Value> {
    let mut out = Map::new();
    out.insert("type".into(), string_value(go_string(m, "type")?));
    if let Some(s) = go_struct(m, "object")? {
        let value = zero_quantity(go_quantity(s, "currentValue")?);
        let average_value = go_quantity(s, "averageValue")?;
        let mut o = Map::new();
        o.insert(
            "metric".into(),
            metric_identifier(go_string(s, "metricName")?, go_selector(s, "selector")?),
        );
        o.insert(
            "current".into(),
            metric_value(None, Some(value), average_value, None),
        );
        o.insert(
            "describedObject".into(),
            decode_cross_version_ref(s, "target")?,
        );
        out.insert("object".into(), Value::Object(o));
    }
    if let Some(s) = go_struct(m, "pods")? {
        let average_value = zero_quantity(go_quantity(s, "currentAverageValue")?);
        let mut o = Map::new();
        o.insert(
            "metric".into(),
            metric_identifier(go_string(s, "metricName")?, go_selector(s, "selector")?),
        );
        o.insert(
            "current".into(),
            metric_value(None, None, Some(average_value), None),
        );
        out.insert("pods".into(), Value::Object(o));
    }
    for key in ["resource", "containerResource"] {
        if let Some(s) = go_struct(m, key)? {
            let utilization = go_int(s, "currentAverageUtilization", 32)?;
            let average_value = zero_quantity(go_quantity(s, "currentAverageValue")?);
            let mut o = Map::new();
            o.insert("name".into(), string_value(go_string(s, "name")?));
            o.insert(
                "current".into(),
                metric_value(None, None, Some(average_value), utilization),
            );
            if key == "containerResource" {
                o.insert("container".into(), string_value(go_string(s, "container")?));
            }
            out.insert(key.into(), Value::Object(o));
        }
    }
    if let Some(s) = go_struct(m, "external")? {
        let value = zero_quantity(go_quantity(s, "currentValue")?);
        let average_value = go_quantity(s, "currentAverageValue")?;
        let mut o = Map::new();
        o.insert(
            "metric".into(),
            metric_identifier(
                go_string(s, "metricName")?,
                go_selector(s, "metricSelector")?,
            ),
        );
        o.insert(
            "current".into(),
            metric_value(None, Some(value), average_value, None),
        );
        out.insert("external".into(), Value::Object(o));
    }
    Ok(Value::Object(out))
}

/// One v1 condition of the conditions annotation → v2.
fn decode_condition(m: &Map<String, Value>) -> Decoded<Value> {
    let mut out = Map::new();
    out.insert("type".into(), string_value(go_string(m, "type")?));
    out.insert("status".into(), string_value(go_string(m, "status")?));
    put(
        &mut out,
        "lastTransitionTime",
        go_string(m, "lastTransitionTime")?,
    );
    put(&mut out, "reason", omit_empty(go_string(m, "reason")?));
    put(&mut out, "message", omit_empty(go_string(m, "message")?));
    put(
        &mut out,
        "observedGeneration",
        go_int(m, "observedGeneration", 64)?,
    );
    Ok(Value::Object(out))
}

/// An internal `HPAScalingRules` (Go field names) → v2.
fn decode_scaling_rules(m: &Map<String, Value>) -> Decoded<Value> {
    let mut out = Map::new();
    put(
        &mut out,
        "stabilizationWindowSeconds",
        go_int(m, "StabilizationWindowSeconds", 32)?,
    );
    put(&mut out, "selectPolicy", go_string(m, "SelectPolicy")?);
    let policies = match go_field(m, "Policies") {
        None => Vec::new(),
        Some(v) => go_array(v, |p| {
            let mut o = Map::new();
            o.insert("type".into(), string_value(go_string(p, "Type")?));
            o.insert(
                "value".into(),
                go_int(p, "Value", 32)?.unwrap_or(Value::from(0)),
            );
            o.insert(
                "periodSeconds".into(),
                go_int(p, "PeriodSeconds", 32)?.unwrap_or(Value::from(0)),
            );
            Ok(Value::Object(o))
        })?,
    };
    if !policies.is_empty() {
        out.insert("policies".into(), Value::Array(policies));
    }
    put(&mut out, "tolerance", go_quantity(m, "Tolerance")?);
    Ok(Value::Object(out))
}

/// The behavior annotation → v2 behavior; `None` when it decodes to the empty behavior
/// (upstream only moves well-formed, non-empty data into the field).
fn decode_behavior(text: &str) -> Option<Map<String, Value>> {
    let v: Value = serde_json::from_str(text).ok()?;
    let m = match &v {
        Value::Null => return None,
        Value::Object(m) => m,
        _ => return None,
    };
    let mut out = Map::new();
    for (go_name, name) in [("ScaleUp", "scaleUp"), ("ScaleDown", "scaleDown")] {
        if let Some(rules) = go_struct(m, go_name).ok()? {
            out.insert(name.into(), decode_scaling_rules(rules).ok()?);
        }
    }
    (!out.is_empty()).then_some(out)
}

/// `GenerateHPAScaleUpRules(nil)`: the default scale-up rules.
fn default_scale_up_rules() -> Value {
    serde_json::json!({
        "stabilizationWindowSeconds": 0,
        "selectPolicy": "Max",
        "policies": [
            {"type": "Pods", "value": 4, "periodSeconds": 15},
            {"type": "Percent", "value": 100, "periodSeconds": 15}
        ]
    })
}

/// `GenerateHPAScaleDownRules(nil)`: the default scale-down rules (no stabilization
/// window: the controller's command-line default applies).
fn default_scale_down_rules() -> Value {
    serde_json::json!({
        "selectPolicy": "Max",
        "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]
    })
}

/// The string value of annotation `key`, if the metadata has one.
fn annotation<'a>(metadata: Option<&'a Value>, key: &str) -> Option<&'a str> {
    member(member(metadata, "annotations"), key)?.as_str()
}

/// `autoscaling/v1` → `autoscaling/v2` (upstream
/// `Convert_v1_HorizontalPodAutoscaler_To_autoscaling_HorizontalPodAutoscaler` and the
/// spec/status conversions it calls; internal → v2 only drops round-trip annotations).
fn hpa_v1_to_v2(kind: &str, to: &str, mut src: Map<String, Value>) -> Map<String, Value> {
    let metadata = src.remove("metadata");
    let spec = src.remove("spec");
    let status = src.remove("status");
    let spec = spec.as_ref().and_then(Value::as_object);
    let status = status.as_ref().and_then(Value::as_object);
    let meta = metadata.as_ref();

    let mut v2_spec = Map::new();
    let mut metrics = Vec::new();
    if let Some(s) = spec {
        put(
            &mut v2_spec,
            "scaleTargetRef",
            s.get("scaleTargetRef").cloned(),
        );
        put(
            &mut v2_spec,
            "minReplicas",
            field(s, "minReplicas").cloned(),
        );
        put(&mut v2_spec, "maxReplicas", s.get("maxReplicas").cloned());
        if let Some(cpu) = field(s, "targetCPUUtilizationPercentage") {
            metrics.push(cpu_utilization_metric(cpu.clone()));
        }
    }
    // The CPU metric from the spec goes after the annotation's metrics.
    let decode = |key: &str, each: fn(&Map<String, Value>) -> Decoded<Value>| {
        let text = annotation(meta, key)?;
        let v: Value = serde_json::from_str(text).ok()?;
        go_array(&v, each).ok()
    };
    if let Some(mut others) = decode(METRIC_SPECS_ANNOTATION, decode_metric_spec) {
        others.append(&mut metrics);
        metrics = others;
    }
    let mut behavior = annotation(meta, BEHAVIOR_SPECS_ANNOTATION).and_then(decode_behavior);
    let annotated_current = decode(METRIC_STATUSES_ANNOTATION, decode_metric_status);
    if metrics.is_empty() {
        metrics.push(cpu_utilization_metric(Value::from(DEFAULT_CPU_UTILIZATION)));
    }
    let annotated_conditions = decode(CONDITIONS_ANNOTATION, decode_condition);
    // Directions the annotation leaves out get upstream's defaults.
    if let Some(mut b) = behavior.take() {
        let mut filled = Map::new();
        let up = b.remove("scaleUp").unwrap_or_else(default_scale_up_rules);
        let down = b
            .remove("scaleDown")
            .unwrap_or_else(default_scale_down_rules);
        filled.insert("scaleUp".into(), up);
        filled.insert("scaleDown".into(), down);
        behavior = Some(filled);
    }
    v2_spec.insert("metrics".into(), Value::Array(metrics));
    put(&mut v2_spec, "behavior", behavior.map(Value::Object));

    let v2_status =
        if status.is_some() || annotated_current.is_some() || annotated_conditions.is_some() {
            let empty = Map::new();
            let s = status.unwrap_or(&empty);
            let mut out = Map::new();
            put(
                &mut out,
                "observedGeneration",
                field(s, "observedGeneration").cloned(),
            );
            put(
                &mut out,
                "lastScaleTime",
                field(s, "lastScaleTime").cloned(),
            );
            put(
                &mut out,
                "currentReplicas",
                omit_empty(s.get("currentReplicas").cloned()),
            );
            out.insert(
                "desiredReplicas".into(),
                field(s, "desiredReplicas")
                    .cloned()
                    .unwrap_or(Value::from(0)),
            );
            // The annotation has more information than the CPU utilization: it wins.
            let current = annotated_current.or_else(|| {
                field(s, "currentCPUUtilizationPercentage")
                    .map(|cpu| vec![cpu_utilization_status(cpu.clone())])
            });
            put(&mut out, "currentMetrics", current.map(Value::Array));
            if let Some(conditions) = annotated_conditions.filter(|c| !c.is_empty()) {
                out.insert("conditions".into(), Value::Array(conditions));
            }
            Some(out)
        } else {
            None
        };

    let mut out = header(kind, to, rewrite_annotations(metadata, Vec::new()));
    out.insert("spec".into(), Value::Object(v2_spec));
    put(&mut out, "status", v2_status.map(Value::Object));
    out
}

const KIND: &str = "HorizontalPodAutoscaler";
const AUTOSCALING_V1: &str = "autoscaling/v1";
const AUTOSCALING_V2: &str = "autoscaling/v2";

/// An HPA converted between `autoscaling/v1` and `autoscaling/v2` (identity for the same
/// version). `metadata.annotations` is the one part of the metadata that changes: the
/// round-trip annotations are written (to v1) or consumed and removed (to v2).
pub(crate) fn convert(from: &str, to: &str, obj: Value) -> Result<Value, String> {
    if from == to {
        return Ok(obj);
    }
    let src = object(KIND, from, to, obj)?;
    let out = match (from, to) {
        (AUTOSCALING_V2, AUTOSCALING_V1) => hpa_v2_to_v1(KIND, to, src),
        (AUTOSCALING_V1, AUTOSCALING_V2) => hpa_v1_to_v2(KIND, to, src),
        _ => return Err(format!("no conversion for {KIND} from {from} to {to}")),
    };
    Ok(Value::Object(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn hpa(from: &str, to: &str, obj: Value) -> Value {
        convert(from, to, obj).expect("conversion")
    }

    fn keys(v: &Value) -> Vec<&str> {
        v.as_object()
            .map(|m| m.keys().map(String::as_str).collect())
            .unwrap_or_default()
    }

    #[test]
    fn identity_and_unsupported_pairs() {
        let obj = json!({"kind": "HorizontalPodAutoscaler", "apiVersion": "autoscaling/v1"});
        assert_eq!(
            convert("autoscaling/v1", "autoscaling/v1", obj.clone()),
            Ok(obj.clone())
        );
        assert!(convert("autoscaling/v1", "autoscaling/v2beta2", obj).is_err());
        assert!(convert("autoscaling/v1", "autoscaling/v2", json!([1])).is_err());
    }

    fn v2_spec_with(metrics: Value) -> Value {
        json!({
            "kind": "HorizontalPodAutoscaler", "apiVersion": "autoscaling/v2",
            "metadata": {"name": "h", "namespace": "ns"},
            "spec": {
                "scaleTargetRef": {"kind": "Deployment", "name": "d", "apiVersion": "apps/v1"},
                "minReplicas": 1, "maxReplicas": 3, "metrics": metrics
            }
        })
    }

    // Ported from pkg/apis/autoscaling/v1/conversion_test.go
    // (TestConvert_autoscaling_HorizontalPodAutoscalerSpec_To_v1_HorizontalPodAutoscalerSpec,
    // cases TestConversionWithCPUAverageValueAndUtilizationBoth1/2): the utilization target
    // wins, the average-value CPU metric goes to the annotation.
    #[test]
    fn hpa_spec_cpu_average_value_and_utilization_both() {
        let v2 = v2_spec_with(json!([
            {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "AverageValue", "averageValue": "300m"}}},
            {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}}}
        ]));
        let v1 = hpa("autoscaling/v2", "autoscaling/v1", v2);
        assert_eq!(
            v1["spec"],
            json!({
                "scaleTargetRef": {"kind": "Deployment", "name": "d", "apiVersion": "apps/v1"},
                "minReplicas": 1, "maxReplicas": 3, "targetCPUUtilizationPercentage": 70
            })
        );
        assert_eq!(
            v1["metadata"]["annotations"][METRIC_SPECS_ANNOTATION],
            r#"[{"type":"Resource","resource":{"name":"cpu","targetAverageValue":"300m"}}]"#
        );
    }

    // Ported from the same test (TestConversionWithoutMetrics): no metrics, no target.
    #[test]
    fn hpa_spec_without_metrics() {
        let v1 = hpa("autoscaling/v2", "autoscaling/v1", v2_spec_with(json!([])));
        assert_eq!(v1["spec"]["maxReplicas"], 3);
        assert!(v1["spec"].get("targetCPUUtilizationPercentage").is_none());
        assert!(v1["metadata"].get("annotations").is_none());
    }

    // Ported from the same test (TestConversionWithCPUUtilizationOnly).
    #[test]
    fn hpa_spec_cpu_utilization_only() {
        let v2 = v2_spec_with(json!([
            {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}}}
        ]));
        let v1 = hpa("autoscaling/v2", "autoscaling/v1", v2);
        assert_eq!(keys(&v1), ["kind", "apiVersion", "metadata", "spec"]);
        assert_eq!(
            keys(&v1["spec"]),
            [
                "scaleTargetRef",
                "minReplicas",
                "maxReplicas",
                "targetCPUUtilizationPercentage"
            ]
        );
        assert_eq!(v1["spec"]["targetCPUUtilizationPercentage"], 60);
        assert_eq!(v1["metadata"], json!({"name": "h", "namespace": "ns"}));
        // And back: lossless.
        assert_eq!(
            hpa("autoscaling/v1", "autoscaling/v2", v1),
            v2_spec_with(json!([
                {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}}}
            ]))
        );
    }

    // Ported from pkg/apis/autoscaling/v1/conversion_test.go
    // (TestConvert_v1_HorizontalPodAutoscaler_To_autoscaling_HorizontalPodAutoscaler,
    // TestConversionWithNilBehaviors): a `{}` behavior annotation must not panic. Current
    // upstream conversion.go only moves non-empty behavior into the field, so the result
    // has no behavior (and the annotation is dropped).
    #[test]
    fn hpa_v1_empty_behavior_annotation() {
        let v1 = json!({
            "kind": "HorizontalPodAutoscaler", "apiVersion": "autoscaling/v1",
            "metadata": {"annotations": {BEHAVIOR_SPECS_ANNOTATION: "{}"}}
        });
        let v2 = hpa("autoscaling/v1", "autoscaling/v2", v1);
        assert_eq!(
            v2,
            json!({
                "kind": "HorizontalPodAutoscaler", "apiVersion": "autoscaling/v2",
                "metadata": {},
                "spec": {"metrics": [
                    {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}
                ]}
            })
        );
    }

    #[test]
    fn hpa_v1_partial_behavior_gets_default_directions() {
        let behavior = r#"{"ScaleUp":{"StabilizationWindowSeconds":30,"SelectPolicy":null,"Policies":null,"Tolerance":"50m"},"ScaleDown":null}"#;
        let v1 = json!({
            "kind": "HorizontalPodAutoscaler", "apiVersion": "autoscaling/v1",
            "metadata": {"name": "h", "annotations": {"keep": "me", BEHAVIOR_SPECS_ANNOTATION: behavior}},
            "spec": {"maxReplicas": 5, "targetCPUUtilizationPercentage": 50}
        });
        let v2 = hpa("autoscaling/v1", "autoscaling/v2", v1);
        assert_eq!(
            v2["metadata"],
            json!({"name": "h", "annotations": {"keep": "me"}})
        );
        assert_eq!(
            v2["spec"]["behavior"],
            json!({
                "scaleUp": {"stabilizationWindowSeconds": 30, "tolerance": "50m"},
                "scaleDown": {"selectPolicy": "Max", "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]}
            })
        );
        let v1 = json!({
            "kind": "HorizontalPodAutoscaler", "apiVersion": "autoscaling/v1",
            "metadata": {"annotations": {BEHAVIOR_SPECS_ANNOTATION: r#"{"scaledown":{"selectPolicy":"Min"}}"#}},
            "spec": {"maxReplicas": 5}
        });
        let v2 = hpa("autoscaling/v1", "autoscaling/v2", v1);
        assert_eq!(v2["spec"]["behavior"]["scaleUp"], default_scale_up_rules());
        assert_eq!(
            v2["spec"]["behavior"]["scaleDown"],
            json!({"selectPolicy": "Min"})
        );
        assert!(v2["metadata"].get("annotations").is_none());
    }

    fn full_v2() -> Value {
        json!({
            "kind": "HorizontalPodAutoscaler", "apiVersion": "autoscaling/v2",
            "metadata": {"name": "h", "namespace": "ns", "annotations": {"a": "b"}},
            "spec": {
                "scaleTargetRef": {"kind": "Deployment", "name": "d", "apiVersion": "apps/v1"},
                "minReplicas": 2,
                "maxReplicas": 10,
                "metrics": [
                    {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "100Mi"}}},
                    {"type": "Pods", "pods": {"metric": {"name": "qps", "selector": {"matchLabels": {"a": "b"}}}, "target": {"type": "AverageValue", "averageValue": "1k"}}},
                    {"type": "Object", "object": {"describedObject": {"kind": "Ingress", "name": "i", "apiVersion": "networking.k8s.io/v1"}, "target": {"type": "Value", "value": "10"}, "metric": {"name": "hits"}}},
                    {"type": "External", "external": {"metric": {"name": "queue", "selector": {"matchLabels": {"q": "x<y&z"}}}, "target": {"type": "AverageValue", "averageValue": "30"}}},
                    {"type": "ContainerResource", "containerResource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 40}, "container": "app"}},
                    {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}}
                ],
                "behavior": {
                    "scaleUp": {"stabilizationWindowSeconds": 0, "selectPolicy": "Max", "policies": [{"type": "Pods", "value": 4, "periodSeconds": 15}], "tolerance": "10m"},
                    "scaleDown": {"stabilizationWindowSeconds": 300, "selectPolicy": "Min", "policies": [{"type": "Percent", "value": 10, "periodSeconds": 60}]}
                }
            },
            "status": {
                "observedGeneration": 4,
                "lastScaleTime": "2024-01-01T00:00:00Z",
                "currentReplicas": 3,
                "desiredReplicas": 4,
                "currentMetrics": [
                    {"type": "Resource", "resource": {"name": "cpu", "current": {"averageValue": "250m", "averageUtilization": 55}}},
                    {"type": "Pods", "pods": {"metric": {"name": "qps"}, "current": {"averageValue": "900"}}},
                    {"type": "Object", "object": {"metric": {"name": "hits"}, "current": {"value": "12"}, "describedObject": {"kind": "Ingress", "name": "i"}}},
                    {"type": "External", "external": {"metric": {"name": "queue"}, "current": {"value": "7", "averageValue": "2"}}},
                    {"type": "ContainerResource", "containerResource": {"name": "cpu", "current": {"averageValue": "100m", "averageUtilization": 20}, "container": "app"}}
                ],
                "conditions": [
                    {"type": "AbleToScale", "status": "True", "lastTransitionTime": "2024-01-01T00:00:00Z", "reason": "ReadyForNewScale", "message": "ok", "observedGeneration": 4},
                    {"type": "ScalingActive", "status": "True", "lastTransitionTime": "2024-01-01T00:00:00Z", "reason": "ValidMetricFound"}
                ]
            }
        })
    }

    #[test]
    fn hpa_v2_to_v1_annotations_as_go_prints_them() {
        let v1 = hpa("autoscaling/v2", "autoscaling/v1", full_v2());
        assert_eq!(
            keys(&v1["metadata"]["annotations"]),
            [
                "a",
                BEHAVIOR_SPECS_ANNOTATION,
                CONDITIONS_ANNOTATION,
                METRIC_STATUSES_ANNOTATION,
                METRIC_SPECS_ANNOTATION
            ]
        );
        assert_eq!(
            v1["spec"],
            json!({
                "scaleTargetRef": {"kind": "Deployment", "name": "d", "apiVersion": "apps/v1"},
                "minReplicas": 2, "maxReplicas": 10, "targetCPUUtilizationPercentage": 50
            })
        );
        assert_eq!(
            v1["status"],
            json!({
                "observedGeneration": 4, "lastScaleTime": "2024-01-01T00:00:00Z",
                "currentReplicas": 3, "desiredReplicas": 4, "currentCPUUtilizationPercentage": 55
            })
        );
        let a = &v1["metadata"]["annotations"];
        assert_eq!(
            a[BEHAVIOR_SPECS_ANNOTATION],
            concat!(
                r#"{"ScaleUp":{"StabilizationWindowSeconds":0,"SelectPolicy":"Max","Policies":[{"Type":"Pods","Value":4,"PeriodSeconds":15}],"Tolerance":"10m"},"#,
                r#""ScaleDown":{"StabilizationWindowSeconds":300,"SelectPolicy":"Min","Policies":[{"Type":"Percent","Value":10,"PeriodSeconds":60}],"Tolerance":null}}"#
            )
        );
        assert_eq!(
            a[METRIC_SPECS_ANNOTATION],
            concat!(
                r#"[{"type":"Resource","resource":{"name":"memory","targetAverageValue":"100Mi"}},"#,
                r#"{"type":"Pods","pods":{"metricName":"qps","targetAverageValue":"1k","selector":{"matchLabels":{"a":"b"}}}},"#,
                r#"{"type":"Object","object":{"target":{"kind":"Ingress","name":"i","apiVersion":"networking.k8s.io/v1"},"metricName":"hits","targetValue":"10"}},"#,
                r#"{"type":"External","external":{"metricName":"queue","metricSelector":{"matchLabels":{"q":"x\u003cy\u0026z"}},"targetAverageValue":"30"}},"#,
                r#"{"type":"ContainerResource","containerResource":{"name":"cpu","targetAverageUtilization":40,"container":"app"}}]"#
            )
        );
        assert_eq!(
            a[METRIC_STATUSES_ANNOTATION],
            concat!(
                r#"[{"type":"Resource","resource":{"name":"cpu","currentAverageUtilization":55,"currentAverageValue":"250m"}},"#,
                r#"{"type":"Pods","pods":{"metricName":"qps","currentAverageValue":"900"}},"#,
                r#"{"type":"Object","object":{"target":{"kind":"Ingress","name":"i"},"metricName":"hits","currentValue":"12"}},"#,
                r#"{"type":"External","external":{"metricName":"queue","currentValue":"7","currentAverageValue":"2"}},"#,
                r#"{"type":"ContainerResource","containerResource":{"name":"cpu","currentAverageUtilization":20,"currentAverageValue":"100m","container":"app"}}]"#
            )
        );
        assert_eq!(
            a[CONDITIONS_ANNOTATION],
            concat!(
                r#"[{"type":"AbleToScale","status":"True","lastTransitionTime":"2024-01-01T00:00:00Z","reason":"ReadyForNewScale","message":"ok","observedGeneration":4},"#,
                r#"{"type":"ScalingActive","status":"True","lastTransitionTime":"2024-01-01T00:00:00Z","reason":"ValidMetricFound"}]"#
            )
        );
    }

    #[test]
    fn hpa_v2_v1_v2_round_trip_is_lossless() {
        let v1 = hpa("autoscaling/v2", "autoscaling/v1", full_v2());
        let v2 = hpa("autoscaling/v1", "autoscaling/v2", v1.clone());
        assert_eq!(v2, full_v2());
        assert_eq!(
            keys(&v2["spec"]),
            [
                "scaleTargetRef",
                "minReplicas",
                "maxReplicas",
                "metrics",
                "behavior"
            ]
        );
        assert_eq!(
            keys(&v2["status"]),
            [
                "observedGeneration",
                "lastScaleTime",
                "currentReplicas",
                "desiredReplicas",
                "currentMetrics",
                "conditions"
            ]
        );
        // v1 -> v2 -> v1 reproduces the v1 object, annotations included.
        assert_eq!(hpa("autoscaling/v2", "autoscaling/v1", v2), v1);
    }

    #[test]
    fn hpa_lossy_where_upstream_is() {
        // The CPU utilization metric moves after the others; an Object metric with an
        // AverageValue target gains the zero `value` v1's non-pointer targetValue implies.
        let v2 = v2_spec_with(json!([
            {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}},
            {"type": "Object", "object": {"describedObject": {"kind": "Service", "name": "s"}, "target": {"type": "AverageValue", "averageValue": "5"}, "metric": {"name": "m"}}}
        ]));
        let back = hpa(
            "autoscaling/v1",
            "autoscaling/v2",
            hpa("autoscaling/v2", "autoscaling/v1", v2),
        );
        assert_eq!(
            back["spec"]["metrics"],
            json!([
                {"type": "Object", "object": {"describedObject": {"kind": "Service", "name": "s"}, "target": {"type": "AverageValue", "value": "0", "averageValue": "5"}, "metric": {"name": "m"}}},
                {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}}
            ])
        );
    }

    #[test]
    fn hpa_v1_to_v2_plain() {
        let v1 = json!({
            "kind": "HorizontalPodAutoscaler", "apiVersion": "autoscaling/v1",
            "metadata": {"name": "h"},
            "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "d"}, "minReplicas": 1, "maxReplicas": 4},
            "status": {"currentReplicas": 0, "desiredReplicas": 2, "currentCPUUtilizationPercentage": 33}
        });
        let v2 = hpa("autoscaling/v1", "autoscaling/v2", v1.clone());
        assert_eq!(
            v2,
            json!({
                "kind": "HorizontalPodAutoscaler", "apiVersion": "autoscaling/v2",
                "metadata": {"name": "h"},
                "spec": {
                    "scaleTargetRef": {"kind": "Deployment", "name": "d"}, "minReplicas": 1, "maxReplicas": 4,
                    "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]
                },
                "status": {
                    "desiredReplicas": 2,
                    "currentMetrics": [{"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 33}}}]
                }
            })
        );
        // Back to v1: the implicit default becomes explicit, the rest is unchanged; the
        // raw current metric is kept in the annotation as upstream does.
        let again = hpa("autoscaling/v2", "autoscaling/v1", v2);
        assert_eq!(again["spec"]["targetCPUUtilizationPercentage"], 80);
        assert_eq!(again["status"], v1["status"]);
        assert_eq!(
            again["metadata"]["annotations"][METRIC_STATUSES_ANNOTATION],
            r#"[{"type":"Resource","resource":{"name":"cpu","currentAverageUtilization":33,"currentAverageValue":"0"}}]"#
        );
    }

    #[test]
    fn hpa_bad_annotations_are_ignored_and_dropped() {
        let v1 = json!({
            "kind": "HorizontalPodAutoscaler", "apiVersion": "autoscaling/v1",
            "metadata": {"annotations": {
                METRIC_SPECS_ANNOTATION: "not json",
                METRIC_STATUSES_ANNOTATION: r#"[{"type":"Pods","pods":{"metricName":5}}]"#,
                CONDITIONS_ANNOTATION: r#"[{"type":"AbleToScale","status":"True","observedGeneration":1.5}]"#,
                BEHAVIOR_SPECS_ANNOTATION: r#"{"ScaleUp":{"Policies":{}}}"#,
                TOLERANCE_SCALE_UP_ANNOTATION: "1"
            }},
            "spec": {"maxReplicas": 2, "targetCPUUtilizationPercentage": 10},
            "status": {"currentReplicas": 1, "desiredReplicas": 1}
        });
        let v2 = hpa("autoscaling/v1", "autoscaling/v2", v1);
        assert_eq!(
            v2,
            json!({
                "kind": "HorizontalPodAutoscaler", "apiVersion": "autoscaling/v2",
                "metadata": {},
                "spec": {
                    "maxReplicas": 2,
                    "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 10}}}]
                },
                "status": {"currentReplicas": 1, "desiredReplicas": 1}
            })
        );
    }

    #[test]
    fn hpa_v1_annotations_decode_like_go() {
        // Case-insensitive keys, unknown keys ignored, null elements are zero values,
        // numeric quantities become strings.
        let v1 = json!({
            "kind": "HorizontalPodAutoscaler", "apiVersion": "autoscaling/v1",
            "metadata": {"annotations": {
                METRIC_SPECS_ANNOTATION: r#"[{"TYPE":"External","external":{"metricname":"q","targetValue":3,"extra":1}},null]"#,
                CONDITIONS_ANNOTATION: "[]"
            }},
            "spec": {"maxReplicas": 2}
        });
        let v2 = hpa("autoscaling/v1", "autoscaling/v2", v1);
        assert_eq!(
            v2["spec"]["metrics"],
            json!([
                {"type": "External", "external": {"metric": {"name": "q"}, "target": {"type": "Value", "value": "3"}}},
                {"type": ""}
            ])
        );
        assert_eq!(v2["status"], json!({"desiredReplicas": 0}));
    }

    #[test]
    fn hpa_v2_drops_stale_round_trip_annotations() {
        let mut v2 = v2_spec_with(json!([]));
        v2["metadata"]["annotations"] = json!({METRIC_SPECS_ANNOTATION: "[]", "x": "y"});
        let v1 = hpa("autoscaling/v2", "autoscaling/v1", v2);
        assert_eq!(v1["metadata"]["annotations"], json!({"x": "y"}));
    }

    #[test]
    fn hpa_odd_input_never_panics() {
        let odd = [
            json!(null),
            json!(1),
            json!("s"),
            json!(true),
            json!([1, "x", null]),
            json!({"k": [1]}),
        ];
        let paths: [&[&str]; 14] = [
            &["metadata"],
            &["metadata", "annotations"],
            &["spec"],
            &["spec", "metrics"],
            &["spec", "behavior"],
            &["spec", "behavior", "scaleUp"],
            &["spec", "behavior", "scaleUp", "policies"],
            &["spec", "targetCPUUtilizationPercentage"],
            &["status"],
            &["status", "currentMetrics"],
            &["status", "conditions"],
            &["spec", "metrics", "0"],
            &["spec", "metrics", "0", "resource"],
            &["spec", "metrics", "0", "resource", "target"],
        ];
        for path in paths {
            for value in &odd {
                let mut obj = full_v2();
                let mut slot = &mut obj;
                for key in path {
                    slot = if let Ok(i) = key.parse::<usize>() {
                        &mut slot[i]
                    } else {
                        &mut slot[*key]
                    };
                }
                *slot = value.clone();
                let v1 = hpa("autoscaling/v2", "autoscaling/v1", obj.clone());
                let _ = hpa("autoscaling/v1", "autoscaling/v2", v1.clone());
                obj["apiVersion"] = json!("autoscaling/v1");
                let _ = hpa("autoscaling/v1", "autoscaling/v2", obj);
                for key in [
                    METRIC_SPECS_ANNOTATION,
                    METRIC_STATUSES_ANNOTATION,
                    CONDITIONS_ANNOTATION,
                    BEHAVIOR_SPECS_ANNOTATION,
                ] {
                    let mut bad = v1.clone();
                    if bad["metadata"]["annotations"].is_object() {
                        bad["metadata"]["annotations"][key] = json!(value.to_string());
                        let _ = hpa("autoscaling/v1", "autoscaling/v2", bad);
                    }
                }
            }
        }
    }
}
