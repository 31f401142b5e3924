//! Replica arithmetic: maxSurge/maxUnavailable, proportions for scaling, sums over
//! ReplicaSets, the orderings upstream sorts them by, and how far the new ReplicaSet may
//! grow (upstream `deployment_util.go` and `pkg/controller/controller_utils.go`).

use std::borrow::Borrow;
use std::cmp::Ordering;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::*;

/// An int-or-percent against `total` (percentages rounded up or down), as apimachinery's
/// `GetScaledValueFromIntOrPercent`.
pub fn scaled_value(v: &IntOrString, total: i32, round_up: bool) -> Result<i32, String> {
    match v {
        IntOrString::Int(i) => Ok(*i),
        IntOrString::String(s) => {
            let Some(num) = s.strip_suffix('%') else {
                return Err(format!("invalid value for IntOrString: invalid type: string is not a percentage: {s:?}"));
            };
            let pct: i64 = num
                .parse()
                .map_err(|_| format!("invalid value for IntOrString: invalid value {s:?}"))?;
            let x = pct as f64 * total as f64 / 100.0;
            let r = if round_up { x.ceil() } else { x.floor() };
            Ok(r.clamp(i32::MIN as f64, i32::MAX as f64) as i32)
        }
    }
}

/// Resolve maxSurge (rounded up) and maxUnavailable (rounded down) against `desired`
/// together: when both come out zero, maxUnavailable becomes 1 (surge may be refused by
/// a quota, a rollout must still be able to move). Missing values count as zero.
pub fn resolve_fenceposts(
    max_surge: Option<&IntOrString>,
    max_unavailable: Option<&IntOrString>,
    desired: i32,
) -> Result<(i32, i32), String> {
    let zero = IntOrString::Int(0);
    let surge = scaled_value(max_surge.unwrap_or(&zero), desired, true)?;
    let mut unavailable = scaled_value(max_unavailable.unwrap_or(&zero), desired, false)?;
    if surge == 0 && unavailable == 0 {
        unavailable = 1;
    }
    Ok((surge, unavailable))
}

fn rolling_params(d: &Deployment) -> (Option<&IntOrString>, Option<&IntOrString>) {
    let ru = d
        .spec
        .strategy
        .as_ref()
        .and_then(|s| s.rolling_update.as_ref());
    (
        ru.and_then(|r| r.max_surge.as_ref()),
        ru.and_then(|r| r.max_unavailable.as_ref()),
    )
}

/// The Deployment's resolved (maxSurge, maxUnavailable); an invalid value is an error
/// (validation normally refuses it).
pub fn fenceposts(d: &Deployment) -> Result<(i32, i32), String> {
    let (s, u) = rolling_params(d);
    resolve_fenceposts(s, u, replicas(d))
}

/// The most pods a rolling Deployment may have unavailable (0 for Recreate and for zero
/// replicas; never more than `replicas`; 0 for invalid values, as upstream).
pub fn max_unavailable(d: &Deployment) -> i32 {
    if !is_rolling_update(d) || replicas(d) == 0 {
        return 0;
    }
    let (_, u) = fenceposts(d).unwrap_or((0, 0));
    u.min(replicas(d))
}

/// The least pods a rolling Deployment keeps available.
pub fn min_available(d: &Deployment) -> i32 {
    if !is_rolling_update(d) {
        return 0;
    }
    replicas(d) - max_unavailable(d)
}

/// The most pods above `replicas` a rolling Deployment may have (0 for Recreate and for
/// invalid values, as upstream).
pub fn max_surge(d: &Deployment) -> i32 {
    if !is_rolling_update(d) {
        return 0;
    }
    fenceposts(d).map(|(s, _)| s).unwrap_or(0)
}

// ---------------------------------------------------------------------------------------
// proportions

/// How many of the replicas still to add (or remove, when negative) go to `rs`, from its
/// share of the Deployment size it was last scaled for (`max-replicas`).
pub fn get_proportion(rs: &ReplicaSet, d: &Deployment, to_add: i32, added: i32) -> i32 {
    if rs_replicas(rs) == 0 || to_add == 0 || to_add == added {
        return 0;
    }
    let fraction = replica_set_fraction(rs, d);
    let allowed = to_add - added;
    if to_add > 0 {
        fraction.min(allowed)
    } else {
        fraction.max(allowed)
    }
}

fn replica_set_fraction(rs: &ReplicaSet, d: &Deployment) -> i32 {
    if replicas(d) == 0 {
        return -rs_replicas(rs);
    }
    let deployment_replicas = replicas(d) + max_surge(d);
    let annotated = max_replicas_annotation(rs)
        .unwrap_or_else(|| d.status.as_ref().and_then(|s| s.replicas).unwrap_or(0));
    if annotated <= 0 {
        // no base for a proportion (upstream would divide by zero): no share
        return 0;
    }
    let size = (rs_replicas(rs) as f64 * deployment_replicas as f64) / annotated as f64;
    size.round() as i32 - rs_replicas(rs)
}

// ---------------------------------------------------------------------------------------
// counts

/// Sum of `spec.replicas`.
pub fn replica_count<'a>(rss: impl IntoIterator<Item = &'a ReplicaSet>) -> i32 {
    rss.into_iter().map(rs_replicas).sum()
}

/// Sum of `status.replicas`.
pub fn actual_replica_count<'a>(rss: impl IntoIterator<Item = &'a ReplicaSet>) -> i32 {
    rss.into_iter().map(rs_status_replicas).sum()
}

/// Sum of `status.readyReplicas`.
pub fn ready_replica_count<'a>(rss: impl IntoIterator<Item = &'a ReplicaSet>) -> i32 {
    rss.into_iter().map(rs_ready).sum()
}

/// Sum of `status.availableReplicas`.
pub fn available_replica_count<'a>(rss: impl IntoIterator<Item = &'a ReplicaSet>) -> i32 {
    rss.into_iter().map(rs_available).sum()
}

/// ReplicaSets with `spec.replicas > 0`.
pub fn filter_active<T: Borrow<ReplicaSet> + Clone>(rss: &[T]) -> Vec<T> {
    rss.iter()
        .filter(|rs| rs_replicas((*rs).borrow()) > 0)
        .cloned()
        .collect()
}

/// The only active ReplicaSet; with none active the new one, else the newest old one;
/// `None` when several are active (they are scaled proportionally).
pub fn find_active_or_latest<'a>(
    new: Option<&'a ReplicaSet>,
    old: &'a [ReplicaSet],
) -> Option<&'a ReplicaSet> {
    let mut olds: Vec<&ReplicaSet> = old.iter().collect();
    olds.sort_by(|a, b| cmp_creation(b, a));
    let active: Vec<&ReplicaSet> = olds
        .iter()
        .copied()
        .chain(new)
        .filter(|rs| rs_replicas(rs) > 0)
        .collect();
    match active.len() {
        0 => new.or(olds.first().copied()),
        1 => Some(active[0]),
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------
// orderings (pkg/controller's ReplicaSetsByCreationTimestamp, BySizeOlder, BySizeNewer,
// and deployment util's ReplicaSetsByRevision)

/// Older first; same time: by name.
pub fn cmp_creation(a: &ReplicaSet, b: &ReplicaSet) -> Ordering {
    a.metadata
        .creation_timestamp
        .cmp(&b.metadata.creation_timestamp)
        .then_with(|| name(&a.metadata).cmp(name(&b.metadata)))
}

/// Sort older first.
pub fn sort_by_creation<T: Borrow<ReplicaSet>>(v: &mut [T]) {
    v.sort_by(|a, b| cmp_creation(a.borrow(), b.borrow()));
}

/// Sort larger first; same size: older first.
pub fn sort_by_size_older<T: Borrow<ReplicaSet>>(v: &mut [T]) {
    v.sort_by(|a, b| {
        let (a, b) = (a.borrow(), b.borrow());
        rs_replicas(b)
            .cmp(&rs_replicas(a))
            .then_with(|| cmp_creation(a, b))
    });
}

/// Sort larger first; same size: newer first.
pub fn sort_by_size_newer<T: Borrow<ReplicaSet>>(v: &mut [T]) {
    v.sort_by(|a, b| {
        let (a, b) = (a.borrow(), b.borrow());
        rs_replicas(b)
            .cmp(&rs_replicas(a))
            .then_with(|| cmp_creation(b, a))
    });
}

/// Sort by revision, lowest first; unparsable or equal revisions: older first.
pub fn sort_by_revision<T: Borrow<ReplicaSet>>(v: &mut [T]) {
    v.sort_by(|a, b| {
        let (a, b) = (a.borrow(), b.borrow());
        match (revision(&a.metadata), revision(&b.metadata)) {
            (Ok(x), Ok(y)) if x != y => x.cmp(&y),
            _ => cmp_creation(a, b),
        }
    });
}

/// The size the new ReplicaSet may grow to now: for a rolling update as far as
/// `replicas + maxSurge` allows (counting the pods each ReplicaSet may still have, see
/// [`rs_pods_upper_bound`]) but not above `replicas`; for Recreate `replicas`.
pub fn new_rs_new_replicas<T: Borrow<ReplicaSet>>(
    d: &Deployment,
    all: &[T],
    new: &ReplicaSet,
) -> Result<i32, String> {
    match strategy_type(d) {
        ROLLING_UPDATE => {
            let (surge_v, _) = rolling_params(d);
            let zero = IntOrString::Int(0);
            let surge = scaled_value(surge_v.unwrap_or(&zero), replicas(d), true)?;
            let current: i32 = all.iter().map(|rs| rs_pods_upper_bound(rs.borrow())).sum();
            let max_total = replicas(d) + surge;
            if current >= max_total {
                return Ok(rs_replicas(new));
            }
            let up = (max_total - current).min(replicas(d) - rs_replicas(new));
            Ok(rs_replicas(new) + up)
        }
        RECREATE => Ok(replicas(d)),
        other => Err(format!("deployment type {other:?} isn't supported")),
    }
}

/// Saturated: the ReplicaSet owns all desired replicas, was scaled for them, and all are
/// available.
pub fn is_saturated(d: &Deployment, rs: &ReplicaSet) -> bool {
    let Some(desired) =
        annotation(&rs.metadata, DESIRED_REPLICAS_ANNOTATION).and_then(|v| v.parse::<i32>().ok())
    else {
        return false;
    };
    rs_replicas(rs) == replicas(d) && desired == replicas(d) && rs_available(rs) == replicas(d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deployment::testutil::*;
    use k8s_openapi::api::apps::v1::DeploymentStrategy;

    // Ported from upstream TestGetReplicaCountForReplicaSets.
    #[test]
    fn replica_counts() {
        let mut rs1 = rs_with_status("foo", 1, 2);
        let rs2 = rs_with_status("bar", 2, 3);
        assert_eq!(
            (replica_count([&rs1]), actual_replica_count([&rs1])),
            (1, 2)
        );
        assert_eq!(
            (
                replica_count([&rs1, &rs2]),
                actual_replica_count([&rs1, &rs2])
            ),
            (3, 5)
        );
        rs1.status.as_mut().expect("status").available_replicas = Some(2);
        assert_eq!(
            rs_available_for_scaling(&rs1),
            1,
            "never more than spec.replicas"
        );
        assert_eq!(rs_pods_upper_bound(&rs1), 2, "pods not yet deleted count");
    }

    // Ported from upstream TestResolveFenceposts.
    #[test]
    fn resolve_fenceposts_table() {
        let s = |v: &str| IntOrString::String(v.into());
        let cases = [
            ("0%", "0%", 0, Ok((0, 1))),
            ("39%", "39%", 10, Ok((4, 3))),
            ("oops", "39%", 10, Err(())),
            ("55%", "urg", 10, Err(())),
        ];
        for (surge, unavail, desired, want) in cases {
            let got =
                resolve_fenceposts(Some(&s(surge)), Some(&s(unavail)), desired).map_err(|_| ());
            assert_eq!(got, want, "maxSurge={surge}");
        }
        assert_eq!(
            resolve_fenceposts(None, None, 5),
            Ok((0, 1)),
            "missing values count as 0"
        );
        assert_eq!(
            resolve_fenceposts(Some(&IntOrString::Int(2)), Some(&IntOrString::Int(0)), 5),
            Ok((2, 0))
        );
        assert_eq!(scaled_value(&s("25%"), 10, true), Ok(3));
        assert_eq!(scaled_value(&s("25%"), 10, false), Ok(2));
    }

    // Ported from upstream TestNewRSNewReplicas.
    #[test]
    fn new_rs_new_replicas_table() {
        let cases = [
            (
                "can not scale up - to newRSReplicas",
                ROLLING_UPDATE,
                1,
                5,
                1,
                5,
            ),
            ("scale up - to depReplicas", ROLLING_UPDATE, 6, 2, 10, 6),
            ("recreate - to depReplicas", RECREATE, 3, 1, 1, 3),
        ];
        let base = generate_deployment("nginx");
        let mut rs5 = generate_rs(&base, "rs5");
        set_rs_replicas(&mut rs5, 5);
        for (name, strategy, dep_replicas, new_replicas, surge, want) in cases {
            let mut d = base.clone();
            let spec = &mut d.spec;
            spec.replicas = Some(dep_replicas);
            spec.strategy = Some(DeploymentStrategy {
                type_: Some(strategy.into()),
                rolling_update: Some(k8s_openapi::api::apps::v1::RollingUpdateDeployment {
                    max_unavailable: Some(IntOrString::Int(1)),
                    max_surge: Some(IntOrString::Int(surge)),
                }),
            });
            let mut new_rc = generate_rs(&base, "new");
            set_rs_replicas(&mut new_rc, new_replicas);
            assert_eq!(
                new_rs_new_replicas(&d, &[&rs5], &new_rc),
                Ok(want),
                "{name}"
            );
        }
        let mut d = base;
        d.spec.strategy = Some(DeploymentStrategy {
            type_: Some("Canary".into()),
            rolling_update: None,
        });
        assert!(
            new_rs_new_replicas(&d, &[&rs5], &rs5).is_err(),
            "an unknown strategy is an error, not a panic"
        );
    }

    // Ported from upstream TestMaxUnavailable.
    #[test]
    fn max_unavailable_table() {
        let d = |replicas: i32, mu: IntOrString| {
            new_deployment(
                "foo",
                replicas,
                None,
                Some(IntOrString::Int(1)),
                Some(mu),
                &[],
            )
        };
        let s = |v: &str| IntOrString::String(v.into());
        let mut recreate = d(1, IntOrString::Int(1));
        recreate.spec.strategy = Some(DeploymentStrategy {
            type_: Some(RECREATE.into()),
            rolling_update: None,
        });
        let cases = [
            (
                "maxUnavailable less than replicas",
                d(10, IntOrString::Int(5)),
                5,
            ),
            (
                "maxUnavailable equal replicas",
                d(10, IntOrString::Int(10)),
                10,
            ),
            (
                "maxUnavailable greater than replicas",
                d(5, IntOrString::Int(10)),
                5,
            ),
            (
                "maxUnavailable with replicas is 0",
                d(0, IntOrString::Int(10)),
                0,
            ),
            (
                "maxUnavailable with Recreate deployment strategy",
                recreate,
                0,
            ),
            (
                "maxUnavailable less than replicas with percents",
                d(10, s("50%")),
                5,
            ),
            (
                "maxUnavailable equal replicas with percents",
                d(10, s("100%")),
                10,
            ),
            (
                "maxUnavailable greater than replicas with percents",
                d(5, s("100%")),
                5,
            ),
        ];
        for (name, d, want) in cases {
            assert_eq!(max_unavailable(&d), want, "{name}");
        }
        assert_eq!(
            max_unavailable(&d(10, s("bogus"))),
            0,
            "invalid values count as 0, no panic"
        );
    }

    // After upstream TestGetProportion / getReplicaSetFraction and FindActiveOrLatest.
    #[test]
    fn proportions_and_active_or_latest() {
        let d = new_deployment("foo", 10, None, Some(IntOrString::Int(3)), None, &[]);
        let mut r = rs("a", 5, &[], None);
        set_replicas_annotations(&mut r, 5, 8);
        // 5 * 13 / 8 = 8.125 -> 8: three more
        assert_eq!(get_proportion(&r, &d, 5, 0), 3);
        assert_eq!(get_proportion(&r, &d, 5, 4), 1, "capped by what is left");
        assert_eq!(get_proportion(&r, &d, 5, 5), 0);
        assert_eq!(get_proportion(&rs("z", 0, &[], None), &d, 5, 0), 0);
        let zero = new_deployment("foo", 0, None, None, None, &[]);
        assert_eq!(get_proportion(&r, &zero, -5, 0), -5);
        // no annotation and no status: no base, no share (upstream would divide by zero)
        assert_eq!(get_proportion(&rs("b", 5, &[], None), &d, 5, 0), 0);

        let old = vec![
            rs("o1", 0, &[], Some(at(0))),
            rs("o2", 0, &[], Some(at(10))),
        ];
        let new = rs("n", 0, &[], Some(at(20)));
        let pick = |new: Option<&ReplicaSet>, old: &[ReplicaSet]| {
            find_active_or_latest(new, old).map(|r| name(&r.metadata).to_string())
        };
        assert_eq!(
            pick(Some(&new), &old).as_deref(),
            Some("n"),
            "none active: the new one"
        );
        assert_eq!(
            pick(None, &old).as_deref(),
            Some("o2"),
            "none active, no new: the newest old"
        );
        let active_old = vec![
            rs("o1", 2, &[], Some(at(0))),
            rs("o2", 0, &[], Some(at(10))),
        ];
        assert_eq!(
            pick(Some(&new), &active_old).as_deref(),
            Some("o1"),
            "the only active one"
        );
        let two = vec![
            rs("o1", 2, &[], Some(at(0))),
            rs("o2", 1, &[], Some(at(10))),
        ];
        assert_eq!(pick(Some(&new), &two), None, "several active");
        assert_eq!(pick(None, &[]), None);
    }

    #[test]
    fn orderings() {
        let names = |v: &[ReplicaSet]| {
            v.iter()
                .map(|r| name(&r.metadata).to_string())
                .collect::<Vec<_>>()
        };
        let mut v = vec![
            rs("b", 1, &[], Some(at(10))),
            rs("a", 3, &[], Some(at(10))),
            rs("c", 3, &[], Some(at(0))),
            rs("d", 1, &[], None),
        ];
        sort_by_creation(&mut v);
        assert_eq!(names(&v), ["d", "c", "a", "b"]);
        sort_by_size_newer(&mut v);
        assert_eq!(names(&v), ["a", "c", "b", "d"]);
        sort_by_size_older(&mut v);
        assert_eq!(names(&v), ["c", "a", "d", "b"]);
    }
}
