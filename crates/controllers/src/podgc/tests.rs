//! Upstream `gc_controller_test.go`, ported against a fake [`PodGcControl`]:
//! TestGCTerminated, TestGCOrphaned (with the quarantine on a fake clock),
//! TestGCUnscheduledTerminating, TestGCTerminating and
//! TestGCInspectingPatchedPodBeforeDeletion. Pods are created an hour apart in list
//! order, so list order is age order.
//!
//! Every case runs three times: on a slice of pods (scanned) and on an informer store
//! with the collector's indexes, compact and decoded, fed the same pods (what the
//! controller reads), so the index lookups answer as the scans do.

use std::collections::BTreeSet;
use std::sync::Mutex;

use k8s_openapi::api::core::v1::{NodeCondition, NodeSpec, NodeStatus, PodSpec, PodStatus, Taint};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::*;
use crate::controller_utils::store_feed::Feed;
use coxswain_runtime::cache::{IndexFn, Storage};

/// Where a pass reads its pods.
#[derive(Clone, Copy, Debug)]
enum Source {
    Slice,
    Indexed(Storage),
}

const SOURCES: [Source; 3] = [
    Source::Slice,
    Source::Indexed(Storage::Compact),
    Source::Indexed(Storage::Decoded),
];

/// The pods of a case, loaded into a [`Source`].
enum Loaded {
    Slice(Vec<Arc<Pod>>),
    Store(Feed<Pod>),
}

impl Loaded {
    async fn new(source: Source, pods: &[Arc<Pod>]) -> Self {
        match source {
            Source::Slice => Loaded::Slice(pods.to_vec()),
            Source::Indexed(storage) => {
                let indexes: Vec<(&str, IndexFn<Pod>)> = vec![
                    (PODGC_INDEX, Arc::new(podgc_index)),
                    (POD_NODE_INDEX, Arc::new(pod_node_index)),
                ];
                let mut feed = Feed::start(storage, indexes).await;
                for p in pods {
                    feed.put(p).await;
                }
                Loaded::Store(feed)
            }
        }
    }

    fn set(&self) -> &dyn PodSet {
        match self {
            Loaded::Slice(v) => v,
            Loaded::Store(f) => f.store(),
        }
    }
}

#[derive(Default)]
struct Fake {
    /// Nodes a live GET finds.
    client_nodes: Mutex<BTreeSet<String>>,
    deleted: Mutex<Vec<String>>,
    patched: Mutex<Vec<(String, Value)>>,
}

impl PodGcControl for Fake {
    async fn node_exists(&self, name: &str) -> Result<bool, kube::Error> {
        Ok(self.client_nodes.lock().unwrap().contains(name))
    }

    async fn patch_pod_status(&self, _: &str, name: &str, patch: Value) -> Result<(), kube::Error> {
        self.patched.lock().unwrap().push((name.into(), patch));
        Ok(())
    }

    async fn force_delete_pod(&self, _: &str, name: &str) -> Result<(), kube::Error> {
        self.deleted.lock().unwrap().push(name.into());
        Ok(())
    }
}

fn base() -> Timestamp {
    "2016-05-19T10:00:00Z".parse().unwrap()
}

fn later(t: Timestamp, d: Duration) -> Timestamp {
    t.checked_add(SignedDuration::try_from(d).unwrap()).unwrap()
}

struct P<'a> {
    name: &'a str,
    phase: &'a str,
    reason: &'a str,
    node: &'a str,
    terminating: bool,
}

const P0: P<'static> = P {
    name: "",
    phase: "",
    reason: "",
    node: "",
    terminating: false,
};

fn pods(specs: &[P<'_>]) -> Vec<Arc<Pod>> {
    specs
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let created = later(base(), Duration::from_secs(3600 * i as u64));
            Arc::new(Pod {
                metadata: ObjectMeta {
                    name: Some(p.name.into()),
                    namespace: Some("default".into()),
                    uid: Some(format!("uid-{}", p.name)),
                    creation_timestamp: Some(Time(created)),
                    deletion_timestamp: p.terminating.then(|| Time(base())),
                    ..Default::default()
                },
                spec: Some(PodSpec {
                    node_name: (!p.node.is_empty()).then(|| p.node.into()),
                    ..Default::default()
                }),
                status: Some(PodStatus {
                    phase: (!p.phase.is_empty()).then(|| p.phase.into()),
                    reason: (!p.reason.is_empty()).then(|| p.reason.into()),
                    ..Default::default()
                }),
            })
        })
        .collect()
}

fn node(name: &str, ready: bool, taint: Option<(&str, &str)>) -> Arc<Node> {
    Arc::new(Node {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        spec: Some(NodeSpec {
            taints: taint.map(|(value, effect)| {
                vec![Taint {
                    key: TAINT_NODE_OUT_OF_SERVICE.into(),
                    value: (!value.is_empty()).then(|| value.into()),
                    effect: effect.into(),
                    ..Default::default()
                }]
            }),
            ..Default::default()
        }),
        status: Some(NodeStatus {
            conditions: Some(vec![NodeCondition {
                type_: "Ready".into(),
                status: if ready { "True" } else { "False" }.into(),
                ..Default::default()
            }]),
            ..Default::default()
        }),
    })
}

fn sorted(v: &Mutex<Vec<String>>) -> Vec<String> {
    let mut v = v.lock().unwrap().clone();
    v.sort();
    v
}

fn patched(f: &Fake) -> Vec<String> {
    let mut v: Vec<String> = f
        .patched
        .lock()
        .unwrap()
        .iter()
        .map(|(n, _)| n.clone())
        .collect();
    v.sort();
    v
}

fn ph<'a>(name: &'a str, phase: &'a str) -> P<'a> {
    P {
        name,
        phase,
        node: "node",
        ..P0
    }
}

#[tokio::test]
async fn gc_terminated() {
    type Case = (&'static str, Vec<P<'static>>, i32, Vec<&'static str>);
    let evicted = |name| P {
        name,
        phase: "Failed",
        reason: "Evicted",
        node: "node",
        ..P0
    };
    let cases: Vec<Case> = vec![
        (
            "delete pod a which is PodFailed and pod b which is PodSucceeded",
            vec![ph("a", "Failed"), ph("b", "Succeeded"), ph("c", "Failed")],
            1,
            vec!["a", "b"],
        ),
        (
            "threshold = 0, disables terminated pod deletion",
            vec![ph("a", "Failed"), ph("b", "Succeeded")],
            0,
            vec![],
        ),
        (
            "threshold = 1, delete pod a which is PodFailed and pod b which is PodSucceeded",
            vec![ph("a", "Failed"), ph("b", "Succeeded"), ph("c", "Failed")],
            1,
            vec!["a", "b"],
        ),
        (
            "threshold = 1, delete pod b which is PodSucceeded",
            vec![ph("a", "Running"), ph("b", "Succeeded"), ph("c", "Failed")],
            1,
            vec!["b"],
        ),
        (
            "threshold = 1, delete pod a which is PodFailed",
            vec![ph("a", "Failed"), ph("b", "Succeeded")],
            1,
            vec!["a"],
        ),
        (
            "threshold = 5, don't delete pod",
            vec![ph("a", "Failed"), ph("b", "Succeeded")],
            5,
            vec![],
        ),
        (
            "delete pod c which is evicted, then pod a",
            vec![ph("a", "Failed"), ph("b", "Succeeded"), evicted("c")],
            1,
            vec!["a", "c"],
        ),
        (
            "delete pod c which is evicted",
            vec![ph("a", "Running"), ph("b", "Succeeded"), evicted("c")],
            1,
            vec!["c"],
        ),
    ];
    for source in SOURCES {
        for (name, specs, threshold, deleted) in &cases {
            let fake = Fake::default();
            let mut gc = PodGc::new(fake, *threshold, QUARANTINE_TIME);
            let nodes = [node("node", true, None)];
            let loaded = Loaded::new(source, &pods(specs)).await;
            gc.gc(loaded.set(), &nodes, base()).await;
            assert_eq!(sorted(&gc.control.deleted), *deleted, "{name} {source:?}");
            assert!(patched(&gc.control).is_empty(), "{name} {source:?}");
        }
    }
}

#[test]
fn evicted_then_oldest_then_name() {
    let mut ps = pods(&[
        ph("b", "Failed"),
        ph("a", "Failed"),
        P {
            name: "e",
            phase: "Failed",
            reason: "Evicted",
            ..P0
        },
    ]);
    // same creation time for b and a: by name
    let t = ps[0].metadata.creation_timestamp.clone();
    Arc::make_mut(&mut ps[1]).metadata.creation_timestamp = t;
    ps.sort_by(|a, b| by_eviction_and_creation(a, b));
    let names: Vec<_> = ps
        .iter()
        .map(|p| p.metadata.name.clone().unwrap())
        .collect();
    assert_eq!(names, ["e", "a", "b"]);
}

#[tokio::test]
async fn gc_orphaned() {
    struct Case {
        name: &'static str,
        client_nodes: &'static [&'static str],
        informer_nodes: &'static [&'static str],
        delay: Duration,
        pods: Vec<P<'static>>,
        change: Option<(bool, bool)>, // (client?, add?) for node "node"
        items: usize,
        deleted: &'static [&'static str],
        patched: &'static [&'static str],
    }
    let p = |name, node, phase| P {
        name,
        node,
        phase,
        ..P0
    };
    let s80 = Duration::from_secs(80);
    let cases = vec![
        Case {
            name: "nodes present in lister",
            client_nodes: &[],
            informer_nodes: &["existing1", "existing2"],
            delay: s80,
            pods: vec![
                p("a", "existing1", "Running"),
                p("b", "existing2", "Failed"),
                p("c", "existing2", "Succeeded"),
            ],
            change: None,
            items: 0,
            deleted: &[],
            patched: &[],
        },
        Case {
            name: "nodes present in client",
            client_nodes: &["existing1", "existing2"],
            informer_nodes: &[],
            delay: s80,
            pods: vec![
                p("a", "existing1", "Running"),
                p("b", "existing2", "Failed"),
                p("c", "existing2", "Succeeded"),
            ],
            change: None,
            items: 2,
            deleted: &[],
            patched: &[],
        },
        Case {
            name: "no nodes",
            client_nodes: &[],
            informer_nodes: &[],
            delay: s80,
            pods: vec![p("a", "deleted", "Failed"), p("b", "deleted", "Succeeded")],
            change: None,
            items: 1,
            deleted: &["a", "b"],
            patched: &[],
        },
        Case {
            name: "no nodes, one running pod",
            client_nodes: &[],
            informer_nodes: &[],
            delay: s80,
            pods: vec![
                p("a", "deleted", "Failed"),
                p("b", "deleted", "Succeeded"),
                p("c", "deleted", "Running"),
            ],
            change: None,
            items: 1,
            deleted: &["a", "b", "c"],
            patched: &["c"],
        },
        Case {
            name: "quarantine not finished",
            client_nodes: &[],
            informer_nodes: &[],
            delay: Duration::from_secs(20),
            pods: vec![p("a", "deleted", "Failed")],
            change: None,
            items: 0,
            deleted: &[],
            patched: &[],
        },
        Case {
            name: "wrong nodes",
            client_nodes: &[],
            informer_nodes: &["existing"],
            delay: s80,
            pods: vec![p("a", "deleted", "Running")],
            change: None,
            items: 1,
            deleted: &["a"],
            patched: &["a"],
        },
        Case {
            name: "some nodes missing",
            client_nodes: &[],
            informer_nodes: &["existing"],
            delay: s80,
            pods: vec![
                p("a", "deleted", "Failed"),
                p("b", "existing", "Failed"),
                p("c", "deleted", "Succeeded"),
                p("d", "deleted", "Running"),
            ],
            change: None,
            items: 1,
            deleted: &["a", "c", "d"],
            patched: &["d"],
        },
        Case {
            name: "node added to client after quarantine",
            client_nodes: &[],
            informer_nodes: &[],
            delay: s80,
            pods: vec![p("a", "node", "Running")],
            change: Some((true, true)),
            items: 1,
            deleted: &[],
            patched: &[],
        },
        Case {
            name: "node added to informer after quarantine",
            client_nodes: &[],
            informer_nodes: &[],
            delay: s80,
            pods: vec![p("a", "node", "Failed")],
            change: Some((false, true)),
            items: 1,
            deleted: &[],
            patched: &[],
        },
        Case {
            name: "node deleted from client after quarantine",
            client_nodes: &["node"],
            informer_nodes: &[],
            delay: s80,
            pods: vec![p("a", "node", "Failed")],
            change: Some((true, false)),
            items: 1,
            deleted: &["a"],
            patched: &[],
        },
        Case {
            name: "node deleted from informer after quarantine",
            client_nodes: &[],
            informer_nodes: &["node"],
            delay: s80,
            pods: vec![p("a", "node", "Succeeded")],
            change: Some((false, false)),
            items: 0,
            deleted: &[],
            patched: &[],
        },
    ];
    for (source, c) in SOURCES
        .iter()
        .flat_map(|s| cases.iter().map(move |c| (*s, c)))
    {
        let fake = Fake::default();
        fake.client_nodes
            .lock()
            .unwrap()
            .extend(c.client_nodes.iter().map(|s| s.to_string()));
        let mut gc = PodGc::new(fake, -1, QUARANTINE_TIME);
        let mut nodes: Vec<Arc<Node>> = c
            .informer_nodes
            .iter()
            .map(|n| node(n, true, None))
            .collect();
        let loaded = Loaded::new(source, &pods(&c.pods)).await;
        // the first pass only quarantines
        gc.gc(loaded.set(), &nodes, base()).await;
        assert!(
            gc.control.deleted.lock().unwrap().is_empty(),
            "{} {source:?}",
            c.name
        );
        let now = later(base(), c.delay);
        let ready = gc.quarantine.values().filter(|at| **at <= now).count();
        assert_eq!(ready, c.items, "{}: items ready {source:?}", c.name);
        match c.change {
            Some((true, true)) => {
                gc.control
                    .client_nodes
                    .lock()
                    .unwrap()
                    .insert("node".into());
            }
            Some((true, false)) => {
                gc.control.client_nodes.lock().unwrap().remove("node");
            }
            Some((false, true)) => nodes.push(node("node", true, None)),
            Some((false, false)) => nodes.clear(),
            None => {}
        }
        gc.gc(loaded.set(), &nodes, now).await;
        assert_eq!(
            sorted(&gc.control.deleted),
            c.deleted,
            "{} {source:?}",
            c.name
        );
        assert_eq!(patched(&gc.control), c.patched, "{} {source:?}", c.name);
    }
}

#[tokio::test]
async fn gc_unscheduled_terminating() {
    let t = |name, phase, terminating, node| P {
        name,
        phase,
        terminating,
        node,
        ..P0
    };
    let cases = vec![
        (
            "Unscheduled pod in any phase must be deleted",
            vec![
                t("a", "Failed", true, ""),
                t("b", "Succeeded", true, ""),
                t("c", "Running", true, ""),
            ],
            vec!["a", "b", "c"],
            vec!["c"],
        ),
        (
            "Scheduled pod in any phase must not be deleted",
            vec![
                t("a", "Failed", false, ""),
                t("b", "Succeeded", false, "node"),
                t("c", "Running", true, "node"),
            ],
            vec![],
            vec![],
        ),
    ];
    for source in SOURCES {
        for (name, specs, deleted, patched_names) in &cases {
            let gc = PodGc::new(Fake::default(), -1, QUARANTINE_TIME);
            let loaded = Loaded::new(source, &pods(specs)).await;
            gc.gc_unscheduled_terminating(loaded.set(), base()).await;
            assert_eq!(sorted(&gc.control.deleted), *deleted, "{name} {source:?}");
            assert_eq!(patched(&gc.control), *patched_names, "{name} {source:?}");
        }
    }
}

#[tokio::test]
async fn gc_terminating() {
    let t = |name, phase, node, terminating| P {
        name,
        phase,
        node,
        terminating,
        ..P0
    };
    // 1: not-Ready nodes without the taint: nothing
    // the same answer from every source
    let gc_run = |nodes: Vec<Arc<Node>>, specs: Vec<P<'static>>| async move {
        let mut answers = Vec::new();
        for source in SOURCES {
            let mut gc = PodGc::new(Fake::default(), -1, QUARANTINE_TIME);
            let loaded = Loaded::new(source, &pods(&specs)).await;
            gc.gc(loaded.set(), &nodes, base()).await;
            answers.push((sorted(&gc.control.deleted), patched(&gc.control)));
        }
        assert!(answers.windows(2).all(|w| w[0] == w[1]), "{answers:?}");
        answers.remove(0)
    };
    let (deleted, patched_names) = gc_run(
        vec![node("worker-0", false, None), node("worker-1", false, None)],
        vec![t("a", "", "worker-0", true), t("b", "", "worker-1", true)],
    )
    .await;
    assert!(deleted.is_empty() && patched_names.is_empty());

    // 2: only terminating pods on not-Ready nodes with the out-of-service taint (any
    // value, any effect)
    let nodes = vec![
        node("worker-0", false, Some(("", "NoExecute"))),
        node("worker-1", false, None),
        node("worker-2", true, None),
        node("worker-3", false, Some(("", "NoSchedule"))),
        node("worker-4", false, Some(("", "PreferNoSchedule"))),
        node("worker-5", false, Some(("any-value", "NoExecute"))),
    ];
    let names: Vec<[&'static str; 5]> = vec![
        ["a1", "b1", "c1", "d1", "e1"],
        ["a2", "b2", "c2", "d2", "e2"],
        ["a3", "b3", "c3", "d3", "e3"],
        ["a4", "b4", "c4", "d4", "e4"],
        ["a5", "b5", "c5", "d5", "e5"],
        ["a6", "b6", "c6", "d6", "e6"],
    ];
    let workers = [
        "worker-0", "worker-1", "worker-2", "worker-3", "worker-4", "worker-5",
    ];
    let mut specs = Vec::new();
    for (k, [a, b, c, d, e]) in names.into_iter().enumerate() {
        let w = workers[k];
        // upstream puts a5 on worker-3
        specs.push(t(a, "", if k == 4 { "worker-3" } else { w }, false));
        specs.push(t(b, "", w, true));
        specs.push(t(c, "Pending", w, false));
        specs.push(t(d, "Running", w, false));
        specs.push(t(e, "Unknown", w, false));
    }
    let (deleted, patched_names) = gc_run(nodes, specs).await;
    assert_eq!(deleted, ["b1", "b4", "b5", "b6"]);
    assert_eq!(patched_names, ["b1", "b4", "b5", "b6"]);

    // 3: terminating pods in any phase; only the non-terminal one is patched
    let (deleted, patched_names) = gc_run(
        vec![node("worker", false, Some(("", "NoExecute")))],
        vec![
            t("a", "Running", "worker", true),
            t("b", "Failed", "worker", true),
            t("c", "Succeeded", "worker", true),
        ],
    )
    .await;
    assert_eq!(deleted, ["a", "b", "c"]);
    assert_eq!(patched_names, ["a"]);
}

#[tokio::test]
async fn orphaned_pod_is_failed_with_disruption_target_before_deletion() {
    // TestGCInspectingPatchedPodBeforeDeletion
    let mut pod = (*pods(&[P {
        name: "testPod",
        phase: "Running",
        node: "deletedNode",
        ..P0
    }])[0])
        .clone();
    let ready_since = Time(base().checked_sub(SignedDuration::from_hours(1)).unwrap());
    pod.status.as_mut().unwrap().conditions = Some(vec![PodCondition {
        type_: "Ready".into(),
        status: "True".into(),
        last_transition_time: Some(ready_since),
        ..Default::default()
    }]);
    let mut gc = PodGc::new(Fake::default(), -1, Duration::ZERO);
    let now = later(base(), Duration::from_secs(5));
    gc.gc(&vec![Arc::new(pod)], &[], now).await;
    assert_eq!(sorted(&gc.control.deleted), ["testPod"]);
    let patches = gc.control.patched.lock().unwrap();
    assert_eq!(
        patches[0].1,
        json!({
            "metadata": {"uid": "uid-testPod"},
            "status": {
                "phase": "Failed",
                "conditions": [{
                    "type": "DisruptionTarget", "status": "True",
                    "reason": "DeletionByPodGC", "message": "PodGC: node no longer exists",
                    "lastTransitionTime": Time(now),
                }],
            },
        })
    );
}

#[test]
fn fail_patch_keeps_an_unchanged_condition_time() {
    let mut pod = (*pods(&[P {
        name: "p",
        phase: "Running",
        ..P0
    }])[0])
        .clone();
    let then = Time(base());
    let c = PodCondition {
        type_: "DisruptionTarget".into(),
        status: "True".into(),
        last_transition_time: Some(then.clone()),
        ..Default::default()
    };
    pod.status.as_mut().unwrap().conditions = Some(vec![c.clone()]);
    let patch = fail_patch(&pod, Some(&c), later(base(), Duration::from_secs(60))).unwrap();
    assert_eq!(
        patch["status"]["conditions"][0]["lastTransitionTime"],
        json!(then)
    );
    pod.status.as_mut().unwrap().phase = Some("Succeeded".into());
    assert_eq!(fail_patch(&pod, Some(&c), base()), None);
}
