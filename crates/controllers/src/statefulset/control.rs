//! One sync of a StatefulSet, after upstream's `stateful_set.go` (`sync`),
//! `stateful_set_control.go` (`UpdateStatefulSet`, `performUpdate`,
//! `getStatefulSetRevisions`, `updateStatefulSet`, `processReplica`,
//! `processCondemned`, `truncateHistory`) and `stateful_pod_control.go` (pod and claim
//! writes with their events).
//!
//! There are no expectations: the monotonic algorithm acts on one pod at a time, and a
//! sync is skipped while the cache has not yet seen the controller's own last writes
//! for the set (`super::consistency`, upstream 1.36's `StaleControllerConsistency`).

use std::collections::{BTreeSet, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use apimachinery::selector::LabelSelector;
use coxswain_runtime::cache::Cache;
use coxswain_runtime::client::Client;
use coxswain_runtime::controller::{Action, Context, ReconcileError, ReconcileResult, Reconciler};
use coxswain_runtime::events::{object_reference, EventRecorder, EventType};
use coxswain_runtime::ObjectKey;
use k8s_openapi::api::apps::v1::{ControllerRevision, StatefulSet, StatefulSetStatus};
use k8s_openapi::api::core::v1::{ObjectReference, PersistentVolumeClaim, Pod};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DeleteParams, PostParams};

use super::consistency::{Consistency, WrittenKind};
use super::utils::*;
use crate::controller_utils::{claim_pods, ControllerIdentity, PodControl};
use crate::history::{
    equal_revision, find_equal_revisions, next_revision, sort_controller_revisions, History,
};

/// Largest batch of parallel pod operations (upstream `MaxBatchSize`).
pub const MAX_BATCH_SIZE: usize = 500;
/// Entries kept in the revision-equality cache (upstream
/// `maxRevisionEqualityCacheEntries`).
const MAX_REVISION_EQUALITY_ENTRIES: usize = 10_000;
/// Update attempts on conflict (client-go `retry.DefaultBackoff`: 4, from 10 ms x5).
const CONFLICT_ATTEMPTS: usize = 4;

/// The reconciler of StatefulSets.
pub struct StatefulSetReconciler {
    cache: Arc<Cache>,
    client: Client,
    fresh: Client,
    pods: PodControl,
    history: History,
    recorder: EventRecorder,
    consistency: Consistency,
    equal_revisions: Mutex<HashSet<(String, i64, String)>>,
}

/// What one sync works on.
struct Sync<'a> {
    set: &'a StatefulSet,
    update_set: StatefulSet,
    regarding: ObjectReference,
    key: ObjectKey,
    monotonic: bool,
    now: Timestamp,
}

type Exit = Result<bool, String>;

fn is_conflict(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 409 && s.reason == "Conflict")
}

fn is_not_found(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 404)
}

fn api_message(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(s) => s.message.clone(),
        e => e.to_string(),
    }
}

impl StatefulSetReconciler {
    pub(crate) fn new(client: Client, recorder: EventRecorder) -> Self {
        let cache = client.cache().clone();
        StatefulSetReconciler {
            fresh: client.clone().uncached::<StatefulSet>(),
            pods: PodControl::new(client.clone(), recorder.clone()),
            history: History::new(client.clone()),
            consistency: Consistency::new(cache.clone()),
            client,
            cache,
            recorder,
            equal_revisions: Mutex::new(HashSet::new()),
        }
    }

    fn kube(&self) -> kube::Client {
        self.client.kube_client().clone()
    }

    async fn sync(&self, key: ObjectKey) -> ReconcileResult {
        let Some(set) = self.cache.get::<StatefulSet>(&key).await else {
            tracing::debug!(%key, "StatefulSet has been deleted");
            self.consistency.forget(&key);
            return Ok(Action::Done);
        };
        if let Err(stale) = self.consistency.ensure_ready(&key).await {
            tracing::debug!(%key, "skipping sync: {stale}");
            return Ok(Action::Requeue);
        }
        let selector = match LabelSelector::from_meta(&set.spec.selector) {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(%key, "error converting StatefulSet {key} selector: {e}");
                return Ok(Action::Done);
            }
        };
        self.adopt_orphan_revisions(&key, &set, &selector).await?;
        let pods = self.claimed_pods(&key, &set, &selector).await?;
        let now = Timestamp::now();
        let status = self
            .update_stateful_set(&key, &set, &selector, pods, now)
            .await
            .map_err(ReconcileError::msg)?;
        let mrs = min_ready_seconds(&set);
        if mrs > 0 && status.available_replicas.unwrap_or(0) != replicas(&set) {
            return Ok(Action::RequeueAfter(Duration::from_secs(
                mrs.unsigned_abs().into(),
            )));
        }
        Ok(Action::Done)
    }

    /// Re-read the set from the server before adopting: same UID, not being deleted.
    async fn can_adopt(&self, key: &ObjectKey, uid: &str) -> Result<(), String> {
        match self.fresh.get::<StatefulSet>(key).await {
            Ok(Some(fresh)) => {
                let fresh_uid = fresh.metadata.uid.clone().unwrap_or_default();
                if fresh_uid != uid {
                    return Err(format!(
                        "original StatefulSet {key} is gone: got uid {fresh_uid}, wanted {uid}"
                    ));
                }
                if let Some(ts) = &fresh.metadata.deletion_timestamp {
                    return Err(format!("{key} has just been deleted at {}", ts.0));
                }
                Ok(())
            }
            Ok(None) => Err(format!("original StatefulSet {key} is gone")),
            Err(e) => Err(e.to_string()),
        }
    }

    async fn adopt_orphan_revisions(
        &self,
        key: &ObjectKey,
        set: &StatefulSet,
        selector: &LabelSelector,
    ) -> Result<(), ReconcileError> {
        let revisions = self
            .history
            .list_controller_revisions(&set.metadata, selector)
            .await
            .map_err(|e| ReconcileError::msg(e.to_string()))?;
        let orphans: Vec<_> = revisions
            .iter()
            .filter(|r| coxswain_runtime::controllerutil::get_controller_of(&r.metadata).is_none())
            .collect();
        if orphans.is_empty() {
            return Ok(());
        }
        let uid = set.metadata.uid.clone().unwrap_or_default();
        self.can_adopt(key, &uid)
            .await
            .map_err(|e| ReconcileError::msg(format!("can't adopt ControllerRevisions: {e}")))?;
        let identity = ControllerIdentity::of(set);
        for r in orphans {
            let adopted = self
                .history
                .adopt_controller_revision(&identity, r)
                .await
                .map_err(|e| ReconcileError::msg(e.to_string()))?;
            self.consistency
                .wrote(key, WrittenKind::Revision, &adopted.metadata, false);
        }
        Ok(())
    }

    async fn claimed_pods(
        &self,
        key: &ObjectKey,
        set: &StatefulSet,
        selector: &LabelSelector,
    ) -> Result<Vec<Arc<Pod>>, ReconcileError> {
        let all = self.cache.list::<Pod>(key.namespace()).await;
        let controller = ControllerIdentity::of(set);
        let empty = Default::default();
        let matches = |p: &Pod| {
            selector.matches_labels(p.metadata.labels.as_ref().unwrap_or(&empty))
                && is_member_of(set, p)
        };
        let patch = |pod: Arc<Pod>, body: serde_json::Value| {
            let pods = self.pods.clone();
            async move {
                let ns = pod.metadata.namespace.clone().unwrap_or_default();
                let name = pod.metadata.name.clone().unwrap_or_default();
                pods.patch_pod(&ns, &name, &body).await
            }
        };
        let uid = controller.uid.clone();
        let can_adopt = || async move { self.can_adopt(key, &uid).await };
        claim_pods(&controller, all, matches, patch, can_adopt)
            .await
            .map_err(|e| ReconcileError::msg(format!("claiming pods of {key}: {e}")))
    }

    /// Upstream `UpdateStatefulSet`: revisions, pods, status, then history truncation
    /// (on error too).
    async fn update_stateful_set(
        &self,
        key: &ObjectKey,
        set: &StatefulSet,
        selector: &LabelSelector,
        pods: Vec<Arc<Pod>>,
        now: Timestamp,
    ) -> Result<StatefulSetStatus, String> {
        let mut revisions: Vec<ControllerRevision> = self
            .history
            .list_controller_revisions(&set.metadata, selector)
            .await
            .map_err(|e| e.to_string())?
            .into_iter()
            .map(|r| (*r).clone())
            .collect();
        sort_controller_revisions(&mut revisions);
        let (current, update, collision_count) = self.get_revisions(key, set, &revisions).await?;
        let result = self
            .perform_update(key, set, &pods, &current, &update, collision_count, now)
            .await;
        let truncated = self
            .truncate_history(key, set, &pods, &revisions, &current, &update)
            .await;
        match (result, truncated) {
            (Ok(status), Ok(())) => Ok(status),
            (Ok(_), Err(t)) => Err(t),
            (Err(e), Ok(())) => Err(e),
            (Err(e), Err(t)) => Err(format!("[{e}, {t}]")),
        }
    }

    /// Upstream `getStatefulSetRevisions`: the current and update revisions, creating
    /// or renumbering the update revision as needed.
    async fn get_revisions(
        &self,
        key: &ObjectKey,
        set: &StatefulSet,
        revisions: &[ControllerRevision],
    ) -> Result<(ControllerRevision, ControllerRevision, i32), String> {
        let mut collision_count = set
            .status
            .as_ref()
            .and_then(|s| s.collision_count)
            .unwrap_or(0);
        let proposed = new_revision(set, next_revision(revisions), Some(collision_count));
        let equal = find_equal_revisions(revisions, &proposed);
        let latest = revisions.last();
        let update = if let Some(last_equal) = equal.last() {
            if latest.is_some_and(|l| equal_revision(Some(l), Some(last_equal))) {
                (*last_equal).clone()
            } else {
                // a rollback: the old revision becomes the newest
                let updated = self
                    .history
                    .update_controller_revision(last_equal, proposed.revision.unwrap_or(1))
                    .await
                    .map_err(|e| e.to_string())?;
                self.consistency
                    .wrote(key, WrittenKind::Revision, &updated.metadata, false);
                updated
            }
        } else if let Some(l) = latest.filter(|l| self.matches_latest(set, &proposed, l)) {
            l.clone()
        } else {
            let created = self
                .history
                .create_controller_revision(&set.metadata, &proposed, &mut collision_count)
                .await
                .map_err(|e| e.to_string())?;
            self.consistency
                .wrote(key, WrittenKind::Revision, &created.metadata, false);
            created
        };
        let current_name = set
            .status
            .as_ref()
            .and_then(|s| s.current_revision.as_deref())
            .unwrap_or("");
        let current = revisions
            .iter()
            .find(|r| r.metadata.name.as_deref() == Some(current_name))
            .cloned()
            .unwrap_or_else(|| update.clone());
        Ok((current, update, collision_count))
    }

    /// Upstream `setMatchesLatestExistingRevision`: whether the latest revision,
    /// applied to the set and re-encoded, equals the proposed one (a revision written
    /// by an older encoder must not start a rollout). Cached by (UID, generation,
    /// revision resourceVersion).
    fn matches_latest(
        &self,
        set: &StatefulSet,
        proposed: &ControllerRevision,
        latest: &ControllerRevision,
    ) -> bool {
        let cache_key = (
            set.metadata.uid.clone().unwrap_or_default(),
            set.metadata.generation.unwrap_or(0),
            latest.metadata.resource_version.clone().unwrap_or_default(),
        );
        let mut cache = self
            .equal_revisions
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if cache.contains(&cache_key) {
            return true;
        }
        let reconstructed = new_revision(&apply_revision(set, latest), -1, None);
        if !equal_revision(Some(proposed), Some(&reconstructed)) {
            return false;
        }
        if cache.len() >= MAX_REVISION_EQUALITY_ENTRIES {
            cache.clear();
        }
        cache.insert(cache_key);
        true
    }

    /// Upstream `truncateHistory`: delete the oldest revisions that no pod uses and
    /// that are neither current nor update, beyond `revisionHistoryLimit`.
    async fn truncate_history(
        &self,
        key: &ObjectKey,
        set: &StatefulSet,
        pods: &[Arc<Pod>],
        revisions: &[ControllerRevision],
        current: &ControllerRevision,
        update: &ControllerRevision,
    ) -> Result<(), String> {
        let mut live: BTreeSet<&str> = BTreeSet::new();
        live.insert(current.metadata.name.as_deref().unwrap_or(""));
        live.insert(update.metadata.name.as_deref().unwrap_or(""));
        for p in pods {
            live.insert(get_pod_revision(p));
        }
        let history: Vec<&ControllerRevision> = revisions
            .iter()
            .filter(|r| !live.contains(r.metadata.name.as_deref().unwrap_or("")))
            .collect();
        let limit = set.spec.revision_history_limit.unwrap_or(10);
        if limit < 0 || history.len() <= limit as usize {
            return Ok(());
        }
        for r in &history[..history.len() - limit as usize] {
            self.history
                .delete_controller_revision(r)
                .await
                .map_err(|e| e.to_string())?;
            let mut meta = r.metadata.clone();
            meta.resource_version = None;
            self.consistency
                .wrote(key, WrittenKind::Revision, &meta, true);
        }
        Ok(())
    }

    /// Upstream `performUpdate`: sync the pods, then write the status (even after a
    /// pod error); the pod error wins over a status error.
    #[allow(clippy::too_many_arguments)]
    async fn perform_update(
        &self,
        key: &ObjectKey,
        set: &StatefulSet,
        pods: &[Arc<Pod>],
        current: &ControllerRevision,
        update: &ControllerRevision,
        collision_count: i32,
        now: Timestamp,
    ) -> Result<StatefulSetStatus, String> {
        let (status, err) = self
            .update_pods(key, set, pods, current, update, collision_count, now)
            .await;
        let status_err = self.update_status(key, set, status.clone()).await.err();
        match (err, status_err) {
            (Some(e), Some(s)) => {
                tracing::debug!(%key, "could not update status: {s}");
                Err(e)
            }
            (Some(e), None) | (None, Some(e)) => Err(e),
            (None, None) => Ok(status),
        }
    }

    /// Upstream `updateStatefulSet`: create, fix, delete and replace pods in the order
    /// the pod management policy and update strategy allow. Returns the status to
    /// write and the first error.
    #[allow(clippy::too_many_arguments)]
    async fn update_pods(
        &self,
        key: &ObjectKey,
        set: &StatefulSet,
        pods: &[Arc<Pod>],
        current: &ControllerRevision,
        update: &ControllerRevision,
        collision_count: i32,
        now: Timestamp,
    ) -> (StatefulSetStatus, Option<String>) {
        let current_set = apply_revision(set, current);
        let update_set = apply_revision(set, update);
        let current_name = current.metadata.name.clone().unwrap_or_default();
        let update_name = update.metadata.name.clone().unwrap_or_default();
        let mrs = min_ready_seconds(set);
        let all: Vec<&Pod> = pods.iter().map(|p| p.as_ref()).collect();
        let mut status = StatefulSetStatus {
            observed_generation: set.metadata.generation,
            current_revision: Some(current_name.clone()),
            update_revision: Some(update_name.clone()),
            collision_count: Some(collision_count),
            ..Default::default()
        };
        count_status(&mut status, &all, &current_name, &update_name, mrs, now);

        let start = start_ordinal(set);
        let n = usize::try_from(replicas(set).max(0)).unwrap_or(0);
        let mut slots: Vec<Option<Pod>> = vec![None; n];
        let mut condemned: Vec<Pod> = Vec::new();
        for p in pods {
            let ord = get_ordinal(p);
            if ordinal_in_range(set, ord) {
                if let Some(slot) = slots.get_mut((ord - start) as usize) {
                    *slot = Some((**p).clone());
                }
            } else if ord >= 0 {
                condemned.push((**p).clone());
            }
        }
        let replicas_v: Vec<Pod> = slots
            .into_iter()
            .enumerate()
            .map(|(i, p)| {
                p.unwrap_or_else(|| {
                    new_versioned_stateful_set_pod(
                        &current_set,
                        &update_set,
                        &current_name,
                        &update_name,
                        start + i as i32,
                    )
                })
            })
            .collect();
        condemned.sort_by_key(|p| std::cmp::Reverse(get_ordinal(p)));
        let first_unavailable = replicas_v
            .iter()
            .find(|p| is_unavailable(p, mrs, now))
            .or_else(|| condemned.iter().rev().find(|p| is_unavailable(p, mrs, now)))
            .and_then(|p| p.metadata.name.clone());

        if set.metadata.deletion_timestamp.is_some() {
            return (status, None);
        }
        let ctx = Sync {
            set,
            update_set,
            regarding: object_reference(set),
            key: key.clone(),
            monotonic: !allows_burst(set),
            now,
        };
        let recount = |status: &mut StatefulSetStatus, r: &[Pod], c: &[Pod]| {
            let pods: Vec<&Pod> = r.iter().chain(c.iter()).filter(|p| is_created(p)).collect();
            let keep = (
                status.observed_generation,
                status.current_revision.clone(),
                status.update_revision.clone(),
                status.collision_count,
            );
            *status = StatefulSetStatus::default();
            (
                status.observed_generation,
                status.current_revision,
                status.update_revision,
                status.collision_count,
            ) = keep;
            count_status(status, &pods, &current_name, &update_name, mrs, now);
        };

        // replicas, in ordinal order
        let (exit, err) = self
            .run_for_all(&ctx, &replicas_v, |i| {
                self.process_replica(&ctx, &replicas_v[i])
            })
            .await;
        if exit || err.is_some() {
            recount(&mut status, &replicas_v, &condemned);
            return (status, err);
        }
        // condemned pods' claims first get the owner references the policy asks for
        let (exit, err) = self
            .run_for_all(&ctx, &condemned, |i| {
                let (ctx, pod) = (&ctx, &condemned[i]);
                async move {
                    if !self
                        .claims_match_retention_policy(&ctx.update_set, pod)
                        .await?
                    {
                        self.update_pod_claims_for_retention_policy(ctx, &ctx.update_set, pod)
                            .await?;
                    }
                    Ok(false)
                }
            })
            .await;
        if exit || err.is_some() {
            recount(&mut status, &replicas_v, &condemned);
            return (status, err);
        }
        let (exit, err) = self
            .run_for_all(&ctx, &condemned, |i| {
                self.process_condemned(&ctx, first_unavailable.as_deref(), &condemned[i])
            })
            .await;
        recount(&mut status, &replicas_v, &condemned);
        if exit || err.is_some() {
            return (status, err);
        }
        let strategy = set.spec.update_strategy.as_ref();
        if strategy.and_then(|s| s.type_.as_deref()) == Some(ON_DELETE) {
            return (status, None);
        }
        // RollingUpdate (MaxUnavailableStatefulSet is off in 1.36): one pod at a time,
        // from the highest ordinal down to the partition
        let update_min = strategy
            .and_then(|s| s.rolling_update.as_ref())
            .and_then(|r| r.partition)
            .unwrap_or(0)
            .max(0) as usize;
        for target in (update_min..replicas_v.len()).rev() {
            let pod = &replicas_v[target];
            if get_pod_revision(pod) != update_name && !is_terminating(pod) {
                tracing::debug!(%key, pod = pod.metadata.name.as_deref(), "terminating pod for update");
                let err = self.delete_pod(&ctx, pod).await.err();
                if err.is_none() {
                    status.current_replicas = Some(status.current_replicas.unwrap_or(0) - 1);
                }
                return (status, err);
            }
            if is_unavailable(pod, mrs, now) {
                tracing::debug!(%key, pod = pod.metadata.name.as_deref(), "waiting for pod to update");
                return (status, None);
            }
        }
        (status, None)
    }

    /// Upstream `runForAll`: in order, stopping at the first exit or error
    /// (monotonic); or in slow-start batches of concurrent calls (burst), stopping
    /// after a batch with errors.
    async fn run_for_all<F, Fut>(
        &self,
        ctx: &Sync<'_>,
        pods: &[Pod],
        f: F,
    ) -> (bool, Option<String>)
    where
        F: Fn(usize) -> Fut,
        Fut: std::future::Future<Output = Exit>,
    {
        if ctx.monotonic {
            for i in 0..pods.len() {
                match f(i).await {
                    Ok(false) => {}
                    Ok(true) => return (true, None),
                    Err(e) => return (true, Some(e)),
                }
            }
            return (false, None);
        }
        let mut i = 0;
        let mut batch = 1usize;
        while i < pods.len() {
            let size = batch.min(pods.len() - i).min(MAX_BATCH_SIZE);
            let results = futures::future::join_all((i..i + size).map(&f)).await;
            let errors: Vec<String> = results.into_iter().filter_map(Result::err).collect();
            if !errors.is_empty() {
                let e = if errors.len() == 1 {
                    errors.into_iter().next().unwrap_or_default()
                } else {
                    format!("[{}]", errors.join(", "))
                };
                return (true, Some(e));
            }
            i += size;
            batch = size * 2;
        }
        (false, None)
    }

    /// Upstream `processReplica`.
    async fn process_replica(&self, ctx: &Sync<'_>, pod: &Pod) -> Exit {
        let (set, mrs) = (ctx.set, min_ready_seconds(ctx.set));
        if is_failed(pod) || is_succeeded(pod) {
            if !is_terminating(pod) {
                tracing::debug!(key = %ctx.key, pod = pod.metadata.name.as_deref(), phase = ?pod.status.as_ref().and_then(|s| s.phase.as_deref()), "pod is terminal: deleting it to recreate it");
                self.delete_pod(ctx, pod).await?;
            }
            return Ok(true);
        }
        if !is_created(pod) {
            if self.pod_claim_is_stale(set, pod).await? {
                tracing::debug!(key = %ctx.key, pod = pod.metadata.name.as_deref(), "a claim still belongs to the earlier pod: waiting");
                return Ok(true);
            }
            self.create_pod(ctx, pod).await?;
            return Ok(ctx.monotonic);
        }
        if is_pending(pod) {
            self.create_missing_claims(ctx, set, pod).await?;
        }
        if ctx.monotonic
            && (is_terminating(pod)
                || !is_running_and_ready(pod)
                || !is_running_and_available(pod, mrs, ctx.now))
        {
            return Ok(true);
        }
        let retention_match = self
            .claims_match_retention_policy(&ctx.update_set, pod)
            .await
            .unwrap_or(true);
        if identity_matches(set, pod) && storage_matches(set, pod) && retention_match {
            return Ok(false);
        }
        self.update_pod(ctx, pod).await?;
        Ok(false)
    }

    /// Upstream `processCondemned`.
    async fn process_condemned(
        &self,
        ctx: &Sync<'_>,
        first_unavailable: Option<&str>,
        pod: &Pod,
    ) -> Exit {
        let mrs = min_ready_seconds(ctx.set);
        if is_terminating(pod) {
            return Ok(ctx.monotonic);
        }
        let is_first = pod.metadata.name.as_deref() == first_unavailable;
        if ctx.monotonic
            && !is_first
            && (!is_running_and_ready(pod) || !is_running_and_available(pod, mrs, ctx.now))
        {
            return Ok(true);
        }
        tracing::debug!(key = %ctx.key, pod = pod.metadata.name.as_deref(), "terminating pod for scale down");
        self.delete_pod(ctx, pod).await?;
        Ok(true)
    }

    fn pod_event(&self, ctx: &Sync<'_>, verb: &str, pod: &Pod, err: Option<&str>) {
        let name = pod.metadata.name.as_deref().unwrap_or("");
        let set = set_name(ctx.set);
        let title = title(verb);
        match err {
            None => self.recorder.event(
                &ctx.regarding,
                None,
                EventType::Normal,
                &format!("Successful{title}"),
                &title,
                &format!("{verb} Pod {name} in StatefulSet {set} successful"),
            ),
            Some(e) => self.recorder.event(
                &ctx.regarding,
                None,
                EventType::Warning,
                &format!("Failed{title}"),
                &title,
                &format!("{verb} Pod {name} in StatefulSet {set} failed error: {e}"),
            ),
        }
    }

    fn claim_event(&self, ctx: &Sync<'_>, verb: &str, claim: &str, pod: &Pod, err: Option<&str>) {
        let name = pod.metadata.name.as_deref().unwrap_or("");
        let set = set_name(ctx.set);
        let title = title(verb);
        match err {
            None => self.recorder.event(
                &ctx.regarding,
                None,
                EventType::Normal,
                &format!("Successful{title}"),
                &title,
                &format!("{verb} Claim {claim} Pod {name} in StatefulSet {set} success"),
            ),
            Some(e) => self.recorder.event(
                &ctx.regarding,
                None,
                EventType::Warning,
                &format!("Failed{title}"),
                &title,
                &format!(
                    "{verb} Claim {claim} for Pod {name} in StatefulSet {set} failed error: {e}"
                ),
            ),
        }
    }

    /// Upstream `CreateStatefulPod`: claims first, then the pod, then the claims'
    /// owner references.
    async fn create_pod(&self, ctx: &Sync<'_>, pod: &Pod) -> Result<(), String> {
        if let Err(e) = self.create_claims(ctx, ctx.set, pod).await {
            self.pod_event(ctx, "create", pod, Some(&e));
            return Err(e);
        }
        let ns = ctx.key.namespace().unwrap_or_default();
        let created = match Api::<Pod>::namespaced(self.kube(), ns)
            .create(&PostParams::default(), pod)
            .await
        {
            Ok(p) => p,
            Err(kube::Error::Api(s)) if s.code == 409 && s.reason == "AlreadyExists" => {
                return Err(s.message);
            }
            Err(e) => {
                let m = api_message(&e);
                self.pod_event(ctx, "create", pod, Some(&m));
                return Err(m);
            }
        };
        self.consistency
            .wrote(&ctx.key, WrittenKind::Pod, &created.metadata, false);
        if let Err(e) = self
            .update_pod_claims_for_retention_policy(ctx, ctx.set, &created)
            .await
        {
            self.pod_event(ctx, "update", pod, Some(&e));
            return Err(e);
        }
        self.pod_event(ctx, "create", pod, None);
        Ok(())
    }

    /// Upstream `DeleteStatefulPod`: a plain delete; a pod that is gone is an error.
    async fn delete_pod(&self, ctx: &Sync<'_>, pod: &Pod) -> Result<(), String> {
        let ns = ctx.key.namespace().unwrap_or_default();
        let name = pod.metadata.name.as_deref().unwrap_or("");
        match Api::<Pod>::namespaced(self.kube(), ns)
            .delete(name, &DeleteParams::default())
            .await
        {
            Ok(res) => {
                let mut meta = pod.metadata.clone();
                meta.resource_version = res.left().and_then(|p| p.metadata.resource_version);
                self.consistency
                    .wrote(&ctx.key, WrittenKind::Pod, &meta, true);
                self.pod_event(ctx, "delete", pod, None);
                Ok(())
            }
            Err(e) => {
                let m = api_message(&e);
                self.pod_event(ctx, "delete", pod, Some(&m));
                Err(m)
            }
        }
    }

    /// Upstream `UpdateStatefulPod`: restore identity, storage and the claims' owner
    /// references; retried on conflict from a fresh copy.
    async fn update_pod(&self, ctx: &Sync<'_>, pod: &Pod) -> Result<(), String> {
        let set = &ctx.update_set;
        let mut pod = pod.clone();
        let mut delay = Duration::from_millis(10);
        let mut attempted = false;
        let mut last: Result<(), String> = Ok(());
        for attempt in 0..CONFLICT_ATTEMPTS {
            let mut dirty = false;
            if !identity_matches(set, &pod) {
                update_identity(set, &mut pod);
                dirty = true;
            }
            if !storage_matches(set, &pod) {
                update_storage(set, &mut pod);
                dirty = true;
                if let Err(e) = self.create_claims(ctx, set, &pod).await {
                    self.pod_event(ctx, "update", &pod, Some(&e));
                    return Err(e);
                }
            }
            if !self
                .claims_match_retention_policy(set, &pod)
                .await
                .unwrap_or(true)
            {
                if let Err(e) = self
                    .update_pod_claims_for_retention_policy(ctx, set, &pod)
                    .await
                {
                    self.pod_event(ctx, "update", &pod, Some(&e));
                    return Err(e);
                }
                dirty = true;
            }
            if !dirty {
                break;
            }
            attempted = true;
            match self.client.update(&pod).await {
                Ok(updated) => {
                    self.consistency
                        .wrote(&ctx.key, WrittenKind::Pod, &updated.metadata, false);
                    last = Ok(());
                    break;
                }
                Err(e) => {
                    last = Err(api_message(&e));
                    if !is_conflict(&e) || attempt + 1 == CONFLICT_ATTEMPTS {
                        break;
                    }
                    match self.cache.get::<Pod>(&ObjectKey::of(&pod)).await {
                        Some(fresh) => pod = (*fresh).clone(),
                        None => break,
                    }
                    tokio::time::sleep(delay).await;
                    delay *= 5;
                }
            }
        }
        if attempted {
            self.pod_event(ctx, "update", &pod, last.as_ref().err().map(String::as_str));
        }
        last
    }

    /// Upstream `createPersistentVolumeClaims`: create the pod's missing claims.
    async fn create_claims(
        &self,
        ctx: &Sync<'_>,
        set: &StatefulSet,
        pod: &Pod,
    ) -> Result<(), String> {
        let mut errors = Vec::new();
        let ns = ctx.key.namespace().unwrap_or_default();
        for claim in get_persistent_volume_claims(set, get_ordinal(pod)).into_values() {
            let name = claim.metadata.name.clone().unwrap_or_default();
            match self
                .cache
                .get::<PersistentVolumeClaim>(&ObjectKey::namespaced(ns, &name))
                .await
            {
                None => {
                    match Api::<PersistentVolumeClaim>::namespaced(self.kube(), ns)
                        .create(&PostParams::default(), &claim)
                        .await
                    {
                        Ok(created) => {
                            self.consistency.wrote(
                                &ctx.key,
                                WrittenKind::Claim,
                                &created.metadata,
                                false,
                            );
                            self.claim_event(ctx, "create", &name, pod, None);
                        }
                        Err(e) => {
                            let m = api_message(&e);
                            let exists =
                                matches!(&e, kube::Error::Api(s) if s.reason == "AlreadyExists");
                            if !exists {
                                self.claim_event(ctx, "create", &name, pod, Some(&m));
                            }
                            errors.push(format!("failed to create PVC {name}: {m}"));
                        }
                    }
                }
                Some(c) if c.metadata.deletion_timestamp.is_some() => {
                    errors.push(format!("pvc {name} is being deleted"));
                }
                Some(_) => {}
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors.join(", "))
        }
    }

    /// Upstream `createMissingPersistentVolumeClaims`: for a pending pod whose claims
    /// were deleted.
    async fn create_missing_claims(
        &self,
        ctx: &Sync<'_>,
        set: &StatefulSet,
        pod: &Pod,
    ) -> Result<(), String> {
        self.create_claims(ctx, set, pod).await?;
        self.update_pod_claims_for_retention_policy(ctx, set, pod)
            .await
    }

    /// Upstream `ClaimsMatchRetentionPolicy`.
    async fn claims_match_retention_policy(&self, set: &StatefulSet, pod: &Pod) -> Exit {
        let ns = set.metadata.namespace.as_deref().unwrap_or("");
        for claim in get_persistent_volume_claims(set, get_ordinal(pod)).into_values() {
            let name = claim.metadata.name.clone().unwrap_or_default();
            let Some(live) = self
                .cache
                .get::<PersistentVolumeClaim>(&ObjectKey::namespaced(ns, &name))
                .await
            else {
                tracing::debug!(claim = %name, "Expected claim missing, continuing to pick up in next iteration");
                continue;
            };
            if !is_claim_owner_up_to_date(&live, set, pod) {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Upstream `UpdatePodClaimForRetentionPolicy`.
    async fn update_pod_claims_for_retention_policy(
        &self,
        ctx: &Sync<'_>,
        set: &StatefulSet,
        pod: &Pod,
    ) -> Result<(), String> {
        let ns = set.metadata.namespace.as_deref().unwrap_or("");
        for claim in get_persistent_volume_claims(set, get_ordinal(pod)).into_values() {
            let name = claim.metadata.name.clone().unwrap_or_default();
            let Some(live) = self
                .cache
                .get::<PersistentVolumeClaim>(&ObjectKey::namespaced(ns, &name))
                .await
            else {
                continue;
            };
            if has_unexpected_claim_controller(&live, set, pod) {
                self.recorder.event(
                    &ctx.regarding,
                    None,
                    EventType::Warning,
                    "ConflictingController",
                    "Update",
                    &format!("PersistentVolumeClaim {name} has a conflicting OwnerReference that acts as a manging controller, the retention policy is ignored for this claim"),
                );
            }
            if is_claim_owner_up_to_date(&live, set, pod) {
                continue;
            }
            let mut fixed = (*live).clone();
            update_claim_owner_ref_for_set_and_pod(&mut fixed, set, pod);
            match self.client.update(&fixed).await {
                Ok(updated) => {
                    self.consistency
                        .wrote(&ctx.key, WrittenKind::Claim, &updated.metadata, false)
                }
                Err(e) => {
                    return Err(format!(
                        "could not update claim {name} for delete policy ownerRefs: {}",
                        api_message(&e)
                    ))
                }
            }
        }
        Ok(())
    }

    /// Upstream `PodClaimIsStale`: a claim of the pod still names an earlier pod of the
    /// same name (only with `whenScaled: Delete`).
    async fn pod_claim_is_stale(&self, set: &StatefulSet, pod: &Pod) -> Exit {
        if retention_policy(set).1 != DELETE {
            return Ok(false);
        }
        let ns = set.metadata.namespace.as_deref().unwrap_or("");
        for claim in get_persistent_volume_claims(set, get_ordinal(pod)).into_values() {
            let name = claim.metadata.name.clone().unwrap_or_default();
            if let Some(live) = self
                .cache
                .get::<PersistentVolumeClaim>(&ObjectKey::namespaced(ns, &name))
                .await
            {
                if claim_has_stale_pod_ref(&live, pod) {
                    return Ok(true);
                }
            }
        }
        Ok(false)
    }

    /// Upstream `updateStatefulSetStatus`: roll the current revision over when the
    /// update is complete, and write only when something the controller owns changed
    /// (retried on conflict from the cache's copy).
    async fn update_status(
        &self,
        key: &ObjectKey,
        set: &StatefulSet,
        mut status: StatefulSetStatus,
    ) -> Result<(), String> {
        complete_rolling_update(set, &mut status);
        if !inconsistent_status(set, &status) {
            return Ok(());
        }
        let mut target = set.clone();
        let mut delay = Duration::from_millis(10);
        for attempt in 0..5 {
            target.status = Some(status.clone());
            match self.client.update_status(&target).await {
                Ok(updated) => {
                    self.consistency
                        .wrote(key, WrittenKind::Set, &updated.metadata, false);
                    return Ok(());
                }
                Err(e) if is_conflict(&e) && attempt < 4 => {
                    match self.cache.get::<StatefulSet>(key).await {
                        Some(fresh) => target = (*fresh).clone(),
                        None => return Ok(()),
                    }
                    tokio::time::sleep(delay).await;
                    delay *= 2;
                }
                Err(e) if is_not_found(&e) => return Ok(()),
                Err(e) => return Err(api_message(&e)),
            }
        }
        Ok(())
    }
}

/// `strings.Title` of a lowercase verb.
fn title(verb: &str) -> String {
    let mut c = verb.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// Upstream `updateStatus` / `computeReplicaStatus`: counters over `pods`.
pub fn count_status(
    status: &mut StatefulSetStatus,
    pods: &[&Pod],
    current: &str,
    update: &str,
    min_ready_seconds: i32,
    now: Timestamp,
) {
    let (mut replicas, mut ready, mut available, mut cur, mut upd) = (0, 0, 0, 0, 0);
    for p in pods {
        if !is_created(p) {
            continue;
        }
        replicas += 1;
        if is_running_and_ready(p) {
            ready += 1;
            if is_running_and_available(p, min_ready_seconds, now) {
                available += 1;
            }
        }
        if !is_terminating(p) {
            let rev = get_pod_revision(p);
            if rev == current {
                cur += 1;
            }
            if rev == update {
                upd += 1;
            }
        }
    }
    status.replicas = replicas;
    status.ready_replicas = Some(ready);
    status.available_replicas = Some(available);
    status.current_replicas = Some(cur);
    status.updated_replicas = Some(upd);
}

impl Reconciler for StatefulSetReconciler {
    async fn reconcile(&self, _ctx: Context, key: ObjectKey) -> ReconcileResult {
        self.sync(key).await
    }
}
