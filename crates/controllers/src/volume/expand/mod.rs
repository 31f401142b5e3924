//! The expand controller: kube-controller-manager's
//! `persistentvolume-expander-controller` (alias `persistentvolume-expander`, upstream
//! `pkg/controller/volume/expand`).
//!
//! Upstream expands only volumes of in-tree plugins and hands everything else, every
//! CSI volume included, to the external resizer (`csi-resizer`, played here by the
//! simulator): for a Bound claim whose requested storage exceeds its status capacity it
//! records a Normal `ExternalExpanding` event `waiting for an external controller to
//! expand this PVC` (source `volume_expand`) and does not requeue. Coxswain has no
//! in-tree volume plugins, so that is what it does for every volume; the
//! `volume.kubernetes.io/storage-resizer` annotation belongs to the CSI migration path of
//! in-tree volumes, which coxswain does not have either.
//!
//! Claims are enqueued when added or deleted while Bound, and on updates that grow the
//! request or the status capacity. The volume is read live, and must be bound to the
//! claim (`claimRef` namespace and UID), else the sync fails with upstream's
//! `persistent Volume is not bound to PVC being updated : <ns>/<name>` and is retried.
//! 10 workers, as upstream's `defaultWorkerCount`.

use crate::clientbuilder::ClusterAccess;
use std::sync::Arc;

use apimachinery::quantity;
use coxswain_runtime::builder::ControllerBuilder;
use coxswain_runtime::cache::Store;
use coxswain_runtime::controller::{
    Action, Context, Controller, ControllerOptions, ReconcileError, ReconcileResult, Reconciler,
};
use coxswain_runtime::events::{object_reference, EventRecorder, EventType};
use coxswain_runtime::handler::{Funcs, Requests};
use coxswain_runtime::ObjectKey;
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::{Api, ResourceExt};

/// Name of the controller.
pub const CONTROLLER_NAME: &str = "persistentvolume-expander-controller";
/// The event source (`v1.EventSource{Component: "volume_expand"}`).
pub const EVENT_SOURCE: &str = "volume_expand";
/// The event reason (`events.ExternalExpanding`).
pub const EXTERNAL_EXPANDING: &str = "ExternalExpanding";
/// The event message when no in-tree plugin can expand the volume.
pub const WAITING_FOR_EXTERNAL: &str = "waiting for an external controller to expand this PVC";
/// Workers (upstream `defaultWorkerCount`, no flag).
pub const WORKERS: usize = 10;

/// The controller's options (upstream `ExpandControllerConfiguration` has none that
/// apply).
#[derive(Clone, Debug, Default)]
pub struct ExpandControllerOptions {}

/// The controller's service account with `--use-service-account-credentials`
/// (upstream `ClientOrDie("expand-controller")`).
pub const SERVICE_ACCOUNT: &str = "expand-controller";

/// The registry entry: `persistentvolume-expander-controller`, alias
/// `persistentvolume-expander`.
pub fn descriptor() -> crate::registry::Descriptor {
    crate::registry::Descriptor {
        name: CONTROLLER_NAME,
        aliases: &["persistentvolume-expander"],
        disabled_by_default: false,
        constructor: |ctx| {
            Ok(Some(Box::new(expand_controller(
                &ctx.clients(SERVICE_ACCOUNT)?,
            ))))
        },
    }
}

fn nanos(q: Option<&Quantity>) -> i128 {
    q.and_then(|q| quantity::parse(&q.0))
        .map_or(0, |q| q.nanos())
}

/// The claim's requested storage, in units of 10^-9.
pub fn requested(pvc: &PersistentVolumeClaim) -> i128 {
    nanos(
        pvc.spec
            .as_ref()
            .and_then(|s| s.resources.as_ref())
            .and_then(|r| r.requests.as_ref())
            .and_then(|r| r.get("storage")),
    )
}

/// The claim's status capacity, in units of 10^-9.
pub fn capacity(pvc: &PersistentVolumeClaim) -> i128 {
    nanos(
        pvc.status
            .as_ref()
            .and_then(|s| s.capacity.as_ref())
            .and_then(|c| c.get("storage")),
    )
}

fn is_bound(pvc: &PersistentVolumeClaim) -> bool {
    pvc.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Bound")
}

/// Whether an update enqueues the claim (upstream's UpdateFunc, then `enqueuePVC`): the
/// request or the status capacity grew, and the claim is Bound.
pub fn update_enqueues(old: &PersistentVolumeClaim, new: &PersistentVolumeClaim) -> bool {
    (requested(new) > requested(old) || capacity(new) > capacity(old)) && is_bound(new)
}

/// Whether `pv` is bound to `pvc` as the sync requires (claimRef namespace and UID).
pub fn bound_to(pv: &PersistentVolume, pvc: &PersistentVolumeClaim) -> bool {
    pv.spec
        .as_ref()
        .and_then(|s| s.claim_ref.as_ref())
        .is_some_and(|r| r.namespace == pvc.metadata.namespace && r.uid == pvc.metadata.uid)
}

/// Whether the claim waits for an expansion: its request exceeds its status capacity
/// (upstream also looks at the in-tree pre-resize annotation, which coxswain never sets).
pub fn needs_expansion(pvc: &PersistentVolumeClaim) -> bool {
    requested(pvc) > capacity(pvc)
}

/// The controller as a runnable of `mgr`.
pub fn expand_controller(mgr: &impl ClusterAccess) -> Controller<ExpandReconciler> {
    let reconciler = ExpandReconciler {
        pvcs: mgr
            .cache()
            .informer::<PersistentVolumeClaim>()
            .store()
            .clone(),
        client: mgr.kube_client().clone(),
        recorder: mgr.event_recorder(EVENT_SOURCE),
    };
    let if_bound = |pvc: &PersistentVolumeClaim, q: &Requests<'_, ObjectKey>| {
        if is_bound(pvc) {
            q.add(ObjectKey::of(pvc));
        }
    };
    let handler = Funcs::new()
        .on_add(if_bound)
        .on_delete(if_bound)
        .on_update(|old, new, q| {
            if update_enqueues(old, new) {
                q.add(ObjectKey::of(new));
            }
        });
    ControllerBuilder::new(mgr.cache())
        .named(CONTROLLER_NAME)
        .with_options(ControllerOptions::workers(WORKERS))
        .for_with::<PersistentVolumeClaim>(handler)
        .build(reconciler)
}

/// Hands one claim's expansion over.
pub struct ExpandReconciler {
    pvcs: Arc<Store<PersistentVolumeClaim>>,
    client: kube::Client,
    recorder: EventRecorder,
}

impl Reconciler for ExpandReconciler {
    async fn reconcile(&self, _ctx: Context, key: ObjectKey) -> ReconcileResult {
        let Some(pvc) = self.pvcs.get(&key) else {
            return Ok(Action::Done);
        };
        let volume_name = pvc
            .spec
            .as_ref()
            .and_then(|s| s.volume_name.clone())
            .unwrap_or_default();
        let pv = Api::<PersistentVolume>::all(self.client.clone())
            .get(&volume_name)
            .await
            .map_err(|e| {
                ReconcileError::from(e).context(&format!("failed to get PV {volume_name:?}"))
            })?;
        if !bound_to(&pv, &pvc) {
            return Err(ReconcileError::msg(format!(
                "persistent Volume is not bound to PVC being updated : {key}"
            )));
        }
        if !needs_expansion(&pvc) {
            return Ok(Action::Done);
        }
        self.recorder.event(
            &object_reference(pvc.as_ref()),
            None,
            EventType::Normal,
            EXTERNAL_EXPANDING,
            "Resize",
            WAITING_FOR_EXTERNAL,
        );
        tracing::info!(
            pvc = %key,
            pvc_uid = pvc.uid().unwrap_or_default(),
            "Waiting for an external controller to expand the PVC"
        );
        Ok(Action::Done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pvc(request: &str, capacity: Option<&str>, phase: &str) -> PersistentVolumeClaim {
        let mut v = json!({
            "metadata": {"name": "claim", "namespace": "ns", "uid": "u1"},
            "spec": {"volumeName": "pv1", "resources": {"requests": {"storage": request}}},
            "status": {"phase": phase},
        });
        if let Some(c) = capacity {
            v["status"]["capacity"] = json!({"storage": c});
        }
        serde_json::from_value(v).unwrap()
    }

    fn pv(claim_ns: &str, claim_uid: &str) -> PersistentVolume {
        serde_json::from_value(json!({"metadata": {"name": "pv1"}, "spec": {
            "claimRef": {"namespace": claim_ns, "name": "claim", "uid": claim_uid},
            "csi": {"driver": "csi.example.com", "volumeHandle": "h"},
        }}))
        .unwrap()
    }

    /// Upstream `TestSyncHandler`'s decisions: a bound claim that grew waits for the
    /// external resizer; one that did not is left alone; a volume bound elsewhere is
    /// an error.
    #[test]
    fn sync_decisions_follow_upstream() {
        let grown = pvc("2Gi", Some("1Gi"), "Bound");
        assert!(needs_expansion(&grown));
        assert!(bound_to(&pv("ns", "u1"), &grown));
        assert!(!bound_to(&pv("ns", "other"), &grown));
        assert!(!bound_to(&pv("elsewhere", "u1"), &grown));
        assert!(!needs_expansion(&pvc("1Gi", Some("1Gi"), "Bound")));
        assert!(!needs_expansion(&pvc("1024Mi", Some("1Gi"), "Bound")));
        assert!(!needs_expansion(&pvc("1Gi", Some("2Gi"), "Bound")));
    }

    #[test]
    fn updates_enqueue_growth_of_bound_claims() {
        let old = pvc("1Gi", Some("1Gi"), "Bound");
        assert!(update_enqueues(&old, &pvc("2Gi", Some("1Gi"), "Bound")));
        assert!(update_enqueues(&old, &pvc("1Gi", Some("2Gi"), "Bound")));
        assert!(!update_enqueues(&old, &pvc("1Gi", Some("1Gi"), "Bound")));
        assert!(!update_enqueues(&old, &pvc("512Mi", Some("1Gi"), "Bound")));
        assert!(!update_enqueues(
            &pvc("1Gi", None, "Pending"),
            &pvc("2Gi", None, "Pending")
        ));
    }
}
