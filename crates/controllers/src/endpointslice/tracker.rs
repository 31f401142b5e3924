//! Which slice generations the controller wrote, after upstream's
//! `EndpointSliceTracker` (`k8s.io/endpointslice/util/endpointslice_tracker.go`): it
//! tells a slice event caused by the controller's own write (nothing to do) from one
//! made by someone else (sync the Service), and a cache that has not yet seen the
//! controller's last writes (do not act on it).

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use coxswain_runtime::ObjectKey;
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::EndpointSlice;

use super::utils::LABEL_SERVICE_NAME;

/// A tracked generation: a written one, or a deletion the controller expects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tracked {
    Generation(i64),
    DeletionExpected,
}

#[derive(Default)]
struct Inner {
    /// Service → slice UID → what the controller last did to it.
    by_service: HashMap<ObjectKey, HashMap<String, Tracked>>,
    /// Service → its UID when last synced.
    service_uids: HashMap<ObjectKey, String>,
}

/// The generations of the slices the controller wrote, by Service.
#[derive(Default)]
pub struct EndpointSliceTracker {
    inner: Mutex<Inner>,
}

fn service_of(slice: &EndpointSlice) -> ObjectKey {
    let name = slice
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(LABEL_SERVICE_NAME))
        .map(String::as_str)
        .unwrap_or("");
    ObjectKey::from_parts(slice.metadata.namespace.as_deref(), name)
}

fn uid(slice: &EndpointSlice) -> String {
    slice.metadata.uid.clone().unwrap_or_default()
}

fn generation(slice: &EndpointSlice) -> i64 {
    slice.metadata.generation.unwrap_or(0)
}

impl EndpointSliceTracker {
    /// An empty tracker.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether the slice is tracked.
    pub fn has(&self, slice: &EndpointSlice) -> bool {
        self.lock()
            .by_service
            .get(&service_of(slice))
            .is_some_and(|g| g.contains_key(&uid(slice)))
    }

    /// Whether an event about this slice needs a sync: it is not tracked, or its
    /// generation is newer than the controller's own last write.
    pub fn should_sync(&self, slice: &EndpointSlice) -> bool {
        let inner = self.lock();
        match inner
            .by_service
            .get(&service_of(slice))
            .and_then(|g| g.get(&uid(slice)))
        {
            None => true,
            Some(Tracked::DeletionExpected) => generation(slice) > -1,
            Some(Tracked::Generation(g)) => generation(slice) > *g,
        }
    }

    /// Whether the cached `slices` of `service` lag behind the controller's writes: one
    /// is older than written, one the controller deleted is still there, or one it wrote
    /// is missing. Generations tracked for an earlier Service of the same name (another
    /// UID) are forgotten first.
    pub fn stale_slices(&self, service: &Service, slices: &[&EndpointSlice]) -> bool {
        let key = ObjectKey::of(service);
        let service_uid = service.metadata.uid.clone().unwrap_or_default();
        let mut inner = self.lock();
        if let Some(tracked) = inner.service_uids.get(&key) {
            if !tracked.is_empty() && !service_uid.is_empty() && *tracked != service_uid {
                inner.by_service.remove(&key);
            }
        }
        inner.service_uids.insert(key.clone(), service_uid);
        let Some(gens) = inner.by_service.get(&key) else {
            return false;
        };
        let mut provided = std::collections::HashSet::new();
        for slice in slices {
            let u = uid(slice);
            match gens.get(&u) {
                Some(Tracked::DeletionExpected) => return true,
                Some(Tracked::Generation(g)) if *g > generation(slice) => return true,
                _ => {}
            }
            provided.insert(u);
        }
        gens.iter()
            .any(|(u, t)| *t != Tracked::DeletionExpected && !provided.contains(u))
    }

    /// Records a slice the controller created or updated (the API server's answer).
    pub fn update(&self, slice: &EndpointSlice) {
        self.lock()
            .by_service
            .entry(service_of(slice))
            .or_default()
            .insert(uid(slice), Tracked::Generation(generation(slice)));
    }

    /// Records that the controller deleted the slice.
    pub fn expect_deletion(&self, slice: &EndpointSlice) {
        self.lock()
            .by_service
            .entry(service_of(slice))
            .or_default()
            .insert(uid(slice), Tracked::DeletionExpected);
    }

    /// Forgets a deleted slice; whether the controller expected the deletion (if not,
    /// someone else deleted it and the Service needs a sync).
    pub fn handle_deletion(&self, slice: &EndpointSlice) -> bool {
        let mut inner = self.lock();
        match inner.by_service.get_mut(&service_of(slice)) {
            Some(gens) => !matches!(gens.remove(&uid(slice)), Some(Tracked::Generation(_))),
            None => true,
        }
    }

    /// Forgets a deleted Service.
    pub fn delete_service(&self, key: &ObjectKey) {
        let mut inner = self.lock();
        inner.by_service.remove(key);
        inner.service_uids.remove(key);
    }
}
