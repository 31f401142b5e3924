//! Upstream `ttlafterfinished_controller_test.go` (TestTimeLeft), ported, and the
//! decision of `processTTL`.

use super::*;
use k8s_openapi::api::batch::v1::{JobCondition, JobSpec, JobStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};

fn now() -> Timestamp {
    "2016-05-19T10:00:00Z".parse().unwrap()
}

fn ago(secs: i64) -> Timestamp {
    now().checked_sub(SignedDuration::from_secs(secs)).unwrap()
}

fn job(complete_at: Option<Timestamp>, failed_at: Option<Timestamp>, ttl: Option<i32>) -> Job {
    let condition = |type_: &str, at: Timestamp| JobCondition {
        type_: type_.into(),
        status: "True".into(),
        last_transition_time: Some(Time(at)),
        ..Default::default()
    };
    let mut conditions = Vec::new();
    if let Some(at) = complete_at {
        conditions.push(condition("Complete", at));
    }
    if let Some(at) = failed_at {
        conditions.push(condition("Failed", at));
    }
    Job {
        metadata: ObjectMeta {
            namespace: Some("default".into()),
            name: Some("foobar".into()),
            ..Default::default()
        },
        spec: Some(JobSpec {
            ttl_seconds_after_finished: ttl,
            ..Default::default()
        }),
        status: Some(JobStatus {
            conditions: Some(conditions),
            ..Default::default()
        }),
    }
}

#[test]
fn time_left_table() {
    // TestTimeLeft: (name, completed at, failed at, ttl, expected left and expiry, or error)
    type Case = (
        &'static str,
        Option<Timestamp>,
        Option<Timestamp>,
        Option<i32>,
        Option<(i64, Timestamp)>,
    );
    let n = now();
    let cases: Vec<Case> = vec![
        ("Error case: Job unfinished", None, None, Some(100), None),
        (
            "Error case: Job completed now, no TTL",
            Some(n),
            None,
            None,
            None,
        ),
        (
            "Job completed now, 0s TTL",
            Some(n),
            None,
            Some(0),
            Some((0, n)),
        ),
        (
            "Job completed now, 10s TTL",
            Some(n),
            None,
            Some(10),
            Some((10, ago(-10))),
        ),
        (
            "Job completed 10s ago, 15s TTL",
            Some(ago(10)),
            None,
            Some(15),
            Some((5, ago(-5))),
        ),
        (
            "Error case: Job failed now, no TTL",
            None,
            Some(n),
            None,
            None,
        ),
        (
            "Job failed now, 0s TTL",
            None,
            Some(n),
            Some(0),
            Some((0, n)),
        ),
        (
            "Job failed now, 10s TTL",
            None,
            Some(n),
            Some(10),
            Some((10, ago(-10))),
        ),
        (
            "Job failed 10s ago, 15s TTL",
            None,
            Some(ago(10)),
            Some(15),
            Some((5, ago(-5))),
        ),
    ];
    for (name, complete, failed, ttl, expected) in cases {
        let got = time_left(&job(complete, failed, ttl), n);
        match expected {
            None => {
                let e = got.expect_err(name);
                assert!(e.contains("should not be cleaned up"), "{name}: {e}");
            }
            Some((left, expire)) => {
                assert_eq!(got, Ok((SignedDuration::from_secs(left), expire)), "{name}");
            }
        }
    }
}

#[test]
fn finish_time_errors() {
    let mut j = job(Some(now()), None, Some(1));
    j.status.as_mut().unwrap().conditions.as_mut().unwrap()[0].last_transition_time = None;
    assert_eq!(
        job_finish_time(&j),
        Err("unable to find the time when the Job default/foobar finished".into())
    );
    let j = job(None, None, Some(1));
    assert_eq!(
        job_finish_time(&j),
        Err("unable to find the status of the finished Job default/foobar".into())
    );
}

#[test]
fn process_ttl_decides() {
    // unfinished, no TTL or being deleted: nothing
    assert_eq!(
        process_ttl(&job(None, None, Some(5)), now()),
        Ok(Verdict::Ignore)
    );
    assert_eq!(
        process_ttl(&job(Some(now()), None, None), now()),
        Ok(Verdict::Ignore)
    );
    let mut deleting = job(Some(ago(100)), None, Some(5));
    deleting.metadata.deletion_timestamp = Some(Time(now()));
    assert_eq!(process_ttl(&deleting, now()), Ok(Verdict::Ignore));
    // not yet: look again when it expires
    assert_eq!(
        process_ttl(&job(Some(ago(3)), None, Some(5)), now()),
        Ok(Verdict::Wait(Duration::from_secs(2)))
    );
    // expired (or exactly now)
    assert_eq!(
        process_ttl(&job(Some(ago(10)), None, Some(5)), now()),
        Ok(Verdict::Expired(ago(5)))
    );
    assert_eq!(
        process_ttl(&job(None, Some(ago(5)), Some(5)), now()),
        Ok(Verdict::Expired(now()))
    );
    // a false Complete condition is not finished
    let mut j = job(Some(ago(10)), None, Some(5));
    j.status.as_mut().unwrap().conditions.as_mut().unwrap()[0].status = "False".into();
    assert_eq!(process_ttl(&j, now()), Ok(Verdict::Ignore));
}
