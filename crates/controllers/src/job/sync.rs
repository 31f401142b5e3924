//! One sync of a Job (upstream `syncJob`, `manageJob`, `getPodsForJob`,
//! `deleteActivePods`, `deleteJobPods` in `job_controller.go`).
//!
//! 1. Read the Job from the cache (gone: forget its expectations and backoff); skip Jobs
//!    managed by another controller, finished Jobs, and Jobs this controller just
//!    finished whose update the cache has not shown yet.
//! 2. Note whether the expectations are satisfied *before* listing pods, then claim the
//!    pods (adoption adds the tracking finalizer).
//! 3. Count: pods that finished since the last sync and still carry the finalizer, plus
//!    the uncounted UIDs of the status, plus the counters.
//! 4. Decide whether the Job is finishing, in upstream's order: an existing
//!    `SuccessCriteriaMet`, an existing `FailureTarget`, a `FailJob` rule of the pod
//!    failure policy, the backoff limit (and restart counts under `OnFailure`), the
//!    active deadline, the failed indexes, the success policy.
//! 5. Finishing: delete the active pods. Otherwise create or delete pods towards
//!    `min(parallelism, completions - succeeded)`, after the pod-failure backoff, and
//!    check completion and the `Suspended` condition.
//! 6. Write the status and remove finalizers ([`super::finalizers`]).
//!
//! Delays (backoff, deadline) come back as a requeue time, never as a sleep.

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use apimachinery::selector::LabelSelector;
use coxswain_runtime::events::EventType;
use coxswain_runtime::ObjectKey;
use k8s_openapi::api::batch::v1::{Job, JobCondition};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::{SignedDuration, Timestamp};

use super::backoff::{
    remaining_time_per_index, BackoffRecord, BackoffStore, DEFAULT_POD_FAILURE_BACKOFF,
    MAX_POD_FAILURE_BACKOFF,
};
use super::cluster::{is_not_found, Cluster};
use super::conditions::{self as cond, new_condition};
use super::indexed::{
    add_completion_index_env, calculate_failed_indexes, calculate_succeeded_indexes,
    duplicated_index_pods_for_removal, first_pending_indexes, pod_generate_name_with_index,
    pods_with_delayed_deletion_per_index, set_completion_index, set_index_failure_counts,
    valid_index, IndexState, OrderedIntervals,
};
use super::pod_failure_policy::match_pod_failure_policy;
use super::spec::{self, has_tracking_finalizer, is_pod_failed, uid, JOB_TRACKING_FINALIZER};
use super::success_policy::match_success_policy;
use super::tracking::{UidTrackingExpectations, Uncounted};
use crate::controller_utils::pod::{is_pod_ready, pod_phase};
use crate::controller_utils::ranking::sort_active_pods;
use crate::controller_utils::ref_manager::{claim_pods_with_finalizers, ControllerIdentity};
use crate::controller_utils::{
    filter_active_pods, is_pod_terminating, pod_key, slow_start_batch, ControllerExpectations,
    SLOW_START_INITIAL_BATCH_SIZE,
};

/// Most pods created or deleted in one sync (upstream `MaxPodCreateDeletePerSync`).
pub const MAX_POD_CREATE_DELETE_PER_SYNC: usize = 500;
/// How long pod and status events wait before they sync the Job, so that bursts are
/// synced once (upstream `SyncJobBatchPeriod`); also the shortest backoff requeue.
pub const SYNC_JOB_BATCH_PERIOD: Duration = Duration::from_secs(1);

/// UIDs of the Jobs this controller marked finished whose update the cache has not
/// shown yet (upstream `finishedJobExpectations`).
#[derive(Debug, Default)]
pub struct FinishedJobs(Mutex<HashSet<String>>);

impl FinishedJobs {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
    /// Remember `uid`.
    pub fn insert(&self, uid: &str) {
        self.lock().insert(uid.to_string());
    }
    /// Forget `uid`.
    pub fn remove(&self, uid: &str) {
        self.lock().remove(uid);
    }
    /// Whether `uid` is remembered.
    pub fn contains(&self, uid: &str) -> bool {
        self.lock().contains(uid)
    }
}

/// The in-memory state a Job controller keeps besides the cache.
#[derive(Clone, Default)]
pub struct JobState {
    /// Pod creations and deletions issued and not yet seen.
    pub expectations: Arc<ControllerExpectations>,
    /// Finalizer removals issued and not yet seen.
    pub finalizer_expectations: Arc<UidTrackingExpectations>,
    /// Pod-failure backoff per Job.
    pub backoff: Arc<BackoffStore>,
    /// Jobs marked finished, awaiting their cache update.
    pub finished: Arc<FinishedJobs>,
}

/// What a sync asks of the queue.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct SyncOutcome {
    /// Sync again after this delay (backoff, active deadline).
    pub requeue_after: Option<Duration>,
    /// The sync failed: retry with the rate limiter.
    pub error: Option<String>,
}

impl SyncOutcome {
    fn requeue(&mut self, d: Duration) {
        self.requeue_after = Some(self.requeue_after.map_or(d, |c| c.min(d)));
    }
}

/// The working state of one sync (upstream `syncJobCtx`).
pub(crate) struct SyncCtx {
    pub(crate) key: ObjectKey,
    pub(crate) job: Job,
    pub(crate) pods: Vec<Arc<Pod>>,
    pub(crate) active_pods: Vec<Arc<Pod>>,
    pub(crate) finished_condition: Option<JobCondition>,
    pub(crate) succeeded: i32,
    pub(crate) failed: i32,
    pub(crate) prev_succeeded_indexes: OrderedIntervals,
    pub(crate) succeeded_indexes: OrderedIntervals,
    pub(crate) failed_indexes: Option<OrderedIntervals>,
    pub(crate) new_backoff_record: BackoffRecord,
    pub(crate) expected_rm_finalizers: HashSet<String>,
    pub(crate) uncounted: Uncounted,
    pub(crate) delayed_deletion: BTreeMap<i64, Arc<Pod>>,
    pub(crate) terminating: i32,
    pub(crate) ready: i32,
}

impl SyncCtx {
    /// Pods with the finalizer, not uncounted in `uncounted`, not awaiting finalizer
    /// removal, with a valid index for Indexed Jobs, that pass `filter` (upstream
    /// `getValidPodsWithFilter`).
    fn valid_pods(
        &self,
        uncounted: Option<&HashSet<String>>,
        filter: impl Fn(&Pod) -> bool,
    ) -> Vec<Arc<Pod>> {
        let indexed = spec::is_indexed(&self.job);
        let completions = i64::from(spec::completions(&self.job).unwrap_or(0));
        self.pods
            .iter()
            .filter(|p| {
                has_tracking_finalizer(p)
                    && !uncounted.is_some_and(|u| u.contains(uid(p)))
                    && !self.expected_rm_finalizers.contains(uid(p))
                    && (!indexed || valid_index(p, completions).is_some())
                    && filter(p)
            })
            .cloned()
            .collect()
    }

    /// Pods that succeeded and failed since the last sync (upstream
    /// `getNewFinishedPods`).
    pub(crate) fn new_finished_pods(&self) -> (Vec<Arc<Pod>>, Vec<Arc<Pod>>) {
        let succeeded = self.valid_pods(Some(&self.uncounted.succeeded), |p| {
            pod_phase(p) == "Succeeded"
        });
        let failed = self.valid_pods(Some(&self.uncounted.failed), |p| {
            is_pod_failed(p, &self.job)
        });
        (succeeded, failed)
    }
}

fn count(n: usize) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

/// The Job controller's sync, over a [`Cluster`].
pub struct JobSync<C> {
    pub(crate) cluster: C,
    pub(crate) state: JobState,
}

impl<C: Cluster> JobSync<C> {
    /// A sync over `cluster` with `state`.
    pub fn new(cluster: C, state: JobState) -> Self {
        JobSync { cluster, state }
    }

    /// The cluster.
    pub fn cluster(&self) -> &C {
        &self.cluster
    }

    /// Sync the Job at `key`.
    pub async fn sync(&self, key: &ObjectKey) -> SyncOutcome {
        let mut out = SyncOutcome::default();
        if key.namespace().unwrap_or("").is_empty() || key.name().is_empty() {
            out.error = Some(format!(
                "invalid job key {:?}: either namespace or name is missing",
                key.to_string()
            ));
            return out;
        }
        let Some(shared) = self.cluster.job(key).await else {
            tracing::debug!(%key, "job has been deleted");
            self.state.expectations.delete_expectations(key);
            self.state.finalizer_expectations.delete_expectations(key);
            self.state.backoff.remove(key);
            return out;
        };
        if let Some(controller) = spec::managed_by_external_controller(&shared) {
            tracing::debug!(%key, controller, "skip syncing the job as it is managed by an external controller");
            return out;
        }
        let job_uid = shared.metadata.uid.clone().unwrap_or_default();
        if cond::is_job_finished(&shared) {
            self.state.backoff.remove(key);
            self.state.finished.remove(&job_uid);
            return out;
        }
        if self.state.finished.contains(&job_uid) {
            tracing::debug!(%key, "skip syncing the job as it is marked finished but its update is not seen yet");
            return out;
        }
        if !spec::known_completion_mode(&shared) {
            self.cluster.event(
                &shared,
                EventType::Warning,
                "UnknownCompletionMode",
                "Skipped Job sync because completion mode is unknown",
            );
            return out;
        }
        let mut job = (*shared).clone();
        job.status
            .get_or_insert_with(Default::default)
            .uncounted_terminated_pods
            .get_or_insert_with(Default::default);
        // before listing pods: a pod that sneaks in after this check waits for the next sync
        let satisfied = self.state.expectations.satisfied(key);
        let pods = match self.pods_for_job(key, &job).await {
            Ok(p) => p,
            Err(e) => {
                out.error = Some(e);
                return out;
            }
        };
        if let Err(e) = self
            .sync_with_pods(key, job, pods, satisfied, &mut out)
            .await
        {
            out.error = Some(e);
        }
        out
    }

    /// The pods of `job`, claimed: orphans matching its selector are adopted (with the
    /// tracking finalizer), owned pods that stopped matching are released (upstream
    /// `getPodsForJob`).
    async fn pods_for_job(&self, key: &ObjectKey, job: &Job) -> Result<Vec<Arc<Pod>>, String> {
        let selector = match &spec::spec(job).selector {
            Some(s) => LabelSelector::from_meta(s)
                .map_err(|e| format!("couldn't convert Job selector: {e}"))?,
            None => LabelSelector::nothing(),
        };
        let candidates = self.cluster.pods_of(job).await;
        let controller = ControllerIdentity::of(job);
        let no_labels = Default::default();
        let matches =
            |p: &Pod| selector.matches_labels(p.metadata.labels.as_ref().unwrap_or(&no_labels));
        let patch = |pod: Arc<Pod>, body: serde_json::Value| async move {
            self.cluster.patch_pod(&pod, &body).await
        };
        let job_uid = job.metadata.uid.clone().unwrap_or_default();
        let can_adopt = || async {
            match self.cluster.fresh_job(key).await {
                Ok(Some(fresh)) => {
                    let fresh_uid = fresh.metadata.uid.clone().unwrap_or_default();
                    if fresh_uid != job_uid {
                        return Err(format!(
                            "original Job {key} is gone: got uid {fresh_uid}, wanted {job_uid}"
                        ));
                    }
                    if let Some(ts) = &fresh.metadata.deletion_timestamp {
                        return Err(format!("{key} has just been deleted at {}", ts.0));
                    }
                    Ok(())
                }
                Ok(None) => Err(format!("original Job {key} is gone")),
                Err(e) => Err(e.to_string()),
            }
        };
        let claimed = claim_pods_with_finalizers(
            &controller,
            candidates,
            matches,
            patch,
            can_adopt,
            &[JOB_TRACKING_FINALIZER],
        )
        .await
        .map_err(|e| e.to_string())?;
        // an adopted pod counts as tracked in this sync already
        Ok(claimed
            .into_iter()
            .map(|p| {
                let owned = p
                    .metadata
                    .owner_references
                    .iter()
                    .flatten()
                    .any(|r| r.uid == job_uid);
                if owned || has_tracking_finalizer(&p) {
                    return p;
                }
                let mut copy = (*p).clone();
                copy.metadata
                    .finalizers
                    .get_or_insert_with(Vec::new)
                    .push(JOB_TRACKING_FINALIZER.to_string());
                Arc::new(copy)
            })
            .collect())
    }

    /// Steps 3 to 6 of the module documentation, for `pods` already claimed.
    pub(crate) async fn sync_with_pods(
        &self,
        key: &ObjectKey,
        mut job: Job,
        pods: Vec<Arc<Pod>>,
        satisfied: bool,
        out: &mut SyncOutcome,
    ) -> Result<(), String> {
        let now = self.cluster.now();
        let status = job.status.clone().unwrap_or_default();
        let active_pods = filter_active_pods(&pods);
        let mut ctx = SyncCtx {
            key: key.clone(),
            ready: count(active_pods.iter().filter(|p| is_pod_ready(p)).count()),
            terminating: count(pods.iter().filter(|p| is_pod_terminating(p)).count()),
            uncounted: Uncounted::of(status.uncounted_terminated_pods.as_ref()),
            expected_rm_finalizers: self.state.finalizer_expectations.expected_uids(key),
            job: job.clone(),
            pods,
            active_pods,
            finished_condition: None,
            succeeded: 0,
            failed: 0,
            prev_succeeded_indexes: OrderedIntervals::default(),
            succeeded_indexes: OrderedIntervals::default(),
            failed_indexes: None,
            new_backoff_record: BackoffRecord::default(),
            delayed_deletion: BTreeMap::new(),
        };
        let mut active = count(ctx.active_pods.len());
        let (new_succeeded, new_failed) = ctx.new_finished_pods();
        let policy = spec::spec(&job).pod_failure_policy.clone();
        let ignored = if policy.is_some() {
            new_failed
                .iter()
                .filter(|p| !match_pod_failure_policy(policy.as_ref(), p).count_failed)
                .count()
        } else {
            0
        };
        ctx.succeeded = status
            .succeeded
            .unwrap_or(0)
            .saturating_add(count(new_succeeded.len()))
            .saturating_add(count(ctx.uncounted.succeeded.len()));
        ctx.failed = status
            .failed
            .unwrap_or(0)
            .saturating_add(count(new_failed.len() - ignored))
            .saturating_add(count(ctx.uncounted.failed.len()));

        if status.start_time.is_none() && !spec::is_suspended(&job) {
            job.status.get_or_insert_with(Default::default).start_time = Some(Time(now));
        }
        ctx.job = job;
        ctx.new_backoff_record = self
            .state
            .backoff
            .new_record(key, &new_succeeded, &new_failed);

        self.evaluate_finish(&mut ctx, now, out);

        let mut manage_err: Option<String> = None;
        let mut suspend_changed = false;
        if ctx.finished_condition.is_some() {
            let to_delete = ctx.active_pods.clone();
            let (deleted_ready, deleted, err) = self.delete_active_pods(&ctx.job, &to_delete).await;
            if deleted != active || !satisfied {
                // pods may remain, or be unseen yet: not finished in this sync
                ctx.finished_condition = None;
            }
            active -= deleted;
            ctx.terminating += deleted;
            ctx.ready -= deleted_ready;
            manage_err = err;
        } else {
            let mut manage_called = false;
            if satisfied && ctx.job.metadata.deletion_timestamp.is_none() {
                let (a, err) = self.manage_job(&mut ctx, now, out).await;
                active = a;
                manage_err = err;
                manage_called = true;
            }
            let complete = match spec::completions(&ctx.job) {
                None => ctx.succeeded > 0 && active == 0,
                Some(c) => ctx.succeeded >= c && active == 0,
            };
            if complete {
                ctx.finished_condition = Some(new_condition(
                    cond::SUCCESS_CRITERIA_MET,
                    "True",
                    cond::REASON_COMPLETIONS_REACHED,
                    cond::MESSAGE_COMPLETIONS_REACHED,
                    now,
                ));
            } else if manage_called {
                let suspended = spec::is_suspended(&ctx.job);
                let status = ctx.job.status.get_or_insert_with(Default::default);
                let conditions = status.conditions.get_or_insert_with(Vec::new);
                suspend_changed = if suspended {
                    cond::ensure_status(
                        conditions,
                        cond::SUSPENDED,
                        "True",
                        "JobSuspended",
                        "Job suspended",
                        now,
                    )
                } else {
                    cond::ensure_status(
                        conditions,
                        cond::SUSPENDED,
                        "False",
                        "JobResumed",
                        "Job resumed",
                        now,
                    )
                };
                if status.conditions.as_ref().is_some_and(Vec::is_empty) {
                    status.conditions = None;
                }
                if suspend_changed && !suspended {
                    // the deadline counts the time the Job is continuously active
                    status.start_time = Some(Time(now));
                }
                if suspend_changed {
                    let (reason, message) = if suspended {
                        ("Suspended", "Job suspended")
                    } else {
                        ("Resumed", "Job resumed")
                    };
                    self.cluster
                        .event(&ctx.job, EventType::Normal, reason, message);
                }
            }
        }

        let status = ctx.job.status.get_or_insert_with(Default::default);
        let needs_update = suspend_changed
            || active != status.active.unwrap_or(0)
            || status.ready != Some(ctx.ready)
            || status.terminating != Some(ctx.terminating);
        status.active = (active != 0).then_some(active);
        status.ready = Some(ctx.ready);
        status.terminating = Some(ctx.terminating);
        self.track_job_status_and_remove_finalizers(&mut ctx, needs_update)
            .await
            .map_err(|e| format!("tracking status: {e}"))?;
        match manage_err {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Step 4: the condition the Job is finishing with, if any.
    fn evaluate_finish(&self, ctx: &mut SyncCtx, now: Timestamp, out: &mut SyncOutcome) {
        let job = &ctx.job;
        let exceeds_backoff_limit = ctx.failed > spec::backoff_limit(job);
        ctx.finished_condition = cond::success_criteria_met(job).cloned();
        if ctx.finished_condition.is_none() {
            if let Some(target) =
                cond::find(cond::of(job), cond::FAILURE_TARGET).filter(|c| c.status == "True")
            {
                ctx.finished_condition = Some(new_condition(
                    cond::FAILED,
                    "True",
                    cond::reason(target),
                    cond::message(target),
                    now,
                ));
            } else if let Some(msg) = fail_job_message(job, &ctx.pods) {
                ctx.finished_condition = Some(new_condition(
                    cond::FAILURE_TARGET,
                    "True",
                    cond::REASON_POD_FAILURE_POLICY,
                    &msg,
                    now,
                ));
            }
        }
        let failure = |reason: &str, message: &str| {
            new_condition(cond::FAILURE_TARGET, "True", reason, message, now)
        };
        if ctx.finished_condition.is_none() {
            if exceeds_backoff_limit || past_backoff_limit_on_failure(job, &ctx.pods) {
                ctx.finished_condition = Some(failure(
                    cond::REASON_BACKOFF_LIMIT_EXCEEDED,
                    cond::MESSAGE_BACKOFF_LIMIT_EXCEEDED,
                ));
            } else if past_active_deadline(job, now) {
                ctx.finished_condition = Some(failure(
                    cond::REASON_DEADLINE_EXCEEDED,
                    cond::MESSAGE_DEADLINE_EXCEEDED,
                ));
            } else if let (Some(ads), false) = (
                spec::spec(job).active_deadline_seconds,
                spec::is_suspended(job),
            ) {
                if let Some(left) = deadline_remaining(job, ads, now) {
                    tracing::debug!(key = %ctx.key, next_sync_in = ?left, "job has activeDeadlineSeconds; will sync it again");
                    out.requeue(left);
                }
            }
        }
        if spec::is_indexed(job) {
            let (prev, all) = calculate_succeeded_indexes(job, &ctx.pods);
            ctx.prev_succeeded_indexes = prev;
            ctx.succeeded = i32::try_from(all.total()).unwrap_or(i32::MAX);
            ctx.succeeded_indexes = all;
            if spec::backoff_limit_per_index(job).is_some() {
                let failed = calculate_failed_indexes(job, &ctx.pods);
                if ctx.finished_condition.is_none() {
                    let completions = i64::from(spec::completions(job).unwrap_or(0));
                    let max = spec::spec(job).max_failed_indexes;
                    if max.is_some_and(|m| failed.total() > i64::from(m)) {
                        ctx.finished_condition = Some(failure(
                            cond::REASON_MAX_FAILED_INDEXES_EXCEEDED,
                            cond::MESSAGE_MAX_FAILED_INDEXES_EXCEEDED,
                        ));
                    } else if failed.total() > 0
                        && failed.total() + ctx.succeeded_indexes.total() >= completions
                    {
                        ctx.finished_condition = Some(failure(
                            cond::REASON_FAILED_INDEXES,
                            cond::MESSAGE_FAILED_INDEXES,
                        ));
                    }
                }
                ctx.failed_indexes = Some(failed);
                let st = IndexState {
                    job,
                    pods: &ctx.pods,
                    active: &ctx.active_pods,
                    succeeded: &ctx.succeeded_indexes,
                    failed: ctx.failed_indexes.as_ref(),
                };
                ctx.delayed_deletion =
                    pods_with_delayed_deletion_per_index(&st, &ctx.expected_rm_finalizers);
            }
            if ctx.finished_condition.is_none() {
                if let Some(msg) = match_success_policy(
                    spec::spec(job).success_policy.as_ref(),
                    spec::completions(job).unwrap_or(0),
                    &ctx.succeeded_indexes,
                ) {
                    ctx.finished_condition = Some(new_condition(
                        cond::SUCCESS_CRITERIA_MET,
                        "True",
                        cond::REASON_SUCCESS_POLICY,
                        &msg,
                        now,
                    ));
                }
            }
        }
    }

    /// Delete the active pods of a finishing Job, keeping their finalizers (upstream
    /// `deleteActivePods`): `(ready deleted, deleted, first error)`.
    async fn delete_active_pods(&self, job: &Job, pods: &[Arc<Pod>]) -> (i32, i32, Option<String>) {
        let results = futures::future::join_all(
            pods.iter()
                .map(|p| async move { (p, self.cluster.delete_pod(job, p).await) }),
        )
        .await;
        let (mut ready, mut deleted, mut first_err) = (0, 0, None);
        for (pod, r) in results {
            match r {
                Ok(_) => {
                    deleted += 1;
                    if is_pod_ready(pod) {
                        ready += 1;
                    }
                }
                Err(e) if is_not_found(&e) => deleted += 1,
                Err(e) => {
                    first_err.get_or_insert(e.to_string());
                }
            }
        }
        (ready, deleted, first_err)
    }

    /// Remove the finalizer of each pod, then delete it (upstream `deleteJobPods`); the
    /// deletions were expected by the caller. `(ready removed, removed, first error)`.
    async fn delete_job_pods(
        &self,
        key: &ObjectKey,
        job: &Job,
        pods: &[Arc<Pod>],
    ) -> (i32, i32, Option<String>) {
        let results = futures::future::join_all(pods.iter().map(|p| async move {
            if let Some(patch) = spec::remove_tracking_finalizer_patch(p) {
                if let Err(e) = self.cluster.patch_pod(p, &patch).await {
                    let not_found = super::cluster::api_not_found(&e);
                    return (
                        p,
                        Err((format!("removing completion finalizer: {e}"), not_found)),
                    );
                }
            }
            match self.cluster.delete_pod(job, p).await {
                Ok(_) => (p, Ok(())),
                Err(e) => {
                    let not_found = is_not_found(&e);
                    (p, Err((e.to_string(), not_found)))
                }
            }
        }))
        .await;
        let (mut ready, mut removed, mut first_err) = (0, 0, None);
        for (pod, r) in results {
            match r {
                Ok(()) => {
                    removed += 1;
                    if is_pod_ready(pod) {
                        ready += 1;
                    }
                }
                Err((e, not_found)) => {
                    // the informer will not report this deletion
                    self.state
                        .expectations
                        .deletion_observed(key, &pod_key(pod));
                    if not_found {
                        removed += 1;
                    } else {
                        tracing::debug!(%key, pod = %pod_key(pod), error = %e, "failed to delete pod");
                        first_err.get_or_insert(e);
                    }
                }
            }
        }
        (ready, removed, first_err)
    }

    /// Create or delete pods so that the Job runs as many as it should (upstream
    /// `manageJob`): the new active count and the first error.
    async fn manage_job(
        &self,
        ctx: &mut SyncCtx,
        now: Timestamp,
        out: &mut SyncOutcome,
    ) -> (i32, Option<String>) {
        let key = ctx.key.clone();
        let job = ctx.job.clone();
        let active = count(ctx.active_pods.len());
        let parallelism = spec::parallelism(&job);
        if spec::is_suspended(&job) {
            tracing::debug!(%key, active, "deleting all active pods of a suspended job");
            let doomed = active_pods_for_removal(&job, &ctx.active_pods, ctx.active_pods.len());
            self.state
                .expectations
                .expect_deletions(&key, doomed.iter().map(|p| pod_key(p)));
            let (ready, removed, err) = self.delete_job_pods(&key, &job, &doomed).await;
            ctx.terminating += removed;
            ctx.ready -= ready;
            return (active - removed, err);
        }
        let want_active = match spec::completions(&job) {
            // a work queue: once a pod succeeded, leave the running ones alone
            None if ctx.succeeded > 0 => active,
            None => parallelism,
            Some(c) => (c - ctx.succeeded).clamp(0, parallelism.max(0)),
        };
        let rm_at_least = usize::try_from((active - want_active).max(0)).unwrap_or(0);
        let mut doomed = active_pods_for_removal(&job, &ctx.active_pods, rm_at_least);
        doomed.truncate(MAX_POD_CREATE_DELETE_PER_SYNC);
        if !doomed.is_empty() {
            self.state
                .expectations
                .expect_deletions(&key, doomed.iter().map(|p| pod_key(p)));
            tracing::debug!(%key, deleted = doomed.len(), target = want_active, "too many pods running for job");
            let (ready, removed, err) = self.delete_job_pods(&key, &job, &doomed).await;
            ctx.terminating += removed;
            ctx.ready -= ready;
            // never create and delete in one sync: deletion wins
            return (active - removed, err);
        }
        let terminating = if spec::only_replace_failed_pods(&job) {
            ctx.terminating
        } else {
            0
        };
        let diff = want_active - terminating - active;
        if diff <= 0 {
            return (active, None);
        }
        if spec::backoff_limit_per_index(&job).is_none() {
            let wait = ctx.new_backoff_record.remaining_time(
                now,
                DEFAULT_POD_FAILURE_BACKOFF,
                MAX_POD_FAILURE_BACKOFF,
            );
            if !wait.is_zero() {
                out.requeue(wait.max(SYNC_JOB_BATCH_PERIOD));
                // as upstream: this sync reports no active pods
                return (0, None);
            }
        }
        let mut diff = usize::try_from(diff)
            .unwrap_or(0)
            .min(MAX_POD_CREATE_DELETE_PER_SYNC);
        let mut indexes: VecDeque<i64> = VecDeque::new();
        if spec::is_indexed(&job) {
            let completions = i64::from(spec::completions(&job).unwrap_or(0));
            let st = IndexState {
                job: &job,
                pods: &ctx.pods,
                active: &ctx.active_pods,
                succeeded: &ctx.succeeded_indexes,
                failed: ctx.failed_indexes.as_ref(),
            };
            let mut pending = first_pending_indexes(&st, diff, completions);
            if spec::backoff_limit_per_index(&job).is_some() {
                let (now_ready, wait) = creatable_indexes(now, &pending, &ctx.delayed_deletion);
                if !wait.is_zero() {
                    out.requeue(wait.max(SYNC_JOB_BATCH_PERIOD));
                    return (0, None);
                }
                pending = now_ready;
            }
            diff = pending.len();
            indexes = pending.into();
        }
        if diff == 0 {
            return (active, None);
        }
        self.state.expectations.expect_creations(&key, diff);
        tracing::debug!(%key, need = want_active, creating = diff, "too few pods running");
        let mut template = spec::spec(&job).template.clone();
        if spec::is_indexed(&job) {
            add_completion_index_env(&mut template);
        }
        let finalizers = template
            .metadata
            .get_or_insert_with(Default::default)
            .finalizers
            .get_or_insert_with(Vec::new);
        if !finalizers.iter().any(|f| f == JOB_TRACKING_FINALIZER) {
            finalizers.push(JOB_TRACKING_FINALIZER.to_string());
        }
        let job_name = job.metadata.name.clone().unwrap_or_default();
        let blpi = spec::backoff_limit_per_index(&job).is_some();
        let indexes = Mutex::new(indexes);
        let delayed = &ctx.delayed_deletion;
        let (created, err) = slow_start_batch(diff, SLOW_START_INITIAL_BATCH_SIZE, || {
            let index = indexes
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .pop_front();
            let mut t = template.clone();
            let mut generate_name = String::new();
            if let Some(ix) = index {
                set_completion_index(&mut t, &job_name, ix);
                generate_name = pod_generate_name_with_index(&job_name, ix);
                if blpi {
                    set_index_failure_counts(&mut t, &job, delayed.get(&ix).map(|p| p.as_ref()));
                }
            }
            let job = &job;
            async move {
                match self.cluster.create_pod(job, &t, &generate_name).await {
                    Ok(()) => Ok(()),
                    // the namespace is going away: nothing to do, and no error
                    Err(e) if e.is_namespace_terminating() => Ok(()),
                    Err(e) => Err(e),
                }
            }
        })
        .await;
        if created < diff {
            // the informer will never see these
            self.state
                .expectations
                .lower_creations(&key, diff - created);
        }
        (active + count(created), err.map(|e| e.to_string()))
    }
}

/// The active pods to delete (upstream `activePodsForRemoval`): for Indexed Jobs the
/// pods of repeated, missing or out-of-range indexes, then, when that is fewer than
/// `rm_at_least`, the first of the rest in `ActivePods` order.
pub fn active_pods_for_removal(job: &Job, pods: &[Arc<Pod>], rm_at_least: usize) -> Vec<Arc<Pod>> {
    let (mut rm, mut left) = if spec::is_indexed(job) {
        duplicated_index_pods_for_removal(pods, i64::from(spec::completions(job).unwrap_or(0)))
    } else {
        (Vec::new(), pods.to_vec())
    };
    if rm.len() < rm_at_least {
        sort_active_pods(&mut left);
        let more = (rm_at_least - rm.len()).min(left.len());
        rm.extend(left.into_iter().take(more));
    }
    rm
}

/// Of `indexes`, those whose per-index backoff is over; when none is, the shortest wait
/// (upstream `getPodCreationInfoForIndependentIndexes`).
pub fn creatable_indexes(
    now: Timestamp,
    indexes: &[i64],
    delayed: &BTreeMap<i64, Arc<Pod>>,
) -> (Vec<i64>, Duration) {
    let mut ready = Vec::new();
    let mut min_wait: Option<Duration> = None;
    for &ix in indexes {
        let wait = remaining_time_per_index(
            now,
            DEFAULT_POD_FAILURE_BACKOFF,
            MAX_POD_FAILURE_BACKOFF,
            delayed.get(&ix).map(|p| p.as_ref()),
        );
        if wait.is_zero() {
            ready.push(ix);
        } else {
            min_wait = Some(min_wait.map_or(wait, |m| m.min(wait)));
        }
    }
    if !ready.is_empty() {
        return (ready, Duration::ZERO);
    }
    (ready, min_wait.unwrap_or(Duration::ZERO))
}

/// The message of the first failed pod matching a `FailJob` rule (upstream
/// `getFailJobMessage`).
pub fn fail_job_message(job: &Job, pods: &[Arc<Pod>]) -> Option<String> {
    let policy = spec::spec(job).pod_failure_policy.as_ref()?;
    pods.iter()
        .filter(|p| is_pod_failed(p, job))
        .find_map(|p| match_pod_failure_policy(Some(policy), p).fail_job_message)
}

/// Whether the containers of running and pending pods restarted at least
/// `backoffLimit` times (more than 0 for a limit of 0), under `restartPolicy: OnFailure`
/// (upstream `pastBackoffLimitOnFailure`).
pub fn past_backoff_limit_on_failure(job: &Job, pods: &[Arc<Pod>]) -> bool {
    if spec::restart_policy(job) != "OnFailure" {
        return false;
    }
    let restarts: i64 = pods
        .iter()
        .filter(|p| matches!(pod_phase(p), "Running" | "Pending"))
        .filter_map(|p| p.status.as_ref())
        .flat_map(|s| {
            s.init_container_statuses
                .iter()
                .flatten()
                .chain(s.container_statuses.iter().flatten())
        })
        .map(|c| i64::from(c.restart_count))
        .sum();
    let limit = i64::from(spec::backoff_limit(job));
    if limit == 0 {
        restarts > 0
    } else {
        restarts >= limit
    }
}

fn start_time(job: &Job) -> Option<Timestamp> {
    job.status.as_ref()?.start_time.as_ref().map(|t| t.0)
}

/// Whether the Job has been active at least `activeDeadlineSeconds` (never while
/// suspended; upstream `pastActiveDeadline`).
pub fn past_active_deadline(job: &Job, now: Timestamp) -> bool {
    let (Some(ads), Some(start)) = (spec::spec(job).active_deadline_seconds, start_time(job))
    else {
        return false;
    };
    if spec::is_suspended(job) {
        return false;
    }
    now.duration_since(start) >= SignedDuration::from_secs(ads)
}

/// How long until the active deadline of a started Job passes (zero when it passed).
pub fn deadline_remaining(job: &Job, ads: i64, now: Timestamp) -> Option<Duration> {
    let start = start_time(job)?;
    let left = SignedDuration::from_secs(ads).saturating_sub(now.duration_since(start));
    Some(Duration::try_from(left).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
#[path = "sync_tests.rs"]
mod tests;
