//! The node lifecycle controller's pure decisions: a node's health from its status and
//! Lease (upstream `tryUpdateNodeHealth`), zone states (`ComputeZoneState`), the
//! condition taints (`doNoScheduleTaintingPass`) and taint list edits
//! (`pkg/util/taints`).

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Node, NodeCondition, NodeStatus, Taint};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::{SignedDuration, Timestamp};

/// `node.kubernetes.io/not-ready`.
pub const TAINT_NODE_NOT_READY: &str = "node.kubernetes.io/not-ready";
/// `node.kubernetes.io/unreachable`.
pub const TAINT_NODE_UNREACHABLE: &str = "node.kubernetes.io/unreachable";
/// `node.kubernetes.io/unschedulable`.
pub const TAINT_NODE_UNSCHEDULABLE: &str = "node.kubernetes.io/unschedulable";
/// `node.kubernetes.io/memory-pressure`.
pub const TAINT_NODE_MEMORY_PRESSURE: &str = "node.kubernetes.io/memory-pressure";
/// `node.kubernetes.io/disk-pressure`.
pub const TAINT_NODE_DISK_PRESSURE: &str = "node.kubernetes.io/disk-pressure";
/// `node.kubernetes.io/network-unavailable`.
pub const TAINT_NODE_NETWORK_UNAVAILABLE: &str = "node.kubernetes.io/network-unavailable";
/// `node.kubernetes.io/pid-pressure`.
pub const TAINT_NODE_PID_PRESSURE: &str = "node.kubernetes.io/pid-pressure";
/// The label that keeps a node out of the zone disruption counts.
pub const LABEL_NODE_DISRUPTION_EXCLUSION: &str = "node.kubernetes.io/exclude-disruption";

/// The taint of a node whose Ready condition is `Unknown` (upstream
/// `UnreachableTaintTemplate`).
pub fn unreachable_taint() -> Taint {
    Taint {
        key: TAINT_NODE_UNREACHABLE.into(),
        effect: "NoExecute".into(),
        ..Taint::default()
    }
}

/// The taint of a node whose Ready condition is `False` (upstream
/// `NotReadyTaintTemplate`).
pub fn not_ready_taint() -> Taint {
    Taint {
        key: TAINT_NODE_NOT_READY.into(),
        effect: "NoExecute".into(),
        ..Taint::default()
    }
}

/// Which condition status maps to which `NoSchedule` taint (upstream
/// `nodeConditionToTaintKeyStatusMap`).
fn condition_taint(type_: &str, status: &str) -> Option<&'static str> {
    match (type_, status) {
        ("Ready", "False") => Some(TAINT_NODE_NOT_READY),
        ("Ready", "Unknown") => Some(TAINT_NODE_UNREACHABLE),
        ("MemoryPressure", "True") => Some(TAINT_NODE_MEMORY_PRESSURE),
        ("DiskPressure", "True") => Some(TAINT_NODE_DISK_PRESSURE),
        ("NetworkUnavailable", "True") => Some(TAINT_NODE_NETWORK_UNAVAILABLE),
        ("PIDPressure", "True") => Some(TAINT_NODE_PID_PRESSURE),
        _ => None,
    }
}

/// The taint keys that follow conditions (upstream `taintKeyToNodeConditionMap`).
fn is_condition_taint_key(key: &str) -> bool {
    matches!(
        key,
        TAINT_NODE_NOT_READY
            | TAINT_NODE_UNREACHABLE
            | TAINT_NODE_NETWORK_UNAVAILABLE
            | TAINT_NODE_MEMORY_PRESSURE
            | TAINT_NODE_DISK_PRESSURE
            | TAINT_NODE_PID_PRESSURE
    )
}

/// Same key and effect (upstream `Taint.MatchTaint`).
pub fn match_taint(a: &Taint, b: &Taint) -> bool {
    a.key == b.key && a.effect == b.effect
}

/// Whether `taints` hold one matching `t` (upstream `TaintExists`).
pub fn taint_exists(taints: &[Taint], t: &Taint) -> bool {
    taints.iter().any(|x| match_taint(x, t))
}

/// The node's taints.
pub fn node_taints(node: &Node) -> &[Taint] {
    node.spec
        .as_ref()
        .and_then(|s| s.taints.as_deref())
        .unwrap_or_default()
}

/// The `NoSchedule` taints to add and to remove so that the node's condition and
/// unschedulable taints follow its conditions and `spec.unschedulable` (upstream
/// `doNoScheduleTaintingPass`); other taints are not looked at.
pub fn no_schedule_taint_diff(node: &Node) -> (Vec<Taint>, Vec<Taint>) {
    let mut want: Vec<Taint> = Vec::new();
    for c in conditions(node) {
        if let Some(key) = condition_taint(&c.type_, &c.status) {
            want.push(Taint {
                key: key.into(),
                effect: "NoSchedule".into(),
                ..Taint::default()
            });
        }
    }
    if node
        .spec
        .as_ref()
        .and_then(|s| s.unschedulable)
        .unwrap_or(false)
    {
        want.push(Taint {
            key: TAINT_NODE_UNSCHEDULABLE.into(),
            effect: "NoSchedule".into(),
            ..Taint::default()
        });
    }
    let have: Vec<&Taint> = node_taints(node)
        .iter()
        .filter(|t| {
            t.effect == "NoSchedule"
                && (t.key == TAINT_NODE_UNSCHEDULABLE || is_condition_taint_key(&t.key))
        })
        .collect();
    // upstream `TaintSetDiff`
    let add = want
        .iter()
        .filter(|w| !have.iter().any(|h| match_taint(h, w)))
        .cloned()
        .collect();
    let remove = have
        .iter()
        .filter(|h| !want.iter().any(|w| match_taint(h, w)))
        .map(|t| (*t).clone())
        .collect();
    (add, remove)
}

/// `taints` with `add` added or updated in place (matching key and effect) and
/// `remove` taken out (upstream `AddOrUpdateTaint` then `RemoveTaint`); `None` when
/// nothing changes.
pub fn swap_taints(taints: &[Taint], add: &[Taint], remove: &[Taint]) -> Option<Vec<Taint>> {
    let mut out: Vec<Taint> = taints.to_vec();
    let mut changed = false;
    for a in add {
        match out.iter_mut().find(|t| match_taint(t, a)) {
            Some(t) if t == a => {}
            Some(t) => {
                *t = a.clone();
                changed = true;
            }
            None => {
                out.push(a.clone());
                changed = true;
            }
        }
    }
    for r in remove {
        let before = out.len();
        out.retain(|t| !match_taint(t, r));
        changed |= out.len() != before;
    }
    changed.then_some(out)
}

/// The node's conditions.
pub fn conditions(node: &Node) -> &[NodeCondition] {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_deref())
        .unwrap_or_default()
}

/// The condition of `type_` in `status`.
pub fn condition<'a>(status: Option<&'a NodeStatus>, type_: &str) -> Option<&'a NodeCondition> {
    status?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == type_)
}

/// The zone key of a node (upstream `nodetopology.GetZoneKey`): region and zone from
/// the topology labels (or their deprecated beta names), `""` when neither is set.
pub fn zone_key(node: &Node) -> String {
    let labels = node.metadata.labels.as_ref();
    let get = |stable: &str, beta: &str| {
        labels
            .and_then(|l| l.get(stable).or_else(|| l.get(beta)))
            .cloned()
            .unwrap_or_default()
    };
    let region = get(
        "topology.kubernetes.io/region",
        "failure-domain.beta.kubernetes.io/region",
    );
    let zone = get(
        "topology.kubernetes.io/zone",
        "failure-domain.beta.kubernetes.io/zone",
    );
    if region.is_empty() && zone.is_empty() {
        return String::new();
    }
    // upstream's separator, which no label value can hold
    format!("{region}:\x00:{zone}")
}

/// Whether the node is left out of the zone states.
pub fn excluded_from_disruption_checks(node: &Node) -> bool {
    node.metadata
        .labels
        .as_ref()
        .is_some_and(|l| l.contains_key(LABEL_NODE_DISRUPTION_EXCLUSION))
}

/// The state of a zone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZoneState {
    /// Just seen.
    Initial,
    /// Evicting at the normal rate.
    Normal,
    /// No node Ready.
    FullDisruption,
    /// At least the unhealthy threshold of more than two nodes not Ready.
    PartialDisruption,
}

/// The number of not-Ready nodes of a zone from their Ready conditions (`None`: no
/// condition) and the zone's state (upstream `ComputeZoneState`).
pub fn compute_zone_state(
    ready: &[Option<&NodeCondition>],
    unhealthy_zone_threshold: f32,
) -> (usize, ZoneState) {
    let ready_nodes = ready
        .iter()
        .filter(|c| c.is_some_and(|c| c.status == "True"))
        .count();
    let not_ready = ready.len() - ready_nodes;
    let state = if ready_nodes == 0 && not_ready > 0 {
        ZoneState::FullDisruption
    } else if not_ready > 2
        && (not_ready as f32) / ((not_ready + ready_nodes) as f32) >= unhealthy_zone_threshold
    {
        ZoneState::PartialDisruption
    } else {
        ZoneState::Normal
    };
    (not_ready, state)
}

/// The eviction rate of a zone in `state` of `size` nodes (upstream `setLimiterInZone`
/// with `HealthyQPSFunc` and `ReducedQPSFunc`); `None` for `Initial` (unchanged).
pub fn zone_eviction_rate(
    state: ZoneState,
    size: usize,
    eviction_rate: f32,
    secondary_rate: f32,
    large_cluster_threshold: i32,
) -> Option<f32> {
    match state {
        ZoneState::Normal | ZoneState::FullDisruption => Some(eviction_rate),
        ZoneState::PartialDisruption => Some(if size as i64 > i64::from(large_cluster_threshold) {
            secondary_rate
        } else {
            0.0
        }),
        ZoneState::Initial => None,
    }
}

/// What the controller last saw of a node (upstream `nodeHealthData`).
#[derive(Clone, Debug, PartialEq)]
pub struct NodeHealth {
    /// When the controller last saw the node renew its status or Lease (its own clock).
    pub probe_timestamp: Timestamp,
    /// When the controller saw the Ready condition change.
    pub ready_transition_timestamp: Timestamp,
    /// The status it saw.
    pub status: NodeStatus,
    /// The Lease it saw (its `renewTime`), if any.
    pub lease: Option<Option<Timestamp>>,
}

/// The outcome of looking at a node's health (upstream `tryUpdateNodeHealth`).
#[derive(Clone, Debug, PartialEq)]
pub struct HealthCheck {
    /// The grace period the node gets.
    pub grace_period: Duration,
    /// The Ready condition as it was.
    pub observed_ready: NodeCondition,
    /// The Ready condition now (after the status write, if any).
    pub current_ready: Option<NodeCondition>,
    /// The status to write (conditions turned `Unknown`), if it changes the Ready
    /// condition.
    pub write: Option<NodeStatus>,
    /// The health to remember if the write is not needed or fails.
    pub health: NodeHealth,
}

fn lease_renew(lease: &Lease) -> Option<Timestamp> {
    lease
        .spec
        .as_ref()
        .and_then(|s| s.renew_time.as_ref())
        .map(|t| t.0)
}

fn add(t: Timestamp, d: Duration) -> Timestamp {
    SignedDuration::try_from(d)
        .ok()
        .and_then(|d| t.checked_add(d).ok())
        .unwrap_or(Timestamp::MAX)
}

/// Look at `node` with what was `saved` of it and its `lease` at `now`: refresh the
/// probe time when its Ready heartbeat or Lease moved, and when neither did for the
/// grace period (`startup_grace` before the node ever posted a Ready condition, else
/// `monitor_grace`) turn its Ready, MemoryPressure, DiskPressure and PIDPressure
/// conditions `Unknown` (reason `NodeStatusUnknown`, or `NodeStatusNeverUpdated` for a
/// condition never posted).
pub fn check_node_health(
    node: &Node,
    saved: Option<&NodeHealth>,
    lease: Option<&Lease>,
    now: Timestamp,
    startup_grace: Duration,
    monitor_grace: Duration,
) -> HealthCheck {
    let status = node.status.clone().unwrap_or_default();
    let created = node
        .metadata
        .creation_timestamp
        .as_ref()
        .map(|t| t.0)
        .unwrap_or(now);
    let current = condition(Some(&status), "Ready").cloned();
    let mut health = saved.cloned();
    let (observed, grace) = match &current {
        None => {
            let fake = NodeCondition {
                type_: "Ready".into(),
                status: "Unknown".into(),
                last_heartbeat_time: Some(Time(created)),
                last_transition_time: Some(Time(created)),
                ..NodeCondition::default()
            };
            match &mut health {
                Some(h) => h.status = status.clone(),
                None => {
                    health = Some(NodeHealth {
                        probe_timestamp: created,
                        ready_transition_timestamp: created,
                        status: status.clone(),
                        lease: None,
                    })
                }
            }
            (fake, startup_grace)
        }
        Some(c) => (c.clone(), monitor_grace),
    };
    let saved_ready = saved.and_then(|h| condition(Some(&h.status), "Ready"));
    let saved_lease = saved.and_then(|h| h.lease);
    let fresh = |transition: Timestamp| NodeHealth {
        probe_timestamp: now,
        ready_transition_timestamp: transition,
        status: status.clone(),
        lease: None,
    };
    let mut health = match (health, saved_ready, &current) {
        (None, _, _) => fresh(now),
        (Some(_), None, Some(_)) | (Some(_), Some(_), None) => fresh(now),
        (Some(h), Some(s), Some(c)) if s.last_heartbeat_time != c.last_heartbeat_time => {
            let transition = if s.last_transition_time != c.last_transition_time {
                now
            } else {
                h.ready_transition_timestamp
            };
            fresh(transition)
        }
        (Some(h), _, _) => h,
    };
    let observed_lease = lease.map(lease_renew);
    if let Some(renew) = observed_lease {
        let newer = match saved_lease {
            None => true,
            Some(old) => matches!((old, renew), (Some(o), Some(n)) if o < n),
        };
        if newer {
            health.lease = Some(renew);
            health.probe_timestamp = now;
        }
    }
    let mut check = HealthCheck {
        grace_period: grace,
        observed_ready: observed.clone(),
        current_ready: current,
        write: None,
        health,
    };
    if now <= add(check.health.probe_timestamp, grace) {
        return check;
    }
    let mut status = status;
    let conditions = status.conditions.get_or_insert_with(Vec::new);
    for type_ in ["Ready", "MemoryPressure", "DiskPressure", "PIDPressure"] {
        match conditions.iter_mut().find(|c| c.type_ == type_) {
            None => conditions.push(NodeCondition {
                type_: type_.into(),
                status: "Unknown".into(),
                reason: Some("NodeStatusNeverUpdated".into()),
                message: Some("Kubelet never posted node status.".into()),
                last_heartbeat_time: Some(Time(created)),
                last_transition_time: Some(Time(now)),
            }),
            Some(c) if c.status != "Unknown" => {
                c.status = "Unknown".into();
                c.reason = Some("NodeStatusUnknown".into());
                c.message = Some("Kubelet stopped posting node status.".into());
                c.last_transition_time = Some(Time(now));
            }
            Some(_) => {}
        }
    }
    let ready = condition(Some(&status), "Ready").cloned();
    if ready.as_ref() != Some(&observed) {
        check.current_ready = ready;
        check.write = Some(status);
    }
    check
}

/// The health remembered after the status write of `check` succeeded at `now`.
pub fn health_after_write(
    check: &HealthCheck,
    written: NodeStatus,
    lease: Option<&Lease>,
    now: Timestamp,
) -> NodeHealth {
    NodeHealth {
        probe_timestamp: check.health.probe_timestamp,
        ready_transition_timestamp: now,
        status: written,
        lease: lease.map(lease_renew),
    }
}

/// What [`classify_nodes`] finds: added nodes, deleted nodes, and known nodes of a zone
/// without a state.
pub type Classified<'a> = (
    Vec<&'a std::sync::Arc<Node>>,
    Vec<std::sync::Arc<Node>>,
    Vec<&'a std::sync::Arc<Node>>,
);

/// Nodes seen for the first time, nodes gone, and known nodes whose zone has no state
/// yet (upstream `classifyNodes`).
pub fn classify_nodes<'a>(
    nodes: &'a [std::sync::Arc<Node>],
    known: &BTreeMap<String, std::sync::Arc<Node>>,
    zones: &BTreeMap<String, ZoneState>,
) -> Classified<'a> {
    let mut added = Vec::new();
    let mut new_zone = Vec::new();
    for n in nodes {
        let name = n.metadata.name.as_deref().unwrap_or_default();
        if !known.contains_key(name) {
            added.push(n);
        } else if !zones.contains_key(&zone_key(n)) {
            new_zone.push(n);
        }
    }
    let present: std::collections::BTreeSet<&str> = nodes
        .iter()
        .filter_map(|n| n.metadata.name.as_deref())
        .collect();
    let deleted = known
        .iter()
        .filter(|(k, _)| !present.contains(k.as_str()))
        .map(|(_, v)| v.clone())
        .collect();
    (added, deleted, new_zone)
}
