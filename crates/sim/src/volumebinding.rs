//! The scheduler's `VolumeBinding` plugin (upstream
//! `pkg/scheduler/framework/plugins/volumebinding`), as pure functions over the pod's
//! claims and the cluster's volumes and classes.
//!
//! * PreFilter ([`pod_volumes`]): every claim of the pod (its `persistentVolumeClaim`
//!   volumes and the `<pod>-<volume>` claims of its generic ephemeral volumes) must
//!   exist, not be being deleted, and (ephemeral) be owned by the pod; claims not
//!   bound yet must have a `WaitForFirstConsumer` class, else the pod is rejected
//!   with `pod has unbound immediate PersistentVolumeClaims`.
//! * Filter ([`PodVolumes::check`]): a bound claim's volume must exist and its node
//!   affinity admit the node (`node(s) had volume node affinity conflict`); each
//!   unbound claim needs, on the node, an available static volume that matches it
//!   (class, size, access modes, volume mode, selector, node affinity; the smallest
//!   wins, a volume pre-bound to the claim first) or a class that can provision
//!   there (not `kubernetes.io/no-provisioner`, `allowedTopologies` admitting the
//!   node); a claim whose `selected-node` names another node rules the node out
//!   (`node(s) didn't find available persistent volumes to bind`).
//! * PreBind ([`Plan`]): the static volumes chosen are bound to their claims
//!   (`claimRef` + `pv.kubernetes.io/bound-by-controller`), the claims to provision
//!   get `volume.kubernetes.io/selected-node`; the pod is bound only once all its
//!   claims are bound ([`bindings_done`]).

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{
    PersistentVolume, PersistentVolumeClaim, Pod, TopologySelectorTerm, VolumeNodeAffinity,
};
use k8s_openapi::api::storage::v1::StorageClass;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use crate::filters::{node_selector_matches, NodeView};
use crate::storage::{annotation, claim_class, ANN_SELECTED_NODE};
use apimachinery::quantity::parse_milli;

/// Filter reason: no static volume and no provisioning for a claim on the node.
pub const REASON_BIND_CONFLICT: &str = "node(s) didn't find available persistent volumes to bind";
/// Filter reason: a bound volume's node affinity excludes the node.
pub const REASON_NODE_CONFLICT: &str = "node(s) had volume node affinity conflict";
/// Filter reason: a bound claim's volume does not exist.
pub const REASON_PV_NOT_EXIST: &str =
    "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)";
/// PreFilter reason: a claim without a `WaitForFirstConsumer` class is not bound.
pub const REASON_UNBOUND_IMMEDIATE: &str = "pod has unbound immediate PersistentVolumeClaims";
/// PV/PVC annotation: the binding was made by a controller.
pub const ANN_BOUND_BY_CONTROLLER: &str = "pv.kubernetes.io/bound-by-controller";
/// PVC annotation: the binder finished binding the claim.
pub const ANN_BIND_COMPLETED: &str = "pv.kubernetes.io/bind-completed";
/// Provisioner of classes that cannot provision.
pub const NO_PROVISIONER: &str = "kubernetes.io/no-provisioner";

/// What the scheduler reads of the cluster's storage.
pub trait StorageView {
    /// The claim `name` in the pod's namespace.
    fn claim(&self, name: &str) -> Option<Arc<PersistentVolumeClaim>>;
    /// The class `name`.
    fn class(&self, name: &str) -> Option<Arc<StorageClass>>;
    /// The volume `name`.
    fn volume(&self, name: &str) -> Option<Arc<PersistentVolume>>;
    /// The volumes of class `class` with no `claimRef`, and those whose `claimRef`
    /// names the claim `ns/name` (candidates for static binding).
    fn candidates(&self, class: &str, ns: &str, name: &str) -> Vec<Arc<PersistentVolume>>;
}

/// An unbound `WaitForFirstConsumer` claim of the pod.
#[derive(Clone, Debug)]
pub struct ClaimToBind {
    /// The claim.
    pub claim: Arc<PersistentVolumeClaim>,
    /// Its class.
    pub class: Arc<StorageClass>,
    /// Static volumes that may match it.
    pub candidates: Vec<Arc<PersistentVolume>>,
}

/// The pod's claims, classified (the PreFilter's result).
#[derive(Clone, Debug, Default)]
pub struct PodVolumes {
    /// Bound claims: the name of their volume and the volume (None: missing).
    pub bound: Vec<(String, Option<Arc<PersistentVolume>>)>,
    /// Unbound claims to bind or provision.
    pub to_bind: Vec<ClaimToBind>,
}

/// PreBind work for the chosen node.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Plan {
    /// `(volume, claim index in to_bind)`: static volumes to bind to claims.
    pub static_binds: Vec<(String, usize)>,
    /// Claims (index in to_bind) to provision on the node.
    pub provision: Vec<usize>,
}

impl Plan {
    /// Whether nothing is to be done before the pod is bound.
    pub fn is_empty(&self) -> bool {
        self.static_binds.is_empty() && self.provision.is_empty()
    }
}

fn claim_names(pod: &Pod) -> Vec<(String, bool)> {
    let pod_name = pod.metadata.name.as_deref().unwrap_or("");
    pod.spec
        .iter()
        .flat_map(|s| s.volumes.iter().flatten())
        .filter_map(|v| {
            if let Some(c) = &v.persistent_volume_claim {
                Some((c.claim_name.clone(), false))
            } else {
                v.ephemeral
                    .as_ref()
                    .map(|_| (format!("{pod_name}-{}", v.name), true))
            }
        })
        .collect()
}

/// The names of the claims `pod` uses (its PVC volumes and ephemeral volumes' claims).
pub fn pod_claims(pod: &Pod) -> Vec<String> {
    claim_names(pod).into_iter().map(|(n, _)| n).collect()
}

/// Whether the claim `c` was created for `pod` (upstream `ephemeral.VolumeIsForPod`).
pub fn owned_by(c: &PersistentVolumeClaim, pod: &Pod) -> bool {
    c.metadata.owner_references.iter().flatten().any(|o| {
        o.controller == Some(true) && o.uid == pod.metadata.uid.clone().unwrap_or_default()
    })
}

fn bound_volume(c: &PersistentVolumeClaim) -> Option<&str> {
    c.spec
        .as_ref()
        .and_then(|s| s.volume_name.as_deref())
        .filter(|n| !n.is_empty())
}

/// The PreFilter: the pod's claims classified, or why the pod fits on no node.
pub fn pod_volumes(pod: &Pod, view: &impl StorageView) -> Result<PodVolumes, String> {
    let ns = pod.metadata.namespace.as_deref().unwrap_or("");
    let mut out = PodVolumes::default();
    let mut immediate = false;
    for (name, ephemeral) in claim_names(pod) {
        let Some(c) = view.claim(&name) else {
            return Err(format!("persistentvolumeclaim \"{name}\" not found"));
        };
        if c.metadata.deletion_timestamp.is_some() {
            return Err(format!("persistentvolumeclaim \"{name}\" is being deleted"));
        }
        if ephemeral && !owned_by(&c, pod) {
            return Err(format!(
                "PVC {ns}/{name} was not created for pod {ns}/{} (pod is not owner)",
                pod.metadata.name.as_deref().unwrap_or("")
            ));
        }
        if let Some(pv) = bound_volume(&c) {
            out.bound.push((pv.to_string(), view.volume(pv)));
            continue;
        }
        let class_name = claim_class(&c);
        let class = (!class_name.is_empty())
            .then(|| view.class(class_name))
            .flatten()
            .filter(|sc| sc.volume_binding_mode.as_deref() == Some("WaitForFirstConsumer"));
        match class {
            Some(class) => {
                let candidates = view.candidates(class_name, ns, &name);
                out.to_bind.push(ClaimToBind {
                    claim: c,
                    class,
                    candidates,
                });
            }
            None => immediate = true,
        }
    }
    if immediate {
        return Err(REASON_UNBOUND_IMMEDIATE.into());
    }
    Ok(out)
}

/// Whether a volume's node affinity admits `node` (none admits every node).
pub fn volume_admits(affinity: Option<&VolumeNodeAffinity>, node: &NodeView) -> bool {
    match affinity.and_then(|a| a.required.as_ref()) {
        Some(sel) => node_selector_matches(sel, node),
        None => true,
    }
}

fn storage_request(c: &PersistentVolumeClaim) -> i128 {
    c.spec
        .as_ref()
        .and_then(|s| s.resources.as_ref())
        .and_then(|r| r.requests.as_ref())
        .and_then(|r| r.get("storage"))
        .and_then(|q| parse_milli(&q.0))
        .unwrap_or(0)
}

fn capacity(pv: &PersistentVolume) -> i128 {
    pv.spec
        .as_ref()
        .and_then(|s| s.capacity.as_ref())
        .and_then(|c| c.get("storage"))
        .and_then(|q| parse_milli(&q.0))
        .unwrap_or(0)
}

fn selector_matches(sel: &LabelSelector, labels: &BTreeMap<String, String>) -> bool {
    for (k, v) in sel.match_labels.iter().flatten() {
        if labels.get(k) != Some(v) {
            return false;
        }
    }
    sel.match_expressions.iter().flatten().all(|e| {
        let value = labels.get(&e.key);
        let values = e.values.as_deref().unwrap_or(&[]);
        match e.operator.as_str() {
            "In" => value.is_some_and(|v| values.contains(v)),
            "NotIn" => value.is_none_or(|v| !values.contains(v)),
            "Exists" => value.is_some(),
            "DoesNotExist" => value.is_none(),
            _ => false,
        }
    })
}

fn bound_to(pv: &PersistentVolume, c: &PersistentVolumeClaim) -> bool {
    let Some(r) = pv.spec.as_ref().and_then(|s| s.claim_ref.as_ref()) else {
        return false;
    };
    r.name == c.metadata.name
        && r.namespace == c.metadata.namespace
        && r.uid
            .as_deref()
            .is_none_or(|u| u.is_empty() || Some(u) == c.metadata.uid.as_deref())
}

/// Upstream `FindMatchingVolume` on the scheduler's path: the volume for claim `c` on
/// `node` among `volumes`, skipping `excluded`.
pub fn find_matching_volume<'a>(
    c: &PersistentVolumeClaim,
    volumes: &'a [Arc<PersistentVolume>],
    node: &NodeView,
    excluded: &HashSet<String>,
) -> Option<&'a Arc<PersistentVolume>> {
    let want = storage_request(c);
    let spec = c.spec.clone().unwrap_or_default();
    let mode = |m: Option<&str>| m.unwrap_or("Filesystem").to_string();
    let claim_mode = mode(spec.volume_mode.as_deref());
    let class = claim_class(c);
    let modes = spec.access_modes.clone().unwrap_or_default();
    let mut best: Option<(&Arc<PersistentVolume>, i128)> = None;
    for pv in volumes {
        let name = pv.metadata.name.as_deref().unwrap_or("");
        if excluded.contains(name) {
            continue;
        }
        let pspec = pv.spec.clone().unwrap_or_default();
        if pspec.claim_ref.is_some() && !bound_to(pv, c) {
            continue;
        }
        let size = capacity(pv);
        if size < want {
            continue;
        }
        if mode(pspec.volume_mode.as_deref()) != claim_mode {
            continue;
        }
        if pv.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let affinity_ok = volume_admits(pspec.node_affinity.as_ref(), node);
        if bound_to(pv, c) {
            return affinity_ok.then_some(pv);
        }
        if pv.status.as_ref().and_then(|s| s.phase.as_deref()) != Some("Available") {
            continue;
        }
        if let Some(sel) = &spec.selector {
            let empty = BTreeMap::new();
            if !selector_matches(sel, pv.metadata.labels.as_ref().unwrap_or(&empty)) {
                continue;
            }
        }
        let pv_class = pspec.storage_class_name.clone().unwrap_or_else(|| {
            annotation(&pv.metadata, crate::storage::ANN_BETA_CLASS)
                .unwrap_or("")
                .to_string()
        });
        if pv_class != class || !affinity_ok {
            continue;
        }
        let pv_modes = pspec.access_modes.clone().unwrap_or_default();
        if !modes.iter().all(|m| pv_modes.contains(m)) {
            continue;
        }
        if best.is_none_or(|(_, s)| size < s) {
            best = Some((pv, size));
        }
    }
    best.map(|(pv, _)| pv)
}

fn topology_admits(terms: &[TopologySelectorTerm], node: &NodeView) -> bool {
    terms.is_empty()
        || terms.iter().any(|t| {
            t.match_label_expressions.iter().flatten().all(|e| {
                node.labels
                    .get(&e.key)
                    .is_some_and(|v| e.values.contains(v))
            })
        })
}

/// Whether `class` can provision a volume reachable from `node`.
pub fn can_provision(class: &StorageClass, node: &NodeView) -> bool {
    class.provisioner != NO_PROVISIONER
        && topology_admits(class.allowed_topologies.as_deref().unwrap_or(&[]), node)
}

impl PodVolumes {
    /// Whether the pod has claims at all.
    pub fn is_empty(&self) -> bool {
        self.bound.is_empty() && self.to_bind.is_empty()
    }

    /// The Filter on `node`: the PreBind work there, or the reason it does not fit.
    pub fn check(&self, node: &NodeView) -> Result<Plan, &'static str> {
        for (_, pv) in &self.bound {
            let Some(pv) = pv else {
                return Err(REASON_PV_NOT_EXIST);
            };
            let affinity = pv.spec.as_ref().and_then(|s| s.node_affinity.as_ref());
            if !volume_admits(affinity, node) {
                return Err(REASON_NODE_CONFLICT);
            }
        }
        let mut plan = Plan::default();
        let mut excluded = HashSet::new();
        for (i, c) in self.to_bind.iter().enumerate() {
            if let Some(selected) = annotation(&c.claim.metadata, ANN_SELECTED_NODE) {
                if selected != node.name {
                    return Err(REASON_BIND_CONFLICT);
                }
                plan.provision.push(i);
                continue;
            }
            if let Some(pv) = find_matching_volume(&c.claim, &c.candidates, node, &excluded) {
                let name = pv.metadata.name.clone().unwrap_or_default();
                excluded.insert(name.clone());
                plan.static_binds.push((name, i));
            } else if can_provision(&c.class, node) {
                plan.provision.push(i);
            } else {
                return Err(REASON_BIND_CONFLICT);
            }
        }
        Ok(plan)
    }
}

/// Upstream `checkBindings`: `Ok(true)` when every claim of the pod is bound (volume
/// name set, `bind-completed`) to a volume that admits `node`; `Ok(false)` while
/// binding goes on; `Err` when it cannot succeed any more (a claim to provision on
/// `node`, named in `provisioning`, lost its `selected-node`).
pub fn bindings_done(
    pod: &Pod,
    view: &impl StorageView,
    node: &NodeView,
    provisioning: &HashSet<String>,
) -> Result<bool, String> {
    let mut done = true;
    for name in pod_claims(pod) {
        let Some(c) = view.claim(&name) else {
            return Err(format!("failed to get cached claim {name:?}"));
        };
        match bound_volume(&c) {
            Some(pv) if annotation(&c.metadata, ANN_BIND_COMPLETED).is_some() => {
                let Some(pv) = view.volume(pv) else {
                    return Err(format!("failed to get pv {pv:?} from cache"));
                };
                let affinity = pv.spec.as_ref().and_then(|s| s.node_affinity.as_ref());
                if !volume_admits(affinity, node) {
                    return Err(format!(
                        "pv {:?} node affinity doesn't match node {:?}",
                        pv.metadata.name.as_deref().unwrap_or(""),
                        node.name
                    ));
                }
            }
            Some(_) => done = false,
            None if provisioning.contains(&name) => {
                match annotation(&c.metadata, ANN_SELECTED_NODE) {
                    None => return Err(format!("selectedNode annotation reset for PVC {name:?}")),
                    Some(n) if n != node.name => {
                        return Err(format!("provisioning failed for PVC {name:?}"))
                    }
                    Some(_) => done = false,
                }
            }
            // a static volume the scheduler chose: the binder completes the binding
            None => done = false,
        }
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::collections::HashMap;

    #[derive(Default)]
    struct View {
        claims: HashMap<String, Arc<PersistentVolumeClaim>>,
        classes: HashMap<String, Arc<StorageClass>>,
        volumes: Vec<Arc<PersistentVolume>>,
    }

    impl StorageView for View {
        fn claim(&self, name: &str) -> Option<Arc<PersistentVolumeClaim>> {
            self.claims.get(name).cloned()
        }
        fn class(&self, name: &str) -> Option<Arc<StorageClass>> {
            self.classes.get(name).cloned()
        }
        fn volume(&self, name: &str) -> Option<Arc<PersistentVolume>> {
            self.volumes
                .iter()
                .find(|v| v.metadata.name.as_deref() == Some(name))
                .cloned()
        }
        fn candidates(&self, _: &str, _: &str, _: &str) -> Vec<Arc<PersistentVolume>> {
            self.volumes.clone()
        }
    }

    fn claim(name: &str, v: serde_json::Value) -> Arc<PersistentVolumeClaim> {
        let mut base = json!({
            "metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}")},
            "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "wait",
                "resources": {"requests": {"storage": "1Gi"}}},
        });
        merge(&mut base, v);
        Arc::new(serde_json::from_value(base).expect("claim"))
    }

    fn merge(a: &mut serde_json::Value, b: serde_json::Value) {
        match (a, b) {
            (serde_json::Value::Object(a), serde_json::Value::Object(b)) => {
                for (k, v) in b {
                    merge(a.entry(k).or_insert(serde_json::Value::Null), v);
                }
            }
            (a, b) => *a = b,
        }
    }

    fn class(name: &str, mode: &str, provisioner: &str) -> Arc<StorageClass> {
        Arc::new(
            serde_json::from_value(json!({"metadata": {"name": name},
                "provisioner": provisioner, "volumeBindingMode": mode}))
            .expect("class"),
        )
    }

    /// A volume of `size` on `node` (None: anywhere), Available unless claimed.
    fn volume(
        name: &str,
        size: &str,
        node: Option<&str>,
        v: serde_json::Value,
    ) -> Arc<PersistentVolume> {
        let mut base = json!({
            "metadata": {"name": name},
            "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "wait",
                "capacity": {"storage": size}},
            "status": {"phase": "Available"},
        });
        if let Some(n) = node {
            base["spec"]["nodeAffinity"] = json!({"required": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In",
                    "values": [n]}]}]}});
        }
        merge(&mut base, v);
        Arc::new(serde_json::from_value(base).expect("volume"))
    }

    fn node(name: &str) -> NodeView {
        NodeView {
            name: name.into(),
            labels: BTreeMap::from([("kubernetes.io/hostname".to_string(), name.to_string())]),
            ..Default::default()
        }
    }

    fn pod(volumes: serde_json::Value) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": "web-0", "namespace": "ns", "uid": "pod-uid"},
            "spec": {"containers": [{"name": "c"}], "volumes": volumes},
        }))
        .expect("pod")
    }

    fn pvc_volume(claim: &str) -> serde_json::Value {
        json!({"name": claim, "persistentVolumeClaim": {"claimName": claim}})
    }

    fn view() -> View {
        let mut v = View::default();
        for c in [
            class("wait", "WaitForFirstConsumer", "csi.sim.coxswain.dev"),
            class("now", "Immediate", "csi.sim.coxswain.dev"),
            class("local", "WaitForFirstConsumer", NO_PROVISIONER),
        ] {
            v.classes.insert(c.metadata.name.clone().unwrap(), c);
        }
        v
    }

    #[test]
    fn prefilter_rejects_missing_deleting_foreign_and_immediate_claims() {
        let mut v = view();
        let p = pod(json!([pvc_volume("data")]));
        assert_eq!(
            pod_volumes(&p, &v).err().as_deref(),
            Some("persistentvolumeclaim \"data\" not found")
        );
        v.claims.insert(
            "data".into(),
            claim(
                "data",
                json!({"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"}}),
            ),
        );
        assert_eq!(
            pod_volumes(&p, &v).err().as_deref(),
            Some("persistentvolumeclaim \"data\" is being deleted")
        );
        v.claims.insert(
            "data".into(),
            claim("data", json!({"spec": {"storageClassName": "now"}})),
        );
        assert_eq!(
            pod_volumes(&p, &v).err().as_deref(),
            Some(REASON_UNBOUND_IMMEDIATE)
        );
        // a class that does not exist is not WaitForFirstConsumer either
        v.claims.insert(
            "data".into(),
            claim("data", json!({"spec": {"storageClassName": "gone"}})),
        );
        assert_eq!(
            pod_volumes(&p, &v).err().as_deref(),
            Some(REASON_UNBOUND_IMMEDIATE)
        );
        v.claims.insert("data".into(), claim("data", json!({})));
        let pv = pod_volumes(&p, &v).expect("wffc");
        assert_eq!(pv.to_bind.len(), 1);
        // generic ephemeral volumes: the claim <pod>-<volume> must be the pod's
        let e = pod(
            json!([{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}}}]),
        );
        assert_eq!(
            pod_volumes(&e, &v).err().as_deref(),
            Some("persistentvolumeclaim \"web-0-scratch\" not found")
        );
        v.claims
            .insert("web-0-scratch".into(), claim("web-0-scratch", json!({})));
        assert_eq!(
            pod_volumes(&e, &v).err().as_deref(),
            Some("PVC ns/web-0-scratch was not created for pod ns/web-0 (pod is not owner)")
        );
        v.claims.insert(
            "web-0-scratch".into(),
            claim(
                "web-0-scratch",
                json!({"metadata": {"ownerReferences": [{"apiVersion": "v1",
                "kind": "Pod", "name": "web-0", "uid": "pod-uid", "controller": true}]}}),
            ),
        );
        assert!(pod_volumes(&e, &v).is_ok());
    }

    #[test]
    fn bound_volumes_pin_the_pod_to_their_nodes() {
        let mut v = view();
        v.claims.insert(
            "data".into(),
            claim("data", json!({"spec": {"volumeName": "pv-a"}})),
        );
        let p = pod(json!([pvc_volume("data")]));
        let vols = pod_volumes(&p, &v).expect("bound");
        assert_eq!(vols.check(&node("a")), Err(REASON_PV_NOT_EXIST));
        v.volumes.push(volume("pv-a", "1Gi", Some("a"), json!({})));
        let vols = pod_volumes(&p, &v).expect("bound");
        assert_eq!(vols.check(&node("a")), Ok(Plan::default()));
        assert_eq!(vols.check(&node("b")), Err(REASON_NODE_CONFLICT));
    }

    #[test]
    fn unbound_claims_take_the_smallest_local_volume_or_are_provisioned() {
        let mut v = view();
        v.volumes = vec![
            volume("big-a", "10Gi", Some("a"), json!({})),
            volume("small-a", "2Gi", Some("a"), json!({})),
            volume("tiny-a", "500Mi", Some("a"), json!({})),
            volume(
                "rox-b",
                "1Gi",
                Some("b"),
                json!({"spec": {"accessModes": ["ReadOnlyMany"]}}),
            ),
            volume(
                "block-c",
                "1Gi",
                Some("c"),
                json!({"spec": {"volumeMode": "Block"}}),
            ),
            volume(
                "bound-c",
                "1Gi",
                Some("c"),
                json!({"status": {"phase": "Bound"},
                "spec": {"claimRef": {"name": "other", "namespace": "ns"}}}),
            ),
        ];
        v.claims.insert("data".into(), claim("data", json!({})));
        let p = pod(json!([pvc_volume("data")]));
        let vols = pod_volumes(&p, &v).expect("wffc");
        assert_eq!(
            vols.check(&node("a")),
            Ok(Plan {
                static_binds: vec![("small-a".into(), 0)],
                provision: vec![]
            })
        );
        // no fitting volume on b or c: the class provisions there
        for n in ["b", "c"] {
            assert_eq!(
                vols.check(&node(n)),
                Ok(Plan {
                    static_binds: vec![],
                    provision: vec![0]
                })
            );
        }
        // two claims never share a volume
        v.claims.insert("logs".into(), claim("logs", json!({})));
        let p2 = pod(json!([pvc_volume("data"), pvc_volume("logs")]));
        let vols = pod_volumes(&p2, &v).expect("wffc");
        assert_eq!(
            vols.check(&node("a")),
            Ok(Plan {
                static_binds: vec![("small-a".into(), 0), ("big-a".into(), 1)],
                provision: vec![]
            })
        );
        // no-provisioner classes bind static volumes only
        v.claims.insert(
            "data".into(),
            claim("data", json!({"spec": {"storageClassName": "local"}})),
        );
        let vols = pod_volumes(&p, &v).expect("wffc");
        assert_eq!(vols.check(&node("b")), Err(REASON_BIND_CONFLICT));
        // a volume pre-bound to the claim wins, on its node only
        v.claims.insert("data".into(), claim("data", json!({})));
        v.volumes.push(volume(
            "mine-b",
            "5Gi",
            Some("b"),
            json!({"status": {"phase": "Pending"},
            "spec": {"claimRef": {"name": "data", "namespace": "ns"}}}),
        ));
        let vols = pod_volumes(&p, &v).expect("wffc");
        assert_eq!(
            vols.check(&node("b")),
            Ok(Plan {
                static_binds: vec![("mine-b".into(), 0)],
                provision: vec![]
            })
        );
        // a selected node rules out the others
        v.claims.insert(
            "data".into(),
            claim(
                "data",
                json!({"metadata": {"annotations": {ANN_SELECTED_NODE: "c"}}}),
            ),
        );
        let vols = pod_volumes(&p, &v).expect("wffc");
        assert_eq!(vols.check(&node("a")), Err(REASON_BIND_CONFLICT));
        assert_eq!(
            vols.check(&node("c")),
            Ok(Plan {
                static_binds: vec![],
                provision: vec![0]
            })
        );
    }

    #[test]
    fn allowed_topologies_limit_provisioning() {
        let mut sc = (*class("zonal", "WaitForFirstConsumer", "x")).clone();
        sc.allowed_topologies = Some(vec![serde_json::from_value(
            json!({"matchLabelExpressions": [
            {"key": "kubernetes.io/hostname", "values": ["a", "b"]}]}),
        )
        .expect("term")]);
        assert!(can_provision(&sc, &node("a")));
        assert!(!can_provision(&sc, &node("c")));
    }

    #[test]
    fn bindings_complete_when_every_claim_is_bound_on_the_node() {
        let mut v = view();
        let p = pod(json!([pvc_volume("data")]));
        let provisioning = HashSet::from(["data".to_string()]);
        v.claims.insert(
            "data".into(),
            claim(
                "data",
                json!({"metadata": {"annotations": {ANN_SELECTED_NODE: "a"}}}),
            ),
        );
        assert_eq!(bindings_done(&p, &v, &node("a"), &provisioning), Ok(false));
        v.claims.insert("data".into(), claim("data", json!({})));
        assert_eq!(
            bindings_done(&p, &v, &node("a"), &provisioning),
            Err("selectedNode annotation reset for PVC \"data\"".into())
        );
        v.claims.insert(
            "data".into(),
            claim(
                "data",
                json!({"metadata": {"annotations": {ANN_SELECTED_NODE: "a",
                ANN_BIND_COMPLETED: "yes"}}, "spec": {"volumeName": "pv-a"}}),
            ),
        );
        v.volumes.push(volume("pv-a", "1Gi", Some("a"), json!({})));
        assert_eq!(bindings_done(&p, &v, &node("a"), &provisioning), Ok(true));
        assert!(bindings_done(&p, &v, &node("b"), &provisioning).is_err());
    }
}
