//! Which pods a controller deletes first when it scales down, after upstream's
//! `ActivePodsWithRanks` (`pkg/controller/controller_utils.go`), with the
//! `PodDeletionCost` and `LogarithmicScaleDown` behaviours (both GA upstream).
//!
//! Pods are ordered by the first rule that tells them apart; earlier pods are deleted
//! first:
//!
//! 1. a pod not assigned to a node before one that is;
//! 2. `Pending` before `Unknown` before `Running` (a pod with no phase counts as pending);
//! 3. not ready before ready;
//! 4. lower `controller.kubernetes.io/pod-deletion-cost` before higher;
//! 5. higher rank (more related pods on the same node) before lower;
//! 6. both ready: ready for a shorter time before longer;
//! 7. more container restarts before fewer;
//! 8. created more recently before older.
//!
//! In 6 and 8 times are compared on a base-2 logarithmic scale of their age at `now`:
//! pods of the same order of age are equivalent and ordered by UID, a pseudo-random
//! choice that spreads deletions. Without `now`, or when a time is unknown, plain
//! order is used and an unknown time comes first.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::Timestamp;

use super::pod::{is_pod_ready, pod_phase, pod_ready_time};

/// The annotation that says how much deleting a pod costs (upstream
/// `core.PodDeletionCost`).
pub const POD_DELETION_COST: &str = "controller.kubernetes.io/pod-deletion-cost";

/// Pods with their ranks and the reference time of the logarithmic comparisons.
#[derive(Clone, Debug, Default)]
pub struct ActivePodsWithRanks {
    /// The pods.
    pub pods: Vec<Arc<Pod>>,
    /// One rank per pod (for the ReplicaSet controller: how many related active pods
    /// share its node).
    pub ranks: Vec<usize>,
    /// Reference time of the logarithmic comparisons (`None`: plain comparisons).
    pub now: Option<Timestamp>,
}

/// The deletion cost of a pod from its annotations: 0 when absent or invalid (a value
/// must be a canonical base-10 int32: no `+`, no leading zeros).
pub fn pod_deletion_cost(pod: &Pod) -> i32 {
    let Some(value) = pod
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(POD_DELETION_COST))
    else {
        return 0;
    };
    let valid_first = match value.as_bytes().first() {
        Some(b'-') | Some(b'1'..=b'9') => true,
        Some(b'0') => value == "0",
        _ => false,
    };
    if !valid_first {
        return 0;
    }
    value.parse::<i32>().unwrap_or(0)
}

fn phase_ordinal(pod: &Pod) -> u8 {
    match pod_phase(pod) {
        "Unknown" => 1,
        "Running" => 2,
        _ => 0,
    }
}

fn node_name(pod: &Pod) -> &str {
    pod.spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .unwrap_or("")
}

fn max_container_restarts(pod: &Pod) -> i32 {
    pod.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .into_iter()
        .flatten()
        .map(|c| c.restart_count)
        .fold(0, i32::max)
}

fn uid(pod: &Pod) -> &str {
    pod.metadata.uid.as_deref().unwrap_or("")
}

/// `t1` after `t2`, where an unknown time comes before any known one.
fn after_or_zero(t1: Option<Timestamp>, t2: Option<Timestamp>) -> bool {
    match (t1, t2) {
        (Some(a), Some(b)) => a > b,
        (a, _) => a.is_none(),
    }
}

/// floor(log2(age in ns)) of `t1` minus that of `t2` (-1 for a time not in the past).
fn logarithmic_rank_diff(t1: Timestamp, t2: Timestamp, now: Timestamp) -> i64 {
    let rank = |t: Timestamp| {
        let ns = now.duration_since(t).as_nanos();
        if ns > 0 {
            (ns as f64).log2().floor() as i64
        } else {
            -1
        }
    };
    rank(t1) - rank(t2)
}

impl ActivePodsWithRanks {
    /// Pods with ranks, compared at `now`.
    pub fn new(pods: Vec<Arc<Pod>>, ranks: Vec<usize>, now: Option<Timestamp>) -> Self {
        ActivePodsWithRanks { pods, ranks, now }
    }

    fn rank(&self, i: usize) -> usize {
        self.ranks.get(i).copied().unwrap_or(0)
    }

    /// Compare two times by rules 6 and 8: `true` when `t1` should go first.
    /// `None` when they are equivalent and the next rule decides.
    fn time_less(
        &self,
        t1: Option<Timestamp>,
        t2: Option<Timestamp>,
        i: &Pod,
        j: &Pod,
    ) -> Option<bool> {
        if t1 == t2 {
            return None;
        }
        match (self.now, t1, t2) {
            (Some(now), Some(a), Some(b)) => {
                let diff = logarithmic_rank_diff(a, b, now);
                Some(if diff == 0 { uid(i) < uid(j) } else { diff < 0 })
            }
            _ => Some(after_or_zero(t1, t2)),
        }
    }

    /// Whether pod `i` should be deleted before pod `j`.
    pub fn less(&self, i: usize, j: usize) -> bool {
        let (Some(a), Some(b)) = (self.pods.get(i), self.pods.get(j)) else {
            return false;
        };
        // 1. unassigned < assigned
        let (na, nb) = (node_name(a), node_name(b));
        if na != nb && (na.is_empty() || nb.is_empty()) {
            return na.is_empty();
        }
        // 2. Pending < Unknown < Running
        let (pa, pb) = (phase_ordinal(a), phase_ordinal(b));
        if pa != pb {
            return pa < pb;
        }
        // 3. not ready < ready
        let (ra, rb) = (is_pod_ready(a), is_pod_ready(b));
        if ra != rb {
            return !ra;
        }
        // 4. lower deletion cost < higher
        let (ca, cb) = (pod_deletion_cost(a), pod_deletion_cost(b));
        if ca != cb {
            return ca < cb;
        }
        // 5. doubled up < not doubled up
        let (ka, kb) = (self.rank(i), self.rank(j));
        if ka != kb {
            return ka > kb;
        }
        // 6. ready for a shorter time < longer
        if ra && rb {
            if let Some(less) = self.time_less(pod_ready_time(a), pod_ready_time(b), a, b) {
                return less;
            }
        }
        // 7. more restarts < fewer
        let (sa, sb) = (max_container_restarts(a), max_container_restarts(b));
        if sa != sb {
            return sa > sb;
        }
        // 8. newer < older
        let created = |p: &Pod| p.metadata.creation_timestamp.as_ref().map(|t| t.0);
        self.time_less(created(a), created(b), a, b)
            .unwrap_or(false)
    }

    /// Sort the pods (and their ranks) so that those to delete first come first.
    ///
    /// A stable merge sort driven by [`ActivePodsWithRanks::less`]; it never panics,
    /// whatever the pods look like (the logarithmic rules are not a strict total order
    /// in every corner, which `slice::sort_by` may refuse).
    pub fn sort(&mut self) {
        let order = merge_sort((0..self.pods.len()).collect(), &|i, j| self.less(i, j));
        let pods = order
            .iter()
            .filter_map(|&i| self.pods.get(i).cloned())
            .collect();
        let ranks = order.iter().map(|&i| self.rank(i)).collect();
        self.pods = pods;
        self.ranks = ranks;
    }
}

fn merge_sort(v: Vec<usize>, less: &dyn Fn(usize, usize) -> bool) -> Vec<usize> {
    if v.len() <= 1 {
        return v;
    }
    let mut left = v;
    let right = left.split_off(left.len() / 2);
    let (left, right) = (merge_sort(left, less), merge_sort(right, less));
    let mut out = Vec::with_capacity(left.len() + right.len());
    let (mut l, mut r) = (left.into_iter().peekable(), right.into_iter().peekable());
    loop {
        match (l.peek(), r.peek()) {
            (Some(&a), Some(&b)) => {
                if less(b, a) {
                    out.push(b);
                    r.next();
                } else {
                    out.push(a);
                    l.next();
                }
            }
            (Some(_), None) => out.extend(l.by_ref()),
            (None, Some(_)) => out.extend(r.by_ref()),
            (None, None) => break,
        }
    }
    out
}

/// `pods` ordered for deletion (first to delete first), each with its rank.
pub fn sort_active_pods_with_ranks(
    pods: Vec<Arc<Pod>>,
    ranks: Vec<usize>,
    now: Option<Timestamp>,
) -> Vec<Arc<Pod>> {
    let mut s = ActivePodsWithRanks::new(pods, ranks, now);
    s.sort();
    s.pods
}

/// Whether `a` should be deleted before `b` by upstream's plain `ActivePods` order (the
/// Job controller's): rules 1, 2, 3, 6, 7 and 8 above without ranks, deletion costs or
/// logarithmic time buckets.
pub fn active_pods_less(a: &Pod, b: &Pod) -> bool {
    let (na, nb) = (node_name(a), node_name(b));
    if na != nb && (na.is_empty() || nb.is_empty()) {
        return na.is_empty();
    }
    let (pa, pb) = (phase_ordinal(a), phase_ordinal(b));
    if pa != pb {
        return pa < pb;
    }
    let (ra, rb) = (is_pod_ready(a), is_pod_ready(b));
    if ra != rb {
        return !ra;
    }
    if ra && rb {
        let (ta, tb) = (pod_ready_time(a), pod_ready_time(b));
        if ta != tb {
            return after_or_zero(ta, tb);
        }
    }
    let (sa, sb) = (max_container_restarts(a), max_container_restarts(b));
    if sa != sb {
        return sa > sb;
    }
    let created = |p: &Pod| p.metadata.creation_timestamp.as_ref().map(|t| t.0);
    let (ca, cb) = (created(a), created(b));
    ca != cb && after_or_zero(ca, cb)
}

/// `pods` in upstream's `ActivePods` order (see [`active_pods_less`]); stable.
pub fn sort_active_pods(pods: &mut [Arc<Pod>]) {
    let order = merge_sort((0..pods.len()).collect(), &|i, j| {
        active_pods_less(&pods[i], &pods[j])
    });
    let sorted: Vec<Arc<Pod>> = order.into_iter().map(|i| pods[i].clone()).collect();
    pods.clone_from_slice(&sorted);
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{ContainerStatus, PodCondition, PodSpec, PodStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use k8s_openapi::jiff::SignedDuration;
    use std::collections::BTreeMap;

    #[allow(clippy::too_many_arguments)]
    fn pod(
        name: &str,
        node: &str,
        phase: &str,
        ready: bool,
        restarts: i32,
        ready_since: Option<Timestamp>,
        created: Option<Timestamp>,
        cost: Option<&str>,
    ) -> Arc<Pod> {
        let mut p = Pod::default();
        p.metadata.name = Some(name.into());
        p.metadata.creation_timestamp = created.map(Time);
        p.metadata.annotations =
            cost.map(|c| BTreeMap::from([(POD_DELETION_COST.to_string(), c.to_string())]));
        p.spec = Some(PodSpec {
            node_name: (!node.is_empty()).then(|| node.to_string()),
            ..Default::default()
        });
        p.status = Some(PodStatus {
            phase: Some(phase.into()),
            conditions: ready.then(|| {
                vec![PodCondition {
                    type_: "Ready".into(),
                    status: "True".into(),
                    last_transition_time: ready_since.map(Time),
                    ..Default::default()
                }]
            }),
            container_statuses: ready.then(|| {
                vec![ContainerStatus {
                    restart_count: restarts,
                    ..Default::default()
                }]
            }),
            ..Default::default()
        });
        Arc::new(p)
    }

    // Upstream TestSortingActivePodsWithRanks (pkg/controller/controller_utils_test.go).
    #[test]
    fn sorting_active_pods_with_ranks() {
        let now = Timestamp::now();
        let ago = |h: i64| now.checked_sub(SignedDuration::from_hours(h)).ok();
        let then_1_month = ago(24 * 31);
        let (now_t, zero) = (Some(now), None);
        let unscheduled = pod("unscheduled", "", "Pending", false, 0, zero, zero, None);
        let scheduled_pending = pod("pending", "node", "Pending", false, 0, zero, zero, None);
        let unknown_phase = pod(
            "unknown-phase",
            "node",
            "Unknown",
            false,
            0,
            zero,
            zero,
            None,
        );
        let running_not_ready = pod("not-ready", "node", "Running", false, 0, zero, zero, None);
        let ready_no_ltt = pod("ready-no-ltt", "node", "Running", true, 0, zero, zero, None);
        let ready_now = pod("ready-now", "node", "Running", true, 0, now_t, now_t, None);
        let ready_then = pod(
            "ready-then",
            "node",
            "Running",
            true,
            0,
            then_1_month,
            then_1_month,
            None,
        );
        let ready_now_high_restarts = pod(
            "ready-high-restarts",
            "node",
            "Running",
            true,
            9001,
            now_t,
            now_t,
            None,
        );
        let ready_now_created_then = pod(
            "ready-now-created-then",
            "node",
            "Running",
            true,
            0,
            now_t,
            then_1_month,
            None,
        );
        let low_cost = pod(
            "low-deletion-cost",
            "node",
            "Running",
            true,
            0,
            now_t,
            then_1_month,
            Some("10"),
        );
        let high_cost = pod(
            "high-deletion-cost",
            "node",
            "Running",
            true,
            0,
            now_t,
            then_1_month,
            Some("100"),
        );
        let unscheduled_5h = pod(
            "unscheduled-5-hours",
            "",
            "Pending",
            false,
            0,
            ago(5),
            ago(5),
            None,
        );
        let unscheduled_8h = pod(
            "unscheduled-8-hours",
            "",
            "Pending",
            false,
            0,
            ago(8),
            ago(8),
            None,
        );
        let ready_2h = pod(
            "ready-2-hours",
            "",
            "Running",
            true,
            0,
            ago(2),
            then_1_month,
            None,
        );
        let ready_5h = pod(
            "ready-5-hours",
            "",
            "Running",
            true,
            0,
            ago(5),
            then_1_month,
            None,
        );
        let ready_8h = pod(
            "ready-8-hours",
            "",
            "Running",
            true,
            0,
            ago(8),
            then_1_month,
            None,
        );

        let equal = [
            (&unscheduled, &unscheduled),
            (&scheduled_pending, &scheduled_pending),
            (&unknown_phase, &unknown_phase),
            (&running_not_ready, &running_not_ready),
            (&ready_now_created_then, &ready_now_created_then),
            (&ready_now, &ready_now),
            (&ready_then, &ready_then),
            (&ready_now_high_restarts, &ready_now_high_restarts),
            (&unscheduled_5h, &unscheduled_8h),
            (&ready_5h, &ready_8h),
        ];
        for (i, (p1, p2)) in equal.iter().enumerate() {
            let s =
                ActivePodsWithRanks::new(vec![(*p1).clone(), (*p2).clone()], vec![1, 1], Some(now));
            assert!(
                !s.less(0, 1) && !s.less(1, 0),
                "equality case {i}: {:?} vs {:?}",
                p1.metadata.name,
                p2.metadata.name
            );
        }

        let lesser_greater = [
            ((&unscheduled, 1), (&scheduled_pending, 2)),
            ((&unscheduled, 2), (&scheduled_pending, 1)),
            ((&scheduled_pending, 1), (&unknown_phase, 2)),
            ((&unknown_phase, 1), (&running_not_ready, 2)),
            ((&running_not_ready, 1), (&ready_no_ltt, 1)),
            ((&ready_no_ltt, 1), (&ready_now, 1)),
            ((&ready_now, 2), (&ready_no_ltt, 1)),
            ((&ready_now, 1), (&ready_then, 1)),
            ((&ready_now, 2), (&ready_then, 1)),
            ((&ready_now_high_restarts, 1), (&ready_now, 1)),
            ((&ready_now, 2), (&ready_now_high_restarts, 1)),
            ((&ready_now, 1), (&ready_now_created_then, 1)),
            ((&ready_now_created_then, 2), (&ready_now, 1)),
            ((&low_cost, 2), (&high_cost, 1)),
            ((&ready_2h, 1), (&ready_5h, 1)),
        ];
        for (i, ((lp, lr), (gp, gr))) in lesser_greater.iter().enumerate() {
            let s = ActivePodsWithRanks::new(
                vec![(*lp).clone(), (*gp).clone()],
                vec![*lr, *gr],
                Some(now),
            );
            assert!(
                s.less(0, 1),
                "inequality case {i}: {:?} should come first",
                lp.metadata.name
            );
            assert!(
                !s.less(1, 0),
                "inequality case {i}: {:?} should not come first",
                gp.metadata.name
            );
        }
    }

    // Upstream TestSortingActivePods (pkg/controller/controller_utils_test.go): with equal
    // ranks and no reference time the order is that of `ActivePods`.
    #[test]
    fn sorting_active_pods_without_reference_time() {
        let now = Timestamp::now();
        let then = now.checked_sub(SignedDuration::from_hours(24 * 31)).ok();
        let now_t = Some(now);
        let restarts = |p: Arc<Pod>, counts: &[i32]| {
            let mut p = (*p).clone();
            if let Some(s) = p.status.as_mut() {
                s.container_statuses = Some(
                    counts
                        .iter()
                        .map(|c| ContainerStatus {
                            restart_count: *c,
                            ..Default::default()
                        })
                        .collect(),
                );
            }
            Arc::new(p)
        };
        let want = [
            pod("unscheduled", "", "Pending", false, 0, None, None, None),
            pod(
                "scheduledButPending",
                "bar",
                "Pending",
                false,
                0,
                None,
                None,
                None,
            ),
            pod("unknownPhase", "foo", "Unknown", false, 0, None, None, None),
            pod(
                "runningButNotReady",
                "foo",
                "Running",
                false,
                0,
                None,
                None,
                None,
            ),
            restarts(
                pod(
                    "runningNoLastTransitionTime",
                    "foo",
                    "Running",
                    true,
                    0,
                    None,
                    None,
                    None,
                ),
                &[3, 0],
            ),
            restarts(
                pod(
                    "runningWithLastTransitionTime",
                    "foo",
                    "Running",
                    true,
                    0,
                    now_t,
                    None,
                    None,
                ),
                &[3, 0],
            ),
            restarts(
                pod(
                    "runningLongerTime",
                    "foo",
                    "Running",
                    true,
                    0,
                    then,
                    None,
                    None,
                ),
                &[3, 0],
            ),
            restarts(
                pod(
                    "lowerContainerRestartCount",
                    "foo",
                    "Running",
                    true,
                    0,
                    then,
                    now_t,
                    None,
                ),
                &[2, 1],
            ),
            restarts(
                pod("oldest", "foo", "Running", true, 0, then, then, None),
                &[2, 1],
            ),
        ];
        let names = |pods: &[Arc<Pod>]| -> Vec<String> {
            pods.iter()
                .map(|p| p.metadata.name.clone().unwrap_or_default())
                .collect()
        };
        // every rotation and the reverse of the input sort the same
        for shift in 0..want.len() {
            for reverse in [false, true] {
                let mut input: Vec<Arc<Pod>> = want.to_vec();
                input.rotate_left(shift);
                if reverse {
                    input.reverse();
                }
                let got = sort_active_pods_with_ranks(input, vec![0; want.len()], None);
                assert_eq!(names(&got), names(&want), "shift {shift} reverse {reverse}");
            }
        }
    }

    #[test]
    fn deletion_cost_parsing() {
        let with = |v: &str| pod("p", "n", "Running", false, 0, None, None, Some(v));
        assert_eq!(pod_deletion_cost(&with("10")), 10);
        assert_eq!(pod_deletion_cost(&with("-7")), -7);
        assert_eq!(pod_deletion_cost(&with("0")), 0);
        for bad in ["+10", "008", "", "abc", "99999999999"] {
            assert_eq!(pod_deletion_cost(&with(bad)), 0, "{bad:?}");
        }
    }

    #[test]
    fn sort_keeps_ranks_with_their_pods() {
        let a = pod("a", "n1", "Running", false, 0, None, None, None);
        let b = pod("b", "n2", "Running", false, 0, None, None, None);
        let mut s = ActivePodsWithRanks::new(vec![a, b], vec![1, 3], None);
        s.sort();
        assert_eq!(s.pods[0].metadata.name.as_deref(), Some("b"));
        assert_eq!(s.ranks, [3, 1]);
    }

    // Upstream TestSortingActivePods (pkg/controller/controller_utils_test.go): every
    // shuffle sorts back to the order below, first to delete first.
    #[test]
    fn sorting_active_pods() {
        let now = Timestamp::now();
        let then = now.checked_sub(SignedDuration::from_hours(24 * 31)).ok();
        let (now_t, zero) = (Some(now), None);
        let want = vec![
            pod("unscheduled", "", "Pending", false, 0, zero, zero, None),
            pod("pending", "node", "Pending", false, 0, zero, zero, None),
            pod("unknown", "node", "Unknown", false, 0, zero, zero, None),
            pod("not-ready", "node", "Running", false, 0, zero, zero, None),
            pod("ready-no-ltt", "node", "Running", true, 0, zero, zero, None),
            pod(
                "ready-now-restarts",
                "node",
                "Running",
                true,
                9001,
                now_t,
                now_t,
                None,
            ),
            pod("ready-now", "node", "Running", true, 0, now_t, now_t, None),
            pod(
                "ready-now-created-then",
                "node",
                "Running",
                true,
                0,
                now_t,
                then,
                None,
            ),
            pod("ready-then", "node", "Running", true, 0, then, then, None),
        ];
        let names = |v: &[Arc<Pod>]| -> Vec<String> {
            v.iter()
                .map(|p| p.metadata.name.clone().unwrap_or_default())
                .collect()
        };
        for shift in 0..want.len() {
            for reverse in [false, true] {
                let mut input = want.clone();
                input.rotate_left(shift);
                if reverse {
                    input.reverse();
                }
                sort_active_pods(&mut input);
                assert_eq!(
                    names(&input),
                    names(&want),
                    "shift {shift} reverse {reverse}"
                );
            }
        }
        // deletion costs play no part in the plain order
        let cheap = pod(
            "cheap",
            "node",
            "Running",
            false,
            0,
            zero,
            zero,
            Some("-100"),
        );
        let dear = pod("dear", "node", "Running", false, 0, zero, zero, Some("100"));
        assert!(!active_pods_less(&cheap, &dear) && !active_pods_less(&dear, &cheap));
    }
}
