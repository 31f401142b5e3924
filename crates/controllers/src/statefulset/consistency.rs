//! Reading one's own writes, after upstream 1.36's `ConsistencyStore`
//! (`StaleControllerConsistencyStatefulSet`).
//!
//! The StatefulSet controller keeps no expectations. Instead, after each write made
//! for a set (pod creation, update, deletion; claim creation and update; revision
//! writes; the status) it records the object's resourceVersion, and a sync of that set
//! is skipped (and retried with backoff) until the cache holds each written object at
//! that version or later, or, for a deletion, no longer holds it at an older one. A
//! sync on a stale cache could otherwise delete a pod twice, or re-create a pod the
//! watch has not shown yet.
//!
//! Records that are not seen within [`RECORD_TTL`] are dropped (a lost watch event
//! must not stop a set for good), and a resourceVersion that is no number fails open,
//! as upstream.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use coxswain_runtime::cache::Cache;
use coxswain_runtime::ObjectKey;
use k8s_openapi::api::apps::v1::{ControllerRevision, StatefulSet};
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// How long a write waits to be seen before it is forgotten.
pub const RECORD_TTL: Duration = Duration::from_secs(30);

/// The kinds of objects the controller writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WrittenKind {
    /// A pod.
    Pod,
    /// A PersistentVolumeClaim.
    Claim,
    /// A ControllerRevision.
    Revision,
    /// The StatefulSet itself (its status).
    Set,
}

impl WrittenKind {
    fn resource(self) -> &'static str {
        match self {
            WrittenKind::Pod => "pods",
            WrittenKind::Claim => "persistentvolumeclaims",
            WrittenKind::Revision => "controllerrevisions.apps",
            WrittenKind::Set => "statefulsets.apps",
        }
    }
}

#[derive(Clone, Debug)]
struct Written {
    resource_version: Option<u64>,
    uid: String,
    deleted: bool,
    at: Instant,
}

/// One set's last writes, by object.
type Records = HashMap<(WrittenKind, ObjectKey), Written>;

/// The last writes per set.
pub struct Consistency {
    cache: Arc<Cache>,
    writes: Mutex<HashMap<ObjectKey, Records>>,
}

/// What [`Consistency::ensure_ready`] found stale.
#[derive(Debug, thiserror::Error)]
#[error("read version: {read} is not as new as written version: {written} for {resource} {object}")]
pub struct Stale {
    read: String,
    written: String,
    resource: &'static str,
    object: ObjectKey,
}

impl Consistency {
    /// Records over `cache`.
    pub fn new(cache: Arc<Cache>) -> Self {
        Consistency {
            cache,
            writes: Mutex::new(HashMap::new()),
        }
    }

    /// Note a write of `kind` for the set `set`: `meta` as the server returned it (or,
    /// for a deletion, the deleted object's metadata with the version the deletion
    /// answered, if any).
    pub fn wrote(&self, set: &ObjectKey, kind: WrittenKind, meta: &ObjectMeta, deleted: bool) {
        let object = ObjectKey::from_parts(
            meta.namespace.as_deref(),
            meta.name.as_deref().unwrap_or(""),
        );
        let record = Written {
            resource_version: meta
                .resource_version
                .as_deref()
                .and_then(|v| v.parse().ok()),
            uid: meta.uid.clone().unwrap_or_default(),
            deleted,
            at: Instant::now(),
        };
        self.writes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(set.clone())
            .or_default()
            .insert((kind, object), record);
    }

    /// Forget the writes of a deleted set.
    pub fn forget(&self, set: &ObjectKey) {
        self.writes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(set);
    }

    async fn cached(&self, kind: WrittenKind, key: &ObjectKey) -> Option<(String, Option<u64>)> {
        let meta = match kind {
            WrittenKind::Pod => self.cache.get::<Pod>(key).await.map(|o| o.metadata.clone()),
            WrittenKind::Claim => self
                .cache
                .get::<PersistentVolumeClaim>(key)
                .await
                .map(|o| o.metadata.clone()),
            WrittenKind::Revision => self
                .cache
                .get::<ControllerRevision>(key)
                .await
                .map(|o| o.metadata.clone()),
            WrittenKind::Set => self
                .cache
                .get::<StatefulSet>(key)
                .await
                .map(|o| o.metadata.clone()),
        }?;
        Some((
            meta.uid.unwrap_or_default(),
            meta.resource_version.and_then(|v| v.parse().ok()),
        ))
    }

    /// Whether the cache has seen every recorded write for `set`; seen and expired
    /// records are dropped.
    pub async fn ensure_ready(&self, set: &ObjectKey) -> Result<(), Stale> {
        let records: Vec<((WrittenKind, ObjectKey), Written)> = {
            let writes = self.writes.lock().unwrap_or_else(|e| e.into_inner());
            match writes.get(set) {
                Some(w) => w.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
                None => return Ok(()),
            }
        };
        let mut seen = Vec::new();
        let mut stale = None;
        for ((kind, object), w) in records {
            let cached = self.cached(kind, &object).await;
            let ok = if w.at.elapsed() > RECORD_TTL {
                true
            } else {
                match &cached {
                    // gone: a deletion is seen; a creation or update is not (yet)
                    None => w.deleted,
                    Some((uid, _)) if w.deleted && *uid != w.uid => true,
                    Some((_, read)) => match (read, w.resource_version) {
                        (Some(read), Some(written)) => *read >= written,
                        // deleted at once: wait until the cache drops it
                        (_, None) if w.deleted => false,
                        // a version that is no number cannot be compared: fail open
                        _ => true,
                    },
                }
            };
            if ok {
                seen.push((kind, object));
            } else if stale.is_none() {
                stale = Some(Stale {
                    read: cached
                        .and_then(|c| c.1)
                        .map_or_else(|| "<none>".to_string(), |v| v.to_string()),
                    written: w
                        .resource_version
                        .map_or_else(|| "<deleted>".to_string(), |v| v.to_string()),
                    resource: kind.resource(),
                    object,
                });
            }
        }
        let mut writes = self.writes.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(w) = writes.get_mut(set) {
            for k in seen {
                w.remove(&k);
            }
            if w.is_empty() {
                writes.remove(set);
            }
        }
        stale.map_or(Ok(()), Err)
    }
}
