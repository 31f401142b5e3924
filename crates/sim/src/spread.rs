//! The scoring half of kube-scheduler's `PodTopologySpread` plugin: nodes holding fewer
//! of a pod's siblings score higher.
//!
//! A pod's constraints are its own `ScheduleAnyway` `topologySpreadConstraints` or,
//! when it has none, the system defaults (`kubernetes.io/hostname` with maxSkew 3 and
//! `topology.kubernetes.io/zone` with maxSkew 5) over the *default selector*: the
//! selectors of the Services in the pod's namespace that select it, merged, and the
//! selector of its controller (a ReplicaSet, StatefulSet or ReplicationController). A
//! pod with neither (a bare pod) gets no spreading term, as upstream.
//!
//! For a feasible node `n`, each constraint whose topology key `n` carries adds
//! `count · ln(size + 2) + maxSkew − 1`, where `count` is the number of matching,
//! non-terminating pods in the namespace on `n` (hostname) or in `n`'s domain (other
//! keys, counted over every node that passes the constraint's node inclusion
//! policies), and `size` the number of feasible nodes (hostname) or of distinct domains
//! among them. The sum is rounded, then normalised to `100 · (max + min − raw) / max`.
//!
//! Counting is kept cheap: pods are grouped by namespace and label set
//! ([`LabelGroups`]), each group knowing how many of its pods every node holds, so a
//! selector is matched once per group and a scheduling cycle costs the number of
//! matching groups times the nodes they use, not the number of pods.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use apimachinery::selector::{LabelOp, LabelRequirement, LabelSelector};
use k8s_openapi::api::apps::v1::{ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::{Pod, PodSpec, ReplicationController, Service};
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;

use crate::filters::{matches_affinity, untolerated, NodeView};
use crate::table::NodeTable;

/// `kubernetes.io/hostname`: the per-node topology.
pub const LABEL_HOSTNAME: &str = "kubernetes.io/hostname";
/// `topology.kubernetes.io/zone`.
pub const LABEL_ZONE: &str = "topology.kubernetes.io/zone";

/// One `ScheduleAnyway` constraint as the scorer uses it.
#[derive(Clone, Debug, PartialEq)]
pub struct Constraint {
    /// The node label whose values are the domains.
    pub topology_key: String,
    /// `maxSkew`.
    pub max_skew: i32,
    /// The pods that count.
    pub selector: LabelSelector,
    /// `nodeAffinityPolicy: Honor` (the default): only nodes that match the pod's
    /// nodeSelector and required node affinity count pods for a domain.
    pub honor_node_affinity: bool,
    /// `nodeTaintsPolicy: Honor` (default Ignore): only nodes whose NoSchedule and
    /// NoExecute taints the pod tolerates count pods for a domain.
    pub honor_node_taints: bool,
}

impl Constraint {
    fn system(key: &str, max_skew: i32, selector: &LabelSelector) -> Constraint {
        Constraint {
            topology_key: key.into(),
            max_skew,
            selector: selector.clone(),
            honor_node_affinity: true,
            honor_node_taints: false,
        }
    }

    /// Whether pods on `node` count for this constraint (upstream
    /// `matchNodeInclusionPolicies`).
    fn includes(&self, spec: &PodSpec, node: &NodeView) -> bool {
        (!self.honor_node_affinity || matches_affinity(spec, node))
            && (!self.honor_node_taints
                || untolerated(&node.taints, spec.tolerations.as_deref().unwrap_or(&[])).is_none())
    }
}

/// A pod's spreading constraints for scoring.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Spread {
    /// The constraints; none: the plugin has nothing to say (skipped).
    pub constraints: Vec<Constraint>,
    /// The pod's own constraints: nodes lacking one of the keys are ignored (score 0).
    /// With the system defaults such nodes just get no term for the missing key.
    pub require_all_topologies: bool,
}

/// Which controller kind owns a pod (the kinds the default selector knows).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OwnerKind {
    /// `v1` ReplicationController.
    ReplicationController,
    /// `apps/v1` ReplicaSet.
    ReplicaSet,
    /// `apps/v1` StatefulSet.
    StatefulSet,
}

impl OwnerKind {
    fn of(r: &meta::OwnerReference) -> Option<OwnerKind> {
        match (r.api_version.as_str(), r.kind.as_str()) {
            ("v1", "ReplicationController") => Some(OwnerKind::ReplicationController),
            ("apps/v1", "ReplicaSet") => Some(OwnerKind::ReplicaSet),
            ("apps/v1", "StatefulSet") => Some(OwnerKind::StatefulSet),
            _ => None,
        }
    }
}

#[derive(Clone, Debug)]
enum OwnerSelector {
    /// A ReplicationController's map, merged with the Services' maps.
    Set(BTreeMap<String, String>),
    /// A ReplicaSet's or StatefulSet's selector, ANDed (`None`: it does not convert).
    Selector(Option<LabelSelector>),
}

/// The selectors the default constraints are built from: Services' and controllers',
/// kept up to date from their informers (see the `*_changed` methods).
#[derive(Debug, Default)]
pub struct Owners {
    /// namespace → Service name → `spec.selector` (Services without one select nothing
    /// and are not kept)
    services: HashMap<String, HashMap<String, BTreeMap<String, String>>>,
    controllers: HashMap<(OwnerKind, String, String), OwnerSelector>,
}

fn ns_name(m: &meta::ObjectMeta) -> (String, String) {
    (
        m.namespace.clone().unwrap_or_default(),
        m.name.clone().unwrap_or_default(),
    )
}

impl Owners {
    /// Note a Service (`deleted`: gone).
    pub fn service_changed(&mut self, svc: &Service, deleted: bool) {
        let (ns, name) = ns_name(&svc.metadata);
        let selector = svc.spec.as_ref().and_then(|s| s.selector.clone());
        match selector.filter(|_| !deleted) {
            Some(sel) => {
                self.services.entry(ns).or_default().insert(name, sel);
            }
            None => {
                if let Some(m) = self.services.get_mut(&ns) {
                    m.remove(&name);
                    if m.is_empty() {
                        self.services.remove(&ns);
                    }
                }
            }
        }
    }

    fn controller_changed(
        &mut self,
        kind: OwnerKind,
        m: &meta::ObjectMeta,
        sel: Option<OwnerSelector>,
    ) {
        let (ns, name) = ns_name(m);
        match sel {
            Some(s) => {
                self.controllers.insert((kind, ns, name), s);
            }
            None => {
                self.controllers.remove(&(kind, ns, name));
            }
        }
    }

    /// Note a ReplicaSet (`deleted`: gone).
    pub fn replica_set_changed(&mut self, rs: &ReplicaSet, deleted: bool) {
        let sel = (!deleted)
            .then(|| OwnerSelector::Selector(LabelSelector::from_meta(&rs.spec.selector).ok()));
        self.controller_changed(OwnerKind::ReplicaSet, &rs.metadata, sel);
    }

    /// Note a StatefulSet (`deleted`: gone).
    pub fn stateful_set_changed(&mut self, ss: &StatefulSet, deleted: bool) {
        let sel = (!deleted)
            .then(|| OwnerSelector::Selector(LabelSelector::from_meta(&ss.spec.selector).ok()));
        self.controller_changed(OwnerKind::StatefulSet, &ss.metadata, sel);
    }

    /// Note a ReplicationController (`deleted`: gone).
    pub fn replication_controller_changed(&mut self, rc: &ReplicationController, deleted: bool) {
        let sel = (!deleted).then(|| {
            OwnerSelector::Set(
                rc.spec
                    .as_ref()
                    .and_then(|s| s.selector.clone())
                    .unwrap_or_default(),
            )
        });
        self.controller_changed(OwnerKind::ReplicationController, &rc.metadata, sel);
    }

    /// Upstream `helper.DefaultSelector`: the merged selectors of the Services that
    /// select `pod`, and its controller's selector. Empty when the pod has neither.
    pub fn default_selector(&self, pod: &Pod) -> LabelSelector {
        let ns = pod.metadata.namespace.as_deref().unwrap_or("");
        let empty = BTreeMap::new();
        let labels = pod.metadata.labels.as_ref().unwrap_or(&empty);
        let mut set: BTreeMap<String, String> = BTreeMap::new();
        // Services in name order, so a (theoretical) conflict resolves the same way
        let mut services: Vec<(&String, &BTreeMap<String, String>)> = self
            .services
            .get(ns)
            .map(|m| m.iter().collect())
            .unwrap_or_default();
        services.sort_by(|a, b| a.0.cmp(b.0));
        for (_, sel) in services {
            if sel.iter().all(|(k, v)| labels.get(k) == Some(v)) {
                set.extend(sel.iter().map(|(k, v)| (k.clone(), v.clone())));
            }
        }
        let owner = pod
            .metadata
            .owner_references
            .iter()
            .flatten()
            .find(|r| r.controller == Some(true));
        let found = owner.and_then(|r| {
            let kind = OwnerKind::of(r)?;
            self.controllers
                .get(&(kind, ns.to_string(), r.name.clone()))
        });
        let mut extra: &[LabelRequirement] = &[];
        match found {
            Some(OwnerSelector::Set(rc)) => {
                set.extend(rc.iter().map(|(k, v)| (k.clone(), v.clone())));
            }
            Some(OwnerSelector::Selector(Some(s))) if !s.matches_nothing() => {
                extra = s.requirements();
            }
            _ => {}
        }
        let mut reqs: Vec<LabelRequirement> =
            LabelSelector::from_match_labels(set.iter().map(|(k, v)| (k.as_str(), v.as_str())))
                .requirements()
                .to_vec();
        reqs.extend(extra.iter().cloned());
        LabelSelector::from_requirements(reqs)
    }
}

/// The ScheduleAnyway constraints of `pod`: its own, or the system defaults over
/// `owners`' default selector (upstream `initPreScoreState`).
pub fn spread_of(pod: &Pod, owners: &Owners) -> Spread {
    let empty = BTreeMap::new();
    let labels = pod.metadata.labels.as_ref().unwrap_or(&empty);
    let own = pod
        .spec
        .as_ref()
        .and_then(|s| s.topology_spread_constraints.as_deref())
        .unwrap_or(&[]);
    if !own.is_empty() {
        let constraints = own
            .iter()
            .filter(|c| c.when_unsatisfiable == "ScheduleAnyway")
            .map(|c| Constraint {
                topology_key: c.topology_key.clone(),
                max_skew: c.max_skew,
                selector: constraint_selector(c.label_selector.as_ref(), c, labels),
                honor_node_affinity: c.node_affinity_policy.as_deref() != Some("Ignore"),
                honor_node_taints: c.node_taints_policy.as_deref() == Some("Honor"),
            })
            .collect();
        return Spread {
            constraints,
            require_all_topologies: true,
        };
    }
    let selector = owners.default_selector(pod);
    if selector.is_empty() {
        return Spread::default();
    }
    Spread {
        constraints: vec![
            Constraint::system(LABEL_HOSTNAME, 3, &selector),
            Constraint::system(LABEL_ZONE, 5, &selector),
        ],
        require_all_topologies: false,
    }
}

/// A constraint's `labelSelector` (absent: matches nothing), ANDed with
/// `key=value` for each of its `matchLabelKeys` the pod has.
fn constraint_selector(
    sel: Option<&meta::LabelSelector>,
    c: &k8s_openapi::api::core::v1::TopologySpreadConstraint,
    labels: &BTreeMap<String, String>,
) -> LabelSelector {
    // the API server validates the selector; one that does not convert counts nothing
    let base = match sel {
        None => return LabelSelector::nothing(),
        Some(s) => match LabelSelector::from_meta(s) {
            Ok(s) => s,
            Err(_) => return LabelSelector::nothing(),
        },
    };
    let mut reqs: Vec<LabelRequirement> = Vec::new();
    for key in c.match_label_keys.iter().flatten() {
        if let Some(v) = labels.get(key) {
            if let Ok(r) = LabelRequirement::new(key, LabelOp::Equals, vec![v.clone()]) {
                reqs.push(r);
            }
        }
    }
    if reqs.is_empty() {
        return base;
    }
    reqs.extend(base.requirements().iter().cloned());
    LabelSelector::from_requirements(reqs)
}

type GroupKey = (String, BTreeMap<String, String>);

#[derive(Debug)]
struct Group {
    key: Arc<GroupKey>,
    /// pods in the group (terminating ones too)
    members: usize,
    /// non-terminating pods per node id
    on_node: HashMap<usize, u32>,
}

/// Matching pods per node id, from [`LabelGroups::per_node`].
#[derive(Debug)]
pub struct PerNode {
    /// Count by node id (empty when nothing matches).
    counts: Vec<i64>,
    /// The node ids with a count.
    used: Vec<usize>,
}

impl PerNode {
    /// The count of node `id`.
    pub fn get(&self, id: usize) -> i64 {
        self.counts.get(id).copied().unwrap_or(0)
    }
}

/// Handle of a [`LabelGroups`] group.
pub type GroupId = usize;

/// The pods the scheduler has placed or seen bound, grouped by namespace and labels,
/// with per-node counts of the non-terminating ones.
#[derive(Debug, Default)]
pub struct LabelGroups {
    ids: HashMap<Arc<GroupKey>, GroupId>,
    slots: Vec<Option<Group>>,
    free: Vec<GroupId>,
    by_ns: HashMap<String, HashSet<GroupId>>,
}

impl LabelGroups {
    /// Add a member to the group of (`ns`, `labels`), creating it if needed.
    pub fn join(&mut self, ns: &str, labels: &BTreeMap<String, String>) -> GroupId {
        let key: GroupKey = (ns.to_string(), labels.clone());
        if let Some(&id) = self.ids.get(&key) {
            if let Some(g) = self.slots[id].as_mut() {
                g.members += 1;
            }
            return id;
        }
        let key = Arc::new(key);
        let group = Group {
            key: key.clone(),
            members: 1,
            on_node: HashMap::new(),
        };
        let id = match self.free.pop() {
            Some(id) => {
                self.slots[id] = Some(group);
                id
            }
            None => {
                self.slots.push(Some(group));
                self.slots.len() - 1
            }
        };
        self.ids.insert(key, id);
        self.by_ns.entry(ns.to_string()).or_default().insert(id);
        id
    }

    /// Remove a member (its node count must have been taken back with [`Self::count`]).
    pub fn leave(&mut self, id: GroupId) {
        let Some(g) = self.slots.get_mut(id).and_then(Option::as_mut) else {
            return;
        };
        g.members = g.members.saturating_sub(1);
        if g.members > 0 {
            return;
        }
        let key = g.key.clone();
        self.slots[id] = None;
        self.free.push(id);
        self.ids.remove(&key);
        if let Some(set) = self.by_ns.get_mut(&key.0) {
            set.remove(&id);
            if set.is_empty() {
                self.by_ns.remove(&key.0);
            }
        }
    }

    /// Whether group `id` is the one of (`ns`, `labels`).
    pub fn is(&self, id: GroupId, ns: &str, labels: &BTreeMap<String, String>) -> bool {
        self.slots
            .get(id)
            .and_then(Option::as_ref)
            .is_some_and(|g| g.key.0 == ns && g.key.1 == *labels)
    }

    /// Count one more (`up`) or one less non-terminating pod of group `id` on `node`.
    pub fn count(&mut self, id: GroupId, node: usize, up: bool) {
        let Some(g) = self.slots.get_mut(id).and_then(Option::as_mut) else {
            return;
        };
        if up {
            *g.on_node.entry(node).or_insert(0) += 1;
        } else if let Some(c) = g.on_node.get_mut(&node) {
            *c = c.saturating_sub(1);
            if *c == 0 {
                g.on_node.remove(&node);
            }
        }
    }

    /// Non-terminating pods of namespace `ns` matching `selector`, per node id below
    /// `nodes` (upstream `countPodsMatchSelector`: an empty selector counts nothing).
    pub fn per_node(&self, ns: &str, selector: &LabelSelector, nodes: usize) -> PerNode {
        let mut out = PerNode {
            counts: Vec::new(),
            used: Vec::new(),
        };
        if selector.is_empty() || selector.matches_nothing() {
            return out;
        }
        for id in self.by_ns.get(ns).into_iter().flatten() {
            let Some(g) = self.slots.get(*id).and_then(Option::as_ref) else {
                continue;
            };
            if g.on_node.is_empty() || !selector.matches_labels(&g.key.1) {
                continue;
            }
            if out.counts.is_empty() {
                out.counts = vec![0; nodes];
            }
            for (&node, &c) in &g.on_node {
                if let Some(slot) = out.counts.get_mut(node) {
                    if *slot == 0 {
                        out.used.push(node);
                    }
                    *slot += i64::from(c);
                }
            }
        }
        out
    }

    /// Number of groups (diagnostics and tests).
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether there are no groups.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }
}

/// Pods per domain of one constraint: by zone id (the last index for nodes without
/// the label) for `topology.kubernetes.io/zone`, by label value for other keys.
enum Domains<'a> {
    Zones(Vec<Option<i64>>),
    Values(HashMap<&'a str, i64>),
}

impl Domains<'_> {
    fn len(&self) -> usize {
        match self {
            Domains::Zones(v) => v.iter().flatten().count(),
            Domains::Values(m) => m.len(),
        }
    }
}

/// Raw scores of the `feasible` node ids (upstream `PreScore` + `Score`), `None` for
/// nodes the constraints ignore; `None` overall when the plugin is skipped (no
/// constraints). Domain counts look at every node of `table`, not only feasible ones.
pub(crate) fn raw_scores(
    spread: &Spread,
    spec: &PodSpec,
    ns: &str,
    feasible: &[usize],
    table: &NodeTable,
    groups: &LabelGroups,
) -> Option<Vec<Option<i64>>> {
    if spread.constraints.is_empty() || feasible.is_empty() {
        return None;
    }
    let has_all = |n: &NodeView| {
        spread
            .constraints
            .iter()
            .all(|c| n.labels.contains_key(&c.topology_key))
    };
    let ignored: Vec<bool> = feasible
        .iter()
        .map(|id| spread.require_all_topologies && table.view(*id).is_none_or(|n| !has_all(n)))
        .collect();
    let kept = ignored.iter().filter(|i| !**i).count();
    // matching pods per node, once per distinct selector
    let mut counted: Vec<(&LabelSelector, PerNode)> = Vec::new();
    let mut which = Vec::with_capacity(spread.constraints.len());
    for c in &spread.constraints {
        match counted.iter().position(|(s, _)| **s == c.selector) {
            Some(i) => which.push(i),
            None => {
                counted.push((&c.selector, groups.per_node(ns, &c.selector, table.len())));
                which.push(counted.len() - 1);
            }
        }
    }
    // whether pods on a node count for domains is the same for every node when the
    // pod has no node affinity and no policy honours taints
    let unrestricted = |c: &Constraint| {
        (!c.honor_node_affinity || no_required_affinity(spec)) && !c.honor_node_taints
    };
    let zones = table.zones();
    let mut preps: Vec<(bool, Domains, f64)> = Vec::with_capacity(spread.constraints.len());
    for (i, c) in spread.constraints.iter().enumerate() {
        let hostname = c.topology_key == LABEL_HOSTNAME;
        let zone_key = c.topology_key == LABEL_ZONE;
        let mut domains = if zone_key {
            Domains::Zones(vec![None; zones + 1])
        } else {
            Domains::Values(HashMap::new())
        };
        if !hostname {
            for (id, skip) in feasible.iter().zip(&ignored) {
                let Some(n) = table.view(*id).filter(|_| !skip) else {
                    continue;
                };
                match &mut domains {
                    Domains::Zones(v) => {
                        v[table.slot(*id).zone.unwrap_or(zones)].get_or_insert(0);
                    }
                    Domains::Values(m) => {
                        let v = n.labels.get(&c.topology_key).map_or("", String::as_str);
                        m.entry(v).or_insert(0);
                    }
                }
            }
            let free = unrestricted(c) && !spread.require_all_topologies;
            let per_node = &counted[which[i]].1;
            for &id in &per_node.used {
                let Some(node) = table.view(id) else {
                    continue;
                };
                if !free
                    && ((spread.require_all_topologies && !has_all(node))
                        || !c.includes(spec, node))
                {
                    continue;
                }
                let cnt = per_node.get(id);
                match &mut domains {
                    Domains::Zones(v) => {
                        if let Some(d) = &mut v[table.slot(id).zone.unwrap_or(zones)] {
                            *d += cnt;
                        }
                    }
                    Domains::Values(m) => {
                        let v = node.labels.get(&c.topology_key).map_or("", String::as_str);
                        if let Some(d) = m.get_mut(v) {
                            *d += cnt;
                        }
                    }
                }
            }
        }
        let size = if hostname { kept } else { domains.len() };
        preps.push((hostname, domains, ((size + 2) as f64).ln()));
    }
    let raw = feasible
        .iter()
        .zip(&ignored)
        .map(|(id, skip)| {
            let n = table.view(*id).filter(|_| !skip)?;
            let mut score = 0.0;
            for (i, (c, (hostname, domains, weight))) in
                spread.constraints.iter().zip(&preps).enumerate()
            {
                let cnt = if *hostname {
                    if !n.labels.contains_key(LABEL_HOSTNAME) {
                        continue;
                    }
                    counted[which[i]].1.get(*id)
                } else {
                    match domains {
                        Domains::Zones(v) => match table.slot(*id).zone {
                            Some(z) => v[z].unwrap_or(0),
                            None => continue,
                        },
                        Domains::Values(m) => match n.labels.get(&c.topology_key) {
                            Some(value) => m.get(value.as_str()).copied().unwrap_or(0),
                            None => continue,
                        },
                    }
                };
                score += cnt as f64 * weight + f64::from(c.max_skew - 1);
            }
            Some(score.round() as i64)
        })
        .collect();
    Some(raw)
}

/// Whether the pod has neither a nodeSelector nor required node affinity (every node
/// passes the `Honor` node affinity policy).
fn no_required_affinity(spec: &PodSpec) -> bool {
    spec.node_selector.as_ref().is_none_or(|s| s.is_empty())
        && spec
            .affinity
            .as_ref()
            .and_then(|a| a.node_affinity.as_ref())
            .and_then(|na| {
                na.required_during_scheduling_ignored_during_execution
                    .as_ref()
            })
            .is_none()
}

/// Upstream `NormalizeScore`: `100 · (max + min − raw) / max` over the scored nodes,
/// 100 for all when the maximum is 0, 0 for ignored nodes.
pub fn normalize(raw: &[Option<i64>]) -> Vec<i64> {
    let scored = raw.iter().flatten();
    let min = scored.clone().copied().min().unwrap_or(0);
    let max = scored.copied().max().unwrap_or(0);
    raw.iter()
        .map(|r| match r {
            None => 0,
            Some(_) if max == 0 => 100,
            Some(s) => 100 * (max + min - s) / max,
        })
        .collect()
}

#[cfg(test)]
#[path = "spread_tests.rs"]
mod tests;
