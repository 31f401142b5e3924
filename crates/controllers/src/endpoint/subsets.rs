//! The canonical layout of an Endpoints object's subsets (upstream
//! `pkg/api/v1/endpoints`: `RepackSubsets`, `SortSubsets`).
//!
//! Subsets may list the same address under several ports, and the same port in several
//! subsets; [`repack_subsets`] expands them to "which addresses offer which port" and
//! packs them again so that every set of addresses that offers the same ports is one
//! subset. An address is identified by its IP and the UID of its target; an address
//! that is not ready for any port it offers is not ready for that port, whatever other
//! subsets say. The result is sorted ([`sort_subsets`]), so two equivalent subset lists
//! compare equal.
//!
//! Upstream orders ports and subsets by a hash of their contents, an arbitrary but fixed
//! order; here they are ordered by their fields, equally arbitrary and fixed.

use std::collections::{BTreeMap, HashMap};

use k8s_openapi::api::core::v1::{EndpointAddress, EndpointPort, EndpointSubset};

/// The fields of a port, as a sortable and hashable key (an empty string and an absent
/// one are the same, as Go's zero value).
type PortKey = (String, i32, String, String);

fn port_key(p: &EndpointPort) -> PortKey {
    (
        p.name.clone().unwrap_or_default(),
        p.port,
        p.protocol.clone().unwrap_or_default(),
        p.app_protocol.clone().unwrap_or_default(),
    )
}

fn target_uid(a: &EndpointAddress) -> Option<&str> {
    a.target_ref
        .as_ref()
        .map(|r| r.uid.as_deref().unwrap_or(""))
}

/// Upstream `LessEndpointAddress`: by IP (bytewise), then addresses without a target
/// first, then by target UID.
pub fn address_order(a: &EndpointAddress, b: &EndpointAddress) -> std::cmp::Ordering {
    a.ip.as_bytes()
        .cmp(b.ip.as_bytes())
        .then_with(|| target_uid(a).cmp(&target_uid(b)))
}

/// Expand `subsets` and pack them again into the canonical layout (upstream
/// `RepackSubsets`). The input is not changed.
pub fn repack_subsets(subsets: &[EndpointSubset]) -> Vec<EndpointSubset> {
    // every distinct address (IP + target UID), the first occurrence kept whole
    let mut addresses: Vec<EndpointAddress> = Vec::new();
    let mut address_index: HashMap<(String, String), usize> = HashMap::new();
    // every distinct port → address index → ready
    let mut ports: Vec<(EndpointPort, BTreeMap<usize, bool>)> = Vec::new();
    let mut port_index: HashMap<PortKey, usize> = HashMap::new();

    for subset in subsets {
        for port in subset.ports.as_deref().unwrap_or_default() {
            let ready = subset.addresses.iter().flatten().map(|a| (a, true));
            let not_ready = subset
                .not_ready_addresses
                .iter()
                .flatten()
                .map(|a| (a, false));
            for (address, is_ready) in ready.chain(not_ready) {
                let key = (
                    address.ip.clone(),
                    target_uid(address).unwrap_or("").to_string(),
                );
                let a = *address_index.entry(key).or_insert_with(|| {
                    addresses.push(address.clone());
                    addresses.len() - 1
                });
                let p = *port_index.entry(port_key(port)).or_insert_with(|| {
                    ports.push((port.clone(), BTreeMap::new()));
                    ports.len() - 1
                });
                // not ready wins over ready
                let was = ports[p].1.entry(a).or_insert(is_ready);
                *was = *was && is_ready;
            }
        }
    }

    // the sets of addresses, each with the ports they offer
    let mut by_addresses: BTreeMap<BTreeMap<usize, bool>, Vec<EndpointPort>> = BTreeMap::new();
    for (port, set) in ports {
        by_addresses.entry(set).or_default().push(port);
    }
    let packed = by_addresses
        .into_iter()
        .map(|(set, ports)| {
            let mut ready = Vec::new();
            let mut not_ready = Vec::new();
            for (a, is_ready) in set {
                if is_ready {
                    ready.push(addresses[a].clone());
                } else {
                    not_ready.push(addresses[a].clone());
                }
            }
            EndpointSubset {
                addresses: (!ready.is_empty()).then_some(ready),
                not_ready_addresses: (!not_ready.is_empty()).then_some(not_ready),
                ports: Some(ports),
            }
        })
        .collect();
    sort_subsets(packed)
}

fn subset_key(s: &EndpointSubset) -> (Vec<PortKey>, Vec<(String, Option<String>)>) {
    let ports = s.ports.iter().flatten().map(port_key).collect();
    let addresses = s
        .addresses
        .iter()
        .flatten()
        .chain(s.not_ready_addresses.iter().flatten())
        .map(|a| (a.ip.clone(), target_uid(a).map(str::to_string)))
        .collect();
    (ports, addresses)
}

/// Sort the addresses and ports of every subset, and the subsets (upstream
/// `SortSubsets`).
pub fn sort_subsets(mut subsets: Vec<EndpointSubset>) -> Vec<EndpointSubset> {
    for s in &mut subsets {
        if let Some(a) = s.addresses.as_mut() {
            a.sort_by(address_order);
        }
        if let Some(a) = s.not_ready_addresses.as_mut() {
            a.sort_by(address_order);
        }
        if let Some(p) = s.ports.as_mut() {
            p.sort_by_key(port_key);
        }
    }
    subsets.sort_by_cached_key(subset_key);
    subsets
}
