//! Ported from upstream `pkg/api/v1/endpoints/util_test.go` (`TestPackSubsets`) and
//! `pkg/controller/endpoint/endpoints_controller_test.go` (`TestSyncEndpoints*`,
//! `TestSyncServiceOverCapacity`, `TestTruncateEndpoints`,
//! `TestEndpointPortFromServicePort`): the controller's pure part, fed the objects the
//! upstream tests put in their informer stores; "a request" there is `Some` here.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Container, ContainerPort, EndpointAddress, EndpointPort, EndpointSubset, Endpoints,
    ObjectReference, Pod, PodCondition, PodIP, PodSpec, PodStatus, Service, ServicePort,
    ServiceSpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::compute::*;
use super::subsets::{repack_subsets, sort_subsets};
use super::StaleEndpointsTracker;

// ---- RepackSubsets -------------------------------------------------------------------

fn a(ip: &str) -> EndpointAddress {
    EndpointAddress {
        ip: ip.into(),
        ..Default::default()
    }
}
fn a_uid(ip: &str, uid: &str) -> EndpointAddress {
    EndpointAddress {
        ip: ip.into(),
        target_ref: Some(ObjectReference {
            uid: Some(uid.into()),
            ..Default::default()
        }),
        ..Default::default()
    }
}
fn a_ref(ip: &str, name: &str) -> EndpointAddress {
    EndpointAddress {
        ip: ip.into(),
        target_ref: Some(ObjectReference {
            name: Some(name.into()),
            ..Default::default()
        }),
        ..Default::default()
    }
}
fn p(port: i32) -> EndpointPort {
    EndpointPort {
        port,
        ..Default::default()
    }
}
fn ss(
    ready: Vec<EndpointAddress>,
    not_ready: Vec<EndpointAddress>,
    ports: Vec<EndpointPort>,
) -> EndpointSubset {
    EndpointSubset {
        addresses: (!ready.is_empty()).then_some(ready),
        not_ready_addresses: (!not_ready.is_empty()).then_some(not_ready),
        ports: Some(ports),
    }
}

#[test]
fn pack_subsets() {
    let cases: Vec<(&str, Vec<EndpointSubset>, Vec<EndpointSubset>)> = vec![
        ("empty everything", vec![ss(vec![], vec![], vec![])], vec![]),
        ("empty addresses", vec![ss(vec![], vec![], vec![p(111)])], vec![]),
        ("empty ports", vec![ss(vec![a("1.2.3.4")], vec![], vec![])], vec![]),
        ("empty ports, not ready", vec![ss(vec![], vec![a("1.2.3.4")], vec![])], vec![]),
        (
            "one set, one ip, one port",
            vec![ss(vec![a("1.2.3.4")], vec![], vec![p(111)])],
            vec![ss(vec![a("1.2.3.4")], vec![], vec![p(111)])],
        ),
        (
            "one set, one ip, one port (IPv6)",
            vec![ss(vec![a("beef::1:2:3:4")], vec![], vec![p(111)])],
            vec![ss(vec![a("beef::1:2:3:4")], vec![], vec![p(111)])],
        ),
        (
            "one set, one notReady ip, one port",
            vec![ss(vec![], vec![a("1.2.3.4")], vec![p(111)])],
            vec![ss(vec![], vec![a("1.2.3.4")], vec![p(111)])],
        ),
        (
            "one set, one ip, one UID, one port",
            vec![ss(vec![a_uid("1.2.3.4", "uid-1")], vec![], vec![p(111)])],
            vec![ss(vec![a_uid("1.2.3.4", "uid-1")], vec![], vec![p(111)])],
        ),
        (
            "one set, one notReady ip, one UID, one port",
            vec![ss(vec![], vec![a_uid("1.2.3.4", "uid-1")], vec![p(111)])],
            vec![ss(vec![], vec![a_uid("1.2.3.4", "uid-1")], vec![p(111)])],
        ),
        (
            "one set, one ip, empty UID, one port",
            vec![ss(vec![a_uid("1.2.3.4", "")], vec![], vec![p(111)])],
            vec![ss(vec![a_uid("1.2.3.4", "")], vec![], vec![p(111)])],
        ),
        (
            "one set, two ips, one port",
            vec![ss(vec![a("1.2.3.4"), a("5.6.7.8")], vec![], vec![p(111)])],
            vec![ss(vec![a("1.2.3.4"), a("5.6.7.8")], vec![], vec![p(111)])],
        ),
        (
            "one set, two mixed ips, one port",
            vec![ss(vec![a("1.2.3.4")], vec![a("5.6.7.8")], vec![p(111)])],
            vec![ss(vec![a("1.2.3.4")], vec![a("5.6.7.8")], vec![p(111)])],
        ),
        (
            "one set, two duplicate ips, one port, notReady is covered by ready",
            vec![ss(vec![a("1.2.3.4")], vec![a("1.2.3.4")], vec![p(111)])],
            vec![ss(vec![], vec![a("1.2.3.4")], vec![p(111)])],
        ),
        (
            "one set, one ip, two ports",
            vec![ss(vec![a("1.2.3.4")], vec![], vec![p(111), p(222)])],
            vec![ss(vec![a("1.2.3.4")], vec![], vec![p(111), p(222)])],
        ),
        (
            "one set, dup ips, one port",
            vec![ss(vec![a("1.2.3.4"), a("1.2.3.4")], vec![], vec![p(111)])],
            vec![ss(vec![a("1.2.3.4")], vec![], vec![p(111)])],
        ),
        (
            "one set, dup ips, one port (IPv6)",
            vec![ss(vec![a("beef::1"), a("beef::1")], vec![], vec![p(111)])],
            vec![ss(vec![a("beef::1")], vec![], vec![p(111)])],
        ),
        (
            "one set, dup ips with target-refs, one port",
            vec![ss(vec![a_ref("1.2.3.4", "foo"), a_ref("1.2.3.4", "bar")], vec![], vec![p(111)])],
            vec![ss(vec![a_ref("1.2.3.4", "foo")], vec![], vec![p(111)])],
        ),
        (
            "one set, dup mixed ips with target-refs, one port",
            vec![ss(vec![a_ref("1.2.3.4", "foo")], vec![a_ref("1.2.3.4", "bar")], vec![p(111)])],
            // the same address twice is an input error: the first reference is kept
            vec![ss(vec![], vec![a_ref("1.2.3.4", "foo")], vec![p(111)])],
        ),
        (
            "one set, one ip, dup ports",
            vec![ss(vec![a("1.2.3.4")], vec![], vec![p(111), p(111)])],
            vec![ss(vec![a("1.2.3.4")], vec![], vec![p(111)])],
        ),
        (
            "two sets, dup ip, dup port",
            vec![ss(vec![a("1.2.3.4")], vec![], vec![p(111)]), ss(vec![a("1.2.3.4")], vec![], vec![p(111)])],
            vec![ss(vec![a("1.2.3.4")], vec![], vec![p(111)])],
        ),
        (
            "two sets, dup mixed ip, dup port",
            vec![ss(vec![a("1.2.3.4")], vec![], vec![p(111)]), ss(vec![], vec![a("1.2.3.4")], vec![p(111)])],
            vec![ss(vec![], vec![a("1.2.3.4")], vec![p(111)])],
        ),
        (
            "two sets, dup ip, two ports",
            vec![ss(vec![a("1.2.3.4")], vec![], vec![p(111)]), ss(vec![a("1.2.3.4")], vec![], vec![p(222)])],
            vec![ss(vec![a("1.2.3.4")], vec![], vec![p(111), p(222)])],
        ),
        (
            "two sets, dup ip, dup uids, two ports",
            vec![
                ss(vec![a_uid("1.2.3.4", "uid-1")], vec![], vec![p(111)]),
                ss(vec![a_uid("1.2.3.4", "uid-1")], vec![], vec![p(222)]),
            ],
            vec![ss(vec![a_uid("1.2.3.4", "uid-1")], vec![], vec![p(111), p(222)])],
        ),
        (
            "two sets, dup mixed ip, dup uids, two ports",
            vec![
                ss(vec![a_uid("1.2.3.4", "uid-1")], vec![], vec![p(111)]),
                ss(vec![], vec![a_uid("1.2.3.4", "uid-1")], vec![p(222)]),
            ],
            vec![
                ss(vec![a_uid("1.2.3.4", "uid-1")], vec![], vec![p(111)]),
                ss(vec![], vec![a_uid("1.2.3.4", "uid-1")], vec![p(222)]),
            ],
        ),
        (
            "two sets, two ips, dup port",
            vec![ss(vec![a("1.2.3.4")], vec![], vec![p(111)]), ss(vec![a("5.6.7.8")], vec![], vec![p(111)])],
            vec![ss(vec![a("1.2.3.4"), a("5.6.7.8")], vec![], vec![p(111)])],
        ),
        (
            "two set, dup ip, two uids, dup ports",
            vec![
                ss(vec![a_uid("1.2.3.4", "uid-1")], vec![], vec![p(111)]),
                ss(vec![a_uid("1.2.3.4", "uid-2")], vec![], vec![p(111)]),
            ],
            vec![ss(vec![a_uid("1.2.3.4", "uid-1"), a_uid("1.2.3.4", "uid-2")], vec![], vec![p(111)])],
        ),
        (
            "two set, dup ip, with and without uid, dup ports",
            vec![
                ss(vec![a("1.2.3.4")], vec![], vec![p(111)]),
                ss(vec![a_uid("1.2.3.4", "uid-2")], vec![], vec![p(111)]),
            ],
            vec![ss(vec![a("1.2.3.4"), a_uid("1.2.3.4", "uid-2")], vec![], vec![p(111)])],
        ),
        (
            "two sets, two ips, two dup ip with uid, dup port, wrong order",
            vec![
                ss(vec![a("5.6.7.8")], vec![], vec![p(111)]),
                ss(vec![a_uid("5.6.7.8", "uid-1")], vec![], vec![p(111)]),
                ss(vec![a_uid("1.2.3.4", "uid-1")], vec![], vec![p(111)]),
                ss(vec![a("1.2.3.4")], vec![], vec![p(111)]),
            ],
            vec![ss(
                vec![a("1.2.3.4"), a_uid("1.2.3.4", "uid-1"), a("5.6.7.8"), a_uid("5.6.7.8", "uid-1")],
                vec![],
                vec![p(111)],
            )],
        ),
        (
            "two sets, two mixed ips, two dup ip with uid, dup port, wrong order, ends up with split addresses",
            vec![
                ss(vec![a("5.6.7.8")], vec![], vec![p(111)]),
                ss(vec![], vec![a_uid("5.6.7.8", "uid-1")], vec![p(111)]),
                ss(vec![], vec![a_uid("1.2.3.4", "uid-1")], vec![p(111)]),
                ss(vec![], vec![a("1.2.3.4")], vec![p(111)]),
            ],
            vec![ss(
                vec![a("5.6.7.8")],
                vec![a("1.2.3.4"), a_uid("1.2.3.4", "uid-1"), a_uid("5.6.7.8", "uid-1")],
                vec![p(111)],
            )],
        ),
        (
            "two sets, two ips, two ports",
            vec![ss(vec![a("1.2.3.4")], vec![], vec![p(111)]), ss(vec![a("5.6.7.8")], vec![], vec![p(222)])],
            vec![ss(vec![a("1.2.3.4")], vec![], vec![p(111)]), ss(vec![a("5.6.7.8")], vec![], vec![p(222)])],
        ),
        (
            "four sets, three ips, three ports, jumbled",
            vec![
                ss(vec![a("1.2.3.4")], vec![], vec![p(111)]),
                ss(vec![a("1.2.3.5")], vec![], vec![p(222)]),
                ss(vec![a("1.2.3.6")], vec![], vec![p(111)]),
                ss(vec![a("1.2.3.5")], vec![], vec![p(333)]),
            ],
            vec![
                ss(vec![a("1.2.3.4"), a("1.2.3.6")], vec![], vec![p(111)]),
                ss(vec![a("1.2.3.5")], vec![], vec![p(222), p(333)]),
            ],
        ),
        (
            "four sets, three mixed ips, three ports, jumbled",
            vec![
                ss(vec![a("1.2.3.4")], vec![], vec![p(111)]),
                ss(vec![], vec![a("1.2.3.5")], vec![p(222)]),
                ss(vec![a("1.2.3.6")], vec![], vec![p(111)]),
                ss(vec![], vec![a("1.2.3.5")], vec![p(333)]),
            ],
            vec![
                ss(vec![a("1.2.3.4"), a("1.2.3.6")], vec![], vec![p(111)]),
                ss(vec![], vec![a("1.2.3.5")], vec![p(222), p(333)]),
            ],
        ),
    ];
    for (name, given, expect) in cases {
        assert_eq!(repack_subsets(&given), sort_subsets(expect), "{name}");
    }
}

// ---- truncation ----------------------------------------------------------------------

#[test]
fn truncate_endpoints_table() {
    type Case = (&'static str, [usize; 5], [usize; 5], [usize; 5], [usize; 5]);
    let cases: [Case; 4] = [
        (
            "total endpoints < max capacity",
            [50, 100, 100, 100, 100],
            [50, 100, 100, 100, 100],
            [50, 100, 100, 100, 100],
            [50, 100, 100, 100, 100],
        ),
        (
            "total endpoints = max capacity",
            [100; 5],
            [100; 5],
            [100; 5],
            [100; 5],
        ),
        (
            "total ready endpoints < max capacity, but total endpoints > max capacity",
            [90, 110, 50, 10, 20],
            [101, 200, 200, 201, 298],
            [90, 110, 50, 10, 20],
            [73, 144, 144, 145, 214],
        ),
        (
            "total ready endpoints > max capacity",
            [205, 400, 402, 400, 693],
            [100, 200, 200, 200, 300],
            [98, 191, 192, 191, 328],
            [0; 5],
        ),
    ];
    let mut empty: Vec<EndpointSubset> = Vec::new();
    assert!(!truncate_endpoints(&mut empty), "empty");
    for (name, ready, not_ready, want_ready, want_not_ready) in cases {
        let mut subsets: Vec<EndpointSubset> = ready
            .iter()
            .zip(not_ready)
            .map(|(&r, n)| EndpointSubset {
                addresses: Some(vec![EndpointAddress::default(); r]),
                not_ready_addresses: Some(vec![EndpointAddress::default(); n]),
                ports: None,
            })
            .collect();
        let truncated = truncate_endpoints(&mut subsets);
        assert_eq!(
            truncated,
            ready.iter().sum::<usize>() + not_ready.iter().sum::<usize>() > MAX_CAPACITY,
            "{name}"
        );
        for (i, s) in subsets.iter().enumerate() {
            assert_eq!(
                s.addresses.as_ref().map_or(0, Vec::len),
                want_ready[i],
                "{name}: ready of subset {i}"
            );
            assert_eq!(
                s.not_ready_addresses.as_ref().map_or(0, Vec::len),
                want_not_ready[i],
                "{name}: not ready of subset {i}"
            );
        }
    }
}

// ---- syncService ---------------------------------------------------------------------

const V4: &[&str] = &["IPv4"];
const V6: &[&str] = &["IPv6"];
const V4V6: &[&str] = &["IPv4", "IPv6"];
const V6V4: &[&str] = &["IPv6", "IPv4"];

/// Upstream `testPod`: `pod<id>` labelled foo=bar, `n_ports` named container ports from
/// 8080, an IP per family.
fn test_pod(ns: &str, id: usize, n_ports: i32, ready: bool, families: &[&str]) -> Pod {
    let ips: Vec<PodIP> = families
        .iter()
        .map(|f| PodIP {
            ip: if *f == "IPv4" {
                format!("1.2.{}.{}", 3 + (4 + id) / 256, (4 + id) % 256)
            } else {
                format!("2000::{:x}", 4 + id)
            },
        })
        .collect();
    Pod {
        metadata: ObjectMeta {
            namespace: Some(ns.into()),
            name: Some(format!("pod{id}")),
            labels: Some(BTreeMap::from([("foo".to_string(), "bar".to_string())])),
            resource_version: Some(id.to_string()),
            ..Default::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                ports: Some(
                    (0..n_ports)
                        .map(|j| ContainerPort {
                            name: Some(format!("port{j}")),
                            container_port: 8080 + j,
                            ..Default::default()
                        })
                        .collect(),
                ),
                ..Default::default()
            }],
            ..Default::default()
        }),
        status: Some(PodStatus {
            conditions: Some(vec![PodCondition {
                type_: "Ready".into(),
                status: if ready { "True" } else { "False" }.into(),
                ..Default::default()
            }]),
            pod_ip: ips.first().map(|i| i.ip.clone()),
            pod_ips: Some(ips),
            ..Default::default()
        }),
    }
}

/// Upstream `addPods`: `ready` ready pods, then `not_ready` not-ready ones.
fn pods(ns: &str, ready: usize, n_ports: i32, not_ready: usize, families: &[&str]) -> Vec<Pod> {
    (0..ready + not_ready)
        .map(|i| test_pod(ns, i, n_ports, i < ready, families))
        .collect()
}

/// Upstream `addNotReadyPodsWithSpecifiedRestartPolicyAndPhase`.
fn terminal_pods(ns: &str, n: usize, restart_policy: &str, phase: &str) -> Vec<Pod> {
    (0..n)
        .map(|i| {
            let mut pod = test_pod(ns, i, 1, false, V4);
            pod.spec.as_mut().unwrap().restart_policy = Some(restart_policy.into());
            pod.status.as_mut().unwrap().phase = Some(phase.into());
            pod
        })
        .collect()
}

fn tcp(port: i32, target: i32) -> ServicePort {
    ServicePort {
        port,
        protocol: Some("TCP".into()),
        target_port: Some(IntOrString::Int(target)),
        ..Default::default()
    }
}

fn service(ns: &str, selector: Option<&[(&str, &str)]>, ports: Vec<ServicePort>) -> Service {
    Service {
        metadata: ObjectMeta {
            name: Some("foo".into()),
            namespace: Some(ns.into()),
            ..Default::default()
        },
        spec: Some(ServiceSpec {
            selector: selector.map(|s| {
                s.iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect()
            }),
            ports: Some(ports),
            ip_families: Some(vec!["IPv4".into()]),
            ..Default::default()
        }),
        status: None,
    }
}

fn labels(pairs: &[(&str, &str)]) -> Option<BTreeMap<String, String>> {
    Some(
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    )
}

fn existing(
    ns: &str,
    l: Option<BTreeMap<String, String>>,
    subsets: Vec<EndpointSubset>,
) -> Endpoints {
    Endpoints {
        metadata: ObjectMeta {
            name: Some("foo".into()),
            namespace: Some(ns.into()),
            resource_version: Some("1".into()),
            labels: l,
            ..Default::default()
        },
        subsets: Some(subsets),
    }
}

/// The address upstream's tests expect for `pod<id>`: node "" and a reference by kind,
/// name and namespace (the test pods have no UID).
fn pod_address(ip: &str, ns: &str, id: usize) -> EndpointAddress {
    EndpointAddress {
        ip: ip.into(),
        node_name: Some(String::new()),
        target_ref: Some(ObjectReference {
            kind: Some("Pod".into()),
            name: Some(format!("pod{id}")),
            namespace: Some(ns.into()),
            ..Default::default()
        }),
        hostname: None,
    }
}

fn ep_port(name: Option<&str>, port: i32, protocol: &str) -> EndpointPort {
    EndpointPort {
        name: name.map(Into::into),
        port,
        protocol: Some(protocol.into()),
        app_protocol: None,
    }
}

/// What `syncService` writes for `svc` over `pods` given the cached `current`.
fn sync(svc: &Service, pods: &[Pod], current: Option<&Endpoints>) -> Option<Endpoints> {
    let (subsets, _, _) = desired_subsets(svc, pods);
    endpoints_to_write(svc, current, subsets, None)
}

fn managed_headless() -> Option<BTreeMap<String, String>> {
    labels(&[(MANAGED_BY_LABEL, MANAGED_BY), (HEADLESS_LABEL, "")])
}

#[test]
fn sync_writes_nothing_when_nothing_changed() {
    let ns = "default";
    let managed = labels(&[(MANAGED_BY_LABEL, MANAGED_BY)]);
    let foo = Some(&[("foo", "bar")][..]);
    // TestSyncEndpointsExistingNilSubsets / ExistingEmptySubsets
    let mut nil_subsets = existing(ns, managed.clone(), vec![]);
    nil_subsets.subsets = None;
    assert!(sync(
        &service(ns, foo, vec![tcp(80, 80)]),
        &[],
        Some(&nil_subsets)
    )
    .is_none());
    let empty = existing(ns, managed.clone(), vec![]);
    assert!(sync(&service(ns, foo, vec![tcp(80, 80)]), &[], Some(&empty)).is_none());
    // TestSyncEndpointsHeadlessServiceLabel: the headless label does not count
    let headless = existing(ns, managed_headless(), vec![]);
    assert!(sync(&service(ns, foo, vec![tcp(80, 80)]), &[], Some(&headless)).is_none());

    // TestSyncEndpointsWithPodResourceVersionUpdateOnly
    let mut pod0 = test_pod(ns, 0, 1, true, V4);
    let mut pod1 = test_pod(ns, 1, 1, false, V4);
    let with_rv = |ip: &str, id: usize, rv: &str| {
        let mut a = pod_address(ip, ns, id);
        a.target_ref.as_mut().unwrap().resource_version = Some(rv.into());
        a
    };
    let cur = existing(
        ns,
        managed.clone(),
        vec![ss(
            vec![with_rv("1.2.3.4", 0, "1")],
            vec![with_rv("1.2.3.5", 1, "2")],
            vec![ep_port(None, 8080, "TCP")],
        )],
    );
    pod0.metadata.resource_version = Some("3".into());
    pod1.metadata.resource_version = Some("4".into());
    assert!(sync(
        &service(ns, foo, vec![tcp(80, 8080)]),
        &[pod0.clone(), pod1],
        Some(&cur)
    )
    .is_none());

    // TestSyncEndpointsItemsPreexistingIdentical
    let cur = existing(
        ns,
        managed,
        vec![ss(
            vec![pod_address("1.2.3.4", ns, 0)],
            vec![],
            vec![ep_port(None, 8080, "TCP")],
        )],
    );
    assert!(sync(&service(ns, foo, vec![tcp(80, 8080)]), &[pod0], Some(&cur)).is_none());
}

#[test]
fn sync_writes_the_selected_pods() {
    let ns = "other";
    let all = Some(&[][..]);
    let one = |ready: Vec<EndpointAddress>, not_ready: Vec<EndpointAddress>, protocol: &str| {
        Some(vec![ss(
            ready,
            not_ready,
            vec![ep_port(None, 8080, protocol)],
        )])
    };
    let stale = |protocol: &str| {
        existing(
            ns,
            None,
            vec![ss(
                vec![a("6.7.8.9")],
                vec![],
                vec![ep_port(None, 1000, protocol)],
            )],
        )
    };
    // TestSyncEndpointsProtocolTCP/UDP/SCTP: the Service's protocol is the port's
    for protocol in ["TCP", "UDP", "SCTP"] {
        let mut port = tcp(80, 8080);
        port.protocol = Some(protocol.into());
        let got = sync(
            &service(ns, all, vec![port]),
            &pods(ns, 1, 1, 0, V4),
            Some(&stale(protocol)),
        )
        .unwrap();
        assert_eq!(got.metadata.labels, managed_headless(), "{protocol}");
        assert_eq!(
            got.metadata.resource_version.as_deref(),
            Some("1"),
            "an update of the cached version"
        );
        assert_eq!(
            got.subsets,
            one(vec![pod_address("1.2.3.4", ns, 0)], vec![], protocol),
            "{protocol}"
        );
    }
    let svc = service(ns, all, vec![tcp(80, 8080)]);
    let empty = existing(ns, None, vec![]);
    // TestSyncEndpointsItemsEmptySelectorSelectsAll(NotReady, Mixed)
    let got = sync(&svc, &pods(ns, 1, 1, 0, V4), Some(&empty)).unwrap();
    assert_eq!(
        got.subsets,
        one(vec![pod_address("1.2.3.4", ns, 0)], vec![], "TCP")
    );
    let got = sync(&svc, &pods(ns, 0, 1, 1, V4), Some(&empty)).unwrap();
    assert_eq!(
        got.subsets,
        one(vec![], vec![pod_address("1.2.3.4", ns, 0)], "TCP")
    );
    let got = sync(&svc, &pods(ns, 1, 1, 1, V4), Some(&empty)).unwrap();
    assert_eq!(
        got.subsets,
        one(
            vec![pod_address("1.2.3.4", ns, 0)],
            vec![pod_address("1.2.3.5", ns, 1)],
            "TCP"
        )
    );
    // TestSyncEndpointsItemsPreexisting
    let svc = service("bar", Some(&[("foo", "bar")]), vec![tcp(80, 8080)]);
    let cur = existing(
        "bar",
        labels(&[(MANAGED_BY_LABEL, MANAGED_BY)]),
        vec![ss(vec![a("6.7.8.9")], vec![], vec![p(1000)])],
    );
    let got = sync(&svc, &pods("bar", 1, 1, 0, V4), Some(&cur)).unwrap();
    assert_eq!(
        got.subsets,
        Some(vec![ss(
            vec![pod_address("1.2.3.4", "bar", 0)],
            vec![],
            vec![ep_port(None, 8080, "TCP")]
        )])
    );
}

#[test]
fn sync_creates_with_the_service_labels() {
    let ns = "other";
    let ports = vec![
        ServicePort {
            name: Some("port0".into()),
            ..tcp(80, 8080)
        },
        ServicePort {
            name: Some("port1".into()),
            ..tcp(88, 8088)
        },
    ];
    let want = Some(vec![ss(
        (0..3)
            .map(|i| pod_address(&format!("1.2.3.{}", 4 + i), ns, i))
            .collect(),
        vec![],
        vec![
            ep_port(Some("port0"), 8080, "TCP"),
            ep_port(Some("port1"), 8088, "TCP"),
        ],
    )]);
    // TestSyncEndpointsItems: a create, no resourceVersion
    let svc = service(ns, Some(&[("foo", "bar")]), ports.clone());
    let got = sync(&svc, &pods(ns, 3, 2, 0, V4), None).unwrap();
    assert_eq!(got.metadata.resource_version, None);
    assert_eq!(
        (
            got.metadata.name.as_deref(),
            got.metadata.namespace.as_deref()
        ),
        (Some("foo"), Some(ns))
    );
    assert_eq!(got.metadata.labels, managed_headless());
    assert_eq!(got.subsets, want);
    // TestSyncEndpointsItemsWithLabels
    let mut svc = svc;
    svc.metadata.labels = labels(&[("foo", "bar")]);
    let got = sync(&svc, &pods(ns, 3, 2, 0, V4), None).unwrap();
    assert_eq!(
        got.metadata.labels,
        labels(&[
            ("foo", "bar"),
            (MANAGED_BY_LABEL, MANAGED_BY),
            (HEADLESS_LABEL, "")
        ])
    );
    // TestSyncEndpointsItemsPreexistingLabelsChange
    svc.metadata.labels = labels(&[("baz", "blah")]);
    let cur = existing(
        ns,
        labels(&[("foo", "bar")]),
        vec![ss(vec![a("6.7.8.9")], vec![], vec![p(1000)])],
    );
    let got = sync(&svc, &pods(ns, 3, 2, 0, V4), Some(&cur)).unwrap();
    assert_eq!(
        got.metadata.labels,
        labels(&[
            ("baz", "blah"),
            (MANAGED_BY_LABEL, MANAGED_BY),
            (HEADLESS_LABEL, "")
        ])
    );
    // a Service with a cluster IP: no headless label
    svc.spec.as_mut().unwrap().cluster_ip = Some("10.0.0.1".into());
    let got = sync(&svc, &pods(ns, 3, 2, 0, V4), Some(&cur)).unwrap();
    assert_eq!(
        got.metadata.labels,
        labels(&[("baz", "blah"), (MANAGED_BY_LABEL, MANAGED_BY)])
    );
    // TestSyncEndpointsNewNoSubsets
    let got = sync(
        &service("default", Some(&[("foo", "bar")]), vec![tcp(80, 80)]),
        &[],
        None,
    )
    .unwrap();
    assert_eq!(got.subsets, None);
}

#[test]
fn sync_headless_services() {
    // TestSyncEndpointsHeadlessService: no ports, one address per pod, Service untouched
    let ns = "headless";
    let mut svc = service(ns, Some(&[]), vec![]);
    svc.metadata.labels = labels(&[("a", "b")]);
    svc.spec.as_mut().unwrap().cluster_ip = Some("None".into());
    let original = svc.clone();
    let cur = existing(
        ns,
        None,
        vec![ss(
            vec![a("6.7.8.9")],
            vec![],
            vec![ep_port(None, 1000, "TCP")],
        )],
    );
    let got = sync(&svc, &pods(ns, 1, 1, 0, V4), Some(&cur)).unwrap();
    assert_eq!(
        got.metadata.labels,
        labels(&[
            ("a", "b"),
            (MANAGED_BY_LABEL, MANAGED_BY),
            (HEADLESS_LABEL, "")
        ])
    );
    assert_eq!(
        got.subsets,
        Some(vec![ss(
            vec![pod_address("1.2.3.4", ns, 0)],
            vec![],
            vec![]
        )])
    );
    assert_eq!(svc, original);
    // TestSyncEndpointsHeadlessWithoutPort
    svc.spec.as_mut().unwrap().ports = None;
    let got = sync(&svc, &pods(ns, 1, 1, 0, V4), None).unwrap();
    assert_eq!(
        got.subsets.as_ref().map(|s| s[0].addresses.clone()),
        Some(Some(vec![pod_address("1.2.3.4", ns, 0)]))
    );
    // a Service with a cluster IP and no ports has no endpoints
    svc.spec.as_mut().unwrap().cluster_ip = Some("10.0.0.1".into());
    let got = sync(&svc, &pods(ns, 1, 1, 0, V4), None).unwrap();
    assert_eq!(got.subsets, None);
}

#[test]
fn sync_excludes_terminal_pods() {
    // TestSyncEndpointsItemsExcludeNotReadyPodsWithRestartPolicy{Never,OnFailure}AndPhase*
    let ns = "other";
    let svc = service(ns, Some(&[("foo", "bar")]), vec![tcp(80, 8080)]);
    for (policy, phase) in [
        ("Never", "Failed"),
        ("Never", "Succeeded"),
        ("OnFailure", "Succeeded"),
    ] {
        let cur = existing(ns, labels(&[("foo", "bar")]), vec![]);
        let got = sync(&svc, &terminal_pods(ns, 1, policy, phase), Some(&cur)).unwrap();
        assert_eq!(got.metadata.labels, managed_headless(), "{policy} {phase}");
        assert_eq!(got.subsets, None, "{policy} {phase}");
    }
    // a terminal pod is no endpoint whatever its restart policy (k8s.io/endpointslice's
    // ShouldPodBeInEndpoints); a not-ready pod still running is a not-ready address
    assert_eq!(
        sync(&svc, &terminal_pods(ns, 1, "OnFailure", "Failed"), None)
            .unwrap()
            .subsets,
        None
    );
    let got = sync(&svc, &terminal_pods(ns, 1, "OnFailure", "Running"), None).unwrap();
    assert_eq!(
        got.subsets.unwrap()[0]
            .not_ready_addresses
            .as_ref()
            .map(Vec::len),
        Some(1)
    );
}

#[test]
fn sync_publishes_not_ready_addresses_when_asked() {
    // TestSyncEndpointsItemsWithPublishNotReadyAddresses (upstream's
    // publishNotReadyAddresses cases): every pod is a ready address
    let ns = "other";
    let mut svc = service(ns, Some(&[("foo", "bar")]), vec![tcp(80, 8080)]);
    svc.spec.as_mut().unwrap().publish_not_ready_addresses = Some(true);
    let got = sync(&svc, &pods(ns, 1, 1, 1, V4), None).unwrap();
    let s = &got.subsets.unwrap()[0];
    assert_eq!(s.addresses.as_ref().map(Vec::len), Some(2));
    assert_eq!(s.not_ready_addresses, None);
    // a terminating pod counts then too
    let mut terminating = test_pod(ns, 0, 1, false, V4);
    terminating.metadata.deletion_timestamp = Some(
        k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(k8s_openapi::jiff::Timestamp::now()),
    );
    assert!(sync(&svc, &[terminating.clone()], None)
        .unwrap()
        .subsets
        .is_some());
    svc.spec.as_mut().unwrap().publish_not_ready_addresses = None;
    assert!(sync(&svc, &[terminating], None).unwrap().subsets.is_none());
}

#[test]
fn sync_sets_the_hostname_of_pods_in_the_service_subdomain() {
    let ns = "other";
    let svc = service(ns, Some(&[("foo", "bar")]), vec![tcp(80, 8080)]);
    let mut pod = test_pod(ns, 0, 1, true, V4);
    pod.spec.as_mut().unwrap().hostname = Some("web-0".into());
    let got = sync(&svc, std::slice::from_ref(&pod), None).unwrap();
    assert_eq!(
        got.subsets.unwrap()[0].addresses.as_ref().unwrap()[0].hostname,
        None,
        "no subdomain"
    );
    pod.spec.as_mut().unwrap().subdomain = Some("foo".into());
    let got = sync(&svc, &[pod], None).unwrap();
    assert_eq!(
        got.subsets.unwrap()[0].addresses.as_ref().unwrap()[0]
            .hostname
            .as_deref(),
        Some("web-0")
    );
}

#[test]
fn sync_resolves_named_target_ports_per_pod() {
    let ns = "other";
    let named = ServicePort {
        name: Some("http".into()),
        target_port: Some(IntOrString::String("port1".into())),
        ..tcp(80, 0)
    };
    let svc = service(ns, Some(&[("foo", "bar")]), vec![named]);
    // pod0 has port0 and port1 (8081); pod1 only port0: no endpoint for it
    let with_two = test_pod(ns, 0, 2, true, V4);
    let with_one = test_pod(ns, 1, 1, true, V4);
    let got = sync(&svc, &[with_two, with_one], None).unwrap();
    assert_eq!(
        got.subsets,
        Some(vec![ss(
            vec![pod_address("1.2.3.4", ns, 0)],
            vec![],
            vec![ep_port(Some("http"), 8081, "TCP")]
        )])
    );
}

/// Upstream `TestPodToEndpointAddressForService`: the pod IP of the Service's family.
#[test]
fn pod_address_follows_the_service_ip_family() {
    let ns = "default";
    /// name, Service families, cluster IP, pod families, the address
    type Case<'a> = (
        &'a str,
        &'a [&'a str],
        Option<&'a str>,
        &'a [&'a str],
        Option<&'a str>,
    );
    let cases: &[Case<'_>] = &[
        (
            "v4 service, in a single stack cluster",
            V4,
            Some("10.0.0.1"),
            V4,
            Some("1.2.3.4"),
        ),
        (
            "v4 service, in a dual stack cluster",
            V4,
            Some("10.0.0.1"),
            V4V6,
            Some("1.2.3.4"),
        ),
        (
            "v4 headless service, in a dual stack cluster",
            V4,
            Some("None"),
            V4V6,
            Some("1.2.3.4"),
        ),
        (
            "v6 service, in a dual stack cluster",
            V6,
            Some("3000::1"),
            V4V6,
            Some("2000::4"),
        ),
        (
            "v6 headless service, in a dual stack cluster",
            V6,
            Some("None"),
            V4V6,
            Some("2000::4"),
        ),
        (
            "v6 service, in a v6 only cluster",
            V6,
            Some("3000::1"),
            V6,
            Some("2000::4"),
        ),
        (
            "v6 service, dual stack pod listed v6 first",
            V6V4,
            Some("3000::1"),
            V6V4,
            Some("2000::4"),
        ),
        ("v6 service, v4 only pod", V6, Some("3000::1"), V4, None),
        ("v4 service, v6 only pod", V4, Some("10.0.0.1"), V6, None),
        // an API server that does not set ipFamilies: the cluster IP, else the pod IP
        (
            "no families, v6 cluster IP",
            &[],
            Some("3000::1"),
            V4V6,
            Some("2000::4"),
        ),
        (
            "no families, headless, v4 pod first",
            &[],
            Some("None"),
            V4V6,
            Some("1.2.3.4"),
        ),
    ];
    for (name, svc_families, cluster_ip, pod_families, want) in cases {
        let mut svc = service(ns, Some(&[]), vec![]);
        let spec = svc.spec.as_mut().unwrap();
        spec.ip_families = Some(svc_families.iter().map(|f| f.to_string()).collect());
        spec.cluster_ip = cluster_ip.map(Into::into);
        let pod = test_pod(ns, 0, 1, true, pod_families);
        let got = pod_to_endpoint_address(&svc, &pod);
        assert_eq!(got.as_ref().map(|a| a.ip.as_str()), *want, "{name}");
        if let Some(got) = got {
            assert_eq!(got.node_name.as_deref(), Some(""), "{name}");
            let r = got.target_ref.unwrap();
            assert_eq!(
                (r.kind.as_deref(), r.name.as_deref()),
                (Some("Pod"), Some("pod0")),
                "{name}"
            );
        }
    }
}

/// Upstream `TestSyncServiceOverCapacity`.
#[test]
fn sync_service_over_capacity() {
    struct Case {
        name: &'static str,
        starting: Option<&'static str>,
        existing: usize,
        desired: usize,
        desired_not_ready: usize,
        want_ready: usize,
        want_not_ready: usize,
        want_annotation: bool,
    }
    let m = MAX_CAPACITY;
    let cases = [
        Case {
            name: "empty",
            starting: None,
            existing: 0,
            desired: 0,
            desired_not_ready: 0,
            want_ready: 0,
            want_not_ready: 0,
            want_annotation: false,
        },
        Case {
            name: "annotation added past capacity, < than maxCapacity of Ready Addresses",
            starting: None,
            existing: m - 1,
            desired: m - 3,
            desired_not_ready: 4,
            want_ready: m - 3,
            want_not_ready: 3,
            want_annotation: true,
        },
        Case {
            name: "annotation added past capacity, maxCapacity of Ready Addresses ",
            starting: None,
            existing: m - 1,
            desired: m,
            desired_not_ready: 10,
            want_ready: m,
            want_not_ready: 0,
            want_annotation: true,
        },
        Case {
            name: "annotation removed below capacity",
            starting: Some("truncated"),
            existing: m - 1,
            desired: m - 1,
            desired_not_ready: 0,
            want_ready: m - 1,
            want_not_ready: 0,
            want_annotation: false,
        },
        Case {
            name: "annotation was set to warning previously, annotation removed at capacity",
            starting: Some("warning"),
            existing: m,
            desired: m,
            desired_not_ready: 0,
            want_ready: m,
            want_not_ready: 0,
            want_annotation: false,
        },
        Case {
            name: "annotation was set to warning previously but still over capacity",
            starting: Some("warning"),
            existing: m + 1,
            desired: m + 1,
            desired_not_ready: 0,
            want_ready: m,
            want_not_ready: 0,
            want_annotation: true,
        },
        Case {
            name: "annotation removed at capacity",
            starting: Some("truncated"),
            existing: m,
            desired: m,
            desired_not_ready: 0,
            want_ready: m,
            want_not_ready: 0,
            want_annotation: false,
        },
        Case {
            name: "no endpoints change, annotation value corrected",
            starting: Some("invalid"),
            existing: m + 1,
            desired: m + 1,
            desired_not_ready: 0,
            want_ready: m,
            want_not_ready: 0,
            want_annotation: true,
        },
    ];
    let ns = "test";
    let mut port = tcp(80, 80);
    port.target_port = None;
    port.protocol = None;
    let svc = service(ns, Some(&[("foo", "bar")]), vec![port]);
    for c in cases {
        let pods = pods(ns, c.desired, 1, c.desired_not_ready, V4);
        let addresses = pods
            .iter()
            .take(c.existing)
            .map(|p| pod_to_endpoint_address(&svc, p).unwrap())
            .collect();
        let mut cur = existing(
            ns,
            None,
            vec![EndpointSubset {
                addresses: Some(addresses),
                ..Default::default()
            }],
        );
        cur.metadata.annotations = Some(BTreeMap::new());
        if let Some(a) = c.starting {
            cur.metadata
                .annotations
                .as_mut()
                .unwrap()
                .insert(OVER_CAPACITY_ANNOTATION.into(), a.into());
        }
        let after = sync(&svc, &pods, Some(&cur)).unwrap_or(cur);
        let annotation = after
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(OVER_CAPACITY_ANNOTATION));
        if c.want_annotation {
            assert_eq!(
                annotation.map(String::as_str),
                Some(TRUNCATED),
                "{}",
                c.name
            );
        } else {
            assert_eq!(annotation, None, "{}", c.name);
        }
        let count =
            |f: fn(&EndpointSubset) -> usize| after.subsets.iter().flatten().map(f).sum::<usize>();
        assert_eq!(
            count(|s| s.addresses.as_ref().map_or(0, Vec::len)),
            c.want_ready,
            "{}",
            c.name
        );
        assert_eq!(
            count(|s| s.not_ready_addresses.as_ref().map_or(0, Vec::len)),
            c.want_not_ready,
            "{}",
            c.name
        );
    }
}

/// The trigger time is written when given and removed when not; a sync that would only
/// change it writes nothing (the comparison ignores it).
#[test]
fn trigger_time_annotation() {
    let ns = "default";
    let svc = service(ns, Some(&[("foo", "bar")]), vec![tcp(80, 8080)]);
    let t: k8s_openapi::jiff::Timestamp = "2018-01-01T00:00:00Z".parse().unwrap();
    let (subsets, _, _) = desired_subsets(&svc, &pods(ns, 1, 1, 0, V4));
    let created = endpoints_to_write(&svc, None, subsets.clone(), Some(t)).unwrap();
    assert_eq!(
        created
            .metadata
            .annotations
            .as_ref()
            .unwrap()
            .get(crate::endpointutil::LAST_CHANGE_TRIGGER_TIME_ANNOTATION)
            .map(String::as_str),
        Some("2018-01-01T00:00:00Z")
    );
    let mut stored = created.clone();
    stored.metadata.resource_version = Some("5".into());
    let later: k8s_openapi::jiff::Timestamp = "2018-01-01T01:00:00Z".parse().unwrap();
    assert!(endpoints_to_write(&svc, Some(&stored), subsets.clone(), Some(later)).is_none());
    // a real change without a trigger time drops the annotation
    let (none, _, _) = desired_subsets(&svc, &[]);
    let updated = endpoints_to_write(&svc, Some(&stored), none, None).unwrap();
    assert!(!updated
        .metadata
        .annotations
        .unwrap()
        .contains_key(crate::endpointutil::LAST_CHANGE_TRIGGER_TIME_ANNOTATION));
}

/// Upstream `TestEndpointPortFromServicePort`: the app protocol is carried over.
#[test]
fn endpoint_port_keeps_the_app_protocol() {
    let ns = "default";
    for app in [None, Some("http".to_string())] {
        let port = ServicePort {
            name: Some("test".into()),
            app_protocol: app.clone(),
            ..tcp(80, 80)
        };
        let svc = service(ns, Some(&[]), vec![port]);
        let (subsets, _, _) = desired_subsets(&svc, &pods(ns, 1, 1, 0, V4));
        assert_eq!(subsets[0].ports.as_ref().unwrap()[0].app_protocol, app);
    }
}

#[test]
fn labels_correct_for_endpoints_table() {
    let m = |p: &[(&str, &str)]| labels(p).unwrap();
    let managed = (MANAGED_BY_LABEL, MANAGED_BY);
    assert!(labels_correct_for_endpoints(&m(&[managed]), &m(&[])));
    assert!(labels_correct_for_endpoints(
        &m(&[managed, ("a", "b"), (HEADLESS_LABEL, "")]),
        &m(&[("a", "b")])
    ));
    assert!(
        !labels_correct_for_endpoints(&m(&[]), &m(&[])),
        "not marked as the controller's"
    );
    assert!(!labels_correct_for_endpoints(
        &m(&[managed, ("a", "c")]),
        &m(&[("a", "b")])
    ));
    assert!(!labels_correct_for_endpoints(
        &m(&[managed]),
        &m(&[("a", "b")])
    ));
    assert!(!labels_correct_for_endpoints(
        &m(&[managed, ("a", "b")]),
        &m(&[])
    ));
}

/// Upstream `staleEndpointsTracker` (`endpoints_tracker_test.go`).
#[test]
fn stale_endpoints_tracker() {
    let t = StaleEndpointsTracker::default();
    let e = existing("ns", None, vec![]);
    assert!(!t.is_stale(&e));
    t.stale(&e);
    assert!(t.is_stale(&e));
    let mut newer = e.clone();
    newer.metadata.resource_version = Some("2".into());
    assert!(!t.is_stale(&newer));
    t.delete(&coxswain_runtime::ObjectKey::of(&e));
    assert!(!t.is_stale(&e));
}
