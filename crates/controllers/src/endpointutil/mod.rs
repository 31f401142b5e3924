//! What the Endpoints and EndpointSlice controllers share about pods and Services, after
//! upstream's `pkg/controller/util/endpoint` (`controller_utils.go`,
//! `trigger_time_tracker.go`) and `pkg/api/v1/pod` (`FindPort`, `IsPodReady`).
//!
//! - [`should_pod_be_in_endpoints`]: which pods become endpoints at all (an IP, not
//!   terminal, terminating ones only when asked);
//! - [`is_pod_ready`]: the pod's `Ready` condition;
//! - [`find_port`]: a Service port's target port in a pod (a number as is, a name looked
//!   up among the containers' named ports of the same protocol);
//! - [`service_selects`] / [`pod_service_memberships`]: which Services select a pod
//!   (a Service without a selector selects nothing);
//! - [`services_to_update_on_pod_change`]: the Services a pod update concerns, old and
//!   new labels included (upstream `GetServicesToUpdateOnPodChange`);
//! - [`TriggerTimeTracker`]: the `endpoints.kubernetes.io/last-change-trigger-time`
//!   annotation's value.
//!
//! Upstream keeps parsed selectors in a `ServiceSelectorCache`; a Service selector is a
//! plain label map here, matched directly, so there is nothing to cache.

mod trigger_time;

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};

use coxswain_runtime::ObjectKey;
use k8s_openapi::api::core::v1::{EndpointSubset, ObjectReference, Pod, Service, ServicePort};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

pub use crate::controller_utils::pod::{is_pod_ready, pod_ready_condition};
pub use trigger_time::TriggerTimeTracker;

/// The annotation carrying when the last change that triggered the endpoints' update
/// happened (`v1.EndpointsLastChangeTriggerTime`), RFC 3339.
pub const LAST_CHANGE_TRIGGER_TIME_ANNOTATION: &str =
    "endpoints.kubernetes.io/last-change-trigger-time";

/// Whether the Service has a cluster IP (upstream `helper.IsServiceIPSet`): neither
/// empty nor `None` (a headless Service has none).
pub fn is_service_ip_set(svc: &Service) -> bool {
    let ip = svc
        .spec
        .as_ref()
        .and_then(|s| s.cluster_ip.as_deref())
        .unwrap_or("");
    !ip.is_empty() && ip != "None"
}

/// Whether the pod should be an endpoint (upstream `ShouldPodBeInEndpoints`, as in
/// `k8s.io/endpointslice/util`): not terminal (`Succeeded` or `Failed`, whatever its
/// restart policy), it has an IP, and it is not being deleted unless
/// `include_terminating`.
pub fn should_pod_be_in_endpoints(pod: &Pod, include_terminating: bool) -> bool {
    let status = pod.status.as_ref();
    let phase = status.and_then(|s| s.phase.as_deref()).unwrap_or("");
    if phase == "Succeeded" || phase == "Failed" {
        return false;
    }
    let has_ip = status.is_some_and(|s| {
        s.pod_ip.as_deref().is_some_and(|ip| !ip.is_empty())
            || s.pod_ips.as_ref().is_some_and(|ips| !ips.is_empty())
    });
    if !has_ip {
        return false;
    }
    include_terminating || pod.metadata.deletion_timestamp.is_none()
}

/// Whether the endpoint of `pod` in `svc` carries the pod's hostname (upstream
/// `ShouldSetHostname`): the pod has a hostname, its subdomain is the Service's name and
/// both are in the same namespace.
pub fn should_set_hostname(pod: &Pod, svc: &Service) -> bool {
    let spec = pod.spec.as_ref();
    let hostname = spec.and_then(|s| s.hostname.as_deref()).unwrap_or("");
    let subdomain = spec.and_then(|s| s.subdomain.as_deref()).unwrap_or("");
    !hostname.is_empty()
        && subdomain == svc.metadata.name.as_deref().unwrap_or("")
        && svc.metadata.namespace == pod.metadata.namespace
}

/// Why [`find_port`] found nothing (upstream: `no suitable port for manifest: <uid>`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no suitable port for manifest: {uid}")]
pub struct NoSuitablePort {
    /// The pod's UID.
    pub uid: String,
}

/// The container port a Service port targets in `pod` (upstream `FindPort`, as in
/// `k8s.io/endpointslice`): a numeric `targetPort` as is; a named one is looked up among
/// the named ports of the pod's containers, then of its sidecars (init containers with
/// `restartPolicy: Always`), with the Service port's protocol (`TCP` when unset on either side). An
/// unset `targetPort` is the Service port's own number (the API server's default).
pub fn find_port(pod: &Pod, svc_port: &ServicePort) -> Result<i32, NoSuitablePort> {
    let protocol = svc_port.protocol.as_deref().unwrap_or("TCP");
    match &svc_port.target_port {
        None => return Ok(svc_port.port),
        Some(IntOrString::Int(n)) => return Ok(*n),
        Some(IntOrString::String(name)) => {
            // the containers, then the sidecars (init containers restarting Always)
            let spec = pod.spec.as_ref();
            let containers = spec.into_iter().flat_map(|s| s.containers.iter());
            let sidecars = spec
                .into_iter()
                .flat_map(|s| s.init_containers.iter().flatten())
                .filter(|c| c.restart_policy.as_deref() == Some("Always"));
            for port in containers
                .chain(sidecars)
                .flat_map(|c| c.ports.iter().flatten())
            {
                if port.name.as_deref() == Some(name.as_str())
                    && port.protocol.as_deref().unwrap_or("TCP") == protocol
                {
                    return Ok(port.container_port);
                }
            }
        }
    }
    Err(NoSuitablePort {
        uid: pod.metadata.uid.clone().unwrap_or_default(),
    })
}

/// Whether a label selector given as a map (a Service's `spec.selector`) matches
/// `labels`: every pair is present. An empty map matches everything.
pub fn selector_matches(
    selector: &BTreeMap<String, String>,
    labels: Option<&BTreeMap<String, String>>,
) -> bool {
    selector
        .iter()
        .all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v))
}

/// Whether `svc` selects `pod`: same namespace and the Service's selector matches the
/// pod's labels. A Service without a selector selects nothing (its endpoints are managed
/// by hand or mirrored), as upstream's nil-selector rule.
pub fn service_selects(svc: &Service, pod: &Pod) -> bool {
    if svc.metadata.namespace != pod.metadata.namespace {
        return false;
    }
    match svc.spec.as_ref().and_then(|s| s.selector.as_ref()) {
        None => false,
        Some(selector) => selector_matches(selector, pod.metadata.labels.as_ref()),
    }
}

/// The keys of the Services among `services` that select `pod` (upstream
/// `GetPodServiceMemberships`; pass the Services of the pod's namespace).
pub fn pod_service_memberships<'a>(
    services: impl IntoIterator<Item = &'a Service>,
    pod: &Pod,
) -> BTreeSet<ObjectKey> {
    services
        .into_iter()
        .filter(|svc| service_selects(svc, pod))
        .map(ObjectKey::of)
        .collect()
}

/// How a pod update may change endpoints (upstream `podEndpointsChanged`): the first
/// value is whether the pod's own endpoint may change (deletion timestamp, readiness,
/// IPs), the second whether the Services selecting it may change (labels, hostname or
/// subdomain). The node name, name, namespace and UID are not looked at: the first three
/// are immutable and the node is set before the pod has an IP.
pub fn pod_endpoints_changed(old: &Pod, new: &Pod) -> (bool, bool) {
    let spec_str = |p: &Pod, f: fn(&k8s_openapi::api::core::v1::PodSpec) -> &Option<String>| {
        p.spec
            .as_ref()
            .and_then(|s| f(s).clone())
            .unwrap_or_default()
    };
    let labels_changed = old.metadata.labels.clone().unwrap_or_default()
        != new.metadata.labels.clone().unwrap_or_default()
        || spec_str(old, |s| &s.hostname) != spec_str(new, |s| &s.hostname)
        || spec_str(old, |s| &s.subdomain) != spec_str(new, |s| &s.subdomain);
    if old.metadata.deletion_timestamp != new.metadata.deletion_timestamp {
        return (true, labels_changed);
    }
    if is_pod_ready(old) != is_pod_ready(new) {
        return (true, labels_changed);
    }
    let ips = |p: &Pod| -> Vec<String> {
        p.status
            .as_ref()
            .and_then(|s| s.pod_ips.as_ref())
            .map(|ips| ips.iter().map(|ip| ip.ip.clone()).collect())
            .unwrap_or_default()
    };
    if ips(old) != ips(new) {
        return (true, labels_changed);
    }
    (false, labels_changed)
}

/// Which Services need a sync after a pod's labels changed (upstream
/// `determineNeededServiceUpdates`): all of the old and new ones when the pod itself
/// changed too, otherwise only those it joined or left.
pub fn determine_needed_service_updates(
    old_services: &BTreeSet<ObjectKey>,
    services: &BTreeSet<ObjectKey>,
    pod_changed: bool,
) -> BTreeSet<ObjectKey> {
    if pod_changed {
        services.union(old_services).cloned().collect()
    } else {
        services
            .symmetric_difference(old_services)
            .cloned()
            .collect()
    }
}

/// The keys of the Services a pod update concerns (upstream
/// `GetServicesToUpdateOnPodChange`): none for a resync (same resourceVersion) or a change
/// that cannot move endpoints; the Services selecting the new pod when only its endpoint
/// changed; with a label change also those that selected the old pod (all of them when
/// the endpoint changed too, otherwise only those it joined or left). `services` are the
/// Services of the pod's namespace.
pub fn services_to_update_on_pod_change<'a>(
    services: impl IntoIterator<Item = &'a Service> + Clone,
    old: &Pod,
    new: &Pod,
) -> BTreeSet<ObjectKey> {
    if old.metadata.resource_version.is_some()
        && old.metadata.resource_version == new.metadata.resource_version
    {
        return BTreeSet::new();
    }
    let (pod_changed, labels_changed) = pod_endpoints_changed(old, new);
    if !pod_changed && !labels_changed {
        return BTreeSet::new();
    }
    let current = pod_service_memberships(services.clone(), new);
    if !labels_changed {
        return current;
    }
    let previous = pod_service_memberships(services, old);
    determine_needed_service_updates(&previous, &current, pod_changed)
}

/// Whether two lists of Endpoints subsets are equal apart from the `resourceVersion` of
/// their target references (upstream `EndpointSubsetsEqualIgnoreResourceVersion`): a pod
/// update that does not move its address does not rewrite the Endpoints.
pub fn endpoint_subsets_equal_ignore_resource_version(
    a: &[EndpointSubset],
    b: &[EndpointSubset],
) -> bool {
    fn strip(subsets: &[EndpointSubset]) -> Vec<EndpointSubset> {
        let clear = |r: &mut Option<ObjectReference>| {
            if let Some(r) = r {
                r.resource_version = None;
            }
        };
        let mut out = subsets.to_vec();
        for s in &mut out {
            for list in [&mut s.addresses, &mut s.not_ready_addresses] {
                for a in list.iter_mut().flatten() {
                    clear(&mut a.target_ref);
                }
                // semantic equality: an empty list is no list
                if list.as_ref().is_some_and(Vec::is_empty) {
                    *list = None;
                }
            }
            if s.ports.as_ref().is_some_and(Vec::is_empty) {
                s.ports = None;
            }
        }
        out
    }
    a.len() == b.len() && strip(a) == strip(b)
}

/// The annotation value for a trigger time: RFC 3339 in UTC with the fraction trimmed
/// (Go's `time.RFC3339Nano`), as upstream writes it.
pub fn format_trigger_time(t: k8s_openapi::jiff::Timestamp) -> String {
    t.to_string()
}
