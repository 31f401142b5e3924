//! The CronJob controller's pure helpers (upstream `pkg/controller/cronjob/utils.go`):
//! when a CronJob should have run last, when it runs next, the Job it creates for a
//! scheduled time, and the order in which finished Jobs are cleaned up.
//!
//! Times are instants (`jiff::Timestamp`); a schedule without a zone is read in UTC
//! (upstream reads it in kube-controller-manager's local zone, UTC on every usual
//! deployment).

use std::cmp::Ordering;
use std::collections::BTreeMap;

use apimachinery::cron::{is_zero, parse_standard, zero_time, Schedule};
use apimachinery::tz::{load_location, Location};
use coxswain_runtime::controllerutil::new_controller_ref;
use coxswain_runtime::events::EventType;
use k8s_openapi::api::batch::v1::{CronJob, CronJobSpec, CronJobStatus, Job};
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::jiff::{SignedDuration, Timestamp};

/// The annotation with the time a Job was scheduled for (RFC 3339 in the CronJob's
/// zone), `batchv1.CronJobScheduledTimestampAnnotation`.
pub const SCHEDULED_TIMESTAMP_ANNOTATION: &str = "batch.kubernetes.io/cronjob-scheduled-timestamp";

/// Added to every requeue delay so that the wake-up lands after the scheduled second
/// (upstream `nextScheduleDelta`).
pub const NEXT_SCHEDULE_DELTA: SignedDuration = SignedDuration::from_millis(100);

/// An event the sync wants recorded about the CronJob.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CronEvent {
    /// Normal or Warning.
    pub type_: EventType,
    /// Upstream's reason (`SuccessfulCreate`, `UnexpectedJob`, ...).
    pub reason: &'static str,
    /// Upstream's message.
    pub message: String,
}

impl CronEvent {
    /// A Normal event.
    pub fn normal(reason: &'static str, message: String) -> Self {
        CronEvent {
            type_: EventType::Normal,
            reason,
            message,
        }
    }

    /// A Warning event.
    pub fn warning(reason: &'static str, message: String) -> Self {
        CronEvent {
            type_: EventType::Warning,
            reason,
            message,
        }
    }
}

/// How many schedules were missed since the last one run (upstream
/// `missedSchedulesType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Missed {
    /// None.
    None,
    /// One to a hundred.
    Few,
    /// More than a hundred: the `TooManyMissedTimes` warning.
    Many,
}

/// The spec.
pub fn spec(cj: &CronJob) -> &CronJobSpec {
    &cj.spec
}

/// The status, created if missing.
pub fn status_mut(cj: &mut CronJob) -> &mut CronJobStatus {
    cj.status.get_or_insert_with(CronJobStatus::default)
}

/// The active Jobs of the status.
pub fn active(cj: &CronJob) -> &[ObjectReference] {
    cj.status
        .as_ref()
        .and_then(|s| s.active.as_deref())
        .unwrap_or_default()
}

/// `status.lastScheduleTime`.
pub fn last_schedule_time(cj: &CronJob) -> Option<Timestamp> {
    cj.status.as_ref()?.last_schedule_time.as_ref().map(|t| t.0)
}

/// Whether a Job with this UID is in `status.active`.
pub fn in_active_list(cj: &CronJob, uid: &str) -> bool {
    active(cj).iter().any(|r| r.uid.as_deref() == Some(uid))
}

/// Whether a Job with this namespace and name is in `status.active`.
pub fn in_active_list_by_name(cj: &CronJob, namespace: &str, name: &str) -> bool {
    active(cj)
        .iter()
        .any(|r| r.name.as_deref() == Some(name) && r.namespace.as_deref() == Some(namespace))
}

/// Remove the Job with this UID from `status.active`.
pub fn delete_from_active_list(cj: &mut CronJob, uid: &str) {
    if let Some(active) = cj.status.as_mut().and_then(|s| s.active.as_mut()) {
        active.retain(|r| r.uid.as_deref() != Some(uid));
    }
}

/// The schedule the controller parses (upstream `formatSchedule`): a schedule naming
/// `TZ` itself is used as it is (with an `UnsupportedSchedule` warning when `events`
/// is given), else `spec.timeZone` becomes a `TZ=` prefix when it loads.
pub fn format_schedule(cj: &CronJob, events: Option<&mut Vec<CronEvent>>) -> String {
    let s = spec(cj);
    if s.schedule.contains("TZ") {
        if let Some(events) = events {
            events.push(CronEvent::warning(
                "UnsupportedSchedule",
                format!(
                    "CRON_TZ or TZ used in schedule {} is not officially supported, see https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for more details",
                    apimachinery::gofmt::quote(&s.schedule)
                ),
            ));
        }
        return s.schedule.clone();
    }
    match &s.time_zone {
        Some(tz) if load_location(tz).is_ok() => format!("TZ={tz} {}", s.schedule),
        _ => s.schedule.clone(),
    }
}

/// Parse the CronJob's schedule as the controller does.
pub fn parse_schedule(
    cj: &CronJob,
    events: Option<&mut Vec<CronEvent>>,
) -> Result<Schedule, String> {
    parse_standard(&format_schedule(cj, events))
}

fn creation(cj: &CronJob) -> Timestamp {
    cj.metadata
        .creation_timestamp
        .as_ref()
        .map(|t| t.0)
        .unwrap_or_else(zero_time)
}

fn nanos(d: i128) -> SignedDuration {
    let clamped = d.clamp(i128::from(i64::MIN), i128::from(i64::MAX));
    SignedDuration::from_nanos(clamped as i64)
}

fn add(t: Timestamp, d: SignedDuration) -> Timestamp {
    t.checked_add(d).unwrap_or(if d.is_negative() {
        Timestamp::MIN
    } else {
        Timestamp::MAX
    })
}

/// Go's `Duration` between two times (saturating at about 292 years), in nanoseconds.
fn sub(a: Timestamp, b: Timestamp) -> i128 {
    let d = a.as_nanosecond() - b.as_nanosecond();
    d.clamp(i128::from(i64::MIN), i128::from(i64::MAX))
}

/// The most recent time the CronJob should have run at or before `now`, with the
/// earliest time considered and how many runs were missed (upstream
/// `mostRecentScheduleTime`). It approximates the count instead of walking every
/// missed run, and may find no time although runs were missed on irregular schedules
/// (as upstream). Errors when two consecutive runs are less than a second apart (a
/// schedule that never fires).
pub fn most_recent_schedule_time(
    cj: &CronJob,
    now: Timestamp,
    sched: &Schedule,
    include_starting_deadline: bool,
) -> Result<(Timestamp, Option<Timestamp>, Missed), String> {
    let mut earliest = last_schedule_time(cj).unwrap_or_else(|| creation(cj));
    if include_starting_deadline {
        if let Some(sds) = spec(cj).starting_deadline_seconds {
            let deadline = add(now, nanos(-i128::from(sds) * 1_000_000_000));
            if deadline > earliest {
                earliest = deadline;
            }
        }
    }
    let t1 = sched.next(earliest);
    let t2 = sched.next(t1);
    if now < t1 {
        return Ok((earliest, None, Missed::None));
    }
    if now < t2 {
        return Ok((earliest, Some(t1), Missed::None));
    }
    // the seconds between two runs, rounded half away from zero
    let gap = sub(t2, t1);
    let between = (gap + gap.signum() * 500_000_000) / 1_000_000_000;
    if between < 1 {
        return Err("time difference between two schedules is less than 1 second".to_string());
    }
    let elapsed = sub(now, t1) / 1_000_000_000;
    let missed_count = elapsed / between + 1;
    let potential_earliest = add(t1, nanos((missed_count - 2) * between * 1_000_000_000));
    let mut most_recent = None;
    let mut t = sched.next(potential_earliest);
    while t <= now && !is_zero(t) {
        most_recent = Some(t);
        t = sched.next(t);
    }
    let missed = if missed_count > 100 {
        Missed::Many
    } else if missed_count > 0 {
        Missed::Few
    } else {
        Missed::None
    };
    Ok((earliest, most_recent, missed))
}

/// The most recent unmet scheduled time, if any (upstream `nextScheduleTime`): the
/// starting deadline bounds how far back it looks; more than a hundred missed runs add
/// the `TooManyMissedTimes` warning.
pub fn next_schedule_time(
    cj: &CronJob,
    now: Timestamp,
    sched: &Schedule,
    events: &mut Vec<CronEvent>,
) -> Result<Option<Timestamp>, String> {
    let (_, most_recent, missed) = most_recent_schedule_time(cj, now, sched, true)?;
    let Some(t) = most_recent.filter(|t| *t <= now) else {
        return Ok(None);
    };
    if missed == Missed::Many {
        events.push(CronEvent::warning(
            "TooManyMissedTimes",
            "too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew".to_string(),
        ));
    }
    Ok(Some(t))
}

/// How long until the next run, plus [`NEXT_SCHEDULE_DELTA`] (upstream
/// `nextScheduleTimeDuration`); negative when a run is already due.
pub fn next_schedule_time_duration(
    cj: &CronJob,
    now: Timestamp,
    sched: &Schedule,
) -> SignedDuration {
    let base = match most_recent_schedule_time(cj, now, sched, false) {
        Err(_) => now,
        Ok((_, Some(t), _)) => t,
        Ok((earliest, None, Missed::None)) => earliest,
        Ok((_, None, _)) => now,
    };
    let next = add(sched.next(base), NEXT_SCHEDULE_DELTA);
    nanos(sub(next, now))
}

/// `<cronjob>-<minutes since the epoch of the scheduled time>` (upstream `getJobName`).
pub fn get_job_name(cj: &CronJob, scheduled: Timestamp) -> String {
    let name = cj.metadata.name.as_deref().unwrap_or_default();
    // Go's Unix() floors; its integer division truncates
    let secs = scheduled.as_second() - i64::from(scheduled.subsec_nanosecond() < 0);
    format!("{name}-{}", secs / 60)
}

/// The Job the CronJob creates for `scheduled` (upstream `getJobFromTemplate2`): the
/// template's labels, annotations and spec, the deterministic name, the
/// scheduled-timestamp annotation in the CronJob's zone, and a controller reference.
pub fn get_job_from_template(cj: &CronJob, scheduled: Timestamp) -> Result<Job, String> {
    let s = spec(cj);
    let template_meta = s.job_template.metadata.as_ref();
    let labels: BTreeMap<String, String> = template_meta
        .and_then(|m| m.labels.clone())
        .unwrap_or_default();
    let mut annotations: BTreeMap<String, String> = template_meta
        .and_then(|m| m.annotations.clone())
        .unwrap_or_default();
    let zone: Location = load_location(s.time_zone.as_deref().unwrap_or(""))?;
    annotations.insert(
        SCHEDULED_TIMESTAMP_ANNOTATION.to_string(),
        zone.format_rfc3339(scheduled),
    );
    Ok(Job {
        metadata: ObjectMeta {
            name: Some(get_job_name(cj, scheduled)),
            namespace: cj.metadata.namespace.clone(),
            labels: (!labels.is_empty()).then_some(labels),
            annotations: Some(annotations),
            owner_references: Some(vec![new_controller_ref(cj)]),
            ..ObjectMeta::default()
        },
        spec: s.job_template.spec.clone(),
        status: None,
    })
}

/// Upstream `byJobStartTime`: Jobs with a start time first, earliest first; ties and
/// Jobs without one by name.
pub fn by_job_start_time(a: &Job, b: &Job) -> Ordering {
    let start = |j: &Job| {
        j.status
            .as_ref()
            .and_then(|s| s.start_time.as_ref())
            .map(|t| t.0)
    };
    let name = |j: &Job| j.metadata.name.clone().unwrap_or_default();
    match (start(a), start(b)) {
        (Some(x), Some(y)) if x != y => x.cmp(&y),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        _ => name(a).cmp(&name(b)),
    }
}

#[cfg(test)]
#[path = "utils_tests.rs"]
mod tests;
