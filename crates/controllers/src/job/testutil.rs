//! Builders of Jobs and pods for the Job controller's unit tests (upstream's
//! `newJob`, `buildPod()` and the pod helpers of `job_controller_test.go`).

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::batch::v1::{
    Job, JobSpec, JobStatus, PodFailurePolicy, PodFailurePolicyOnExitCodesRequirement,
    PodFailurePolicyOnPodConditionsPattern, PodFailurePolicyRule, SuccessPolicy, SuccessPolicyRule,
    UncountedTerminatedPods,
};
use k8s_openapi::api::core::v1::{
    Container, ContainerState, ContainerStateRunning, ContainerStateTerminated, ContainerStatus,
    Pod, PodCondition, PodSpec, PodStatus, PodTemplateSpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, Time};
use k8s_openapi::jiff::{SignedDuration, Timestamp};

use super::spec::{
    JOB_COMPLETION_INDEX_ANNOTATION, JOB_INDEX_FAILURE_COUNT_ANNOTATION,
    JOB_INDEX_IGNORED_FAILURE_COUNT_ANNOTATION, JOB_TRACKING_FINALIZER,
};

/// A fixed "now" for tests: 2009-11-10 23:00:00 UTC.
pub(crate) fn t0() -> Timestamp {
    Timestamp::from_second(1_257_894_000).unwrap_or(Timestamp::UNIX_EPOCH)
}

/// `t0()` moved by `secs` seconds.
pub(crate) fn at(secs: i64) -> Timestamp {
    t0().checked_add(SignedDuration::from_secs(secs))
        .unwrap_or(t0())
}

/// A pod under construction.
#[derive(Clone, Debug)]
pub(crate) struct P(pub Pod);

impl P {
    /// Pod `name` in `default`, uid = name, labels `foo: bar`.
    pub(crate) fn new(name: &str) -> P {
        let mut p = Pod::default();
        p.metadata.name = Some(name.into());
        p.metadata.namespace = Some("default".into());
        p.metadata.uid = Some(name.into());
        p.metadata.labels = Some(BTreeMap::from([("foo".to_string(), "bar".to_string())]));
        p.spec = Some(PodSpec {
            containers: vec![Container {
                name: "main-container".into(),
                ..Default::default()
            }],
            ..Default::default()
        });
        p.status = Some(PodStatus::default());
        P(p)
    }

    fn status(&mut self) -> &mut PodStatus {
        self.0.status.get_or_insert_with(Default::default)
    }

    fn annotate(mut self, k: &str, v: &str) -> P {
        self.0
            .metadata
            .annotations
            .get_or_insert_with(Default::default)
            .insert(k.into(), v.into());
        self
    }

    pub(crate) fn phase(mut self, phase: &str) -> P {
        self.status().phase = Some(phase.into());
        self
    }
    pub(crate) fn index(self, ix: &str) -> P {
        self.annotate(JOB_COMPLETION_INDEX_ANNOTATION, ix)
    }
    pub(crate) fn failure_count(self, n: &str) -> P {
        self.annotate(JOB_INDEX_FAILURE_COUNT_ANNOTATION, n)
    }
    pub(crate) fn ignored_count(self, n: &str) -> P {
        self.annotate(JOB_INDEX_IGNORED_FAILURE_COUNT_ANNOTATION, n)
    }
    pub(crate) fn finalizer(mut self) -> P {
        self.0
            .metadata
            .finalizers
            .get_or_insert_with(Vec::new)
            .push(JOB_TRACKING_FINALIZER.into());
        self
    }
    pub(crate) fn deleting(mut self, when: Timestamp) -> P {
        self.0.metadata.deletion_timestamp = Some(Time(when));
        self
    }
    /// A terminated container `name` that exited with `code` (finished at `finished`).
    pub(crate) fn exit(mut self, name: &str, code: i32, finished: Option<Timestamp>) -> P {
        self.status()
            .container_statuses
            .get_or_insert_with(Vec::new)
            .push(terminated(name, code, finished));
        self
    }
    pub(crate) fn running_container(mut self, name: &str, restarts: i32) -> P {
        self.status()
            .container_statuses
            .get_or_insert_with(Vec::new)
            .push(ContainerStatus {
                name: name.into(),
                restart_count: restarts,
                state: Some(ContainerState {
                    running: Some(ContainerStateRunning::default()),
                    ..Default::default()
                }),
                ..Default::default()
            });
        self
    }
    pub(crate) fn condition(mut self, type_: &str, status: &str) -> P {
        self.status()
            .conditions
            .get_or_insert_with(Vec::new)
            .push(PodCondition {
                type_: type_.into(),
                status: status.into(),
                ..Default::default()
            });
        self
    }
    pub(crate) fn ready(self) -> P {
        self.condition("Ready", "True")
    }
    /// An owner reference to `job` as its controller.
    pub(crate) fn owned_by(mut self, job: &Job) -> P {
        self.0.metadata.owner_references =
            Some(vec![coxswain_runtime::controllerutil::new_controller_ref(
                job,
            )]);
        self
    }
    pub(crate) fn arc(self) -> Arc<Pod> {
        Arc::new(self.0)
    }
}

fn terminated(name: &str, code: i32, finished: Option<Timestamp>) -> ContainerStatus {
    ContainerStatus {
        name: name.into(),
        state: Some(ContainerState {
            terminated: Some(ContainerStateTerminated {
                exit_code: code,
                finished_at: finished.map(Time),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// A Job under construction.
#[derive(Clone, Debug)]
pub(crate) struct J(pub Job);

impl J {
    /// Job `name` in `default` (uid `job-uid`), selector `foo: bar`, restartPolicy
    /// Never, backoffLimit 6, NonIndexed, the given parallelism and completions.
    pub(crate) fn new(name: &str, parallelism: i32, completions: Option<i32>) -> J {
        let mut job = Job::default();
        job.metadata.name = Some(name.into());
        job.metadata.namespace = Some("default".into());
        job.metadata.uid = Some("job-uid".into());
        job.metadata.resource_version = Some("1".into());
        job.spec = Some(JobSpec {
            parallelism: Some(parallelism),
            completions,
            backoff_limit: Some(6),
            completion_mode: Some("NonIndexed".into()),
            selector: Some(LabelSelector {
                match_labels: Some(BTreeMap::from([("foo".to_string(), "bar".to_string())])),
                match_expressions: None,
            }),
            template: PodTemplateSpec {
                metadata: Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                    labels: Some(BTreeMap::from([("foo".to_string(), "bar".to_string())])),
                    ..Default::default()
                }),
                spec: Some(PodSpec {
                    containers: vec![Container {
                        name: "main-container".into(),
                        image: Some("foo/bar".into()),
                        ..Default::default()
                    }],
                    restart_policy: Some("Never".into()),
                    ..Default::default()
                }),
            },
            ..Default::default()
        });
        J(job)
    }

    fn spec(&mut self) -> &mut JobSpec {
        self.0.spec.get_or_insert_with(Default::default)
    }
    pub(crate) fn status(&mut self) -> &mut JobStatus {
        self.0.status.get_or_insert_with(Default::default)
    }
    pub(crate) fn indexed(mut self) -> J {
        self.spec().completion_mode = Some("Indexed".into());
        self
    }
    pub(crate) fn backoff_limit(mut self, n: i32) -> J {
        self.spec().backoff_limit = Some(n);
        self
    }
    pub(crate) fn blpi(mut self, n: i32) -> J {
        self.spec().backoff_limit_per_index = Some(n);
        self
    }
    pub(crate) fn max_failed_indexes(mut self, n: i32) -> J {
        self.spec().max_failed_indexes = Some(n);
        self
    }
    pub(crate) fn replacement(mut self, policy: &str) -> J {
        self.spec().pod_replacement_policy = Some(policy.into());
        self
    }
    pub(crate) fn suspend(mut self, s: bool) -> J {
        self.spec().suspend = Some(s);
        self
    }
    pub(crate) fn deadline(mut self, secs: i64) -> J {
        self.spec().active_deadline_seconds = Some(secs);
        self
    }
    pub(crate) fn restart_policy(mut self, p: &str) -> J {
        if let Some(s) = self.spec().template.spec.as_mut() {
            s.restart_policy = Some(p.into());
        }
        self
    }
    pub(crate) fn managed_by(mut self, m: &str) -> J {
        self.spec().managed_by = Some(m.into());
        self
    }
    pub(crate) fn rules(mut self, rules: Vec<PodFailurePolicyRule>) -> J {
        self.spec().pod_failure_policy = Some(PodFailurePolicy { rules });
        self
    }
    pub(crate) fn success_rules(mut self, rules: Vec<(Option<&str>, Option<i32>)>) -> J {
        self.spec().success_policy = Some(SuccessPolicy {
            rules: rules
                .into_iter()
                .map(|(ix, count)| SuccessPolicyRule {
                    succeeded_indexes: ix.map(str::to_string),
                    succeeded_count: count,
                })
                .collect(),
        });
        self
    }
    pub(crate) fn start_time(mut self, when: Timestamp) -> J {
        self.status().start_time = Some(Time(when));
        self
    }
    pub(crate) fn deleting(mut self, when: Timestamp) -> J {
        self.0.metadata.deletion_timestamp = Some(Time(when));
        self
    }
    pub(crate) fn counts(mut self, succeeded: i32, failed: i32) -> J {
        let s = self.status();
        s.succeeded = (succeeded != 0).then_some(succeeded);
        s.failed = (failed != 0).then_some(failed);
        self
    }
    pub(crate) fn active(mut self, active: i32) -> J {
        self.status().active = (active != 0).then_some(active);
        self
    }
    pub(crate) fn completed_indexes(mut self, s: &str) -> J {
        self.status().completed_indexes = Some(s.into());
        self
    }
    pub(crate) fn failed_indexes(mut self, s: &str) -> J {
        self.status().failed_indexes = Some(s.into());
        self
    }
    pub(crate) fn uncounted(mut self, succeeded: &[&str], failed: &[&str]) -> J {
        let list = |l: &[&str]| (!l.is_empty()).then(|| l.iter().map(|s| s.to_string()).collect());
        self.status().uncounted_terminated_pods = Some(UncountedTerminatedPods {
            succeeded: list(succeeded),
            failed: list(failed),
        });
        self
    }
    pub(crate) fn condition(mut self, type_: &str, status: &str, reason: &str, message: &str) -> J {
        self.status().conditions.get_or_insert_with(Vec::new).push(
            super::conditions::new_condition(type_, status, reason, message, t0()),
        );
        self
    }
    pub(crate) fn build(self) -> Job {
        self.0
    }
}

/// A rule on exit codes.
pub(crate) fn exit_rule(
    action: &str,
    op: &str,
    values: &[i32],
    container: Option<&str>,
) -> PodFailurePolicyRule {
    PodFailurePolicyRule {
        action: action.into(),
        on_exit_codes: Some(PodFailurePolicyOnExitCodesRequirement {
            container_name: container.map(str::to_string),
            operator: op.into(),
            values: values.to_vec(),
        }),
        on_pod_conditions: None,
    }
}

/// A rule on one pod condition.
pub(crate) fn cond_rule(action: &str, type_: &str, status: &str) -> PodFailurePolicyRule {
    PodFailurePolicyRule {
        action: action.into(),
        on_exit_codes: None,
        on_pod_conditions: Some(vec![PodFailurePolicyOnPodConditionsPattern {
            type_: type_.into(),
            status: Some(status.into()),
        }]),
    }
}

/// The names of `pods`.
pub(crate) fn names(pods: &[Arc<Pod>]) -> Vec<String> {
    pods.iter()
        .map(|p| p.metadata.name.clone().unwrap_or_default())
        .collect()
}
