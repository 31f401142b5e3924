//! What the Endpoints of a Service should be, as pure functions of the Service, its pods
//! and the current Endpoints (upstream `syncService` minus the API calls,
//! `podToEndpointAddressForService`, `addEndpointSubset`, `truncateEndpoints`,
//! `capacityAnnotationSetCorrectly`).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    EndpointAddress, EndpointPort, EndpointSubset, Endpoints, ObjectReference, Pod, Service,
    ServicePort,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::jiff::Timestamp;

use super::subsets::repack_subsets;
use crate::endpointutil::{
    endpoint_subsets_equal_ignore_resource_version, find_port, format_trigger_time, is_pod_ready,
    is_service_ip_set, should_pod_be_in_endpoints, should_set_hostname,
    LAST_CHANGE_TRIGGER_TIME_ANNOTATION,
};

/// The most addresses an Endpoints holds; more are truncated (upstream `maxCapacity`).
pub const MAX_CAPACITY: usize = 1000;
/// `endpoints.kubernetes.io/over-capacity`: set to [`TRUNCATED`] on a truncated
/// Endpoints.
pub const OVER_CAPACITY_ANNOTATION: &str = "endpoints.kubernetes.io/over-capacity";
/// The value of [`OVER_CAPACITY_ANNOTATION`].
pub const TRUNCATED: &str = "truncated";
/// `service.kubernetes.io/headless`: set (empty) on the Endpoints of a headless Service.
pub const HEADLESS_LABEL: &str = "service.kubernetes.io/headless";
/// `endpoints.kubernetes.io/managed-by`: marks the Endpoints this controller writes
/// (upstream `LabelManagedBy`).
pub const MANAGED_BY_LABEL: &str = "endpoints.kubernetes.io/managed-by";
/// The value of [`MANAGED_BY_LABEL`] (upstream `ControllerName`).
pub const MANAGED_BY: &str = "endpoint-controller";

/// Whether the Endpoints' labels are the Service's plus the controller's own (upstream
/// `labelsCorrectForEndpoints`; the headless label is not looked at).
pub fn labels_correct_for_endpoints(
    endpoint_labels: &BTreeMap<String, String>,
    service_labels: &BTreeMap<String, String>,
) -> bool {
    if endpoint_labels.get(MANAGED_BY_LABEL).map(String::as_str) != Some(MANAGED_BY) {
        return false;
    }
    let mut skipped = 0;
    for (k, v) in endpoint_labels {
        if k == HEADLESS_LABEL || k == MANAGED_BY_LABEL {
            skipped += 1;
        } else if service_labels.get(k) != Some(v) {
            return false;
        }
    }
    endpoint_labels.len() == service_labels.len() + skipped
}

fn is_ipv6(ip: &str) -> bool {
    ip.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_ipv6())
}

/// The pod's address for the Service: the pod IP of the Service's (first) IP family,
/// with the node and a reference to the pod (upstream `podToEndpointAddressForService`).
/// `None` when the pod has no IP of that family.
pub fn pod_to_endpoint_address(svc: &Service, pod: &Pod) -> Option<EndpointAddress> {
    let spec = svc.spec.as_ref();
    let ipv6 = match spec
        .and_then(|s| s.ip_families.as_ref())
        .and_then(|f| f.first())
    {
        Some(family) => family == "IPv6",
        None => {
            // an API server that does not set ipFamilies: the cluster IP tells, or for a
            // headless Service the pod's IP
            let cluster_ip = spec.and_then(|s| s.cluster_ip.as_deref()).unwrap_or("");
            if !cluster_ip.is_empty() && cluster_ip != "None" {
                is_ipv6(cluster_ip)
            } else {
                is_ipv6(
                    pod.status
                        .as_ref()
                        .and_then(|s| s.pod_ip.as_deref())
                        .unwrap_or(""),
                )
            }
        }
    };
    let ip = pod
        .status
        .as_ref()
        .and_then(|s| s.pod_ips.as_ref())
        .into_iter()
        .flatten()
        .map(|p| p.ip.as_str())
        .find(|ip| is_ipv6(ip) == ipv6)?;
    Some(EndpointAddress {
        ip: ip.to_string(),
        node_name: Some(
            pod.spec
                .as_ref()
                .and_then(|s| s.node_name.clone())
                .unwrap_or_default(),
        ),
        target_ref: Some(ObjectReference {
            kind: Some("Pod".into()),
            namespace: pod.metadata.namespace.clone(),
            name: pod.metadata.name.clone(),
            uid: pod.metadata.uid.clone(),
            ..Default::default()
        }),
        hostname: None,
    })
}

/// The Endpoints port of a Service port whose target resolved to `port` (upstream
/// `endpointPortFromServicePort`).
fn endpoint_port(svc_port: &ServicePort, port: i32) -> EndpointPort {
    EndpointPort {
        name: svc_port.name.clone().filter(|n| !n.is_empty()),
        port,
        protocol: svc_port.protocol.clone(),
        app_protocol: svc_port.app_protocol.clone(),
    }
}

/// The subsets of the Service's endpoints from its (selected) pods, repacked, with the
/// numbers of ready and not-ready addresses added.
pub fn desired_subsets<'a>(
    svc: &Service,
    pods: impl IntoIterator<Item = &'a Pod>,
) -> (Vec<EndpointSubset>, usize, usize) {
    let spec = svc.spec.clone().unwrap_or_default();
    let publish_not_ready = spec.publish_not_ready_addresses.unwrap_or(false);
    let headless = spec.cluster_ip.as_deref() == Some("None");
    let ports = spec.ports.unwrap_or_default();
    let mut subsets = Vec::new();
    let (mut ready, mut not_ready) = (0, 0);
    let mut add = |subsets: &mut Vec<EndpointSubset>,
                   pod: &Pod,
                   a: &EndpointAddress,
                   port: Option<EndpointPort>| {
        let ports = Some(port.into_iter().collect());
        if publish_not_ready || is_pod_ready(pod) {
            subsets.push(EndpointSubset {
                addresses: Some(vec![a.clone()]),
                not_ready_addresses: None,
                ports,
            });
            ready += 1;
        } else {
            subsets.push(EndpointSubset {
                addresses: None,
                not_ready_addresses: Some(vec![a.clone()]),
                ports,
            });
            not_ready += 1;
        }
    };
    let mut headless_without_ports = false;
    for pod in pods {
        if !should_pod_be_in_endpoints(pod, publish_not_ready) {
            continue;
        }
        let Some(mut address) = pod_to_endpoint_address(svc, pod) else {
            tracing::debug!(pod = ?pod.metadata.name, "no pod IP of the Service's family");
            continue;
        };
        if should_set_hostname(pod, svc) {
            address.hostname = pod
                .spec
                .as_ref()
                .and_then(|s| s.hostname.clone())
                .filter(|h| !h.is_empty());
        }
        if ports.is_empty() {
            // a headless Service may have no ports
            if headless {
                add(&mut subsets, pod, &address, None);
                headless_without_ports = true;
            }
        } else {
            for p in &ports {
                match find_port(pod, p) {
                    Ok(n) => add(&mut subsets, pod, &address, Some(endpoint_port(p, n))),
                    Err(e) => tracing::debug!(error = %e, "failed to find port for service"),
                }
            }
        }
    }
    // no ports to repack by: one subset per pod, as upstream
    if headless_without_ports {
        return (super::subsets::sort_subsets(subsets), ready, not_ready);
    }
    (repack_subsets(&subsets), ready, not_ready)
}

/// Whether the over-capacity annotation is as it should be: absent while the subsets
/// hold at most [`MAX_CAPACITY`] addresses (upstream `capacityAnnotationSetCorrectly`;
/// over capacity they must be truncated, so never "correct").
pub fn capacity_annotation_set_correctly(
    annotations: Option<&BTreeMap<String, String>>,
    subsets: &[EndpointSubset],
) -> bool {
    let n: usize = subsets.iter().map(address_count).sum();
    if n > MAX_CAPACITY {
        return false;
    }
    !annotations.is_some_and(|a| a.contains_key(OVER_CAPACITY_ANNOTATION))
}

fn address_count(s: &EndpointSubset) -> usize {
    s.addresses.as_ref().map_or(0, Vec::len) + s.not_ready_addresses.as_ref().map_or(0, Vec::len)
}

/// Cut the subsets to [`MAX_CAPACITY`] addresses, ready ones first, each subset keeping
/// its share (rounded up) of what is kept; whether anything was cut (upstream
/// `truncateEndpoints`).
pub fn truncate_endpoints(subsets: &mut [EndpointSubset]) -> bool {
    let len = |l: &Option<Vec<EndpointAddress>>| l.as_ref().map_or(0, Vec::len);
    let total_ready: usize = subsets.iter().map(|s| len(&s.addresses)).sum();
    let total_not_ready: usize = subsets.iter().map(|s| len(&s.not_ready_addresses)).sum();
    if total_ready + total_not_ready <= MAX_CAPACITY {
        return false;
    }
    let truncate_ready = total_ready > MAX_CAPACITY;
    let (max, total) = if truncate_ready {
        (MAX_CAPACITY, total_ready)
    } else {
        (MAX_CAPACITY - total_ready, total_not_ready)
    };
    let mut can_be_added = max;
    for s in subsets.iter_mut() {
        let in_subset = if truncate_ready {
            len(&s.addresses)
        } else {
            len(&s.not_ready_addresses)
        };
        // this subset's share, rounded up: the last subsets may get less
        let share = (in_subset * max).div_ceil(total);
        let to_be_added = share.min(can_be_added);
        if truncate_ready {
            if let Some(a) = s.addresses.as_mut() {
                a.truncate(to_be_added);
            }
            s.not_ready_addresses = None;
            can_be_added -= len(&s.addresses);
        } else {
            if let Some(a) = s.not_ready_addresses.as_mut() {
                a.truncate(to_be_added);
            }
            can_be_added -= len(&s.not_ready_addresses);
        }
    }
    true
}

/// The Endpoints to write for `svc`, or `None` when `current` is already right
/// (upstream `syncService` from the pods on). `current` is the cached Endpoints (`None`:
/// to be created); `subsets` are [`desired_subsets`]; `trigger_time` the
/// [`crate::endpointutil::TriggerTimeTracker`]'s answer. The comparison ignores the
/// trigger time annotation, so a sync with nothing new writes nothing.
pub fn endpoints_to_write(
    svc: &Service,
    current: Option<&Endpoints>,
    subsets: Vec<EndpointSubset>,
    trigger_time: Option<Timestamp>,
) -> Option<Endpoints> {
    let service_labels = svc.metadata.labels.clone().unwrap_or_default();
    let create = current.is_none_or(|c| {
        c.metadata
            .resource_version
            .as_deref()
            .unwrap_or("")
            .is_empty()
    });
    if let Some(cur) = current.filter(|_| !create) {
        let labels = cur.metadata.labels.clone().unwrap_or_default();
        let cur_subsets = cur.subsets.as_deref().unwrap_or_default();
        if endpoint_subsets_equal_ignore_resource_version(cur_subsets, &subsets)
            && labels_correct_for_endpoints(&labels, &service_labels)
            && capacity_annotation_set_correctly(cur.metadata.annotations.as_ref(), cur_subsets)
        {
            return None;
        }
    }
    let mut new = match current {
        Some(c) => c.clone(),
        None => Endpoints {
            metadata: ObjectMeta {
                name: svc.metadata.name.clone(),
                namespace: svc.metadata.namespace.clone(),
                ..Default::default()
            },
            subsets: None,
        },
    };
    let mut subsets = subsets;
    let mut annotations = new.metadata.annotations.take().unwrap_or_default();
    match trigger_time {
        Some(t) => {
            annotations.insert(
                LAST_CHANGE_TRIGGER_TIME_ANNOTATION.into(),
                format_trigger_time(t),
            );
        }
        None => {
            annotations.remove(LAST_CHANGE_TRIGGER_TIME_ANNOTATION);
        }
    }
    if truncate_endpoints(&mut subsets) {
        annotations.insert(OVER_CAPACITY_ANNOTATION.into(), TRUNCATED.into());
    } else {
        annotations.remove(OVER_CAPACITY_ANNOTATION);
    }
    let mut labels = service_labels;
    labels.insert(MANAGED_BY_LABEL.into(), MANAGED_BY.into());
    if is_service_ip_set(svc) {
        labels.remove(HEADLESS_LABEL);
    } else {
        labels.insert(HEADLESS_LABEL.into(), String::new());
    }
    new.metadata.annotations = Some(annotations);
    new.metadata.labels = Some(labels);
    new.subsets = (!subsets.is_empty()).then_some(subsets);
    Some(new)
}
