//! The pure pieces of the reconciler, after upstream's `k8s.io/endpointslice`
//! (`utils.go`, `util/endpointset.go`, `util/controller_utils.go`): an endpoint from a
//! pod, a pod's ports for a Service, a new slice and its labels, which slice to fill.

use std::collections::BTreeMap;
use std::net::IpAddr;

use coxswain_runtime::controllerutil::new_controller_ref;
use k8s_openapi::api::core::v1::{Node, ObjectReference, Pod, Service};
use k8s_openapi::api::discovery::v1::{Endpoint, EndpointConditions, EndpointPort, EndpointSlice};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::endpointutil::{find_port, is_pod_ready, is_service_ip_set, should_set_hostname};

/// The label naming a slice's Service (`discovery.LabelServiceName`).
pub const LABEL_SERVICE_NAME: &str = "kubernetes.io/service-name";
/// The label naming a slice's manager (`discovery.LabelManagedBy`).
pub const LABEL_MANAGED_BY: &str = "endpointslice.kubernetes.io/managed-by";
/// The label of a headless Service's slices (`v1.IsHeadlessService`).
pub const LABEL_HEADLESS: &str = "service.kubernetes.io/headless";
/// The node label carrying its zone (`v1.LabelTopologyZone`).
pub const LABEL_TOPOLOGY_ZONE: &str = "topology.kubernetes.io/zone";
/// The address type of IPv4 slices.
pub const ADDRESS_TYPE_IPV4: &str = "IPv4";
/// The address type of IPv6 slices.
pub const ADDRESS_TYPE_IPV6: &str = "IPv6";

/// The ports and address type slices are grouped by (upstream `endpointMeta`).
#[derive(Clone, Debug, PartialEq)]
pub struct EndpointMeta {
    /// The endpoint ports.
    pub ports: Vec<EndpointPort>,
    /// `IPv4` or `IPv6`.
    pub address_type: String,
}

/// The endpoint of `pod` in `service` for `address_type` (upstream `podToEndpoint`):
/// `serving` is the pod's readiness, `terminating` its deletion, and `ready` is serving
/// and not terminating, or always with `publishNotReadyAddresses`; the node's zone label
/// is the endpoint's zone; the pod's hostname is set when its subdomain is the Service.
pub fn pod_to_endpoint(
    pod: &Pod,
    node: Option<&Node>,
    service: &Service,
    address_type: &str,
) -> Endpoint {
    let serving = is_pod_ready(pod);
    let terminating = pod.metadata.deletion_timestamp.is_some();
    let publish_not_ready = service
        .spec
        .as_ref()
        .and_then(|s| s.publish_not_ready_addresses)
        .unwrap_or(false);
    let ready = publish_not_ready || (serving && !terminating);
    let node_name = pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.clone())
        .filter(|n| !n.is_empty());
    let zone = node
        .and_then(|n| n.metadata.labels.as_ref())
        .and_then(|l| l.get(LABEL_TOPOLOGY_ZONE))
        .filter(|z| !z.is_empty())
        .cloned();
    let hostname = should_set_hostname(pod, service)
        .then(|| pod.spec.as_ref().and_then(|s| s.hostname.clone()))
        .flatten();
    Endpoint {
        addresses: endpoint_addresses(pod, address_type),
        conditions: Some(EndpointConditions {
            ready: Some(ready),
            serving: Some(serving),
            terminating: Some(terminating),
        }),
        target_ref: Some(ObjectReference {
            kind: Some("Pod".into()),
            namespace: pod.metadata.namespace.clone(),
            name: pod.metadata.name.clone(),
            uid: pod.metadata.uid.clone(),
            ..Default::default()
        }),
        node_name,
        zone,
        hostname,
        ..Default::default()
    }
}

/// The pod's IPs of `address_type`, in canonical form (upstream
/// `getEndpointAddresses`; an IP that does not parse is left out).
pub fn endpoint_addresses(pod: &Pod, address_type: &str) -> Vec<String> {
    let ips = pod.status.as_ref().and_then(|s| s.pod_ips.as_ref());
    ips.into_iter()
        .flatten()
        .filter_map(|ip| ip.ip.parse::<IpAddr>().ok())
        .filter(|ip| match ip {
            IpAddr::V4(_) => address_type == ADDRESS_TYPE_IPV4,
            IpAddr::V6(_) => address_type == ADDRESS_TYPE_IPV6,
        })
        .map(|ip| ip.to_string())
        .collect()
}

/// The endpoint ports of `pod` for `service` (upstream `getEndpointPorts`): each Service
/// port whose target port the pod has ([`find_port`]), with the Service port's name,
/// protocol and appProtocol; a headless Service may have none.
pub fn endpoint_ports(service: &Service, pod: &Pod) -> Vec<EndpointPort> {
    let Some(spec) = service.spec.as_ref() else {
        return Vec::new();
    };
    spec.ports
        .iter()
        .flatten()
        .filter_map(|sp| {
            let port = find_port(pod, sp).ok()?;
            Some(EndpointPort {
                name: Some(sp.name.clone().unwrap_or_default()),
                port: Some(port),
                protocol: Some(sp.protocol.clone().unwrap_or_else(|| "TCP".into())),
                app_protocol: sp.app_protocol.clone(),
            })
        })
        .collect()
}

/// A comparable form of an endpoint port (unset name `""`, unset protocol `TCP`).
type PortKey = (String, Option<i32>, String, Option<String>);

fn port_key(p: &EndpointPort) -> PortKey {
    (
        p.name.clone().unwrap_or_default(),
        p.port,
        p.protocol.clone().unwrap_or_else(|| "TCP".into()),
        p.app_protocol.clone(),
    )
}

/// Identifies a set of endpoint ports whatever their order (upstream `PortMapKey`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PortMapKey(Vec<PortKey>);

impl PortMapKey {
    /// The key of `ports`.
    pub fn new(ports: &[EndpointPort]) -> Self {
        let mut v: Vec<PortKey> = ports.iter().map(port_key).collect();
        v.sort();
        PortMapKey(v)
    }
}

/// What identifies an endpoint across syncs: its sorted addresses, hostname and target
/// pod (upstream `endpointHash`); conditions, node and zone may change in place.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EndpointKey {
    addresses: Vec<String>,
    hostname: String,
    namespace: String,
    name: String,
}

impl EndpointKey {
    /// The key of `ep`.
    pub fn of(ep: &Endpoint) -> Self {
        let mut addresses = ep.addresses.clone();
        addresses.sort();
        let r = ep.target_ref.as_ref();
        EndpointKey {
            addresses,
            hostname: ep.hostname.clone().unwrap_or_default(),
            namespace: r.and_then(|r| r.namespace.clone()).unwrap_or_default(),
            name: r.and_then(|r| r.name.clone()).unwrap_or_default(),
        }
    }
}

/// Whether two endpoints with the same [`EndpointKey`] are equal in what the key leaves
/// out (upstream `EndpointsEqualBeyondHash`): node, zone, the three conditions and the
/// target reference apart from its resourceVersion.
pub fn endpoints_equal_beyond_hash(a: &Endpoint, b: &Endpoint) -> bool {
    let cond = |e: &Endpoint| {
        let c = e.conditions.clone().unwrap_or_default();
        (c.ready, c.serving, c.terminating)
    };
    let target = |e: &Endpoint| {
        e.target_ref.clone().map(|mut r| {
            r.resource_version = None;
            r
        })
    };
    a.node_name == b.node_name && a.zone == b.zone && cond(a) == cond(b) && target(a) == target(b)
}

fn is_reserved_label(key: &str) -> bool {
    key == LABEL_SERVICE_NAME || key == LABEL_MANAGED_BY || key == LABEL_HEADLESS
}

/// The labels a slice of `service` should carry and whether its own (non-reserved)
/// labels differ from the Service's (upstream `setEndpointSliceLabels`): the Service's
/// labels except the reserved ones, the headless label for a Service without a cluster
/// IP, the Service name and the manager.
pub fn set_endpoint_slice_labels(
    slice: &EndpointSlice,
    service: &Service,
    controller_name: &str,
) -> (BTreeMap<String, String>, bool) {
    let own: BTreeMap<String, String> = slice
        .metadata
        .labels
        .iter()
        .flatten()
        .filter(|(k, _)| !is_reserved_label(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let mut labels: BTreeMap<String, String> = service
        .metadata
        .labels
        .iter()
        .flatten()
        .filter(|(k, _)| !is_reserved_label(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let updated = own != labels;
    if !is_service_ip_set(service) {
        labels.insert(LABEL_HEADLESS.into(), String::new());
    }
    labels.insert(
        LABEL_SERVICE_NAME.into(),
        service.metadata.name.clone().unwrap_or_default(),
    );
    labels.insert(LABEL_MANAGED_BY.into(), controller_name.into());
    (labels, updated)
}

/// The `generateName` of a Service's slices (upstream `getEndpointSlicePrefix`):
/// `<service>-`, or the bare name when the dash would make it too long.
pub fn endpoint_slice_prefix(service_name: &str) -> String {
    let prefix = format!("{service_name}-");
    if prefix.len() > 253 {
        service_name.to_string()
    } else {
        prefix
    }
}

/// A new, empty slice of `service` for `meta` (upstream `newEndpointSlice`): generated
/// name, controller reference to the Service, the Service's labels plus the reserved
/// ones.
pub fn new_endpoint_slice(
    service: &Service,
    meta: &EndpointMeta,
    controller_name: &str,
) -> EndpointSlice {
    let mut slice = EndpointSlice {
        metadata: ObjectMeta {
            generate_name: Some(endpoint_slice_prefix(
                service.metadata.name.as_deref().unwrap_or_default(),
            )),
            namespace: service.metadata.namespace.clone(),
            owner_references: Some(vec![new_controller_ref(service)]),
            labels: Some(BTreeMap::new()),
            ..Default::default()
        },
        address_type: meta.address_type.clone(),
        endpoints: Some(Vec::new()),
        ports: Some(meta.ports.clone()),
    };
    let (labels, _) = set_endpoint_slice_labels(&slice, service, controller_name);
    slice.metadata.labels = Some(labels);
    slice
}

/// Whether the slice has a `v1`/`Service` owner reference with the Service's UID
/// (upstream `ownedBy`).
pub fn owned_by(slice: &EndpointSlice, service: &Service) -> bool {
    let uid = service.metadata.uid.as_deref().unwrap_or_default();
    slice
        .metadata
        .owner_references
        .iter()
        .flatten()
        .any(|o| o.uid == uid && o.kind == "Service" && o.api_version == "v1")
}

/// Among `slices`, the one that would be closest to full after taking `num_endpoints`
/// more without exceeding `max_endpoints` (upstream `getSliceToFill`); the first of
/// equally close ones.
pub fn slice_to_fill<'a>(
    slices: impl IntoIterator<Item = &'a EndpointSlice>,
    num_endpoints: usize,
    max_endpoints: usize,
) -> Option<&'a EndpointSlice> {
    let mut closest: Option<(usize, &EndpointSlice)> = None;
    for slice in slices {
        let Some(diff) =
            max_endpoints.checked_sub(num_endpoints + slice.endpoints.as_ref().map_or(0, Vec::len))
        else {
            continue;
        };
        if closest.is_none_or(|(d, _)| diff < d) && diff < max_endpoints {
            closest = Some((diff, slice));
            if diff == 0 {
                break;
            }
        }
    }
    closest.map(|(_, s)| s)
}

/// The key of the Service a slice belongs to, from its Service-name label (upstream
/// `ServiceControllerKey`).
pub fn service_controller_key(
    slice: &EndpointSlice,
) -> Result<coxswain_runtime::ObjectKey, String> {
    match slice
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(LABEL_SERVICE_NAME))
    {
        Some(name) if !name.is_empty() => Ok(coxswain_runtime::ObjectKey::from_parts(
            slice.metadata.namespace.as_deref(),
            name,
        )),
        _ => Err(format!("EndpointSlice missing {LABEL_SERVICE_NAME} label")),
    }
}

/// The address types of a Service's slices (upstream `getAddressTypesForService`): from
/// `ipFamilies`; without them (an old API server) the family of the cluster IP, or both
/// for a headless Service. Sorted, IPv4 first.
pub fn address_types_for_service(service: &Service) -> Vec<&'static str> {
    let spec = service.spec.as_ref();
    let mut types = Vec::new();
    for family in spec
        .and_then(|s| s.ip_families.as_ref())
        .into_iter()
        .flatten()
    {
        let t = match family.as_str() {
            "IPv4" => ADDRESS_TYPE_IPV4,
            "IPv6" => ADDRESS_TYPE_IPV6,
            _ => continue,
        };
        if !types.contains(&t) {
            types.push(t);
        }
    }
    if types.is_empty() {
        let ip = spec.and_then(|s| s.cluster_ip.as_deref()).unwrap_or("");
        if !ip.is_empty() && ip != "None" {
            types.push(if ip.parse::<std::net::Ipv6Addr>().is_ok() {
                ADDRESS_TYPE_IPV6
            } else {
                ADDRESS_TYPE_IPV4
            });
        } else {
            types = vec![ADDRESS_TYPE_IPV4, ADDRESS_TYPE_IPV6];
        }
    }
    types.sort();
    types
}
