//! Tables ported from upstream's `k8s.io/endpointslice/utils_test.go`
//! (`TestNewEndpointSlice`, `TestPodToEndpoint`, `TestGetEndpointPorts`,
//! `TestSetEndpointSliceLabels`, `TestServiceControllerKey`,
//! `TestSupportedServiceAddressType`) and `util/endpointslice_tracker_test.go`, and the
//! options' validation.

#![allow(clippy::type_complexity)] // case tables

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{ContainerPort, Node, ServicePort};
use k8s_openapi::api::discovery::v1::{EndpointPort, EndpointSlice};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::reconciler_tests::{new_pod, new_service, NS};
use super::tracker::EndpointSliceTracker;
use super::utils::*;
use super::{EndpointSliceControllerOptions, MANAGED_BY};

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn new_endpoint_slice_table() {
    let (base, meta) = new_service("foo");
    let mut base = base;
    base.spec.as_mut().unwrap().cluster_ip = Some("1.1.1.1".into());
    let reserved = |extra: &[(&str, &str)]| {
        let mut l = labels(&[(LABEL_SERVICE_NAME, "foo"), (LABEL_MANAGED_BY, MANAGED_BY)]);
        l.extend(labels(extra));
        l
    };
    let cases: Vec<(
        &str,
        Option<BTreeMap<String, String>>,
        Option<&str>,
        BTreeMap<String, String>,
    )> = vec![
        ("Service without labels", None, None, reserved(&[])),
        (
            "Service with labels",
            Some(labels(&[("foo", "bar")])),
            None,
            reserved(&[("foo", "bar")]),
        ),
        (
            "Headless Service with labels",
            Some(labels(&[("foo", "bar")])),
            Some("None"),
            reserved(&[("foo", "bar"), (LABEL_HEADLESS, "")]),
        ),
        (
            "Service with multiple labels",
            Some(labels(&[("foo", "bar"), ("foo2", "bar2")])),
            None,
            reserved(&[("foo", "bar"), ("foo2", "bar2")]),
        ),
        (
            "Evil service hijacking endpoint slices labels",
            Some(labels(&[
                (LABEL_SERVICE_NAME, "bad"),
                (LABEL_MANAGED_BY, "actor"),
                ("foo", "bar"),
            ])),
            None,
            reserved(&[("foo", "bar")]),
        ),
    ];
    for (name, svc_labels, cluster_ip, want) in cases {
        let mut svc = base.clone();
        svc.metadata.labels = svc_labels;
        if let Some(ip) = cluster_ip {
            svc.spec.as_mut().unwrap().cluster_ip = Some(ip.into());
        }
        let slice = new_endpoint_slice(&svc, &meta, MANAGED_BY);
        assert_eq!(slice.metadata.labels.as_ref(), Some(&want), "{name}");
        assert_eq!(
            slice.metadata.generate_name.as_deref(),
            Some("foo-"),
            "{name}"
        );
        assert_eq!(slice.metadata.namespace.as_deref(), Some(NS));
        let owner = &slice.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!(
            (
                owner.api_version.as_str(),
                owner.kind.as_str(),
                owner.uid.as_str(),
                owner.controller
            ),
            ("v1", "Service", "test-foo", Some(true)),
            "{name}"
        );
        assert_eq!(slice.address_type, "IPv4");
        assert_eq!(slice.ports.as_ref(), Some(&meta.ports));
        assert_eq!(slice.endpoints.as_deref(), Some(&[][..]));
    }
}

#[test]
fn pod_to_endpoint_table() {
    let (svc, _) = new_service("foo");
    let mut publish = svc.clone();
    publish.spec.as_mut().unwrap().publish_not_ready_addresses = Some(true);
    let node = Node {
        metadata: ObjectMeta {
            name: Some("node-1".into()),
            labels: Some(labels(&[
                (LABEL_TOPOLOGY_ZONE, "us-central1-a"),
                ("topology.kubernetes.io/region", "us-central1"),
            ])),
            ..Default::default()
        },
        ..Default::default()
    };
    let ready = new_pod(1, true, false);
    let mut hostname = new_pod(1, true, false);
    hostname.spec.as_mut().unwrap().subdomain = Some("foo".into());
    hostname.spec.as_mut().unwrap().hostname = Some("example-hostname".into());
    let unready = new_pod(1, false, false);
    // (name, pod, node, service, (ready, serving, terminating), zone, hostname)
    let cases = [
        (
            "Ready pod",
            &ready,
            None,
            &svc,
            (true, true, false),
            None,
            None,
        ),
        (
            "Ready pod + publishNotReadyAddresses",
            &ready,
            None,
            &publish,
            (true, true, false),
            None,
            None,
        ),
        (
            "Unready pod",
            &unready,
            None,
            &svc,
            (false, false, false),
            None,
            None,
        ),
        (
            "Unready pod + publishNotReadyAddresses",
            &unready,
            None,
            &publish,
            (true, false, false),
            None,
            None,
        ),
        (
            "Ready pod + node labels",
            &ready,
            Some(&node),
            &svc,
            (true, true, false),
            Some("us-central1-a"),
            None,
        ),
        (
            "Ready pod + hostname",
            &hostname,
            Some(&node),
            &svc,
            (true, true, false),
            Some("us-central1-a"),
            Some("example-hostname"),
        ),
        (
            "Ready terminating pod",
            &new_pod(1, true, true),
            None,
            &svc,
            (false, true, true),
            None,
            None,
        ),
        (
            "Not ready terminating pod",
            &new_pod(1, false, true),
            None,
            &svc,
            (false, false, true),
            None,
            None,
        ),
    ];
    for (name, pod, node, svc, (r, s, t), zone, host) in cases {
        let ep = pod_to_endpoint(pod, node, svc, ADDRESS_TYPE_IPV4);
        assert_eq!(ep.addresses, vec!["10.0.0.1".to_string()], "{name}");
        let c = ep.conditions.clone().unwrap();
        assert_eq!(
            (c.ready, c.serving, c.terminating),
            (Some(r), Some(s), Some(t)),
            "{name}"
        );
        assert_eq!(ep.zone.as_deref(), zone, "{name}");
        assert_eq!(ep.hostname.as_deref(), host, "{name}");
        assert_eq!(ep.node_name.as_deref(), Some("node-1"), "{name}");
        let tr = ep.target_ref.unwrap();
        assert_eq!(
            (
                tr.kind.as_deref(),
                tr.namespace.as_deref(),
                tr.name.as_deref(),
                tr.uid.as_deref()
            ),
            (Some("Pod"), Some(NS), Some("pod1"), Some("uid-pod1")),
            "{name}"
        );
    }
    // multi-IP pod: the address of the slice's family only, canonical form
    let mut multi = new_pod(1, true, false);
    multi.status.as_mut().unwrap().pod_ips = Some(vec![
        k8s_openapi::api::core::v1::PodIP {
            ip: "1.2.3.4".into(),
        },
        k8s_openapi::api::core::v1::PodIP {
            ip: "1234::5678:0000:0000:9abc:def0".into(),
        },
    ]);
    assert_eq!(
        pod_to_endpoint(&multi, None, &svc, ADDRESS_TYPE_IPV4).addresses,
        vec!["1.2.3.4"]
    );
    assert_eq!(
        pod_to_endpoint(&multi, None, &svc, ADDRESS_TYPE_IPV6).addresses,
        vec!["1234::5678:0:0:9abc:def0"]
    );
}

#[test]
fn endpoint_ports_table() {
    let (mut svc, _) = new_service("foo");
    let pod = {
        let mut p = new_pod(1, true, false);
        p.spec.as_mut().unwrap().containers[0].ports = Some(vec![ContainerPort {
            name: Some("https".into()),
            container_port: 443,
            protocol: Some("TCP".into()),
            ..Default::default()
        }]);
        p
    };
    // service with AppProtocol on one port
    svc.spec.as_mut().unwrap().ports = Some(vec![ServicePort {
        name: Some("http".into()),
        port: 80,
        target_port: Some(IntOrString::Int(80)),
        protocol: Some("TCP".into()),
        app_protocol: Some("example.com/custom-protocol".into()),
        ..Default::default()
    }]);
    assert_eq!(
        endpoint_ports(&svc, &pod),
        vec![EndpointPort {
            name: Some("http".into()),
            port: Some(80),
            protocol: Some("TCP".into()),
            app_protocol: Some("example.com/custom-protocol".into()),
        }]
    );
    // service with named port and AppProtocol on one port
    svc.spec.as_mut().unwrap().ports = Some(vec![
        ServicePort {
            name: Some("http".into()),
            port: 80,
            target_port: Some(IntOrString::Int(80)),
            protocol: Some("TCP".into()),
            ..Default::default()
        },
        ServicePort {
            name: Some("https".into()),
            target_port: Some(IntOrString::String("https".into())),
            protocol: Some("TCP".into()),
            app_protocol: Some("https".into()),
            ..Default::default()
        },
        // a named port the pod does not have is left out
        ServicePort {
            name: Some("metrics".into()),
            target_port: Some(IntOrString::String("metrics".into())),
            ..Default::default()
        },
    ]);
    let ports = endpoint_ports(&svc, &pod);
    assert_eq!(ports.len(), 2);
    assert_eq!(
        (ports[1].name.as_deref(), ports[1].port),
        (Some("https"), Some(443))
    );
    assert_eq!(ports[1].app_protocol.as_deref(), Some("https"));
}

#[test]
fn set_endpoint_slice_labels_table() {
    let (mut base, _) = new_service("foo");
    base.spec.as_mut().unwrap().cluster_ip = Some("1.1.1.1".into());
    let slice_with = |l: &[(&str, &str)]| EndpointSlice {
        metadata: ObjectMeta {
            labels: (!l.is_empty()).then(|| labels(l)),
            ..Default::default()
        },
        address_type: "IPv4".into(),
        endpoints: None,
        ports: None,
    };
    let ours = [(LABEL_SERVICE_NAME, "foo"), (LABEL_MANAGED_BY, MANAGED_BY)];
    let ours_headless = [
        (LABEL_SERVICE_NAME, "foo"),
        (LABEL_MANAGED_BY, MANAGED_BY),
        (LABEL_HEADLESS, ""),
    ];
    let ours_foo = [
        (LABEL_SERVICE_NAME, "foo"),
        (LABEL_MANAGED_BY, MANAGED_BY),
        ("foo", "bar"),
    ];
    type Case<'a> = (
        &'a str,
        EndpointSlice,
        &'a [(&'a str, &'a str)],
        bool,
        &'a [(&'a str, &'a str)],
        bool,
    );
    // (name, slice, service labels, headless, expected labels, expected update)
    let cases: Vec<Case> = vec![
        (
            "Service without labels and empty endpoint slice",
            slice_with(&[]),
            &[],
            false,
            &ours,
            false,
        ),
        (
            "Headless service with labels and empty endpoint slice",
            slice_with(&[]),
            &[("foo", "bar")],
            true,
            &[
                (LABEL_SERVICE_NAME, "foo"),
                (LABEL_MANAGED_BY, MANAGED_BY),
                (LABEL_HEADLESS, ""),
                ("foo", "bar"),
            ],
            true,
        ),
        (
            "Headless service without labels and empty endpoint slice",
            slice_with(&[]),
            &[],
            true,
            &ours_headless,
            false,
        ),
        (
            "Non Headless service with Headless label and empty endpoint slice",
            slice_with(&[]),
            &[(LABEL_HEADLESS, "")],
            false,
            &ours,
            false,
        ),
        (
            "Headless Service change to ClusterIP Service with headless label",
            slice_with(&ours_headless),
            &[(LABEL_HEADLESS, "")],
            false,
            &ours,
            false,
        ),
        (
            "Headless Service change to ClusterIP Service",
            slice_with(&ours_headless),
            &[],
            false,
            &ours,
            false,
        ),
        (
            "Headless service and endpoint slice with same labels",
            slice_with(&ours_foo),
            &[("foo", "bar")],
            true,
            &[
                (LABEL_SERVICE_NAME, "foo"),
                (LABEL_MANAGED_BY, MANAGED_BY),
                (LABEL_HEADLESS, ""),
                ("foo", "bar"),
            ],
            false,
        ),
        (
            "Service with labels and empty endpoint slice",
            slice_with(&[]),
            &[("foo", "bar")],
            false,
            &ours_foo,
            true,
        ),
        (
            "Slice with labels and service without labels",
            slice_with(&ours_foo),
            &[],
            false,
            &ours,
            true,
        ),
        (
            "Slice with headless label and service with ClusterIP",
            slice_with(&ours_headless),
            &[],
            false,
            &ours,
            false,
        ),
        (
            "Slice with reserved labels and service with labels",
            slice_with(&ours),
            &[("foo", "bar")],
            false,
            &ours_foo,
            true,
        ),
        (
            "Evil service trying to hijack slice labels only well-known slice labels",
            slice_with(&ours),
            &[
                (LABEL_SERVICE_NAME, "bad"),
                (LABEL_MANAGED_BY, "actor"),
                (LABEL_HEADLESS, "invalid"),
            ],
            false,
            &ours,
            false,
        ),
        (
            "Evil service trying to hijack slice labels with updates",
            slice_with(&ours),
            &[
                (LABEL_SERVICE_NAME, "bad"),
                (LABEL_MANAGED_BY, "actor"),
                ("foo", "bar"),
            ],
            false,
            &ours_foo,
            true,
        ),
    ];
    for (name, slice, svc_labels, headless, want, want_update) in cases {
        let mut svc = base.clone();
        svc.metadata.labels = (!svc_labels.is_empty()).then(|| labels(svc_labels));
        if headless {
            svc.spec.as_mut().unwrap().cluster_ip = Some("None".into());
        }
        let (got, updated) = set_endpoint_slice_labels(&slice, &svc, MANAGED_BY);
        assert_eq!(got, labels(want), "{name}");
        assert_eq!(updated, want_update, "{name}");
    }
}

#[test]
fn service_controller_key_table() {
    let empty = EndpointSlice {
        metadata: ObjectMeta::default(),
        address_type: "IPv4".into(),
        endpoints: None,
        ports: None,
    };
    assert_eq!(
        service_controller_key(&empty),
        Err("EndpointSlice missing kubernetes.io/service-name label".to_string())
    );
    let mut valid = empty.clone();
    valid.metadata.namespace = Some("ns".into());
    valid.metadata.labels = Some(labels(&[(LABEL_SERVICE_NAME, "svc")]));
    assert_eq!(
        service_controller_key(&valid).unwrap().to_string(),
        "ns/svc"
    );
}

#[test]
fn supported_service_address_types_table() {
    let (base, _) = new_service("foo");
    // (name, cluster IP, families, selector, expected)
    let cases: Vec<(&str, Option<&str>, Option<Vec<&str>>, Vec<&str>)> = vec![
        (
            "v4 service with no ip families (cluster upgrade)",
            Some("10.0.0.10"),
            None,
            vec!["IPv4"],
        ),
        (
            "v6 service with no ip families (cluster upgrade)",
            Some("2000::1"),
            None,
            vec!["IPv6"],
        ),
        ("v4 service", None, Some(vec!["IPv4"]), vec!["IPv4"]),
        ("v6 services", None, Some(vec!["IPv6"]), vec!["IPv6"]),
        (
            "v4,v6 service",
            None,
            Some(vec!["IPv4", "IPv6"]),
            vec!["IPv4", "IPv6"],
        ),
        (
            "v6,v4 service",
            None,
            Some(vec!["IPv6", "IPv4"]),
            vec!["IPv4", "IPv6"],
        ),
        (
            "headless with no families (old api-server)",
            Some("None"),
            None,
            vec!["IPv4", "IPv6"],
        ),
        (
            "headless with families",
            Some("None"),
            Some(vec!["IPv4", "IPv6"]),
            vec!["IPv4", "IPv6"],
        ),
        (
            "headless with one family",
            Some("None"),
            Some(vec!["IPv6"]),
            vec!["IPv6"],
        ),
    ];
    for (name, ip, families, want) in cases {
        let mut svc = base.clone();
        let spec = svc.spec.as_mut().unwrap();
        spec.cluster_ip = ip.map(str::to_string);
        spec.ip_families = families.map(|f| f.iter().map(|s| s.to_string()).collect());
        assert_eq!(address_types_for_service(&svc), want, "{name}");
    }
}

#[test]
fn slice_to_fill_table() {
    // upstream TestGetSliceToFill (in reconciler_test.go)
    let (svc, meta) = new_service("foo");
    let sized = |n: usize, size: usize| {
        let mut s = super::reconciler_tests::new_empty_slice(n, &meta, &svc);
        s.endpoints = Some(
            (0..size)
                .map(|i| pod_to_endpoint(&new_pod(n * 1000 + i, true, false), None, &svc, "IPv4"))
                .collect(),
        );
        s
    };
    let name = |s: Option<&EndpointSlice>| s.and_then(|s| s.metadata.name.clone());
    // (slices (index, size), numEndpoints, max, expected index)
    let cases: Vec<(&str, Vec<(usize, usize)>, usize, usize, Option<usize>)> = vec![
        ("empty slices", vec![], 1, 100, None),
        ("single empty slice", vec![(1, 0)], 1, 100, Some(1)),
        ("single full slice", vec![(1, 100)], 1, 100, None),
        ("single range slice", vec![(1, 50)], 1, 100, Some(1)),
        ("multiple slices", vec![(1, 99), (2, 50)], 2, 100, Some(2)),
        (
            "fullest fits",
            vec![(1, 95), (2, 50), (3, 70)],
            5,
            100,
            Some(1),
        ),
        ("none fits", vec![(1, 95), (2, 96)], 10, 100, None),
    ];
    for (n, spec, num, max, want) in cases {
        let slices: Vec<EndpointSlice> = spec.iter().map(|(i, s)| sized(*i, *s)).collect();
        let got = slice_to_fill(slices.iter(), num, max);
        assert_eq!(name(got), want.map(|i| format!("foo-{i}")), "{n}");
    }
}

fn tracked_slice(name: &str, uid: &str, generation: i64) -> EndpointSlice {
    EndpointSlice {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("ns1".into()),
            uid: Some(uid.into()),
            generation: Some(generation),
            labels: Some(labels(&[(LABEL_SERVICE_NAME, "svc1")])),
            ..Default::default()
        },
        address_type: "IPv4".into(),
        endpoints: None,
        ports: None,
    }
}

#[test]
fn tracker_should_sync_and_deletions() {
    // upstream TestEndpointSliceTrackerShouldSync / TestEndpointSliceTrackerHandleDeletion
    let t = EndpointSliceTracker::new();
    let s1 = tracked_slice("example-1", "original", 1);
    assert!(t.should_sync(&s1), "untracked");
    assert!(!t.has(&s1));
    t.update(&s1);
    assert!(!t.should_sync(&s1), "same generation");
    assert!(
        t.should_sync(&tracked_slice("example-1", "original", 2)),
        "newer generation"
    );
    assert!(
        !t.should_sync(&tracked_slice("example-1", "original", 0)),
        "older generation"
    );
    assert!(
        t.should_sync(&tracked_slice("example-1", "other-uid", 1)),
        "other uid"
    );
    // our own deletion is expected; someone else's is not
    t.expect_deletion(&s1);
    assert!(t.handle_deletion(&s1));
    assert!(!t.has(&s1));
    let s2 = tracked_slice("example-2", "second", 1);
    t.update(&s2);
    assert!(!t.handle_deletion(&s2));
    // untracked deletions are fine
    assert!(t.handle_deletion(&tracked_slice("x", "untracked", 1)));
}

#[test]
fn tracker_stale_slices() {
    // upstream TestEndpointSliceTrackerStaleSlices
    let svc = |uid: &str| {
        let mut s = new_service("svc1").0;
        s.metadata.namespace = Some("ns1".into());
        s.metadata.uid = Some(uid.into());
        s
    };
    let s1 = tracked_slice("example-1", "original", 1);
    let newer = tracked_slice("example-1", "original", 2);
    // empty tracker: not stale
    let t = EndpointSliceTracker::new();
    assert!(!t.stale_slices(&svc("svc-uid"), &[&s1]));
    // same generation: not stale; cache older than our write: stale
    t.update(&newer);
    assert!(!t.stale_slices(&svc("svc-uid"), &[&newer]));
    assert!(t.stale_slices(&svc("svc-uid"), &[&s1]));
    // our write is missing from the cache: stale
    assert!(t.stale_slices(&svc("svc-uid"), &[]));
    // a slice we deleted is still cached: stale; once gone: fine
    let t = EndpointSliceTracker::new();
    t.update(&s1);
    t.expect_deletion(&s1);
    assert!(t.stale_slices(&svc("svc-uid"), &[&s1]));
    assert!(!t.stale_slices(&svc("svc-uid"), &[]));
    // a recreated Service (another UID) forgets the old writes
    let t = EndpointSliceTracker::new();
    t.stale_slices(&svc("old-uid"), &[]);
    t.update(&newer);
    assert!(t.stale_slices(&svc("old-uid"), &[]));
    assert!(!t.stale_slices(&svc("new-uid"), &[]));
}

#[test]
fn options_validate_max_endpoints_per_slice() {
    let mut o = EndpointSliceControllerOptions::default();
    assert_eq!(
        (
            o.concurrent_service_endpoint_syncs,
            o.max_endpoints_per_slice
        ),
        (5, 100)
    );
    assert!(o.validate().is_ok());
    o.max_endpoints_per_slice = 1000;
    assert!(o.validate().is_ok());
    for bad in [0, 1001] {
        o.max_endpoints_per_slice = bad;
        assert!(
            o.validate().unwrap_err().contains("between 1 and 1000"),
            "{bad}"
        );
    }
}
