use super::*;
use k8s_openapi::api::apps::v1::{DaemonSetSpec, DaemonSetUpdateStrategy, RollingUpdateDaemonSet};
use k8s_openapi::api::core::v1::Taint;
use k8s_openapi::api::core::v1::{
    Container, ContainerPort, NodeSpec, PreferredSchedulingTerm, ResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

pub(crate) fn labels(l: &[(&str, &str)]) -> BTreeMap<String, String> {
    l.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

pub(crate) const DS_LABEL: &[(&str, &str)] = &[("name", "simple-daemon"), ("type", "production")];
pub(crate) const DS_LABEL2: &[(&str, &str)] = &[("name", "simple-daemon"), ("type", "test")];
pub(crate) const NODE_LABEL: &[(&str, &str)] = &[("color", "blue"), ("speed", "fast")];

/// Upstream `newDaemonSet`: selector and template labels `DS_LABEL`, image foo/bar.
pub(crate) fn new_ds(name: &str) -> DaemonSet {
    DaemonSet {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            uid: Some(format!("uid-{name}")),
            ..Default::default()
        },
        spec: DaemonSetSpec {
            selector: LabelSelector {
                match_labels: Some(labels(DS_LABEL)),
                ..Default::default()
            },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels(DS_LABEL)),
                    ..Default::default()
                }),
                spec: Some(PodSpec {
                    containers: vec![Container {
                        name: "foo".into(),
                        image: Some("foo/bar".into()),
                        ..Default::default()
                    }],
                    ..Default::default()
                }),
            },
            update_strategy: Some(DaemonSetUpdateStrategy {
                type_: Some("OnDelete".into()),
                rolling_update: None,
            }),
            revision_history_limit: Some(2),
            ..Default::default()
        },
        status: None,
    }
}

pub(crate) fn new_node(name: &str, l: &[(&str, &str)]) -> Node {
    Node {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some(labels(l)),
            ..Default::default()
        },
        ..Default::default()
    }
}

pub(crate) fn taint(key: &str, value: &str, effect: &str) -> Taint {
    Taint {
        key: key.into(),
        value: (!value.is_empty()).then(|| value.into()),
        effect: effect.into(),
        time_added: None,
    }
}

pub(crate) fn with_taints(mut n: Node, taints: Vec<Taint>) -> Node {
    n.spec.get_or_insert_with(NodeSpec::default).taints = Some(taints);
    n
}

fn term(
    exprs: Vec<NodeSelectorRequirement>,
    fields: Vec<NodeSelectorRequirement>,
) -> NodeSelectorTerm {
    NodeSelectorTerm {
        match_expressions: (!exprs.is_empty()).then_some(exprs),
        match_fields: (!fields.is_empty()).then_some(fields),
    }
}

fn req(key: &str, op: &str, values: &[&str]) -> NodeSelectorRequirement {
    NodeSelectorRequirement {
        key: key.into(),
        operator: op.into(),
        values: Some(values.iter().map(|v| v.to_string()).collect()),
    }
}

fn required(terms: Vec<NodeSelectorTerm>) -> Affinity {
    Affinity {
        node_affinity: Some(NodeAffinity {
            required_during_scheduling_ignored_during_execution: Some(NodeSelector {
                node_selector_terms: terms,
            }),
            preferred_during_scheduling_ignored_during_execution: None,
        }),
        ..Default::default()
    }
}

fn template_spec(ds: &mut DaemonSet) -> &mut PodSpec {
    ds.spec.template.spec.get_or_insert_with(Default::default)
}

fn requests(mem: &str, cpu: &str) -> ResourceRequirements {
    ResourceRequirements {
        requests: Some(BTreeMap::from([
            ("memory".to_string(), Quantity(mem.into())),
            ("cpu".to_string(), Quantity(cpu.into())),
        ])),
        ..Default::default()
    }
}

// Upstream TestNodeShouldRunDaemonPod (daemon_controller_test.go): the node's
// resources, host ports and spec.unschedulable never matter; nodeName, nodeSelector
// and required node affinity do.
#[test]
fn node_should_run_daemon_pod_table() {
    let node = new_node("test-node", DS_LABEL);
    type Edit = fn(&mut DaemonSet);
    let cases: Vec<(&str, Edit, bool, (bool, bool))> = vec![
        (
            "ShouldRunDaemonPod",
            |d| {
                template_spec(d).containers[0].resources = Some(requests("50M", "0.5"));
            },
            false,
            (true, true),
        ),
        (
            "InsufficientResourceError",
            |d| {
                template_spec(d).containers[0].resources = Some(requests("200M", "0.5"));
            },
            false,
            (true, true),
        ),
        (
            "ErrPodNotMatchHostName",
            |d| {
                template_spec(d).node_name = Some("other-node".into());
            },
            false,
            (false, false),
        ),
        (
            "ErrPodNotFitsHostPorts",
            |d| {
                template_spec(d).containers[0].ports = Some(vec![ContainerPort {
                    host_port: Some(666),
                    container_port: 666,
                    ..Default::default()
                }]);
            },
            false,
            (true, true),
        ),
        (
            "ErrNodeSelectorNotMatch",
            |d| {
                template_spec(d).node_selector = Some(labels(DS_LABEL2));
            },
            false,
            (false, false),
        ),
        (
            "ShouldRunDaemonPod (selector matches)",
            |d| {
                template_spec(d).node_selector = Some(labels(DS_LABEL));
            },
            false,
            (true, true),
        ),
        (
            "ErrPodAffinityNotMatch",
            |d| {
                template_spec(d).affinity = Some(required(vec![term(
                    vec![req("type", "In", &["test"])],
                    vec![],
                )]));
            },
            false,
            (false, false),
        ),
        (
            "ShouldRunDaemonPod (affinity matches)",
            |d| {
                template_spec(d).affinity = Some(required(vec![term(
                    vec![req("type", "In", &["production"])],
                    vec![],
                )]));
            },
            false,
            (true, true),
        ),
        (
            "ShouldRunDaemonPodOnUnschedulableNode",
            |d| {
                template_spec(d).containers[0].resources = Some(requests("50M", "0.5"));
            },
            true,
            (true, true),
        ),
    ];
    for (name, edit, unschedulable, want) in cases {
        let mut ds = new_ds("ds");
        edit(&mut ds);
        let mut n = node.clone();
        if unschedulable {
            n.spec.get_or_insert_with(NodeSpec::default).unschedulable = Some(true);
        }
        assert_eq!(node_should_run_daemon_pod(&n, &ds), want, "{name}");
    }
}

// Rows derived from upstream's taint sync tests (TestTaintedNodeDaemonDoesNotLaunchIntolerantPod,
// TestNoExecuteTaintedDoesEvicitRunningIntolerantPod, TestTaintedNodeDaemonLaunchesToleratePod,
// TestNotReadyNodeDaemonLaunchesPod, TestUnreachableNodeDaemonLaunchesPod,
// TestTaintPressureNodeDaemonLaunchesPod) and from the tolerations the controller adds.
#[test]
fn taints_and_added_tolerations() {
    let plain = new_ds("ds");
    let mut tolerant = new_ds("ds");
    template_spec(&mut tolerant).tolerations = Some(vec![Toleration {
        key: Some("dedicated".into()),
        value: Some("user1".into()),
        effect: Some("NoSchedule".into()),
        ..Default::default()
    }]);
    let mut host_net = new_ds("ds");
    template_spec(&mut host_net).host_network = Some(true);
    let node = |taints: Vec<Taint>| with_taints(new_node("n", &[]), taints);
    let cases: Vec<(&str, Node, &DaemonSet, (bool, bool))> = vec![
        (
            "NoSchedule, intolerant",
            node(vec![taint("dedicated", "user1", "NoSchedule")]),
            &plain,
            (false, true),
        ),
        (
            "NoExecute, intolerant",
            node(vec![taint("dedicated", "user1", "NoExecute")]),
            &plain,
            (false, false),
        ),
        (
            "NoSchedule, tolerated",
            node(vec![taint("dedicated", "user1", "NoSchedule")]),
            &tolerant,
            (true, true),
        ),
        (
            "PreferNoSchedule is ignored",
            node(vec![taint("dedicated", "user1", "PreferNoSchedule")]),
            &plain,
            (true, true),
        ),
        (
            "not ready",
            node(vec![taint(TAINT_NODE_NOT_READY, "", "NoExecute")]),
            &plain,
            (true, true),
        ),
        (
            "unreachable",
            node(vec![taint(TAINT_NODE_UNREACHABLE, "", "NoExecute")]),
            &plain,
            (true, true),
        ),
        (
            "pressure",
            node(vec![
                taint(TAINT_NODE_DISK_PRESSURE, "", "NoSchedule"),
                taint(TAINT_NODE_MEMORY_PRESSURE, "", "NoSchedule"),
                taint(TAINT_NODE_PID_PRESSURE, "", "NoSchedule"),
            ]),
            &plain,
            (true, true),
        ),
        (
            "cordoned",
            node(vec![taint(TAINT_NODE_UNSCHEDULABLE, "", "NoSchedule")]),
            &plain,
            (true, true),
        ),
        (
            "network unavailable",
            node(vec![taint(
                TAINT_NODE_NETWORK_UNAVAILABLE,
                "",
                "NoSchedule",
            )]),
            &plain,
            (false, true),
        ),
        (
            "network unavailable, host network",
            node(vec![taint(
                TAINT_NODE_NETWORK_UNAVAILABLE,
                "",
                "NoSchedule",
            )]),
            &host_net,
            (true, true),
        ),
    ];
    for (name, n, ds, want) in cases {
        assert_eq!(node_should_run_daemon_pod(&n, ds), want, "{name}");
    }
    // TestNodeAffinityDaemonLaunchesPods / TestNameDaemonSetLaunchesPods
    let mut by_affinity = new_ds("ds");
    template_spec(&mut by_affinity).affinity = Some(required(vec![term(
        vec![req("color", "In", &["blue"])],
        vec![],
    )]));
    assert_eq!(
        node_should_run_daemon_pod(&new_node("a", NODE_LABEL), &by_affinity),
        (true, true)
    );
    assert_eq!(
        node_should_run_daemon_pod(&new_node("b", &[]), &by_affinity),
        (false, false)
    );
    let mut by_name = new_ds("ds");
    template_spec(&mut by_name).node_name = Some("node-0".into());
    assert_eq!(
        node_should_run_daemon_pod(&new_node("node-0", &[]), &by_name),
        (true, true)
    );
    assert_eq!(
        node_should_run_daemon_pod(&new_node("node-10", &[]), &by_name),
        (false, false)
    );
}

#[test]
fn daemon_tolerations_are_added_in_order_and_replace_matching_ones() {
    let mut spec = PodSpec {
        tolerations: Some(vec![Toleration {
            key: Some(TAINT_NODE_NOT_READY.into()),
            operator: Some("Exists".into()),
            effect: Some("NoExecute".into()),
            toleration_seconds: Some(300),
            ..Default::default()
        }]),
        ..Default::default()
    };
    add_or_update_daemon_pod_tolerations(&mut spec);
    let t = spec.tolerations.as_ref().unwrap();
    let keys: Vec<&str> = t.iter().map(|t| t.key.as_deref().unwrap()).collect();
    assert_eq!(
        keys,
        [
            TAINT_NODE_NOT_READY,
            TAINT_NODE_UNREACHABLE,
            TAINT_NODE_DISK_PRESSURE,
            TAINT_NODE_MEMORY_PRESSURE,
            TAINT_NODE_PID_PRESSURE,
            TAINT_NODE_UNSCHEDULABLE
        ]
    );
    // the user's 300 s became infinite
    assert_eq!(t[0].toleration_seconds, None);
    // idempotent
    let before = spec.clone();
    add_or_update_daemon_pod_tolerations(&mut spec);
    assert_eq!(spec, before);
    spec.host_network = Some(true);
    add_or_update_daemon_pod_tolerations(&mut spec);
    assert_eq!(
        spec.tolerations
            .as_ref()
            .unwrap()
            .last()
            .unwrap()
            .key
            .as_deref(),
        Some(TAINT_NODE_NETWORK_UNAVAILABLE)
    );
}

fn pod_with_labels(l: Option<&[(&str, &str)]>) -> Pod {
    let mut p = Pod::default();
    p.metadata.labels = l.map(labels);
    p
}

// Upstream TestIsPodUpdated (util/daemonset_util_test.go).
#[test]
fn is_pod_updated_table() {
    let (gen, bad) = (12345i64, 12350i64);
    let full: &[(&str, &str)] = &[
        (TEMPLATE_GENERATION_LABEL, "12345"),
        (CONTROLLER_REVISION_HASH_LABEL, "55555"),
    ];
    let no_hash: &[(&str, &str)] = &[(TEMPLATE_GENERATION_LABEL, "12345")];
    type Case<'a> = (i64, Option<&'a [(&'a str, &'a str)]>, &'a str, bool);
    let cases: Vec<Case> = vec![
        (gen, Some(full), "55555", true),
        (gen, Some(full), "55555123", true),
        (gen, Some(no_hash), "55555", true),
        (gen, Some(no_hash), "", true),
        (gen, Some(full), "", true),
        (bad, Some(full), "55555", true),
        (bad, Some(full), "55555123", false),
        (gen, Some(&[]), "", false),
        (gen, Some(&[]), "55555", false),
        (gen, None, "55555", false),
    ];
    for (i, (g, l, hash, want)) in cases.into_iter().enumerate() {
        assert_eq!(
            is_pod_updated(&pod_with_labels(l), hash, Some(g)),
            want,
            "case {i}"
        );
    }
}

// Upstream TestCreatePodTemplate.
#[test]
fn create_pod_template_table() {
    for (gen, hash, want_hash) in [(1, "", None), (2, "3242341807", Some("3242341807"))] {
        let t = create_pod_template(&PodTemplateSpec::default(), Some(gen), hash);
        let l = t.metadata.unwrap().labels.unwrap();
        assert_eq!(l.get(TEMPLATE_GENERATION_LABEL), Some(&gen.to_string()));
        assert_eq!(
            l.get(CONTROLLER_REVISION_HASH_LABEL).map(String::as_str),
            want_hash
        );
        assert!(t.spec.unwrap().tolerations.is_some_and(|t| t.len() == 6));
    }
}

// Upstream TestReplaceDaemonSetPodNodeNameNodeAffinity.
#[test]
fn replace_node_name_affinity_table() {
    let want = required(vec![term(
        vec![],
        vec![req("metadata.name", "In", &["host_1"])],
    )]);
    let hostname = |v: &str| req("kubernetes.io/hostname", "In", &[v]);
    let preferred = vec![PreferredSchedulingTerm {
        weight: 100,
        preference: term(vec![hostname("host_1")], vec![]),
    }];
    let with_preferred = Affinity {
        node_affinity: Some(NodeAffinity {
            preferred_during_scheduling_ignored_during_execution: Some(preferred.clone()),
            required_during_scheduling_ignored_during_execution: None,
        }),
        ..Default::default()
    };
    let mut want_preferred = want.clone();
    want_preferred
        .node_affinity
        .as_mut()
        .unwrap()
        .preferred_during_scheduling_ignored_during_execution = Some(preferred);
    let cases: Vec<(Option<Affinity>, Affinity)> = vec![
        (None, want.clone()),
        (
            Some(required(vec![term(vec![hostname("host_1")], vec![])])),
            want.clone(),
        ),
        (Some(with_preferred), want_preferred),
        (
            Some(required(vec![term(
                vec![],
                vec![req("metadata.name", "In", &["host_1", "host_2"])],
            )])),
            want.clone(),
        ),
        (
            Some(required(vec![
                term(vec![hostname("host_1")], vec![]),
                term(vec![], vec![req("metadata.name", "In", &["host_2"])]),
            ])),
            want.clone(),
        ),
        (
            Some(required(vec![term(
                vec![],
                vec![req("metadata.name", "NotIn", &["host_2"])],
            )])),
            want.clone(),
        ),
        (
            Some(required(vec![term(
                vec![],
                vec![req("metadata.foo", "In", &["bar"])],
            )])),
            want.clone(),
        ),
        (Some(Affinity::default()), want.clone()),
    ];
    for (i, (input, want)) in cases.into_iter().enumerate() {
        assert_eq!(
            replace_node_name_affinity(input, "host_1"),
            want,
            "case {i}"
        );
    }
}

// Upstream TestGetTargetNodeName.
#[test]
fn get_target_node_name_table() {
    let bound = Pod {
        spec: Some(PodSpec {
            node_name: Some("node-1".into()),
            ..Default::default()
        }),
        ..Default::default()
    };
    let pinned = |values: &[&str]| Pod {
        metadata: ObjectMeta {
            name: Some("p".into()),
            namespace: Some("default".into()),
            ..Default::default()
        },
        spec: Some(PodSpec {
            affinity: Some(required(vec![term(
                vec![],
                vec![req("metadata.name", "In", values)],
            )])),
            ..Default::default()
        }),
        status: None,
    };
    assert_eq!(get_target_node_name(&bound), Ok("node-1".into()));
    assert_eq!(
        get_target_node_name(&pinned(&["node-1"])),
        Ok("node-1".into())
    );
    assert_eq!(
        get_target_node_name(&pinned(&["node-1", "node-2"])),
        Err("the matchFields value of 'metadata.name' is not unique for pod default/p".into())
    );
    let empty = Pod {
        spec: Some(PodSpec::default()),
        ..Default::default()
    };
    assert!(get_target_node_name(&empty).is_err());
}

fn with_strategy(
    type_: &str,
    surge: Option<IntOrString>,
    unavailable: Option<IntOrString>,
) -> DaemonSet {
    let mut ds = new_ds("ds");
    ds.spec.update_strategy = Some(DaemonSetUpdateStrategy {
        type_: Some(type_.into()),
        rolling_update: (type_ == "RollingUpdate").then_some(RollingUpdateDaemonSet {
            max_surge: surge,
            max_unavailable: unavailable,
        }),
    });
    ds
}

// Derived rows for SurgeCount / UnavailableCount / AllowsSurge / GetTemplateGeneration.
#[test]
fn surge_and_unavailable_counts() {
    let pct = |s: &str| Some(IntOrString::String(s.into()));
    let on_delete = with_strategy("OnDelete", None, None);
    assert_eq!(
        (surge_count(&on_delete, 5), unavailable_count(&on_delete, 5)),
        (Ok(0), Ok(0))
    );
    let mut nil_ru = with_strategy("RollingUpdate", None, None);
    nil_ru.spec.update_strategy.as_mut().unwrap().rolling_update = None;
    assert_eq!(
        (surge_count(&nil_ru, 5), unavailable_count(&nil_ru, 5)),
        (Ok(0), Ok(0))
    );
    assert_eq!(
        surge_count(&with_strategy("RollingUpdate", None, None), 5),
        Ok(0)
    );
    assert_eq!(
        surge_count(
            &with_strategy("RollingUpdate", Some(IntOrString::Int(2)), None),
            5
        ),
        Ok(2)
    );
    assert_eq!(
        unavailable_count(&with_strategy("RollingUpdate", None, pct("10%")), 500),
        Ok(50)
    );
    let ten = with_strategy("RollingUpdate", pct("10%"), None);
    assert_eq!(surge_count(&ten, 1), Ok(1));
    assert!(allows_surge(&ten));
    let zero = with_strategy("RollingUpdate", pct("0%"), None);
    assert_eq!(surge_count(&zero, 7), Ok(0));
    assert!(!allows_surge(&zero));
    assert_eq!(
        surge_count(&with_strategy("RollingUpdate", pct("50%"), None), 3),
        Ok(2)
    );
    assert!(surge_count(&with_strategy("RollingUpdate", pct("abc"), None), 3).is_err());
    assert!(!allows_surge(&with_strategy(
        "RollingUpdate",
        pct("abc"),
        None
    )));

    let mut ds = new_ds("ds");
    assert_eq!(template_generation(&ds), Ok(None));
    ds.metadata.annotations = Some(labels(&[(DEPRECATED_TEMPLATE_GENERATION, "7")]));
    assert_eq!(template_generation(&ds), Ok(Some(7)));
    ds.metadata.annotations = Some(labels(&[(DEPRECATED_TEMPLATE_GENERATION, "x")]));
    assert!(template_generation(&ds).is_err());
}

// Upstream TestShouldIgnoreNodeUpdate.
#[test]
fn should_ignore_node_update_table() {
    let plain = new_node("node1", &[]);
    assert!(should_ignore_node_update(&plain, &plain.clone()));
    assert!(!should_ignore_node_update(
        &plain,
        &new_node("node1", NODE_LABEL)
    ));
    let tainted = with_taints(
        new_node("node1", &[]),
        vec![taint("dedicated", "user1", "NoSchedule")],
    );
    assert!(!should_ignore_node_update(&tainted, &plain));
    // status and unschedulable changes are ignored
    let mut cordoned = plain.clone();
    cordoned
        .spec
        .get_or_insert_with(NodeSpec::default)
        .unschedulable = Some(true);
    assert!(should_ignore_node_update(&plain, &cordoned));
}

#[test]
fn affinity_operators_and_bad_terms() {
    let node = new_node("n1", &[("zone", "a"), ("n", "5")]);
    let spec = |terms: Vec<NodeSelectorTerm>| PodSpec {
        affinity: Some(required(terms)),
        ..Default::default()
    };
    assert!(matches_node_affinity(
        &spec(vec![term(vec![req("n", "Gt", &["4"])], vec![])]),
        &node
    ));
    assert!(!matches_node_affinity(
        &spec(vec![term(vec![req("n", "Lt", &["4"])], vec![])]),
        &node
    ));
    assert!(matches_node_affinity(
        &spec(vec![term(vec![req("zone", "NotIn", &["b"])], vec![])]),
        &node
    ));
    assert!(matches_node_affinity(
        &spec(vec![term(
            vec![],
            vec![req("metadata.name", "In", &["n1"])]
        )]),
        &node
    ));
    assert!(!matches_node_affinity(
        &spec(vec![term(
            vec![],
            vec![req("metadata.name", "In", &["n1", "n2"])]
        )]),
        &node
    ));
    // an empty term matches nothing; a bad term does not spoil a good one
    assert!(!matches_node_affinity(
        &spec(vec![term(vec![], vec![])]),
        &node
    ));
    assert!(matches_node_affinity(
        &spec(vec![
            term(vec![req("zone", "Exists", &["x"])], vec![]),
            term(vec![req("zone", "In", &["a"])], vec![]),
        ]),
        &node
    ));
}
