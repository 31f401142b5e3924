//! `metrics.k8s.io/v1beta1` as metrics-server serves it (its `pkg/api/{node,pod}.go`):
//! discovery, `nodes` (NodeMetrics) and `pods` (PodMetrics) with get and list, label and
//! field selectors (object metadata fields only, applied after listing, as
//! metrics-server does), NotFound as metrics-server answers it, and `Table` output (its
//! `table.go`). The usage itself comes from [`crate::registry::metrics`].
//!
//! The group is served when [`crate::server::Config::metrics_api`] is on (`coxswain up`
//! turns it on, as k3s bundles metrics-server): a bare kube-apiserver does not list it,
//! and `coxswain apiserver` answers discovery as one does.

use std::collections::HashMap;

use axum::http::{Method, StatusCode};
use chrono::Utc;
use serde_json::{json, Value};

use super::negotiate::Rendering;
use super::Reply;
use crate::endpoints::request::Query;
use crate::endpoints::table::IncludeObject;
use crate::registry::catalog::Catalog;
use crate::registry::metrics::{self as model, Resource, GROUP, VERSION};
use crate::storage::store::{Store, Table};
use apimachinery::selector::{FieldSelector, LabelSelector};
use apimachinery::status::{ApiError, ApiResult};

/// The `/apis` `APIGroupList` entry (and, with `kind`, the `/apis/metrics.k8s.io` document).
pub fn group_entry() -> Value {
    let gv = json!({"groupVersion": format!("{GROUP}/{VERSION}"), "version": VERSION});
    json!({"name": GROUP, "versions": [gv.clone()], "preferredVersion": gv})
}

/// `/apis/metrics.k8s.io`.
pub fn group() -> Value {
    let mut g = group_entry();
    g["kind"] = json!("APIGroup");
    g["apiVersion"] = json!("v1");
    g
}

/// `/apis/metrics.k8s.io/v1beta1`.
pub fn resource_list() -> Value {
    json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": format!("{GROUP}/{VERSION}"),
        "resources": [
            {"name": "nodes", "singularName": "", "namespaced": false, "kind": "NodeMetrics", "verbs": ["get", "list"]},
            {"name": "pods", "singularName": "", "namespaced": true, "kind": "PodMetrics", "verbs": ["get", "list"]},
        ],
    })
}

/// The group in aggregated discovery (`APIGroupDiscovery`).
pub fn aggregated_group() -> Value {
    let resource = |plural: &str, kind: &str, scope: &str| {
        json!({
            "resource": plural,
            "responseKind": {"group": "", "kind": kind, "version": ""},
            "scope": scope,
            "singularResource": "",
            "verbs": ["get", "list"],
        })
    };
    json!({
        "metadata": {"name": GROUP},
        "versions": [{
            "freshness": "Current",
            "resources": [
                resource("nodes", "NodeMetrics", "Cluster"),
                resource("pods", "PodMetrics", "Namespaced"),
            ],
            "version": VERSION,
        }],
    })
}

/// What a path under `/apis/metrics.k8s.io` names.
#[derive(Debug, PartialEq, Eq)]
enum MetricsPath<'a> {
    Group,
    ResourceList,
    Nodes(Option<&'a str>),
    /// Namespace (`None`: all namespaces), pod name.
    Pods(Option<&'a str>, Option<&'a str>),
    /// Nothing the group serves.
    Unknown,
}

fn parse_path(path: &str) -> Option<MetricsPath<'_>> {
    let rest = path.strip_prefix("/apis/")?.strip_prefix(GROUP)?;
    let parts: Vec<&str> = rest.split('/').filter(|s| !s.is_empty()).collect();
    if !rest.is_empty() && !rest.starts_with('/') {
        return None;
    }
    match parts.as_slice() {
        [] => Some(MetricsPath::Group),
        [VERSION] => Some(MetricsPath::ResourceList),
        [VERSION, "nodes"] => Some(MetricsPath::Nodes(None)),
        [VERSION, "nodes", name] => Some(MetricsPath::Nodes(Some(name))),
        [VERSION, "pods"] => Some(MetricsPath::Pods(None, None)),
        [VERSION, "namespaces", ns, "pods"] => Some(MetricsPath::Pods(Some(ns), None)),
        [VERSION, "namespaces", ns, "pods", name] => Some(MetricsPath::Pods(Some(ns), Some(name))),
        _ => Some(MetricsPath::Unknown),
    }
}

/// Whether `path` belongs to the metrics group.
pub fn is_metrics_path(path: &str) -> bool {
    path.strip_prefix("/apis/")
        .and_then(|r| r.strip_prefix(GROUP))
        .is_some_and(|r| r.is_empty() || r.starts_with('/'))
}

struct Selectors {
    labels: Option<LabelSelector>,
    fields: Option<FieldSelector>,
}

impl Selectors {
    fn parse(query: &Query) -> ApiResult<Selectors> {
        let labels = match query.get("labelSelector") {
            Some(s) => {
                Some(LabelSelector::parse(s).map_err(|e| ApiError::bad_request(e.to_string()))?)
            }
            None => None,
        };
        let fields = match query.get("fieldSelector") {
            Some(s) => {
                Some(FieldSelector::parse(s).map_err(|e| ApiError::bad_request(e.to_string()))?)
            }
            None => None,
        };
        Ok(Selectors { labels, fields })
    }

    /// metrics-server matches labels through its lister and only the object metadata
    /// fields (`metadata.name`, and `metadata.namespace` for pods) by hand; any other
    /// field reads as empty.
    fn matches(&self, obj: &Value) -> bool {
        let labels_ok = self.labels.as_ref().is_none_or(|l| {
            let empty = serde_json::Map::new();
            l.matches_map(
                obj.pointer("/metadata/labels")
                    .and_then(Value::as_object)
                    .unwrap_or(&empty),
            )
        });
        labels_ok
            && self.fields.as_ref().is_none_or(|f| {
                f.matches(|field| match field {
                    "metadata.name" | "metadata.namespace" => obj
                        .pointer(&format!("/{}", field.replace('.', "/")))
                        .and_then(Value::as_str)
                        .map(str::to_string),
                    _ => None,
                })
            })
    }
}

fn table_of(store: &Store, plural: &str) -> Table {
    let key = Catalog::builtin()
        .lookup("", "v1", plural)
        .map(|d| d.storage_key())
        .unwrap_or_else(|| plural.to_string());
    store.snapshot(&key).table
}

fn values(table: &Table, prefix: Option<&str>) -> Vec<Value> {
    table
        .iter()
        .filter(|(k, _)| prefix.is_none_or(|p| k.starts_with(p)))
        .filter_map(|(_, o)| o.value().ok())
        .collect()
}

fn name_of(obj: &Value) -> &str {
    obj.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// Answer a request under `/apis/metrics.k8s.io`.
pub fn serve(
    store: &Store,
    method: &Method,
    path: &str,
    query: &Query,
    accept: &str,
) -> ApiResult<Reply> {
    let Some(route) = parse_path(path) else {
        return Err(ApiError::path_not_found());
    };
    let (plural, kind) = match route {
        MetricsPath::Group => return Ok(Reply::json(StatusCode::OK, &group())),
        MetricsPath::ResourceList => return Ok(Reply::json(StatusCode::OK, &resource_list())),
        MetricsPath::Unknown => return Err(ApiError::path_not_found()),
        MetricsPath::Nodes(_) => ("nodes", "NodeMetrics"),
        MetricsPath::Pods(..) => ("pods", "PodMetrics"),
    };
    if method != Method::GET {
        return Err(ApiError::method_not_allowed(
            "the server does not allow this method on the requested resource",
        ));
    }
    let rendering = match Rendering::negotiate(accept)? {
        Rendering::Table(opts) => Rendering::Table(opts.with_query(query)?),
        r => r,
    };
    let is_get = matches!(
        route,
        MetricsPath::Nodes(Some(_)) | MetricsPath::Pods(_, Some(_))
    );
    if !is_get && matches!(query.get("watch"), Some("true" | "1")) {
        return Err(ApiError::new(
            405,
            "MethodNotAllowed",
            format!("watch is not supported on resources of kind \"{plural}.{GROUP}\""),
        ));
    }
    let now = Utc::now();
    let nodes = table_of(store, "nodes");
    let reporting_nodes: HashMap<String, bool> = nodes
        .iter()
        .filter_map(|(k, o)| o.value().ok().map(|v| (k.clone(), model::node_reports(&v))))
        .collect();
    let pod_reports = |pod: &Value| {
        model::pod_reports(pod)
            && pod
                .pointer("/spec/nodeName")
                .and_then(Value::as_str)
                .and_then(|n| reporting_nodes.get(n))
                .copied()
                .unwrap_or(false)
    };
    let mut warnings: Vec<String> = Vec::new();
    let items: Vec<Value> = match route {
        MetricsPath::Nodes(name) => {
            let selected: Vec<Value> = match name {
                Some(n) => {
                    let node = nodes
                        .get(n)
                        .and_then(|o| o.value().ok())
                        .ok_or_else(|| ApiError::not_found("", "nodes", n))?;
                    vec![node]
                }
                None => {
                    let sel = Selectors::parse(query)?;
                    values(&nodes, None)
                        .into_iter()
                        .filter(|n| sel.matches(n))
                        .collect()
                }
            };
            let mut sums: HashMap<String, (i128, i128)> = HashMap::new();
            for pod in values(&table_of(store, "pods"), None) {
                if !pod_reports(&pod) {
                    continue;
                }
                let node = pod
                    .pointer("/spec/nodeName")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                if !selected.iter().any(|n| name_of(n) == node) {
                    continue;
                }
                let usage = model::pod_usage(&pod, now);
                warnings.extend(usage.warnings.iter().cloned());
                let (c, m) = usage.total();
                let e = sums.entry(node.to_string()).or_default();
                e.0 += c;
                e.1 += m;
            }
            let out: Vec<Value> = selected
                .iter()
                .filter(|n| model::node_reports(n))
                .map(|n| {
                    let sum = sums.get(name_of(n)).copied().unwrap_or((0, 0));
                    model::node_metrics(n, sum, now)
                })
                .collect();
            if let Some(n) = name {
                if out.is_empty() {
                    return Err(ApiError::not_found(GROUP, "nodemetrics", n));
                }
            }
            out
        }
        MetricsPath::Pods(ns, name) => {
            let pods = table_of(store, "pods");
            let selected: Vec<Value> = match (ns, name) {
                (Some(ns), Some(n)) => {
                    let pod = pods
                        .get(&format!("{ns}/{n}"))
                        .and_then(|o| o.value().ok())
                        .ok_or_else(|| ApiError::not_found("", "pods", n))?;
                    vec![pod]
                }
                _ => {
                    let sel = Selectors::parse(query)?;
                    let prefix = ns.map(|ns| format!("{ns}/"));
                    values(&pods, prefix.as_deref())
                        .into_iter()
                        .filter(|p| sel.matches(p))
                        .collect()
                }
            };
            let out: Vec<Value> = selected
                .iter()
                .filter(|p| pod_reports(p))
                .map(|p| {
                    let usage = model::pod_usage(p, now);
                    warnings.extend(usage.warnings.iter().cloned());
                    model::pod_metrics(p, &usage, now)
                })
                .collect();
            if let (Some(ns), Some(n)) = (ns, name) {
                if out.is_empty() {
                    return Err(ApiError::not_found(
                        GROUP,
                        "podmetrics",
                        &format!("{ns}/{n}"),
                    ));
                }
            }
            out
        }
        MetricsPath::Group | MetricsPath::ResourceList | MetricsPath::Unknown => Vec::new(),
    };
    for w in &warnings {
        tracing::warn!("{w}");
    }
    let body = match rendering {
        Rendering::Table(opts) => table(&items, opts.version.api_version(), opts.include),
        Rendering::Metadata => {
            let partial = |o: &Value| json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": o["metadata"]});
            if is_get {
                partial(&items[0])
            } else {
                let list: Vec<Value> = items.iter().map(partial).collect();
                json!({"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1", "metadata": {}, "items": list})
            }
        }
        Rendering::Full if is_get => items.into_iter().next().unwrap_or(Value::Null),
        Rendering::Full => json!({
            "kind": format!("{kind}List"),
            "apiVersion": format!("{GROUP}/{VERSION}"),
            "metadata": {},
            "items": items,
        }),
    };
    Ok(Reply::json(StatusCode::OK, &body).with_warnings(warnings))
}

/// metrics-server's `Table`: `Name`, one column per usage resource (sorted), `Window`;
/// a pod's row sums its containers.
fn table(items: &[Value], api_version: &str, include: IncludeObject) -> Value {
    let columns = json!([
        {"name": "Name", "type": "string", "format": "name", "description": "Name of the resource", "priority": 0},
        {"name": "cpu", "type": "string", "format": "quantity", "description": "", "priority": 0},
        {"name": "memory", "type": "string", "format": "quantity", "description": "", "priority": 0},
        {"name": "Window", "type": "string", "format": "duration", "description": "", "priority": 0},
    ]);
    let rows: Vec<Value> = items
        .iter()
        .map(|item| {
            let (cpu, memory) = match item.get("usage") {
                Some(u) => (
                    u["cpu"].as_str().unwrap_or("0").to_string(),
                    u["memory"].as_str().unwrap_or("0").to_string(),
                ),
                None => {
                    let sum = |r: Resource, key: &str| {
                        let total: i128 = item["containers"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .filter_map(|c| c["usage"][key].as_str())
                            .filter_map(apimachinery::quantity::parse)
                            .map(|q| match r {
                                Resource::Cpu => q.nanos(),
                                Resource::Memory => q.value(),
                            })
                            .sum();
                        r.quantity(total).canonical()
                    };
                    (sum(Resource::Cpu, "cpu"), sum(Resource::Memory, "memory"))
                }
            };
            let object = match include {
                IncludeObject::None => Value::Null,
                IncludeObject::Metadata => {
                    json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": item["metadata"]})
                }
                IncludeObject::Object => item.clone(),
            };
            json!({
                "cells": [item["metadata"]["name"], cpu, memory, item["window"]],
                "object": object,
            })
        })
        .collect();
    json!({
        "kind": "Table",
        "apiVersion": api_version,
        "metadata": {},
        "columnDefinitions": columns,
        "rows": rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        assert_eq!(parse_path("/apis/metrics.k8s.io"), Some(MetricsPath::Group));
        assert_eq!(
            parse_path("/apis/metrics.k8s.io/v1beta1/"),
            Some(MetricsPath::ResourceList)
        );
        assert_eq!(
            parse_path("/apis/metrics.k8s.io/v1beta1/nodes/n1"),
            Some(MetricsPath::Nodes(Some("n1")))
        );
        assert_eq!(
            parse_path("/apis/metrics.k8s.io/v1beta1/namespaces/a/pods"),
            Some(MetricsPath::Pods(Some("a"), None))
        );
        assert_eq!(
            parse_path("/apis/metrics.k8s.io/v1beta1/pods/x"),
            Some(MetricsPath::Unknown)
        );
        assert_eq!(
            parse_path("/apis/metrics.k8s.io/v1/nodes"),
            Some(MetricsPath::Unknown)
        );
        assert!(is_metrics_path("/apis/metrics.k8s.io/v1beta1"));
        assert!(!is_metrics_path("/apis/metrics.k8s.iox"));
        assert!(!is_metrics_path("/apis/custom.metrics.k8s.io/v1beta1"));
    }
}
