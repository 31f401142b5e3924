//! The PV protection controller: kube-controller-manager's
//! `persistentvolume-protection-controller` (alias `pv-protection`, upstream
//! `pkg/controller/volume/pvprotection`).
//!
//! The API server's `StorageObjectInUseProtection` admission puts the
//! `kubernetes.io/pv-protection` finalizer on every new PersistentVolume. This
//! controller removes it from a volume being deleted unless the volume is `Bound`
//! (a Released or Available volume goes at once), and adds it to volumes that lack it.

use crate::clientbuilder::ClusterAccess;
use std::sync::Arc;

use coxswain_runtime::builder::ControllerBuilder;
use coxswain_runtime::cache::Store;
use coxswain_runtime::controller::{
    Action, Context, Controller, ControllerOptions, ReconcileError, ReconcileResult, Reconciler,
};
use coxswain_runtime::handler::{Funcs, Requests};
use coxswain_runtime::ObjectKey;
use k8s_openapi::api::core::v1::PersistentVolume;
use kube::api::PostParams;
use kube::{Api, ResourceExt};

use super::common::{is_deletion_candidate, need_to_add_finalizer};

/// Name of the controller.
pub const CONTROLLER_NAME: &str = "persistentvolume-protection-controller";
/// The finalizer (`volumeutil.PVProtectionFinalizer`).
pub const PV_PROTECTION_FINALIZER: &str = "kubernetes.io/pv-protection";

/// The controller's options (upstream has none; one worker).
#[derive(Clone, Debug, Default)]
pub struct PvProtectionControllerOptions {}

/// The controller's service account with `--use-service-account-credentials`
/// (upstream `ClientOrDie("pv-protection-controller")`).
pub const SERVICE_ACCOUNT: &str = "pv-protection-controller";

/// The registry entry: `persistentvolume-protection-controller`, alias `pv-protection`.
pub fn descriptor() -> crate::registry::Descriptor {
    crate::registry::Descriptor {
        name: CONTROLLER_NAME,
        aliases: &["pv-protection"],
        disabled_by_default: false,
        constructor: |ctx| {
            Ok(Some(Box::new(pv_protection_controller(
                &ctx.clients(SERVICE_ACCOUNT)?,
            ))))
        },
    }
}

/// Whether the volume is still in use (upstream `isBeingUsed`): it is `Bound`.
pub fn is_being_used(pv: &PersistentVolume) -> bool {
    pv.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Bound")
}

/// What one sync does to a volume (upstream `processPV`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Leave it.
    Keep,
    /// Remove the finalizer: deleting and no longer Bound.
    RemoveFinalizer,
    /// Add the finalizer: not deleting and without it.
    AddFinalizer,
}

/// Upstream `processPV` as a decision.
pub fn decide(pv: &PersistentVolume) -> Decision {
    if is_deletion_candidate(pv, PV_PROTECTION_FINALIZER) && !is_being_used(pv) {
        return Decision::RemoveFinalizer;
    }
    if need_to_add_finalizer(pv, PV_PROTECTION_FINALIZER) {
        return Decision::AddFinalizer;
    }
    Decision::Keep
}

fn pv_handler() -> Funcs<PersistentVolume> {
    let wanted = |pv: &PersistentVolume, q: &Requests<'_, ObjectKey>| {
        if need_to_add_finalizer(pv, PV_PROTECTION_FINALIZER)
            || is_deletion_candidate(pv, PV_PROTECTION_FINALIZER)
        {
            q.add(ObjectKey::of(pv));
        }
    };
    Funcs::new()
        .on_add(wanted)
        .on_update(move |_, new, q| wanted(new, q))
}

/// The controller as a runnable of `mgr`.
pub fn pv_protection_controller(mgr: &impl ClusterAccess) -> Controller<PvProtectionReconciler> {
    let reconciler = PvProtectionReconciler {
        pvs: mgr.cache().informer::<PersistentVolume>().store().clone(),
        client: mgr.kube_client().clone(),
    };
    ControllerBuilder::new(mgr.cache())
        .named(CONTROLLER_NAME)
        .with_options(ControllerOptions::workers(1))
        .for_with::<PersistentVolume>(pv_handler())
        .build(reconciler)
}

/// Adds or removes one volume's finalizer.
pub struct PvProtectionReconciler {
    pvs: Arc<Store<PersistentVolume>>,
    client: kube::Client,
}

impl Reconciler for PvProtectionReconciler {
    async fn reconcile(&self, _ctx: Context, key: ObjectKey) -> ReconcileResult {
        let Some(pv) = self.pvs.get(&key) else {
            return Ok(Action::Done);
        };
        let mut clone = (*pv).clone();
        let finalizers = clone.metadata.finalizers.get_or_insert_with(Vec::new);
        let what = match decide(&pv) {
            Decision::Keep => return Ok(Action::Done),
            Decision::RemoveFinalizer => {
                finalizers.retain(|f| f != PV_PROTECTION_FINALIZER);
                "removing protection finalizer from PV"
            }
            Decision::AddFinalizer => {
                finalizers.push(PV_PROTECTION_FINALIZER.to_string());
                "adding protection finalizer to PV"
            }
        };
        Api::<PersistentVolume>::all(self.client.clone())
            .replace(&pv.name_any(), &PostParams::default(), &clone)
            .await
            .map_err(|e| ReconcileError::from(e).context(what))?;
        tracing::debug!(pv = key.name(), what, "done");
        Ok(Action::Done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pv(deleting: bool, finalizer: bool, phase: &str) -> PersistentVolume {
        let mut v = json!({"metadata": {"name": "pv1"}, "status": {"phase": phase}});
        if deleting {
            v["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        }
        if finalizer {
            v["metadata"]["finalizers"] = json!([PV_PROTECTION_FINALIZER]);
        }
        serde_json::from_value(v).unwrap()
    }

    /// Upstream `TestPVProtectionController`'s cases.
    #[test]
    fn decisions_follow_upstream() {
        let cases = [
            (
                "PV without finalizer -> finalizer is added",
                pv(false, false, "Available"),
                Decision::AddFinalizer,
            ),
            (
                "PV with finalizer -> no action",
                pv(false, true, "Available"),
                Decision::Keep,
            ),
            (
                "deleted PV without finalizer -> no action",
                pv(true, false, "Available"),
                Decision::Keep,
            ),
            (
                "deleted PV with finalizer, Available -> finalizer is removed",
                pv(true, true, "Available"),
                Decision::RemoveFinalizer,
            ),
            (
                "deleted PV with finalizer, Released -> finalizer is removed",
                pv(true, true, "Released"),
                Decision::RemoveFinalizer,
            ),
            (
                "deleted PV with finalizer, Bound -> finalizer is not removed",
                pv(true, true, "Bound"),
                Decision::Keep,
            ),
        ];
        for (name, pv, want) in cases {
            assert_eq!(decide(&pv), want, "{name}");
        }
    }
}
