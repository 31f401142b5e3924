//! A small, honest scheduler: binds pending pods to nodes through the `binding`
//! subresource, as kube-scheduler does.
//!
//! It takes pods with no `spec.nodeName`, the configured `spec.schedulerName`, no
//! scheduling gates and no deletion timestamp. For each, it runs the filters of
//! [`crate::filters`] over the nodes (from a rotating start, stopping once enough
//! feasible nodes were found, as upstream's `percentageOfNodesToScore`), scores the
//! feasible ones by least allocated cpu and memory and picks the best (ties at
//! random). Decisions are made one at a time against an in-memory account of what each
//! node has given out, which counts a pod as soon as it is chosen ("assumed") so that
//! concurrent bindings never overcommit a node; the account follows the informer
//! afterwards. Pods that fit nowhere get `PodScheduled=False` with reason
//! `Unschedulable` and upstream's message, and a `FailedScheduling` warning event;
//! they are retried with a doubling back-off, and at once when a node appears or
//! changes in a way that may admit them, or a bound pod goes away.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use coxswain_runtime::cache::{Cache, Change};
use coxswain_runtime::controller::{Action, ReconcileResult};
use coxswain_runtime::events::{object_reference, EventRecorder, EventType};
use coxswain_runtime::workqueue::RateLimitedQueue;
use coxswain_runtime::ObjectKey;
use k8s_openapi::api::core::v1::{Node, Pod, PodCondition, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams, PostParams};
use rand::Rng;
use serde_json::json;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::config::SimConfig;
use crate::filters::{
    feasible_nodes_to_find, filter, fit_error_message, least_allocated_score, NodeView, Usage,
};
use crate::resources::PodRequests;

struct PodEntry {
    node: String,
    requests: PodRequests,
    /// seen bound by the informer (not only assumed by us)
    confirmed: bool,
}

#[derive(Default)]
struct State {
    nodes: HashMap<String, NodeView>,
    /// node names, sorted (the scan order)
    order: Vec<String>,
    next_start: usize,
    usage: HashMap<String, Usage>,
    /// pods counted on nodes, by uid
    pods: HashMap<String, PodEntry>,
    /// pods waiting for a change that may let them fit
    unschedulable: HashSet<ObjectKey>,
}

/// Why a pod was not placed.
struct Failure {
    reason: &'static str,
    message: String,
}

impl State {
    fn add_pod(&mut self, uid: &str, node: &str, requests: PodRequests, confirmed: bool) {
        if let Some(e) = self.pods.get_mut(uid) {
            if e.node == node {
                e.confirmed |= confirmed;
                return;
            }
        }
        self.remove_pod(uid);
        self.usage
            .entry(node.to_string())
            .or_default()
            .apply(&requests, 1);
        self.pods.insert(
            uid.to_string(),
            PodEntry {
                node: node.to_string(),
                requests,
                confirmed,
            },
        );
    }

    fn remove_pod(&mut self, uid: &str) -> bool {
        let Some(e) = self.pods.remove(uid) else {
            return false;
        };
        if let Some(u) = self.usage.get_mut(&e.node) {
            u.apply(&e.requests, -1);
        }
        true
    }

    fn set_node(&mut self, view: NodeView) -> bool {
        let name = view.name.clone();
        let wake = match self.nodes.insert(name.clone(), view) {
            None => {
                let at = self.order.binary_search(&name).unwrap_or_else(|i| i);
                self.order.insert(at, name.clone());
                true
            }
            Some(old) => self
                .nodes
                .get(&name)
                .is_some_and(|n| n.may_admit_more_than(&old)),
        };
        wake
    }

    fn remove_node(&mut self, name: &str) {
        if self.nodes.remove(name).is_some() {
            self.order.retain(|n| n != name);
        }
    }

    /// Pick a node for `pod` and count it there; or say why none fits.
    fn schedule(&mut self, pod: &Pod, uid: &str, pct: u32) -> Result<String, Failure> {
        let default_spec = PodSpec::default();
        let spec = pod.spec.as_ref().unwrap_or(&default_spec);
        let req = PodRequests::of(spec);
        let n = self.order.len();
        if n == 0 {
            return Err(Failure {
                reason: "SchedulerError",
                message: "no nodes available to schedule pods".into(),
            });
        }
        let want = feasible_nodes_to_find(n, pct);
        let start = self.next_start % n;
        let empty = Usage::default();
        let mut reasons: BTreeMap<String, usize> = BTreeMap::new();
        let mut best: Option<(i64, &str)> = None;
        let (mut feasible, mut ties, mut visited) = (0usize, 0u32, 0usize);
        let mut rng = rand::rng();
        for i in 0..n {
            let name = &self.order[(start + i) % n];
            visited += 1;
            let Some(node) = self.nodes.get(name) else {
                continue;
            };
            let usage = self.usage.get(name).unwrap_or(&empty);
            match filter(spec, &req, node, usage) {
                Ok(()) => {
                    feasible += 1;
                    let score = least_allocated_score(&req, node, usage);
                    match best {
                        Some((b, _)) if score < b => {}
                        Some((b, _)) if score == b => {
                            // reservoir sampling among equal scores, as upstream selectHost
                            ties += 1;
                            if rng.random_range(0..ties) == 0 {
                                best = Some((score, name));
                            }
                        }
                        _ => {
                            ties = 1;
                            best = Some((score, name));
                        }
                    }
                    if feasible >= want {
                        break;
                    }
                }
                Err(rs) => {
                    for r in rs {
                        *reasons.entry(r).or_default() += 1;
                    }
                }
            }
        }
        let chosen = best.map(|(_, name)| name.to_string());
        self.next_start = (start + visited) % n;
        match chosen {
            Some(node) => {
                self.add_pod(uid, &node, req, false);
                Ok(node)
            }
            None => Err(Failure {
                reason: "Unschedulable",
                message: fit_error_message(n, &reasons),
            }),
        }
    }
}

/// Whether the informer shows `pod` holding resources on a node.
fn holds_node(pod: &Pod) -> Option<&str> {
    let node = pod
        .spec
        .as_ref()?
        .node_name
        .as_deref()
        .filter(|n| !n.is_empty())?;
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    (!matches!(phase, Some("Succeeded") | Some("Failed"))).then_some(node)
}

/// The scheduler.
pub struct Scheduler {
    cfg: Arc<SimConfig>,
    cache: Arc<Cache>,
    client: kube::Client,
    recorder: EventRecorder,
    state: Mutex<State>,
    wake: Notify,
}

impl Scheduler {
    /// A scheduler over `cache`, recording events with `recorder`; its account of
    /// nodes and pods follows the cache's informers from now on.
    pub fn new(
        cfg: Arc<SimConfig>,
        cache: Arc<Cache>,
        client: kube::Client,
        recorder: EventRecorder,
    ) -> Arc<Self> {
        let s = Arc::new(Scheduler {
            cfg,
            cache: cache.clone(),
            client,
            recorder,
            state: Mutex::new(State::default()),
            wake: Notify::new(),
        });
        let me = Arc::downgrade(&s);
        cache
            .informer::<Node>()
            .add_handler(move |c: &Change<Node>| {
                let Some(s) = me.upgrade() else { return };
                let wake = {
                    let mut st = s.lock();
                    match c {
                        Change::Added(n) | Change::Updated { new: n, .. } => {
                            st.set_node(NodeView::of(n))
                        }
                        Change::Deleted(n) => {
                            st.remove_node(n.metadata.name.as_deref().unwrap_or(""));
                            false
                        }
                    }
                };
                if wake {
                    s.wake.notify_one();
                }
            });
        let me = Arc::downgrade(&s);
        cache.informer::<Pod>().add_handler(move |c: &Change<Pod>| {
            let Some(s) = me.upgrade() else { return };
            let (pod, gone) = match c {
                Change::Added(p) | Change::Updated { new: p, .. } => (p, false),
                Change::Deleted(p) => (p, true),
            };
            let uid = pod.metadata.uid.as_deref().unwrap_or("");
            let freed = {
                let mut st = s.lock();
                match (gone, holds_node(pod)) {
                    (false, Some(node)) => {
                        let unchanged = st
                            .pods
                            .get(uid)
                            .is_some_and(|e| e.node == node && e.confirmed);
                        if !unchanged {
                            let requests =
                                pod.spec.as_ref().map(PodRequests::of).unwrap_or_default();
                            st.add_pod(uid, node, requests, true);
                        }
                        false
                    }
                    // terminal or deleted: its resources are free
                    (true, _) => st.remove_pod(uid),
                    (false, None)
                        if pod
                            .spec
                            .as_ref()
                            .and_then(|s| s.node_name.as_deref())
                            .is_some_and(|n| !n.is_empty()) =>
                    {
                        st.remove_pod(uid)
                    }
                    // still pending: an assumed binding stays counted
                    (false, None) => false,
                }
            };
            if freed {
                s.wake.notify_one();
            }
        });
        s
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether this scheduler should place `pod` now.
    fn wants(&self, pod: &Pod) -> bool {
        let Some(spec) = pod.spec.as_ref() else {
            return false;
        };
        let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
        spec.node_name.as_deref().is_none_or(str::is_empty)
            && spec
                .scheduler_name
                .as_deref()
                .unwrap_or("default-scheduler")
                == self.cfg.scheduler_name
            && spec.scheduling_gates.as_ref().is_none_or(|g| g.is_empty())
            && pod.metadata.deletion_timestamp.is_none()
            && !matches!(phase, Some("Succeeded") | Some("Failed"))
    }

    /// Whether a change of `pod` may need the scheduler (the controller's event filter).
    pub fn interested(cfg: &SimConfig, pod: &Pod) -> bool {
        pod.spec.as_ref().is_some_and(|s| {
            s.node_name.as_deref().is_none_or(str::is_empty)
                && s.scheduler_name.as_deref().unwrap_or("default-scheduler") == cfg.scheduler_name
        })
    }

    /// Move every waiting pod to `queue` whenever something may have made room, until
    /// `cancel` fires.
    pub async fn requeue_on_changes(
        self: Arc<Self>,
        queue: RateLimitedQueue<ObjectKey>,
        cancel: CancellationToken,
    ) {
        loop {
            tokio::select! {
                _ = self.wake.notified() => {}
                _ = cancel.cancelled() => {
                    tracing::info!("sim scheduler requeuer stops: shutdown requested");
                    return;
                }
            }
            // gather a burst of changes into one pass
            tokio::time::sleep(Duration::from_millis(50)).await;
            let waiting: Vec<ObjectKey> = self.lock().unschedulable.drain().collect();
            for k in waiting {
                queue.add(k);
            }
        }
    }

    /// Schedule one pod.
    pub async fn reconcile(&self, key: ObjectKey) -> ReconcileResult {
        let pod = match self.cache.get::<Pod>(&key).await {
            Some(p) if self.wants(&p) => p,
            _ => {
                self.lock().unschedulable.remove(&key);
                return Ok(Action::Done);
            }
        };
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        let decision = {
            let mut st = self.lock();
            if st.pods.contains_key(&uid) {
                // being bound (or bound, and the cache has not caught up)
                return Ok(Action::Done);
            }
            st.schedule(&pod, &uid, self.cfg.percentage_of_nodes_to_score)
        };
        match decision {
            Ok(node) => self.bind(&pod, &key, &uid, &node).await,
            Err(f) => {
                self.lock().unschedulable.insert(key.clone());
                self.record_failure(&pod, &key, &f).await?;
                Ok(Action::Requeue)
            }
        }
    }

    fn forget_assumed(&self, uid: &str) {
        let freed = {
            let mut st = self.lock();
            match st.pods.get(uid) {
                Some(e) if !e.confirmed => st.remove_pod(uid),
                _ => false,
            }
        };
        if freed {
            self.wake.notify_one();
        }
    }

    async fn bind(&self, pod: &Pod, key: &ObjectKey, uid: &str, node: &str) -> ReconcileResult {
        let ns = key.namespace().unwrap_or("default");
        let api: Api<Pod> = Api::namespaced(self.client.clone(), ns);
        let binding = json!({
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": key.name(), "namespace": ns, "uid": uid},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        });
        match api
            .create_subresource::<_, serde_json::Value>(
                "binding",
                key.name(),
                &PostParams::default(),
                &binding,
            )
            .await
        {
            Ok(_) => {
                self.lock().unschedulable.remove(key);
                if self.cfg.scheduled_events {
                    self.recorder.event(
                        &object_reference(pod),
                        None,
                        EventType::Normal,
                        "Scheduled",
                        "Binding",
                        &format!("Successfully assigned {ns}/{} to {node}", key.name()),
                    );
                }
                Ok(Action::Done)
            }
            Err(kube::Error::Api(s)) if s.code == 409 || s.code == 404 => {
                // bound by someone else, being deleted, or gone: the informer will say
                tracing::debug!(pod = %key, code = s.code, message = %s.message, "binding refused");
                self.forget_assumed(uid);
                Ok(Action::Done)
            }
            Err(e) => {
                self.forget_assumed(uid);
                self.recorder.event(
                    &object_reference(pod),
                    None,
                    EventType::Warning,
                    "FailedScheduling",
                    "Scheduling",
                    &format!("Binding rejected: {e}"),
                );
                Err(e.into())
            }
        }
    }

    /// Set `PodScheduled=False` (when it says something new) and emit the event.
    async fn record_failure(
        &self,
        pod: &Pod,
        key: &ObjectKey,
        f: &Failure,
    ) -> Result<(), kube::Error> {
        self.recorder.event(
            &object_reference(pod),
            None,
            EventType::Warning,
            "FailedScheduling",
            "Scheduling",
            &f.message,
        );
        let old = pod
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .and_then(|cs| cs.iter().find(|c| c.type_ == "PodScheduled"));
        let same = old.is_some_and(|c| {
            c.status == "False"
                && c.reason.as_deref() == Some(f.reason)
                && c.message.as_deref() == Some(f.message.as_str())
        });
        if same {
            return Ok(());
        }
        let transition = match old {
            Some(c) if c.status == "False" => c.last_transition_time.clone(),
            _ => None,
        }
        .unwrap_or_else(|| Time(Timestamp::now()));
        let cond = PodCondition {
            type_: "PodScheduled".into(),
            status: "False".into(),
            reason: Some(f.reason.into()),
            message: Some(f.message.clone()),
            last_transition_time: Some(transition),
            observed_generation: pod.metadata.generation,
            ..Default::default()
        };
        let api: Api<Pod> =
            Api::namespaced(self.client.clone(), key.namespace().unwrap_or("default"));
        let patch = json!({"status": {"conditions": [cond]}});
        match api
            .patch_status(
                key.name(),
                // the scheduler's write, on the kubelet's client
                &PatchParams {
                    field_manager: Some("kube-scheduler".into()),
                    ..PatchParams::default()
                },
                &Patch::Strategic(&patch),
            )
            .await
        {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Pods counted on `node` (assumed or bound), for tests and diagnostics.
    pub fn pods_on(&self, node: &str) -> usize {
        self.lock().pods.values().filter(|e| e.node == node).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::Resources;
    use k8s_openapi::api::core::v1::{Container, PodSpec, ResourceRequirements};
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

    fn node(name: &str) -> NodeView {
        NodeView {
            name: name.into(),
            allocatable: Resources(BTreeMap::from([
                ("cpu".to_string(), 32_000),
                ("memory".to_string(), 256 * (1i128 << 30) * 1000),
                ("pods".to_string(), 110_000),
            ])),
            ..Default::default()
        }
    }

    fn pod(cpu: &str) -> Pod {
        Pod {
            spec: Some(PodSpec {
                containers: vec![Container {
                    name: "c".into(),
                    resources: Some(ResourceRequirements {
                        requests: Some(BTreeMap::from([("cpu".to_string(), Quantity(cpu.into()))])),
                        ..Default::default()
                    }),
                    ..Default::default()
                }],
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn least_allocated_spreads_and_assumed_pods_count() {
        let mut st = State::default();
        for n in ["a", "b", "c"] {
            assert!(st.set_node(node(n)), "a new node wakes waiting pods");
        }
        let mut placed = BTreeMap::new();
        for i in 0..6 {
            let node = st
                .schedule(&pod("8"), &format!("u{i}"), 0)
                .unwrap_or_else(|f| panic!("{}", f.message));
            *placed.entry(node).or_insert(0) += 1;
        }
        assert_eq!(
            placed.values().copied().collect::<Vec<_>>(),
            vec![2, 2, 2],
            "{placed:?}"
        );
        // 16 cpu left on each node: a 20-cpu pod fits nowhere
        let f = st.schedule(&pod("20"), "big", 0).expect_err("no fit");
        assert_eq!(f.reason, "Unschedulable");
        assert_eq!(f.message, "0/3 nodes are available: 3 Insufficient cpu.");
        // a bound pod going away frees its share
        assert!(st.remove_pod("u0"));
        assert!(!st.remove_pod("u0"));
        assert_eq!(st.usage.values().map(|u| u.pods).sum::<i128>(), 5);
    }

    #[test]
    fn no_nodes_is_a_scheduler_error_and_node_updates_wake_only_when_useful() {
        let mut st = State::default();
        let f = st.schedule(&pod("1"), "u", 0).expect_err("no nodes");
        assert_eq!(
            (f.reason, f.message.as_str()),
            ("SchedulerError", "no nodes available to schedule pods")
        );
        st.set_node(node("a"));
        assert!(!st.set_node(node("a")), "an unchanged node wakes nobody");
        let mut labelled = node("a");
        labelled.labels.insert("disk".into(), "ssd".into());
        assert!(st.set_node(labelled));
        st.remove_node("a");
        assert!(st.order.is_empty());
    }
}
