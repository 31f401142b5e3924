//! A small, honest scheduler: binds pending pods to nodes through the `binding`
//! subresource, as kube-scheduler does.
//!
//! It takes pods with no `spec.nodeName`, the configured `spec.schedulerName`, no
//! scheduling gates and no deletion timestamp. For each, it runs the filters of
//! [`crate::filters`] over the nodes (from a rotating start, stopping once enough
//! feasible nodes were found, as upstream's `percentageOfNodesToScore`), scores the
//! feasible ones as the default profile does and picks the best (ties at random).
//! The score is the weighted sum of the plugins' normalised scores: `TaintToleration`
//! (intolerable `PreferNoSchedule` taints, ×3), `NodeAffinity` (preferred terms, ×2),
//! `PodTopologySpread` (the pod's `ScheduleAnyway` constraints or the system defaults
//! over its Services and controller, ×2, see [`crate::spread`]), `NodeResourcesFit`
//! (least allocated cpu and memory, ×1) and `NodeResourcesBalancedAllocation` (×1,
//! not for best-effort pods); inter-pod affinity and image locality are not
//! simulated (the nodes report no images, so upstream scores them 0 alike).
//!
//! A pod whose PersistentVolumeClaims are missing or not bound is not scheduled
//! (upstream's `VolumeBinding` PreFilter; the simulator provisions no volumes): it gets
//! `Unschedulable` with upstream's message and is retried when a claim changes.
//!
//! Decisions are made one at a time against an in-memory account of what each node
//! has given out, which counts a pod as soon as it is chosen ("assumed") so that
//! concurrent bindings never overcommit a node; the account follows the informer
//! afterwards. Pods that fit nowhere get `PodScheduled=False` with reason
//! `Unschedulable` and upstream's message, and a `FailedScheduling` warning event;
//! they are retried with a doubling back-off, and at once when a node appears or
//! changes in a way that may admit them, or a bound pod goes away.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use coxswain_runtime::cache::{Cache, CachedKind, Change};
use coxswain_runtime::controller::{Action, ReconcileResult};
use coxswain_runtime::events::{object_reference, EventRecorder, EventType};
use coxswain_runtime::workqueue::RateLimitedQueue;
use coxswain_runtime::ObjectKey;
use k8s_openapi::api::apps::v1::{ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::{
    Node, PersistentVolumeClaim, Pod, PodCondition, PodSpec, ReplicationController, Service,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams, PostParams};
use rand::Rng;
use serde_json::json;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::config::SimConfig;
use crate::filters::{
    balanced_allocation_score, default_normalize, feasible_nodes_to_find, filter,
    fit_error_message, has_preferred_affinity, intolerable_prefer_no_schedule, is_best_effort,
    least_allocated_score, preferred_affinity_sum, prefilter_error_message, unbound_claims,
    NodeView, Usage,
};
use crate::resources::PodRequests;
use crate::spread::{normalize, raw_scores, spread_of, GroupId, LabelGroups, Owners, Spread};
use crate::table::NodeTable;

struct PodEntry {
    /// its node's id in the table
    node: usize,
    requests: PodRequests,
    /// seen bound by the informer (not only assumed by us)
    confirmed: bool,
    /// its namespace-and-labels group (for topology spreading)
    group: GroupId,
    /// counted in its group on `node` (not terminating)
    counted: bool,
}

/// What spreading needs of a pod: where its labels put it, and whether it is going.
struct Member<'a> {
    namespace: &'a str,
    labels: &'a BTreeMap<String, String>,
    terminating: bool,
}

impl<'a> Member<'a> {
    fn of(pod: &'a Pod, empty: &'a BTreeMap<String, String>) -> Member<'a> {
        Member {
            namespace: pod.metadata.namespace.as_deref().unwrap_or(""),
            labels: pod.metadata.labels.as_ref().unwrap_or(empty),
            terminating: pod.metadata.deletion_timestamp.is_some(),
        }
    }
}

#[derive(Default)]
struct State {
    /// nodes and what they have given out, by id
    table: NodeTable,
    /// ids of the existing nodes, sorted by name (the scan order)
    order: Vec<usize>,
    next_start: usize,
    /// pods counted on nodes, by uid
    pods: HashMap<String, PodEntry>,
    /// the same pods by namespace and labels, for topology spreading
    groups: LabelGroups,
    /// pods waiting for a change that may let them fit
    unschedulable: HashSet<ObjectKey>,
}

/// Why a pod was not placed.
struct Failure {
    reason: &'static str,
    message: String,
}

/// Score plugin weights of the default profile.
const WEIGHT_TAINT_TOLERATION: i64 = 3;
const WEIGHT_NODE_AFFINITY: i64 = 2;
const WEIGHT_POD_TOPOLOGY_SPREAD: i64 = 2;
const WEIGHT_FIT: i64 = 1;
const WEIGHT_BALANCED_ALLOCATION: i64 = 1;

impl State {
    fn add_pod(
        &mut self,
        uid: &str,
        node: &str,
        requests: PodRequests,
        confirmed: bool,
        m: &Member<'_>,
    ) {
        let node = self.table.id(node);
        if let Some(e) = self.pods.get_mut(uid) {
            if e.node == node {
                e.confirmed |= confirmed;
                self.refresh_member(uid, m);
                return;
            }
        }
        self.remove_pod(uid);
        self.table.slot_mut(node).usage.apply(&requests, 1);
        let group = self.groups.join(m.namespace, m.labels);
        if !m.terminating {
            self.groups.count(group, node, true);
        }
        self.pods.insert(
            uid.to_string(),
            PodEntry {
                node,
                requests,
                confirmed,
                group,
                counted: !m.terminating,
            },
        );
    }

    /// Whether `uid` is counted on the node named `node` (and seen bound).
    fn bound_on(&self, uid: &str, node: &str) -> bool {
        self.pods
            .get(uid)
            .is_some_and(|e| e.confirmed && self.table.slot(e.node).name == node)
    }

    /// Follow a counted pod's labels and deletion (it stays on its node).
    fn refresh_member(&mut self, uid: &str, m: &Member<'_>) {
        let Some(e) = self.pods.get_mut(uid) else {
            return;
        };
        let same_group = self.groups.is(e.group, m.namespace, m.labels);
        if same_group && e.counted != m.terminating {
            return;
        }
        if e.counted {
            self.groups.count(e.group, e.node, false);
        }
        if !same_group {
            self.groups.leave(e.group);
            e.group = self.groups.join(m.namespace, m.labels);
        }
        e.counted = !m.terminating;
        if e.counted {
            self.groups.count(e.group, e.node, true);
        }
    }

    fn remove_pod(&mut self, uid: &str) -> bool {
        let Some(e) = self.pods.remove(uid) else {
            return false;
        };
        self.table.slot_mut(e.node).usage.apply(&e.requests, -1);
        if e.counted {
            self.groups.count(e.group, e.node, false);
        }
        self.groups.leave(e.group);
        true
    }

    fn set_node(&mut self, view: NodeView) -> bool {
        let (id, old) = self.table.set_view(view);
        match old {
            None => {
                let table = &self.table;
                let name = &table.slot(id).name;
                let at = self
                    .order
                    .binary_search_by(|o| table.slot(*o).name.cmp(name))
                    .unwrap_or_else(|i| i);
                self.order.insert(at, id);
                true
            }
            Some(old) => self
                .table
                .view(id)
                .is_some_and(|n| n.may_admit_more_than(&old)),
        }
    }

    fn remove_node(&mut self, name: &str) {
        if let Some(id) = self.table.clear_view(name) {
            self.order.retain(|o| *o != id);
        }
    }

    /// Pick a node for `pod` and count it there; or say why none fits. `spread` holds
    /// the pod's topology spread constraints ([`spread_of`]).
    fn schedule(
        &mut self,
        pod: &Pod,
        uid: &str,
        pct: u32,
        spread: &Spread,
    ) -> Result<String, Failure> {
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
        let mut reasons: BTreeMap<String, usize> = BTreeMap::new();
        let mut feasible: Vec<usize> = Vec::new();
        let mut visited = 0usize;
        for i in 0..n {
            let id = self.order[(start + i) % n];
            visited += 1;
            let slot = self.table.slot(id);
            let Some(node) = slot.view.as_ref() else {
                continue;
            };
            match filter(spec, &req, node, &slot.usage) {
                Ok(()) => {
                    feasible.push(id);
                    if feasible.len() >= want {
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
        let chosen = match feasible.len() {
            0 => None,
            // one feasible node: no need to score (upstream takes it at once)
            1 => Some(self.table.slot(feasible[0]).name.clone()),
            _ => Some(self.best(pod, spec, &req, spread, &feasible)),
        };
        self.next_start = (start + visited) % n;
        match chosen {
            Some(node) => {
                let empty = BTreeMap::new();
                self.add_pod(uid, &node, req, false, &Member::of(pod, &empty));
                Ok(node)
            }
            None => Err(Failure {
                reason: "Unschedulable",
                message: fit_error_message(n, &reasons),
            }),
        }
    }

    /// The feasible node with the highest weighted sum of the default profile's scores
    /// (ties at random, as upstream).
    fn best(
        &self,
        pod: &Pod,
        spec: &PodSpec,
        req: &PodRequests,
        spread: &Spread,
        feasible: &[usize],
    ) -> String {
        let nodes: Vec<(&NodeView, &Usage)> = feasible
            .iter()
            .filter_map(|id| {
                let slot = self.table.slot(*id);
                Some((slot.view.as_ref()?, &slot.usage))
            })
            .collect();
        let tolerations = spec.tolerations.as_deref().unwrap_or(&[]);
        let mut taints: Vec<i64> = nodes
            .iter()
            .map(|(n, _)| intolerable_prefer_no_schedule(&n.taints, tolerations))
            .collect();
        default_normalize(&mut taints, true);
        let affinity = has_preferred_affinity(spec).then(|| {
            let mut v: Vec<i64> = nodes
                .iter()
                .map(|(n, _)| preferred_affinity_sum(spec, n))
                .collect();
            default_normalize(&mut v, false);
            v
        });
        let ns = pod.metadata.namespace.as_deref().unwrap_or("");
        let spreading = raw_scores(spread, spec, ns, feasible, &self.table, &self.groups)
            .map(|raw| normalize(&raw));
        let balanced = !is_best_effort(req);
        let mut rng = rand::rng();
        let mut best: Option<(i64, usize)> = None;
        let mut ties = 0u32;
        for (i, (node, usage)) in nodes.iter().enumerate() {
            let mut total = WEIGHT_TAINT_TOLERATION * taints[i]
                + WEIGHT_FIT * least_allocated_score(req, node, usage);
            if let Some(a) = &affinity {
                total += WEIGHT_NODE_AFFINITY * a[i];
            }
            if let Some(s) = &spreading {
                total += WEIGHT_POD_TOPOLOGY_SPREAD * s[i];
            }
            if balanced {
                total += WEIGHT_BALANCED_ALLOCATION * balanced_allocation_score(req, node, usage);
            }
            match best {
                Some((b, _)) if total < b => {}
                Some((b, _)) if total == b => {
                    // uniform among the best, as upstream's random tie-break
                    ties += 1;
                    if rng.random_range(0..ties) == 0 {
                        best = Some((total, i));
                    }
                }
                _ => {
                    ties = 1;
                    best = Some((total, i));
                }
            }
        }
        let i = best.map_or(0, |(_, i)| i);
        nodes
            .get(i)
            .map(|(n, _)| n.name.clone())
            .unwrap_or_default()
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
    /// Services' and controllers' selectors, for the default spreading constraints
    owners: Arc<Mutex<Owners>>,
    wake: Notify,
}

fn lock_owners(o: &Mutex<Owners>) -> std::sync::MutexGuard<'_, Owners> {
    o.lock().unwrap_or_else(|e| e.into_inner())
}

/// Keep `owners` following `K`'s informer through `note`.
fn follow<K: CachedKind>(
    cache: &Cache,
    owners: &Arc<Mutex<Owners>>,
    note: fn(&mut Owners, &K, bool),
) where
    K::Scope: 'static,
{
    let o = Arc::downgrade(owners);
    cache.informer::<K>().add_handler(move |c: &Change<K>| {
        let Some(o) = o.upgrade() else { return };
        let mut o = lock_owners(&o);
        match c {
            Change::Added(x) | Change::Updated { new: x, .. } => note(&mut o, x, false),
            Change::Deleted(x) => note(&mut o, x, true),
        }
    });
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
            owners: Arc::new(Mutex::new(Owners::default())),
            wake: Notify::new(),
        });
        follow::<Service>(&cache, &s.owners, Owners::service_changed);
        follow::<ReplicaSet>(&cache, &s.owners, Owners::replica_set_changed);
        follow::<StatefulSet>(&cache, &s.owners, Owners::stateful_set_changed);
        follow::<ReplicationController>(&cache, &s.owners, Owners::replication_controller_changed);
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
        // a claim created or bound may let a waiting pod in
        let me = Arc::downgrade(&s);
        cache.informer::<PersistentVolumeClaim>().add_handler(
            move |_: &Change<PersistentVolumeClaim>| {
                if let Some(s) = me.upgrade() {
                    s.wake.notify_one();
                }
            },
        );
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
                        let empty = BTreeMap::new();
                        let member = Member::of(pod, &empty);
                        let unchanged = st.bound_on(uid, node);
                        if unchanged {
                            st.refresh_member(uid, &member);
                        } else {
                            let requests =
                                pod.spec.as_ref().map(PodRequests::of).unwrap_or_default();
                            st.add_pod(uid, node, requests, true, &member);
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
        if let Some(reason) = self.unbound_claims(&pod, &key).await {
            let nodes = self.lock().order.len();
            let f = Failure {
                reason: "Unschedulable",
                message: prefilter_error_message(nodes, &reason),
            };
            self.lock().unschedulable.insert(key.clone());
            self.record_failure(&pod, &key, &f).await?;
            return Ok(Action::Requeue);
        }
        let spread = spread_of(&pod, &lock_owners(&self.owners));
        let decision = {
            let mut st = self.lock();
            if st.pods.contains_key(&uid) {
                // being bound (or bound, and the cache has not caught up)
                return Ok(Action::Done);
            }
            st.schedule(&pod, &uid, self.cfg.percentage_of_nodes_to_score, &spread)
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

    /// Why the pod's PersistentVolumeClaims keep it off every node, if they do (see
    /// [`unbound_claims`]).
    async fn unbound_claims(&self, pod: &Pod, key: &ObjectKey) -> Option<String> {
        let spec = pod.spec.as_ref()?;
        let mut claims: HashMap<String, Arc<PersistentVolumeClaim>> = HashMap::new();
        for v in spec.volumes.iter().flatten() {
            if let Some(source) = &v.persistent_volume_claim {
                let ck = ObjectKey::from_parts(key.namespace(), &source.claim_name);
                if let Some(c) = self.cache.get::<PersistentVolumeClaim>(&ck).await {
                    claims.insert(source.claim_name.clone(), c);
                }
            }
        }
        unbound_claims(spec, |name| claims.get(name).cloned())
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
        let st = self.lock();
        let Some(id) = st.table.find(node) else {
            return 0;
        };
        st.pods.values().filter(|e| e.node == id).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::Resources;
    use crate::spread::{LABEL_HOSTNAME, LABEL_ZONE};
    use k8s_openapi::api::core::v1::{Container, PodSpec, ResourceRequirements, Taint, Toleration};
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

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
                .schedule(&pod("8"), &format!("u{i}"), 0, &Spread::default())
                .unwrap_or_else(|f| panic!("{}", f.message));
            *placed.entry(node).or_insert(0) += 1;
        }
        assert_eq!(
            placed.values().copied().collect::<Vec<_>>(),
            vec![2, 2, 2],
            "{placed:?}"
        );
        // 16 cpu left on each node: a 20-cpu pod fits nowhere
        let f = st
            .schedule(&pod("20"), "big", 0, &Spread::default())
            .expect_err("no fit");
        assert_eq!(f.reason, "Unschedulable");
        assert_eq!(f.message, "0/3 nodes are available: 3 Insufficient cpu.");
        // a bound pod going away frees its share
        assert!(st.remove_pod("u0"));
        assert!(!st.remove_pod("u0"));
        let total: i128 = (0..st.table.len())
            .map(|id| st.table.slot(id).usage.pods)
            .sum();
        assert_eq!(total, 5);
    }

    #[test]
    fn no_nodes_is_a_scheduler_error_and_node_updates_wake_only_when_useful() {
        let mut st = State::default();
        let f = st
            .schedule(&pod("1"), "u", 0, &Spread::default())
            .expect_err("no nodes");
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

    fn sim_node(name: &str, zone: Option<&str>) -> NodeView {
        let mut n = node(name);
        n.labels.insert(LABEL_HOSTNAME.into(), name.into());
        if let Some(z) = zone {
            n.labels.insert(LABEL_ZONE.into(), z.into());
        }
        n
    }

    fn three_nodes(zones: bool) -> State {
        let mut st = State::default();
        for (n, z) in [("a", "zone-a"), ("b", "zone-b"), ("c", "zone-c")] {
            st.set_node(sim_node(n, zones.then_some(z)));
        }
        st
    }

    /// A request-less pod of ReplicaSet `web-h` (when `owned`), and the pod's spread
    /// constraints with that ReplicaSet in the cache.
    fn replica(owned: bool) -> (Pod, Spread) {
        let mut p: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "web-h-x", "namespace": "default",
                "labels": {"app": "web", "pod-template-hash": "h"}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]},
        }))
        .expect("pod");
        if owned {
            p.metadata.owner_references = Some(vec![OwnerReference {
                api_version: "apps/v1".into(),
                kind: "ReplicaSet".into(),
                name: "web-h".into(),
                uid: "rs".into(),
                controller: Some(true),
                ..Default::default()
            }]);
        }
        let rs: ReplicaSet = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "web-h", "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"app": "web", "pod-template-hash": "h"}}},
        }))
        .expect("rs");
        let mut owners = Owners::default();
        owners.replica_set_changed(&rs, false);
        let spread = spread_of(&p, &owners);
        (p, spread)
    }

    /// Pods per node (sorted) after placing `n` replicas on a fresh `st`.
    fn place(mut st: State, n: usize, owned: bool) -> Vec<usize> {
        let (p, spread) = replica(owned);
        let mut placed: BTreeMap<String, usize> = BTreeMap::new();
        for i in 0..n {
            let node = st
                .schedule(&p, &format!("u{i}"), 0, &spread)
                .unwrap_or_else(|f| panic!("{}", f.message));
            *placed.entry(node).or_insert(0) += 1;
        }
        let mut counts: Vec<usize> = placed.into_values().collect();
        counts.resize(3, 0);
        counts.sort_unstable();
        counts
    }

    #[test]
    fn replicas_without_requests_spread_over_nodes_and_zones() {
        // least-allocated ties at 99 on these nodes: only topology spreading separates them
        for _ in 0..50 {
            assert_eq!(place(three_nodes(true), 3, true), vec![1, 1, 1]);
            assert_eq!(place(three_nodes(true), 5, true), vec![1, 2, 2]);
            assert_eq!(place(three_nodes(false), 3, true), vec![1, 1, 1]);
            assert_eq!(place(three_nodes(false), 6, true), vec![2, 2, 2]);
        }
    }

    #[test]
    fn bare_pods_are_placed_at_random_among_equal_nodes() {
        let outcomes: HashSet<Vec<usize>> = (0..200)
            .map(|_| place(three_nodes(true), 3, false))
            .collect();
        // 1/1/1 (2/9 of the time), 1/2 (6/9) and 3 on one node (1/9) all occur
        assert_eq!(outcomes.len(), 3, "{outcomes:?}");
    }

    #[test]
    fn terminating_siblings_do_not_count_for_spreading() {
        let mut st = three_nodes(true);
        let (p, spread) = replica(true);
        let mut on = BTreeMap::new();
        for i in 0..3 {
            let node = st
                .schedule(&p, &format!("u{i}"), 0, &spread)
                .unwrap_or_else(|f| panic!("{}", f.message));
            on.insert(node, format!("u{i}"));
        }
        // the replica on b is being deleted: the next one replaces it on b
        let empty = BTreeMap::new();
        let mut going = p.clone();
        going.metadata.deletion_timestamp = Some(Time(Timestamp::now()));
        st.refresh_member(&on["b"], &Member::of(&going, &empty));
        for i in 3..13 {
            let uid = format!("t{i}");
            assert_eq!(st.schedule(&p, &uid, 0, &spread).ok().as_deref(), Some("b"));
            st.remove_pod(&uid);
        }
        // it still holds its resources until it is gone
        let b = st.table.find("b").expect("b");
        assert_eq!(st.table.slot(b).usage.pods, 1);
        // and its labels moving it out of the ReplicaSet count as well
        let mut relabelled = p.clone();
        relabelled.metadata.labels = Some(BTreeMap::from([("app".into(), "debug".into())]));
        st.refresh_member(&on["b"], &Member::of(&p, &empty));
        st.refresh_member(&on["c"], &Member::of(&relabelled, &empty));
        assert_eq!(
            st.schedule(&p, "next", 0, &spread).ok().as_deref(),
            Some("c")
        );
        assert_eq!(st.groups.len(), 2);
    }

    #[test]
    fn prefer_no_schedule_taints_and_preferred_affinity_steer_bare_pods() {
        let mut st = three_nodes(true);
        let mut a = sim_node("a", Some("zone-a"));
        a.taints = vec![Taint {
            key: "spot".into(),
            effect: "PreferNoSchedule".into(),
            ..Default::default()
        }];
        st.set_node(a);
        let (mut p, spread) = replica(false);
        for i in 0..30 {
            let node = st.schedule(&p, &format!("u{i}"), 0, &spread).ok();
            assert_ne!(
                node.as_deref(),
                Some("a"),
                "an intolerable soft taint repels"
            );
        }
        // a toleration of the soft taint makes a as good as the others
        let spec = p.spec.as_mut().expect("spec");
        spec.tolerations = Some(vec![Toleration {
            key: Some("spot".into()),
            operator: Some("Exists".into()),
            ..Default::default()
        }]);
        let to_a = (0..60)
            .filter(|i| {
                st.schedule(&p, &format!("t{i}"), 0, &spread)
                    .ok()
                    .as_deref()
                    == Some("a")
            })
            .count();
        assert!(to_a > 0);
        // preferred node affinity (weight 2 × 100) outweighs least-allocated differences
        let mut q = p.clone();
        q.spec.as_mut().expect("spec").affinity = Some(
            serde_json::from_value(serde_json::json!({
                "nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 10, "preference": {"matchExpressions": [
                        {"key": LABEL_ZONE, "operator": "In", "values": ["zone-c"]}]}}]}
            }))
            .expect("affinity"),
        );
        for i in 0..20 {
            assert_eq!(
                st.schedule(&q, &format!("c{i}"), 0, &spread)
                    .ok()
                    .as_deref(),
                Some("c")
            );
        }
    }
}
