//! Which generation of each slice the controller last wrote, per Endpoints (upstream
//! `EndpointSliceTracker` of `k8s.io/endpointslice/util`).
//!
//! The controller's own writes come back through the informer; a slice whose generation
//! is the one written needs no sync ([`SliceTracker::should_sync`]), and a cache that
//! still holds an older generation, or a slice the controller deleted, is stale: the
//! sync is retried later rather than computed from it ([`SliceTracker::stale`]).

use std::collections::HashMap;
use std::sync::Mutex;

use k8s_openapi::api::discovery::v1::EndpointSlice;

use super::reconciler::LABEL_SERVICE_NAME;

/// The generation recorded for a slice the controller deleted.
const DELETION_EXPECTED: i64 = -1;

type Owner = (String, String);

/// Generations written, by (namespace, Endpoints name) and slice UID.
#[derive(Debug, Default)]
pub struct SliceTracker {
    generations: Mutex<HashMap<Owner, HashMap<String, i64>>>,
}

fn owner_of(slice: &EndpointSlice) -> Owner {
    (
        slice.metadata.namespace.clone().unwrap_or_default(),
        slice
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(LABEL_SERVICE_NAME))
            .cloned()
            .unwrap_or_default(),
    )
}

fn uid(slice: &EndpointSlice) -> String {
    slice.metadata.uid.clone().unwrap_or_default()
}

impl SliceTracker {
    fn with<T>(&self, f: impl FnOnce(&mut HashMap<Owner, HashMap<String, i64>>) -> T) -> T {
        let mut g = self.generations.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut g)
    }

    /// Whether the slice is tracked.
    pub fn has(&self, slice: &EndpointSlice) -> bool {
        self.with(|g| {
            g.get(&owner_of(slice))
                .is_some_and(|m| m.contains_key(&uid(slice)))
        })
    }

    /// Whether a change of `slice` is news: not written by the controller, or newer
    /// than what it wrote.
    pub fn should_sync(&self, slice: &EndpointSlice) -> bool {
        self.with(
            |g| match g.get(&owner_of(slice)).and_then(|m| m.get(&uid(slice))) {
                None => true,
                Some(&written) => slice.metadata.generation.unwrap_or_default() > written,
            },
        )
    }

    /// Whether `slices`, read from the cache for the Endpoints `namespace/name`, are
    /// older than what the controller wrote.
    pub fn stale(&self, namespace: &str, name: &str, slices: &[&EndpointSlice]) -> bool {
        self.with(|g| {
            let Some(m) = g.get(&(namespace.to_string(), name.to_string())) else {
                return false;
            };
            let mut seen = std::collections::HashSet::new();
            for s in slices {
                let u = uid(s);
                if let Some(&written) = m.get(&u) {
                    if written == DELETION_EXPECTED
                        || written > s.metadata.generation.unwrap_or_default()
                    {
                        return true;
                    }
                }
                seen.insert(u);
            }
            m.iter()
                .any(|(u, &written)| written != DELETION_EXPECTED && !seen.contains(u))
        })
    }

    /// Record a slice the controller wrote.
    pub fn update(&self, slice: &EndpointSlice) {
        let generation = slice.metadata.generation.unwrap_or_default();
        self.with(|g| {
            g.entry(owner_of(slice))
                .or_default()
                .insert(uid(slice), generation);
        });
    }

    /// Record a slice the controller deleted.
    pub fn expect_deletion(&self, slice: &EndpointSlice) {
        self.with(|g| {
            g.entry(owner_of(slice))
                .or_default()
                .insert(uid(slice), DELETION_EXPECTED);
        });
    }

    /// Forget a deleted slice; false when the controller had written it and not
    /// deleted it (someone else did: the Endpoints must be synced again).
    pub fn handle_deletion(&self, slice: &EndpointSlice) -> bool {
        self.with(|g| {
            let owner = owner_of(slice);
            let Some(m) = g.get_mut(&owner) else {
                return true;
            };
            let expected = matches!(m.remove(&uid(slice)), None | Some(DELETION_EXPECTED));
            if m.is_empty() {
                g.remove(&owner);
            }
            expected
        })
    }

    /// Forget everything about the Endpoints `namespace/name`.
    pub fn delete_owner(&self, namespace: &str, name: &str) {
        self.with(|g| {
            g.remove(&(namespace.to_string(), name.to_string()));
        });
    }
}
