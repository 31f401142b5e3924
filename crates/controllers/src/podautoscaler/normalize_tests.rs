//! Upstream `horizontal_test.go` normalisation tables, ported:
//! TestConvertDesiredReplicasWithRules, TestCalculateScaleUpLimitWithScalingRules,
//! TestCalculateScaleDownLimitWithBehaviors, TestNormalizeDesiredReplicas,
//! TestScalingWithRules, TestStoreScaleEvents, TestNormalizeDesiredReplicasWithBehavior.

use super::*;

fn at(now: Timestamp, secs_ago: f64) -> Timestamp {
    now.checked_sub(Duration::from_secs_f64(secs_ago)).unwrap()
}

/// Upstream `generateScalingRules`: Max select, a Pods and/or a Percent policy.
fn rules(
    pods: i32,
    pods_period: i32,
    percent: i32,
    percent_period: i32,
    window: i32,
) -> HPAScalingRules {
    let mut p = vec![];
    if pods != 0 {
        p.push(policy("Pods", pods, pods_period));
    }
    if percent != 0 {
        p.push(policy("Percent", percent, percent_period));
    }
    HPAScalingRules {
        stabilization_window_seconds: Some(window),
        select_policy: Some("Max".into()),
        policies: if p.is_empty() { None } else { Some(p) },
        tolerance: None,
    }
}

/// Upstream `generateEventsUniformDistribution`: events spread over the last `period`
/// seconds, each in the middle of its segment.
fn uniform(raw: &[i32], period: f64, now: Timestamp) -> Vec<ScaleEvent> {
    let seg = period / raw.len() as f64;
    raw.iter()
        .enumerate()
        .map(|(i, c)| ScaleEvent {
            change: *c,
            timestamp: at(now, period - seg * (i as f64 + 1.0) + seg / 2.0),
            outdated: false,
        })
        .collect()
}

#[test]
fn convert_desired_replicas_with_rules_table() {
    for (current, desired, min, max, want, reason) in [
        (5, 7, 3, 8, 7, "DesiredWithinRange"),
        (3, 1, 2, 8, 2, "TooFewReplicas"),
        (1, 0, 0, 10, 0, "DesiredWithinRange"),
        (20, 1000, 1, 10, 10, "TooManyReplicas"),
        (3, 1000, 1, 2000, scale_up_limit(3), "ScaleUpLimit"),
    ] {
        let (got, r) = convert_desired_replicas_with_rules(current, desired, min, max);
        assert_eq!(
            (got, r.0),
            (want, reason),
            "{current} {desired} {min} {max}"
        );
    }
    assert_eq!(scale_up_limit(3), 6);
    assert_eq!(scale_up_limit(1), 4);
}

#[test]
fn scale_limits_with_min_select_policy() {
    let now = Timestamp::now();
    let mut r = rules(2, 60, 50, 60, 300);
    r.select_policy = Some("Min".into());
    assert_eq!(scale_up_limit_with_rules(1, &[], &[], &r, now), 2);
    assert_eq!(scale_down_limit_with_rules(5, &[], &[], &r, now), 3);
    r.select_policy = Some("Disabled".into());
    assert_eq!(scale_up_limit_with_rules(1, &[], &[], &r, now), 1);
    assert_eq!(scale_down_limit_with_rules(5, &[], &[], &r, now), 5);
}

#[test]
fn normalize_desired_replicas_table() {
    let now = Timestamp::now();
    let rec = |r, m: i64| Recommendation {
        replicas: r,
        timestamp: at(now, (m * 60) as f64),
    };
    for (name, recs, desired, want, len) in [
        ("empty log", vec![], 5, 5, 1),
        ("stabilize", vec![rec(4, 2), rec(5, 1)], 3, 5, 3),
        ("no stabilize", vec![rec(1, 2), rec(2, 1)], 3, 3, 3),
        (
            "no stabilize - old recommendations",
            vec![rec(10, 10), rec(9, 9)],
            3,
            3,
            2,
        ),
        (
            "stabilize - old recommendations",
            vec![rec(10, 10), rec(4, 1), rec(5, 2), rec(9, 9)],
            3,
            5,
            4,
        ),
    ] {
        let mut h = History::default();
        h.recommendations.insert(String::new(), recs);
        let got = h.stabilize_recommendation("", desired, Duration::from_secs(300), now);
        assert_eq!(got, want, "{name}");
        assert_eq!(h.recommendations[""].len(), len, "{name}");
    }
}

struct Rule {
    name: &'static str,
    up_events: Vec<ScaleEvent>,
    down_events: Vec<ScaleEvent>,
    min: i32,
    max: i32,
    up: Option<HPAScalingRules>,
    down: Option<HPAScalingRules>,
    current: i32,
    desired: i32,
    want: i32,
    reason: &'static str,
}

#[test]
fn scaling_with_rules_table() {
    let now = Timestamp::now();
    let e = |raw: &[i32]| uniform(raw, 120.0, now);
    #[allow(clippy::type_complexity)]
    let rows: Vec<(&str, Vec<ScaleEvent>, Vec<ScaleEvent>, i32, i32, Option<HPAScalingRules>, Option<HPAScalingRules>, i32, i32, i32, &str)> = vec![
        ("prenormalized desired replicas within range", vec![], vec![], 3, 8, None, None, 5, 7, 7, "DesiredWithinRange"),
        ("prenormalized desired replicas < minReplicas", vec![], vec![], 2, 8, None, None, 3, 1, 2, "TooFewReplicas"),
        ("prenormalized desired replicas within range when minReplicas is 0", vec![], vec![], 0, 10, None, None, 1, 0, 0, "DesiredWithinRange"),
        ("maxReplicas is the limit because maxReplicas < scaleUpLimit", vec![], vec![], 1, 10, None, None, 20, 1000, 10, "TooManyReplicas"),
        ("desired replica count is more than the maximum replica count", vec![], vec![], 100, 150, None, None, 100, 1000, 150, "TooManyReplicas"),
        ("scaleUpLimit is the limit because scaleUpLimit < maxReplicas with user policies", vec![], vec![], 1, 2000, Some(rules(0, 0, 1, 60, 0)), None, 3, 1000, 4, "ScaleUpLimit"),
        ("scaleDownLimit is the limit because scaleDownLimit > minReplicas with user defined policies", vec![], vec![], 3, 2000, None, Some(rules(20, 60, 0, 0, 0)), 1000, 3, 980, "ScaleDownLimit"),
        ("scaleUp with default behavior", vec![], vec![], 1, 1000, None, None, 10, 50, 20, "ScaleUpLimit"),
        ("scaleUp with pods policy larger than percent policy", vec![], vec![], 1, 1000, Some(rules(100, 60, 100, 60, 0)), None, 10, 500, 110, "ScaleUpLimit"),
        ("scaleUp with percent policy larger than pods policy", vec![], vec![], 1, 1000, Some(rules(2, 60, 100, 60, 0)), None, 10, 500, 20, "ScaleUpLimit"),
        ("scaleUp with spec MaxReplicas limitation with large pod policy", vec![], vec![], 1, 1000, Some(rules(100, 60, 0, 0, 0)), None, 10, 50, 50, "DesiredWithinRange"),
        ("scaleUp with spec MaxReplicas limitation with large percent policy", vec![], vec![], 1, 1000, Some(rules(10000, 60, 0, 0, 0)), None, 10, 50, 50, "DesiredWithinRange"),
        ("scaleUp with pod policy limitation", vec![], vec![], 1, 1000, Some(rules(30, 60, 0, 0, 0)), None, 10, 50, 40, "ScaleUpLimit"),
        ("scaleUp with percent policy limitation", vec![], vec![], 1, 1000, Some(rules(0, 0, 200, 60, 0)), None, 10, 50, 30, "ScaleUpLimit"),
        ("scaleDown with percent policy larger than pod policy", vec![], vec![], 1, 1000, None, Some(rules(20, 60, 1, 60, 300)), 100, 2, 80, "ScaleDownLimit"),
        ("scaleDown with pod policy larger than percent policy", vec![], vec![], 1, 1000, None, Some(rules(2, 60, 1, 60, 300)), 100, 2, 98, "ScaleDownLimit"),
        ("scaleDown with spec MinReplicas=nil limitation with large pod policy", vec![], vec![], 1, 1000, None, Some(rules(100, 60, 0, 0, 300)), 10, 0, 1, "TooFewReplicas"),
        ("scaleDown with spec MinReplicas limitation with large percent policy", vec![], vec![], 5, 1000, None, Some(rules(0, 0, 100, 60, 300)), 10, 2, 5, "TooFewReplicas"),
        ("scaleDown with pod policy limitation", vec![], vec![], 1, 1000, None, Some(rules(5, 60, 0, 0, 300)), 10, 2, 5, "ScaleDownLimit"),
        ("scaleDown with percent policy limitation", vec![], vec![], 1, 1000, None, Some(rules(0, 0, 50, 60, 300)), 10, 5, 5, "DesiredWithinRange"),
        ("scaleUp with spec MaxReplicas limitation with large pod policy and events", e(&[1, 5, 9]), vec![], 1, 200, Some(rules(300, 60, 0, 0, 0)), None, 100, 500, 200, "TooManyReplicas"),
        ("scaleUp with spec MaxReplicas limitation with large percent policy and events", e(&[1, 5, 9]), vec![], 1, 200, Some(rules(0, 0, 10000, 60, 0)), None, 100, 500, 200, "TooManyReplicas"),
        ("scaleUp with currentReplicas limitation with rate.PeriodSeconds with a lot of recent scale up events", e(&[1, 5, 9]), vec![], 1, 1000, Some(rules(5, 120, 0, 0, 0)), None, 100, 500, 100, "ScaleUpLimit"),
        ("scaleUp with pod policy and previous scale up events", e(&[1, 5, 9]), vec![], 1, 1000, Some(rules(150, 120, 0, 0, 0)), None, 100, 500, 235, "ScaleUpLimit"),
        ("scaleUp with percent policy and previous scale up events", e(&[1, 5, 9]), vec![], 1, 1000, Some(rules(0, 0, 200, 120, 0)), None, 100, 500, 255, "ScaleUpLimit"),
        ("scaleDown with default policy and previous events", vec![], e(&[1, 5, 9]), 1, 1000, None, None, 10, 5, 5, "DesiredWithinRange"),
        ("scaleDown with spec MinReplicas=nil limitation with large pod policy and previous events", vec![], e(&[1, 5, 9]), 1, 1000, None, Some(rules(115, 120, 0, 0, 300)), 100, 0, 1, "TooFewReplicas"),
        ("scaleDown with spec MinReplicas limitation with large pod policy and previous events", vec![], e(&[1, 5, 9]), 5, 1000, None, Some(rules(130, 120, 0, 0, 300)), 100, 0, 5, "TooFewReplicas"),
        ("scaleDown with spec MinReplicas limitation with large percent policy and previous events", vec![], e(&[1, 5, 9]), 5, 1000, None, Some(rules(0, 0, 100, 120, 300)), 100, 2, 5, "TooFewReplicas"),
        ("scaleDown with pod policy limitation and previous events", vec![], e(&[1, 5, 9]), 1, 1000, None, Some(rules(5, 120, 0, 0, 300)), 100, 2, 100, "ScaleDownLimit"),
        ("scaleDown with percent policy limitation and previous events", vec![], e(&[2, 4, 6]), 1, 1000, None, Some(rules(0, 0, 50, 120, 300)), 100, 0, 56, "ScaleDownLimit"),
        ("scaleDown with previous events preventing further scale down", vec![], e(&[10, 10, 10]), 1, 1000, None, Some(rules(0, 0, 10, 120, 300)), 100, 0, 100, "ScaleDownLimit"),
        ("scaleDown with with previous events still allowing more scale down", vec![], e(&[10, 10, 10]), 1, 1000, None, Some(rules(0, 0, 1000, 120, 300)), 10, 5, 5, "DesiredWithinRange"),
        ("check 'outdated' flag for events for one behavior for up", e(&[8, 12, 9, 11]), vec![], 1, 1000, Some(rules(1000, 60, 0, 0, 0)), None, 100, 200, 200, "DesiredWithinRange"),
        ("check that events were not marked 'outdated' for two different policies in the behavior for up", e(&[8, 12, 9, 11]), vec![], 1, 1000, Some(rules(1000, 120, 100, 60, 0)), None, 100, 200, 200, "DesiredWithinRange"),
        ("check that events were marked 'outdated' for two different policies in the behavior for up", e(&[8, 12, 9, 11]), vec![], 1, 1000, Some(rules(1000, 30, 100, 60, 0)), None, 100, 200, 200, "DesiredWithinRange"),
        ("check 'outdated' flag for events for one behavior for down", vec![], e(&[8, 12, 9, 11]), 1, 1000, None, Some(rules(1000, 60, 0, 0, 300)), 100, 5, 5, "DesiredWithinRange"),
        ("check that events were not marked 'outdated' for two different policies in the behavior for down", vec![], e(&[8, 12, 9, 11]), 1, 1000, None, Some(rules(1000, 120, 100, 60, 300)), 100, 5, 5, "DesiredWithinRange"),
        ("check that events were marked 'outdated' for two different policies in the behavior for down", vec![], e(&[8, 12, 9, 11]), 1, 1000, None, Some(rules(1000, 30, 100, 60, 300)), 100, 5, 5, "DesiredWithinRange"),
    ];
    for (name, up_events, down_events, min, max, up, down, current, desired, want, reason) in rows {
        let tc = Rule {
            name,
            up_events,
            down_events,
            min,
            max,
            up,
            down,
            current,
            desired,
            want,
            reason,
        };
        let mut h = History::default();
        h.scale_up_events.insert(String::new(), tc.up_events);
        h.scale_down_events.insert(String::new(), tc.down_events);
        let arg = NormalizationArg {
            key: String::new(),
            scale_up: scale_up_rules(tc.up.as_ref()),
            scale_down: scale_down_rules(tc.down.as_ref()),
            min_replicas: tc.min,
            max_replicas: tc.max,
            desired: tc.desired,
            current: tc.current,
        };
        let (got, r) = h.convert_with_behavior_rate(&arg, now);
        assert_eq!((got, r.0), (tc.want, tc.reason), "{}", tc.name);
    }
}

#[test]
fn store_scale_events_table() {
    let now = Timestamp::now();
    let ev = |c, s: f64, outdated| ScaleEvent {
        change: c,
        timestamp: at(now, s),
        outdated,
    };
    #[allow(clippy::type_complexity)]
    let rows: Vec<(
        &str,
        Vec<ScaleEvent>,
        Vec<(i32, bool)>,
        Option<HPAScalingRules>,
        i32,
    )> = vec![
        (
            "empty entries with default behavior",
            vec![],
            vec![],
            None,
            0,
        ),
        (
            "empty entries with two-policy-behavior",
            vec![],
            vec![(5, false)],
            Some(rules(10, 60, 100, 60, 0)),
            0,
        ),
        (
            "one outdated entry to be kept untouched without behavior",
            vec![ev(7, 61.0, false)],
            vec![(7, false)],
            None,
            0,
        ),
        (
            "one outdated entry to be replaced with behavior",
            vec![ev(7, 61.0, false)],
            vec![(5, false)],
            Some(rules(10, 60, 100, 60, 0)),
            0,
        ),
        (
            "one actual entry to be not touched with behavior",
            vec![ev(7, 58.0, false)],
            vec![(7, false), (5, false)],
            Some(rules(10, 60, 100, 60, 0)),
            7,
        ),
        (
            "two entries, one of them to be replaced",
            vec![ev(7, 61.0, false), ev(6, 59.0, false)],
            vec![(5, false), (6, false)],
            Some(rules(10, 60, 0, 0, 0)),
            6,
        ),
        (
            "replace one entry, use policies with different periods",
            vec![
                ev(8, 29.0, false),
                ev(6, 59.0, false),
                ev(7, 61.0, false),
                ev(9, 61.0, false),
            ],
            vec![(8, false), (6, false), (7, true), (5, false)],
            Some(rules(10, 60, 100, 30, 0)),
            14,
        ),
        (
            "two entries, both actual",
            vec![ev(7, 58.0, false), ev(6, 59.0, false)],
            vec![(7, false), (6, false), (5, false)],
            Some(rules(10, 120, 100, 30, 0)),
            13,
        ),
    ];
    for (name, prev, want, scaling, change) in rows {
        for up in [true, false] {
            let behavior = scaling.clone().map(|r| HorizontalPodAutoscalerBehavior {
                scale_up: up.then(|| r.clone()),
                scale_down: (!up).then(|| r.clone()),
            });
            let mut h = History::default();
            let list = if up {
                &mut h.scale_up_events
            } else {
                &mut h.scale_down_events
            };
            list.insert(String::new(), prev.clone());
            assert_eq!(replicas_change_per_period(60, &prev, now), change, "{name}");
            let new = if up { 15 } else { 5 };
            h.store_scale_event(behavior.as_ref(), "", 10, new, now);
            let list = if up {
                &h.scale_up_events
            } else {
                &h.scale_down_events
            };
            let got: Vec<(i32, bool)> = list[""].iter().map(|e| (e.change, e.outdated)).collect();
            assert_eq!(got, want, "{name} (up: {up})");
        }
    }
}

#[test]
fn normalize_desired_replicas_with_behavior_table() {
    let now = Timestamp::now();
    let rec = |r, m: i64| Recommendation {
        replicas: r,
        timestamp: at(now, (m * 60) as f64),
    };
    #[allow(clippy::type_complexity)]
    let rows: Vec<(&str, Vec<Recommendation>, i32, i32, i32, Vec<i32>, i32, i32)> = vec![
        (
            "empty recommendations for scaling down",
            vec![],
            100,
            5,
            5,
            vec![5],
            0,
            0,
        ),
        (
            "simple scale down stabilization",
            vec![rec(4, 2), rec(5, 1)],
            100,
            3,
            5,
            vec![4, 5, 3],
            0,
            180,
        ),
        (
            "simple scale up stabilization",
            vec![rec(4, 2), rec(5, 1)],
            1,
            7,
            4,
            vec![4, 5, 7],
            300,
            0,
        ),
        (
            "no scale down stabilization",
            vec![rec(1, 2), rec(2, 1)],
            100,
            3,
            3,
            vec![1, 2, 3],
            300,
            0,
        ),
        (
            "no scale up stabilization",
            vec![rec(4, 2), rec(5, 1)],
            1,
            3,
            3,
            vec![4, 5, 3],
            0,
            300,
        ),
        (
            "no scale down stabilization, reuse recommendation element",
            vec![rec(10, 10), rec(9, 9)],
            100,
            3,
            3,
            vec![10, 3],
            0,
            0,
        ),
        (
            "no scale up stabilization, reuse recommendation element",
            vec![rec(10, 10), rec(9, 9)],
            1,
            100,
            100,
            vec![10, 100],
            0,
            0,
        ),
        (
            "scale down stabilization, reuse one of obsolete recommendation element",
            vec![rec(10, 10), rec(4, 1), rec(5, 2), rec(9, 9)],
            100,
            3,
            5,
            vec![10, 4, 5, 3],
            0,
            180,
        ),
        (
            "scale up stabilization, reuse one of obsolete recommendation element",
            vec![rec(10, 100), rec(6, 1), rec(5, 2), rec(9, 3)],
            1,
            100,
            5,
            vec![100, 6, 5, 9],
            300,
            0,
        ),
    ];
    for (name, recs, current, desired, want, want_recs, up_window, down_window) in rows {
        let mut h = History::default();
        h.recommendations.insert(String::new(), recs);
        let arg = NormalizationArg {
            key: String::new(),
            scale_up: HPAScalingRules {
                stabilization_window_seconds: Some(up_window),
                ..Default::default()
            },
            scale_down: HPAScalingRules {
                stabilization_window_seconds: Some(down_window),
                ..Default::default()
            },
            min_replicas: 0,
            max_replicas: 0,
            desired,
            current,
        };
        let (got, _) = h.stabilize_with_behaviors(&arg, now);
        assert_eq!(got, want, "{name}");
        let stored: Vec<i32> = h.recommendations[""].iter().map(|r| r.replicas).collect();
        assert_eq!(stored, want_recs, "{name}");
    }
}

#[test]
fn normalize_sets_the_upstream_reasons() {
    let now = Timestamp::now();
    let mut h = History::default();
    // without behavior: a higher recommendation in the window holds the scale-down
    h.recommendations.insert(
        "ns/a".into(),
        vec![Recommendation {
            replicas: 6,
            timestamp: at(now, 60.0),
        }],
    );
    let n = h.normalize("ns/a", 6, 2, 1, 10, Duration::from_secs(300), now);
    assert_eq!(n.replicas, 6);
    assert_eq!(n.able_to_scale.0, "ScaleDownStabilized");
    assert!(!n.limited);
    assert_eq!(n.limit_reason.0, "DesiredWithinRange");
    // from 1 to 10 in one step is capped at 4 (legacy limit)
    let n = h.normalize("ns/b", 1, 10, 1, 20, Duration::from_secs(300), now);
    assert_eq!(
        (n.replicas, n.limited, n.limit_reason.0, n.able_to_scale.0),
        (4, true, "ScaleUpLimit", "ReadyForNewScale")
    );
    // with behavior
    let arg = NormalizationArg {
        key: "ns/c".into(),
        scale_up: scale_up_rules(None),
        scale_down: HPAScalingRules {
            stabilization_window_seconds: Some(300),
            ..scale_down_rules(None)
        },
        min_replicas: 1,
        max_replicas: 3,
        desired: 8,
        current: 2,
    };
    let n = h.normalize_with_behaviors(&arg, now);
    assert_eq!(
        (n.replicas, n.limited, n.limit_reason.0),
        (3, true, "TooManyReplicas")
    );
}
