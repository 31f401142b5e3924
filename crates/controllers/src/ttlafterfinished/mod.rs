//! The TTL-after-finished controller: kube-controller-manager's `ttl-after-finished`
//! controller (upstream `pkg/controller/ttlafterfinished`).
//!
//! A Job with `spec.ttlSecondsAfterFinished` is deleted that many seconds after it
//! finished (the `lastTransitionTime` of its `Complete` or `Failed` condition). A Job
//! whose time has not come is looked at again when it expires (no polling). Before
//! deleting, the Job is read again from the API server (not the cache) and the check
//! repeated, since its TTL may have changed; the delete cascades in the foreground and
//! is conditional on the UID read, as upstream's.
//!
//! Only Job additions and updates wake the controller (a deleted Job needs nothing).
//! The metric `ttl_after_finished_controller_job_deletion_duration_seconds` records how
//! late after expiry each Job was deleted.

use crate::clientbuilder::ClusterAccess;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use coxswain_runtime::builder::ControllerBuilder;
use coxswain_runtime::cache::Store;
use coxswain_runtime::controller::{
    Action, Context, Controller, ControllerOptions, ReconcileError, ReconcileResult, Reconciler,
};
use coxswain_runtime::handler::Funcs;
use coxswain_runtime::ObjectKey;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{DeleteParams, Preconditions, PropagationPolicy};
use kube::Api;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};

use crate::controller_utils::job::is_job_finished;

/// The controller's name (queue, logs).
pub const CONTROLLER_NAME: &str = "ttl_jobs_to_delete";

/// The TTL-after-finished controller's options (upstream
/// `TTLAfterFinishedControllerConfiguration`).
#[derive(Clone, Debug)]
pub struct TtlAfterFinishedControllerOptions {
    /// Workers (`--concurrent-ttl-after-finished-syncs`, 5).
    pub concurrent_ttl_syncs: usize,
}

impl Default for TtlAfterFinishedControllerOptions {
    fn default() -> Self {
        TtlAfterFinishedControllerOptions {
            concurrent_ttl_syncs: 5,
        }
    }
}

/// The controller's service account with `--use-service-account-credentials`
/// (upstream `ClientOrDie("ttl-after-finished-controller")`).
pub const SERVICE_ACCOUNT: &str = "ttl-after-finished-controller";

/// The registry entry: `ttl-after-finished-controller`, alias `ttl-after-finished`.
pub fn descriptor() -> crate::registry::Descriptor {
    crate::registry::Descriptor {
        name: "ttl-after-finished-controller",
        aliases: &["ttl-after-finished"],
        disabled_by_default: false,
        constructor: |ctx| {
            // upstream: a count <= 0 means the default
            let workers = match ctx.options.ttl_after_finished.concurrent_ttl_syncs {
                0 => TtlAfterFinishedControllerOptions::default().concurrent_ttl_syncs,
                n => n,
            };
            Ok(Some(Box::new(ttl_after_finished_controller(
                &ctx.clients(SERVICE_ACCOUNT)?,
                workers,
            ))))
        },
    }
}

/// Whether the Job has a TTL and finished (upstream `needsCleanup`).
pub fn needs_cleanup(job: &Job) -> bool {
    job.spec
        .as_ref()
        .is_some_and(|s| s.ttl_seconds_after_finished.is_some())
        && is_job_finished(job)
}

fn job_key(job: &Job) -> String {
    format!(
        "{}/{}",
        job.metadata.namespace.as_deref().unwrap_or_default(),
        job.metadata.name.as_deref().unwrap_or_default()
    )
}

/// When the Job finished: the `lastTransitionTime` of its first true `Complete` or
/// `Failed` condition (upstream `jobFinishTime`).
pub fn job_finish_time(job: &Job) -> Result<Timestamp, String> {
    let conditions = job
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_deref())
        .unwrap_or_default();
    for c in conditions {
        if (c.type_ == "Complete" || c.type_ == "Failed") && c.status == "True" {
            return match &c.last_transition_time {
                Some(t) => Ok(t.0),
                None => Err(format!(
                    "unable to find the time when the Job {} finished",
                    job_key(job)
                )),
            };
        }
    }
    Err(format!(
        "unable to find the status of the finished Job {}",
        job_key(job)
    ))
}

/// When the Job finished and when it expires (upstream `getFinishAndExpireTime`).
pub fn finish_and_expire_time(job: &Job) -> Result<(Timestamp, Timestamp), String> {
    if !needs_cleanup(job) {
        return Err(format!("job {} should not be cleaned up", job_key(job)));
    }
    let finish = job_finish_time(job)?;
    let ttl = job
        .spec
        .as_ref()
        .and_then(|s| s.ttl_seconds_after_finished)
        .unwrap_or_default();
    let expire = finish
        .checked_add(SignedDuration::from_secs(i64::from(ttl)))
        .unwrap_or(Timestamp::MAX);
    Ok((finish, expire))
}

/// How long the Job has left at `since`, and when it expires (upstream `timeLeft`).
pub fn time_left(job: &Job, since: Timestamp) -> Result<(SignedDuration, Timestamp), String> {
    let (finish, expire) = finish_and_expire_time(job)?;
    if finish > since {
        tracing::info!(job = %job_key(job), "found a Job finished in the future, likely clock skew; its cleanup is deferred");
    }
    Ok((expire.duration_since(since), expire))
}

/// What to do with a Job at `now` (upstream `processTTL`).
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Nothing: being deleted, no TTL or not finished.
    Ignore,
    /// Look again after this long.
    Wait(Duration),
    /// Expired at this time: delete it.
    Expired(Timestamp),
}

/// Decide about `job` at `now`.
pub fn process_ttl(job: &Job, now: Timestamp) -> Result<Verdict, String> {
    if job.metadata.deletion_timestamp.is_some() || !needs_cleanup(job) {
        return Ok(Verdict::Ignore);
    }
    let (left, expire) = time_left(job, now)?;
    if left <= SignedDuration::ZERO {
        return Ok(Verdict::Expired(expire));
    }
    Ok(Verdict::Wait(Duration::try_from(left).unwrap_or_default()))
}

/// `ttl_after_finished_controller_job_deletion_duration_seconds`.
fn deletion_duration() -> &'static Histogram {
    static METRIC: OnceLock<Histogram> = OnceLock::new();
    METRIC.get_or_init(|| {
        let h = Histogram::new(exponential_buckets(0.1, 2.0, 14));
        coxswain_runtime::metrics::global().register(
            "ttl_after_finished_controller_job_deletion_duration_seconds",
            "The time it took to delete the job since it became eligible for deletion",
            h.clone(),
        );
        h
    })
}

/// Finished Jobs with a TTL are enqueued on add and update (upstream `addJob`,
/// `updateJob`).
fn job_handler() -> Funcs<Job> {
    let enqueue = |job: &Job, q: &coxswain_runtime::handler::Requests<'_, ObjectKey>| {
        if job.metadata.deletion_timestamp.is_none() && needs_cleanup(job) {
            q.add(ObjectKey::of(job));
        }
    };
    Funcs::new()
        .on_add(enqueue)
        .on_update(move |_, new, q| enqueue(new, q))
}

/// The TTL-after-finished controller, ready to be added to `mgr`.
pub fn ttl_after_finished_controller(
    mgr: &impl ClusterAccess,
    workers: usize,
) -> Controller<impl Reconciler> {
    let cache = mgr.cache();
    // registered from the start, as upstream's
    deletion_duration();
    let reconciler = TtlReconciler {
        jobs: cache.informer::<Job>().store().clone(),
        client: mgr.kube_client().clone(),
    };
    ControllerBuilder::new(cache)
        .named(CONTROLLER_NAME)
        .with_options(ControllerOptions::workers(workers.max(1)))
        .for_with::<Job>(job_handler())
        .build(reconciler)
}

/// Deletes one Job when its TTL expired (upstream `processJob`).
pub struct TtlReconciler {
    jobs: Arc<Store<Job>>,
    client: kube::Client,
}

/// `Ok(expired at)` to go on deleting, `Err(result)` to stop with this result.
fn verdict_action(v: Result<Verdict, String>) -> Result<Timestamp, ReconcileResult> {
    match v {
        Ok(Verdict::Ignore) => Err(Ok(Action::Done)),
        Ok(Verdict::Wait(d)) => Err(Ok(Action::RequeueAfter(d))),
        Ok(Verdict::Expired(at)) => Ok(at),
        Err(e) => Err(Err(ReconcileError::msg(e))),
    }
}

impl Reconciler for TtlReconciler {
    async fn reconcile(&self, _ctx: Context, key: ObjectKey) -> ReconcileResult {
        let Some(cached) = self.jobs.get(&key) else {
            return Ok(Action::Done);
        };
        if let Err(done) = verdict_action(process_ttl(&cached, Timestamp::now())) {
            return done;
        }
        // the cache may be stale (a TTL changed): decide again on a fresh read
        let api = Api::<Job>::namespaced(self.client.clone(), key.namespace().unwrap_or_default());
        let fresh = match api.get(key.name()).await {
            Ok(j) => j,
            Err(kube::Error::Api(s)) if s.code == 404 => return Ok(Action::Done),
            Err(e) => return Err(ReconcileError::from(e).context("reading the Job")),
        };
        let expired = match verdict_action(process_ttl(&fresh, Timestamp::now())) {
            Err(done) => return done,
            Ok(at) => at,
        };
        let params = DeleteParams {
            propagation_policy: Some(PropagationPolicy::Foreground),
            preconditions: Some(Preconditions {
                uid: fresh.metadata.uid.clone(),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        tracing::debug!(job = %key, "cleaning up a finished Job");
        api.delete(key.name(), &params)
            .await
            .map_err(|e| ReconcileError::from(e).context("deleting the Job"))?;
        let late = Timestamp::now().duration_since(expired);
        deletion_duration().observe(late.as_secs_f64());
        Ok(Action::Done)
    }
}

#[cfg(test)]
mod tests;
