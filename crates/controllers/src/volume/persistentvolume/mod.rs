//! The PersistentVolume binder: kube-controller-manager's
//! `persistentvolume-binder-controller` (upstream `pkg/controller/volume/persistentvolume`).
//!
//! It binds claims to volumes: an unbound claim gets the smallest fitting `Available`
//! volume ([`index`]), or the volume it names in `spec.volumeName`, or the claim a volume
//! names in `spec.claimRef` (pre-binding by the user, both ways); binding writes the
//! volume's `claimRef` and phase `Bound`, then the claim's `volumeName`, the
//! `pv.kubernetes.io/bind-completed` (and, when the binder chose,
//! `pv.kubernetes.io/bound-by-controller`) annotations and phase `Bound` with the
//! volume's capacity and access modes. Claims of a `WaitForFirstConsumer` class wait
//! (event `WaitForFirstConsumer`) until the scheduler picks a node
//! (`volume.kubernetes.io/selected-node`); claims no volume fits are handed to their
//! class's external provisioner (`volume.kubernetes.io/storage-provisioner` and its beta
//! twin, event `ExternalProvisioning`), whose volume, pre-bound to the claim, is then
//! bound. A claim without any class gets the default class (retroactively). A bound
//! claim whose volume is gone or bound elsewhere is `Lost`; a volume whose claim is gone
//! is `Released` and reclaimed: `Retain` keeps it, `Delete` leaves external provisioners'
//! volumes to them and fails others (no in-tree deleters here), `Recycle` fails (no
//! recycler). Every claim and volume is synced again every `--pvclaimbinder-sync-period`
//! (15 s). See [`binder`] for the sync logic.

use crate::clientbuilder::ClusterAccess;
use std::sync::{Arc, Once, OnceLock};
use std::time::Duration;

use coxswain_runtime::builder::ControllerBuilder;
use coxswain_runtime::cache::Store;
use coxswain_runtime::controller::{
    Action, Context, Controller, ControllerOptions, ReconcileError, ReconcileResult, Reconciler,
};
use coxswain_runtime::events::{EventRecorder, EventType};
use coxswain_runtime::handler::Funcs;
use coxswain_runtime::manager::{BoxError, Runnable};
use coxswain_runtime::workqueue::RateLimitedQueue;
use coxswain_runtime::ObjectKey;
use futures::future::BoxFuture;
use futures::FutureExt;
use k8s_openapi::api::core::v1::{ObjectReference, PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::storage::v1::StorageClass;
use kube::api::PostParams;
use kube::Api;
use tokio_util::sync::CancellationToken;

pub mod binder;
pub mod index;

use binder::{Binder, BinderApi, BinderError};

/// Set on a claim once its initial binding is done (`pv.kubernetes.io/bind-completed`).
pub const ANN_BIND_COMPLETED: &str = "pv.kubernetes.io/bind-completed";
/// Set on a volume or claim the binder bound (`pv.kubernetes.io/bound-by-controller`);
/// absent: the user pre-bound it.
pub const ANN_BOUND_BY_CONTROLLER: &str = "pv.kubernetes.io/bound-by-controller";
/// The node the scheduler chose for a `WaitForFirstConsumer` claim.
pub const ANN_SELECTED_NODE: &str = "volume.kubernetes.io/selected-node";
/// The provisioner that must provision a claim.
pub const ANN_STORAGE_PROVISIONER: &str = "volume.kubernetes.io/storage-provisioner";
/// The deprecated beta form of [`ANN_STORAGE_PROVISIONER`], still set.
pub const ANN_BETA_STORAGE_PROVISIONER: &str = "volume.beta.kubernetes.io/storage-provisioner";
/// The provisioner that created a volume (`pv.kubernetes.io/provisioned-by`).
pub const ANN_DYNAMICALLY_PROVISIONED: &str = "pv.kubernetes.io/provisioned-by";
/// The legacy class annotation, used when `spec.storageClassName` is not set.
pub const ANN_BETA_STORAGE_CLASS: &str = "volume.beta.kubernetes.io/storage-class";
/// The default StorageClass marker.
pub const ANN_DEFAULT_STORAGE_CLASS: &str = "storageclass.kubernetes.io/is-default-class";
/// The beta default StorageClass marker, still honoured.
pub const ANN_BETA_DEFAULT_STORAGE_CLASS: &str = "storageclass.beta.kubernetes.io/is-default-class";

/// Event reasons (upstream `pkg/controller/volume/events`).
pub const FAILED_BINDING: &str = "FailedBinding";
/// The volume does not fit the claim that names it.
pub const VOLUME_MISMATCH: &str = "VolumeMismatch";
/// No recycler.
pub const VOLUME_FAILED_RECYCLE: &str = "VolumeFailedRecycle";
/// No deleter.
pub const VOLUME_FAILED_DELETE: &str = "VolumeFailedDelete";
/// Handed to an external provisioner.
pub const EXTERNAL_PROVISIONING: &str = "ExternalProvisioning";
/// The class or its provisioner is unusable.
pub const PROVISIONING_FAILED: &str = "ProvisioningFailed";
/// A `WaitForFirstConsumer` claim no pod uses yet.
pub const WAIT_FOR_FIRST_CONSUMER: &str = "WaitForFirstConsumer";
/// A `WaitForFirstConsumer` claim whose pods are not scheduled yet.
pub const WAIT_FOR_POD_SCHEDULED: &str = "WaitForPodScheduled";
/// A bound claim lost its volume.
pub const CLAIM_LOST: &str = "ClaimLost";
/// Two claims bound to one volume.
pub const CLAIM_MISBOUND: &str = "ClaimMisbound";

/// The `From` of the binder's events (upstream's recorder component).
pub const EVENT_SOURCE: &str = "persistentvolume-controller";

/// The binder's options (upstream `PersistentVolumeBinderControllerConfiguration`).
#[derive(Clone, Debug)]
pub struct PersistentVolumeBinderControllerOptions {
    /// How often every claim and volume is synced again (`--pvclaimbinder-sync-period`,
    /// 15 s).
    pub pv_claim_binder_sync_period: Duration,
    /// Hand claims to provisioners (`--enable-dynamic-provisioning`, true).
    pub enable_dynamic_provisioning: bool,
    /// `--enable-hostpath-provisioner` (deprecated; coxswain has no in-tree hostPath
    /// provisioner, so it changes nothing).
    pub enable_host_path_provisioner: bool,
    /// `--flex-volume-plugin-dir` (accepted; coxswain runs no FlexVolume plugins).
    pub flex_volume_plugin_dir: String,
    /// `--volume-host-cidr-denylist` (upstream: a no-op, deprecated).
    pub volume_host_cidr_denylist: Vec<String>,
    /// `--volume-host-allow-local-loopback` (upstream: a no-op, deprecated).
    pub volume_host_allow_local_loopback: bool,
}

impl Default for PersistentVolumeBinderControllerOptions {
    fn default() -> Self {
        PersistentVolumeBinderControllerOptions {
            pv_claim_binder_sync_period: Duration::from_secs(15),
            enable_dynamic_provisioning: true,
            enable_host_path_provisioner: false,
            flex_volume_plugin_dir: "/usr/libexec/kubernetes/kubelet-plugins/volume/exec/".into(),
            volume_host_cidr_denylist: Vec::new(),
            volume_host_allow_local_loopback: true,
        }
    }
}

/// The controller's service account with `--use-service-account-credentials`
/// (upstream `ClientOrDie("persistent-volume-binder")`).
pub const SERVICE_ACCOUNT: &str = "persistent-volume-binder";

/// The registry entry: `persistentvolume-binder-controller`, alias
/// `persistentvolume-binder`.
pub fn descriptor() -> crate::registry::Descriptor {
    crate::registry::Descriptor {
        name: "persistentvolume-binder-controller",
        aliases: &["persistentvolume-binder"],
        disabled_by_default: false,
        constructor: |ctx| {
            Ok(Some(Box::new(persistent_volume_binder_controller(
                &ctx.clients(SERVICE_ACCOUNT)?,
                &ctx.options.persistent_volume_binder,
            ))))
        },
    }
}

/// The binder's API: the API server, the informers, the recorder and the queues.
pub struct LiveApi {
    client: kube::Client,
    claims: Arc<Store<PersistentVolumeClaim>>,
    classes: Arc<Store<StorageClass>>,
    pods: Arc<Store<Pod>>,
    recorder: EventRecorder,
    claim_queue: Arc<OnceLock<RateLimitedQueue<ObjectKey>>>,
    volume_queue: Arc<OnceLock<RateLimitedQueue<ObjectKey>>>,
}

fn not_found<T>(r: Result<T, kube::Error>) -> Result<Option<T>, kube::Error> {
    match r {
        Ok(v) => Ok(Some(v)),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(None),
        Err(e) => Err(e),
    }
}

fn claims_api(client: &kube::Client, pvc: &PersistentVolumeClaim) -> Api<PersistentVolumeClaim> {
    Api::namespaced(
        client.clone(),
        pvc.metadata.namespace.as_deref().unwrap_or_default(),
    )
}

impl BinderApi for LiveApi {
    async fn update_volume(&self, pv: &PersistentVolume) -> Result<PersistentVolume, kube::Error> {
        let name = pv.metadata.name.as_deref().unwrap_or_default();
        Api::<PersistentVolume>::all(self.client.clone())
            .replace(name, &PostParams::default(), pv)
            .await
    }

    async fn update_volume_status(
        &self,
        pv: &PersistentVolume,
    ) -> Result<PersistentVolume, kube::Error> {
        let name = pv.metadata.name.as_deref().unwrap_or_default();
        Api::<PersistentVolume>::all(self.client.clone())
            .replace_status(name, &PostParams::default(), pv)
            .await
    }

    async fn update_claim(
        &self,
        pvc: &PersistentVolumeClaim,
    ) -> Result<PersistentVolumeClaim, kube::Error> {
        let name = pvc.metadata.name.as_deref().unwrap_or_default();
        claims_api(&self.client, pvc)
            .replace(name, &PostParams::default(), pvc)
            .await
    }

    async fn update_claim_status(
        &self,
        pvc: &PersistentVolumeClaim,
    ) -> Result<PersistentVolumeClaim, kube::Error> {
        let name = pvc.metadata.name.as_deref().unwrap_or_default();
        claims_api(&self.client, pvc)
            .replace_status(name, &PostParams::default(), pvc)
            .await
    }

    async fn get_claim(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<PersistentVolumeClaim>, kube::Error> {
        not_found(
            Api::<PersistentVolumeClaim>::namespaced(self.client.clone(), namespace)
                .get(name)
                .await,
        )
    }

    async fn get_volume(&self, name: &str) -> Result<Option<PersistentVolume>, kube::Error> {
        not_found(
            Api::<PersistentVolume>::all(self.client.clone())
                .get(name)
                .await,
        )
    }

    fn informer_claim(&self, namespace: &str, name: &str) -> Option<Arc<PersistentVolumeClaim>> {
        self.claims.get(&ObjectKey::namespaced(namespace, name))
    }

    fn storage_class(&self, name: &str) -> Option<Arc<StorageClass>> {
        self.classes.get(&ObjectKey::cluster(name))
    }

    fn storage_classes(&self) -> Vec<Arc<StorageClass>> {
        self.classes.list()
    }

    fn pods(&self, namespace: &str) -> Vec<Arc<Pod>> {
        self.pods.list_namespace(namespace)
    }

    fn event(&self, regarding: ObjectReference, type_: EventType, reason: &str, message: &str) {
        self.recorder
            .event(&regarding, None, type_, reason, "Binding", message);
    }

    fn enqueue_claim(&self, key: ObjectKey) {
        if let Some(q) = self.claim_queue.get() {
            q.add(key);
        }
    }

    fn enqueue_volume(&self, name: &str) {
        if let Some(q) = self.volume_queue.get() {
            q.add(ObjectKey::cluster(name));
        }
    }
}

/// What both workers share: the binder and the one-time filling of its caches from the
/// informers (upstream `initializeCaches`, once they synced).
struct Shared {
    binder: Binder<LiveApi>,
    volumes: Arc<Store<PersistentVolume>>,
    claims: Arc<Store<PersistentVolumeClaim>>,
    init: Once,
}

impl Shared {
    fn initialized(&self) -> &Binder<LiveApi> {
        self.init.call_once(|| {
            self.binder
                .initialize(self.volumes.list(), self.claims.list());
        });
        &self.binder
    }
}

fn outcome(what: &str, key: &ObjectKey, r: Result<(), BinderError>) -> ReconcileResult {
    match r {
        Ok(()) => Ok(Action::Done),
        // the newer object's own sync follows (upstream logs conflicts quietly)
        Err(e) if e.is_conflict() => {
            tracing::debug!(%key, error = %e, "{what}: version conflict");
            Ok(Action::Done)
        }
        Err(e) => Err(ReconcileError::msg(e.to_string()).context(what)),
    }
}

/// The claim worker (upstream `claimWorker`).
pub struct ClaimReconciler {
    shared: Arc<Shared>,
}

impl Reconciler for ClaimReconciler {
    async fn reconcile(&self, _ctx: Context, key: ObjectKey) -> ReconcileResult {
        let binder = self.shared.initialized();
        let informer = self.shared.claims.get(&key);
        let r = binder
            .handle_claim(key.namespace().unwrap_or_default(), key.name(), informer)
            .await;
        outcome("syncing the claim", &key, r)
    }
}

/// The volume worker (upstream `volumeWorker`).
pub struct VolumeReconciler {
    shared: Arc<Shared>,
}

impl Reconciler for VolumeReconciler {
    async fn reconcile(&self, _ctx: Context, key: ObjectKey) -> ReconcileResult {
        let binder = self.shared.initialized();
        let informer = self.shared.volumes.get(&key);
        let r = binder.handle_volume(key.name(), informer).await;
        outcome("syncing the volume", &key, r)
    }
}

/// The binder's two workers, one per queue (`claims` and `volumes`, one worker each as
/// upstream's: a claim sync is not reentrant).
pub struct PersistentVolumeBinderController {
    claims: Controller<ClaimReconciler>,
    volumes: Controller<VolumeReconciler>,
}

impl PersistentVolumeBinderController {
    /// The claim queue's controller.
    pub fn claims(&self) -> &Controller<ClaimReconciler> {
        &self.claims
    }

    /// The volume queue's controller.
    pub fn volumes(&self) -> &Controller<VolumeReconciler> {
        &self.volumes
    }
}

impl Runnable for PersistentVolumeBinderController {
    fn name(&self) -> String {
        "controller persistentvolume-binder-controller".into()
    }

    fn start(
        self: Box<Self>,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, Result<(), BoxError>> {
        async move {
            let PersistentVolumeBinderController { claims, volumes } = *self;
            tokio::join!(claims.run(cancel.clone()), volumes.run(cancel));
            Ok(())
        }
        .boxed()
    }
}

/// The binder as a runnable of `mgr`.
pub fn persistent_volume_binder_controller(
    mgr: &impl ClusterAccess,
    options: &PersistentVolumeBinderControllerOptions,
) -> PersistentVolumeBinderController {
    let cache = mgr.cache();
    let claim_queue = Arc::new(OnceLock::new());
    let volume_queue = Arc::new(OnceLock::new());
    let claims = cache.informer::<PersistentVolumeClaim>().store().clone();
    let volumes = cache.informer::<PersistentVolume>().store().clone();
    let api = LiveApi {
        client: mgr.kube_client().clone(),
        claims: claims.clone(),
        classes: cache.informer::<StorageClass>().store().clone(),
        pods: cache.informer::<Pod>().store().clone(),
        recorder: mgr.event_recorder(EVENT_SOURCE),
        claim_queue: claim_queue.clone(),
        volume_queue: volume_queue.clone(),
    };
    let shared = Arc::new(Shared {
        binder: Binder::new(api, options.enable_dynamic_provisioning),
        volumes: volumes.clone(),
        claims: claims.clone(),
        init: Once::new(),
    });
    let period = options
        .pv_claim_binder_sync_period
        .max(Duration::from_millis(10));
    // every informer the syncs read is waited for before the workers start
    let claims_for_resync = claims.clone();
    let claim_controller = ControllerBuilder::new(cache)
        .named("claims")
        .with_options(ControllerOptions::workers(1))
        .for_::<PersistentVolumeClaim>()
        .watches_with::<PersistentVolume>(Funcs::new(), Vec::new())
        .watches_with::<StorageClass>(Funcs::new(), Vec::new())
        .watches_with::<Pod>(Funcs::new(), Vec::new())
        .every(period, move |q| {
            for k in claims_for_resync.keys() {
                q.add(k);
            }
        })
        .build(ClaimReconciler {
            shared: shared.clone(),
        });
    let volumes_for_resync = volumes.clone();
    let volume_controller = ControllerBuilder::new(cache)
        .named("volumes")
        .with_options(ControllerOptions::workers(1))
        .for_::<PersistentVolume>()
        .watches_with::<PersistentVolumeClaim>(Funcs::new(), Vec::new())
        .watches_with::<StorageClass>(Funcs::new(), Vec::new())
        .every(period, move |q| {
            for k in volumes_for_resync.keys() {
                q.add(k);
            }
        })
        .build(VolumeReconciler { shared });
    let _ = claim_queue.set(claim_controller.queue().clone());
    let _ = volume_queue.set(volume_controller.queue().clone());
    PersistentVolumeBinderController {
        claims: claim_controller,
        volumes: volume_controller,
    }
}

#[cfg(test)]
mod tests;
