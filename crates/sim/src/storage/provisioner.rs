//! The simulated CSI external-provisioner (kubernetes-csi/external-provisioner with
//! sig-storage-lib-external-provisioner), for the driver [`DRIVER`].
//!
//! It provisions a claim when the PV binder handed it over —
//! `volume.kubernetes.io/storage-provisioner` (or the beta key) names [`DRIVER`] —
//! the claim is not bound yet, its class exists and names [`DRIVER`] as provisioner,
//! and, for a `WaitForFirstConsumer` class, the scheduler chose a node
//! (`volume.kubernetes.io/selected-node`). The PersistentVolume it creates is named
//! `pvc-<claim uid>`, with:
//!
//! * `spec.claimRef` pointing at the claim (uid included), so the binder binds the two;
//! * capacity = the claim's storage request, the claim's access modes and volume mode,
//!   the class's reclaim policy (default `Delete`) and mount options;
//! * `spec.csi`: driver [`DRIVER`], a unique `volumeHandle`, `fsType` from the class
//!   parameter `csi.storage.k8s.io/fstype`, and as `volumeAttributes` the class's other
//!   parameters plus `storage.kubernetes.io/csiProvisionerIdentity`, as
//!   external-provisioner passes them;
//! * node affinity (`kubernetes.io/hostname In [<node>]`) to the selected node, or
//!   for an `Immediate` class to a managed node of the driver's choice (the volume is
//!   local to one node, as the hostpath driver's);
//! * annotation `pv.kubernetes.io/provisioned-by: csi.sim.coxswain.dev` and, with
//!   reclaim `Delete`, the finalizer [`FINALIZER`].
//!
//! Events on the claim come from `csi.sim.coxswain.dev_<instance>_<uuid>` as
//! external-provisioner's: `Provisioning` (`External provisioner is provisioning
//! volume for claim "<ns>/<name>"`), then `ProvisioningSucceeded` (`Successfully
//! provisioned volume pvc-...`), or a `ProvisioningFailed` warning (`failed to
//! provision volume with StorageClass "<class>": <why>`, e.g. a claim selector, which
//! CSI provisioning does not support).
//!
//! Deletion: a volume it provisioned whose claim is gone (phase `Released`) with
//! reclaim `Delete` is deleted — its storage, then the PV object; a PV being deleted
//! (by it or anyone) loses the [`FINALIZER`] once its storage is gone. A volume still
//! attached (a VolumeAttachment names it) is not deleted: `VolumeFailedDelete`
//! (`persistentvolume pvc-... is still attached to node <node>`) and another try when
//! the attachment goes.
//!
//! Everything is read from the shared cache (claims, volumes, classes, nodes,
//! attachments), so ten thousand claims cost one create per volume and no LIST.

use std::collections::BTreeMap;
use std::sync::Arc;

use coxswain_runtime::cache::{Cache, Change};
use coxswain_runtime::controller::{Action, ReconcileResult};
use coxswain_runtime::events::{object_reference, EventRecorder, EventType};
use coxswain_runtime::ObjectKey;
use k8s_openapi::api::core::v1::{
    CSIPersistentVolumeSource, Node, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm,
    ObjectReference, PersistentVolume, PersistentVolumeClaim, PersistentVolumeSpec,
    VolumeNodeAffinity,
};
use k8s_openapi::api::storage::v1::{StorageClass, VolumeAttachment};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use rand::Rng;
use serde_json::json;

use super::{
    annotation, claim_class, ANN_BETA_STORAGE_PROVISIONER, ANN_PROVISIONED_BY, ANN_SELECTED_NODE,
    ANN_STORAGE_PROVISIONER, DRIVER, LABEL_HOSTNAME,
};
use crate::config::SimConfig;
use crate::nodes::is_managed;

/// The finalizer external-provisioner puts on the volumes it must delete
/// (`HonorPVReclaimPolicy`).
pub const FINALIZER: &str = "external-provisioner.volume.kubernetes.io/finalizer";
/// The `volumeAttributes` key external-provisioner records its identity under.
pub const ATTR_PROVISIONER_IDENTITY: &str = "storage.kubernetes.io/csiProvisionerIdentity";
/// Class parameter prefix reserved for the CSI sidecars (not passed to the driver).
const CSI_PARAMETER_PREFIX: &str = "csi.storage.k8s.io/";
/// Class parameter giving the volume's file system type.
const PARAM_FSTYPE: &str = "csi.storage.k8s.io/fstype";

/// Name of the volume provisioned for the claim with `uid` (upstream `pvc-<uid>`).
pub fn volume_name(claim_uid: &str) -> String {
    format!("pvc-{claim_uid}")
}

/// Whether the claim has been handed to [`DRIVER`] by the binder.
pub fn handed_to_driver(c: &PersistentVolumeClaim) -> bool {
    let ann = |k| annotation(&c.metadata, k);
    ann(ANN_STORAGE_PROVISIONER)
        .or_else(|| ann(ANN_BETA_STORAGE_PROVISIONER))
        .is_some_and(|p| p == DRIVER)
}

/// Whether a claim change may ask the provisioner for something (its event filter).
pub fn claim_wants_provisioning(c: &PersistentVolumeClaim) -> bool {
    handed_to_driver(c)
        && c.metadata.deletion_timestamp.is_none()
        && c.spec
            .as_ref()
            .and_then(|s| s.volume_name.as_deref())
            .is_none_or(str::is_empty)
}

/// Whether a volume change may need the deleter (provisioned by [`DRIVER`]).
pub fn provisioned_here(pv: &PersistentVolume) -> bool {
    annotation(&pv.metadata, ANN_PROVISIONED_BY) == Some(DRIVER)
}

/// Why a claim cannot be provisioned (the error of `ProvisioningFailed`).
#[derive(Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Not ours, or not yet: do nothing, say nothing.
    NotNow,
    /// A failure to report.
    Failed(String),
}

/// The volume for `claim` of `class` on `node` (None: no topology), as
/// external-provisioner creates it; `identity` is the provisioner's, `handle` the new
/// volume's id.
pub fn new_volume(
    claim: &PersistentVolumeClaim,
    class: &StorageClass,
    node: Option<&str>,
    identity: &str,
    handle: &str,
) -> Result<PersistentVolume, Refusal> {
    let spec = claim.spec.clone().unwrap_or_default();
    if spec.selector.is_some() {
        return Err(Refusal::Failed("claim Selector is not supported".into()));
    }
    let Some(size) = spec
        .resources
        .as_ref()
        .and_then(|r| r.requests.as_ref())
        .and_then(|r| r.get("storage"))
        .cloned()
    else {
        return Err(Refusal::Failed(
            "claim does not request a storage size".into(),
        ));
    };
    let uid = claim.metadata.uid.clone().unwrap_or_default();
    let block = spec.volume_mode.as_deref() == Some("Block");
    let params = class.parameters.clone().unwrap_or_default();
    let mut attributes: BTreeMap<String, String> = params
        .iter()
        .filter(|(k, _)| !k.starts_with(CSI_PARAMETER_PREFIX))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    attributes.insert(ATTR_PROVISIONER_IDENTITY.into(), identity.into());
    let reclaim = class
        .reclaim_policy
        .clone()
        .unwrap_or_else(|| "Delete".into());
    let affinity = node.map(|n| VolumeNodeAffinity {
        required: Some(NodeSelector {
            node_selector_terms: vec![NodeSelectorTerm {
                match_expressions: Some(vec![NodeSelectorRequirement {
                    key: LABEL_HOSTNAME.into(),
                    operator: "In".into(),
                    values: Some(vec![n.to_string()]),
                }]),
                ..Default::default()
            }],
        }),
    });
    Ok(PersistentVolume {
        metadata: ObjectMeta {
            name: Some(volume_name(&uid)),
            annotations: Some(BTreeMap::from([(
                ANN_PROVISIONED_BY.to_string(),
                DRIVER.to_string(),
            )])),
            finalizers: (reclaim == "Delete").then(|| vec![FINALIZER.to_string()]),
            ..Default::default()
        },
        spec: Some(PersistentVolumeSpec {
            access_modes: spec.access_modes.clone(),
            capacity: Some(BTreeMap::from([("storage".to_string(), size)])),
            claim_ref: Some(ObjectReference {
                api_version: Some("v1".into()),
                kind: Some("PersistentVolumeClaim".into()),
                namespace: claim.metadata.namespace.clone(),
                name: claim.metadata.name.clone(),
                uid: claim.metadata.uid.clone(),
                resource_version: claim.metadata.resource_version.clone(),
                field_path: None,
            }),
            csi: Some(CSIPersistentVolumeSource {
                driver: DRIVER.into(),
                volume_handle: handle.into(),
                fs_type: if block {
                    None
                } else {
                    params.get(PARAM_FSTYPE).cloned()
                },
                volume_attributes: Some(attributes),
                ..Default::default()
            }),
            mount_options: class.mount_options.clone(),
            node_affinity: affinity,
            persistent_volume_reclaim_policy: Some(reclaim),
            storage_class_name: class.metadata.name.clone(),
            volume_mode: Some(spec.volume_mode.unwrap_or_else(|| "Filesystem".into())),
            ..Default::default()
        }),
        status: None,
    })
}

/// A random version-4 UUID, as the hostpath driver's volume ids.
pub(crate) fn new_uuid() -> String {
    let b: [u8; 16] = rand::rng().random();
    let h = |r: std::ops::Range<usize>| b[r].iter().map(|x| format!("{x:02x}")).collect::<String>();
    let mut s = format!("{}-{}-4{}-", h(0..4), h(4..6), &h(6..8)[1..]);
    s.push_str(&format!("{:x}", 8 | (b[8] & 3)));
    s.push_str(&format!("{}-{}", &h(8..10)[1..], h(10..16)));
    s
}

/// The simulated external-provisioner.
pub struct Provisioner {
    cfg: Arc<SimConfig>,
    cache: Arc<Cache>,
    client: kube::Client,
    recorder: EventRecorder,
    identity: String,
}

/// The event source of the provisioner: `<driver>_<instance>_<uuid>` as
/// external-provisioner's (`<driver>_<pod hostname>_<uuid>`).
pub fn component() -> String {
    format!("{DRIVER}_sim_{}", new_uuid())
}

impl Provisioner {
    /// The provisioner, reading from `cache` and recording with `recorder` (made for
    /// [`component`]).
    pub fn new(
        cfg: Arc<SimConfig>,
        cache: Arc<Cache>,
        client: kube::Client,
        recorder: EventRecorder,
    ) -> Arc<Self> {
        // the informers it reads, started with the others
        cache.informer::<StorageClass>();
        cache.informer::<PersistentVolume>();
        cache.informer::<VolumeAttachment>();
        let millis = k8s_openapi::jiff::Timestamp::now().as_millisecond();
        let identity = format!("{millis}-{}-{DRIVER}", rand::rng().random_range(0..10000));
        Arc::new(Provisioner {
            cfg,
            cache,
            client,
            recorder,
            identity,
        })
    }

    /// Claims to look at again when a class appears or changes: those handed to the
    /// driver and still unbound.
    pub fn claims_of_class(&self, class: &StorageClass) -> Vec<ObjectKey> {
        let name = class.metadata.name.as_deref().unwrap_or("");
        self.cache
            .informer::<PersistentVolumeClaim>()
            .store()
            .list()
            .iter()
            .filter(|c| claim_wants_provisioning(c) && claim_class(c) == name)
            .map(|c| ObjectKey::of(c.as_ref()))
            .collect()
    }

    /// The node an `Immediate` volume goes to: a managed node at random (None when
    /// there is none: the volume then has no topology).
    fn pick_node(&self) -> Option<String> {
        let nodes: Vec<Arc<Node>> = self
            .cache
            .informer::<Node>()
            .store()
            .list()
            .into_iter()
            .filter(|n| is_managed(&self.cfg, n) && n.metadata.deletion_timestamp.is_none())
            .collect();
        if nodes.is_empty() {
            return None;
        }
        let n = &nodes[rand::rng().random_range(0..nodes.len())];
        n.metadata.name.clone()
    }

    fn failed(&self, claim: &PersistentVolumeClaim, class: &str, why: &str) {
        self.recorder.event(
            &object_reference(claim),
            None,
            EventType::Warning,
            "ProvisioningFailed",
            "Provision",
            &format!("failed to provision volume with StorageClass \"{class}\": {why}"),
        );
    }

    /// Provision one claim, if it should be.
    pub async fn reconcile_claim(&self, key: ObjectKey) -> ReconcileResult {
        let Some(claim) = self.cache.get::<PersistentVolumeClaim>(&key).await else {
            return Ok(Action::Done);
        };
        if !claim_wants_provisioning(&claim) {
            return Ok(Action::Done);
        }
        let uid = claim.metadata.uid.clone().unwrap_or_default();
        let pv_name = volume_name(&uid);
        if self
            .cache
            .get::<PersistentVolume>(&ObjectKey::cluster(&pv_name))
            .await
            .is_some()
        {
            // provisioned already; the binder binds it
            return Ok(Action::Done);
        }
        let class_name = claim_class(&claim).to_string();
        let Some(class) = self
            .cache
            .get::<StorageClass>(&ObjectKey::cluster(&class_name))
            .await
        else {
            // the binder reports a missing class; its creation brings us back
            return Ok(Action::Done);
        };
        if class.provisioner != DRIVER {
            return Ok(Action::Done);
        }
        let wffc = class.volume_binding_mode.as_deref() == Some("WaitForFirstConsumer");
        let node = if wffc {
            let Some(selected) = annotation(&claim.metadata, ANN_SELECTED_NODE) else {
                // the scheduler has not chosen a node yet
                return Ok(Action::Done);
            };
            let known = self
                .cache
                .get::<Node>(&ObjectKey::cluster(selected))
                .await
                .is_some();
            if !known {
                self.failed(
                    &claim,
                    &class_name,
                    &format!("failed to get target node: node \"{selected}\" not found"),
                );
                return Ok(Action::Done);
            }
            Some(selected.to_string())
        } else {
            self.pick_node()
        };
        let pv = match new_volume(&claim, &class, node.as_deref(), &self.identity, &new_uuid()) {
            Ok(pv) => pv,
            Err(Refusal::NotNow) => return Ok(Action::Done),
            Err(Refusal::Failed(why)) => {
                self.failed(&claim, &class_name, &why);
                return Ok(Action::Done);
            }
        };
        self.recorder.event(
            &object_reference(claim.as_ref()),
            None,
            EventType::Normal,
            "Provisioning",
            "Provision",
            &format!(
                "External provisioner is provisioning volume for claim \"{}/{}\"",
                key.namespace().unwrap_or(""),
                key.name()
            ),
        );
        let api: Api<PersistentVolume> = Api::all(self.client.clone());
        match api.create(&PostParams::default(), &pv).await {
            Ok(_) => {}
            // created by an earlier try whose answer we missed
            Err(kube::Error::Api(s)) if s.code == 409 => return Ok(Action::Done),
            Err(e) => {
                self.failed(&claim, &class_name, &e.to_string());
                return Err(e.into());
            }
        }
        self.recorder.event(
            &object_reference(claim.as_ref()),
            None,
            EventType::Normal,
            "ProvisioningSucceeded",
            "Provision",
            &format!("Successfully provisioned volume {pv_name}"),
        );
        Ok(Action::Done)
    }

    /// The node a VolumeAttachment of `pv` still attaches it to, if any.
    fn attached_to(&self, pv: &str) -> Option<String> {
        self.cache
            .informer::<VolumeAttachment>()
            .store()
            .list()
            .into_iter()
            .find(|va| va.spec.source.persistent_volume_name.as_deref() == Some(pv))
            .map(|va| va.spec.node_name.clone())
    }

    /// Delete a released volume (or let a deleted one go).
    pub async fn reconcile_volume(&self, key: ObjectKey) -> ReconcileResult {
        let Some(pv) = self.cache.get::<PersistentVolume>(&key).await else {
            return Ok(Action::Done);
        };
        if !provisioned_here(&pv) {
            return Ok(Action::Done);
        }
        let api: Api<PersistentVolume> = Api::all(self.client.clone());
        let reclaim = pv
            .spec
            .as_ref()
            .and_then(|s| s.persistent_volume_reclaim_policy.as_deref())
            .unwrap_or("Delete");
        let finalizers = pv.metadata.finalizers.clone().unwrap_or_default();
        if pv.metadata.deletion_timestamp.is_some() {
            if !finalizers.iter().any(|f| f == FINALIZER) {
                return Ok(Action::Done);
            }
            if reclaim == "Delete" {
                if let Some(node) = self.attached_to(key.name()) {
                    self.still_attached(&pv, &node);
                    return Ok(Action::Done);
                }
            }
            // the storage is gone (simulated): let the object go
            let rest: Vec<&String> = finalizers.iter().filter(|f| *f != FINALIZER).collect();
            let patch = json!({"metadata": {
                "finalizers": rest,
                "resourceVersion": pv.metadata.resource_version,
            }});
            return match api
                .patch(key.name(), &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                Ok(_) => Ok(Action::Done),
                Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => Ok(Action::Done),
                Err(e) => Err(e.into()),
            };
        }
        let released = pv.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Released");
        if !released || reclaim != "Delete" {
            return Ok(Action::Done);
        }
        if let Some(node) = self.attached_to(key.name()) {
            self.still_attached(&pv, &node);
            return Ok(Action::Done);
        }
        let dp = DeleteParams {
            preconditions: Some(Preconditions {
                uid: pv.metadata.uid.clone(),
                resource_version: None,
            }),
            ..Default::default()
        };
        match api.delete(key.name(), &dp).await {
            Ok(_) => Ok(Action::Done),
            Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => Ok(Action::Done),
            Err(e) => Err(e.into()),
        }
    }

    fn still_attached(&self, pv: &PersistentVolume, node: &str) {
        self.recorder.event(
            &object_reference(pv),
            None,
            EventType::Warning,
            "VolumeFailedDelete",
            "Delete",
            &format!(
                "persistentvolume {} is still attached to node {node}",
                pv.metadata.name.as_deref().unwrap_or("")
            ),
        );
    }

    /// Volumes to look at again when an attachment changes or goes.
    pub fn volume_of_attachment(va: &VolumeAttachment) -> Vec<ObjectKey> {
        va.spec
            .source
            .persistent_volume_name
            .iter()
            .map(ObjectKey::cluster)
            .collect()
    }
}

/// Whether a volume change concerns the deleter.
pub fn volume_change_matters(c: &Change<PersistentVolume>) -> bool {
    match c {
        Change::Added(pv) | Change::Updated { new: pv, .. } => provisioned_here(pv),
        Change::Deleted(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claim(extra: serde_json::Value) -> PersistentVolumeClaim {
        let mut v = json!({
            "metadata": {"name": "data-web-0", "namespace": "default", "uid": "1234",
                "resourceVersion": "7",
                "annotations": {ANN_STORAGE_PROVISIONER: DRIVER}},
            "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "standard",
                "resources": {"requests": {"storage": "1Gi"}}},
        });
        if let (Some(a), serde_json::Value::Object(b)) = (v["spec"].as_object_mut(), extra) {
            a.extend(b);
        }
        serde_json::from_value(v).expect("claim")
    }

    fn class(extra: serde_json::Value) -> StorageClass {
        let mut v = json!({
            "metadata": {"name": "standard"},
            "provisioner": DRIVER,
        });
        if let (Some(a), serde_json::Value::Object(b)) = (v.as_object_mut(), extra) {
            a.extend(b);
        }
        serde_json::from_value(v).expect("class")
    }

    #[test]
    fn volumes_follow_claim_and_class() {
        let sc = class(
            json!({"reclaimPolicy": "Retain", "mountOptions": ["noatime"],
            "parameters": {"csi.storage.k8s.io/fstype": "xfs", "tier": "gold"}}),
        );
        let pv =
            new_volume(&claim(json!({})), &sc, Some("sim-node-1"), "id-1", "h-1").expect("volume");
        let v = serde_json::to_value(&pv).expect("json");
        assert_eq!(v["metadata"]["name"], "pvc-1234");
        assert_eq!(v["metadata"]["annotations"][ANN_PROVISIONED_BY], DRIVER);
        assert!(
            v["metadata"].get("finalizers").is_none(),
            "Retain: no finalizer"
        );
        let s = &v["spec"];
        assert_eq!(s["capacity"]["storage"], "1Gi");
        assert_eq!(s["accessModes"], json!(["ReadWriteOnce"]));
        assert_eq!(s["volumeMode"], "Filesystem");
        assert_eq!(s["persistentVolumeReclaimPolicy"], "Retain");
        assert_eq!(s["storageClassName"], "standard");
        assert_eq!(s["mountOptions"], json!(["noatime"]));
        assert_eq!(
            s["claimRef"],
            json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "namespace": "default",
                "name": "data-web-0", "uid": "1234", "resourceVersion": "7"})
        );
        assert_eq!(
            s["csi"],
            json!({"driver": DRIVER, "volumeHandle": "h-1", "fsType": "xfs",
                "volumeAttributes": {ATTR_PROVISIONER_IDENTITY: "id-1", "tier": "gold"}})
        );
        assert_eq!(
            s["nodeAffinity"]["required"]["nodeSelectorTerms"],
            json!([{"matchExpressions": [{"key": LABEL_HOSTNAME, "operator": "In",
                "values": ["sim-node-1"]}]}])
        );
        // the class default is Delete, with the provisioner's finalizer; block volumes
        // have no file system
        let pv = new_volume(
            &claim(json!({"volumeMode": "Block", "accessModes": ["ReadWriteOncePod"]})),
            &class(json!({"parameters": {"csi.storage.k8s.io/fstype": "xfs"}})),
            None,
            "id",
            "h",
        )
        .expect("volume");
        let v = serde_json::to_value(&pv).expect("json");
        assert_eq!(v["metadata"]["finalizers"], json!([FINALIZER]));
        assert_eq!(v["spec"]["persistentVolumeReclaimPolicy"], "Delete");
        assert_eq!(v["spec"]["volumeMode"], "Block");
        assert_eq!(v["spec"]["accessModes"], json!(["ReadWriteOncePod"]));
        assert!(v["spec"]["csi"].get("fsType").is_none());
        assert!(v["spec"].get("nodeAffinity").is_none());
    }

    #[test]
    fn selectors_are_refused_and_only_handed_claims_count() {
        let c = claim(json!({"selector": {"matchLabels": {"a": "b"}}}));
        assert_eq!(
            new_volume(&c, &class(json!({})), None, "i", "h").err(),
            Some(Refusal::Failed("claim Selector is not supported".into()))
        );
        assert!(claim_wants_provisioning(&claim(json!({}))));
        assert!(!claim_wants_provisioning(&claim(
            json!({"volumeName": "pv-1"})
        )));
        let mut beta = claim(json!({}));
        beta.metadata.annotations = Some(BTreeMap::from([(
            ANN_BETA_STORAGE_PROVISIONER.to_string(),
            DRIVER.to_string(),
        )]));
        assert!(claim_wants_provisioning(&beta));
        let mut other = claim(json!({}));
        other.metadata.annotations = Some(BTreeMap::from([(
            ANN_STORAGE_PROVISIONER.to_string(),
            "rancher.io/local-path".to_string(),
        )]));
        assert!(!claim_wants_provisioning(&other));
    }

    #[test]
    fn uuids_look_like_uuids() {
        let u = new_uuid();
        let parts: Vec<usize> = u.split('-').map(str::len).collect();
        assert_eq!(parts, vec![8, 4, 4, 4, 12], "{u}");
        assert!(u.chars().all(|c| c == '-' || c.is_ascii_hexdigit()));
        assert_eq!(&u[14..15], "4");
        assert!("89ab".contains(&u[19..20]), "{u}");
        assert!(component().len() <= 63);
    }
}
