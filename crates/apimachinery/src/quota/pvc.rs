//! PersistentVolumeClaims and quota (upstream
//! `pkg/quota/v1/evaluator/core/persistent_volume_claims.go`).

use serde_json::Value;

use super::resources::ResourceList;
use super::{str_at, ScopeSelector};
use crate::quantity::{self, Format, Quantity};

const PVC_RESOURCES: &[&str] = &[
    "persistentvolumeclaims",
    "count/persistentvolumeclaims",
    "requests.storage",
];

/// Suffix of the per-class claim count (`<class>.storageclass.storage.k8s.io/persistentvolumeclaims`).
pub const CLASS_CLAIMS_SUFFIX: &str = ".storageclass.storage.k8s.io/persistentvolumeclaims";
/// Suffix of the per-class storage request (`<class>.storageclass.storage.k8s.io/requests.storage`).
pub const CLASS_STORAGE_SUFFIX: &str = ".storageclass.storage.k8s.io/requests.storage";

/// `MatchingResources` of the claim evaluator.
pub fn matching_resources(input: &[String]) -> Vec<String> {
    input
        .iter()
        .filter(|r| {
            PVC_RESOURCES.contains(&r.as_str())
                || r.ends_with(CLASS_CLAIMS_SUFFIX)
                || r.ends_with(CLASS_STORAGE_SUFFIX)
        })
        .cloned()
        .collect()
}

/// `GetPersistentVolumeClaimClass`: the beta annotation, else `spec.storageClassName`.
pub fn claim_class(pvc: &Value) -> &str {
    match pvc
        .pointer("/metadata/annotations/volume.beta.kubernetes.io~1storage-class")
        .and_then(Value::as_str)
    {
        Some(c) => c,
        None => str_at(pvc, "/spec/storageClassName"),
    }
}

/// The storage request quota charges: the spec's request, or the allocated size when
/// larger (an expansion in progress), rounded up to whole bytes.
fn storage_request(pvc: &Value) -> Option<Quantity> {
    let spec = pvc
        .pointer("/spec/resources/requests/storage")
        .and_then(quantity::from_json)?;
    let allocated = pvc
        .pointer("/status/allocatedResources/storage")
        .and_then(quantity::from_json);
    let q = match allocated {
        Some(a) if a.cmp_value(&spec).is_gt() => a,
        _ => spec,
    };
    let value = i64::try_from(q.value()).unwrap_or(i64::MAX);
    Some(Quantity::from_value(value, q.format()))
}

/// `Usage`: one claim (also per class) and its storage request (also per class).
pub fn usage(pvc: &Value) -> ResourceList {
    let one = Quantity::from_value(1, Format::DecimalSi);
    let mut result = ResourceList::new();
    result.insert("persistentvolumeclaims".into(), one);
    result.insert("count/persistentvolumeclaims".into(), one);
    let class = claim_class(pvc);
    if !class.is_empty() {
        result.insert(format!("{class}{CLASS_CLAIMS_SUFFIX}"), one);
    }
    if let Some(storage) = storage_request(pvc) {
        result.insert("requests.storage".into(), storage);
        if !class.is_empty() {
            result.insert(format!("{class}{CLASS_STORAGE_SUFFIX}"), storage);
        }
    }
    result
}

/// `RequiresQuotaReplenish`: whether the allocated storage (what an expansion charges)
/// differs between two versions of a claim.
pub fn requires_quota_replenish(new: &Value, old: &Value) -> bool {
    let allocated = |v: &Value| {
        v.pointer("/status/allocatedResources/storage")
            .and_then(quantity::from_json)
            .map(|q| q.nanos())
    };
    allocated(new) != allocated(old)
}

fn attributes_class_names(pvc: &Value) -> Vec<&str> {
    let mut names: Vec<&str> = [
        "/spec/volumeAttributesClassName",
        "/status/currentVolumeAttributesClassName",
        "/status/modifyVolumeStatus/targetVolumeAttributesClassName",
    ]
    .iter()
    .map(|p| str_at(pvc, p))
    .filter(|n| !n.is_empty())
    .collect();
    names.sort_unstable();
    names.dedup();
    names
}

/// `pvcMatchesScopeFunc`: the `VolumeAttributesClass` scope over the classes the claim
/// names (spec, current and target).
pub fn matches_scope(selector: &ScopeSelector, pvc: &Value) -> Result<bool, String> {
    if selector.scope_name != "VolumeAttributesClass" {
        return Ok(false);
    }
    let names = attributes_class_names(pvc);
    if selector.operator == "Exists" {
        return Ok(!names.is_empty());
    }
    if names.is_empty() {
        return selector.matches_value(None);
    }
    for n in names {
        if selector.matches_value(Some(n))? {
            return Ok(true);
        }
    }
    Ok(false)
}
