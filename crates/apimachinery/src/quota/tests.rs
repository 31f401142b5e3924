// Tables after upstream pods_test.go, services_test.go, persistent_volume_claims_test.go
// and the generic object-count evaluator.

use chrono::{Duration, Utc};
use serde_json::{json, Value};

use super::resources::{self, ResourceList};
use super::*;
use crate::quantity;

fn list(entries: &[(&str, &str)]) -> ResourceList {
    entries
        .iter()
        .map(|(k, v)| (k.to_string(), quantity::parse(v).unwrap()))
        .collect()
}

fn names(n: &[&str]) -> Vec<String> {
    n.iter().map(|s| s.to_string()).collect()
}

fn container(name: &str, requests: Value, limits: Value) -> Value {
    json!({"name": name, "resources": {"requests": requests, "limits": limits}})
}

fn pod_with(containers: Vec<Value>, init: Vec<Value>) -> Value {
    json!({"spec": {"containers": containers, "initContainers": init}})
}

fn assert_usage(name: &str, got: &ResourceList, want: &ResourceList) {
    assert!(
        resources::equals(got, want),
        "{name}: got {}, want {}",
        resources::pretty_print(got),
        resources::pretty_print(want)
    );
}

// TestPodConstraintsFunc
#[test]
fn pod_constraints() {
    let cpu = || container("x", json!({"cpu": "1m"}), json!({"cpu": "2m"}));
    let named = |n: &str| {
        let mut c = cpu();
        c["name"] = json!(n);
        c
    };
    let cases = [
        (
            "init container resource missing",
            pod_with(vec![], vec![named("dummy")]),
            vec!["memory"],
            "must specify memory for: dummy",
        ),
        (
            "multiple init container resource missing",
            pod_with(vec![], vec![named("foo"), named("bar")]),
            vec!["memory"],
            "must specify memory for: bar,foo",
        ),
        (
            "container resource missing",
            pod_with(vec![named("dummy")], vec![]),
            vec!["memory"],
            "must specify memory for: dummy",
        ),
        (
            "multiple container resource missing",
            pod_with(vec![named("foo"), named("bar")], vec![]),
            vec!["memory"],
            "must specify memory for: bar,foo",
        ),
        (
            "container resource missing multiple",
            pod_with(vec![json!({"name": "foo"}), json!({"name": "bar"})], vec![]),
            vec!["memory", "cpu"],
            "must specify cpu for: bar,foo; memory for: bar,foo",
        ),
        (
            "pod-level resource set, container-level required resources missing",
            json!({"spec": {"resources": {"requests": {"cpu": "1m"}},
                "containers": [{"name": "foo"}, {"name": "bar"}]}}),
            vec!["memory", "cpu"],
            "",
        ),
        (
            "limits required",
            pod_with(
                vec![container("app", json!({"cpu": "1"}), json!({}))],
                vec![],
            ),
            vec!["limits.cpu", "limits.memory", "pods"],
            "must specify limits.cpu for: app; limits.memory for: app",
        ),
        (
            "ephemeral storage never required",
            pod_with(
                vec![container("app", json!({"cpu": "1"}), json!({}))],
                vec![],
            ),
            vec!["requests.ephemeral-storage", "hugepages-2Mi", "cpu"],
            "",
        ),
    ];
    for (name, pod, required, want) in cases {
        let got = Evaluator::Pods.constraints(&names(&required), &pod);
        match got {
            Ok(()) => assert!(want.is_empty(), "{name}: no error, want {want}"),
            Err(e) => assert_eq!(e, want, "{name}"),
        }
    }
}

// TestPodEvaluatorUsage
#[test]
fn pod_usage() {
    let now = Utc::now();
    let past_grace = (now - Duration::seconds(60)).to_rfc3339();
    let not_past = now.to_rfc3339();
    let dongle_ctr = |n: &str| container("c", json!({n: "3"}), json!({n: "3"}));
    let cases: Vec<(&str, Value, ResourceList)> = vec![
        (
            "init container CPU",
            pod_with(
                vec![],
                vec![container("i", json!({"cpu": "1m"}), json!({"cpu": "2m"}))],
            ),
            list(&[
                ("requests.cpu", "1m"),
                ("limits.cpu", "2m"),
                ("pods", "1"),
                ("cpu", "1m"),
                ("count/pods", "1"),
            ]),
        ),
        (
            "init container MEM",
            pod_with(
                vec![],
                vec![container(
                    "i",
                    json!({"memory": "1m"}),
                    json!({"memory": "2m"}),
                )],
            ),
            list(&[
                ("requests.memory", "1m"),
                ("limits.memory", "2m"),
                ("pods", "1"),
                ("memory", "1m"),
                ("count/pods", "1"),
            ]),
        ),
        (
            "init container local ephemeral storage",
            pod_with(
                vec![],
                vec![container(
                    "i",
                    json!({"ephemeral-storage": "32Mi"}),
                    json!({"ephemeral-storage": "64Mi"}),
                )],
            ),
            list(&[
                ("ephemeral-storage", "32Mi"),
                ("requests.ephemeral-storage", "32Mi"),
                ("limits.ephemeral-storage", "64Mi"),
                ("pods", "1"),
                ("count/pods", "1"),
            ]),
        ),
        (
            "init container hugepages",
            pod_with(
                vec![],
                vec![container("i", json!({"hugepages-2Mi": "100Mi"}), json!({}))],
            ),
            list(&[
                ("hugepages-2Mi", "100Mi"),
                ("requests.hugepages-2Mi", "100Mi"),
                ("pods", "1"),
                ("count/pods", "1"),
            ]),
        ),
        (
            "init container extended resources",
            pod_with(vec![], vec![dongle_ctr("example.com/dongle")]),
            list(&[
                ("requests.example.com/dongle", "3"),
                ("pods", "1"),
                ("count/pods", "1"),
            ]),
        ),
        (
            "init container implicit extended resources",
            pod_with(
                vec![],
                vec![dongle_ctr("deviceclass.resource.kubernetes.io/dongle")],
            ),
            list(&[
                ("requests.deviceclass.resource.kubernetes.io/dongle", "3"),
                ("pods", "1"),
                ("count/pods", "1"),
            ]),
        ),
        (
            "container CPU",
            pod_with(
                vec![container("c", json!({"cpu": "1m"}), json!({"cpu": "2m"}))],
                vec![],
            ),
            list(&[
                ("requests.cpu", "1m"),
                ("limits.cpu", "2m"),
                ("pods", "1"),
                ("cpu", "1m"),
                ("count/pods", "1"),
            ]),
        ),
        (
            "container MEM",
            pod_with(
                vec![container(
                    "c",
                    json!({"memory": "1m"}),
                    json!({"memory": "2m"}),
                )],
                vec![],
            ),
            list(&[
                ("requests.memory", "1m"),
                ("limits.memory", "2m"),
                ("pods", "1"),
                ("memory", "1m"),
                ("count/pods", "1"),
            ]),
        ),
        (
            "container hugepages",
            pod_with(
                vec![container("c", json!({"hugepages-2Mi": "100Mi"}), json!({}))],
                vec![],
            ),
            list(&[
                ("hugepages-2Mi", "100Mi"),
                ("requests.hugepages-2Mi", "100Mi"),
                ("pods", "1"),
                ("count/pods", "1"),
            ]),
        ),
        (
            "container extended resources",
            pod_with(vec![dongle_ctr("example.com/dongle")], vec![]),
            list(&[
                ("requests.example.com/dongle", "3"),
                ("pods", "1"),
                ("count/pods", "1"),
            ]),
        ),
        (
            "terminated generic count still appears",
            json!({"spec": {"containers": [dongle_ctr("example.com/dongle")]}, "status": {"phase": "Succeeded"}}),
            list(&[("count/pods", "1")]),
        ),
        (
            "init container maximums override sum of containers",
            pod_with(
                vec![
                    container(
                        "a",
                        json!({"cpu": "1", "memory": "50M", "example.com/dongle": "1"}),
                        json!({"cpu": "2", "memory": "100M", "example.com/dongle": "1"}),
                    ),
                    container(
                        "b",
                        json!({"cpu": "2", "memory": "25M", "example.com/dongle": "2"}),
                        json!({"cpu": "5", "memory": "50M", "example.com/dongle": "2"}),
                    ),
                ],
                vec![
                    container(
                        "i",
                        json!({"cpu": "4", "memory": "100M", "example.com/dongle": "4"}),
                        json!({"cpu": "8", "memory": "200M", "example.com/dongle": "4"}),
                    ),
                    container(
                        "j",
                        json!({"cpu": "1", "memory": "50M", "example.com/dongle": "2"}),
                        json!({"cpu": "2", "memory": "100M", "example.com/dongle": "2"}),
                    ),
                ],
            ),
            list(&[
                ("requests.cpu", "4"),
                ("requests.memory", "100M"),
                ("limits.cpu", "8"),
                ("limits.memory", "200M"),
                ("pods", "1"),
                ("cpu", "4"),
                ("memory", "100M"),
                ("requests.example.com/dongle", "4"),
                ("count/pods", "1"),
            ]),
        ),
        (
            "pod deletion timestamp exceeded",
            json!({"metadata": {"deletionTimestamp": past_grace, "deletionGracePeriodSeconds": 30},
                "status": {"reason": "NodeLost"},
                "spec": {"containers": [container("c", json!({"cpu": "1", "memory": "50M"}), json!({"cpu": "2", "memory": "100M"}))]}}),
            list(&[("count/pods", "1")]),
        ),
        (
            "pod deletion timestamp not exceeded",
            json!({"metadata": {"deletionTimestamp": not_past, "deletionGracePeriodSeconds": 30},
                "spec": {"containers": [container("c", json!({"cpu": "1"}), json!({"cpu": "2"}))]}}),
            list(&[
                ("requests.cpu", "1"),
                ("limits.cpu", "2"),
                ("pods", "1"),
                ("cpu", "1"),
                ("count/pods", "1"),
            ]),
        ),
        (
            "count pod overhead as usage",
            json!({"spec": {"overhead": {"cpu": "1"},
                "containers": [container("c", json!({"cpu": "1"}), json!({"cpu": "2"}))]}}),
            list(&[
                ("requests.cpu", "2"),
                ("limits.cpu", "3"),
                ("pods", "1"),
                ("cpu", "2"),
                ("count/pods", "1"),
            ]),
        ),
        (
            "pod-level CPU",
            json!({"spec": {"resources": {"requests": {"cpu": "1m"}, "limits": {"cpu": "2m"}}}}),
            list(&[
                ("requests.cpu", "1m"),
                ("limits.cpu", "2m"),
                ("pods", "1"),
                ("cpu", "1m"),
                ("count/pods", "1"),
            ]),
        ),
        (
            "pod-level Memory",
            json!({"spec": {"resources": {"requests": {"memory": "1Mi"}, "limits": {"memory": "2Mi"}}}}),
            list(&[
                ("requests.memory", "1Mi"),
                ("limits.memory", "2Mi"),
                ("pods", "1"),
                ("memory", "1Mi"),
                ("count/pods", "1"),
            ]),
        ),
        (
            "pod-level memory with container-level ephemeral storage",
            json!({"spec": {"resources": {"requests": {"memory": "1Mi"}, "limits": {"memory": "2Mi"}},
                "containers": [container("c", json!({"ephemeral-storage": "32Mi"}), json!({"ephemeral-storage": "64Mi"}))]}}),
            list(&[
                ("ephemeral-storage", "32Mi"),
                ("requests.ephemeral-storage", "32Mi"),
                ("limits.ephemeral-storage", "64Mi"),
                ("pods", "1"),
                ("requests.memory", "1Mi"),
                ("limits.memory", "2Mi"),
                ("memory", "1Mi"),
                ("count/pods", "1"),
            ]),
        ),
        (
            // restartable init containers (sidecars) run beside the app containers
            "sidecar adds to containers",
            json!({"spec": {"initContainers": [
                    {"name": "side", "restartPolicy": "Always", "resources": {"requests": {"cpu": "1"}}},
                    {"name": "init", "resources": {"requests": {"cpu": "2"}}}],
                "containers": [container("c", json!({"cpu": "1"}), json!({}))]}}),
            list(&[
                ("requests.cpu", "3"),
                ("cpu", "3"),
                ("pods", "1"),
                ("count/pods", "1"),
            ]),
        ),
    ];
    for (name, pod, want) in cases {
        assert_usage(name, &Evaluator::Pods.usage(&pod, now), &want);
    }
}

fn make_pod(name: &str, class: &str, cpu: Option<&str>, phase: &str) -> Value {
    let res = match cpu {
        Some(c) => json!({"requests": {"cpu": c}, "limits": {"cpu": c}}),
        None => json!({}),
    };
    json!({"metadata": {"name": name, "namespace": "test"},
        "spec": {"priorityClassName": class, "containers": [{"name": "c", "resources": res}]},
        "status": {"phase": phase}})
}

fn quota_json(scopes: &[&str], selector: Option<Value>, hard: Value) -> Quota {
    let mut q = json!({"metadata": {"name": "q", "namespace": "test"},
        "spec": {"hard": hard.clone(), "scopes": scopes}, "status": {"hard": hard}});
    if let Some(s) = selector {
        q["spec"]["scopeSelector"] = json!({"matchExpressions": [s]});
    }
    Quota::from_json(&q)
}

// TestPodEvaluatorUsageStats
#[test]
fn pod_usage_stats() {
    let now = Utc::now();
    let requested = names(&["pods", "count/pods", "cpu", "requests.cpu", "limits.cpu"]);
    let high = json!({"scopeName": "PriorityClass", "operator": "In", "values": ["high-priority"]});
    let cases: Vec<(&str, Vec<Value>, Quota, ResourceList)> = vec![
        (
            "nil case",
            vec![],
            quota_json(&[], None, json!({})),
            list(&[
                ("pods", "0"),
                ("count/pods", "0"),
                ("cpu", "0"),
                ("requests.cpu", "0"),
                ("limits.cpu", "0"),
            ]),
        ),
        (
            "all pods in running state",
            vec![
                make_pod("p1", "", Some("1"), "Running"),
                make_pod("p2", "", Some("1"), "Running"),
            ],
            quota_json(&[], None, json!({})),
            list(&[
                ("pods", "2"),
                ("count/pods", "2"),
                ("cpu", "2"),
                ("requests.cpu", "2"),
                ("limits.cpu", "2"),
            ]),
        ),
        (
            "one pods in terminal state",
            vec![
                make_pod("p1", "", Some("1"), "Running"),
                make_pod("p2", "", Some("1"), "Succeeded"),
            ],
            quota_json(&[], None, json!({})),
            list(&[
                ("pods", "1"),
                ("count/pods", "2"),
                ("cpu", "1"),
                ("requests.cpu", "1"),
                ("limits.cpu", "1"),
            ]),
        ),
        (
            "partial pods matching quotaScopeSelector",
            vec![
                make_pod("p1", "high-priority", Some("1"), "Running"),
                make_pod("p2", "high-priority", Some("1"), "Succeeded"),
                make_pod("p3", "low-priority", Some("1"), "Running"),
            ],
            quota_json(&[], Some(high.clone()), json!({})),
            list(&[
                ("pods", "1"),
                ("count/pods", "2"),
                ("cpu", "1"),
                ("requests.cpu", "1"),
                ("limits.cpu", "1"),
            ]),
        ),
        (
            "partial pods matching quotaScopeSelector - w/ multiple scopeNames specified",
            vec![
                make_pod("p1", "high-priority", Some("1"), "Running"),
                make_pod("p2", "high-priority", Some("1"), "Succeeded"),
                make_pod("p3", "low-priority", Some("1"), "Running"),
                make_pod("p4", "high-priority", None, "Failed"),
            ],
            quota_json(&["PriorityClass", "BestEffort"], Some(high), json!({})),
            list(&[
                ("pods", "0"),
                ("count/pods", "1"),
                ("cpu", "0"),
                ("requests.cpu", "0"),
                ("limits.cpu", "0"),
            ]),
        ),
    ];
    for (name, pods, q, want) in cases {
        let got = Evaluator::Pods
            .usage_stats(pods.iter(), &q.selectors, &requested, now)
            .unwrap();
        assert_usage(name, &got, &want);
    }
}

// TestPodEvaluatorMatchingScopes, as a match per scope
#[test]
fn pod_scopes() {
    let scope = |name: &str, op: &str, values: &[&str]| ScopeSelector {
        scope_name: name.into(),
        operator: op.into(),
        values: names(values),
    };
    let empty = json!({"spec": {}});
    let classed = json!({"spec": {"priorityClassName": "class1"}});
    let burstable = pod_with(
        vec![container(
            "c",
            json!({"cpu": "1", "memory": "50M"}),
            json!({"cpu": "2"}),
        )],
        vec![],
    );
    let only_storage = pod_with(
        vec![container(
            "c",
            json!({"ephemeral-storage": "1Gi"}),
            json!({}),
        )],
        vec![],
    );
    let terminating = json!({"spec": {"activeDeadlineSeconds": 30}});
    let cross = json!({"spec": {"affinity": {"podAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [{"namespaces": ["ns1"], "topologyKey": "k"}]}}}});
    let cross_preferred = json!({"spec": {"affinity": {"podAntiAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1,
            "podAffinityTerm": {"namespaceSelector": {}, "topologyKey": "k"}}]}}}});
    let same_ns = json!({"spec": {"affinity": {"podAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "k"}]}}}});
    let cases = [
        (
            "empty NotTerminating",
            &empty,
            scope("NotTerminating", "Exists", &[]),
            true,
        ),
        (
            "empty Terminating",
            &empty,
            scope("Terminating", "Exists", &[]),
            false,
        ),
        (
            "empty BestEffort",
            &empty,
            scope("BestEffort", "Exists", &[]),
            true,
        ),
        (
            "empty NotBestEffort",
            &empty,
            scope("NotBestEffort", "Exists", &[]),
            false,
        ),
        (
            "storage only is BestEffort",
            &only_storage,
            scope("BestEffort", "Exists", &[]),
            true,
        ),
        (
            "burstable NotBestEffort",
            &burstable,
            scope("NotBestEffort", "Exists", &[]),
            true,
        ),
        (
            "burstable BestEffort",
            &burstable,
            scope("BestEffort", "Exists", &[]),
            false,
        ),
        (
            "deadline Terminating",
            &terminating,
            scope("Terminating", "Exists", &[]),
            true,
        ),
        (
            "deadline NotTerminating",
            &terminating,
            scope("NotTerminating", "Exists", &[]),
            false,
        ),
        (
            "class In",
            &classed,
            scope("PriorityClass", "In", &["class1"]),
            true,
        ),
        (
            "class In other",
            &classed,
            scope("PriorityClass", "In", &["class2"]),
            false,
        ),
        (
            "class NotIn",
            &classed,
            scope("PriorityClass", "NotIn", &["class2"]),
            true,
        ),
        (
            "no class NotIn",
            &empty,
            scope("PriorityClass", "NotIn", &["class1"]),
            true,
        ),
        (
            "class Exists",
            &classed,
            scope("PriorityClass", "Exists", &[]),
            true,
        ),
        (
            "no class Exists",
            &empty,
            scope("PriorityClass", "Exists", &[]),
            false,
        ),
        (
            "no class DoesNotExist",
            &empty,
            scope("PriorityClass", "DoesNotExist", &[]),
            true,
        ),
        (
            "class DoesNotExist",
            &classed,
            scope("PriorityClass", "DoesNotExist", &[]),
            false,
        ),
        (
            "cross namespaces",
            &cross,
            scope("CrossNamespacePodAffinity", "Exists", &[]),
            true,
        ),
        (
            "cross selector",
            &cross_preferred,
            scope("CrossNamespacePodAffinity", "Exists", &[]),
            true,
        ),
        (
            "same namespace",
            &same_ns,
            scope("CrossNamespacePodAffinity", "Exists", &[]),
            false,
        ),
    ];
    for (name, pod, s, want) in cases {
        assert_eq!(Evaluator::Pods.matches_scope(&s, pod), Ok(want), "{name}");
    }
    assert!(Evaluator::Pods
        .matches_scope(&scope("PriorityClass", "In", &[]), &classed)
        .is_err());
}

#[test]
fn pod_matching_resources() {
    let input = names(&[
        "pods",
        "count/pods",
        "requests.cpu",
        "limits.memory",
        "hugepages-2Mi",
        "requests.hugepages-1Gi",
        "requests.example.com/dongle",
        "example.com/dongle",
        "requests.deviceclass.resource.kubernetes.io/gpu",
        "services",
        "requests.storage",
        "count/deployments.apps",
    ]);
    let mut got = Evaluator::Pods.matching_resources(&input);
    got.sort();
    assert_eq!(
        got,
        names(&[
            "count/pods",
            "hugepages-2Mi",
            "limits.memory",
            "pods",
            "requests.cpu",
            "requests.deviceclass.resource.kubernetes.io/gpu",
            "requests.example.com/dongle",
            "requests.hugepages-1Gi",
        ])
    );
}

// TestServiceEvaluatorMatchesResources, TestServiceEvaluatorUsage
#[test]
fn services() {
    let e = Evaluator::Services;
    let mut got = e.matching_resources(&names(&[
        "count/services",
        "services",
        "services.nodeports",
        "services.loadbalancers",
        "pods",
    ]));
    got.sort();
    assert_eq!(
        got,
        names(&[
            "count/services",
            "services",
            "services.loadbalancers",
            "services.nodeports"
        ])
    );
    let base = |lb: &str, np: &str| {
        list(&[
            ("services", "1"),
            ("count/services", "1"),
            ("services.loadbalancers", lb),
            ("services.nodeports", np),
        ])
    };
    let port = |n: i64| json!({"port": 27443, "nodePort": n});
    let cases = [
        (
            "loadbalancer",
            json!({"spec": {"type": "LoadBalancer"}}),
            base("1", "0"),
        ),
        (
            "loadbalancer_ports",
            json!({"spec": {"type": "LoadBalancer", "ports": [{"port": 27443}]}}),
            base("1", "1"),
        ),
        (
            "clusterip",
            json!({"spec": {"type": "ClusterIP"}}),
            base("0", "0"),
        ),
        (
            "nodeports",
            json!({"spec": {"type": "NodePort", "ports": [{"port": 27443}]}}),
            base("0", "1"),
        ),
        (
            "multi-nodeports",
            json!({"spec": {"type": "NodePort", "ports": [{"port": 27443}, {"port": 27444}]}}),
            base("0", "2"),
        ),
        (
            "target-ports-are-not-node-ports (allocateLoadBalancerNodePorts=false, none set)",
            json!({"spec": {"type": "LoadBalancer", "allocateLoadBalancerNodePorts": false,
                "ports": [{"port": 27443}, {"port": 27444}]}}),
            base("1", "0"),
        ),
        (
            "allocateLoadBalancerNodePorts=false, one explicit node port",
            json!({"spec": {"type": "LoadBalancer", "allocateLoadBalancerNodePorts": false,
                "ports": [port(32001), {"port": 27444}]}}),
            base("1", "1"),
        ),
    ];
    for (name, svc, want) in cases {
        assert_usage(name, &e.usage(&svc, Utc::now()), &want);
    }
    // a scoped quota never matches services (MatchesNoScopeFunc)
    let scoped = quota_json(&["BestEffort"], None, json!({"services": "1"}));
    assert_eq!(e.matches(&scoped, &json!({"spec": {}})), Ok(false));
    let plain = quota_json(&[], None, json!({"services": "1"}));
    assert_eq!(e.matches(&plain, &json!({"spec": {}})), Ok(true));
}

// TestPersistentVolumeClaimEvaluatorUsage, ...MatchingResources
#[test]
fn persistent_volume_claims() {
    let e = Evaluator::PersistentVolumeClaims;
    let mut got = e.matching_resources(&names(&[
        "count/persistentvolumeclaims",
        "requests.storage",
        "persistentvolumeclaims",
        "gold.storageclass.storage.k8s.io/requests.storage",
        "gold.storageclass.storage.k8s.io/persistentvolumeclaims",
        "requests.cpu",
        "storage",
        "ephemeral-storage",
    ]));
    got.sort();
    assert_eq!(
        got,
        names(&[
            "count/persistentvolumeclaims",
            "gold.storageclass.storage.k8s.io/persistentvolumeclaims",
            "gold.storageclass.storage.k8s.io/requests.storage",
            "persistentvolumeclaims",
            "requests.storage",
        ])
    );
    let claim = |class: Option<&str>, storage: &str| {
        let mut v =
            json!({"metadata": {}, "spec": {"resources": {"requests": {"storage": storage}}}});
        if let Some(c) = class {
            v["spec"]["storageClassName"] = json!(c);
        }
        v
    };
    let mut beta = claim(None, "10Gi");
    beta["metadata"]["annotations"] = json!({"volume.beta.kubernetes.io/storage-class": "gold"});
    let mut allocated = claim(Some("gold"), "10Gi");
    allocated["status"] = json!({"allocatedResources": {"storage": "20Gi"}});
    let mut allocated_smaller = claim(None, "10Gi");
    allocated_smaller["status"] = json!({"allocatedResources": {"storage": "5Gi"}});
    let cases = [
        (
            "pvc-usage",
            claim(None, "10Gi"),
            list(&[
                ("requests.storage", "10Gi"),
                ("persistentvolumeclaims", "1"),
                ("count/persistentvolumeclaims", "1"),
            ]),
        ),
        (
            "pvc-usage-by-class",
            claim(Some("gold"), "10Gi"),
            list(&[
                ("requests.storage", "10Gi"),
                ("persistentvolumeclaims", "1"),
                ("gold.storageclass.storage.k8s.io/requests.storage", "10Gi"),
                (
                    "gold.storageclass.storage.k8s.io/persistentvolumeclaims",
                    "1",
                ),
                ("count/persistentvolumeclaims", "1"),
            ]),
        ),
        (
            "pvc-usage-by-beta-annotation",
            beta,
            list(&[
                ("requests.storage", "10Gi"),
                ("persistentvolumeclaims", "1"),
                ("gold.storageclass.storage.k8s.io/requests.storage", "10Gi"),
                (
                    "gold.storageclass.storage.k8s.io/persistentvolumeclaims",
                    "1",
                ),
                ("count/persistentvolumeclaims", "1"),
            ]),
        ),
        (
            "pvc-usage-rounded",
            claim(None, "1001m"),
            list(&[
                ("requests.storage", "2"),
                ("persistentvolumeclaims", "1"),
                ("count/persistentvolumeclaims", "1"),
            ]),
        ),
        (
            "pvc-usage-higher-allocated-resource",
            allocated,
            list(&[
                ("requests.storage", "20Gi"),
                ("persistentvolumeclaims", "1"),
                ("gold.storageclass.storage.k8s.io/requests.storage", "20Gi"),
                (
                    "gold.storageclass.storage.k8s.io/persistentvolumeclaims",
                    "1",
                ),
                ("count/persistentvolumeclaims", "1"),
            ]),
        ),
        (
            "pvc-usage-lower-allocated-resource",
            allocated_smaller,
            list(&[
                ("requests.storage", "10Gi"),
                ("persistentvolumeclaims", "1"),
                ("count/persistentvolumeclaims", "1"),
            ]),
        ),
    ];
    for (name, pvc, want) in cases {
        assert_usage(name, &e.usage(&pvc, Utc::now()), &want);
    }
    // Handles: create, update, status only when the allocated size changes
    let old = claim(None, "1Gi");
    let mut resized = old.clone();
    resized["status"] = json!({"allocatedResources": {"storage": "2Gi"}});
    assert!(e.handles(Operation::Create, None, &old, None));
    assert!(e.handles(Operation::Update, None, &old, Some(&old)));
    assert!(!e.handles(Operation::Update, Some("status"), &old, Some(&old)));
    assert!(e.handles(Operation::Update, Some("status"), &resized, Some(&old)));
}

#[test]
fn object_counts_and_handles() {
    let secrets = Evaluator::for_resource("", "secrets").unwrap();
    assert_eq!(
        secrets.matching_resources(&names(&["secrets", "count/secrets", "pods"])),
        names(&["count/secrets", "secrets"])
    );
    assert_usage(
        "secret",
        &secrets.usage(&json!({}), Utc::now()),
        &list(&[("count/secrets", "1"), ("secrets", "1")]),
    );
    let deployments = Evaluator::for_resource("apps", "deployments").unwrap();
    assert_eq!(
        deployments.matching_resources(&names(&["count/deployments.apps", "deployments"])),
        names(&["count/deployments.apps"])
    );
    assert!(Evaluator::for_resource("", "events").is_none());
    assert!(Evaluator::for_resource("events.k8s.io", "events").is_none());
    assert!(deployments.handles(Operation::Create, None, &json!({}), None));
    assert!(!deployments.handles(Operation::Update, None, &json!({}), Some(&json!({}))));
    // pods: create, and updates only through resize
    let p = Evaluator::Pods;
    assert!(p.handles(Operation::Create, None, &json!({}), None));
    assert!(!p.handles(Operation::Update, None, &json!({}), Some(&json!({}))));
    assert!(p.handles(
        Operation::Update,
        Some("resize"),
        &json!({}),
        Some(&json!({}))
    ));
    assert!(!p.handles(
        Operation::Update,
        Some("status"),
        &json!({}),
        Some(&json!({}))
    ));
    let objs = [json!({}), json!({})];
    assert_usage(
        "count",
        &deployments
            .usage_stats(
                objs.iter(),
                &[],
                &names(&["count/deployments.apps"]),
                Utc::now(),
            )
            .unwrap(),
        &list(&[("count/deployments.apps", "2")]),
    );
}

// CalculateUsage over several evaluators, masked to what the quota names
#[test]
fn calculate_usage_masks_to_hard() {
    let q = quota_json(
        &[],
        None,
        json!({"pods": "10", "requests.cpu": "4", "services": "5", "count/deployments.apps": "2", "unknown.example/thing": "1"}),
    );
    let pods = [
        make_pod("p1", "", Some("100m"), "Running"),
        make_pod("p2", "", Some("100m"), "Failed"),
    ];
    let svcs = [json!({"spec": {"type": "NodePort", "ports": [{"port": 1}]}})];
    let deps = [json!({})];
    let evaluators = vec![
        Evaluator::Pods,
        Evaluator::Services,
        Evaluator::for_resource("apps", "deployments").unwrap(),
    ];
    let (used, errors) = calculate_usage(
        &evaluators,
        &q,
        |e| {
            Ok::<_, String>(match e.group_resource() {
                ("", "pods") => pods.iter().collect::<Vec<_>>(),
                ("", "services") => svcs.iter().collect(),
                _ => deps.iter().collect(),
            })
        },
        Utc::now(),
    );
    assert!(errors.is_empty());
    assert_usage(
        "calculate",
        &used,
        &list(&[
            ("pods", "1"),
            ("requests.cpu", "100m"),
            ("services", "1"),
            ("count/deployments.apps", "1"),
        ]),
    );
}
