use super::*;
use k8s_openapi::api::core::v1::TopologySpreadConstraint;
use serde_json::json;

fn node(name: &str, zone: Option<&str>) -> NodeView {
    let mut labels = BTreeMap::from([(LABEL_HOSTNAME.to_string(), name.to_string())]);
    if let Some(z) = zone {
        labels.insert(LABEL_ZONE.to_string(), z.to_string());
    }
    NodeView {
        name: name.into(),
        labels,
        ..Default::default()
    }
}

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn pod(v: serde_json::Value) -> Pod {
    serde_json::from_value(v).expect("pod")
}

const RS_LABELS: &[(&str, &str)] = &[("app", "x"), ("pod-template-hash", "h")];

/// A ReplicaSet `web-h` selecting `app=x,pod-template-hash=h` in `default`.
fn owners_with_rs() -> Owners {
    let rs: ReplicaSet = serde_json::from_value(json!({
        "metadata": {"name": "web-h", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "x", "pod-template-hash": "h"}}},
    }))
    .expect("rs");
    let mut o = Owners::default();
    o.replica_set_changed(&rs, false);
    o
}

fn rs_pod() -> Pod {
    pod(json!({
        "metadata": {"name": "web-h-1", "namespace": "default",
            "labels": {"app": "x", "pod-template-hash": "h"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                "name": "web-h", "uid": "u", "controller": true}]},
        "spec": {"containers": [{"name": "c", "image": "i"}]},
    }))
}

fn table_of(nodes: &[NodeView]) -> NodeTable {
    let mut t = NodeTable::default();
    for n in nodes {
        t.set_view(n.clone());
    }
    t
}

fn ids(t: &NodeTable, nodes: &[&NodeView]) -> Vec<usize> {
    nodes
        .iter()
        .map(|n| t.find(&n.name).expect("known node"))
        .collect()
}

/// `counts[i]` sibling pods on `nodes[i]`.
fn groups_with(t: &NodeTable, nodes: &[NodeView], counts: &[u32]) -> LabelGroups {
    let mut g = LabelGroups::default();
    for (n, c) in nodes.iter().zip(counts) {
        for _ in 0..*c {
            let id = g.join("default", &labels(RS_LABELS));
            g.count(id, t.find(&n.name).expect("known node"), true);
        }
    }
    g
}

fn scores(nodes: &[NodeView], counts: &[u32]) -> (Vec<Option<i64>>, Vec<i64>) {
    let spread = spread_of(&rs_pod(), &owners_with_rs());
    let t = table_of(nodes);
    let feasible = ids(&t, &nodes.iter().collect::<Vec<_>>());
    let spec = rs_pod().spec.unwrap_or_default();
    let g = groups_with(&t, nodes, counts);
    let raw = raw_scores(&spread, &spec, "default", &feasible, &t, &g).expect("not skipped");
    let norm = normalize(&raw);
    (raw, norm)
}

#[test]
fn worked_example_three_nodes_three_zones() {
    let nodes = [
        node("a", Some("zone-a")),
        node("b", Some("zone-b")),
        node("c", Some("zone-c")),
    ];
    // raw = round(2 · ln 5 · count + 2 + 4)
    let cases: &[(&[u32], &[i64], &[i64])] = &[
        (&[0, 0, 0], &[6, 6, 6], &[100, 100, 100]),
        (&[1, 0, 0], &[9, 6, 6], &[66, 100, 100]),
        (&[1, 1, 0], &[9, 9, 6], &[66, 66, 100]),
        (&[1, 1, 1], &[9, 9, 9], &[100, 100, 100]),
        (&[2, 1, 1], &[12, 9, 9], &[75, 100, 100]),
        (&[3, 2, 2], &[16, 12, 12], &[75, 100, 100]),
    ];
    for (counts, want_raw, want_norm) in cases {
        let (raw, norm) = scores(&nodes, counts);
        let raw: Vec<i64> = raw.into_iter().map(|r| r.expect("scored")).collect();
        assert_eq!(&raw, want_raw, "raw for {counts:?}");
        assert_eq!(&norm, want_norm, "normalised for {counts:?}");
    }
}

#[test]
fn without_zone_labels_only_the_hostname_term_counts() {
    let nodes = [node("a", None), node("b", None), node("c", None)];
    // raw = round(ln 5 · count + 2): 2, 4 (3.609), 5 (5.219), 7 (6.828)
    let (raw, norm) = scores(&nodes, &[1, 0, 0]);
    assert_eq!(raw, vec![Some(4), Some(2), Some(2)]);
    assert_eq!(norm, vec![50, 100, 100]);
    let (raw, _) = scores(&nodes, &[2, 3, 0]);
    assert_eq!(raw, vec![Some(5), Some(7), Some(2)]);
}

#[test]
fn zone_counts_span_all_nodes_of_the_zone() {
    // two nodes in zone-a: pods on a2 (not feasible) count for a1 through the zone
    let nodes = [
        node("a1", Some("zone-a")),
        node("a2", Some("zone-a")),
        node("b1", Some("zone-b")),
    ];
    let t = table_of(&nodes);
    let feasible = ids(&t, &[&nodes[0], &nodes[2]]);
    let spread = spread_of(&rs_pod(), &owners_with_rs());
    let spec = PodSpec::default();
    let g = groups_with(&t, &nodes, &[0, 2, 0]);
    let raw = raw_scores(&spread, &spec, "default", &feasible, &t, &g).expect("scored");
    // hostname: 2 feasible nodes, ln 4; zone: 2 zones, ln 4; zone-a holds 2
    let w = 4f64.ln();
    assert_eq!(
        raw,
        vec![Some((2.0 * w + 2.0 + 4.0).round() as i64), Some(6)]
    );
    // a nodeSelector that a2 does not match takes its pods out of the count (Honor)
    let mut picky = nodes.clone();
    for i in [0, 2] {
        picky[i].labels.insert("tier".into(), "web".into());
    }
    let t = table_of(&picky);
    let spec = PodSpec {
        node_selector: Some(labels(&[("tier", "web")])),
        ..Default::default()
    };
    let feasible = ids(&t, &[&picky[0], &picky[2]]);
    let raw = raw_scores(&spread, &spec, "default", &feasible, &t, &g).expect("scored");
    assert_eq!(raw, vec![Some(6), Some(6)]);
    // so does a taint the pod does not tolerate, with nodeTaintsPolicy Honor
    let mut tainted = nodes.clone();
    tainted[1].taints = vec![k8s_openapi::api::core::v1::Taint {
        key: "k".into(),
        effect: "NoSchedule".into(),
        ..Default::default()
    }];
    let t = table_of(&tainted);
    let feasible = ids(&t, &[&tainted[0], &tainted[2]]);
    let mut honour = spread.clone();
    let raw = raw_scores(&honour, &PodSpec::default(), "default", &feasible, &t, &g);
    assert_eq!(
        raw,
        Some(vec![Some(9), Some(6)]),
        "taints ignored by default"
    );
    honour.constraints[1].honor_node_taints = true;
    let raw = raw_scores(&honour, &PodSpec::default(), "default", &feasible, &t, &g);
    assert_eq!(raw, Some(vec![Some(6), Some(6)]));
}

#[test]
fn default_selector_merges_services_and_the_controller() {
    let mut o = owners_with_rs();
    let svc = |name: &str, sel: serde_json::Value| -> Service {
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"selector": sel},
        }))
        .expect("service")
    };
    o.service_changed(&svc("front", json!({"app": "x", "tier": "web"})), false);
    o.service_changed(&svc("other", json!({"app": "y"})), false);
    o.service_changed(&svc("headless", serde_json::Value::Null), false);
    let mut p = rs_pod();
    p.metadata
        .labels
        .as_mut()
        .map(|l| l.insert("tier".into(), "web".into()));
    assert_eq!(
        o.default_selector(&p).to_string(),
        "app=x,app=x,pod-template-hash=h,tier=web"
    );
    // without the ReplicaSet in the cache: the Services' selector alone
    let rs: ReplicaSet = serde_json::from_value(json!({
        "metadata": {"name": "web-h", "namespace": "default"}, "spec": {"selector": {}}}))
    .expect("rs");
    o.replica_set_changed(&rs, true);
    assert_eq!(o.default_selector(&p).to_string(), "app=x,tier=web");
    // a bare pod that no Service selects has nothing: the plugin is skipped
    let bare = pod(json!({"metadata": {"name": "b", "namespace": "default",
        "labels": {"app": "z"}}}));
    assert!(o.default_selector(&bare).is_empty());
    assert_eq!(spread_of(&bare, &o), Spread::default());
    // a ReplicationController's map is merged; other owner kinds are not known
    let rc: ReplicationController = serde_json::from_value(json!({
        "metadata": {"name": "rc", "namespace": "default"},
        "spec": {"selector": {"app": "z", "ver": "1"}}}))
    .expect("rc");
    o.replication_controller_changed(&rc, false);
    let owned = |api: &str, kind: &str| {
        pod(json!({"metadata": {"name": "b", "namespace": "default",
            "labels": {"app": "z", "ver": "1"},
            "ownerReferences": [{"apiVersion": api, "kind": kind, "name": "rc", "uid": "u",
                "controller": true}]}}))
    };
    assert_eq!(
        o.default_selector(&owned("v1", "ReplicationController"))
            .to_string(),
        "app=z,ver=1"
    );
    assert!(o
        .default_selector(&owned("apps/v1beta2", "ReplicationController"))
        .is_empty());
    let s = spread_of(&owned("v1", "ReplicationController"), &o);
    assert!(!s.require_all_topologies);
    assert_eq!(
        s.constraints
            .iter()
            .map(|c| (c.topology_key.as_str(), c.max_skew))
            .collect::<Vec<_>>(),
        vec![(LABEL_HOSTNAME, 3), (LABEL_ZONE, 5)]
    );
}

#[test]
fn explicit_constraints_score_schedule_anyway_only_and_ignore_unlabelled_nodes() {
    let c = |key: &str, when: &str, sel: Option<serde_json::Value>| -> TopologySpreadConstraint {
        let mut v = json!({"maxSkew": 1, "topologyKey": key, "whenUnsatisfiable": when,
            "matchLabelKeys": ["pod-template-hash"]});
        if let Some(s) = sel {
            v["labelSelector"] = s;
        }
        serde_json::from_value(v).expect("constraint")
    };
    let mut p = rs_pod();
    p.spec.as_mut().expect("spec").topology_spread_constraints = Some(vec![
        c(
            "rack",
            "ScheduleAnyway",
            Some(json!({"matchLabels": {"app": "x"}})),
        ),
        c(
            LABEL_ZONE,
            "DoNotSchedule",
            Some(json!({"matchLabels": {"app": "x"}})),
        ),
    ]);
    let s = spread_of(&p, &owners_with_rs());
    assert!(s.require_all_topologies);
    assert_eq!(s.constraints.len(), 1);
    assert_eq!(
        s.constraints[0].selector.to_string(),
        "app=x,pod-template-hash=h"
    );
    assert!(s.constraints[0].honor_node_affinity && !s.constraints[0].honor_node_taints);
    let mut nodes = vec![node("a", None), node("b", None), node("c", None)];
    nodes[0].labels.insert("rack".into(), "r1".into());
    nodes[1].labels.insert("rack".into(), "r2".into());
    let t = table_of(&nodes);
    let feasible = ids(&t, &nodes.iter().collect::<Vec<_>>());
    let g = groups_with(&t, &nodes, &[1, 0, 5]);
    let spec = p.spec.clone().unwrap_or_default();
    let raw = raw_scores(&s, &spec, "default", &feasible, &t, &g).expect("scored");
    // node c has no rack: ignored (its pods count nowhere); 2 racks: ln 4; maxSkew 1
    assert_eq!(raw, vec![Some((4f64.ln()).round() as i64), Some(0), None]);
    assert_eq!(normalize(&raw), vec![0, 100, 0]);
    // no labelSelector: nothing matches, every node scores the same
    p.spec.as_mut().expect("spec").topology_spread_constraints =
        Some(vec![c("rack", "ScheduleAnyway", None)]);
    let s = spread_of(&p, &owners_with_rs());
    let raw = raw_scores(&s, &spec, "default", &feasible, &t, &g).expect("scored");
    assert_eq!(normalize(&raw), vec![100, 100, 0]);
}

#[test]
fn label_groups_follow_joins_counts_and_leaves() {
    let mut g = LabelGroups::default();
    let a = g.join("ns", &labels(&[("app", "x")]));
    let b = g.join("ns", &labels(&[("app", "x")]));
    assert_eq!(a, b);
    let other = g.join("other", &labels(&[("app", "x")]));
    assert_ne!(a, other);
    g.count(a, 1, true);
    g.count(a, 1, true);
    g.count(other, 1, true);
    let sel = LabelSelector::parse("app=x").expect("selector");
    assert_eq!(g.per_node("ns", &sel, 2).get(1), 2);
    assert_eq!(g.per_node("ns", &sel, 2).used, vec![1]);
    assert_eq!(g.per_node("ns", &LabelSelector::everything(), 2).get(1), 0);
    g.count(a, 1, false);
    assert_eq!(g.per_node("ns", &sel, 2).get(1), 1);
    g.leave(a);
    g.leave(b);
    g.leave(other);
    assert!(g.is_empty());
    // a freed slot is reused
    let c = g.join("ns", &labels(&[("app", "y")]));
    assert!(c == a || c == other);
    assert!(g.is(c, "ns", &labels(&[("app", "y")])));
}
