//! Upstream `taint_eviction_test.go`, on the planner with explicit times instead of a
//! running controller, a fake clientset and sleeps: "deleted" means due at that time.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, Pod, Taint, Toleration};
use k8s_openapi::jiff::Timestamp;
use serde_json::json;
use tokio::time::Instant;

use super::planner::*;
use super::*;

fn pod(name: &str, node: &str) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "default", "uid": format!("{name}-uid")},
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "i"}]},
    }))
    .expect("pod")
}

/// upstream `addToleration`: a negative duration tolerates forever.
fn tolerating(mut p: Pod, index: usize, duration: i64) -> Pod {
    let t = Toleration {
        key: Some(format!("testTaint{index}")),
        value: Some(format!("test{index}")),
        effect: Some("NoExecute".into()),
        toleration_seconds: (duration >= 0).then_some(duration),
        ..Toleration::default()
    };
    p.spec.as_mut().expect("spec").tolerations = Some(vec![t]);
    p
}

fn taint(index: usize) -> Taint {
    Taint {
        key: format!("testTaint{index}"),
        value: Some(format!("test{index}")),
        effect: "NoExecute".into(),
        time_added: Some(Time(Timestamp::now())),
    }
}

fn node(name: &str, taints: &[usize]) -> Node {
    let mut n: Node = serde_json::from_value(json!({"metadata": {"name": name}})).expect("node");
    let taints: Vec<Taint> = taints.iter().map(|i| taint(*i)).collect();
    n.spec = Some(k8s_openapi::api::core::v1::NodeSpec {
        taints: Some(taints),
        ..Default::default()
    });
    n
}

fn key(name: &str) -> PodKey {
    PodKey {
        namespace: "default".into(),
        name: name.into(),
    }
}

fn names(due: Vec<(PodKey, u64)>) -> Vec<String> {
    due.into_iter().map(|(k, _)| k.name).collect()
}

fn arcs(pods: &[Pod]) -> Vec<Arc<Pod>> {
    pods.iter().cloned().map(Arc::new).collect()
}

const SEC: Duration = Duration::from_secs(1);

#[test]
fn filter_no_execute_taints() {
    let mut n = node("node1", &[1]);
    n.spec
        .as_mut()
        .unwrap()
        .taints
        .as_mut()
        .unwrap()
        .push(Taint {
            key: "two".into(),
            value: Some("two".into()),
            effect: "NoSchedule".into(),
            time_added: None,
        });
    let taints = no_execute_taints(&n);
    assert_eq!(taints.len(), 1);
    assert_eq!(taints[0].key, "testTaint1");
}

#[test]
fn create_pod() {
    // (description, pod, tainted node1, deleted at once)
    let cases = [
        ("not scheduled - ignore", pod("pod1", ""), false, false),
        (
            "scheduled on untainted Node",
            pod("pod1", "node1"),
            false,
            false,
        ),
        ("schedule on tainted Node", pod("pod1", "node1"), true, true),
        (
            "schedule on tainted Node with finite toleration",
            tolerating(pod("pod1", "node1"), 1, 100),
            true,
            false,
        ),
        (
            "schedule on tainted Node with infinite toleration",
            tolerating(pod("pod1", "node1"), 1, -1),
            true,
            false,
        ),
        (
            "schedule on tainted Node with infinite invalid toleration",
            tolerating(pod("pod1", "node1"), 2, -1),
            true,
            true,
        ),
    ];
    for (description, p, tainted, deleted) in cases {
        let mut planner = Planner::new();
        if tainted {
            planner.set_taints("node1", vec![taint(1)]);
        }
        let now = Instant::now();
        planner.pod_updated(&key("pod1"), node_name(&p), Some(&p), now);
        let due = names(planner.take_due(now));
        assert_eq!(!due.is_empty(), deleted, "{description}");
    }
    // the finite toleration is due after its 100 s
    let mut planner = Planner::new();
    planner.set_taints("node1", vec![taint(1)]);
    let p = tolerating(pod("pod1", "node1"), 1, 100);
    let now = Instant::now();
    planner.pod_updated(&key("pod1"), "node1", Some(&p), now);
    assert_eq!(planner.next_deadline(), Some(now + 100 * SEC));
    assert!(planner.take_due(now + 99 * SEC).is_empty());
    assert_eq!(names(planner.take_due(now + 100 * SEC)), ["pod1"]);
}

#[test]
fn delete_pod() {
    let mut planner = Planner::new();
    planner.set_taints("node1", vec![taint(1)]);
    let now = Instant::now();
    let cancelled = planner.pod_updated(&key("pod1"), "node1", None, now);
    assert!(cancelled.is_empty());
    assert!(planner.take_due(now).is_empty());
}

#[test]
fn update_pod() {
    // (description, prev, new, await scheduled eviction, deleted at once)
    let cases = [
        (
            "scheduling onto tainted Node",
            pod("pod1", ""),
            pod("pod1", "node1"),
            false,
            true,
        ),
        (
            "scheduling onto tainted Node with toleration",
            tolerating(pod("pod1", ""), 1, -1),
            tolerating(pod("pod1", "node1"), 1, -1),
            false,
            false,
        ),
        (
            "removing toleration",
            tolerating(pod("pod1", "node1"), 1, 100),
            pod("pod1", "node1"),
            true,
            true,
        ),
    ];
    for (description, prev, new, scheduled, deleted) in cases {
        let mut planner = Planner::new();
        planner.set_taints("node1", vec![taint(1)]);
        let t0 = Instant::now();
        planner.pod_updated(&key("pod1"), node_name(&prev), Some(&prev), t0);
        assert_eq!(
            planner.work(&key("pod1")).is_some(),
            scheduled,
            "{description}"
        );
        assert!(pod_change_matters(Some(&prev), Some(&new)), "{description}");
        let t1 = t0 + Duration::from_millis(100);
        let cancelled = planner.pod_updated(&key("pod1"), node_name(&new), Some(&new), t1);
        // a scheduled deletion replaced by an immediate one is announced as cancelled
        assert_eq!(!cancelled.is_empty(), scheduled, "{description}");
        assert_eq!(
            !names(planner.take_due(t1)).is_empty(),
            deleted,
            "{description}"
        );
    }

    // lengthening toleration shouldn't work
    let mut planner = Planner::new();
    planner.set_taints("node1", vec![taint(1)]);
    let t0 = Instant::now();
    let prev = tolerating(pod("pod1", "node1"), 1, 1);
    let new = tolerating(pod("pod1", "node1"), 1, 100);
    planner.pod_updated(&key("pod1"), "node1", Some(&prev), t0);
    let cancelled = planner.pod_updated(&key("pod1"), "node1", Some(&new), t0 + SEC / 2);
    assert!(cancelled.is_empty());
    assert_eq!(
        planner.work(&key("pod1")).map(|w| w.fire_at),
        Some(t0 + SEC)
    );
    assert_eq!(names(planner.take_due(t0 + SEC)), ["pod1"]);

    // as upstream, shortening it does not move a scheduled deletion either: the
    // existing one stays (processPodOnNode keeps work whose start + min toleration is
    // before now + min toleration)
    let mut planner = Planner::new();
    planner.set_taints("node1", vec![taint(1)]);
    let long = tolerating(pod("pod1", "node1"), 1, 100);
    let short = tolerating(pod("pod1", "node1"), 1, 10);
    planner.pod_updated(&key("pod1"), "node1", Some(&long), t0);
    planner.pod_updated(&key("pod1"), "node1", Some(&short), t0 + 5 * SEC);
    assert_eq!(
        planner.work(&key("pod1")).map(|w| w.fire_at),
        Some(t0 + 100 * SEC)
    );
}

#[test]
fn create_node() {
    // (description, pod, node, deleted at once)
    let cases = [
        (
            "Creating Node matching already assigned Pod",
            pod("pod1", "node1"),
            node("node1", &[]),
            false,
        ),
        (
            "Creating tainted Node matching already assigned Pod",
            pod("pod1", "node1"),
            node("node1", &[1]),
            true,
        ),
        (
            "Creating tainted Node matching already assigned tolerating Pod",
            tolerating(pod("pod1", "node1"), 1, -1),
            node("node1", &[1]),
            false,
        ),
    ];
    for (description, p, n, deleted) in cases {
        let mut planner = Planner::new();
        assert!(node_change_matters(None, Some(&n)));
        let now = Instant::now();
        planner.node_updated("node1", Some(&n), &arcs(&[p]), now);
        assert_eq!(!planner.take_due(now).is_empty(), deleted, "{description}");
        assert!(planner.next_deadline().is_none(), "{description}");
    }
}

#[test]
fn delete_node() {
    let mut planner = Planner::new();
    planner.set_taints("node1", vec![taint(1)]);
    planner.node_updated("node1", None, &arcs(&[]), Instant::now());
    assert!(planner.taints_of("node1").is_none());
}

#[test]
fn update_node() {
    let multi: Pod = {
        let mut p = pod("pod1", "node1");
        p.spec.as_mut().unwrap().tolerations = Some(vec![
            Toleration {
                key: Some("testTaint1".into()),
                value: Some("test1".into()),
                effect: Some("NoExecute".into()),
                toleration_seconds: Some(1),
                ..Toleration::default()
            },
            Toleration {
                key: Some("testTaint2".into()),
                value: Some("test2".into()),
                effect: Some("NoExecute".into()),
                toleration_seconds: Some(100),
                ..Toleration::default()
            },
        ]);
        p
    };
    // (description, pod, new node, when it is deleted)
    let cases = [
        (
            "Added taint, expect node patched and deleted",
            pod("pod1", "node1"),
            node("node1", &[1]),
            Some(Duration::ZERO),
        ),
        (
            "Added tolerated taint",
            tolerating(pod("pod1", "node1"), 1, 100),
            node("node1", &[1]),
            Some(100 * SEC),
        ),
        (
            "Only one added taint tolerated",
            tolerating(pod("pod1", "node1"), 1, 100),
            node("node1", &[1, 2]),
            Some(Duration::ZERO),
        ),
        (
            "Pod with multiple tolerations are evicted when first one runs out",
            multi,
            node("node1", &[1, 2]),
            Some(SEC),
        ),
    ];
    for (description, p, n, when) in cases {
        let mut planner = Planner::new();
        let old = node("node1", &[]);
        assert!(node_change_matters(Some(&old), Some(&n)), "{description}");
        let t0 = Instant::now();
        planner.node_updated("node1", Some(&n), &arcs(&[p]), t0);
        let deadline = planner.next_deadline().map(|d| d - t0);
        assert_eq!(deadline, when, "{description}");
    }

    // Taint removed: the scheduled deletion is cancelled, nothing is due later
    let mut planner = Planner::new();
    let pods = arcs(&[tolerating(pod("pod1", "node1"), 1, 1)]);
    let t0 = Instant::now();
    planner.node_updated("node1", Some(&node("node1", &[1])), &pods, t0);
    assert_eq!(planner.next_deadline(), Some(t0 + SEC));
    let untainted = node("node1", &[]);
    assert!(node_change_matters(
        Some(&node("node1", &[1])),
        Some(&untainted)
    ));
    let cancelled = planner.node_updated("node1", Some(&untainted), &pods, t0 + SEC / 2);
    assert_eq!(cancelled, [key("pod1")]);
    assert!(planner.take_due(t0 + 3 * SEC / 2).is_empty());
    assert!(planner.taints_of("node1").is_none());
}

#[test]
fn update_node_with_multiple_taints() {
    let (taint1, taint2) = (taint(1), taint(2));
    let mut p = pod("pod1", "node1");
    p.spec.as_mut().unwrap().tolerations = Some(vec![
        Toleration {
            key: Some(taint1.key.clone()),
            operator: Some("Exists".into()),
            effect: Some("NoExecute".into()),
            ..Toleration::default()
        },
        Toleration {
            key: Some(taint2.key.clone()),
            operator: Some("Exists".into()),
            effect: Some("NoExecute".into()),
            toleration_seconds: Some(60),
            ..Toleration::default()
        },
    ]);
    let pods = arcs(&[p]);
    let (untainted, single, double) = (
        node("node1", &[]),
        node("node1", &[1]),
        node("node1", &[1, 2]),
    );
    let mut planner = Planner::new();
    let now = Instant::now();
    planner.node_updated("node1", Some(&untainted), &pods, now);
    assert!(
        planner.work(&key("pod1")).is_none(),
        "queued with no taints"
    );
    planner.node_updated("node1", Some(&single), &pods, now);
    assert!(
        planner.work(&key("pod1")).is_none(),
        "queued with a permanently tolerated taint"
    );
    planner.node_updated("node1", Some(&double), &pods, now);
    assert!(
        planner.work(&key("pod1")).is_some(),
        "not queued after a temporarily tolerated taint"
    );
    let cancelled = planner.node_updated("node1", Some(&single), &pods, now);
    assert!(
        planner.work(&key("pod1")).is_none(),
        "still queued after the temporarily tolerated taint went"
    );
    assert_eq!(cancelled, [key("pod1")]);
    assert!(planner.take_due(now + 120 * SEC).is_empty(), "deleted");
}

#[test]
fn update_node_with_multiple_pods() {
    let pods = arcs(&[
        pod("pod1", "node1"),
        tolerating(pod("pod2", "node1"), 1, 1),
        tolerating(pod("pod3", "node1"), 1, -1),
    ]);
    // Pods with different toleration times are evicted appropriately
    let mut planner = Planner::new();
    let t0 = Instant::now();
    planner.node_updated("node1", Some(&node("node1", &[1])), &pods, t0);
    assert_eq!(names(planner.take_due(t0)), ["pod1"]);
    assert!(planner.take_due(t0 + SEC / 2).is_empty());
    assert_eq!(names(planner.take_due(t0 + SEC)), ["pod2"]);
    assert!(planner.take_due(t0 + 1000 * SEC).is_empty());
    // Evict all pods not matching all taints instantly
    let mut planner = Planner::new();
    planner.node_updated("node1", Some(&node("node1", &[1, 2])), &pods, t0);
    assert_eq!(names(planner.take_due(t0)), ["pod1", "pod2", "pod3"]);
}

#[test]
fn eventual_consistency() {
    // (description, prev pod2, new pod2, pod2's deletion delay)
    let cases = [
        (
            "existing pod2 scheduled onto tainted Node",
            Some(pod("pod2", "")),
            pod("pod2", "node1"),
            Duration::ZERO,
        ),
        (
            "existing pod2 with taint toleration scheduled onto tainted Node",
            Some(tolerating(pod("pod2", ""), 1, 100)),
            tolerating(pod("pod2", "node1"), 1, 100),
            100 * SEC,
        ),
        (
            "new pod2 created on tainted Node",
            None,
            pod("pod2", "node1"),
            Duration::ZERO,
        ),
        (
            "new pod2 with taint toleration created on tainted Node",
            None,
            tolerating(pod("pod2", "node1"), 1, 100),
            100 * SEC,
        ),
    ];
    for (description, prev, new, delay) in cases {
        let mut planner = Planner::new();
        let t0 = Instant::now();
        if let Some(prev) = &prev {
            planner.pod_updated(&key("pod2"), "", Some(prev), t0);
        }
        // the node update does not know pod2 yet: only pod1 goes
        let pods = arcs(&[pod("pod1", "node1")]);
        planner.node_updated("node1", Some(&node("node1", &[1])), &pods, t0);
        assert_eq!(names(planner.take_due(t0)), ["pod1"], "{description}");
        // the delayed update of pod2 arrives
        assert!(
            pod_change_matters(prev.as_ref(), Some(&new)),
            "{description}"
        );
        planner.pod_updated(&key("pod2"), "node1", Some(&new), t0);
        assert_eq!(
            planner.work(&key("pod2")).map(|w| w.fire_at - t0),
            Some(delay),
            "{description}"
        );
    }
}

#[test]
fn running_deletions_finish_and_are_not_cancelled() {
    let mut planner = Planner::new();
    let t0 = Instant::now();
    planner.node_updated(
        "node1",
        Some(&node("node1", &[1])),
        &arcs(&[pod("pod1", "node1")]),
        t0,
    );
    let due = planner.take_due(t0);
    assert_eq!(due.len(), 1);
    // a deletion under way is neither due again nor announced as cancelled
    assert!(planner.take_due(t0 + SEC).is_empty());
    let cancelled = planner.pod_updated(&key("pod1"), "node1", None, t0);
    assert!(cancelled.is_empty());
    // an old deletion finishing does not drop a newer one of the same pod
    planner.pod_updated(&key("pod1"), "node1", Some(&pod("pod1", "node1")), t0);
    let newer = planner
        .work(&key("pod1"))
        .expect("scheduled again")
        .generation;
    planner.finished(&key("pod1"), due[0].1);
    assert!(planner.work(&key("pod1")).is_some());
    planner.finished(&key("pod1"), newer);
    assert!(planner.work(&key("pod1")).is_none());
}

#[test]
fn changes_that_matter() {
    let p = pod("pod1", "node1");
    assert!(!pod_change_matters(Some(&p), Some(&p.clone())));
    let mut labelled = p.clone();
    labelled.metadata.labels = Some([("a".to_string(), "b".to_string())].into());
    assert!(!pod_change_matters(Some(&p), Some(&labelled)));
    assert!(pod_change_matters(Some(&p), Some(&pod("pod1", "node2"))));
    assert!(pod_change_matters(Some(&p), None));
    let n = node("node1", &[1]);
    assert!(!node_change_matters(Some(&n), Some(&n.clone())));
    let mut no_schedule = n.clone();
    no_schedule
        .spec
        .as_mut()
        .unwrap()
        .taints
        .as_mut()
        .unwrap()
        .push(Taint {
            key: "x".into(),
            effect: "NoSchedule".into(),
            ..Taint::default()
        });
    assert!(!node_change_matters(Some(&n), Some(&no_schedule)));
    assert!(node_change_matters(Some(&n), Some(&node("node1", &[]))));
}

#[test]
fn disruption_condition_is_added_once() {
    let now = Timestamp::now();
    let p = pod("pod1", "node1");
    let patch = disruption_condition_patch(&p, now).expect("patch");
    assert_eq!(patch["metadata"]["uid"], "pod1-uid");
    let c = &patch["status"]["conditions"][0];
    assert_eq!(c["type"], "DisruptionTarget");
    assert_eq!(c["status"], "True");
    assert_eq!(c["reason"], DISRUPTION_REASON);
    assert_eq!(c["message"], DISRUPTION_MESSAGE);
    assert!(c["lastTransitionTime"].is_string());
    // already there: nothing to patch
    let mut with: Pod = p.clone();
    let condition: PodCondition = serde_json::from_value(c.clone()).expect("condition");
    with.status = Some(k8s_openapi::api::core::v1::PodStatus {
        conditions: Some(vec![condition.clone()]),
        ..Default::default()
    });
    assert!(disruption_condition_patch(&with, now).is_none());
    // another reason, same status: the transition time stays
    let mut other = condition;
    other.reason = Some("EvictionByEvictionAPI".into());
    other.last_transition_time = Some(Time("2020-01-01T00:00:00Z".parse().unwrap()));
    with.status.as_mut().unwrap().conditions = Some(vec![other]);
    let patch = disruption_condition_patch(&with, now).expect("patch");
    assert_eq!(
        patch["status"]["conditions"][0]["lastTransitionTime"],
        "2020-01-01T00:00:00Z"
    );
}
