//! Placement tables ported from upstream's `k8s.io/endpointslice/reconciler_test.go`
//! (`TestReconcile1EndpointSlice`, `TestReconcileManyPods`,
//! `TestReconcileEndpointSlicesSomePreexisting`, `...WorseAllocation`, `...Updating`,
//! `...ServicesLabelsUpdating`, `...ServicesReservedLabels`, `...Recycling`,
//! `...UpdatePacking`, `...ReplaceDeprecated`, `...Recreation`, `...NamedPorts`, ...).
//! Upstream runs the reconciler against a fake clientset; here the plan is applied to
//! an in-memory set of slices. Pod IPs are valid addresses (upstream's `1.2.3.<4+n>`
//! overflows past 251 pods).

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{
    Container, ContainerPort, Node, Pod, PodCondition, PodIP, PodSpec, PodStatus, Service,
    ServicePort, ServiceSpec,
};
use k8s_openapi::api::discovery::v1::{EndpointPort, EndpointSlice};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use k8s_openapi::jiff::Timestamp;

use super::reconciler::{eps, plan, Params, Plan};
use super::utils::*;
use super::MANAGED_BY;

pub(super) const NS: &str = "test";

pub(super) fn ip_of(n: usize) -> String {
    format!("10.{}.{}.{}", n / 65536, (n / 256) % 256, n % 256)
}

/// Upstream `newPod`: labels foo=bar, on node-1, one IP, Ready as asked.
pub(super) fn new_pod(n: usize, ready: bool, terminating: bool) -> Pod {
    Pod {
        metadata: ObjectMeta {
            namespace: Some(NS.into()),
            name: Some(format!("pod{n}")),
            uid: Some(format!("uid-pod{n}")),
            labels: Some([("foo".to_string(), "bar".to_string())].into()),
            deletion_timestamp: terminating.then(|| Time(Timestamp::now())),
            resource_version: Some(n.to_string()),
            ..Default::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "container-1".into(),
                ..Default::default()
            }],
            node_name: Some("node-1".into()),
            ..Default::default()
        }),
        status: Some(PodStatus {
            pod_ip: Some(ip_of(n)),
            pod_ips: Some(vec![PodIP { ip: ip_of(n) }]),
            conditions: Some(vec![PodCondition {
                type_: "Ready".into(),
                status: if ready { "True" } else { "False" }.into(),
                ..Default::default()
            }]),
            phase: Some("Running".into()),
            ..Default::default()
        }),
    }
}

/// Upstream `newServiceAndEndpointMeta`.
pub(super) fn new_service(name: &str) -> (Service, EndpointMeta) {
    let svc = Service {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(NS.into()),
            uid: Some(format!("{NS}-{name}")),
            ..Default::default()
        },
        spec: Some(ServiceSpec {
            ports: Some(vec![ServicePort {
                target_port: Some(IntOrString::Int(80)),
                protocol: Some("TCP".into()),
                name: Some(name.into()),
                ..Default::default()
            }]),
            selector: Some([("foo".to_string(), "bar".to_string())].into()),
            ip_families: Some(vec!["IPv4".into()]),
            ..Default::default()
        }),
        status: None,
    };
    let meta = EndpointMeta {
        address_type: ADDRESS_TYPE_IPV4.into(),
        ports: vec![EndpointPort {
            name: Some(name.into()),
            port: Some(80),
            protocol: Some("TCP".into()),
            app_protocol: None,
        }],
    };
    (svc, meta)
}

/// Upstream `newEmptyEndpointSlice`: named `<svc>-<n>`, owned by the Service.
pub(super) fn new_empty_slice(n: usize, meta: &EndpointMeta, svc: &Service) -> EndpointSlice {
    let mut s = new_endpoint_slice(svc, meta, MANAGED_BY);
    s.metadata.generate_name = None;
    s.metadata.name = Some(format!("{}-{n}", svc.metadata.name.as_deref().unwrap()));
    s.metadata.uid = Some(format!("uid-slice-{n}"));
    s.metadata.generation = Some(1);
    s
}

fn node1(name: &str) -> Option<Arc<Node>> {
    (name == "node-1").then(|| {
        Arc::new(Node {
            metadata: ObjectMeta {
                name: Some("node-1".into()),
                ..Default::default()
            },
            ..Default::default()
        })
    })
}

fn push(slice: &mut EndpointSlice, pod: &Pod, svc: &Service) {
    slice
        .endpoints
        .get_or_insert_with(Vec::new)
        .push(pod_to_endpoint(pod, None, svc, ADDRESS_TYPE_IPV4));
}

/// The slices as the API server would hold them, writes applied in order.
#[derive(Default)]
struct Cluster {
    slices: BTreeMap<String, EndpointSlice>,
    generated: usize,
    /// The zone label of node-1, if any.
    zone: Option<String>,
}

impl Cluster {
    fn with(slices: &[EndpointSlice]) -> Self {
        let mut c = Cluster::default();
        for s in slices {
            c.slices.insert(s.metadata.name.clone().unwrap(), s.clone());
        }
        c
    }

    fn existing(&self) -> Vec<Arc<EndpointSlice>> {
        self.slices.values().cloned().map(Arc::new).collect()
    }

    fn reconcile(&mut self, svc: &Service, pods: &[Pod], max: usize) -> Plan {
        let pods: Vec<Arc<Pod>> = pods.iter().cloned().map(Arc::new).collect();
        let existing = self.existing();
        let zone = self.zone.clone();
        let node = move |name: &str| {
            node1(name).map(|n| {
                let mut n = (*n).clone();
                if let Some(z) = &zone {
                    n.metadata.labels = Some([(LABEL_TOPOLOGY_ZONE.to_string(), z.clone())].into());
                }
                Arc::new(n)
            })
        };
        let p = plan(
            svc,
            &pods,
            &Params {
                existing: &existing,
                node: &node,
                max_endpoints_per_slice: max,
                controller_name: MANAGED_BY,
            },
        );
        for s in &p.to_create {
            assert!(s.metadata.name.is_none(), "a creation has a generated name");
            self.generated += 1;
            let mut s = s.clone();
            let name = format!(
                "{}gen{}",
                s.metadata.generate_name.clone().unwrap(),
                self.generated
            );
            s.metadata.name = Some(name.clone());
            self.slices.insert(name, s);
        }
        for s in &p.to_update {
            let name = s.metadata.name.clone().unwrap();
            assert!(
                self.slices.contains_key(&name),
                "update of an existing slice"
            );
            self.slices.insert(name, s.clone());
        }
        for s in &p.to_delete {
            self.slices.remove(s.metadata.name.as_ref().unwrap());
        }
        p
    }

    fn lengths(&self) -> Vec<usize> {
        let mut v: Vec<usize> = self.slices.values().map(|s| eps(s).len()).collect();
        v.sort();
        v
    }
}

fn sorted(mut v: Vec<usize>) -> Vec<usize> {
    v.sort();
    v
}

fn counts(p: &Plan) -> (usize, usize, usize) {
    (p.to_create.len(), p.to_update.len(), p.to_delete.len())
}

fn pods_third_unready(n: usize) -> Vec<Pod> {
    (0..n).map(|i| new_pod(i, i % 3 != 0, false)).collect()
}

#[test]
fn reconcile_empty_service_creates_one_placeholder() {
    // upstream TestReconcileEmpty
    let (svc, _) = new_service("foo");
    let mut c = Cluster::default();
    let p = c.reconcile(&svc, &[], 100);
    assert_eq!(counts(&p), (1, 0, 0));
    let slice = c.slices.values().next().unwrap();
    assert_eq!(slice.address_type, "IPv4");
    assert!(eps(slice).is_empty());
    assert!(slice.ports.as_ref().unwrap().is_empty());
    let labels = slice.metadata.labels.as_ref().unwrap();
    assert_eq!(labels[LABEL_SERVICE_NAME], "foo");
    assert_eq!(labels[LABEL_MANAGED_BY], MANAGED_BY);
    // the placeholder is kept, not rewritten
    assert_eq!(counts(&c.reconcile(&svc, &[], 100)), (0, 0, 0));
}

#[test]
fn reconcile_1_pod_by_address_type() {
    // upstream TestReconcile1Pod: which slices a pod yields for the Service's families
    let pod = new_pod(1, true, false);
    let mut dual = new_pod(1, true, false);
    dual.status.as_mut().unwrap().pod_ips = Some(vec![
        PodIP {
            ip: "1.2.3.4".into(),
        },
        PodIP {
            ip: "1234::5678:0000:0000:9abc:def0".into(),
        },
    ]);
    // (families, pod, expected (addressType, addresses) per slice)
    type Case = (
        &'static [&'static str],
        Pod,
        Vec<(&'static str, Vec<&'static str>)>,
    );
    let cases: Vec<Case> = vec![
        (&["IPv4"], pod.clone(), vec![("IPv4", vec!["10.0.0.1"])]),
        // an IPv6 Service over an IPv4-only pod: just the placeholder
        (&["IPv6"], pod.clone(), vec![("IPv6", vec![])]),
        (
            &["IPv4", "IPv6"],
            dual.clone(),
            vec![
                ("IPv4", vec!["1.2.3.4"]),
                ("IPv6", vec!["1234::5678:0:0:9abc:def0"]),
            ],
        ),
        (
            &["IPv6"],
            dual,
            vec![("IPv6", vec!["1234::5678:0:0:9abc:def0"])],
        ),
    ];
    for (families, pod, expected) in cases {
        let (mut svc, _) = new_service("foo");
        svc.spec.as_mut().unwrap().ip_families =
            Some(families.iter().map(|f| f.to_string()).collect());
        let mut c = Cluster::default();
        c.reconcile(&svc, std::slice::from_ref(&pod), 100);
        let mut got: Vec<(String, Vec<String>)> = c
            .slices
            .values()
            .map(|s| {
                let addrs = eps(s).iter().flat_map(|e| e.addresses.clone()).collect();
                (s.address_type.clone(), addrs)
            })
            .collect();
        got.sort();
        let want: Vec<(String, Vec<String>)> = expected
            .iter()
            .map(|(t, a)| (t.to_string(), a.iter().map(|s| s.to_string()).collect()))
            .collect();
        assert_eq!(got, want, "{families:?}");
    }
    // the endpoint of a ready pod on a known node
    let (svc, _) = new_service("foo");
    let mut c = Cluster::default();
    c.reconcile(&svc, std::slice::from_ref(&pod), 100);
    let slice = c.slices.values().next().unwrap();
    let ep = &eps(slice)[0];
    let cond = ep.conditions.clone().unwrap();
    assert_eq!(
        (cond.ready, cond.serving, cond.terminating),
        (Some(true), Some(true), Some(false))
    );
    assert_eq!(ep.node_name.as_deref(), Some("node-1"));
    let r = ep.target_ref.as_ref().unwrap();
    assert_eq!(
        (r.kind.as_deref(), r.name.as_deref()),
        (Some("Pod"), Some("pod1"))
    );
    assert_eq!(slice.ports.as_ref().unwrap()[0].port, Some(80));
}

#[test]
fn reconcile_publish_not_ready_addresses() {
    // upstream TestReconcile1EndpointSlicePublishNotReadyAddresses
    let (mut svc, _) = new_service("foo");
    svc.spec.as_mut().unwrap().publish_not_ready_addresses = Some(true);
    let mut c = Cluster::default();
    let p = c.reconcile(&svc, &pods_third_unready(50), 100);
    assert_eq!(counts(&p), (1, 0, 0));
    assert_eq!(c.lengths(), vec![50]);
    for ep in eps(c.slices.values().next().unwrap()) {
        assert_eq!(ep.conditions.as_ref().unwrap().ready, Some(true));
    }
}

#[test]
fn reconcile_many_pods() {
    // upstream TestReconcileManyPods: 250 pods → 3 creations, two full
    let (svc, _) = new_service("foo");
    let mut c = Cluster::default();
    let p = c.reconcile(&svc, &pods_third_unready(250), 100);
    assert_eq!(counts(&p), (3, 0, 0));
    assert_eq!(c.lengths(), vec![50, 100, 100]);
}

fn preexisting(n: usize) -> (Service, Vec<Pod>, Vec<EndpointSlice>) {
    let (svc, meta) = new_service("foo");
    let pods = pods_third_unready(n);
    let mut s1 = new_empty_slice(1, &meta, &svc);
    for i in (1..n - 4).step_by(4) {
        push(&mut s1, &pods[i], &svc);
    }
    let mut s2 = new_empty_slice(2, &meta, &svc);
    for i in (3..n - 4).step_by(4) {
        push(&mut s2, &pods[i], &svc);
    }
    (svc, pods, vec![s1, s2])
}

#[test]
fn reconcile_some_preexisting() {
    // upstream TestReconcileEndpointSlicesSomePreexisting: 62 + 61 in place, 127 to
    // add: one new full slice, the 27 left into the fuller existing one
    let (svc, pods, existing) = preexisting(250);
    let mut c = Cluster::with(&existing);
    let p = c.reconcile(&svc, &pods, 100);
    assert_eq!(counts(&p), (1, 1, 0));
    assert_eq!(c.lengths(), sorted(vec![89, 61, 100]));
}

#[test]
fn reconcile_some_preexisting_worse_allocation() {
    // upstream ...WorseAllocation: 74 + 74 in place, 152 to add: two new slices rather
    // than two updates and a creation
    let (svc, pods, existing) = preexisting(300);
    let mut c = Cluster::with(&existing);
    let p = c.reconcile(&svc, &pods, 100);
    assert_eq!(counts(&p), (2, 0, 0));
    assert_eq!(c.lengths(), sorted(vec![74, 74, 100, 52]));
}

#[test]
fn reconcile_port_change_updates_in_place() {
    // upstream TestReconcileEndpointSlicesUpdating
    let (mut svc, _) = new_service("foo");
    let pods = pods_third_unready(250);
    let mut c = Cluster::default();
    c.reconcile(&svc, &pods, 100);
    svc.spec.as_mut().unwrap().ports.as_mut().unwrap()[0].target_port = Some(IntOrString::Int(81));
    let p = c.reconcile(&svc, &pods, 100);
    assert_eq!(counts(&p), (0, 3, 0));
    assert_eq!(c.lengths(), vec![50, 100, 100]);
    for s in c.slices.values() {
        assert_eq!(s.ports.as_ref().unwrap()[0].port, Some(81));
    }
}

#[test]
fn reconcile_service_labels() {
    // upstream ...ServicesLabelsUpdating and ...ServicesReservedLabels
    let (mut svc, _) = new_service("foo");
    let pods = pods_third_unready(250);
    let mut c = Cluster::default();
    c.reconcile(&svc, &pods, 100);
    let mut reserved = svc.clone();
    reserved.metadata.labels = Some(
        [
            (LABEL_SERVICE_NAME, "bad"),
            (LABEL_MANAGED_BY, "actor"),
            (LABEL_HEADLESS, "invalid"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect(),
    );
    assert_eq!(counts(&c.reconcile(&reserved, &pods, 100)), (0, 0, 0));
    svc.metadata.labels = Some([("foo".to_string(), "bar".to_string())].into());
    let p = c.reconcile(&svc, &pods, 100);
    assert_eq!(counts(&p), (0, 3, 0));
    for s in c.slices.values() {
        assert_eq!(s.metadata.labels.as_ref().unwrap()["foo"], "bar");
    }
}

#[test]
fn reconcile_recycling_repacks() {
    // upstream TestReconcileEndpointSlicesRecycling: 10 slices of 30 stay as they are;
    // a port change repacks into 3 updates and 7 deletions
    let (mut svc, meta) = new_service("foo");
    let pods = pods_third_unready(300);
    let mut existing: Vec<EndpointSlice> = Vec::new();
    for (i, pod) in pods.iter().enumerate() {
        if i % 30 == 0 {
            existing.push(new_empty_slice(i / 30, &meta, &svc));
        }
        push(existing.last_mut().unwrap(), pod, &svc);
    }
    let mut c = Cluster::with(&existing);
    assert_eq!(counts(&c.reconcile(&svc, &pods, 100)), (0, 0, 0));
    svc.spec.as_mut().unwrap().ports.as_mut().unwrap()[0].target_port = Some(IntOrString::Int(81));
    let p = c.reconcile(&svc, &pods, 100);
    assert_eq!(counts(&p), (0, 3, 7));
    assert_eq!(c.lengths(), vec![100, 100, 100]);
}

#[test]
fn reconcile_update_packing() {
    // upstream TestReconcileEndpointSlicesUpdatePacking: both slices change, the 15 new
    // endpoints go to the fuller one
    let (svc, meta) = new_service("foo");
    let mut pods = Vec::new();
    let mut s1 = new_empty_slice(1, &meta, &svc);
    for i in 0..80 {
        let pod = new_pod(i, true, false);
        push(&mut s1, &pod, &svc);
        pods.push(pod);
    }
    let mut s2 = new_empty_slice(2, &meta, &svc);
    for i in 100..120 {
        let pod = new_pod(i, true, false);
        push(&mut s2, &pod, &svc);
        pods.push(pod);
    }
    for (i, pod) in pods.iter_mut().enumerate() {
        if i % 10 == 0 {
            pod.status.as_mut().unwrap().conditions.as_mut().unwrap()[0].status = "False".into();
        }
    }
    pods.extend((200..215).map(|i| new_pod(i, true, false)));
    let mut c = Cluster::with(&[s1, s2]);
    let p = c.reconcile(&svc, &pods, 100);
    assert_eq!(counts(&p), (0, 2, 0));
    assert_eq!(c.lengths(), vec![20, 95]);
}

#[test]
fn reconcile_replace_deprecated_address_type() {
    // upstream TestReconcileEndpointSlicesReplaceDeprecated: "IP" slices are replaced by
    // IPv4 ones, perfectly packed
    let (svc, mut meta) = new_service("foo");
    meta.address_type = "IP".into();
    let mut pods = Vec::new();
    let mut s1 = new_empty_slice(1, &meta, &svc);
    for i in 0..80 {
        let pod = new_pod(i, true, false);
        push(&mut s1, &pod, &svc);
        pods.push(pod);
    }
    let mut s2 = new_empty_slice(2, &meta, &svc);
    for i in 100..150 {
        let pod = new_pod(i, true, false);
        push(&mut s2, &pod, &svc);
        pods.push(pod);
    }
    let mut c = Cluster::with(&[s1, s2]);
    let p = c.reconcile(&svc, &pods, 100);
    assert_eq!(p.to_delete.len(), 2);
    assert_eq!(c.lengths(), vec![30, 100]);
    assert!(c.slices.values().all(|s| s.address_type == "IPv4"));
}

#[test]
fn reconcile_recreated_service() {
    // upstream TestReconcileEndpointSlicesRecreation
    for (owned, expected) in [(true, (0, 0, 0)), (false, (1, 0, 1))] {
        let (svc, meta) = new_service("foo");
        let mut slice = new_empty_slice(1, &meta, &svc);
        let pod = new_pod(1, true, false);
        push(&mut slice, &pod, &svc);
        if !owned {
            slice.metadata.owner_references.as_mut().unwrap()[0].uid = "different".into();
        }
        let mut c = Cluster::with(&[slice]);
        let p = c.reconcile(&svc, &[pod], 100);
        assert_eq!(counts(&p), expected, "owned: {owned}");
        assert_eq!(c.slices.len(), 1);
    }
}

#[test]
fn reconcile_named_ports_group_by_resolved_port() {
    // upstream TestReconcileEndpointSlicesNamedPorts: 300 pods, 5 port numbers for the
    // same port name → 5 slices of 60
    let (mut svc, _) = new_service("named-port-example");
    svc.spec.as_mut().unwrap().ports = Some(vec![ServicePort {
        target_port: Some(IntOrString::String("http".into())),
        protocol: Some("TCP".into()),
        ..Default::default()
    }]);
    let pods: Vec<Pod> = (0..300)
        .map(|i| {
            let mut pod = new_pod(i, i % 3 != 0, false);
            pod.spec.as_mut().unwrap().containers[0].ports = Some(vec![ContainerPort {
                name: Some("http".into()),
                container_port: 8080 + (i % 5) as i32,
                protocol: Some("TCP".into()),
                ..Default::default()
            }]);
            pod
        })
        .collect();
    let mut c = Cluster::default();
    let p = c.reconcile(&svc, &pods, 100);
    assert_eq!(counts(&p), (5, 0, 0));
    assert_eq!(c.lengths(), vec![60; 5]);
    let mut ports: Vec<i32> = c
        .slices
        .values()
        .map(|s| s.ports.as_ref().unwrap()[0].port.unwrap())
        .collect();
    ports.sort();
    assert_eq!(ports, vec![8080, 8081, 8082, 8083, 8084]);
}

#[test]
fn reconcile_max_endpoints_per_slice() {
    // upstream TestReconcileMaxEndpointsPerSlice: slices never exceed the maximum
    for (max, pods, expected) in [
        (50, 250, vec![50; 5]),
        (100, 250, vec![50, 100, 100]),
        (1000, 250, vec![250]),
        (10, 25, vec![5, 10, 10]),
    ] {
        let (svc, _) = new_service("foo");
        let mut c = Cluster::default();
        c.reconcile(&svc, &pods_third_unready(pods), max);
        assert_eq!(c.lengths(), expected, "max {max}");
    }
}

#[test]
fn reconcile_removes_gone_pods_and_deletes_emptied_slices() {
    // scale down: endpoints leave their slices in place; an emptied slice is deleted,
    // and an emptied Service keeps one placeholder
    let (svc, _) = new_service("foo");
    let mut c = Cluster::default();
    c.reconcile(&svc, &pods_third_unready(250), 100);
    let p = c.reconcile(&svc, &pods_third_unready(150), 100);
    // 250 → 150: the slice with pods 200..249 and the half of another empty out
    assert_eq!(c.lengths().iter().sum::<usize>(), 150);
    assert!(p.to_create.is_empty());
    let p = c.reconcile(&svc, &[], 100);
    assert_eq!(c.slices.len(), 1, "{p:?}");
    assert!(eps(c.slices.values().next().unwrap()).is_empty());
}

#[test]
fn reconcile_unknown_node_skips_pod_unless_publishing_not_ready() {
    // a pod whose node is not known is left out (and the sync retried), unless the
    // Service publishes not-ready addresses
    let (mut svc, _) = new_service("foo");
    let mut pod = new_pod(1, true, false);
    pod.spec.as_mut().unwrap().node_name = Some("node-2".into());
    let mut c = Cluster::default();
    let p = c.reconcile(&svc, std::slice::from_ref(&pod), 100);
    assert_eq!(p.errors.len(), 1);
    assert!(
        p.errors[0].contains("Node node-2 Not Found"),
        "{:?}",
        p.errors
    );
    assert_eq!(c.lengths(), vec![0]);
    svc.spec.as_mut().unwrap().publish_not_ready_addresses = Some(true);
    let p = c.reconcile(&svc, &[pod], 100);
    assert!(p.errors.is_empty());
    assert_eq!(c.lengths(), vec![1]);
}

#[test]
fn reconcile_terminating_and_terminal_pods() {
    // a terminating pod stays an endpoint (serving, not ready, terminating); a terminal
    // one and a pod without IP do not
    let (svc, _) = new_service("foo");
    let terminating = new_pod(1, true, true);
    let mut done = new_pod(2, true, false);
    done.status.as_mut().unwrap().phase = Some("Succeeded".into());
    let mut no_ip = new_pod(3, false, false);
    no_ip.status.as_mut().unwrap().pod_ip = None;
    no_ip.status.as_mut().unwrap().pod_ips = None;
    let mut c = Cluster::default();
    c.reconcile(&svc, &[terminating, done, no_ip], 100);
    let slice = c.slices.values().next().unwrap();
    assert_eq!(eps(slice).len(), 1);
    let cond = eps(slice)[0].conditions.clone().unwrap();
    assert_eq!(
        (cond.ready, cond.serving, cond.terminating),
        (Some(false), Some(true), Some(true))
    );
}

#[test]
fn reconcile_traffic_distribution_hints() {
    // upstream trafficdist (TestReconcileHints): with a trafficDistribution, ready
    // endpoints get a hint for their own zone (and node, for PreferSameNode); unchanged
    // slices whose hints are missing or stale are updated; without one, hints are removed
    fn hints(c: &Cluster) -> Vec<(Vec<String>, Vec<String>)> {
        c.slices
            .values()
            .flat_map(|s| eps(s).to_vec())
            .map(|e| {
                let h = e.hints.unwrap_or_default();
                let z = h
                    .for_zones
                    .unwrap_or_default()
                    .into_iter()
                    .map(|z| z.name)
                    .collect();
                let n = h
                    .for_nodes
                    .unwrap_or_default()
                    .into_iter()
                    .map(|n| n.name)
                    .collect();
                (z, n)
            })
            .collect()
    }
    let zone = || vec!["zone-a".to_string()];
    let node = || vec!["node-1".to_string()];
    let (mut svc, _) = new_service("foo");
    let pods = vec![new_pod(1, true, false), new_pod(2, false, false)];
    let mut c = Cluster {
        zone: Some("zone-a".into()),
        ..Default::default()
    };
    c.reconcile(&svc, &pods, 100);
    assert_eq!(hints(&c), vec![(vec![], vec![]), (vec![], vec![])]);
    // PreferClose: the unchanged slice is updated with zone hints for the ready endpoint
    svc.spec.as_mut().unwrap().traffic_distribution = Some("PreferClose".into());
    let p = c.reconcile(&svc, &pods, 100);
    assert_eq!(counts(&p), (0, 1, 0));
    assert_eq!(hints(&c), vec![(zone(), vec![]), (vec![], vec![])]);
    assert_eq!(counts(&c.reconcile(&svc, &pods, 100)), (0, 0, 0));
    // PreferSameNode adds node hints
    svc.spec.as_mut().unwrap().traffic_distribution = Some("PreferSameNode".into());
    assert_eq!(counts(&c.reconcile(&svc, &pods, 100)), (0, 1, 0));
    assert_eq!(hints(&c), vec![(zone(), node()), (vec![], vec![])]);
    // without a trafficDistribution the hints go with the next write of a slice
    svc.spec.as_mut().unwrap().traffic_distribution = None;
    let more = vec![
        new_pod(1, true, false),
        new_pod(2, false, false),
        new_pod(3, true, false),
    ];
    c.reconcile(&svc, &more, 100);
    assert!(
        hints(&c).iter().all(|(z, n)| z.is_empty() && n.is_empty()),
        "{:?}",
        hints(&c)
    );
    // the topology annotation disables trafficDistribution (its own heuristic is not
    // implemented: no hints)
    svc.spec.as_mut().unwrap().traffic_distribution = Some("PreferClose".into());
    svc.metadata.annotations = Some(
        [(
            "service.kubernetes.io/topology-mode".to_string(),
            "Auto".to_string(),
        )]
        .into(),
    );
    c.reconcile(&svc, &pods, 100);
    assert!(
        hints(&c).iter().all(|(z, n)| z.is_empty() && n.is_empty()),
        "{:?}",
        hints(&c)
    );
}
