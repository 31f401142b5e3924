//! Whether a Job has finished, and how (upstream `pkg/controller/job/util`:
//! `FinishedCondition`, `IsJobFinished`, `IsJobSucceeded`), as the CronJob and
//! TTL-after-finished controllers read it.

use k8s_openapi::api::batch::v1::{Job, JobCondition};

/// The first `Complete` or `Failed` condition with status `True`, in list order.
pub fn finished_condition(job: &Job) -> Option<&JobCondition> {
    job.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| (c.type_ == "Complete" || c.type_ == "Failed") && c.status == "True")
}

/// Whether the Job has a `Complete=True` or `Failed=True` condition.
pub fn is_job_finished(job: &Job) -> bool {
    finished_condition(job).is_some()
}

/// Whether the Job has a `Complete=True` condition.
pub fn is_job_succeeded(job: &Job) -> bool {
    job.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| c.type_ == "Complete" && c.status == "True")
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::batch::v1::JobStatus;

    fn job(conditions: &[(&str, &str)]) -> Job {
        Job {
            status: Some(JobStatus {
                conditions: Some(
                    conditions
                        .iter()
                        .map(|(t, s)| JobCondition {
                            type_: t.to_string(),
                            status: s.to_string(),
                            ..Default::default()
                        })
                        .collect(),
                ),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn finished_and_succeeded() {
        assert!(!is_job_finished(&Job::default()));
        assert!(!is_job_finished(&job(&[("Complete", "False")])));
        assert!(!is_job_finished(&job(&[("Suspended", "True")])));
        let failed = job(&[("FailureTarget", "True"), ("Failed", "True")]);
        assert!(is_job_finished(&failed) && !is_job_succeeded(&failed));
        assert_eq!(
            finished_condition(&failed).map(|c| c.type_.as_str()),
            Some("Failed")
        );
        let done = job(&[("SuccessCriteriaMet", "True"), ("Complete", "True")]);
        assert!(is_job_finished(&done) && is_job_succeeded(&done));
    }
}
