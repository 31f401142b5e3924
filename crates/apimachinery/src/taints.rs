//! Taints and tolerations (upstream `k8s.io/api/core/v1` `Toleration.ToleratesTaint`),
//! shared by the scheduler's filters and the DaemonSet controller.

use k8s_openapi::api::core::v1::{Taint, Toleration};

/// Whether `t` tolerates `taint`: an empty effect matches every effect; an empty key
/// with `Exists` matches every taint; `Exists` matches any value of its key, `Equal`
/// (the default) only the same value.
pub fn tolerates(t: &Toleration, taint: &Taint) -> bool {
    if let Some(effect) = t.effect.as_deref().filter(|e| !e.is_empty()) {
        if effect != taint.effect {
            return false;
        }
    }
    let key = t.key.as_deref().unwrap_or("");
    let op = t.operator.as_deref().unwrap_or("");
    if key.is_empty() {
        return op == "Exists";
    }
    if key != taint.key {
        return false;
    }
    match op {
        "Exists" => true,
        "Equal" | "" => t.value.as_deref().unwrap_or("") == taint.value.as_deref().unwrap_or(""),
        _ => false,
    }
}

/// Whether `tolerations` tolerate every one of `taints`, and if so the toleration that
/// matched each taint (the first that does, in the pod's order), as upstream
/// `v1helper.GetMatchingTolerations`. No taints: tolerated, with no tolerations used.
pub fn matching_tolerations<'t>(
    taints: &[Taint],
    tolerations: &'t [Toleration],
) -> Option<Vec<&'t Toleration>> {
    let mut used = Vec::with_capacity(taints.len());
    for taint in taints {
        used.push(tolerations.iter().find(|t| tolerates(t, taint))?);
    }
    Some(used)
}

/// How long a pod may stay on a node whose taints `used` tolerate (upstream
/// `getMinTolerationTime` of the taint eviction controller): the smallest
/// `tolerationSeconds` among them; zero when there are none or one is zero or
/// negative; `None` (forever) when none of them sets `tolerationSeconds`.
pub fn min_toleration_time(used: &[&Toleration]) -> Option<std::time::Duration> {
    if used.is_empty() {
        return Some(std::time::Duration::ZERO);
    }
    let mut min: Option<i64> = None;
    for seconds in used.iter().filter_map(|t| t.toleration_seconds) {
        if seconds <= 0 {
            return Some(std::time::Duration::ZERO);
        }
        min = Some(min.map_or(seconds, |m| m.min(seconds)));
    }
    min.map(|s| std::time::Duration::from_secs(s as u64))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn taint(key: &str, value: &str, effect: &str) -> Taint {
        Taint {
            key: key.into(),
            value: Some(value.into()),
            effect: effect.into(),
            time_added: None,
        }
    }

    fn toleration(key: &str, value: &str, seconds: Option<i64>) -> Toleration {
        Toleration {
            key: Some(key.into()),
            value: Some(value.into()),
            effect: Some("NoExecute".into()),
            toleration_seconds: seconds,
            ..Toleration::default()
        }
    }

    fn seconds(s: Option<i64>) -> Toleration {
        Toleration {
            toleration_seconds: s,
            ..Toleration::default()
        }
    }

    // upstream TestGetMinTolerationTime (taint_eviction_test.go)
    #[test]
    fn min_toleration_time_as_upstream() {
        let cases: Vec<(Vec<Toleration>, Option<Duration>)> = vec![
            (vec![], Some(Duration::ZERO)),
            (vec![seconds(None)], None),
            (
                vec![seconds(Some(1)), seconds(Some(2))],
                Some(Duration::from_secs(1)),
            ),
            (
                vec![seconds(Some(1)), seconds(None)],
                Some(Duration::from_secs(1)),
            ),
            (
                vec![seconds(None), seconds(Some(1))],
                Some(Duration::from_secs(1)),
            ),
            (
                vec![seconds(Some(5)), seconds(Some(0))],
                Some(Duration::ZERO),
            ),
            (vec![seconds(Some(-3))], Some(Duration::ZERO)),
        ];
        for (tolerations, want) in cases {
            let used: Vec<&Toleration> = tolerations.iter().collect();
            assert_eq!(min_toleration_time(&used), want, "{tolerations:?}");
        }
    }

    // upstream TestGetMatchingTolerations (pkg/apis/core/v1/helper)
    #[test]
    fn matching_tolerations_cover_every_taint() {
        let t1 = taint("testTaint1", "test1", "NoExecute");
        let t2 = taint("testTaint2", "test2", "NoExecute");
        let tol1 = toleration("testTaint1", "test1", Some(100));
        let tol2 = toleration("testTaint2", "test2", None);
        // no taints: tolerated, nothing used
        assert_eq!(matching_tolerations(&[], &[]), Some(vec![]));
        // taints and no tolerations
        assert_eq!(matching_tolerations(std::slice::from_ref(&t1), &[]), None);
        // one tolerated
        let tols = [tol1.clone()];
        assert_eq!(
            matching_tolerations(std::slice::from_ref(&t1), &tols),
            Some(vec![&tols[0]])
        );
        // one of two not tolerated
        assert_eq!(matching_tolerations(&[t1.clone(), t2.clone()], &tols), None);
        // both, each by its own toleration, in taint order
        let tols = [tol2.clone(), tol1.clone()];
        assert_eq!(
            matching_tolerations(&[t1.clone(), t2.clone()], &tols),
            Some(vec![&tols[1], &tols[0]])
        );
        // a value mismatch is not tolerated
        let wrong = [toleration("testTaint1", "other", None)];
        assert_eq!(matching_tolerations(&[t1], &wrong), None);
        // an empty-key Exists toleration matches everything
        let all = [Toleration {
            operator: Some("Exists".into()),
            ..Toleration::default()
        }];
        assert_eq!(matching_tolerations(&[t2], &all), Some(vec![&all[0]]));
    }
}
