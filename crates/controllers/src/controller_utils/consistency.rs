//! Whether the cache has caught up with the controller's own writes of an object, after
//! upstream 1.36's `StaleControllerConsistencyDaemonSet` (`pkg/controller/daemon/util/
//! consistency.go`, beta and on by default): after writing an object's status (a
//! DaemonSet's, or its `collisionCount`; a CronJob's) the controller remembers the
//! resourceVersion the server returned, and a sync whose cached object is older is
//! skipped ("not ready for reconciliation"): the watch event of that write enqueues it
//! again. This keeps a sync from deciding on a status it has itself replaced (a stale
//! `observedGeneration` in the failed-pod back-off key, a stale `collisionCount` in the
//! revision hash, a CronJob's Job not yet in `active`) and from a status write bound to
//! conflict.
//!
//! Upstream's DaemonSet controller also tracks the pods it wrote; here the expectations
//! cover creations and deletions of pods. ResourceVersions are compared as decimal
//! numbers; one that does not parse never holds a sync back.

use std::collections::HashMap;
use std::sync::Mutex;

use coxswain_runtime::ObjectKey;

/// The last resourceVersion the controller wrote, per object key and UID.
#[derive(Debug, Default)]
pub struct ConsistencyStore {
    written: Mutex<HashMap<ObjectKey, (String, u64)>>,
}

impl ConsistencyStore {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<ObjectKey, (String, u64)>> {
        self.written.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The controller wrote the object `key` (UID `uid`), which is now at
    /// `resource_version`.
    pub fn wrote_at(&self, key: &ObjectKey, uid: &str, resource_version: Option<&str>) {
        let Some(rv) = resource_version.and_then(|v| v.parse::<u64>().ok()) else {
            return;
        };
        let mut w = self.lock();
        match w.get_mut(key) {
            Some((u, old)) if u == uid => *old = (*old).max(rv),
            _ => {
                w.insert(key.clone(), (uid.to_string(), rv));
            }
        }
    }

    /// Whether the cached object (UID `uid`, at `resource_version`) includes every
    /// write the controller made to it.
    pub fn is_ready(&self, key: &ObjectKey, uid: &str, resource_version: Option<&str>) -> bool {
        let w = self.lock();
        let Some((u, written)) = w.get(key) else {
            return true;
        };
        if u != uid {
            return true;
        }
        match resource_version.and_then(|v| v.parse::<u64>().ok()) {
            Some(seen) => seen >= *written,
            None => true,
        }
    }

    /// Forget the object `key` (deleted, or gone from the cache).
    pub fn clear(&self, key: &ObjectKey) {
        self.lock().remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_back_until_the_write_is_seen() {
        let s = ConsistencyStore::default();
        let k = ObjectKey::namespaced("default", "ds");
        assert!(s.is_ready(&k, "u1", Some("5")));
        s.wrote_at(&k, "u1", Some("10"));
        assert!(!s.is_ready(&k, "u1", Some("9")));
        assert!(s.is_ready(&k, "u1", Some("10")));
        assert!(s.is_ready(&k, "u1", Some("11")));
        // an older write never lowers the mark
        s.wrote_at(&k, "u1", Some("7"));
        assert!(!s.is_ready(&k, "u1", Some("9")));
        // another object of the same name, or an unparsable version, is not held back
        assert!(s.is_ready(&k, "u2", Some("1")));
        assert!(s.is_ready(&k, "u1", Some("x")));
        s.wrote_at(&k, "u1", Some("not-a-number"));
        assert!(!s.is_ready(&k, "u1", Some("9")));
        s.clear(&k);
        assert!(s.is_ready(&k, "u1", Some("1")));
    }
}
