//! The scheduler's filters and score, as pure functions over a [`NodeView`].
//!
//! They follow the default kube-scheduler profile, in its order, and stop at the first
//! failing filter of a node as the framework does: `NodeUnschedulable`,
//! `TaintToleration`, `NodeAffinity` (nodeSelector and required node affinity),
//! `NodePorts` and `NodeResourcesFit`. The failure reasons are upstream's strings, so that
//! "0/3 nodes are available: 3 Insufficient cpu." reads as it does on a real cluster.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Node, NodeSelectorRequirement, NodeSelectorTerm, PodSpec, Taint, Toleration,
};

use crate::resources::{PodRequests, Resources};
use apimachinery::quantity::parse_milli;

/// Reason of `NodeUnschedulable`.
pub const REASON_UNSCHEDULABLE: &str = "node(s) were unschedulable";
/// Reason of `NodeAffinity`.
pub const REASON_AFFINITY: &str = "node(s) didn't match Pod's node affinity/selector";
/// Reason of `NodePorts`.
pub const REASON_PORTS: &str = "node(s) didn't have free ports for the requested pod ports";
/// Reason of `NodeResourcesFit` for the pod count.
pub const REASON_TOO_MANY_PODS: &str = "Too many pods";

/// What the scheduler knows of a node: parsed once per node change.
#[derive(Clone, Debug, Default)]
pub struct NodeView {
    /// The node's name.
    pub name: String,
    /// Its labels.
    pub labels: BTreeMap<String, String>,
    /// Its taints.
    pub taints: Vec<Taint>,
    /// `spec.unschedulable` (cordoned).
    pub unschedulable: bool,
    /// `status.allocatable` in milli-units.
    pub allocatable: Resources,
}

impl NodeView {
    /// The view of `node`.
    pub fn of(node: &Node) -> NodeView {
        let spec = node.spec.as_ref();
        NodeView {
            name: node.metadata.name.clone().unwrap_or_default(),
            labels: node.metadata.labels.clone().unwrap_or_default(),
            taints: spec.and_then(|s| s.taints.clone()).unwrap_or_default(),
            unschedulable: spec.and_then(|s| s.unschedulable).unwrap_or(false),
            allocatable: Resources::from_list(
                node.status.as_ref().and_then(|s| s.allocatable.as_ref()),
            ),
        }
    }

    /// Whether a change from `self` to `new` may let a waiting pod fit (the scheduler's
    /// "node update" queueing hint).
    pub fn may_admit_more_than(&self, old: &NodeView) -> bool {
        self.labels != old.labels
            || self.taints != old.taints
            || self.unschedulable != old.unschedulable
            || self.allocatable != old.allocatable
    }
}

/// What a node has given to the pods bound to it.
#[derive(Clone, Debug, Default)]
pub struct Usage {
    /// Sum of the bound pods' requests.
    pub requested: Resources,
    /// Sum of their scoring cpu.
    pub nonzero_cpu: i128,
    /// Sum of their scoring memory.
    pub nonzero_memory: i128,
    /// Number of pods.
    pub pods: i128,
    /// Host ports in use: (protocol, host IP, port).
    pub host_ports: Vec<(String, String, i32)>,
}

impl Usage {
    /// Count `r` in (`sign` 1) or out (`sign` -1).
    pub fn apply(&mut self, r: &PodRequests, sign: i128) {
        if sign > 0 {
            self.requested.add(&r.requests);
        } else {
            self.requested.sub(&r.requests);
        }
        self.nonzero_cpu += sign * r.nonzero_cpu;
        self.nonzero_memory += sign * r.nonzero_memory;
        self.pods += sign;
        for p in &r.host_ports {
            if sign > 0 {
                self.host_ports.push(p.clone());
            } else if let Some(i) = self.host_ports.iter().position(|q| q == p) {
                self.host_ports.swap_remove(i);
            }
        }
    }
}

/// `NodePorts`: whether a wanted host port clashes with one in use (same protocol and
/// port, and the same address or either bound to all addresses).
pub fn ports_conflict(wanted: &[(String, String, i32)], used: &[(String, String, i32)]) -> bool {
    const ALL: &str = "0.0.0.0";
    wanted.iter().any(|(proto, ip, port)| {
        used.iter()
            .any(|(p, i, n)| p == proto && n == port && (ip == ALL || i == ALL || i == ip))
    })
}

/// Upstream `ToleratesTaint`.
pub use apimachinery::taints::tolerates;

/// The first NoSchedule/NoExecute taint of `taints` that `tolerations` do not tolerate.
pub fn untolerated<'a>(taints: &'a [Taint], tolerations: &[Toleration]) -> Option<&'a Taint> {
    taints
        .iter()
        .filter(|t| t.effect == "NoSchedule" || t.effect == "NoExecute")
        .find(|taint| !tolerations.iter().any(|tol| tolerates(tol, taint)))
}

fn requirement_matches(r: &NodeSelectorRequirement, value: Option<&str>) -> bool {
    let values = r.values.as_deref().unwrap_or(&[]);
    match r.operator.as_str() {
        "In" => value.is_some_and(|v| values.iter().any(|x| x == v)),
        "NotIn" => value.is_none_or(|v| !values.iter().any(|x| x == v)),
        "Exists" => value.is_some(),
        "DoesNotExist" => value.is_none(),
        "Gt" | "Lt" => {
            let (Some(v), [bound]) = (value, values) else {
                return false;
            };
            match (v.parse::<i64>(), bound.parse::<i64>()) {
                (Ok(v), Ok(b)) if r.operator == "Gt" => v > b,
                (Ok(v), Ok(b)) => v < b,
                _ => false,
            }
        }
        _ => false,
    }
}

/// Whether `spec`'s nodeSelector and required node affinity admit `node`.
pub fn matches_affinity(spec: &PodSpec, node: &NodeView) -> bool {
    for (k, v) in spec.node_selector.iter().flatten() {
        if node.labels.get(k) != Some(v) {
            return false;
        }
    }
    let required = spec
        .affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|na| {
            na.required_during_scheduling_ignored_during_execution
                .as_ref()
        });
    let Some(required) = required else {
        return true;
    };
    // terms are ORed
    required
        .node_selector_terms
        .iter()
        .any(|term| term_matches(term, node))
}

/// Whether a required node selector (its terms ORed) admits `node`.
pub fn node_selector_matches(
    sel: &k8s_openapi::api::core::v1::NodeSelector,
    node: &NodeView,
) -> bool {
    sel.node_selector_terms
        .iter()
        .any(|t| term_matches(t, node))
}

/// Whether a node selector term admits `node` (its expressions and fields ANDed; an
/// empty term matches nothing).
fn term_matches(term: &NodeSelectorTerm, node: &NodeView) -> bool {
    let exprs = term.match_expressions.as_deref().unwrap_or(&[]);
    let fields = term.match_fields.as_deref().unwrap_or(&[]);
    if exprs.is_empty() && fields.is_empty() {
        return false;
    }
    exprs
        .iter()
        .all(|e| requirement_matches(e, node.labels.get(&e.key).map(String::as_str)))
        && fields
            .iter()
            .all(|f| f.key == "metadata.name" && requirement_matches(f, Some(node.name.as_str())))
}

/// `NodeResourcesFit`: the reasons `pod` does not fit on a node with `usage`.
pub fn insufficient(pod: &PodRequests, node: &NodeView, usage: &Usage) -> Vec<String> {
    let mut reasons = Vec::new();
    let allowed_pods = node.allocatable.get("pods") / 1000;
    if usage.pods + 1 > allowed_pods {
        reasons.push(REASON_TOO_MANY_PODS.to_string());
    }
    for (name, want) in &pod.requests.0 {
        if *want <= 0 || name == "pods" {
            continue;
        }
        let free = node.allocatable.get(name) - usage.requested.get(name);
        if *want > free {
            reasons.push(format!("Insufficient {name}"));
        }
    }
    reasons
}

/// Run the filters in the default profile's order; `Err` holds the first failing
/// filter's reasons.
pub fn filter(
    spec: &PodSpec,
    req: &PodRequests,
    node: &NodeView,
    usage: &Usage,
) -> Result<(), Vec<String>> {
    let tolerations = spec.tolerations.as_deref().unwrap_or(&[]);
    if node.unschedulable {
        let cordon = Taint {
            key: "node.kubernetes.io/unschedulable".into(),
            effect: "NoSchedule".into(),
            ..Default::default()
        };
        if !tolerations.iter().any(|t| tolerates(t, &cordon)) {
            return Err(vec![REASON_UNSCHEDULABLE.to_string()]);
        }
    }
    if let Some(t) = untolerated(&node.taints, tolerations) {
        return Err(vec![format!(
            "node(s) had untolerated taint {{{}: {}}}",
            t.key,
            t.value.as_deref().unwrap_or("")
        )]);
    }
    if !matches_affinity(spec, node) {
        return Err(vec![REASON_AFFINITY.to_string()]);
    }
    if ports_conflict(&req.host_ports, &usage.host_ports) {
        return Err(vec![REASON_PORTS.to_string()]);
    }
    let short = insufficient(req, node, usage);
    if short.is_empty() {
        Ok(())
    } else {
        Err(short)
    }
}

/// `NodeResourcesFit`'s `LeastAllocated` score with cpu and memory weighted 1: 0 to
/// 100, higher for emptier nodes, counting `req` as placed, with the non-zero requests
/// (100m cpu and 200Mi memory for containers that ask for none). A resource the node
/// has none of is left out of the average, as upstream.
pub fn least_allocated_score(req: &PodRequests, node: &NodeView, usage: &Usage) -> i64 {
    let mut total = 0i128;
    let mut weights = 0i128;
    for (alloc, requested) in [
        (
            node.allocatable.get("cpu"),
            usage.nonzero_cpu + req.nonzero_cpu,
        ),
        (
            node.allocatable.get("memory"),
            usage.nonzero_memory + req.nonzero_memory,
        ),
    ] {
        if alloc <= 0 {
            continue;
        }
        total += if requested > alloc {
            0
        } else {
            (alloc - requested) * 100 / alloc
        };
        weights += 1;
    }
    if weights == 0 {
        return 0;
    }
    i64::try_from(total / weights).unwrap_or(0)
}

/// Whether `req` asks for no cpu and no memory (`NodeResourcesBalancedAllocation`
/// skips such best-effort pods).
pub fn is_best_effort(req: &PodRequests) -> bool {
    req.requests.get("cpu") == 0 && req.requests.get("memory") == 0
}

/// Upstream `balancedResourceScorer`'s balance: `(1 − std) · 100` of the cpu and memory
/// fractions `requested / allocatable` (capped at 1), resources the node lacks left out.
fn balance(requested: [i128; 2], allocatable: [i128; 2]) -> i64 {
    let fractions: Vec<f64> = requested
        .iter()
        .zip(allocatable)
        .filter(|(_, a)| *a != 0)
        .map(|(r, a)| (*r as f64 / a as f64).min(1.0))
        .collect();
    let std = match fractions.as_slice() {
        [a, b] => ((a - b) / 2.0).abs(),
        _ => 0.0,
    };
    ((1.0 - std) * 100.0) as i64
}

/// `NodeResourcesBalancedAllocation` (1.36): how placing `req` changes the balance of
/// the node's cpu and memory requests (plain requests, no non-zero defaults), mapped to
/// 50 (balanced to fully unbalanced) .. 75 (unchanged) .. 100 (the reverse). Not for
/// best-effort pods ([`is_best_effort`]).
pub fn balanced_allocation_score(req: &PodRequests, node: &NodeView, usage: &Usage) -> i64 {
    let alloc = [node.allocatable.get("cpu"), node.allocatable.get("memory")];
    let before = [usage.requested.get("cpu"), usage.requested.get("memory")];
    let after = [
        before[0] + req.requests.get("cpu"),
        before[1] + req.requests.get("memory"),
    ];
    let with_pod = balance(after, alloc);
    let without_pod = balance(before, alloc);
    50 + (50 + with_pod - without_pod) / 2
}

/// `TaintToleration`'s score input: the node's `PreferNoSchedule` taints that none of
/// the pod's tolerations with effect `PreferNoSchedule` (or no effect) tolerates.
pub fn intolerable_prefer_no_schedule(taints: &[Taint], tolerations: &[Toleration]) -> i64 {
    let soft = |t: &&Toleration| {
        matches!(
            t.effect.as_deref(),
            None | Some("") | Some("PreferNoSchedule")
        )
    };
    taints
        .iter()
        .filter(|t| t.effect == "PreferNoSchedule")
        .filter(|taint| {
            !tolerations
                .iter()
                .filter(soft)
                .any(|tol| tolerates(tol, taint))
        })
        .count() as i64
}

/// Whether the pod has preferred node affinity terms (else `NodeAffinity` scoring is
/// skipped).
pub fn has_preferred_affinity(spec: &PodSpec) -> bool {
    spec.affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|na| {
            na.preferred_during_scheduling_ignored_during_execution
                .as_ref()
        })
        .is_some()
}

/// `NodeAffinity`'s score input: the summed weights of the preferred terms `node`
/// matches.
pub fn preferred_affinity_sum(spec: &PodSpec, node: &NodeView) -> i64 {
    spec.affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|na| {
            na.preferred_during_scheduling_ignored_during_execution
                .as_ref()
        })
        .into_iter()
        .flatten()
        .filter(|t| t.weight != 0 && term_matches(&t.preference, node))
        .map(|t| i64::from(t.weight))
        .sum()
}

/// Upstream `helper.DefaultNormalizeScore`: scale to 0..100 by the maximum (reversed:
/// `100 − score`); with a maximum of 0 all become 0 (reversed: 100).
pub fn default_normalize(scores: &mut [i64], reverse: bool) {
    let max = scores.iter().copied().max().unwrap_or(0);
    for s in scores.iter_mut() {
        if max == 0 {
            *s = if reverse { 100 } else { *s };
            continue;
        }
        let v = 100 * *s / max;
        *s = if reverse { 100 - v } else { v };
    }
}

/// The message of a PreFilter rejection: `0/N nodes are available: <reason>.`
pub fn prefilter_error_message(nodes: usize, reason: &str) -> String {
    format!("0/{nodes} nodes are available: {reason}.")
}

/// Upstream's `FitError` message: `0/N nodes are available: <count> <reason>, ....`
/// with the reasons sorted.
pub fn fit_error_message(nodes: usize, reasons: &BTreeMap<String, usize>) -> String {
    let mut parts: Vec<String> = reasons.iter().map(|(r, n)| format!("{n} {r}")).collect();
    parts.sort();
    format!("0/{nodes} nodes are available: {}.", parts.join(", "))
}

/// How many feasible nodes to look for before scoring (upstream
/// `numFeasibleNodesToFind` with the adaptive percentage when `percentage` is 0).
pub fn feasible_nodes_to_find(all: usize, percentage: u32) -> usize {
    const MIN_FEASIBLE: usize = 100;
    if all < MIN_FEASIBLE || percentage >= 100 {
        return all;
    }
    let pct = if percentage == 0 {
        (50 - (all / 125) as i64).max(5) as usize
    } else {
        percentage as usize
    };
    (all * pct / 100).max(MIN_FEASIBLE)
}

/// Whether a quantity string parses (for validating configuration).
pub(crate) fn valid_quantity(s: &str) -> bool {
    parse_milli(s).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{Affinity, NodeAffinity, NodeSelector, NodeSelectorTerm};

    fn node(labels: &[(&str, &str)]) -> NodeView {
        NodeView {
            name: "n1".into(),
            labels: labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            allocatable: Resources(BTreeMap::from([
                ("cpu".to_string(), 4000),
                ("memory".to_string(), 8 * (1i128 << 30) * 1000),
                ("pods".to_string(), 110_000),
            ])),
            ..Default::default()
        }
    }

    fn req(key: &str, op: &str, values: &[&str]) -> NodeSelectorRequirement {
        NodeSelectorRequirement {
            key: key.into(),
            operator: op.into(),
            values: Some(values.iter().map(|s| s.to_string()).collect()),
        }
    }

    fn with_terms(terms: Vec<NodeSelectorTerm>) -> PodSpec {
        PodSpec {
            affinity: Some(Affinity {
                node_affinity: Some(NodeAffinity {
                    required_during_scheduling_ignored_during_execution: Some(NodeSelector {
                        node_selector_terms: terms,
                    }),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn exprs(e: Vec<NodeSelectorRequirement>) -> NodeSelectorTerm {
        NodeSelectorTerm {
            match_expressions: Some(e),
            ..Default::default()
        }
    }

    #[test]
    fn node_affinity_operators() {
        let n = node(&[("zone", "a"), ("gen", "5")]);
        let cases: Vec<(NodeSelectorRequirement, bool)> = vec![
            (req("zone", "In", &["a", "b"]), true),
            (req("zone", "In", &["b"]), false),
            (req("zone", "NotIn", &["b"]), true),
            (req("missing", "NotIn", &["b"]), true),
            (req("zone", "Exists", &[]), true),
            (req("zone", "DoesNotExist", &[]), false),
            (req("missing", "DoesNotExist", &[]), true),
            (req("gen", "Gt", &["4"]), true),
            (req("gen", "Gt", &["5"]), false),
            (req("gen", "Lt", &["6"]), true),
            (req("gen", "Lt", &["x"]), false),
            (req("zone", "Gt", &["1"]), false),
            (req("zone", "Bogus", &["a"]), false),
        ];
        for (r, want) in cases {
            let spec = with_terms(vec![exprs(vec![r.clone()])]);
            assert_eq!(matches_affinity(&spec, &n), want, "{r:?}");
        }
        // terms are ORed, expressions ANDed, an empty term matches nothing
        let spec = with_terms(vec![
            exprs(vec![req("zone", "In", &["b"])]),
            exprs(vec![req("zone", "In", &["a"]), req("gen", "Gt", &["1"])]),
        ]);
        assert!(matches_affinity(&spec, &n));
        assert!(!matches_affinity(
            &with_terms(vec![NodeSelectorTerm::default()]),
            &n
        ));
        assert!(!matches_affinity(&with_terms(vec![]), &n));
        // matchFields on metadata.name
        let by_name = |v: &str| {
            with_terms(vec![NodeSelectorTerm {
                match_fields: Some(vec![req("metadata.name", "In", &[v])]),
                ..Default::default()
            }])
        };
        assert!(matches_affinity(&by_name("n1"), &n));
        assert!(!matches_affinity(&by_name("n2"), &n));
    }

    #[test]
    fn node_selector_must_match_every_label() {
        let n = node(&[("disk", "ssd"), ("zone", "a")]);
        let mut spec = PodSpec {
            node_selector: Some(BTreeMap::from([("disk".to_string(), "ssd".to_string())])),
            ..Default::default()
        };
        assert!(matches_affinity(&spec, &n));
        spec.node_selector
            .as_mut()
            .map(|m| m.insert("zone".into(), "b".into()));
        assert!(!matches_affinity(&spec, &n));
    }

    fn taint(key: &str, value: Option<&str>, effect: &str) -> Taint {
        Taint {
            key: key.into(),
            value: value.map(str::to_string),
            effect: effect.into(),
            time_added: None,
        }
    }

    fn tol(
        key: Option<&str>,
        op: Option<&str>,
        value: Option<&str>,
        effect: Option<&str>,
    ) -> Toleration {
        Toleration {
            key: key.map(str::to_string),
            operator: op.map(str::to_string),
            value: value.map(str::to_string),
            effect: effect.map(str::to_string),
            toleration_seconds: None,
        }
    }

    #[test]
    fn tolerations_follow_upstream() {
        let t = taint("dedicated", Some("gpu"), "NoSchedule");
        assert!(tolerates(
            &tol(Some("dedicated"), Some("Equal"), Some("gpu"), None),
            &t
        ));
        assert!(tolerates(
            &tol(Some("dedicated"), None, Some("gpu"), Some("NoSchedule")),
            &t
        ));
        assert!(!tolerates(
            &tol(Some("dedicated"), None, Some("cpu"), None),
            &t
        ));
        assert!(tolerates(
            &tol(Some("dedicated"), Some("Exists"), None, None),
            &t
        ));
        assert!(!tolerates(
            &tol(Some("dedicated"), Some("Exists"), None, Some("NoExecute")),
            &t
        ));
        assert!(tolerates(&tol(None, Some("Exists"), None, None), &t));
        assert!(!tolerates(&tol(None, Some("Equal"), None, None), &t));
        assert!(!tolerates(
            &tol(Some("other"), Some("Exists"), None, None),
            &t
        ));
        // PreferNoSchedule never blocks
        let soft = [taint("x", None, "PreferNoSchedule")];
        assert!(untolerated(&soft, &[]).is_none());
        let hard = [taint("x", None, "NoExecute")];
        assert_eq!(untolerated(&hard, &[]).map(|t| t.key.as_str()), Some("x"));
    }

    #[test]
    fn filters_report_upstream_reasons_in_profile_order() {
        let mut n = node(&[]);
        n.taints = vec![taint("k", Some("v"), "NoSchedule")];
        n.unschedulable = true;
        let spec = PodSpec::default();
        let r = PodRequests::default();
        let u = Usage::default();
        assert_eq!(
            filter(&spec, &r, &n, &u),
            Err(vec![REASON_UNSCHEDULABLE.to_string()])
        );
        n.unschedulable = false;
        assert_eq!(
            filter(&spec, &r, &n, &u),
            Err(vec!["node(s) had untolerated taint {k: v}".to_string()])
        );
        n.taints.clear();
        let big = PodRequests {
            requests: Resources(BTreeMap::from([
                ("cpu".to_string(), 5000),
                ("memory".to_string(), 9 * (1i128 << 30) * 1000),
                ("example.com/gpu".to_string(), 1000),
            ])),
            ..Default::default()
        };
        let full = Usage {
            pods: 110,
            ..Default::default()
        };
        assert_eq!(
            filter(&spec, &big, &n, &full),
            Err(vec![
                "Too many pods".to_string(),
                "Insufficient cpu".to_string(),
                "Insufficient example.com/gpu".to_string(),
                "Insufficient memory".to_string(),
            ])
        );
        assert_eq!(filter(&spec, &r, &n, &u), Ok(()));
    }

    #[test]
    fn prefilter_messages_name_the_node_count() {
        assert_eq!(
            prefilter_error_message(3, "pod has unbound immediate PersistentVolumeClaims"),
            "0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims."
        );
    }

    #[test]
    fn host_ports_clash_like_upstream() {
        let p = |proto: &str, ip: &str, port: i32| (proto.to_string(), ip.to_string(), port);
        let used = [p("TCP", "0.0.0.0", 80), p("UDP", "10.0.0.1", 53)];
        assert!(ports_conflict(&[p("TCP", "0.0.0.0", 80)], &used));
        assert!(ports_conflict(&[p("TCP", "10.0.0.9", 80)], &used));
        assert!(!ports_conflict(&[p("UDP", "0.0.0.0", 80)], &used));
        assert!(ports_conflict(&[p("UDP", "0.0.0.0", 53)], &used));
        assert!(ports_conflict(&[p("UDP", "10.0.0.1", 53)], &used));
        assert!(!ports_conflict(&[p("UDP", "10.0.0.2", 53)], &used));
        let mut u = Usage::default();
        let r = PodRequests {
            host_ports: vec![p("TCP", "0.0.0.0", 8080)],
            ..Default::default()
        };
        u.apply(&r, 1);
        assert!(ports_conflict(&r.host_ports, &u.host_ports));
        u.apply(&r, -1);
        assert!(u.host_ports.is_empty());
    }

    #[test]
    fn least_allocated_prefers_emptier_nodes() {
        let n = node(&[]);
        let pod = PodRequests {
            nonzero_cpu: 1000,
            nonzero_memory: 0,
            ..Default::default()
        };
        let empty = Usage::default();
        let busy = Usage {
            nonzero_cpu: 2000,
            ..Default::default()
        };
        // cpu (4-1)/4 = 75, memory 100 -> 87; busy: cpu 25, memory 100 -> 62
        assert_eq!(least_allocated_score(&pod, &n, &empty), 87);
        assert_eq!(least_allocated_score(&pod, &n, &busy), 62);
    }

    #[test]
    fn least_allocated_leaves_out_resources_the_node_lacks() {
        let mut n = node(&[]);
        n.allocatable.0.remove("memory");
        let pod = PodRequests {
            nonzero_cpu: 1000,
            nonzero_memory: 200,
            ..Default::default()
        };
        // cpu alone: (4-1)/4 = 75, not (75 + 0) / 2
        assert_eq!(least_allocated_score(&pod, &n, &Usage::default()), 75);
        n.allocatable.0.remove("cpu");
        assert_eq!(least_allocated_score(&pod, &n, &Usage::default()), 0);
    }

    fn requests(cpu_milli: i128, mem_gib: i128) -> PodRequests {
        PodRequests {
            requests: Resources(BTreeMap::from([
                ("cpu".to_string(), cpu_milli),
                ("memory".to_string(), mem_gib * (1i128 << 30) * 1000),
            ])),
            ..Default::default()
        }
    }

    #[test]
    fn balanced_allocation_scores_the_change_of_balance() {
        // 4 cpu / 8Gi
        let n = node(&[]);
        let empty = Usage::default();
        // unchanged balance: 75
        assert_eq!(balanced_allocation_score(&requests(0, 0), &n, &empty), 75);
        assert_eq!(
            balanced_allocation_score(&requests(1000, 2), &n, &empty),
            75
        );
        // cpu only on an empty node: fractions (0.25, 0) -> 87 after, 100 before
        // -> 50 + (50 + 87 - 100) / 2 = 68
        assert_eq!(
            balanced_allocation_score(&requests(1000, 0), &n, &empty),
            68
        );
        // memory that evens out a cpu-heavy node: 75 -> 100 gives 50 + 75 / 2 = 87
        let mut cpu_heavy = Usage::default();
        cpu_heavy.apply(&requests(2000, 0), 1);
        assert_eq!(
            balanced_allocation_score(&requests(0, 4), &n, &cpu_heavy),
            87
        );
        // perfectly balanced to fully unbalanced: 50
        assert_eq!(
            balanced_allocation_score(&requests(4000, 0), &n, &empty),
            50
        );
        assert!(is_best_effort(&PodRequests::default()));
        assert!(!is_best_effort(&requests(0, 1)));
    }

    #[test]
    fn soft_taints_and_preferred_terms_feed_normalised_scores() {
        let taints = [
            taint("a", None, "PreferNoSchedule"),
            taint("b", Some("x"), "PreferNoSchedule"),
            taint("c", None, "NoSchedule"),
        ];
        assert_eq!(intolerable_prefer_no_schedule(&taints, &[]), 2);
        let exists_a = tol(Some("a"), Some("Exists"), None, None);
        assert_eq!(intolerable_prefer_no_schedule(&taints, &[exists_a]), 1);
        // a NoSchedule toleration does not count against soft taints
        let hard = tol(Some("b"), Some("Exists"), None, Some("NoSchedule"));
        assert_eq!(intolerable_prefer_no_schedule(&taints, &[hard]), 2);
        let all = tol(None, Some("Exists"), None, Some("PreferNoSchedule"));
        assert_eq!(intolerable_prefer_no_schedule(&taints, &[all]), 0);

        let mut counts = vec![0, 1, 2];
        default_normalize(&mut counts, true);
        assert_eq!(counts, vec![100, 50, 0]);
        let mut zeros = vec![0, 0];
        default_normalize(&mut zeros, true);
        assert_eq!(zeros, vec![100, 100]);
        let mut sums = vec![0, 30, 90];
        default_normalize(&mut sums, false);
        assert_eq!(sums, vec![0, 33, 100]);

        let spec: PodSpec = serde_json::from_value(serde_json::json!({
            "containers": [],
            "affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 30, "preference": {"matchExpressions": [
                    {"key": "zone", "operator": "In", "values": ["a"]}]}},
                {"weight": 60, "preference": {"matchFields": [
                    {"key": "metadata.name", "operator": "In", "values": ["n1"]}]}},
                {"weight": 5, "preference": {}},
            ]}},
        }))
        .expect("spec");
        assert!(has_preferred_affinity(&spec));
        assert!(!has_preferred_affinity(&PodSpec::default()));
        assert_eq!(preferred_affinity_sum(&spec, &node(&[("zone", "a")])), 90);
        assert_eq!(preferred_affinity_sum(&spec, &node(&[("zone", "b")])), 60);
    }

    #[test]
    fn fit_error_reads_like_upstream() {
        let reasons = BTreeMap::from([
            ("Insufficient cpu".to_string(), 3),
            (REASON_AFFINITY.to_string(), 2),
        ]);
        assert_eq!(
            fit_error_message(5, &reasons),
            "0/5 nodes are available: 2 node(s) didn't match Pod's node affinity/selector, 3 Insufficient cpu."
        );
    }

    #[test]
    fn feasible_node_count_is_adaptive() {
        assert_eq!(feasible_nodes_to_find(50, 0), 50);
        assert_eq!(feasible_nodes_to_find(1000, 0), 420);
        assert_eq!(feasible_nodes_to_find(5000, 0), 500);
        assert_eq!(feasible_nodes_to_find(200, 0), 100);
        assert_eq!(feasible_nodes_to_find(1000, 100), 1000);
    }
}
