//! Upstream's `syncJob` scenario tables (`TestControllerSyncJob`,
//! `TestSyncJobPastDeadline`, `TestSyncJobWithJobPodFailurePolicy`,
//! `TestSyncJobWithJobSuccessPolicy`, `TestSyncJobWithJobBackoffLimitPerIndex`,
//! `TestJobBackoffForOnFailure`, `TestJobBackoffOnRestartPolicyNever`,
//! `TestSyncJobWhenManagedBy`, `TestGetNewFinshedPods`), restated for 1.36 where every
//! feature gate is on, over a recording fake of the cluster (upstream's fake pod control
//! and status updater).

#![allow(clippy::type_complexity)]

use super::*;
use crate::job::cluster::Cluster;
use crate::job::testutil::{cond_rule, exit_rule, t0, J, P};
use coxswain_runtime::events::EventType;
use k8s_openapi::api::batch::v1::JobStatus;
use k8s_openapi::api::core::v1::PodTemplateSpec;

use crate::controller_utils::pod_control::PodControlError;

/// What the fake saw.
#[derive(Default)]
struct Calls {
    /// (generateName, template) per successful create.
    created: Vec<(String, PodTemplateSpec)>,
    create_attempts: usize,
    deleted: Vec<String>,
    patched: Vec<String>,
    patch_bodies: Vec<serde_json::Value>,
    statuses: Vec<JobStatus>,
    events: Vec<(String, String)>,
}

#[derive(Default)]
struct Fake {
    calls: Mutex<Calls>,
    job: Option<Arc<Job>>,
    pods: Vec<Arc<Pod>>,
    /// Pod creates, deletes and patches fail.
    pod_errors: bool,
    /// Creates fail once this many succeeded.
    create_limit: Option<usize>,
    status_error: bool,
    now: Option<Timestamp>,
}

fn server_error() -> kube::Error {
    kube::Error::Api(Box::new(
        kube::core::Status::failure("fake error", "InternalError").with_code(500),
    ))
}

impl Fake {
    fn calls(&self) -> std::sync::MutexGuard<'_, Calls> {
        self.calls.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Cluster for Fake {
    fn now(&self) -> Timestamp {
        self.now.unwrap_or_else(t0)
    }
    async fn job(&self, _key: &ObjectKey) -> Option<Arc<Job>> {
        self.job.clone()
    }
    async fn fresh_job(&self, _key: &ObjectKey) -> Result<Option<Arc<Job>>, kube::Error> {
        Ok(self.job.clone())
    }
    async fn pods_of(&self, _job: &Job) -> Vec<Arc<Pod>> {
        self.pods.clone()
    }
    async fn create_pod(
        &self,
        _job: &Job,
        template: &PodTemplateSpec,
        generate_name: &str,
    ) -> Result<(), PodControlError> {
        let mut calls = self.calls();
        calls.create_attempts += 1;
        if self.pod_errors || self.create_limit.is_some_and(|n| calls.created.len() >= n) {
            return Err(PodControlError::Api(server_error()));
        }
        calls
            .created
            .push((generate_name.to_string(), template.clone()));
        Ok(())
    }
    async fn delete_pod(&self, _job: &Job, pod: &Pod) -> Result<bool, PodControlError> {
        if self.pod_errors {
            return Err(PodControlError::Api(server_error()));
        }
        self.calls()
            .deleted
            .push(pod.metadata.name.clone().unwrap_or_default());
        Ok(true)
    }
    async fn patch_pod(&self, pod: &Pod, patch: &serde_json::Value) -> Result<(), kube::Error> {
        let mut calls = self.calls();
        calls
            .patched
            .push(pod.metadata.name.clone().unwrap_or_default());
        calls.patch_bodies.push(patch.clone());
        drop(calls);
        if self.pod_errors {
            return Err(server_error());
        }
        Ok(())
    }
    async fn update_status(&self, job: &Job) -> Result<Job, kube::Error> {
        if self.status_error {
            return Err(server_error());
        }
        self.calls()
            .statuses
            .push(job.status.clone().unwrap_or_default());
        Ok(job.clone())
    }
    fn event(&self, _job: &Job, _type: EventType, reason: &str, message: &str) {
        self.calls()
            .events
            .push((reason.to_string(), message.to_string()));
    }
}

/// One sync of `job` over `pods` (already claimed).
struct Run {
    job: Job,
    pods: Vec<Arc<Pod>>,
    satisfied: bool,
    fake: Fake,
    state: JobState,
}

struct Got {
    calls: Calls,
    out: SyncOutcome,
    err: Option<String>,
    state: JobState,
}

impl Got {
    fn status(&self) -> JobStatus {
        self.calls.statuses.last().cloned().unwrap_or_default()
    }
    fn creates(&self) -> usize {
        self.calls.created.len()
    }
    fn deletes(&self) -> usize {
        self.calls.deleted.len()
    }
    fn patches(&self) -> usize {
        self.calls.patched.len()
    }
    /// (active, ready, terminating, succeeded, failed) of the last status written.
    fn counts(&self) -> (i32, i32, i32, i32, i32) {
        let s = self.status();
        (
            s.active.unwrap_or(0),
            s.ready.unwrap_or(0),
            s.terminating.unwrap_or(0),
            s.succeeded.unwrap_or(0),
            s.failed.unwrap_or(0),
        )
    }
    /// (type, status, reason) of the conditions of the last status written.
    fn conditions(&self) -> Vec<(String, String, String)> {
        self.status()
            .conditions
            .unwrap_or_default()
            .into_iter()
            .map(|c| (c.type_, c.status, c.reason.unwrap_or_default()))
            .collect()
    }
    fn messages(&self) -> Vec<String> {
        self.status()
            .conditions
            .unwrap_or_default()
            .into_iter()
            .map(|c| c.message.unwrap_or_default())
            .collect()
    }
    fn completed_indexes(&self) -> String {
        self.status().completed_indexes.unwrap_or_default()
    }
    fn failed_indexes(&self) -> Option<String> {
        self.status().failed_indexes
    }
    fn created_indexes(&self) -> Vec<String> {
        self.calls
            .created
            .iter()
            .map(|(_, t)| {
                t.metadata
                    .as_ref()
                    .and_then(|m| m.annotations.as_ref())
                    .and_then(|a| a.get(spec::JOB_COMPLETION_INDEX_ANNOTATION))
                    .cloned()
                    .unwrap_or_default()
            })
            .collect()
    }
}

fn c(t: &str, s: &str, r: &str) -> (String, String, String) {
    (t.to_string(), s.to_string(), r.to_string())
}

impl Run {
    fn new(job: Job, pods: Vec<Arc<Pod>>) -> Run {
        Run {
            job,
            pods,
            satisfied: true,
            fake: Fake::default(),
            state: JobState::default(),
        }
    }
    fn unsatisfied(mut self) -> Run {
        self.satisfied = false;
        self
    }
    fn pod_errors(mut self) -> Run {
        self.fake.pod_errors = true;
        self
    }
    async fn go(self) -> Got {
        let key = ObjectKey::of(&self.job);
        let mut job = self.job;
        job.status
            .get_or_insert_with(Default::default)
            .uncounted_terminated_pods
            .get_or_insert_with(Default::default);
        let sync = JobSync::new(self.fake, self.state.clone());
        let mut out = SyncOutcome::default();
        let err = sync
            .sync_with_pods(&key, job, self.pods, self.satisfied, &mut out)
            .await
            .err();
        let calls = std::mem::take(&mut *sync.cluster.calls());
        Got {
            calls,
            out,
            err,
            state: self.state,
        }
    }
}

/// `n` pods named `<prefix>-<i>` in `phase`, with the tracking finalizer.
fn pods(prefix: &str, n: usize, phase: &str) -> Vec<Arc<Pod>> {
    (0..n)
        .map(|i| {
            P::new(&format!("{prefix}-{i}"))
                .phase(phase)
                .finalizer()
                .arc()
        })
        .collect()
}

fn ready_pods(prefix: &str, n: usize) -> Vec<Arc<Pod>> {
    (0..n)
        .map(|i| {
            P::new(&format!("{prefix}-{i}"))
                .phase("Running")
                .ready()
                .finalizer()
                .arc()
        })
        .collect()
}

/// Running pods with a deletion timestamp.
fn terminating(prefix: &str, n: usize) -> Vec<Arc<Pod>> {
    (0..n)
        .map(|i| {
            P::new(&format!("{prefix}-{i}"))
                .phase("Running")
                .deleting(t0())
                .finalizer()
                .arc()
        })
        .collect()
}

/// A pod of index `ix` in `phase` with the finalizer.
fn ix(name: &str, ix: &str, phase: &str) -> Arc<Pod> {
    P::new(name).phase(phase).index(ix).finalizer().arc()
}

fn cat(parts: Vec<Vec<Arc<Pod>>>) -> Vec<Arc<Pod>> {
    parts.into_iter().flatten().collect()
}

// TestControllerSyncJob, in the order of the spec's table.

#[tokio::test]
async fn job_start_creates_parallelism_pods() {
    let got = Run::new(J::new("foobar", 2, Some(5)).build(), vec![])
        .go()
        .await;
    assert_eq!(got.creates(), 2);
    assert_eq!(got.counts(), (2, 0, 0, 0, 0));
    assert_eq!(got.status().start_time.map(|t| t.0), Some(t0()));
    // every pod carries the tracking finalizer
    for (name, t) in &got.calls.created {
        assert_eq!(name, "");
        let fins = t.metadata.as_ref().and_then(|m| m.finalizers.clone());
        assert_eq!(fins, Some(vec![spec::JOB_TRACKING_FINALIZER.to_string()]));
    }
    let got = Run::new(J::new("foobar", 2, None).build(), vec![])
        .go()
        .await;
    assert_eq!((got.creates(), got.counts().0), (2, 2), "work queue start");
}

#[tokio::test]
async fn steady_states_create_nothing() {
    let got = Run::new(
        J::new("foobar", 2, Some(5)).build(),
        pods("p", 2, "Pending"),
    )
    .go()
    .await;
    assert_eq!((got.creates(), got.deletes()), (0, 0));
    assert_eq!(got.counts().0, 2);
    let got = Run::new(
        J::new("foobar", 3, Some(5)).build(),
        cat(vec![ready_pods("r", 2), pods("p", 1, "Running")]),
    )
    .go()
    .await;
    assert_eq!((got.creates(), got.deletes()), (0, 0));
    assert_eq!(got.counts(), (3, 2, 0, 0, 0));
}

#[tokio::test]
async fn too_few_active_pods() {
    let got = Run::new(
        J::new("foobar", 2, Some(5)).build(),
        cat(vec![pods("r", 1, "Running"), pods("s", 1, "Succeeded")]),
    )
    .go()
    .await;
    assert_eq!((got.creates(), got.patches()), (1, 1));
    assert_eq!(got.counts(), (2, 0, 0, 1, 0));
    // two writes: the uid in uncounted, then the counter
    assert_eq!(got.calls.statuses.len(), 2);
    let first = got.calls.statuses[0].uncounted_terminated_pods.clone();
    assert_eq!(
        first.and_then(|u| u.succeeded),
        Some(vec!["s-0".to_string()])
    );
}

#[tokio::test]
async fn work_queue_replacement_policies() {
    let pods = || {
        cat(vec![
            pods("r", 1, "Running"),
            pods("f", 1, "Failed"),
            terminating("t", 1),
        ])
    };
    let got = Run::new(
        J::new("foobar", 1, None).replacement("Failed").build(),
        pods(),
    )
    .go()
    .await;
    assert_eq!((got.creates(), got.patches()), (0, 1));
    assert_eq!(got.counts(), (1, 0, 1, 0, 1));
    // TerminatingOrFailed (and no policy): the terminating pod counts as failed
    for job in [
        J::new("foobar", 1, None)
            .replacement("TerminatingOrFailed")
            .build(),
        J::new("foobar", 1, None).build(),
    ] {
        let got = Run::new(job, pods()).go().await;
        assert_eq!((got.creates(), got.patches()), (0, 2));
        assert_eq!(got.counts(), (1, 0, 1, 0, 2));
    }
}

#[tokio::test]
async fn more_terminating_than_parallelism() {
    for job in [
        J::new("foobar", 1, Some(1)).replacement("Failed").build(),
        J::new("foobar", 1, Some(1)).rules(vec![]).build(),
    ] {
        let got = Run::new(job, cat(vec![pods("r", 2, "Running"), terminating("t", 4)]))
            .go()
            .await;
        assert_eq!((got.deletes(), got.patches()), (1, 1));
        assert_eq!(got.counts(), (1, 0, 5, 0, 0));
    }
}

#[tokio::test]
async fn pod_failure_backoff_delays_recreation() {
    let key = ObjectKey::namespaced("default", "foobar");
    let run = Run::new(
        J::new("foobar", 1, Some(1)).start_time(t0()).build(),
        vec![],
    );
    run.state
        .backoff
        .update(super::super::backoff::BackoffRecord {
            key: Some(key.clone()),
            failures_after_last_success: 1,
            last_failure_time: Some(t0()),
        });
    let got = run.go().await;
    assert_eq!(got.creates(), 0);
    assert_eq!(got.counts().0, 0);
    assert_eq!(got.out.requeue_after, Some(Duration::from_secs(10)));
    // no failures: no delay
    let run = Run::new(
        J::new("foobar", 1, Some(1)).start_time(t0()).build(),
        vec![],
    );
    run.state
        .backoff
        .update(super::super::backoff::BackoffRecord {
            key: Some(key),
            failures_after_last_success: 0,
            last_failure_time: None,
        });
    let got = run.go().await;
    assert_eq!((got.creates(), got.counts().0), (1, 1));
}

#[tokio::test]
async fn too_few_active_pods_with_controller_error() {
    let got = Run::new(
        J::new("foobar", 2, Some(5)).build(),
        cat(vec![pods("r", 1, "Running"), pods("s", 1, "Succeeded")]),
    )
    .pod_errors()
    .go()
    .await;
    assert!(got.err.is_some());
    assert_eq!(
        (got.calls.create_attempts, got.creates(), got.patches()),
        (1, 0, 1)
    );
    // the finalizer patch failed: the pod stays uncounted, nothing was created
    let s = got.status();
    assert_eq!(s.succeeded.unwrap_or(0), 0);
    assert_eq!(
        s.uncounted_terminated_pods.and_then(|u| u.succeeded),
        Some(vec!["s-0".to_string()])
    );
}

#[tokio::test]
async fn too_many_active_pods() {
    let got = Run::new(
        J::new("foobar", 2, Some(5)).build(),
        pods("r", 3, "Running"),
    )
    .go()
    .await;
    assert_eq!((got.deletes(), got.patches()), (1, 1));
    assert_eq!(got.counts(), (2, 0, 1, 0, 0));
    let got = Run::new(
        J::new("foobar", 2, Some(5)).build(),
        pods("r", 3, "Running"),
    )
    .pod_errors()
    .go()
    .await;
    assert!(got.err.is_some());
    assert_eq!((got.deletes(), got.patches()), (0, 1));
    assert_eq!(got.counts().0, 3);
    let got = Run::new(J::new("foobar", 2, Some(5)).build(), ready_pods("r", 3))
        .go()
        .await;
    assert_eq!(got.deletes(), 1);
    assert_eq!((got.counts().0, got.counts().1), (2, 2));
    let got = Run::new(
        J::new("foobar", 2, Some(5)).build(),
        pods("r", 10, "Running"),
    )
    .go()
    .await;
    assert_eq!((got.deletes(), got.patches()), (8, 8));
    assert_eq!(got.counts(), (2, 0, 8, 0, 0));
    let got = Run::new(
        J::new("foobar", 3, Some(4)).build(),
        cat(vec![pods("r", 3, "Running"), pods("s", 2, "Succeeded")]),
    )
    .go()
    .await;
    assert_eq!((got.deletes(), got.patches()), (1, 3));
    assert_eq!(got.counts(), (2, 0, 1, 2, 0));
}

#[tokio::test]
async fn failed_pods_are_counted_and_replaced() {
    let got = Run::new(
        J::new("foobar", 2, Some(5)).build(),
        cat(vec![
            pods("r", 1, "Running"),
            pods("s", 1, "Succeeded"),
            pods("f", 1, "Failed"),
        ]),
    )
    .go()
    .await;
    assert_eq!((got.creates(), got.patches()), (1, 2));
    assert_eq!(got.counts(), (2, 0, 0, 1, 1));
    let got = Run::new(
        J::new("foobar", 2, Some(5)).build(),
        cat(vec![pods("r", 1, "Running"), pods("f", 1, "Failed")]),
    )
    .go()
    .await;
    assert_eq!((got.creates(), got.patches()), (1, 1));
    assert_eq!(got.counts(), (2, 0, 0, 0, 1));
    // a failed pod whose finalizer is already gone was counted before
    let job = J::new("foobar", 1, Some(1)).active(1).counts(0, 1).build();
    let got = Run::new(job, pods("r", 1, "Running")).go().await;
    assert_eq!((got.creates(), got.patches()), (0, 0));
    assert_eq!(got.counts(), (1, 0, 0, 0, 1));
}

#[tokio::test]
async fn job_finish() {
    let got = Run::new(
        J::new("foobar", 2, Some(5)).build(),
        pods("s", 5, "Succeeded"),
    )
    .go()
    .await;
    assert_eq!(got.patches(), 5);
    assert_eq!(got.counts().3, 5);
    assert_eq!(
        got.conditions(),
        vec![
            c("SuccessCriteriaMet", "True", "CompletionsReached"),
            c("Complete", "True", "CompletionsReached")
        ]
    );
    assert_eq!(
        got.messages()[1],
        "Reached expected number of succeeded pods"
    );
    assert_eq!(got.status().completion_time.map(|t| t.0), Some(t0()));
    assert!(got
        .calls
        .events
        .contains(&("Completed".into(), "Job completed".into())));
    assert!(got.state.finished.contains("job-uid"));
}

#[tokio::test]
async fn work_queue_completion() {
    let got = Run::new(
        J::new("foobar", 2, None).build(),
        cat(vec![pods("r", 1, "Running"), pods("s", 1, "Succeeded")]),
    )
    .go()
    .await;
    assert_eq!(got.creates(), 0);
    assert_eq!(got.counts(), (1, 0, 0, 1, 0));
    assert!(got.conditions().is_empty());
    let got = Run::new(
        J::new("foobar", 2, None).build(),
        cat(vec![pods("s", 1, "Succeeded"), pods("f", 1, "Failed")]),
    )
    .go()
    .await;
    assert_eq!(got.patches(), 2);
    assert_eq!(got.counts(), (0, 0, 0, 1, 1));
    assert_eq!(
        got.conditions(),
        vec![
            c("SuccessCriteriaMet", "True", "CompletionsReached"),
            c("Complete", "True", "CompletionsReached")
        ]
    );
}

#[tokio::test]
async fn deleting_job_removes_every_finalizer() {
    let job = J::new("foobar", 2, Some(5)).deleting(t0()).build();
    let got = Run::new(
        job,
        cat(vec![
            pods("p", 1, "Pending"),
            pods("r", 1, "Running"),
            pods("s", 1, "Succeeded"),
        ]),
    )
    .go()
    .await;
    assert_eq!((got.creates(), got.deletes(), got.patches()), (0, 0, 3));
    assert_eq!(got.counts(), (2, 0, 0, 1, 0));
}

#[tokio::test]
async fn slow_start_stops_at_the_first_failing_batch() {
    let mut run = Run::new(J::new("foobar", 100, Some(200)).build(), vec![]);
    run.fake.create_limit = Some(10);
    let key = ObjectKey::of(&run.job);
    let state = run.state.clone();
    let got = run.go().await;
    assert!(got.err.is_some());
    // batches of 1, 2, 4, then 8 of which 3 succeed: 15 attempts, no 16-batch
    assert_eq!((got.calls.create_attempts, got.creates()), (15, 10));
    assert_eq!(got.counts().0, 10);
    // the skipped and failed creations are not expected
    for _ in 0..10 {
        state.expectations.creation_observed(&key);
    }
    assert!(state.expectations.satisfied(&key));
}

#[tokio::test]
async fn backoff_limit_fails_the_job_at_once() {
    let job = J::new("foobar", 2, Some(5))
        .backoff_limit(0)
        .deleting(t0())
        .build();
    let got = Run::new(job.clone(), pods("f", 1, "Failed")).go().await;
    assert_eq!((got.counts().4, got.patches()), (1, 1));
    assert_eq!(
        got.conditions(),
        vec![
            c("FailureTarget", "True", "BackoffLimitExceeded"),
            c("Failed", "True", "BackoffLimitExceeded")
        ]
    );
    assert!(got.calls.events.contains(&(
        "BackoffLimitExceeded".into(),
        "Job has reached the specified backoff limit".into()
    )));
    // with unsatisfied expectations the job cannot be declared finished
    let got = Run::new(job, pods("f", 1, "Failed"))
        .unsatisfied()
        .go()
        .await;
    assert_eq!((got.counts().4, got.patches()), (1, 1));
    assert!(got.conditions().is_empty());
}

#[tokio::test]
async fn indexed_job_start() {
    let got = Run::new(J::new("foobar", 2, Some(5)).indexed().build(), vec![])
        .go()
        .await;
    assert_eq!(got.created_indexes(), vec!["0", "1"]);
    let (name, t) = &got.calls.created[0];
    assert_eq!(name, "foobar-0-");
    let spec = t.spec.clone().unwrap_or_default();
    assert_eq!(spec.hostname.as_deref(), Some("foobar-0"));
    let labels = t
        .metadata
        .as_ref()
        .and_then(|m| m.labels.clone())
        .unwrap_or_default();
    assert_eq!(
        labels
            .get(spec::JOB_COMPLETION_INDEX_ANNOTATION)
            .map(String::as_str),
        Some("0")
    );
    let env = spec.containers[0].env.clone().unwrap_or_default();
    let var = env.iter().find(|e| e.name == "JOB_COMPLETION_INDEX");
    let path = var
        .and_then(|e| e.value_from.as_ref())
        .and_then(|v| v.field_ref.as_ref())
        .map(|f| f.field_path.clone());
    assert_eq!(
        path.as_deref(),
        Some("metadata.labels['batch.kubernetes.io/job-completion-index']")
    );
}

#[tokio::test]
async fn indexed_job_with_terminating_pod_without_index() {
    let job = J::new("foobar", 2, Some(5))
        .indexed()
        .replacement("Failed")
        .build();
    let got = Run::new(job, terminating("t", 1)).go().await;
    assert_eq!(got.created_indexes(), vec!["0"]);
    assert_eq!(got.patches(), 0);
    assert_eq!((got.counts().0, got.counts().2), (1, 1));
    let job = J::new("foobar", 2, Some(5))
        .indexed()
        .replacement("TerminatingOrFailed")
        .build();
    let got = Run::new(job, terminating("t", 1)).go().await;
    assert_eq!(got.created_indexes(), vec!["0", "1"]);
    assert_eq!(got.patches(), 1);
    assert_eq!(got.counts(), (2, 0, 1, 0, 0));
}

#[tokio::test]
async fn indexed_job_completed_and_failed() {
    let got = Run::new(
        J::new("foobar", 2, Some(3)).indexed().build(),
        vec![
            ix("a", "0", "Succeeded"),
            ix("b", "1", "Failed"),
            ix("c", "1", "Succeeded"),
            ix("d", "2", "Succeeded"),
        ],
    )
    .go()
    .await;
    assert_eq!((got.counts().3, got.counts().4, got.patches()), (3, 1, 4));
    assert_eq!(got.completed_indexes(), "0-2");
    assert_eq!(
        got.conditions(),
        vec![
            c("SuccessCriteriaMet", "True", "CompletionsReached"),
            c("Complete", "True", "CompletionsReached")
        ]
    );
    let got = Run::new(
        J::new("foobar", 2, Some(3))
            .indexed()
            .backoff_limit(0)
            .build(),
        vec![
            ix("a", "0", "Succeeded"),
            ix("b", "1", "Failed"),
            ix("c", "2", "Running"),
        ],
    )
    .go()
    .await;
    assert_eq!((got.deletes(), got.patches()), (1, 3));
    assert_eq!(got.counts(), (0, 0, 1, 1, 2));
    assert_eq!(got.completed_indexes(), "0");
    // Failed waits for the terminating pod
    assert_eq!(
        got.conditions(),
        vec![c("FailureTarget", "True", "BackoffLimitExceeded")]
    );
}

#[tokio::test]
async fn ready_pods_are_deleted_when_the_job_fails() {
    let got = Run::new(
        J::new("foobar", 2, Some(3)).backoff_limit(0).build(),
        cat(vec![ready_pods("r", 2), pods("f", 1, "Failed")]),
    )
    .go()
    .await;
    assert_eq!((got.deletes(), got.patches()), (2, 3));
    assert_eq!(got.counts(), (0, 0, 2, 0, 3));
    assert_eq!(
        got.conditions(),
        vec![c("FailureTarget", "True", "BackoffLimitExceeded")]
    );
}

#[tokio::test]
async fn indexed_repeated_and_mixed_indexes() {
    let got = Run::new(
        J::new("foobar", 2, Some(3)).indexed().build(),
        vec![
            ix("a", "0", "Succeeded"),
            ix("b", "1", "Succeeded"),
            ix("c", "1", "Succeeded"),
        ],
    )
    .go()
    .await;
    assert_eq!(got.created_indexes(), vec!["2"]);
    assert_eq!((got.counts().3, got.patches()), (2, 3));
    assert_eq!(got.completed_indexes(), "0,1");
    let got = Run::new(
        J::new("foobar", 8, Some(20)).indexed().build(),
        vec![
            ix("a", "0", "Running"),
            ix("b", "2", "Succeeded"),
            ix("c", "3", "Pending"),
            ix("d", "4", "Succeeded"),
            ix("e", "5", "Succeeded"),
            ix("f", "7", "Succeeded"),
            ix("g", "8", "Succeeded"),
            ix("h", "9", "Succeeded"),
        ],
    )
    .go()
    .await;
    assert_eq!(
        got.created_indexes(),
        vec!["1", "6", "10", "11", "12", "13"]
    );
    assert_eq!((got.counts().0, got.counts().3, got.patches()), (8, 6, 6));
    assert_eq!(got.completed_indexes(), "2,4,5,7-9");
    let got = Run::new(
        J::new("foobar", 3, Some(4)).indexed().build(),
        vec![
            ix("a", "0", "Failed"),
            ix("b", "1", "Pending"),
            ix("c", "2", "Failed"),
        ],
    )
    .go()
    .await;
    assert_eq!(got.created_indexes(), vec!["0", "2"]);
    assert_eq!((got.counts().0, got.counts().4, got.patches()), (3, 2, 2));
}

#[tokio::test]
async fn indexed_pods_without_or_out_of_range_indexes() {
    let got = Run::new(
        J::new("foobar", 2, Some(5)).indexed().build(),
        vec![
            pods("nr", 1, "Running").remove(0),
            pods("ns", 1, "Succeeded").remove(0),
            pods("nf", 1, "Failed").remove(0),
            pods("np", 1, "Pending").remove(0),
            ix("inv", "invalid", "Running"),
            ix("invs", "invalid", "Succeeded"),
            ix("invf", "invalid", "Failed"),
            ix("invp", "invalid", "Pending"),
            ix("a", "0", "Succeeded"),
            ix("b", "1", "Running"),
            ix("c", "2", "Running"),
        ],
    )
    .go()
    .await;
    assert_eq!(got.creates(), 0);
    assert_eq!(got.deletes(), 3 + 1);
    assert_eq!((got.counts().0, got.counts().3, got.counts().4), (2, 1, 0));
    assert_eq!(got.completed_indexes(), "0");
    let got = Run::new(
        J::new("foobar", 2, Some(5)).indexed().build(),
        vec![
            ix("a", "0", "Succeeded"),
            ix("b", "5", "Running"),
            ix("c", "6", "Succeeded"),
            ix("d", "7", "Pending"),
            ix("e", "8", "Failed"),
        ],
    )
    .go()
    .await;
    assert_eq!((got.creates(), got.deletes(), got.patches()), (0, 2, 5));
    assert_eq!((got.counts().0, got.counts().3, got.counts().4), (0, 1, 0));
    assert_eq!(got.completed_indexes(), "0");
}

#[tokio::test]
async fn suspend_and_resume() {
    let job = J::new("foobar", 2, Some(4)).suspend(true).build();
    let got = Run::new(job.clone(), ready_pods("r", 2)).go().await;
    assert_eq!((got.deletes(), got.patches()), (2, 2));
    assert_eq!(got.counts(), (0, 0, 2, 0, 0));
    assert_eq!(
        got.conditions(),
        vec![c("Suspended", "True", "JobSuspended")]
    );
    assert_eq!(got.messages(), vec!["Job suspended"]);
    assert!(got.status().start_time.is_none());
    assert!(got
        .calls
        .events
        .contains(&("Suspended".into(), "Job suspended".into())));
    // deleted suspended pods are not failures
    assert_eq!(got.counts().4, 0);
    // unsatisfied expectations: nothing happens
    let got = Run::new(job, ready_pods("r", 3)).unsatisfied().go().await;
    assert_eq!((got.deletes(), got.patches()), (0, 0));
    assert_eq!(got.counts(), (3, 3, 0, 0, 0));
    assert!(got.conditions().is_empty());
    // resuming
    let job = J::new("foobar", 2, Some(4))
        .suspend(false)
        .condition("Suspended", "True", "JobSuspended", "Job suspended")
        .build();
    let got = Run::new(job, vec![]).go().await;
    assert_eq!(got.creates(), 2);
    assert_eq!(
        got.conditions(),
        vec![c("Suspended", "False", "JobResumed")]
    );
    assert_eq!(got.messages(), vec!["Job resumed"]);
    assert_eq!(got.status().start_time.map(|t| t.0), Some(t0()));
    assert!(got
        .calls
        .events
        .contains(&("Resumed".into(), "Job resumed".into())));
    // a deleted job is not suspended: its finalizers go
    let job = J::new("foobar", 2, Some(4))
        .suspend(true)
        .deleting(t0())
        .build();
    let got = Run::new(job, pods("r", 2, "Running")).go().await;
    assert_eq!((got.creates(), got.deletes(), got.patches()), (0, 0, 2));
    assert_eq!(got.counts(), (2, 0, 0, 0, 0));
    assert!(got.conditions().is_empty());
}

#[tokio::test]
async fn manual_false_conditions_are_kept() {
    for t in ["FailureTarget", "SuccessCriteriaMet"] {
        let job = J::new("foobar", 1, Some(1))
            .condition(t, "False", "", "")
            .build();
        let got = Run::new(job, ready_pods("r", 1)).go().await;
        assert_eq!((got.counts().0, got.counts().1), (1, 1));
        assert_eq!(got.conditions(), vec![c(t, "False", "")]);
    }
}

// TestSyncJobPastDeadline.

#[tokio::test]
async fn past_deadline() {
    let started = |secs: i64| crate::job::testutil::at(-secs);
    let job = J::new("foobar", 1, Some(1))
        .deadline(10)
        .start_time(started(15))
        .build();
    let got = Run::new(job, pods("r", 1, "Running")).go().await;
    assert_eq!(got.deletes(), 1);
    assert_eq!(got.counts().4, 1);
    assert_eq!(
        got.conditions(),
        vec![c("FailureTarget", "True", "DeadlineExceeded")]
    );
    assert_eq!(
        got.messages(),
        vec!["Job was active longer than specified deadline"]
    );
    let job = J::new("foobar", 1, Some(1))
        .deadline(10)
        .start_time(started(10))
        .build();
    let got = Run::new(job, vec![]).go().await;
    assert_eq!(got.creates(), 0);
    assert_eq!(
        got.conditions(),
        vec![
            c("FailureTarget", "True", "DeadlineExceeded"),
            c("Failed", "True", "DeadlineExceeded")
        ]
    );
    // the backoff limit wins over the deadline
    let job = J::new("foobar", 1, Some(1))
        .deadline(1)
        .backoff_limit(0)
        .start_time(started(10))
        .build();
    let got = Run::new(job, pods("f", 1, "Failed")).go().await;
    assert_eq!(
        got.conditions(),
        vec![
            c("FailureTarget", "True", "BackoffLimitExceeded"),
            c("Failed", "True", "BackoffLimitExceeded")
        ]
    );
    // not while suspended
    let job = J::new("foobar", 1, Some(1))
        .deadline(10)
        .suspend(true)
        .start_time(started(15))
        .build();
    let got = Run::new(job, vec![]).go().await;
    assert_eq!(
        got.conditions(),
        vec![c("Suspended", "True", "JobSuspended")]
    );
    assert!(got.status().start_time.is_some());
    // before the deadline: a sync is scheduled for it
    let job = J::new("foobar", 1, Some(1))
        .deadline(10)
        .start_time(started(4))
        .build();
    let got = Run::new(job, pods("r", 1, "Running")).go().await;
    assert_eq!(got.out.requeue_after, Some(Duration::from_secs(6)));
}

// TestSyncJobWithJobPodFailurePolicy.

fn pfp_job() -> J {
    J::new("foobar", 1, Some(1))
        .replacement("Failed")
        .rules(vec![
            exit_rule("Ignore", "In", &[1, 2, 3], None),
            exit_rule("FailJob", "In", &[5, 6, 7], None),
        ])
}

fn failed_with(name: &str, code: i32) -> Arc<Pod> {
    P::new(name)
        .phase("Failed")
        .exit("main-container", code, Some(crate::job::testutil::at(-100)))
        .finalizer()
        .arc()
}

#[tokio::test]
async fn pod_failure_policy_fail_job() {
    let got = Run::new(pfp_job().build(), vec![failed_with("mypod-0", 5)])
        .go()
        .await;
    assert_eq!(
        got.conditions(),
        vec![
            c("FailureTarget", "True", "PodFailurePolicy"),
            c("Failed", "True", "PodFailurePolicy")
        ]
    );
    let msg = "Container main-container for pod default/mypod-0 failed with exit code 5 matching FailJob rule at index 1";
    assert_eq!(got.messages(), vec![msg, msg]);
    assert_eq!((got.counts().0, got.counts().4), (0, 1));
    // an existing FailureTarget wins, with its stored message
    let stored = "Container main-container for pod default/already-deleted-pod failed with exit code 5 matching FailJob rule at index 1";
    let job = pfp_job()
        .condition("FailureTarget", "True", "PodFailurePolicy", stored)
        .build();
    let got = Run::new(job, vec![]).go().await;
    assert_eq!(got.messages(), vec![stored, stored]);
    // a running pod with the same exit code does not fail the job
    let running = P::new("mypod-0")
        .phase("Running")
        .exit("main-container", 5, None)
        .finalizer()
        .arc();
    let got = Run::new(pfp_job().build(), vec![running]).go().await;
    assert!(got.conditions().is_empty());
    assert_eq!((got.counts().0, got.counts().4), (1, 0));
    // with another pod running, Failed waits until it terminated
    let job = pfp_job().build();
    let mut job = job;
    if let Some(s) = job.spec.as_mut() {
        s.parallelism = Some(2);
        s.completions = Some(2);
    }
    let got = Run::new(
        job,
        vec![
            pods("mypod-r", 1, "Running").remove(0),
            failed_with("mypod-1", 5),
        ],
    )
    .go()
    .await;
    assert_eq!(
        got.conditions(),
        vec![c("FailureTarget", "True", "PodFailurePolicy")]
    );
    assert_eq!((got.counts().0, got.counts().4), (0, 2));
}

#[tokio::test]
async fn pod_failure_policy_ignore_and_count() {
    // ignored: not counted, replaced
    let got = Run::new(
        pfp_job().backoff_limit(0).build(),
        vec![failed_with("mypod-0", 1)],
    )
    .go()
    .await;
    assert!(got.conditions().is_empty());
    assert_eq!((got.counts().0, got.counts().4), (1, 0));
    // no rule: counts towards the backoff limit
    let got = Run::new(
        pfp_job().backoff_limit(0).build(),
        vec![failed_with("mypod-0", 10)],
    )
    .go()
    .await;
    assert_eq!(
        got.conditions(),
        vec![
            c("FailureTarget", "True", "BackoffLimitExceeded"),
            c("Failed", "True", "BackoffLimitExceeded")
        ]
    );
    // pod conditions
    let dt = |phase: &str| {
        P::new("mypod-0")
            .phase(phase)
            .condition("DisruptionTarget", "True")
            .finalizer()
            .arc()
    };
    let job = J::new("foobar", 1, Some(1))
        .backoff_limit(0)
        .rules(vec![cond_rule("Ignore", "DisruptionTarget", "True")])
        .build();
    let got = Run::new(job, vec![dt("Failed")]).go().await;
    assert!(got.conditions().is_empty());
    assert_eq!((got.counts().0, got.counts().4), (1, 0));
    let job = J::new("foobar", 1, Some(1))
        .rules(vec![cond_rule("FailJob", "DisruptionTarget", "True")])
        .build();
    let got = Run::new(job, vec![dt("Failed")]).go().await;
    assert_eq!(
        got.messages(),
        vec![
            "Pod default/mypod-0 has condition DisruptionTarget matching FailJob rule at index 0";
            2
        ]
    );
    // a terminating pod is not failed while a policy is used
    let job = J::new("foobar", 1, None)
        .backoff_limit(0)
        .rules(vec![cond_rule("Count", "DisruptionTarget", "True")])
        .build();
    let got = Run::new(
        job,
        vec![P::new("mypod-0").deleting(t0()).finalizer().arc()],
    )
    .go()
    .await;
    assert!(got.conditions().is_empty());
    assert_eq!(got.counts(), (0, 0, 1, 0, 0));
}

// TestSyncJobWithJobSuccessPolicy.

#[tokio::test]
async fn success_policy() {
    let job = || {
        J::new("foobar", 3, Some(3))
            .indexed()
            .backoff_limit(i32::MAX)
            .success_rules(vec![(Some("0,1"), Some(1))])
    };
    let got = Run::new(
        job().build(),
        vec![
            ix("a1", "0", "Failed"),
            ix("a2", "0", "Running"),
            ix("b", "1", "Succeeded"),
            ix("c", "2", "Running"),
        ],
    )
    .go()
    .await;
    assert_eq!(got.counts(), (0, 0, 2, 1, 1));
    assert_eq!(got.completed_indexes(), "1");
    assert_eq!(
        got.conditions(),
        vec![c("SuccessCriteriaMet", "True", "SuccessPolicy")]
    );
    assert_eq!(got.messages(), vec!["Matched rules at index 0"]);
    // once every pod is gone: Complete with the same reason
    let got = Run::new(
        job()
            .condition(
                "SuccessCriteriaMet",
                "True",
                "SuccessPolicy",
                "Matched rules at index 0",
            )
            .build(),
        vec![ix("a", "0", "Failed"), ix("b", "1", "Succeeded")],
    )
    .go()
    .await;
    assert_eq!(
        got.conditions(),
        vec![
            c("SuccessCriteriaMet", "True", "SuccessPolicy"),
            c("Complete", "True", "SuccessPolicy")
        ]
    );
    // the backoff limit and the policy both match: failure wins
    let got = Run::new(
        job().backoff_limit(1).build(),
        vec![
            ix("a1", "0", "Failed"),
            ix("a2", "0", "Failed"),
            ix("b", "1", "Succeeded"),
        ],
    )
    .go()
    .await;
    assert_eq!(
        got.conditions(),
        vec![
            c("FailureTarget", "True", "BackoffLimitExceeded"),
            c("Failed", "True", "BackoffLimitExceeded")
        ]
    );
    // SuccessCriteriaMet exists: the backoff limit is no longer looked at
    let got = Run::new(
        job()
            .backoff_limit(1)
            .condition(
                "SuccessCriteriaMet",
                "True",
                "SuccessPolicy",
                "Matched rules at index 0",
            )
            .build(),
        vec![
            ix("a1", "0", "Failed"),
            ix("a2", "0", "Failed"),
            ix("b", "1", "Succeeded"),
        ],
    )
    .go()
    .await;
    assert_eq!(
        got.conditions(),
        vec![
            c("SuccessCriteriaMet", "True", "SuccessPolicy"),
            c("Complete", "True", "SuccessPolicy")
        ]
    );
}

// TestSyncJobWithJobBackoffLimitPerIndex.

fn blpi_job(n: i32) -> J {
    J::new("foobar", n, Some(n))
        .indexed()
        .backoff_limit(i32::MAX)
        .blpi(1)
}

fn ixf(name: &str, index: &str, phase: &str, fc: &str) -> Arc<Pod> {
    P::new(name)
        .phase(phase)
        .index(index)
        .failure_count(fc)
        .finalizer()
        .arc()
}

#[tokio::test]
async fn backoff_limit_per_index() {
    let got = Run::new(
        blpi_job(2).build(),
        vec![
            ixf("a1", "0", "Failed", "0"),
            ixf("a2", "0", "Succeeded", "1"),
            ixf("b", "1", "Succeeded", "0"),
        ],
    )
    .go()
    .await;
    assert_eq!((got.counts().3, got.counts().4), (2, 1));
    assert_eq!(got.completed_indexes(), "0,1");
    assert_eq!(got.failed_indexes().as_deref(), Some(""));
    assert_eq!(got.conditions().len(), 2);
    // a single failed pod: recreated with failure count 1, not counted yet
    let got = Run::new(blpi_job(2).build(), vec![ixf("a", "0", "Failed", "0")])
        .go()
        .await;
    assert_eq!(got.created_indexes(), vec!["0", "1"]);
    let fc = got.calls.created[0]
        .1
        .metadata
        .as_ref()
        .and_then(|m| m.annotations.as_ref())
        .and_then(|a| a.get(spec::JOB_INDEX_FAILURE_COUNT_ANNOTATION).cloned());
    assert_eq!(fc.as_deref(), Some("1"));
    assert_eq!((got.counts().0, got.counts().4, got.patches()), (2, 0, 0));
    // already replaced: counted
    let got = Run::new(
        blpi_job(2).build(),
        vec![ixf("a", "0", "Failed", "0"), ixf("b", "0", "Pending", "1")],
    )
    .go()
    .await;
    assert_eq!((got.counts().0, got.counts().4), (2, 1));
    assert_eq!(got.failed_indexes().as_deref(), Some(""));
    // the index exceeded its limit: the job goes on
    let got = Run::new(blpi_job(2).build(), vec![ixf("a", "0", "Failed", "1")])
        .go()
        .await;
    assert_eq!(got.created_indexes(), vec!["1"]);
    assert_eq!((got.counts().0, got.counts().4), (1, 1));
    assert_eq!(got.failed_indexes().as_deref(), Some("0"));
    // failed indexes end the job
    let got = Run::new(
        blpi_job(2).build(),
        vec![
            ixf("a", "0", "Failed", "1"),
            ixf("b", "1", "Succeeded", "0"),
        ],
    )
    .go()
    .await;
    assert_eq!(
        got.conditions(),
        vec![
            c("FailureTarget", "True", "FailedIndexes"),
            c("Failed", "True", "FailedIndexes")
        ]
    );
    assert_eq!(got.messages()[0], "Job has failed indexes");
    // maxFailedIndexes exceeded
    let got = Run::new(
        blpi_job(4).max_failed_indexes(1).build(),
        vec![
            ixf("a", "0", "Failed", "1"),
            ixf("b", "1", "Succeeded", "0"),
            ixf("c", "2", "Failed", "1"),
            ixf("d", "3", "Running", "0"),
        ],
    )
    .go()
    .await;
    assert_eq!(got.counts(), (0, 0, 1, 1, 3));
    assert_eq!(got.failed_indexes().as_deref(), Some("0,2"));
    assert_eq!(
        got.conditions(),
        vec![c("FailureTarget", "True", "MaxFailedIndexesExceeded")]
    );
    // FailIndex rule
    let got = Run::new(
        blpi_job(2)
            .rules(vec![exit_rule("FailIndex", "In", &[3], None)])
            .build(),
        vec![P::new("a")
            .phase("Failed")
            .index("0")
            .failure_count("0")
            .exit("main-container", 3, None)
            .finalizer()
            .arc()],
    )
    .go()
    .await;
    assert_eq!((got.counts().0, got.counts().4), (1, 1));
    assert_eq!(got.failed_indexes().as_deref(), Some("0"));
    // the global backoff limit beats the per-index one
    let got = Run::new(
        blpi_job(2).backoff_limit(1).build(),
        vec![ixf("a", "0", "Failed", "0"), ixf("b", "1", "Failed", "0")],
    )
    .go()
    .await;
    assert_eq!(
        got.conditions(),
        vec![
            c("FailureTarget", "True", "BackoffLimitExceeded"),
            c("Failed", "True", "BackoffLimitExceeded")
        ]
    );
}

// TestJobBackoffForOnFailure and TestJobBackoffOnRestartPolicyNever.

#[tokio::test]
async fn backoff_for_on_failure() {
    let restarted = |name: &str, phase: &str, restarts: i32| {
        P::new(name)
            .phase(phase)
            .running_container("main-container", restarts)
            .finalizer()
            .arc()
    };
    let cases: Vec<(i32, i32, Vec<(&str, i32)>, bool)> = vec![
        (1, 0, vec![("Running", 0)], false),
        (1, 1, vec![("Running", 0)], false),
        (1, 1, vec![("Running", 1)], true),
        (1, 1, vec![("Pending", 1)], true),
        (1, 2, vec![("Running", 2)], true),
        (2, 2, vec![("Running", 1), ("Running", 1)], true),
        (2, 3, vec![("Running", 1), ("Running", 1)], false),
    ];
    for (i, (p, bl, restarts, fails)) in cases.into_iter().enumerate() {
        let job = J::new("foobar", p, Some(5))
            .restart_policy("OnFailure")
            .backoff_limit(bl)
            .build();
        let n = restarts.len();
        let pods = restarts
            .iter()
            .enumerate()
            .map(|(j, (phase, r))| restarted(&format!("p{j}"), phase, *r))
            .collect();
        let got = Run::new(job, pods).go().await;
        if fails {
            assert_eq!(
                got.conditions(),
                vec![c("FailureTarget", "True", "BackoffLimitExceeded")],
                "case {i}"
            );
            assert_eq!((got.counts().0, got.counts().4), (0, count(n)), "case {i}");
        } else {
            assert!(got.conditions().is_empty(), "case {i}");
            assert_eq!(got.counts().0, p, "case {i}");
        }
    }
}

#[tokio::test]
async fn backoff_on_restart_policy_never() {
    let cases: Vec<(i32, i32, usize, usize, bool, (i32, i32))> = vec![
        (1, 0, 1, 0, false, (1, 0)),
        (1, 1, 0, 1, false, (1, 1)),
        (1, 1, 0, 2, true, (0, 2)),
        (2, 6, 1, 6, false, (2, 6)),
        (2, 6, 0, 7, true, (0, 7)),
    ];
    for (i, (p, bl, running, failed, fails, (active, nfailed))) in cases.into_iter().enumerate() {
        let job = J::new("foobar", p, Some(p)).backoff_limit(bl).build();
        let got = Run::new(
            job,
            cat(vec![
                pods("r", running, "Running"),
                pods("f", failed, "Failed"),
            ]),
        )
        .go()
        .await;
        assert_eq!(
            (got.counts().0, got.counts().4),
            (active, nfailed),
            "case {i}"
        );
        assert_eq!(!got.conditions().is_empty(), fails, "case {i}");
    }
}

// TestSyncJobWhenManagedBy, TestSyncJobDeleted, TestSyncJobComplete,
// TestSyncJobExpectations: through the whole sync.

#[tokio::test]
async fn sync_skips_what_it_must() {
    let key = ObjectKey::namespaced("default", "foobar");
    let base = || J::new("foobar", 2, Some(2)).active(1).start_time(t0());
    let sync = |job: Option<Job>| {
        JobSync::new(
            Fake {
                job: job.map(Arc::new),
                ..Default::default()
            },
            JobState::default(),
        )
    };
    let s = sync(Some(base().managed_by("custom-managed-by").build()));
    assert_eq!(s.sync(&key).await, SyncOutcome::default());
    assert!(s.cluster.calls().statuses.is_empty() && s.cluster.calls().created.is_empty());
    for managed in [Some(spec::JOB_CONTROLLER_NAME), None] {
        let mut j = base();
        if let Some(m) = managed {
            j = j.managed_by(m);
        }
        let s = sync(Some(j.build()));
        assert_eq!(s.sync(&key).await, SyncOutcome::default());
        assert_eq!(s.cluster.calls().created.len(), 2);
    }
    // deleted: nothing
    let s = sync(None);
    assert_eq!(s.sync(&key).await, SyncOutcome::default());
    assert!(s.cluster.calls().statuses.is_empty());
    // complete: nothing
    let s = sync(Some(base().condition("Complete", "True", "", "").build()));
    s.sync(&key).await;
    assert!(s.cluster.calls().statuses.is_empty());
    // an unknown completion mode: an event, nothing else
    let mut j = base().build();
    if let Some(sp) = j.spec.as_mut() {
        sp.completion_mode = Some("Bogus".into());
    }
    let s = sync(Some(j));
    s.sync(&key).await;
    let calls = s.cluster.calls();
    assert!(calls.statuses.is_empty());
    assert_eq!(calls.events[0].0, "UnknownCompletionMode");
}

#[tokio::test]
async fn finished_jobs_awaiting_their_update_are_not_synced() {
    let key = ObjectKey::namespaced("default", "foobar");
    let state = JobState::default();
    state.finished.insert("job-uid");
    let s = JobSync::new(
        Fake {
            job: Some(Arc::new(J::new("foobar", 2, Some(2)).build())),
            ..Default::default()
        },
        state,
    );
    s.sync(&key).await;
    assert!(s.cluster.calls().created.is_empty());
}

// TestGetNewFinshedPods.

#[test]
fn new_finished_pods() {
    let ctx = |job: Job, pods: Vec<Arc<Pod>>, expected_rm: &[&str]| SyncCtx {
        key: ObjectKey::of(&job),
        uncounted: super::super::tracking::Uncounted::of(
            job.status
                .as_ref()
                .and_then(|s| s.uncounted_terminated_pods.as_ref()),
        ),
        job,
        active_pods: Vec::new(),
        pods,
        finished_condition: None,
        succeeded: 0,
        failed: 0,
        prev_succeeded_indexes: Default::default(),
        succeeded_indexes: Default::default(),
        failed_indexes: None,
        new_backoff_record: Default::default(),
        expected_rm_finalizers: expected_rm.iter().map(|s| s.to_string()).collect(),
        delayed_deletion: Default::default(),
        terminating: 0,
        ready: 0,
    };
    let totals = |ctx: SyncCtx| {
        let (s, f) = ctx.new_finished_pods();
        let st = ctx.job.status.clone().unwrap_or_default();
        (
            st.succeeded.unwrap_or(0) + count(s.len()) + count(ctx.uncounted.succeeded.len()),
            st.failed.unwrap_or(0) + count(f.len()) + count(ctx.uncounted.failed.len()),
        )
    };
    let p = |name: &str, phase: &str| P::new(name).phase(phase);
    let got = totals(ctx(
        J::new("j", 1, Some(1))
            .counts(2, 1)
            .uncounted(&[], &[])
            .build(),
        vec![
            p("a", "Succeeded").arc(),
            p("b", "Succeeded").finalizer().arc(),
            p("c", "Succeeded").finalizer().arc(),
            p("d", "Failed").arc(),
            p("e", "Failed").finalizer().arc(),
            p("f", "Running").arc(),
        ],
        &[],
    ));
    assert_eq!(got, (4, 2), "some counted");
    let got = totals(ctx(
        J::new("j", 1, Some(1))
            .counts(1, 1)
            .uncounted(&["a", "c"], &["e", "f"])
            .build(),
        vec![
            p("a", "Succeeded").arc(),
            p("b", "Succeeded").arc(),
            p("c", "Succeeded").finalizer().arc(),
            p("d", "Succeeded").finalizer().arc(),
            p("e", "Failed").arc(),
            p("f", "Failed").finalizer().arc(),
            p("g", "Failed").finalizer().arc(),
        ],
        &[],
    ));
    assert_eq!(got, (4, 4), "some uncounted");
    let got = totals(ctx(
        J::new("j", 1, Some(1))
            .counts(2, 2)
            .uncounted(&["a"], &["d"])
            .build(),
        vec![
            p("a", "Succeeded").arc(),
            p("b", "Succeeded").finalizer().arc(),
            p("c", "Succeeded").finalizer().arc(),
            p("d", "Failed").arc(),
            p("e", "Failed").finalizer().arc(),
            p("f", "Failed").finalizer().arc(),
            p("g", "Failed").finalizer().arc(),
        ],
        &["b", "f"],
    ));
    assert_eq!(got, (4, 5), "with expected removed finalizers");
    let got = totals(ctx(
        J::new("j", 1, Some(1))
            .counts(1, 1)
            .uncounted(&[], &[])
            .build(),
        vec![
            p("a", "Succeeded").finalizer().deleting(t0()).arc(),
            p("b", "Failed").finalizer().deleting(t0()).arc(),
            p("c", "Running").finalizer().deleting(t0()).arc(),
            p("d", "Pending").finalizer().deleting(t0()).arc(),
            p("e", "Running").deleting(t0()).arc(),
            p("f", "Pending").deleting(t0()).arc(),
        ],
        &[],
    ));
    assert_eq!(got, (2, 4), "deleted pods");
}

// TestTrackJobStatusAndRemoveFinalizers: the sequence of status writes.

async fn track(
    job: Job,
    pods: Vec<Arc<Pod>>,
    finished: Option<&str>,
    expected_rm: &[&str],
    fake: Fake,
) -> (Vec<JobStatus>, usize, Result<(), String>) {
    let key = ObjectKey::of(&job);
    let state = JobState::default();
    state
        .finalizer_expectations
        .expect_finalizers_removed(&key, expected_rm.iter().copied());
    let sync = JobSync::new(fake, state.clone());
    let mut job = job;
    job.status
        .get_or_insert_with(Default::default)
        .uncounted_terminated_pods
        .get_or_insert_with(Default::default);
    let (prev, succ) = super::super::indexed::calculate_succeeded_indexes(&job, &pods);
    let failed_indexes = spec::backoff_limit_per_index(&job)
        .map(|_| super::super::indexed::calculate_failed_indexes(&job, &pods));
    let mut ctx = SyncCtx {
        key: key.clone(),
        uncounted: super::super::tracking::Uncounted::of(
            job.status
                .as_ref()
                .and_then(|s| s.uncounted_terminated_pods.as_ref()),
        ),
        active_pods: filter_active_pods(&pods),
        job,
        pods,
        finished_condition: finished.map(|t| new_condition(t, "True", "", "", t0())),
        succeeded: 0,
        failed: 0,
        prev_succeeded_indexes: prev,
        succeeded_indexes: succ,
        failed_indexes,
        new_backoff_record: Default::default(),
        expected_rm_finalizers: state.finalizer_expectations.expected_uids(&key),
        delayed_deletion: Default::default(),
        terminating: 0,
        ready: 0,
    };
    ctx.terminating = count(ctx.pods.iter().filter(|p| is_pod_terminating(p)).count());
    if spec::backoff_limit_per_index(&ctx.job).is_some() {
        let st = super::super::indexed::IndexState {
            job: &ctx.job,
            pods: &ctx.pods,
            active: &ctx.active_pods,
            succeeded: &ctx.succeeded_indexes,
            failed: ctx.failed_indexes.as_ref(),
        };
        ctx.delayed_deletion = super::super::indexed::pods_with_delayed_deletion_per_index(
            &st,
            &ctx.expected_rm_finalizers,
        );
    }
    let needs = ctx.job.status.as_ref().and_then(|s| s.active).is_some();
    let r = sync
        .track_job_status_and_remove_finalizers(&mut ctx, needs)
        .await;
    let calls = std::mem::take(&mut *sync.cluster.calls());
    (calls.statuses, calls.patched.len(), r)
}

fn uncounted_of(s: &JobStatus) -> (Vec<String>, Vec<String>) {
    let u = s.uncounted_terminated_pods.clone().unwrap_or_default();
    (
        u.succeeded.unwrap_or_default(),
        u.failed.unwrap_or_default(),
    )
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[tokio::test]
async fn track_job_status_and_remove_finalizers() {
    let j = || J::new("j", 1, Some(1));
    // no updates
    let (writes, patches, _) = track(j().build(), vec![], None, &[], Fake::default()).await;
    assert_eq!((writes.len(), patches), (0, 0));
    // new active
    let (writes, _, _) = track(j().active(1).build(), vec![], None, &[], Fake::default()).await;
    assert_eq!(writes.len(), 1);
    assert_eq!(writes[0].active, Some(1));
    // track finished pods
    let p = |name: &str, phase: &str| P::new(name).phase(phase).finalizer();
    let (writes, patches, _) = track(
        j().build(),
        vec![
            p("a", "Succeeded").arc(),
            p("b", "Failed").arc(),
            p("c", "Succeeded").deleting(t0()).arc(),
            p("d", "Failed").deleting(t0()).arc(),
            p("e", "Pending").deleting(t0()).arc(),
            p("f", "Pending").arc(),
            p("g", "Running").arc(),
        ],
        None,
        &[],
        Fake::default(),
    )
    .await;
    assert_eq!(patches, 5);
    assert_eq!(writes.len(), 2);
    assert_eq!(
        uncounted_of(&writes[0]),
        (strings(&["a", "c"]), strings(&["b", "d", "e"]))
    );
    assert_eq!(uncounted_of(&writes[1]), (vec![], vec![]));
    assert_eq!((writes[1].succeeded, writes[1].failed), (Some(2), Some(3)));
    // past and new finished pods
    let (writes, patches, _) = track(
        j().active(1)
            .counts(2, 3)
            .uncounted(&["a", "e"], &["b", "f"])
            .build(),
        vec![
            P::new("e").phase("Succeeded").arc(),
            P::new("f").phase("Failed").arc(),
            p("x", "Pending").arc(),
            p("a", "Succeeded").arc(),
            p("b", "Failed").arc(),
            p("c", "Succeeded").arc(),
            p("d", "Failed").arc(),
        ],
        None,
        &[],
        Fake::default(),
    )
    .await;
    assert_eq!(patches, 4);
    assert_eq!(
        uncounted_of(&writes[0]),
        (strings(&["a", "c"]), strings(&["b", "d"]))
    );
    assert_eq!((writes[0].succeeded, writes[0].failed), (Some(3), Some(4)));
    assert_eq!((writes[1].succeeded, writes[1].failed), (Some(5), Some(6)));
    // expecting removed finalizers
    let (writes, patches, _) = track(
        j().counts(2, 3).uncounted(&["a", "g"], &["b", "h"]).build(),
        vec![
            p("a", "Succeeded").arc(),
            p("b", "Failed").arc(),
            p("c", "Succeeded").arc(),
            p("d", "Failed").arc(),
            p("e", "Succeeded").arc(),
            p("f", "Failed").arc(),
            p("g", "Succeeded").arc(),
            p("h", "Failed").arc(),
        ],
        None,
        &["c", "d", "g", "h"],
        Fake::default(),
    )
    .await;
    assert_eq!(patches, 4);
    assert_eq!(
        uncounted_of(&writes[0]),
        (strings(&["a", "e"]), strings(&["b", "f"]))
    );
    assert_eq!((writes[0].succeeded, writes[0].failed), (Some(3), Some(4)));
    assert_eq!((writes[1].succeeded, writes[1].failed), (Some(5), Some(6)));
    // failing job: every unfinished pod counts as failed
    let (writes, patches, _) = track(
        j().build(),
        vec![
            p("a", "Succeeded").arc(),
            p("b", "Failed").arc(),
            p("c", "Running").arc(),
        ],
        Some("Failed"),
        &[],
        Fake::default(),
    )
    .await;
    assert_eq!(patches, 3);
    assert_eq!(
        uncounted_of(&writes[0]),
        (strings(&["a"]), strings(&["b", "c"]))
    );
    assert_eq!((writes[1].succeeded, writes[1].failed), (Some(1), Some(2)));
    let types: Vec<String> = writes[1]
        .conditions
        .iter()
        .flatten()
        .map(|c| c.type_.clone())
        .collect();
    assert_eq!(types, vec!["Failed"]);
    // a status write error: no finalizer is removed
    let (writes, patches, r) = track(
        j().build(),
        vec![p("a", "Succeeded").arc(), p("b", "Failed").arc()],
        None,
        &[],
        Fake {
            status_error: true,
            ..Default::default()
        },
    )
    .await;
    assert!(r.is_err());
    assert_eq!((writes.len(), patches), (0, 0));
    // pod patch errors, partial success: what was counted is saved once more
    let (writes, patches, r) = track(
        j().uncounted(&["a"], &["b"]).build(),
        vec![
            P::new("a").phase("Succeeded").arc(),
            p("c", "Succeeded").arc(),
            p("d", "Failed").arc(),
        ],
        None,
        &[],
        Fake {
            pod_errors: true,
            ..Default::default()
        },
    )
    .await;
    assert!(r.is_err());
    assert_eq!(patches, 2);
    assert_eq!(writes.len(), 1);
    assert_eq!(uncounted_of(&writes[0]), (strings(&["c"]), strings(&["d"])));
    assert_eq!((writes[0].succeeded, writes[0].failed), (Some(1), Some(1)));
}

#[tokio::test]
async fn track_indexed_and_too_many() {
    // indexed successes go straight into completedIndexes: one write
    let job = J::new("j", 1, Some(6)).indexed().active(1).build();
    let (writes, patches, _) = track(
        job,
        vec![
            ix("a", "1", "Succeeded"),
            ix("b", "3", "Succeeded"),
            ix("c", "3", "Succeeded"),
            ix("d", "5", "Running"),
            P::new("e").phase("Succeeded").finalizer().arc(),
        ],
        None,
        &[],
        Fake::default(),
    )
    .await;
    assert_eq!((writes.len(), patches), (1, 4));
    assert_eq!(writes[0].completed_indexes.as_deref(), Some("1,3"));
    assert_eq!(writes[0].succeeded, Some(2));
    // at most 500 pods per sync
    let mut many: Vec<Arc<Pod>> = (0..500)
        .map(|i| P::new(&i.to_string()).phase("Succeeded").finalizer().arc())
        .collect();
    many.push(P::new("b").phase("Failed").finalizer().arc());
    let job = J::new("j", 1, Some(1)).uncounted(&[], &["a", "b"]).build();
    let (writes, patches, _) = track(job, many, None, &[], Fake::default()).await;
    assert_eq!(patches, 499);
    let (s, f) = uncounted_of(&writes[0]);
    assert_eq!((s.len(), f), (499, strings(&["b"])));
    assert_eq!(writes[0].failed, Some(1));
    assert_eq!(
        (writes[1].succeeded, writes[1].failed),
        (Some(499), Some(1))
    );
    // a terminating pod delays Failed
    let job = J::new("j", 1, Some(1))
        .uncounted(&[], &["a"])
        .condition("FailureTarget", "True", "", "")
        .build();
    let (writes, patches, _) = track(
        job,
        vec![P::new("a").phase("Running").deleting(t0()).arc()],
        Some("Failed"),
        &[],
        Fake::default(),
    )
    .await;
    assert_eq!(patches, 0);
    assert_eq!(writes.len(), 1);
    assert_eq!(writes[0].failed, Some(1));
    let types: Vec<String> = writes[0]
        .conditions
        .iter()
        .flatten()
        .map(|c| c.type_.clone())
        .collect();
    assert_eq!(types, vec!["FailureTarget"]);
}

async fn try_claim(
    job: &Job,
    fresh: Job,
    pods: Vec<Arc<Pod>>,
) -> (Result<Vec<Arc<Pod>>, String>, Calls) {
    let sync = JobSync::new(
        Fake {
            job: Some(Arc::new(fresh)),
            pods,
            ..Default::default()
        },
        JobState::default(),
    );
    let got = sync.pods_for_job(&ObjectKey::of(job), job).await;
    let calls = std::mem::take(&mut *sync.cluster.calls());
    (got, calls)
}

async fn claim(job: &Job, fresh: Job, pods: Vec<Arc<Pod>>) -> (Vec<Arc<Pod>>, Calls) {
    let (got, calls) = try_claim(job, fresh, pods).await;
    (got.expect("claimed"), calls)
}

// TestGetPodsForJob: claiming adopts orphans with the tracking finalizer and releases
// pods whose labels stopped matching.
#[tokio::test]
async fn get_pods_for_job() {
    let job = J::new("foobar", 1, Some(1)).build();
    let mut other = job.clone();
    other.metadata.uid = Some("other-uid".into());
    let names = |pods: &[Arc<Pod>]| crate::job::testutil::names(pods);
    let with_finalizer = |pods: &[Arc<Pod>]| {
        let tracked: Vec<Arc<Pod>> = pods
            .iter()
            .filter(|p| spec::has_tracking_finalizer(p))
            .cloned()
            .collect();
        crate::job::testutil::names(&tracked)
    };
    let mut unlabelled = P::new("pod3");
    unlabelled.0.metadata.labels = None;
    let (got, _) = claim(
        &job,
        job.clone(),
        vec![
            P::new("pod1").owned_by(&job).finalizer().arc(),
            P::new("pod2").owned_by(&other).arc(),
            unlabelled.arc(),
            P::new("pod4").owned_by(&job).arc(),
        ],
    )
    .await;
    assert_eq!(names(&got), vec!["pod1", "pod4"], "only matching");
    assert_eq!(with_finalizer(&got), vec!["pod1"]);
    // adoption adds the controller reference and the finalizer
    let (got, calls) = claim(
        &job,
        job.clone(),
        vec![P::new("pod1").owned_by(&job).arc(), P::new("pod2").arc()],
    )
    .await;
    assert_eq!(names(&got), vec!["pod1", "pod2"], "adopt");
    assert_eq!(with_finalizer(&got), vec!["pod2"]);
    let body = &calls.patch_bodies[0]["metadata"];
    assert_eq!(
        body["finalizers"],
        serde_json::json!([spec::JOB_TRACKING_FINALIZER])
    );
    assert_eq!(body["ownerReferences"][0]["uid"], "job-uid");
    assert_eq!(body["ownerReferences"][0]["controller"], true);
    // no adoption when the job is being deleted
    let deleting = J::new("foobar", 1, Some(1)).deleting(t0()).build();
    let (got, calls) = claim(
        &deleting,
        deleting.clone(),
        vec![P::new("pod1").owned_by(&job).arc(), P::new("pod2").arc()],
    )
    .await;
    assert_eq!(names(&got), vec!["pod1"], "no adopt when deleting");
    assert!(calls.patched.is_empty());
    // the cache is late, the fresh read sees the deletion: no adoption, the sync fails
    let (got, calls) = try_claim(
        &job,
        deleting,
        vec![P::new("pod1").owned_by(&job).arc(), P::new("pod2").arc()],
    )
    .await;
    let err = got.expect_err("no adopt when deleting race");
    assert!(err.contains("has just been deleted"), "{err}");
    assert!(calls.patched.is_empty());
    // release
    let mut released = P::new("pod2").owned_by(&job);
    released.0.metadata.labels = None;
    let (got, calls) = claim(
        &job,
        job.clone(),
        vec![P::new("pod1").owned_by(&job).arc(), released.arc()],
    )
    .await;
    assert_eq!(names(&got), vec!["pod1"], "release");
    assert_eq!(calls.patched, vec!["pod2"]);
}
