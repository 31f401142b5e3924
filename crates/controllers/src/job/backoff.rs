//! The exponential delay before failed pods are replaced (upstream `backoff_utils.go`).
//!
//! For each Job the controller remembers, in memory, how many pods failed since the
//! last success and when the last of them finished. A replacement waits
//! [`DEFAULT_POD_FAILURE_BACKOFF`] (10 s) after one failure, doubling per further
//! failure up to [`MAX_POD_FAILURE_BACKOFF`] (10 min); the Job is requeued for the end of
//! the wait, nothing sleeps. With a backoff limit per index the same delay applies per
//! index, computed from the failure-count annotations of the index's last failed pod.
//! A record is kept only once the status carrying its pods was written, and forgotten
//! when the Job finishes or is deleted.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use coxswain_runtime::ObjectKey;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::{SignedDuration, Timestamp};

use super::indexed::absolute_failure_count;
use crate::controller_utils::pod::pod_ready_condition;

/// The delay after the first failure (upstream `DefaultJobPodFailureBackOff`).
pub const DEFAULT_POD_FAILURE_BACKOFF: Duration = Duration::from_secs(10);
/// The longest delay (upstream `MaxJobPodFailureBackOff`).
pub const MAX_POD_FAILURE_BACKOFF: Duration = Duration::from_secs(600);

/// Failures since the last success of one Job.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BackoffRecord {
    /// The Job.
    pub key: Option<ObjectKey>,
    /// Pods failed after the last succeeded one.
    pub failures_after_last_success: i32,
    /// When the last of them finished.
    pub last_failure_time: Option<Timestamp>,
}

impl BackoffRecord {
    /// How long pod creation must still wait at `now`.
    pub fn remaining_time(&self, now: Timestamp, base: Duration, max: Duration) -> Duration {
        remaining_time_for_failures(
            now,
            base,
            max,
            self.failures_after_last_success,
            self.last_failure_time,
        )
    }
}

/// The backoff records of every Job (upstream `backoffStore`).
#[derive(Debug, Default)]
pub struct BackoffStore {
    records: Mutex<HashMap<ObjectKey, BackoffRecord>>,
}

impl BackoffStore {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<ObjectKey, BackoffRecord>> {
        self.records.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The stored record of `key`, if any.
    pub fn get(&self, key: &ObjectKey) -> Option<BackoffRecord> {
        self.lock().get(key).cloned()
    }

    /// Keep `record` (after the status that counted its pods was written).
    pub fn update(&self, record: BackoffRecord) {
        if let Some(key) = record.key.clone() {
            self.lock().insert(key, record);
        }
    }

    /// Forget the record of `key`.
    pub fn remove(&self, key: &ObjectKey) {
        self.lock().remove(key);
    }

    /// The record of `key` after the pods that succeeded and failed since the last sync
    /// (upstream `newBackoffRecord`); not stored.
    pub fn new_record(
        &self,
        key: &ObjectKey,
        new_succeeded: &[Arc<Pod>],
        new_failed: &[Arc<Pod>],
    ) -> BackoffRecord {
        let stored = self.get(key).unwrap_or_else(|| BackoffRecord {
            key: Some(key.clone()),
            ..Default::default()
        });
        next_record(stored, new_succeeded, new_failed)
    }
}

fn sorted_finish_times(pods: &[Arc<Pod>]) -> Vec<Timestamp> {
    let mut times: Vec<Timestamp> = pods.iter().map(|p| finished_time(p)).collect();
    times.sort();
    times
}

/// `record` after `new_succeeded` and `new_failed` pods.
pub fn next_record(
    mut record: BackoffRecord,
    new_succeeded: &[Arc<Pod>],
    new_failed: &[Arc<Pod>],
) -> BackoffRecord {
    let succeeded = sorted_finish_times(new_succeeded);
    let failed = sorted_finish_times(new_failed);
    match (succeeded.last(), failed.last()) {
        (None, None) => record,
        (None, Some(last_failure)) => {
            record.failures_after_last_success = record
                .failures_after_last_success
                .saturating_add(i32::try_from(failed.len()).unwrap_or(i32::MAX));
            record.last_failure_time = Some(*last_failure);
            record
        }
        (Some(last_success), _) => {
            record.failures_after_last_success = 0;
            record.last_failure_time = None;
            for t in failed.iter().rev() {
                if t <= last_success {
                    break;
                }
                if record.last_failure_time.is_none() {
                    record.last_failure_time = Some(*t);
                }
                record.failures_after_last_success += 1;
            }
            record
        }
    }
}

fn terminated_at(
    statuses: &[k8s_openapi::api::core::v1::ContainerStatus],
) -> Option<Vec<Timestamp>> {
    statuses
        .iter()
        .map(|c| {
            c.state
                .as_ref()?
                .terminated
                .as_ref()?
                .finished_at
                .as_ref()
                .map(|t| t.0)
                .filter(|t| *t != Timestamp::UNIX_EPOCH)
        })
        .collect()
}

/// When the pod finished (upstream `getFinishedTime`): the latest `finishedAt` when
/// every container (init containers included) terminated with a known time; else the
/// time `Ready` turned `False`; else the deletion timestamp minus the grace period; else
/// the creation time.
pub fn finished_time(pod: &Pod) -> Timestamp {
    let status = pod.status.as_ref();
    let containers = status
        .and_then(|s| s.container_statuses.as_deref())
        .unwrap_or(&[]);
    let inits = status
        .and_then(|s| s.init_container_statuses.as_deref())
        .unwrap_or(&[]);
    if !containers.is_empty() {
        if let (Some(a), Some(b)) = (terminated_at(containers), terminated_at(inits)) {
            if let Some(t) = a.into_iter().chain(b).max() {
                return t;
            }
        }
    }
    if let Some(t) = pod_ready_condition(pod)
        .filter(|c| c.status == "False")
        .and_then(|c| c.last_transition_time.as_ref())
        .map(|t| t.0)
        .filter(|t| *t != Timestamp::UNIX_EPOCH)
    {
        return t;
    }
    if let Some(deleted) = &pod.metadata.deletion_timestamp {
        let grace = pod.metadata.deletion_grace_period_seconds.unwrap_or(0);
        return deleted
            .0
            .checked_sub(SignedDuration::from_secs(grace))
            .unwrap_or(deleted.0);
    }
    pod.metadata
        .creation_timestamp
        .as_ref()
        .map(|t| t.0)
        .unwrap_or(Timestamp::UNIX_EPOCH)
}

/// How long to wait at `now` after `failures` failures, the last at `last_failure`:
/// `base` doubled per failure after the first, capped at `max`, minus the time elapsed
/// (upstream `getRemainingTimeForFailuresCount`).
pub fn remaining_time_for_failures(
    now: Timestamp,
    base: Duration,
    max: Duration,
    failures: i32,
    last_failure: Option<Timestamp>,
) -> Duration {
    let Some(last) = last_failure.filter(|_| failures > 0) else {
        return Duration::ZERO;
    };
    let mut backoff = base;
    for _ in 1..failures {
        backoff = backoff.saturating_mul(2);
        if backoff >= max {
            backoff = max;
            break;
        }
    }
    let elapsed = now.duration_since(last);
    let backoff = SignedDuration::try_from(backoff).unwrap_or(SignedDuration::MAX);
    if backoff < elapsed {
        return Duration::ZERO;
    }
    Duration::try_from(backoff.saturating_sub(elapsed)).unwrap_or(Duration::ZERO)
}

/// How long the index of `last_failed` must wait before its replacement (upstream
/// `getRemainingTimePerIndex`): its failures, ignored ones included, plus this one.
pub fn remaining_time_per_index(
    now: Timestamp,
    base: Duration,
    max: Duration,
    last_failed: Option<&Pod>,
) -> Duration {
    let Some(pod) = last_failed else {
        return Duration::ZERO;
    };
    let failures = absolute_failure_count(pod).saturating_add(1);
    remaining_time_for_failures(now, base, max, failures, Some(finished_time(pod)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{
        ContainerState, ContainerStateRunning, ContainerStateTerminated, ContainerStatus,
        PodCondition, PodStatus,
    };
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use std::collections::BTreeMap;

    /// 2009-11-10 23:00:00 UTC, upstream's test time.
    fn t0() -> Timestamp {
        Timestamp::from_second(1_257_894_000).unwrap_or(Timestamp::UNIX_EPOCH)
    }

    fn at(ms: i64) -> Timestamp {
        t0().checked_add(SignedDuration::from_millis(ms))
            .unwrap_or(t0())
    }

    fn terminated(finished: Option<Timestamp>) -> ContainerStatus {
        ContainerStatus {
            state: Some(ContainerState {
                terminated: Some(ContainerStateTerminated {
                    finished_at: finished.map(Time),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn running() -> ContainerStatus {
        ContainerStatus {
            state: Some(ContainerState {
                running: Some(ContainerStateRunning::default()),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn finished_at(ms: i64) -> Arc<Pod> {
        let p = Pod {
            status: Some(PodStatus {
                container_statuses: Some(vec![terminated(Some(at(ms)))]),
                ..Default::default()
            }),
            ..Default::default()
        };
        Arc::new(p)
    }

    // Upstream TestNewBackoffRecord (backoff_utils_test.go).
    #[test]
    fn new_backoff_record() {
        let key = ObjectKey::namespaced("default", "job");
        let rec = |failures: i32, last: Option<Timestamp>| BackoffRecord {
            key: Some(key.clone()),
            failures_after_last_success: failures,
            last_failure_time: last,
        };
        type Case = (
            &'static str,
            Option<BackoffRecord>,
            Vec<i64>,
            Vec<i64>,
            BackoffRecord,
        );
        let cases: Vec<Case> = vec![
            (
                "Empty backoff store and one new failure",
                None,
                vec![],
                vec![0],
                rec(1, Some(at(0))),
            ),
            (
                "Empty backoff store and two new failures",
                None,
                vec![],
                vec![0, -1],
                rec(2, Some(at(0))),
            ),
            (
                "Empty backoff store, two failures followed by success",
                None,
                vec![0],
                vec![-2, -1],
                rec(0, None),
            ),
            (
                "Empty backoff store, two failures, one success and two more failures",
                None,
                vec![-2],
                vec![0, -4, -3, -1],
                rec(2, Some(at(0))),
            ),
            (
                "Backoff store having failure count 2 and one new failure",
                Some(rec(2, None)),
                vec![],
                vec![0],
                rec(3, Some(at(0))),
            ),
            (
                "Empty backoff store with success and failure at same timestamp",
                None,
                vec![0],
                vec![0],
                rec(0, None),
            ),
            (
                "Empty backoff store with no success/failure",
                None,
                vec![],
                vec![],
                rec(0, None),
            ),
            (
                "Empty backoff store with one success",
                None,
                vec![0],
                vec![],
                rec(0, None),
            ),
        ];
        for (name, init, succeeded, failed, want) in cases {
            let store = BackoffStore::default();
            if let Some(r) = init {
                store.update(r);
            }
            let s: Vec<Arc<Pod>> = succeeded.into_iter().map(finished_at).collect();
            let f: Vec<Arc<Pod>> = failed.into_iter().map(finished_at).collect();
            assert_eq!(store.new_record(&key, &s, &f), want, "{name}");
        }
    }

    // Upstream TestGetFinishedTime (backoff_utils_test.go).
    #[test]
    fn get_finished_time() {
        let t = t0();
        let mut cases: Vec<(&str, Pod, Timestamp)> = Vec::new();
        let p = Pod {
            status: Some(PodStatus {
                container_statuses: Some(vec![
                    terminated(Some(at(-1000))),
                    terminated(Some(at(0))),
                    terminated(Some(at(-2000))),
                ]),
                ..Default::default()
            }),
            ..Default::default()
        };
        cases.push((
            "Pod with multiple containers and all containers terminated",
            p,
            t,
        ));

        let mut p = Pod::default();
        p.metadata.deletion_timestamp = Some(Time(t));
        p.status = Some(PodStatus {
            container_statuses: Some(vec![
                terminated(Some(at(-1000))),
                running(),
                terminated(Some(at(-2000))),
            ]),
            ..Default::default()
        });
        cases.push(("Pod with multiple containers; two containers in terminated state and one in running state; fallback to deletionTimestamp", p, t));

        let mut p = Pod::default();
        p.metadata.deletion_timestamp = Some(Time(t));
        p.status = Some(PodStatus {
            container_statuses: Some(vec![running()]),
            ..Default::default()
        });
        cases.push(("fallback to deletionTimestamp", p, t));

        let mut p = Pod::default();
        p.metadata.deletion_timestamp = Some(Time(t));
        p.metadata.deletion_grace_period_seconds = Some(30);
        p.status = Some(PodStatus {
            container_statuses: Some(vec![running()]),
            ..Default::default()
        });
        cases.push((
            "fallback to deletionTimestamp, decremented by grace period",
            p,
            at(-30_000),
        ));

        let ready = |status: &str, when: Timestamp| PodCondition {
            type_: "Ready".into(),
            status: status.into(),
            last_transition_time: Some(Time(when)),
            ..Default::default()
        };
        let p = Pod {
            status: Some(PodStatus {
                container_statuses: Some(vec![terminated(None)]),
                conditions: Some(vec![ready("False", t)]),
                ..Default::default()
            }),
            ..Default::default()
        };
        cases.push((
            "fallback to PodReady.LastTransitionTime when status of the condition is False",
            p,
            t,
        ));

        let mut p = Pod::default();
        p.metadata.deletion_timestamp = Some(Time(t));
        p.status = Some(PodStatus {
            container_statuses: Some(vec![terminated(None)]),
            conditions: Some(vec![ready("True", at(-30_000))]),
            ..Default::default()
        });
        cases.push((
            "skip fallback to PodReady.LastTransitionTime when status of the condition is True",
            p,
            t,
        ));

        let mut p = Pod::default();
        p.metadata.creation_timestamp = Some(Time(t));
        p.status = Some(PodStatus {
            container_statuses: Some(vec![terminated(None)]),
            ..Default::default()
        });
        cases.push(("fallback to creationTimestamp", p, t));

        let p = Pod {
            status: Some(PodStatus {
                container_statuses: Some(vec![terminated(Some(at(-1000)))]),
                init_container_statuses: Some(vec![terminated(Some(t))]),
                ..Default::default()
            }),
            ..Default::default()
        };
        cases.push(("init container and all containers terminated", p, t));

        for (name, pod, want) in cases {
            assert_eq!(finished_time(&pod), want, "{name}");
        }
    }

    // Upstream TestGetRemainingBackoffTime (backoff_utils_test.go).
    #[test]
    fn get_remaining_backoff_time() {
        let (base, max) = (Duration::from_secs(5), Duration::from_secs(700));
        let s = |secs: i64| at(secs * 1000);
        let cases: Vec<(i32, Option<Timestamp>, Timestamp, u64)> = vec![
            (0, None, s(0), 0),
            (1, Some(s(0)), s(0), 5),
            (1, Some(s(0)), s(1), 4),
            (1, Some(s(0)), s(5), 0),
            (1, Some(s(0)), s(6), 0),
            (3, Some(s(0)), s(0), 20),
            (8, Some(s(0)), s(0), 640),
            (9, Some(s(0)), s(0), 700),
        ];
        for (failures, last, now, want) in cases {
            let rec = BackoffRecord {
                key: None,
                failures_after_last_success: failures,
                last_failure_time: last,
            };
            assert_eq!(
                rec.remaining_time(now, base, max),
                Duration::from_secs(want),
                "failures {failures} now {now}"
            );
        }
        // the defaults: 10 s doubling, capped at 10 minutes
        let now = t0();
        let got: Vec<u64> = (1..=7)
            .map(|n| {
                remaining_time_for_failures(
                    now,
                    DEFAULT_POD_FAILURE_BACKOFF,
                    MAX_POD_FAILURE_BACKOFF,
                    n,
                    Some(now),
                )
                .as_secs()
            })
            .collect();
        assert_eq!(got, [10, 20, 40, 80, 160, 320, 600]);
    }

    // Upstream TestGetRemainingBackoffTimePerIndex (backoff_utils_test.go).
    #[test]
    fn get_remaining_backoff_time_per_index() {
        let (base, max) = (Duration::from_secs(5), Duration::from_secs(700));
        let now = t0();
        assert_eq!(
            remaining_time_per_index(now, base, max, None),
            Duration::ZERO
        );
        let failed = |count: &str, ignored: Option<&str>| {
            let mut p = Pod::default();
            let mut ann = BTreeMap::from([(
                super::super::spec::JOB_INDEX_FAILURE_COUNT_ANNOTATION.to_string(),
                count.to_string(),
            )]);
            if let Some(i) = ignored {
                ann.insert(
                    super::super::spec::JOB_INDEX_IGNORED_FAILURE_COUNT_ANNOTATION.to_string(),
                    i.to_string(),
                );
            }
            p.metadata.annotations = Some(ann);
            p.metadata.deletion_timestamp = Some(Time(now));
            p.status = Some(PodStatus {
                phase: Some("Failed".into()),
                ..Default::default()
            });
            p
        };
        assert_eq!(
            remaining_time_per_index(now, base, max, Some(&failed("2", None))),
            Duration::from_secs(20)
        );
        assert_eq!(
            remaining_time_per_index(now, base, max, Some(&failed("1", Some("1")))),
            Duration::from_secs(20)
        );
    }
}
