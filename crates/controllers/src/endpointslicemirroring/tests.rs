//! Ported from upstream `reconciler_test.go` (`TestReconcile`), `utils_test.go`
//! (`TestNewEndpointSlice`, `TestAddressToEndpoint`) and
//! `endpointslice_tracker_test.go`.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    EndpointAddress, EndpointPort as CorePort, EndpointSubset, Endpoints, ObjectReference,
};
use k8s_openapi::api::discovery::v1::{Endpoint, EndpointConditions, EndpointPort, EndpointSlice};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};

use super::reconciler::*;
use super::tracker::SliceTracker;
use crate::endpoint::subsets::repack_subsets;

fn port(name: &str, port: i32, protocol: &str) -> CorePort {
    CorePort {
        name: Some(name.into()),
        port,
        protocol: Some(protocol.into()),
        app_protocol: None,
    }
}

fn addr(ip: &str, hostname: &str, node: Option<&str>) -> EndpointAddress {
    EndpointAddress {
        ip: ip.into(),
        hostname: Some(hostname.into()),
        node_name: node.map(Into::into),
        target_ref: None,
    }
}

fn subset(
    ports: Vec<CorePort>,
    ready: Vec<EndpointAddress>,
    not_ready: Vec<EndpointAddress>,
) -> EndpointSubset {
    EndpointSubset {
        ports: Some(ports),
        addresses: (!ready.is_empty()).then_some(ready),
        not_ready_addresses: (!not_ready.is_empty()).then_some(not_ready),
    }
}

fn slice_port(name: &str, port: i32, protocol: &str) -> EndpointPort {
    EndpointPort {
        name: Some(name.into()),
        port: Some(port),
        protocol: Some(protocol.into()),
        app_protocol: None,
    }
}

fn slice_endpoint(
    addresses: &[&str],
    hostname: &str,
    node: Option<&str>,
    ready: Option<bool>,
) -> Endpoint {
    Endpoint {
        addresses: addresses.iter().map(|a| a.to_string()).collect(),
        hostname: Some(hostname.into()),
        node_name: node.map(Into::into),
        conditions: Some(EndpointConditions {
            ready,
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn existing(name: &str, ports: Vec<EndpointPort>, endpoints: Vec<Endpoint>) -> EndpointSlice {
    EndpointSlice {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("test".into()),
            ..Default::default()
        },
        address_type: "IPv4".into(),
        ports: Some(ports),
        endpoints: Some(endpoints),
    }
}

#[derive(Default)]
struct Case {
    name: &'static str,
    subsets: Vec<EndpointSubset>,
    labels: Option<BTreeMap<String, String>>,
    annotations: Option<BTreeMap<String, String>>,
    uid: Option<&'static str>,
    deletion_pending: bool,
    max: usize,
    existing: Vec<EndpointSlice>,
    num_slices: usize,
    actions: usize,
    metrics: Option<Metrics>,
}

#[derive(Default, Debug, PartialEq)]
struct Metrics {
    desired_endpoints: usize,
    added: usize,
    updated: usize,
    removed: usize,
    skipped: usize,
    created: usize,
    num_updated: usize,
}

fn http80() -> CorePort {
    port("http", 80, "TCP")
}
fn https443() -> CorePort {
    port("https", 443, "UDP")
}
fn two_ports() -> Vec<CorePort> {
    vec![http80(), https443()]
}
fn other_ports() -> Vec<CorePort> {
    vec![port("http", 3000, "TCP"), port("https", 3001, "UDP")]
}
fn five_addresses(a: [&str; 5]) -> Vec<EndpointSubset> {
    vec![
        subset(
            two_ports(),
            vec![
                addr(a[0], "pod-1", Some("node-1")),
                addr(a[1], "pod-2", Some("node-2")),
            ],
            vec![],
        ),
        subset(
            other_ports(),
            vec![
                addr(a[2], "pod-11", Some("node-1")),
                addr(a[3], "pod-12", Some("node-2")),
                addr(a[4], "pod-13", Some("node-3")),
            ],
            vec![],
        ),
    ]
}
fn one_subset() -> Vec<EndpointSubset> {
    vec![subset(
        vec![http80()],
        vec![addr("10.0.0.1", "pod-1", None)],
        vec![],
    )]
}
fn one_existing(annotations: Option<BTreeMap<String, String>>) -> EndpointSlice {
    let mut s = existing(
        "test-ep-1",
        vec![slice_port("http", 80, "TCP")],
        vec![slice_endpoint(&["10.0.0.1"], "pod-1", None, Some(true))],
    );
    s.metadata.annotations = annotations;
    s
}
fn map(pairs: &[(&str, &str)]) -> Option<BTreeMap<String, String>> {
    Some(
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    )
}
const LAST_APPLIED: &str = "{\"apiVersion\":\"v1\",\"kind\":\"Endpoints\",\"subsets\":[]}";

fn m(desired_endpoints: usize, added: usize, created: usize) -> Option<Metrics> {
    Some(Metrics {
        desired_endpoints,
        added,
        created,
        ..Default::default()
    })
}

fn cases() -> Vec<Case> {
    let owner = |uid: &str| {
        let mut s = one_existing(None);
        s.metadata.owner_references = Some(vec![OwnerReference {
            api_version: "v1".into(),
            kind: "Endpoints".into(),
            name: "test-ep".into(),
            uid: uid.into(),
            ..Default::default()
        }]);
        s
    };
    vec![
        Case { name: "Endpoints with no subsets", metrics: m(0, 0, 0), ..Default::default() },
        Case {
            name: "Endpoints with no addresses",
            subsets: vec![subset(vec![http80()], vec![], vec![])],
            metrics: m(0, 0, 0),
            ..Default::default()
        },
        Case {
            name: "Endpoints with 1 subset, port, and address",
            subsets: vec![subset(vec![http80()], vec![addr("10.0.0.1", "pod-1", Some("node-1"))], vec![])],
            num_slices: 1,
            actions: 1,
            metrics: m(1, 1, 1),
            ..Default::default()
        },
        Case {
            name: "Endpoints with 2 subset, different port and address",
            subsets: vec![
                subset(vec![http80()], vec![addr("10.0.0.1", "pod-1", Some("node-1"))], vec![]),
                subset(vec![port("https", 443, "TCP")], vec![addr("10.0.0.2", "pod-2", Some("node-1"))], vec![]),
            ],
            num_slices: 2,
            actions: 2,
            metrics: m(2, 2, 2),
            ..Default::default()
        },
        Case {
            name: "Endpoints with 2 subset, different port and same address",
            subsets: vec![
                subset(vec![http80()], vec![addr("10.0.0.1", "pod-1", Some("node-1"))], vec![]),
                subset(vec![port("https", 443, "TCP")], vec![addr("10.0.0.1", "pod-1", Some("node-1"))], vec![]),
            ],
            num_slices: 1,
            actions: 1,
            metrics: m(1, 1, 1),
            ..Default::default()
        },
        Case {
            name: "Endpoints with 2 subset, different address and same port",
            subsets: vec![
                subset(vec![http80()], vec![addr("10.0.0.1", "pod-1", Some("node-1"))], vec![]),
                subset(vec![http80()], vec![addr("10.0.0.2", "pod-2", Some("node-1"))], vec![]),
            ],
            num_slices: 1,
            actions: 1,
            metrics: m(2, 2, 1),
            ..Default::default()
        },
        Case {
            name: "Endpoints with 1 subset, port, and address, pending deletion",
            subsets: vec![subset(vec![http80()], vec![addr("10.0.0.1", "pod-1", Some("node-1"))], vec![])],
            deletion_pending: true,
            ..Default::default()
        },
        Case {
            name: "Endpoints with 1 subset, port, and address and existing slice with same fields",
            subsets: one_subset(),
            uid: Some("d8f2c1f6-5285-4b3c-b3c1-9b89f9e7ed7a"),
            existing: vec![owner("d8f2c1f6-5285-4b3c-b3c1-9b89f9e7ed7a")],
            num_slices: 1,
            actions: 0,
            ..Default::default()
        },
        Case {
            name: "Endpoints with 1 subset, port, and address and existing slice with same fields but different OwnerReferences",
            subsets: one_subset(),
            uid: Some("d8f2c1f6-5285-4b3c-b3c1-9b89f9e7ed7a"),
            existing: vec![owner("fb91e798-1875-4857-b5eb-e2c878157b4d")],
            num_slices: 1,
            actions: 1,
            ..Default::default()
        },
        Case {
            name: "Endpoints with 1 subset, port, and address and existing slice with an additional annotation",
            subsets: one_subset(),
            existing: vec![one_existing(map(&[("foo", "bar")]))],
            num_slices: 1,
            actions: 1,
            ..Default::default()
        },
        Case {
            name: "Endpoints with 1 subset, port, label and address and existing slice with same fields but the label",
            subsets: one_subset(),
            labels: map(&[("foo", "bar")]),
            existing: vec![one_existing(map(&[("foo", "bar")]))],
            num_slices: 1,
            actions: 1,
            ..Default::default()
        },
        Case {
            name: "Endpoints with 1 subset, 2 ports, and 2 addresses",
            subsets: vec![subset(
                two_ports(),
                vec![addr("10.0.0.1", "pod-1", Some("node-1")), addr("10.0.0.2", "pod-2", Some("node-2"))],
                vec![],
            )],
            num_slices: 1,
            actions: 1,
            metrics: m(2, 2, 1),
            ..Default::default()
        },
        Case {
            name: "Endpoints with 1 subset, 2 ports, and 2 not ready addresses",
            subsets: vec![subset(
                two_ports(),
                vec![],
                vec![addr("10.0.0.1", "pod-1", Some("node-1")), addr("10.0.0.2", "pod-2", Some("node-2"))],
            )],
            num_slices: 1,
            actions: 1,
            metrics: m(2, 2, 1),
            ..Default::default()
        },
        Case {
            name: "Endpoints with 1 subset, 2 ports, and 2 ready and 2 not ready addresses",
            subsets: vec![subset(
                two_ports(),
                vec![addr("10.1.1.1", "pod-11", Some("node-1")), addr("10.1.1.2", "pod-12", Some("node-2"))],
                vec![addr("10.0.0.1", "pod-1", Some("node-1")), addr("10.0.0.2", "pod-2", Some("node-2"))],
            )],
            num_slices: 1,
            actions: 1,
            metrics: m(4, 4, 1),
            ..Default::default()
        },
        Case {
            name: "Endpoints with 2 subsets, multiple ports and addresses",
            subsets: five_addresses(["10.0.0.1", "10.0.0.2", "10.0.1.1", "10.0.1.2", "10.0.1.3"]),
            num_slices: 2,
            actions: 2,
            metrics: m(5, 5, 2),
            ..Default::default()
        },
        Case {
            name: "Endpoints with 2 subsets, multiple ports and addresses, existing empty EndpointSlice",
            subsets: five_addresses(["10.0.0.1", "10.0.0.2", "10.0.1.1", "10.0.1.2", "10.0.1.3"]),
            existing: vec![existing("test-ep-1", vec![slice_port("http", 80, "TCP"), slice_port("https", 443, "UDP")], vec![])],
            num_slices: 2,
            actions: 2,
            metrics: Some(Metrics { desired_endpoints: 5, added: 5, created: 1, num_updated: 1, ..Default::default() }),
            ..Default::default()
        },
        Case {
            name: "Endpoints with 2 subsets, multiple ports and addresses, existing EndpointSlice with some addresses",
            subsets: five_addresses(["10.0.0.1", "10.0.0.2", "10.0.1.1", "10.0.1.2", "10.0.1.3"]),
            existing: vec![existing(
                "test-ep-1",
                vec![slice_port("http", 80, "TCP"), slice_port("https", 443, "UDP")],
                vec![
                    Endpoint { addresses: vec!["10.0.0.2".into()], hostname: Some("pod-2".into()), ..Default::default() },
                    Endpoint {
                        addresses: vec!["10.0.0.1".into(), "10.0.0.3".into()],
                        hostname: Some("pod-1".into()),
                        ..Default::default()
                    },
                ],
            )],
            num_slices: 2,
            actions: 2,
            metrics: Some(Metrics {
                desired_endpoints: 5,
                added: 4,
                updated: 1,
                removed: 1,
                created: 1,
                num_updated: 1,
                ..Default::default()
            }),
            ..Default::default()
        },
        Case {
            name: "Endpoints with 2 subsets, multiple ports and addresses, existing EndpointSlice identical to subset",
            subsets: five_addresses(["10.0.0.1", "10.0.0.2", "10.0.1.1", "10.0.1.2", "10.0.1.3"]),
            existing: vec![existing(
                "test-ep-1",
                vec![slice_port("http", 80, "TCP"), slice_port("https", 443, "UDP")],
                vec![
                    slice_endpoint(&["10.0.0.1"], "pod-1", Some("node-1"), Some(true)),
                    slice_endpoint(&["10.0.0.2"], "pod-2", Some("node-2"), Some(true)),
                ],
            )],
            num_slices: 2,
            actions: 1,
            metrics: m(5, 3, 1),
            ..Default::default()
        },
        Case {
            name: "Endpoints with 2 subsets, multiple ports, and dual stack addresses",
            subsets: five_addresses([
                "2001:db8:2222:3333:4444:5555:6666:7777",
                "10.0.0.2",
                "10.0.1.1",
                "10.0.1.2",
                "2001:db8:3333:4444:5555:6666:7777:8888",
            ]),
            num_slices: 4,
            actions: 4,
            metrics: m(5, 5, 4),
            ..Default::default()
        },
        Case {
            name: "Endpoints with 2 subsets, multiple ports, ipv6 only addresses",
            subsets: five_addresses([
                "2001:db8:1111:3333:4444:5555:6666:7777",
                "2001:db8:2222:3333:4444:5555:6666:7777",
                "2001:db8:3333:3333:4444:5555:6666:7777",
                "2001:db8:4444:3333:4444:5555:6666:7777",
                "2001:db8:5555:3333:4444:5555:6666:7777",
            ]),
            num_slices: 2,
            actions: 2,
            metrics: m(5, 5, 2),
            ..Default::default()
        },
        Case {
            name: "Endpoints with 2 subsets, multiple ports, some invalid addresses",
            subsets: five_addresses([
                "2001:db8:1111:3333:4444:5555:6666:7777",
                "this-is-not-an-ip",
                "this-is-also-not-an-ip",
                "2001:db8:4444:3333:4444:5555:6666:7777",
                "2001:db8:5555:3333:4444:5555:6666:7777",
            ]),
            num_slices: 2,
            actions: 2,
            metrics: Some(Metrics { desired_endpoints: 3, added: 3, skipped: 2, created: 2, ..Default::default() }),
            ..Default::default()
        },
        Case {
            name: "Endpoints with 2 subsets, multiple ports, all invalid addresses",
            subsets: five_addresses([
                "this-is-not-an-ip1",
                "this-is-not-an-ip12",
                "this-is-not-an-ip11",
                "this-is-not-an-ip12",
                "this-is-not-an-ip3",
            ]),
            metrics: Some(Metrics { skipped: 5, ..Default::default() }),
            ..Default::default()
        },
        Case {
            name: "Endpoints with 2 subsets, 1 exceeding maxEndpointsPerSubset",
            subsets: five_addresses(["10.0.0.1", "10.0.0.2", "10.0.1.1", "10.0.1.2", "10.0.1.3"]),
            max: 2,
            num_slices: 2,
            actions: 2,
            metrics: Some(Metrics { desired_endpoints: 4, added: 4, skipped: 1, created: 2, ..Default::default() }),
            ..Default::default()
        },
        Case {
            name: "The last-applied-configuration annotation should not get mirrored to created or updated endpoint slices",
            annotations: map(&[(ANNOTATION_LAST_APPLIED, LAST_APPLIED)]),
            subsets: one_subset(),
            num_slices: 1,
            actions: 1,
            metrics: m(1, 1, 1),
            ..Default::default()
        },
        Case {
            name: "The last-applied-configuration annotation shouldn't get added to created endpoint slices",
            subsets: one_subset(),
            num_slices: 1,
            actions: 1,
            metrics: m(1, 1, 1),
            ..Default::default()
        },
        Case {
            name: "The last-applied-configuration shouldn't get mirrored to endpoint slices when it's value is empty",
            annotations: map(&[(ANNOTATION_LAST_APPLIED, "")]),
            subsets: one_subset(),
            num_slices: 1,
            actions: 1,
            metrics: m(1, 1, 1),
            ..Default::default()
        },
        Case {
            name: "Annotations other than last-applied-configuration should get correctly mirrored",
            annotations: map(&[(ANNOTATION_LAST_APPLIED, LAST_APPLIED), ("foo", "bar")]),
            subsets: one_subset(),
            num_slices: 1,
            actions: 1,
            metrics: m(1, 1, 1),
            ..Default::default()
        },
        Case {
            name: "Annotation mirroring should remove the last-applied-configuration annotation from existing endpoint slices",
            subsets: one_subset(),
            existing: vec![one_existing(map(&[(ANNOTATION_LAST_APPLIED, LAST_APPLIED)]))],
            num_slices: 1,
            actions: 1,
            ..Default::default()
        },
    ]
}

/// The slices after the plan is carried out (as the fake clientset of upstream's test).
fn apply(existing: &[EndpointSlice], plan: &Plan, deleting: bool) -> Vec<EndpointSlice> {
    let gone: Vec<_> = plan
        .to_delete
        .iter()
        .chain(&plan.to_update)
        .map(|s| s.metadata.name.clone())
        .collect();
    let mut out: Vec<EndpointSlice> = existing
        .iter()
        .filter(|s| !gone.contains(&s.metadata.name))
        .cloned()
        .collect();
    out.extend(plan.to_update.iter().cloned());
    if !deleting {
        for (i, s) in plan.to_create.iter().enumerate() {
            let mut s = s.clone();
            s.metadata.name = Some(format!(
                "{}gen{i}",
                s.metadata.generate_name.clone().unwrap_or_default()
            ));
            out.push(s);
        }
    }
    out
}

/// Upstream `expectEndpointSlices` / `expectMatchingAddresses`.
fn expect_slices(case: &Case, endpoints: &Endpoints, slices: &[EndpointSlice], max: usize) {
    let name = case.name;
    assert_eq!(slices.len(), case.num_slices, "{name}: slices");
    if slices.is_empty() {
        return;
    }
    for s in slices {
        assert!(
            s.metadata.name.as_deref().unwrap().starts_with("test-ep"),
            "{name}"
        );
        let labels = s.metadata.labels.clone().unwrap_or_default();
        assert_eq!(
            labels.get(LABEL_SERVICE_NAME).map(String::as_str),
            Some("test-ep"),
            "{name}"
        );
        let annotations = s.metadata.annotations.clone().unwrap_or_default();
        assert!(!annotations.contains_key(ANNOTATION_LAST_APPLIED), "{name}");
        assert!(!annotations.contains_key(ANNOTATION_TRIGGER_TIME), "{name}");
        for (k, v) in endpoints.metadata.annotations.iter().flatten() {
            if k != ANNOTATION_LAST_APPLIED && k != ANNOTATION_TRIGGER_TIME {
                assert_eq!(annotations.get(k), Some(v), "{name}: annotation {k}");
            }
        }
    }
    for sub in repack_subsets(endpoints.subsets.as_deref().unwrap_or_default()) {
        if sub.addresses.is_none() && sub.not_ready_addresses.is_none() {
            continue;
        }
        let want_ports = slice_ports(sub.ports.as_deref().unwrap_or_default());
        for t in [AddressType::IPv4, AddressType::IPv6] {
            let got: Vec<&Endpoint> = slices
                .iter()
                .filter(|s| s.address_type == t.as_str())
                .filter(|s| {
                    let mut a = s.ports.clone().unwrap_or_default();
                    let mut b = want_ports.clone();
                    a.sort_by_key(|p| p.port);
                    b.sort_by_key(|p| p.port);
                    a == b
                })
                .flat_map(|s| s.endpoints.iter().flatten())
                .collect();
            let mut want: BTreeMap<String, (bool, &EndpointAddress)> = BTreeMap::new();
            let ready = sub.addresses.iter().flatten().map(|a| (a, true));
            let not_ready = sub.not_ready_addresses.iter().flatten().map(|a| (a, false));
            for (a, r) in ready.chain(not_ready) {
                if parse_ip(&a.ip).is_some_and(|(_, at)| at == t) && want.len() < max {
                    want.insert(a.ip.clone(), (r, a));
                }
            }
            assert_eq!(got.len(), want.len(), "{name}: {t:?} endpoints");
            for e in got {
                assert_eq!(e.addresses.len(), 1, "{name}");
                let (r, a) = want
                    .get(&e.addresses[0])
                    .unwrap_or_else(|| panic!("{name}: unexpected {:?}", e.addresses));
                assert_eq!(
                    e.conditions.as_ref().and_then(|c| c.ready),
                    Some(*r),
                    "{name}"
                );
                assert_eq!(
                    e.hostname,
                    a.hostname.clone().filter(|h| !h.is_empty()),
                    "{name}"
                );
                if a.node_name.is_some() {
                    assert_eq!(e.node_name, a.node_name, "{name}");
                }
            }
        }
    }
}

#[test]
fn reconcile_table() {
    for mut case in cases() {
        for s in &mut case.existing {
            let mut labels = BTreeMap::new();
            labels.insert(LABEL_SERVICE_NAME.to_string(), "test-ep".to_string());
            labels.insert(LABEL_MANAGED_BY.to_string(), MANAGED_BY.to_string());
            s.metadata.labels = Some(labels);
        }
        let endpoints = Endpoints {
            metadata: ObjectMeta {
                name: Some("test-ep".into()),
                namespace: Some("test".into()),
                labels: case.labels.clone(),
                annotations: case.annotations.clone(),
                uid: case.uid.map(Into::into),
                deletion_timestamp: case
                    .deletion_pending
                    .then(|| Time(k8s_openapi::jiff::Timestamp::now())),
                ..Default::default()
            },
            subsets: Some(case.subsets.clone()),
        };
        let max = if case.max == 0 { 1000 } else { case.max };
        let p = plan(&endpoints, &case.existing, max);
        let creates = if case.deletion_pending {
            0
        } else {
            p.to_create.len()
        };
        let actions = creates + p.to_update.len() + p.to_delete.len();
        assert_eq!(actions, case.actions, "{}: client actions {p:?}", case.name);
        if let Some(want) = &case.metrics {
            let got = Metrics {
                desired_endpoints: p.desired_endpoints,
                added: p.totals.added,
                updated: p.totals.updated,
                removed: p.totals.removed,
                skipped: p.skipped_addresses,
                created: creates,
                num_updated: p.to_update.len(),
            };
            assert_eq!(&got, want, "{}", case.name);
        }
        let after = apply(&case.existing, &p, case.deletion_pending);
        expect_slices(&case, &endpoints, &after, max);
    }
}

/// Upstream `TestNewEndpointSlice`: labels and annotations cloned (but for the trigger
/// time and the last applied configuration), the two labels of the controller set,
/// owned by the Endpoints.
#[test]
fn new_slice_carries_labels_annotations_and_owner() {
    let endpoints = Endpoints {
        metadata: ObjectMeta {
            name: Some("foo".into()),
            namespace: Some("test".into()),
            uid: Some("uid-1".into()),
            labels: map(&[("foo", "bar"), (LABEL_MANAGED_BY, "someone-else")]),
            annotations: map(&[
                ("foo1", "bar1"),
                (ANNOTATION_TRIGGER_TIME, "2020-01-01T00:00:00Z"),
                (ANNOTATION_LAST_APPLIED, "{}"),
            ]),
            ..Default::default()
        },
        subsets: None,
    };
    let ports = vec![slice_port("http", 80, "TCP")];
    let s = new_slice(&endpoints, &ports, AddressType::IPv4, None);
    assert_eq!(s.metadata.generate_name.as_deref(), Some("foo-"));
    assert_eq!(s.metadata.name, None);
    assert_eq!(
        s.metadata.labels,
        map(&[
            ("foo", "bar"),
            (LABEL_MANAGED_BY, MANAGED_BY),
            (LABEL_SERVICE_NAME, "foo")
        ])
    );
    assert_eq!(s.metadata.annotations, map(&[("foo1", "bar1")]));
    let owner = &s.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str(), owner.uid.as_str()),
        ("Endpoints", "foo", "uid-1")
    );
    assert_eq!(
        (owner.controller, owner.block_owner_deletion),
        (Some(true), Some(true))
    );
    assert_eq!(s.address_type, "IPv4");
    let named = new_slice(
        &endpoints,
        &ports,
        AddressType::IPv6,
        Some("foo-abc".into()),
    );
    assert_eq!(
        (named.metadata.name.as_deref(), named.metadata.generate_name),
        (Some("foo-abc"), None)
    );
    assert_eq!(slice_name_prefix(&"a".repeat(253)), "a".repeat(253));
}

/// Upstream `TestAddressToEndpoint`, plus the sloppy IPv4 forms Go accepts.
#[test]
fn address_to_endpoint_keeps_node_hostname_and_target() {
    let a = EndpointAddress {
        ip: "10.1.2.3".into(),
        hostname: Some("foo".into()),
        node_name: Some("node-abc".into()),
        target_ref: Some(ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Pod".into()),
            namespace: Some("default".into()),
            name: Some("foo".into()),
            ..Default::default()
        }),
    };
    let (e, t) = address_to_endpoint(&a, true).unwrap();
    assert_eq!(t, AddressType::IPv4);
    assert_eq!(e.addresses, ["10.1.2.3"]);
    assert_eq!(e.hostname.as_deref(), Some("foo"));
    assert_eq!(e.node_name.as_deref(), Some("node-abc"));
    assert_eq!(e.target_ref, a.target_ref);
    assert_eq!(e.conditions.unwrap().ready, Some(true));

    assert_eq!(
        parse_ip("010.001.2.3"),
        Some(("10.1.2.3".into(), AddressType::IPv4))
    );
    assert_eq!(
        parse_ip("::ffff:1.2.3.4"),
        Some(("1.2.3.4".into(), AddressType::IPv4))
    );
    assert_eq!(
        parse_ip("2001:DB8::1"),
        Some(("2001:db8::1".into(), AddressType::IPv6))
    );
    assert_eq!(parse_ip("1.2.3"), None);
    assert_eq!(parse_ip("not-an-ip"), None);
}

fn tracked(uid: &str, generation: i64) -> EndpointSlice {
    let mut s = existing("svc-abc", vec![], vec![]);
    s.metadata.uid = Some(uid.into());
    s.metadata.generation = Some(generation);
    s.metadata.labels = map(&[(LABEL_SERVICE_NAME, "svc")]);
    s
}

/// Upstream `endpointslice_tracker_test.go`: `ShouldSync`, `StaleSlices`,
/// `HandleDeletion`.
#[test]
fn tracker_recognises_own_writes_and_stale_caches() {
    let t = SliceTracker::default();
    let s1 = tracked("uid-1", 1);
    assert!(t.should_sync(&s1), "unknown slices are news");
    assert!(
        !t.stale("test", "svc", &[&s1]),
        "nothing tracked: not stale"
    );
    t.update(&s1);
    assert!(t.has(&s1));
    assert!(!t.should_sync(&s1), "our own write coming back");
    assert!(
        t.should_sync(&tracked("uid-1", 2)),
        "a newer generation is news"
    );
    assert!(!t.stale("test", "svc", &[&s1]));
    t.update(&tracked("uid-1", 3));
    assert!(
        t.stale("test", "svc", &[&s1]),
        "the cache holds an older generation"
    );
    assert!(
        t.stale("test", "svc", &[]),
        "a written slice is missing from the cache"
    );
    t.expect_deletion(&s1);
    assert!(
        t.stale("test", "svc", &[&s1]),
        "a deleted slice is still cached"
    );
    assert!(!t.stale("test", "svc", &[]));
    assert!(t.handle_deletion(&s1), "the deletion was ours");
    assert!(!t.has(&s1));
    let s2 = tracked("uid-2", 1);
    t.update(&s2);
    assert!(
        !t.handle_deletion(&s2),
        "someone else deleted a slice we wrote"
    );
    t.update(&s2);
    t.delete_owner("test", "svc");
    assert!(!t.has(&s2));
}

/// Upstream `TestValidateControllersOptions` (the mirroring cases).
#[test]
fn options_are_validated_as_upstream() {
    use super::EndpointSliceMirroringControllerOptions as O;
    assert!(O::default().validate().is_empty());
    let o = |workers, max| O {
        concurrent_service_endpoint_syncs: workers,
        max_endpoints_per_subset: max,
        ..O::default()
    };
    assert!(o(50, 1).validate().is_empty());
    assert_eq!(
        o(0, 1000).validate(),
        ["mirroring-concurrent-service-endpoint-syncs must not be less than 1, but got 0"]
    );
    assert_eq!(
        o(51, 1000).validate(),
        ["mirroring-concurrent-service-endpoint-syncs must not be more than 50, but got 51"]
    );
    assert_eq!(
        o(10, 0).validate(),
        ["mirroring-max-endpoints-per-subset must not be less than 1, but got 0"]
    );
    assert_eq!(
        o(10, 1001).validate(),
        ["mirroring-max-endpoints-per-subset must not be more than 1000, but got 1001"]
    );
}

/// Upstream `TestShouldMirror`.
#[test]
fn should_mirror_table() {
    let ep = |labels, annotations| Endpoints {
        metadata: ObjectMeta {
            name: Some("test-endpoints".into()),
            labels,
            annotations,
            ..Default::default()
        },
        subsets: None,
    };
    assert!(super::should_mirror(&ep(None, None)), "Standard Endpoints");
    assert!(
        !super::should_mirror(&ep(map(&[(LABEL_SKIP_MIRROR, "true")]), None)),
        "skip-mirror=true"
    );
    assert!(
        super::should_mirror(&ep(map(&[(LABEL_SKIP_MIRROR, "invalid")]), None)),
        "skip-mirror=invalid"
    );
    assert!(
        !super::should_mirror(&ep(None, map(&[(super::LEADER_ELECTION_ANNOTATION, "")]))),
        "leader election annotation"
    );
}

/// Upstream `TestEndpointSlicesMirroredForService`.
#[test]
fn slices_mirrored_for_service_table() {
    let slice = |ns: &str, labels| EndpointSlice {
        metadata: ObjectMeta {
            name: Some("example-1".into()),
            namespace: Some(ns.into()),
            labels,
            ..Default::default()
        },
        address_type: "IPv4".into(),
        endpoints: None,
        ports: None,
    };
    let other = format!("{MANAGED_BY}foo");
    let cases = [
        (
            "matching",
            slice(
                "ns1",
                map(&[(LABEL_SERVICE_NAME, "svc1"), (LABEL_MANAGED_BY, MANAGED_BY)]),
            ),
            true,
        ),
        (
            "different namespace",
            slice(
                "ns2",
                map(&[(LABEL_SERVICE_NAME, "svc1"), (LABEL_MANAGED_BY, MANAGED_BY)]),
            ),
            false,
        ),
        (
            "different service name",
            slice(
                "ns1",
                map(&[(LABEL_SERVICE_NAME, "svc2"), (LABEL_MANAGED_BY, MANAGED_BY)]),
            ),
            false,
        ),
        (
            "different controller name",
            slice(
                "ns1",
                map(&[(LABEL_SERVICE_NAME, "svc1"), (LABEL_MANAGED_BY, &other)]),
            ),
            false,
        ),
        (
            "missing controller name",
            slice("ns1", map(&[(LABEL_SERVICE_NAME, "svc1")])),
            false,
        ),
        (
            "missing service name",
            slice("ns1", map(&[(LABEL_MANAGED_BY, MANAGED_BY)])),
            false,
        ),
    ];
    for (name, s, want) in cases {
        assert_eq!(super::mirrored_for(&s, "ns1", "svc1"), want, "{name}");
    }
}

/// Upstream `generateAddresses`.
fn generate_addresses(n: usize) -> Vec<EndpointAddress> {
    (0..n)
        .map(|i| EndpointAddress {
            ip: format!("10.0.{}.{}", i / 255, i % 255),
            ..Default::default()
        })
        .collect()
}

/// Upstream `TestSyncEndpoints`' size cases: 1000 addresses fit one slice, the 1001st is
/// skipped (and reported).
#[test]
fn at_most_max_endpoints_per_subset_are_mirrored() {
    for (n, skipped) in [(1000, 0), (1001, 1)] {
        let endpoints = Endpoints {
            metadata: ObjectMeta {
                name: Some("testing-sync-endpoints".into()),
                namespace: Some("default".into()),
                ..Default::default()
            },
            subsets: Some(vec![EndpointSubset {
                ports: Some(vec![CorePort {
                    port: 80,
                    ..Default::default()
                }]),
                addresses: Some(generate_addresses(n)),
                not_ready_addresses: None,
            }]),
        };
        let p = plan(&endpoints, &[], 1000);
        assert_eq!(p.to_create.len(), 1, "{n}");
        assert_eq!(
            p.to_create[0].endpoints.as_ref().map(Vec::len),
            Some(1000),
            "{n}"
        );
        assert_eq!(
            (p.skipped_addresses, p.invalid_addresses),
            (skipped, 0),
            "{n}"
        );
    }
}
