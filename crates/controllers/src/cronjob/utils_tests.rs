//! Upstream `pkg/controller/cronjob/utils_test.go`, ported: TestGetJobFromTemplate2,
//! TestNextScheduleTime, TestByJobStartTime, TestMostRecentScheduleTime and
//! TestNextScheduleTimeDuration (all times on 2016-05-19, a Thursday, UTC).

use super::*;
use k8s_openapi::api::batch::v1::{JobSpec, JobStatus, JobTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

pub(crate) fn t(s: &str) -> Timestamp {
    s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
}

pub(crate) const TOP_OF_THE_HOUR: &str = "2016-05-19T10:00:00Z";

fn top() -> Timestamp {
    t(TOP_OF_THE_HOUR)
}

fn plus(base: Timestamp, secs: i64) -> Timestamp {
    base.checked_add(SignedDuration::from_secs(secs)).unwrap()
}

const MIN: i64 = 60;
const HOUR: i64 = 3600;
const DAY: i64 = 24 * HOUR;

fn cronjob(schedule: &str) -> CronJob {
    CronJob {
        metadata: ObjectMeta {
            name: Some("mycronjob".into()),
            namespace: Some("snazzycats".into()),
            uid: Some("1a2b3c".into()),
            ..Default::default()
        },
        spec: CronJobSpec {
            schedule: schedule.into(),
            concurrency_policy: Some("Allow".into()),
            job_template: JobTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some([("a".to_string(), "b".to_string())].into()),
                    ..Default::default()
                }),
                spec: Some(JobSpec::default()),
            },
            ..Default::default()
        },
        status: None,
    }
}

fn sched(cj: &CronJob) -> Schedule {
    parse_schedule(cj, None).unwrap()
}

/// name, timeZone, template annotations, annotation count, scheduled timestamp
type TemplateCase<'a> = (
    &'a str,
    Option<&'a str>,
    &'a [(&'a str, &'a str)],
    usize,
    &'a str,
);

#[test]
fn get_job_from_template2() {
    let cases: &[TemplateCase] = &[
        (
            "UTC timezone and one annotation",
            Some("UTC"),
            &[("x", "y")],
            2,
            "2016-05-19T10:00:00Z",
        ),
        (
            "nil timezone and one annotation",
            None,
            &[("x", "y")],
            2,
            "2016-05-19T10:00:00Z",
        ),
        (
            "correct timezone and multiple annotation",
            Some("Europe/Rome"),
            &[("x", "y"), ("z", "x")],
            3,
            "2016-05-19T12:00:00+02:00",
        ),
    ];
    for (name, tz, annotations, count, stamp) in cases {
        let mut cj = cronjob("* * * * ?");
        cj.spec.time_zone = tz.map(String::from);
        if let Some(m) = cj.spec.job_template.metadata.as_mut() {
            m.annotations = Some(
                annotations
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            );
        }
        let job = get_job_from_template(&cj, top()).unwrap();
        let meta = &job.metadata;
        assert!(
            meta.name.as_deref().unwrap().starts_with("mycronjob-"),
            "{name}"
        );
        assert_eq!(meta.labels.as_ref().map(|l| l.len()), Some(1), "{name}");
        let ann = meta.annotations.as_ref().unwrap();
        assert_eq!(ann.len(), *count, "{name}");
        assert_eq!(ann[SCHEDULED_TIMESTAMP_ANNOTATION], *stamp, "{name}");
        // deterministic name: minutes since the epoch; a controller reference
        assert_eq!(meta.name.as_deref(), Some("mycronjob-24394200"), "{name}");
        let owner = &meta.owner_references.as_ref().unwrap()[0];
        assert_eq!(
            (
                owner.api_version.as_str(),
                owner.kind.as_str(),
                owner.uid.as_str(),
                owner.controller,
                owner.block_owner_deletion
            ),
            ("batch/v1", "CronJob", "1a2b3c", Some(true), Some(true))
        );
    }
}

#[test]
fn next_schedule_time_sequence() {
    // TestNextScheduleTime: one CronJob changed case after case
    let t1 = top();
    let t2 = plus(t1, HOUR);
    let mut cj = cronjob("0 * * * ?");
    let mut events = Vec::new();
    let mut check = |cj: &CronJob, now: Timestamp| {
        let s = sched(cj);
        next_schedule_time(cj, now, &s, &mut events)
    };
    // 1: no known start times, and none needed yet
    cj.metadata.creation_timestamp = Some(Time(plus(t1, -10 * MIN)));
    assert_eq!(check(&cj, plus(t1, -7 * MIN)), Ok(None));
    // 2: no known start times, and one needed
    assert_eq!(check(&cj, plus(t1, 2)), Ok(Some(t1)));
    // 3: known lastScheduleTime, no start needed
    status_mut(&mut cj).last_schedule_time = Some(Time(t1));
    assert_eq!(check(&cj, plus(t1, 2 * MIN)), Ok(None));
    // 4: known lastScheduleTime, a start needed
    assert_eq!(check(&cj, plus(t2, 5 * MIN)), Ok(Some(t2)));
    // 5: two starts needed, only the most recent is returned
    cj.metadata.creation_timestamp = Some(Time(plus(t1, -2 * HOUR)));
    status_mut(&mut cj).last_schedule_time = Some(Time(plus(t1, -HOUR)));
    assert_eq!(check(&cj, plus(t2, 5 * MIN)), Ok(Some(t2)));
    // 6: way ahead of the last start, no deadline
    assert!(matches!(check(&cj, plus(t2, 10 * DAY)), Ok(Some(_))));
    // 7: way ahead, but a short deadline
    cj.spec.starting_deadline_seconds = Some(2 * HOUR);
    assert!(matches!(check(&cj, plus(t2, 10 * DAY)), Ok(Some(_))));
    // 8: a schedule that never fires
    cj.metadata.creation_timestamp = Some(Time(plus(t1, 10)));
    status_mut(&mut cj).last_schedule_time = None;
    cj.spec.schedule = "59 23 31 2 *".into();
    assert_eq!(
        check(&cj, plus(t1, HOUR)),
        Err("time difference between two schedules is less than 1 second".into())
    );
}

fn job(name: &str, start: Option<Timestamp>) -> Job {
    Job {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        spec: None,
        status: Some(JobStatus {
            start_time: start.map(Time),
            ..Default::default()
        }),
    }
}

#[test]
fn by_job_start_time_order() {
    // TestByJobStartTime
    let now = top();
    let later = plus(now, HOUR);
    let names = |mut jobs: Vec<Job>| {
        jobs.sort_by(by_job_start_time);
        jobs.into_iter()
            .map(|j| j.metadata.name.unwrap())
            .collect::<Vec<_>>()
    };
    assert_eq!(names(vec![job("b", None), job("a", None)]), ["a", "b"]);
    assert_eq!(names(vec![job("a", None), job("b", Some(now))]), ["b", "a"]);
    assert_eq!(names(vec![job("a", Some(now)), job("b", None)]), ["a", "b"]);
    assert_eq!(
        names(vec![job("b", Some(now)), job("a", Some(now))]),
        ["a", "b"]
    );
    assert_eq!(
        names(vec![job("a", Some(later)), job("b", Some(now))]),
        ["b", "a"]
    );
}

#[test]
fn most_recent_schedule_time_table() {
    // TestMostRecentScheduleTime
    struct Case {
        name: &'static str,
        creation: Timestamp,
        schedule: &'static str,
        deadline: Option<i64>,
        include_deadline: bool,
        last: Option<Timestamp>,
        now: Timestamp,
        earliest: Timestamp,
        recent: Option<Timestamp>,
        missed: Missed,
        error: bool,
    }
    let top = top();
    let base = Case {
        name: "",
        creation: top,
        schedule: "0 * * * *",
        deadline: None,
        include_deadline: false,
        last: None,
        now: top,
        earliest: top,
        recent: None,
        missed: Missed::None,
        error: false,
    };
    let cases = vec![
        Case {
            name: "now before next schedule",
            now: plus(top, 30),
            ..base
        },
        Case {
            name: "now just after next schedule",
            now: plus(top, HOUR + MIN),
            recent: Some(plus(top, HOUR)),
            ..base
        },
        Case {
            name: "missed 5 schedules",
            creation: plus(top, 10),
            now: plus(top, 5 * HOUR + MIN),
            earliest: plus(top, 10),
            recent: Some(plus(top, 5 * HOUR)),
            missed: Missed::Few,
            ..base
        },
        Case {
            name: "complex schedule",
            schedule: "30 6-16/4 * * 1-5",
            last: Some(plus(top, 30 * MIN)),
            now: plus(top, 24 * HOUR + 31 * MIN),
            earliest: plus(top, 30 * MIN),
            recent: Some(plus(top, 24 * HOUR + 30 * MIN)),
            missed: Missed::Few,
            ..base
        },
        Case {
            name: "another complex schedule",
            schedule: "30 10,11,12 * * 1-5",
            last: Some(plus(top, 30 * MIN)),
            now: plus(top, 30 * HOUR + 30 * MIN),
            earliest: plus(top, 30 * MIN),
            recent: None,
            missed: Missed::Few,
            ..base
        },
        Case {
            name: "complex schedule with longer diff between executions",
            schedule: "30 6-16/4 * * 1-5",
            last: Some(plus(top, 30 * MIN)),
            now: plus(top, 96 * HOUR + 31 * MIN),
            earliest: plus(top, 30 * MIN),
            recent: Some(plus(top, 96 * HOUR + 30 * MIN)),
            missed: Missed::Few,
            ..base
        },
        Case {
            name: "complex schedule with shorter diff between executions",
            schedule: "30 6-16/4 * * 1-5",
            now: plus(top, 24 * HOUR + 31 * MIN),
            recent: Some(plus(top, 24 * HOUR + 30 * MIN)),
            missed: Missed::Few,
            ..base
        },
        Case {
            name: "@every schedule",
            creation: plus(top, -HOUR + MIN),
            schedule: "@every 1h",
            deadline: Some(10),
            last: Some(plus(top, MIN)),
            now: plus(top, 7 * DAY),
            earliest: plus(top, MIN),
            recent: Some(plus(top, 6 * DAY + 23 * HOUR + MIN)),
            missed: Missed::Many,
            ..base
        },
        Case {
            name: "rogue cronjob",
            creation: plus(top, 10),
            schedule: "59 23 31 2 *",
            now: plus(top, HOUR),
            error: true,
            ..base
        },
        Case {
            name: "earliestTime being CreationTimestamp and LastScheduleTime",
            last: Some(top),
            now: plus(top, 30),
            ..base
        },
        Case {
            name: "earliestTime being LastScheduleTime",
            schedule: "*/5 * * * *",
            last: Some(plus(top, 30 * MIN)),
            now: plus(top, 31 * MIN),
            earliest: plus(top, 30 * MIN),
            ..base
        },
        Case {
            name: "earliestTime being LastScheduleTime (within StartingDeadlineSeconds)",
            schedule: "*/5 * * * *",
            deadline: Some(60),
            last: Some(plus(top, 30 * MIN)),
            now: plus(top, 31 * MIN),
            earliest: plus(top, 30 * MIN),
            ..base
        },
        Case {
            name: "earliestTime being LastScheduleTime (outside StartingDeadlineSeconds)",
            schedule: "*/5 * * * *",
            deadline: Some(60),
            include_deadline: true,
            last: Some(plus(top, 30 * MIN)),
            now: plus(top, 32 * MIN),
            earliest: plus(top, 31 * MIN),
            ..base
        },
    ];
    for c in cases {
        let mut cj = cronjob(c.schedule);
        cj.metadata.creation_timestamp = Some(Time(c.creation));
        cj.spec.starting_deadline_seconds = c.deadline;
        status_mut(&mut cj).last_schedule_time = c.last.map(Time);
        let got = most_recent_schedule_time(&cj, c.now, &sched(&cj), c.include_deadline);
        if c.error {
            assert!(got.is_err(), "{}", c.name);
            continue;
        }
        assert_eq!(got, Ok((c.earliest, c.recent, c.missed)), "{}", c.name);
    }
}

#[test]
fn next_schedule_time_duration_table() {
    // TestNextScheduleTimeDuration
    let top = top();
    let cases: &[(&str, &str, Option<Timestamp>, Timestamp, i64)] = &[
        (
            "complex schedule skipping weekend",
            "30 6-16/4 * * 1-5",
            Some(plus(top, 30 * MIN)),
            plus(top, 24 * HOUR + 31 * MIN),
            3 * HOUR + 59 * MIN,
        ),
        (
            "another complex schedule skipping weekend",
            "30 10,11,12 * * 1-5",
            Some(plus(top, 30 * MIN)),
            plus(top, 30 * HOUR + 30 * MIN),
            66 * HOUR,
        ),
        (
            "once a week cronjob, missed two runs",
            "0 12 * * 4",
            Some(plus(top, 2 * HOUR)),
            plus(top, 19 * DAY + HOUR + 30 * MIN),
            48 * HOUR + 30 * MIN,
        ),
        (
            "no previous run of a cronjob",
            "0 12 * * 5",
            None,
            plus(top, 6 * HOUR),
            20 * HOUR,
        ),
    ];
    for (name, schedule, last, now, secs) in cases {
        let mut cj = cronjob(schedule);
        cj.metadata.creation_timestamp = Some(Time(top));
        status_mut(&mut cj).last_schedule_time = last.map(Time);
        let got = next_schedule_time_duration(&cj, *now, &sched(&cj));
        assert_eq!(
            got,
            SignedDuration::from_secs(*secs) + NEXT_SCHEDULE_DELTA,
            "{name}"
        );
    }
}

#[test]
fn format_schedule_names_the_zone() {
    let mut cj = cronjob("0 * * * *");
    assert_eq!(format_schedule(&cj, None), "0 * * * *");
    cj.spec.time_zone = Some("America/New_York".into());
    assert_eq!(format_schedule(&cj, None), "TZ=America/New_York 0 * * * *");
    cj.spec.time_zone = Some("bad timezone".into());
    assert_eq!(format_schedule(&cj, None), "0 * * * *");
    cj.spec.schedule = "TZ=UTC 0 * * * *".into();
    let mut events = Vec::new();
    assert_eq!(format_schedule(&cj, Some(&mut events)), "TZ=UTC 0 * * * *");
    assert_eq!(events[0].reason, "UnsupportedSchedule");
    assert_eq!(
        events[0].message,
        "CRON_TZ or TZ used in schedule \"TZ=UTC 0 * * * *\" is not officially supported, see https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for more details"
    );
}
