//! Deployment helpers: annotations, revisions, conditions, fenceposts, proportions,
//! replica counts and the pod-template hash.
//!
//! The facts follow upstream `pkg/controller/deployment/util/deployment_util.go` (and the
//! few `pkg/controller` helpers it leans on: `ComputeHash`, `FilterActiveReplicaSets`,
//! the `ReplicaSetsBy*` orderings). Everything here is pure: no client, no clock (callers
//! pass `now`), so the upstream table tests (`deployment_util_test.go`, `hash_test.go`)
//! port one to one; they sit next to the code of each part.
//!
//! * this module: constants, field access, revisions and annotations;
//! * [`conditions`]: the Progressing/Available conditions and the progress predicates;
//! * [`scaling`]: fenceposts (maxSurge, maxUnavailable), proportions, counts, orderings;
//! * [`hash`]: template equality, the pod-template hash, finding new and old ReplicaSets.
//!
//! Where a field that the API server defaults is missing (an object that never went
//! through defaulting), the API default is assumed: `replicas` 1, strategy
//! `RollingUpdate`.

pub mod conditions;
pub mod hash;
pub mod scaling;

pub use conditions::*;
pub use hash::*;
pub use scaling::*;

use std::borrow::Borrow;
use std::collections::BTreeMap;

use coxswain_runtime::controllerutil::get_controller_of;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;

/// The revision of a ReplicaSet (and of its Deployment): the rollout sequence number.
pub const REVISION_ANNOTATION: &str = "deployment.kubernetes.io/revision";
/// The older revisions a ReplicaSet served (comma separated), set when it is rolled back to.
pub const REVISION_HISTORY_ANNOTATION: &str = "deployment.kubernetes.io/revision-history";
/// The Deployment's `spec.replicas` when it last scaled the ReplicaSet.
pub const DESIRED_REPLICAS_ANNOTATION: &str = "deployment.kubernetes.io/desired-replicas";
/// `spec.replicas + maxSurge` of the Deployment when it last scaled the ReplicaSet.
pub const MAX_REPLICAS_ANNOTATION: &str = "deployment.kubernetes.io/max-replicas";
/// Why a revision was made (copied to the ReplicaSet, shown by `kubectl rollout history`).
pub const CHANGE_CAUSE_ANNOTATION: &str = "kubernetes.io/change-cause";
/// `kubectl apply`'s record; never copied between Deployment and ReplicaSet.
pub const LAST_APPLIED_CONFIG_ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";
/// The deprecated `spec.rollbackTo` of extensions/v1beta1, round-tripped as an annotation.
pub const DEPRECATED_ROLLBACK_TO: &str = "deprecated.deployment.rollback.to";
/// The label that tells the ReplicaSets (and pods) of one Deployment apart.
pub const DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY: &str =
    crate::controller_utils::owner_index::POD_TEMPLATE_HASH_LABEL;
/// Upstream keeps `revision-history` under 2000 characters (about 100 revisions).
pub const MAX_REV_HISTORY_LENGTH_IN_CHARS: usize = 2000;

/// Event reason: no ReplicaSet has the revision to roll back to.
pub const ROLLBACK_REVISION_NOT_FOUND: &str = "DeploymentRollbackRevisionNotFound";
/// Event reason: the revision to roll back to has the current template.
pub const ROLLBACK_TEMPLATE_UNCHANGED: &str = "DeploymentRollbackTemplateUnchanged";
/// Event reason: rolled back.
pub const ROLLBACK_DONE: &str = "DeploymentRollback";

/// Progressing reason: a ReplicaSet was scaled as part of the rollout.
pub const REPLICA_SET_UPDATED_REASON: &str = "ReplicaSetUpdated";
/// Progressing reason: the new ReplicaSet could not be created.
pub const FAILED_RS_CREATE_REASON: &str = "ReplicaSetCreateError";
/// Progressing reason: the new ReplicaSet was created.
pub const NEW_REPLICA_SET_REASON: &str = "NewReplicaSetCreated";
/// Progressing reason: an existing ReplicaSet matches the template.
pub const FOUND_NEW_RS_REASON: &str = "FoundNewReplicaSet";
/// Progressing reason: the rollout completed.
pub const NEW_RS_AVAILABLE_REASON: &str = "NewReplicaSetAvailable";
/// Progressing reason: no progress within `progressDeadlineSeconds`.
pub const TIMED_OUT_REASON: &str = "ProgressDeadlineExceeded";
/// Progressing reason: the Deployment is paused.
pub const PAUSED_DEPLOY_REASON: &str = "DeploymentPaused";
/// Progressing reason: the Deployment was resumed.
pub const RESUMED_DEPLOY_REASON: &str = "DeploymentResumed";
/// Available reason: at least `replicas - maxUnavailable` pods are available.
pub const MINIMUM_REPLICAS_AVAILABLE: &str = "MinimumReplicasAvailable";
/// Available reason: fewer than `replicas - maxUnavailable` pods are available.
pub const MINIMUM_REPLICAS_UNAVAILABLE: &str = "MinimumReplicasUnavailable";

/// Condition type `Progressing`.
pub const PROGRESSING: &str = "Progressing";
/// Condition type `Available`.
pub const AVAILABLE: &str = "Available";
/// Condition type `ReplicaFailure`.
pub const REPLICA_FAILURE: &str = "ReplicaFailure";

/// Strategy type `RollingUpdate`.
pub const ROLLING_UPDATE: &str = "RollingUpdate";
/// Strategy type `Recreate`.
pub const RECREATE: &str = "Recreate";

// ---------------------------------------------------------------------------------------
// field access with API defaults

/// `spec.replicas` of a Deployment (API default 1).
pub fn replicas(d: &Deployment) -> i32 {
    d.spec.replicas.unwrap_or(1)
}

/// `spec.replicas` of a ReplicaSet (API default 1).
pub fn rs_replicas(rs: &ReplicaSet) -> i32 {
    rs.spec.replicas.unwrap_or(1)
}

/// Set `spec.replicas` of a ReplicaSet.
pub fn set_rs_replicas(rs: &mut ReplicaSet, n: i32) {
    rs.spec.replicas = Some(n);
}

/// `status.replicas` of a ReplicaSet.
pub fn rs_status_replicas(rs: &ReplicaSet) -> i32 {
    rs.status.as_ref().map(|s| s.replicas).unwrap_or(0)
}

/// `status.availableReplicas` of a ReplicaSet.
pub fn rs_available(rs: &ReplicaSet) -> i32 {
    rs.status
        .as_ref()
        .and_then(|s| s.available_replicas)
        .unwrap_or(0)
}

/// `status.readyReplicas` of a ReplicaSet.
pub fn rs_ready(rs: &ReplicaSet) -> i32 {
    rs.status
        .as_ref()
        .and_then(|s| s.ready_replicas)
        .unwrap_or(0)
}

/// The available replicas a scale-down may count on: `status.availableReplicas`, but
/// never more than `spec.replicas` (a status not yet updated after a scale-down still
/// counts pods the ReplicaSet controller is about to delete).
pub fn rs_available_for_scaling(rs: &ReplicaSet) -> i32 {
    rs_available(rs).min(rs_replicas(rs)).max(0)
}

/// The pods a ReplicaSet may have right now: the larger of `spec.replicas` and
/// `status.replicas` (pods of a scaled-down ReplicaSet exist until it deletes them).
pub fn rs_pods_upper_bound(rs: &ReplicaSet) -> i32 {
    rs_replicas(rs).max(rs_status_replicas(rs))
}

/// The strategy type (API default `RollingUpdate`).
pub fn strategy_type(d: &Deployment) -> &str {
    d.spec
        .strategy
        .as_ref()
        .and_then(|s| s.type_.as_deref())
        .unwrap_or(ROLLING_UPDATE)
}

/// Whether the strategy is a rolling update.
pub fn is_rolling_update(d: &Deployment) -> bool {
    strategy_type(d) == ROLLING_UPDATE
}

/// Whether the Deployment is paused.
pub fn is_paused(d: &Deployment) -> bool {
    d.spec.paused.unwrap_or(false)
}

/// The pod template (empty when missing).
pub fn template(d: &Deployment) -> PodTemplateSpec {
    d.spec.template.clone()
}

/// The pod template of a ReplicaSet (empty when missing).
pub fn rs_template(rs: &ReplicaSet) -> PodTemplateSpec {
    rs.spec.template.clone().unwrap_or_default()
}

/// The name of an object (empty when missing).
pub fn name(meta: &ObjectMeta) -> &str {
    meta.name.as_deref().unwrap_or("")
}

/// The annotation `key` of an object.
pub fn annotation<'a>(meta: &'a ObjectMeta, key: &str) -> Option<&'a str> {
    meta.annotations.as_ref()?.get(key).map(String::as_str)
}

/// Whether `meta` is controlled by the object with UID `uid`.
pub fn is_controlled_by(meta: &ObjectMeta, uid: &str) -> bool {
    get_controller_of(meta).is_some_and(|r| r.uid == uid)
}

/// `now` cut to whole seconds, as `metav1.Time` serialises it (so a condition written and
/// read back compares equal).
pub fn now_seconds(now: Timestamp) -> Time {
    Time(Timestamp::from_second(now.as_second()).unwrap_or(now))
}

// ---------------------------------------------------------------------------------------
// revisions and annotations

/// Set the Deployment's revision annotation; whether it changed.
pub fn set_deployment_revision(d: &mut Deployment, revision: &str) -> bool {
    let ann = d.metadata.annotations.get_or_insert_with(BTreeMap::new);
    if ann.get(REVISION_ANNOTATION).map(String::as_str) == Some(revision) {
        return false;
    }
    ann.insert(REVISION_ANNOTATION.into(), revision.into());
    true
}

/// The revision of an object: 0 without the annotation, an error when it is not a number.
pub fn revision(meta: &ObjectMeta) -> Result<i64, std::num::ParseIntError> {
    match annotation(meta, REVISION_ANNOTATION) {
        None => Ok(0),
        Some(v) => v.parse(),
    }
}

/// The highest revision among `rss` (unparsable revisions are skipped).
pub fn max_revision<T: Borrow<ReplicaSet>>(rss: &[T]) -> i64 {
    rss.iter()
        .filter_map(|rs| revision(&rs.borrow().metadata).ok())
        .fold(0, i64::max)
}

/// The second highest revision among `rss`: the one before the current.
pub fn last_revision<T: Borrow<ReplicaSet>>(rss: &[T]) -> i64 {
    let (mut max, mut sec) = (0i64, 0i64);
    for rs in rss {
        if let Ok(v) = revision(&rs.borrow().metadata) {
            if v >= max {
                sec = max;
                max = v;
            } else if v > sec {
                sec = v;
            }
        }
    }
    sec
}

const ANNOTATIONS_TO_SKIP: &[&str] = &[
    LAST_APPLIED_CONFIG_ANNOTATION,
    REVISION_ANNOTATION,
    REVISION_HISTORY_ANNOTATION,
    DESIRED_REPLICAS_ANNOTATION,
    MAX_REPLICAS_ANNOTATION,
    DEPRECATED_ROLLBACK_TO,
];

/// Whether an annotation stays where it is (is never copied between Deployment and
/// ReplicaSet).
pub fn skip_copy_annotation(key: &str) -> bool {
    ANNOTATIONS_TO_SKIP.contains(&key)
}

/// Copy the Deployment's annotations (but the skipped ones) to the ReplicaSet; whether
/// anything changed.
pub fn copy_deployment_annotations_to_replica_set(d: &Deployment, rs: &mut ReplicaSet) -> bool {
    let ann = rs.metadata.annotations.get_or_insert_with(BTreeMap::new);
    let mut changed = false;
    for (k, v) in d.metadata.annotations.iter().flatten() {
        if skip_copy_annotation(k) || ann.get(k) == Some(v) {
            continue;
        }
        ann.insert(k.clone(), v.clone());
        changed = true;
    }
    changed
}

/// Give the Deployment the annotations of the ReplicaSet it rolls back to (keeping its own
/// skipped ones).
pub fn set_deployment_annotations_to(d: &mut Deployment, rs: &ReplicaSet) {
    let mut ann: BTreeMap<String, String> = d
        .metadata
        .annotations
        .iter()
        .flatten()
        .filter(|(k, _)| skip_copy_annotation(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    for (k, v) in rs.metadata.annotations.iter().flatten() {
        if !skip_copy_annotation(k) {
            ann.insert(k.clone(), v.clone());
        }
    }
    d.metadata.annotations = Some(ann);
}

/// Update the new ReplicaSet's annotations: copy the Deployment's, raise its revision to
/// `new_revision` (remembering the old one in `revision-history` when it had one, within
/// `rev_history_limit_in_chars`) and, for a ReplicaSet about to be created, the replicas
/// annotations. Whether anything changed.
pub fn set_new_replica_set_annotations(
    d: &Deployment,
    rs: &mut ReplicaSet,
    new_revision: &str,
    exists: bool,
    rev_history_limit_in_chars: usize,
) -> bool {
    let mut changed = copy_deployment_annotations_to_replica_set(d, rs);
    let ann = rs.metadata.annotations.get_or_insert_with(BTreeMap::new);
    let old_revision = ann.get(REVISION_ANNOTATION).cloned();
    let old_int = match old_revision.as_deref() {
        None | Some("") => 0,
        Some(s) => match s.parse::<i64>() {
            Ok(v) => v,
            Err(e) => {
                tracing::warn!(replicaset = %name(&rs.metadata), error = %e, "revision annotation is not a number; not updating it");
                return false;
            }
        },
    };
    let Ok(new_int) = new_revision.parse::<i64>() else {
        tracing::warn!(revision = new_revision, "new revision is not a number");
        return false;
    };
    if old_int < new_int {
        ann.insert(REVISION_ANNOTATION.into(), new_revision.into());
        changed = true;
        // a ReplicaSet that had a revision is rolled back to: keep its history
        if let Some(old) = old_revision {
            let history = ann
                .get(REVISION_HISTORY_ANNOTATION)
                .cloned()
                .unwrap_or_default();
            let olds: Vec<&str> = history.split(',').collect();
            if olds[0].is_empty() {
                ann.insert(REVISION_HISTORY_ANNOTATION.into(), old);
            } else {
                let mut total = history.len() + old.len() + 1;
                let mut start = 0;
                while total > rev_history_limit_in_chars && start < olds.len() {
                    total = total.saturating_sub(olds[start].len() + 1);
                    start += 1;
                }
                if total <= rev_history_limit_in_chars {
                    let mut kept: Vec<&str> = olds[start..].to_vec();
                    kept.push(&old);
                    let joined = kept.join(",");
                    ann.insert(REVISION_HISTORY_ANNOTATION.into(), joined);
                } else {
                    tracing::warn!(
                        limit = rev_history_limit_in_chars,
                        "not appending revision: revision history length limit reached"
                    );
                }
            }
        }
    }
    if !exists && set_replicas_annotations(rs, replicas(d), replicas(d) + max_surge(d)) {
        changed = true;
    }
    changed
}

fn int_annotation(rs: &ReplicaSet, key: &str) -> Option<i32> {
    let v = annotation(&rs.metadata, key)?;
    match v.parse::<i32>() {
        Ok(i) => Some(i),
        Err(_) => {
            tracing::debug!(replicaset = %name(&rs.metadata), key, value = v, "annotation is not a number");
            None
        }
    }
}

/// The `desired-replicas` annotation.
pub fn desired_replicas_annotation(rs: &ReplicaSet) -> Option<i32> {
    int_annotation(rs, DESIRED_REPLICAS_ANNOTATION)
}

/// The `max-replicas` annotation.
pub fn max_replicas_annotation(rs: &ReplicaSet) -> Option<i32> {
    int_annotation(rs, MAX_REPLICAS_ANNOTATION)
}

/// Set `desired-replicas` and `max-replicas`; whether either changed.
pub fn set_replicas_annotations(rs: &mut ReplicaSet, desired: i32, max: i32) -> bool {
    let ann = rs.metadata.annotations.get_or_insert_with(BTreeMap::new);
    let mut changed = false;
    for (k, v) in [
        (DESIRED_REPLICAS_ANNOTATION, desired),
        (MAX_REPLICAS_ANNOTATION, max),
    ] {
        let s = v.to_string();
        if ann.get(k) != Some(&s) {
            ann.insert(k.into(), s);
            changed = true;
        }
    }
    changed
}

/// Whether `desired-replicas` or `max-replicas` differ from these values.
pub fn replicas_annotations_need_update(rs: &ReplicaSet, desired: i32, max: i32) -> bool {
    annotation(&rs.metadata, DESIRED_REPLICAS_ANNOTATION) != Some(desired.to_string().as_str())
        || annotation(&rs.metadata, MAX_REPLICAS_ANNOTATION) != Some(max.to_string().as_str())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deployment::testutil::*;

    // Ported from upstream TestAnnotationUtils.
    #[test]
    fn annotation_utils() {
        let mut d = generate_deployment("nginx");
        let mut rs = generate_rs(&d, "nginx-1");
        d.metadata
            .annotations
            .get_or_insert_with(Default::default)
            .insert(REVISION_ANNOTATION.into(), "1".into());
        for i in 0..20 {
            let next = (i + 1).to_string();
            set_new_replica_set_annotations(
                &d,
                &mut rs,
                &next,
                true,
                MAX_REV_HISTORY_LENGTH_IN_CHARS,
            );
            assert_eq!(
                annotation(&rs.metadata, REVISION_ANNOTATION),
                Some(next.as_str())
            );
        }
        assert!(set_replicas_annotations(&mut rs, 10, 11));
        assert_eq!(
            annotation(&rs.metadata, DESIRED_REPLICAS_ANNOTATION),
            Some("10")
        );
        assert_eq!(
            annotation(&rs.metadata, MAX_REPLICAS_ANNOTATION),
            Some("11")
        );
        assert!(!set_replicas_annotations(&mut rs, 10, 11));

        rs.metadata
            .annotations
            .get_or_insert_with(Default::default)
            .insert(DESIRED_REPLICAS_ANNOTATION.into(), "1".into());
        rs.status = Some(k8s_openapi::api::apps::v1::ReplicaSetStatus {
            available_replicas: Some(1),
            ..Default::default()
        });
        set_rs_replicas(&mut rs, 1);
        assert!(is_saturated(&d, &rs));
    }

    // Ported from upstream TestReplicasAnnotationsNeedUpdate.
    #[test]
    fn replicas_annotations_need_update_table() {
        let with = |desired: &str, max: &str| {
            let mut r = rs("hello", 10, &[], None);
            r.metadata.annotations = Some(labels(&[
                (DESIRED_REPLICAS_ANNOTATION, desired),
                (MAX_REPLICAS_ANNOTATION, max),
            ]));
            r
        };
        assert!(
            replicas_annotations_need_update(&with("8", "16"), 10, 11),
            "desired replicas differ"
        );
        assert!(
            replicas_annotations_need_update(&with("10", "16"), 10, 11),
            "max replicas differ"
        );
        assert!(!replicas_annotations_need_update(&with("10", "11"), 10, 11));
        assert!(
            replicas_annotations_need_update(&rs("hello", 10, &[], None), 10, 11),
            "no annotations"
        );
    }

    // After upstream TestAnnotationUtils and the revision history of SetNewReplicaSetAnnotations:
    // a ReplicaSet rolled back to keeps its former revisions, within the length limit.
    #[test]
    fn revision_history() {
        let d = generate_deployment("nginx");
        let mut rs = generate_rs(&d, "nginx-1");
        assert!(set_new_replica_set_annotations(
            &d, &mut rs, "1", true, 2000
        ));
        assert_eq!(
            annotation(&rs.metadata, REVISION_HISTORY_ANNOTATION),
            None,
            "a first revision has no history"
        );
        set_new_replica_set_annotations(&d, &mut rs, "3", true, 2000);
        assert_eq!(
            annotation(&rs.metadata, REVISION_HISTORY_ANNOTATION),
            Some("1")
        );
        set_new_replica_set_annotations(&d, &mut rs, "5", true, 2000);
        assert_eq!(
            annotation(&rs.metadata, REVISION_HISTORY_ANNOTATION),
            Some("1,3")
        );
        assert!(
            !set_new_replica_set_annotations(&d, &mut rs, "4", true, 2000),
            "a lower revision changes nothing"
        );
        assert_eq!(annotation(&rs.metadata, REVISION_ANNOTATION), Some("5"));
        // the oldest entries go first when the history would be too long
        set_new_replica_set_annotations(&d, &mut rs, "17", true, 4);
        assert_eq!(
            annotation(&rs.metadata, REVISION_HISTORY_ANNOTATION),
            Some("3,5")
        );
        // a revision that is not a number is left alone
        rs.metadata
            .annotations
            .get_or_insert_with(Default::default)
            .insert(REVISION_ANNOTATION.into(), "x".into());
        assert!(!set_new_replica_set_annotations(
            &d, &mut rs, "20", true, 2000
        ));
        // a new ReplicaSet gets the replicas annotations
        let mut fresh = generate_rs(&d, "nginx-2");
        set_new_replica_set_annotations(&d, &mut fresh, "1", false, 2000);
        assert_eq!(
            annotation(&fresh.metadata, DESIRED_REPLICAS_ANNOTATION),
            Some("1")
        );
    }

    #[test]
    fn revisions() {
        let with_rev = |n: &str, rev: Option<&str>| {
            let mut r = rs(n, 0, &[], None);
            if let Some(v) = rev {
                r.metadata.annotations = Some(labels(&[(REVISION_ANNOTATION, v)]));
            }
            r
        };
        let all = vec![
            with_rev("a", Some("3")),
            with_rev("b", Some("1")),
            with_rev("c", Some("x")),
            with_rev("d", None),
            with_rev("e", Some("2")),
        ];
        assert_eq!(max_revision(&all), 3);
        assert_eq!(last_revision(&all), 2);
        assert_eq!(max_revision::<ReplicaSet>(&[]), 0);
        assert_eq!(last_revision(&[with_rev("a", Some("1"))]), 0);
        let mut d = generate_deployment("nginx");
        assert!(set_deployment_revision(&mut d, "4"));
        assert!(!set_deployment_revision(&mut d, "4"));
        assert_eq!(revision(&d.metadata), Ok(4));
    }
}
