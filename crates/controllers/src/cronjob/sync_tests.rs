//! Upstream `pkg/controller/cronjob/cronjob_controllerv2_test.go`, ported against a fake
//! [`CronJobControl`]: TestControllerV2SyncCronJob (the table), TestControllerV2GetJobsToBeReconciled,
//! TestControllerV2CleanupFinishedJobs, TestControllerV2JobAlreadyExistsButNotInActiveStatus and
//! TestControllerV2JobAlreadyExistsButDifferentOwner. All times are on 2016-05-19 (a
//! Thursday), UTC.

use std::sync::Mutex;

use k8s_openapi::api::batch::v1::{
    CronJob, CronJobSpec, CronJobStatus, Job, JobCondition, JobSpec, JobStatus, JobTemplateSpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use k8s_openapi::jiff::{SignedDuration, Timestamp};

use coxswain_runtime::events::{object_reference, EventType};

use super::sync::*;
use super::utils::*;

fn t(s: &str) -> Timestamp {
    s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
}

fn at(hms: &str) -> Timestamp {
    t(&format!("2016-05-19T{hms}Z"))
}

const MIN: i64 = 60;
const HOUR: i64 = 3600;

fn plus(base: Timestamp, d: SignedDuration) -> Timestamp {
    base.checked_add(d).unwrap()
}

fn secs(s: i64) -> SignedDuration {
    SignedDuration::from_secs(s)
}

fn status_error(code: u16, reason: &str, message: &str) -> kube::Error {
    kube::Error::Api(
        kube::core::Status::failure(message, reason)
            .with_code(code)
            .boxed(),
    )
}

/// Records what the sync asked of the API server.
#[derive(Default)]
struct FakeControl {
    /// What GET cronjob returns.
    cron_job: Option<CronJob>,
    /// What GET job returns (any name).
    job: Option<Job>,
    get_job_error: Option<(u16, &'static str)>,
    create_error: Option<kube::Error>,
    created: Mutex<Vec<Job>>,
    deleted: Mutex<Vec<String>>,
}

fn clone_error(e: &kube::Error) -> kube::Error {
    match e {
        kube::Error::Api(s) => kube::Error::Api(s.clone()),
        other => panic!("unexpected error {other}"),
    }
}

impl CronJobControl for FakeControl {
    async fn get_cron_job(&self, _: &str, name: &str) -> Result<CronJob, kube::Error> {
        self.cron_job
            .clone()
            .ok_or_else(|| status_error(404, "NotFound", &format!("cronjobs {name:?} not found")))
    }

    async fn get_job(&self, _: &str, name: &str) -> Result<Job, kube::Error> {
        if let Some((code, reason)) = self.get_job_error {
            return Err(status_error(code, reason, "bad request"));
        }
        self.job
            .clone()
            .ok_or_else(|| status_error(404, "NotFound", &format!("jobs {name:?} not found")))
    }

    async fn create_job(&self, namespace: &str, job: &Job) -> Result<Job, kube::Error> {
        if let Some(e) = &self.create_error {
            return Err(clone_error(e));
        }
        let mut job = job.clone();
        job.metadata.namespace = Some(namespace.into());
        job.metadata.uid = Some(format!("uid-{}", self.created.lock().unwrap().len()));
        self.created.lock().unwrap().push(job.clone());
        Ok(job)
    }

    async fn delete_job(&self, _: &str, name: &str) -> Result<(), kube::Error> {
        self.deleted.lock().unwrap().push(name.into());
        Ok(())
    }
}

fn cronjob(schedule: &str, policy: &str) -> CronJob {
    CronJob {
        metadata: ObjectMeta {
            name: Some("mycronjob".into()),
            namespace: Some("snazzycats".into()),
            uid: Some("1a2b3c".into()),
            creation_timestamp: Some(Time(at("09:59:00"))),
            ..Default::default()
        },
        spec: CronJobSpec {
            schedule: schedule.into(),
            concurrency_policy: Some(policy.into()),
            job_template: JobTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some([("a".to_string(), "b".to_string())].into()),
                    annotations: Some([("x".to_string(), "y".to_string())].into()),
                    ..Default::default()
                }),
                spec: Some(JobSpec {
                    parallelism: Some(1),
                    completions: Some(1),
                    ..Default::default()
                }),
            },
            ..Default::default()
        },
        status: None,
    }
}

fn complete(job: &mut Job, at: Timestamp) {
    job.status = Some(JobStatus {
        completion_time: Some(Time(at)),
        conditions: Some(vec![JobCondition {
            type_: "Complete".into(),
            status: "True".into(),
            ..Default::default()
        }]),
        ..Default::default()
    });
}

const ON_THE_HOUR: &str = "0 * * * ?";
const EVERY_HOUR: &str = "@every 1h";
const ERROR_SCHEDULE: &str = "obvious error schedule";
const NEW_YORK: &str = "America/New_York";
const SHORT: Option<i64> = Some(10);
const MEDIUM: Option<i64> = Some(7200);
const LONG: Option<i64> = Some(1_000_000);

#[derive(Clone)]
struct Row {
    name: &'static str,
    policy: &'static str,
    suspend: bool,
    schedule: &'static str,
    time_zone: Option<&'static str>,
    deadline: Option<i64>,
    ran: bool,
    still_active: bool,
    in_active_status: bool,
    not_in_lister: bool,
    cj_created: Option<Timestamp>,
    job_created: Option<Timestamp>,
    last_schedule: Option<Timestamp>,
    now: Timestamp,
    create_error: Option<(u16, &'static str)>,
    get_job_error: Option<(u16, &'static str)>,
    namespace_terminating: bool,
    // expectations
    create: usize,
    delete: usize,
    warnings: usize,
    requeue: Option<SignedDuration>,
    update: bool,
    error: bool,
}

const ROW: Row = Row {
    name: "",
    policy: "Allow",
    suspend: false,
    schedule: ON_THE_HOUR,
    time_zone: None,
    deadline: None,
    ran: false,
    still_active: false,
    in_active_status: true,
    not_in_lister: false,
    cj_created: None,
    job_created: None,
    last_schedule: None,
    now: Timestamp::UNIX_EPOCH,
    create_error: None,
    get_job_error: None,
    namespace_terminating: false,
    create: 0,
    delete: 0,
    warnings: 0,
    requeue: None,
    update: false,
    error: false,
};

fn after(d: SignedDuration) -> Option<SignedDuration> {
    Some(d + NEXT_SCHEDULE_DELTA)
}

fn rows() -> Vec<Row> {
    let before_hour = at("09:59:00");
    let after_hour = at("10:01:00");
    let top = at("10:00:00");
    let before_prior = at("08:59:00");
    let after_prior = at("09:01:00");
    let week_after = t("2016-05-26T10:00:00Z");
    let min1 = after(secs(MIN));
    let min59 = after(secs(59 * MIN));
    let hour1 = after(secs(HOUR));
    let mut rows = Vec::new();
    for policy in ["Allow", "Forbid", "Replace"] {
        let p = Row { policy, ..ROW };
        rows.extend([
            Row {
                name: "never ran, not valid schedule",
                schedule: ERROR_SCHEDULE,
                now: before_hour,
                warnings: 1,
                ..p.clone()
            },
            Row {
                name: "never ran, not time",
                now: before_hour,
                requeue: min1,
                ..p.clone()
            },
            Row {
                name: "never ran, is time",
                now: after_hour,
                create: 1,
                requeue: min59,
                update: true,
                ..p.clone()
            },
            Row {
                name: "prev ran but done, not time",
                ran: true,
                now: before_hour,
                requeue: min1,
                update: true,
                ..p.clone()
            },
            Row {
                name: "prev ran but done, is time",
                ran: true,
                now: after_hour,
                create: 1,
                requeue: min59,
                update: true,
                ..p.clone()
            },
            Row {
                name: "still active, not time",
                ran: true,
                still_active: true,
                now: before_hour,
                requeue: min1,
                ..p.clone()
            },
            Row {
                name: "prev ran but done, long overdue, not past deadline",
                ran: true,
                deadline: LONG,
                now: week_after,
                create: 1,
                warnings: 1,
                requeue: hour1,
                update: true,
                ..p.clone()
            },
            Row {
                name: "prev ran but done, long overdue, no deadline",
                ran: true,
                now: week_after,
                create: 1,
                warnings: 1,
                requeue: hour1,
                update: true,
                ..p.clone()
            },
            Row {
                name: "prev ran but done, long overdue, past medium deadline",
                ran: true,
                deadline: MEDIUM,
                now: week_after,
                create: 1,
                requeue: hour1,
                update: true,
                ..p.clone()
            },
            Row {
                name: "prev ran but done, long overdue, past short deadline",
                ran: true,
                deadline: SHORT,
                now: week_after,
                create: 1,
                requeue: hour1,
                update: true,
                ..p.clone()
            },
            Row {
                name: "this started but went missing, not past deadline",
                ran: true,
                still_active: true,
                not_in_lister: true,
                deadline: LONG,
                job_created: Some(plus(top, SignedDuration::from_millis(100))),
                last_schedule: Some(top),
                now: plus(after_hour, SignedDuration::from_millis(100)),
                requeue: after(secs(59 * MIN) - SignedDuration::from_millis(100)),
                ..p.clone()
            },
            Row {
                name: "this started but is not present in cronjob active list, not past deadline",
                ran: true,
                still_active: true,
                in_active_status: false,
                deadline: LONG,
                job_created: Some(plus(top, SignedDuration::from_millis(100))),
                last_schedule: Some(top),
                now: plus(after_hour, SignedDuration::from_millis(100)),
                requeue: after(secs(59 * MIN) - SignedDuration::from_millis(100)),
                ..p.clone()
            },
        ]);
    }
    let a = ROW;
    rows.extend([
        Row {
            name: "never ran, not valid time zone",
            time_zone: Some("bad timezone"),
            now: before_hour,
            warnings: 1,
            ..a.clone()
        },
        Row {
            name: "never ran, not time in zone",
            time_zone: Some(NEW_YORK),
            now: before_hour,
            requeue: min1,
            ..a.clone()
        },
        Row {
            name: "never ran, is time in zone",
            time_zone: Some(NEW_YORK),
            now: after_hour,
            create: 1,
            requeue: min59,
            update: true,
            ..a.clone()
        },
        Row {
            name: "never ran, is time in zone, but TZ is also set in schedule",
            schedule: "TZ=UTC 0 * * * ?",
            time_zone: Some(NEW_YORK),
            now: after_hour,
            create: 1,
            warnings: 1,
            requeue: min59,
            update: true,
            ..a.clone()
        },
        Row {
            name: "never ran, is time, suspended",
            suspend: true,
            now: after_hour,
            ..a.clone()
        },
        Row {
            name: "never ran, is time, past deadline",
            deadline: SHORT,
            now: plus(top, secs(12 * MIN)),
            requeue: after(secs(48 * MIN)),
            ..a.clone()
        },
        Row {
            name: "never ran, is time, not past deadline",
            deadline: LONG,
            now: after_hour,
            create: 1,
            requeue: min59,
            update: true,
            ..a.clone()
        },
        Row {
            name: "prev ran but done, is time, create job failed",
            ran: true,
            now: after_hour,
            create_error: Some((409, "AlreadyExists")),
            update: true,
            requeue: min59,
            ..a.clone()
        },
        Row {
            name: "prev ran but done, is time, suspended",
            ran: true,
            suspend: true,
            now: after_hour,
            update: true,
            ..a.clone()
        },
        Row {
            name: "prev ran but done, is time, past deadline",
            ran: true,
            deadline: SHORT,
            now: after_hour,
            requeue: min59,
            update: true,
            ..a.clone()
        },
        Row {
            name: "prev ran but done, is time, not past deadline",
            ran: true,
            deadline: LONG,
            now: after_hour,
            create: 1,
            requeue: min59,
            update: true,
            ..a.clone()
        },
        Row {
            name: "still active, is time, A",
            ran: true,
            still_active: true,
            now: after_hour,
            create: 1,
            requeue: min59,
            update: true,
            ..a.clone()
        },
        Row {
            name: "still active, is time, F",
            policy: "Forbid",
            ran: true,
            still_active: true,
            now: after_hour,
            requeue: min59,
            ..a.clone()
        },
        Row {
            name: "still active, is time, R",
            policy: "Replace",
            ran: true,
            still_active: true,
            now: after_hour,
            create: 1,
            delete: 1,
            requeue: min59,
            update: true,
            ..a.clone()
        },
        Row {
            name: "still active, is time, get job failed, R",
            policy: "Replace",
            ran: true,
            still_active: true,
            now: after_hour,
            get_job_error: Some((400, "BadRequest")),
            warnings: 1,
            error: true,
            ..a.clone()
        },
        Row {
            name: "still active, is time, suspended",
            ran: true,
            still_active: true,
            suspend: true,
            now: after_hour,
            ..a.clone()
        },
        Row {
            name: "still active, is time, past deadline",
            ran: true,
            still_active: true,
            deadline: SHORT,
            now: after_hour,
            requeue: min59,
            ..a.clone()
        },
        Row {
            name: "still active, is time, not past deadline",
            ran: true,
            still_active: true,
            deadline: LONG,
            now: after_hour,
            create: 1,
            requeue: min59,
            update: true,
            ..a.clone()
        },
        Row {
            name: "this ran but done, time drifted back, F",
            policy: "Forbid",
            ran: true,
            job_created: Some(after_hour),
            now: before_hour,
            create_error: Some((409, "AlreadyExists")),
            requeue: min1,
            update: true,
            ..a.clone()
        },
        // @every
        Row {
            name: "@every, never ran, not time",
            schedule: EVERY_HOUR,
            now: top,
            requeue: min59,
            ..a.clone()
        },
        Row {
            name: "@every, never ran, is time",
            schedule: EVERY_HOUR,
            cj_created: Some(before_prior),
            now: before_hour,
            create: 1,
            requeue: hour1,
            update: true,
            ..a.clone()
        },
        Row {
            name: "@every, never ran, is time, past deadline",
            schedule: EVERY_HOUR,
            deadline: SHORT,
            cj_created: Some(before_prior),
            now: plus(before_hour, secs(11)),
            requeue: after(secs(HOUR - 11)),
            ..a.clone()
        },
        Row {
            name: "@every, never ran, is time, not past deadline",
            schedule: EVERY_HOUR,
            deadline: LONG,
            cj_created: Some(before_prior),
            now: plus(before_hour, secs(9)),
            create: 1,
            requeue: after(secs(HOUR - 9)),
            update: true,
            ..a.clone()
        },
        Row {
            name: "@every, prev ran but done, not time",
            schedule: EVERY_HOUR,
            ran: true,
            cj_created: Some(before_prior),
            job_created: Some(before_hour),
            last_schedule: Some(before_hour),
            now: top,
            requeue: min59,
            update: true,
            ..a.clone()
        },
        Row {
            name: "@every, prev ran but done, is time",
            schedule: EVERY_HOUR,
            ran: true,
            cj_created: Some(before_prior),
            job_created: Some(before_hour),
            last_schedule: Some(before_hour),
            now: plus(top, secs(HOUR)),
            create: 1,
            requeue: min59,
            update: true,
            ..a.clone()
        },
        Row {
            name: "@every, prev ran but done, is time, past deadline",
            schedule: EVERY_HOUR,
            ran: true,
            deadline: SHORT,
            cj_created: Some(before_prior),
            job_created: Some(before_hour),
            last_schedule: Some(before_hour),
            now: plus(top, secs(59 * MIN + 11)),
            requeue: after(secs(HOUR - 11)),
            update: true,
            ..a.clone()
        },
        Row {
            name: "@every, still active, not time",
            schedule: EVERY_HOUR,
            ran: true,
            still_active: true,
            cj_created: Some(before_prior),
            job_created: Some(before_hour),
            last_schedule: Some(before_hour),
            now: top,
            requeue: min59,
            ..a.clone()
        },
        Row {
            name: "@every, still active, is time",
            schedule: EVERY_HOUR,
            ran: true,
            still_active: true,
            cj_created: Some(before_prior),
            job_created: Some(before_prior),
            last_schedule: Some(before_prior),
            now: after_hour,
            create: 1,
            requeue: after(secs(58 * MIN)),
            update: true,
            ..a.clone()
        },
        Row {
            name: "@every, still active, is time, past deadline",
            schedule: EVERY_HOUR,
            ran: true,
            still_active: true,
            deadline: SHORT,
            cj_created: Some(before_prior),
            job_created: Some(before_hour),
            last_schedule: Some(before_hour),
            now: plus(top, secs(59 * MIN + 11)),
            requeue: after(secs(HOUR - 11)),
            ..a.clone()
        },
        Row {
            name: "@every, still active, is time, not past deadline",
            schedule: EVERY_HOUR,
            ran: true,
            still_active: true,
            deadline: LONG,
            cj_created: Some(before_prior),
            job_created: Some(before_hour),
            last_schedule: Some(before_hour),
            now: plus(top, secs(59 * MIN + 9)),
            create: 1,
            requeue: after(secs(HOUR - 9)),
            update: true,
            ..a.clone()
        },
        Row {
            name: "@every, prev ran but done, long overdue, no deadline",
            schedule: EVERY_HOUR,
            ran: true,
            cj_created: Some(after_prior),
            job_created: Some(after_hour),
            last_schedule: Some(after_hour),
            now: week_after,
            create: 1,
            warnings: 1,
            requeue: min1,
            update: true,
            ..a.clone()
        },
        Row {
            name: "@every, prev ran but done, long overdue, past deadline",
            schedule: EVERY_HOUR,
            ran: true,
            deadline: SHORT,
            cj_created: Some(after_prior),
            job_created: Some(after_hour),
            last_schedule: Some(after_hour),
            now: plus(week_after, secs(MIN + 11)),
            requeue: after(secs(HOUR - 11)),
            update: true,
            ..a.clone()
        },
        Row {
            name: "do nothing if the namespace is terminating",
            ran: true,
            still_active: true,
            in_active_status: false,
            now: after_hour,
            namespace_terminating: true,
            error: true,
            ..a.clone()
        },
    ]);
    rows
}

struct Setup {
    cj: CronJob,
    jobs: Vec<Job>,
    control: FakeControl,
    success_at: Option<Timestamp>,
}

fn setup(r: &Row) -> Setup {
    let mut cj = cronjob(r.schedule, r.policy);
    cj.spec.suspend = Some(r.suspend);
    cj.spec.time_zone = r.time_zone.map(String::from);
    cj.spec.starting_deadline_seconds = r.deadline;
    let mut control = FakeControl {
        get_job_error: r.get_job_error,
        ..Default::default()
    };
    let mut jobs = Vec::new();
    let mut success_at = None;
    if r.ran {
        cj.metadata.creation_timestamp = Some(Time(r.cj_created.unwrap_or(at("08:59:00"))));
        cj.status = Some(CronJobStatus {
            last_schedule_time: Some(Time(r.last_schedule.unwrap_or(at("09:01:00")))),
            ..Default::default()
        });
        let created = r.job_created.unwrap_or(at("09:01:00"));
        let mut job = get_job_from_template(&cj, created).unwrap();
        job.metadata.uid = Some("1234".into());
        job.metadata.creation_timestamp = Some(Time(created));
        if r.still_active {
            let mut api = cj.clone();
            api.status.as_mut().unwrap().active = Some(vec![object_reference(&job)]);
            if r.in_active_status {
                cj = api.clone();
            }
            control.cron_job = Some(api);
            if !r.not_in_lister {
                jobs.push(job.clone());
            }
        } else {
            let done = plus(created, secs(10));
            complete(&mut job, done);
            success_at = Some(done);
            jobs.push(job.clone());
        }
        control.job = Some(job);
    } else {
        cj.metadata.creation_timestamp = Some(Time(r.cj_created.unwrap_or(at("09:59:00"))));
    }
    // the API server's copy is the cache's unless the row says otherwise (the
    // controller reads it before creating a Job)
    if control.cron_job.is_none() {
        control.cron_job = Some(cj.clone());
    }
    control.create_error = r
        .create_error
        .map(|(c, reason)| status_error(c, reason, "error"));
    if r.namespace_terminating {
        let mut s =
            kube::core::Status::failure("namespace is terminating", "Forbidden").with_code(403);
        s.details = Some(kube::core::response::StatusDetails {
            causes: vec![kube::core::response::StatusCause {
                reason: "NamespaceTerminating".into(),
                message: "namespace snazzycats is being terminated".into(),
                field: "metadata.namespace".into(),
            }],
            name: "snazzycats".into(),
            group: String::new(),
            kind: "namespaces".into(),
            uid: String::new(),
            retry_after_seconds: 0,
        });
        control.create_error = Some(kube::Error::Api(s.boxed()));
    }
    Setup {
        cj,
        jobs,
        control,
        success_at,
    }
}

#[tokio::test]
async fn sync_cron_job_table() {
    for r in rows() {
        let name = format!("{} ({})", r.name, r.policy);
        let Setup {
            mut cj,
            jobs,
            control,
            success_at,
        } = setup(&r);
        let refs: Vec<&Job> = jobs.iter().collect();
        let mut events = Vec::new();
        let out = sync_cron_job(&mut cj, &refs, r.now, &control, &mut events).await;
        let created = control.created.lock().unwrap().clone();
        let deleted = control.deleted.lock().unwrap().clone();
        assert_eq!(created.len(), r.create, "{name}: created {created:?}");
        assert_eq!(deleted.len(), r.delete, "{name}: deleted");
        let warnings: Vec<_> = events
            .iter()
            .filter(|e| e.type_ == EventType::Warning)
            .collect();
        assert_eq!(warnings.len(), r.warnings, "{name}: warnings {warnings:?}");
        let creates = events
            .iter()
            .filter(|e| e.reason == "SuccessfulCreate")
            .count();
        assert_eq!(creates, r.create, "{name}: create events");
        let deletes = events
            .iter()
            .filter(|e| e.reason == "SuccessfulDelete")
            .count();
        assert_eq!(deletes, r.delete, "{name}: delete events");
        let already = events
            .iter()
            .filter(|e| e.reason == "JobAlreadyActive")
            .count();
        assert_eq!(
            already,
            usize::from(r.name == "still active, is time, F"),
            "{name}: JobAlreadyActive"
        );
        assert_eq!(out.requeue_after, r.requeue, "{name}: requeue");
        assert_eq!(out.update_status, r.update, "{name}: update status");
        assert_eq!(
            out.error.is_some(),
            r.error,
            "{name}: error {:?}",
            out.error
        );
        if let Some(at) = success_at {
            let last = cj
                .status
                .as_ref()
                .and_then(|s| s.last_successful_time.as_ref());
            assert_eq!(last.map(|t| t.0), Some(at), "{name}: lastSuccessfulTime");
        }
        for job in &created {
            // the Job made for the scheduled time is the active one and the last scheduled
            let stamp = &job.metadata.annotations.as_ref().unwrap()[SCHEDULED_TIMESTAMP_ANNOTATION];
            let scheduled = cj
                .status
                .as_ref()
                .unwrap()
                .last_schedule_time
                .as_ref()
                .unwrap()
                .0;
            assert_eq!(
                job.metadata.name,
                Some(get_job_name(&cj, scheduled)),
                "{name}"
            );
            assert!(
                in_active_list(&cj, job.metadata.uid.as_deref().unwrap()),
                "{name}"
            );
            let zone = apimachinery::tz::load_location(r.time_zone.unwrap_or("")).unwrap();
            assert_eq!(*stamp, zone.format_rfc3339(scheduled), "{name}");
        }
    }
}

#[tokio::test]
async fn unexpected_job_is_reported_not_adopted() {
    // a Job naming the CronJob as controller that it did not create (kubectl create job --from)
    let mut cj = cronjob(ON_THE_HOUR, "Allow");
    cj.status = Some(CronJobStatus {
        last_schedule_time: Some(Time(at("10:00:00"))),
        ..Default::default()
    });
    let mut job = get_job_from_template(&cj, at("10:00:30")).unwrap();
    job.metadata.name = Some("manual".into());
    job.metadata.uid = Some("m".into());
    let control = FakeControl {
        cron_job: Some(cj.clone()),
        ..Default::default()
    };
    let mut events = Vec::new();
    let out = sync_cron_job(&mut cj, &[&job], at("10:01:00"), &control, &mut events).await;
    assert_eq!(
        events,
        [CronEvent::warning(
            "UnexpectedJob",
            "Saw a job that the controller did not create or forgot: manual".into()
        )]
    );
    assert!(active(&cj).is_empty());
    assert!(!out.update_status);
}

#[tokio::test]
async fn missing_active_job_leaves_the_list() {
    let mut cj = cronjob(ON_THE_HOUR, "Allow");
    let mut job = get_job_from_template(&cj, at("10:00:00")).unwrap();
    job.metadata.uid = Some("gone".into());
    cj.status = Some(CronJobStatus {
        last_schedule_time: Some(Time(at("10:00:00"))),
        active: Some(vec![object_reference(&job)]),
        ..Default::default()
    });
    let control = FakeControl::default();
    let mut events = Vec::new();
    let out = sync_cron_job(&mut cj, &[], at("10:01:00"), &control, &mut events).await;
    let name = job.metadata.name.unwrap();
    assert_eq!(
        events,
        [CronEvent::normal(
            "MissingJob",
            format!("Active job went missing: {name}")
        )]
    );
    assert!(active(&cj).is_empty());
    assert!(out.update_status);
}

#[tokio::test]
async fn completed_active_job_leaves_the_list() {
    let mut cj = cronjob(ON_THE_HOUR, "Allow");
    let mut job = get_job_from_template(&cj, at("10:00:00")).unwrap();
    job.metadata.uid = Some("j".into());
    cj.status = Some(CronJobStatus {
        last_schedule_time: Some(Time(at("10:00:00"))),
        active: Some(vec![object_reference(&job)]),
        ..Default::default()
    });
    complete(&mut job, at("10:00:20"));
    let control = FakeControl::default();
    let mut events = Vec::new();
    let out = sync_cron_job(&mut cj, &[&job], at("10:01:00"), &control, &mut events).await;
    let name = job.metadata.name.clone().unwrap();
    assert_eq!(
        events,
        [CronEvent::normal(
            "SawCompletedJob",
            format!("Saw completed job: {name}, condition: Complete")
        )]
    );
    assert!(active(&cj).is_empty());
    assert_eq!(
        cj.status.unwrap().last_successful_time.map(|t| t.0),
        Some(at("10:00:20"))
    );
    assert!(out.update_status);
}

fn owned_job(namespace: &str, name: &str, owner: Option<&str>, controller: bool) -> Job {
    Job {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(namespace.into()),
            owner_references: owner.map(|o| {
                vec![OwnerReference {
                    api_version: "batch/v1".into(),
                    kind: "CronJob".into(),
                    name: o.into(),
                    uid: "u".into(),
                    controller: Some(controller),
                    ..Default::default()
                }]
            }),
            ..Default::default()
        },
        ..Default::default()
    }
}

#[test]
fn get_jobs_to_be_reconciled() {
    // TestControllerV2GetJobsToBeReconciled (the namespace is the lister's business here)
    let mut cj = cronjob(ON_THE_HOUR, "Allow");
    cj.metadata.name = Some("fooer".into());
    let names = |jobs: &[Job]| {
        jobs_to_be_reconciled(&cj, jobs)
            .into_iter()
            .map(|j| j.metadata.name.clone().unwrap())
            .collect::<Vec<_>>()
    };
    let none = [
        owned_job("foo-ns", "a", None, false),
        owned_job("foo-ns", "b", None, false),
    ];
    assert!(names(&none).is_empty());
    let mixed = [
        owned_job("foo-ns", "a", None, false),
        owned_job("foo-ns", "b", Some("fooer"), true),
        owned_job("foo-ns", "c", Some("fooer"), false),
    ];
    assert_eq!(names(&mixed), ["b"]);
    let other = [owned_job("foo-ns", "a", Some("another-cronjob"), true)];
    assert!(names(&other).is_empty());
}

#[tokio::test]
async fn cleanup_finished_jobs_beyond_the_limit() {
    // TestControllerV2CleanupFinishedJobs: cleanup is not blocked by a failed create
    let mut cj = cronjob(ON_THE_HOUR, "Allow");
    cj.spec.successful_jobs_history_limit = Some(1);
    cj.status = Some(CronJobStatus {
        last_schedule_time: Some(Time(at("09:01:00"))),
        ..Default::default()
    });
    let finished = |name: &str, start: &str| {
        let mut j = owned_job("snazzycats", name, Some("mycronjob"), true);
        j.metadata.uid = Some(name.into());
        complete(&mut j, at(start));
        j.status.as_mut().unwrap().start_time = Some(Time(at(start)));
        j
    };
    let jobs = [
        finished("finished-job-started-hour-ago", "08:59:00"),
        finished("finished-job-started-minute-ago", "09:59:00"),
    ];
    let refs: Vec<&Job> = jobs.iter().collect();
    let control = FakeControl {
        create_error: Some(status_error(
            500,
            "InternalError",
            "quota for # of jobs reached",
        )),
        ..Default::default()
    };
    let mut events = Vec::new();
    assert!(cleanup_finished_jobs(&mut cj, &refs, &control, &mut events).await);
    let out = sync_cron_job(&mut cj, &refs, at("10:01:00"), &control, &mut events).await;
    assert!(out.error.is_some());
    assert_eq!(
        *control.deleted.lock().unwrap(),
        ["finished-job-started-hour-ago"]
    );

    // limit 2, one finished Job: nothing to delete
    let mut cj = cronjob(ON_THE_HOUR, "Allow");
    cj.spec.successful_jobs_history_limit = Some(2);
    let control = FakeControl::default();
    assert!(!cleanup_finished_jobs(&mut cj, &refs[..1], &control, &mut events).await);
    assert!(control.deleted.lock().unwrap().is_empty());

    // failed Jobs have their own limit, 0 keeps none
    let mut cj = cronjob(ON_THE_HOUR, "Allow");
    cj.spec.failed_jobs_history_limit = Some(0);
    let mut failed = owned_job("snazzycats", "failed", Some("mycronjob"), true);
    failed.status = Some(JobStatus {
        conditions: Some(vec![JobCondition {
            type_: "Failed".into(),
            status: "True".into(),
            ..Default::default()
        }]),
        ..Default::default()
    });
    let control = FakeControl::default();
    let all = [&failed, refs[0]];
    assert!(cleanup_finished_jobs(&mut cj, &all, &control, &mut events).await);
    assert_eq!(*control.deleted.lock().unwrap(), ["failed"]);
}

async fn already_exists(owned: bool) -> (CronJob, SyncOutcome, Job) {
    let mut cj = cronjob(EVERY_HOUR, "Forbid");
    cj.metadata.creation_timestamp = Some(Time(at("08:59:00")));
    cj.status = Some(CronJobStatus {
        last_schedule_time: Some(Time(at("08:59:00"))),
        active: Some(vec![]),
        ..Default::default()
    });
    let mut job = get_job_from_template(&cj, at("09:01:00")).unwrap();
    job.metadata.uid = Some("1234".into());
    if !owned {
        job.metadata.owner_references = None;
    }
    let control = FakeControl {
        cron_job: Some(cj.clone()),
        job: Some(job.clone()),
        create_error: Some(status_error(409, "AlreadyExists", "already exists")),
        ..Default::default()
    };
    let mut events = Vec::new();
    let out = sync_cron_job(&mut cj, &[], at("09:59:00"), &control, &mut events).await;
    (cj, out, job)
}

#[tokio::test]
async fn job_already_exists_but_not_in_active_status() {
    let (cj, out, job) = already_exists(true).await;
    assert!(out.update_status);
    assert_eq!(active(&cj), [object_reference(&job)]);
}

#[tokio::test]
async fn job_already_exists_but_different_owner() {
    let (cj, out, _) = already_exists(false).await;
    assert!(!out.update_status);
    assert!(out.requeue_after.is_none());
    assert!(active(&cj).is_empty());
}

#[test]
fn update_cron_job() {
    // TestControllerV2UpdateCronJob (now 09:59:59)
    use super::{update_action, UpdateAction};
    let now = at("09:59:59");
    let with = |schedule: &str, tz: Option<&str>, label: &str| {
        let mut cj = cronjob(schedule, "Allow");
        cj.spec.time_zone = tz.map(String::from);
        cj.status = Some(CronJobStatus {
            last_schedule_time: Some(Time(at("09:59:00"))),
            ..Default::default()
        });
        let meta = cj.spec.job_template.metadata.as_mut().unwrap();
        meta.labels = Some([("a".to_string(), label.to_string())].into());
        cj
    };
    let delta = |s: i64| UpdateAction::After(secs(s) + NEXT_SCHEDULE_DELTA);
    let cases = [
        (
            "spec.template changed",
            with(ON_THE_HOUR, None, "b"),
            with(ON_THE_HOUR, None, "foo"),
            UpdateAction::Now,
        ),
        (
            "spec.schedule changed",
            with("30 * * * *", None, "b"),
            with("*/1 * * * *", None, "b"),
            delta(1),
        ),
        (
            "spec.schedule with @every changed - cadence decrease",
            with("@every 1m", None, "b"),
            with("@every 3m", None, "b"),
            delta(2 * MIN + 1),
        ),
        (
            "spec.schedule with @every changed - cadence increase",
            with("@every 3m", None, "b"),
            with("@every 1m", None, "b"),
            delta(1),
        ),
        (
            "spec.timeZone not changed",
            with(ON_THE_HOUR, Some(NEW_YORK), "b"),
            with(ON_THE_HOUR, Some(NEW_YORK), "foo"),
            UpdateAction::Now,
        ),
        (
            "spec.timeZone changed",
            with(ON_THE_HOUR, Some(NEW_YORK), "b"),
            with("", None, "b"),
            UpdateAction::Unparseable("unparseable schedule for cronjob: ".into()),
        ),
    ];
    for (name, old, new, expected) in cases {
        assert_eq!(update_action(&old, &new, now), expected, "{name}");
    }
}

/// Not upstream: a cache that lags the server (its own status write not yet seen, a
/// restart on a lagging API server) does not start a scheduled time a second time: the
/// server's copy already records it.
#[tokio::test]
async fn lagging_cache_does_not_run_a_time_twice() {
    let mut cj = cronjob(ON_THE_HOUR, "Forbid");
    cj.metadata.creation_timestamp = Some(Time(at("08:59:00")));
    let mut server = cj.clone();
    server.status = Some(CronJobStatus {
        last_schedule_time: Some(Time(at("09:00:00"))),
        ..Default::default()
    });
    let control = FakeControl {
        cron_job: Some(server),
        ..Default::default()
    };
    let mut events = Vec::new();
    let out = sync_cron_job(&mut cj, &[], at("09:30:00"), &control, &mut events).await;
    assert!(control.created.lock().unwrap().is_empty());
    assert!(
        !out.update_status && out.error.is_some(),
        "{:?} {:?}",
        out.error,
        out.requeue_after
    );
}

/// Not upstream: a process that created the Job of a time crashed before recording it;
/// the Job finished and the history limit deletes it. The time is recorded from the
/// listed Job, not run again.
#[tokio::test]
async fn created_but_unrecorded_job_is_recorded_not_run_again() {
    let mut cj = cronjob(ON_THE_HOUR, "Forbid");
    cj.metadata.creation_timestamp = Some(Time(at("08:59:00")));
    let mut job = get_job_from_template(&cj, at("09:00:00")).unwrap();
    job.metadata.uid = Some("1234".into());
    complete(&mut job, at("09:00:10"));
    let control = FakeControl {
        cron_job: Some(cj.clone()),
        ..Default::default()
    };
    let mut events = Vec::new();
    let out = sync_cron_job(&mut cj, &[&job], at("09:30:00"), &control, &mut events).await;
    assert!(control.created.lock().unwrap().is_empty());
    assert!(out.update_status);
    assert_eq!(last_schedule_time(&cj), Some(at("09:00:00")));
    assert!(active(&cj).is_empty());
}
