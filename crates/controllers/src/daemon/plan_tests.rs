//! Ports of upstream's sync-level tables (daemon_controller_test.go, update_test.go)
//! over the pure planning functions. As upstream's fake pod control, the harness
//! applies creations and deletions to its pod list at once, so a sync runs `manage`
//! and then the rolling update on the result (one step = one sync).

use super::*;
use crate::daemon::revisions::template_hash;
use crate::daemon::util::tests::{
    labels, new_ds, new_node, taint, with_taints, DS_LABEL, DS_LABEL2,
};
use crate::daemon::util::{
    create_pod_template, is_rolling_update, replace_node_name_affinity, template_generation,
    DEPRECATED_TEMPLATE_GENERATION,
};
use k8s_openapi::api::apps::v1::{DaemonSetUpdateStrategy, RollingUpdateDaemonSet};
use k8s_openapi::api::core::v1::{PodCondition, PodSpec, PodStatus, Toleration};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{OwnerReference, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use k8s_openapi::jiff::SignedDuration;

struct World {
    ds: DaemonSet,
    nodes: Vec<Arc<Node>>,
    pods: Vec<Arc<Pod>>,
    backoff: Backoff,
    clock: Instant,
    now: Timestamp,
    seq: usize,
}

impl World {
    fn new(ds: DaemonSet, nodes: Vec<Node>) -> World {
        let mut ds = ds;
        ds.metadata.annotations = Some(labels(&[(DEPRECATED_TEMPLATE_GENERATION, "1")]));
        World {
            ds,
            nodes: nodes.into_iter().map(Arc::new).collect(),
            pods: Vec::new(),
            backoff: Backoff::default(),
            clock: Instant::now(),
            now: Timestamp::from_second(1_000_000).unwrap(),
            seq: 0,
        }
    }

    fn with_nodes(ds: DaemonSet, n: usize) -> World {
        World::new(
            ds,
            (0..n)
                .map(|i| new_node(&format!("node-{i}"), &[]))
                .collect(),
        )
    }

    fn hash(&self) -> String {
        template_hash(&self.ds)
    }

    fn owner_ref(&self) -> OwnerReference {
        coxswain_runtime::controllerutil::new_controller_ref(&self.ds)
    }

    /// A pod of the current template pinned to `node`, as syncNodes creates it.
    fn make_pod(&mut self, node: &str, hash: &str) -> Arc<Pod> {
        self.seq += 1;
        let generation = template_generation(&self.ds).ok().flatten();
        let t = create_pod_template(&self.ds.spec.template, generation, hash);
        let mut spec = t.spec.unwrap_or_default();
        spec.affinity = Some(replace_node_name_affinity(spec.affinity.take(), node));
        let mut p = Pod {
            metadata: t.metadata.unwrap_or_default(),
            spec: Some(spec),
            status: Some(PodStatus {
                phase: Some("Pending".into()),
                ..Default::default()
            }),
        };
        p.metadata.name = Some(format!("{node}-{}", self.seq));
        p.metadata.namespace = Some("default".into());
        p.metadata.owner_references = Some(vec![self.owner_ref()]);
        p.metadata.creation_timestamp = Some(Time(
            self.now
                .checked_add(SignedDuration::from_millis(self.seq as i64))
                .unwrap(),
        ));
        Arc::new(p)
    }

    /// An existing pod on `node` (bound), of the current template or with `extra` labels.
    fn add_bound(&mut self, node: &str, l: &[(&str, &str)]) -> Arc<Pod> {
        let hash = self.hash();
        let mut p = (*self.make_pod(node, &hash)).clone();
        let mut l = labels(l);
        l.insert(
            crate::daemon::util::CONTROLLER_REVISION_HASH_LABEL.into(),
            hash,
        );
        p.metadata.labels = Some(l);
        p.spec.as_mut().unwrap().node_name = Some(node.into());
        let p = Arc::new(p);
        self.pods.push(p.clone());
        p
    }

    fn apply(&mut self, plan: Plan) -> (usize, usize) {
        let hash = self.hash();
        let (c, d) = (plan.create_on.len().min(250), plan.delete.len().min(250));
        for node in plan.create_on.iter().take(250) {
            let p = self.make_pod(node, &hash);
            self.pods.push(p);
        }
        let doomed: std::collections::HashSet<_> = plan
            .delete
            .iter()
            .take(250)
            .map(|p| p.metadata.name.clone())
            .collect();
        self.pods.retain(|p| !doomed.contains(&p.metadata.name));
        (c, d)
    }

    fn selected(&self) -> Vec<Arc<Pod>> {
        let want = labels(DS_LABEL);
        self.pods
            .iter()
            .filter(|p| {
                p.metadata
                    .labels
                    .as_ref()
                    .is_some_and(|l| want.iter().all(|(k, v)| l.get(k) == Some(v)))
            })
            .cloned()
            .collect()
    }

    /// One sync: manage, then (RollingUpdate) the rolling update. Returns
    /// (creates, deletes, events).
    fn sync(&mut self) -> (usize, usize, usize) {
        let hash = self.hash();
        let map = nodes_to_daemon_pods(&self.selected(), false);
        let plan = plan_manage(
            &self.ds,
            &self.nodes,
            &map,
            &hash,
            &mut self.backoff,
            self.clock,
            self.now,
        );
        let events = plan.events.len();
        let (mut c, mut d) = self.apply(plan);
        if is_rolling_update(&self.ds) {
            let map = nodes_to_daemon_pods(&self.selected(), false);
            let plan = plan_rolling_update(&self.ds, &self.nodes, &map, &hash, self.now).unwrap();
            let (c2, d2) = self.apply(plan);
            c += c2;
            d += d2;
        }
        (c, d, events)
    }

    fn mark_ready(&mut self) {
        let now = self.now;
        self.pods = self
            .pods
            .iter()
            .map(|p| {
                if crate::controller_utils::is_pod_ready(p) {
                    return p.clone();
                }
                Arc::new(ready(p, now))
            })
            .collect();
    }

    fn set_image(&mut self, image: &str) {
        let spec = self.ds.spec.template.spec.as_mut().unwrap();
        spec.containers[0].image = Some(image.into());
        self.bump_generation();
    }

    fn bump_generation(&mut self) {
        let g = template_generation(&self.ds).ok().flatten().unwrap_or(0) + 1;
        self.ds
            .metadata
            .annotations
            .get_or_insert_with(Default::default)
            .insert(DEPRECATED_TEMPLATE_GENERATION.into(), g.to_string());
    }

    fn rolling(&mut self, surge: Option<IntOrString>, unavailable: Option<IntOrString>) {
        self.ds.spec.update_strategy = Some(DaemonSetUpdateStrategy {
            type_: Some("RollingUpdate".into()),
            rolling_update: Some(RollingUpdateDaemonSet {
                max_surge: surge,
                max_unavailable: unavailable,
            }),
        });
    }

    fn ready_count(&self) -> usize {
        self.pods
            .iter()
            .filter(|p| crate::controller_utils::is_pod_ready(p))
            .count()
    }
}

fn ready(p: &Pod, since: Timestamp) -> Pod {
    let mut p = p.clone();
    let status = p.status.get_or_insert_with(Default::default);
    status.phase = Some("Running".into());
    status.conditions = Some(vec![PodCondition {
        type_: "Ready".into(),
        status: "True".into(),
        last_transition_time: Some(Time(since)),
        ..Default::default()
    }]);
    p
}

fn int(i: i32) -> Option<IntOrString> {
    Some(IntOrString::Int(i))
}

/// Upstream's update_test.go start: OnDelete, `n` nodes, (n,0), all ready.
fn started(n: usize) -> World {
    let mut w = World::with_nodes(new_ds("foo"), n);
    assert_eq!(w.sync(), (n, 0, 0));
    w.mark_ready();
    w
}

fn steps(w: &mut World, want: &[(usize, usize)], ready_after: bool) {
    for (i, &(c, d)) in want.iter().enumerate() {
        let (gc, gd, _) = w.sync();
        assert_eq!((gc, gd), (c, d), "step {i}");
    }
    if ready_after {
        w.mark_ready();
    }
}

// TestSimpleDaemonSetLaunchesPods, TestNoNodesDoesNothing, TestDealsWithExistingPods.
#[test]
fn launches_one_pod_per_node_and_prunes_extras() {
    for strategy in [None, Some(())] {
        let mut w = World::with_nodes(new_ds("foo"), 5);
        if strategy.is_some() {
            w.rolling(None, int(1));
        }
        assert_eq!(w.sync(), (5, 0, 0));
        let mut empty = World::with_nodes(new_ds("foo"), 0);
        assert_eq!(empty.sync(), (0, 0, 0));

        let mut w = World::with_nodes(new_ds("foo"), 5);
        if strategy.is_some() {
            w.rolling(None, int(1));
        }
        w.add_bound("node-1", DS_LABEL);
        for _ in 0..2 {
            w.add_bound("node-2", DS_LABEL);
        }
        for _ in 0..5 {
            w.add_bound("node-3", DS_LABEL);
        }
        for _ in 0..2 {
            w.add_bound("node-4", DS_LABEL2);
        }
        assert_eq!(w.sync(), (2, 5, 0));
    }
}

// TestSelectorDaemonDealsWithExistingPods: nodeSelector, 5 plain + 5 labelled nodes.
#[test]
fn selector_daemon_deals_with_existing_pods() {
    let mut ds = new_ds("foo");
    ds.spec.template.spec.as_mut().unwrap().node_selector =
        Some(labels(&[("color", "blue"), ("speed", "fast")]));
    let mut nodes: Vec<Node> = (0..5)
        .map(|i| new_node(&format!("node-{i}"), &[]))
        .collect();
    nodes.extend((5..10).map(|i| {
        new_node(
            &format!("node-{i}"),
            &[("color", "blue"), ("speed", "fast")],
        )
    }));
    let mut w = World::new(ds, nodes);
    w.add_bound("node-0", DS_LABEL);
    for _ in 0..3 {
        w.add_bound("node-1", DS_LABEL);
    }
    for _ in 0..2 {
        w.add_bound("node-1", DS_LABEL2);
    }
    for _ in 0..4 {
        w.add_bound("node-2", DS_LABEL);
    }
    for _ in 0..13 {
        w.add_bound("node-6", DS_LABEL);
    }
    for _ in 0..4 {
        w.add_bound("node-7", DS_LABEL2);
    }
    w.add_bound("node-9", DS_LABEL);
    w.add_bound("node-9", DS_LABEL2);
    assert_eq!(w.sync(), (3, 20, 0));
}

// TestDaemonSetRespectsTermination, TestNoScheduleTaintedDoesntEvicitRunningIntolerantPod,
// TestNoExecuteTaintedDoesEvicitRunningIntolerantPod, TestDeleteUnscheduledPodForNotExistingNode.
#[test]
fn termination_taints_and_missing_nodes() {
    let mut w = World::with_nodes(new_ds("foo"), 1);
    let p = w.add_bound("node-0", DS_LABEL);
    let mut deleting = (*p).clone();
    deleting.metadata.deletion_timestamp = Some(Time(w.now));
    w.pods = vec![Arc::new(deleting)];
    assert_eq!(w.sync(), (0, 0, 0));

    let tainted = |effect: &str| {
        with_taints(
            new_node("node-0", &[]),
            vec![taint("dedicated", "user1", effect)],
        )
    };
    let mut w = World::new(new_ds("foo"), vec![tainted("NoSchedule")]);
    assert_eq!(w.sync(), (0, 0, 0), "no new pod on a NoSchedule node");
    w.add_bound("node-0", DS_LABEL);
    assert_eq!(w.sync(), (0, 0, 0), "the running pod stays");
    let mut w = World::new(new_ds("foo"), vec![tainted("NoExecute")]);
    w.add_bound("node-0", DS_LABEL);
    assert_eq!(w.sync(), (0, 1, 0), "NoExecute evicts");

    let mut w = World::with_nodes(new_ds("foo"), 1);
    w.add_bound("node-0", DS_LABEL);
    w.add_bound("node-1", DS_LABEL);
    let hash = w.hash();
    let pending = w.make_pod("node-2", &hash);
    w.pods.push(pending);
    assert_eq!(
        w.sync(),
        (0, 1, 0),
        "only the pending pod of a missing node goes"
    );
}

// TestDaemonKillFailedPods.
#[test]
fn kill_failed_pods_table() {
    for (failed, normal, want) in [
        (0, 1, (0, 0, 0)),
        (0, 0, (1, 0, 0)),
        (1, 0, (0, 1, 1)),
        (1, 3, (0, 3, 1)),
    ] {
        for rolling in [false, true] {
            let mut w = World::with_nodes(new_ds("foo"), 1);
            if rolling {
                w.rolling(None, int(1));
            }
            for _ in 0..failed {
                let p = w.add_bound("node-0", DS_LABEL);
                let mut f = (*p).clone();
                f.status.as_mut().unwrap().phase = Some("Failed".into());
                w.pods.retain(|x| x.metadata.name != p.metadata.name);
                w.pods.push(Arc::new(f));
            }
            for _ in 0..normal {
                w.add_bound("node-0", DS_LABEL);
            }
            // upstream counts the deletes of manage only (rolling update has nothing to do)
            assert_eq!(w.sync(), want, "failed={failed} normal={normal}");
        }
    }
}

// TestDaemonKillFailedPodsBackoff.
#[test]
fn failed_pods_back_off() {
    let mut w = World::with_nodes(new_ds("foo"), 1);
    w.backoff = Backoff::new(Duration::from_millis(50), Duration::from_millis(500));
    let fail = |w: &mut World| {
        let p = w.add_bound("node-0", DS_LABEL);
        let mut f = (*p).clone();
        f.status.as_mut().unwrap().phase = Some("Failed".into());
        w.pods.retain(|x| x.metadata.name != p.metadata.name);
        w.pods.push(Arc::new(f));
    };
    fail(&mut w);
    assert_eq!(w.sync(), (0, 1, 1));
    let key = failed_pods_backoff_key(&w.ds, "node-0");
    let delay = w.backoff.get(&key);
    assert!(delay > Duration::ZERO);
    fail(&mut w);
    let hash = w.hash();
    let map = nodes_to_daemon_pods(&w.selected(), false);
    let plan = plan_manage(&w.ds, &w.nodes, &map, &hash, &mut w.backoff, w.clock, w.now);
    assert_eq!(
        (plan.create_on.len(), plan.delete.len(), plan.events.len()),
        (0, 0, 0)
    );
    assert_eq!(plan.requeue_after, Some(delay));
    assert_eq!(w.backoff.get(&key), delay);
    assert!(w
        .backoff
        .is_in_backoff_since_update(&key, w.clock + delay - Duration::from_nanos(1)));
    assert!(!w.backoff.is_in_backoff_since_update(&key, w.clock + delay));
    w.clock += delay;
    assert_eq!(w.sync(), (0, 1, 1));
}

// TestDaemonSetUpdatesPods (maxUnavailable 2).
#[test]
fn updates_pods_with_max_unavailable() {
    let mut w = started(5);
    w.set_image("foo2/bar2");
    w.rolling(None, int(2));
    steps(&mut w, &[(0, 2), (2, 0)], true);
    steps(&mut w, &[(0, 2), (2, 0)], true);
    steps(&mut w, &[(0, 1), (1, 0)], true);
    steps(&mut w, &[(0, 0)], false);
}

// TestDaemonSetUpdatesPodsWithMaxSurge (surge 2, unavailable 0).
#[test]
fn updates_pods_with_max_surge() {
    let mut w = started(5);
    w.set_image("foo2/bar2");
    w.rolling(int(2), int(0));
    steps(&mut w, &[(2, 0), (0, 0)], true);
    steps(&mut w, &[(2, 2), (0, 0)], true);
    steps(&mut w, &[(1, 2), (0, 0)], true);
    steps(&mut w, &[(0, 1), (0, 0)], false);
}

// TestDaemonSetUpdatesPodsNotMatchTainstWithMaxSurge.
#[test]
fn surge_moves_off_a_node_it_no_longer_tolerates() {
    let mut ds = new_ds("foo");
    ds.spec.template.spec.as_mut().unwrap().tolerations = Some(vec![Toleration {
        key: Some("node-role.kubernetes.io/control-plane".into()),
        operator: Some("Exists".into()),
        ..Default::default()
    }]);
    let mut nodes: Vec<Node> = (0..5)
        .map(|i| new_node(&format!("node-{i}"), &[]))
        .collect();
    nodes[0] = with_taints(
        nodes[0].clone(),
        vec![taint(
            "node-role.kubernetes.io/control-plane",
            "",
            "NoSchedule",
        )],
    );
    let mut w = World::new(ds, nodes);
    w.rolling(int(1), int(0));
    assert_eq!(w.sync(), (5, 0, 0));
    w.mark_ready();
    w.ds.spec.template.spec.as_mut().unwrap().tolerations = None;
    w.bump_generation();
    steps(&mut w, &[(1, 1), (0, 0)], true);
    steps(&mut w, &[(1, 1), (0, 0)], true);
    steps(&mut w, &[(1, 1), (0, 0)], true);
    steps(&mut w, &[(1, 1), (0, 0)], true);
    steps(&mut w, &[(0, 1), (0, 0)], false);
}

// TestDaemonSetUpdatesWhenNewPodIsNotReady, TestDaemonSetUpdatesAllOldPodsNotReady,
// TestDaemonSetUpdatesNoTemplateChanged.
#[test]
fn unready_pods_and_unchanged_templates() {
    let mut w = started(5);
    w.set_image("foo2/bar2");
    w.rolling(None, int(3));
    steps(&mut w, &[(0, 3), (3, 0), (0, 0)], false);

    let mut w = World::with_nodes(new_ds("foo"), 5);
    assert_eq!(w.sync(), (5, 0, 0));
    w.set_image("foo2/bar2");
    w.rolling(None, int(3));
    steps(&mut w, &[(0, 5), (5, 0), (0, 0)], false);

    let mut w = started(5);
    w.rolling(None, int(3));
    steps(&mut w, &[(0, 0)], false);
}

// TestDaemonSetUpdatesSomeOldPodsNotReady (maxUnavailable 2).
#[test]
fn some_old_pods_not_ready() {
    let mut w = started(5);
    // two old pods turn unready
    let mut n = 0;
    w.pods = w
        .pods
        .iter()
        .map(|p| {
            if n < 2 {
                n += 1;
                let mut q = (**p).clone();
                q.status.as_mut().unwrap().conditions = None;
                Arc::new(q)
            } else {
                p.clone()
            }
        })
        .collect();
    w.set_image("foo2/bar2");
    w.rolling(None, int(2));
    steps(&mut w, &[(0, 2), (2, 0), (0, 0)], false);
    assert_eq!(w.ready_count(), 3);
    w.set_image("foo2/bar3");
    steps(&mut w, &[(0, 2), (2, 0), (0, 0)], false);
    assert_eq!(w.ready_count(), 3);
}

// TestDaemonSetUpdatesSaveOldHealthyPods (first part).
#[test]
fn save_old_healthy_pods() {
    let mut w = started(20);
    w.set_image("foo2/bar2");
    w.rolling(None, int(10));
    steps(&mut w, &[(0, 10), (10, 0), (0, 0)], false);
    assert_eq!(w.ready_count(), 10);
    for (i, max) in [0, 3, 9, 1, 5].into_iter().enumerate() {
        w.set_image(&format!("foo2/bar{}", i + 3));
        w.rolling(None, int(max));
        steps(&mut w, &[(0, 10), (10, 0), (0, 0)], false);
        assert_eq!(w.ready_count(), 10);
    }
    w.set_image("foo2/bar-last");
    w.rolling(None, int(11));
    steps(&mut w, &[(0, 11), (11, 0), (0, 0)], false);
    assert_eq!(w.ready_count(), 9);
}

fn node_names(n: usize) -> Vec<Node> {
    (0..n)
        .map(|i| new_node(&format!("node-{i}"), &[]))
        .collect()
}

// TestGetUnavailableNumbers.
#[test]
fn updated_desired_node_counts_table() {
    let surge = |v: IntOrString| (Some(v), int(0));
    let unavail = |v: IntOrString| (None, Some(v));
    let pct = |s: &str| IntOrString::String(s.into());
    type Case = (
        &'static str,
        usize,
        (Option<IntOrString>, Option<IntOrString>),
        Vec<usize>,
        Vec<usize>,
        (i32, i32, i32),
        usize,
    );
    let cases: Vec<Case> = vec![
        (
            "No nodes",
            0,
            unavail(IntOrString::Int(0)),
            vec![],
            vec![],
            (0, 0, 0),
            0,
        ),
        (
            "Two nodes with ready pods",
            2,
            unavail(IntOrString::Int(1)),
            vec![0, 1],
            vec![],
            (0, 1, 2),
            0,
        ),
        (
            "Two nodes, one node without pods",
            2,
            unavail(IntOrString::Int(0)),
            vec![0],
            vec![],
            (0, 1, 2),
            1,
        ),
        (
            "Two nodes, one node without pods, surge",
            2,
            surge(IntOrString::Int(0)),
            vec![0],
            vec![],
            (0, 1, 2),
            1,
        ),
        (
            "Two nodes with pods, MaxUnavailable in percents",
            2,
            unavail(pct("50%")),
            vec![0, 1],
            vec![],
            (0, 1, 2),
            0,
        ),
        (
            "Two nodes with pods, MaxUnavailable in percents, surge",
            2,
            surge(pct("50%")),
            vec![0, 1],
            vec![],
            (1, 0, 2),
            0,
        ),
        (
            "Two nodes with pods, MaxUnavailable is 100%, surge",
            2,
            surge(pct("100%")),
            vec![0, 1],
            vec![],
            (2, 0, 2),
            0,
        ),
        (
            "Two nodes with pods, MaxUnavailable in percents, pod terminating",
            3,
            unavail(pct("50%")),
            vec![0, 1],
            vec![1],
            (0, 2, 3),
            1,
        ),
    ];
    for (name, n, (s, u), with_pods, terminating, want, empty) in cases {
        let mut w = World::new(new_ds("x"), node_names(n));
        w.rolling(s, u);
        for i in with_pods {
            let node = format!("node-{i}");
            let p = w.add_bound(&node, DS_LABEL);
            let mut r = ready(&p, w.now);
            if terminating.contains(&i) {
                r.metadata.deletion_timestamp = Some(Time(w.now));
            }
            w.pods.retain(|x| x.metadata.name != p.metadata.name);
            w.pods.push(Arc::new(r));
        }
        let mut map = nodes_to_daemon_pods(&w.selected(), false);
        assert_eq!(
            updated_desired_node_counts(&w.ds, &w.nodes, &mut map),
            Ok(want),
            "{name}"
        );
        assert_eq!(
            map.values().filter(|v| v.is_empty()).count(),
            empty,
            "{name}"
        );
    }
}

fn surge_world() -> World {
    let mut w = World::with_nodes(new_ds("foo"), 5);
    w.rolling(int(1), int(0));
    w
}

/// A pod on `node`, created at `created` seconds, ready since `ready_at` (if any), of
/// the current template (`new`) or an old one.
fn timed_pod(
    w: &mut World,
    node: &str,
    new: bool,
    created: i64,
    ready_at: Option<i64>,
) -> Arc<Pod> {
    let hash = if new { w.hash() } else { "old".to_string() };
    let mut p = (*w.make_pod(node, &hash)).clone();
    if !new {
        p.metadata.labels.as_mut().unwrap().insert(
            crate::daemon::util::TEMPLATE_GENERATION_LABEL.into(),
            "0".into(),
        );
    }
    p.spec.as_mut().unwrap().node_name = Some(node.into());
    p.metadata.name = Some(format!(
        "{node}-{}-{created}",
        if new { "new" } else { "old" }
    ));
    p.metadata.creation_timestamp = Some(Time(Timestamp::from_second(created).unwrap()));
    if let Some(t) = ready_at {
        p = ready(&p, Timestamp::from_second(t).unwrap());
    }
    let p = Arc::new(p);
    w.pods.push(p.clone());
    p
}

fn manage_only(w: &mut World) -> (usize, usize, Vec<String>) {
    let hash = w.hash();
    let map = nodes_to_daemon_pods(&w.selected(), false);
    let plan = plan_manage(&w.ds, &w.nodes, &map, &hash, &mut w.backoff, w.clock, w.now);
    let mut deleted: Vec<String> = plan
        .delete
        .iter()
        .map(|p| p.metadata.name.clone().unwrap())
        .collect();
    deleted.sort();
    (plan.create_on.len(), plan.delete.len(), deleted)
}

// TestSurgePreservesReadyOldPods, TestSurgeDeletesUnreadyOldPods,
// TestSurgePreservesOldReadyWithUnsatisfiedMinReady, TestSurgeDeletesOldReadyWithUnsatisfiedMinReady.
#[test]
fn surge_sanitising_in_manage() {
    // new@100 (no Ready condition); old@50 Ready; old@60 Ready; node-2 one pod
    let mut w = surge_world();
    w.now = Timestamp::from_second(200).unwrap();
    timed_pod(&mut w, "node-1", true, 100, None);
    timed_pod(&mut w, "node-1", false, 50, Some(50));
    timed_pod(&mut w, "node-1", false, 60, Some(60));
    timed_pod(&mut w, "node-2", true, 10, Some(10));
    assert_eq!(
        manage_only(&mut w),
        (3, 1, vec!["node-1-old-60".to_string()])
    );

    let mut w = surge_world();
    w.now = Timestamp::from_second(200).unwrap();
    timed_pod(&mut w, "node-1", true, 100, None);
    timed_pod(&mut w, "node-1", false, 50, None);
    timed_pod(&mut w, "node-1", false, 60, Some(60));
    timed_pod(&mut w, "node-2", true, 10, Some(10));
    assert_eq!(
        manage_only(&mut w),
        (
            3,
            2,
            vec!["node-1-old-50".to_string(), "node-1-old-60".to_string()]
        )
    );

    for (now, want) in [
        (60, vec!["node-1-old-60".to_string()]),
        (
            70,
            vec!["node-1-old-50".to_string(), "node-1-old-60".to_string()],
        ),
    ] {
        let mut w = surge_world();
        w.ds.spec.min_ready_seconds = Some(15);
        w.now = Timestamp::from_second(now).unwrap();
        timed_pod(&mut w, "node-1", true, 100, Some(50));
        timed_pod(&mut w, "node-1", false, 50, Some(0));
        timed_pod(&mut w, "node-1", false, 60, Some(0));
        timed_pod(&mut w, "node-2", true, 10, Some(0));
        let n = want.len();
        assert_eq!(manage_only(&mut w), (3, n, want), "now={now}");
    }
}

// TestNumberReadyStatus, TestObservedGeneration-like counting, misscheduled pods.
#[test]
fn status_counts() {
    let mut w = World::with_nodes(new_ds("foo"), 2);
    assert_eq!(w.sync(), (2, 0, 0));
    let hash = w.hash();
    let map = nodes_to_daemon_pods(&w.selected(), false);
    let c = calculate_counts(&w.ds, &w.nodes, &map, &hash, w.now);
    assert_eq!(
        c,
        Counts {
            desired: 2,
            current: 2,
            ready: 0,
            updated: 2,
            available: 0,
            unavailable: 2,
            misscheduled: 0
        }
    );
    w.mark_ready();
    let map = nodes_to_daemon_pods(&w.selected(), false);
    let c = calculate_counts(&w.ds, &w.nodes, &map, &hash, w.now);
    assert_eq!((c.ready, c.available, c.unavailable), (2, 2, 0));
    // a NoSchedule taint added later: the pod stays, misscheduled
    w.nodes[1] = Arc::new(with_taints(
        (*w.nodes[1]).clone(),
        vec![taint("dedicated", "user1", "NoSchedule")],
    ));
    let map = nodes_to_daemon_pods(&w.selected(), false);
    let c = calculate_counts(&w.ds, &w.nodes, &map, &hash, w.now);
    assert_eq!((c.desired, c.current, c.misscheduled), (1, 1, 1));
    // a new template: the pods are no longer updated
    w.set_image("foo/other");
    let c = calculate_counts(&w.ds, &w.nodes, &map, &w.hash(), w.now);
    assert_eq!(c.updated, 0);
}

#[test]
fn pods_keyed_by_target_node() {
    let mut w = World::with_nodes(new_ds("foo"), 2);
    let hash = w.hash();
    let pinned = w.make_pod("node-1", &hash);
    let bound = w.add_bound("node-0", DS_LABEL);
    let mut failed_deleted = (*w.add_bound("node-0", DS_LABEL)).clone();
    failed_deleted.status = Some(PodStatus {
        phase: Some("Failed".into()),
        ..Default::default()
    });
    failed_deleted.metadata.deletion_timestamp = Some(Time(w.now));
    let mut nowhere = (*bound).clone();
    nowhere.spec = Some(PodSpec::default());
    let pods = vec![pinned, bound, Arc::new(failed_deleted), Arc::new(nowhere)];
    let map = nodes_to_daemon_pods(&pods, false);
    assert_eq!(map.get("node-0").map(Vec::len), Some(1));
    assert_eq!(map.get("node-1").map(Vec::len), Some(1));
    let map = nodes_to_daemon_pods(&pods, true);
    assert_eq!(map.get("node-0").map(Vec::len), Some(2));
}
