//! The RollingUpdate strategy: grow the new ReplicaSet and shrink the old ones in steps,
//! within `maxSurge` and `maxUnavailable`.
//!
//! After upstream `pkg/controller/deployment/rolling.go`. Each sync first tries to scale
//! the new ReplicaSet up ([`plan_new_replica_set`]: as far as `replicas + maxSurge`
//! total pods allow); only when it cannot does it scale old ReplicaSets down
//! ([`plan_old_replica_sets`]): first their unhealthy (unavailable) replicas, which costs
//! no availability, then available ones as long as `replicas - maxUnavailable` pods stay
//! available, oldest ReplicaSets first. A completed rollout cleans up old ReplicaSets
//! beyond `revisionHistoryLimit`.
//!
//! Two guards go beyond upstream, which trusts spec counts alone: the pod total counts
//! the pods a scaled-down ReplicaSet may still have (`max(spec, status.replicas)`), and
//! availability never counts more than a ReplicaSet's `spec.replicas` (its status may not
//! yet reflect a scale-down). Both only make steps wait for the ReplicaSet controller; they
//! keep `pods <= replicas + maxSurge` and `available >= replicas - maxUnavailable` true
//! at every instant, not only between syncs.

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};

use coxswain_runtime::controller::Action;

use super::sync::all_of;
use super::util::*;
use super::{put_rs, DeploymentReconciler, Error};

/// The new size of the new ReplicaSet, `None` when it stays (upstream
/// `reconcileNewReplicaSet`).
pub fn plan_new_replica_set(
    all: &[&ReplicaSet],
    new: &ReplicaSet,
    d: &Deployment,
) -> Result<Option<i32>, String> {
    let want = replicas(d);
    let cur = rs_replicas(new);
    if cur == want {
        return Ok(None);
    }
    if cur > want {
        return Ok(Some(want));
    }
    let n = new_rs_new_replicas(d, all, new)?;
    Ok((n != cur).then_some(n))
}

/// The scale-downs of old ReplicaSets, in order (upstream `reconcileOldReplicaSets`):
/// `(name, new size)`. `old` are the active old ReplicaSets.
pub fn plan_old_replica_sets(
    all: &[&ReplicaSet],
    old: &[ReplicaSet],
    new: &ReplicaSet,
    d: &Deployment,
) -> Vec<(String, i32)> {
    if replica_count(old) == 0 {
        return Vec::new();
    }
    let all_pods = replica_count(all.iter().copied());
    let min_available = replicas(d) - max_unavailable(d);
    // unavailable pods of the new ReplicaSet must not let old ones shrink further
    let new_unavailable = rs_replicas(new) - rs_available_for_scaling(new);
    let max_scaled_down = all_pods - min_available - new_unavailable;
    if max_scaled_down <= 0 {
        return Vec::new();
    }
    let mut old = old.to_vec();
    let mut plan = Vec::new();
    // unhealthy replicas first: they would otherwise block the rollout
    if let Err(e) = cleanup_unhealthy_replicas(&mut old, d, max_scaled_down, &mut plan) {
        tracing::debug!(deployment = %name(&d.metadata), error = %e, "not cleaning up unhealthy replicas");
        return plan;
    }
    let all: Vec<&ReplicaSet> = old.iter().chain([new]).collect();
    let all: Vec<ReplicaSet> = all.into_iter().cloned().collect();
    scale_down_old_replica_sets_for_rolling_update(&all, &mut old, d, &mut plan);
    plan
}

/// Scale old ReplicaSets down by their unavailable replicas, at most `max_cleanup` in
/// total (upstream `cleanupUnhealthyReplicas`); `old` is updated, the scalings appended to
/// `plan`; the number of replicas removed.
pub fn cleanup_unhealthy_replicas(
    old: &mut [ReplicaSet],
    d: &Deployment,
    max_cleanup: i32,
    plan: &mut Vec<(String, i32)>,
) -> Result<i32, String> {
    sort_by_creation(old);
    let mut total = 0;
    for rs in old.iter_mut() {
        if total >= max_cleanup {
            break;
        }
        let spec = rs_replicas(rs);
        if spec == 0 {
            continue;
        }
        let available = rs_available_for_scaling(rs);
        if spec == available {
            continue;
        }
        let down = (max_cleanup - total).min(spec - available);
        let to = spec - down;
        if to > spec {
            return Err(format!(
                "when cleaning up unhealthy replicas, got invalid request to scale down {}/{} {spec} -> {to}",
                rs.metadata.namespace.as_deref().unwrap_or_default(),
                name(&rs.metadata)
            ));
        }
        set_rs_replicas(rs, to);
        plan.push((name(&rs.metadata).to_string(), to));
        total += down;
    }
    tracing::debug!(deployment = %name(&d.metadata), count = total, "cleaned up unhealthy replicas from old replica sets");
    Ok(total)
}

/// Scale old ReplicaSets down while `replicas - maxUnavailable` pods stay available
/// (upstream `scaleDownOldReplicaSetsForRollingUpdate`), oldest first; `old` is updated,
/// the scalings appended to `plan`; the number of replicas removed.
pub fn scale_down_old_replica_sets_for_rolling_update(
    all: &[ReplicaSet],
    old: &mut [ReplicaSet],
    d: &Deployment,
    plan: &mut Vec<(String, i32)>,
) -> i32 {
    let min_available = replicas(d) - max_unavailable(d);
    let available: i32 = all.iter().map(rs_available_for_scaling).sum();
    if available <= min_available {
        return 0;
    }
    sort_by_creation(old);
    let wanted = available - min_available;
    let mut total = 0;
    for rs in old.iter_mut() {
        if total >= wanted {
            break;
        }
        let spec = rs_replicas(rs);
        if spec == 0 {
            continue;
        }
        let down = spec.min(wanted - total);
        let to = spec - down;
        set_rs_replicas(rs, to);
        plan.push((name(&rs.metadata).to_string(), to));
        total += down;
    }
    total
}

impl DeploymentReconciler {
    /// One step of a rolling update (upstream `rolloutRolling`).
    pub(crate) async fn rollout_rolling(
        &self,
        d: &mut Deployment,
        rs_list: &mut Vec<ReplicaSet>,
    ) -> Result<Action, Error> {
        let (new, mut old) = self
            .get_all_replica_sets_and_sync_revision(d, rs_list, true)
            .await?;
        let Some(mut new) = new else {
            return self.sync_rollout_status(&all_of(&old, None), None, d).await;
        };

        // scale up, if we can
        let plan = plan_new_replica_set(&all_of(&old, Some(&new)), &new, d)
            .map_err(|e| self.invalid(d, "InvalidRollingUpdate", e))?;
        if let Some(to) = plan {
            let (scaled, updated) = self.scale_replica_set_and_record_event(&new, to, d).await?;
            new = updated;
            put_rs(rs_list, &new);
            if scaled {
                return self
                    .sync_rollout_status(&all_of(&old, Some(&new)), Some(&new), d)
                    .await;
            }
        }

        // scale down, if we can
        let active_old = filter_active(&old);
        let plan = plan_old_replica_sets(&all_of(&old, Some(&new)), &active_old, &new, d);
        let mut scaled_down = false;
        for (rs_name, to) in plan {
            let Some(slot) = old.iter_mut().find(|rs| name(&rs.metadata) == rs_name) else {
                continue;
            };
            let (scaled, updated) = self.scale_replica_set_and_record_event(slot, to, d).await?;
            *slot = updated;
            put_rs(rs_list, slot);
            scaled_down |= scaled;
        }
        if scaled_down {
            return self
                .sync_rollout_status(&all_of(&old, Some(&new)), Some(&new), d)
                .await;
        }

        let current = d.status.clone().unwrap_or_default();
        if deployment_complete(d, &current) {
            self.cleanup_deployment(&old, d).await?;
        }
        self.sync_rollout_status(&all_of(&old, Some(&new)), Some(&new), d)
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deployment::testutil::*;
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

    fn with_available(mut rs: ReplicaSet, available: i32) -> ReplicaSet {
        let st = rs.status.get_or_insert_with(Default::default);
        st.available_replicas = Some(available);
        rs
    }

    // Ported from upstream rolling_test.go TestDeploymentController_reconcileNewReplicaSet.
    #[test]
    fn reconcile_new_replica_set_table() {
        // (deployment replicas, maxSurge, old replicas, new replicas, expected new size)
        let cases = [
            (10, 0, 10, 0, None),
            (10, 2, 10, 0, Some(2)),
            (10, 2, 5, 0, Some(7)),
            (10, 2, 10, 2, None),
            (10, 2, 2, 11, Some(10)),
        ];
        for (i, (reps, surge, old_n, new_n, want)) in cases.into_iter().enumerate() {
            let new = rs("foo-v2", new_n, &[], None);
            let old = rs("foo-v1", old_n, &[], None);
            let d = new_deployment(
                "foo",
                reps,
                None,
                Some(IntOrString::Int(surge)),
                Some(IntOrString::Int(0)),
                &[],
            );
            let got = plan_new_replica_set(&[&new, &old], &new, &d).expect("valid");
            assert_eq!(got, want, "scenario {i}");
        }
    }

    // Ported from upstream rolling_test.go TestDeploymentController_reconcileOldReplicaSets.
    #[test]
    fn reconcile_old_replica_sets_table() {
        // (replicas, maxUnavailable, old, new, ready old, ready new, expected old size)
        let cases = [
            (10, 0, 10, 0, 10, 0, Some(9)),
            (10, 2, 10, 0, 10, 0, Some(8)),
            // unhealthy replicas of old replica sets are cleaned up
            (10, 2, 10, 0, 8, 0, Some(8)),
            // one unhealthy replica cleaned up and one ready pod scaled down
            (10, 2, 10, 0, 9, 0, Some(8)),
            // unavailable pods of the new RS do not let old ones shrink further
            (10, 2, 8, 2, 8, 0, None),
        ];
        for (i, (reps, max_unavail, old_n, new_n, ready_old, ready_new, want)) in
            cases.into_iter().enumerate()
        {
            let new = with_available(rs("foo-new", new_n, &[("foo", "new")], None), ready_new);
            let old = with_available(rs("foo-old", old_n, &[("foo", "old")], None), ready_old);
            let d = new_deployment(
                "foo",
                reps,
                None,
                Some(IntOrString::Int(0)),
                Some(IntOrString::Int(max_unavail)),
                &[("foo", "new")],
            );
            let plan = plan_old_replica_sets(&[&old, &new], std::slice::from_ref(&old), &new, &d);
            let last = plan
                .iter()
                .rev()
                .find(|(n, _)| n == "foo-old")
                .map(|(_, s)| *s);
            assert_eq!(last, want, "scenario {i}: plan {plan:?}");
        }
    }

    // Ported from upstream rolling_test.go TestDeploymentController_cleanupUnhealthyReplicas.
    #[test]
    fn cleanup_unhealthy_replicas_table() {
        // (old replicas, ready pods, max cleanup, expected cleanup count)
        let cases = [(10, 8, 1, 1), (10, 8, 3, 2), (10, 8, 0, 0), (10, 10, 3, 0)];
        for (i, (old_n, ready, max, want)) in cases.into_iter().enumerate() {
            let mut old = vec![with_available(rs("foo-v2", old_n, &[], None), ready)];
            let d = new_deployment(
                "foo",
                10,
                None,
                Some(IntOrString::Int(2)),
                Some(IntOrString::Int(2)),
                &[],
            );
            let mut plan = Vec::new();
            let got = cleanup_unhealthy_replicas(&mut old, &d, max, &mut plan).expect("valid");
            assert_eq!(got, want, "scenario {i}");
            assert_eq!(rs_replicas(&old[0]), old_n - want, "scenario {i}");
        }
    }

    // Ported from upstream rolling_test.go
    // TestDeploymentController_scaleDownOldReplicaSetsForRollingUpdate.
    #[test]
    fn scale_down_old_replica_sets_for_rolling_update_table() {
        // (replicas, maxUnavailable, ready pods, old replicas, expected old size)
        let cases = [
            (10, 0, 10, 10, Some(9)),
            (10, 2, 10, 10, Some(8)),
            (10, 2, 8, 10, None),
            (10, 2, 10, 0, None),
            (10, 2, 1, 10, None),
        ];
        for (i, (reps, max_unavail, ready, old_n, want)) in cases.into_iter().enumerate() {
            let old_rs = with_available(rs("foo-v2", old_n, &[], None), ready);
            let all = vec![old_rs.clone()];
            let mut old = vec![old_rs];
            let d = new_deployment(
                "foo",
                reps,
                None,
                Some(IntOrString::Int(0)),
                Some(IntOrString::Int(max_unavail)),
                &[("foo", "bar")],
            );
            let mut plan = Vec::new();
            scale_down_old_replica_sets_for_rolling_update(&all, &mut old, &d, &mut plan);
            assert_eq!(plan.last().map(|(_, s)| *s), want, "scenario {i}");
        }
    }

    /// A whole rollout simulated step by step against an ideal ReplicaSet controller: the
    /// pod total never exceeds replicas + maxSurge and availability never drops below
    /// replicas - maxUnavailable, and it ends with all replicas in the new ReplicaSet.
    #[test]
    fn simulated_rollout_respects_fenceposts() {
        let int = IntOrString::Int;
        let pct = |s: &str| IntOrString::String(s.into());
        let cases = vec![
            (3, int(1), int(0)),
            (3, int(0), int(1)),
            (5, int(2), int(2)),
            (10, int(3), int(2)),
            (1, int(1), int(0)),
            (4, pct("25%"), pct("25%")),
            (10, pct("0%"), pct("1%")),
        ];
        for (reps, surge, unavail) in cases {
            let d = new_deployment(
                "web",
                reps,
                None,
                Some(surge.clone()),
                Some(unavail.clone()),
                &[],
            );
            let (max_s, max_u) = fenceposts(&d).expect("valid");
            let ready = |mut r: ReplicaSet| {
                let n = rs_replicas(&r);
                r.status = Some(k8s_openapi::api::apps::v1::ReplicaSetStatus {
                    replicas: n,
                    available_replicas: Some(n),
                    ..Default::default()
                });
                r
            };
            let mut old = ready(rs("web-old", reps, &[], Some(at(0))));
            let mut new = ready(rs("web-new", 0, &[], Some(at(1))));
            for _ in 0..100 {
                let total = rs_replicas(&old) + rs_replicas(&new);
                assert!(
                    total <= reps + max_s,
                    "{reps}/{surge:?}/{unavail:?}: {total} pods"
                );
                assert!(
                    total >= reps - max_u,
                    "{reps}/{surge:?}/{unavail:?}: {total} available"
                );
                if let Some(to) = plan_new_replica_set(&[&old, &new], &new, &d).expect("valid") {
                    set_rs_replicas(&mut new, to);
                    new = ready(new);
                    continue;
                }
                let plan = plan_old_replica_sets(
                    &[&old, &new],
                    &filter_active(std::slice::from_ref(&old)),
                    &new,
                    &d,
                );
                if plan.is_empty() {
                    break;
                }
                for (_, to) in plan {
                    set_rs_replicas(&mut old, to);
                }
                old = ready(old);
            }
            assert_eq!(
                (rs_replicas(&old), rs_replicas(&new)),
                (0, reps),
                "{reps}/{surge:?}/{unavail:?}"
            );
        }
    }
}
