//! Deployment conditions and the progress predicates (complete, progressing, timed
//! out), after upstream `deployment_util.go`.

use k8s_openapi::api::apps::v1::{
    Deployment, DeploymentCondition, DeploymentStatus, ReplicaSetCondition,
};
use k8s_openapi::jiff::{SignedDuration, Timestamp};

use super::*;

/// A new condition (both times `now`).
pub fn new_condition(
    type_: &str,
    status: &str,
    reason: &str,
    message: &str,
    now: Timestamp,
) -> DeploymentCondition {
    DeploymentCondition {
        type_: Some(type_.to_string()),
        status: Some(status.to_string()),
        reason: Some(reason.to_string()),
        message: Some(message.to_string()),
        last_update_time: Some(now_seconds(now)),
        last_transition_time: Some(now_seconds(now)),
    }
}

/// The condition of type `type_`.
pub fn get_condition<'a>(
    status: &'a DeploymentStatus,
    type_: &str,
) -> Option<&'a DeploymentCondition> {
    status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_.as_deref() == Some(type_))
}

/// The condition of type `type_` of a Deployment's status.
pub fn deployment_condition<'a>(d: &'a Deployment, type_: &str) -> Option<&'a DeploymentCondition> {
    get_condition(d.status.as_ref()?, type_)
}

/// Set `cond`, unless a condition of its type with the same status and reason exists;
/// the transition time is kept when the status does not change.
pub fn set_condition(status: &mut DeploymentStatus, mut cond: DeploymentCondition) {
    let type_ = cond.type_.clone().unwrap_or_default();
    if let Some(current) = get_condition(status, &type_) {
        if current.status == cond.status && current.reason == cond.reason {
            return;
        }
        if current.status == cond.status {
            cond.last_transition_time = current.last_transition_time.clone();
        }
    }
    remove_condition(status, &type_);
    status.conditions.get_or_insert_with(Vec::new).push(cond);
}

/// Remove the condition of type `type_` (an empty list becomes none).
pub fn remove_condition(status: &mut DeploymentStatus, type_: &str) {
    if let Some(cs) = status.conditions.as_mut() {
        cs.retain(|c| c.type_.as_deref() != Some(type_));
        if cs.is_empty() {
            status.conditions = None;
        }
    }
}

/// A ReplicaSet condition as a Deployment condition (to surface `ReplicaFailure`).
pub fn replica_set_to_deployment_condition(c: &ReplicaSetCondition) -> DeploymentCondition {
    DeploymentCondition {
        type_: c.type_.clone(),
        status: c.status.clone(),
        last_transition_time: c.last_transition_time.clone(),
        last_update_time: c.last_transition_time.clone(),
        reason: c.reason.clone(),
        message: c.message.clone(),
    }
}

/// Complete: all desired replicas updated and available, no old ones, and observed.
pub fn deployment_complete(d: &Deployment, s: &DeploymentStatus) -> bool {
    let want = replicas(d);
    s.updated_replicas.unwrap_or(0) == want
        && s.replicas.unwrap_or(0) == want
        && s.available_replicas.unwrap_or(0) == want
        && s.observed_generation.unwrap_or(0) >= d.metadata.generation.unwrap_or(0)
}

/// Progressing: compared with the current status, more updated, ready or available pods,
/// or fewer old ones.
pub fn deployment_progressing(d: &Deployment, new: &DeploymentStatus) -> bool {
    let old = d.status.clone().unwrap_or_default();
    let g = |v: Option<i32>| v.unwrap_or(0);
    let old_old = g(old.replicas) - g(old.updated_replicas);
    let new_old = g(new.replicas) - g(new.updated_replicas);
    g(new.updated_replicas) > g(old.updated_replicas)
        || new_old < old_old
        || g(new.ready_replicas) > g(old.ready_replicas)
        || g(new.available_replicas) > g(old.available_replicas)
}

/// Whether `progressDeadlineSeconds` is set (and not "forever", `i32::MAX`).
pub fn has_progress_deadline(d: &Deployment) -> bool {
    d.spec
        .progress_deadline_seconds
        .is_some_and(|p| p != i32::MAX)
}

/// The progress deadline.
pub fn progress_deadline(d: &Deployment) -> Option<SignedDuration> {
    if !has_progress_deadline(d) {
        return None;
    }
    d.spec
        .progress_deadline_seconds
        .map(|p| SignedDuration::from_secs(i64::from(p)))
}

/// Whether `revisionHistoryLimit` is set (and not "keep all", `i32::MAX`).
pub fn has_revision_history_limit(d: &Deployment) -> bool {
    d.spec.revision_history_limit.is_some_and(|l| l != i32::MAX)
}

/// Timed out: the Progressing condition says so already, or its last update is older
/// than the deadline (never after a completed rollout).
pub fn deployment_timed_out(d: &Deployment, new: &DeploymentStatus, now: Timestamp) -> bool {
    let Some(deadline) = progress_deadline(d) else {
        return false;
    };
    let Some(cond) = get_condition(new, PROGRESSING) else {
        return false;
    };
    match cond.reason.as_deref() {
        Some(NEW_RS_AVAILABLE_REASON) => return false,
        Some(TIMED_OUT_REASON) => return true,
        _ => {}
    }
    let from = cond
        .last_update_time
        .as_ref()
        .map(|t| t.0)
        .unwrap_or(Timestamp::UNIX_EPOCH);
    let until = from.checked_add(deadline).unwrap_or(Timestamp::MAX);
    until < now
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deployment::testutil::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

    fn c(type_: &str, status: &str, reason: &str) -> DeploymentCondition {
        DeploymentCondition {
            type_: Some(type_.into()),
            status: Some(status.into()),
            reason: Some(reason.into()),
            ..Default::default()
        }
    }

    // Ported from upstream TestGetCondition, TestSetCondition and TestRemoveCondition.
    #[test]
    fn conditions() {
        let progressing = || c(PROGRESSING, "False", "ForSomeReason");
        let progressing2 = || c(PROGRESSING, "True", "BecauseItIs");
        let available = || c(AVAILABLE, "True", "AwesomeController");
        let example = || DeploymentStatus {
            conditions: Some(vec![progressing(), available()]),
            ..Default::default()
        };
        assert!(
            get_condition(&example(), AVAILABLE).is_some(),
            "condition exists"
        );
        assert!(
            get_condition(&example(), REPLICA_FAILURE).is_none(),
            "condition does not exist"
        );

        let with = |cs: Vec<DeploymentCondition>| DeploymentStatus {
            conditions: Some(cs),
            ..Default::default()
        };
        let mut s = DeploymentStatus::default();
        set_condition(&mut s, available());
        assert_eq!(s, with(vec![available()]), "set for the first time");
        let mut s = with(vec![progressing()]);
        set_condition(&mut s, available());
        assert_eq!(s, example(), "simple set");
        let mut s = with(vec![progressing()]);
        set_condition(&mut s, progressing2());
        assert_eq!(s, with(vec![progressing2()]), "overwrite");

        let mut s = DeploymentStatus::default();
        remove_condition(&mut s, PROGRESSING);
        assert_eq!(s, DeploymentStatus::default(), "remove from empty status");
        let mut s = with(vec![progressing()]);
        remove_condition(&mut s, PROGRESSING);
        assert_eq!(s, DeploymentStatus::default(), "simple remove");
        let mut s = example();
        remove_condition(&mut s, REPLICA_FAILURE);
        assert_eq!(s, example(), "doesn't remove anything");

        // same status, new reason: the transition time stays
        let t = Timestamp::from_second(1000).expect("valid");
        let mut s = DeploymentStatus::default();
        set_condition(
            &mut s,
            new_condition(PROGRESSING, "True", NEW_REPLICA_SET_REASON, "", t),
        );
        let later = Timestamp::from_second(2000).expect("valid");
        set_condition(
            &mut s,
            new_condition(PROGRESSING, "True", NEW_RS_AVAILABLE_REASON, "", later),
        );
        let got = get_condition(&s, PROGRESSING).expect("set");
        assert_eq!(got.last_transition_time, Some(Time(t)));
        assert_eq!(got.last_update_time, Some(Time(later)));
    }

    fn dep_with_status(
        desired: i32,
        current: i32,
        updated: i32,
        available: i32,
        max_unavailable: i32,
        max_surge: i32,
    ) -> Deployment {
        let mut d = new_deployment(
            "foo",
            desired,
            None,
            Some(IntOrString::Int(max_surge)),
            Some(IntOrString::Int(max_unavailable)),
            &[],
        );
        d.status = Some(DeploymentStatus {
            replicas: Some(current),
            updated_replicas: Some(updated),
            available_replicas: Some(available),
            ..Default::default()
        });
        d
    }

    // Ported from upstream TestDeploymentComplete.
    #[test]
    fn deployment_complete_table() {
        let cases = [
            (
                "not complete: min but not all pods become available",
                dep_with_status(5, 5, 5, 4, 1, 0),
                false,
            ),
            (
                "not complete: min availability is not honored",
                dep_with_status(5, 5, 5, 3, 1, 0),
                false,
            ),
            ("complete", dep_with_status(5, 5, 5, 5, 0, 0), true),
            (
                "not complete: all pods are available but not updated",
                dep_with_status(5, 5, 4, 5, 0, 0),
                false,
            ),
            (
                "not complete: still running old pods",
                dep_with_status(1, 2, 1, 1, 0, 1),
                false,
            ),
            (
                "not complete: one replica deployment never comes up",
                dep_with_status(1, 1, 1, 0, 1, 1),
                false,
            ),
        ];
        for (name, d, want) in cases {
            let s = d.status.clone().unwrap_or_default();
            assert_eq!(deployment_complete(&d, &s), want, "{name}");
        }
    }

    // Ported from upstream TestDeploymentProgressing.
    #[test]
    fn deployment_progressing_table() {
        let st = |current: i32, updated: i32, ready: i32, available: i32| DeploymentStatus {
            replicas: Some(current),
            updated_replicas: Some(updated),
            ready_replicas: Some(ready),
            available_replicas: Some(available),
            ..Default::default()
        };
        let d = |s: DeploymentStatus| Deployment {
            status: Some(s),
            ..Default::default()
        };
        let cases = [
            (
                "progressing: updated pods",
                d(st(10, 4, 4, 4)),
                st(10, 6, 4, 4),
                true,
            ),
            (
                "not progressing",
                d(st(10, 4, 4, 4)),
                st(10, 4, 4, 4),
                false,
            ),
            (
                "progressing: old pods removed",
                d(st(10, 4, 6, 6)),
                st(8, 4, 6, 6),
                true,
            ),
            (
                "not progressing: less new pods",
                d(st(10, 7, 3, 3)),
                st(10, 6, 3, 3),
                false,
            ),
            (
                "progressing: less overall but more new pods",
                d(st(10, 4, 7, 7)),
                st(8, 8, 5, 5),
                true,
            ),
            (
                "progressing: more ready pods",
                d(st(10, 10, 9, 8)),
                st(10, 10, 10, 8),
                true,
            ),
            (
                "progressing: more available pods",
                d(st(10, 10, 10, 9)),
                st(10, 10, 10, 10),
                true,
            ),
        ];
        for (name, d, new, want) in cases {
            assert_eq!(deployment_progressing(&d, &new), want, "{name}");
        }
    }

    // Ported from upstream TestDeploymentTimedOut.
    #[test]
    fn deployment_timed_out_table() {
        let time = |min: i64, sec: i64| {
            Timestamp::from_second(1_451_606_400 + min * 60 + sec).expect("valid")
        };
        let d = |reason: &str, pds: Option<i32>, from: Timestamp| {
            let mut d = new_deployment("foo", 1, None, None, None, &[]);
            d.spec.progress_deadline_seconds = pds;
            d.status = Some(DeploymentStatus {
                conditions: Some(vec![DeploymentCondition {
                    type_: Some(PROGRESSING.into()),
                    status: Some("True".into()),
                    reason: Some(reason.into()),
                    last_update_time: Some(Time(from)),
                    ..Default::default()
                }]),
                ..Default::default()
            });
            d
        };
        let cases = [
            (
                "no progressDeadlineSeconds specified - no timeout",
                d("", None, time(1, 9)),
                time(1, 20),
                false,
            ),
            (
                "progressDeadlineSeconds: 10s, now - started => 00:01:20 - 00:01:09 => 11s",
                d("", Some(10), time(1, 9)),
                time(1, 20),
                true,
            ),
            (
                "progressDeadlineSeconds: 10s, now - started => 00:01:20 - 00:01:11 => 9s",
                d("", Some(10), time(1, 11)),
                time(1, 20),
                false,
            ),
            (
                "previous status was a complete deployment",
                d(NEW_RS_AVAILABLE_REASON, Some(10), time(0, 0)),
                time(1, 20),
                false,
            ),
            (
                "progressDeadlineSeconds: MaxInt32 - never",
                d("", Some(i32::MAX), time(0, 0)),
                time(100, 0),
                false,
            ),
        ];
        for (name, d, now, want) in cases {
            let s = d.status.clone().unwrap_or_default();
            assert_eq!(deployment_timed_out(&d, &s, now), want, "{name}");
        }
    }
}
