//! The status a ReplicaSet reports, after upstream's `calculateStatus`,
//! `updateReplicaSetStatus` and the condition helpers
//! (`pkg/controller/replicaset/replica_set_utils.go`).
//!
//! `replicas` counts the active pods the ReplicaSet controls, `fullyLabeledReplicas`
//! those whose labels include all of the template's, `readyReplicas` the ready ones
//! and `availableReplicas` those ready for at least `minReadySeconds`;
//! `terminatingReplicas` counts its pods being deleted. A failed create or delete sets
//! the `ReplicaFailure` condition (reason `FailedCreate` or `FailedDelete`, the error as
//! message); a sync without error removes it.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::{ReplicaSetCondition, ReplicaSetStatus};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

use super::kind::Spec;
use crate::controller_utils::{is_pod_available, is_pod_ready};

/// The condition type set when pods cannot be created or deleted.
pub const REPLICA_FAILURE: &str = "ReplicaFailure";

static NO_LABELS: BTreeMap<String, String> = BTreeMap::new();

fn labels(pod: &Pod) -> &BTreeMap<String, String> {
    pod.metadata.labels.as_ref().unwrap_or(&NO_LABELS)
}

/// Zero counts are omitted, as upstream's `omitempty`.
fn count(n: usize) -> Option<i32> {
    let n = i32::try_from(n).unwrap_or(i32::MAX);
    (n != 0).then_some(n)
}

/// A condition of `type_` with `status`, `reason` and `message`, changed now.
pub fn new_condition(
    type_: &str,
    status: &str,
    reason: &str,
    message: &str,
) -> ReplicaSetCondition {
    ReplicaSetCondition {
        type_: Some(type_.to_string()),
        status: Some(status.to_string()),
        reason: (!reason.is_empty()).then(|| reason.to_string()),
        message: (!message.is_empty()).then(|| message.to_string()),
        last_transition_time: Some(Time(Timestamp::now())),
    }
}

/// The condition of `type_`, if any.
pub fn get_condition<'a>(
    status: &'a ReplicaSetStatus,
    type_: &str,
) -> Option<&'a ReplicaSetCondition> {
    status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_.as_deref() == Some(type_))
}

/// Add or replace the condition of `cond`'s type, unless one with the same status and
/// reason is there already.
pub fn set_condition(status: &mut ReplicaSetStatus, cond: ReplicaSetCondition) {
    let type_ = cond.type_.clone().unwrap_or_default();
    if let Some(cur) = get_condition(status, &type_) {
        if cur.status == cond.status && cur.reason == cond.reason {
            return;
        }
    }
    remove_condition(status, &type_);
    status.conditions.get_or_insert_with(Vec::new).push(cond);
}

/// Remove the condition of `type_` (no conditions left: `None`).
pub fn remove_condition(status: &mut ReplicaSetStatus, type_: &str) {
    let kept: Vec<ReplicaSetCondition> = status
        .conditions
        .take()
        .into_iter()
        .flatten()
        .filter(|c| c.type_.as_deref() != Some(type_))
        .collect();
    status.conditions = (!kept.is_empty()).then_some(kept);
}

/// The new status of a ReplicaSet whose status is `current`: counts of its `active`
/// pods at `now`, `terminating` pods when the kind reports them, and the
/// `ReplicaFailure` condition from `manage_error`. `observedGeneration` is left as in
/// `current` (the status update sets it).
pub fn calculate_status(
    current: &ReplicaSetStatus,
    spec: &Spec,
    active: &[Arc<Pod>],
    terminating: Option<&[Arc<Pod>]>,
    manage_error: Option<&str>,
    now: Timestamp,
) -> ReplicaSetStatus {
    let mut status = current.clone();
    let template_labels = spec
        .template
        .metadata
        .as_ref()
        .and_then(|m| m.labels.as_ref())
        .unwrap_or(&NO_LABELS);
    let (mut fully_labeled, mut ready, mut available) = (0, 0, 0);
    for pod in active {
        let pod_labels = labels(pod);
        if template_labels
            .iter()
            .all(|(k, v)| pod_labels.get(k) == Some(v))
        {
            fully_labeled += 1;
        }
        if is_pod_ready(pod) {
            ready += 1;
            if is_pod_available(pod, spec.min_ready_seconds, now) {
                available += 1;
            }
        }
    }
    let failure = get_condition(current, REPLICA_FAILURE).is_some();
    match manage_error {
        Some(message) if !failure => {
            let diff = active.len() as i64 - i64::from(spec.replicas);
            let reason = match diff.cmp(&0) {
                std::cmp::Ordering::Less => crate::controller_utils::FAILED_CREATE_POD_REASON,
                std::cmp::Ordering::Greater => crate::controller_utils::FAILED_DELETE_POD_REASON,
                std::cmp::Ordering::Equal => "",
            };
            set_condition(
                &mut status,
                new_condition(REPLICA_FAILURE, "True", reason, message),
            );
        }
        None if failure => remove_condition(&mut status, REPLICA_FAILURE),
        _ => {}
    }
    status.replicas = i32::try_from(active.len()).unwrap_or(i32::MAX);
    status.fully_labeled_replicas = count(fully_labeled);
    status.ready_replicas = count(ready);
    status.available_replicas = count(available);
    status.terminating_replicas = terminating.map(|t| i32::try_from(t.len()).unwrap_or(i32::MAX));
    status
}

/// Whether writing `new` over `current` would change nothing (upstream's steady-state
/// check of `updateReplicaSetStatus`), `generation` being the object's. A
/// `terminatingReplicas` the server never stored does not count as a change.
pub fn status_unchanged(
    current: &ReplicaSetStatus,
    new: &ReplicaSetStatus,
    generation: i64,
) -> bool {
    let n = |v: Option<i32>| v.unwrap_or(0);
    current.replicas == new.replicas
        && n(current.fully_labeled_replicas) == n(new.fully_labeled_replicas)
        && n(current.ready_replicas) == n(new.ready_replicas)
        && n(current.available_replicas) == n(new.available_replicas)
        // a server that does not keep `terminatingReplicas` (an API older than 1.33)
        // must not make every sync write the status again
        && (current.terminating_replicas.is_none()
            || current.terminating_replicas == new.terminating_replicas)
        && current.observed_generation.unwrap_or(0) == generation
        && current.conditions == new.conditions
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller_utils::pod::tests::pod;
    use k8s_openapi::api::core::v1::PodTemplateSpec;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use k8s_openapi::jiff::SignedDuration;

    fn spec(replicas: i32, template_labels: &[(&str, &str)], min_ready: i32) -> Spec {
        Spec {
            replicas,
            min_ready_seconds: min_ready,
            selector: None,
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(
                        template_labels
                            .iter()
                            .map(|(k, v)| (k.to_string(), v.to_string()))
                            .collect(),
                    ),
                    ..Default::default()
                }),
                spec: None,
            },
        }
    }

    fn labeled(
        name: &str,
        l: &[(&str, &str)],
        ready_since: Option<Timestamp>,
        phase: &str,
    ) -> Arc<Pod> {
        let mut p = pod(name, phase, ready_since);
        p.metadata.labels = Some(
            l.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        );
        Arc::new(p)
    }

    // Upstream TestCalculateStatus (pkg/controller/replicaset/replica_set_utils_test.go).
    #[test]
    fn calculate_status_table() {
        let now = Timestamp::now();
        let ready_at = now.checked_sub(SignedDuration::from_secs(5)).ok();
        let label = [("name", "foo")];
        let full = [("name", "foo"), ("type", "production")];
        // as upstream's newReplicaSet: every template carries the full labels, the pods
        // of the "not fully labelled" ReplicaSet only its selector's
        let not_fully_labelled = spec(1, &full, 0);
        let fully_labelled = spec(2, &full, 0);
        let long_min_ready = spec(1, &full, 3600);
        let running = |n: &str, l: &[(&str, &str)]| labeled(n, l, ready_at, "Running");
        let terminating = |n: &str| {
            let mut p = (*running(n, &full)).clone();
            p.metadata.deletion_timestamp = Some(Time(now));
            Arc::new(p)
        };
        // (name, spec, active, terminating, want replicas/fully/ready/available/terminating)
        type Want = (i32, i32, i32, i32, Option<i32>);
        type Case<'a> = (
            &'a str,
            &'a Spec,
            Vec<Arc<Pod>>,
            Option<Vec<Arc<Pod>>>,
            Want,
        );
        let cases: Vec<Case> = vec![
            (
                "1 fully labelled pod",
                &fully_labelled,
                vec![running("pod1", &full)],
                None,
                (1, 1, 1, 1, None),
            ),
            (
                "1 not fully labelled pod",
                &not_fully_labelled,
                vec![running("pod1", &label)],
                None,
                (1, 0, 1, 1, None),
            ),
            (
                "2 fully labelled pods",
                &fully_labelled,
                vec![running("pod1", &full), running("pod2", &full)],
                None,
                (2, 2, 2, 2, None),
            ),
            (
                "2 fully labelled pods, terminating counted",
                &fully_labelled,
                vec![running("pod1", &full), running("pod2", &full)],
                Some(vec![]),
                (2, 2, 2, 2, Some(0)),
            ),
            (
                "2 not fully labelled pods",
                &not_fully_labelled,
                vec![running("pod1", &label), running("pod2", &label)],
                None,
                (2, 0, 2, 2, None),
            ),
            (
                "1 fully labelled pod, 1 not fully labelled pod",
                &not_fully_labelled,
                vec![running("pod1", &label), running("pod2", &full)],
                None,
                (2, 1, 2, 2, None),
            ),
            (
                "1 non-ready pod",
                &fully_labelled,
                vec![labeled("pod1", &full, None, "Pending")],
                None,
                (1, 1, 0, 0, None),
            ),
            (
                "1 ready but non-available pod",
                &long_min_ready,
                vec![running("pod1", &full)],
                None,
                (1, 1, 1, 0, None),
            ),
            (
                "1 fully labelled pod and 2 terminating",
                &fully_labelled,
                vec![running("pod1", &full)],
                Some(vec![terminating("pod2"), terminating("pod3")]),
                (1, 1, 1, 1, Some(2)),
            ),
        ];
        for (name, spec, active, term, want) in cases {
            let s = calculate_status(
                &ReplicaSetStatus::default(),
                spec,
                &active,
                term.as_deref(),
                None,
                now,
            );
            let got = (
                s.replicas,
                s.fully_labeled_replicas.unwrap_or(0),
                s.ready_replicas.unwrap_or(0),
                s.available_replicas.unwrap_or(0),
                s.terminating_replicas,
            );
            assert_eq!(got, want, "{name}");
            assert_eq!(s.conditions, None, "{name}");
        }
    }

    // Upstream TestCalculateStatusConditions (pkg/controller/replicaset/replica_set_utils_test.go).
    #[test]
    fn calculate_status_conditions() {
        let now = Timestamp::now();
        let l = [("name", "foo")];
        let rs = spec(2, &l, 0);
        let pods = |n: usize| -> Vec<Arc<Pod>> {
            (0..n)
                .map(|i| labeled(&format!("pod{i}"), &l, Some(now), "Running"))
                .collect()
        };
        let with_failure = ReplicaSetStatus {
            conditions: Some(vec![ReplicaSetCondition {
                type_: Some(REPLICA_FAILURE.into()),
                status: Some("True".into()),
                ..Default::default()
            }]),
            ..Default::default()
        };
        let reason_of = |s: &ReplicaSetStatus| {
            get_condition(s, REPLICA_FAILURE).map(|c| (c.reason.clone(), c.message.clone()))
        };
        let err = Some("fake manageReplicasErr");
        // error, no condition, too few pods: FailedCreate
        let s = calculate_status(&ReplicaSetStatus::default(), &rs, &pods(1), None, err, now);
        assert_eq!(
            reason_of(&s),
            Some((
                Some("FailedCreate".into()),
                Some("fake manageReplicasErr".into())
            ))
        );
        assert_eq!(s.conditions.as_ref().map(Vec::len), Some(1));
        // error, no condition, too many pods: FailedDelete
        let s = calculate_status(&ReplicaSetStatus::default(), &rs, &pods(3), None, err, now);
        assert_eq!(
            reason_of(&s),
            Some((
                Some("FailedDelete".into()),
                Some("fake manageReplicasErr".into())
            ))
        );
        // no error, condition present: removed
        let s = calculate_status(&with_failure, &spec(10, &l, 0), &pods(1), None, None, now);
        assert_eq!(s.conditions, None);
        // error, condition present: left as it is
        let s = calculate_status(&with_failure, &spec(10, &l, 0), &pods(1), None, err, now);
        assert_eq!(s.conditions, with_failure.conditions);
        // no error, no condition: none
        let s = calculate_status(&ReplicaSetStatus::default(), &rs, &pods(1), None, None, now);
        assert_eq!(s.conditions, None);
    }

    #[test]
    fn conditions_helpers_keep_other_types() {
        let mut s = ReplicaSetStatus::default();
        set_condition(&mut s, new_condition("Other", "True", "X", ""));
        set_condition(
            &mut s,
            new_condition(REPLICA_FAILURE, "True", "FailedCreate", "m1"),
        );
        let first = get_condition(&s, REPLICA_FAILURE).cloned();
        // same status and reason: not replaced (the transition time stays)
        set_condition(
            &mut s,
            new_condition(REPLICA_FAILURE, "True", "FailedCreate", "m2"),
        );
        assert_eq!(get_condition(&s, REPLICA_FAILURE).cloned(), first);
        remove_condition(&mut s, REPLICA_FAILURE);
        assert_eq!(s.conditions.as_ref().map(Vec::len), Some(1));
        assert!(get_condition(&s, "Other").is_some());
    }

    #[test]
    fn unchanged_status_is_not_written() {
        let s = ReplicaSetStatus {
            replicas: 2,
            ready_replicas: Some(2),
            observed_generation: Some(3),
            ..Default::default()
        };
        let mut same = s.clone();
        same.fully_labeled_replicas = Some(0);
        assert!(status_unchanged(&s, &same, 3));
        assert!(
            !status_unchanged(&s, &same, 4),
            "a new generation is always written"
        );
        // terminatingReplicas: compared once the server keeps it
        same.terminating_replicas = Some(0);
        assert!(status_unchanged(&s, &same, 3));
        let kept = ReplicaSetStatus {
            terminating_replicas: Some(1),
            ..s.clone()
        };
        assert!(!status_unchanged(&kept, &same, 3));
        same.available_replicas = Some(1);
        assert!(!status_unchanged(&s, &same, 3));
    }
}
