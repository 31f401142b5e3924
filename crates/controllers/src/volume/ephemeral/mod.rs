//! The ephemeral volume controller: kube-controller-manager's
//! `ephemeral-volume-controller` (alias `ephemeral-volume`, upstream
//! `pkg/controller/volume/ephemeral`).
//!
//! For every generic ephemeral volume of a pod (`volumes[].ephemeral`) it creates the
//! claim `<pod>-<volume>` from the volume's `volumeClaimTemplate` (its labels,
//! annotations and spec), controlled by the pod (`ownerReferences` with `controller`
//! and `blockOwnerDeletion`), so the garbage collector deletes it with the pod. A claim
//! of that name that the pod does not control is a conflict: a Warning `FailedBinding`
//! event on the pod (`ephemeral volume <volume>: PVC <ns>/<name> was not created for
//! pod <ns>/<pod> (pod is not owner)`) and a rate-limited retry.
//!
//! Pods are enqueued when added (their spec cannot change), unless they are being
//! deleted; a deleted claim enqueues the pods that reference it, so that it is
//! created again. `--concurrent-ephemeralvolume-syncs` workers (5).
//! `ephemeral_volume_controller_create_total` and `..._create_failures_total` count
//! the creation requests.

use crate::clientbuilder::ClusterAccess;
use std::sync::{Arc, OnceLock};

use coxswain_runtime::builder::ControllerBuilder;
use coxswain_runtime::cache::Store;
use coxswain_runtime::controller::{
    Action, Context, Controller, ControllerOptions, ReconcileError, ReconcileResult, Reconciler,
};
use coxswain_runtime::events::{object_reference, EventRecorder, EventType};
use coxswain_runtime::handler::{Funcs, Requests};
use coxswain_runtime::ObjectKey;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod, Volume};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::api::PostParams;
use kube::{Api, ResourceExt};
use prometheus_client::metrics::counter::Counter;

use super::common::{add_pod_pvc_index, volume_claim_name, volume_is_for_pod, POD_PVC_INDEX};

/// Name of the controller.
pub const CONTROLLER_NAME: &str = "ephemeral-volume-controller";
/// The event source (`v1.EventSource{Component: "ephemeral_volume"}`).
pub const EVENT_SOURCE: &str = "ephemeral_volume";
/// The event reason of a failure (`events.FailedBinding`).
pub const FAILED_BINDING: &str = "FailedBinding";

/// The controller's options (upstream `EphemeralVolumeControllerConfiguration`).
#[derive(Clone, Debug)]
pub struct EphemeralVolumeControllerOptions {
    /// Pods synced concurrently (`--concurrent-ephemeralvolume-syncs`, 5).
    pub concurrent_ephemeral_volume_syncs: usize,
}

impl Default for EphemeralVolumeControllerOptions {
    fn default() -> Self {
        EphemeralVolumeControllerOptions {
            concurrent_ephemeral_volume_syncs: 5,
        }
    }
}

/// The controller's service account with `--use-service-account-credentials`
/// (upstream `ClientOrDie("ephemeral-volume-controller")`).
pub const SERVICE_ACCOUNT: &str = "ephemeral-volume-controller";

/// The registry entry: `ephemeral-volume-controller`, alias `ephemeral-volume`.
pub fn descriptor() -> crate::registry::Descriptor {
    crate::registry::Descriptor {
        name: CONTROLLER_NAME,
        aliases: &["ephemeral-volume"],
        disabled_by_default: false,
        constructor: |ctx| {
            let o = &ctx.options.ephemeral_volume;
            if o.concurrent_ephemeral_volume_syncs < 1 {
                return Err(format!(
                    "concurrent-ephemeralvolume-syncs must be at least 1, got {}",
                    o.concurrent_ephemeral_volume_syncs
                ));
            }
            Ok(Some(Box::new(ephemeral_volume_controller(
                &ctx.clients(SERVICE_ACCOUNT)?,
                o,
            ))))
        },
    }
}

struct Metrics {
    create: Counter,
    failures: Counter,
}

fn metrics() -> &'static Metrics {
    static METRICS: OnceLock<Metrics> = OnceLock::new();
    METRICS.get_or_init(|| {
        let m = Metrics {
            create: Counter::default(),
            failures: Counter::default(),
        };
        let registry = coxswain_runtime::metrics::global();
        registry.register(
            "ephemeral_volume_controller_create",
            "Number of PersistenVolumeClaims creation requests",
            m.create.clone(),
        );
        registry.register(
            "ephemeral_volume_controller_create_failures",
            "Number of PersistenVolumeClaims creation requests",
            m.failures.clone(),
        );
        m
    })
}

/// Whether a pod is worth a sync (upstream `enqueuePod`): not being deleted and with
/// at least one ephemeral volume.
pub fn wants_sync(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_none()
        && pod
            .spec
            .iter()
            .flat_map(|s| s.volumes.iter().flatten())
            .any(|v| v.ephemeral.is_some())
}

/// The claim the controller creates for `volume` of `pod` (upstream `handleVolume`), or
/// `None` for a volume that is not ephemeral.
pub fn claim_for(pod: &Pod, volume: &Volume) -> Option<PersistentVolumeClaim> {
    let template = volume.ephemeral.as_ref()?.volume_claim_template.as_ref()?;
    let meta = template.metadata.clone().unwrap_or_default();
    Some(PersistentVolumeClaim {
        metadata: ObjectMeta {
            name: Some(volume_claim_name(pod, volume)),
            namespace: pod.metadata.namespace.clone(),
            owner_references: Some(vec![OwnerReference {
                api_version: "v1".into(),
                kind: "Pod".into(),
                name: pod.name_any(),
                uid: pod.metadata.uid.clone().unwrap_or_default(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            }]),
            annotations: meta.annotations,
            labels: meta.labels,
            ..ObjectMeta::default()
        },
        spec: Some(template.spec.clone()),
        status: None,
    })
}

fn pod_handler() -> Funcs<Pod> {
    Funcs::new().on_add(|p: &Pod, q: &Requests<'_, ObjectKey>| {
        if wants_sync(p) {
            q.add(ObjectKey::of(p));
        }
    })
}

/// The controller as a runnable of `mgr`.
pub fn ephemeral_volume_controller(
    mgr: &impl ClusterAccess,
    options: &EphemeralVolumeControllerOptions,
) -> Controller<EphemeralReconciler> {
    add_pod_pvc_index(mgr.cache());
    let pods = mgr.cache().informer::<Pod>().store().clone();
    let reconciler = EphemeralReconciler {
        pods: pods.clone(),
        pvcs: mgr
            .cache()
            .informer::<PersistentVolumeClaim>()
            .store()
            .clone(),
        client: mgr.kube_client().clone(),
        recorder: mgr.event_recorder(EVENT_SOURCE),
    };
    let pvc_deleted = Funcs::new().on_delete(
        move |pvc: &PersistentVolumeClaim, q: &Requests<'_, ObjectKey>| {
            let key = format!("{}/{}", pvc.namespace().unwrap_or_default(), pvc.name_any());
            for p in pods.by_index(POD_PVC_INDEX, &key).unwrap_or_default() {
                if wants_sync(&p) {
                    q.add(ObjectKey::of(p.as_ref()));
                }
            }
        },
    );
    ControllerBuilder::new(mgr.cache())
        .named(CONTROLLER_NAME)
        .with_options(ControllerOptions::workers(
            options.concurrent_ephemeral_volume_syncs,
        ))
        .for_with::<Pod>(pod_handler())
        .watches_with::<PersistentVolumeClaim>(pvc_deleted, Vec::new())
        .build(reconciler)
}

/// Creates the claims of one pod.
pub struct EphemeralReconciler {
    pods: Arc<Store<Pod>>,
    pvcs: Arc<Store<PersistentVolumeClaim>>,
    client: kube::Client,
    recorder: EventRecorder,
}

impl EphemeralReconciler {
    async fn handle_volume(&self, pod: &Pod, volume: &Volume) -> Result<(), String> {
        let Some(claim) = claim_for(pod, volume) else {
            return Ok(());
        };
        let ns = pod.namespace().unwrap_or_default();
        let name = claim.name_any();
        if let Some(existing) = self.pvcs.get(&ObjectKey::namespaced(&ns, &name)) {
            return volume_is_for_pod(pod, &existing);
        }
        metrics().create.inc();
        match Api::<PersistentVolumeClaim>::namespaced(self.client.clone(), &ns)
            .create(&PostParams::default(), &claim)
            .await
        {
            Ok(_) => Ok(()),
            Err(e) => {
                metrics().failures.inc();
                Err(format!("create PVC {name}: {}", api_error_text(&e)))
            }
        }
    }
}

/// The error text as Go's `err.Error()` prints an API status: its message.
fn api_error_text(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(s) => s.message.clone(),
        other => other.to_string(),
    }
}

impl Reconciler for EphemeralReconciler {
    async fn reconcile(&self, _ctx: Context, key: ObjectKey) -> ReconcileResult {
        let Some(pod) = self.pods.get(&key) else {
            return Ok(Action::Done);
        };
        if pod.metadata.deletion_timestamp.is_some() {
            return Ok(Action::Done);
        }
        for volume in pod.spec.iter().flat_map(|s| s.volumes.iter().flatten()) {
            if let Err(e) = self.handle_volume(&pod, volume).await {
                self.recorder.event(
                    &object_reference(pod.as_ref()),
                    None,
                    EventType::Warning,
                    FAILED_BINDING,
                    "Sync",
                    &format!("ephemeral volume {}: {e}", volume.name),
                );
                return Err(ReconcileError::msg(format!(
                    "pod {key}, ephemeral volume {}: {e}",
                    volume.name
                )));
            }
        }
        Ok(Action::Done)
    }
}

#[cfg(test)]
mod tests;
