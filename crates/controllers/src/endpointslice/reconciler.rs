//! The placement of a Service's endpoints into slices, after upstream's `Reconciler`
//! (`k8s.io/endpointslice/reconciler.go`), as a pure function from the Service, its pods
//! and its current slices to the slices to create, update and delete ([`plan`]).
//!
//! Per address type and per set of ports (pods with different named-port numbers land in
//! different slices):
//!
//! 1. every existing slice keeps the endpoints still desired (updated in place when
//!    their conditions, node or zone changed) and loses the others; a slice left empty
//!    is deleted, a changed one updated, an untouched one kept as is;
//! 2. new endpoints first fill the slices already being updated, fullest first;
//! 3. what is left goes into the unchanged slice that it would bring closest to full
//!    (only when fewer than a slice's worth remain), else into new slices.
//!
//! A Service without endpoints keeps one empty placeholder slice; creations paired with
//! deletions become updates of the slices that would be deleted ([`finalize`]). With a
//! `trafficDistribution` (`PreferClose`, `PreferSameZone`, `PreferSameNode`) ready
//! endpoints carry a hint for their own zone (and node); otherwise written slices carry
//! no hints (the `service.kubernetes.io/topology-mode: Auto` heuristic is not
//! implemented).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod, Service};
use k8s_openapi::api::discovery::v1::{Endpoint, EndpointHints, EndpointSlice, ForNode, ForZone};

use super::utils::{
    address_types_for_service, endpoint_ports, endpoints_equal_beyond_hash, new_endpoint_slice,
    owned_by, pod_to_endpoint, set_endpoint_slice_labels, slice_to_fill, EndpointKey, EndpointMeta,
    PortMapKey,
};
use crate::endpointutil::should_pod_be_in_endpoints;

/// A slice's endpoints (none when unset).
pub fn eps(slice: &EndpointSlice) -> &[Endpoint] {
    slice.endpoints.as_deref().unwrap_or_default()
}

/// What a sync writes.
#[derive(Clone, Debug, Default)]
pub struct Plan {
    /// New slices (generated names).
    pub to_create: Vec<EndpointSlice>,
    /// Changed slices (with the name and resourceVersion they replace).
    pub to_update: Vec<EndpointSlice>,
    /// Slices to delete.
    pub to_delete: Vec<EndpointSlice>,
    /// Pods left out for a reason worth a retry (their node is not known yet).
    pub errors: Vec<String>,
}

/// The inputs of [`plan`] besides the Service and its pods.
pub struct Params<'a> {
    /// The slices this controller manages for the Service.
    pub existing: &'a [Arc<EndpointSlice>],
    /// The node of a pod, by name.
    pub node: &'a dyn Fn(&str) -> Option<Arc<Node>>,
    /// `--max-endpoints-per-slice`.
    pub max_endpoints_per_slice: usize,
    /// The managed-by label value.
    pub controller_name: &'a str,
}

/// The writes that make the Service's slices represent `pods` (upstream `Reconcile`).
pub fn plan(service: &Service, pods: &[Arc<Pod>], p: &Params<'_>) -> Plan {
    let types = address_types_for_service(service);
    let mut out = Plan::default();
    let mut by_type: BTreeMap<&str, Vec<&EndpointSlice>> = BTreeMap::new();
    let mut unsupported = Vec::new();
    for slice in p.existing {
        match types.iter().find(|t| **t == slice.address_type) {
            Some(t) => by_type.entry(t).or_default().push(slice),
            None => unsupported.push(slice.as_ref().clone()),
        }
    }
    for t in &types {
        let existing = by_type.remove(t).unwrap_or_default();
        let mut part = plan_address_type(service, pods, &existing, t, p);
        finalize(service, &mut part);
        out.to_create.append(&mut part.to_create);
        out.to_update.append(&mut part.to_update);
        out.to_delete.append(&mut part.to_delete);
        out.errors.append(&mut part.errors);
    }
    out.to_delete.extend(unsupported);
    out
}

/// Upstream `reconcileByAddressType`.
fn plan_address_type(
    service: &Service,
    pods: &[Arc<Pod>],
    existing: &[&EndpointSlice],
    address_type: &str,
    p: &Params<'_>,
) -> Plan {
    let mut out = Plan::default();
    let mut existing_by_ports: BTreeMap<PortMapKey, Vec<&EndpointSlice>> = BTreeMap::new();
    for slice in existing {
        if owned_by(slice, service) {
            let key = PortMapKey::new(slice.ports.as_deref().unwrap_or_default());
            existing_by_ports.entry(key).or_default().push(slice);
        } else {
            out.to_delete.push((*slice).clone());
        }
    }

    let publish_not_ready = service
        .spec
        .as_ref()
        .and_then(|s| s.publish_not_ready_addresses)
        .unwrap_or(false);
    let mut desired_meta: BTreeMap<PortMapKey, EndpointMeta> = BTreeMap::new();
    let mut desired: BTreeMap<PortMapKey, BTreeMap<EndpointKey, Endpoint>> = BTreeMap::new();
    for pod in pods {
        if !should_pod_be_in_endpoints(pod, true) {
            continue;
        }
        let ports = endpoint_ports(service, pod);
        let key = PortMapKey::new(&ports);
        desired_meta
            .entry(key.clone())
            .or_insert_with(|| EndpointMeta {
                ports,
                address_type: address_type.to_string(),
            });
        let set = desired.entry(key).or_default();
        let node_name = pod
            .spec
            .as_ref()
            .and_then(|s| s.node_name.as_deref())
            .unwrap_or("");
        let node = (p.node)(node_name);
        if node.is_none() && !publish_not_ready {
            out.errors.push(format!(
                "skipping Pod {} for Service {}/{}: Node {} Not Found",
                pod.metadata.name.as_deref().unwrap_or_default(),
                service.metadata.namespace.as_deref().unwrap_or_default(),
                service.metadata.name.as_deref().unwrap_or_default(),
                node_name
            ));
            continue;
        }
        let ep = pod_to_endpoint(pod, node.as_deref(), service, address_type);
        if !ep.addresses.is_empty() {
            set.insert(EndpointKey::of(&ep), ep);
        }
    }

    for (key, set) in desired.iter_mut() {
        let existing = existing_by_ports.get(key).map(Vec::as_slice).unwrap_or(&[]);
        let (mut c, mut u, mut d) =
            plan_port_mapping(service, existing, set, &desired_meta[key], p);
        out.to_create.append(&mut c);
        out.to_update.append(&mut u);
        out.to_delete.append(&mut d);
    }
    for (key, slices) in &existing_by_ports {
        if !desired.contains_key(key) {
            out.to_delete.extend(slices.iter().map(|s| (*s).clone()));
        }
    }

    // a Service without endpoints keeps one placeholder slice
    if existing.len() == out.to_delete.len() && out.to_create.is_empty() {
        let placeholder = new_endpoint_slice(
            service,
            &EndpointMeta {
                ports: Vec::new(),
                address_type: address_type.to_string(),
            },
            p.controller_name,
        );
        if out.to_delete.len() == 1 && placeholder_equal(&out.to_delete[0], &placeholder) {
            out.to_delete.clear();
        } else {
            out.to_create.push(placeholder);
        }
    }

    // hints: the trafficDistribution ones (upstream trafficdist.ReconcileHints), else
    // none on the slices written (upstream RemoveHintsFromSlices; the topology
    // annotation's heuristic is not implemented)
    match traffic_distribution(service) {
        Some(same_node) => {
            let changed: BTreeSet<&str> = out
                .to_update
                .iter()
                .chain(&out.to_delete)
                .filter_map(|s| s.metadata.name.as_deref())
                .collect();
            let stale: Vec<EndpointSlice> = existing
                .iter()
                .filter(|s| !changed.contains(s.metadata.name.as_deref().unwrap_or_default()))
                .filter(|s| hints_need_update(s, same_node))
                .map(|s| (*s).clone())
                .collect();
            out.to_update.extend(stale);
            for slice in out.to_create.iter_mut().chain(out.to_update.iter_mut()) {
                set_close_hints(slice, same_node);
            }
        }
        None => {
            for slice in out.to_create.iter_mut().chain(out.to_update.iter_mut()) {
                for ep in slice.endpoints.iter_mut().flatten() {
                    ep.hints = None;
                }
            }
        }
    }
    out
}

/// Whether hints follow the Service's `trafficDistribution` (`PreferClose`,
/// `PreferSameZone`, or `PreferSameNode`: `Some(true)` for node hints too), unless the
/// topology annotation asks for its own heuristic (upstream `validTrafficDistribution`
/// and `hintsEnabled`).
fn traffic_distribution(service: &Service) -> Option<bool> {
    let annotations = service.metadata.annotations.as_ref();
    let mode = annotations.and_then(|a| {
        a.get("service.kubernetes.io/topology-aware-hints")
            .or_else(|| a.get("service.kubernetes.io/topology-mode"))
    });
    if mode.is_some_and(|m| m == "Auto" || m == "auto") {
        return None;
    }
    match service.spec.as_ref()?.traffic_distribution.as_deref()? {
        "PreferClose" | "PreferSameZone" => Some(false),
        "PreferSameNode" => Some(true),
        _ => None,
    }
}

fn endpoint_ready(ep: &Endpoint) -> bool {
    ep.conditions.as_ref().and_then(|c| c.ready) == Some(true)
}

/// Upstream `preferCloseHeuristic.needsUpdate`: a ready endpoint whose zone (and node)
/// hint is missing, wrong or stale.
fn hints_need_update(slice: &EndpointSlice, same_node: bool) -> bool {
    eps(slice).iter().filter(|e| endpoint_ready(e)).any(|e| {
        let h = e.hints.clone().unwrap_or_default();
        let zones = h.for_zones.unwrap_or_default();
        let nodes = h.for_nodes.unwrap_or_default();
        let zone_ok = match &e.zone {
            Some(z) => zones.len() == 1 && zones[0].name == *z,
            None => zones.is_empty(),
        };
        let node_ok = match (&e.node_name, same_node) {
            (Some(n), true) => nodes.len() == 1 && nodes[0].name == *n,
            _ => nodes.is_empty(),
        };
        !zone_ok || !node_ok
    })
}

/// Upstream `preferCloseHeuristic.update`: ready endpoints get a hint for their own zone
/// (and node); not-ready ones are left as they are.
fn set_close_hints(slice: &mut EndpointSlice, same_node: bool) {
    for ep in slice.endpoints.iter_mut().flatten() {
        if !endpoint_ready(ep) {
            continue;
        }
        let for_zones = ep.zone.clone().map(|name| vec![ForZone { name }]);
        let for_nodes = ep
            .node_name
            .clone()
            .filter(|_| same_node)
            .map(|name| vec![ForNode { name }]);
        ep.hints = (for_zones.is_some() || for_nodes.is_some()).then_some(EndpointHints {
            for_zones,
            for_nodes,
        });
    }
}

/// Upstream `placeholderSliceCompare`: same namespace, labels, owner references, address
/// type, no ports and no endpoints (an empty list is no list).
fn placeholder_equal(a: &EndpointSlice, b: &EndpointSlice) -> bool {
    let labels = |s: &EndpointSlice| s.metadata.labels.clone().unwrap_or_default();
    let owners = |s: &EndpointSlice| s.metadata.owner_references.clone().unwrap_or_default();
    let ports = |s: &EndpointSlice| s.ports.clone().unwrap_or_default();
    a.metadata.namespace == b.metadata.namespace
        && labels(a) == labels(b)
        && owners(a) == owners(b)
        && a.address_type == b.address_type
        && ports(a) == ports(b)
        && eps(a) == eps(b)
}

/// Upstream `reconcileByPortMapping`: (create, update, delete).
fn plan_port_mapping(
    service: &Service,
    existing: &[&EndpointSlice],
    desired: &mut BTreeMap<EndpointKey, Endpoint>,
    meta: &EndpointMeta,
    p: &Params<'_>,
) -> (Vec<EndpointSlice>, Vec<EndpointSlice>, Vec<EndpointSlice>) {
    let max = p.max_endpoints_per_slice.max(1);
    let mut by_name: BTreeMap<String, EndpointSlice> = BTreeMap::new();
    let mut unchanged: BTreeSet<String> = BTreeSet::new();
    let mut to_update: BTreeSet<String> = BTreeSet::new();
    let mut to_delete: BTreeSet<String> = BTreeSet::new();

    // 1. keep what is still desired, drop the rest, update what changed
    for slice in existing {
        let name = slice.metadata.name.clone().unwrap_or_default();
        let mut kept = Vec::new();
        let mut endpoint_updated = false;
        for ep in eps(slice) {
            if let Some(want) = desired.remove(&EndpointKey::of(ep)) {
                if !endpoints_equal_beyond_hash(&want, ep) {
                    endpoint_updated = true;
                }
                kept.push(want);
            }
        }
        let (labels, labels_changed) = set_endpoint_slice_labels(slice, service, p.controller_name);
        if endpoint_updated || kept.len() != eps(slice).len() {
            if kept.is_empty() {
                to_delete.insert(name.clone());
                by_name.insert(name, (*slice).clone());
            } else {
                let mut s = (*slice).clone();
                s.endpoints = Some(kept);
                s.metadata.labels = Some(labels);
                to_update.insert(name.clone());
                by_name.insert(name, s);
            }
        } else if labels_changed {
            let mut s = (*slice).clone();
            s.metadata.labels = Some(labels);
            to_update.insert(name.clone());
            by_name.insert(name, s);
        } else {
            unchanged.insert(name.clone());
            by_name.insert(name, (*slice).clone());
        }
    }

    let pop = |desired: &mut BTreeMap<EndpointKey, Endpoint>| desired.pop_first().map(|(_, e)| e);

    // 2. fill the slices being updated, fullest first
    if !desired.is_empty() && !to_update.is_empty() {
        let mut names: Vec<&String> = to_update.iter().collect();
        names.sort_by_key(|n| std::cmp::Reverse(eps(&by_name[*n]).len()));
        for name in names {
            let slice = by_name.get_mut(name).expect("slice being updated");
            while eps(slice).len() < max {
                match pop(desired) {
                    Some(ep) => slice.endpoints.get_or_insert_with(Vec::new).push(ep),
                    None => break,
                }
            }
        }
    }

    // 3. the rest: into the unchanged slice it fits best, else new slices
    let mut to_create = Vec::new();
    while !desired.is_empty() {
        let mut fill: Option<EndpointSlice> = None;
        if desired.len() < max && !unchanged.is_empty() {
            let candidates = unchanged.iter().map(|n| &by_name[n]);
            fill = slice_to_fill(candidates, desired.len(), max).cloned();
        }
        let mut slice =
            fill.unwrap_or_else(|| new_endpoint_slice(service, meta, p.controller_name));
        while eps(&slice).len() < max {
            match pop(desired) {
                Some(ep) => slice.endpoints.get_or_insert_with(Vec::new).push(ep),
                None => break,
            }
        }
        match slice.metadata.name.clone() {
            Some(name) => {
                unchanged.remove(&name);
                to_update.insert(name.clone());
                by_name.insert(name, slice);
            }
            None => to_create.push(slice),
        }
    }

    let take = |names: &BTreeSet<String>, by_name: &BTreeMap<String, EndpointSlice>| {
        names.iter().map(|n| by_name[n].clone()).collect::<Vec<_>>()
    };
    (
        to_create,
        take(&to_update, &by_name),
        take(&to_delete, &by_name),
    )
}

/// Upstream `finalize`'s pairing: a creation and a deletion of a slice this Service owns
/// with the same address type become an update of the slice that would be deleted.
pub fn finalize(service: &Service, plan: &mut Plan) {
    let mut i = 0;
    while i < plan.to_delete.len() && !plan.to_create.is_empty() {
        let old = &plan.to_delete[i];
        let last = plan.to_create.last().expect("a creation");
        if old.address_type == last.address_type && owned_by(old, service) {
            let old = plan.to_delete.remove(i);
            let mut slice = plan.to_create.pop().expect("a creation");
            slice.metadata.name = old.metadata.name.clone();
            slice.metadata.generate_name = None;
            slice.metadata.resource_version = old.metadata.resource_version.clone();
            plan.to_update.push(slice);
        } else {
            i += 1;
        }
    }
}
