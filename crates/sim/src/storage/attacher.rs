//! The simulated CSI external-attacher for [`DRIVER`]: VolumeAttachments whose
//! `spec.attacher` is the driver get its finalizer [`FINALIZER`] and, once the volume
//! exists, `status.attached: true` (an `attachError` while it does not); a deleted
//! one is detached — `attached: false` — and loses the finalizer, so the deletion
//! completes. Attachments of other attachers are left alone.

use std::sync::Arc;

use coxswain_runtime::cache::{Cache, Change};
use coxswain_runtime::controller::{Action, ReconcileResult};
use coxswain_runtime::ObjectKey;
use k8s_openapi::api::core::v1::PersistentVolume;
use k8s_openapi::api::storage::v1::VolumeAttachment;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;

use super::DRIVER;

/// The finalizer external-attacher puts on its VolumeAttachments:
/// `external-attacher/<driver name with every other character than [a-zA-Z0-9-] as ->`.
pub const FINALIZER: &str = "external-attacher/csi-sim-coxswain-dev";

/// external-attacher's finalizer name for `driver`.
pub fn finalizer_for(driver: &str) -> String {
    let sanitized: String = driver
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    format!("external-attacher/{sanitized}")
}

/// Whether a change concerns the attacher.
pub fn attachment_matters(c: &Change<VolumeAttachment>) -> bool {
    match c {
        Change::Added(v) | Change::Updated { new: v, .. } => v.spec.attacher == DRIVER,
        Change::Deleted(_) => false,
    }
}

/// The simulated attacher.
pub struct Attacher {
    cache: Arc<Cache>,
    api: Api<VolumeAttachment>,
}

impl Attacher {
    /// The attacher, reading from `cache`.
    pub fn new(cache: Arc<Cache>, client: kube::Client) -> Arc<Self> {
        cache.informer::<PersistentVolume>();
        Arc::new(Attacher {
            cache,
            api: Api::all(client),
        })
    }

    /// Attach or detach one VolumeAttachment.
    pub async fn reconcile(&self, key: ObjectKey) -> ReconcileResult {
        let Some(va) = self.cache.get::<VolumeAttachment>(&key).await else {
            return Ok(Action::Done);
        };
        if va.spec.attacher != DRIVER {
            return Ok(Action::Done);
        }
        let finalizers = va.metadata.finalizers.clone().unwrap_or_default();
        let has = finalizers.iter().any(|f| f == FINALIZER);
        let rv = va.metadata.resource_version.clone();
        let ok = |r: Result<VolumeAttachment, kube::Error>| match r {
            Ok(_) => Ok(Action::Done),
            Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => Ok(Action::Done),
            Err(e) => Err(e.into()),
        };
        if va.metadata.deletion_timestamp.is_some() {
            if !has {
                return Ok(Action::Done);
            }
            let attached = va.status.as_ref().is_some_and(|s| s.attached);
            if attached {
                // detached (simulated): say so, then let the object go
                let patch = json!({"status": {"attached": false, "detachError": null,
                    "attachmentMetadata": null}});
                let r = self
                    .api
                    .patch_status(key.name(), &PatchParams::default(), &Patch::Merge(&patch))
                    .await;
                return ok(r);
            }
            let rest: Vec<&String> = finalizers.iter().filter(|f| *f != FINALIZER).collect();
            let patch = json!({"metadata": {"finalizers": rest, "resourceVersion": rv}});
            let r = self
                .api
                .patch(key.name(), &PatchParams::default(), &Patch::Merge(&patch))
                .await;
            return ok(r);
        }
        if !has {
            let mut all = finalizers.clone();
            all.push(FINALIZER.to_string());
            let patch = json!({"metadata": {"finalizers": all, "resourceVersion": rv}});
            let r = self
                .api
                .patch(key.name(), &PatchParams::default(), &Patch::Merge(&patch))
                .await;
            return ok(r);
        }
        if va.status.as_ref().is_some_and(|s| s.attached) {
            return Ok(Action::Done);
        }
        let pv_name = va.spec.source.persistent_volume_name.clone();
        let pv_exists = match &pv_name {
            Some(n) => self
                .cache
                .get::<PersistentVolume>(&ObjectKey::cluster(n))
                .await
                .is_some(),
            // inline volumes: nothing to look up
            None => true,
        };
        let patch = if pv_exists {
            json!({"status": {"attached": true, "attachError": null}})
        } else {
            json!({"status": {"attached": false, "attachError": {
                "time": Timestamp::now().to_string(),
                "message": format!("persistentvolume {:?} not found", pv_name.unwrap_or_default()),
            }}})
        };
        let r = self
            .api
            .patch_status(key.name(), &PatchParams::default(), &Patch::Merge(&patch))
            .await;
        ok(r)
    }

    /// Attachments to look at again when a volume appears.
    pub fn attachments_of(&self, pv: &PersistentVolume) -> Vec<ObjectKey> {
        let name = pv.metadata.name.as_deref().unwrap_or("");
        self.cache
            .informer::<VolumeAttachment>()
            .store()
            .list()
            .iter()
            .filter(|va| {
                va.spec.source.persistent_volume_name.as_deref() == Some(name)
                    && !va.status.as_ref().is_some_and(|s| s.attached)
            })
            .map(|va| ObjectKey::of(va.as_ref()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finalizer_names_follow_external_attacher() {
        assert_eq!(finalizer_for(DRIVER), FINALIZER);
        assert_eq!(
            finalizer_for("ebs.csi.aws.com"),
            "external-attacher/ebs-csi-aws-com"
        );
    }
}
