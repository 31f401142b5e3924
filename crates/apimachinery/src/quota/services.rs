//! Services and quota (upstream `pkg/quota/v1/evaluator/core/services.go`).

use serde_json::Value;

use super::resources::{self, ResourceList};
use super::str_at;
use crate::quantity::{Format, Quantity};

const SERVICE_RESOURCES: &[&str] = &[
    "count/services",
    "services",
    "services.nodeports",
    "services.loadbalancers",
];

/// `MatchingResources` of the service evaluator.
pub fn matching_resources(input: &[String]) -> Vec<String> {
    let own: Vec<String> = SERVICE_RESOURCES.iter().map(|s| s.to_string()).collect();
    resources::intersection(input, &own)
}

fn ports(svc: &Value) -> &[Value] {
    svc.pointer("/spec/ports")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// `GetQuotaServiceType`: `NodePort`, `LoadBalancer`, or empty for the rest (the
/// monitor replenishes quota when it changes).
pub fn quota_service_type(svc: &Value) -> &str {
    match str_at(svc, "/spec/type") {
        t @ ("NodePort" | "LoadBalancer") => t,
        _ => "",
    }
}

/// `Usage`: one service; node ports of NodePort and LoadBalancer services (only the
/// explicitly set ones when a LoadBalancer allocates none); one load balancer.
pub fn usage(svc: &Value) -> ResourceList {
    let n = |v: usize| Quantity::from_value(v as i64, Format::DecimalSi);
    let mut result = ResourceList::new();
    result.insert("services".into(), n(1));
    result.insert("count/services".into(), n(1));
    result.insert("services.loadbalancers".into(), Quantity::zero());
    result.insert("services.nodeports".into(), Quantity::zero());
    match str_at(svc, "/spec/type") {
        "NodePort" => {
            result.insert("services.nodeports".into(), n(ports(svc).len()));
        }
        "LoadBalancer" => {
            let allocate = svc
                .pointer("/spec/allocateLoadBalancerNodePorts")
                .and_then(Value::as_bool)
                .unwrap_or(true);
            let node_ports = if allocate {
                ports(svc).len()
            } else {
                ports(svc)
                    .iter()
                    .filter(|p| p.get("nodePort").and_then(Value::as_i64).unwrap_or(0) != 0)
                    .count()
            };
            result.insert("services.nodeports".into(), n(node_ports));
            result.insert("services.loadbalancers".into(), n(1));
        }
        _ => {}
    }
    result
}
