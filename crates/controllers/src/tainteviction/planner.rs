//! The decisions of the taint eviction controller, without timers or API calls: which
//! pods to delete when, from the nodes' `NoExecute` taints and the pods' tolerations
//! (upstream `processPodOnNode`, `handlePodUpdate`, `handleNodeUpdate` and the
//! `TimedWorkerQueue` bookkeeping). Every method takes the time it runs at, so tests
//! drive it with instants of their choosing.

use std::collections::HashMap;

use apimachinery::taints::{matching_tolerations, min_toleration_time};
use k8s_openapi::api::core::v1::{Node, Pod, Taint, Toleration};
use tokio::time::Instant;

/// A pod, by namespace and name (upstream `types.NamespacedName`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PodKey {
    /// The pod's namespace.
    pub namespace: String,
    /// The pod's name.
    pub name: String,
}

impl PodKey {
    /// The key of `pod`.
    pub fn of(pod: &Pod) -> PodKey {
        PodKey {
            namespace: pod.metadata.namespace.clone().unwrap_or_default(),
            name: pod.metadata.name.clone().unwrap_or_default(),
        }
    }
}

impl std::fmt::Display for PodKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// A deletion waiting for its time, or under way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Work {
    /// When the countdown started (upstream `TimedWorker.CreatedAt`).
    pub created_at: Instant,
    /// When the pod is deleted.
    pub fire_at: Instant,
    /// Whether the deletion has started (it can no longer be cancelled).
    pub running: bool,
    /// Tells this work from an earlier one of the same pod.
    pub generation: u64,
}

/// The `NoExecute` taints of `node` (upstream `getNoExecuteTaints`).
pub fn no_execute_taints(node: &Node) -> Vec<Taint> {
    node.spec
        .as_ref()
        .and_then(|s| s.taints.as_ref())
        .map(|ts| {
            ts.iter()
                .filter(|t| t.effect == "NoExecute")
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}

/// The node a pod is bound to ("" when none).
pub fn node_name(pod: &Pod) -> &str {
    pod.spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .unwrap_or_default()
}

fn tolerations(pod: &Pod) -> &[Toleration] {
    pod.spec
        .as_ref()
        .and_then(|s| s.tolerations.as_deref())
        .unwrap_or_default()
}

/// Whether a node change matters: its `NoExecute` taints changed, or it came or went
/// (upstream `NodeUpdated`).
pub fn node_change_matters(old: Option<&Node>, new: Option<&Node>) -> bool {
    match (old, new) {
        (Some(o), Some(n)) => no_execute_taints(o) != no_execute_taints(n),
        _ => true,
    }
}

/// Whether a pod change matters: its tolerations or its node changed, or it came or
/// went (upstream `PodUpdated`).
pub fn pod_change_matters(old: Option<&Pod>, new: Option<&Pod>) -> bool {
    match (old, new) {
        (Some(o), Some(n)) => tolerations(o) != tolerations(n) || node_name(o) != node_name(n),
        _ => true,
    }
}

/// The controller's state: the `NoExecute` taints of every tainted node and the
/// pending deletions.
#[derive(Debug, Default)]
pub struct Planner {
    tainted_nodes: HashMap<String, Vec<Taint>>,
    works: HashMap<PodKey, Work>,
    next_generation: u64,
}

impl Planner {
    /// An empty planner.
    pub fn new() -> Self {
        Self::default()
    }

    /// The known `NoExecute` taints of `node`, if it has any.
    pub fn taints_of(&self, node: &str) -> Option<&[Taint]> {
        self.tainted_nodes.get(node).map(Vec::as_slice)
    }

    /// Record the `NoExecute` taints of `node` (upstream tests set `taintedNodes`).
    pub fn set_taints(&mut self, node: &str, taints: Vec<Taint>) {
        if taints.is_empty() {
            self.tainted_nodes.remove(node);
        } else {
            self.tainted_nodes.insert(node.to_string(), taints);
        }
    }

    /// The pending deletion of `pod` (upstream `GetWorkerUnsafe`).
    pub fn work(&self, pod: &PodKey) -> Option<&Work> {
        self.works.get(pod)
    }

    /// Every pending deletion.
    pub fn works(&self) -> impl Iterator<Item = (&PodKey, &Work)> {
        self.works.iter()
    }

    /// The earliest time a waiting deletion is due.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.works
            .values()
            .filter(|w| !w.running)
            .map(|w| w.fire_at)
            .min()
    }

    /// The deletions due at `now`, marked running, with their generations (for
    /// [`Planner::finished`]).
    pub fn take_due(&mut self, now: Instant) -> Vec<(PodKey, u64)> {
        let mut due: Vec<(PodKey, u64)> = Vec::new();
        for (key, w) in self.works.iter_mut() {
            if !w.running && w.fire_at <= now {
                w.running = true;
                due.push((key.clone(), w.generation));
            }
        }
        due.sort();
        due
    }

    /// The deletion of `pod` started as `generation` is over (it succeeded or gave up).
    pub fn finished(&mut self, pod: &PodKey, generation: u64) {
        if self
            .works
            .get(pod)
            .is_some_and(|w| w.generation == generation)
        {
            self.works.remove(pod);
        }
    }

    /// Schedule the deletion unless one exists (upstream `AddWork`).
    fn add_work(&mut self, pod: &PodKey, created_at: Instant, fire_at: Instant) {
        if self.works.contains_key(pod) {
            return;
        }
        self.next_generation += 1;
        self.works.insert(
            pod.clone(),
            Work {
                created_at,
                fire_at,
                running: false,
                generation: self.next_generation,
            },
        );
    }

    /// Drop the deletion of `pod`; whether a waiting one was cancelled (upstream
    /// `cancelWorkWithEvent`: then a cancellation event is due).
    fn cancel(&mut self, pod: &PodKey, cancelled: &mut Vec<PodKey>) {
        if let Some(w) = self.works.remove(pod) {
            if !w.running {
                cancelled.push(pod.clone());
            }
        }
    }

    /// Decide about one pod on a node with `taints` (non-empty) at `now` (upstream
    /// `processPodOnNode`); pods whose waiting deletion was cancelled are added to
    /// `cancelled`.
    pub fn process_pod_on_node(
        &mut self,
        pod: &PodKey,
        tolerations: &[Toleration],
        taints: &[Taint],
        now: Instant,
        cancelled: &mut Vec<PodKey>,
    ) {
        if taints.is_empty() {
            self.cancel(pod, cancelled);
        }
        let Some(used) = matching_tolerations(taints, tolerations) else {
            tracing::debug!(%pod, "not all taints are tolerated: deleting the pod at once");
            self.cancel(pod, cancelled);
            self.add_work(pod, now, now);
            return;
        };
        let Some(min) = min_toleration_time(&used) else {
            self.cancel(pod, cancelled);
            return;
        };
        let mut start = now;
        let trigger = now + min;
        if let Some(existing) = self.works.get(pod) {
            start = existing.created_at;
            // an earlier deadline stays: lengthening a toleration does not help
            if start + min < trigger {
                return;
            }
            self.cancel(pod, cancelled);
        }
        self.add_work(pod, start, start + min);
    }

    /// A pod changed; `pod` is its current state in the cache (`None`: deleted) and
    /// `node` the node the change named (upstream `handlePodUpdate`).
    pub fn pod_updated(
        &mut self,
        key: &PodKey,
        node: &str,
        pod: Option<&Pod>,
        now: Instant,
    ) -> Vec<PodKey> {
        let mut cancelled = Vec::new();
        let Some(pod) = pod else {
            self.cancel(key, &mut cancelled);
            return cancelled;
        };
        let current = node_name(pod);
        if current != node || current.is_empty() {
            return cancelled;
        }
        let Some(taints) = self.tainted_nodes.get(current).cloned() else {
            return cancelled;
        };
        self.process_pod_on_node(key, tolerations(pod), &taints, now, &mut cancelled);
        cancelled
    }

    /// A node changed; `node` is its current state in the cache (`None`: deleted) and
    /// `pods` the pods bound to it (upstream `handleNodeUpdate`).
    pub fn node_updated(
        &mut self,
        name: &str,
        node: Option<&Node>,
        pods: &[impl AsRef<Pod>],
        now: Instant,
    ) -> Vec<PodKey> {
        let mut cancelled = Vec::new();
        let Some(node) = node else {
            self.tainted_nodes.remove(name);
            return cancelled;
        };
        let taints = no_execute_taints(node);
        self.set_taints(name, taints.clone());
        if taints.is_empty() {
            for p in pods {
                self.cancel(&PodKey::of(p.as_ref()), &mut cancelled);
            }
            return cancelled;
        }
        for p in pods {
            let p = p.as_ref();
            self.process_pod_on_node(&PodKey::of(p), tolerations(p), &taints, now, &mut cancelled);
        }
        cancelled
    }
}
