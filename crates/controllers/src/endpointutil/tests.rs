//! Tables ported from upstream's `pkg/controller/util/endpoint/controller_utils_test.go`,
//! `trigger_time_tracker_test.go` and `pkg/api/v1/pod/util_test.go` (`TestFindPort`).

use std::collections::{BTreeMap, BTreeSet};

use coxswain_runtime::ObjectKey;
use k8s_openapi::api::core::v1::{
    Container, ContainerPort, EndpointAddress, EndpointPort, EndpointSubset, ObjectReference, Pod,
    PodCondition, PodIP, PodSpec, PodStatus, Service, ServicePort, ServiceSpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use k8s_openapi::jiff::Timestamp;

use super::*;

fn keys(names: &[&str]) -> BTreeSet<ObjectKey> {
    names
        .iter()
        .map(|n| ObjectKey::namespaced("ns", n))
        .collect()
}

#[test]
fn determine_needed_service_updates_table() {
    // (name, a, b, xor, union)
    type Case<'a> = (
        &'a str,
        &'a [&'a str],
        &'a [&'a str],
        &'a [&'a str],
        &'a [&'a str],
    );
    let cases: &[Case] = &[
        (
            "no services changed",
            &["a", "b", "c"],
            &["a", "b", "c"],
            &[],
            &["a", "b", "c"],
        ),
        (
            "all old services removed, new services added",
            &["a", "b", "c"],
            &["d", "e", "f"],
            &["a", "b", "c", "d", "e", "f"],
            &["a", "b", "c", "d", "e", "f"],
        ),
        (
            "all old services removed, no new services added",
            &["a", "b", "c"],
            &[],
            &["a", "b", "c"],
            &["a", "b", "c"],
        ),
        (
            "no old services, but new services added",
            &[],
            &["a", "b", "c"],
            &["a", "b", "c"],
            &["a", "b", "c"],
        ),
        (
            "one service removed, one service added, two unchanged",
            &["a", "b", "c"],
            &["b", "c", "d"],
            &["a", "d"],
            &["a", "b", "c", "d"],
        ),
        ("no services", &[], &[], &[], &[]),
    ];
    for (name, a, b, xor, union) in cases {
        let (a, b) = (keys(a), keys(b));
        assert_eq!(
            determine_needed_service_updates(&a, &b, false),
            keys(xor),
            "{name}"
        );
        assert_eq!(
            determine_needed_service_updates(&a, &b, true),
            keys(union),
            "{name}"
        );
    }
}

fn pod_with(restart: Option<&str>, phase: &str, ip: &str, ips: &[&str], deleting: bool) -> Pod {
    Pod {
        metadata: ObjectMeta {
            deletion_timestamp: deleting.then(|| Time(Timestamp::now())),
            ..Default::default()
        },
        spec: Some(PodSpec {
            restart_policy: restart.map(str::to_string),
            ..Default::default()
        }),
        status: Some(PodStatus {
            phase: Some(phase.to_string()),
            pod_ip: (!ip.is_empty()).then(|| ip.to_string()),
            pod_ips: Some(ips.iter().map(|ip| PodIP { ip: ip.to_string() }).collect()),
            ..Default::default()
        }),
    }
}

#[test]
fn should_pod_be_in_endpoints_table() {
    let cases = [
        // not in endpoints
        (
            "Failed pod with Never RestartPolicy",
            pod_with(Some("Never"), "Failed", "1.2.3.4", &[], false),
            false,
            false,
        ),
        (
            "Succeeded pod with Never RestartPolicy",
            pod_with(Some("Never"), "Succeeded", "1.2.3.4", &[], false),
            false,
            false,
        ),
        (
            "Succeeded pod with OnFailure RestartPolicy",
            pod_with(Some("OnFailure"), "Succeeded", "1.2.3.4", &[], false),
            false,
            false,
        ),
        (
            "Empty Pod IPs, Running pod with OnFailure RestartPolicy",
            pod_with(Some("Never"), "Running", "", &[], false),
            false,
            false,
        ),
        (
            "Terminating Pod with includeTerminating=false",
            pod_with(None, "Running", "1.2.3.4", &[], true),
            false,
            false,
        ),
        // a terminal pod is out whatever its restart policy (the staging
        // k8s.io/endpointslice table; the older pkg/controller/util table had it in)
        (
            "Failed pod with Always RestartPolicy",
            pod_with(Some("Always"), "Failed", "1.2.3.4", &[], false),
            false,
            false,
        ),
        // in endpoints
        (
            "Pending pod with Never RestartPolicy",
            pod_with(Some("Never"), "Pending", "1.2.3.4", &[], false),
            false,
            true,
        ),
        (
            "Unknown pod with OnFailure RestartPolicy",
            pod_with(Some("OnFailure"), "Unknown", "1.2.3.4", &[], false),
            false,
            true,
        ),
        (
            "Running pod with Never RestartPolicy",
            pod_with(Some("Never"), "Running", "1.2.3.4", &[], false),
            false,
            true,
        ),
        (
            "Multiple Pod IPs, Running pod with OnFailure RestartPolicy",
            pod_with(
                Some("Never"),
                "Running",
                "",
                &["1.2.3.4", "1234::5678:0000:0000:9abc:def0"],
                false,
            ),
            false,
            true,
        ),
        (
            "Terminating Pod with includeTerminating=true",
            pod_with(None, "Running", "1.2.3.4", &[], true),
            true,
            true,
        ),
    ];
    for (name, pod, include_terminating, expected) in cases {
        assert_eq!(
            should_pod_be_in_endpoints(&pod, include_terminating),
            expected,
            "{name}"
        );
    }
}

fn simple_pod(namespace: &str, hostname: &str, subdomain: &str) -> Pod {
    Pod {
        metadata: ObjectMeta {
            namespace: Some(namespace.into()),
            ..Default::default()
        },
        spec: Some(PodSpec {
            hostname: (!hostname.is_empty()).then(|| hostname.into()),
            subdomain: (!subdomain.is_empty()).then(|| subdomain.into()),
            ..Default::default()
        }),
        status: None,
    }
}

fn simple_svc(namespace: &str, name: &str) -> Service {
    Service {
        metadata: ObjectMeta {
            namespace: Some(namespace.into()),
            name: Some(name.into()),
            ..Default::default()
        },
        ..Default::default()
    }
}

#[test]
fn should_set_hostname_table() {
    let cases = [
        (
            "all matching",
            simple_pod("ns", "foo", "svc-name"),
            simple_svc("ns", "svc-name"),
            true,
        ),
        (
            "all matching, hostname not set",
            simple_pod("ns", "", "svc-name"),
            simple_svc("ns", "svc-name"),
            false,
        ),
        (
            "all set, different name/subdomain",
            simple_pod("ns", "hostname", "subdomain"),
            simple_svc("ns", "name"),
            false,
        ),
        (
            "all set, different namespace",
            simple_pod("ns1", "hostname", "svc-name"),
            simple_svc("ns2", "svc-name"),
            false,
        ),
    ];
    for (name, pod, svc, expected) in cases {
        assert_eq!(should_set_hostname(&pod, &svc), expected, "{name}");
    }
}

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn selecting_service(name: &str, selector: Option<BTreeMap<String, String>>) -> Service {
    Service {
        metadata: ObjectMeta {
            namespace: Some("test".into()),
            name: Some(name.into()),
            ..Default::default()
        },
        spec: Some(ServiceSpec {
            selector,
            ..Default::default()
        }),
        status: None,
    }
}

fn labelled_pod(name: &str, l: BTreeMap<String, String>) -> Pod {
    Pod {
        metadata: ObjectMeta {
            namespace: Some("test".into()),
            name: Some(name.into()),
            labels: Some(l),
            ..Default::default()
        },
        ..Default::default()
    }
}

#[test]
fn pod_service_memberships_table() {
    // upstream TestServiceSelectorCache_GetPodServiceMemberships
    let services: Vec<Service> = (0..3)
        .map(|i| {
            selecting_service(
                &format!("service-{i}"),
                Some(labels(&[("app", &format!("test-{i}"))])),
            )
        })
        .collect();
    for i in 0..5 {
        let pod = labelled_pod(
            &format!("test-pod-{i}"),
            labels(&[
                ("app", &format!("test-{i}")),
                ("label", &format!("label-{i}")),
            ]),
        );
        let expected: BTreeSet<ObjectKey> = if i < 3 {
            [ObjectKey::namespaced("test", format!("service-{i}"))].into()
        } else {
            BTreeSet::new()
        };
        assert_eq!(
            pod_service_memberships(&services, &pod),
            expected,
            "pod-{i}"
        );
    }
    // a Service without a selector selects nothing; an empty one everything; another
    // namespace nothing
    let pod = labelled_pod("p", labels(&[("app", "x")]));
    assert!(!service_selects(&selecting_service("none", None), &pod));
    assert!(service_selects(
        &selecting_service("all", Some(BTreeMap::new())),
        &pod
    ));
    let mut other = selecting_service("other", Some(BTreeMap::new()));
    other.metadata.namespace = Some("elsewhere".into());
    assert!(!service_selects(&other, &pod));
}

#[test]
fn pod_endpoints_changed_table() {
    type Modifier = fn(&mut Pod, &mut Pod);
    fn ips(p: &mut Pod, list: &[&str]) {
        let s = p.status.get_or_insert_with(Default::default);
        s.pod_ip = list.first().map(|s| s.to_string());
        s.pod_ips = Some(list.iter().map(|ip| PodIP { ip: ip.to_string() }).collect());
    }
    let cases: Vec<(&str, Modifier, bool, bool)> = vec![
        ("no changes", |_, _| {}, false, false),
        (
            "change NodeName",
            |_, new| {
                new.spec.get_or_insert_with(Default::default).node_name = Some("changed".into())
            },
            false,
            false,
        ),
        (
            "change ResourceVersion",
            |_, new| new.metadata.resource_version = Some("changed".into()),
            false,
            false,
        ),
        (
            "add primary IPv4",
            |_, new| ips(new, &["1.2.3.4"]),
            true,
            false,
        ),
        (
            "modify primary IPv4",
            |old, new| {
                ips(old, &["1.2.3.4"]);
                ips(new, &["2.3.4.5"])
            },
            true,
            false,
        ),
        (
            "add primary IPv6",
            |_, new| ips(new, &["fd00:10:96::1"]),
            true,
            false,
        ),
        (
            "modify primary IPv6",
            |old, new| {
                ips(old, &["fd00:10:96::1"]);
                ips(new, &["fd00:10:96::2"])
            },
            true,
            false,
        ),
        (
            "add secondary IP",
            |old, new| {
                ips(old, &["1.2.3.4"]);
                ips(new, &["1.2.3.4", "fd00:10:96::1"])
            },
            true,
            false,
        ),
        (
            "modify secondary IP",
            |old, new| {
                ips(old, &["1.2.3.4", "fd00:10:96::1"]);
                ips(new, &["1.2.3.4", "fd00:10:96::2"])
            },
            true,
            false,
        ),
        (
            "remove secondary IP",
            |old, new| {
                ips(old, &["1.2.3.4", "fd00:10:96::1"]);
                ips(new, &["1.2.3.4"])
            },
            true,
            false,
        ),
        (
            "change readiness",
            |_, new| {
                new.status.as_mut().unwrap().conditions.as_mut().unwrap()[0].status = "True".into()
            },
            true,
            false,
        ),
        (
            "mark for deletion",
            |_, new| new.metadata.deletion_timestamp = Some(Time(Timestamp::now())),
            true,
            false,
        ),
        (
            "add label",
            |_, new| {
                new.metadata
                    .labels
                    .as_mut()
                    .unwrap()
                    .insert("label".into(), "new".into());
            },
            false,
            true,
        ),
        (
            "modify label",
            |old, new| {
                old.metadata
                    .labels
                    .as_mut()
                    .unwrap()
                    .insert("label".into(), "old".into());
                new.metadata
                    .labels
                    .as_mut()
                    .unwrap()
                    .insert("label".into(), "new".into());
            },
            false,
            true,
        ),
        (
            "remove label",
            |old, _| {
                old.metadata
                    .labels
                    .as_mut()
                    .unwrap()
                    .insert("label".into(), "old".into());
            },
            false,
            true,
        ),
        (
            "change hostname",
            |_, new| new.spec.get_or_insert_with(Default::default).hostname = Some("h".into()),
            false,
            true,
        ),
    ];
    let orig = Pod {
        metadata: ObjectMeta {
            namespace: Some("test".into()),
            name: Some("pod".into()),
            labels: Some(labels(&[("foo", "bar")])),
            ..Default::default()
        },
        spec: None,
        status: Some(PodStatus {
            conditions: Some(vec![PodCondition {
                type_: "Ready".into(),
                status: "False".into(),
                ..Default::default()
            }]),
            ..Default::default()
        }),
    };
    for (name, modifier, pod_changed, labels_changed) in cases {
        let mut old = orig.clone();
        let mut new = orig.clone();
        modifier(&mut old, &mut new);
        assert_eq!(
            pod_endpoints_changed(&old, &new),
            (pod_changed, labels_changed),
            "{name}"
        );
    }
}

#[test]
fn services_to_update_on_pod_change_follows_old_and_new_labels() {
    let services = vec![
        selecting_service("a", Some(labels(&[("app", "a")]))),
        selecting_service("b", Some(labels(&[("app", "b")]))),
        selecting_service("all", Some(labels(&[("tier", "web")]))),
    ];
    let key = |n: &str| ObjectKey::namespaced("test", n);
    let mut old = labelled_pod("p", labels(&[("app", "a"), ("tier", "web")]));
    old.metadata.resource_version = Some("1".into());
    // a resync (same resourceVersion) concerns nobody
    assert!(services_to_update_on_pod_change(&services, &old, &old.clone()).is_empty());
    // relabelled a → b: the Services it left and joined, not the one it stays in
    let mut new = labelled_pod("p", labels(&[("app", "b"), ("tier", "web")]));
    new.metadata.resource_version = Some("2".into());
    assert_eq!(
        services_to_update_on_pod_change(&services, &old, &new),
        [key("a"), key("b")].into()
    );
    // relabelled and deleted at once: every Service of old and new
    new.metadata.deletion_timestamp = Some(Time(Timestamp::now()));
    assert_eq!(
        services_to_update_on_pod_change(&services, &old, &new),
        [key("a"), key("all"), key("b")].into()
    );
    // same labels, endpoint changed: the Services selecting it
    let mut ready = old.clone();
    ready.metadata.resource_version = Some("3".into());
    ready.status = Some(PodStatus {
        pod_ips: Some(vec![PodIP {
            ip: "10.0.0.1".into(),
        }]),
        ..Default::default()
    });
    assert_eq!(
        services_to_update_on_pod_change(&services, &old, &ready),
        [key("a"), key("all")].into()
    );
}

#[test]
fn find_port_table() {
    fn port(name: &str, container_port: i32, protocol: &str) -> ContainerPort {
        ContainerPort {
            name: (!name.is_empty()).then(|| name.into()),
            container_port,
            protocol: Some(protocol.into()),
            ..Default::default()
        }
    }
    fn ctr(ports: Vec<ContainerPort>) -> Container {
        Container {
            ports: (!ports.is_empty()).then_some(ports),
            ..Default::default()
        }
    }
    let three = || {
        vec![
            port("", 11, "UDP"),
            port("p", 22, "TCP"),
            port("q", 33, "TCP"),
        ]
    };
    let mut host = port("a", 11, "TCP");
    host.host_port = Some(81);
    let mut bad_host = port("a", 11, "TCP");
    bad_host.host_port = Some(-1);
    let mut host_ip = port("a", 11, "TCP");
    host_ip.host_ip = Some("192.168.1.1".into());
    let int = IntOrString::Int;
    let s = |v: &str| IntOrString::String(v.into());
    type Case = (&'static str, Vec<Container>, IntOrString, Result<i32, ()>);
    let cases: Vec<Case> = vec![
        ("valid int, no ports", vec![ctr(vec![])], int(93), Ok(93)),
        (
            "valid int, with ports",
            vec![ctr(vec![port("", 11, "TCP"), port("p", 22, "TCP")])],
            int(93),
            Ok(93),
        ),
        ("valid str, no ports", vec![ctr(vec![])], s("p"), Err(())),
        (
            "valid str, one ctr with ports",
            vec![ctr(three())],
            s("q"),
            Ok(33),
        ),
        (
            "valid str, two ctr with ports",
            vec![ctr(vec![]), ctr(three())],
            s("q"),
            Ok(33),
        ),
        (
            "valid str, two ctr with same port",
            vec![
                ctr(vec![]),
                ctr(vec![
                    port("", 11, "UDP"),
                    port("p", 22, "TCP"),
                    port("q", 22, "TCP"),
                ]),
            ],
            s("q"),
            Ok(22),
        ),
        (
            "valid str, invalid protocol",
            vec![ctr(vec![]), ctr(vec![port("a", 11, "snmp")])],
            s("a"),
            Err(()),
        ),
        (
            "valid hostPort",
            vec![ctr(vec![]), ctr(vec![host])],
            s("a"),
            Ok(11),
        ),
        (
            "invalid hostPort",
            vec![ctr(vec![]), ctr(vec![bad_host])],
            s("a"),
            Ok(11),
        ),
        (
            "invalid ContainerPort",
            vec![ctr(vec![]), ctr(vec![port("a", -1, "TCP")])],
            s("a"),
            Ok(-1),
        ),
        (
            "HostIP Address",
            vec![ctr(vec![]), ctr(vec![host_ip])],
            s("a"),
            Ok(11),
        ),
    ];
    for (name, containers, target, expected) in cases {
        let pod = Pod {
            metadata: ObjectMeta {
                uid: Some("uid-1".into()),
                ..Default::default()
            },
            spec: Some(PodSpec {
                containers,
                ..Default::default()
            }),
            status: None,
        };
        let svc_port = ServicePort {
            protocol: Some("TCP".into()),
            target_port: Some(target),
            port: 80,
            ..Default::default()
        };
        let got = find_port(&pod, &svc_port).map_err(|e| {
            assert_eq!(e.to_string(), "no suitable port for manifest: uid-1");
        });
        assert_eq!(got, expected, "{name}");
    }
    // an unset targetPort is the Service port (the API server's default); an unset
    // protocol is TCP on both sides
    let pod = Pod {
        spec: Some(PodSpec {
            containers: vec![Container {
                ports: Some(vec![ContainerPort {
                    name: Some("http".into()),
                    container_port: 8080,
                    ..Default::default()
                }]),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    };
    let mut p = ServicePort {
        port: 80,
        ..Default::default()
    };
    assert_eq!(find_port(&pod, &p), Ok(80));
    p.target_port = Some(s("http"));
    assert_eq!(find_port(&pod, &p), Ok(8080));
    // a named port of a sidecar (an init container that restarts Always) counts; one
    // of a plain init container does not
    let init = |restart: Option<&str>| Container {
        name: "init".into(),
        restart_policy: restart.map(str::to_string),
        ports: Some(vec![ContainerPort {
            name: Some("metrics".into()),
            container_port: 9090,
            ..Default::default()
        }]),
        ..Default::default()
    };
    p.target_port = Some(s("metrics"));
    let mut with_sidecar = pod.clone();
    with_sidecar.spec.as_mut().unwrap().init_containers = Some(vec![init(Some("Always"))]);
    assert_eq!(find_port(&with_sidecar, &p), Ok(9090));
    let mut with_init = pod.clone();
    with_init.spec.as_mut().unwrap().init_containers = Some(vec![init(None)]);
    assert!(find_port(&with_init, &p).is_err());
}

#[test]
fn endpoint_subsets_equal_ignore_resource_version_table() {
    fn addr(ip: &str, name: &str, ns: &str, rv: &str) -> EndpointAddress {
        EndpointAddress {
            ip: ip.into(),
            target_ref: Some(ObjectReference {
                kind: Some("Pod".into()),
                name: Some(name.into()),
                namespace: Some(ns.into()),
                resource_version: Some(rv.into()),
                ..Default::default()
            }),
            ..Default::default()
        }
    }
    fn subset(ready: EndpointAddress, not_ready: EndpointAddress, port: i32) -> EndpointSubset {
        EndpointSubset {
            addresses: Some(vec![ready]),
            not_ready_addresses: Some(vec![not_ready]),
            ports: Some(vec![EndpointPort {
                port,
                protocol: Some("TCP".into()),
                ..Default::default()
            }]),
        }
    }
    let es1 = subset(
        addr("1.1.1.1", "pod1-1", "ns", "1"),
        addr("1.1.1.2", "pod1-2", "ns2", "2"),
        8081,
    );
    let es2 = subset(
        addr("2.2.2.1", "pod2-1", "ns", "3"),
        addr("2.2.2.2", "pod2-2", "ns2", "4"),
        8082,
    );
    let mutate = |s: &EndpointSubset, f: fn(&mut EndpointSubset)| {
        let mut s = s.clone();
        f(&mut s);
        s
    };
    let cases = [
        (
            "Subsets removed",
            vec![es1.clone(), es2.clone()],
            vec![es1.clone()],
            false,
        ),
        (
            "Ready Pod IP changed",
            vec![es1.clone(), es2.clone()],
            vec![
                mutate(&es1, |s| {
                    s.addresses.as_mut().unwrap()[0].ip = "1.1.1.10".into()
                }),
                es2.clone(),
            ],
            false,
        ),
        (
            "NotReady Pod IP changed",
            vec![es1.clone(), es2.clone()],
            vec![
                es1.clone(),
                mutate(&es2, |s| {
                    s.not_ready_addresses.as_mut().unwrap()[0].ip = "2.2.2.10".into()
                }),
            ],
            false,
        ),
        (
            "Pod ResourceVersion changed",
            vec![es1.clone(), es2.clone()],
            vec![
                es1.clone(),
                mutate(&es2, |s| {
                    s.addresses.as_mut().unwrap()[0]
                        .target_ref
                        .as_mut()
                        .unwrap()
                        .resource_version = Some("100".into())
                }),
            ],
            true,
        ),
        (
            "Ports changed",
            vec![es1.clone(), es2.clone()],
            vec![
                es1.clone(),
                mutate(&es1, |s| s.ports.as_mut().unwrap()[0].port = 8082),
            ],
            false,
        ),
    ];
    for (name, a, b, expected) in cases {
        assert_eq!(
            endpoint_subsets_equal_ignore_resource_version(&a, &b),
            expected,
            "{name}"
        );
    }
}

mod trigger_time {
    use super::*;

    fn t(n: i64) -> Timestamp {
        // 2019-01-01T00:00:00Z + n seconds
        Timestamp::from_second(1_546_300_800 + n).unwrap()
    }

    fn service(created: Timestamp) -> Service {
        Service {
            metadata: ObjectMeta {
                namespace: Some("ttNamespace1".into()),
                name: Some("my-service".into()),
                creation_timestamp: Some(Time(created)),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    fn pod(name: &str, ready: Timestamp) -> Pod {
        Pod {
            metadata: ObjectMeta {
                namespace: Some("ttNamespace1".into()),
                name: Some(name.into()),
                ..Default::default()
            },
            spec: None,
            status: Some(PodStatus {
                conditions: Some(vec![PodCondition {
                    type_: "Ready".into(),
                    status: "True".into(),
                    last_transition_time: Some(Time(ready)),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
        }
    }

    fn compute(tr: &TriggerTimeTracker, svc: &Service, pods: &[&Pod]) -> Option<Timestamp> {
        tr.compute_endpoint_last_change_trigger_time(svc, pods.iter().copied())
    }

    #[test]
    fn new_service_no_pods() {
        let tr = TriggerTimeTracker::new();
        assert_eq!(compute(&tr, &service(t(2)), &[]), Some(t(2)));
    }

    #[test]
    fn new_service_existing_pods() {
        let tr = TriggerTimeTracker::new();
        let (p1, p2, p3) = (pod("pod1", t(0)), pod("pod2", t(1)), pod("pod3", t(5)));
        // pods were created before the Service: the Service's creation counts
        assert_eq!(compute(&tr, &service(t(3)), &[&p1, &p2, &p3]), Some(t(3)));
    }

    #[test]
    fn pods_added() {
        let tr = TriggerTimeTracker::new();
        let svc = service(t(0));
        assert_eq!(compute(&tr, &svc, &[]), Some(t(0)));
        let (p1, p2) = (pod("pod1", t(2)), pod("pod2", t(1)));
        assert_eq!(compute(&tr, &svc, &[&p1, &p2]), Some(t(1)));
    }

    #[test]
    fn pods_updated() {
        let tr = TriggerTimeTracker::new();
        let svc = service(t(0));
        let (p1, p2, p3) = (pod("pod1", t(1)), pod("pod2", t(2)), pod("pod3", t(3)));
        assert_eq!(compute(&tr, &svc, &[&p1, &p2, &p3]), Some(t(0)));
        let (p1, p2) = (pod("pod1", t(5)), pod("pod2", t(4)));
        assert_eq!(compute(&tr, &svc, &[&p1, &p2, &p3]), Some(t(4)));
    }

    #[test]
    fn pods_updated_no_op() {
        let tr = TriggerTimeTracker::new();
        let svc = service(t(0));
        let (p1, p2, p3) = (pod("pod1", t(1)), pod("pod2", t(2)), pod("pod3", t(3)));
        assert_eq!(compute(&tr, &svc, &[&p1, &p2, &p3]), Some(t(0)));
        assert_eq!(compute(&tr, &svc, &[&p1, &p2, &p3]), None);
    }

    #[test]
    fn pod_deleted_then_added() {
        let tr = TriggerTimeTracker::new();
        let svc = service(t(0));
        let (p1, p2) = (pod("pod1", t(1)), pod("pod2", t(2)));
        assert_eq!(compute(&tr, &svc, &[&p1, &p2]), Some(t(0)));
        assert_eq!(compute(&tr, &svc, &[&p1]), None);
        let p2 = pod("pod2", t(4));
        assert_eq!(compute(&tr, &svc, &[&p1, &p2]), Some(t(4)));
    }

    #[test]
    fn service_deleted_then_added() {
        let tr = TriggerTimeTracker::new();
        let svc = service(t(0));
        let (p1, p2) = (pod("pod1", t(1)), pod("pod2", t(2)));
        assert_eq!(compute(&tr, &svc, &[&p1, &p2]), Some(t(0)));
        tr.delete_service(&ObjectKey::namespaced("ttNamespace1", "my-service"));
        assert_eq!(compute(&tr, &service(t(3)), &[&p1, &p2]), Some(t(3)));
    }

    #[test]
    fn service_updated_no_pod_change() {
        let tr = TriggerTimeTracker::new();
        let mut svc = service(t(0));
        let (p1, p2) = (pod("pod1", t(1)), pod("pod2", t(2)));
        assert_eq!(compute(&tr, &svc, &[&p1, &p2]), Some(t(0)));
        svc.spec = Some(ServiceSpec {
            selector: Some(BTreeMap::new()),
            ports: Some(vec![ServicePort {
                port: 80,
                target_port: Some(IntOrString::Int(8080)),
                protocol: Some("TCP".into()),
                ..Default::default()
            }]),
            ..Default::default()
        });
        // a Service update has no trigger time of its own
        assert_eq!(compute(&tr, &svc, &[&p1, &p2]), None);
    }
}

#[test]
fn trigger_time_is_formatted_as_rfc3339_nano() {
    let t = Timestamp::from_second(1_546_300_800).unwrap();
    assert_eq!(format_trigger_time(t), "2019-01-01T00:00:00Z");
    let t = Timestamp::new(1_546_300_800, 120_000_000).unwrap();
    assert_eq!(format_trigger_time(t), "2019-01-01T00:00:00.12Z");
}
