//! Writing the Job's status and removing the pods' tracking finalizers (upstream
//! `trackJobStatusAndRemoveFinalizers`, `flushUncountedAndRemoveFinalizers`,
//! `removeTrackingFinalizerFromPods` and `enactJobFinished`).
//!
//! A sync that sees finished pods writes the status twice: first with their UIDs in
//! `uncountedTerminatedPods` (an Indexed Job's succeeded pods go straight into
//! `completedIndexes`) and any interim `FailureTarget` or `SuccessCriteriaMet`
//! condition; then, after the finalizers are removed, with the counters and, when no pod
//! is terminating and nothing is left uncounted, the final `Complete` or `Failed`. At
//! most [`MAX_UNCOUNTED_PODS`] pods are handled per sync, so the status stays small and a
//! big Job does not starve the others; its own writes bring it back.

use std::collections::HashSet;
use std::sync::Arc;

use coxswain_runtime::events::EventType;
use coxswain_runtime::ObjectKey;
use k8s_openapi::api::core::v1::Pod;

use super::cluster::{api_not_found, Cluster};
use super::conditions::{self as cond, new_condition};
use super::indexed::{index_order, valid_index};
use super::pod_failure_policy::match_pod_failure_policy;
use super::spec::{self, has_tracking_finalizer, is_pod_failed, is_pod_succeeded, uid};
use super::sync::{JobSync, SyncCtx};
use super::tracking::{clean_uncounted_pods_without_finalizers, uncounted_len};

/// Most pods counted per sync (upstream `MaxUncountedPods`): keeps
/// `status.uncountedTerminatedPods` around 20 KB.
pub const MAX_UNCOUNTED_PODS: usize = 500;

impl<C: Cluster> JobSync<C> {
    /// Write the status and remove finalizers for the finished pods of `ctx` (see the
    /// module documentation); `needs_flush` when the status changed already.
    pub(crate) async fn track_job_status_and_remove_finalizers(
        &self,
        ctx: &mut SyncCtx,
        mut needs_flush: bool,
    ) -> Result<(), String> {
        let indexed = spec::is_indexed(&ctx.job);
        let completions = i64::from(spec::completions(&ctx.job).unwrap_or(0));
        if indexed {
            // completed indexes are introduced in order
            ctx.pods.sort_by_key(|p| index_order(p));
        }
        let mut with_finalizer: HashSet<String> = ctx
            .pods
            .iter()
            .filter(|p| has_tracking_finalizer(p) && !ctx.expected_rm_finalizers.contains(uid(p)))
            .map(|p| uid(p).to_string())
            .collect();
        if clean_uncounted_pods_without_finalizers(
            ctx.job.status.get_or_insert_with(Default::default),
            &with_finalizer,
        ) {
            needs_flush = true;
        }
        let policy = spec::spec(&ctx.job).pod_failure_policy.clone();
        let mut to_remove: Vec<Arc<Pod>> = Vec::new();
        let mut new_succeeded_indexes: Vec<i64> = Vec::new();
        let mut reached_max = false;
        let failing = ctx
            .finished_condition
            .as_ref()
            .is_some_and(|c| !cond::is_success_criteria_met(c));
        for pod in &ctx.pods {
            if !has_tracking_finalizer(pod) || ctx.expected_rm_finalizers.contains(uid(pod)) {
                // processed in a previous sync
                continue;
            }
            let considered_failed = is_pod_failed(pod, &ctx.job);
            if !can_remove_finalizer(ctx, pod, considered_failed) {
                continue;
            }
            to_remove.push(pod.clone());
            let pod_uid = uid(pod).to_string();
            let status = ctx.job.status.get_or_insert_with(Default::default);
            let uncounted = status
                .uncounted_terminated_pods
                .get_or_insert_with(Default::default);
            if is_pod_succeeded(pod) && !ctx.uncounted.failed.contains(&pod_uid) {
                if indexed {
                    // the index is enough to never count a pod twice
                    if let Some(ix) = valid_index(pod, completions) {
                        if !ctx.prev_succeeded_indexes.has(ix) {
                            new_succeeded_indexes.push(ix);
                            needs_flush = true;
                        }
                    }
                } else if !ctx.uncounted.succeeded.contains(&pod_uid) {
                    needs_flush = true;
                    uncounted
                        .succeeded
                        .get_or_insert_with(Vec::new)
                        .push(pod_uid);
                }
            } else if considered_failed || failing {
                // a failing Job counts every pod that did not succeed as failed
                let counts_for_job = !indexed || valid_index(pod, completions).is_some();
                if !ctx.uncounted.failed.contains(&pod_uid) && counts_for_job {
                    let count_failed = policy.is_none()
                        || match_pod_failure_policy(policy.as_ref(), pod).count_failed;
                    if count_failed {
                        needs_flush = true;
                        uncounted.failed.get_or_insert_with(Vec::new).push(pod_uid);
                    }
                }
            }
            let pending = new_succeeded_indexes.len()
                + uncounted.succeeded.as_ref().map_or(0, Vec::len)
                + uncounted.failed.as_ref().map_or(0, Vec::len);
            if pending >= MAX_UNCOUNTED_PODS {
                // the status and pod updates bring the Job back for the rest
                reached_max = true;
                break;
            }
        }
        if indexed {
            new_succeeded_indexes.sort_unstable();
            new_succeeded_indexes.dedup();
            ctx.succeeded_indexes = ctx
                .succeeded_indexes
                .with_ordered_indexes(&new_succeeded_indexes);
            let completed = ctx.succeeded_indexes.to_string();
            let status = ctx.job.status.get_or_insert_with(Default::default);
            if completed != status.completed_indexes.as_deref().unwrap_or("") {
                needs_flush = true;
            }
            let total = i32::try_from(ctx.succeeded_indexes.total()).unwrap_or(i32::MAX);
            status.succeeded = (total != 0).then_some(total);
            status.completed_indexes = (!completed.is_empty()).then_some(completed);
            let failed = ctx.failed_indexes.as_ref().map(|f| f.to_string());
            if status.failed_indexes != failed {
                status.failed_indexes = failed;
                needs_flush = true;
            }
        }
        let now = self.cluster.now();
        if let Some(fc) = ctx.finished_condition.take() {
            if fc.type_ == cond::FAILURE_TARGET {
                // recorded before the finalizers go, so the reason survives the pods
                let status = ctx.job.status.get_or_insert_with(Default::default);
                status
                    .conditions
                    .get_or_insert_with(Vec::new)
                    .push(fc.clone());
                needs_flush = true;
                ctx.finished_condition = Some(new_condition(
                    cond::FAILED,
                    "True",
                    cond::reason(&fc),
                    cond::message(&fc),
                    now,
                ));
            } else if cond::is_success_criteria_met(&fc) {
                if cond::success_criteria_met(&ctx.job).is_none() {
                    let status = ctx.job.status.get_or_insert_with(Default::default);
                    status
                        .conditions
                        .get_or_insert_with(Vec::new)
                        .push(fc.clone());
                    needs_flush = true;
                }
                ctx.finished_condition = Some(new_condition(
                    cond::COMPLETE,
                    "True",
                    cond::reason(&fc),
                    cond::message(&fc),
                    now,
                ));
            } else {
                ctx.finished_condition = Some(fc);
            }
        }
        needs_flush = self
            .flush_uncounted_and_remove_finalizers(
                ctx,
                &to_remove,
                &mut with_finalizer,
                needs_flush,
            )
            .await?;
        let finished = !reached_max && self.enact_job_finished(ctx, now);
        if finished {
            needs_flush = true;
        }
        if needs_flush {
            ctx.job = self
                .cluster
                .update_status(&ctx.job)
                .await
                .map_err(|e| format!("removing uncounted pods from status: {e}"))?;
            if finished {
                self.record_job_finished(ctx);
                self.state
                    .finished
                    .insert(ctx.job.metadata.uid.as_deref().unwrap_or(""));
            }
        }
        Ok(())
    }

    /// Write the status if needed (then keep the backoff record), remove the finalizers
    /// of `to_remove`, count the uncounted pods whose finalizer is gone, and write again
    /// when a removal failed (upstream `flushUncountedAndRemoveFinalizers`). Returns
    /// whether the status still has changes to write.
    async fn flush_uncounted_and_remove_finalizers(
        &self,
        ctx: &mut SyncCtx,
        to_remove: &[Arc<Pod>],
        with_finalizer: &mut HashSet<String>,
        mut needs_flush: bool,
    ) -> Result<bool, String> {
        if needs_flush {
            ctx.job = self
                .cluster
                .update_status(&ctx.job)
                .await
                .map_err(|e| format!("adding uncounted pods to status: {e}"))?;
            self.state.backoff.update(ctx.new_backoff_record.clone());
            needs_flush = false;
        }
        let mut rm_err = None;
        if !to_remove.is_empty() {
            let (done, err) = self.remove_tracking_finalizers(&ctx.key, to_remove).await;
            for (pod, ok) in to_remove.iter().zip(done) {
                if ok {
                    with_finalizer.remove(uid(pod));
                }
            }
            rm_err = err;
        }
        if clean_uncounted_pods_without_finalizers(
            ctx.job.status.get_or_insert_with(Default::default),
            with_finalizer,
        ) {
            needs_flush = true;
        }
        if let Some(e) = rm_err {
            if needs_flush {
                // keep the partial progress
                self.cluster
                    .update_status(&ctx.job)
                    .await
                    .map_err(|e| format!("removing uncounted pods from status: {e}"))?;
            }
            return Err(e);
        }
        Ok(needs_flush)
    }

    /// Remove the tracking finalizer of each pod, expecting the removals first: one flag
    /// per pod (a pod that is gone counts as done) and the first error.
    async fn remove_tracking_finalizers(
        &self,
        key: &ObjectKey,
        pods: &[Arc<Pod>],
    ) -> (Vec<bool>, Option<String>) {
        self.state
            .finalizer_expectations
            .expect_finalizers_removed(key, pods.iter().map(|p| uid(p)));
        let results = futures::future::join_all(pods.iter().map(|pod| async move {
            let Some(patch) = spec::remove_tracking_finalizer_patch(pod) else {
                return Ok(());
            };
            match self.cluster.patch_pod(pod, &patch).await {
                Ok(()) => Ok(()),
                Err(e) => {
                    // no update will show this removal
                    self.state
                        .finalizer_expectations
                        .finalizer_removal_observed(key, uid(pod));
                    if api_not_found(&e) {
                        Ok(())
                    } else {
                        Err(format!("removing tracking finalizer: {e}"))
                    }
                }
            }
        }))
        .await;
        let mut first_err = None;
        let done = results
            .into_iter()
            .map(|r| match r {
                Ok(()) => true,
                Err(e) => {
                    first_err.get_or_insert(e);
                    false
                }
            })
            .collect();
        (done, first_err)
    }

    /// Add the final `Complete` or `Failed` condition once every pod is counted and none
    /// is terminating (upstream `enactJobFinished`).
    fn enact_job_finished(&self, ctx: &mut SyncCtx, now: k8s_openapi::jiff::Timestamp) -> bool {
        let Some(fc) = ctx.finished_condition.clone() else {
            return false;
        };
        let status = ctx.job.status.get_or_insert_with(Default::default);
        let uncounted = uncounted_len(status);
        if uncounted > 0 {
            tracing::debug!(key = %ctx.key, condition = %fc.type_, uncounted, "delaying marking the job as finished: uncounted pods remain");
            return false;
        }
        if ctx.terminating > 0 {
            tracing::debug!(key = %ctx.key, condition = %fc.type_, terminating = ctx.terminating, "delaying marking the job as finished: pods are terminating");
            return false;
        }
        let conditions = status.conditions.get_or_insert_with(Vec::new);
        cond::ensure_status(
            conditions,
            &fc.type_,
            &fc.status,
            cond::reason(&fc),
            cond::message(&fc),
            now,
        );
        if fc.type_ == cond::COMPLETE {
            status.completion_time = fc.last_transition_time.clone();
        }
        true
    }

    /// The events of a Job that just finished (upstream `recordJobFinished`).
    fn record_job_finished(&self, ctx: &SyncCtx) {
        let Some(fc) = &ctx.finished_condition else {
            return;
        };
        let job = &ctx.job;
        if fc.type_ == cond::COMPLETE {
            let succeeded = job.status.as_ref().and_then(|s| s.succeeded).unwrap_or(0);
            if spec::completions(job).is_some_and(|c| succeeded > c) {
                self.cluster.event(
                    job,
                    EventType::Warning,
                    "TooManySucceededPods",
                    "Too many succeeded pods running after completion count reached",
                );
            }
            self.cluster
                .event(job, EventType::Normal, "Completed", "Job completed");
        } else {
            self.cluster
                .event(job, EventType::Warning, cond::reason(fc), cond::message(fc));
        }
    }
}

/// Whether the finalizer of `pod` may go now (upstream `canRemoveFinalizer`): the Job is
/// being deleted or finishing, the pod succeeded, or it failed, unless it is the failed
/// pod of an index whose replacement must first inherit its failure count.
fn can_remove_finalizer(ctx: &SyncCtx, pod: &Pod, considered_failed: bool) -> bool {
    if ctx.job.metadata.deletion_timestamp.is_some()
        || ctx.finished_condition.is_some()
        || is_pod_succeeded(pod)
    {
        return true;
    }
    if !considered_failed {
        return false;
    }
    if spec::backoff_limit_per_index(&ctx.job).is_some() {
        if let Some(ix) = super::indexed::completion_index(pod) {
            if ctx
                .delayed_deletion
                .get(&ix)
                .is_some_and(|p| uid(p) == uid(pod))
            {
                tracing::debug!(pod = %crate::controller_utils::pod_key(pod), "delaying pod finalizer removal to await for pod recreation within the index");
                return false;
            }
        }
    }
    true
}
