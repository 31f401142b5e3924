//! The attach/detach controller: kube-controller-manager's
//! `persistentvolume-attach-detach-controller` (alias `attachdetach`, upstream
//! `pkg/controller/volume/attachdetach`), for CSI volumes.
//!
//! It only manages nodes annotated `volumes.kubernetes.io/controller-managed-attach-detach:
//! "true"` (kubelets set it by default; the simulated nodes carry it). The desired state
//! of such a node: every CSI PersistentVolume that a pod scheduled there and not
//! terminated uses, through a Bound claim (a `persistentVolumeClaim` volume or a generic
//! ephemeral volume's claim), when the volume's CSIDriver requires attachment (no
//! CSIDriver object means it does, as upstream; inline CSI volumes are never
//! attachable).
//!
//! For a desired volume it creates the `storage.k8s.io/v1` VolumeAttachment
//! `csi-<sha256(volumeHandle + driver + nodeName)>` (`spec.attacher`, `spec.nodeName`,
//! `spec.source.persistentVolumeName`) and waits for the external attacher to set
//! `status.attached`; the node's `status.volumesAttached` then lists
//! `kubernetes.io/csi/<driver>^<volumeHandle>` and the pods get a Normal
//! `SuccessfulAttachVolume` event `AttachVolume.Attach succeeded for volume "<pv>"`
//! (an attach error gives a Warning `FailedAttachVolume`; so does a volume that only one
//! node may use while it is attached to another: upstream's `Multi-Attach error`). A
//! volume no pod on the node
//! needs any more is detached once the kubelet no longer reports it in
//! `status.volumesInUse`: it leaves `volumesAttached` first, then its VolumeAttachment is
//! deleted. On a node that is not Ready or is tainted out-of-service the wait ends after
//! six minutes (upstream's `maxWaitForUnmountDuration`) unless
//! `--disable-force-detach-on-timeout`.
//!
//! Every change of a pod, node, claim, volume, CSIDriver or VolumeAttachment enqueues
//! the nodes concerned; every `--attach-detach-reconcile-sync-period` (1m, more than a
//! second) all nodes are looked at again unless `--disable-attach-detach-reconcile-sync`.

#[cfg(test)]
mod tests;

use crate::clientbuilder::ClusterAccess;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use coxswain_runtime::builder::ControllerBuilder;
use coxswain_runtime::cache::Store;
use coxswain_runtime::controller::{
    Action, Context, Controller, ControllerOptions, ReconcileError, ReconcileResult, Reconciler,
};
use coxswain_runtime::events::{object_reference, EventRecorder, EventType};
use coxswain_runtime::handler::Requests;
use coxswain_runtime::ObjectKey;
use k8s_openapi::api::core::v1::{Node, PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::storage::v1::{CSIDriver, VolumeAttachment};
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::common::{add_pod_pvc_index, volume_claim_name, POD_PVC_INDEX};

/// Name of the controller.
pub const CONTROLLER_NAME: &str = "persistentvolume-attach-detach-controller";
/// The event source (`attachdetach-controller`).
pub const EVENT_SOURCE: &str = "attachdetach-controller";
/// The node annotation that hands a node's attachments to this controller.
pub const CONTROLLER_MANAGED_ANNOTATION: &str =
    "volumes.kubernetes.io/controller-managed-attach-detach";
/// How long a volume in use on an unhealthy node blocks its detach (upstream
/// `maxWaitForUnmountDuration`).
pub const MAX_WAIT_FOR_UNMOUNT: Duration = Duration::from_secs(6 * 60);
/// The taint of a node declared out of service.
pub const TAINT_OUT_OF_SERVICE: &str = "node.kubernetes.io/out-of-service";
/// The pod index by node name.
pub const POD_NODE_INDEX: &str = "attachdetach-pod-node";

/// The controller's options (upstream `AttachDetachControllerConfiguration`).
#[derive(Clone, Debug)]
pub struct AttachDetachControllerOptions {
    /// How often every node is looked at again (`--attach-detach-reconcile-sync-period`,
    /// 1m; must be more than a second).
    pub reconciler_sync_loop_period: Duration,
    /// No periodic look (`--disable-attach-detach-reconcile-sync`).
    pub disable_attach_detach_reconciler_sync: bool,
    /// Never detach a volume still in use on an unhealthy node
    /// (`--disable-force-detach-on-timeout`).
    pub disable_force_detach_on_timeout: bool,
    /// How long a volume in use on an unhealthy node blocks its detach (upstream's
    /// constant six minutes; no flag; shorter in tests).
    pub max_wait_for_unmount: Duration,
}

impl Default for AttachDetachControllerOptions {
    fn default() -> Self {
        AttachDetachControllerOptions {
            reconciler_sync_loop_period: Duration::from_secs(60),
            disable_attach_detach_reconciler_sync: false,
            disable_force_detach_on_timeout: false,
            max_wait_for_unmount: MAX_WAIT_FOR_UNMOUNT,
        }
    }
}

impl AttachDetachControllerOptions {
    /// Upstream `AttachDetachControllerOptions.Validate`.
    pub fn validate(&self) -> Result<(), String> {
        if self.reconciler_sync_loop_period < Duration::from_secs(1) {
            return Err("duration time must be greater than one second as set via command line option reconcile-sync-loop-period".into());
        }
        Ok(())
    }
}

/// The controller's service account with `--use-service-account-credentials`
/// (upstream `ClientOrDie("attachdetach-controller")`).
pub const SERVICE_ACCOUNT: &str = "attachdetach-controller";

/// The registry entry: `persistentvolume-attach-detach-controller`, alias `attachdetach`.
pub fn descriptor() -> crate::registry::Descriptor {
    crate::registry::Descriptor {
        name: CONTROLLER_NAME,
        aliases: &["attachdetach"],
        disabled_by_default: false,
        constructor: |ctx| {
            let o = &ctx.options.attach_detach;
            o.validate()?;
            Ok(Some(Box::new(attach_detach_controller(
                &ctx.clients(SERVICE_ACCOUNT)?,
                o,
            ))))
        },
    }
}

/// The VolumeAttachment name the CSI attacher uses: `csi-` and the hex SHA-256 of
/// volume handle, driver and node name.
pub fn attachment_name(volume_handle: &str, driver: &str, node: &str) -> String {
    let digest = Sha256::digest(format!("{volume_handle}{driver}{node}").as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("csi-{hex}")
}

/// The unique volume name a node's `volumesAttached` and `volumesInUse` use for a CSI
/// volume: `kubernetes.io/csi/<driver>^<volumeHandle>`.
pub fn unique_volume_name(driver: &str, volume_handle: &str) -> String {
    format!("kubernetes.io/csi/{driver}^{volume_handle}")
}

/// Whether the node's attachments are this controller's business.
pub fn is_managed(node: &Node) -> bool {
    node.annotations()
        .get(CONTROLLER_MANAGED_ANNOTATION)
        .is_some_and(|v| v == "true")
}

/// Upstream `volumeutil.IsPodTerminated`.
fn is_pod_terminated(pod: &Pod) -> bool {
    crate::volume::pvcprotection::is_pod_terminated(pod)
}

/// One volume a node should have attached.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DesiredVolume {
    /// The PersistentVolume.
    pub pv: String,
    /// The CSI driver.
    pub driver: String,
    /// The CSI volume handle.
    pub handle: String,
    /// The pods (namespace, name) on the node that use it.
    pub pods: Vec<(String, String)>,
}

/// Where the desired state is read from.
pub trait Lookup {
    /// A claim.
    fn pvc(&self, namespace: &str, name: &str) -> Option<Arc<PersistentVolumeClaim>>;
    /// A volume.
    fn pv(&self, name: &str) -> Option<Arc<PersistentVolume>>;
    /// A CSIDriver.
    fn csi_driver(&self, name: &str) -> Option<Arc<CSIDriver>>;
}

/// Whether the driver needs attaching: unless its CSIDriver says `attachRequired:
/// false` (no CSIDriver object: attach required).
pub fn attach_required(driver: Option<&CSIDriver>) -> bool {
    driver.and_then(|d| d.spec.attach_required).unwrap_or(true)
}

/// The attachable volumes `pods` (those on one node) need, by unique volume name
/// (upstream's desired state of world for one node).
pub fn desired_volumes(pods: &[Arc<Pod>], lookup: &impl Lookup) -> BTreeMap<String, DesiredVolume> {
    let mut out: BTreeMap<String, DesiredVolume> = BTreeMap::new();
    for pod in pods {
        if is_pod_terminated(pod) {
            continue;
        }
        let ns = pod.namespace().unwrap_or_default();
        for v in pod.spec.iter().flat_map(|s| s.volumes.iter().flatten()) {
            let claim = if let Some(c) = &v.persistent_volume_claim {
                c.claim_name.clone()
            } else if v.ephemeral.is_some() {
                volume_claim_name(pod, v)
            } else {
                continue;
            };
            let Some(pvc) = lookup.pvc(&ns, &claim) else {
                continue;
            };
            let phase = pvc.status.as_ref().and_then(|s| s.phase.as_deref());
            let volume_name = pvc
                .spec
                .as_ref()
                .and_then(|s| s.volume_name.as_deref())
                .unwrap_or_default();
            if phase != Some("Bound") || volume_name.is_empty() {
                continue;
            }
            let Some(pv) = lookup.pv(volume_name) else {
                continue;
            };
            let bound_here = pv
                .spec
                .as_ref()
                .and_then(|s| s.claim_ref.as_ref())
                .is_some_and(|r| r.uid == pvc.metadata.uid);
            let Some(csi) = pv.spec.as_ref().and_then(|s| s.csi.as_ref()) else {
                continue;
            };
            if !bound_here || !attach_required(lookup.csi_driver(&csi.driver).as_deref()) {
                continue;
            }
            let entry = out
                .entry(unique_volume_name(&csi.driver, &csi.volume_handle))
                .or_insert_with(|| DesiredVolume {
                    pv: pv.name_any(),
                    driver: csi.driver.clone(),
                    handle: csi.volume_handle.clone(),
                    pods: Vec::new(),
                });
            let who = (ns.clone(), pod.name_any());
            if !entry.pods.contains(&who) {
                entry.pods.push(who);
            }
        }
    }
    out
}

/// The VolumeAttachment of `volume` on `node`.
pub fn volume_attachment(volume: &DesiredVolume, node: &str) -> VolumeAttachment {
    serde_json::from_value(json!({
        "apiVersion": "storage.k8s.io/v1",
        "kind": "VolumeAttachment",
        "metadata": {"name": attachment_name(&volume.handle, &volume.driver, node)},
        "spec": {
            "attacher": volume.driver,
            "nodeName": node,
            "source": {"persistentVolumeName": volume.pv},
        },
    }))
    .expect("a VolumeAttachment")
}

/// Whether a volume may be attached to several nodes (upstream `IsMultiAttachAllowed`):
/// a volume without access modes or with ReadWriteMany or ReadOnlyMany.
pub fn multi_attach_allowed(pv: &PersistentVolume) -> bool {
    let modes = pv
        .spec
        .as_ref()
        .and_then(|s| s.access_modes.clone())
        .unwrap_or_default();
    modes.is_empty()
        || modes
            .iter()
            .any(|m| m == "ReadWriteMany" || m == "ReadOnlyMany")
}

/// The note of the `FailedAttachVolume` event a pod in `namespace` gets when its volume
/// `pv` is exclusively attached elsewhere (upstream `reportMultiAttachError`): the pods
/// on other nodes that use it, named only when they are in the pod's own namespace.
pub fn multi_attach_message(pv: &str, namespace: &str, others: &[(String, String)]) -> String {
    let local: Vec<&str> = others
        .iter()
        .filter(|(ns, _)| ns == namespace)
        .map(|(_, n)| n.as_str())
        .collect();
    let elsewhere = others.len() - local.len();
    let why = if others.is_empty() {
        "Volume is already exclusively attached to one node and can't be attached to another"
            .to_string()
    } else if local.is_empty() {
        format!("Volume is already used by {elsewhere} pod(s) in different namespaces")
    } else if elsewhere > 0 {
        format!(
            "Volume is already used by pod(s) {} and {elsewhere} pod(s) in different namespaces",
            local.join(", ")
        )
    } else {
        format!("Volume is already used by pod(s) {}", local.join(", "))
    };
    format!("Multi-Attach error for volume {pv:?} {why}")
}

fn node_healthy(node: &Node) -> bool {
    let ready = node
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == "Ready"))
        .is_some_and(|c| c.status == "True");
    let out_of_service = node
        .spec
        .as_ref()
        .and_then(|s| s.taints.as_ref())
        .is_some_and(|ts| ts.iter().any(|t| t.key == TAINT_OUT_OF_SERVICE));
    ready && !out_of_service
}

fn in_use(node: &Node) -> BTreeSet<String> {
    node.status
        .as_ref()
        .and_then(|s| s.volumes_in_use.clone())
        .unwrap_or_default()
        .into_iter()
        .collect()
}

fn reported(node: &Node) -> Vec<String> {
    node.status
        .as_ref()
        .and_then(|s| s.volumes_attached.as_ref())
        .map(|v| v.iter().map(|a| a.name.clone()).collect())
        .unwrap_or_default()
}

/// An attachment on one node as the controller sees it.
#[derive(Clone, Debug)]
pub struct Attachment {
    /// The VolumeAttachment's name.
    pub name: String,
    /// The unique volume name (from its PersistentVolume), if known.
    pub unique: Option<String>,
    /// `status.attached`.
    pub attached: bool,
}

/// What one sync of a node does (the reconciler's decisions).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// Unique names of the desired volumes without a VolumeAttachment (to create).
    pub attach: Vec<String>,
    /// VolumeAttachments to delete now.
    pub detach: Vec<String>,
    /// What `status.volumesAttached` lists afterwards.
    pub volumes_attached: Vec<String>,
    /// When to look again for a detach blocked by a volume in use.
    pub recheck_after: Option<Duration>,
}

/// The decisions for one node: `waited` tells how long each detach candidate (by
/// VolumeAttachment name) has been waiting for the volume to be unmounted.
pub fn plan(
    node: &Node,
    desired: &BTreeMap<String, DesiredVolume>,
    attachments: &[Attachment],
    waited: &impl Fn(&str) -> Duration,
    options: &AttachDetachControllerOptions,
) -> Plan {
    let mut p = Plan::default();
    let node_name = node.name_any();
    let have: BTreeSet<&str> = attachments.iter().map(|a| a.name.as_str()).collect();
    for (unique, v) in desired {
        if !have.contains(attachment_name(&v.handle, &v.driver, &node_name).as_str()) {
            p.attach.push(unique.clone());
        }
    }
    let mounted = in_use(node);
    let mut listed = BTreeSet::new();
    for a in attachments {
        let wanted = a.unique.as_ref().is_some_and(|u| desired.contains_key(u));
        if !wanted {
            let still_mounted = a.unique.as_ref().is_some_and(|u| mounted.contains(u));
            let timed_out = !options.disable_force_detach_on_timeout
                && !node_healthy(node)
                && waited(&a.name) >= options.max_wait_for_unmount;
            if !still_mounted || timed_out {
                p.detach.push(a.name.clone());
                continue;
            }
            if !options.disable_force_detach_on_timeout && !node_healthy(node) {
                let left = options.max_wait_for_unmount.saturating_sub(waited(&a.name));
                p.recheck_after = Some(p.recheck_after.map_or(left, |r| r.min(left)));
            }
        }
        if a.attached {
            if let Some(u) = &a.unique {
                listed.insert(u.clone());
            }
        }
    }
    p.volumes_attached = listed.into_iter().collect();
    p
}

/// The controller as a runnable of `mgr`.
pub fn attach_detach_controller(
    mgr: &impl ClusterAccess,
    options: &AttachDetachControllerOptions,
) -> Controller<AttachDetachReconciler> {
    let cache = mgr.cache();
    add_pod_pvc_index(cache);
    let pods = cache.informer::<Pod>().store().clone();
    if !pods.has_index(POD_NODE_INDEX) {
        cache.index_field::<Pod>(POD_NODE_INDEX, |p: &Pod| {
            p.spec
                .as_ref()
                .and_then(|s| s.node_name.clone())
                .filter(|n| !n.is_empty())
                .into_iter()
                .collect()
        });
    }
    let pvcs = cache.informer::<PersistentVolumeClaim>().store().clone();
    let nodes = cache.informer::<Node>().store().clone();
    let reconciler = AttachDetachReconciler {
        nodes: nodes.clone(),
        pods: pods.clone(),
        pvcs: pvcs.clone(),
        pvs: cache.informer::<PersistentVolume>().store().clone(),
        drivers: cache.informer::<CSIDriver>().store().clone(),
        attachments: cache.informer::<VolumeAttachment>().store().clone(),
        client: mgr.kube_client().clone(),
        recorder: mgr.event_recorder(EVENT_SOURCE),
        options: options.clone(),
        waiting: Mutex::new(HashMap::new()),
        multi_attach_reported: Mutex::new(BTreeSet::new()),
    };
    let node_of = |p: &Pod| -> Vec<ObjectKey> {
        p.spec
            .as_ref()
            .and_then(|s| s.node_name.as_deref())
            .filter(|n| !n.is_empty())
            .map(ObjectKey::cluster)
            .into_iter()
            .collect()
    };
    let pods_of_claim = {
        let pods = pods.clone();
        move |ns: &str, name: &str| -> Vec<ObjectKey> {
            pods.by_index(POD_PVC_INDEX, &format!("{ns}/{name}"))
                .unwrap_or_default()
                .iter()
                .flat_map(|p| node_of(p))
                .collect()
        }
    };
    let claim_nodes = pods_of_claim.clone();
    let attachment_nodes = pods_of_claim.clone();
    let va_pvs = cache.informer::<PersistentVolume>().store().clone();
    let volume_nodes = pods_of_claim;
    let all_nodes = nodes.clone();
    let every_node = nodes.clone();
    let mut builder = ControllerBuilder::new(cache).named(CONTROLLER_NAME);
    if !options.disable_attach_detach_reconciler_sync {
        builder = builder.every(
            options.reconciler_sync_loop_period,
            move |q: &Requests<'_, ObjectKey>| {
                for k in every_node.keys() {
                    q.add(k);
                }
            },
        );
    }
    builder
        .with_options(ControllerOptions::workers(1))
        .for_::<Node>()
        .watches::<Pod>(node_of)
        .watches::<VolumeAttachment>(move |va: &VolumeAttachment| {
            // its node, and the nodes of other pods waiting for the volume (multi-attach)
            let mut keys = vec![ObjectKey::cluster(&va.spec.node_name)];
            let claim = va
                .spec
                .source
                .persistent_volume_name
                .as_deref()
                .and_then(|pv| va_pvs.get(&ObjectKey::cluster(pv)))
                .and_then(|pv| pv.spec.as_ref()?.claim_ref.clone());
            if let Some(r) = claim {
                keys.extend(attachment_nodes(
                    r.namespace.as_deref().unwrap_or_default(),
                    r.name.as_deref().unwrap_or_default(),
                ));
            }
            keys
        })
        .watches::<PersistentVolumeClaim>(move |c: &PersistentVolumeClaim| {
            claim_nodes(&c.namespace().unwrap_or_default(), &c.name_any())
        })
        .watches::<PersistentVolume>(move |v: &PersistentVolume| {
            v.spec
                .as_ref()
                .and_then(|s| s.claim_ref.as_ref())
                .map(|r| {
                    volume_nodes(
                        r.namespace.as_deref().unwrap_or_default(),
                        r.name.as_deref().unwrap_or_default(),
                    )
                })
                .unwrap_or_default()
        })
        .watches::<CSIDriver>(move |_: &CSIDriver| all_nodes.keys())
        .build(reconciler)
}

/// Attaches and detaches the volumes of one node.
pub struct AttachDetachReconciler {
    nodes: Arc<Store<Node>>,
    pods: Arc<Store<Pod>>,
    pvcs: Arc<Store<PersistentVolumeClaim>>,
    pvs: Arc<Store<PersistentVolume>>,
    drivers: Arc<Store<CSIDriver>>,
    attachments: Arc<Store<VolumeAttachment>>,
    client: kube::Client,
    recorder: EventRecorder,
    options: AttachDetachControllerOptions,
    /// Detach candidates still mounted: since when (by VolumeAttachment name).
    waiting: Mutex<HashMap<String, Instant>>,
    /// Multi-attach errors already reported, by (pod UID, volume), once each as
    /// upstream's `MultiAttachErrorReported`.
    multi_attach_reported: Mutex<BTreeSet<(String, String)>>,
}

impl Lookup for AttachDetachReconciler {
    fn pvc(&self, namespace: &str, name: &str) -> Option<Arc<PersistentVolumeClaim>> {
        self.pvcs.get(&ObjectKey::namespaced(namespace, name))
    }

    fn pv(&self, name: &str) -> Option<Arc<PersistentVolume>> {
        self.pvs.get(&ObjectKey::cluster(name))
    }

    fn csi_driver(&self, name: &str) -> Option<Arc<CSIDriver>> {
        self.drivers.get(&ObjectKey::cluster(name))
    }
}

impl AttachDetachReconciler {
    fn pod_event(&self, pods: &[(String, String)], type_: EventType, reason: &str, note: &str) {
        for (ns, name) in pods {
            if let Some(pod) = self.pods.get(&ObjectKey::namespaced(ns, name)) {
                self.recorder.event(
                    &object_reference(pod.as_ref()),
                    None,
                    type_,
                    reason,
                    "Attach",
                    note,
                );
            }
        }
    }
}

impl AttachDetachReconciler {
    /// Upstream's multi-attach check: a volume that may be attached to one node only and
    /// has a VolumeAttachment on another node is not attached here; its pods get a
    /// `FailedAttachVolume` event once.
    fn blocked_by_multi_attach(&self, v: &DesiredVolume, node_name: &str) -> bool {
        let Some(pv) = self.pv(&v.pv) else {
            return false;
        };
        if multi_attach_allowed(&pv) {
            return false;
        }
        let elsewhere = self.attachments.list().into_iter().any(|va| {
            va.spec.node_name != node_name
                && va.spec.source.persistent_volume_name.as_deref() == Some(v.pv.as_str())
        });
        if !elsewhere {
            return false;
        }
        // the pods on other nodes that use the volume
        let others: Vec<(String, String)> = pv
            .spec
            .as_ref()
            .and_then(|s| s.claim_ref.as_ref())
            .map(|r| {
                let key = format!(
                    "{}/{}",
                    r.namespace.as_deref().unwrap_or_default(),
                    r.name.as_deref().unwrap_or_default()
                );
                self.pods
                    .by_index(POD_PVC_INDEX, &key)
                    .unwrap_or_default()
                    .iter()
                    .filter(|p| {
                        !is_pod_terminated(p)
                            && p.spec
                                .as_ref()
                                .and_then(|s| s.node_name.as_deref())
                                .is_some_and(|n| !n.is_empty() && n != node_name)
                    })
                    .map(|p| (p.namespace().unwrap_or_default(), p.name_any()))
                    .collect()
            })
            .unwrap_or_default();
        for (ns, name) in &v.pods {
            let Some(pod) = self.pods.get(&ObjectKey::namespaced(ns, name)) else {
                continue;
            };
            let id = (pod.uid().unwrap_or_default(), v.pv.clone());
            let first = self
                .multi_attach_reported
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(id);
            if first {
                self.recorder.event(
                    &object_reference(pod.as_ref()),
                    None,
                    EventType::Warning,
                    "FailedAttachVolume",
                    "Attach",
                    &multi_attach_message(&v.pv, ns, &others),
                );
            }
        }
        true
    }
}

impl Reconciler for AttachDetachReconciler {
    async fn reconcile(&self, _ctx: Context, key: ObjectKey) -> ReconcileResult {
        let node_name = key.name().to_string();
        let Some(node) = self.nodes.get(&key) else {
            return Ok(Action::Done);
        };
        if !is_managed(&node) {
            return Ok(Action::Done);
        }
        let pods = self
            .pods
            .by_index(POD_NODE_INDEX, &node_name)
            .unwrap_or_default();
        let desired = desired_volumes(&pods, self);
        let attachments: Vec<(Arc<VolumeAttachment>, Attachment)> = self
            .attachments
            .list()
            .into_iter()
            .filter(|va| va.spec.node_name == node_name)
            .filter_map(|va| {
                let pv_name = va.spec.source.persistent_volume_name.clone()?;
                let unique = self.pv(&pv_name).and_then(|pv| {
                    let csi = pv.spec.as_ref()?.csi.as_ref()?;
                    Some(unique_volume_name(&csi.driver, &csi.volume_handle))
                });
                let attached = va.status.as_ref().is_some_and(|s| s.attached);
                let a = Attachment {
                    name: va.name_any(),
                    unique,
                    attached,
                };
                Some((va, a))
            })
            .collect();
        let now = Instant::now();
        let waited = {
            let mut w = self.waiting.lock().unwrap_or_else(|e| e.into_inner());
            let candidates: BTreeSet<String> = attachments
                .iter()
                .filter(|(_, a)| !a.unique.as_ref().is_some_and(|u| desired.contains_key(u)))
                .map(|(_, a)| a.name.clone())
                .collect();
            w.retain(|k, _| candidates.contains(k));
            for c in candidates {
                w.entry(c).or_insert(now);
            }
            w.clone()
        };
        let only: Vec<Attachment> = attachments.iter().map(|(_, a)| a.clone()).collect();
        let p = plan(
            &node,
            &desired,
            &only,
            &|name: &str| waited.get(name).map_or(Duration::ZERO, |t| now - *t),
            &self.options,
        );

        // attach errors are reported on the pods
        for (va, a) in &attachments {
            let Some(unique) = &a.unique else { continue };
            let Some(v) = desired.get(unique) else {
                continue;
            };
            if let Some(err) = va.status.as_ref().and_then(|s| s.attach_error.as_ref()) {
                let note = format!(
                    "AttachVolume.Attach failed for volume {:?} : {}",
                    v.pv,
                    err.message.as_deref().unwrap_or_default()
                );
                self.pod_event(&v.pods, EventType::Warning, "FailedAttachVolume", &note);
            }
        }

        // the node's status first: a volume leaves volumesAttached before its detach
        let before = reported(&node);
        if before != p.volumes_attached {
            let list: Vec<Value> = p
                .volumes_attached
                .iter()
                .map(|u| json!({"name": u, "devicePath": ""}))
                .collect();
            Api::<Node>::all(self.client.clone())
                .patch_status(
                    &node_name,
                    &PatchParams::default(),
                    &Patch::Merge(json!({"status": {"volumesAttached": list}})),
                )
                .await
                .map_err(|e| {
                    ReconcileError::from(e).context("updating the node's volumesAttached")
                })?;
            for u in p.volumes_attached.iter().filter(|u| !before.contains(u)) {
                if let Some(v) = desired.get(u) {
                    let note = format!("AttachVolume.Attach succeeded for volume {:?}", v.pv);
                    self.pod_event(&v.pods, EventType::Normal, "SuccessfulAttachVolume", &note);
                }
            }
        }
        let vas = Api::<VolumeAttachment>::all(self.client.clone());
        for name in &p.detach {
            match vas.delete(name, &DeleteParams::default()).await {
                Ok(_) => tracing::info!(node = %node_name, attachment = %name, "detaching volume"),
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(e) => {
                    return Err(ReconcileError::from(e).context("deleting a VolumeAttachment"))
                }
            }
        }
        for unique in &p.attach {
            let v = &desired[unique];
            if self.blocked_by_multi_attach(v, &node_name) {
                continue;
            }
            match vas
                .create(&PostParams::default(), &volume_attachment(v, &node_name))
                .await
            {
                Ok(_) => tracing::info!(node = %node_name, pv = %v.pv, "attaching volume"),
                // as upstream's csi attacher (`IsAlreadyExists`): a 409 Conflict is a
                // refused write, not an existing attachment
                Err(kube::Error::Api(s)) if s.code == 409 && s.reason == "AlreadyExists" => {}
                Err(e) => {
                    let note = format!("AttachVolume.Attach failed for volume {:?} : {e}", v.pv);
                    self.pod_event(&v.pods, EventType::Warning, "FailedAttachVolume", &note);
                    return Err(ReconcileError::from(e).context("creating a VolumeAttachment"));
                }
            }
        }
        Ok(match p.recheck_after {
            Some(d) => Action::RequeueAfter(d.max(Duration::from_millis(100))),
            None => Action::Done,
        })
    }
}
