//! Rollout progress: the `Progressing` condition and the progress-deadline check.
//!
//! After upstream `pkg/controller/deployment/progress.go`. With `progressDeadlineSeconds`
//! set, every sync during a rollout compares the status the ReplicaSets call for with the
//! current one:
//!
//! * complete (all replicas updated and available, no old ones):
//!   `Progressing=True/NewReplicaSetAvailable`;
//! * progress (more updated, ready or available pods, fewer old ones):
//!   `Progressing=True/ReplicaSetUpdated` with a fresh `lastUpdateTime`;
//! * no progress for longer than the deadline since that `lastUpdateTime`:
//!   `Progressing=False/ProgressDeadlineExceeded` (what makes `kubectl rollout status`
//!   fail).
//!
//! `ReplicaFailure` conditions of the ReplicaSets are surfaced on the Deployment. When
//! nothing changes, a rollout that is neither complete nor failed is requeued for the
//! moment its deadline passes ([`requeue_stuck_deployment`]).

use std::time::Duration;

use k8s_openapi::api::apps::v1::{Deployment, DeploymentCondition, DeploymentStatus, ReplicaSet};
use k8s_openapi::jiff::Timestamp;

use coxswain_runtime::controller::Action;

use super::sync::{calculate_status, status_unchanged};
use super::util::*;
use super::{DeploymentReconciler, Error};

/// The status with the Progressing and ReplicaFailure conditions updated (upstream
/// `syncRolloutStatus` without the write).
pub fn rollout_status(
    all: &[&ReplicaSet],
    new: Option<&ReplicaSet>,
    d: &Deployment,
    now: Timestamp,
) -> DeploymentStatus {
    let mut status = calculate_status(all, new, d, now);
    if !has_progress_deadline(d) {
        remove_condition(&mut status, PROGRESSING);
    }
    let current = deployment_condition(d, PROGRESSING);
    let complete_before = status.replicas.unwrap_or(0) == status.updated_replicas.unwrap_or(0)
        && current.is_some_and(|c| c.reason.as_deref() == Some(NEW_RS_AVAILABLE_REASON));
    if has_progress_deadline(d) && !complete_before {
        let dname = name(&d.metadata);
        let subject = |what: &str| match new {
            Some(rs) => format!("ReplicaSet {:?} {what}", name(&rs.metadata)),
            None => format!("Deployment {dname:?} {what}"),
        };
        if deployment_complete(d, &status) {
            let msg = subject("has successfully progressed.");
            set_condition(
                &mut status,
                new_condition(PROGRESSING, "True", NEW_RS_AVAILABLE_REASON, &msg, now),
            );
        } else if deployment_progressing(d, &status) {
            let msg = subject("is progressing.");
            let mut cond =
                new_condition(PROGRESSING, "True", REPLICA_SET_UPDATED_REASON, &msg, now);
            // same reason, new lastUpdateTime: progress is what resets the deadline
            if let Some(cur) = current {
                if cur.status.as_deref() == Some("True") {
                    cond.last_transition_time = cur.last_transition_time.clone();
                }
                remove_condition(&mut status, PROGRESSING);
            }
            set_condition(&mut status, cond);
        } else if deployment_timed_out(d, &status, now) {
            let msg = subject("has timed out progressing.");
            set_condition(
                &mut status,
                new_condition(PROGRESSING, "False", TIMED_OUT_REASON, &msg, now),
            );
        }
    }
    match replica_failures(all, new).into_iter().next() {
        Some(c) => set_condition(&mut status, c),
        None => remove_condition(&mut status, REPLICA_FAILURE),
    }
    status
}

/// `ReplicaFailure` conditions of the new ReplicaSet, else of any ReplicaSet.
fn replica_failures(all: &[&ReplicaSet], new: Option<&ReplicaSet>) -> Vec<DeploymentCondition> {
    let of = |rs: &ReplicaSet| -> Vec<DeploymentCondition> {
        rs.status
            .iter()
            .flat_map(|s| s.conditions.iter().flatten())
            .filter(|c| c.type_.as_deref() == Some(REPLICA_FAILURE))
            .map(replica_set_to_deployment_condition)
            .collect()
    };
    if let Some(n) = new {
        let found = of(n);
        if !found.is_empty() {
            return found;
        }
    }
    all.iter().flat_map(|rs| of(rs)).collect()
}

/// When to look at a stuck rollout again (upstream `requeueStuckDeployment`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Requeue {
    /// No deadline, no Progressing condition, complete or already timed out.
    Never,
    /// The deadline is (almost) due: now, rate limited.
    Now,
    /// After this long the deadline passes.
    After(Duration),
}

/// See [`Requeue`].
pub fn requeue_stuck_deployment(
    d: &Deployment,
    new_status: &DeploymentStatus,
    now: Timestamp,
) -> Requeue {
    let (Some(cur), Some(deadline)) = (deployment_condition(d, PROGRESSING), progress_deadline(d))
    else {
        return Requeue::Never;
    };
    if deployment_complete(d, new_status) || cur.reason.as_deref() == Some(TIMED_OUT_REASON) {
        return Requeue::Never;
    }
    let last = cur
        .last_update_time
        .as_ref()
        .map(|t| t.0)
        .unwrap_or(Timestamp::UNIX_EPOCH);
    let due = last.checked_add(deadline).unwrap_or(Timestamp::MAX);
    let after = due.duration_since(now);
    if after < k8s_openapi::jiff::SignedDuration::from_secs(1) {
        return Requeue::Now;
    }
    Requeue::After(Duration::try_from(after).unwrap_or(Duration::from_secs(1)))
}

impl DeploymentReconciler {
    /// Write the rollout status when it changed; otherwise requeue a stuck rollout for
    /// its deadline (upstream `syncRolloutStatus`).
    pub(crate) async fn sync_rollout_status(
        &self,
        all: &[&ReplicaSet],
        new: Option<&ReplicaSet>,
        d: &mut Deployment,
    ) -> Result<Action, Error> {
        let now = Timestamp::now();
        let status = rollout_status(all, new, d, now);
        if status_unchanged(d, &status) {
            return Ok(match requeue_stuck_deployment(d, &status, now) {
                Requeue::Never => Action::Done,
                Requeue::Now => Action::Requeue,
                // a second more, so that the check lands after the deadline
                Requeue::After(after) => Action::RequeueAfter(after + Duration::from_secs(1)),
            });
        }
        d.status = Some(status);
        self.update_status(d).await?;
        Ok(Action::Done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deployment::testutil::*;
    use k8s_openapi::api::apps::v1::DeploymentStrategy;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    fn ts(h: i8, m: i8, s: i8, ns: i32) -> Timestamp {
        k8s_openapi::jiff::civil::date(2017, 2, 15)
            .at(h, m, s, ns)
            .to_zoned(k8s_openapi::jiff::tz::TimeZone::UTC)
            .expect("valid")
            .timestamp()
    }

    fn status(replicas: i32, updated: i32, available: i32) -> DeploymentStatus {
        DeploymentStatus {
            replicas: Some(replicas),
            updated_replicas: Some(updated),
            available_replicas: Some(available),
            ..Default::default()
        }
    }

    // upstream progress_test.go `currentDeployment`: a Recreate Deployment, observed
    fn current_deployment(
        pds: Option<i32>,
        replicas: i32,
        status_replicas: i32,
        updated: i32,
        available: i32,
        conditions: Vec<DeploymentCondition>,
    ) -> Deployment {
        let mut d = new_deployment(
            "progress-test",
            replicas,
            None,
            None,
            None,
            &[("foo", "bar")],
        );
        let spec = &mut d.spec;
        spec.progress_deadline_seconds = pds;
        spec.strategy = Some(DeploymentStrategy {
            type_: Some(RECREATE.into()),
            rolling_update: None,
        });
        let mut s = status(status_replicas, updated, available);
        s.conditions = Some(conditions);
        d.status = Some(s);
        d
    }

    fn cond(status: &str, reason: &str, at: Option<Timestamp>) -> DeploymentCondition {
        DeploymentCondition {
            type_: Some(PROGRESSING.into()),
            status: Some(status.into()),
            reason: Some(reason.into()),
            last_update_time: at.map(Time),
            last_transition_time: at.map(Time),
            message: None,
        }
    }

    // Ported from upstream progress_test.go TestRequeueStuckDeployment.
    #[test]
    fn requeue_stuck_deployment_table() {
        let pds = Some(60);
        let failed = vec![cond("False", TIMED_OUT_REASON, None)];
        let stuck = vec![cond("True", "", Some(ts(18, 49, 0, 0)))];
        let cases: Vec<(&str, Deployment, DeploymentStatus, Timestamp, Requeue)> = vec![
            (
                "no progressDeadlineSeconds specified",
                current_deployment(None, 4, 3, 3, 2, vec![]),
                status(3, 3, 2),
                ts(0, 0, 0, 0),
                Requeue::Never,
            ),
            (
                "no progressing condition found",
                current_deployment(pds, 4, 3, 3, 2, vec![]),
                status(3, 3, 2),
                ts(0, 0, 0, 0),
                Requeue::Never,
            ),
            (
                "complete deployment does not need to be requeued",
                current_deployment(pds, 3, 3, 3, 3, vec![]),
                status(3, 3, 3),
                ts(0, 0, 0, 0),
                Requeue::Never,
            ),
            (
                "already failed deployment does not need to be requeued",
                current_deployment(pds, 3, 3, 3, 0, failed),
                status(3, 3, 0),
                ts(0, 0, 0, 0),
                Requeue::Never,
            ),
            (
                "stuck deployment - 30s",
                current_deployment(pds, 3, 3, 3, 1, stuck.clone()),
                status(3, 3, 1),
                ts(18, 49, 30, 0),
                Requeue::After(Duration::from_secs(30)),
            ),
            (
                "stuck deployment - 1s",
                current_deployment(pds, 3, 3, 3, 1, stuck.clone()),
                status(3, 3, 1),
                ts(18, 49, 59, 0),
                Requeue::After(Duration::from_secs(1)),
            ),
            (
                "failed deployment - less than a second => now",
                current_deployment(pds, 3, 3, 3, 1, stuck.clone()),
                status(3, 3, 1),
                ts(18, 49, 59, 1),
                Requeue::Now,
            ),
            (
                "failed deployment - now",
                current_deployment(pds, 3, 3, 3, 1, stuck.clone()),
                status(3, 3, 1),
                ts(18, 50, 0, 0),
                Requeue::Now,
            ),
            (
                "failed deployment - 1s after deadline",
                current_deployment(pds, 3, 3, 3, 1, stuck.clone()),
                status(3, 3, 1),
                ts(18, 50, 1, 0),
                Requeue::Now,
            ),
            (
                "failed deployment - 60s after deadline",
                current_deployment(pds, 3, 3, 3, 1, stuck),
                status(3, 3, 1),
                ts(18, 51, 0, 0),
                Requeue::Now,
            ),
        ];
        for (name, d, s, now, want) in cases {
            assert_eq!(requeue_stuck_deployment(&d, &s, now), want, "{name}");
        }
    }

    // Ported from upstream progress_test.go TestSyncRolloutStatus.
    #[test]
    fn sync_rollout_status_table() {
        let pds = Some(60);
        let t = ts(18, 49, 0, 0);
        let now = ts(19, 0, 0, 0);
        let failed_timed_out = cond("False", TIMED_OUT_REASON, Some(t));
        let new_rs_available = cond("True", NEW_RS_AVAILABLE_REASON, Some(t));
        let rs_updated = cond("True", REPLICA_SET_UPDATED_REASON, Some(t));
        struct Case {
            name: &'static str,
            d: Deployment,
            all: Vec<ReplicaSet>,
            new: Option<ReplicaSet>,
            // (status, reason, lastUpdate == t, lastTransition == t); None: no condition
            want: Option<(&'static str, &'static str, bool, bool)>,
        }
        let cases = vec![
            Case {
                name: "General: remove Progressing condition and do not estimate progress if deployment has no Progress Deadline",
                d: current_deployment(None, 3, 2, 2, 2, vec![rs_updated.clone()]),
                all: vec![rs_with_available("bar", 0, 1, 1)],
                new: Some(rs_with_available("foo", 3, 2, 2)),
                want: None,
            },
            Case {
                name: "General: do not estimate progress of deployment with only one active ReplicaSet",
                d: current_deployment(pds, 3, 3, 3, 3, vec![new_rs_available.clone()]),
                all: vec![rs_with_available("bar", 3, 3, 3)],
                new: None,
                want: Some(("True", NEW_RS_AVAILABLE_REASON, true, true)),
            },
            Case {
                name: "DeploymentProgressing: dont update lastTransitionTime if deployment already has Progressing=True",
                d: current_deployment(pds, 3, 2, 2, 2, vec![rs_updated.clone()]),
                all: vec![rs_with_available("bar", 0, 1, 1)],
                new: Some(rs_with_available("foo", 3, 2, 2)),
                want: Some(("True", REPLICA_SET_UPDATED_REASON, false, true)),
            },
            Case {
                name: "DeploymentProgressing: update everything if deployment has Progressing=False",
                d: current_deployment(pds, 3, 2, 2, 2, vec![failed_timed_out.clone()]),
                all: vec![rs_with_available("bar", 0, 1, 1)],
                new: Some(rs_with_available("foo", 3, 2, 2)),
                want: Some(("True", REPLICA_SET_UPDATED_REASON, false, false)),
            },
            Case {
                name: "DeploymentProgressing: create Progressing condition if it does not exist",
                d: current_deployment(pds, 3, 2, 2, 2, vec![]),
                all: vec![rs_with_available("bar", 0, 1, 1)],
                new: Some(rs_with_available("foo", 3, 2, 2)),
                want: Some(("True", REPLICA_SET_UPDATED_REASON, false, false)),
            },
            Case {
                name: "DeploymentComplete: dont update lastTransitionTime if deployment already has Progressing=True",
                d: current_deployment(pds, 3, 3, 3, 3, vec![rs_updated.clone()]),
                all: vec![],
                new: Some(rs_with_available("foo", 3, 3, 3)),
                want: Some(("True", NEW_RS_AVAILABLE_REASON, false, true)),
            },
            Case {
                name: "DeploymentComplete: update everything if deployment has Progressing=False",
                d: current_deployment(pds, 3, 3, 3, 3, vec![failed_timed_out.clone()]),
                all: vec![],
                new: Some(rs_with_available("foo", 3, 3, 3)),
                want: Some(("True", NEW_RS_AVAILABLE_REASON, false, false)),
            },
            Case {
                name: "DeploymentComplete: create Progressing condition if it does not exist",
                d: current_deployment(pds, 3, 3, 3, 3, vec![]),
                all: vec![],
                new: Some(rs_with_available("foo", 3, 3, 3)),
                want: Some(("True", NEW_RS_AVAILABLE_REASON, false, false)),
            },
            Case {
                name: "DeploymentComplete: defend against NPE when newRS=nil",
                d: current_deployment(pds, 0, 3, 3, 3, vec![rs_updated.clone()]),
                all: vec![rs_with_available("foo", 0, 0, 0)],
                new: None,
                want: Some(("True", NEW_RS_AVAILABLE_REASON, false, true)),
            },
            Case {
                name: "DeploymentTimedOut: update status if rollout exceeds Progress Deadline",
                d: current_deployment(pds, 3, 2, 2, 2, vec![rs_updated]),
                all: vec![],
                new: Some(rs_with_available("foo", 3, 2, 2)),
                want: Some(("False", TIMED_OUT_REASON, false, false)),
            },
            Case {
                name: "DeploymentTimedOut: do not update status if deployment has existing timedOut condition",
                d: current_deployment(pds, 3, 2, 2, 2, vec![failed_timed_out]),
                all: vec![],
                new: Some(rs_with_available("foo", 3, 2, 2)),
                want: Some(("False", TIMED_OUT_REASON, true, true)),
            },
        ];
        for c in cases {
            let mut all: Vec<&ReplicaSet> = c.all.iter().collect();
            all.extend(c.new.as_ref());
            let s = rollout_status(&all, c.new.as_ref(), &c.d, now);
            let got = get_condition(&s, PROGRESSING);
            match (c.want, got) {
                (None, None) => {}
                (Some((st, reason, upd, tr)), Some(g)) => {
                    assert_eq!(g.status.as_deref(), Some(st), "{}", c.name);
                    assert_eq!(g.reason.as_deref(), Some(reason), "{}", c.name);
                    assert_eq!(
                        g.last_update_time.as_ref().map(|x| x.0) == Some(t),
                        upd,
                        "{}: lastUpdateTime",
                        c.name
                    );
                    assert_eq!(
                        g.last_transition_time.as_ref().map(|x| x.0) == Some(t),
                        tr,
                        "{}: lastTransitionTime",
                        c.name
                    );
                }
                (want, got) => panic!("{}: want {want:?}, got {got:?}", c.name),
            }
        }
    }

    #[test]
    fn replica_failure_of_the_new_replica_set_wins() {
        use k8s_openapi::api::apps::v1::ReplicaSetCondition;
        let failure = |msg: &str| ReplicaSetCondition {
            type_: Some(REPLICA_FAILURE.into()),
            status: Some("True".into()),
            reason: Some("FailedCreate".into()),
            message: Some(msg.into()),
            last_transition_time: None,
        };
        let mut old = rs_with_available("old", 1, 1, 1);
        old.status.as_mut().expect("status").conditions = Some(vec![failure("old")]);
        let mut new = rs_with_available("new", 1, 0, 0);
        let d = current_deployment(Some(60), 2, 1, 0, 1, vec![]);
        let s = rollout_status(&[&old, &new], Some(&new), &d, Timestamp::now());
        assert_eq!(
            get_condition(&s, REPLICA_FAILURE).and_then(|c| c.message.as_deref()),
            Some("old")
        );
        new.status.as_mut().expect("status").conditions = Some(vec![failure("new")]);
        let s = rollout_status(&[&old, &new], Some(&new), &d, Timestamp::now());
        assert_eq!(
            get_condition(&s, REPLICA_FAILURE).and_then(|c| c.message.as_deref()),
            Some("new")
        );
        let s = rollout_status(&[], None, &d, Timestamp::now());
        assert!(get_condition(&s, REPLICA_FAILURE).is_none());
    }
}
