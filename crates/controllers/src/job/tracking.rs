//! Finalizer-based tracking (upstream `tracking_utils.go` and the uncounted-pods helpers
//! of `job_controller.go`).
//!
//! Every pod of a Job carries the `batch.kubernetes.io/job-tracking` finalizer until the
//! controller counted it. Counting is a two-phase commit through
//! `status.uncountedTerminatedPods`: the UID of a finished pod is first written to the
//! status, then the pod's finalizer is removed, then the UID moves from the uncounted
//! list to the `succeeded`/`failed` counter. A crash between any two steps neither loses
//! nor double-counts a pod. [`UidTrackingExpectations`] remembers the finalizer removals
//! the cache has not shown yet, so a sync on a stale cache treats those pods as already
//! removed.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use coxswain_runtime::ObjectKey;
use k8s_openapi::api::batch::v1::{JobStatus, UncountedTerminatedPods};

/// Per Job, the pod UIDs whose finalizer removal the cache has not shown yet.
#[derive(Debug, Default)]
pub struct UidTrackingExpectations {
    entries: Mutex<HashMap<ObjectKey, HashSet<String>>>,
}

impl UidTrackingExpectations {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<ObjectKey, HashSet<String>>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The expected UIDs of `key` (a copy; empty when none).
    pub fn expected_uids(&self, key: &ObjectKey) -> HashSet<String> {
        self.lock().get(key).cloned().unwrap_or_default()
    }

    /// Whether `key` has an entry at all.
    pub fn has(&self, key: &ObjectKey) -> bool {
        self.lock().contains_key(key)
    }

    /// Expect the finalizers of `uids` to be removed.
    pub fn expect_finalizers_removed<'a>(
        &self,
        key: &ObjectKey,
        uids: impl IntoIterator<Item = &'a str>,
    ) {
        self.lock()
            .entry(key.clone())
            .or_default()
            .extend(uids.into_iter().map(str::to_string));
    }

    /// The cache showed the removal of `uid`'s finalizer (or it will never come).
    pub fn finalizer_removal_observed(&self, key: &ObjectKey, uid: &str) {
        if let Some(set) = self.lock().get_mut(key) {
            set.remove(uid);
        }
    }

    /// Forget `key`.
    pub fn delete_expectations(&self, key: &ObjectKey) {
        self.lock().remove(key);
    }
}

/// The uncounted UIDs of a status, as sets.
#[derive(Clone, Debug, Default)]
pub struct Uncounted {
    /// Succeeded pods not yet counted.
    pub succeeded: HashSet<String>,
    /// Failed pods not yet counted.
    pub failed: HashSet<String>,
}

impl Uncounted {
    /// The sets of `status.uncountedTerminatedPods`.
    pub fn of(u: Option<&UncountedTerminatedPods>) -> Self {
        let set = |l: Option<&Vec<String>>| l.into_iter().flatten().cloned().collect();
        Uncounted {
            succeeded: set(u.and_then(|u| u.succeeded.as_ref())),
            failed: set(u.and_then(|u| u.failed.as_ref())),
        }
    }
}

/// The number of uncounted UIDs in `status`.
pub fn uncounted_len(status: &JobStatus) -> usize {
    status.uncounted_terminated_pods.as_ref().map_or(0, |u| {
        u.succeeded.as_ref().map_or(0, Vec::len) + u.failed.as_ref().map_or(0, Vec::len)
    })
}

fn add(counter: &mut Option<i32>, n: usize) {
    let v = counter
        .unwrap_or(0)
        .saturating_add(i32::try_from(n).unwrap_or(i32::MAX));
    *counter = (v != 0).then_some(v);
}

/// Move the uncounted UIDs whose pods no longer carry the finalizer (not in
/// `with_finalizer`) to the counters (upstream `cleanUncountedPodsWithoutFinalizers`).
/// Returns whether the status changed.
pub fn clean_uncounted_pods_without_finalizers(
    status: &mut JobStatus,
    with_finalizer: &HashSet<String>,
) -> bool {
    let uncounted = status
        .uncounted_terminated_pods
        .get_or_insert_with(Default::default);
    let mut changed = false;
    let mut moved = (0, 0);
    for (list, n) in [
        (&mut uncounted.succeeded, &mut moved.0),
        (&mut uncounted.failed, &mut moved.1),
    ] {
        let before = list.as_ref().map_or(0, Vec::len);
        let kept: Vec<String> = list
            .take()
            .into_iter()
            .flatten()
            .filter(|uid| with_finalizer.contains(uid))
            .collect();
        if kept.len() != before {
            changed = true;
            *n = before - kept.len();
        }
        *list = (!kept.is_empty()).then_some(kept);
    }
    add(&mut status.succeeded, moved.0);
    add(&mut status.failed, moved.1);
    changed
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    // Upstream TestUIDTrackingExpectations (tracking_utils_test.go).
    #[test]
    fn uid_tracking_expectations() {
        let tracks: Vec<(ObjectKey, Vec<&str>, Vec<&str>)> = vec![
            (
                ObjectKey::namespaced("ns", "foo"),
                vec!["a", "b", "c", "d"],
                vec!["e", "f"],
            ),
            (
                ObjectKey::namespaced("ns", "bar"),
                vec!["x", "y", "z"],
                vec!["u", "v", "w"],
            ),
            (ObjectKey::namespaced("ns", "baz"), vec!["w"], vec!["a"]),
        ];
        let exp = Arc::new(UidTrackingExpectations::default());
        let sorted = |s: HashSet<String>| {
            let mut v: Vec<String> = s.into_iter().collect();
            v.sort();
            v
        };
        std::thread::scope(|scope| {
            for (key, first, _) in &tracks {
                let exp = exp.clone();
                scope.spawn(move || exp.expect_finalizers_removed(key, first.iter().copied()));
            }
        });
        for (key, first, _) in &tracks {
            let mut want: Vec<String> = first.iter().map(|s| s.to_string()).collect();
            want.sort();
            assert_eq!(sorted(exp.expected_uids(key)), want, "{key}");
        }
        std::thread::scope(|scope| {
            for (key, first, second) in &tracks {
                for uid in first {
                    let exp = exp.clone();
                    scope.spawn(move || exp.finalizer_removal_observed(key, uid));
                }
                let exp = exp.clone();
                scope.spawn(move || exp.expect_finalizers_removed(key, second.iter().copied()));
            }
        });
        for (key, _, second) in &tracks {
            let mut want: Vec<String> = second.iter().map(|s| s.to_string()).collect();
            want.sort();
            assert_eq!(sorted(exp.expected_uids(key)), want, "{key}");
        }
        for (key, _, _) in &tracks {
            exp.delete_expectations(key);
            assert!(!exp.has(key), "{key}");
        }
    }

    #[test]
    fn clean_uncounted_moves_uids_without_finalizers_to_the_counters() {
        let mut status = JobStatus {
            succeeded: Some(2),
            uncounted_terminated_pods: Some(UncountedTerminatedPods {
                succeeded: Some(vec!["a".into(), "b".into()]),
                failed: Some(vec!["c".into()]),
            }),
            ..Default::default()
        };
        let with: HashSet<String> = ["b".to_string()].into();
        assert!(clean_uncounted_pods_without_finalizers(&mut status, &with));
        assert_eq!((status.succeeded, status.failed), (Some(3), Some(1)));
        let u = status.uncounted_terminated_pods.clone().unwrap_or_default();
        assert_eq!((u.succeeded, u.failed), (Some(vec!["b".to_string()]), None));
        assert!(!clean_uncounted_pods_without_finalizers(&mut status, &with));
        assert_eq!(uncounted_len(&status), 1);
    }
}
