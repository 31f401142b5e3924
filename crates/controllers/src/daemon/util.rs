//! The pure helpers of the DaemonSet controller, after upstream's
//! `pkg/controller/daemon/util/daemonset_util.go` and the predicates of
//! `pkg/controller/daemon/daemon_controller.go` (`NodeShouldRunDaemonPod`,
//! `shouldIgnoreNodeUpdate`, `podByCreationTimestampAndPhase`).
//!
//! - Which nodes a DaemonSet runs on: its template's `nodeName`, `nodeSelector` and
//!   required node affinity must admit the node, and every `NoSchedule`/`NoExecute`
//!   taint must be tolerated, counting the tolerations the controller adds to its pods
//!   (not-ready, unreachable, pressure, unschedulable, network-unavailable for host
//!   network pods). An untolerated `NoSchedule` taint keeps running pods; an
//!   untolerated `NoExecute` taint evicts them.
//! - How daemon pods are made: the template plus those tolerations, the
//!   `pod-template-generation` and `controller-revision-hash` labels, and a required
//!   node affinity on `metadata.name` that pins the pod to its node for the scheduler.
//! - The rolling-update budget: maxSurge and maxUnavailable scaled against the number
//!   of nodes that should run a pod (percentages rounded up).

use std::cmp::Ordering;
use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{
    Affinity, Node, NodeAffinity, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, Pod,
    PodSpec, PodTemplateSpec, Toleration,
};

use crate::deployment::util::scaling::scaled_value;

/// The pod label naming the ControllerRevision of a daemon pod's template
/// (`apps.DefaultDaemonSetUniqueLabelKey`).
pub const CONTROLLER_REVISION_HASH_LABEL: &str = "controller-revision-hash";
/// The pod label carrying the DaemonSet's template generation
/// (`extensions.DaemonSetTemplateGenerationKey`).
pub const TEMPLATE_GENERATION_LABEL: &str = "pod-template-generation";
/// The DaemonSet annotation the API server keeps at the template generation
/// (`apps.DeprecatedTemplateGeneration`).
pub const DEPRECATED_TEMPLATE_GENERATION: &str = "deprecated.daemonset.template.generation";

/// Taint keys of the tolerations the controller adds (`k8s.io/api/core/v1` well-known taints).
pub const TAINT_NODE_NOT_READY: &str = "node.kubernetes.io/not-ready";
/// The node lifecycle controller's taint of a node that stopped reporting.
pub const TAINT_NODE_UNREACHABLE: &str = "node.kubernetes.io/unreachable";
/// Taint of a node under disk pressure.
pub const TAINT_NODE_DISK_PRESSURE: &str = "node.kubernetes.io/disk-pressure";
/// Taint of a node under memory pressure.
pub const TAINT_NODE_MEMORY_PRESSURE: &str = "node.kubernetes.io/memory-pressure";
/// Taint of a node under PID pressure.
pub const TAINT_NODE_PID_PRESSURE: &str = "node.kubernetes.io/pid-pressure";
/// Taint of a cordoned node.
pub const TAINT_NODE_UNSCHEDULABLE: &str = "node.kubernetes.io/unschedulable";
/// Taint of a node whose network is not configured.
pub const TAINT_NODE_NETWORK_UNAVAILABLE: &str = "node.kubernetes.io/network-unavailable";

fn exists_toleration(key: &str, effect: &str) -> Toleration {
    Toleration {
        key: Some(key.to_string()),
        operator: Some("Exists".to_string()),
        effect: Some(effect.to_string()),
        ..Default::default()
    }
}

/// Upstream `MatchToleration`: same key, operator, value and effect (the
/// `tolerationSeconds` are not compared).
fn match_toleration(a: &Toleration, b: &Toleration) -> bool {
    a.key == b.key && a.operator == b.operator && a.value == b.value && a.effect == b.effect
}

/// Upstream `AddOrUpdateTolerationInPodSpec`: a toleration matching `t` is replaced in
/// place, otherwise `t` is appended.
fn add_or_update_toleration(spec: &mut PodSpec, t: Toleration) {
    let list = spec.tolerations.get_or_insert_with(Vec::new);
    if let Some(existing) = list.iter_mut().find(|x| match_toleration(x, &t)) {
        *existing = t;
    } else {
        list.push(t);
    }
}

/// Upstream `AddOrUpdateDaemonPodTolerations`: daemon pods tolerate not-ready and
/// unreachable nodes (`NoExecute`, for ever), disk, memory and PID pressure and
/// cordoned nodes (`NoSchedule`), and an unavailable network when they use the host
/// network.
pub fn add_or_update_daemon_pod_tolerations(spec: &mut PodSpec) {
    add_or_update_toleration(spec, exists_toleration(TAINT_NODE_NOT_READY, "NoExecute"));
    add_or_update_toleration(spec, exists_toleration(TAINT_NODE_UNREACHABLE, "NoExecute"));
    for key in [
        TAINT_NODE_DISK_PRESSURE,
        TAINT_NODE_MEMORY_PRESSURE,
        TAINT_NODE_PID_PRESSURE,
        TAINT_NODE_UNSCHEDULABLE,
    ] {
        add_or_update_toleration(spec, exists_toleration(key, "NoSchedule"));
    }
    if spec.host_network == Some(true) {
        add_or_update_toleration(
            spec,
            exists_toleration(TAINT_NODE_NETWORK_UNAVAILABLE, "NoSchedule"),
        );
    }
}

/// Upstream `GetTemplateGeneration`: the DaemonSet's template generation from its
/// `deprecated.daemonset.template.generation` annotation (`None` when absent).
pub fn template_generation(ds: &DaemonSet) -> Result<Option<i64>, String> {
    let Some(v) = ds
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(DEPRECATED_TEMPLATE_GENERATION))
    else {
        return Ok(None);
    };
    v.parse::<i64>()
        .map(Some)
        .map_err(|e| format!("strconv.ParseInt: parsing {v:?}: {e}"))
}

/// Upstream `CreatePodTemplate`: the template with the daemon tolerations, the
/// `pod-template-generation` label (when the generation is known) and the
/// `controller-revision-hash` label (when `hash` is not empty).
pub fn create_pod_template(
    template: &PodTemplateSpec,
    generation: Option<i64>,
    hash: &str,
) -> PodTemplateSpec {
    let mut t = template.clone();
    add_or_update_daemon_pod_tolerations(t.spec.get_or_insert_with(Default::default));
    let meta = t.metadata.get_or_insert_with(Default::default);
    let labels = meta.labels.get_or_insert_with(BTreeMap::new);
    if let Some(g) = generation {
        labels.insert(TEMPLATE_GENERATION_LABEL.to_string(), g.to_string());
    }
    if !hash.is_empty() {
        labels.insert(CONTROLLER_REVISION_HASH_LABEL.to_string(), hash.to_string());
    }
    t
}

/// Upstream `IsPodUpdated`: the pod carries the current revision hash, or the current
/// template generation.
pub fn is_pod_updated(pod: &Pod, hash: &str, generation: Option<i64>) -> bool {
    let labels = pod.metadata.labels.as_ref();
    let label = |k: &str| labels.and_then(|l| l.get(k)).map(String::as_str);
    let generation_matches = generation
        .is_some_and(|g| label(TEMPLATE_GENERATION_LABEL) == Some(g.to_string().as_str()));
    let hash_matches = !hash.is_empty() && label(CONTROLLER_REVISION_HASH_LABEL) == Some(hash);
    hash_matches || generation_matches
}

fn name_requirement(node: &str) -> NodeSelectorRequirement {
    NodeSelectorRequirement {
        key: "metadata.name".to_string(),
        operator: "In".to_string(),
        values: Some(vec![node.to_string()]),
    }
}

/// Upstream `ReplaceDaemonSetPodNodeNameNodeAffinity`: the affinity with its required
/// node selector replaced by one term, `matchFields metadata.name In [node]`;
/// preferred terms and pod (anti-)affinity are kept.
pub fn replace_node_name_affinity(affinity: Option<Affinity>, node: &str) -> Affinity {
    let required = NodeSelector {
        node_selector_terms: vec![NodeSelectorTerm {
            match_fields: Some(vec![name_requirement(node)]),
            match_expressions: None,
        }],
    };
    let mut affinity = affinity.unwrap_or_default();
    let na = affinity
        .node_affinity
        .get_or_insert_with(NodeAffinity::default);
    na.required_during_scheduling_ignored_during_execution = Some(required);
    affinity
}

/// Upstream `GetTargetNodeName`: the node a daemon pod is bound to, or pinned to by its
/// required `metadata.name` affinity.
pub fn get_target_node_name(pod: &Pod) -> Result<String, String> {
    let spec = pod.spec.as_ref();
    if let Some(n) = spec
        .and_then(|s| s.node_name.as_deref())
        .filter(|n| !n.is_empty())
    {
        return Ok(n.to_string());
    }
    let who = format!(
        "{}/{}",
        pod.metadata.namespace.as_deref().unwrap_or(""),
        pod.metadata.name.as_deref().unwrap_or("")
    );
    let Some(required) = spec
        .and_then(|s| s.affinity.as_ref())
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|na| {
            na.required_during_scheduling_ignored_during_execution
                .as_ref()
        })
    else {
        return Err(format!(
            "no spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution for pod {who}"
        ));
    };
    if required.node_selector_terms.is_empty() {
        return Err(format!(
            "no nodeSelectorTerms in requiredDuringSchedulingIgnoredDuringExecution of pod {who}"
        ));
    }
    for term in &required.node_selector_terms {
        for f in term.match_fields.iter().flatten() {
            if f.key == "metadata.name" && f.operator == "In" {
                let values = f.values.as_deref().unwrap_or(&[]);
                if values.len() != 1 {
                    return Err(format!(
                        "the matchFields value of 'metadata.name' is not unique for pod {who}"
                    ));
                }
                return Ok(values[0].clone());
            }
        }
    }
    Err(format!("no node name found for pod {who}"))
}

/// Upstream `GetScaledValueFromIntOrPercent` of the DaemonSet's maxSurge against
/// `number_to_schedule` (0 unless the strategy is RollingUpdate with a maxSurge).
pub fn surge_count(ds: &DaemonSet, number_to_schedule: i32) -> Result<i32, String> {
    let Some(ru) = rolling_update(ds) else {
        return Ok(0);
    };
    match &ru.max_surge {
        Some(v) => scaled_value(v, number_to_schedule, true),
        None => Ok(0),
    }
}

/// The DaemonSet's maxUnavailable against `number_to_schedule` (0 unless the strategy
/// is RollingUpdate; percentages rounded up).
pub fn unavailable_count(ds: &DaemonSet, number_to_schedule: i32) -> Result<i32, String> {
    let Some(ru) = rolling_update(ds) else {
        return Ok(0);
    };
    match &ru.max_unavailable {
        Some(v) => scaled_value(v, number_to_schedule, true),
        None => Ok(0),
    }
}

/// Whether the DaemonSet surges (creates the new pod before deleting the old one):
/// any maxSurge above zero (upstream `AllowsSurge`).
pub fn allows_surge(ds: &DaemonSet) -> bool {
    surge_count(ds, 1).is_ok_and(|n| n > 0)
}

fn rolling_update(ds: &DaemonSet) -> Option<&k8s_openapi::api::apps::v1::RollingUpdateDaemonSet> {
    let strategy = ds.spec.update_strategy.as_ref()?;
    if strategy.type_.as_deref() != Some("RollingUpdate") {
        return None;
    }
    strategy.rolling_update.as_ref()
}

/// Whether the strategy is RollingUpdate (the default), as opposed to OnDelete.
pub fn is_rolling_update(ds: &DaemonSet) -> bool {
    ds.spec
        .update_strategy
        .as_ref()
        .and_then(|u| u.type_.as_deref())
        .is_none_or(|t| t == "RollingUpdate")
}

/// Upstream `ToleratesTaint`.
pub use apimachinery::taints::tolerates;

fn requirement_matches(r: &NodeSelectorRequirement, value: Option<&str>) -> Option<bool> {
    let values = r.values.as_deref().unwrap_or(&[]);
    Some(match r.operator.as_str() {
        "In" if !values.is_empty() => value.is_some_and(|v| values.iter().any(|x| x == v)),
        "NotIn" if !values.is_empty() => value.is_none_or(|v| !values.iter().any(|x| x == v)),
        "Exists" if values.is_empty() => value.is_some(),
        "DoesNotExist" if values.is_empty() => value.is_none(),
        "Gt" | "Lt" => {
            let [bound] = values else {
                return None;
            };
            let b = bound.parse::<i64>().ok()?;
            match value.map(str::parse::<i64>) {
                Some(Ok(v)) if r.operator == "Gt" => v > b,
                Some(Ok(v)) => v < b,
                _ => false,
            }
        }
        _ => return None,
    })
}

/// Whether a node selector term admits the node (`None`: the term does not parse and
/// matches nothing). Expressions and fields are ANDed; an empty term matches nothing.
pub(crate) fn term_matches(term: &NodeSelectorTerm, node: &Node) -> Option<bool> {
    let exprs = term.match_expressions.as_deref().unwrap_or(&[]);
    let fields = term.match_fields.as_deref().unwrap_or(&[]);
    if exprs.is_empty() && fields.is_empty() {
        return Some(false);
    }
    let labels = node.metadata.labels.as_ref();
    let name = node.metadata.name.as_deref().unwrap_or("");
    let mut all = true;
    for e in exprs {
        let v = labels.and_then(|l| l.get(&e.key)).map(String::as_str);
        all &= requirement_matches(e, v)?;
    }
    for f in fields {
        // field selectors know metadata.name with In/NotIn of exactly one value
        if f.key != "metadata.name"
            || !matches!(f.operator.as_str(), "In" | "NotIn")
            || f.values.as_ref().is_none_or(|v| v.len() != 1)
        {
            return None;
        }
        all &= requirement_matches(f, Some(name))?;
    }
    Some(all)
}

/// Upstream `GetRequiredNodeAffinity(pod).Match(node)`: every nodeSelector entry equals
/// a node label, and one of the required affinity's terms (if any) admits the node.
pub fn matches_node_affinity(spec: &PodSpec, node: &Node) -> bool {
    let labels = node.metadata.labels.as_ref();
    for (k, v) in spec.node_selector.iter().flatten() {
        if labels.and_then(|l| l.get(k)) != Some(v) {
            return false;
        }
    }
    let Some(required) = spec
        .affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|na| {
            na.required_during_scheduling_ignored_during_execution
                .as_ref()
        })
    else {
        return true;
    };
    required
        .node_selector_terms
        .iter()
        .any(|t| term_matches(t, node) == Some(true))
}

/// Upstream `NodeShouldRunDaemonPod`: `(should_run, should_continue_running)` of the
/// DaemonSet's pod on `node`. Resources, host ports, conditions and
/// `spec.unschedulable` are not considered (the scheduler and the added tolerations
/// deal with those).
pub fn node_should_run_daemon_pod(node: &Node, ds: &DaemonSet) -> (bool, bool) {
    let node_name = node.metadata.name.as_deref().unwrap_or("");
    let template_spec = ds.spec.template.spec.clone().unwrap_or_default();
    if let Some(n) = template_spec.node_name.as_deref().filter(|n| !n.is_empty()) {
        if n != node_name {
            return (false, false);
        }
    }
    let mut spec = template_spec;
    add_or_update_daemon_pod_tolerations(&mut spec);
    if !matches_node_affinity(&spec, node) {
        return (false, false);
    }
    let tolerations = spec.tolerations.as_deref().unwrap_or(&[]);
    let taints = node
        .spec
        .as_ref()
        .and_then(|s| s.taints.as_deref())
        .unwrap_or(&[]);
    let untolerated = |effect: &str| {
        taints
            .iter()
            .filter(|t| t.effect == effect)
            .any(|taint| !tolerations.iter().any(|tol| tolerates(tol, taint)))
    };
    let no_execute = untolerated("NoExecute");
    if no_execute || untolerated("NoSchedule") {
        return (false, !no_execute);
    }
    (true, true)
}

/// Upstream `shouldIgnoreNodeUpdate`: only label and taint changes matter.
pub fn should_ignore_node_update(old: &Node, new: &Node) -> bool {
    let labels = |n: &Node| n.metadata.labels.clone().unwrap_or_default();
    let taints = |n: &Node| {
        n.spec
            .as_ref()
            .and_then(|s| s.taints.clone())
            .unwrap_or_default()
    };
    labels(old) == labels(new) && taints(old) == taints(new)
}

/// Upstream `podByCreationTimestampAndPhase`: bound pods first, then older first, then
/// by name.
pub fn pod_order(a: &Pod, b: &Pod) -> Ordering {
    let bound = |p: &Pod| {
        p.spec
            .as_ref()
            .and_then(|s| s.node_name.as_deref())
            .is_some_and(|n| !n.is_empty())
    };
    bound(b)
        .cmp(&bound(a))
        .then_with(|| {
            let t = |p: &Pod| p.metadata.creation_timestamp.as_ref().map(|t| t.0);
            t(a).cmp(&t(b))
        })
        .then_with(|| a.metadata.name.cmp(&b.metadata.name))
}

#[cfg(test)]
#[path = "util_tests.rs"]
pub(crate) mod tests;
