//! The pod garbage collector: kube-controller-manager's `podgc` controller (upstream
//! `pkg/controller/podgc`).
//!
//! Every 20 seconds (upstream `gcCheckPeriod`, first right after the caches synced) it
//! looks at all pods and nodes in the cache and force-deletes (grace period 0), in this
//! order, each step on the same snapshot:
//!
//! 1. terminated pods (phase neither `Pending`, `Running` nor `Unknown`) beyond
//!    `--terminated-pod-gc-threshold` (12500; 0 or less turns this step off): evicted
//!    ones first, then the oldest, then by name;
//! 2. terminating pods on nodes that are not Ready and carry the
//!    `node.kubernetes.io/out-of-service` taint;
//! 3. pods bound to nodes that no longer exist: a missing node is quarantined for 40
//!    seconds first and then confirmed missing by a live read (not the cache);
//! 4. terminating pods that were never scheduled.
//!
//! The pass reads pods through indexes of the pod cache ([`PodSet`]): terminated pods,
//! terminating pods by node, and pods by node (shared with the DaemonSet, node lifecycle
//! and taint eviction controllers), so it decodes only the pods it acts on, not every
//! pod of the cluster every 20 seconds.
//!
//! A pod that is not yet `Succeeded` or `Failed` is first patched to `Failed` (with the
//! `DisruptionTarget` condition, reason `DeletionByPodGC`, for orphaned pods), since no
//! kubelet will ever finish it. The counters `pod_gc_collector_force_delete_pods_total`
//! and `pod_gc_collector_force_delete_pod_errors_total` (by namespace and reason) count
//! the deletions.

use crate::clientbuilder::ClusterAccess;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use crate::daemon::{pod_node_index, POD_NODE_INDEX};
use coxswain_runtime::cache::Store;
use coxswain_runtime::manager::{runnable, BoxError};
use k8s_openapi::api::core::v1::{Node, Pod, PodCondition};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{DeleteParams, Patch, PatchParams};
use kube::Api;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use serde_json::{json, Value};

/// How often the collector runs (upstream `gcCheckPeriod`).
pub const GC_CHECK_PERIOD: Duration = Duration::from_secs(20);
/// How long a node must stay missing before its pods are deleted (upstream
/// `quarantineTime`).
pub const QUARANTINE_TIME: Duration = Duration::from_secs(40);
/// The taint of a node declared out of service (`v1.TaintNodeOutOfService`).
pub const TAINT_NODE_OUT_OF_SERVICE: &str = "node.kubernetes.io/out-of-service";

/// The pod garbage collector's options (upstream `PodGCControllerConfiguration`).
#[derive(Clone, Debug)]
pub struct PodGcControllerOptions {
    /// Terminated pods kept before the oldest are deleted
    /// (`--terminated-pod-gc-threshold`, 12500); 0 or less: terminated pods are kept.
    pub terminated_pod_gc_threshold: i32,
    /// How often it runs (upstream's constant 20 s; no flag; shorter in tests).
    pub gc_check_period: Duration,
    /// How long a node must stay missing (upstream's constant 40 s; no flag).
    pub quarantine_time: Duration,
}

impl Default for PodGcControllerOptions {
    fn default() -> Self {
        PodGcControllerOptions {
            terminated_pod_gc_threshold: 12500,
            gc_check_period: GC_CHECK_PERIOD,
            quarantine_time: QUARANTINE_TIME,
        }
    }
}

/// The controller's service account with `--use-service-account-credentials`
/// (upstream `ClientOrDie("pod-garbage-collector")`).
pub const SERVICE_ACCOUNT: &str = "pod-garbage-collector";

/// The registry entry: `pod-garbage-collector-controller`, alias `podgc`.
pub fn descriptor() -> crate::registry::Descriptor {
    crate::registry::Descriptor {
        name: "pod-garbage-collector-controller",
        aliases: &["podgc"],
        disabled_by_default: false,
        constructor: |ctx| {
            Ok(Some(Box::new(podgc_controller(
                &ctx.clients(SERVICE_ACCOUNT)?,
                &ctx.options.podgc,
            ))))
        },
    }
}

/// Why a pod was force-deleted (the `reason` label).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    /// Terminated beyond the threshold.
    Terminated,
    /// Terminating on an out-of-service node.
    OutOfService,
    /// Bound to a node that no longer exists.
    Orphaned,
    /// Terminating and never scheduled.
    Unscheduled,
}

impl Reason {
    fn label(self) -> &'static str {
        match self {
            Reason::Terminated => "terminated",
            Reason::OutOfService => "out-of-service",
            Reason::Orphaned => "orphaned",
            Reason::Unscheduled => "unscheduled",
        }
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Labels {
    namespace: String,
    reason: String,
}

struct Metrics {
    total: Family<Labels, Counter>,
    errors: Family<Labels, Counter>,
}

fn metrics() -> &'static Metrics {
    static METRICS: OnceLock<Metrics> = OnceLock::new();
    METRICS.get_or_init(|| {
        let m = Metrics {
            total: Family::default(),
            errors: Family::default(),
        };
        let registry = coxswain_runtime::metrics::global();
        registry.register(
            "pod_gc_collector_force_delete_pods",
            "Number of pods that are being forcefully deleted since the Pod GC Controller started.",
            m.total.clone(),
        );
        registry.register(
            "pod_gc_collector_force_delete_pod_errors",
            "Number of errors encountered when forcefully deleting the pods since the Pod GC Controller started.",
            m.errors.clone(),
        );
        m
    })
}

fn count(pod: &Pod, reason: Reason, failed: bool) {
    let labels = Labels {
        namespace: pod.metadata.namespace.clone().unwrap_or_default(),
        reason: reason.label().to_string(),
    };
    let m = metrics();
    m.total.get_or_create(&labels).inc();
    if failed {
        m.errors.get_or_create(&labels).inc();
    }
}

/// The API calls of the collector.
pub trait PodGcControl: Send + Sync {
    /// Whether the node exists, read live (upstream `checkIfNodeExists`).
    fn node_exists(
        &self,
        name: &str,
    ) -> impl std::future::Future<Output = Result<bool, kube::Error>> + Send;
    /// Strategic-merge-patch the pod's status.
    fn patch_pod_status(
        &self,
        namespace: &str,
        name: &str,
        patch: Value,
    ) -> impl std::future::Future<Output = Result<(), kube::Error>> + Send;
    /// Delete the pod with grace period 0.
    fn force_delete_pod(
        &self,
        namespace: &str,
        name: &str,
    ) -> impl std::future::Future<Output = Result<(), kube::Error>> + Send;
}

/// The API server.
#[derive(Clone)]
pub struct LiveControl {
    client: kube::Client,
}

impl PodGcControl for LiveControl {
    async fn node_exists(&self, name: &str) -> Result<bool, kube::Error> {
        match Api::<Node>::all(self.client.clone()).get(name).await {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(false),
            Err(e) => Err(e),
        }
    }

    async fn patch_pod_status(
        &self,
        namespace: &str,
        name: &str,
        patch: Value,
    ) -> Result<(), kube::Error> {
        Api::<Pod>::namespaced(self.client.clone(), namespace)
            .patch_status(name, &PatchParams::default(), &Patch::Strategic(patch))
            .await
            .map(|_| ())
    }

    async fn force_delete_pod(&self, namespace: &str, name: &str) -> Result<(), kube::Error> {
        let params = DeleteParams {
            grace_period_seconds: Some(0),
            ..DeleteParams::default()
        };
        Api::<Pod>::namespaced(self.client.clone(), namespace)
            .delete(name, &params)
            .await
            .map(|_| ())
    }
}

fn phase(pod: &Pod) -> &str {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or_default()
}

/// Terminated: any phase but `Pending`, `Running` and `Unknown` (so also none).
pub fn is_terminated(pod: &Pod) -> bool {
    !matches!(phase(pod), "Pending" | "Running" | "Unknown")
}

/// Evicted by the kubelet (upstream `eviction.PodIsEvicted`).
pub fn is_evicted(pod: &Pod) -> bool {
    phase(pod) == "Failed"
        && pod.status.as_ref().and_then(|s| s.reason.as_deref()) == Some("Evicted")
}

/// Upstream `byEvictionAndCreationTimestamp`: evicted pods first, then the oldest,
/// then by name.
pub fn by_eviction_and_creation(a: &Pod, b: &Pod) -> std::cmp::Ordering {
    let created = |p: &Pod| p.metadata.creation_timestamp.as_ref().map(|t| t.0);
    is_evicted(b)
        .cmp(&is_evicted(a))
        .then_with(|| created(a).cmp(&created(b)))
        .then_with(|| a.metadata.name.cmp(&b.metadata.name))
}

fn node_ready(node: &Node) -> bool {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == "Ready"))
        .is_some_and(|c| c.status == "True")
}

fn out_of_service(node: &Node) -> bool {
    node.spec
        .as_ref()
        .and_then(|s| s.taints.as_ref())
        .is_some_and(|ts| ts.iter().any(|t| t.key == TAINT_NODE_OUT_OF_SERVICE))
}

/// The index of the pods a pass acts on: `terminated` for terminated pods, and
/// `terminating/<node>` for pods being deleted (`terminating/` for never scheduled).
pub const PODGC_INDEX: &str = "podgc";
const TERMINATED: &str = "terminated";
const TERMINATING: &str = "terminating/";

/// [`PODGC_INDEX`]'s values of a pod.
pub fn podgc_index(pod: &Pod) -> Vec<String> {
    let mut values = Vec::new();
    if is_terminated(pod) {
        values.push(TERMINATED.to_string());
    }
    if pod.metadata.deletion_timestamp.is_some() {
        values.push(format!("{TERMINATING}{}", node_of(pod)));
    }
    values
}

fn node_of(pod: &Pod) -> &str {
    pod.spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .unwrap_or_default()
}

/// The pods a pass reads, by the questions its steps ask: the pod cache through its
/// indexes in the controller, a list (scanned) in tests. Pods come in namespace/name
/// order.
pub trait PodSet {
    /// How many pods are terminated.
    fn terminated_count(&self) -> usize;
    /// The terminated pods.
    fn terminated(&self) -> Vec<Arc<Pod>>;
    /// The pods being deleted that are bound to `node` (`""`: never scheduled).
    fn terminating_on(&self, node: &str) -> Vec<Arc<Pod>>;
    /// The names of the nodes pods are bound to, each once, sorted.
    fn bound_nodes(&self) -> Vec<String>;
    /// The pods bound to `node`.
    fn bound_to(&self, node: &str) -> Vec<Arc<Pod>>;
}

impl PodSet for Vec<Arc<Pod>> {
    fn terminated_count(&self) -> usize {
        self.iter().filter(|p| is_terminated(p)).count()
    }
    fn terminated(&self) -> Vec<Arc<Pod>> {
        self.iter().filter(|p| is_terminated(p)).cloned().collect()
    }
    fn terminating_on(&self, node: &str) -> Vec<Arc<Pod>> {
        self.iter()
            .filter(|p| p.metadata.deletion_timestamp.is_some() && node_of(p) == node)
            .cloned()
            .collect()
    }
    fn bound_nodes(&self) -> Vec<String> {
        let nodes: BTreeSet<&str> = self.iter().map(|p| node_of(p)).collect();
        nodes
            .into_iter()
            .filter(|n| !n.is_empty())
            .map(str::to_string)
            .collect()
    }
    fn bound_to(&self, node: &str) -> Vec<Arc<Pod>> {
        self.iter()
            .filter(|p| node_of(p) == node)
            .cloned()
            .collect()
    }
}

/// The pod cache with [`PODGC_INDEX`] and [`POD_NODE_INDEX`] (see
/// [`register_indexes`]); a store without them is scanned.
impl PodSet for Store<Pod> {
    fn terminated_count(&self) -> usize {
        self.index_len(PODGC_INDEX, TERMINATED)
            .unwrap_or_else(|| self.list().terminated_count())
    }
    fn terminated(&self) -> Vec<Arc<Pod>> {
        self.by_index(PODGC_INDEX, TERMINATED)
            .unwrap_or_else(|| self.list().terminated())
    }
    fn terminating_on(&self, node: &str) -> Vec<Arc<Pod>> {
        self.by_index(PODGC_INDEX, &format!("{TERMINATING}{node}"))
            .unwrap_or_else(|| self.list().terminating_on(node))
    }
    fn bound_nodes(&self) -> Vec<String> {
        self.index_values(POD_NODE_INDEX)
            .unwrap_or_else(|| self.list().bound_nodes())
    }
    fn bound_to(&self, node: &str) -> Vec<Arc<Pod>> {
        self.by_index(POD_NODE_INDEX, node)
            .unwrap_or_else(|| self.list().bound_to(node))
    }
}

/// Add the indexes the collector reads to the pod cache.
pub fn register_indexes(cache: &coxswain_runtime::cache::Cache) {
    let store = cache.informer::<Pod>().store().clone();
    if !store.has_index(PODGC_INDEX) {
        cache.index_field::<Pod>(PODGC_INDEX, podgc_index);
    }
    if !store.has_index(POD_NODE_INDEX) {
        cache.index_field::<Pod>(POD_NODE_INDEX, pod_node_index);
    }
}

fn by_key(a: &Arc<Pod>, b: &Arc<Pod>) -> std::cmp::Ordering {
    (&a.metadata.namespace, &a.metadata.name).cmp(&(&b.metadata.namespace, &b.metadata.name))
}

/// The status patch that fails `pod` (with `condition` merged as upstream's
/// `UpdatePodCondition`: a new condition, or a changed status, gets `now` as its
/// transition time), or `None` when it already succeeded or failed. The pod's UID is
/// a precondition of the patch.
pub fn fail_patch(pod: &Pod, condition: Option<&PodCondition>, now: Timestamp) -> Option<Value> {
    if matches!(phase(pod), "Succeeded" | "Failed") {
        return None;
    }
    let mut status = json!({"phase": "Failed"});
    if let Some(c) = condition {
        let old = pod
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .and_then(|cs| cs.iter().find(|o| o.type_ == c.type_));
        let mut c = c.clone();
        c.last_transition_time = match old {
            Some(o) if o.status == c.status => o.last_transition_time.clone(),
            _ => Some(Time(now)),
        };
        status["conditions"] = json!([c]);
    }
    Some(json!({"metadata": {"uid": pod.metadata.uid}, "status": status}))
}

/// The collector's state: the nodes in quarantine, and when each is due.
pub struct PodGc<C> {
    control: C,
    threshold: i32,
    quarantine_time: SignedDuration,
    quarantine: BTreeMap<String, Timestamp>,
}

impl<C: PodGcControl> PodGc<C> {
    /// A collector keeping `threshold` terminated pods.
    pub fn new(control: C, threshold: i32, quarantine_time: Duration) -> Self {
        PodGc {
            control,
            threshold,
            quarantine_time: SignedDuration::try_from(quarantine_time).unwrap_or_default(),
            quarantine: BTreeMap::new(),
        }
    }

    /// The nodes waiting out their quarantine.
    pub fn quarantined(&self) -> usize {
        self.quarantine.len()
    }

    /// One pass over `pods` and `nodes` (the cache's) at `now` (upstream `gc`).
    pub async fn gc<P: PodSet + ?Sized>(&mut self, pods: &P, nodes: &[Arc<Node>], now: Timestamp) {
        if self.threshold > 0 {
            self.gc_terminated(pods, now).await;
        }
        self.gc_terminating(pods, nodes, now).await;
        self.gc_orphaned(pods, nodes, now).await;
        self.gc_unscheduled_terminating(pods, now).await;
    }

    async fn mark_failed_and_delete(
        &self,
        pod: &Pod,
        condition: Option<&PodCondition>,
        now: Timestamp,
        reason: Reason,
    ) {
        let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
        let name = pod.metadata.name.as_deref().unwrap_or_default();
        tracing::info!(pod = %format!("{ns}/{name}"), reason = reason.label(), "force deleting a pod");
        let mut result = Ok(());
        if let Some(patch) = fail_patch(pod, condition, now) {
            result = self.control.patch_pod_status(ns, name, patch).await;
        }
        if result.is_ok() {
            result = self.control.force_delete_pod(ns, name).await;
        }
        if let Err(e) = &result {
            tracing::warn!(pod = %format!("{ns}/{name}"), error = %e, "force deleting a pod");
        }
        count(pod, reason, result.is_err());
    }

    async fn delete_all(&self, pods: &[Arc<Pod>], now: Timestamp, reason: Reason) {
        futures::future::join_all(
            pods.iter()
                .map(|p| self.mark_failed_and_delete(p, None, now, reason)),
        )
        .await;
    }

    /// Terminated pods beyond the threshold, evicted and oldest first.
    async fn gc_terminated<P: PodSet + ?Sized>(&self, pods: &P, now: Timestamp) {
        // counted without decoding: most passes stop here
        let excess = pods.terminated_count() as i64 - i64::from(self.threshold);
        if excess <= 0 {
            return;
        }
        let mut terminated = pods.terminated();
        terminated.sort_by(|a, b| by_eviction_and_creation(a, b));
        terminated.truncate(excess as usize);
        tracing::info!(
            count = excess,
            threshold = self.threshold,
            "garbage collecting terminated pods"
        );
        self.delete_all(&terminated, now, Reason::Terminated).await;
    }

    /// Terminating pods on not-Ready out-of-service nodes.
    async fn gc_terminating<P: PodSet + ?Sized>(
        &self,
        pods: &P,
        nodes: &[Arc<Node>],
        now: Timestamp,
    ) {
        let mut doomed: Vec<Arc<Pod>> = nodes
            .iter()
            .filter(|n| !node_ready(n) && out_of_service(n))
            .filter_map(|n| n.metadata.name.as_deref())
            .filter(|name| !name.is_empty())
            .flat_map(|name| pods.terminating_on(name))
            .collect();
        if doomed.is_empty() {
            return;
        }
        doomed.sort_by(|a, b| by_eviction_and_creation(a, b));
        self.delete_all(&doomed, now, Reason::OutOfService).await;
    }

    /// Pods on nodes gone for longer than the quarantine.
    async fn gc_orphaned<P: PodSet + ?Sized>(
        &mut self,
        pods: &P,
        nodes: &[Arc<Node>],
        now: Timestamp,
    ) {
        let existing: BTreeSet<&str> = nodes
            .iter()
            .filter_map(|n| n.metadata.name.as_deref())
            .collect();
        let due = now
            .checked_add(self.quarantine_time)
            .unwrap_or(Timestamp::MAX);
        for node in pods.bound_nodes() {
            if !existing.contains(node.as_str()) {
                // a node already waiting keeps its earlier time
                self.quarantine.entry(node).or_insert(due);
            }
        }
        let ready: Vec<String> = self
            .quarantine
            .iter()
            .filter(|(_, at)| **at <= now)
            .map(|(n, _)| n.clone())
            .collect();
        let mut orphans = Vec::new();
        for node in ready {
            self.quarantine.remove(&node);
            if existing.contains(node.as_str()) {
                continue;
            }
            match self.control.node_exists(&node).await {
                Ok(false) => orphans.extend(pods.bound_to(&node)),
                Ok(true) => {}
                // quarantined again on the next pass if pods still name it
                Err(e) => tracing::warn!(node, error = %e, "reading a node"),
            }
        }
        // in the cache's order, as upstream's walk over the pod list
        orphans.sort_by(by_key);
        let condition = PodCondition {
            type_: "DisruptionTarget".into(),
            status: "True".into(),
            reason: Some("DeletionByPodGC".into()),
            message: Some("PodGC: node no longer exists".into()),
            ..PodCondition::default()
        };
        for p in &orphans {
            self.mark_failed_and_delete(p, Some(&condition), now, Reason::Orphaned)
                .await;
        }
    }

    /// Terminating pods never scheduled to a node.
    async fn gc_unscheduled_terminating<P: PodSet + ?Sized>(&self, pods: &P, now: Timestamp) {
        for p in pods.terminating_on("") {
            self.mark_failed_and_delete(&p, None, now, Reason::Unscheduled)
                .await;
        }
    }
}

/// The collector as a runnable of `mgr`: after the pod and node caches synced, a pass
/// at once and then every `gc_check_period`.
pub fn podgc_controller(
    mgr: &impl ClusterAccess,
    options: &PodGcControllerOptions,
) -> impl coxswain_runtime::manager::Runnable {
    let cache = mgr.cache().clone();
    // registered from the start, as upstream's
    metrics();
    register_indexes(&cache);
    let pods = cache.informer::<Pod>();
    let nodes = cache.informer::<Node>();
    let control = LiveControl {
        client: mgr.kube_client().clone(),
    };
    let threshold = options.terminated_pod_gc_threshold;
    let period = options.gc_check_period.max(Duration::from_millis(1));
    let quarantine = options.quarantine_time;
    runnable("pod-garbage-collector", true, move |cancel| async move {
        tokio::select! {
            _ = async { pods.wait_for_sync().await; nodes.wait_for_sync().await } => {}
            _ = cancel.cancelled() => return Ok::<(), BoxError>(()),
        }
        let mut gc = PodGc::new(control, threshold, quarantine);
        let mut every = tokio::time::interval(period);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = every.tick() => {}
                _ = cancel.cancelled() => return Ok(()),
            }
            let n = nodes.store().list();
            gc.gc(pods.store().as_ref(), &n, Timestamp::now()).await;
        }
    })
}

#[cfg(test)]
mod tests;
