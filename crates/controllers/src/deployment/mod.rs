//! The Deployment controller: kube-controller-manager's `deployment` controller.
//!
//! A Deployment rolls its pod template out through ReplicaSets: one per template (named
//! `<deployment>-<pod-template-hash>`, the hash label also on its selector and template),
//! the one matching the current template is the *new* ReplicaSet, the others are *old*.
//! Each sync (upstream `pkg/controller/deployment/deployment_controller.go`,
//! `syncDeployment`) does, in this order of precedence:
//!
//! 1. claim ReplicaSets: adopt orphans the selector matches, release owned ones it no
//!    longer matches (controller owner references);
//! 2. a Deployment being deleted only gets its status updated;
//! 3. pause: record `Progressing=Unknown/DeploymentPaused` (or `DeploymentResumed`) and
//!    only scale ([`sync`]);
//! 4. the deprecated rollback annotation ([`rollback`]);
//! 5. a scaling event (`desired-replicas` of an active ReplicaSet differs from
//!    `spec.replicas`): proportional scaling ([`sync`]);
//! 6. otherwise roll out with the strategy: [`rolling`] or [`recreate`], then update the
//!    status and the Progressing/Available conditions ([`progress`]).
//!
//! The status carries what `kubectl rollout status` reads (`observedGeneration`,
//! `updatedReplicas`, `replicas`, `availableReplicas`, the Progressing condition reason).
//! Events go out as `deployment-controller` with upstream reasons (`ScalingReplicaSet`,
//! `ReplicaSetCreateError`, `DeploymentRollback`, `SelectingAll`, ...).
//!
//! ```no_run
//! # async fn demo(config: kube::Config) -> Result<(), Box<dyn std::error::Error>> {
//! use coxswain_runtime::manager::{Manager, ManagerOptions};
//! let mgr = Manager::new(config, ManagerOptions::default())?;
//! mgr.add(coxswain_controllers::deployment::deployment_controller(&mgr, 5))?;
//! mgr.start(coxswain_runtime::manager::shutdown_signal()).await?;
//! # Ok(()) }
//! ```

pub mod progress;
pub mod recreate;
pub mod rollback;
pub mod rolling;
pub mod sync;
pub mod util;

#[cfg(test)]
pub(crate) mod testutil;

use crate::clientbuilder::ClusterAccess;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use apimachinery::selector::LabelSelector;
use coxswain_runtime::builder::ControllerBuilder;
use coxswain_runtime::cache::{Change, Store};
use coxswain_runtime::client::Client;
use coxswain_runtime::controller::{
    Action, Context, Controller, ControllerOptions, ReconcileError, ReconcileResult, Reconciler,
};
use coxswain_runtime::events::{object_reference, EventRecorder, EventType};
use coxswain_runtime::handler::EventHandler;
use coxswain_runtime::ObjectKey;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    LabelSelector as MetaSelector, OwnerReference,
};
use kube::api::{Patch, PatchParams};

use crate::controller_utils::owner_index;
use coxswain_runtime::controllerutil::{get_controller_of, new_controller_ref};
use util::{annotation, name, strategy_type, REVISION_ANNOTATION};

/// The controller's name (queue, logs, metrics).
pub const CONTROLLER_NAME: &str = "deployment";
/// The reporting component of its events.
pub const EVENT_SOURCE: &str = "deployment-controller";

/// Errors of one sync.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A request to the API server failed.
    #[error(transparent)]
    Kube(#[from] kube::Error),
    /// The Deployment's spec cannot be acted on (retrying will not help until it changes).
    #[error("{0}")]
    Invalid(String),
    /// Something else went wrong; retried.
    #[error("{0}")]
    Other(String),
}

/// Whether the API server refused the request because the namespace is terminating.
fn namespace_terminating(e: &kube::Error) -> bool {
    match e {
        kube::Error::Api(s) => s
            .details
            .as_ref()
            .is_some_and(|d| d.causes.iter().any(|c| c.reason == "NamespaceTerminating")),
        _ => false,
    }
}

/// Whether the error is a 404.
pub(crate) fn is_not_found(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 404)
}

/// The Deployment controller's options (upstream `DeploymentControllerConfiguration`).
#[derive(Clone, Debug)]
pub struct DeploymentControllerOptions {
    /// Deployments synced at once (`--concurrent-deployment-syncs`, 5).
    pub concurrent_deployment_syncs: usize,
}

impl Default for DeploymentControllerOptions {
    fn default() -> Self {
        DeploymentControllerOptions {
            concurrent_deployment_syncs: 5,
        }
    }
}

/// The controller's service account with `--use-service-account-credentials`
/// (upstream `ClientOrDie("deployment-controller")`).
pub const SERVICE_ACCOUNT: &str = "deployment-controller";

/// The registry entry: `deployment-controller`, alias `deployment`.
pub fn descriptor() -> crate::registry::Descriptor {
    crate::registry::Descriptor {
        name: "deployment-controller",
        aliases: &["deployment"],
        disabled_by_default: false,
        constructor: |ctx| {
            let workers = ctx.options.deployment.concurrent_deployment_syncs;
            Ok(Some(Box::new(deployment_controller(
                &ctx.clients(SERVICE_ACCOUNT)?,
                workers,
            ))))
        },
    }
}

/// The Deployment controller, ready to be added to `mgr`: reconciles Deployments with
/// `workers` workers, wakes on changes of their ReplicaSets (owned or orphans their
/// selector matches) and on pod deletions of Recreate Deployments.
pub fn deployment_controller(
    mgr: &impl ClusterAccess,
    workers: usize,
) -> Controller<impl Reconciler> {
    let cache = mgr.cache();
    owner_index::register_controller_uid_index::<ReplicaSet>(cache);
    owner_index::register_controller_uid_index::<Pod>(cache);
    let deployments = cache.informer::<Deployment>().store().clone();
    let replicasets = cache.informer::<ReplicaSet>().store().clone();
    let pods = cache.informer::<Pod>().store().clone();
    let reconciler = DeploymentReconciler {
        client: mgr.client(),
        kube: mgr.kube_client().clone(),
        recorder: mgr.event_recorder(EVENT_SOURCE),
    };
    let only_deletions: coxswain_runtime::predicate::BoxPredicate<Pod> =
        Arc::new(|c: &Change<Pod>| matches!(c, Change::Deleted(_)));
    ControllerBuilder::new(cache)
        .named(CONTROLLER_NAME)
        .with_options(ControllerOptions {
            max_concurrent_reconciles: workers.max(1),
            ..Default::default()
        })
        .for_::<Deployment>()
        .watches_with::<ReplicaSet>(
            ReplicaSetHandler {
                deployments: deployments.clone(),
            },
            Vec::new(),
        )
        .watches_with::<Pod>(
            PodHandler {
                deployments,
                replicasets,
                pods,
            },
            vec![only_deletions],
        )
        .build(reconciler)
}

// ---------------------------------------------------------------------------------------
// event handlers

fn key_of(namespace: Option<&str>, name: &str) -> ObjectKey {
    ObjectKey::from_parts(namespace, name)
}

/// The Deployment a controller reference points to, if it exists with that UID.
fn resolve_controller_ref(
    deployments: &Store<Deployment>,
    namespace: Option<&str>,
    r: &OwnerReference,
) -> Option<Arc<Deployment>> {
    if r.kind != "Deployment" {
        return None;
    }
    let d = deployments.get(&key_of(namespace, &r.name))?;
    (d.metadata.uid.as_deref() == Some(r.uid.as_str())).then_some(d)
}

/// A selector that selects something (nil, empty or invalid selectors match nothing).
fn usable_selector(sel: &MetaSelector) -> Option<LabelSelector> {
    let s = LabelSelector::from_meta(sel).ok()?;
    (!s.is_empty()).then_some(s)
}

fn selector_of(d: &Deployment) -> Option<&MetaSelector> {
    Some(&d.spec.selector)
}

/// Deployments in the ReplicaSet's namespace whose selector matches its labels.
fn deployments_selecting(deployments: &Store<Deployment>, rs: &ReplicaSet) -> Vec<ObjectKey> {
    let empty = BTreeMap::new();
    let labels = rs.metadata.labels.as_ref().unwrap_or(&empty);
    let ns = rs.metadata.namespace.as_deref().unwrap_or_default();
    deployments
        .list_namespace(ns)
        .into_iter()
        .filter(|d| {
            selector_of(d)
                .and_then(usable_selector)
                .is_some_and(|s| s.matches_labels(labels))
        })
        .map(|d| ObjectKey::of(d.as_ref()))
        .collect()
}

/// ReplicaSet changes: wake the controlling Deployment, or every Deployment that could
/// adopt an orphan (upstream `addReplicaSet`/`updateReplicaSet`/`deleteReplicaSet`).
struct ReplicaSetHandler {
    deployments: Arc<Store<Deployment>>,
}

impl ReplicaSetHandler {
    fn owner(&self, rs: &ReplicaSet) -> Option<ObjectKey> {
        let r = get_controller_of(&rs.metadata)?;
        resolve_controller_ref(&self.deployments, rs.metadata.namespace.as_deref(), r)
            .map(|d| ObjectKey::of(d.as_ref()))
    }
}

impl EventHandler<ReplicaSet> for ReplicaSetHandler {
    fn keys(&self, change: &Change<ReplicaSet>) -> Vec<ObjectKey> {
        match change {
            Change::Added(rs) => {
                if rs.metadata.deletion_timestamp.is_some()
                    || get_controller_of(&rs.metadata).is_some()
                {
                    return self.owner(rs).into_iter().collect();
                }
                deployments_selecting(&self.deployments, rs)
            }
            Change::Updated { old, new } => {
                if old.metadata.resource_version == new.metadata.resource_version {
                    return Vec::new();
                }
                let mut keys = Vec::new();
                let (cur_ref, old_ref) = (
                    get_controller_of(&new.metadata),
                    get_controller_of(&old.metadata),
                );
                let ref_changed = cur_ref != old_ref;
                if ref_changed {
                    keys.extend(self.owner(old));
                }
                if cur_ref.is_some() {
                    keys.extend(self.owner(new));
                    return keys;
                }
                if ref_changed || old.metadata.labels != new.metadata.labels {
                    keys.extend(deployments_selecting(&self.deployments, new));
                }
                keys
            }
            Change::Deleted(rs) => self.owner(rs).into_iter().collect(),
        }
    }
}

/// Pod deletions: wake a Recreate Deployment once none of its pods is left (upstream
/// `deletePod`).
struct PodHandler {
    deployments: Arc<Store<Deployment>>,
    replicasets: Arc<Store<ReplicaSet>>,
    pods: Arc<Store<Pod>>,
}

impl PodHandler {
    fn deployment_of(&self, pod: &Pod) -> Option<Arc<Deployment>> {
        let r = get_controller_of(&pod.metadata)?;
        if r.kind != "ReplicaSet" {
            return None;
        }
        let ns = pod.metadata.namespace.as_deref();
        let rs = self.replicasets.get(&key_of(ns, &r.name))?;
        if rs.metadata.uid.as_deref() != Some(r.uid.as_str()) {
            return None;
        }
        resolve_controller_ref(&self.deployments, ns, get_controller_of(&rs.metadata)?)
    }

    fn pods_left(&self, d: &Deployment) -> usize {
        let ns = d.metadata.namespace.as_deref().unwrap_or_default();
        let uid = d.metadata.uid.as_deref().unwrap_or_default();
        let Some(selector) = selector_of(d).and_then(usable_selector) else {
            return 0;
        };
        let rs_uids: Vec<String> = owner_index::controlled_by(&self.replicasets, ns, uid)
            .into_iter()
            .filter_map(|rs| rs.metadata.uid.clone())
            .collect();
        owner_index::pods_by_controller(
            &self.pods,
            ns,
            rs_uids.iter().map(String::as_str),
            &selector,
        )
        .values()
        .map(Vec::len)
        .sum()
    }
}

impl EventHandler<Pod> for PodHandler {
    fn keys(&self, change: &Change<Pod>) -> Vec<ObjectKey> {
        let Change::Deleted(pod) = change else {
            return Vec::new();
        };
        match self.deployment_of(pod) {
            Some(d) if strategy_type(&d) == util::RECREATE && self.pods_left(&d) == 0 => {
                vec![ObjectKey::of(d.as_ref())]
            }
            _ => Vec::new(),
        }
    }
}

// ---------------------------------------------------------------------------------------
// the reconciler

/// Reconciles one Deployment (see the module documentation).
pub struct DeploymentReconciler {
    /// Cached reads, direct writes.
    pub(crate) client: Client,
    /// Uncached reads (adoption recheck, a ReplicaSet the cache has not seen yet).
    pub(crate) kube: kube::Client,
    pub(crate) recorder: EventRecorder,
}

impl Reconciler for DeploymentReconciler {
    async fn reconcile(&self, _ctx: Context, request: ObjectKey) -> ReconcileResult {
        match self.sync_deployment(&request).await {
            Ok(a) => Ok(a),
            Err(Error::Kube(e)) if namespace_terminating(&e) => {
                tracing::debug!(deployment = %request, "namespace is terminating; not retrying");
                Ok(Action::Done)
            }
            Err(Error::Invalid(m)) => Err(ReconcileError::terminal(m)),
            Err(e) => Err(e.into()),
        }
    }
}

/// Pods of a Deployment grouped by the UID of their controlling ReplicaSet.
pub type PodMap = HashMap<String, Vec<Arc<Pod>>>;

impl DeploymentReconciler {
    /// One pass of upstream `syncDeployment`.
    async fn sync_deployment(&self, key: &ObjectKey) -> Result<Action, Error> {
        let Some(cached) = self.client.get::<Deployment>(key).await? else {
            tracing::debug!(deployment = %key, "deployment has been deleted");
            return Ok(Action::Done);
        };
        let mut d = (*cached).clone();
        let meta_selector = selector_of(&d).cloned().unwrap_or_default();
        let selects_all = meta_selector
            .match_labels
            .as_ref()
            .is_none_or(|m| m.is_empty())
            && meta_selector
                .match_expressions
                .as_ref()
                .is_none_or(|e| e.is_empty());
        if selects_all {
            self.event(
                &d,
                EventType::Warning,
                "SelectingAll",
                "Sync",
                "This deployment is selecting all pods. A non-empty selector is required.",
            );
            let generation = d.metadata.generation.unwrap_or(0);
            let status = d.status.get_or_insert_with(Default::default);
            if status.observed_generation.unwrap_or(0) < generation {
                status.observed_generation = Some(generation);
                self.update_status(&mut d).await?;
            }
            return Ok(Action::Done);
        }
        let selector = match LabelSelector::from_meta(&meta_selector) {
            Ok(s) => s,
            Err(e) => {
                let msg = format!("deployment {key} has invalid label selector: {e}");
                return Err(self.invalid(&d, "InvalidSelector", msg));
            }
        };
        let mut rs_list = self.claim_replica_sets(&d, &selector).await?;
        if d.metadata.deletion_timestamp.is_some() {
            return self.sync_status_only(&mut d, &mut rs_list).await;
        }
        // pausing and resuming record a condition, so that a resumed Deployment does not
        // count the pause against its progress deadline
        self.check_paused_conditions(&mut d).await?;
        if util::is_paused(&d) {
            return self.sync(&mut d, &mut rs_list).await;
        }
        if rollback::get_rollback_to(&d).is_some() {
            return self.rollback(&mut d, &mut rs_list).await;
        }
        if self.is_scaling_event(&mut d, &mut rs_list).await? {
            return self.sync(&mut d, &mut rs_list).await;
        }
        match strategy_type(&d) {
            util::RECREATE => {
                let pods = self.pod_map(&d, &selector, &rs_list).await?;
                self.rollout_recreate(&mut d, &mut rs_list, &pods).await
            }
            util::ROLLING_UPDATE => self.rollout_rolling(&mut d, &mut rs_list).await,
            other => {
                let msg = format!("unexpected deployment strategy type: {other}");
                Err(self.invalid(&d, "InvalidStrategy", msg))
            }
        }
    }

    /// The ReplicaSets this Deployment manages, adopting matching orphans and releasing
    /// owned ones that no longer match (upstream `ClaimReplicaSets`).
    async fn claim_replica_sets(
        &self,
        d: &Deployment,
        selector: &LabelSelector,
    ) -> Result<Vec<ReplicaSet>, Error> {
        let uid = d.metadata.uid.clone().unwrap_or_default();
        // the ReplicaSets claiming can act on: those it controls and the orphans
        let all = owner_index::claimable(
            &*owner_index::synced_store::<ReplicaSet>(self.client.cache()).await,
            d.metadata.namespace.as_deref().unwrap_or_default(),
            &uid,
        );
        let deleting = d.metadata.deletion_timestamp.is_some();
        let empty = BTreeMap::new();
        let mut claimed = Vec::new();
        let mut first_error: Option<Error> = None;
        let mut can_adopt: Option<Result<(), String>> = None;
        for rs in all {
            let matches = selector.matches_labels(rs.metadata.labels.as_ref().unwrap_or(&empty));
            match get_controller_of(&rs.metadata) {
                Some(r) if r.uid == uid => {
                    if matches {
                        claimed.push((*rs).clone());
                    } else if !deleting {
                        if let Err(e) = self.release(d, &rs).await {
                            first_error.get_or_insert(e);
                        }
                    }
                }
                Some(_) => {}
                None => {
                    if deleting || !matches || rs.metadata.deletion_timestamp.is_some() {
                        continue;
                    }
                    if can_adopt.is_none() {
                        can_adopt = Some(self.recheck_can_adopt(d).await);
                    }
                    if let Some(Err(e)) = &can_adopt {
                        first_error.get_or_insert(Error::Other(e.clone()));
                        continue;
                    }
                    match self.adopt(d, &rs).await {
                        Ok(Some(adopted)) => claimed.push(adopted),
                        Ok(None) => {}
                        Err(e) => {
                            first_error.get_or_insert(e);
                        }
                    }
                }
            }
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(claimed),
        }
    }

    /// Before adopting, make sure (with a quorum read) the Deployment is not being deleted.
    async fn recheck_can_adopt(&self, d: &Deployment) -> Result<(), String> {
        let ns = d.metadata.namespace.as_deref().unwrap_or_default();
        let api: kube::Api<Deployment> = kube::Api::namespaced(self.kube.clone(), ns);
        let fresh = api
            .get_opt(name(&d.metadata))
            .await
            .map_err(|e| e.to_string())?
            .ok_or_else(|| format!("original Deployment {ns}/{} is gone", name(&d.metadata)))?;
        if fresh.metadata.uid != d.metadata.uid {
            return Err(format!(
                "original Deployment {ns}/{} is gone: got uid {:?}, wanted {:?}",
                name(&d.metadata),
                fresh.metadata.uid,
                d.metadata.uid
            ));
        }
        if let Some(t) = &fresh.metadata.deletion_timestamp {
            return Err(format!(
                "{ns}/{} has just been deleted at {}",
                name(&d.metadata),
                t.0
            ));
        }
        Ok(())
    }

    async fn adopt(&self, d: &Deployment, rs: &ReplicaSet) -> Result<Option<ReplicaSet>, Error> {
        let mut copy = rs.clone();
        copy.metadata
            .owner_references
            .get_or_insert_with(Vec::new)
            .push(new_controller_ref(d));
        match self.client.update(&copy).await {
            Ok(adopted) => Ok(Some(adopted)),
            Err(e) if is_not_found(&e) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    async fn release(&self, d: &Deployment, rs: &ReplicaSet) -> Result<(), Error> {
        let uid = d.metadata.uid.clone().unwrap_or_default();
        let mut copy = rs.clone();
        if let Some(refs) = copy.metadata.owner_references.as_mut() {
            refs.retain(|r| r.uid != uid);
        }
        match self.client.update(&copy).await {
            Ok(_) => Ok(()),
            Err(e) if is_not_found(&e) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Pods selected by the Deployment, grouped by their controlling ReplicaSet (only the
    /// Deployment's ReplicaSets), terminating ones included.
    async fn pod_map(
        &self,
        d: &Deployment,
        selector: &LabelSelector,
        rs_list: &[ReplicaSet],
    ) -> Result<PodMap, Error> {
        let store = owner_index::synced_store::<Pod>(self.client.cache()).await;
        Ok(owner_index::pods_by_controller(
            &store,
            d.metadata.namespace.as_deref().unwrap_or_default(),
            rs_list.iter().filter_map(|rs| rs.metadata.uid.as_deref()),
            selector,
        ))
    }

    // -- writes ---------------------------------------------------------------------------

    /// A spec the controller cannot act on: a warning event, and an error that is not
    /// retried (a fixed spec is a new change and syncs again).
    pub(crate) fn invalid(&self, d: &Deployment, reason: &str, msg: String) -> Error {
        self.event(d, EventType::Warning, reason, "Sync", &msg);
        Error::Invalid(msg)
    }

    /// Record an event about the Deployment.
    pub(crate) fn event(
        &self,
        d: &Deployment,
        type_: EventType,
        reason: &str,
        action: &str,
        note: &str,
    ) {
        self.recorder
            .event(&object_reference(d), None, type_, reason, action, note);
    }

    /// Replace a ReplicaSet; the stored result.
    pub(crate) async fn update_rs(&self, rs: &ReplicaSet) -> Result<ReplicaSet, Error> {
        Ok(self.client.update(rs).await?)
    }

    /// Write the Deployment's status (and its revision annotation, which upstream's status
    /// strategy lets through `/status`; a server that drops it gets a metadata patch).
    /// `d` keeps the new resourceVersion so that later writes of this pass do not conflict.
    pub(crate) async fn update_status(&self, d: &mut Deployment) -> Result<(), Error> {
        let updated = self.client.update_status(d).await?;
        d.metadata.resource_version = updated.metadata.resource_version.clone();
        let want = annotation(&d.metadata, REVISION_ANNOTATION).map(str::to_string);
        if let Some(want) = want {
            if annotation(&updated.metadata, REVISION_ANNOTATION) != Some(want.as_str()) {
                let patch =
                    serde_json::json!({"metadata": {"annotations": {REVISION_ANNOTATION: want}}});
                let patched: Deployment = self
                    .client
                    .patch(
                        &ObjectKey::of(d),
                        &PatchParams::default(),
                        &Patch::Merge(&patch),
                    )
                    .await?;
                d.metadata.resource_version = patched.metadata.resource_version;
            }
        }
        Ok(())
    }

    /// Replace the Deployment (spec and metadata).
    pub(crate) async fn update_deployment(&self, d: &mut Deployment) -> Result<(), Error> {
        let updated = self.client.update(d).await?;
        d.metadata.resource_version = updated.metadata.resource_version;
        d.metadata.generation = updated.metadata.generation;
        Ok(())
    }
}

/// Replace the ReplicaSet of the same name in `list` (or add it).
pub(crate) fn put_rs(list: &mut Vec<ReplicaSet>, rs: &ReplicaSet) {
    match list
        .iter_mut()
        .find(|x| x.metadata.name == rs.metadata.name)
    {
        Some(slot) => *slot = rs.clone(),
        None => list.push(rs.clone()),
    }
}
