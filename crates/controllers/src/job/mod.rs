//! The Job controller, after upstream's `pkg/controller/job` (Kubernetes 1.36, every
//! feature gate of the controller on).
//!
//! A Job runs pods to completion: up to `parallelism` at a time until `completions` of
//! them succeeded (or, without `completions`, until one succeeded and the rest
//! finished). In `Indexed` mode each pod gets a completion index (annotation and label
//! `batch.kubernetes.io/job-completion-index`, hostname `<job>-<index>`, the
//! `JOB_COMPLETION_INDEX` variable) and the Job completes when every index succeeded.
//! Failed pods are replaced after an exponential delay (10 s doubling to 10 min) until
//! `backoffLimit` is exceeded, or per index with `backoffLimitPerIndex` and
//! `maxFailedIndexes`; a `podFailurePolicy` can fail the Job or an index at once, or
//! ignore a failure, by exit code or pod condition; a `successPolicy` completes an
//! Indexed Job early; `activeDeadlineSeconds` bounds the run; `suspend` deletes the
//! pods until the Job resumes; `podReplacementPolicy: Failed` waits for a terminating pod
//! to fail before replacing it; Jobs whose `spec.managedBy` names another controller
//! are left alone.
//!
//! Pods are counted exactly once thanks to the `batch.kubernetes.io/job-tracking`
//! finalizer and `status.uncountedTerminatedPods` ([`tracking`], [`finalizers`]), even
//! when the controller restarts between two steps or a pod is deleted early. The Job
//! reports `active`, `ready`, `terminating`, `succeeded`, `failed`,
//! `completedIndexes`/`failedIndexes`, `startTime`, `completionTime` and the conditions
//! of [`conditions`], and records events (`SuccessfulCreate`, `SuccessfulDelete`,
//! `Completed`, `BackoffLimitExceeded`, `Suspended`, `Resumed`, ...) as `job-controller`.
//!
//! The parts, as upstream's files: [`sync`] (one sync: `syncJob`, `manageJob`),
//! [`finalizers`] (status writes and finalizer removal), [`indexed`] (completion
//! indexes), [`backoff`], [`pod_failure_policy`], [`success_policy`], [`tracking`]
//! (expectations of finalizer removals), [`conditions`], [`handlers`] (which changes
//! wake which Job), [`orphan`] (the orphan-pod queue) and [`cluster`] (what a sync reads
//! and writes).
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use coxswain_runtime::manager::{Manager, ManagerOptions};
//! let mgr = Manager::try_default(ManagerOptions::default()).await?;
//! mgr.add(coxswain_controllers::job::job_controller(&mgr, 5))?;
//! mgr.start(coxswain_runtime::manager::shutdown_signal()).await?;
//! # Ok(()) }
//! ```

pub mod backoff;
pub mod cluster;
pub mod conditions;
pub mod finalizers;
pub mod handlers;
pub mod indexed;
pub mod orphan;
pub mod pod_failure_policy;
pub mod spec;
pub mod success_policy;
pub mod sync;
pub mod tracking;

#[cfg(test)]
pub(crate) mod testutil;

use crate::clientbuilder::ClusterAccess;
use std::time::Duration;

use futures::future::BoxFuture;
use futures::FutureExt;
use tokio_util::sync::CancellationToken;

use coxswain_runtime::builder::ControllerBuilder;
use coxswain_runtime::controller::{
    Action, Context, Controller, ControllerOptions, ReconcileError, ReconcileResult, Reconciler,
};
use coxswain_runtime::manager::{BoxError, Runnable};
use coxswain_runtime::workqueue::ItemExponentialFailureRateLimiter;
use coxswain_runtime::ObjectKey;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;

use crate::controller_utils::PodControl;
use cluster::LiveCluster;
use handlers::{JobHandler, PodHandler};
use orphan::{OrphanPodKey, OrphanReconciler};
use sync::{JobState, JobSync};

/// Canonical name of the controller.
pub const NAME: &str = "job-controller";
/// The reporting component of its events.
pub const EVENT_COMPONENT: &str = "job-controller";
/// Name (queue, metrics) of the Job queue.
pub const JOB_QUEUE: &str = "job";
/// Name (queue, metrics) of the orphan-pod queue.
pub const ORPHAN_QUEUE: &str = "job_orphan_pod";
/// First retry of a failed sync (upstream `DefaultJobApiBackOff`).
pub const DEFAULT_JOB_API_BACKOFF: Duration = Duration::from_secs(1);
/// Longest retry delay of a failed sync (upstream `MaxJobApiBackOff`).
pub const MAX_JOB_API_BACKOFF: Duration = Duration::from_secs(60);

/// The Job controller's options (upstream `JobControllerConfiguration`).
#[derive(Clone, Debug)]
pub struct JobControllerOptions {
    /// Jobs synced at once, and orphan pods handled at once
    /// (`--concurrent-job-syncs`, 5).
    pub concurrent_job_syncs: usize,
}

impl Default for JobControllerOptions {
    fn default() -> Self {
        JobControllerOptions {
            concurrent_job_syncs: 5,
        }
    }
}

/// The controller's service account with `--use-service-account-credentials`
/// (upstream `ClientOrDie("job-controller")`).
pub const SERVICE_ACCOUNT: &str = "job-controller";

/// The registry entry: `job-controller`, alias `job`.
pub fn descriptor() -> crate::registry::Descriptor {
    crate::registry::Descriptor {
        name: NAME,
        aliases: &["job"],
        disabled_by_default: false,
        constructor: |ctx| {
            let workers = ctx.options.job.concurrent_job_syncs;
            Ok(Some(
                Box::new(job_controller(&ctx.clients(SERVICE_ACCOUNT)?, workers))
                    as Box<dyn Runnable>,
            ))
        },
    }
}

/// Syncs Jobs through [`JobSync`].
pub struct JobReconciler {
    sync: JobSync<LiveCluster>,
}

impl Reconciler for JobReconciler {
    async fn reconcile(&self, _ctx: Context, key: ObjectKey) -> ReconcileResult {
        let out = self.sync.sync(&key).await;
        if let Some(e) = out.error {
            return Err(ReconcileError::msg(format!("syncing job: {e}")));
        }
        Ok(out.requeue_after.map_or(Action::Done, Action::RequeueAfter))
    }
}

/// The Job controller: the Job queue and the orphan-pod queue, each with `workers`
/// workers (kube-controller-manager's `--concurrent-job-syncs`, default 5).
pub struct JobController {
    jobs: Controller<JobReconciler>,
    orphans: Controller<OrphanReconciler, OrphanPodKey>,
}

/// The Job controller of `mgr` (see [`JobController`]).
pub fn job_controller(mgr: &impl ClusterAccess, workers: usize) -> JobController {
    let workers = workers.max(1);
    let cache = mgr.cache();
    let recorder = mgr.event_recorder(EVENT_COMPONENT);
    let state = JobState::default();
    let job_store = cache.informer::<Job>().store().clone();
    let orphan_options = ControllerOptions::<OrphanPodKey>::workers(workers).with_rate_limiter(
        ItemExponentialFailureRateLimiter::new(DEFAULT_JOB_API_BACKOFF, MAX_JOB_API_BACKOFF),
    );
    let orphan_queue =
        Controller::<OrphanReconciler, OrphanPodKey>::new_queue(ORPHAN_QUEUE, &orphan_options);
    let cluster = LiveCluster::new(mgr.client(), recorder.clone());
    let pods = PodControl::new(mgr.client(), recorder);
    let orphans = Controller::with_queue(
        ORPHAN_QUEUE,
        orphan_queue.clone(),
        OrphanReconciler::new(
            cache.clone(),
            job_store.clone(),
            pods,
            mgr.kube_client().clone(),
        ),
        orphan_options,
    );
    let reconciler = JobReconciler {
        sync: JobSync::new(cluster, state.clone()),
    };
    let jobs = ControllerBuilder::new(cache)
        .named(JOB_QUEUE)
        .with_options(ControllerOptions::workers(workers).with_rate_limiter(
            ItemExponentialFailureRateLimiter::new(DEFAULT_JOB_API_BACKOFF, MAX_JOB_API_BACKOFF),
        ))
        .for_with::<Job>(JobHandler::new(&state, orphan_queue.clone()))
        .watches_with::<Pod>(PodHandler::new(&state, job_store, orphan_queue), Vec::new())
        .build(reconciler);
    JobController { jobs, orphans }
}

impl Runnable for JobController {
    fn name(&self) -> String {
        format!("controller {NAME}")
    }

    fn start(
        self: Box<Self>,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, Result<(), BoxError>> {
        async move {
            let JobController { jobs, orphans } = *self;
            tokio::join!(jobs.run(cancel.clone()), orphans.run(cancel));
            Ok(())
        }
        .boxed()
    }
}

#[cfg(test)]
mod descriptor_tests {
    use super::*;

    #[test]
    fn registered_as_upstream_names_it() {
        let d = descriptor();
        assert_eq!(d.name, "job-controller");
        assert_eq!(d.aliases, ["job"]);
        assert!(!d.disabled_by_default);
        assert!(crate::builtin().known().contains(&"job-controller"));
        assert_eq!(JobControllerOptions::default().concurrent_job_syncs, 5);
    }
}
