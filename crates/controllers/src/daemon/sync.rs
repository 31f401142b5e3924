//! One sync of a DaemonSet, after upstream's `syncDaemonSet`, `updateDaemonSet`,
//! `syncNodes`, `constructHistory`, `cleanupHistory` and `storeDaemonSetStatus`
//! (`pkg/controller/daemon/daemon_controller.go`, `update.go`).
//!
//! 1. Read the DaemonSet and all nodes from the cache (gone: forget expectations).
//! 2. An empty selector selects all pods: warn (`SelectingAll`) and stop. A DaemonSet
//!    being deleted is left alone.
//! 3. Find or create the ControllerRevision of the current template (adopting and
//!    releasing revisions by selector, relabelling pods when duplicates are merged,
//!    bumping `collisionCount` on a hash collision).
//! 4. If the expectations are not satisfied only the status is written.
//! 5. Otherwise create and delete pods per node ([`super::plan::plan_manage`]), then,
//!    if nothing is in flight, take the next rolling-update step, then trim the
//!    history to `revisionHistoryLimit`.
//! 6. Write the status (one retry on a fresh copy).

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use apimachinery::selector::LabelSelector;
use coxswain_runtime::cache::Cache;
use coxswain_runtime::client::Client;
use coxswain_runtime::controller::{Action, Context, ReconcileError, ReconcileResult, Reconciler};
use coxswain_runtime::controllerutil::{get_controller_of, new_controller_ref};
use coxswain_runtime::events::{object_reference, EventRecorder, EventType};
use coxswain_runtime::ObjectKey;
use k8s_openapi::api::apps::v1::{ControllerRevision, DaemonSet, DaemonSetStatus};
use k8s_openapi::api::core::v1::{Node, ObjectReference, Pod};
use k8s_openapi::jiff::Timestamp;
use kube::api::{DeleteParams, Patch, PatchParams};

use super::backoff::Backoff;
use super::plan::{
    calculate_counts, nodes_to_daemon_pods, plan_manage, plan_rolling_update, Counts, NodeToPods,
};
use super::revisions::{
    keep_of, matches, max_revision, new_revision, revision_hash, revisions_to_delete,
};
use super::util::{
    create_pod_template, is_rolling_update, replace_node_name_affinity, template_generation,
    CONTROLLER_REVISION_HASH_LABEL,
};
use crate::controller_utils::consistency::ConsistencyStore;
use crate::controller_utils::ref_manager::{adopt_patch, claim_action, release_patch};
use crate::controller_utils::{
    claim_pods, pod_key, slow_start_batch, ControllerExpectations, ControllerIdentity, PodControl,
    SLOW_START_INITIAL_BATCH_SIZE,
};

/// Most creations and most deletions of one sync (upstream `BurstReplicas` of the
/// DaemonSet controller).
pub const BURST_REPLICAS: usize = 250;

/// Event reason when the selector is empty.
pub const SELECTING_ALL_REASON: &str = "SelectingAll";

/// The reconciler of DaemonSets.
pub struct DaemonSetReconciler {
    cache: Arc<Cache>,
    client: Client,
    /// reads DaemonSets and ControllerRevisions from the server
    fresh: Client,
    pods: PodControl,
    recorder: EventRecorder,
    expectations: Arc<ControllerExpectations>,
    backoff: Arc<Mutex<Backoff>>,
    consistency: Arc<ConsistencyStore>,
    burst_replicas: usize,
}

type SyncResult<T = ()> = Result<T, String>;

fn api_reason(e: &kube::Error) -> Option<&str> {
    match e {
        kube::Error::Api(s) => Some(s.reason.as_str()),
        _ => None,
    }
}

impl DaemonSetReconciler {
    pub(crate) fn new(
        client: Client,
        recorder: EventRecorder,
        expectations: Arc<ControllerExpectations>,
        consistency: Arc<ConsistencyStore>,
    ) -> Self {
        let cache = client.cache().clone();
        DaemonSetReconciler {
            fresh: client
                .clone()
                .uncached::<DaemonSet>()
                .uncached::<ControllerRevision>(),
            pods: PodControl::new(client.clone(), recorder.clone()),
            client,
            cache,
            recorder,
            expectations,
            backoff: Arc::new(Mutex::new(Backoff::default())),
            consistency,
            burst_replicas: BURST_REPLICAS,
        }
    }

    fn backoff(&self) -> std::sync::MutexGuard<'_, Backoff> {
        self.backoff.lock().unwrap_or_else(|e| e.into_inner())
    }

    async fn sync(&self, key: ObjectKey) -> ReconcileResult {
        let Some(ds) = self.cache.get::<DaemonSet>(&key).await else {
            tracing::debug!(%key, "daemon set has been deleted");
            self.expectations.delete_expectations(&key);
            self.consistency.clear(&key);
            return Ok(Action::Done);
        };
        let uid = ds.metadata.uid.clone().unwrap_or_default();
        if !self
            .consistency
            .is_ready(&key, &uid, ds.metadata.resource_version.as_deref())
        {
            // the watch event of our own last write enqueues it again
            tracing::debug!(%key, "Daemonset is not ready for reconciliation");
            return Ok(Action::Done);
        }
        let mut nodes = self.cache.list::<Node>(None).await;
        nodes.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        let regarding = object_reference(ds.as_ref());
        let meta_selector = ds.spec.selector.clone();
        if meta_selector
            .match_labels
            .as_ref()
            .is_none_or(|m| m.is_empty())
            && meta_selector
                .match_expressions
                .as_ref()
                .is_none_or(|m| m.is_empty())
        {
            self.recorder.event(
                &regarding,
                None,
                EventType::Warning,
                SELECTING_ALL_REASON,
                "Sync",
                "This daemon set is selecting all pods. A non-empty selector is required.",
            );
            return Ok(Action::Done);
        }
        if ds.metadata.deletion_timestamp.is_some() {
            return Ok(Action::Done);
        }
        let selector = LabelSelector::from_meta(&meta_selector).map_err(|e| {
            ReconcileError::msg(format!("error converting pod selector to selector: {e}"))
        })?;
        let (cur, old) = self.construct_history(&ds, &selector).await.map_err(|e| {
            ReconcileError::msg(format!("failed to construct revisions of DaemonSet: {e}"))
        })?;
        let hash = revision_hash(&cur).to_string();

        if !self.expectations.satisfied(&key) {
            let next = self
                .update_status(&key, &ds, &nodes, &hash, &selector, false)
                .await
                .map_err(ReconcileError::msg)?;
            let expiry = self.expectations.time_to_expiry(&key);
            return Ok(min_delay(next, expiry).map_or(Action::Done, Action::RequeueAfter));
        }

        let mut requeue: Option<Duration> = None;
        let sync_err = self
            .update_daemon_set(
                &key,
                &ds,
                &nodes,
                &hash,
                &old,
                &selector,
                &regarding,
                &mut requeue,
            )
            .await
            .err();
        let status = self
            .update_status(&key, &ds, &nodes, &hash, &selector, true)
            .await;
        match (sync_err, status) {
            (Some(e), Err(se)) => {
                tracing::debug!(%key, error = %se, "failed to update status");
                Err(ReconcileError::msg(e))
            }
            (Some(e), Ok(_)) => Err(ReconcileError::msg(e)),
            (None, Err(se)) => Err(ReconcileError::msg(se)),
            (None, Ok(next)) => {
                Ok(min_delay(next, requeue).map_or(Action::Done, Action::RequeueAfter))
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    async fn update_daemon_set(
        &self,
        key: &ObjectKey,
        ds: &Arc<DaemonSet>,
        nodes: &[Arc<Node>],
        hash: &str,
        old: &[ControllerRevision],
        selector: &LabelSelector,
        regarding: &ObjectReference,
        requeue: &mut Option<Duration>,
    ) -> SyncResult {
        // manage
        let pods = self.get_daemon_pods(key, ds, selector).await?;
        let map = nodes_to_daemon_pods(&pods, false);
        let plan = {
            let mut backoff = self.backoff();
            plan_manage(
                ds,
                nodes,
                &map,
                hash,
                &mut backoff,
                Instant::now(),
                Timestamp::now(),
            )
        };
        for e in &plan.events {
            self.recorder
                .event(regarding, None, e.type_, e.reason, "Sync", &e.message);
        }
        *requeue = min_delay(*requeue, plan.requeue_after);
        self.sync_nodes(key, ds, plan.delete, plan.create_on, hash, regarding)
            .await?;

        if self.expectations.satisfied(key) && is_rolling_update(ds) {
            let pods = self.get_daemon_pods(key, ds, selector).await?;
            let map = nodes_to_daemon_pods(&pods, false);
            let plan = plan_rolling_update(ds, nodes, &map, hash, Timestamp::now())?;
            self.sync_nodes(key, ds, plan.delete, plan.create_on, hash, regarding)
                .await?;
        }
        self.cleanup_history(key, ds, old, selector)
            .await
            .map_err(|e| format!("failed to clean up revisions of DaemonSet: {e}"))
    }

    /// Upstream `getDaemonPods`: the namespace's pods owned by the DaemonSet or
    /// orphaned, claimed by its selector (adopting and releasing).
    async fn get_daemon_pods(
        &self,
        key: &ObjectKey,
        ds: &Arc<DaemonSet>,
        selector: &LabelSelector,
    ) -> SyncResult<Vec<Arc<Pod>>> {
        let namespace = key.namespace().unwrap_or_default();
        let uid = ds.metadata.uid.clone().unwrap_or_default();
        let candidates: Vec<Arc<Pod>> = self
            .cache
            .list::<Pod>(Some(namespace))
            .await
            .into_iter()
            .filter(|p| get_controller_of(&p.metadata).is_none_or(|r| r.uid == uid))
            .collect();
        let controller = ControllerIdentity::of(ds.as_ref());
        let empty = Default::default();
        let selects =
            |p: &Pod| selector.matches_labels(p.metadata.labels.as_ref().unwrap_or(&empty));
        let patch = |pod: Arc<Pod>, body: serde_json::Value| {
            let pods = self.pods.clone();
            async move {
                let ns = pod.metadata.namespace.clone().unwrap_or_default();
                let name = pod.metadata.name.clone().unwrap_or_default();
                pods.patch_pod(&ns, &name, &body).await
            }
        };
        let can_adopt = || self.can_adopt(key, uid.clone());
        claim_pods(&controller, candidates, selects, patch, can_adopt)
            .await
            .map_err(|e| {
                format!("couldn't get node to daemon pod mapping for daemon set {key}: {e}")
            })
    }

    /// Upstream `RecheckDeletionTimestamp`: the DaemonSet read from the server must be
    /// the same object and not being deleted.
    async fn can_adopt(&self, key: &ObjectKey, uid: String) -> Result<(), String> {
        match self.fresh.get::<DaemonSet>(key).await {
            Ok(Some(fresh)) => {
                let fresh_uid = fresh.metadata.uid.clone().unwrap_or_default();
                if fresh_uid != uid {
                    return Err(format!(
                        "original DaemonSet {key} is gone: got uid {fresh_uid}, wanted {uid}"
                    ));
                }
                if let Some(ts) = &fresh.metadata.deletion_timestamp {
                    return Err(format!("{key} has just been deleted at {}", ts.0));
                }
                Ok(())
            }
            Ok(None) => Err(format!("original DaemonSet {key} is gone")),
            Err(e) => Err(e.to_string()),
        }
    }

    /// Upstream `syncNodes`: create pods on `create_on` (pinned to their node by
    /// affinity, in slow-start batches) and delete `delete`, at most
    /// [`BURST_REPLICAS`] of each, with expectations recorded first.
    async fn sync_nodes(
        &self,
        key: &ObjectKey,
        ds: &Arc<DaemonSet>,
        mut delete: Vec<Arc<Pod>>,
        mut create_on: Vec<String>,
        hash: &str,
        regarding: &ObjectReference,
    ) -> SyncResult {
        create_on.truncate(self.burst_replicas);
        delete.truncate(self.burst_replicas);
        if create_on.is_empty() && delete.is_empty() {
            return Ok(());
        }
        let create_diff = create_on.len();
        self.expectations.expect_creations_and_deletions(
            key,
            create_diff,
            delete.iter().map(|p| pod_key(p)),
        );
        let namespace = key.namespace().unwrap_or_default();
        let mut errors: Vec<String> = Vec::new();
        if create_diff > 0 {
            tracing::debug!(%key, nodes = ?create_on, "nodes needing daemon pods");
            let generation = template_generation(ds).ok().flatten();
            let template = ds.spec.template.clone();
            let template = create_pod_template(&template, generation, hash);
            let controller_ref = new_controller_ref(ds.as_ref());
            let next = AtomicUsize::new(0);
            let failures = Mutex::new(Vec::<String>::new());
            let (_, _) = slow_start_batch(create_diff, SLOW_START_INITIAL_BATCH_SIZE, || {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let node = create_on[i].clone();
                let mut pod_template = template.clone();
                let spec = pod_template.spec.get_or_insert_with(Default::default);
                spec.affinity = Some(replace_node_name_affinity(spec.affinity.take(), &node));
                let (pods, controller_ref, failures) = (&self.pods, &controller_ref, &failures);
                async move {
                    match pods
                        .create_pod(namespace, &pod_template, regarding, key.name(), controller_ref)
                        .await
                    {
                        Ok(_) => Ok(()),
                        // nothing to do in a namespace being deleted
                        Err(e) if e.is_namespace_terminating() => Ok(()),
                        Err(e) => {
                            tracing::debug!(%key, node, error = %e, "failed creation, decrementing expectations");
                            self.expectations.creation_observed(key);
                            failures
                                .lock()
                                .unwrap_or_else(|e| e.into_inner())
                                .push(e.to_string());
                            Err(())
                        }
                    }
                }
            })
            .await;
            let attempted = next.load(Ordering::SeqCst);
            let skipped = create_diff.saturating_sub(attempted);
            if skipped > 0 {
                tracing::debug!(%key, skipped, "slow-start failure: skipping the creation of pods");
                self.expectations.lower_creations(key, skipped);
            }
            errors.extend(failures.into_inner().unwrap_or_else(|e| e.into_inner()));
        }
        let results = futures::future::join_all(delete.iter().map(|pod| async move {
            let name = pod.metadata.name.as_deref().unwrap_or_default();
            (pod, self.pods.delete_pod(namespace, name, regarding).await)
        }))
        .await;
        for (pod, result) in results {
            match result {
                Ok(true) => {}
                Ok(false) => self.expectations.deletion_observed(key, &pod_key(pod)),
                Err(e) => {
                    self.expectations.deletion_observed(key, &pod_key(pod));
                    errors.push(e.to_string());
                }
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors.join("; "))
        }
    }

    /// Upstream `updateDaemonSetStatus` and `storeDaemonSetStatus`: returns when to
    /// look again for pods becoming available (`minReadySeconds`).
    async fn update_status(
        &self,
        key: &ObjectKey,
        ds: &Arc<DaemonSet>,
        nodes: &[Arc<Node>],
        hash: &str,
        selector: &LabelSelector,
        update_observed_gen: bool,
    ) -> SyncResult<Option<Duration>> {
        let pods = self.get_daemon_pods(key, ds, selector).await?;
        let map: NodeToPods = nodes_to_daemon_pods(&pods, false);
        let counts = calculate_counts(ds, nodes, &map, hash, Timestamp::now());
        self.store_status(key, ds, counts, update_observed_gen)
            .await
            .map_err(|e| format!("error storing status for daemon set {key}: {e}"))?;
        let min_ready = ds.spec.min_ready_seconds.unwrap_or(0);
        if min_ready > 0 && counts.ready != counts.available {
            return Ok(Some(Duration::from_secs(u64::from(
                min_ready.unsigned_abs(),
            ))));
        }
        Ok(None)
    }

    async fn store_status(
        &self,
        key: &ObjectKey,
        ds: &DaemonSet,
        c: Counts,
        update_observed_gen: bool,
    ) -> Result<(), kube::Error> {
        let generation = ds.metadata.generation.unwrap_or(0);
        let current = ds.status.clone().unwrap_or_default();
        if status_counts(&current) == c && current.observed_generation.unwrap_or(0) >= generation {
            return Ok(());
        }
        let mut target = ds.clone();
        for attempt in 0..2 {
            let mut status = target.status.clone().unwrap_or_default();
            if update_observed_gen {
                status.observed_generation = Some(generation);
            }
            status.desired_number_scheduled = c.desired;
            status.current_number_scheduled = c.current;
            status.number_misscheduled = c.misscheduled;
            status.number_ready = c.ready;
            status.updated_number_scheduled = Some(c.updated);
            status.number_available = Some(c.available);
            status.number_unavailable = Some(c.unavailable);
            target.status = Some(status);
            match self.client.update_status(&target).await {
                Ok(written) => {
                    self.consistency.wrote_at(
                        key,
                        written.metadata.uid.as_deref().unwrap_or_default(),
                        written.metadata.resource_version.as_deref(),
                    );
                    return Ok(());
                }
                Err(e) if attempt == 0 => {
                    tracing::debug!(%key, error = %e, "status update failed; retrying on a fresh copy");
                    match self.fresh.get::<DaemonSet>(key).await? {
                        Some(fresh) => target = (*fresh).clone(),
                        None => return Ok(()),
                    }
                }
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Upstream `controlledHistories`: the namespace's ControllerRevisions the
    /// DaemonSet controls after adopting matching orphans and releasing the ones that
    /// stopped matching.
    async fn controlled_histories(
        &self,
        key: &ObjectKey,
        ds: &DaemonSet,
        selector: &LabelSelector,
    ) -> SyncResult<Vec<ControllerRevision>> {
        let namespace = key.namespace().unwrap_or_default();
        let controller = ControllerIdentity::of(ds);
        let empty = Default::default();
        let mut claimed = Vec::new();
        let mut adoptable: Option<Result<(), String>> = None;
        let mut errors = Vec::new();
        for cr in self.cache.list::<ControllerRevision>(Some(namespace)).await {
            let m = selector.matches_labels(cr.metadata.labels.as_ref().unwrap_or(&empty));
            let cr_key = ObjectKey::of(cr.as_ref());
            let uid = cr.metadata.uid.clone().unwrap_or_default();
            match claim_action(&controller, &cr.metadata, m) {
                crate::controller_utils::ClaimAction::Ignore => {}
                crate::controller_utils::ClaimAction::Keep => claimed.push((*cr).clone()),
                crate::controller_utils::ClaimAction::Release => {
                    let patch = release_patch(&controller.uid, &uid);
                    match self
                        .client
                        .patch::<ControllerRevision, _>(
                            &cr_key,
                            &PatchParams::default(),
                            &Patch::Strategic(&patch),
                        )
                        .await
                    {
                        Ok(_) => {}
                        Err(kube::Error::Api(s)) if s.is_not_found() || s.is_invalid() => {}
                        Err(e) => errors.push(format!("releasing {cr_key}: {e}")),
                    }
                }
                crate::controller_utils::ClaimAction::Adopt => {
                    if adoptable.is_none() {
                        adoptable = Some(self.can_adopt(key, controller.uid.clone()).await);
                    }
                    if let Some(Err(why)) = &adoptable {
                        errors.push(format!("can't adopt ControllerRevision {cr_key}: {why}"));
                        continue;
                    }
                    let patch = adopt_patch(&controller, &uid);
                    match self
                        .client
                        .patch::<ControllerRevision, _>(
                            &cr_key,
                            &PatchParams::default(),
                            &Patch::Strategic(&patch),
                        )
                        .await
                    {
                        Ok(adopted) => claimed.push(adopted),
                        Err(kube::Error::Api(s)) if s.is_not_found() => {}
                        Err(e) => errors.push(format!("adopting {cr_key}: {e}")),
                    }
                }
            }
        }
        if errors.is_empty() {
            Ok(claimed)
        } else {
            Err(errors.join("; "))
        }
    }

    /// Upstream `constructHistory`: the current revision (found, deduplicated or
    /// created) and the old ones.
    async fn construct_history(
        &self,
        ds: &Arc<DaemonSet>,
        selector: &LabelSelector,
    ) -> SyncResult<(ControllerRevision, Vec<ControllerRevision>)> {
        let key = ObjectKey::of(ds.as_ref());
        let histories = self.controlled_histories(&key, ds, selector).await?;
        let mut current = Vec::new();
        let mut old = Vec::new();
        for mut cr in histories {
            if cr
                .metadata
                .labels
                .as_ref()
                .is_none_or(|l| !l.contains_key(CONTROLLER_REVISION_HASH_LABEL))
            {
                // legacy revisions: label them with their name
                let name = cr.metadata.name.clone().unwrap_or_default();
                cr.metadata
                    .labels
                    .get_or_insert_with(Default::default)
                    .insert(CONTROLLER_REVISION_HASH_LABEL.to_string(), name);
                cr = self.client.update(&cr).await.map_err(|e| e.to_string())?;
            }
            if matches(ds, &cr) {
                current.push(cr);
            } else {
                old.push(cr);
            }
        }
        let next_revision = max_revision(&old) + 1;
        let cur = match current.len() {
            0 => self.snapshot(ds, next_revision).await?,
            _ => {
                self.dedup_cur_histories(&key, ds, selector, current)
                    .await?
            }
        };
        let cur = if cur.revision.unwrap_or(0) < next_revision {
            let mut updated = cur.clone();
            updated.revision = Some(next_revision);
            self.client
                .update(&updated)
                .await
                .map_err(|e| e.to_string())?
        } else {
            cur
        };
        Ok((cur, old))
    }

    /// Upstream `dedupCurHistories`: keep one revision of the current template,
    /// relabel the pods carrying the others' hashes, delete the others.
    async fn dedup_cur_histories(
        &self,
        key: &ObjectKey,
        ds: &Arc<DaemonSet>,
        selector: &LabelSelector,
        mut current: Vec<ControllerRevision>,
    ) -> SyncResult<ControllerRevision> {
        if current.len() == 1 {
            return Ok(current.remove(0));
        }
        let keep_at = keep_of(&current).unwrap_or(0);
        let keep = current.remove(keep_at);
        let keep_hash = revision_hash(&keep).to_string();
        let pods = self.get_daemon_pods(key, ds, selector).await?;
        for pod in pods {
            let label = pod
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(CONTROLLER_REVISION_HASH_LABEL));
            if label.map(String::as_str) != Some(keep_hash.as_str()) {
                let patch = serde_json::json!({"metadata": {"labels": {CONTROLLER_REVISION_HASH_LABEL: keep_hash}}});
                self.client
                    .patch::<Pod, _>(
                        &pod_key(&pod),
                        &PatchParams::default(),
                        &Patch::Merge(&patch),
                    )
                    .await
                    .map_err(|e| e.to_string())?;
            }
        }
        for dup in current {
            match self
                .client
                .delete::<ControllerRevision>(&ObjectKey::of(&dup), &DeleteParams::default())
                .await
            {
                Ok(_) => {}
                Err(e) => return Err(e.to_string()),
            }
        }
        Ok(keep)
    }

    /// Upstream `snapshot`: create the revision of the current template; on a name
    /// clash with a different template, bump `collisionCount` and fail (the retry
    /// hashes with the new count).
    async fn snapshot(&self, ds: &Arc<DaemonSet>, revision: i64) -> SyncResult<ControllerRevision> {
        let cr = new_revision(ds, revision);
        let created = self.client.create(&cr).await;
        let err = match created {
            Ok(c) => return Ok(c),
            Err(e) if api_reason(&e) == Some("AlreadyExists") => e,
            Err(e) => return Err(e.to_string()),
        };
        let cr_key = ObjectKey::of(&cr);
        let existing = self
            .fresh
            .get::<ControllerRevision>(&cr_key)
            .await
            .map_err(|e| e.to_string())?;
        if let Some(existing) = existing {
            if matches(ds, &existing) {
                return Ok((*existing).clone());
            }
        }
        let key = ObjectKey::of(ds.as_ref());
        let Some(fresh) = self
            .fresh
            .get::<DaemonSet>(&key)
            .await
            .map_err(|e| e.to_string())?
        else {
            return Err(err.to_string());
        };
        let hashed_with = ds.status.as_ref().and_then(|s| s.collision_count);
        let current = fresh.status.as_ref().and_then(|s| s.collision_count);
        if hashed_with != current {
            return Err(format!(
                "found a stale collision count ({}, expected {}) of DaemonSet {:?} while processing; will retry until it is updated",
                hashed_with.unwrap_or(0),
                current.unwrap_or(0),
                ds.metadata.name.as_deref().unwrap_or("")
            ));
        }
        let mut bumped = (*fresh).clone();
        let status = bumped.status.get_or_insert_with(Default::default);
        status.collision_count = Some(current.unwrap_or(0) + 1);
        let written = self
            .client
            .update_status(&bumped)
            .await
            .map_err(|e| e.to_string())?;
        self.consistency.wrote_at(
            &key,
            written.metadata.uid.as_deref().unwrap_or_default(),
            written.metadata.resource_version.as_deref(),
        );
        tracing::debug!(%key, name = ?cr.metadata.name, "found a hash collision for DaemonSet - bumping collisionCount to resolve it");
        Err(err.to_string())
    }

    /// Upstream `cleanupHistory`: delete the oldest old revisions beyond
    /// `revisionHistoryLimit` that no pod still carries.
    async fn cleanup_history(
        &self,
        key: &ObjectKey,
        ds: &Arc<DaemonSet>,
        old: &[ControllerRevision],
        selector: &LabelSelector,
    ) -> SyncResult {
        let limit = ds.spec.revision_history_limit.unwrap_or(10);
        if old.len() as i64 <= i64::from(limit) {
            return Ok(());
        }
        let pods = self.get_daemon_pods(key, ds, selector).await?;
        let live: HashSet<String> = pods
            .iter()
            .filter_map(|p| {
                p.metadata
                    .labels
                    .as_ref()
                    .and_then(|l| l.get(CONTROLLER_REVISION_HASH_LABEL))
            })
            .filter(|h| !h.is_empty())
            .cloned()
            .collect();
        for cr in revisions_to_delete(old, limit, &live) {
            self.client
                .delete::<ControllerRevision>(&ObjectKey::of(cr), &DeleteParams::default())
                .await
                .map_err(|e| e.to_string())?;
        }
        Ok(())
    }
}

fn status_counts(s: &DaemonSetStatus) -> Counts {
    Counts {
        desired: s.desired_number_scheduled,
        current: s.current_number_scheduled,
        misscheduled: s.number_misscheduled,
        ready: s.number_ready,
        updated: s.updated_number_scheduled.unwrap_or(0),
        available: s.number_available.unwrap_or(0),
        unavailable: s.number_unavailable.unwrap_or(0),
    }
}

fn min_delay(a: Option<Duration>, b: Option<Duration>) -> Option<Duration> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

impl Reconciler for DaemonSetReconciler {
    async fn reconcile(&self, _ctx: Context, request: ObjectKey) -> ReconcileResult {
        self.sync(request).await
    }
}
