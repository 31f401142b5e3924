//! What the Job controller reads from a Job and its pods: the `batch/v1` constants
//! (annotations, labels, the tracking finalizer) and accessors that apply the API
//! server's defaults (`pkg/apis/batch/v1/defaults.go`), so that a Job read before
//! defaulting still behaves as upstream.
//!
//! Every feature gate the upstream controller checks is on (and locked) in 1.36, so the
//! accessors implement only the "enabled" branch: pod failure policy, backoff limit per
//! index, success policy, pod replacement policy, `managedBy` and the index label.

use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::Pod;

use crate::controller_utils::pod::pod_phase;

/// The finalizer that keeps a finished pod until the controller counted it.
pub const JOB_TRACKING_FINALIZER: &str = "batch.kubernetes.io/job-tracking";
/// The completion index of a pod of an Indexed Job (annotation, and label of the same
/// key).
pub const JOB_COMPLETION_INDEX_ANNOTATION: &str = "batch.kubernetes.io/job-completion-index";
/// Failures of the pod's index before this pod (backoff limit per index).
pub const JOB_INDEX_FAILURE_COUNT_ANNOTATION: &str = "batch.kubernetes.io/job-index-failure-count";
/// Failures of the pod's index that a pod failure policy ignored before this pod.
pub const JOB_INDEX_IGNORED_FAILURE_COUNT_ANNOTATION: &str =
    "batch.kubernetes.io/job-index-ignored-failure-count";
/// The `spec.managedBy` value that names this controller.
pub const JOB_CONTROLLER_NAME: &str = "kubernetes.io/job-controller";
/// The environment variable holding the completion index in every container.
pub const COMPLETION_INDEX_ENV_NAME: &str = "JOB_COMPLETION_INDEX";
/// The `completionMode` of Jobs whose pods have an index.
pub const INDEXED_COMPLETION: &str = "Indexed";
/// The default `completionMode`.
pub const NON_INDEXED_COMPLETION: &str = "NonIndexed";
/// `podReplacementPolicy`: replace a pod only once it is `Failed`.
pub const REPLACE_FAILED: &str = "Failed";

static EMPTY_SPEC: std::sync::LazyLock<JobSpec> = std::sync::LazyLock::new(JobSpec::default);

/// The Job's spec (an empty one when missing).
pub fn spec(job: &Job) -> &JobSpec {
    job.spec.as_ref().unwrap_or(&EMPTY_SPEC)
}

/// Whether the Job's pods carry completion indexes.
pub fn is_indexed(job: &Job) -> bool {
    spec(job).completion_mode.as_deref() == Some(INDEXED_COMPLETION)
}

/// Whether the completion mode is one the controller knows (unset counts as known).
pub fn known_completion_mode(job: &Job) -> bool {
    matches!(
        spec(job).completion_mode.as_deref(),
        None | Some(INDEXED_COMPLETION) | Some(NON_INDEXED_COMPLETION)
    )
}

/// `spec.completions`; `None` for a work-queue Job.
pub fn completions(job: &Job) -> Option<i32> {
    let s = spec(job);
    match (s.completions, s.parallelism) {
        (None, None) => Some(1),
        (c, _) => c,
    }
}

/// `spec.completions` of an Indexed Job as a count of indexes (0 when unset, which
/// validation refuses).
pub fn index_count(job: &Job) -> usize {
    usize::try_from(completions(job).unwrap_or(0)).unwrap_or(0)
}

/// `spec.parallelism` (default 1).
pub fn parallelism(job: &Job) -> i32 {
    spec(job).parallelism.unwrap_or(1).max(0)
}

/// `spec.backoffLimitPerIndex`.
pub fn backoff_limit_per_index(job: &Job) -> Option<i32> {
    spec(job).backoff_limit_per_index
}

/// `spec.backoffLimit` (default 6, or MaxInt32 with a backoff limit per index).
pub fn backoff_limit(job: &Job) -> i32 {
    let s = spec(job);
    s.backoff_limit
        .unwrap_or(if s.backoff_limit_per_index.is_some() {
            i32::MAX
        } else {
            6
        })
}

/// Whether `spec.suspend` is true.
pub fn is_suspended(job: &Job) -> bool {
    spec(job).suspend == Some(true)
}

/// Whether terminating pods are replaced only once they are `Failed`
/// (`podReplacementPolicy: Failed`, the default and only choice with a pod failure
/// policy).
pub fn only_replace_failed_pods(job: &Job) -> bool {
    let s = spec(job);
    s.pod_replacement_policy.as_deref() == Some(REPLACE_FAILED) || s.pod_failure_policy.is_some()
}

/// The controller named by `spec.managedBy` when it is not this one.
pub fn managed_by_external_controller(job: &Job) -> Option<&str> {
    spec(job)
        .managed_by
        .as_deref()
        .filter(|m| *m != JOB_CONTROLLER_NAME)
}

/// The pod template's `restartPolicy` (empty when unset).
pub fn restart_policy(job: &Job) -> &str {
    spec(job)
        .template
        .spec
        .as_ref()
        .and_then(|s| s.restart_policy.as_deref())
        .unwrap_or("")
}

/// Whether the pod still carries the tracking finalizer.
pub fn has_tracking_finalizer(pod: &Pod) -> bool {
    pod.metadata
        .finalizers
        .iter()
        .flatten()
        .any(|f| f == JOB_TRACKING_FINALIZER)
}

/// The pod's UID (empty when unknown).
pub fn uid(pod: &Pod) -> &str {
    pod.metadata.uid.as_deref().unwrap_or("")
}

/// Whether the pod counts as failed for the Job (upstream `isPodFailed`): phase
/// `Failed`, or, unless only failed pods are replaced, being deleted without having
/// succeeded (orphans that never reach a terminal phase).
pub fn is_pod_failed(pod: &Pod, job: &Job) -> bool {
    let phase = pod_phase(pod);
    if phase == "Failed" {
        return true;
    }
    if only_replace_failed_pods(job) {
        return false;
    }
    pod.metadata.deletion_timestamp.is_some() && phase != "Succeeded"
}

/// Whether the pod's phase is `Succeeded`.
pub fn is_pod_succeeded(pod: &Pod) -> bool {
    pod_phase(pod) == "Succeeded"
}

/// The strategic merge patch that removes the tracking finalizer, if the pod has it.
pub fn remove_tracking_finalizer_patch(pod: &Pod) -> Option<serde_json::Value> {
    has_tracking_finalizer(pod).then(|| {
        serde_json::json!({"metadata": {"$deleteFromPrimitiveList/finalizers": [JOB_TRACKING_FINALIZER]}})
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_follow_set_defaults_job() {
        let mut job = Job::default();
        assert_eq!(completions(&job), Some(1));
        assert_eq!(parallelism(&job), 1);
        assert_eq!(backoff_limit(&job), 6);
        let s = job.spec.get_or_insert_with(Default::default);
        s.parallelism = Some(3);
        s.backoff_limit_per_index = Some(1);
        // parallelism set: completions stay nil (a work queue)
        assert_eq!(completions(&job), None);
        assert_eq!(backoff_limit(&job), i32::MAX);
        assert!(known_completion_mode(&job));
        job.spec
            .get_or_insert_with(Default::default)
            .completion_mode = Some("Bogus".into());
        assert!(!known_completion_mode(&job));
    }

    #[test]
    fn replacement_policy_and_managed_by() {
        let mut job = Job::default();
        assert!(!only_replace_failed_pods(&job));
        let s = job.spec.get_or_insert_with(Default::default);
        s.pod_failure_policy = Some(Default::default());
        assert!(only_replace_failed_pods(&job));
        let s = job.spec.get_or_insert_with(Default::default);
        s.pod_failure_policy = None;
        s.pod_replacement_policy = Some("Failed".into());
        assert!(only_replace_failed_pods(&job));
        let s = job.spec.get_or_insert_with(Default::default);
        s.managed_by = Some(JOB_CONTROLLER_NAME.into());
        assert_eq!(managed_by_external_controller(&job), None);
        job.spec.get_or_insert_with(Default::default).managed_by = Some("example.com/mine".into());
        assert_eq!(
            managed_by_external_controller(&job),
            Some("example.com/mine")
        );
    }
}
