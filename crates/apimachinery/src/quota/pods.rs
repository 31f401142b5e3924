//! Pods and quota (upstream `pkg/quota/v1/evaluator/core/pods.go` and the pod
//! request/limit sums of `component-helpers/resource`).

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::resources::{self, ResourceList};
use super::{str_at, ScopeSelector};
use crate::quantity::{Format, Quantity};

/// The names the pod evaluator tracks besides prefixed and extended ones.
const POD_RESOURCES: &[&str] = &[
    "count/pods",
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
];

/// Names quota'd by prefix (hugepages).
const POD_RESOURCE_PREFIXES: &[&str] = &["hugepages-", "requests.hugepages-"];

/// The resources whose quota obliges every container to state them (a backward
/// compatibility rule upstream keeps to these six).
const VALIDATION_SET: &[&str] = &[
    "cpu",
    "memory",
    "requests.cpu",
    "requests.memory",
    "limits.cpu",
    "limits.memory",
];

/// Extended resources implied by a DRA device class.
const DRA_EXTENDED_PREFIX: &str = "deviceclass.resource.kubernetes.io/";

/// `helper.IsNativeResource`: no domain, or a `kubernetes.io/` domain.
fn is_native_resource(name: &str) -> bool {
    !name.contains('/') || name.contains("kubernetes.io/")
}

/// `helper.IsExtendedResourceName` (plus DRA's implicit extended resources): a
/// domain-qualified, non-native name that is not itself a `requests.` quota name.
fn is_extended_resource(name: &str) -> bool {
    if name.starts_with(DRA_EXTENDED_PREFIX) {
        return true;
    }
    !is_native_resource(name) && !name.starts_with("requests.")
}

/// Quota names for extended resources: `requests.<extended name>`.
fn is_extended_resource_name_for_quota(name: &str) -> bool {
    let Some(rest) = name.strip_prefix("requests.") else {
        return false;
    };
    rest.starts_with(DRA_EXTENDED_PREFIX) || !is_native_resource(name)
}

/// `MatchingResources` of the pod evaluator.
pub fn matching_resources(input: &[String]) -> Vec<String> {
    let own: Vec<String> = POD_RESOURCES.iter().map(|s| s.to_string()).collect();
    let mut result = resources::intersection(input, &own);
    for r in input {
        if resources::contains_prefix(POD_RESOURCE_PREFIXES, r)
            || is_extended_resource_name_for_quota(r)
        {
            result.push(r.clone());
        }
    }
    result
}

/// `podComputeUsageHelper`: the quota names of a set of requests and limits.
fn compute_usage(requests: &ResourceList, limits: &ResourceList) -> ResourceList {
    let mut result = ResourceList::new();
    result.insert("pods".into(), Quantity::from_value(1, Format::DecimalSi));
    for r in ["cpu", "memory", "ephemeral-storage"] {
        if let Some(q) = requests.get(r) {
            result.insert(r.into(), *q);
            result.insert(format!("requests.{r}"), *q);
        }
        if let Some(q) = limits.get(r) {
            result.insert(format!("limits.{r}"), *q);
        }
    }
    for (r, q) in requests {
        if r.starts_with("hugepages-") {
            result.insert(r.clone(), *q);
            result.insert(format!("requests.{r}"), *q);
        }
        if is_extended_resource(r) {
            result.insert(format!("requests.{r}"), *q);
        }
    }
    result
}

fn containers<'a>(pod: &'a Value, field: &str) -> impl Iterator<Item = &'a Value> {
    pod.pointer(&format!("/spec/{field}"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

fn container_resources(c: &Value, which: &str) -> ResourceList {
    resources::from_json(c.pointer(&format!("/resources/{which}")))
}

/// Pod-level resources (`spec.resources`) supported by the PodLevelResources feature.
fn is_supported_pod_level_resource(name: &str) -> bool {
    name == "cpu" || name == "memory" || name.starts_with("hugepages-")
}

fn pod_level(pod: &Value, which: &str) -> ResourceList {
    resources::from_json(pod.pointer(&format!("/spec/resources/{which}")))
        .into_iter()
        .filter(|(k, _)| is_supported_pod_level_resource(k))
        .collect()
}

/// `IsPodLevelResourcesSet`: pod-level requests or limits of a supported resource.
fn pod_level_resources_set(pod: &Value) -> bool {
    !pod_level(pod, "requests").is_empty() || !pod_level(pod, "limits").is_empty()
}

/// The sum over containers, with init containers' maximum and restartable (sidecar)
/// init containers running alongside (`AggregateContainerRequests`/`Limits`).
fn aggregate_containers(pod: &Value, which: &str) -> ResourceList {
    let mut total = ResourceList::new();
    for c in containers(pod, "containers") {
        total = resources::add(&total, &container_resources(c, which));
    }
    let mut sidecars = ResourceList::new();
    let mut init_max = ResourceList::new();
    for c in containers(pod, "initContainers") {
        let own = container_resources(c, which);
        let effective = if c.get("restartPolicy").and_then(Value::as_str) == Some("Always") {
            total = resources::add(&total, &own);
            sidecars = resources::add(&sidecars, &own);
            sidecars.clone()
        } else {
            resources::add(&own, &sidecars)
        };
        init_max = resources::max(&init_max, &effective);
    }
    resources::max(&total, &init_max)
}

/// `resourcehelper.PodRequests`: containers, pod-level requests where set, overhead.
pub fn pod_requests(pod: &Value) -> ResourceList {
    let mut reqs = aggregate_containers(pod, "requests");
    for (k, q) in pod_level(pod, "requests") {
        reqs.insert(k, q);
    }
    resources::add(&reqs, &resources::from_json(pod.pointer("/spec/overhead")))
}

/// `resourcehelper.PodLimits`: containers, pod-level limits where set, overhead on
/// the resources that have a limit.
pub fn pod_limits(pod: &Value) -> ResourceList {
    let mut limits = aggregate_containers(pod, "limits");
    for (k, q) in pod_level(pod, "limits") {
        limits.insert(k, q);
    }
    for (k, q) in resources::from_json(pod.pointer("/spec/overhead")) {
        if let Some(have) = limits.get_mut(&k) {
            *have = *have + q;
        }
    }
    limits
}

/// `QuotaV1Pod`: whether quota charges the pod's compute resources: not when it is
/// terminal, nor when its deletion grace period has run out (a pod stuck terminating
/// on a lost node).
pub fn quota_v1_pod(pod: &Value, now: DateTime<Utc>) -> bool {
    let phase = str_at(pod, "/status/phase");
    if phase == "Failed" || phase == "Succeeded" {
        return false;
    }
    let deleted = pod
        .pointer("/metadata/deletionTimestamp")
        .and_then(Value::as_str)
        .and_then(|t| DateTime::parse_from_rfc3339(t).ok());
    let grace = pod
        .pointer("/metadata/deletionGracePeriodSeconds")
        .and_then(Value::as_i64);
    if let (Some(deleted), Some(grace)) = (deleted, grace) {
        if now > deleted.with_timezone(&Utc) + chrono::Duration::seconds(grace) {
            return false;
        }
    }
    true
}

/// `PodUsageFunc`: always `count/pods`; compute resources unless the pod is done.
pub fn usage(pod: &Value, now: DateTime<Utc>) -> ResourceList {
    let mut result = ResourceList::new();
    result.insert(
        "count/pods".into(),
        Quantity::from_value(1, Format::DecimalSi),
    );
    if !quota_v1_pod(pod, now) {
        return result;
    }
    resources::add(
        &result,
        &compute_usage(&pod_requests(pod), &pod_limits(pod)),
    )
}

/// `Constraints`: with cpu or memory quota'd, every container and init container must
/// state them (`must specify cpu for: a,b; memory for: a`); pods with pod-level
/// resources are exempt.
pub fn constraints(required: &[String], pod: &Value) -> Result<(), String> {
    if pod_level_resources_set(pod) {
        return Ok(());
    }
    let required: BTreeSet<&str> = required
        .iter()
        .map(String::as_str)
        .filter(|r| VALIDATION_SET.contains(r))
        .collect();
    let mut missing: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for c in containers(pod, "containers").chain(containers(pod, "initContainers")) {
        let have = compute_usage(
            &container_resources(c, "requests"),
            &container_resources(c, "limits"),
        );
        for r in &required {
            if !have.contains_key(*r) {
                missing
                    .entry(r)
                    .or_default()
                    .insert(str_at(c, "/name").to_string());
            }
        }
    }
    if missing.is_empty() {
        return Ok(());
    }
    let parts: Vec<String> = missing
        .iter()
        .map(|(r, names)| {
            format!(
                "{r} for: {}",
                names.iter().cloned().collect::<Vec<_>>().join(",")
            )
        })
        .collect();
    Err(format!("must specify {}", parts.join("; ")))
}

/// `qos.GetPodQOS(pod) == BestEffort`: no cpu or memory request or limit anywhere
/// (pod-level resources decide when set).
pub fn is_best_effort(pod: &Value) -> bool {
    let positive = |l: &ResourceList| {
        ["cpu", "memory"].iter().any(|r| {
            l.get(*r)
                .is_some_and(|q| q.cmp_value(&Quantity::zero()).is_gt())
        })
    };
    if pod_level_resources_set(pod) {
        return !positive(&pod_level(pod, "requests")) && !positive(&pod_level(pod, "limits"));
    }
    !containers(pod, "containers")
        .chain(containers(pod, "initContainers"))
        .any(|c| {
            positive(&container_resources(c, "requests"))
                || positive(&container_resources(c, "limits"))
        })
}

/// `Terminating` scope: an `activeDeadlineSeconds` of zero or more.
pub fn is_terminating(pod: &Value) -> bool {
    pod.pointer("/spec/activeDeadlineSeconds")
        .and_then(Value::as_i64)
        .is_some_and(|s| s >= 0)
}

/// `CrossNamespacePodAffinity` scope: an (anti-)affinity term with `namespaces` or a
/// `namespaceSelector`.
pub fn uses_cross_namespace_pod_affinity(pod: &Value) -> bool {
    let cross = |term: &Value| {
        term.get("namespaces")
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty())
            || term.get("namespaceSelector").is_some_and(|s| !s.is_null())
    };
    ["podAffinity", "podAntiAffinity"].iter().any(|kind| {
        let Some(aff) = pod.pointer(&format!("/spec/affinity/{kind}")) else {
            return false;
        };
        let required = aff
            .get("requiredDuringSchedulingIgnoredDuringExecution")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .any(cross);
        let preferred = aff
            .get("preferredDuringSchedulingIgnoredDuringExecution")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .any(|w| w.get("podAffinityTerm").is_some_and(cross));
        required || preferred
    })
}

/// `podMatchesScopeFunc`.
pub fn matches_scope(selector: &ScopeSelector, pod: &Value) -> Result<bool, String> {
    Ok(match selector.scope_name.as_str() {
        "Terminating" => is_terminating(pod),
        "NotTerminating" => !is_terminating(pod),
        "BestEffort" => is_best_effort(pod),
        "NotBestEffort" => !is_best_effort(pod),
        "PriorityClass" => {
            let class = str_at(pod, "/spec/priorityClassName");
            if selector.operator == "Exists" {
                !class.is_empty()
            } else {
                selector.matches_value((!class.is_empty()).then_some(class))?
            }
        }
        "CrossNamespacePodAffinity" => uses_cross_namespace_pod_affinity(pod),
        _ => false,
    })
}
