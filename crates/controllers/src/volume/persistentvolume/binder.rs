//! The binder's sync logic (upstream `pv_controller.go`): `syncClaim`, `syncVolume`,
//! binding, phases, reclaim, the hand-off to external provisioners and the default
//! class, over its own caches of claims and volumes.
//!
//! The caches hold what the binder last saw or wrote; an object older (by
//! `resourceVersion`) than the cached one is ignored, so an informer lagging behind the
//! binder's own writes cannot undo them (upstream `storeObjectUpdate`). Every write is
//! an update with the resourceVersion read, so a stale cache ends in a conflict, which
//! the next sync of the newer object resolves.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::{Arc, Mutex};

use coxswain_runtime::events::EventType;
use coxswain_runtime::ObjectKey;
use k8s_openapi::api::core::v1::{
    ObjectReference, PersistentVolume, PersistentVolumeClaim, PersistentVolumeClaimStatus, Pod,
};
use k8s_openapi::api::storage::v1::StorageClass;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

use super::index::{
    check_volume_satisfy_claim, claim_class, claim_has_class, is_delay_binding_provisioning,
    is_volume_bound_to_claim, volume_mode_mismatch, VolumeIndex,
};
use super::*;

/// A failed sync.
#[derive(Debug, thiserror::Error)]
pub enum BinderError {
    /// An API call failed.
    #[error(transparent)]
    Api(#[from] kube::Error),
    /// Anything else (bad data, a missing class mode, an invalid binding).
    #[error("{0}")]
    Other(String),
}

impl BinderError {
    /// A version conflict: frequent and harmless, the newer object is synced next.
    pub fn is_conflict(&self) -> bool {
        matches!(self, BinderError::Api(kube::Error::Api(s)) if s.code == 409)
    }
}

/// What the binder reads and writes besides its own caches: the API server, the
/// informers of classes, pods and claims, the event recorder and the two queues.
pub trait BinderApi: Send + Sync + 'static {
    /// Update a volume (PUT, conditional on its resourceVersion).
    fn update_volume(
        &self,
        pv: &PersistentVolume,
    ) -> impl Future<Output = Result<PersistentVolume, kube::Error>> + Send;
    /// Update a volume's status.
    fn update_volume_status(
        &self,
        pv: &PersistentVolume,
    ) -> impl Future<Output = Result<PersistentVolume, kube::Error>> + Send;
    /// Update a claim.
    fn update_claim(
        &self,
        pvc: &PersistentVolumeClaim,
    ) -> impl Future<Output = Result<PersistentVolumeClaim, kube::Error>> + Send;
    /// Update a claim's status.
    fn update_claim_status(
        &self,
        pvc: &PersistentVolumeClaim,
    ) -> impl Future<Output = Result<PersistentVolumeClaim, kube::Error>> + Send;
    /// Read a claim from the API server (`None`: not found).
    fn get_claim(
        &self,
        namespace: &str,
        name: &str,
    ) -> impl Future<Output = Result<Option<PersistentVolumeClaim>, kube::Error>> + Send;
    /// Read a volume from the API server (`None`: not found).
    fn get_volume(
        &self,
        name: &str,
    ) -> impl Future<Output = Result<Option<PersistentVolume>, kube::Error>> + Send;
    /// A claim from the informer.
    fn informer_claim(&self, namespace: &str, name: &str) -> Option<Arc<PersistentVolumeClaim>>;
    /// A StorageClass from the informer.
    fn storage_class(&self, name: &str) -> Option<Arc<StorageClass>>;
    /// Every StorageClass in the informer.
    fn storage_classes(&self) -> Vec<Arc<StorageClass>>;
    /// The pods of a namespace in the informer.
    fn pods(&self, namespace: &str) -> Vec<Arc<Pod>>;
    /// Record an event about `regarding`.
    fn event(&self, regarding: ObjectReference, type_: EventType, reason: &str, message: &str);
    /// Sync this claim soon.
    fn enqueue_claim(&self, key: ObjectKey);
    /// Sync this volume soon.
    fn enqueue_volume(&self, name: &str);
}

#[derive(Default)]
struct Caches {
    volumes: VolumeIndex,
    claims: HashMap<String, Arc<PersistentVolumeClaim>>,
}

/// `namespace/name` of a claim.
pub fn claim_key(claim: &PersistentVolumeClaim) -> String {
    format!(
        "{}/{}",
        claim.metadata.namespace.as_deref().unwrap_or_default(),
        claim.metadata.name.as_deref().unwrap_or_default()
    )
}

fn claim_ref_key(r: &ObjectReference) -> String {
    format!(
        "{}/{}",
        r.namespace.as_deref().unwrap_or_default(),
        r.name.as_deref().unwrap_or_default()
    )
}

fn name(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> &str {
    meta.name.as_deref().unwrap_or_default()
}

fn has_annotation(
    meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    key: &str,
) -> bool {
    meta.annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(key))
}

fn set_annotation(
    meta: &mut k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    key: &str,
    value: &str,
) {
    meta.annotations
        .get_or_insert_with(BTreeMap::new)
        .insert(key.to_string(), value.to_string());
}

fn volume_phase(v: &PersistentVolume) -> &str {
    v.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or_default()
}

fn claim_phase(c: &PersistentVolumeClaim) -> &str {
    c.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or_default()
}

fn volume_name_of(c: &PersistentVolumeClaim) -> &str {
    c.spec
        .as_ref()
        .and_then(|s| s.volume_name.as_deref())
        .unwrap_or_default()
}

fn claim_ref(v: &PersistentVolume) -> Option<&ObjectReference> {
    v.spec.as_ref().and_then(|s| s.claim_ref.as_ref())
}

fn reclaim_policy(v: &PersistentVolume) -> &str {
    v.spec
        .as_ref()
        .and_then(|s| s.persistent_volume_reclaim_policy.as_deref())
        .unwrap_or_default()
}

/// The reference to an object the events name.
fn reference<K: kube::Resource<DynamicType = ()>>(obj: &K) -> ObjectReference {
    coxswain_runtime::events::object_reference(obj)
}

/// Whether `new` is not older than `old` (upstream `storeObjectUpdate`: versions are
/// compared as integers; an unparsable one is an error).
fn is_newer(old: Option<&str>, new: Option<&str>) -> Result<bool, BinderError> {
    let parse = |v: Option<&str>| -> Result<i64, BinderError> {
        v.unwrap_or_default().parse::<i64>().map_err(|e| {
            BinderError::Other(format!(
                "error parsing ResourceVersion {:?}: {e}",
                v.unwrap_or_default()
            ))
        })
    };
    let Some(old) = old else {
        return Ok(true);
    };
    Ok(parse(Some(old))? <= parse(new)?)
}

/// The binder: its caches and its API.
pub struct Binder<A> {
    api: A,
    caches: Mutex<Caches>,
    enable_dynamic_provisioning: bool,
    claim_lock: tokio::sync::Mutex<()>,
    volume_lock: tokio::sync::Mutex<()>,
}

impl<A: BinderApi> Binder<A> {
    /// A binder with empty caches.
    pub fn new(api: A, enable_dynamic_provisioning: bool) -> Self {
        Binder {
            api,
            caches: Mutex::default(),
            enable_dynamic_provisioning,
            claim_lock: tokio::sync::Mutex::new(()),
            volume_lock: tokio::sync::Mutex::new(()),
        }
    }

    /// The API.
    pub fn api(&self) -> &A {
        &self.api
    }

    fn caches(&self) -> std::sync::MutexGuard<'_, Caches> {
        self.caches.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Fill the caches (upstream `initializeCaches`, at start).
    pub fn initialize(
        &self,
        volumes: impl IntoIterator<Item = Arc<PersistentVolume>>,
        claims: impl IntoIterator<Item = Arc<PersistentVolumeClaim>>,
    ) {
        let mut c = self.caches();
        for v in volumes {
            c.volumes.add(v);
        }
        for claim in claims {
            c.claims.insert(claim_key(&claim), claim);
        }
    }

    /// The cached volume of that name.
    pub fn cached_volume(&self, name: &str) -> Option<Arc<PersistentVolume>> {
        self.caches().volumes.get(name).cloned()
    }

    /// The cached claim of that key (`namespace/name`).
    pub fn cached_claim(&self, key: &str) -> Option<Arc<PersistentVolumeClaim>> {
        self.caches().claims.get(key).cloned()
    }

    fn store_volume(&self, volume: Arc<PersistentVolume>) -> Result<bool, BinderError> {
        let mut c = self.caches();
        let old = c.volumes.get(name(&volume.metadata));
        if !is_newer(
            old.and_then(|o| o.metadata.resource_version.as_deref()),
            volume.metadata.resource_version.as_deref(),
        )? {
            return Ok(false);
        }
        c.volumes.add(volume);
        Ok(true)
    }

    fn store_claim(&self, claim: Arc<PersistentVolumeClaim>) -> Result<bool, BinderError> {
        let key = claim_key(&claim);
        let mut c = self.caches();
        let old = c.claims.get(&key);
        if !is_newer(
            old.and_then(|o| o.metadata.resource_version.as_deref()),
            claim.metadata.resource_version.as_deref(),
        )? {
            return Ok(false);
        }
        c.claims.insert(key, claim);
        Ok(true)
    }

    /// A claim key from the claim queue (upstream `claimWorker`): the informer's claim
    /// is synced unless the cache holds a newer one; a claim gone from the informer is
    /// dropped from the cache and its volume synced.
    pub async fn handle_claim(
        &self,
        namespace: &str,
        name: &str,
        informer: Option<Arc<PersistentVolumeClaim>>,
    ) -> Result<(), BinderError> {
        let _only_one = self.claim_lock.lock().await;
        match informer {
            Some(claim) => {
                if !self.store_claim(claim.clone())? {
                    return Ok(());
                }
                self.sync_claim(claim).await
            }
            None => {
                let removed = self.caches().claims.remove(&format!("{namespace}/{name}"));
                if let Some(claim) = removed {
                    let volume = volume_name_of(&claim);
                    if !volume.is_empty() {
                        // the volume turns Released without waiting for the resync
                        self.api.enqueue_volume(volume);
                    }
                }
                Ok(())
            }
        }
    }

    /// A volume name from the volume queue (upstream `volumeWorker`).
    pub async fn handle_volume(
        &self,
        name: &str,
        informer: Option<Arc<PersistentVolume>>,
    ) -> Result<(), BinderError> {
        let _only_one = self.volume_lock.lock().await;
        match informer {
            Some(volume) => {
                if !self.store_volume(volume.clone())? {
                    return Ok(());
                }
                self.sync_volume(volume).await
            }
            None => {
                let removed = self.caches().volumes.remove(name);
                if let Some(r) = removed.as_deref().and_then(claim_ref) {
                    // the claim turns Lost without waiting for the resync
                    self.api.enqueue_claim(ObjectKey::namespaced(
                        r.namespace.as_deref().unwrap_or_default(),
                        r.name.as_deref().unwrap_or_default(),
                    ));
                }
                Ok(())
            }
        }
    }

    /// Upstream `syncClaim`.
    pub async fn sync_claim(&self, claim: Arc<PersistentVolumeClaim>) -> Result<(), BinderError> {
        if has_annotation(&claim.metadata, ANN_BIND_COMPLETED) {
            self.sync_bound_claim(claim).await
        } else {
            self.sync_unbound_claim(claim).await
        }
    }

    /// Upstream `IsDelayBindingMode`: the claim's class waits for the first consumer (a
    /// missing class does not).
    fn is_delay_binding_mode(&self, claim: &PersistentVolumeClaim) -> Result<bool, BinderError> {
        let class = claim_class(claim);
        if class.is_empty() {
            return Ok(false);
        }
        let Some(sc) = self.api.storage_class(&class) else {
            return Ok(false);
        };
        match sc.volume_binding_mode.as_deref() {
            None => Err(BinderError::Other(format!(
                "VolumeBindingMode not set for StorageClass {class:?}"
            ))),
            Some(mode) => Ok(mode == "WaitForFirstConsumer"),
        }
    }

    async fn sync_unbound_claim(
        &self,
        claim: Arc<PersistentVolumeClaim>,
    ) -> Result<(), BinderError> {
        let volume_name = volume_name_of(&claim).to_string();
        if volume_name.is_empty() {
            let delay = self.is_delay_binding_mode(&claim)?;
            let found = self
                .caches()
                .volumes
                .find_best_match_for_claim(&claim, delay)
                .map_err(|e| {
                    BinderError::Other(format!(
                        "error finding PV for claim {:?}: {e}",
                        claim_key(&claim)
                    ))
                })?;
            let Some(volume) = found else {
                if self.assign_default_storage_class(&claim).await? {
                    // the update syncs the claim again
                    return Ok(());
                }
                if delay && !is_delay_binding_provisioning(&claim) {
                    self.emit_event_for_unbound_delay_binding_claim(&claim);
                } else if !claim_class(&claim).is_empty() {
                    // the provisioner's volume is bound by a later sync
                    return self.provision_claim(&claim).await;
                } else {
                    self.api.event(
                        reference(&*claim),
                        EventType::Normal,
                        FAILED_BINDING,
                        "no persistent volumes available for this claim and no storage class is set",
                    );
                }
                self.update_claim_status(&claim, "Pending", None).await?;
                return Ok(());
            };
            return self.bind(volume, claim).await;
        }
        // the user asked for a particular volume
        let Some(volume) = self.cached_volume(&volume_name) else {
            self.update_claim_status(&claim, "Pending", None).await?;
            return Ok(());
        };
        if claim_ref(&volume).is_none() {
            if let Err(e) = check_volume_satisfy_claim(&volume, &claim) {
                self.api.event(
                    reference(&*claim),
                    EventType::Warning,
                    VOLUME_MISMATCH,
                    &format!("Cannot bind to requested volume {volume_name:?}: {e}"),
                );
                self.update_claim_status(&claim, "Pending", None).await?;
                return Ok(());
            }
            return self.bind(volume, claim).await;
        }
        if is_volume_bound_to_claim(&volume, &claim) {
            return self.bind(volume, claim).await;
        }
        let msg = format!("volume {volume_name:?} already bound to a different claim.");
        self.api
            .event(reference(&*claim), EventType::Warning, FAILED_BINDING, &msg);
        if !has_annotation(&claim.metadata, ANN_BOUND_BY_CONTROLLER) {
            self.update_claim_status(&claim, "Pending", None).await?;
            return Ok(());
        }
        Err(BinderError::Other(format!(
            "invalid binding of claim {:?} to volume {volume_name:?}: volume already claimed by {:?}",
            claim_key(&claim),
            claim_ref(&volume).map(claim_ref_key).unwrap_or_default()
        )))
    }

    async fn sync_bound_claim(&self, claim: Arc<PersistentVolumeClaim>) -> Result<(), BinderError> {
        let volume_name = volume_name_of(&claim).to_string();
        if volume_name.is_empty() {
            self.update_claim_status_with_event(
                &claim,
                "Lost",
                EventType::Warning,
                CLAIM_LOST,
                "Bound claim has lost reference to PersistentVolume. Data on the volume is lost!",
            )
            .await?;
            return Ok(());
        }
        let Some(volume) = self.cached_volume(&volume_name) else {
            self.update_claim_status_with_event(
                &claim,
                "Lost",
                EventType::Warning,
                CLAIM_LOST,
                "Bound claim has lost its PersistentVolume. Data on the volume is lost!",
            )
            .await?;
            return Ok(());
        };
        match claim_ref(&volume) {
            // unbound meanwhile, or the binder has not seen its own write yet: bind again
            None => self.bind(volume, claim).await,
            Some(r)
                if r.uid.as_deref().unwrap_or_default()
                    == claim.metadata.uid.as_deref().unwrap_or_default() =>
            {
                self.bind(volume, claim).await
            }
            Some(_) => {
                self.update_claim_status_with_event(
                    &claim,
                    "Lost",
                    EventType::Warning,
                    CLAIM_MISBOUND,
                    "Two claims are bound to the same volume, this one is bound incorrectly",
                )
                .await?;
                Ok(())
            }
        }
    }

    /// Upstream `bind`: claimRef on the volume, volume Bound, volumeName on the claim,
    /// claim Bound; each write only when needed, stopping at the first error.
    async fn bind(
        &self,
        volume: Arc<PersistentVolume>,
        claim: Arc<PersistentVolumeClaim>,
    ) -> Result<(), BinderError> {
        let volume = self.bind_volume_to_claim(volume, &claim).await?;
        let volume = self.update_volume_phase(volume, "Bound", None).await?;
        let claim = self.bind_claim_to_volume(claim, &volume).await?;
        self.update_claim_status(&claim, "Bound", Some(&volume))
            .await?;
        Ok(())
    }

    async fn bind_volume_to_claim(
        &self,
        volume: Arc<PersistentVolume>,
        claim: &PersistentVolumeClaim,
    ) -> Result<Arc<PersistentVolume>, BinderError> {
        let set_bound_by_controller = !is_volume_bound_to_claim(&volume, claim);
        let mut clone = (*volume).clone();
        let mut dirty = false;
        let r = claim_ref(&volume);
        let same = |a: Option<&String>, b: Option<&String>| {
            a.map(String::as_str).unwrap_or_default() == b.map(String::as_str).unwrap_or_default()
        };
        if r.is_none_or(|r| {
            !same(r.name.as_ref(), claim.metadata.name.as_ref())
                || !same(r.namespace.as_ref(), claim.metadata.namespace.as_ref())
                || !same(r.uid.as_ref(), claim.metadata.uid.as_ref())
        }) {
            clone.spec.get_or_insert_with(Default::default).claim_ref = Some(reference(claim));
            dirty = true;
        }
        if set_bound_by_controller && !has_annotation(&clone.metadata, ANN_BOUND_BY_CONTROLLER) {
            set_annotation(&mut clone.metadata, ANN_BOUND_BY_CONTROLLER, "yes");
            dirty = true;
        }
        if !dirty {
            return Ok(volume);
        }
        let updated = Arc::new(self.api.update_volume(&clone).await?);
        self.store_volume(updated.clone())?;
        Ok(updated)
    }

    /// Upstream `updateVolumePhase`: nothing when the phase is already right.
    async fn update_volume_phase(
        &self,
        volume: Arc<PersistentVolume>,
        phase: &str,
        message: Option<&str>,
    ) -> Result<Arc<PersistentVolume>, BinderError> {
        if volume_phase(&volume) == phase {
            return Ok(volume);
        }
        let mut clone = (*volume).clone();
        let status = clone.status.get_or_insert_with(Default::default);
        status.phase = Some(phase.to_string());
        status.message = message.map(String::from);
        status.last_phase_transition_time = Some(Time(Timestamp::now()));
        let updated = Arc::new(self.api.update_volume_status(&clone).await?);
        self.store_volume(updated.clone())?;
        Ok(updated)
    }

    async fn update_volume_phase_with_event(
        &self,
        volume: Arc<PersistentVolume>,
        phase: &str,
        type_: EventType,
        reason: &str,
        message: &str,
    ) -> Result<Arc<PersistentVolume>, BinderError> {
        if volume_phase(&volume) == phase {
            return Ok(volume);
        }
        let updated = self
            .update_volume_phase(volume, phase, Some(message))
            .await?;
        self.api.event(reference(&*updated), type_, reason, message);
        Ok(updated)
    }

    async fn bind_claim_to_volume(
        &self,
        claim: Arc<PersistentVolumeClaim>,
        volume: &PersistentVolume,
    ) -> Result<Arc<PersistentVolumeClaim>, BinderError> {
        let volume_name = name(&volume.metadata);
        let mut clone = (*claim).clone();
        let mut dirty = false;
        let should_bind = volume_name_of(&claim) != volume_name;
        if should_bind {
            clone.spec.get_or_insert_with(Default::default).volume_name =
                Some(volume_name.to_string());
            dirty = true;
            if !has_annotation(&clone.metadata, ANN_BOUND_BY_CONTROLLER) {
                set_annotation(&mut clone.metadata, ANN_BOUND_BY_CONTROLLER, "yes");
            }
        }
        if !has_annotation(&clone.metadata, ANN_BIND_COMPLETED) {
            set_annotation(&mut clone.metadata, ANN_BIND_COMPLETED, "yes");
            dirty = true;
        }
        if !dirty {
            return Ok(claim);
        }
        let updated = Arc::new(self.api.update_claim(&clone).await?);
        self.store_claim(updated.clone())?;
        Ok(updated)
    }

    /// Upstream `updateClaimStatus`: the phase, and the access modes and capacity of the
    /// volume (cleared without one; the capacity only when the claim becomes bound, so a
    /// resize is not undone).
    async fn update_claim_status(
        &self,
        claim: &Arc<PersistentVolumeClaim>,
        phase: &str,
        volume: Option<&PersistentVolume>,
    ) -> Result<Arc<PersistentVolumeClaim>, BinderError> {
        let mut clone = (**claim).clone();
        let status = clone
            .status
            .get_or_insert_with(PersistentVolumeClaimStatus::default);
        let mut dirty = false;
        if claim_phase(claim) != phase {
            status.phase = Some(phase.to_string());
            dirty = true;
        }
        match volume {
            None => {
                if status.access_modes.is_some() {
                    status.access_modes = None;
                    dirty = true;
                }
                if status.capacity.is_some() {
                    status.capacity = None;
                    dirty = true;
                }
            }
            Some(v) => {
                let spec = v.spec.clone().unwrap_or_default();
                if status.access_modes != spec.access_modes {
                    status.access_modes = spec.access_modes.clone();
                    dirty = true;
                }
                if claim_phase(claim) != phase {
                    let Some(cap) = spec.capacity.as_ref().and_then(|c| c.get("storage")) else {
                        return Err(BinderError::Other(format!(
                            "PersistentVolume {:?} is without a storage capacity",
                            name(&v.metadata)
                        )));
                    };
                    let current = status.capacity.as_ref().and_then(|c| c.get("storage"));
                    let differs = current.is_none_or(|c| {
                        apimachinery::quantity::parse(&c.0).map(|q| q.nanos())
                            != apimachinery::quantity::parse(&cap.0).map(|q| q.nanos())
                    });
                    if differs {
                        status.capacity = spec.capacity.clone();
                        dirty = true;
                    }
                }
            }
        }
        if !dirty {
            return Ok(claim.clone());
        }
        let updated = Arc::new(self.api.update_claim_status(&clone).await?);
        self.store_claim(updated.clone())?;
        Ok(updated)
    }

    /// Upstream `updateClaimStatusWithEvent`: only a phase change writes and reports.
    async fn update_claim_status_with_event(
        &self,
        claim: &Arc<PersistentVolumeClaim>,
        phase: &str,
        type_: EventType,
        reason: &str,
        message: &str,
    ) -> Result<(), BinderError> {
        if claim_phase(claim) == phase {
            return Ok(());
        }
        let updated = self.update_claim_status(claim, phase, None).await?;
        self.api.event(reference(&*updated), type_, reason, message);
        Ok(())
    }

    /// Upstream `assignDefaultStorageClass` (retroactive default class): a claim with no
    /// class at all (not even `""`) gets the default one; `true` when it was updated.
    async fn assign_default_storage_class(
        &self,
        claim: &PersistentVolumeClaim,
    ) -> Result<bool, BinderError> {
        if claim_has_class(claim) {
            return Ok(false);
        }
        let Some(default) = default_class(&self.api.storage_classes()) else {
            return Ok(false);
        };
        let mut clone = claim.clone();
        clone
            .spec
            .get_or_insert_with(Default::default)
            .storage_class_name = default.metadata.name.clone();
        self.api.update_claim(&clone).await.map_err(|e| {
            BinderError::Other(format!(
                "can't update PersistentVolumeClaim[{:?}]: {e}",
                claim_key(claim)
            ))
        })?;
        Ok(true)
    }

    /// Upstream `emitEventForUnboundDelayBindingClaim`.
    fn emit_event_for_unbound_delay_binding_claim(&self, claim: &PersistentVolumeClaim) {
        let pods = non_scheduled_pods_using(
            &self
                .api
                .pods(claim.metadata.namespace.as_deref().unwrap_or_default()),
            name(&claim.metadata),
        );
        let (reason, message) = match pods.as_slice() {
            [] => (
                WAIT_FOR_FIRST_CONSUMER,
                "waiting for first consumer to be created before binding".to_string(),
            ),
            [one] => (
                WAIT_FOR_POD_SCHEDULED,
                format!("waiting for pod {one} to be scheduled"),
            ),
            many => (
                WAIT_FOR_POD_SCHEDULED,
                format!("waiting for pods {} to be scheduled", many.join(",")),
            ),
        };
        self.api
            .event(reference(claim), EventType::Normal, reason, &message);
    }

    /// Upstream `provisionClaim` with `provisionClaimOperationExternal`: coxswain has no
    /// in-tree volume plugins, so every provisioner outside `kubernetes.io/` is external
    /// and every one inside it has no plugin.
    async fn provision_claim(&self, claim: &Arc<PersistentVolumeClaim>) -> Result<(), BinderError> {
        if !self.enable_dynamic_provisioning {
            return Ok(());
        }
        let class_name = claim_class(claim);
        let Some(class) = self.api.storage_class(&class_name) else {
            self.api.event(
                reference(&**claim),
                EventType::Warning,
                PROVISIONING_FAILED,
                &format!("storageclass.storage.k8s.io {class_name:?} not found"),
            );
            return Ok(());
        };
        let provisioner = class.provisioner.clone();
        if provisioner.starts_with("kubernetes.io/") {
            self.api.event(
                reference(&**claim),
                EventType::Warning,
                PROVISIONING_FAILED,
                &format!("no volume plugin matched name: {provisioner}"),
            );
            return Ok(());
        }
        let claim = match self.set_claim_provisioner(claim, &provisioner).await {
            Ok(c) => c,
            Err(e) => {
                self.api.event(
                    reference(&**claim),
                    EventType::Warning,
                    PROVISIONING_FAILED,
                    &format!("Error saving claim: {e}"),
                );
                return Err(e);
            }
        };
        self.api.event(
            reference(&*claim),
            EventType::Normal,
            EXTERNAL_PROVISIONING,
            &format!(
                "Waiting for a volume to be created either by the external provisioner '{provisioner}' or manually by the system administrator. If volume creation is delayed, please verify that the provisioner is running and correctly registered."
            ),
        );
        Ok(())
    }

    async fn set_claim_provisioner(
        &self,
        claim: &Arc<PersistentVolumeClaim>,
        provisioner: &str,
    ) -> Result<Arc<PersistentVolumeClaim>, BinderError> {
        let current = claim
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(ANN_STORAGE_PROVISIONER));
        if current.map(String::as_str) == Some(provisioner) {
            return Ok(claim.clone());
        }
        let mut clone = (**claim).clone();
        set_annotation(
            &mut clone.metadata,
            ANN_BETA_STORAGE_PROVISIONER,
            provisioner,
        );
        set_annotation(&mut clone.metadata, ANN_STORAGE_PROVISIONER, provisioner);
        let updated = Arc::new(self.api.update_claim(&clone).await?);
        self.store_claim(updated.clone())?;
        Ok(updated)
    }

    /// Upstream `syncVolume`.
    pub async fn sync_volume(&self, volume: Arc<PersistentVolume>) -> Result<(), BinderError> {
        let Some(r) = claim_ref(&volume).cloned() else {
            self.update_volume_phase(volume, "Available", None).await?;
            return Ok(());
        };
        let ref_uid = r.uid.clone().unwrap_or_default();
        if ref_uid.is_empty() {
            // pre-bound to a claim by name: the claim's sync binds it
            self.update_volume_phase(volume, "Available", None).await?;
            return Ok(());
        }
        let ns = r.namespace.clone().unwrap_or_default();
        let claim_name = r.name.clone().unwrap_or_default();
        let mut claim = self.cached_claim(&claim_ref_key(&r));
        if claim.is_none() && !matches!(volume_phase(&volume), "Released" | "Failed") {
            // a provisioner's claim may not have reached the caches yet: never release a
            // volume on a cache miss alone
            claim = self.api.informer_claim(&ns, &claim_name);
            if claim.is_none() {
                claim = self.api.get_claim(&ns, &claim_name).await?.map(Arc::new);
            }
        }
        if let Some(c) = &claim {
            if c.metadata.uid.as_deref().unwrap_or_default() != ref_uid {
                // maybe a stale cache: ask the API server
                let fresh = self.api.get_claim(&ns, &claim_name).await?;
                claim = fresh
                    .filter(|f| f.metadata.uid.as_deref().unwrap_or_default() == ref_uid)
                    .map(Arc::new);
            }
        }
        let Some(claim) = claim else {
            // the claim was deleted
            let volume = if matches!(volume_phase(&volume), "Released" | "Failed") {
                volume
            } else {
                self.update_volume_phase(volume, "Released", None).await?
            };
            return self.reclaim_volume(volume).await;
        };
        let claim_volume = volume_name_of(&claim).to_string();
        let volume_name = name(&volume.metadata).to_string();
        if claim_volume.is_empty() {
            if volume_mode_mismatch(&claim, &volume) {
                self.api.event(
                    reference(&*volume),
                    EventType::Warning,
                    VOLUME_MISMATCH,
                    &format!(
                        "Cannot bind PersistentVolume to requested PersistentVolumeClaim {:?} due to incompatible volumeMode.",
                        name(&claim.metadata)
                    ),
                );
                self.api.event(
                    reference(&*claim),
                    EventType::Warning,
                    VOLUME_MISMATCH,
                    &format!(
                        "Cannot bind PersistentVolume {volume_name:?} to requested PersistentVolumeClaim due to incompatible volumeMode."
                    ),
                );
                return Ok(());
            }
            // the claim's sync completes the binding (a provisioned volume gets bound now)
            self.api
                .enqueue_claim(ObjectKey::namespaced(&ns, name(&claim.metadata)));
            return Ok(());
        }
        if claim_volume == volume_name {
            self.update_volume_phase(volume, "Bound", None).await?;
            return Ok(());
        }
        // the claim is bound to another volume
        let provisioned = has_annotation(&volume.metadata, ANN_DYNAMICALLY_PROVISIONED);
        if provisioned && reclaim_policy(&volume) == "Delete" {
            let volume = if matches!(volume_phase(&volume), "Released" | "Failed") {
                volume
            } else {
                self.update_volume_phase(volume, "Released", None).await?
            };
            return self.reclaim_volume(volume).await;
        }
        self.unbind_volume(volume).await
    }

    /// Upstream `unbindVolume`: a volume the binder bound loses its claimRef, one the user
    /// pre-bound keeps it without the UID; then Available.
    async fn unbind_volume(&self, volume: Arc<PersistentVolume>) -> Result<(), BinderError> {
        let mut clone = (*volume).clone();
        if has_annotation(&volume.metadata, ANN_BOUND_BY_CONTROLLER) {
            if let Some(s) = clone.spec.as_mut() {
                s.claim_ref = None;
            }
            if let Some(a) = clone.metadata.annotations.as_mut() {
                a.remove(ANN_BOUND_BY_CONTROLLER);
                if a.is_empty() {
                    clone.metadata.annotations = None;
                }
            }
        } else if let Some(r) = clone.spec.as_mut().and_then(|s| s.claim_ref.as_mut()) {
            r.uid = None;
        }
        let updated = Arc::new(self.api.update_volume(&clone).await?);
        self.store_volume(updated.clone())?;
        self.update_volume_phase(updated, "Available", None).await?;
        Ok(())
    }

    /// Upstream `reclaimVolume`.
    async fn reclaim_volume(&self, volume: Arc<PersistentVolume>) -> Result<(), BinderError> {
        match reclaim_policy(&volume) {
            // the volume stays Released until an administrator frees it
            "Retain" => Ok(()),
            "Recycle" => {
                self.update_volume_phase_with_event(
                    volume,
                    "Failed",
                    EventType::Warning,
                    VOLUME_FAILED_RECYCLE,
                    "No recycler plugin found for the volume!",
                )
                .await?;
                Ok(())
            }
            "Delete" => self.delete_volume_operation(volume).await,
            _ => {
                self.update_volume_phase_with_event(
                    volume,
                    "Failed",
                    EventType::Warning,
                    "VolumeUnknownReclaimPolicy",
                    "Volume has unrecognized PersistentVolumeReclaimPolicy",
                )
                .await?;
                Ok(())
            }
        }
    }

    /// Upstream `deleteVolumeOperation`: on a fresh read, a released volume whose
    /// provisioner is external is left to it; any other has no deleter here (coxswain
    /// has no in-tree volume plugins) and fails as upstream's without one.
    async fn delete_volume_operation(
        &self,
        volume: Arc<PersistentVolume>,
    ) -> Result<(), BinderError> {
        let volume_name = name(&volume.metadata).to_string();
        let fresh = match self.api.get_volume(&volume_name).await {
            Ok(Some(v)) => v,
            // gone, or unreadable: nothing to do now (upstream logs and returns)
            Ok(None) | Err(_) => return Ok(()),
        };
        if fresh.metadata.deletion_timestamp.is_some() || !self.is_volume_released(&fresh) {
            return Ok(());
        }
        let provisioned_by = volume
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(ANN_DYNAMICALLY_PROVISIONED))
            .filter(|p| !p.is_empty());
        let error = match provisioned_by {
            // the external provisioner deletes the volume and the PV object
            Some(p) if !p.starts_with("kubernetes.io/") => return Ok(()),
            Some(p) => format!("no volume plugin matched name: {p}"),
            None => format!(
                "error getting deleter volume plugin for volume {volume_name:?}: no deletable volume plugin matched"
            ),
        };
        self.update_volume_phase_with_event(
            volume,
            "Failed",
            EventType::Warning,
            VOLUME_FAILED_DELETE,
            &error,
        )
        .await?;
        // upstream retries on every sync of the volume, without a faster retry
        tracing::warn!(volume = %volume_name, error = %error, "deleting a volume");
        Ok(())
    }

    /// Upstream `isVolumeReleased`: bound (with a UID) to a claim that is gone, has
    /// another UID, or is bound to another volume.
    fn is_volume_released(&self, volume: &PersistentVolume) -> bool {
        let Some(r) = claim_ref(volume) else {
            return false;
        };
        let uid = r.uid.as_deref().unwrap_or_default();
        if uid.is_empty() {
            return false;
        }
        match self.cached_claim(&claim_ref_key(r)) {
            Some(c) if c.metadata.uid.as_deref() == Some(uid) => {
                let bound_to = volume_name_of(&c);
                !bound_to.is_empty() && bound_to != name(&volume.metadata)
            }
            _ => true,
        }
    }
}

/// Upstream `GetDefaultClass`: the classes marked default (GA or beta annotation
/// `"true"`); of several, the newest, then by name.
pub fn default_class(classes: &[Arc<StorageClass>]) -> Option<Arc<StorageClass>> {
    let is_default = |c: &StorageClass| {
        c.metadata.annotations.as_ref().is_some_and(|a| {
            a.get(ANN_DEFAULT_STORAGE_CLASS).map(String::as_str) == Some("true")
                || a.get(ANN_BETA_DEFAULT_STORAGE_CLASS).map(String::as_str) == Some("true")
        })
    };
    let mut defaults: Vec<&Arc<StorageClass>> = classes.iter().filter(|c| is_default(c)).collect();
    defaults.sort_by(|a, b| {
        let created = |c: &StorageClass| c.metadata.creation_timestamp.as_ref().map(|t| t.0);
        created(b)
            .cmp(&created(a))
            .then_with(|| a.metadata.name.cmp(&b.metadata.name))
    });
    defaults.first().map(|c| (*c).clone())
}

/// Upstream `findNonScheduledPodsByPVC`: the names of the pods using the claim (by a
/// `persistentVolumeClaim` volume or a generic ephemeral volume) that are neither
/// scheduled nor terminated.
pub fn non_scheduled_pods_using(pods: &[Arc<Pod>], claim: &str) -> Vec<String> {
    let mut names: Vec<String> = pods
        .iter()
        .filter(|p| {
            let phase = p.status.as_ref().and_then(|s| s.phase.as_deref());
            let spec = p.spec.as_ref();
            !matches!(phase, Some("Succeeded" | "Failed"))
                && spec
                    .and_then(|s| s.node_name.as_deref())
                    .unwrap_or_default()
                    .is_empty()
                && spec.and_then(|s| s.volumes.as_ref()).is_some_and(|vs| {
                    vs.iter().any(|v| {
                        v.persistent_volume_claim
                            .as_ref()
                            .is_some_and(|c| c.claim_name == claim)
                            || (v.ephemeral.is_some()
                                && format!("{}-{}", name(&p.metadata), v.name) == claim)
                    })
                })
        })
        .map(|p| name(&p.metadata).to_string())
        .collect();
    names.sort();
    names
}
