//! Ported upstream tables: the rate-limited timed queue
//! (`scheduler/rate_limited_queue_test.go`), zone states, node health
//! (`TestMonitorNodeHealthUpdateStatus`-style cases as functions of node, lease and
//! time), and the taint passes.

use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::{
    Node, NodeCondition, NodeSpec, NodeStatus, Pod, PodCondition, PodStatus, Taint,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta, Time};
use k8s_openapi::jiff::{SignedDuration, Timestamp};

use super::health::*;
use super::queue::*;
use super::*;

fn always() -> TokenBucket {
    // as upstream's fake always-limiter: more tokens than any test uses
    TokenBucket::new(1e9, 1e9)
}

fn queue_of(values: &[&str]) -> (RateLimitedTimedQueue, Instant) {
    let t0 = Instant::now();
    let mut q = RateLimitedTimedQueue::new(always());
    for (i, v) in values.iter().enumerate() {
        q.add(
            v,
            &format!("{i}{i}{i}"),
            t0 + Duration::from_millis(i as u64),
        );
    }
    (q, t0)
}

#[test]
fn add_node() {
    let (q, _) = queue_of(&["first", "second", "third"]);
    assert_eq!(q.queued(), ["first", "second", "third"]);
    assert_eq!(q.known(), ["first", "second", "third"]);
}

#[test]
fn del_node() {
    for (gone, rest) in [
        ("first", ["second", "third"]),
        ("second", ["first", "third"]),
        ("third", ["first", "second"]),
    ] {
        let (mut q, _) = queue_of(&["first", "second", "third"]);
        assert!(q.remove(gone));
        assert_eq!(q.queued(), rest);
        let mut known = q.known();
        known.sort();
        let mut want = rest.to_vec();
        want.sort();
        assert_eq!(known, want);
    }
}

#[test]
fn try_processes_what_is_left() {
    let (mut q, t0) = queue_of(&["first", "second", "third"]);
    q.remove("second");
    let mut seen = Vec::new();
    q.try_each(
        || t0 + Duration::from_secs(1),
        |_, v| {
            seen.push(v.value.clone());
            (true, Duration::ZERO)
        },
    );
    assert_eq!(seen, ["first", "third"]);
    // processed values stay known, so they are not queued again (TestAddAfterTry)
    assert!(q.queued().is_empty());
    assert!(!q.add("first", "111", t0));
    q.try_each(
        || t0 + Duration::from_secs(2),
        |_, _| panic!("a value processed and not removed came back"),
    );
}

#[test]
fn try_ordering_retries_later() {
    let (mut q, t0) = queue_of(&["first", "second", "third"]);
    let mut tick = 3;
    let mut order = Vec::new();
    let mut count = 0;
    q.try_each(
        || {
            tick += 1;
            t0 + Duration::from_millis(tick)
        },
        |_, v| {
            count += 1;
            if v.value == "second" {
                return (false, Duration::from_millis(2));
            }
            order.push(v.value.clone());
            (true, Duration::ZERO)
        },
    );
    assert_eq!(order, ["first", "third"]);
    assert_eq!(count, 3);
    // "second" waits in the queue for its retry time
    assert_eq!(q.queued(), ["second"]);
}

#[test]
fn try_removing_while_try() {
    let (mut q, t0) = queue_of(&["first", "second", "third"]);
    let mut order = Vec::new();
    let mut count = 0;
    let mut queued = false;
    q.try_each(
        || t0 + Duration::from_secs(1),
        |q, v| {
            count += 1;
            if !queued && v.value == "second" {
                queued = true;
                q.remove("second");
                return (false, Duration::from_millis(1));
            }
            order.push(v.value.clone());
            (true, Duration::ZERO)
        },
    );
    assert_eq!(order, ["first", "third"]);
    assert_eq!(count, 3);
}

#[test]
fn clear() {
    let (mut q, _) = queue_of(&["first", "second", "third"]);
    q.clear();
    assert!(q.queued().is_empty());
}

#[test]
fn swap_limiter() {
    let now = Instant::now();
    let mut q = RateLimitedTimedQueue::new(TokenBucket::new(0.1, 1.0));
    assert_eq!(q.qps(), 0.1);
    q.swap_limiter(0.0, now);
    assert_eq!(q.qps(), 0.0);
    q.add("n", "u", now);
    assert_eq!(q.next_due(now + Duration::from_secs(100)), None, "stopped");
    q.swap_limiter(5.5, now);
    assert_eq!(q.qps(), 5.5);
}

#[test]
fn the_token_bucket_paces_the_queue() {
    let t0 = Instant::now();
    let mut q = RateLimitedTimedQueue::new(TokenBucket::new(0.1, 1.0));
    for n in ["a", "b"] {
        q.add(n, n, t0);
    }
    let first = q.next_due(t0).expect("a burst of one");
    q.finish(first, true, Duration::ZERO, t0);
    assert_eq!(q.next_due(t0 + Duration::from_secs(5)), None);
    assert!(q.next_due(t0 + Duration::from_secs(11)).is_some());
}

fn ready(status: &str) -> NodeCondition {
    NodeCondition {
        type_: "Ready".into(),
        status: status.into(),
        ..NodeCondition::default()
    }
}

#[test]
fn compute_zone_state_cases() {
    let t = ready("True");
    let f = ready("False");
    let u = ready("Unknown");
    let cases: Vec<(Vec<Option<&NodeCondition>>, usize, ZoneState)> = vec![
        (vec![Some(&t), Some(&t)], 0, ZoneState::Normal),
        (vec![Some(&f), Some(&u)], 2, ZoneState::FullDisruption),
        (vec![None], 1, ZoneState::FullDisruption),
        // two not Ready never make a partial disruption
        (vec![Some(&t), Some(&f), Some(&f)], 2, ZoneState::Normal),
        (
            vec![Some(&t), Some(&f), Some(&f), Some(&u)],
            3,
            ZoneState::PartialDisruption,
        ),
        // 3 of 6 = 0.5 < 0.55
        (
            vec![Some(&t), Some(&t), Some(&t), Some(&f), Some(&f), None],
            3,
            ZoneState::Normal,
        ),
        (vec![], 0, ZoneState::Normal),
    ];
    for (conds, unhealthy, state) in cases {
        assert_eq!(
            compute_zone_state(&conds, 0.55),
            (unhealthy, state),
            "{conds:?}"
        );
    }
}

#[test]
fn zone_rates() {
    assert_eq!(
        zone_eviction_rate(ZoneState::Normal, 3, 0.1, 0.01, 50),
        Some(0.1)
    );
    assert_eq!(
        zone_eviction_rate(ZoneState::FullDisruption, 3, 0.1, 0.01, 50),
        Some(0.1)
    );
    assert_eq!(
        zone_eviction_rate(ZoneState::PartialDisruption, 50, 0.1, 0.01, 50),
        Some(0.0)
    );
    assert_eq!(
        zone_eviction_rate(ZoneState::PartialDisruption, 51, 0.1, 0.01, 50),
        Some(0.01)
    );
    assert_eq!(
        zone_eviction_rate(ZoneState::Initial, 3, 0.1, 0.01, 50),
        None
    );
}

fn ts(s: i64) -> Timestamp {
    Timestamp::from_second(s).expect("time")
}

fn at(base: Timestamp, secs: i64) -> Timestamp {
    base.checked_add(SignedDuration::from_secs(secs))
        .expect("time")
}

fn cond(type_: &str, status: &str, beat: Timestamp, transition: Timestamp) -> NodeCondition {
    NodeCondition {
        type_: type_.into(),
        status: status.into(),
        last_heartbeat_time: Some(Time(beat)),
        last_transition_time: Some(Time(transition)),
        ..NodeCondition::default()
    }
}

fn node(created: Timestamp, conditions: Vec<NodeCondition>) -> Node {
    Node {
        metadata: ObjectMeta {
            name: Some("node0".into()),
            creation_timestamp: Some(Time(created)),
            ..ObjectMeta::default()
        },
        status: Some(NodeStatus {
            conditions: (!conditions.is_empty()).then_some(conditions),
            ..NodeStatus::default()
        }),
        ..Node::default()
    }
}

fn lease(renew: Timestamp) -> Lease {
    Lease {
        spec: Some(LeaseSpec {
            renew_time: Some(MicroTime(renew)),
            ..LeaseSpec::default()
        }),
        ..Lease::default()
    }
}

const GRACE: Duration = Duration::from_secs(40);
const STARTUP: Duration = Duration::from_secs(60);

/// Upstream `TestMonitorNodeHealthUpdateStatus`, as functions of the node, what was
/// saved of it and the time.
#[test]
fn node_health_status_updates() {
    let fake_now = ts(1_700_000_000);
    let created = at(fake_now, -3600);
    // a node that never posted a status, past the startup grace period: every
    // condition Unknown, "never posted"
    let n = node(created, vec![]);
    let c = check_node_health(&n, None, None, at(created, 61), STARTUP, GRACE);
    let c = check_node_health(&n, Some(&c.health), None, at(created, 61), STARTUP, GRACE);
    let status = c.write.expect("written");
    let conds = status.conditions.expect("conditions");
    assert_eq!(
        conds.iter().map(|c| c.type_.as_str()).collect::<Vec<_>>(),
        ["Ready", "MemoryPressure", "DiskPressure", "PIDPressure"]
    );
    for c in &conds {
        assert_eq!(c.status, "Unknown");
        assert_eq!(c.reason.as_deref(), Some("NodeStatusNeverUpdated"));
        assert_eq!(
            c.message.as_deref(),
            Some("Kubelet never posted node status.")
        );
        assert_eq!(c.last_heartbeat_time, Some(Time(created)));
        assert_eq!(c.last_transition_time, Some(Time(at(created, 61))));
    }
    assert_eq!(c.grace_period, STARTUP);

    // healthy and within the grace period: nothing written
    let beat = fake_now;
    let n = node(
        created,
        vec![
            cond("Ready", "True", beat, created),
            cond("DiskPressure", "False", beat, created),
        ],
    );
    let first = check_node_health(&n, None, None, fake_now, STARTUP, GRACE);
    assert_eq!(first.write, None);
    let later = check_node_health(
        &n,
        Some(&first.health),
        None,
        at(fake_now, 40),
        STARTUP,
        GRACE,
    );
    assert_eq!(later.write, None, "exactly the grace period is not past it");

    // no new heartbeat for longer than the grace period: Unknown, "stopped posting";
    // a condition the kubelet never posted is added as "never posted"
    let now = at(fake_now, 41);
    let stale = check_node_health(&n, Some(&first.health), None, now, STARTUP, GRACE);
    let status = stale.write.expect("written");
    let conds = status.conditions.expect("conditions");
    let by = |t: &str| conds.iter().find(|c| c.type_ == t).expect(t).clone();
    let r = by("Ready");
    assert_eq!(r.status, "Unknown");
    assert_eq!(r.reason.as_deref(), Some("NodeStatusUnknown"));
    assert_eq!(
        r.message.as_deref(),
        Some("Kubelet stopped posting node status.")
    );
    assert_eq!(r.last_heartbeat_time, Some(Time(beat)));
    assert_eq!(r.last_transition_time, Some(Time(now)));
    assert_eq!(
        by("DiskPressure").reason.as_deref(),
        Some("NodeStatusUnknown")
    );
    assert_eq!(
        by("MemoryPressure").reason.as_deref(),
        Some("NodeStatusNeverUpdated")
    );
    assert_eq!(by("PIDPressure").status, "Unknown");
    assert_eq!(stale.observed_ready.status, "True");
    assert_eq!(
        stale.current_ready.map(|c| c.status),
        Some("Unknown".into())
    );

    // a Ready condition that is already Unknown is not written again
    let n = node(created, vec![cond("Ready", "Unknown", beat, created)]);
    let first = check_node_health(&n, None, None, fake_now, STARTUP, GRACE);
    let c = check_node_health(
        &n,
        Some(&first.health),
        None,
        at(fake_now, 100),
        STARTUP,
        GRACE,
    );
    assert_eq!(c.write, None);
}

/// Upstream `TestMonitorNodeHealthUpdateNodeAndPodStatusWithLease`: a renewed Lease
/// keeps a node healthy however old its status; a Lease not renewed does not.
#[test]
fn node_health_with_lease() {
    let fake_now = ts(1_700_000_000);
    let created = at(fake_now, -3600);
    let n = node(created, vec![cond("Ready", "True", fake_now, created)]);
    let first = check_node_health(&n, None, Some(&lease(fake_now)), fake_now, STARTUP, GRACE);
    // the status is stale but the Lease was renewed
    let renewed = check_node_health(
        &n,
        Some(&first.health),
        Some(&lease(at(fake_now, 30))),
        at(fake_now, 50),
        STARTUP,
        GRACE,
    );
    assert_eq!(renewed.write, None);
    assert_eq!(renewed.health.probe_timestamp, at(fake_now, 50));
    // neither moved for the grace period
    let stale = check_node_health(
        &n,
        Some(&renewed.health),
        Some(&lease(at(fake_now, 30))),
        at(fake_now, 91),
        STARTUP,
        GRACE,
    );
    let status = stale.write.expect("written");
    assert_eq!(
        condition(Some(&status), "Ready").map(|c| c.status.as_str()),
        Some("Unknown")
    );
    // a node that posts again: its new heartbeat refreshes the probe time
    let back = node(
        created,
        vec![cond("Ready", "True", at(fake_now, 95), created)],
    );
    let c = check_node_health(
        &back,
        Some(&stale.health),
        Some(&lease(at(fake_now, 30))),
        at(fake_now, 96),
        STARTUP,
        GRACE,
    );
    assert_eq!(c.write, None);
    assert_eq!(c.health.probe_timestamp, at(fake_now, 96));
}

fn taint(key: &str, effect: &str) -> Taint {
    Taint {
        key: key.into(),
        effect: effect.into(),
        ..Taint::default()
    }
}

fn node_with(conds: Vec<(&str, &str)>, taints: Vec<Taint>, unschedulable: bool) -> Node {
    let t = ts(1);
    Node {
        metadata: ObjectMeta {
            name: Some("n".into()),
            ..ObjectMeta::default()
        },
        spec: Some(NodeSpec {
            taints: Some(taints),
            unschedulable: Some(unschedulable),
            ..NodeSpec::default()
        }),
        status: Some(NodeStatus {
            conditions: Some(
                conds
                    .into_iter()
                    .map(|(ty, st)| cond(ty, st, t, t))
                    .collect(),
            ),
            ..NodeStatus::default()
        }),
    }
}

/// Upstream `TestTaintsNodeByCondition`.
#[test]
fn no_schedule_taints_follow_conditions() {
    let ns = |k: &str| taint(k, "NoSchedule");
    let cases: Vec<(&str, Node, Vec<Taint>, Vec<Taint>)> = vec![
        (
            "a new Ready node loses the admission's not-ready taint",
            node_with(
                vec![("Ready", "True")],
                vec![ns(TAINT_NODE_NOT_READY)],
                false,
            ),
            vec![],
            vec![ns(TAINT_NODE_NOT_READY)],
        ),
        (
            "NetworkUnavailable is true",
            node_with(
                vec![("Ready", "True"), ("NetworkUnavailable", "True")],
                vec![],
                false,
            ),
            vec![ns(TAINT_NODE_NETWORK_UNAVAILABLE)],
            vec![],
        ),
        (
            "NetworkUnavailable and MemoryPressure are true",
            node_with(
                vec![
                    ("Ready", "True"),
                    ("NetworkUnavailable", "True"),
                    ("MemoryPressure", "True"),
                ],
                vec![],
                false,
            ),
            vec![
                ns(TAINT_NODE_NETWORK_UNAVAILABLE),
                ns(TAINT_NODE_MEMORY_PRESSURE),
            ],
            vec![],
        ),
        (
            "Ready is false",
            node_with(vec![("Ready", "False")], vec![], false),
            vec![ns(TAINT_NODE_NOT_READY)],
            vec![],
        ),
        (
            "Ready is unknown, not-ready swapped for unreachable",
            node_with(
                vec![("Ready", "Unknown")],
                vec![ns(TAINT_NODE_NOT_READY)],
                false,
            ),
            vec![ns(TAINT_NODE_UNREACHABLE)],
            vec![ns(TAINT_NODE_NOT_READY)],
        ),
        (
            "unschedulable, other taints untouched",
            node_with(
                vec![
                    ("Ready", "True"),
                    ("DiskPressure", "True"),
                    ("PIDPressure", "True"),
                ],
                vec![
                    taint("example.com/x", "NoSchedule"),
                    taint(TAINT_NODE_NOT_READY, "NoExecute"),
                ],
                true,
            ),
            vec![
                ns(TAINT_NODE_DISK_PRESSURE),
                ns(TAINT_NODE_PID_PRESSURE),
                ns(TAINT_NODE_UNSCHEDULABLE),
            ],
            vec![],
        ),
        (
            "schedulable again",
            node_with(
                vec![("Ready", "True")],
                vec![ns(TAINT_NODE_UNSCHEDULABLE)],
                false,
            ),
            vec![],
            vec![ns(TAINT_NODE_UNSCHEDULABLE)],
        ),
    ];
    for (name, n, add, remove) in cases {
        assert_eq!(no_schedule_taint_diff(&n), (add, remove), "{name}");
    }
}

/// Upstream `TestSwapUnreachableNotReadyTaints` and the taint utilities.
#[test]
fn swapping_taints() {
    let nr = not_ready_taint();
    let ur = unreachable_taint();
    let other = taint("example.com/x", "NoSchedule");
    assert_eq!(
        swap_taints(
            &[other.clone(), nr.clone()],
            std::slice::from_ref(&ur),
            std::slice::from_ref(&nr)
        ),
        Some(vec![other.clone(), ur.clone()])
    );
    assert_eq!(
        swap_taints(
            std::slice::from_ref(&ur),
            std::slice::from_ref(&ur),
            std::slice::from_ref(&nr)
        ),
        None
    );
    let mut stamped = ur.clone();
    stamped.time_added = Some(Time(ts(5)));
    assert_eq!(
        swap_taints(&[ur.clone(), other.clone()], &[stamped.clone()], &[]),
        Some(vec![stamped, other.clone()]),
        "updated in place"
    );
    assert_eq!(swap_taints(std::slice::from_ref(&other), &[], &[nr]), None);
}

#[test]
fn zone_keys() {
    let mut n = Node::default();
    assert_eq!(zone_key(&n), "");
    n.metadata.labels = Some(
        [
            ("topology.kubernetes.io/region".to_string(), "r".to_string()),
            (
                "failure-domain.beta.kubernetes.io/zone".to_string(),
                "z".to_string(),
            ),
        ]
        .into(),
    );
    assert_eq!(zone_key(&n), "r:\0:z");
}

#[test]
fn pods_marked_not_ready() {
    let pod = |status: &str| Pod {
        status: Some(PodStatus {
            conditions: Some(vec![
                PodCondition {
                    type_: "Initialized".into(),
                    status: "True".into(),
                    ..PodCondition::default()
                },
                PodCondition {
                    type_: "Ready".into(),
                    status: status.into(),
                    last_transition_time: Some(Time(ts(1))),
                    ..PodCondition::default()
                },
            ]),
            ..PodStatus::default()
        }),
        ..Pod::default()
    };
    let s = not_ready_status(&pod("True"), ts(9)).expect("changed");
    let c = &s.conditions.expect("conditions")[1];
    assert_eq!(
        (c.status.as_str(), c.last_transition_time.clone()),
        ("False", Some(Time(ts(9))))
    );
    assert_eq!(not_ready_status(&pod("False"), ts(9)), None);
    assert_eq!(not_ready_status(&Pod::default(), ts(9)), None);
}

#[test]
fn beta_labels_follow_the_stable_ones() {
    let mut n = Node::default();
    assert_eq!(reconcile_labels(&n), None);
    n.metadata.labels = Some(
        [
            ("kubernetes.io/os".to_string(), "linux".to_string()),
            ("beta.kubernetes.io/os".to_string(), "linux".to_string()),
            ("kubernetes.io/arch".to_string(), "arm64".to_string()),
            ("beta.kubernetes.io/arch".to_string(), "amd64".to_string()),
        ]
        .into(),
    );
    assert_eq!(
        reconcile_labels(&n),
        Some([("beta.kubernetes.io/arch".to_string(), "arm64".to_string())].into())
    );
}
