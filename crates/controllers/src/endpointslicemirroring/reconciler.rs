//! What the mirroring controller writes for one Endpoints object (upstream
//! `reconciler.go`, `reconciler_helpers.go`, `utils.go`), as a pure function of the
//! Endpoints and the slices it mirrored before: [`plan`] returns the slices to create,
//! update and delete; the controller only carries the plan out.
//!
//! Every subset (after [`repack_subsets`]) becomes, per address type, one group keyed
//! by its ports; a group is mirrored to exactly one slice of at most
//! `max_endpoints_per_subset` endpoints. Ready addresses become endpoints with
//! `ready: true`, not-ready ones `ready: false`; an address that is no IP is skipped
//! (and counted, for the controller's warning event). An existing slice that already
//! holds the desired endpoints, labels and annotations is left alone; otherwise it is
//! rewritten whole. Slices left over are deleted, unless a new slice of the same address
//! type can take over their name (upstream `recycleSlices`).

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use k8s_openapi::api::core::v1::{EndpointAddress, EndpointPort as CorePort, Endpoints};
use k8s_openapi::api::discovery::v1::{Endpoint, EndpointConditions, EndpointPort, EndpointSlice};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

use crate::endpoint::subsets::repack_subsets;

/// `endpointslice.kubernetes.io/managed-by`.
pub const LABEL_MANAGED_BY: &str = "endpointslice.kubernetes.io/managed-by";
/// `kubernetes.io/service-name`.
pub const LABEL_SERVICE_NAME: &str = "kubernetes.io/service-name";
/// `endpointslice.kubernetes.io/skip-mirror`: Endpoints labelled `"true"` are not
/// mirrored.
pub const LABEL_SKIP_MIRROR: &str = "endpointslice.kubernetes.io/skip-mirror";
/// The value of [`LABEL_MANAGED_BY`] on the slices this controller writes.
pub const MANAGED_BY: &str = "endpointslicemirroring-controller.k8s.io";
/// `endpoints.kubernetes.io/last-change-trigger-time`: not mirrored.
pub const ANNOTATION_TRIGGER_TIME: &str = "endpoints.kubernetes.io/last-change-trigger-time";
/// `kubectl.kubernetes.io/last-applied-configuration`: not mirrored.
pub const ANNOTATION_LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// The address type of a slice.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum AddressType {
    /// `IPv4`.
    IPv4,
    /// `IPv6`.
    IPv6,
}

impl AddressType {
    /// The API's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            AddressType::IPv4 => "IPv4",
            AddressType::IPv6 => "IPv6",
        }
    }
}

/// Parse an IP as Go's `ParseIPSloppy` (IPv4 octets may have leading zeros) and give its
/// canonical text and address type (an IPv4-mapped IPv6 address is IPv4, as Go's
/// `To4`).
pub fn parse_ip(s: &str) -> Option<(String, AddressType)> {
    let ip: IpAddr = match s.parse() {
        Ok(ip) => ip,
        Err(_) => {
            let octets: Vec<&str> = s.split('.').collect();
            if octets.len() != 4 {
                return None;
            }
            let mut out = [0u8; 4];
            for (o, text) in out.iter_mut().zip(octets) {
                if text.is_empty() || text.len() > 3 || !text.bytes().all(|b| b.is_ascii_digit()) {
                    return None;
                }
                *o = text.parse().ok()?;
            }
            IpAddr::from(out)
        }
    };
    match ip {
        IpAddr::V4(v4) => Some((v4.to_string(), AddressType::IPv4)),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => Some((v4.to_string(), AddressType::IPv4)),
            None => Some((v6.to_string(), AddressType::IPv6)),
        },
    }
}

/// A group's key: the address type and the ports in a fixed order (upstream
/// `addrTypePortMapKey`).
type GroupKey = (AddressType, Vec<(String, i32, String, String)>);

fn group_key(ports: &[EndpointPort], address_type: AddressType) -> GroupKey {
    let mut p: Vec<_> = ports
        .iter()
        .map(|p| {
            (
                p.name.clone().unwrap_or_default(),
                p.port.unwrap_or_default(),
                p.protocol.clone().unwrap_or_default(),
                p.app_protocol.clone().unwrap_or_default(),
            )
        })
        .collect();
    p.sort();
    (address_type, p)
}

fn slice_address_type(slice: &EndpointSlice) -> AddressType {
    if slice.address_type == "IPv6" {
        AddressType::IPv6
    } else {
        AddressType::IPv4
    }
}

/// An endpoint's identity (upstream `endpointHash`): its sorted addresses, hostname and
/// target namespace and name.
type EndpointKey = (Vec<String>, String, String, String);

fn endpoint_key(e: &Endpoint) -> EndpointKey {
    let mut addresses = e.addresses.clone();
    addresses.sort();
    let (ns, name) = e
        .target_ref
        .as_ref()
        .map(|r| {
            (
                r.namespace.clone().unwrap_or_default(),
                r.name.clone().unwrap_or_default(),
            )
        })
        .unwrap_or_default();
    (addresses, e.hostname.clone().unwrap_or_default(), ns, name)
}

/// Whether two endpoints of the same identity differ in nothing else (upstream
/// `EndpointsEqualBeyondHash`).
pub fn endpoints_equal_beyond_hash(a: &Endpoint, b: &Endpoint) -> bool {
    let (ca, cb) = (
        a.conditions.clone().unwrap_or_default(),
        b.conditions.clone().unwrap_or_default(),
    );
    a.node_name == b.node_name
        && a.zone == b.zone
        && ca.ready == cb.ready
        && ca.serving == cb.serving
        && ca.terminating == cb.terminating
        && a.hints == b.hints
        && a.target_ref == b.target_ref
}

/// The endpoint an address becomes, or `None` when it is no IP (upstream
/// `addressToEndpoint`).
pub fn address_to_endpoint(
    address: &EndpointAddress,
    ready: bool,
) -> Option<(Endpoint, AddressType)> {
    let (ip, address_type) = parse_ip(&address.ip)?;
    Some((
        Endpoint {
            addresses: vec![ip],
            conditions: Some(EndpointConditions {
                ready: Some(ready),
                ..Default::default()
            }),
            target_ref: address.target_ref.clone(),
            node_name: address.node_name.clone(),
            hostname: address.hostname.clone().filter(|h| !h.is_empty()),
            ..Default::default()
        },
        address_type,
    ))
}

/// The ports of a subset as slice ports (upstream `epPortsToEpsPorts`).
pub fn slice_ports(ports: &[CorePort]) -> Vec<EndpointPort> {
    ports
        .iter()
        .map(|p| EndpointPort {
            name: Some(p.name.clone().unwrap_or_default()),
            port: Some(p.port),
            protocol: Some(p.protocol.clone().unwrap_or_default()),
            app_protocol: p.app_protocol.clone(),
        })
        .collect()
}

/// The `generateName` of a new slice: `<name>-`, or `<name>` when that is too long
/// for a name (upstream `getEndpointSlicePrefix`).
pub fn slice_name_prefix(name: &str) -> String {
    if name.len() < 253 {
        format!("{name}-")
    } else {
        name.to_string()
    }
}

/// The annotations of `endpoints` that slices carry: all but the trigger time and
/// kubectl's last applied configuration.
fn mirrored_annotations(endpoints: &Endpoints) -> BTreeMap<String, String> {
    let mut a = endpoints.metadata.annotations.clone().unwrap_or_default();
    a.remove(ANNOTATION_TRIGGER_TIME);
    a.remove(ANNOTATION_LAST_APPLIED);
    a
}

/// A slice for `endpoints` with these ports and address type, named `name` (an update)
/// or generated (a create) (upstream `newEndpointSlice`).
pub fn new_slice(
    endpoints: &Endpoints,
    ports: &[EndpointPort],
    address_type: AddressType,
    name: Option<String>,
) -> EndpointSlice {
    let ep_name = endpoints.metadata.name.clone().unwrap_or_default();
    let mut labels = endpoints.metadata.labels.clone().unwrap_or_default();
    labels.insert(LABEL_SERVICE_NAME.into(), ep_name.clone());
    labels.insert(LABEL_MANAGED_BY.into(), MANAGED_BY.into());
    let owner = OwnerReference {
        api_version: "v1".into(),
        kind: "Endpoints".into(),
        name: ep_name.clone(),
        uid: endpoints.metadata.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    };
    let generate_name = name.is_none().then(|| slice_name_prefix(&ep_name));
    EndpointSlice {
        metadata: ObjectMeta {
            name,
            generate_name,
            namespace: endpoints.metadata.namespace.clone(),
            labels: Some(labels),
            annotations: Some(mirrored_annotations(endpoints)),
            owner_references: Some(vec![owner]),
            ..Default::default()
        },
        address_type: address_type.as_str().into(),
        endpoints: Some(Vec::new()),
        ports: Some(ports.to_vec()),
    }
}

/// Endpoint counts of a plan (upstream `totalsByAction`, the per-sync metrics).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    /// Endpoints added.
    pub added: usize,
    /// Endpoints changed in place.
    pub updated: usize,
    /// Endpoints removed.
    pub removed: usize,
}

impl Totals {
    fn add(&mut self, o: Totals) {
        self.added += o.added;
        self.updated += o.updated;
        self.removed += o.removed;
    }
}

/// What to write for one Endpoints object.
#[derive(Clone, Debug, Default)]
pub struct Plan {
    /// New slices (with `generateName`).
    pub to_create: Vec<EndpointSlice>,
    /// Slices rewritten whole (by name).
    pub to_update: Vec<EndpointSlice>,
    /// Slices to delete.
    pub to_delete: Vec<EndpointSlice>,
    /// Endpoint counts.
    pub totals: Totals,
    /// Endpoints desired in all.
    pub desired_endpoints: usize,
    /// Addresses that were no IP.
    pub invalid_addresses: usize,
    /// Addresses not mirrored: invalid or over `max_endpoints_per_subset`.
    pub skipped_addresses: usize,
}

impl Plan {
    /// Whether the plan writes nothing.
    pub fn is_empty(&self) -> bool {
        self.to_create.is_empty() && self.to_update.is_empty() && self.to_delete.is_empty()
    }
}

#[derive(Default)]
struct Group {
    ports: Vec<EndpointPort>,
    endpoints: BTreeMap<EndpointKey, Endpoint>,
}

/// Whether the existing slice's Endpoints owner is another object of the same name (the
/// Endpoints was deleted and created again): its slice is rewritten for the new owner.
fn owned_by_previous_endpoints(endpoints: &Endpoints, slice: &EndpointSlice) -> bool {
    slice.metadata.owner_references.iter().flatten().any(|o| {
        o.kind == "Endpoints"
            && Some(&o.name) == endpoints.metadata.name.as_ref()
            && Some(&o.uid) != endpoints.metadata.uid.as_ref()
    })
}

/// What to write so that the slices mirror `endpoints`: `existing` are the slices this
/// controller wrote for it before (upstream `reconciler.reconcile`).
pub fn plan(
    endpoints: &Endpoints,
    existing: &[EndpointSlice],
    max_endpoints_per_subset: usize,
) -> Plan {
    let mut out = Plan::default();
    let mut desired: BTreeMap<GroupKey, Group> = BTreeMap::new();

    let subsets = repack_subsets(endpoints.subsets.as_deref().unwrap_or_default());
    for subset in &subsets {
        let ports = slice_ports(subset.ports.as_deref().unwrap_or_default());
        let keys = [AddressType::IPv4, AddressType::IPv6].map(|t| group_key(&ports, t));
        for key in &keys {
            desired.entry(key.clone()).or_default().ports = ports.clone();
        }
        let ready = subset.addresses.iter().flatten().map(|a| (a, true));
        let not_ready = subset
            .not_ready_addresses
            .iter()
            .flatten()
            .map(|a| (a, false));
        let mut total = 0;
        let mut added = 0;
        for (address, is_ready) in ready.chain(not_ready) {
            total += 1;
            if added >= max_endpoints_per_subset {
                continue;
            }
            match address_to_endpoint(address, is_ready) {
                Some((endpoint, t)) => {
                    let key = &keys[usize::from(t == AddressType::IPv6)];
                    if let Some(g) = desired.get_mut(key) {
                        g.endpoints.insert(endpoint_key(&endpoint), endpoint);
                    }
                    added += 1;
                }
                None => out.invalid_addresses += 1,
            }
        }
        out.skipped_addresses += total - added;
    }

    let mut existing_by_key: BTreeMap<GroupKey, Vec<&EndpointSlice>> = BTreeMap::new();
    let mut sorted: Vec<&EndpointSlice> = existing.iter().collect();
    sorted.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    for s in sorted {
        let key = group_key(
            s.ports.as_deref().unwrap_or_default(),
            slice_address_type(s),
        );
        existing_by_key.entry(key).or_default().push(s);
    }

    let compare_annotations = mirrored_annotations(endpoints);
    let endpoint_labels = endpoints.metadata.labels.clone().unwrap_or_default();
    for (key, group) in &desired {
        out.desired_endpoints += group.endpoints.len();
        let slices = existing_by_key
            .get(key)
            .map(Vec::as_slice)
            .unwrap_or_default();
        if group.endpoints.is_empty() {
            for s in slices {
                out.totals.removed += s.endpoints.as_ref().map_or(0, Vec::len);
                out.to_delete.push((*s).clone());
            }
            continue;
        }
        let mut name = None;
        if let Some((first, rest)) = slices.split_first() {
            out.to_delete.extend(rest.iter().map(|s| (*s).clone()));
            let totals = total_changes(first, &group.endpoints);
            out.totals.add(totals);
            let mut labels = first.metadata.labels.clone().unwrap_or_default();
            labels.remove(LABEL_MANAGED_BY);
            labels.remove(LABEL_SERVICE_NAME);
            let unchanged = totals == Totals::default()
                && labels == endpoint_labels
                && first.metadata.annotations.clone().unwrap_or_default() == compare_annotations
                && !owned_by_previous_endpoints(endpoints, first);
            if unchanged {
                continue;
            }
            name = first.metadata.name.clone();
        } else {
            out.totals.added += group.endpoints.len();
        }
        let mut slice = new_slice(endpoints, &group.ports, key.0, name);
        slice.endpoints = Some(
            group
                .endpoints
                .values()
                .take(max_endpoints_per_subset)
                .cloned()
                .collect(),
        );
        if slice.metadata.name.is_some() {
            out.to_update.push(slice);
        } else {
            out.to_create.push(slice);
        }
    }
    // slices of ports no longer desired
    for (key, slices) in &existing_by_key {
        if !desired.contains_key(key) {
            out.to_delete.extend(slices.iter().map(|s| (*s).clone()));
        }
    }
    recycle(&mut out);
    out
}

/// How one existing slice differs from the desired endpoints (upstream `totalChanges`).
fn total_changes(slice: &EndpointSlice, desired: &BTreeMap<EndpointKey, Endpoint>) -> Totals {
    let mut t = Totals::default();
    let mut matches = BTreeSet::new();
    for e in slice.endpoints.iter().flatten() {
        let key = endpoint_key(e);
        match desired.get(&key) {
            None => t.removed += 1,
            Some(want) => {
                matches.insert(key);
                if !endpoints_equal_beyond_hash(want, e) {
                    t.updated += 1;
                }
            }
        }
    }
    t.added = desired.len().saturating_sub(matches.len());
    t
}

/// Creates take over the names of deletes of the same address type, becoming updates
/// (upstream `recycleSlices`).
fn recycle(plan: &mut Plan) {
    for t in ["IPv4", "IPv6"] {
        loop {
            let c = plan.to_create.iter().position(|s| s.address_type == t);
            let d = plan.to_delete.iter().position(|s| s.address_type == t);
            let (Some(c), Some(d)) = (c, d) else { break };
            let mut slice = plan.to_create.remove(c);
            let old = plan.to_delete.remove(d);
            slice.metadata.name = old.metadata.name;
            slice.metadata.generate_name = None;
            plan.to_update.push(slice);
        }
    }
}
