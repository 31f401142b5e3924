//! What several volume controllers share (upstream `pkg/controller/volume/common`,
//! `protectionutil` and `k8s.io/component-helpers/storage/ephemeral`).

use coxswain_runtime::cache::Cache;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod, Volume};
use kube::ResourceExt;

#[cfg(test)]
mod tests;

/// The pod index by the claims its volumes use, `<namespace>/<claim>` (upstream
/// `common.PodPVCIndex`).
pub const POD_PVC_INDEX: &str = "pod-pvc-index";

/// The claims `pod` uses, as `<namespace>/<claim>`: persistentVolumeClaim volumes and
/// the claims of generic ephemeral volumes (upstream `PodPVCIndexFunc`).
pub fn pod_pvc_keys(pod: &Pod) -> Vec<String> {
    let ns = pod.namespace().unwrap_or_default();
    pod.spec
        .iter()
        .flat_map(|s| s.volumes.iter().flatten())
        .filter_map(|v| {
            if let Some(c) = &v.persistent_volume_claim {
                Some(format!("{ns}/{}", c.claim_name))
            } else if v.ephemeral.is_some() {
                Some(format!("{ns}/{}", volume_claim_name(pod, v)))
            } else {
                None
            }
        })
        .collect()
}

/// Add [`POD_PVC_INDEX`] to the shared pod informer unless another controller did
/// (upstream `AddPodPVCIndexerIfNotPresent`).
pub fn add_pod_pvc_index(cache: &Cache) {
    let informer = cache.informer::<Pod>();
    if !informer.store().has_index(POD_PVC_INDEX) {
        cache.index_field::<Pod>(POD_PVC_INDEX, pod_pvc_keys);
    }
}

/// The claim of a generic ephemeral volume: `<pod>-<volume>` (upstream
/// `ephemeral.VolumeClaimName`).
pub fn volume_claim_name(pod: &Pod, volume: &Volume) -> String {
    format!("{}-{}", pod.name_any(), volume.name)
}

/// Whether `pvc` was created for `pod`'s ephemeral volume: same namespace and
/// controlled by the pod (upstream `ephemeral.VolumeIsForPod`, with its messages).
pub fn volume_is_for_pod(pod: &Pod, pvc: &PersistentVolumeClaim) -> Result<(), String> {
    let (pod_ns, pvc_ns) = (
        pod.namespace().unwrap_or_default(),
        pvc.namespace().unwrap_or_default(),
    );
    if pod_ns != pvc_ns {
        return Err(format!(
            "PVC {pvc_ns}/{} belongs to a different namespace than pod {pod_ns}/{}",
            pvc.name_any(),
            pod.name_any()
        ));
    }
    let controlled = pvc
        .owner_references()
        .iter()
        .any(|r| r.controller == Some(true) && Some(&r.uid) == pod.metadata.uid.as_ref());
    if !controlled {
        return Err(format!(
            "PVC {pvc_ns}/{} was not created for pod {pod_ns}/{} (pod is not owner)",
            pvc.name_any(),
            pod.name_any()
        ));
    }
    Ok(())
}

/// Whether an object being deleted still carries `finalizer` (upstream
/// `protectionutil.IsDeletionCandidate`).
pub fn is_deletion_candidate<K: kube::Resource>(obj: &K, finalizer: &str) -> bool {
    obj.meta().deletion_timestamp.is_some() && has_finalizer(obj, finalizer)
}

/// Whether an object not being deleted lacks `finalizer` (upstream
/// `protectionutil.NeedToAddFinalizer`).
pub fn need_to_add_finalizer<K: kube::Resource>(obj: &K, finalizer: &str) -> bool {
    obj.meta().deletion_timestamp.is_none() && !has_finalizer(obj, finalizer)
}

fn has_finalizer<K: kube::Resource>(obj: &K, finalizer: &str) -> bool {
    obj.meta()
        .finalizers
        .as_ref()
        .is_some_and(|f| f.iter().any(|x| x == finalizer))
}
