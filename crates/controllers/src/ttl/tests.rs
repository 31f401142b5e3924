//! Upstream `ttl_controller_test.go`.

use super::*;

fn node(annotations: &[(&str, &str)]) -> Node {
    let mut n = Node::default();
    n.metadata.name = Some("name".into());
    if !annotations.is_empty() {
        n.metadata.annotations = Some(
            annotations
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        );
    }
    n
}

fn expect(ttl: u32) -> Option<Value> {
    Some(json!({"metadata": {"annotations": {"node.alpha.kubernetes.io/ttl": ttl.to_string()}}}))
}

// upstream TestPatchNode and TestUpdateNodeIfNeeded
#[test]
fn patch_only_on_change() {
    let cases = [
        (node(&[]), 0, expect(0)),
        (node(&[]), 10, expect(10)),
        (node(&[]), 15, expect(15)),
        (node(&[]), 30, expect(30)),
        (node(&[(TTL_ANNOTATION, "0")]), 10, expect(10)),
        (node(&[(TTL_ANNOTATION, "0"), ("a", "b")]), 10, expect(10)),
        (node(&[(TTL_ANNOTATION, "10"), ("a", "b")]), 10, None),
        (node(&[(TTL_ANNOTATION, "0")]), 60, expect(60)),
        (node(&[(TTL_ANNOTATION, "60")]), 60, None),
        (node(&[(TTL_ANNOTATION, "60")]), 30, expect(30)),
        // not a number: replaced
        (node(&[(TTL_ANNOTATION, "x")]), 0, expect(0)),
    ];
    for (i, (n, ttl, want)) in cases.into_iter().enumerate() {
        assert_eq!(ttl_patch(&n, ttl), want, "case {i}");
    }
}

// upstream TestDesiredTTL
#[test]
fn desired_ttl_follows_the_boundaries_with_hysteresis() {
    // (add, node count, desired ttl, boundary step, expected ttl)
    let cases = [
        (true, 0, 0, 0, 0),
        (true, 99, 0, 0, 0),
        (true, 100, 0, 0, 15),
        (false, 101, 15, 1, 15),
        (false, 91, 15, 1, 15),
        (true, 91, 15, 1, 15),
        (false, 90, 15, 1, 0),
    ];
    for (i, (add, node_count, desired, step, expected)) in cases.into_iter().enumerate() {
        let mut size = ClusterSize {
            node_count,
            boundary_step: step,
            desired_ttl_seconds: desired,
        };
        if add {
            size.add_node();
        } else {
            size.delete_node();
        }
        assert_eq!(size.desired_ttl_seconds, expected, "case {i}");
    }
}

#[test]
fn growing_and_shrinking_walks_every_step() {
    let mut size = ClusterSize::default();
    let mut seen = vec![size.desired_ttl_seconds];
    for _ in 0..2500 {
        size.add_node();
        if seen.last() != Some(&size.desired_ttl_seconds) {
            seen.push(size.desired_ttl_seconds);
        }
    }
    assert_eq!(seen, [0, 15, 30, 60, 300]);
    assert_eq!(size.boundary_step, 4);
    // 1800 nodes still 300 s, 1799 back to 60 s
    for _ in 0..700 {
        size.delete_node();
    }
    assert_eq!(size.desired_ttl_seconds, 300);
    size.delete_node();
    assert_eq!(size.desired_ttl_seconds, 60);
    for _ in 0..1799 {
        size.delete_node();
    }
    assert_eq!(size.desired_ttl_seconds, 0);
    assert_eq!(size.node_count, 0);
}
