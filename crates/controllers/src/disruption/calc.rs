//! The disruption controller's calculations, free of the API (upstream
//! `disruption.go`'s `getExpectedPodCount`, `getExpectedScale`, `countHealthyPods`,
//! `buildDisruptedPodMap`, `updatePdbStatus`, `failSafe`,
//! `nonTerminatingPodHasStaleDisruptionCondition`, and component-helpers'
//! `UpdateDisruptionAllowedCondition` / `ConditionsAreUpToDate`).

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::time::Duration;

use apimachinery::selector::LabelSelector;
use k8s_openapi::api::core::v1::{Pod, PodCondition};
use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, OwnerReference, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use k8s_openapi::jiff::{SignedDuration, Timestamp};

/// How long a pod may stay in `disruptedPods` without being marked for deletion
/// (upstream `DeletionTimeout`).
pub const DELETION_TIMEOUT: Duration = Duration::from_secs(120);

/// How long a non-terminating pod may keep a True `DisruptionTarget` condition before
/// it is reset to False (upstream `stalePodDisruptionTimeout`).
pub const STALE_POD_DISRUPTION_TIMEOUT: Duration = Duration::from_secs(120);

/// The condition type on budgets (`policy.DisruptionAllowedCondition`).
pub const DISRUPTION_ALLOWED: &str = "DisruptionAllowed";
/// Reason: disruptions are allowed.
pub const SUFFICIENT_PODS: &str = "SufficientPods";
/// Reason: no disruption is allowed.
pub const INSUFFICIENT_PODS: &str = "InsufficientPods";
/// Reason: the controller could not compute the budget.
pub const SYNC_FAILED: &str = "SyncFailed";

/// A controller of pods and its scale (upstream `controllerAndScale`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ControllerAndScale {
    /// The controller's UID.
    pub uid: String,
    /// Its desired replicas.
    pub scale: i32,
}

/// Finds the controller a pod's controllerRef names and its scale (upstream's
/// `finders()`: ReplicationController, Deployment, ReplicaSet, StatefulSet, then any
/// resource with a scale subresource). `Ok(None)`: no such controller.
pub trait ScaleFinder: Sync {
    /// The controller of `controller_ref` in `namespace`.
    fn find(
        &self,
        controller_ref: &OwnerReference,
        namespace: &str,
    ) -> impl Future<Output = Result<Option<ControllerAndScale>, String>> + Send;
}

/// The pod's controller reference (upstream `metav1.GetControllerOf`).
pub fn controller_of(pod: &Pod) -> Option<&OwnerReference> {
    pod.metadata
        .owner_references
        .as_deref()
        .unwrap_or_default()
        .iter()
        .find(|r| r.controller == Some(true))
}

/// Upstream `intstr.GetScaledValueFromIntOrPercent`.
pub fn scaled_value(v: &IntOrString, total: i32, round_up: bool) -> Result<i32, String> {
    match v {
        IntOrString::Int(i) => Ok(*i),
        IntOrString::String(s) => {
            let Some(num) = s.strip_suffix('%') else {
                return Err(
                    "invalid value for IntOrString: invalid type: string is not a percentage"
                        .to_string(),
                );
            };
            let p: i64 = num
                .parse()
                .map_err(|e| format!("invalid value {s:?}: {e}"))?;
            let product = p * i64::from(total);
            let v = if round_up {
                (product + 99).div_euclid(100)
            } else {
                product.div_euclid(100)
            };
            Ok(v as i32)
        }
    }
}

/// The pods a budget selects: its selector as upstream's `LabelSelectorAsSelector`
/// (none selects nothing, an empty one every pod of the namespace); an invalid selector
/// is an error.
pub fn pods_for_pdb<'a>(
    pdb: &PodDisruptionBudget,
    pods: &'a [Pod],
) -> Result<Vec<&'a Pod>, String> {
    let ns = pdb.metadata.namespace.as_deref().unwrap_or_default();
    let sel = match pdb.spec.as_ref().and_then(|s| s.selector.as_ref()) {
        None => return Ok(Vec::new()),
        Some(s) => LabelSelector::from_meta(s).map_err(|e| e.to_string())?,
    };
    Ok(pods
        .iter()
        .filter(|p| p.metadata.namespace.as_deref().unwrap_or_default() == ns)
        .filter(|p| {
            let empty = BTreeMap::new();
            sel.matches_labels(p.metadata.labels.as_ref().unwrap_or(&empty))
        })
        .collect())
}

/// Whether the budget selects the pod (the lister's `GetPodPodDisruptionBudgets`: an
/// empty selector selects every pod, an unlabelled pod has no budget).
pub fn selects_pod(pdb: &PodDisruptionBudget, pod: &Pod) -> bool {
    if pdb.metadata.namespace != pod.metadata.namespace {
        return false;
    }
    let Some(labels) = pod.metadata.labels.as_ref().filter(|l| !l.is_empty()) else {
        return false;
    };
    let Some(sel) = pdb.spec.as_ref().and_then(|s| s.selector.as_ref()) else {
        return false;
    };
    LabelSelector::from_meta(sel).is_ok_and(|s| s.matches_labels(labels))
}

/// Upstream `getExpectedScale`: the sum of the scales of the pods' controllers, and the
/// pods without a controller; a pod whose controller is not found is an error.
pub async fn expected_scale<F: ScaleFinder>(
    finder: &F,
    pods: &[&Pod],
) -> Result<(i32, Vec<String>), String> {
    let mut scales: HashMap<String, i32> = HashMap::new();
    let mut unmanaged = Vec::new();
    for pod in pods {
        let name = pod.metadata.name.clone().unwrap_or_default();
        let Some(r) = controller_of(pod) else {
            unmanaged.push(name);
            continue;
        };
        if scales.contains_key(&r.uid) {
            continue;
        }
        let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
        match finder.find(r, ns).await? {
            Some(found) => {
                scales.insert(found.uid, found.scale);
            }
            None => return Err(format!("found no controllers for pod {name:?}")),
        }
    }
    Ok((scales.values().sum(), unmanaged))
}

/// Upstream `getExpectedPodCount`: `(expectedCount, desiredHealthy, unmanagedPods)`.
/// An integer minAvailable counts the selected pods; percentages and maxUnavailable
/// ask the pods' controllers for their scale (rounding up).
pub async fn expected_pod_count<F: ScaleFinder>(
    finder: &F,
    pdb: &PodDisruptionBudget,
    pods: &[&Pod],
) -> Result<(i32, i32, Vec<String>), String> {
    let spec = pdb.spec.clone().unwrap_or_default();
    if let Some(max) = &spec.max_unavailable {
        let (expected, unmanaged) = expected_scale(finder, pods).await?;
        let max = scaled_value(max, expected, true)?;
        return Ok((expected, (expected - max).max(0), unmanaged));
    }
    match &spec.min_available {
        Some(IntOrString::Int(i)) => Ok((pods.len() as i32, *i, Vec::new())),
        Some(min @ IntOrString::String(_)) => {
            let (expected, unmanaged) = expected_scale(finder, pods).await?;
            Ok((expected, scaled_value(min, expected, true)?, unmanaged))
        }
        None => Ok((0, 0, Vec::new())),
    }
}

fn is_pod_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

fn after(t: Timestamp, d: Duration) -> Timestamp {
    t.checked_add(SignedDuration::try_from(d).unwrap_or(SignedDuration::MAX))
        .unwrap_or(Timestamp::MAX)
}

/// Upstream `countHealthyPods`: ready pods that are neither being deleted nor recently
/// evicted (in `disrupted` less than [`DELETION_TIMEOUT`] ago).
pub fn count_healthy_pods(
    pods: &[&Pod],
    disrupted: &BTreeMap<String, Time>,
    now: Timestamp,
) -> i32 {
    pods.iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter(|p| {
            let name = p.metadata.name.as_deref().unwrap_or_default();
            disrupted
                .get(name)
                .is_none_or(|t| after(t.0, DELETION_TIMEOUT) <= now)
        })
        .filter(|p| is_pod_ready(p))
        .count() as i32
}

/// What [`build_disrupted_pod_map`] found.
#[derive(Debug, Default, PartialEq)]
pub struct DisruptedPods {
    /// The entries to keep: pods still expected to go.
    pub kept: BTreeMap<String, Time>,
    /// When the budget must be looked at again (the earliest expected deletion).
    pub recheck: Option<Timestamp>,
    /// Pods that were expected to be deleted but were not (a `NotDeleted` event each).
    pub not_deleted: Vec<String>,
}

/// Upstream `buildDisruptedPodMap`: keep the entries of pods that exist, are not yet
/// being deleted and whose deletion is still expected; entries of deleted or
/// terminating pods go, and so do entries older than [`DELETION_TIMEOUT`].
pub fn build_disrupted_pod_map(
    pdb: &PodDisruptionBudget,
    pods: &[&Pod],
    now: Timestamp,
) -> DisruptedPods {
    let mut out = DisruptedPods::default();
    let Some(disrupted) = pdb.status.as_ref().and_then(|s| s.disrupted_pods.as_ref()) else {
        return out;
    };
    for pod in pods {
        if pod.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let name = pod.metadata.name.as_deref().unwrap_or_default();
        let Some(t) = disrupted.get(name) else {
            continue;
        };
        let expected = after(t.0, DELETION_TIMEOUT);
        if expected < now {
            out.not_deleted.push(name.to_string());
        } else {
            if out.recheck.is_none_or(|r| expected < r) {
                out.recheck = Some(expected);
            }
            out.kept.insert(name.to_string(), t.clone());
        }
    }
    out
}

fn find_condition<'a>(pdb: &'a PodDisruptionBudgetStatus, ty: &str) -> Option<&'a Condition> {
    pdb.conditions
        .as_deref()
        .unwrap_or_default()
        .iter()
        .find(|c| c.type_ == ty)
}

/// Upstream `meta.SetStatusCondition`: add or change the condition of `c`'s type; the
/// transition time changes only with the status.
pub fn set_status_condition(conditions: &mut Vec<Condition>, c: Condition) {
    match conditions.iter_mut().find(|x| x.type_ == c.type_) {
        None => conditions.push(c),
        Some(existing) => {
            if existing.status != c.status {
                existing.status = c.status;
                existing.last_transition_time = c.last_transition_time;
            }
            existing.reason = c.reason;
            existing.message = c.message;
            existing.observed_generation = c.observed_generation;
        }
    }
}

/// Upstream `UpdateDisruptionAllowedCondition`.
pub fn update_disruption_allowed_condition(status: &mut PodDisruptionBudgetStatus, now: Timestamp) {
    let (st, reason) = if status.disruptions_allowed.unwrap_or(0) > 0 {
        ("True", SUFFICIENT_PODS)
    } else {
        ("False", INSUFFICIENT_PODS)
    };
    let c = Condition {
        type_: DISRUPTION_ALLOWED.into(),
        status: st.into(),
        reason: reason.into(),
        message: String::new(),
        observed_generation: status.observed_generation,
        last_transition_time: Time(now),
    };
    set_status_condition(status.conditions.get_or_insert_with(Vec::new), c);
}

/// Upstream `ConditionsAreUpToDate`.
pub fn conditions_are_up_to_date(pdb: &PodDisruptionBudget) -> bool {
    let Some(status) = pdb.status.as_ref() else {
        return false;
    };
    let Some(c) = find_condition(status, DISRUPTION_ALLOWED) else {
        return false;
    };
    if status.observed_generation != pdb.metadata.generation {
        return false;
    }
    if status.disruptions_allowed.unwrap_or(0) > 0 {
        c.status == "True" && c.reason == SUFFICIENT_PODS
    } else {
        c.status == "False" && c.reason == INSUFFICIENT_PODS
    }
}

/// Upstream `updatePdbStatus`: the new status, or `None` when the stored one is already
/// right. Disruptions are allowed only with expected pods and more healthy than desired.
pub fn new_status(
    pdb: &PodDisruptionBudget,
    current_healthy: i32,
    desired_healthy: i32,
    expected: i32,
    disrupted: BTreeMap<String, Time>,
    now: Timestamp,
) -> Option<PodDisruptionBudgetStatus> {
    let mut allowed = current_healthy - desired_healthy;
    if expected <= 0 || allowed <= 0 {
        allowed = 0;
    }
    let old = pdb.status.clone().unwrap_or_default();
    let old_disrupted = old.disrupted_pods.clone().unwrap_or_default();
    if old.current_healthy.unwrap_or(0) == current_healthy
        && old.desired_healthy.unwrap_or(0) == desired_healthy
        && old.expected_pods.unwrap_or(0) == expected
        && old.disruptions_allowed.unwrap_or(0) == allowed
        && old_disrupted == disrupted
        && old.observed_generation == pdb.metadata.generation
        && conditions_are_up_to_date(pdb)
    {
        return None;
    }
    let mut status = PodDisruptionBudgetStatus {
        current_healthy: Some(current_healthy),
        desired_healthy: Some(desired_healthy),
        expected_pods: Some(expected),
        disruptions_allowed: Some(allowed),
        disrupted_pods: Some(disrupted),
        observed_generation: pdb.metadata.generation,
        conditions: old.conditions,
    };
    update_disruption_allowed_condition(&mut status, now);
    Some(status)
}

/// Upstream `failSafe`: no disruption allowed, and the condition says why.
pub fn fail_safe_status(
    pdb: &PodDisruptionBudget,
    err: &str,
    now: Timestamp,
) -> PodDisruptionBudgetStatus {
    let mut status = pdb.status.clone().unwrap_or_default();
    status.disruptions_allowed = Some(0);
    let c = Condition {
        type_: DISRUPTION_ALLOWED.into(),
        status: "False".into(),
        reason: SYNC_FAILED.into(),
        message: err.to_string(),
        observed_generation: status.observed_generation,
        last_transition_time: Time(now),
    };
    set_status_condition(status.conditions.get_or_insert_with(Vec::new), c);
    status
}

/// Upstream `nonTerminatingPodHasStaleDisruptionCondition`: for a pod not being
/// deleted, not terminal, with a True `DisruptionTarget` not set by the kubelet, how
/// long until it is stale (zero: now). `None`: nothing to clean.
pub fn stale_disruption_wait(pod: &Pod, now: Timestamp, timeout: Duration) -> Option<Duration> {
    if pod.metadata.deletion_timestamp.is_some() {
        return None;
    }
    let status = pod.status.as_ref()?;
    if matches!(status.phase.as_deref(), Some("Succeeded" | "Failed")) {
        return None;
    }
    let c = status
        .conditions
        .as_deref()
        .unwrap_or_default()
        .iter()
        .find(|c| c.type_ == "DisruptionTarget")?;
    if c.status != "True" || c.reason.as_deref() == Some("TerminationByKubelet") {
        return None;
    }
    let since = c
        .last_transition_time
        .as_ref()
        .map_or(Timestamp::UNIX_EPOCH, |t| t.0);
    let elapsed = now.duration_since(since);
    let left = SignedDuration::try_from(timeout).unwrap_or(SignedDuration::MAX) - elapsed;
    Some(Duration::try_from(left).unwrap_or(Duration::ZERO))
}

/// Upstream `UpdatePodCondition` with `{DisruptionTarget, False}`: the condition as
/// it is to be written; `false` when it was already so.
pub fn reset_disruption_target(pod: &mut Pod, now: Timestamp) -> bool {
    let Some(status) = pod.status.as_mut() else {
        return false;
    };
    let conditions = status.conditions.get_or_insert_with(Vec::new);
    let mut new = PodCondition {
        type_: "DisruptionTarget".into(),
        status: "False".into(),
        last_transition_time: Some(Time(now)),
        ..PodCondition::default()
    };
    match conditions
        .iter_mut()
        .find(|c| c.type_ == "DisruptionTarget")
    {
        None => {
            conditions.push(new);
            true
        }
        Some(old) => {
            if old.status == new.status {
                new.last_transition_time = old.last_transition_time.clone();
            }
            let changed = *old != new;
            *old = new;
            changed
        }
    }
}
