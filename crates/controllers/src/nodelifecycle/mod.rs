//! The node lifecycle controller: kube-controller-manager's `node-lifecycle-controller`
//! (upstream `pkg/controller/nodelifecycle`).
//!
//! - Every `--node-monitor-period` it looks at every node's health signals, its Ready
//!   condition's heartbeat and its Lease in `kube-node-lease`: a node neither renewed
//!   within `--node-monitor-grace-period` (`--node-startup-grace-period` before it
//!   ever posted a Ready condition) gets its Ready, MemoryPressure, DiskPressure and
//!   PIDPressure conditions set `Unknown` (reason `NodeStatusUnknown`, "Kubelet stopped
//!   posting node status."); the pods on a node whose Ready condition leaves `True` are
//!   marked not Ready (their Ready condition `False`, a `NodeNotReady` event), as are
//!   pods later bound to it.
//! - A node whose Ready condition is `False` or `Unknown` is queued in its zone's
//!   rate-limited queue to get the `node.kubernetes.io/not-ready` or
//!   `node.kubernetes.io/unreachable` `NoExecute` taint (the two are swapped at once when
//!   the condition changes between them, and both removed when it is `True` again); the
//!   taint-eviction-controller evicts what does not tolerate them. Each zone (the
//!   topology region and zone labels) is `Normal`, `PartialDisruption` (at least
//!   `--unhealthy-zone-threshold` of more than two nodes not Ready: tainting slows to
//!   `--secondary-node-eviction-rate` in zones larger than
//!   `--large-cluster-size-threshold`, else stops) or `FullDisruption` (no node Ready);
//!   when every zone is fully disrupted the controller assumes its own connectivity is
//!   at fault: it removes the NoExecute taints and stops tainting until a node is Ready.
//! - On every node change it keeps the `NoSchedule` condition taints in step with the
//!   node (`not-ready`, `unreachable`, `memory-pressure`, `disk-pressure`,
//!   `pid-pressure`, `network-unavailable`, and `unschedulable` from
//!   `spec.unschedulable`): this removes the `not-ready:NoSchedule` taint the API server
//!   puts on every new node once the node is Ready. It also keeps the beta OS and arch
//!   labels equal to the stable ones.
//! - Events (source `node-controller`): `RegisteredNode`, `RemovingNode`, `NodeNotReady`.
//!
//! The pure decisions are in [`health`], the queue in [`queue`].

pub mod health;
pub mod queue;

use crate::clientbuilder::ClusterAccess;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use coxswain_runtime::builder::ControllerBuilder;
use coxswain_runtime::cache::{Cache, Change};
use coxswain_runtime::controller::{Action, Context, ControllerOptions, ReconcileResult};
use coxswain_runtime::events::{EventRecorder, EventType};
use coxswain_runtime::manager::{runnable, BoxError, Runnable};
use coxswain_runtime::object::ObjectKey;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Node, ObjectReference, Pod, PodCondition, Taint};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Patch, PatchParams, PostParams};
use kube::Api;
use serde_json::json;

use crate::daemon::{pod_node_index, POD_NODE_INDEX};
use health::{NodeHealth, ZoneState};
use queue::{RateLimitedTimedQueue, TokenBucket, EVICTION_RATE_LIMITER_BURST};

/// The controller's name (`names.NodeLifecycleController`).
pub const CONTROLLER_NAME: &str = "node-lifecycle-controller";
/// The events' source (upstream's recorder component).
pub const EVENT_SOURCE: &str = "node-controller";
/// The namespace of node Leases.
pub const NODE_LEASE_NAMESPACE: &str = "kube-node-lease";
/// Status write attempts per node and pass (upstream `NodeHealthUpdateRetry`).
pub const NODE_HEALTH_UPDATE_RETRY: usize = 5;
/// Nodes whose health (and pods) one monitor pass updates at once (upstream
/// `nodeUpdateWorkerSize`, the parallelism of `monitorNodeHealth`). Unbounded, a pass
/// over thousands of nodes that all went NotReady held every node's pods decoded at
/// once while their writes waited.
pub const NODE_UPDATE_WORKER_SIZE: usize = 8;

/// The node lifecycle controller's options (upstream
/// `NodeLifecycleControllerConfiguration` and the eviction flags).
#[derive(Clone, Debug)]
pub struct NodeLifecycleControllerOptions {
    /// How often node health is looked at (`--node-monitor-period`, 5 s).
    pub node_monitor_period: Duration,
    /// How long a node may go without renewing its status or Lease before it is
    /// marked `Unknown` (`--node-monitor-grace-period`, 50 s since Kubernetes 1.32).
    pub node_monitor_grace_period: Duration,
    /// The same for a node that never posted a Ready condition
    /// (`--node-startup-grace-period`, 1 min).
    pub node_startup_grace_period: Duration,
    /// Nodes tainted per second and zone when the zone is healthy
    /// (`--node-eviction-rate`, 0.1).
    pub node_eviction_rate: f32,
    /// Nodes tainted per second in an unhealthy zone of a large cluster
    /// (`--secondary-node-eviction-rate`, 0.01).
    pub secondary_node_eviction_rate: f32,
    /// Zones up to this size stop tainting when unhealthy
    /// (`--large-cluster-size-threshold`, 50).
    pub large_cluster_size_threshold: i32,
    /// The share of not-Ready nodes (more than two) that makes a zone unhealthy
    /// (`--unhealthy-zone-threshold`, 0.55).
    pub unhealthy_zone_threshold: f32,
}

impl Default for NodeLifecycleControllerOptions {
    fn default() -> Self {
        NodeLifecycleControllerOptions {
            node_monitor_period: Duration::from_secs(5),
            node_monitor_grace_period: Duration::from_secs(50),
            node_startup_grace_period: Duration::from_secs(60),
            node_eviction_rate: 0.1,
            secondary_node_eviction_rate: 0.01,
            large_cluster_size_threshold: 50,
            unhealthy_zone_threshold: 0.55,
        }
    }
}

/// The controller's service account with `--use-service-account-credentials`
/// (upstream `ClientOrDie("node-controller")`).
pub const SERVICE_ACCOUNT: &str = "node-controller";

/// The registry entry: `node-lifecycle-controller`, alias `nodelifecycle`.
pub fn descriptor() -> crate::registry::Descriptor {
    crate::registry::Descriptor {
        name: CONTROLLER_NAME,
        aliases: &["nodelifecycle"],
        disabled_by_default: false,
        constructor: |ctx| {
            Ok(Some(Box::new(node_lifecycle_controller(
                &ctx.clients(SERVICE_ACCOUNT)?,
                &ctx.options.node_lifecycle,
            ))))
        },
    }
}

#[derive(Default)]
struct State {
    known: BTreeMap<String, Arc<Node>>,
    health: HashMap<String, NodeHealth>,
    zone_states: BTreeMap<String, ZoneState>,
    nodes_to_retry: HashSet<String>,
}

struct Inner {
    cache: Arc<Cache>,
    client: kube::Client,
    recorder: EventRecorder,
    options: NodeLifecycleControllerOptions,
    state: Mutex<State>,
    // upstream's evictorLock
    tainters: Mutex<BTreeMap<String, RateLimitedTimedQueue>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn name_of(node: &Node) -> &str {
    node.metadata.name.as_deref().unwrap_or_default()
}

fn node_ref(name: &str, uid: &str) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Node".into()),
        name: Some(name.into()),
        uid: Some(uid.into()),
        ..ObjectReference::default()
    }
}

/// The controller as a runnable of `mgr`.
pub fn node_lifecycle_controller(
    mgr: &impl ClusterAccess,
    options: &NodeLifecycleControllerOptions,
) -> impl Runnable {
    let cache = mgr.cache().clone();
    let pods = cache.informer::<Pod>();
    if !pods.store().has_index(POD_NODE_INDEX) {
        cache.index_field::<Pod>(POD_NODE_INDEX, pod_node_index);
    }
    let nodes = cache.informer::<Node>();
    let leases = cache.informer::<Lease>();
    let inner = Arc::new(Inner {
        cache: cache.clone(),
        client: mgr.kube_client().clone(),
        recorder: mgr.event_recorder(EVENT_SOURCE),
        options: options.clone(),
        state: Mutex::new(State::default()),
        tainters: Mutex::new(BTreeMap::new()),
    });
    // pods bound to a node: marked not Ready when the node is not (upstream podUpdated)
    let (pod_tx, mut pod_rx) = tokio::sync::mpsc::unbounded_channel::<ObjectKey>();
    let pod_retry = pod_tx.clone();
    pods.add_handler(move |change: &Change<Pod>| {
        let (old, new) = match change {
            Change::Added(p) => (None, p),
            Change::Updated { old, new } => (Some(old), new),
            Change::Deleted(_) => return,
        };
        let node = |p: &Pod| p.spec.as_ref().and_then(|s| s.node_name.clone());
        let now_on = node(new);
        if now_on.as_deref().is_some_and(|n| !n.is_empty()) && old.map(|o| node(o)) != Some(now_on)
        {
            let _ = pod_tx.send(crate::controller_utils::pod_key(new));
        }
    });
    let tainting = {
        let inner = inner.clone();
        ControllerBuilder::new(&cache)
            .named(CONTROLLER_NAME)
            .for_::<Node>()
            .with_options(ControllerOptions::workers(8))
            .build(move |_ctx: Context, key: ObjectKey| {
                let inner = inner.clone();
                async move { inner.node_processing_pass(key.name()).await }
            })
    };
    runnable(CONTROLLER_NAME, true, move |cancel| async move {
        tokio::select! {
            _ = async {
                pods.wait_for_sync().await;
                nodes.wait_for_sync().await;
                leases.wait_for_sync().await;
            } => {}
            _ = cancel.cancelled() => return Ok::<(), BoxError>(()),
        }
        let tainting = Box::new(tainting).start(cancel.clone());
        let pod_worker = {
            let inner = inner.clone();
            async move {
                let later = inner.options.node_monitor_period;
                while let Some(key) = pod_rx.recv().await {
                    if !inner.process_pod(&key).await {
                        // the node's health is not gathered yet (a fresh process): again
                        // after the next monitor pass, as upstream requeues it
                        let tx = pod_retry.clone();
                        tokio::spawn(async move {
                            tokio::time::sleep(later).await;
                            let _ = tx.send(key);
                        });
                    }
                }
            }
        };
        let no_execute = {
            let inner = inner.clone();
            async move {
                let mut every = tokio::time::interval(queue::NODE_EVICTION_PERIOD);
                every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                loop {
                    every.tick().await;
                    inner.no_execute_tainting_pass().await;
                }
            }
        };
        let monitor = {
            let inner = inner.clone();
            async move {
                let period = inner
                    .options
                    .node_monitor_period
                    .max(Duration::from_millis(10));
                let mut every = tokio::time::interval(period);
                every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                loop {
                    every.tick().await;
                    inner.monitor_node_health().await;
                }
            }
        };
        tokio::select! {
            r = tainting => r?,
            _ = pod_worker => {}
            _ = no_execute => {}
            _ = monitor => {}
            _ = cancel.cancelled() => {}
        }
        Ok(())
    })
}

impl Inner {
    fn node(&self, name: &str) -> Option<Arc<Node>> {
        self.cache
            .informer::<Node>()
            .store()
            .get(&ObjectKey::cluster(name))
    }

    fn lease(&self, name: &str) -> Option<Arc<Lease>> {
        self.cache
            .informer::<Lease>()
            .store()
            .get(&ObjectKey::namespaced(NODE_LEASE_NAMESPACE, name))
    }

    fn pods_on(&self, node: &str) -> Vec<Arc<Pod>> {
        self.cache
            .informer::<Pod>()
            .store()
            .by_index(POD_NODE_INDEX, node)
            .unwrap_or_default()
    }

    /// Upstream `doNodeProcessingPassWorker`: the NoSchedule condition taints and the
    /// beta labels of one node.
    async fn node_processing_pass(&self, name: &str) -> ReconcileResult {
        let Some(node) = self.node(name) else {
            return Ok(Action::Done);
        };
        let (add, remove) = health::no_schedule_taint_diff(&node);
        if !add.is_empty() || !remove.is_empty() {
            self.swap_node_taints(&node, &add, &remove)
                .await
                .map_err(|e| coxswain_runtime::controller::ReconcileError::msg(e.to_string()))?;
        }
        if let Some(labels) = reconcile_labels(&node) {
            Api::<Node>::all(self.client.clone())
                .patch(
                    name,
                    &PatchParams::default(),
                    &Patch::Merge(json!({"metadata": {"labels": labels}})),
                )
                .await
                .map_err(|e| coxswain_runtime::controller::ReconcileError::msg(e.to_string()))?;
        }
        Ok(Action::Done)
    }

    /// Upstream `SwapNodeControllerTaint`: add `add` (stamped with the time) and
    /// remove `remove`, with the node's resourceVersion as precondition, reading the
    /// node again after a conflict.
    async fn swap_node_taints(
        &self,
        node: &Node,
        add: &[Taint],
        remove: &[Taint],
    ) -> Result<(), kube::Error> {
        let now = Time(Timestamp::now());
        let add: Vec<Taint> = add
            .iter()
            .map(|t| Taint {
                time_added: Some(now.clone()),
                ..t.clone()
            })
            .collect();
        let api = Api::<Node>::all(self.client.clone());
        let name = name_of(node).to_string();
        let mut current = node.clone();
        let mut attempt = 0;
        loop {
            attempt += 1;
            let taints = health::node_taints(&current);
            // a taint already there unchanged but for its time is left alone
            let add_now: Vec<Taint> = add
                .iter()
                .filter(|a| {
                    !taints
                        .iter()
                        .any(|t| health::match_taint(t, a) && t.value == a.value)
                })
                .cloned()
                .collect();
            let Some(next) = health::swap_taints(taints, &add_now, remove) else {
                return Ok(());
            };
            let patch = json!({
                "metadata": {"resourceVersion": current.metadata.resource_version},
                "spec": {"taints": next},
            });
            match api
                .patch(&name, &PatchParams::default(), &Patch::Merge(patch))
                .await
            {
                Ok(_) => return Ok(()),
                Err(kube::Error::Api(s)) if s.code == 409 && attempt < 5 => {
                    current = api.get(&name).await?;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Upstream `monitorNodeHealth`.
    async fn monitor_node_health(&self) {
        let nodes = self.cache.informer::<Node>().store().list();
        let (added, deleted, new_zones) = {
            let st = lock(&self.state);
            let (a, d, z) = health::classify_nodes(&nodes, &st.known, &st.zone_states);
            (
                a.into_iter().cloned().collect::<Vec<_>>(),
                d,
                z.into_iter().cloned().collect::<Vec<_>>(),
            )
        };
        for n in &new_zones {
            self.add_tainter_for_new_zone(n);
        }
        for n in &added {
            let name = name_of(n);
            tracing::info!(node = name, "controller observed a new Node");
            self.recorder.event(
                &node_ref(name, n.metadata.uid.as_deref().unwrap_or_default()),
                None,
                EventType::Normal,
                "RegisteredNode",
                "NodeLifecycle",
                &format!("Registered Node {name} in Controller"),
            );
            lock(&self.state).known.insert(name.to_string(), n.clone());
            self.add_tainter_for_new_zone(n);
            if let Err(e) = self.mark_node_as_reachable(n).await {
                tracing::warn!(node = name, error = %e, "removing taints from a node");
            }
        }
        for n in &deleted {
            let name = name_of(n);
            tracing::info!(node = name, "controller observed a Node deletion");
            self.recorder.event(
                &node_ref(name, n.metadata.uid.as_deref().unwrap_or_default()),
                None,
                EventType::Normal,
                "RemovingNode",
                "NodeLifecycle",
                &format!("Removing Node {name} from Controller"),
            );
            let mut st = lock(&self.state);
            st.known.remove(name);
            st.health.remove(name);
            st.nodes_to_retry.remove(name);
        }

        let mut zone_conditions: BTreeMap<
            String,
            Vec<Option<k8s_openapi::api::core::v1::NodeCondition>>,
        > = BTreeMap::new();
        let workers = tokio::sync::Semaphore::new(NODE_UPDATE_WORKER_SIZE);
        let updates = futures::future::join_all(nodes.iter().map(|n| async {
            let _worker = workers.acquire().await.ok();
            self.update_node(n).await
        }))
        .await;
        for (n, current) in nodes.iter().zip(updates) {
            let Some(current) = current else { continue };
            if !health::excluded_from_disruption_checks(n) {
                zone_conditions
                    .entry(health::zone_key(n))
                    .or_default()
                    .push(current);
            }
        }
        self.handle_disruption(&zone_conditions, &nodes).await;
    }

    /// One node of the monitor pass; the node's current Ready condition, or `None` when
    /// its health could not be updated.
    async fn update_node(
        &self,
        node: &Arc<Node>,
    ) -> Option<Option<k8s_openapi::api::core::v1::NodeCondition>> {
        let name = name_of(node).to_string();
        let api = Api::<Node>::all(self.client.clone());
        let mut node: Node = (**node).clone();
        let ready_before =
            health::condition(node.status.as_ref(), "Ready").is_some_and(|c| c.status == "True");
        let mut retried = false;
        let mut outcome = None;
        for _ in 0..NODE_HEALTH_UPDATE_RETRY {
            match self.try_update_node_health(&node).await {
                Ok(r) => {
                    outcome = Some(r);
                    break;
                }
                Err(e) => {
                    retried = true;
                    tracing::debug!(node = %name, error = %e, "updating node health");
                    match api.get(&name).await {
                        Ok(n) => node = n,
                        Err(e) => {
                            tracing::warn!(node = %name, error = %e, "reading a node to retry its health update");
                            return None;
                        }
                    }
                }
            }
        }
        let Some((observed, current)) = outcome else {
            tracing::warn!(node = %name, "updating node health failed; no pods will be evicted");
            return None;
        };
        if let Some(cur) = &current {
            self.process_taint_based_eviction(&node, &observed.status)
                .await;
            let needs_retry = lock(&self.state).nodes_to_retry.contains(&name);
            // a failed write may have gone through (a timeout): the node read again
            // then shows this controller's own Unknown, and the transition it made is
            // judged from the node as it was before
            let became_not_ready =
                cur.status != "True" && (observed.status == "True" || (retried && ready_before));
            if became_not_ready {
                self.recorder.event(
                    &node_ref(&name, &name),
                    None,
                    EventType::Normal,
                    "NodeNotReady",
                    "NodeLifecycle",
                    &format!("Node {name} status is now: NodeNotReady"),
                );
            }
            if became_not_ready || (needs_retry && observed.status != "True") {
                let pods = self.pods_on(&name);
                if let Err(e) = self.mark_pods_not_ready(&pods, &name).await {
                    tracing::warn!(node = %name, error = %e, "marking pods not Ready; will retry");
                    lock(&self.state).nodes_to_retry.insert(name);
                    return Some(current);
                }
            }
        }
        lock(&self.state).nodes_to_retry.remove(&name);
        Some(current)
    }

    /// Upstream `tryUpdateNodeHealth` around [`health::check_node_health`]: the
    /// observed and current Ready conditions.
    async fn try_update_node_health(
        &self,
        node: &Node,
    ) -> Result<
        (
            k8s_openapi::api::core::v1::NodeCondition,
            Option<k8s_openapi::api::core::v1::NodeCondition>,
        ),
        kube::Error,
    > {
        let name = name_of(node).to_string();
        let saved = lock(&self.state).health.get(&name).cloned();
        let lease = self.lease(&name);
        let now = Timestamp::now();
        let check = health::check_node_health(
            node,
            saved.as_ref(),
            lease.as_deref(),
            now,
            self.options.node_startup_grace_period,
            self.options.node_monitor_grace_period,
        );
        let result = (check.observed_ready.clone(), check.current_ready.clone());
        let Some(status) = check.write.clone() else {
            lock(&self.state).health.insert(name, check.health);
            return Ok(result);
        };
        let mut updated = node.clone();
        updated.status = Some(status.clone());
        let api = Api::<Node>::all(self.client.clone());
        match api
            .replace_status(&name, &PostParams::default(), &updated)
            .await
        {
            Ok(_) => {
                let h = health::health_after_write(&check, status, lease.as_deref(), now);
                lock(&self.state).health.insert(name, h);
                Ok(result)
            }
            Err(e) => {
                lock(&self.state).health.insert(name, check.health);
                Err(e)
            }
        }
    }

    /// Upstream `processTaintBaseEviction`.
    async fn process_taint_based_eviction(&self, node: &Node, observed: &str) {
        let taints = health::node_taints(node);
        let name = name_of(node);
        match observed {
            "False" => {
                if health::taint_exists(taints, &health::unreachable_taint()) {
                    if let Err(e) = self
                        .swap_node_taints(
                            node,
                            &[health::not_ready_taint()],
                            &[health::unreachable_taint()],
                        )
                        .await
                    {
                        tracing::warn!(node = name, error = %e, "swapping the unreachable taint for not-ready");
                    }
                } else {
                    self.mark_node_for_tainting(node, "False");
                }
            }
            "Unknown" => {
                if health::taint_exists(taints, &health::not_ready_taint()) {
                    if let Err(e) = self
                        .swap_node_taints(
                            node,
                            &[health::unreachable_taint()],
                            &[health::not_ready_taint()],
                        )
                        .await
                    {
                        tracing::warn!(node = name, error = %e, "swapping the not-ready taint for unreachable");
                    }
                } else {
                    self.mark_node_for_tainting(node, "Unknown");
                }
            }
            "True" => {
                if let Err(e) = self.mark_node_as_reachable(node).await {
                    tracing::warn!(node = name, error = %e, "removing taints from a node");
                }
            }
            _ => {}
        }
    }

    fn add_tainter_for_new_zone(&self, node: &Node) {
        let zone = health::zone_key(node);
        let mut st = lock(&self.state);
        if st.zone_states.contains_key(&zone) {
            return;
        }
        st.zone_states.insert(zone.clone(), ZoneState::Initial);
        drop(st);
        lock(&self.tainters).entry(zone).or_insert_with(|| {
            RateLimitedTimedQueue::new(TokenBucket::new(
                self.options.node_eviction_rate,
                EVICTION_RATE_LIMITER_BURST,
            ))
        });
    }

    /// Upstream `markNodeForTainting`.
    fn mark_node_for_tainting(&self, node: &Node, status: &str) -> bool {
        let taints = health::node_taints(node);
        let name = name_of(node);
        let mut tainters = lock(&self.tainters);
        let Some(q) = tainters.get_mut(&health::zone_key(node)) else {
            return false;
        };
        let template = if status == "False" {
            health::not_ready_taint()
        } else {
            health::unreachable_taint()
        };
        if !health::taint_exists(taints, &template) {
            q.remove(name);
        }
        q.add(
            name,
            node.metadata.uid.as_deref().unwrap_or_default(),
            Instant::now(),
        )
    }

    /// Upstream `markNodeAsReachable`: both NoExecute taints off, out of the queue.
    async fn mark_node_as_reachable(&self, node: &Node) -> Result<bool, kube::Error> {
        let remove = [health::unreachable_taint(), health::not_ready_taint()];
        if remove
            .iter()
            .any(|t| health::taint_exists(health::node_taints(node), t))
        {
            self.swap_node_taints(node, &[], &remove).await?;
        }
        Ok(lock(&self.tainters)
            .get_mut(&health::zone_key(node))
            .is_some_and(|q| q.remove(name_of(node))))
    }

    /// Upstream `doNoExecuteTaintingPass`.
    async fn no_execute_tainting_pass(&self) {
        let zones: Vec<String> = lock(&self.tainters).keys().cloned().collect();
        for zone in zones {
            loop {
                let now = Instant::now();
                let Some(v) = lock(&self.tainters)
                    .get_mut(&zone)
                    .and_then(|q| q.next_due(now))
                else {
                    break;
                };
                let (done, wait) = self.taint_queued_node(&v.value).await;
                if let Some(q) = lock(&self.tainters).get_mut(&zone) {
                    q.finish(v, done, wait, now);
                }
            }
        }
    }

    async fn taint_queued_node(&self, name: &str) -> (bool, Duration) {
        let Some(node) = self.node(name) else {
            return (true, Duration::ZERO);
        };
        let Some(ready) = health::condition(node.status.as_ref(), "Ready") else {
            return (false, Duration::from_millis(50));
        };
        let (add, opposite) = match ready.status.as_str() {
            "False" => (health::not_ready_taint(), health::unreachable_taint()),
            "Unknown" => (health::unreachable_taint(), health::not_ready_taint()),
            // Ready again: nothing to taint
            _ => return (true, Duration::ZERO),
        };
        match self.swap_node_taints(&node, &[add], &[opposite]).await {
            Ok(()) => (true, Duration::ZERO),
            Err(e) => {
                tracing::warn!(node = name, error = %e, "tainting a node");
                (false, Duration::ZERO)
            }
        }
    }

    /// Upstream `handleDisruption`.
    async fn handle_disruption(
        &self,
        zone_conditions: &BTreeMap<String, Vec<Option<k8s_openapi::api::core::v1::NodeCondition>>>,
        nodes: &[Arc<Node>],
    ) {
        let mut new_states: BTreeMap<String, ZoneState> = BTreeMap::new();
        let mut all_are_fully_disrupted = true;
        {
            let mut st = lock(&self.state);
            for (zone, conds) in zone_conditions {
                let refs: Vec<Option<&k8s_openapi::api::core::v1::NodeCondition>> =
                    conds.iter().map(Option::as_ref).collect();
                let (_, state) =
                    health::compute_zone_state(&refs, self.options.unhealthy_zone_threshold);
                if state != ZoneState::FullDisruption {
                    all_are_fully_disrupted = false;
                }
                new_states.insert(zone.clone(), state);
                st.zone_states
                    .entry(zone.clone())
                    .or_insert(ZoneState::Initial);
            }
        }
        let all_were_fully_disrupted = {
            let mut st = lock(&self.state);
            st.zone_states
                .retain(|zone, _| zone_conditions.contains_key(zone));
            st.zone_states
                .values()
                .all(|s| *s == ZoneState::FullDisruption)
        };
        if all_are_fully_disrupted && all_were_fully_disrupted {
            return;
        }
        let now = Instant::now();
        if all_are_fully_disrupted {
            tracing::info!(
                "controller detected that all Nodes are not-Ready; entering master disruption mode"
            );
            for n in nodes {
                if let Err(e) = self.mark_node_as_reachable(n).await {
                    tracing::warn!(node = name_of(n), error = %e, "removing taints from a node");
                }
            }
            let zones: Vec<String> = lock(&self.state).zone_states.keys().cloned().collect();
            let mut tainters = lock(&self.tainters);
            for zone in &zones {
                if let Some(q) = tainters.get_mut(zone) {
                    q.swap_limiter(0.0, now);
                }
            }
            drop(tainters);
            let mut st = lock(&self.state);
            for s in st.zone_states.values_mut() {
                *s = ZoneState::FullDisruption;
            }
            return;
        }
        let o = &self.options;
        let set_limiter = |tainters: &mut BTreeMap<String, RateLimitedTimedQueue>,
                           zone: &str,
                           state: ZoneState| {
            let size = zone_conditions.get(zone).map_or(0, Vec::len);
            if let (Some(q), Some(rate)) = (
                tainters.get_mut(zone),
                health::zone_eviction_rate(
                    state,
                    size,
                    o.node_eviction_rate,
                    o.secondary_node_eviction_rate,
                    o.large_cluster_size_threshold,
                ),
            ) {
                q.swap_limiter(rate, now);
            }
        };
        if all_were_fully_disrupted {
            tracing::info!(
                "controller detected that some Nodes are Ready; exiting master disruption mode"
            );
            let ts = Timestamp::now();
            let mut st = lock(&self.state);
            for n in nodes {
                if let Some(h) = st.health.get_mut(name_of(n)) {
                    h.probe_timestamp = ts;
                    h.ready_transition_timestamp = ts;
                }
            }
            let mut tainters = lock(&self.tainters);
            let zones: Vec<String> = st.zone_states.keys().cloned().collect();
            for zone in zones {
                let state = new_states.get(&zone).copied().unwrap_or(ZoneState::Normal);
                set_limiter(&mut tainters, &zone, state);
                st.zone_states.insert(zone, state);
            }
            return;
        }
        let mut st = lock(&self.state);
        let mut tainters = lock(&self.tainters);
        let zones: Vec<(String, ZoneState)> = st
            .zone_states
            .iter()
            .map(|(k, v)| (k.clone(), *v))
            .collect();
        for (zone, old) in zones {
            let Some(&state) = new_states.get(&zone) else {
                continue;
            };
            if old == state {
                continue;
            }
            tracing::info!(zone = %zone.replace('\0', ""), ?state, "controller detected that a zone is now in a new state");
            set_limiter(&mut tainters, &zone, state);
            st.zone_states.insert(zone, state);
        }
    }

    /// Upstream `processPod`: a pod bound to a node known not Ready is marked not
    /// Ready. `false` when the node's health is not gathered yet (to be retried, as
    /// upstream requeues the pod).
    async fn process_pod(&self, key: &ObjectKey) -> bool {
        let Some(pod) = self.cache.informer::<Pod>().store().get(key) else {
            return true;
        };
        let node = pod
            .spec
            .as_ref()
            .and_then(|s| s.node_name.clone())
            .unwrap_or_default();
        if self.node(&node).is_none() {
            return true;
        }
        let ready = {
            let st = lock(&self.state);
            let Some(h) = st.health.get(&node) else {
                return false;
            };
            health::condition(Some(&h.status), "Ready").map(|c| c.status.clone())
        };
        if ready.is_some_and(|s| s != "True") {
            if let Err(e) = self.mark_pods_not_ready(&[pod], &node).await {
                tracing::warn!(pod = %key, node, error = %e, "marking a pod not Ready");
            }
        }
        true
    }

    /// Upstream `MarkPodsNotReady`: each pod's Ready condition set `False` (a
    /// `NodeNotReady` warning on the pod).
    async fn mark_pods_not_ready(&self, pods: &[Arc<Pod>], node: &str) -> Result<(), kube::Error> {
        let mut first_err = None;
        for pod in pods {
            if pod.spec.as_ref().and_then(|s| s.node_name.as_deref()) != Some(node) {
                continue;
            }
            let Some(status) = not_ready_status(pod, Timestamp::now()) else {
                continue;
            };
            let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
            let name = pod.metadata.name.as_deref().unwrap_or_default();
            let mut updated = (**pod).clone();
            updated.status = Some(status);
            match Api::<Pod>::namespaced(self.client.clone(), ns)
                .replace_status(name, &PostParams::default(), &updated)
                .await
            {
                Ok(_) => {}
                Err(kube::Error::Api(s)) if s.code == 404 => continue,
                Err(e) => {
                    tracing::info!(pod = %format!("{ns}/{name}"), error = %e, "updating a pod's status");
                    first_err.get_or_insert(e);
                }
            }
            self.recorder.event(
                &coxswain_runtime::events::object_reference(&**pod),
                None,
                EventType::Warning,
                "NodeNotReady",
                "NodeLifecycle",
                "Node is not ready",
            );
        }
        match first_err {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// The pod's status with its Ready condition `False` (upstream `MarkPodsNotReady` with
/// `UpdatePodCondition`: the transition time moves to `now` as the status changes),
/// or `None` when the pod has no Ready condition or it is `False` already.
pub fn not_ready_status(
    pod: &Pod,
    now: Timestamp,
) -> Option<k8s_openapi::api::core::v1::PodStatus> {
    let mut status = pod.status.clone()?;
    let c: &mut PodCondition = status
        .conditions
        .as_mut()?
        .iter_mut()
        .find(|c| c.type_ == "Ready")?;
    if c.status == "False" {
        return None;
    }
    c.status = "False".into();
    c.last_transition_time = Some(Time(now));
    Some(status)
}

/// The beta OS and arch labels to set from the stable ones (upstream
/// `reconcileNodeLabels`), or `None`.
pub fn reconcile_labels(node: &Node) -> Option<BTreeMap<String, String>> {
    let labels = node.metadata.labels.as_ref()?;
    let mut out = BTreeMap::new();
    for (stable, beta) in [
        ("kubernetes.io/os", "beta.kubernetes.io/os"),
        ("kubernetes.io/arch", "beta.kubernetes.io/arch"),
    ] {
        let Some(v) = labels.get(stable) else {
            continue;
        };
        if labels.get(beta) != Some(v) {
            out.insert(beta.to_string(), v.clone());
        }
    }
    (!out.is_empty()).then_some(out)
}

#[cfg(test)]
mod tests;
