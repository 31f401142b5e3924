//! HorizontalPodAutoscaler (`autoscaling/v2`): what it does differently from the generic store.

use serde_json::Value;

use crate::registry::catalog::{Kind, Phase, ResourceDef, Strategy, Subresource};
use crate::registry::table::Printer;
use crate::registry::validation::Ctx;
use apimachinery::field::Cause;
use apimachinery::names::NameRule;

/// The `autoscaling/v2` kind.
pub static KIND: Kind = Kind::new(&["hpa"], &HorizontalPodAutoscalerStrategy).in_all();

/// `autoscaling/v1`, served from `autoscaling/v2` storage.
pub static KIND_V1: Kind = Kind::new(&["hpa"], &HorizontalPodAutoscalerStrategy)
    .in_all()
    .stored_as("autoscaling", "v2");

/// What HorizontalPodAutoscaler does differently.
pub struct HorizontalPodAutoscalerStrategy;

impl Strategy for HorizontalPodAutoscalerStrategy {
    fn subresources(&self) -> &'static [Subresource] {
        &[Subresource::Status]
    }

    fn default(&self, def: &ResourceDef, obj: &mut Value, phase: Phase) {
        if let Some(o) = obj.as_object_mut() {
            match def.version {
                "v1" => defaults::hpa_v1(o, phase),
                _ => defaults::hpa_v2(o, phase),
            }
        }
    }

    fn validate(&self, def: &ResourceDef, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        Ctx::new(def, old).meta_only(obj, NameRule::Subdomain)
    }

    fn printer(&self) -> Option<&'static Printer> {
        Some(&printer::HPA)
    }

    fn convert(&self, obj: Value, from: &str, to: &str) -> Result<Value, String> {
        super::conversion::convert(from, to, obj)
    }
}

pub(crate) mod defaults {
    use crate::registry::defaults::prelude::*;

    pub(crate) fn hpa_v1(o: &mut Obj, phase: Phase) {
        let has_metrics_annotation = o
            .get("metadata")
            .and_then(|m| m.get("annotations"))
            .and_then(|a| a.get("autoscaling.alpha.kubernetes.io/metrics"))
            .is_some();
        if let Some(spec) = child(o, "spec") {
            default_ptr(spec, "minReplicas", json!(1));
            // Applied while converting to the stored autoscaling/v2 form and back.
            if !has_metrics_annotation {
                default_ptr(spec, "targetCPUUtilizationPercentage", json!(80));
            }
        }
        if phase.create() {
            status_shape(
                o,
                &[("currentReplicas", json!(0)), ("desiredReplicas", json!(0))],
            );
        }
    }

    pub(crate) fn hpa_v2(o: &mut Obj, phase: Phase) {
        if let Some(spec) = child(o, "spec") {
            default_ptr(spec, "minReplicas", json!(1));
            if is_empty_coll(spec, "metrics") {
                spec.insert(
                    "metrics".into(),
                    json!([{
                        "type": "Resource",
                        "resource": {
                            "name": "cpu",
                            "target": {"type": "Utilization", "averageUtilization": 80}
                        }
                    }]),
                );
            }
            if let Some(behavior) = child(spec, "behavior") {
                let up = json!({
                    "stabilizationWindowSeconds": 0,
                    "selectPolicy": "Max",
                    "policies": [
                        {"type": "Pods", "value": 4, "periodSeconds": 15},
                        {"type": "Percent", "value": 100, "periodSeconds": 15}
                    ]
                });
                let down = json!({
                    "selectPolicy": "Max",
                    "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]
                });
                scaling_rules(behavior, "scaleUp", up);
                scaling_rules(behavior, "scaleDown", down);
            }
            each_obj(spec, "metrics", |m| {
                for src in [
                    "object",
                    "pods",
                    "resource",
                    "containerResource",
                    "external",
                ] {
                    if let Some(t) = child(m, src).and_then(|s| child(s, "target")) {
                        canonical_quantity_at(t, "value", false);
                        canonical_quantity_at(t, "averageValue", false);
                    }
                }
            });
        }
        if phase.create() {
            status_shape(o, &[("desiredReplicas", json!(0))]);
        }
    }

    /// Fill unset fields of one HPA scaling-rules stanza from `defaults`.
    pub(crate) fn scaling_rules(behavior: &mut Obj, key: &str, defaults: Value) {
        let Value::Object(mut rules) = defaults else {
            return;
        };
        match behavior.get(key) {
            None | Some(Value::Null) => {}
            Some(Value::Object(given)) => {
                for field in [
                    "selectPolicy",
                    "stabilizationWindowSeconds",
                    "policies",
                    "tolerance",
                ] {
                    if let Some(v) = given.get(field).filter(|v| !v.is_null()) {
                        rules.insert(field.into(), v.clone());
                    }
                }
            }
            Some(_) => return,
        }
        behavior.insert(key.into(), Value::Object(rules));
    }
}

pub(crate) mod printer {
    use crate::registry::table::prelude::*;

    /// One HPA metric as `current/target` (upstream `formatHPAMetrics`).
    fn hpa_metric(spec: &Value, status: Option<&Value>) -> String {
        let q = |v: Option<&Value>| v.map(int_or_string).unwrap_or_default();
        let ty = spec.get("type").and_then(Value::as_str).unwrap_or("");
        let unknown = || "<unknown>".to_string();
        let src = |key: &str| spec.get(key).cloned().unwrap_or(Value::Null);
        let cur = |key: &str| status.and_then(|s| s.get(key)).filter(|v| !v.is_null());
        match ty {
            "External" | "Object" => {
                let key = if ty == "External" {
                    "external"
                } else {
                    "object"
                };
                let target = src(key);
                if let Some(avg) = target.pointer("/target/averageValue") {
                    let current = cur(key)
                        .and_then(|c| c.pointer("/current/averageValue"))
                        .map(|v| q(Some(v)))
                        .unwrap_or_else(unknown);
                    format!("{current}/{} (avg)", q(Some(avg)))
                } else {
                    let current = cur(key)
                        .map(|c| q(c.pointer("/current/value")))
                        .unwrap_or_else(unknown);
                    format!("{current}/{}", q(target.pointer("/target/value")))
                }
            }
            "Pods" => {
                let current = cur("pods")
                    .map(|c| q(c.pointer("/current/averageValue")))
                    .unwrap_or_else(unknown);
                format!("{current}/{}", q(spec.pointer("/pods/target/averageValue")))
            }
            "Resource" | "ContainerResource" => {
                let key = if ty == "Resource" {
                    "resource"
                } else {
                    "containerResource"
                };
                let target = src(key);
                let resource = target.get("name").and_then(Value::as_str).unwrap_or("");
                if let Some(avg) = target.pointer("/target/averageValue") {
                    let current = cur(key)
                        .map(|c| q(c.pointer("/current/averageValue")))
                        .unwrap_or_else(unknown);
                    format!("{resource}: {current}/{}", q(Some(avg)))
                } else {
                    let current = cur(key)
                        .and_then(|c| c.pointer("/current/averageUtilization"))
                        .and_then(Value::as_i64)
                        .map(|u| format!("{u}%"))
                        .unwrap_or_else(unknown);
                    let target = target
                        .pointer("/target/averageUtilization")
                        .and_then(Value::as_i64)
                        .map(|u| format!("{u}%"))
                        .unwrap_or_else(|| "<auto>".into());
                    format!("{resource}: {current}/{target}")
                }
            }
            _ => "<unknown type>".into(),
        }
    }

    pub(crate) fn hpa_metrics(v: &Value) -> String {
        let specs = arr(v, "/spec/metrics");
        if specs.is_empty() {
            return "<none>".into();
        }
        let statuses = arr(v, "/status/currentMetrics");
        let list: Vec<String> = specs
            .iter()
            .enumerate()
            .map(|(i, spec)| hpa_metric(spec, statuses.get(i)))
            .collect();
        const MAX: usize = 2;
        if list.len() > MAX {
            format!("{} + {} more...", list[..MAX].join(", "), list.len() - MAX)
        } else {
            list.join(", ")
        }
    }

    const HPA_SPEC: &str = "io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerSpec";

    /// HorizontalPodAutoscalers (printed from `autoscaling/v2` storage for both versions).
    pub(crate) static HPA: Printer = Printer {
        columns: &[
            NAME,
            string("Reference", field(HPA_SPEC, "scaleTargetRef")),
            string("Targets", field(HPA_SPEC, "metrics")),
            string("MinPods", field(HPA_SPEC, "minReplicas")),
            string("MaxPods", field(HPA_SPEC, "maxReplicas")),
            string(
                "Replicas",
                field(
                    "io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerStatus",
                    "currentReplicas",
                ),
            ),
            AGE,
        ],
        print: |v, now| {
            let min = v
                .pointer("/spec/minReplicas")
                .and_then(Value::as_i64)
                .map_or_else(|| "<unset>".to_string(), |m| m.to_string());
            Row::of(vec![
                name(v),
                json!(format!(
                    "{}/{}",
                    s(v, "/spec/scaleTargetRef/kind"),
                    s(v, "/spec/scaleTargetRef/name")
                )),
                json!(hpa_metrics(v)),
                json!(min),
                json!(int(v, "/spec/maxReplicas")),
                json!(int(v, "/status/currentReplicas")),
                age(v, now),
            ])
        },
    };
}
