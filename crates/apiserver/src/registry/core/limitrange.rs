//! LimitRange (`core/v1`): what it does differently from the generic store.

use serde_json::Value;

use crate::registry::catalog::{Kind, Phase, ResourceDef, Strategy};
use crate::registry::validation::Ctx;
use apimachinery::field::Cause;
use apimachinery::names::NameRule;

/// The `core/v1` kind.
pub static KIND: Kind = Kind::new(&["limits"], &LimitRangeStrategy);

/// What LimitRange does differently.
pub struct LimitRangeStrategy;

impl Strategy for LimitRangeStrategy {
    fn default(&self, _def: &ResourceDef, obj: &mut Value, phase: Phase) {
        if let Some(o) = obj.as_object_mut() {
            defaults::apply(o, phase);
        }
    }

    fn validate(&self, def: &ResourceDef, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        let mut causes = Ctx::new(def, old).meta_only(obj, NameRule::Subdomain);
        causes.extend(validation::limit_range(obj));
        causes
    }
}

pub(crate) mod defaults {
    use crate::registry::defaults::prelude::*;

    /// The kind's defaults in `phase`.
    pub(crate) fn apply(o: &mut Obj, phase: Phase) {
        let _ = phase;
        if let Some(spec) = child(o, "spec") {
            each_obj(spec, "limits", limit_range_item);
        }
    }

    pub(crate) fn limit_range_item(item: &mut Obj) {
        if str_at(item, "type") == "Container" {
            let max = item.get("max").and_then(Value::as_object).cloned();
            let min = item.get("min").and_then(Value::as_object).cloned();
            let mut default = match item.get("default") {
                None | Some(Value::Null) => Map::new(),
                Some(Value::Object(d)) => d.clone(),
                Some(_) => return,
            };
            let mut default_request = match item.get("defaultRequest") {
                None | Some(Value::Null) => Map::new(),
                Some(Value::Object(d)) => d.clone(),
                Some(_) => return,
            };
            for (k, v) in max.iter().flatten() {
                if !default.contains_key(k) {
                    default.insert(k.clone(), v.clone());
                }
            }
            for (k, v) in &default {
                if !default_request.contains_key(k) {
                    default_request.insert(k.clone(), v.clone());
                }
            }
            for (k, v) in min.iter().flatten() {
                if !default_request.contains_key(k) {
                    default_request.insert(k.clone(), v.clone());
                }
            }
            if !default.is_empty() {
                item.insert("default".into(), Value::Object(default));
            }
            if !default_request.is_empty() {
                item.insert("defaultRequest".into(), Value::Object(default_request));
            }
        }
        for key in [
            "max",
            "min",
            "default",
            "defaultRequest",
            "maxLimitRequestRatio",
        ] {
            resource_list(item, key, true);
        }
    }
}

pub mod admission;

/// Upstream `ValidateLimitRange` (`pkg/apis/core/validation`), after the metadata.
pub(crate) mod validation {
    use serde_json::{Map, Value};

    use apimachinery::field::{self, Bad, Cause, ErrorList};
    use apimachinery::quantity::{self, Quantity};

    /// `resource.MaxMilliValue`.
    const MAX_MILLI_VALUE: i128 = (i64::MAX / 1000) as i128;

    /// `helper.IsStandardContainerResourceName`.
    fn standard_container_resource(name: &str) -> bool {
        matches!(name, "cpu" | "memory" | "ephemeral-storage") || name.starts_with("hugepages-")
    }

    /// `helper.IsStandardResourceName`.
    fn standard_resource(name: &str) -> bool {
        matches!(
            name,
            "cpu"
                | "memory"
                | "ephemeral-storage"
                | "requests.cpu"
                | "requests.memory"
                | "requests.ephemeral-storage"
                | "limits.cpu"
                | "limits.memory"
                | "limits.ephemeral-storage"
                | "pods"
                | "services"
                | "replicationcontrollers"
                | "resourcequotas"
                | "secrets"
                | "configmaps"
                | "persistentvolumeclaims"
                | "storage"
                | "requests.storage"
                | "services.nodeports"
                | "services.loadbalancers"
        ) || name.starts_with("hugepages-")
            || name.starts_with("requests.hugepages-")
    }

    /// `validateResourceName`.
    fn resource_name(e: &mut ErrorList, name: &str, path: &str) {
        let msgs = apimachinery::names::is_qualified_name(name);
        if !msgs.is_empty() {
            for m in msgs {
                e.invalid(path, Bad::typed(name), &m);
            }
            return;
        }
        if !name.contains('/') && !standard_resource(name) {
            e.invalid(
                path,
                Bad::typed(name),
                "must be a standard resource type or fully qualified",
            );
        }
    }

    /// `validateLimitRangeResourceName`: container resource names for Pod and Container
    /// items (`validateContainerResourceName`), any resource name otherwise.
    fn limit_resource_name(e: &mut ErrorList, limit_type: &str, name: &str, path: &str) {
        let before = e.len();
        resource_name(e, name, path);
        if matches!(limit_type, "Pod" | "Container")
            && e.len() == before
            && !name.contains('/')
            && !standard_container_resource(name)
        {
            e.invalid(
                path,
                Bad::typed(name),
                "must be a standard resource for containers",
            );
        }
    }

    /// `validateLimitRangeTypeName`.
    fn type_name(e: &mut ErrorList, value: &str, path: &str) {
        let msgs = apimachinery::names::is_qualified_name(value);
        if !msgs.is_empty() {
            for m in msgs {
                e.invalid(path, Bad::typed(value), &m);
            }
            return;
        }
        if !value.contains('/') && !matches!(value, "Pod" | "Container" | "PersistentVolumeClaim") {
            e.invalid(
                path,
                Bad::typed(value),
                "must be a standard limit type or fully qualified",
            );
        }
    }

    fn list(item: &Map<String, Value>, key: &str) -> Vec<(String, Quantity)> {
        let mut out: Vec<(String, Quantity)> = item
            .get(key)
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .filter_map(|(k, v)| quantity::from_json(v).map(|q| (k.clone(), q)))
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    fn find(l: &[(String, Quantity)], k: &str) -> Option<Quantity> {
        l.iter().find(|(n, _)| n == k).map(|(_, q)| *q)
    }

    /// A quantity as the bad value of an error (its canonical string).
    fn bad(q: Quantity) -> Bad {
        Bad::Str(q.canonical())
    }

    /// The checks of `ValidateLimitRange` past the metadata; keys in sorted order (upstream
    /// ranges over Go maps).
    pub(crate) fn limit_range(obj: &Value) -> Vec<Cause> {
        let mut e = ErrorList::default();
        let limits = obj
            .pointer("/spec/limits")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let mut types: Vec<String> = Vec::new();
        for (i, item) in limits.iter().enumerate() {
            let Some(item) = item.as_object() else {
                continue;
            };
            let idx = format!("spec.limits[{i}]");
            let limit_type = item.get("type").and_then(Value::as_str).unwrap_or("");
            type_name(&mut e, limit_type, &field::child(&idx, "type"));
            if types.iter().any(|t| t == limit_type) {
                e.duplicate(&field::child(&idx, "type"), Bad::typed(limit_type));
            }
            types.push(limit_type.to_string());

            let max = list(item, "max");
            let min = list(item, "min");
            let mut keys: Vec<String> = Vec::new();
            for (key, l) in [("max", &max), ("min", &min)] {
                for (k, _) in l {
                    limit_resource_name(
                        &mut e,
                        limit_type,
                        k,
                        &field::key(&field::child(&idx, key), k),
                    );
                    keys.push(k.clone());
                }
            }
            let (mut defaults, mut default_requests) = (Vec::new(), Vec::new());
            if limit_type == "Pod" {
                for key in ["default", "defaultRequest"] {
                    if item
                        .get(key)
                        .and_then(Value::as_object)
                        .is_some_and(|m| !m.is_empty())
                    {
                        e.forbidden(
                            &field::child(&idx, key),
                            "may not be specified when `type` is 'Pod'",
                        );
                    }
                }
            } else {
                defaults = list(item, "default");
                default_requests = list(item, "defaultRequest");
                for (key, l) in [
                    ("default", &defaults),
                    ("defaultRequest", &default_requests),
                ] {
                    for (k, _) in l {
                        limit_resource_name(
                            &mut e,
                            limit_type,
                            k,
                            &field::key(&field::child(&idx, key), k),
                        );
                        keys.push(k.clone());
                    }
                }
            }
            if limit_type == "PersistentVolumeClaim"
                && find(&min, "storage").is_none()
                && find(&max, "storage").is_none()
            {
                e.required(
                    &field::child(&idx, "limits"),
                    "either minimum or maximum storage value is required, but neither was provided",
                );
            }
            let ratios = list(item, "maxLimitRequestRatio");
            for (k, _) in &ratios {
                limit_resource_name(
                    &mut e,
                    limit_type,
                    k,
                    &field::key(&field::child(&idx, "maxLimitRequestRatio"), k),
                );
                keys.push(k.clone());
            }
            keys.sort();
            keys.dedup();
            for k in &keys {
                let at = |key: &str| field::key(&field::child(&idx, key), k);
                let (mn, mx) = (find(&min, k), find(&max, k));
                let (df, dr) = (find(&defaults, k), find(&default_requests, k));
                let ratio = find(&ratios, k);
                let gt = |a: Quantity, b: Quantity| a.nanos() > b.nanos();
                if let (Some(mn), Some(mx)) = (mn, mx) {
                    if gt(mn, mx) {
                        e.invalid(
                            &at("min"),
                            bad(mn),
                            &format!(
                                "min value {} is greater than max value {}",
                                mn.canonical(),
                                mx.canonical()
                            ),
                        );
                    }
                }
                if let (Some(dr), Some(mn)) = (dr, mn) {
                    if gt(mn, dr) {
                        e.invalid(
                            &at("defaultRequest"),
                            bad(dr),
                            &format!(
                                "min value {} is greater than default request value {}",
                                mn.canonical(),
                                dr.canonical()
                            ),
                        );
                    }
                }
                if let (Some(dr), Some(mx)) = (dr, mx) {
                    if gt(dr, mx) {
                        e.invalid(
                            &at("defaultRequest"),
                            bad(dr),
                            &format!(
                                "default request value {} is greater than max value {}",
                                dr.canonical(),
                                mx.canonical()
                            ),
                        );
                    }
                }
                if let (Some(dr), Some(df)) = (dr, df) {
                    if gt(dr, df) {
                        e.invalid(
                            &at("defaultRequest"),
                            bad(dr),
                            &format!(
                                "default request value {} is greater than default limit value {}",
                                dr.canonical(),
                                df.canonical()
                            ),
                        );
                    }
                }
                if let (Some(df), Some(mn)) = (df, mn) {
                    if gt(mn, df) {
                        e.invalid(
                            &at("default"),
                            bad(mn),
                            &format!(
                                "min value {} is greater than default value {}",
                                mn.canonical(),
                                df.canonical()
                            ),
                        );
                    }
                }
                if let (Some(df), Some(mx)) = (df, mx) {
                    if gt(df, mx) {
                        e.invalid(
                            &at("default"),
                            bad(mx),
                            &format!(
                                "default value {} is greater than max value {}",
                                df.canonical(),
                                mx.canonical()
                            ),
                        );
                    }
                }
                if let Some(r) = ratio {
                    if r.nanos() < 1_000_000_000 {
                        e.invalid(
                            &at("maxLimitRequestRatio"),
                            bad(r),
                            &format!("ratio {} is less than 1", r.canonical()),
                        );
                    }
                    if let (Some(mn), Some(mx)) = (mn, mx) {
                        let (mut ratio_value, mut min_value, mut max_value) =
                            (r.value() as f64, mn.value(), mx.value());
                        if r.value() < MAX_MILLI_VALUE
                            && min_value < MAX_MILLI_VALUE
                            && max_value < MAX_MILLI_VALUE
                        {
                            ratio_value = r.milli_value() as f64 / 1000.0;
                            min_value = mn.milli_value();
                            max_value = mx.milli_value();
                        }
                        let limit = max_value as f64 / min_value as f64;
                        if ratio_value > limit {
                            e.invalid(
                                &at("maxLimitRequestRatio"),
                                bad(r),
                                &format!(
                                    "ratio {} is greater than max/min = {limit:.6}",
                                    r.canonical()
                                ),
                            );
                        }
                    }
                }
                // resources that cannot be overcommitted (hugepages, extended resources):
                // default and defaultRequest must match
                let overcommit = matches!(k.as_str(), "cpu" | "memory" | "ephemeral-storage")
                    || !(k.starts_with("hugepages-")
                        || k.contains('/') && !k.contains("kubernetes.io/"));
                if let (false, Some(df), Some(dr)) = (overcommit, df, dr) {
                    if df.nanos() != dr.nanos() {
                        e.invalid(
                            &at("defaultRequest"),
                            bad(dr),
                            &format!(
                                "default value {} must equal to defaultRequest value {} in {k}",
                                df.canonical(),
                                dr.canonical()
                            ),
                        );
                    }
                }
            }
        }
        e.0
    }

    #[cfg(test)]
    mod tests {
        use super::*;
        use serde_json::json;

        fn errs(limits: Value) -> Vec<String> {
            limit_range(&json!({"spec": {"limits": limits}}))
                .into_iter()
                .map(|c| format!("{}: {}", c.field, c.message))
                .collect()
        }

        // after upstream's TestValidateLimitRange success and failure cases
        #[test]
        fn valid_limit_ranges() {
            let ok = [
                json!([{"type": "Pod", "max": {"cpu": "100m", "memory": "10000"}, "min": {"cpu": "5m", "memory": "100"}, "maxLimitRequestRatio": {"cpu": "10"}},
                       {"type": "Container", "max": {"cpu": "100m"}, "min": {"cpu": "5m"}, "default": {"cpu": "50m"}, "defaultRequest": {"cpu": "10m"}, "maxLimitRequestRatio": {"cpu": "20"}}]),
                json!([{"type": "Container", "default": {"cpu": "100m"}, "defaultRequest": {"cpu": "100m"}}]),
                json!([{"type": "PersistentVolumeClaim", "max": {"storage": "10Gi"}, "min": {"storage": "5Gi"}}]),
                json!([{"type": "PersistentVolumeClaim", "min": {"storage": "5Gi"}}]),
                json!([{"type": "Container", "max": {"cpu": "100m"}, "min": {"cpu": "100m"}, "default": {"cpu": "100m"}, "defaultRequest": {"cpu": "100m"}}]),
                json!([{"type": "Container", "default": {"hugepages-2Mi": "4Mi"}, "defaultRequest": {"hugepages-2Mi": "4Mi"}}]),
                json!([{"type": "Container", "max": {"example.com/gpu": "2"}}]),
            ];
            for limits in ok {
                assert_eq!(errs(limits.clone()), Vec::<String>::new(), "{limits}");
            }
        }

        #[test]
        fn invalid_limit_ranges() {
            let cases = [
                (json!([{"type": "Pod"}, {"type": "Pod"}]), "spec.limits[1].type: Duplicate value: \"Pod\""),
                (json!([{"type": "Pod", "default": {"cpu": "10m"}}]), "spec.limits[0].default: Forbidden: may not be specified when `type` is 'Pod'"),
                (json!([{"type": "Pod", "defaultRequest": {"cpu": "10m"}}]), "spec.limits[0].defaultRequest: Forbidden: may not be specified when `type` is 'Pod'"),
                (json!([{"type": "Container", "max": {"cpu": "1"}, "min": {"cpu": "2"}}]), "spec.limits[0].min[cpu]: Invalid value: \"2\": min value 2 is greater than max value 1"),
                (json!([{"type": "Container", "min": {"cpu": "400m"}, "defaultRequest": {"cpu": "200m"}}]), "spec.limits[0].defaultRequest[cpu]: Invalid value: \"200m\": min value 400m is greater than default request value 200m"),
                (json!([{"type": "Container", "max": {"memory": "1Gi"}, "defaultRequest": {"memory": "2Gi"}}]), "spec.limits[0].defaultRequest[memory]: Invalid value: \"2Gi\": default request value 2Gi is greater than max value 1Gi"),
                (json!([{"type": "Container", "default": {"cpu": "200m"}, "defaultRequest": {"cpu": "400m"}}]), "spec.limits[0].defaultRequest[cpu]: Invalid value: \"400m\": default request value 400m is greater than default limit value 200m"),
                (json!([{"type": "Container", "max": {"cpu": "1"}, "default": {"cpu": "2"}}]), "spec.limits[0].default[cpu]: Invalid value: \"1\": default value 2 is greater than max value 1"),
                (json!([{"type": "Container", "maxLimitRequestRatio": {"cpu": "800m"}}]), "spec.limits[0].maxLimitRequestRatio[cpu]: Invalid value: \"800m\": ratio 800m is less than 1"),
                (json!([{"type": "Container", "min": {"cpu": "1"}, "max": {"cpu": "2"}, "maxLimitRequestRatio": {"cpu": "3"}}]), "spec.limits[0].maxLimitRequestRatio[cpu]: Invalid value: \"3\": ratio 3 is greater than max/min = 2.000000"),
                (json!([{"type": "PersistentVolumeClaim", "max": {"cpu": "1"}}]), "spec.limits[0].limits: Required value: either minimum or maximum storage value is required, but neither was provided"),
                (json!([{"type": "Container", "default": {"hugepages-2Mi": "4Mi"}, "defaultRequest": {"hugepages-2Mi": "2Mi"}}]), "spec.limits[0].defaultRequest[hugepages-2Mi]: Invalid value: \"2Mi\": default value 4Mi must equal to defaultRequest value 2Mi in hugepages-2Mi"),
                (json!([{"type": "Container", "max": {"storage": "1Gi"}}]), "spec.limits[0].max[storage]: Invalid value: \"storage\": must be a standard resource for containers"),
                (json!([{"type": "Widget"}]), "spec.limits[0].type: Invalid value: \"Widget\": must be a standard limit type or fully qualified"),
            ];
            for (limits, want) in cases {
                assert_eq!(errs(limits.clone()), vec![want.to_string()], "{limits}");
            }
        }
    }
}
