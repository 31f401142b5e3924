//! One sync of a ReplicaSet, after upstream's `syncReplicaSet`, `manageReplicas`,
//! `claimPods`, `getPodsToDelete` and `updateReplicaSetStatus`
//! (`pkg/controller/replicaset/replica_set.go`, `replica_set_utils.go`).
//!
//! 1. Read the ReplicaSet from the cache (gone: forget its expectations).
//! 2. Note whether its expectations are satisfied *before* listing pods.
//! 3. Look up the pods it controls and the orphans of its namespace in the cache's
//!    controller index (what claiming every pod of the namespace would act on, see
//!    [`crate::controller_utils::owner_index`]), keep the active ones and claim them.
//! 4. If the expectations were satisfied and the ReplicaSet is not being deleted, create
//!    the missing pods (at most [`BURST_REPLICAS`], in slow-start batches) or delete
//!    the surplus (lowest ranked first), recording expectations before acting.
//! 5. Write the status if it changed (one retry on a fresh copy), then requeue with
//!    backoff on a create/delete error, or after the time the next ready pod needs to
//!    become available.

use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use coxswain_runtime::cache::Cache;
use coxswain_runtime::client::Client;
use coxswain_runtime::controller::{Action, Context, ReconcileError, ReconcileResult, Reconciler};
use coxswain_runtime::events::{object_reference, EventRecorder, EventType};
use coxswain_runtime::ObjectKey;
use k8s_openapi::api::apps::v1::ReplicaSetStatus;
use k8s_openapi::api::core::v1::{ObjectReference, Pod};
use k8s_openapi::jiff::Timestamp;

use super::kind::{ReplicaSetKind, Spec};
use super::status::{calculate_status, status_unchanged};
use crate::controller_utils::owner_index;
use crate::controller_utils::ranking::ActivePodsWithRanks;
use crate::controller_utils::{
    claim_pods, filter_active_pods, filter_terminating_pods, is_pod_active,
    next_pod_availability_check, pod_key, slow_start_batch, ControllerExpectations,
    ControllerIdentity, PodControl, BURST_REPLICAS, SLOW_START_INITIAL_BATCH_SIZE,
};
use coxswain_runtime::controllerutil::{get_controller_of, new_controller_ref};

/// Extra wait before re-checking availability, against clock skew (upstream adds a
/// second when it requeues for `minReadySeconds`).
const AVAILABILITY_SKEW: Duration = Duration::from_secs(1);

/// The reconciler of ReplicaSets (or ReplicationControllers) of kind `K`.
pub struct ReplicaSetReconciler<K> {
    cache: Arc<Cache>,
    client: Client,
    /// reads `K` from the server (adoption re-check, status retry)
    fresh: Client,
    pods: PodControl,
    recorder: EventRecorder,
    expectations: Arc<ControllerExpectations>,
    burst_replicas: usize,
    _kind: PhantomData<fn() -> K>,
}

impl<K: ReplicaSetKind> ReplicaSetReconciler<K> {
    pub(crate) fn new(
        client: Client,
        recorder: EventRecorder,
        expectations: Arc<ControllerExpectations>,
    ) -> Self {
        let cache = client.cache().clone();
        owner_index::register_controller_uid_index::<Pod>(&cache);
        owner_index::register_controller_uid_index::<K>(&cache);
        owner_index::register_pod_template_hash_index(&cache);
        ReplicaSetReconciler {
            fresh: client.clone().uncached::<K>(),
            pods: PodControl::new(client.clone(), recorder.clone()),
            client,
            cache,
            recorder,
            expectations,
            burst_replicas: BURST_REPLICAS,
            _kind: PhantomData,
        }
    }

    async fn sync(&self, key: ObjectKey) -> ReconcileResult {
        let Some(rs) = self.cache.get::<K>(&key).await else {
            tracing::debug!(kind = %K::kind(&()), %key, "deleted");
            self.expectations.delete_expectations(&key);
            return Ok(Action::Done);
        };
        let needs_sync = self.expectations.satisfied(&key);
        let regarding = object_reference(rs.as_ref());
        let spec = match rs.spec_view() {
            Ok(spec) => spec,
            Err(e) => {
                self.recorder.event(
                    &regarding,
                    None,
                    EventType::Warning,
                    e.reason,
                    "Sync",
                    &e.message,
                );
                return Err(ReconcileError::msg(format!("{} {key}: {e}", K::kind(&()))));
            }
        };
        let namespace = key.namespace().unwrap_or_default();
        let controller = ControllerIdentity::of(rs.as_ref());
        let all_pods = owner_index::claimable_pods(
            &*owner_index::synced_store::<Pod>(&self.cache).await,
            namespace,
            &controller.uid,
            spec.selector.as_ref(),
        );
        let selects = |p: &Pod| match &p.metadata.labels {
            Some(l) => spec.selects(l),
            None => spec.selects(&Default::default()),
        };
        let active = self
            .claim(&controller, &key, filter_active_pods(&all_pods), &selects)
            .await
            .map_err(|e| ReconcileError::msg(format!("claiming pods of {key}: {e}")))?;
        let terminating: Option<Vec<Arc<Pod>>> = K::TERMINATING_REPLICAS.then(|| {
            filter_terminating_pods(&all_pods)
                .into_iter()
                .filter(|p| controller.controls(&p.metadata) && selects(p))
                .collect()
        });

        let manage_error = if needs_sync && rs.meta().deletion_timestamp.is_none() {
            self.manage_replicas(&key, rs.as_ref(), &spec, &active, &regarding)
                .await
                .err()
        } else {
            None
        };

        let now = Timestamp::now();
        let status = calculate_status(
            &rs.status_view(),
            &spec,
            &active,
            terminating.as_deref(),
            manage_error.as_deref(),
            now,
        );
        self.update_status(&key, rs.as_ref(), status.clone())
            .await?;

        if let Some(e) = manage_error {
            return Err(ReconcileError::msg(e));
        }
        let mut next: Option<Duration> = None;
        if !needs_sync {
            // a lost watch event must not put the ReplicaSet to sleep for good
            next = self.expectations.time_to_expiry(&key);
        }
        if spec.min_ready_seconds > 0
            && status.ready_replicas.unwrap_or(0) != status.available_replicas.unwrap_or(0)
        {
            let wait = next_pod_availability_check(&active, spec.min_ready_seconds, now)
                .map(|d| d + AVAILABILITY_SKEW)
                .unwrap_or(Duration::from_secs(u64::from(
                    spec.min_ready_seconds.unsigned_abs(),
                )));
            next = Some(next.map_or(wait, |n| n.min(wait)));
        }
        Ok(next.map_or(Action::Done, Action::RequeueAfter))
    }

    /// Claim `pods` for the ReplicaSet (adopting matching orphans, releasing owned pods
    /// that no longer match): the pods it controls.
    async fn claim(
        &self,
        controller: &ControllerIdentity,
        key: &ObjectKey,
        pods: Vec<Arc<Pod>>,
        selects: &(dyn Fn(&Pod) -> bool + Sync),
    ) -> Result<Vec<Arc<Pod>>, crate::controller_utils::ref_manager::ClaimError> {
        let patch = |pod: Arc<Pod>, body: serde_json::Value| {
            let pods = self.pods.clone();
            async move {
                let ns = pod.metadata.namespace.clone().unwrap_or_default();
                let name = pod.metadata.name.clone().unwrap_or_default();
                pods.patch_pod(&ns, &name, &body).await
            }
        };
        let can_adopt = || self.can_adopt(key, controller.uid.clone());
        claim_pods(controller, pods, selects, patch, can_adopt).await
    }

    /// Before adopting: re-read the ReplicaSet from the server; it must be the same
    /// object and not being deleted (upstream `RecheckDeletionTimestamp`).
    async fn can_adopt(&self, key: &ObjectKey, uid: String) -> Result<(), String> {
        let kind = K::kind(&());
        match self.fresh.get::<K>(key).await {
            Ok(Some(fresh)) => {
                let fresh_uid = fresh.meta().uid.clone().unwrap_or_default();
                if fresh_uid != uid {
                    return Err(format!(
                        "original {kind} {key} is gone: got uid {fresh_uid}, wanted {uid}"
                    ));
                }
                if let Some(ts) = &fresh.meta().deletion_timestamp {
                    return Err(format!("{key} has just been deleted at {}", ts.0));
                }
                Ok(())
            }
            Ok(None) => Err(format!("original {kind} {key} is gone")),
            Err(e) => Err(e.to_string()),
        }
    }

    /// Create or delete pods so that `active` reaches `spec.replicas`.
    async fn manage_replicas(
        &self,
        key: &ObjectKey,
        rs: &K,
        spec: &Spec,
        active: &[Arc<Pod>],
        regarding: &ObjectReference,
    ) -> Result<(), String> {
        let diff = active.len() as i64 - i64::from(spec.replicas);
        let namespace = key.namespace().unwrap_or_default();
        if diff < 0 {
            let n = usize::try_from(-diff)
                .unwrap_or(usize::MAX)
                .min(self.burst_replicas);
            // expect before acting: the informer may see a pod before create returns
            self.expectations.expect_creations(key, n);
            tracing::debug!(kind = %K::kind(&()), %key, need = spec.replicas, creating = n, "too few replicas");
            let controller_ref = new_controller_ref(rs);
            let (created, err) = slow_start_batch(n, SLOW_START_INITIAL_BATCH_SIZE, || async {
                match self
                    .pods
                    .create_pod(
                        namespace,
                        &spec.template,
                        regarding,
                        key.name(),
                        &controller_ref,
                    )
                    .await
                {
                    Ok(_) => Ok(()),
                    // nothing to do in a namespace being deleted
                    Err(e) if e.is_namespace_terminating() => Ok(()),
                    Err(e) => Err(e),
                }
            })
            .await;
            let skipped = n - created;
            if skipped > 0 {
                // the informer will never see these
                tracing::debug!(%key, skipped, "slow-start failure: skipping the creation of pods");
                self.expectations.lower_creations(key, skipped);
            }
            return err.map_or(Ok(()), |e| Err(e.to_string()));
        }
        if diff > 0 {
            let n = usize::try_from(diff)
                .unwrap_or(usize::MAX)
                .min(self.burst_replicas);
            tracing::debug!(kind = %K::kind(&()), %key, need = spec.replicas, deleting = n, "too many replicas");
            let related = self.indirectly_related_pods(rs).await;
            let doomed = pods_to_delete(active, &related, n, Some(Timestamp::now()));
            self.expectations
                .expect_deletions(key, doomed.iter().map(|p| pod_key(p)));
            let results = futures::future::join_all(doomed.iter().map(|pod| async move {
                let name = pod.metadata.name.as_deref().unwrap_or_default();
                (pod, self.pods.delete_pod(namespace, name, regarding).await)
            }))
            .await;
            let mut first_err = None;
            for (pod, result) in results {
                match result {
                    Ok(true) => {}
                    // gone already, or will not go: the informer will not report it
                    Ok(false) => self.expectations.deletion_observed(key, &pod_key(pod)),
                    Err(e) => {
                        self.expectations.deletion_observed(key, &pod_key(pod));
                        first_err.get_or_insert(e.to_string());
                    }
                }
            }
            return first_err.map_or(Ok(()), Err);
        }
        Ok(())
    }

    /// The pods of every ReplicaSet controlled by the same owner as `rs` (a
    /// Deployment's ReplicaSets): deletions prefer nodes that run many of them
    /// (upstream `getIndirectlyRelatedPods`: each sibling's pods by its selector).
    async fn indirectly_related_pods(&self, rs: &K) -> Vec<Arc<Pod>> {
        let Some(owner) = get_controller_of(rs.meta()).map(|r| r.uid.clone()) else {
            return Vec::new();
        };
        let namespace = rs.meta().namespace.clone().unwrap_or_default();
        let siblings = owner_index::controlled_by(
            &*owner_index::synced_store::<K>(&self.cache).await,
            &namespace,
            &owner,
        );
        let pods = owner_index::synced_store::<Pod>(&self.cache).await;
        let mut seen = std::collections::HashSet::new();
        let mut related = Vec::new();
        for sibling in siblings {
            let Ok(Spec {
                selector: Some(selector),
                ..
            }) = sibling.spec_view()
            else {
                continue; // an invalid (or missing) selector matches no pod
            };
            for pod in owner_index::pods_selected(&pods, &namespace, &selector) {
                if seen.insert(pod.metadata.uid.clone()) {
                    related.push(pod);
                }
            }
        }
        related
    }

    /// Write `status` unless nothing changed; on failure retry once on a fresh copy.
    async fn update_status(
        &self,
        key: &ObjectKey,
        rs: &K,
        mut status: ReplicaSetStatus,
    ) -> Result<(), ReconcileError> {
        let generation = rs.meta().generation.unwrap_or(0);
        if status_unchanged(&rs.status_view(), &status, generation) {
            return Ok(());
        }
        status.observed_generation = (generation != 0).then_some(generation);
        let mut target = rs.clone();
        for attempt in 0..2 {
            target.set_status(status.clone());
            match self.client.update_status(&target).await {
                Ok(_) => return Ok(()),
                Err(e) if attempt == 0 => {
                    tracing::debug!(%key, error = %e, "status update failed; retrying on a fresh copy");
                    match self.fresh.get::<K>(key).await {
                        Ok(Some(fresh)) => target = (*fresh).clone(),
                        Ok(None) => return Ok(()),
                        Err(get_err) => return Err(get_err.into()),
                    }
                }
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }
}

/// The `n` pods of `active` to delete first: ranked by how many `related` active pods
/// share their node (upstream `getPodsToDelete` and
/// `getPodsRankedByRelatedPodsOnSameNode`), compared at `now`.
pub fn pods_to_delete(
    active: &[Arc<Pod>],
    related: &[Arc<Pod>],
    n: usize,
    now: Option<Timestamp>,
) -> Vec<Arc<Pod>> {
    let n = n.min(active.len());
    if n == active.len() {
        // no need to rank when all go
        return active.to_vec();
    }
    let node = |p: &Pod| {
        p.spec
            .as_ref()
            .and_then(|s| s.node_name.clone())
            .unwrap_or_default()
    };
    let mut on_node = std::collections::HashMap::<String, usize>::new();
    for p in related.iter().filter(|p| is_pod_active(p)) {
        *on_node.entry(node(p)).or_default() += 1;
    }
    let ranks = active
        .iter()
        .map(|p| on_node.get(&node(p)).copied().unwrap_or(0))
        .collect();
    let mut ranked = ActivePodsWithRanks::new(active.to_vec(), ranks, now);
    ranked.sort();
    ranked.pods.truncate(n);
    ranked.pods
}

impl<K: ReplicaSetKind> Reconciler for ReplicaSetReconciler<K> {
    async fn reconcile(&self, _ctx: Context, request: ObjectKey) -> ReconcileResult {
        self.sync(request).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller_utils::pod::tests::pod;
    use k8s_openapi::api::core::v1::PodSpec;

    fn on_node(name: &str, node: &str, phase: &str, ready: bool) -> Arc<Pod> {
        let mut p = pod(name, phase, ready.then(Timestamp::now));
        p.metadata.uid = Some(format!("uid-{name}"));
        p.spec = Some(PodSpec {
            node_name: (!node.is_empty()).then(|| node.to_string()),
            ..Default::default()
        });
        Arc::new(p)
    }

    fn names(pods: &[Arc<Pod>]) -> Vec<String> {
        pods.iter()
            .map(|p| p.metadata.name.clone().unwrap_or_default())
            .collect()
    }

    // After upstream TestGetPodsToDelete (replica_set_test.go).
    #[test]
    fn pods_to_delete_table() {
        let ready = on_node("scheduled-running-ready", "node1", "Running", true);
        let not_ready = on_node("scheduled-running-not-ready", "node1", "Running", false);
        let unscheduled = on_node("unscheduled-pending", "", "Pending", false);
        let pending = on_node("scheduled-pending", "node1", "Pending", false);
        let ready_node2 = on_node("ready-on-node2", "node2", "Running", true);
        let ready_node3 = on_node("ready-on-node3", "node3", "Running", true);
        let related_node2 = on_node("related-on-node2", "node2", "Running", true);
        // (name, active, related, how many to delete, expected)
        type Case<'a> = (&'a str, Vec<Arc<Pod>>, Vec<Arc<Pod>>, usize, Vec<&'a str>);
        let cases: Vec<Case> = vec![
            (
                "diff = 0",
                vec![ready.clone(), not_ready.clone()],
                vec![],
                0,
                vec![],
            ),
            (
                "diff = len: input order, no ranking",
                vec![ready.clone(), not_ready.clone()],
                vec![],
                2,
                vec!["scheduled-running-ready", "scheduled-running-not-ready"],
            ),
            (
                "diff < len: not ready first",
                vec![ready.clone(), not_ready.clone()],
                vec![],
                1,
                vec!["scheduled-running-not-ready"],
            ),
            (
                "various phases and conditions",
                vec![
                    ready.clone(),
                    not_ready.clone(),
                    unscheduled.clone(),
                    pending.clone(),
                ],
                vec![],
                3,
                vec![
                    "unscheduled-pending",
                    "scheduled-pending",
                    "scheduled-running-not-ready",
                ],
            ),
            (
                "ready and colocated with another ready pod go first",
                vec![ready_node3.clone(), ready_node2.clone()],
                vec![
                    ready_node3.clone(),
                    ready_node2.clone(),
                    related_node2.clone(),
                ],
                1,
                vec!["ready-on-node2"],
            ),
            (
                "readiness outranks colocation",
                vec![ready_node2.clone(), not_ready.clone()],
                vec![
                    ready_node2.clone(),
                    related_node2.clone(),
                    not_ready.clone(),
                ],
                1,
                vec!["scheduled-running-not-ready"],
            ),
        ];
        for (name, active, related, n, want) in cases {
            let got = pods_to_delete(&active, &related, n, Some(Timestamp::now()));
            assert_eq!(names(&got), want, "{name}");
        }
    }
}
