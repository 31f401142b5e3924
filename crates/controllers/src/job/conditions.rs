//! The Job's conditions, their reasons and messages (upstream's `batch/v1` constants
//! and the condition helpers of `job_controller.go` and `util/utils.go`).
//!
//! A Job that fails first gets `FailureTarget`, then `Failed` once none of its pods is
//! terminating and every finished pod is counted; a Job that succeeds first gets
//! `SuccessCriteriaMet`, then `Complete`. `Suspended` is `True` while the Job is
//! suspended and turns `False` (reason `JobResumed`) when it resumes.

use k8s_openapi::api::batch::v1::{Job, JobCondition};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

/// The Job finished successfully.
pub const COMPLETE: &str = "Complete";
/// The Job failed.
pub const FAILED: &str = "Failed";
/// The Job will fail once its pods are gone.
pub const FAILURE_TARGET: &str = "FailureTarget";
/// The Job will complete once its pods are gone.
pub const SUCCESS_CRITERIA_MET: &str = "SuccessCriteriaMet";
/// The Job is suspended.
pub const SUSPENDED: &str = "Suspended";

/// A pod failure policy rule with action `FailJob` matched.
pub const REASON_POD_FAILURE_POLICY: &str = "PodFailurePolicy";
/// More pods failed than `backoffLimit`.
pub const REASON_BACKOFF_LIMIT_EXCEEDED: &str = "BackoffLimitExceeded";
/// The Job ran longer than `activeDeadlineSeconds`.
pub const REASON_DEADLINE_EXCEEDED: &str = "DeadlineExceeded";
/// More indexes failed than `maxFailedIndexes`.
pub const REASON_MAX_FAILED_INDEXES_EXCEEDED: &str = "MaxFailedIndexesExceeded";
/// Every index finished and some failed.
pub const REASON_FAILED_INDEXES: &str = "FailedIndexes";
/// A success policy rule matched.
pub const REASON_SUCCESS_POLICY: &str = "SuccessPolicy";
/// `completions` pods succeeded.
pub const REASON_COMPLETIONS_REACHED: &str = "CompletionsReached";

/// Message of [`REASON_BACKOFF_LIMIT_EXCEEDED`].
pub const MESSAGE_BACKOFF_LIMIT_EXCEEDED: &str = "Job has reached the specified backoff limit";
/// Message of [`REASON_DEADLINE_EXCEEDED`].
pub const MESSAGE_DEADLINE_EXCEEDED: &str = "Job was active longer than specified deadline";
/// Message of [`REASON_MAX_FAILED_INDEXES_EXCEEDED`].
pub const MESSAGE_MAX_FAILED_INDEXES_EXCEEDED: &str =
    "Job has exceeded the specified maximal number of failed indexes";
/// Message of [`REASON_FAILED_INDEXES`].
pub const MESSAGE_FAILED_INDEXES: &str = "Job has failed indexes";
/// Message of [`REASON_COMPLETIONS_REACHED`].
pub const MESSAGE_COMPLETIONS_REACHED: &str = "Reached expected number of succeeded pods";

/// A condition of `type_` set at `now` (probe and transition time alike).
pub fn new_condition(
    type_: &str,
    status: &str,
    reason: &str,
    message: &str,
    now: Timestamp,
) -> JobCondition {
    JobCondition {
        type_: type_.to_string(),
        status: status.to_string(),
        reason: (!reason.is_empty()).then(|| reason.to_string()),
        message: (!message.is_empty()).then(|| message.to_string()),
        last_probe_time: Some(Time(now)),
        last_transition_time: Some(Time(now)),
    }
}

/// The condition's reason (`""` when unset).
pub fn reason(c: &JobCondition) -> &str {
    c.reason.as_deref().unwrap_or("")
}

/// The condition's message (`""` when unset).
pub fn message(c: &JobCondition) -> &str {
    c.message.as_deref().unwrap_or("")
}

/// The first condition of `type_` in `list`.
pub fn find<'a>(list: &'a [JobCondition], type_: &str) -> Option<&'a JobCondition> {
    list.iter().find(|c| c.type_ == type_)
}

/// The Job's conditions.
pub fn of(job: &Job) -> &[JobCondition] {
    job.status
        .as_ref()
        .and_then(|s| s.conditions.as_deref())
        .unwrap_or(&[])
}

/// Whether the Job has a condition of `type_` with status `True`.
pub fn is_true(job: &Job, type_: &str) -> bool {
    of(job)
        .iter()
        .any(|c| c.type_ == type_ && c.status == "True")
}

pub use crate::controller_utils::job::is_job_finished;

/// The Job's `SuccessCriteriaMet` condition if it is `True`.
pub fn success_criteria_met(job: &Job) -> Option<&JobCondition> {
    of(job).iter().find(|c| is_success_criteria_met(c))
}

/// Whether `c` is `SuccessCriteriaMet=True`.
pub fn is_success_criteria_met(c: &JobCondition) -> bool {
    c.type_ == SUCCESS_CRITERIA_MET && c.status == "True"
}

/// Set the condition of `type_` to `status`, `reason` and `message` (upstream
/// `ensureJobConditionStatus`): a condition that differs in any of them is replaced in
/// place; a missing one is appended unless `status` is `False` (going from nothing to
/// false means nothing). Returns whether the list changed.
pub fn ensure_status(
    list: &mut Vec<JobCondition>,
    type_: &str,
    status: &str,
    reason_: &str,
    message_: &str,
    now: Timestamp,
) -> bool {
    if let Some(c) = list.iter_mut().find(|c| c.type_ == type_) {
        if c.status != status || reason(c) != reason_ || message(c) != message_ {
            *c = new_condition(type_, status, reason_, message_, now);
            return true;
        }
        return false;
    }
    if status != "False" {
        list.push(new_condition(type_, status, reason_, message_, now));
        return true;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cond(type_: &str, status: &str, reason_: &str, message_: &str) -> JobCondition {
        new_condition(type_, status, reason_, message_, Timestamp::UNIX_EPOCH)
    }

    // Upstream TestEnsureJobConditions (job_controller_test.go).
    #[test]
    fn ensure_job_conditions() {
        let now = Timestamp::from_second(100).unwrap_or(Timestamp::UNIX_EPOCH);
        // (name, list, type, status, reason, message, want list, want updated)
        type Case = (
            &'static str,
            Vec<JobCondition>,
            (&'static str, &'static str, &'static str, &'static str),
            Vec<JobCondition>,
            bool,
        );
        let cases: Vec<Case> = vec![
            (
                "append true condition",
                vec![],
                (SUSPENDED, "True", "foo", "bar"),
                vec![cond(SUSPENDED, "True", "foo", "bar")],
                true,
            ),
            (
                "append false condition",
                vec![],
                (SUSPENDED, "False", "foo", "bar"),
                vec![],
                false,
            ),
            (
                "update true condition reason",
                vec![cond(SUSPENDED, "True", "foo", "bar")],
                (SUSPENDED, "True", "bar", "bar"),
                vec![cond(SUSPENDED, "True", "bar", "bar")],
                true,
            ),
            (
                "update true condition status",
                vec![cond(SUSPENDED, "True", "foo", "bar")],
                (SUSPENDED, "False", "foo", "bar"),
                vec![cond(SUSPENDED, "False", "foo", "bar")],
                true,
            ),
            (
                "update false condition status",
                vec![cond(SUSPENDED, "False", "foo", "bar")],
                (SUSPENDED, "True", "foo", "bar"),
                vec![cond(SUSPENDED, "True", "foo", "bar")],
                true,
            ),
            (
                "condition already exists",
                vec![cond(SUSPENDED, "True", "foo", "bar")],
                (SUSPENDED, "True", "foo", "bar"),
                vec![cond(SUSPENDED, "True", "foo", "bar")],
                false,
            ),
        ];
        for (name, mut list, (t, s, r, m), want, want_updated) in cases {
            let updated = ensure_status(&mut list, t, s, r, m, now);
            assert_eq!(updated, want_updated, "{name}");
            let strip = |l: &[JobCondition]| {
                l.iter()
                    .map(|c| {
                        (
                            c.type_.clone(),
                            c.status.clone(),
                            c.reason.clone(),
                            c.message.clone(),
                        )
                    })
                    .collect::<Vec<_>>()
            };
            assert_eq!(strip(&list), strip(&want), "{name}");
            if updated {
                let changed = find(&list, t).and_then(|c| c.last_transition_time.clone());
                assert_eq!(
                    changed,
                    Some(Time(now)),
                    "{name}: the replaced condition is new"
                );
            }
        }
    }

    #[test]
    fn finished_only_on_true_terminal_conditions() {
        let mut job = Job::default();
        assert!(!is_job_finished(&job));
        job.status = Some(Default::default());
        let conds = &mut job.status.get_or_insert_with(Default::default).conditions;
        *conds = Some(vec![
            cond(FAILED, "False", REASON_DEADLINE_EXCEEDED, ""),
            cond(FAILURE_TARGET, "True", REASON_DEADLINE_EXCEEDED, ""),
        ]);
        assert!(!is_job_finished(&job));
        assert!(success_criteria_met(&job).is_none());
        job.status.get_or_insert_with(Default::default).conditions = Some(vec![
            cond(SUCCESS_CRITERIA_MET, "True", "", ""),
            cond(COMPLETE, "True", "", ""),
        ]);
        assert!(is_job_finished(&job));
        assert!(success_criteria_met(&job).is_some());
    }
}
