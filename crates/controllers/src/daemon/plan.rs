//! What one sync of a DaemonSet decides, as pure functions over the nodes and the
//! daemon pods keyed by node (upstream `podsShouldBeOnNode`, `manage`,
//! `rollingUpdate`, `updatedDesiredNodeCounts`, `findUpdatedPodsOnNode` and
//! `updateDaemonSetStatus` in `pkg/controller/daemon`). The reconciler
//! (`super::sync`) reads the cache, calls these, and carries out the result.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use coxswain_runtime::events::EventType;
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::jiff::Timestamp;

use super::backoff::Backoff;
use super::util::{
    allows_surge, get_target_node_name, is_pod_updated, node_should_run_daemon_pod, pod_order,
    surge_count, template_generation, unavailable_count, CONTROLLER_REVISION_HASH_LABEL,
};
use crate::controller_utils::pod::pod_phase;
use crate::controller_utils::{is_pod_available, is_pod_ready};

/// Event reason of a failed daemon pod that gets deleted.
pub const FAILED_DAEMON_POD_REASON: &str = "FailedDaemonPod";
/// Event reason of a succeeded daemon pod that gets deleted.
pub const SUCCEEDED_DAEMON_POD_REASON: &str = "SucceededDaemonPod";

/// Daemon pods keyed by the node they run on or are pinned to (sorted by node name).
pub type NodeToPods = BTreeMap<String, Vec<Arc<Pod>>>;

/// Upstream `getNodesToDaemonPods` over claimed pods: pods keyed by
/// [`get_target_node_name`]; deleted terminal pods are left out unless
/// `include_deleted_terminal`; pods without a target node are dropped.
pub fn nodes_to_daemon_pods(pods: &[Arc<Pod>], include_deleted_terminal: bool) -> NodeToPods {
    let mut map = NodeToPods::new();
    for p in pods {
        let terminal = matches!(pod_phase(p), "Succeeded" | "Failed");
        if !include_deleted_terminal && terminal && p.metadata.deletion_timestamp.is_some() {
            continue;
        }
        match get_target_node_name(p) {
            Ok(node) => map.entry(node).or_default().push(p.clone()),
            Err(e) => tracing::debug!(pod = ?p.metadata.name, error = %e, "no target node"),
        }
    }
    map
}

/// An event the controller records about the DaemonSet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DsEvent {
    /// Normal or Warning.
    pub type_: EventType,
    /// The reason.
    pub reason: &'static str,
    /// The message.
    pub message: String,
}

/// What a sync wants created and deleted.
#[derive(Debug, Default)]
pub struct Plan {
    /// Nodes that get a new pod.
    pub create_on: Vec<String>,
    /// Pods to delete.
    pub delete: Vec<Arc<Pod>>,
    /// Events to record.
    pub events: Vec<DsEvent>,
    /// Sync again after this long (a failed pod in back-off).
    pub requeue_after: Option<Duration>,
}

impl Plan {
    fn requeue(&mut self, d: Duration) {
        self.requeue_after = Some(self.requeue_after.map_or(d, |x| x.min(d)));
    }
}

fn hash_label(p: &Pod) -> Option<&str> {
    p.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(CONTROLLER_REVISION_HASH_LABEL))
        .map(String::as_str)
}

fn min_ready_seconds(ds: &DaemonSet) -> i32 {
    ds.spec.min_ready_seconds.unwrap_or(0)
}

fn ns_name(p: &Pod) -> String {
    format!(
        "{}/{}",
        p.metadata.namespace.as_deref().unwrap_or(""),
        p.metadata.name.as_deref().unwrap_or("")
    )
}

/// The back-off key of failed pods of `ds` on `node` (upstream `failedPodsBackoffKey`).
pub fn failed_pods_backoff_key(ds: &DaemonSet, node: &str) -> String {
    let generation = ds
        .status
        .as_ref()
        .and_then(|s| s.observed_generation)
        .unwrap_or(0);
    format!(
        "{}/{}/{}",
        ds.metadata.uid.as_deref().unwrap_or(""),
        generation,
        node
    )
}

/// Upstream `podsShouldBeOnNode`, adding to `plan`.
#[allow(clippy::too_many_arguments)]
fn pods_should_be_on_node(
    plan: &mut Plan,
    node: &Node,
    map: &NodeToPods,
    ds: &DaemonSet,
    hash: &str,
    backoff: &mut Backoff,
    clock: Instant,
    now: Timestamp,
) {
    let node_name = node.metadata.name.as_deref().unwrap_or("");
    let (should_run, should_continue) = node_should_run_daemon_pod(node, ds);
    let pods = map.get(node_name);
    match pods {
        None if should_run => plan.create_on.push(node_name.to_string()),
        Some(pods) if should_continue => {
            let mut running: Vec<Arc<Pod>> = Vec::new();
            for pod in pods {
                if pod.metadata.deletion_timestamp.is_some() {
                    continue;
                }
                match pod_phase(pod) {
                    "Failed" => {
                        let key = failed_pods_backoff_key(ds, node_name);
                        if backoff.is_in_backoff_since_update(&key, clock) {
                            tracing::debug!(pod = %ns_name(pod), node = node_name, "deleting failed pod: in back-off");
                            plan.requeue(backoff.get(&key));
                            continue;
                        }
                        backoff.next(&key, clock);
                        plan.events.push(DsEvent {
                            type_: EventType::Warning,
                            reason: FAILED_DAEMON_POD_REASON,
                            message: format!(
                                "Found failed daemon pod {} on node {node_name}, will try to kill it",
                                ns_name(pod)
                            ),
                        });
                        plan.delete.push(pod.clone());
                    }
                    "Succeeded" => {
                        plan.events.push(DsEvent {
                            type_: EventType::Normal,
                            reason: SUCCEEDED_DAEMON_POD_REASON,
                            message: format!(
                                "Found succeeded daemon pod {} on node {node_name}, will try to delete it",
                                ns_name(pod)
                            ),
                        });
                        plan.delete.push(pod.clone());
                    }
                    _ => running.push(pod.clone()),
                }
            }
            if !allows_surge(ds) {
                if running.len() > 1 {
                    running.sort_by(|a, b| pod_order(a, b));
                    plan.delete.extend(running.into_iter().skip(1));
                }
                return;
            }
            if running.is_empty() {
                if should_run {
                    plan.create_on.push(node_name.to_string());
                }
                return;
            }
            if running.len() == 1 {
                return;
            }
            running.sort_by(|a, b| pod_order(a, b));
            let (mut newest, mut oldest): (Option<Arc<Pod>>, Option<Arc<Pod>>) = (None, None);
            for pod in running {
                if hash_label(&pod) == Some(hash) {
                    if newest.is_none() {
                        newest = Some(pod);
                        continue;
                    }
                } else if oldest.is_none() {
                    oldest = Some(pod);
                    continue;
                }
                plan.delete.push(pod);
            }
            if let (Some(new_pod), Some(old_pod)) = (newest, oldest) {
                if !is_pod_ready(&old_pod) || is_pod_available(&new_pod, min_ready_seconds(ds), now)
                {
                    plan.delete.push(old_pod);
                }
            }
        }
        Some(pods) if !should_continue => {
            plan.delete.extend(
                pods.iter()
                    .filter(|p| p.metadata.deletion_timestamp.is_none())
                    .cloned(),
            );
        }
        _ => {}
    }
}

/// Upstream `manage` without `syncNodes`: for every node, whether it needs a pod and
/// which pods go; plus pending pods pinned to nodes that no longer exist.
pub fn plan_manage(
    ds: &DaemonSet,
    nodes: &[Arc<Node>],
    map: &NodeToPods,
    hash: &str,
    backoff: &mut Backoff,
    clock: Instant,
    now: Timestamp,
) -> Plan {
    let mut plan = Plan::default();
    for node in nodes {
        pods_should_be_on_node(&mut plan, node, map, ds, hash, backoff, clock, now);
    }
    // upstream getUnscheduledPodsWithoutNode
    let known: HashSet<&str> = nodes
        .iter()
        .filter_map(|n| n.metadata.name.as_deref())
        .collect();
    for (node, pods) in map {
        if known.contains(node.as_str()) {
            continue;
        }
        for p in pods {
            let bound = p
                .spec
                .as_ref()
                .and_then(|s| s.node_name.as_deref())
                .is_some_and(|n| !n.is_empty());
            if !bound {
                plan.delete.push(p.clone());
            }
        }
    }
    plan
}

/// Upstream `updatedDesiredNodeCounts`: `(max_surge, max_unavailable, desired)`; adds
/// an empty entry to `map` for each node that should run a pod and has none.
pub fn updated_desired_node_counts(
    ds: &DaemonSet,
    nodes: &[Arc<Node>],
    map: &mut NodeToPods,
) -> Result<(i32, i32, i32), String> {
    let mut desired = 0i32;
    for node in nodes {
        let (should_run, _) = node_should_run_daemon_pod(node, ds);
        if !should_run {
            continue;
        }
        desired += 1;
        let name = node.metadata.name.clone().unwrap_or_default();
        map.entry(name).or_default();
    }
    let mut max_unavailable = unavailable_count(ds, desired)
        .map_err(|e| format!("invalid value for MaxUnavailable: {e}"))?;
    let max_surge =
        surge_count(ds, desired).map_err(|e| format!("invalid value for MaxSurge: {e}"))?;
    if desired > 0 && max_unavailable == 0 && max_surge == 0 {
        tracing::debug!(
            ds = ?ds.metadata.name,
            "DaemonSet is not configured for surge or unavailability, defaulting to accepting unavailability"
        );
        max_unavailable = 1;
    }
    Ok((max_surge, max_unavailable, desired))
}

/// Upstream `findUpdatedPodsOnNode`: the node's new and old pod (ignoring terminating
/// ones); `None` when it has two of either.
#[allow(clippy::type_complexity)]
pub fn find_updated_pods_on_node(
    ds: &DaemonSet,
    pods: &[Arc<Pod>],
    hash: &str,
) -> Option<(Option<Arc<Pod>>, Option<Arc<Pod>>)> {
    let generation = template_generation(ds).ok().flatten();
    let (mut new_pod, mut old_pod) = (None, None);
    for p in pods {
        if p.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let slot = if is_pod_updated(p, hash, generation) {
            &mut new_pod
        } else {
            &mut old_pod
        };
        if slot.is_some() {
            return None;
        }
        *slot = Some(p.clone());
    }
    Some((new_pod, old_pod))
}

/// Upstream `rollingUpdate` without `syncNodes`: which old pods to delete (no surge) or
/// which nodes get a new pod next to the old one and which old pods go (surge).
pub fn plan_rolling_update(
    ds: &DaemonSet,
    nodes: &[Arc<Node>],
    map: &NodeToPods,
    hash: &str,
    now: Timestamp,
) -> Result<Plan, String> {
    let mut map = map.clone();
    let (max_surge, max_unavailable, desired) = updated_desired_node_counts(ds, nodes, &mut map)
        .map_err(|e| format!("couldn't get unavailable numbers: {e}"))?;
    let min_ready = min_ready_seconds(ds);
    let available = |p: &Pod| is_pod_available(p, min_ready, now);
    let mut plan = Plan::default();

    if max_surge == 0 {
        let mut num_unavailable = 0i32;
        let mut allowed_replacement: Vec<Arc<Pod>> = Vec::new();
        let mut candidates: Vec<Arc<Pod>> = Vec::new();
        for (node, pods) in &map {
            let Some((new_pod, old_pod)) = find_updated_pods_on_node(ds, pods, hash) else {
                tracing::debug!(
                    node,
                    "more than one new or old pod: manage prunes them first"
                );
                num_unavailable += 1;
                continue;
            };
            match (new_pod, old_pod) {
                (None, None) | (Some(_), Some(_)) => num_unavailable += 1,
                (Some(new_pod), None) => {
                    if !available(&new_pod) {
                        num_unavailable += 1;
                    }
                }
                (None, Some(old_pod)) => {
                    if !available(&old_pod) {
                        allowed_replacement.push(old_pod);
                        num_unavailable += 1;
                    } else if num_unavailable >= max_unavailable {
                        continue;
                    } else {
                        candidates.push(old_pod);
                    }
                }
            }
        }
        let remaining = (max_unavailable - num_unavailable).clamp(0, candidates.len() as i32);
        plan.delete = allowed_replacement;
        plan.delete
            .extend(candidates.into_iter().take(remaining as usize));
        return Ok(plan);
    }

    let by_name: BTreeMap<&str, &Node> = nodes
        .iter()
        .filter_map(|n| n.metadata.name.as_deref().map(|name| (name, n.as_ref())))
        .collect();
    let (mut num_surge, mut num_available) = (0i32, 0i32);
    let mut allowed_new_nodes: Vec<String> = Vec::new();
    let mut candidate_new_nodes: Vec<String> = Vec::new();
    let mut should_not_run: Vec<Arc<Pod>> = Vec::new();
    for (node, pods) in &map {
        let Some((new_pod, old_pod)) = find_updated_pods_on_node(ds, pods, hash) else {
            num_surge += 1;
            continue;
        };
        match (&old_pod, &new_pod) {
            (Some(o), _) if available(o) => num_available += 1,
            (None, Some(n)) if available(n) => num_available += 1,
            _ => {}
        }
        match (new_pod, old_pod) {
            (_, None) => {}
            (None, Some(old_pod)) => {
                let node_obj = by_name
                    .get(node.as_str())
                    .ok_or_else(|| format!("couldn't get node for nodeName {node:?}"))?;
                let (should_run, _) = node_should_run_daemon_pod(node_obj, ds);
                if !available(&old_pod) {
                    if should_run {
                        allowed_new_nodes.push(node.clone());
                    } else {
                        plan.delete.push(old_pod);
                    }
                } else if !should_run {
                    should_not_run.push(old_pod);
                } else if num_surge >= max_surge {
                    continue;
                } else {
                    candidate_new_nodes.push(node.clone());
                }
            }
            (Some(new_pod), Some(old_pod)) => {
                if !available(&new_pod) {
                    num_surge += 1;
                } else {
                    plan.delete.push(old_pod);
                }
            }
        }
    }
    let remaining_surge = max_surge - num_surge;
    let excess = num_available - desired;
    if excess > 0 {
        plan.delete
            .extend(should_not_run.into_iter().take(excess as usize));
    }
    let remaining_surge = remaining_surge.clamp(0, candidate_new_nodes.len() as i32);
    plan.create_on = allowed_new_nodes;
    plan.create_on.extend(
        candidate_new_nodes
            .into_iter()
            .take(remaining_surge as usize),
    );
    Ok(plan)
}

/// The status numbers of upstream `updateDaemonSetStatus`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// desiredNumberScheduled
    pub desired: i32,
    /// currentNumberScheduled
    pub current: i32,
    /// numberMisscheduled
    pub misscheduled: i32,
    /// numberReady
    pub ready: i32,
    /// updatedNumberScheduled
    pub updated: i32,
    /// numberAvailable
    pub available: i32,
    /// numberUnavailable
    pub unavailable: i32,
}

/// Upstream `updateDaemonSetStatus`'s counting, over the nodes of `nodes` only.
pub fn calculate_counts(
    ds: &DaemonSet,
    nodes: &[Arc<Node>],
    map: &NodeToPods,
    hash: &str,
    now: Timestamp,
) -> Counts {
    let generation = template_generation(ds).ok().flatten();
    let min_ready = min_ready_seconds(ds);
    let mut c = Counts::default();
    for node in nodes {
        let name = node.metadata.name.as_deref().unwrap_or("");
        let (should_run, _) = node_should_run_daemon_pod(node, ds);
        let pods = map.get(name).filter(|p| !p.is_empty());
        if should_run {
            c.desired += 1;
            if let Some(pods) = pods {
                c.current += 1;
                let mut sorted = pods.clone();
                sorted.sort_by(|a, b| pod_order(a, b));
                let first = &sorted[0];
                if is_pod_ready(first) {
                    c.ready += 1;
                    if is_pod_available(first, min_ready, now) {
                        c.available += 1;
                    }
                }
                if is_pod_updated(first, hash, generation) {
                    c.updated += 1;
                }
            }
        } else if pods.is_some() {
            c.misscheduled += 1;
        }
    }
    c.unavailable = c.desired - c.available;
    c
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
