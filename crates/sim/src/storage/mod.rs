//! Simulated storage: what kind's local-path provisioner, a CSI driver's controller
//! sidecars (external-provisioner, external-attacher, external-resizer) and the
//! kubelet's volume manager do, so that PersistentVolumeClaims bind, attach and grow
//! with no real disks.
//!
//! At start the simulator creates, when absent (like kind's manifests; a user's
//! changes are never overwritten):
//!
//! * the default StorageClass [`DEFAULT_CLASS`] (`standard`, annotated
//!   `storageclass.kubernetes.io/is-default-class: "true"`, provisioner [`DRIVER`],
//!   `WaitForFirstConsumer`, reclaim `Delete`, `allowVolumeExpansion: true` — unlike
//!   kind's, so that `kubectl patch pvc` to a larger size completes);
//! * the CSIDriver [`DRIVER`] (`attachRequired: true`);
//! * a CSINode per managed node listing the driver (node ID = node name, topology key
//!   `kubernetes.io/hostname`), owned by its Node as a kubelet's.
//!
//! The nodes the simulator registers carry
//! `volumes.kubernetes.io/controller-managed-attach-detach: "true"` (a kubelet's
//! default), so the attach/detach controller attaches their volumes; a managed node
//! created by someone else keeps the annotations it was given — without this one its
//! simulated kubelet attaches volumes itself, as a kubelet with
//! `--enable-controller-attach-detach=false`.
//!
//! The CSI roles — [`provisioner`], [`attacher`], [`resizer`] — act only on objects
//! that name [`DRIVER`], so other provisioners and attachers (real ones, or tests'
//! own) are left alone. The kubelet's side (waiting for bound and attached volumes,
//! `volumesInUse`, file system expansion) is in [`crate::kubelet`], the scheduler's
//! (`WaitForFirstConsumer`, volume node affinity) in [`crate::volumebinding`].

pub mod attacher;
pub mod provisioner;
pub mod resizer;

use std::collections::BTreeMap;
use std::sync::Arc;

use coxswain_runtime::cache::{Cache, CachedKind};
use coxswain_runtime::controller::{Action, ReconcileResult};
use coxswain_runtime::controllerutil::owner_reference;
use coxswain_runtime::ObjectKey;
use k8s_openapi::api::core::v1::{Node, PersistentVolumeClaim};
use k8s_openapi::api::storage::v1::{
    CSIDriver, CSIDriverSpec, CSINode, CSINodeDriver, CSINodeSpec, StorageClass,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, PostParams};

use crate::config::SimConfig;
use crate::nodes::is_managed;

/// Name of the simulated CSI driver: provisioner of the default class, attacher of
/// its VolumeAttachments, resizer of its claims.
pub const DRIVER: &str = "csi.sim.coxswain.dev";
/// Name of the default StorageClass created at start.
pub const DEFAULT_CLASS: &str = "standard";
/// StorageClass annotation that makes a class the default.
pub const ANN_DEFAULT_CLASS: &str = "storageclass.kubernetes.io/is-default-class";
/// PVC annotation naming who must provision it (set by the PV binder).
pub const ANN_STORAGE_PROVISIONER: &str = "volume.kubernetes.io/storage-provisioner";
/// The beta form of [`ANN_STORAGE_PROVISIONER`].
pub const ANN_BETA_STORAGE_PROVISIONER: &str = "volume.beta.kubernetes.io/storage-provisioner";
/// PVC annotation with the node the scheduler chose (`WaitForFirstConsumer`).
pub const ANN_SELECTED_NODE: &str = "volume.kubernetes.io/selected-node";
/// PV annotation naming the provisioner that created it.
pub const ANN_PROVISIONED_BY: &str = "pv.kubernetes.io/provisioned-by";
/// Legacy class annotation of claims and volumes.
pub const ANN_BETA_CLASS: &str = "volume.beta.kubernetes.io/storage-class";
/// Node annotation: the attach/detach controller attaches this node's volumes (the
/// kubelet's default, `--enable-controller-attach-detach`).
pub const ANN_CONTROLLER_MANAGED_ATTACH_DETACH: &str =
    "volumes.kubernetes.io/controller-managed-attach-detach";
/// Node label that provisioned volumes' node affinity and CSINode topology use.
pub const LABEL_HOSTNAME: &str = "kubernetes.io/hostname";

/// The class of a claim: `spec.storageClassName`, else the beta annotation, else "".
pub fn claim_class(c: &PersistentVolumeClaim) -> &str {
    c.spec
        .as_ref()
        .and_then(|s| s.storage_class_name.as_deref())
        .or_else(|| {
            c.metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(ANN_BETA_CLASS))
                .map(String::as_str)
        })
        .unwrap_or("")
}

/// An annotation of `meta`.
pub(crate) fn annotation<'a>(meta: &'a ObjectMeta, key: &str) -> Option<&'a str> {
    meta.annotations
        .as_ref()
        .and_then(|a| a.get(key))
        .map(String::as_str)
}

/// The default StorageClass the simulator creates.
pub fn default_class() -> StorageClass {
    StorageClass {
        metadata: ObjectMeta {
            name: Some(DEFAULT_CLASS.into()),
            annotations: Some(BTreeMap::from([(
                ANN_DEFAULT_CLASS.to_string(),
                "true".to_string(),
            )])),
            ..Default::default()
        },
        provisioner: DRIVER.into(),
        reclaim_policy: Some("Delete".into()),
        volume_binding_mode: Some("WaitForFirstConsumer".into()),
        allow_volume_expansion: Some(true),
        ..Default::default()
    }
}

/// The CSIDriver object of the simulated driver.
pub fn csi_driver() -> CSIDriver {
    CSIDriver {
        metadata: ObjectMeta {
            name: Some(DRIVER.into()),
            ..Default::default()
        },
        spec: CSIDriverSpec {
            attach_required: Some(true),
            pod_info_on_mount: Some(false),
            volume_lifecycle_modes: Some(vec!["Persistent".into()]),
            ..Default::default()
        },
    }
}

/// The CSINode of `node`, as its kubelet registers it once the driver's node plugin
/// runs.
pub fn csi_node(node: &Node) -> CSINode {
    let name = node.metadata.name.clone().unwrap_or_default();
    CSINode {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            owner_references: owner_reference(node).ok().map(|r| vec![r]),
            ..Default::default()
        },
        spec: CSINodeSpec {
            drivers: vec![CSINodeDriver {
                name: DRIVER.into(),
                node_id: name,
                topology_keys: Some(vec![LABEL_HOSTNAME.into()]),
                ..Default::default()
            }],
        },
        ..Default::default()
    }
}

fn is_status(e: &kube::Error, code: u16) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == code)
}

/// Create `obj` unless an object of its name exists (whatever it now says).
async fn create_if_absent<K: CachedKind>(api: &Api<K>, obj: &K) -> Result<bool, kube::Error> {
    let name = obj.meta().name.clone().unwrap_or_default();
    if api.get_opt(&name).await?.is_some() {
        return Ok(false);
    }
    match api.create(&PostParams::default(), obj).await {
        Ok(_) => Ok(true),
        Err(e) if is_status(&e, 409) => Ok(false),
        Err(e) => Err(e),
    }
}

/// Create the default StorageClass and the CSIDriver when absent. Retries (up to a
/// minute) while the API server is not ready.
pub async fn install_defaults(client: kube::Client) {
    let classes: Api<StorageClass> = Api::all(client.clone());
    let drivers: Api<CSIDriver> = Api::all(client);
    let mut wait = std::time::Duration::from_millis(200);
    for attempt in 1..=10 {
        let r = async {
            let c = create_if_absent(&classes, &default_class()).await?;
            let d = create_if_absent(&drivers, &csi_driver()).await?;
            Ok::<_, kube::Error>((c, d))
        }
        .await;
        match r {
            Ok((c, d)) => {
                tracing::info!(
                    class_created = c,
                    driver_created = d,
                    class = DEFAULT_CLASS,
                    driver = DRIVER,
                    "simulated storage installed"
                );
                return;
            }
            Err(e) if attempt == 10 => {
                tracing::error!(error = %e, "cannot install the simulated storage class and CSI driver");
            }
            Err(e) => {
                tracing::warn!(error = %e, attempt, "installing the simulated storage class failed; retrying");
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(std::time::Duration::from_secs(10));
            }
        }
    }
}

/// Registers the driver on managed nodes: a CSINode for each that has none.
pub struct CsiNodes {
    cfg: Arc<SimConfig>,
    cache: Arc<Cache>,
    api: Api<CSINode>,
}

impl CsiNodes {
    /// The registrar, reading nodes and CSINodes from `cache`.
    pub fn new(cfg: Arc<SimConfig>, cache: Arc<Cache>, client: kube::Client) -> Arc<Self> {
        // start following CSINodes now, so the cache knows them when nodes come
        cache.informer::<CSINode>();
        Arc::new(CsiNodes {
            cfg,
            cache,
            api: Api::all(client),
        })
    }

    /// Create the CSINode of a managed node if it has none.
    pub async fn reconcile(&self, key: ObjectKey) -> ReconcileResult {
        let Some(node) = self.cache.get::<Node>(&key).await else {
            return Ok(Action::Done);
        };
        if !is_managed(&self.cfg, &node) || node.metadata.deletion_timestamp.is_some() {
            return Ok(Action::Done);
        }
        if self.cache.get::<CSINode>(&key).await.is_some() {
            return Ok(Action::Done);
        }
        match self
            .api
            .create(&PostParams::default(), &csi_node(&node))
            .await
        {
            Ok(_) => Ok(Action::Done),
            Err(e) if is_status(&e, 409) => Ok(Action::Done),
            Err(e) => Err(e.into()),
        }
    }
}
