//! The CronJob controller: kube-controller-manager's `cronjob` controller (upstream
//! `pkg/controller/cronjob`, the v2 controller).
//!
//! A CronJob creates a Job from its `jobTemplate` at each time its `schedule` names
//! (standard cron, `@hourly`-style descriptors and `@every`; in `spec.timeZone` or
//! UTC; see [`apimachinery::cron`]). Each sync ([`sync`]):
//!
//! 1. deletes the oldest finished Jobs beyond `successfulJobsHistoryLimit` and
//!    `failedJobsHistoryLimit`;
//! 2. reconciles `status.active` with the Jobs whose controller reference names the
//!    CronJob: finished Jobs leave it (`SawCompletedJob`, `lastSuccessfulTime`), Jobs that
//!    vanished leave it after a live check (`MissingJob`), running Jobs the controller
//!    did not start are reported (`UnexpectedJob`, as `kubectl create job --from=cronjob/x`
//!    does);
//! 3. unless the CronJob is being deleted or suspended, finds the most recent scheduled
//!    time not yet run (only that one: earlier missed runs are dropped; more than a
//!    hundred missed is the `TooManyMissedTimes` warning; `startingDeadlineSeconds`
//!    bounds how far back it looks) and, as `concurrencyPolicy` says (`Allow`,
//!    `Forbid`: not while a Job is active, `Replace`: delete the active ones first),
//!    creates the Job `<cronjob>-<scheduled minutes since the epoch>` with the
//!    `batch.kubernetes.io/cronjob-scheduled-timestamp` annotation, records it in
//!    `status.active` and `status.lastScheduleTime`;
//! 4. asks to run again at the next scheduled time (plus 100 ms): there is no polling.
//!
//! Events are recorded as `cronjob-controller` with upstream's reasons and messages.
//! An update that changes the schedule or the zone wakes the CronJob at its next
//! scheduled time; an unparseable new schedule is reported (`UnParseableCronJobSchedule`)
//! and waits for the next change.

pub mod metrics;
pub mod sync;
pub mod utils;

#[cfg(test)]
mod sync_tests;

use crate::clientbuilder::ClusterAccess;
use std::sync::Arc;
use std::time::Duration;

use coxswain_runtime::builder::ControllerBuilder;
use coxswain_runtime::cache::Store;
use coxswain_runtime::client::Client;
use coxswain_runtime::controller::{
    Action, Context, Controller, ControllerOptions, ReconcileError, ReconcileResult, Reconciler,
};
use coxswain_runtime::controllerutil::get_controller_of;
use coxswain_runtime::events::{object_reference, EventRecorder};
use coxswain_runtime::handler::{Funcs, Requests};
use coxswain_runtime::ObjectKey;
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{DeleteParams, PostParams};
use kube::Api;

use crate::controller_utils::consistency::ConsistencyStore;
use sync::{cleanup_finished_jobs, jobs_to_be_reconciled, sync_cron_job, CronJobControl};
use utils::{format_schedule, next_schedule_time_duration, spec, CronEvent};

/// The controller's name (queue, logs, metrics).
pub const CONTROLLER_NAME: &str = "cronjob";
/// The reporting component of its events.
pub const EVENT_SOURCE: &str = "cronjob-controller";

/// The CronJob controller's options (upstream `CronJobControllerConfiguration`).
#[derive(Clone, Debug)]
pub struct CronJobControllerOptions {
    /// CronJobs synced at once (`--concurrent-cron-job-syncs`, 5).
    pub concurrent_cron_job_syncs: usize,
}

impl Default for CronJobControllerOptions {
    fn default() -> Self {
        CronJobControllerOptions {
            concurrent_cron_job_syncs: 5,
        }
    }
}

/// The controller's service account with `--use-service-account-credentials`
/// (upstream `ClientOrDie("cronjob-controller")`).
pub const SERVICE_ACCOUNT: &str = "cronjob-controller";

/// The registry entry: `cronjob-controller`, alias `cronjob`.
pub fn descriptor() -> crate::registry::Descriptor {
    crate::registry::Descriptor {
        name: "cronjob-controller",
        aliases: &["cronjob"],
        disabled_by_default: false,
        constructor: |ctx| {
            // upstream: 0 means the default
            let workers = match ctx.options.cronjob.concurrent_cron_job_syncs {
                0 => CronJobControllerOptions::default().concurrent_cron_job_syncs,
                n => n,
            };
            Ok(Some(Box::new(cronjob_controller(
                &ctx.clients(SERVICE_ACCOUNT)?,
                workers,
            ))))
        },
    }
}

/// A requeue delay as the queue takes it (a due run: at once).
fn delay(d: SignedDuration) -> Duration {
    Duration::try_from(d).unwrap_or(Duration::ZERO)
}

/// The CronJob a Job's controller reference points to, if it exists with that UID
/// (upstream `resolveControllerRef`).
fn resolve_controller_ref(
    cronjobs: &Arc<Store<CronJob>>,
    namespace: Option<&str>,
    r: &OwnerReference,
) -> Option<ObjectKey> {
    if r.kind != "CronJob" {
        return None;
    }
    let key = ObjectKey::from_parts(namespace, &r.name);
    let cj = cronjobs.get(&key)?;
    (cj.metadata.uid.as_deref() == Some(r.uid.as_str())).then_some(key)
}

fn enqueue_owner(cronjobs: &Arc<Store<CronJob>>, job: &Job, q: &Requests<'_, ObjectKey>) {
    if let Some(r) = get_controller_of(&job.metadata) {
        if let Some(key) = resolve_controller_ref(cronjobs, job.metadata.namespace.as_deref(), r) {
            q.add(key);
        }
    }
}

/// Job changes wake their controlling CronJob (upstream `addJob`, `updateJob`,
/// `deleteJob`).
fn job_handler(cronjobs: Arc<Store<CronJob>>) -> Funcs<Job> {
    let (on_add, on_update, on_delete) = (cronjobs.clone(), cronjobs.clone(), cronjobs);
    Funcs::new()
        .on_add(move |job, q| enqueue_owner(&on_add, job, q))
        .on_update(move |old, new, q| {
            if old.metadata.resource_version == new.metadata.resource_version {
                return;
            }
            let (old_ref, new_ref) = (
                get_controller_of(&old.metadata),
                get_controller_of(&new.metadata),
            );
            if old_ref != new_ref && old_ref.is_some() {
                enqueue_owner(&on_update, old, q);
            }
            enqueue_owner(&on_update, new, q);
        })
        .on_delete(move |job, q| enqueue_owner(&on_delete, job, q))
}

/// What an update of a CronJob asks for (upstream `updateCronJob`).
#[derive(Debug, PartialEq, Eq)]
pub enum UpdateAction {
    /// Sync it now (a change other than the schedule or the zone).
    Now,
    /// Sync it at its next scheduled time, this long from now (the schedule or the
    /// zone changed).
    After(SignedDuration),
    /// The new schedule does not parse: report it (`UnParseableCronJobSchedule`, with
    /// this message) and wait for the next change.
    Unparseable(String),
}

/// Upstream `updateCronJob`'s decision at `now`.
pub fn update_action(old: &CronJob, new: &CronJob, now: Timestamp) -> UpdateAction {
    let (o, n) = (spec(old), spec(new));
    if o.schedule == n.schedule && o.time_zone == n.time_zone {
        return UpdateAction::Now;
    }
    match apimachinery::cron::parse_standard(&format_schedule(new, None)) {
        Ok(sched) => UpdateAction::After(next_schedule_time_duration(new, now, &sched)),
        Err(e) => {
            tracing::debug!(cronjob = ?new.metadata.name, error = %e, "unparseable schedule");
            UpdateAction::Unparseable(format!("unparseable schedule for cronjob: {}", n.schedule))
        }
    }
}

/// CronJob changes (upstream `addCronJob`, `updateCronJob`, `deleteCronJob`): a new
/// schedule or zone wakes the CronJob at its next scheduled time, any other change at
/// once.
fn cronjob_handler(recorder: EventRecorder) -> Funcs<CronJob> {
    Funcs::new()
        .on_add(|cj, q| q.add(ObjectKey::of(cj)))
        .on_delete(|cj, q| q.add(ObjectKey::of(cj)))
        .on_update(
            move |old, new, q| match update_action(old, new, Timestamp::now()) {
                UpdateAction::Now => q.add(ObjectKey::of(new)),
                UpdateAction::After(d) => q.add_after(ObjectKey::of(new), delay(d)),
                UpdateAction::Unparseable(message) => recorder.event(
                    &object_reference(new),
                    None,
                    coxswain_runtime::events::EventType::Warning,
                    "UnParseableCronJobSchedule",
                    "Sync",
                    &message,
                ),
            },
        )
}

/// The CronJob controller, ready to be added to `mgr`: reconciles CronJobs with
/// `workers` workers, woken by their Jobs and at their scheduled times.
pub fn cronjob_controller(mgr: &impl ClusterAccess, workers: usize) -> Controller<impl Reconciler> {
    let cache = mgr.cache();
    let cronjobs = cache.informer::<CronJob>().store().clone();
    let jobs = cache.informer::<Job>().store().clone();
    let recorder = mgr.event_recorder(EVENT_SOURCE);
    // registered from the start, as upstream's
    metrics::job_creation_skew();
    let reconciler = CronJobReconciler {
        cronjobs: cronjobs.clone(),
        jobs,
        client: mgr.client(),
        control: LiveControl {
            client: mgr.kube_client().clone(),
        },
        recorder: recorder.clone(),
        consistency: ConsistencyStore::default(),
    };
    ControllerBuilder::new(cache)
        .named(CONTROLLER_NAME)
        .with_options(ControllerOptions::workers(workers.max(1)))
        .for_with::<CronJob>(cronjob_handler(recorder))
        .watches_with::<Job>(job_handler(cronjobs), Vec::new())
        .build(reconciler)
}

/// The API calls against the server (upstream `realJobControl`, `realCJControl`).
#[derive(Clone)]
pub struct LiveControl {
    client: kube::Client,
}

impl CronJobControl for LiveControl {
    async fn get_cron_job(&self, namespace: &str, name: &str) -> Result<CronJob, kube::Error> {
        Api::<CronJob>::namespaced(self.client.clone(), namespace)
            .get(name)
            .await
    }

    async fn get_job(&self, namespace: &str, name: &str) -> Result<Job, kube::Error> {
        Api::<Job>::namespaced(self.client.clone(), namespace)
            .get(name)
            .await
    }

    async fn create_job(&self, namespace: &str, job: &Job) -> Result<Job, kube::Error> {
        Api::<Job>::namespaced(self.client.clone(), namespace)
            .create(&PostParams::default(), job)
            .await
    }

    async fn delete_job(&self, namespace: &str, name: &str) -> Result<(), kube::Error> {
        Api::<Job>::namespaced(self.client.clone(), namespace)
            .delete(name, &DeleteParams::background())
            .await
            .map(|_| ())
    }
}

/// Reconciles one CronJob (upstream `ControllerV2.sync`).
pub struct CronJobReconciler<C = LiveControl> {
    cronjobs: Arc<Store<CronJob>>,
    jobs: Arc<Store<Job>>,
    client: Client,
    control: C,
    recorder: EventRecorder,
    consistency: ConsistencyStore,
}

impl<C: CronJobControl + 'static> Reconciler for CronJobReconciler<C> {
    async fn reconcile(&self, _ctx: Context, key: ObjectKey) -> ReconcileResult {
        let Some(cj) = self.cronjobs.get(&key) else {
            self.consistency.clear(&key);
            return Ok(Action::Done);
        };
        // the cache has not caught up with this controller's own last status write: a
        // sync now would decide on a status it has itself replaced (a Job it started
        // but not yet seen in `active`, its time not yet in `lastScheduleTime`) and
        // could start that scheduled time again once the Job is gone (deleted by the
        // history limit). The write's watch event syncs it again. (Upstream 1.36 does
        // this for DaemonSets and others; its CronJob controller has the race.)
        if !self.consistency.is_ready(
            &key,
            cj.metadata.uid.as_deref().unwrap_or_default(),
            cj.metadata.resource_version.as_deref(),
        ) {
            tracing::debug!(cronjob = %key, "the cache lags the last status write: not ready");
            return Ok(Action::Done);
        }
        let namespace = cj.metadata.namespace.clone().unwrap_or_default();
        let all = self.jobs.list_namespace(&namespace);
        let jobs = jobs_to_be_reconciled(&cj, all.iter().map(|j| j.as_ref()));
        let mut copy = (*cj).clone();
        let mut events: Vec<CronEvent> = Vec::new();
        let cleaned = cleanup_finished_jobs(&mut copy, &jobs, &self.control, &mut events).await;
        let outcome = sync_cron_job(
            &mut copy,
            &jobs,
            Timestamp::now(),
            &self.control,
            &mut events,
        )
        .await;
        for e in &events {
            self.recorder.event(
                &object_reference(&*cj),
                None,
                e.type_,
                e.reason,
                "Sync",
                &e.message,
            );
        }
        tracing::debug!(cronjob = %key, rv = ?cj.metadata.resource_version, cleaned, update = outcome.update_status, status = ?copy.status, events = ?events.iter().map(|e| e.reason).collect::<Vec<_>>(), "synced");
        if let Some(err) = &outcome.error {
            tracing::warn!(cronjob = %key, error = %err, "syncing the cronjob");
        }
        if cleaned || outcome.update_status {
            let written = self
                .client
                .update_status(&copy)
                .await
                .map_err(|e| ReconcileError::from(e).context("updating the cronjob status"))?;
            self.consistency.wrote_at(
                &key,
                written.metadata.uid.as_deref().unwrap_or_default(),
                written.metadata.resource_version.as_deref(),
            );
        }
        match (outcome.requeue_after, outcome.error) {
            (Some(d), _) => Ok(Action::RequeueAfter(delay(d))),
            (None, Some(e)) => Err(ReconcileError::from(e)),
            (None, None) => Ok(Action::Done),
        }
    }
}
