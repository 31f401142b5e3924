//! Pod state as the workload controllers see it, after upstream's
//! `pkg/api/v1/pod/util.go` (`IsPodReady`, `IsPodAvailable`) and the pod filters of
//! `pkg/controller/controller_utils.go` (`IsPodActive`, `FilterActivePods`,
//! `IsPodTerminating`, `FilterTerminatingPods`).

use std::sync::Arc;
use std::time::Duration;

use coxswain_runtime::ObjectKey;
use k8s_openapi::api::core::v1::{Pod, PodCondition};
use k8s_openapi::jiff::{SignedDuration, Timestamp};

/// The key of a pod (`namespace/name`), as expectations track deletions.
pub fn pod_key(pod: &Pod) -> ObjectKey {
    ObjectKey::of(pod)
}

/// The pod's phase (`""` when the status has none yet).
pub fn pod_phase(pod: &Pod) -> &str {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("")
}

/// The pod's `Ready` condition, if it has one.
pub fn pod_ready_condition(pod: &Pod) -> Option<&PodCondition> {
    pod.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "Ready")
}

/// Whether the pod's `Ready` condition is `True`.
pub fn is_pod_ready(pod: &Pod) -> bool {
    pod_ready_condition(pod).is_some_and(|c| c.status == "True")
}

/// When the pod became ready (the `Ready` condition's `lastTransitionTime`), if it is
/// ready and the time is known.
pub fn pod_ready_time(pod: &Pod) -> Option<Timestamp> {
    pod_ready_condition(pod)
        .filter(|c| c.status == "True")
        .and_then(|c| c.last_transition_time.as_ref())
        .map(|t| t.0)
}

/// Whether the pod is available: ready, and ready for longer than `min_ready_seconds`
/// at `now` (always, when `min_ready_seconds` is 0).
pub fn is_pod_available(pod: &Pod, min_ready_seconds: i32, now: Timestamp) -> bool {
    if !is_pod_ready(pod) {
        return false;
    }
    if min_ready_seconds <= 0 {
        return true;
    }
    match pod_ready_time(pod) {
        Some(since) => since
            .checked_add(SignedDuration::from_secs(i64::from(min_ready_seconds)))
            .is_ok_and(|t| t < now),
        None => false,
    }
}

/// Whether the pod is in a terminal phase (`Succeeded` or `Failed`).
pub fn is_pod_terminal(pod: &Pod) -> bool {
    matches!(pod_phase(pod), "Succeeded" | "Failed")
}

/// Whether the pod counts towards a controller's replicas: not terminal and not being
/// deleted.
pub fn is_pod_active(pod: &Pod) -> bool {
    !is_pod_terminal(pod) && pod.metadata.deletion_timestamp.is_none()
}

/// Whether the pod is being deleted but has not reached a terminal phase.
pub fn is_pod_terminating(pod: &Pod) -> bool {
    !is_pod_terminal(pod) && pod.metadata.deletion_timestamp.is_some()
}

/// The active pods of `pods` (see [`is_pod_active`]).
pub fn filter_active_pods(pods: &[Arc<Pod>]) -> Vec<Arc<Pod>> {
    pods.iter().filter(|p| is_pod_active(p)).cloned().collect()
}

/// The terminating pods of `pods` (see [`is_pod_terminating`]).
pub fn filter_terminating_pods(pods: &[Arc<Pod>]) -> Vec<Arc<Pod>> {
    pods.iter()
        .filter(|p| is_pod_terminating(p))
        .cloned()
        .collect()
}

/// How long until the first of `pods` that is ready but not yet available becomes
/// available (`None` when no pod is waiting for `min_ready_seconds`).
pub fn next_pod_availability_check(
    pods: &[Arc<Pod>],
    min_ready_seconds: i32,
    now: Timestamp,
) -> Option<Duration> {
    if min_ready_seconds <= 0 {
        return None;
    }
    let min_ready = SignedDuration::from_secs(i64::from(min_ready_seconds));
    pods.iter()
        .filter(|p| is_pod_ready(p) && !is_pod_available(p, min_ready_seconds, now))
        .filter_map(|p| pod_ready_time(p))
        .filter_map(|since| since.checked_add(min_ready).ok())
        .map(|at| at.duration_since(now))
        .filter(|d| d.is_positive() || d.is_zero())
        .min()
        .map(|d| d.unsigned_abs())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::PodStatus;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    /// A pod named `name` in `phase`, ready since `ready_since` when given.
    pub(crate) fn pod(name: &str, phase: &str, ready_since: Option<Timestamp>) -> Pod {
        let mut p = Pod::default();
        p.metadata.name = Some(name.into());
        p.metadata.namespace = Some("default".into());
        p.status = Some(PodStatus {
            phase: (!phase.is_empty()).then(|| phase.to_string()),
            conditions: ready_since.map(|t| {
                vec![PodCondition {
                    type_: "Ready".into(),
                    status: "True".into(),
                    last_transition_time: Some(Time(t)),
                    ..Default::default()
                }]
            }),
            ..Default::default()
        });
        p
    }

    fn names(pods: &[Arc<Pod>]) -> Vec<String> {
        pods.iter()
            .map(|p| p.metadata.name.clone().unwrap_or_default())
            .collect()
    }

    // Upstream TestActivePodFiltering and TestCountTerminatingPods
    // (pkg/controller/controller_utils_test.go).
    #[test]
    fn active_and_terminating_filters() {
        let now = Timestamp::now();
        let deleting = |mut p: Pod| {
            p.metadata.deletion_timestamp = Some(Time(now));
            p
        };
        let pods: Vec<Arc<Pod>> = vec![
            pod("pod-1", "Succeeded", None),
            pod("pod-2", "Failed", None),
            pod("pod-3", "", None),
            pod("pod-4", "Running", None),
            deleting(pod("pod-5", "Pending", None)),
            deleting(pod("pod-6", "Running", None)),
            deleting(pod("pod-7", "Failed", None)),
        ]
        .into_iter()
        .map(Arc::new)
        .collect();
        assert_eq!(names(&filter_active_pods(&pods)), ["pod-3", "pod-4"]);
        assert_eq!(names(&filter_terminating_pods(&pods)), ["pod-5", "pod-6"]);
    }

    // Upstream TestIsPodAvailable (pkg/api/v1/pod/util_test.go).
    #[test]
    fn availability() {
        let now = Timestamp::now();
        let ago = |s: i64| now.checked_sub(SignedDuration::from_secs(s)).unwrap_or(now);
        let cases = [
            (pod("p", "Running", None), 0, false),
            (pod("p", "Running", Some(now)), 0, true),
            (pod("p", "Running", Some(now)), 1, false),
            (pod("p", "Running", Some(ago(2))), 1, true),
        ];
        for (i, (p, min_ready, want)) in cases.iter().enumerate() {
            assert_eq!(is_pod_available(p, *min_ready, now), *want, "case {i}");
        }
        // ready without a transition time: ready, never available with minReadySeconds
        let mut no_time = pod("p", "Running", Some(now));
        if let Some(c) = no_time
            .status
            .as_mut()
            .and_then(|s| s.conditions.as_mut())
            .and_then(|c| c.first_mut())
        {
            c.last_transition_time = None;
        }
        assert!(is_pod_ready(&no_time));
        assert!(!is_pod_available(&no_time, 5, now));
        assert!(is_pod_available(&no_time, 0, now));
    }

    #[test]
    fn next_availability_is_the_earliest_pending_pod() {
        let now = Timestamp::now();
        let ago = |s: i64| now.checked_sub(SignedDuration::from_secs(s)).unwrap_or(now);
        let pods: Vec<Arc<Pod>> = vec![
            pod("available", "Running", Some(ago(100))),
            pod("soon", "Running", Some(ago(7))),
            pod("later", "Running", Some(ago(2))),
            pod("not-ready", "Running", None),
        ]
        .into_iter()
        .map(Arc::new)
        .collect();
        assert_eq!(
            next_pod_availability_check(&pods, 10, now),
            Some(Duration::from_secs(3))
        );
        assert_eq!(next_pod_availability_check(&pods, 0, now), None);
        assert_eq!(next_pod_availability_check(&pods[..1], 10, now), None);
    }
}
