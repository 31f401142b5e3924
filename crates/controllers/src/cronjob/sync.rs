//! One sync of a CronJob (upstream `ControllerV2.sync`, `syncCronJob`,
//! `cleanupFinishedJobs`): reconcile `status.active` with the Jobs that exist, clean up
//! finished Jobs beyond the history limits, and start the Job of the most recent unmet
//! scheduled time when the concurrency policy allows it.
//!
//! The API calls go through [`CronJobControl`] (upstream's `jobControlInterface` and
//! `cjControlInterface`) so that the decision is tested against a fake, as upstream
//! tests it; the events are collected and recorded by the caller.

use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::{SignedDuration, Timestamp};

use coxswain_runtime::controllerutil::{get_controller_of, is_controlled_by};
use coxswain_runtime::events::object_reference;

use super::utils::*;
use crate::controller_utils::job::{finished_condition, is_job_finished, is_job_succeeded};

/// What a sync could not do.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// A request to the API server failed.
    #[error(transparent)]
    Kube(#[from] kube::Error),
    /// Something else.
    #[error("{0}")]
    Other(String),
}

/// The API calls of a sync (live reads, not the cache).
pub trait CronJobControl: Send + Sync {
    /// GET the CronJob from the server.
    fn get_cron_job(
        &self,
        namespace: &str,
        name: &str,
    ) -> impl std::future::Future<Output = Result<CronJob, kube::Error>> + Send;
    /// GET a Job from the server.
    fn get_job(
        &self,
        namespace: &str,
        name: &str,
    ) -> impl std::future::Future<Output = Result<Job, kube::Error>> + Send;
    /// POST a Job.
    fn create_job(
        &self,
        namespace: &str,
        job: &Job,
    ) -> impl std::future::Future<Output = Result<Job, kube::Error>> + Send;
    /// DELETE a Job with background propagation.
    fn delete_job(
        &self,
        namespace: &str,
        name: &str,
    ) -> impl std::future::Future<Output = Result<(), kube::Error>> + Send;
}

/// What [`sync_cron_job`] decided.
#[derive(Debug, Default)]
pub struct SyncOutcome {
    /// Sync again after this long (the next scheduled time); `None`: only on a change.
    pub requeue_after: Option<SignedDuration>,
    /// The status changed and must be written.
    pub update_status: bool,
    /// What failed, if anything.
    pub error: Option<SyncError>,
}

impl SyncOutcome {
    fn stop(update_status: bool, error: Option<SyncError>) -> Self {
        SyncOutcome {
            requeue_after: None,
            update_status,
            error,
        }
    }

    fn requeue(after: SignedDuration, update_status: bool) -> Self {
        SyncOutcome {
            requeue_after: Some(after),
            update_status,
            error: None,
        }
    }
}

/// The Jobs of the CronJob among `jobs` (its namespace's): those whose controller
/// reference names it. Upstream compares the name only (neither kind nor UID).
pub fn jobs_to_be_reconciled<'a>(
    cj: &CronJob,
    jobs: impl IntoIterator<Item = &'a Job>,
) -> Vec<&'a Job> {
    let name = cj.metadata.name.as_deref().unwrap_or_default();
    jobs.into_iter()
        .filter(|j| get_controller_of(&j.metadata).is_some_and(|r| r.name == name))
        .collect()
}

fn namespace(cj: &CronJob) -> &str {
    cj.metadata.namespace.as_deref().unwrap_or_default()
}

fn job_name(j: &Job) -> &str {
    j.metadata.name.as_deref().unwrap_or_default()
}

/// The message of an API error as Go prints a `StatusError` (`%v`).
pub fn error_text(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(s) => s.message.clone(),
        other => other.to_string(),
    }
}

fn is_not_found(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 404)
}

fn is_already_exists(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 409 && s.reason == "AlreadyExists")
}

fn namespace_terminating(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s
        .details
        .as_ref()
        .is_some_and(|d| d.causes.iter().any(|c| c.reason == "NamespaceTerminating")))
}

/// Delete a Job and drop it from `status.active` (upstream `deleteJob`); whether it
/// was deleted.
pub async fn delete_job(
    cj: &mut CronJob,
    job: &Job,
    control: &impl CronJobControl,
    events: &mut Vec<CronEvent>,
) -> bool {
    let ns = job.metadata.namespace.as_deref().unwrap_or_default();
    if let Err(e) = control.delete_job(ns, job_name(job)).await {
        events.push(CronEvent::warning(
            "FailedDelete",
            format!("Deleted job: {}", error_text(&e)),
        ));
        tracing::warn!(job = job_name(job), error = %e, "deleting a job of a cronjob");
        return false;
    }
    delete_from_active_list(cj, job.metadata.uid.as_deref().unwrap_or_default());
    events.push(CronEvent::normal(
        "SuccessfulDelete",
        format!("Deleted job {}", job_name(job)),
    ));
    true
}

/// Delete the oldest finished Jobs beyond the history limits (upstream
/// `cleanupFinishedJobs`); whether the status changed.
pub async fn cleanup_finished_jobs(
    cj: &mut CronJob,
    jobs: &[&Job],
    control: &impl CronJobControl,
    events: &mut Vec<CronEvent>,
) -> bool {
    let s = spec(cj);
    let (successful_limit, failed_limit) =
        (s.successful_jobs_history_limit, s.failed_jobs_history_limit);
    if successful_limit.is_none() && failed_limit.is_none() {
        return false;
    }
    let mut successful = Vec::new();
    let mut failed = Vec::new();
    for j in jobs {
        match finished_condition(j).map(|c| c.type_.as_str()) {
            Some("Complete") => successful.push(*j),
            Some("Failed") => failed.push(*j),
            _ => {}
        }
    }
    let mut update = false;
    for (mut list, limit) in [(successful, successful_limit), (failed, failed_limit)] {
        let Some(limit) = limit else { continue };
        let to_delete = list.len() as i64 - i64::from(limit);
        if to_delete <= 0 {
            continue;
        }
        list.sort_by(|a, b| by_job_start_time(a, b));
        for j in list.into_iter().take(to_delete as usize) {
            if delete_job(cj, j, control, events).await {
                update = true;
            }
        }
    }
    update
}

/// Upstream `syncCronJob`: reconcile the active list with `jobs`, then decide whether
/// to start the Job of the most recent unmet scheduled time, at `now`.
pub async fn sync_cron_job(
    cj: &mut CronJob,
    jobs: &[&Job],
    now: Timestamp,
    control: &impl CronJobControl,
    events: &mut Vec<CronEvent>,
) -> SyncOutcome {
    let mut update_status = false;
    let mut children = std::collections::HashSet::new();

    // A. the Jobs against status.active
    for j in jobs {
        let uid = j.metadata.uid.as_deref().unwrap_or_default();
        children.insert(uid.to_string());
        let found = in_active_list(cj, uid);
        if !found && !is_job_finished(j) {
            let fresh = match control
                .get_cron_job(
                    namespace(cj),
                    cj.metadata.name.as_deref().unwrap_or_default(),
                )
                .await
            {
                Ok(c) => c,
                Err(e) => return SyncOutcome::stop(update_status, Some(e.into())),
            };
            if in_active_list(&fresh, uid) {
                // the cache lags: go on with the server's copy. Upstream swaps a local
                // pointer only, so what it writes back is the cache's copy without the
                // changes made after this point; here the fresh copy (with its newer
                // resourceVersion) is what gets written, changes included.
                *cj = fresh;
                continue;
            }
            events.push(CronEvent::warning(
                "UnexpectedJob",
                format!(
                    "Saw a job that the controller did not create or forgot: {}",
                    job_name(j)
                ),
            ));
        } else if is_job_finished(j) {
            if found {
                let condition = finished_condition(j)
                    .map(|c| c.type_.clone())
                    .unwrap_or_default();
                delete_from_active_list(cj, uid);
                events.push(CronEvent::normal(
                    "SawCompletedJob",
                    format!("Saw completed job: {}, condition: {condition}", job_name(j)),
                ));
                update_status = true;
            }
            if is_job_succeeded(j) {
                let completion = j.status.as_ref().and_then(|s| s.completion_time.clone());
                let status = status_mut(cj);
                if status.last_successful_time.is_none() {
                    status.last_successful_time = completion.clone();
                    update_status = true;
                }
                if let Some(c) = completion {
                    if status
                        .last_successful_time
                        .as_ref()
                        .is_none_or(|last| c.0 > last.0)
                    {
                        status.last_successful_time = Some(c);
                        update_status = true;
                    }
                }
            }
        }
    }

    // B. active entries whose Job is gone
    let vanished: Vec<_> = active(cj)
        .iter()
        .filter(|r| !children.contains(r.uid.as_deref().unwrap_or_default()))
        .cloned()
        .collect();
    for r in vanished {
        let (ns, name) = (
            r.namespace.as_deref().unwrap_or_default(),
            r.name.as_deref().unwrap_or_default(),
        );
        // a Job of that name with another UID is another Job: this one is gone too
        // (upstream looks at the name only, and keeps naming a replaced Job forever)
        let live = match control.get_job(ns, name).await {
            Ok(j) if j.metadata.uid.is_some() && j.metadata.uid != r.uid => Err(None),
            Ok(_) => Ok(()),
            Err(e) if is_not_found(&e) => Err(None),
            Err(e) => Err(Some(e)),
        };
        match live {
            Err(None) => {
                events.push(CronEvent::normal(
                    "MissingJob",
                    format!("Active job went missing: {name}"),
                ));
                delete_from_active_list(cj, r.uid.as_deref().unwrap_or_default());
                update_status = true;
            }
            Err(Some(e)) => return SyncOutcome::stop(update_status, Some(e.into())),
            // the cache lags behind the server
            Ok(()) => {}
        }
    }

    // C. being deleted: nothing but the status
    if cj.metadata.deletion_timestamp.is_some() {
        return SyncOutcome::stop(update_status, None);
    }

    // D. a zone that does not load
    if let Some(tz) = &spec(cj).time_zone {
        if let Err(e) = apimachinery::tz::load_location(tz) {
            events.push(CronEvent::warning(
                "UnknownTimeZone",
                format!("invalid timeZone: {}: {e}", apimachinery::gofmt::quote(tz)),
            ));
            return SyncOutcome::stop(update_status, None);
        }
    }

    // E. suspended
    if spec(cj).suspend == Some(true) {
        return SyncOutcome::stop(update_status, None);
    }

    // F. the schedule
    let sched = match parse_schedule(cj, Some(events)) {
        Ok(s) => s,
        Err(e) => {
            events.push(CronEvent::warning(
                "UnparseableSchedule",
                format!(
                    "unparseable schedule: {} : {e}",
                    apimachinery::gofmt::quote(&spec(cj).schedule)
                ),
            ));
            return SyncOutcome::stop(update_status, None);
        }
    };

    // G. the most recent unmet time
    let scheduled = match next_schedule_time(cj, now, &sched, events) {
        Ok(Some(t)) => t,
        Ok(None) => {
            return SyncOutcome::requeue(
                next_schedule_time_duration(cj, now, &sched),
                update_status,
            )
        }
        Err(e) => {
            events.push(CronEvent::warning(
                "InvalidSchedule",
                format!("invalid schedule: {} : {e}", spec(cj).schedule),
            ));
            return SyncOutcome::stop(update_status, None);
        }
    };

    // H. too late to start it
    if let Some(sds) = spec(cj).starting_deadline_seconds {
        let deadline = scheduled
            .checked_add(SignedDuration::from_secs(sds))
            .unwrap_or(Timestamp::MAX);
        if deadline < now {
            events.push(CronEvent::warning(
                "MissSchedule",
                format!(
                    "Missed scheduled time to start a job: {}",
                    rfc1123z(scheduled)
                ),
            ));
            return SyncOutcome::requeue(
                next_schedule_time_duration(cj, now, &sched),
                update_status,
            );
        }
    }

    // I. already started
    let name = get_job_name(cj, scheduled);
    if in_active_list_by_name(cj, namespace(cj), &name) || last_schedule_time(cj) == Some(scheduled)
    {
        return SyncOutcome::requeue(next_schedule_time_duration(cj, now, &sched), update_status);
    }

    // I'. the Job of this time exists (listed at the start of this sync, though the
    // history limit may have deleted it since): a process that created it crashed before
    // recording it. Record it instead of running the time again (not upstream, which
    // creates the Job again once the history limit deleted the finished one).
    if let Some(ran) = jobs
        .iter()
        .find(|j| job_name(j) == name && is_controlled_by(**j, cj))
    {
        let finished = is_job_finished(ran);
        let status = status_mut(cj);
        if !finished {
            status
                .active
                .get_or_insert_with(Vec::new)
                .push(object_reference(*ran));
        }
        status.last_schedule_time = Some(Time(scheduled));
        return SyncOutcome::requeue(next_schedule_time_duration(cj, now, &sched), true);
    }

    // J. Forbid
    let policy = spec(cj).concurrency_policy.clone().unwrap_or_default();
    if policy == "Forbid" && !active(cj).is_empty() {
        events.push(CronEvent::normal(
            "JobAlreadyActive",
            "Not starting job because prior execution is running and concurrency policy is Forbid"
                .to_string(),
        ));
        return SyncOutcome::requeue(next_schedule_time_duration(cj, now, &sched), update_status);
    }

    // K. Replace
    if policy == "Replace" {
        for r in active(cj).to_vec() {
            let (ns, n) = (
                r.namespace.as_deref().unwrap_or_default(),
                r.name.as_deref().unwrap_or_default(),
            );
            let job = match control.get_job(ns, n).await {
                Ok(j) => j,
                Err(e) => {
                    events.push(CronEvent::warning(
                        "FailedGet",
                        format!("Get job: {}", error_text(&e)),
                    ));
                    return SyncOutcome::stop(update_status, Some(e.into()));
                }
            };
            if !delete_job(cj, &job, control, events).await {
                let err =
                    SyncError::Other(format!("could not replace job {ns}/{}", job_name(&job)));
                return SyncOutcome::stop(update_status, Some(err));
            }
            update_status = true;
        }
    }

    // L0. the cache may lag behind the server (a restart on a lagging API server, a
    // status write of this controller not yet seen): before starting the scheduled time,
    // check on the server that it is still unmet, or it would run twice once its Job is
    // gone (deleted by the history limit). Not upstream, whose CronJob controller trusts
    // its cache here; a Job creation is rare, one read each costs little.
    match control
        .get_cron_job(
            namespace(cj),
            cj.metadata.name.as_deref().unwrap_or_default(),
        )
        .await
    {
        Ok(fresh) if fresh.metadata.uid != cj.metadata.uid => {
            return SyncOutcome::stop(false, None);
        }
        Ok(fresh) => {
            let started = in_active_list_by_name(&fresh, namespace(cj), &name)
                || last_schedule_time(&fresh).is_some_and(|t| t >= scheduled);
            if started {
                // the status here is stale: writing it would conflict; sync again later
                return SyncOutcome::stop(
                    false,
                    Some(SyncError::Other(format!(
                        "the cache lags: the job of {} is already started",
                        rfc1123z(scheduled)
                    ))),
                );
            }
        }
        Err(e) => return SyncOutcome::stop(update_status, Some(e.into())),
    }

    // L. create the Job
    let request = match get_job_from_template(cj, scheduled) {
        Ok(j) => j,
        Err(e) => return SyncOutcome::stop(update_status, Some(SyncError::Other(e))),
    };
    let created = match control.create_job(namespace(cj), &request).await {
        Ok(job) => {
            observe_creation_skew(&job, scheduled);
            events.push(CronEvent::normal(
                "SuccessfulCreate",
                format!("Created job {}", job_name(&job)),
            ));
            job
        }
        Err(e) if namespace_terminating(&e) => {
            return SyncOutcome::stop(update_status, Some(e.into()));
        }
        Err(e) if is_already_exists(&e) => {
            // created before, by us (the status update failed) or by someone else
            let existing = match control.get_job(namespace(cj), &name).await {
                Ok(j) => j,
                Err(e) => return SyncOutcome::stop(update_status, Some(e.into())),
            };
            if !is_controlled_by(&existing, cj) {
                return SyncOutcome::stop(update_status, None);
            }
            if in_active_list(cj, existing.metadata.uid.as_deref().unwrap_or_default()) {
                return SyncOutcome::stop(update_status, None);
            }
            existing
        }
        Err(e) => {
            events.push(CronEvent::warning(
                "FailedCreate",
                format!("Error creating job: {}", error_text(&e)),
            ));
            return SyncOutcome::stop(update_status, Some(e.into()));
        }
    };

    // M. remember it
    let status = status_mut(cj);
    status
        .active
        .get_or_insert_with(Vec::new)
        .push(object_reference(&created));
    status.last_schedule_time = Some(Time(scheduled));
    SyncOutcome::requeue(next_schedule_time_duration(cj, now, &sched), true)
}

/// Go's `t.UTC().Format(time.RFC1123Z)`: `Mon, 02 Jan 2006 15:04:05 -0700`.
fn rfc1123z(t: Timestamp) -> String {
    t.strftime("%a, %d %b %Y %H:%M:%S +0000").to_string()
}

/// `cronjob_controller_cronjob_job_creation_skew_duration_seconds`: how late after its
/// scheduled time a Job was created.
fn observe_creation_skew(job: &Job, scheduled: Timestamp) {
    if let Some(created) = &job.metadata.creation_timestamp {
        let skew = created.0.as_second() - scheduled.as_second();
        super::metrics::job_creation_skew().observe(skew as f64);
    }
}
