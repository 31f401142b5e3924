//! The `endpoints.kubernetes.io/last-change-trigger-time` annotation, after upstream's
//! `TriggerTimeTracker`.

use std::collections::HashMap;
use std::sync::Mutex;

use coxswain_runtime::ObjectKey;
use k8s_openapi::api::core::v1::{Pod, Service};
use k8s_openapi::jiff::Timestamp;

/// What the tracker last saw of one Service.
#[derive(Clone, Debug, Default)]
struct ServiceState {
    /// The Service's trigger time (its creation time).
    last_service_trigger_time: Option<Timestamp>,
    /// Pod name → the pod's trigger time (its `Ready` condition's last transition).
    last_pod_trigger_times: HashMap<String, Timestamp>,
}

/// Computes the last-change trigger time of a Service's endpoints: the earliest of the
/// pod and Service changes observed since the previous sync of that Service (upstream
/// `TriggerTimeTracker`). A pod's change time is its `Ready` condition's
/// `lastTransitionTime`, the Service's its creation time; a Service seen for the first
/// time answers its creation time. Like upstream, a pod that changed twice between two
/// syncs is counted once, with its latest time.
///
/// Calls for different Services may run concurrently; calls for the same Service must
/// not (the controllers' work queues guarantee that).
#[derive(Debug, Default)]
pub struct TriggerTimeTracker {
    states: Mutex<HashMap<ObjectKey, ServiceState>>,
}

impl TriggerTimeTracker {
    /// An empty tracker.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records the Service's and its pods' current trigger times and answers the time
    /// for the annotation; `None`: no change observed, the annotation is not set
    /// (upstream's zero time).
    pub fn compute_endpoint_last_change_trigger_time<'a>(
        &self,
        service: &Service,
        pods: impl IntoIterator<Item = &'a Pod>,
    ) -> Option<Timestamp> {
        let key = ObjectKey::of(service);
        let previous = self
            .states
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
            .cloned();
        let was_known = previous.is_some();
        let previous = previous.unwrap_or_default();

        let mut min_changed: Option<Timestamp> = None;
        let mut take_min = |t: Timestamp| {
            min_changed = Some(match min_changed {
                Some(m) if m <= t => m,
                _ => t,
            });
        };
        let mut pod_times = HashMap::new();
        for pod in pods {
            if let Some(t) = pod_trigger_time(pod) {
                let name = pod.metadata.name.clone().unwrap_or_default();
                if previous
                    .last_pod_trigger_times
                    .get(&name)
                    .is_none_or(|old| t > *old)
                {
                    take_min(t);
                }
                pod_times.insert(name, t);
            }
        }
        let service_time = service_trigger_time(service);
        if let Some(t) = service_time {
            if previous.last_service_trigger_time.is_none_or(|old| t > old) {
                take_min(t);
            }
        }
        self.states
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(
                key,
                ServiceState {
                    last_service_trigger_time: service_time,
                    last_pod_trigger_times: pod_times,
                },
            );
        if !was_known {
            // a new Service: its creation
            return service_time;
        }
        min_changed
    }

    /// Forgets a deleted Service.
    pub fn delete_service(&self, key: &ObjectKey) {
        self.states
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(key);
    }
}

/// A pod's change time: the `Ready` condition's last transition.
fn pod_trigger_time(pod: &Pod) -> Option<Timestamp> {
    super::pod_ready_condition(pod)?
        .last_transition_time
        .as_ref()
        .map(|t| t.0)
}

/// A Service's change time: its creation.
fn service_trigger_time(svc: &Service) -> Option<Timestamp> {
    svc.metadata.creation_timestamp.as_ref().map(|t| t.0)
}
