//! The PVC protection controller: kube-controller-manager's
//! `persistentvolumeclaim-protection-controller` (alias `pvc-protection`, upstream
//! `pkg/controller/volume/pvcprotection`).
//!
//! The API server's `StorageObjectInUseProtection` admission puts the
//! `kubernetes.io/pvc-protection` finalizer on every new claim, so deleting a claim only
//! marks it (`kubectl get pvc` shows `Terminating`). This controller removes the
//! finalizer of a claim being deleted once no pod uses it, and adds it to claims that
//! lack it (created before the admission plugin ran).
//!
//! A pod uses a claim when it is scheduled (`spec.nodeName` set) and has a
//! `persistentVolumeClaim` volume of that name, or a generic ephemeral volume whose claim
//! `<pod>-<volume>` it controls and it is not shut down (deleting with a zero grace
//! period). As upstream, a pod's phase is not looked at: a finished pod that still
//! exists keeps its claims. The cache is asked first; when it finds no user, a live
//! list of the namespace's pods confirms it, so that a pod not yet in the cache is not
//! missed.
//!
//! Claims are enqueued when they need the finalizer or are deletion candidates; a pod's
//! claims when the pod is deleted, terminated or unscheduled (and the old pod's when an
//! update replaced the pod under the same name).

#[cfg(test)]
mod tests;

use crate::clientbuilder::ClusterAccess;
use std::sync::Arc;

use coxswain_runtime::builder::ControllerBuilder;
use coxswain_runtime::cache::Store;
use coxswain_runtime::controller::{
    Action, Context, Controller, ControllerOptions, ReconcileError, ReconcileResult, Reconciler,
};
use coxswain_runtime::handler::{Funcs, Requests};
use coxswain_runtime::ObjectKey;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use kube::api::{ListParams, PostParams};
use kube::{Api, ResourceExt};

use super::common::{
    add_pod_pvc_index, is_deletion_candidate, need_to_add_finalizer, volume_claim_name,
    volume_is_for_pod, POD_PVC_INDEX,
};

/// Name of the controller.
pub const CONTROLLER_NAME: &str = "persistentvolumeclaim-protection-controller";
/// The finalizer (`volumeutil.PVCProtectionFinalizer`).
pub const PVC_PROTECTION_FINALIZER: &str = "kubernetes.io/pvc-protection";

/// The controller's options (upstream has none; one worker).
#[derive(Clone, Debug, Default)]
pub struct PvcProtectionControllerOptions {}

/// The controller's service account with `--use-service-account-credentials`
/// (upstream `ClientOrDie("pvc-protection-controller")`).
pub const SERVICE_ACCOUNT: &str = "pvc-protection-controller";

/// The registry entry: `persistentvolumeclaim-protection-controller`, alias
/// `pvc-protection`.
pub fn descriptor() -> crate::registry::Descriptor {
    crate::registry::Descriptor {
        name: CONTROLLER_NAME,
        aliases: &["pvc-protection"],
        disabled_by_default: false,
        constructor: |ctx| {
            Ok(Some(Box::new(pvc_protection_controller(
                &ctx.clients(SERVICE_ACCOUNT)?,
            ))))
        },
    }
}

/// Whether the kubelet is done with `pod` or it was force-deleted (upstream
/// `podIsShutDown`): deleting with a zero grace period.
pub fn pod_is_shut_down(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_some()
        && pod.metadata.deletion_grace_period_seconds == Some(0)
}

/// Whether `pod` uses `pvc` (upstream `podUsesPVC`).
pub fn pod_uses_pvc(pod: &Pod, pvc: &PersistentVolumeClaim) -> bool {
    let Some(spec) = &pod.spec else {
        return false;
    };
    if spec.node_name.as_deref().unwrap_or_default().is_empty() {
        return false;
    }
    if pod.namespace() != pvc.namespace() {
        return false;
    }
    let name = pvc.name_any();
    spec.volumes.iter().flatten().any(|v| {
        v.persistent_volume_claim
            .as_ref()
            .is_some_and(|c| c.claim_name == name)
            || (!pod_is_shut_down(pod)
                && v.ephemeral.is_some()
                && volume_claim_name(pod, v) == name
                && volume_is_for_pod(pod, pvc).is_ok())
    })
}

/// Upstream `volumeutil.IsPodTerminated`: Failed or Succeeded, or deleting with no
/// container running.
pub fn is_pod_terminated(pod: &Pod) -> bool {
    let status = pod.status.as_ref();
    let phase = status.and_then(|s| s.phase.as_deref()).unwrap_or_default();
    if matches!(phase, "Failed" | "Succeeded") {
        return true;
    }
    pod.metadata.deletion_timestamp.is_some()
        && status
            .and_then(|s| s.container_statuses.as_ref())
            .is_none_or(|cs| {
                cs.iter().all(|c| {
                    c.state
                        .as_ref()
                        .is_some_and(|st| st.terminated.is_some() || st.waiting.is_some())
                })
            })
}

/// The claims a pod change enqueues (upstream `enqueuePVCs`): none while the pod is
/// scheduled, alive and not deleted, since it cannot free a claim then.
pub fn pvcs_to_enqueue(pod: &Pod, deleted: bool) -> Vec<ObjectKey> {
    let scheduled = pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .is_some_and(|n| !n.is_empty());
    if !deleted && !is_pod_terminated(pod) && scheduled {
        return Vec::new();
    }
    let ns = pod.namespace().unwrap_or_default();
    pod.spec
        .iter()
        .flat_map(|s| s.volumes.iter().flatten())
        .filter_map(|v| {
            if let Some(c) = &v.persistent_volume_claim {
                Some(ObjectKey::namespaced(&ns, c.claim_name.clone()))
            } else if v.ephemeral.is_some() {
                Some(ObjectKey::namespaced(&ns, volume_claim_name(pod, v)))
            } else {
                None
            }
        })
        .collect()
}

fn pvc_handler() -> Funcs<PersistentVolumeClaim> {
    let wanted = |pvc: &PersistentVolumeClaim, q: &Requests<'_, ObjectKey>| {
        if need_to_add_finalizer(pvc, PVC_PROTECTION_FINALIZER)
            || is_deletion_candidate(pvc, PVC_PROTECTION_FINALIZER)
        {
            q.add(ObjectKey::of(pvc));
        }
    };
    Funcs::new()
        .on_add(wanted)
        .on_update(move |_, new, q| wanted(new, q))
}

fn pod_handler() -> Funcs<Pod> {
    Funcs::new()
        .on_add(|p: &Pod, q: &Requests<'_, ObjectKey>| {
            pvcs_to_enqueue(p, false).into_iter().for_each(|k| q.add(k))
        })
        .on_update(|old: &Pod, new: &Pod, q: &Requests<'_, ObjectKey>| {
            pvcs_to_enqueue(new, false)
                .into_iter()
                .for_each(|k| q.add(k));
            if old.metadata.uid != new.metadata.uid {
                pvcs_to_enqueue(old, true)
                    .into_iter()
                    .for_each(|k| q.add(k));
            }
        })
        .on_delete(|p: &Pod, q: &Requests<'_, ObjectKey>| {
            pvcs_to_enqueue(p, true).into_iter().for_each(|k| q.add(k))
        })
}

/// The controller as a runnable of `mgr`.
pub fn pvc_protection_controller(mgr: &impl ClusterAccess) -> Controller<PvcProtectionReconciler> {
    add_pod_pvc_index(mgr.cache());
    let reconciler = PvcProtectionReconciler {
        pvcs: mgr
            .cache()
            .informer::<PersistentVolumeClaim>()
            .store()
            .clone(),
        pods: mgr.cache().informer::<Pod>().store().clone(),
        client: mgr.kube_client().clone(),
    };
    ControllerBuilder::new(mgr.cache())
        .named(CONTROLLER_NAME)
        .with_options(ControllerOptions::workers(1))
        .for_with::<PersistentVolumeClaim>(pvc_handler())
        .watches_with::<Pod>(pod_handler(), Vec::new())
        .build(reconciler)
}

/// Adds or removes one claim's finalizer.
pub struct PvcProtectionReconciler {
    pvcs: Arc<Store<PersistentVolumeClaim>>,
    pods: Arc<Store<Pod>>,
    client: kube::Client,
}

impl PvcProtectionReconciler {
    /// Upstream `isBeingUsed`: the cache first, then a live list of the namespace.
    async fn is_being_used(&self, pvc: &PersistentVolumeClaim) -> Result<bool, ReconcileError> {
        let ns = pvc.namespace().unwrap_or_default();
        let key = format!("{ns}/{}", pvc.name_any());
        if self
            .pods
            .by_index(POD_PVC_INDEX, &key)
            .unwrap_or_default()
            .iter()
            .any(|p| pod_uses_pvc(p, pvc))
        {
            return Ok(true);
        }
        let live = Api::<Pod>::namespaced(self.client.clone(), &ns)
            .list(&ListParams::default())
            .await
            .map_err(|e| ReconcileError::from(e).context("live list of pods failed"))?;
        Ok(live.items.iter().any(|p| pod_uses_pvc(p, pvc)))
    }

    async fn set_finalizer(
        &self,
        pvc: &PersistentVolumeClaim,
        present: bool,
    ) -> Result<(), ReconcileError> {
        let mut clone = pvc.clone();
        let finalizers = clone.metadata.finalizers.get_or_insert_with(Vec::new);
        if present {
            finalizers.push(PVC_PROTECTION_FINALIZER.to_string());
        } else {
            finalizers.retain(|f| f != PVC_PROTECTION_FINALIZER);
        }
        let ns = pvc.namespace().unwrap_or_default();
        Api::<PersistentVolumeClaim>::namespaced(self.client.clone(), &ns)
            .replace(&pvc.name_any(), &PostParams::default(), &clone)
            .await
            .map_err(|e| {
                let what = if present {
                    "adding protection finalizer to PVC"
                } else {
                    "removing protection finalizer from PVC"
                };
                ReconcileError::from(e).context(what)
            })?;
        tracing::debug!(
            pvc = %format!("{ns}/{}", pvc.name_any()),
            present,
            "changed protection finalizer"
        );
        Ok(())
    }
}

impl Reconciler for PvcProtectionReconciler {
    async fn reconcile(&self, _ctx: Context, key: ObjectKey) -> ReconcileResult {
        let Some(pvc) = self.pvcs.get(&key) else {
            return Ok(Action::Done);
        };
        if is_deletion_candidate(pvc.as_ref(), PVC_PROTECTION_FINALIZER) {
            if !self.is_being_used(&pvc).await? {
                self.set_finalizer(&pvc, false).await?;
                return Ok(Action::Done);
            }
            tracing::debug!(pvc = %key, "Keeping PVC because it is being used");
        }
        if need_to_add_finalizer(pvc.as_ref(), PVC_PROTECTION_FINALIZER) {
            self.set_finalizer(&pvc, true).await?;
        }
        Ok(Action::Done)
    }
}
