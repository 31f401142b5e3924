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
//! Volumes follow upstream's `VolumeBinding` plugin ([`crate::volumebinding`]): a pod
//! whose claims are missing, being deleted, or unbound with an `Immediate` class is
//! not scheduled (`Unschedulable` with upstream's message, retried when a claim
//! changes); bound volumes' node affinity filters nodes; for unbound
//! `WaitForFirstConsumer` claims a node is chosen where a static volume matches or
//! the class can provision, then (PreBind) the chosen static volumes are bound to
//! their claims and the claims to provision get `volume.kubernetes.io/selected-node`,
//! and the pod is bound to the node only once all its claims are bound — each claim
//! change brings the pod back, there is no polling. A binding that cannot complete
//! (the provisioner gave the node up) or takes over 10 minutes fails the attempt with
//! a `FailedScheduling` event, and the pod is scheduled again.
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
    Node, PersistentVolume, PersistentVolumeClaim, Pod, PodCondition, PodSpec,
    ReplicationController, Service,
};
use k8s_openapi::api::storage::v1::StorageClass;
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
    least_allocated_score, preferred_affinity_sum, prefilter_error_message, NodeView, Usage,
};
use crate::resources::PodRequests;
use crate::spread::{normalize, raw_scores, spread_of, GroupId, LabelGroups, Owners, Spread};
use crate::storage::ANN_SELECTED_NODE;
use crate::table::NodeTable;
use crate::volumebinding::{
    bindings_done, pod_claims, pod_volumes, Plan, PodVolumes, StorageView, ANN_BOUND_BY_CONTROLLER,
};

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
    /// pods assumed on a node while their volumes are being bound (PreBind)
    binding_volumes: HashMap<ObjectKey, VolumeWait>,
    /// the pods in `binding_volumes` by the claims they wait for
    claim_waiters: HashMap<ObjectKey, HashSet<ObjectKey>>,
}

/// A pod whose volumes are being bound before it is bound to `node`.
struct VolumeWait {
    uid: String,
    node: String,
    /// its claims that are being provisioned on `node`
    provisioning: HashSet<String>,
    claims: Vec<ObjectKey>,
    since: std::time::Instant,
}

/// How long PreBind waits for the pod's claims to be bound (upstream `bindTimeout`).
const BIND_TIMEOUT: Duration = Duration::from_secs(600);

/// Index of PersistentVolumes without a `claimRef`, by class.
const PV_UNCLAIMED_BY_CLASS: &str = "sim.coxswain.dev/pv-unclaimed-class";
/// Index of PersistentVolumes by their `claimRef` (`<namespace>/<name>`).
const PV_BY_CLAIM: &str = "sim.coxswain.dev/pv-claim";

/// The storage objects of the cache, as the `VolumeBinding` plugin reads them, for
/// pods of namespace `ns`.
struct CacheView<'a> {
    cache: &'a Cache,
    ns: &'a str,
}

impl StorageView for CacheView<'_> {
    fn claim(&self, name: &str) -> Option<Arc<PersistentVolumeClaim>> {
        self.cache
            .informer::<PersistentVolumeClaim>()
            .store()
            .get(&ObjectKey::namespaced(self.ns, name))
    }
    fn class(&self, name: &str) -> Option<Arc<StorageClass>> {
        self.cache
            .informer::<StorageClass>()
            .store()
            .get(&ObjectKey::cluster(name))
    }
    fn volume(&self, name: &str) -> Option<Arc<PersistentVolume>> {
        self.cache
            .informer::<PersistentVolume>()
            .store()
            .get(&ObjectKey::cluster(name))
    }
    fn candidates(&self, class: &str, ns: &str, name: &str) -> Vec<Arc<PersistentVolume>> {
        let store = self.cache.informer::<PersistentVolume>().store().clone();
        let mut out = store
            .by_index(PV_UNCLAIMED_BY_CLASS, class)
            .unwrap_or_default();
        out.extend(
            store
                .by_index(PV_BY_CLAIM, &format!("{ns}/{name}"))
                .unwrap_or_default(),
        );
        out
    }
}

impl State {
    fn stop_waiting(&mut self, key: &ObjectKey) -> Option<VolumeWait> {
        let w = self.binding_volumes.remove(key)?;
        for c in &w.claims {
            if let Some(pods) = self.claim_waiters.get_mut(c) {
                pods.remove(key);
                if pods.is_empty() {
                    self.claim_waiters.remove(c);
                }
            }
        }
        Some(w)
    }
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
        volumes: &PodVolumes,
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
            let fits = filter(spec, &req, node, &slot.usage).and_then(|()| {
                if volumes.is_empty() {
                    return Ok(());
                }
                volumes
                    .check(node)
                    .map(|_| ())
                    .map_err(|r| vec![r.to_string()])
            });
            match fits {
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
        cache.index_field::<PersistentVolume>(PV_UNCLAIMED_BY_CLASS, |pv: &PersistentVolume| {
            let spec = pv.spec.as_ref();
            match spec {
                Some(s) if s.claim_ref.is_none() => {
                    vec![s.storage_class_name.clone().unwrap_or_default()]
                }
                _ => Vec::new(),
            }
        });
        cache.index_field::<PersistentVolume>(PV_BY_CLAIM, |pv: &PersistentVolume| {
            pv.spec
                .as_ref()
                .and_then(|s| s.claim_ref.as_ref())
                .map(|r| {
                    format!(
                        "{}/{}",
                        r.namespace.as_deref().unwrap_or(""),
                        r.name.as_deref().unwrap_or("")
                    )
                })
                .into_iter()
                .collect()
        });
        cache.informer::<StorageClass>();
        // a claim created or bound may let a waiting pod in, or complete the binding
        // of a pod's volumes
        let me = Arc::downgrade(&s);
        cache.informer::<PersistentVolumeClaim>().add_handler(
            move |c: &Change<PersistentVolumeClaim>| {
                let Some(s) = me.upgrade() else { return };
                let claim = match c {
                    Change::Added(x) | Change::Deleted(x) | Change::Updated { new: x, .. } => x,
                };
                {
                    let mut st = s.lock();
                    let key = ObjectKey::of(claim.as_ref());
                    let pods: Vec<ObjectKey> = st
                        .claim_waiters
                        .get(&key)
                        .map(|p| p.iter().cloned().collect())
                        .unwrap_or_default();
                    st.unschedulable.extend(pods);
                }
                s.wake.notify_one();
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
                if gone {
                    let key = ObjectKey::of(pod.as_ref());
                    if st.binding_volumes.get(&key).is_some_and(|w| w.uid == uid) {
                        st.stop_waiting(&key);
                    }
                }
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
                let mut st = self.lock();
                st.unschedulable.remove(&key);
                if let Some(w) = st.stop_waiting(&key) {
                    // deleted, gated, or bound by someone else while its volumes were
                    // being bound: the assumption goes
                    if st.pods.get(&w.uid).is_some_and(|e| !e.confirmed) {
                        st.remove_pod(&w.uid);
                    }
                }
                return Ok(Action::Done);
            }
        };
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        let waiting = {
            let mut st = self.lock();
            match st.binding_volumes.get(&key) {
                Some(w) if w.uid == uid => Some((w.node.clone(), w.provisioning.clone(), w.since)),
                Some(_) => {
                    // an older pod of that name
                    st.stop_waiting(&key);
                    None
                }
                None => None,
            }
        };
        if let Some((node, provisioning, since)) = waiting {
            return self
                .continue_volume_binding(&pod, &key, &uid, &node, &provisioning, since)
                .await;
        }
        let ns = key.namespace().unwrap_or("").to_string();
        let view = CacheView {
            cache: &self.cache,
            ns: &ns,
        };
        let volumes = match pod_volumes(&pod, &view) {
            Ok(v) => v,
            Err(reason) => {
                let nodes = self.lock().order.len();
                let f = Failure {
                    reason: "Unschedulable",
                    message: prefilter_error_message(nodes, &reason),
                };
                self.lock().unschedulable.insert(key.clone());
                self.record_failure(&pod, &key, &f).await?;
                return Ok(Action::Requeue);
            }
        };
        let spread = spread_of(&pod, &lock_owners(&self.owners));
        let decision = {
            let mut st = self.lock();
            if st.pods.contains_key(&uid) {
                // being bound (or bound, and the cache has not caught up)
                return Ok(Action::Done);
            }
            st.schedule(
                &pod,
                &uid,
                self.cfg.percentage_of_nodes_to_score,
                &spread,
                &volumes,
            )
            .map(|node| {
                let view = st
                    .table
                    .find(&node)
                    .and_then(|id| st.table.slot(id).view.clone());
                (node, view)
            })
        };
        match decision {
            Ok((node, view)) => {
                if volumes.to_bind.is_empty() {
                    return self.bind(&pod, &key, &uid, &node).await;
                }
                let plan = view
                    .as_ref()
                    .map(|v| volumes.check(v))
                    .unwrap_or(Err("node is gone"));
                match plan {
                    Ok(plan) => {
                        self.bind_volumes(&pod, &key, &uid, &node, &volumes, plan)
                            .await
                    }
                    Err(r) => {
                        self.forget_assumed(&uid);
                        self.prebind_failed(&pod, &key, r).await
                    }
                }
            }
            Err(f) => {
                self.lock().unschedulable.insert(key.clone());
                self.record_failure(&pod, &key, &f).await?;
                Ok(Action::Requeue)
            }
        }
    }

    /// PreBind of `VolumeBinding`: bind the chosen static volumes to their claims and
    /// ask for the others to be provisioned on `node`, then wait for the claims.
    async fn bind_volumes(
        &self,
        pod: &Pod,
        key: &ObjectKey,
        uid: &str,
        node: &str,
        volumes: &PodVolumes,
        plan: Plan,
    ) -> ReconcileResult {
        let ns = key.namespace().unwrap_or("default");
        let pvs: Api<PersistentVolume> = Api::all(self.client.clone());
        let claims: Api<PersistentVolumeClaim> = Api::namespaced(self.client.clone(), ns);
        let mut provisioning = HashSet::new();
        let result: Result<(), kube::Error> = async {
            for (pv_name, i) in &plan.static_binds {
                let claim = &volumes.to_bind[*i].claim;
                let Some(pv) = volumes.to_bind[*i]
                    .candidates
                    .iter()
                    .find(|v| v.metadata.name.as_deref() == Some(pv_name.as_str()))
                else {
                    continue;
                };
                let mut pv = (**pv).clone();
                pv.metadata.managed_fields = None;
                let spec = pv.spec.get_or_insert_with(Default::default);
                spec.claim_ref = Some(k8s_openapi::api::core::v1::ObjectReference {
                    api_version: Some("v1".into()),
                    kind: Some("PersistentVolumeClaim".into()),
                    namespace: claim.metadata.namespace.clone(),
                    name: claim.metadata.name.clone(),
                    uid: claim.metadata.uid.clone(),
                    resource_version: claim.metadata.resource_version.clone(),
                    field_path: None,
                });
                pv.metadata
                    .annotations
                    .get_or_insert_with(Default::default)
                    .insert(ANN_BOUND_BY_CONTROLLER.into(), "yes".into());
                pvs.replace(pv_name, &PostParams::default(), &pv).await?;
            }
            for i in &plan.provision {
                let claim = &volumes.to_bind[*i].claim;
                let name = claim.metadata.name.clone().unwrap_or_default();
                provisioning.insert(name.clone());
                if crate::storage::annotation(&claim.metadata, ANN_SELECTED_NODE) == Some(node) {
                    continue;
                }
                let patch = json!({"metadata": {
                    "annotations": {ANN_SELECTED_NODE: node},
                    "resourceVersion": claim.metadata.resource_version,
                }});
                claims
                    .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await?;
            }
            Ok(())
        }
        .await;
        if let Err(e) = result {
            self.forget_assumed(uid);
            return self
                .prebind_failed(pod, key, &format!("binding volumes: {e}"))
                .await;
        }
        let since = std::time::Instant::now();
        {
            let mut st = self.lock();
            let claims: Vec<ObjectKey> = pod_claims(pod)
                .iter()
                .map(|c| ObjectKey::namespaced(ns, c))
                .collect();
            for c in &claims {
                st.claim_waiters
                    .entry(c.clone())
                    .or_default()
                    .insert(key.clone());
            }
            st.binding_volumes.insert(
                key.clone(),
                VolumeWait {
                    uid: uid.to_string(),
                    node: node.to_string(),
                    provisioning: provisioning.clone(),
                    claims,
                    since,
                },
            );
        }
        self.continue_volume_binding(pod, key, uid, node, &provisioning, since)
            .await
    }

    /// Bind the pod once its claims are bound; fail the attempt when they cannot be.
    async fn continue_volume_binding(
        &self,
        pod: &Pod,
        key: &ObjectKey,
        uid: &str,
        node: &str,
        provisioning: &HashSet<String>,
        since: std::time::Instant,
    ) -> ReconcileResult {
        let ns = key.namespace().unwrap_or("").to_string();
        let view = CacheView {
            cache: &self.cache,
            ns: &ns,
        };
        let node_view = {
            let st = self.lock();
            st.table
                .find(node)
                .and_then(|id| st.table.slot(id).view.clone())
        };
        let outcome = match &node_view {
            Some(nv) => bindings_done(pod, &view, nv, provisioning),
            None => Err(format!("node {node:?} is gone")),
        };
        let failure = match outcome {
            Ok(true) => {
                self.lock().stop_waiting(key);
                return self.bind(pod, key, uid, node).await;
            }
            Ok(false) => {
                let waited = since.elapsed();
                if waited < BIND_TIMEOUT {
                    // the claims' changes bring the pod back; the timeout, at worst
                    return Ok(Action::RequeueAfter(BIND_TIMEOUT - waited));
                }
                "binding volumes: context deadline exceeded".to_string()
            }
            Err(e) => format!("binding volumes: {e}"),
        };
        self.lock().stop_waiting(key);
        self.forget_assumed(uid);
        self.prebind_failed(pod, key, &failure).await
    }

    /// A failed PreBind: the pod is scheduled again (with back-off).
    async fn prebind_failed(&self, pod: &Pod, key: &ObjectKey, why: &str) -> ReconcileResult {
        let f = Failure {
            reason: "SchedulerError",
            message: format!("running PreBind plugin \"VolumeBinding\": {why}"),
        };
        self.record_failure(pod, key, &f).await?;
        Ok(Action::Requeue)
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
                .schedule(
                    &pod("8"),
                    &format!("u{i}"),
                    0,
                    &Spread::default(),
                    &PodVolumes::default(),
                )
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
            .schedule(
                &pod("20"),
                "big",
                0,
                &Spread::default(),
                &PodVolumes::default(),
            )
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
            .schedule(
                &pod("1"),
                "u",
                0,
                &Spread::default(),
                &PodVolumes::default(),
            )
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
                .schedule(&p, &format!("u{i}"), 0, &spread, &PodVolumes::default())
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
                .schedule(&p, &format!("u{i}"), 0, &spread, &PodVolumes::default())
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
            assert_eq!(
                st.schedule(&p, &uid, 0, &spread, &PodVolumes::default())
                    .ok()
                    .as_deref(),
                Some("b")
            );
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
            st.schedule(&p, "next", 0, &spread, &PodVolumes::default())
                .ok()
                .as_deref(),
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
            let node = st
                .schedule(&p, &format!("u{i}"), 0, &spread, &PodVolumes::default())
                .ok();
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
                st.schedule(&p, &format!("t{i}"), 0, &spread, &PodVolumes::default())
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
                st.schedule(&q, &format!("c{i}"), 0, &spread, &PodVolumes::default())
                    .ok()
                    .as_deref(),
                Some("c")
            );
        }
    }
}
