//! Expectations: what a controller has asked the API server to create or delete and
//! not yet seen in its cache, after upstream's `ControllerExpectations` and
//! `UIDTrackingControllerExpectations` (`pkg/controller/controller_utils.go`).
//!
//! Before a controller creates `n` children it records `n` expected creations; the
//! cache's event handler lowers the count as each new child shows up. Until the count
//! reaches zero the controller does not create or delete again, because its cached
//! view is known to be stale: this is what stops a ReplicaSet from creating pods twice
//! when the watch lags behind its own writes. Deletions are tracked by child key, so
//! that a child seen first with a deletion timestamp and then as deleted counts once.
//!
//! Expectations expire after [`EXPECTATIONS_TIMEOUT`] (5 minutes, as upstream): a
//! watch event that never arrives cannot put a controller to sleep forever.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use coxswain_runtime::ObjectKey;

/// How long expectations hold before a controller acts anyway (upstream
/// `ExpectationsTimeout`).
pub const EXPECTATIONS_TIMEOUT: Duration = Duration::from_secs(5 * 60);

#[derive(Debug)]
struct Entry {
    add: i64,
    del: i64,
    /// when the expectations were set
    timestamp: Instant,
    /// keys of the children whose deletion is awaited
    deletions: HashSet<ObjectKey>,
}

impl Entry {
    fn fulfilled(&self) -> bool {
        self.add <= 0 && self.del <= 0
    }
}

/// Expected creations and deletions per controller key; cheap to share behind an
/// `Arc` between a controller's event handlers and its reconciler.
#[derive(Debug)]
pub struct ControllerExpectations {
    ttl: Duration,
    entries: Mutex<HashMap<ObjectKey, Entry>>,
}

impl Default for ControllerExpectations {
    fn default() -> Self {
        Self::new()
    }
}

impl ControllerExpectations {
    /// Expectations that expire after [`EXPECTATIONS_TIMEOUT`].
    pub fn new() -> Self {
        Self::with_ttl(EXPECTATIONS_TIMEOUT)
    }

    /// Expectations that expire after `ttl`.
    pub fn with_ttl(ttl: Duration) -> Self {
        ControllerExpectations {
            ttl,
            entries: Mutex::new(HashMap::new()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<ObjectKey, Entry>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether the controller at `key` may act: it has no expectations, they are
    /// fulfilled, or they expired.
    pub fn satisfied(&self, key: &ObjectKey) -> bool {
        self.satisfied_at(key, Instant::now())
    }

    /// [`ControllerExpectations::satisfied`] as of `now`.
    pub fn satisfied_at(&self, key: &ObjectKey, now: Instant) -> bool {
        match self.lock().get(key) {
            Some(e) if e.fulfilled() => true,
            Some(e) => {
                let expired = now.saturating_duration_since(e.timestamp) > self.ttl;
                if expired {
                    tracing::debug!(controller = %key, add = e.add, del = e.del, "expectations expired");
                } else {
                    tracing::trace!(controller = %key, add = e.add, del = e.del, "still waiting on expectations");
                }
                expired
            }
            None => true,
        }
    }

    /// How long until the pending expectations of `key` expire (`None` when there are
    /// none pending).
    pub fn time_to_expiry(&self, key: &ObjectKey) -> Option<Duration> {
        let entries = self.lock();
        let e = entries.get(key).filter(|e| !e.fulfilled())?;
        Some(self.ttl.saturating_sub(e.timestamp.elapsed()))
    }

    /// The pending `(creations, deletions)` of `key`, if it has expectations.
    pub fn get(&self, key: &ObjectKey) -> Option<(i64, i64)> {
        self.lock().get(key).map(|e| (e.add, e.del))
    }

    /// Replace the expectations of `key` with `add` creations and `del` deletions
    /// (deletions not tracked by child key).
    pub fn set_expectations(&self, key: &ObjectKey, add: i64, del: i64) {
        self.lock().insert(
            key.clone(),
            Entry {
                add,
                del,
                timestamp: Instant::now(),
                deletions: HashSet::new(),
            },
        );
    }

    /// Expect `adds` creations (and no deletion) for `key`.
    pub fn expect_creations(&self, key: &ObjectKey, adds: usize) {
        self.set_expectations(key, i64::try_from(adds).unwrap_or(i64::MAX), 0);
    }

    /// Expect the deletion of each of `children` (and no creation) for `key`.
    pub fn expect_deletions(&self, key: &ObjectKey, children: impl IntoIterator<Item = ObjectKey>) {
        let deletions: HashSet<ObjectKey> = children.into_iter().collect();
        let mut entries = self.lock();
        if let Some(old) = entries.get(key).filter(|e| !e.deletions.is_empty()) {
            tracing::debug!(controller = %key, pending = old.deletions.len(), "clobbering pending deletion expectations");
        }
        entries.insert(
            key.clone(),
            Entry {
                add: 0,
                del: i64::try_from(deletions.len()).unwrap_or(i64::MAX),
                timestamp: Instant::now(),
                deletions,
            },
        );
    }

    /// Expect `adds` creations and the deletion of each of `children` for `key` at
    /// once (a DaemonSet creates on some nodes and deletes on others in one sync).
    pub fn expect_creations_and_deletions(
        &self,
        key: &ObjectKey,
        adds: usize,
        children: impl IntoIterator<Item = ObjectKey>,
    ) {
        let deletions: HashSet<ObjectKey> = children.into_iter().collect();
        self.lock().insert(
            key.clone(),
            Entry {
                add: i64::try_from(adds).unwrap_or(i64::MAX),
                del: i64::try_from(deletions.len()).unwrap_or(i64::MAX),
                timestamp: Instant::now(),
                deletions,
            },
        );
    }

    /// One expected creation of `key` happened (or will never happen).
    pub fn creation_observed(&self, key: &ObjectKey) {
        self.lower_creations(key, 1);
    }

    /// `n` expected creations of `key` happened (or will never happen).
    pub fn lower_creations(&self, key: &ObjectKey, n: usize) {
        if let Some(e) = self.lock().get_mut(key) {
            e.add = e.add.saturating_sub(i64::try_from(n).unwrap_or(i64::MAX));
        }
    }

    /// The child `child` of `key` is gone (or is being deleted): counts once, and only
    /// if its deletion was expected.
    pub fn deletion_observed(&self, key: &ObjectKey, child: &ObjectKey) {
        if let Some(e) = self.lock().get_mut(key) {
            if e.deletions.remove(child) {
                e.del -= 1;
            }
        }
    }

    /// Forget the expectations of `key` (its controller was deleted).
    pub fn delete_expectations(&self, key: &ObjectKey) {
        self.lock().remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn creations_and_tracked_deletions_together() {
        let e = ControllerExpectations::new();
        let ds = ObjectKey::namespaced("default", "ds");
        let (a, b) = (
            ObjectKey::namespaced("default", "a"),
            ObjectKey::namespaced("default", "b"),
        );
        e.expect_creations_and_deletions(&ds, 2, [a.clone(), b.clone()]);
        assert_eq!(e.get(&ds), Some((2, 2)));
        e.creation_observed(&ds);
        e.deletion_observed(&ds, &a);
        // the same pod seen terminating and then gone counts once
        e.deletion_observed(&ds, &a);
        assert_eq!(e.get(&ds), Some((1, 1)));
        assert!(!e.satisfied(&ds));
        e.creation_observed(&ds);
        e.deletion_observed(&ds, &b);
        assert!(e.satisfied(&ds));
    }

    // Upstream TestControllerExpectations (pkg/controller/controller_utils_test.go).
    #[test]
    fn controller_expectations() {
        let ttl = Duration::from_secs(30);
        let e = std::sync::Arc::new(ControllerExpectations::with_ttl(ttl));
        let rc = ObjectKey::namespaced("default", "foobar");
        let (adds, dels) = (10, 30);
        e.set_expectations(&rc, adds, dels);
        // observations from many threads at once
        let threads: Vec<_> = (0..=adds)
            .map(|_| {
                let (e, rc) = (e.clone(), rc.clone());
                std::thread::spawn(move || e.creation_observed(&rc))
            })
            .collect();
        for t in threads {
            t.join().expect("thread");
        }
        assert!(!e.satisfied(&rc), "synced before the deletions were seen");
        for _ in 0..=dels {
            e.lower_deletions_untracked(&rc);
        }
        // "Expectations have been surpassed"
        assert_eq!(e.get(&rc), Some((-1, -1)));
        assert!(e.satisfied(&rc));
        // "Old expectations are cleared because of ttl"
        e.set_expectations(&rc, 1, 2);
        assert_eq!(e.get(&rc), Some((1, 2)));
        assert!(!e.satisfied(&rc));
        assert!(e.satisfied_at(&rc, Instant::now() + ttl + Duration::from_secs(1)));
        assert!(e.time_to_expiry(&rc).is_some_and(|d| d <= ttl));
        // no expectations at all: a new controller syncs
        assert!(e.satisfied(&ObjectKey::namespaced("default", "new")));
    }

    // Upstream TestUIDExpectations (pkg/controller/controller_utils_test.go).
    #[test]
    fn uid_expectations() {
        let e = ControllerExpectations::new();
        for replicas in [2, 1, 0, 5] {
            let rc = ObjectKey::namespaced("default", format!("rc-{replicas}"));
            let pods: Vec<ObjectKey> = (0..5)
                .map(|i| ObjectKey::namespaced("default", format!("pod{i}-rc-{replicas}")))
                .collect();
            e.expect_deletions(&rc, pods.clone());
            assert!(!e.satisfied(&rc), "{rc} satisfied before deletion");
            // an unrelated pod does not count, and a pod counts once
            e.deletion_observed(&rc, &ObjectKey::namespaced("default", "other"));
            e.deletion_observed(&rc, &pods[0]);
            e.deletion_observed(&rc, &pods[0]);
            assert_eq!(e.get(&rc), Some((0, 4)));
            for p in &pods {
                e.deletion_observed(&rc, p);
            }
            assert!(e.satisfied(&rc), "{rc} not satisfied after deletion");
            e.delete_expectations(&rc);
            assert_eq!(e.get(&rc), None);
        }
    }

    #[test]
    fn creations_lowered_for_skipped_pods() {
        let e = ControllerExpectations::new();
        let rs = ObjectKey::namespaced("ns", "rs");
        e.expect_creations(&rs, 7);
        e.lower_creations(&rs, 4);
        assert_eq!(e.get(&rs), Some((3, 0)));
        for _ in 0..3 {
            e.creation_observed(&rs);
        }
        assert!(e.satisfied(&rs));
        assert_eq!(e.time_to_expiry(&rs), None);
        // observations for a controller without expectations are ignored
        e.creation_observed(&ObjectKey::namespaced("ns", "none"));
        assert_eq!(e.get(&ObjectKey::namespaced("ns", "none")), None);
    }

    impl ControllerExpectations {
        fn lower_deletions_untracked(&self, key: &ObjectKey) {
            if let Some(e) = self.lock().get_mut(key) {
                e.del -= 1;
            }
        }
    }
}
