//! The resource quota controller: kube-controller-manager's `resourcequota-controller`
//! (alias `resourcequota`; upstream `pkg/controller/resourcequota`).
//!
//! For every ResourceQuota it writes `status.hard` (= `spec.hard`) and `status.used`:
//! the usage of every resource named in `spec.hard` that an evaluator tracks, counted
//! with the evaluators the API server's ResourceQuota admission charges with
//! ([`apimachinery::quota`]), over the objects of the quota's namespace that
//! match its scopes. The status is written only when it changed.
//!
//! Creates are charged by admission; this controller lowers usage again: a deleted
//! pod, service or claim, a pod that became terminal, a service whose quota type
//! changed and a claim whose allocated size changed wake the quotas of their namespace
//! that track them (upstream's quota monitor and `DefaultUpdateFilter`). Object counts
//! (`count/<resource>.<group>`, `configmaps`, `secrets`, ...) are read from the shared
//! metadata informers of their resources, found through discovery, whose deletions
//! wake the quotas too. Every quota is recounted each `--resource-quota-sync-period`
//! (5m), with `--concurrent-resource-quota-syncs` (5) workers.
//!
//! Deviations: one work queue (upstream keeps a second "priority" queue for quotas
//! whose status is missing; here every quota goes to the same queue), and a quota's
//! object-count informer starts when a quota first names the resource (upstream watches
//! every quotable resource found by discovery every 30 seconds).

use crate::clientbuilder::ClusterAccess;
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use apimachinery::quota::resources;
use apimachinery::quota::{self, Evaluator, Quota};
use coxswain_runtime::builder::ControllerBuilder;
use coxswain_runtime::cache::metadata::MetadataInformer;
use coxswain_runtime::cache::{Cache, Store};
use coxswain_runtime::controller::{
    Action, Context, Controller, ControllerOptions, ReconcileError, ReconcileResult, Reconciler,
};
use coxswain_runtime::handler::{Funcs, Requests};
use coxswain_runtime::ObjectKey;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod, ResourceQuota, Service};
use kube::api::PostParams;
use kube::Api;
use serde_json::Value;

/// The controller's name (queue, logs).
pub const CONTROLLER_NAME: &str = "resourcequota_primary";

/// The resource quota controller's options (upstream
/// `ResourceQuotaControllerConfiguration`).
#[derive(Clone, Debug)]
pub struct ResourceQuotaControllerOptions {
    /// Quotas synced at once (`--concurrent-resource-quota-syncs`, 5).
    pub concurrent_resource_quota_syncs: usize,
    /// How often every quota is recounted (`--resource-quota-sync-period`, 5m).
    pub resource_quota_sync_period: Duration,
}

impl Default for ResourceQuotaControllerOptions {
    fn default() -> Self {
        ResourceQuotaControllerOptions {
            concurrent_resource_quota_syncs: 5,
            resource_quota_sync_period: Duration::from_secs(300),
        }
    }
}

/// The controller's service account with `--use-service-account-credentials`
/// (upstream `ClientOrDie("resourcequota-controller")`).
pub const SERVICE_ACCOUNT: &str = "resourcequota-controller";

/// The registry entry: `resourcequota-controller`, alias `resourcequota`.
pub fn descriptor() -> crate::registry::Descriptor {
    crate::registry::Descriptor {
        name: "resourcequota-controller",
        aliases: &["resourcequota"],
        disabled_by_default: false,
        constructor: |ctx| {
            Ok(Some(Box::new(resource_quota_controller(
                &ctx.clients(SERVICE_ACCOUNT)?,
                &ctx.options.resource_quota,
            ))))
        },
    }
}

/// Enqueue the quotas of `ns` that track something `evaluator` counts (upstream
/// `replenishQuota`, which looks at `status.hard` only). `spec.hard` is looked at too:
/// a quota whose own status write the cache has not seen yet (a late watch event) still
/// tracks what its spec names, and a replenishment missed then would wait for the full
/// resync.
fn replenish(
    quotas: &Store<ResourceQuota>,
    evaluator: &Evaluator,
    ns: &str,
    q: &Requests<'_, ObjectKey>,
) {
    for rq in quotas.list_namespace(ns) {
        let status = rq.status.as_ref().and_then(|s| s.hard.as_ref());
        let spec = rq.spec.as_ref().and_then(|s| s.hard.as_ref());
        let hard: Vec<String> = status
            .into_iter()
            .chain(spec)
            .flat_map(|h| h.keys().cloned())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        if !evaluator.matching_resources(&hard).is_empty() {
            q.add(ObjectKey::of(rq.as_ref()));
        }
    }
}

fn to_value<T: serde::Serialize>(o: &T) -> Value {
    serde_json::to_value(o).unwrap_or(Value::Null)
}

/// The replenishment handler of a typed kind: deletions, and updates `changed` says
/// quota must see (upstream's monitor has no add handler: admission charged creates).
fn replenishing<K>(
    quotas: Arc<Store<ResourceQuota>>,
    evaluator: Evaluator,
    changed: fn(&Value, &Value) -> bool,
) -> Funcs<K>
where
    K: kube::Resource + serde::Serialize + Send + Sync + 'static,
{
    let (q2, e2) = (quotas.clone(), evaluator.clone());
    Funcs::new()
        .on_update(move |old: &K, new: &K, q| {
            let ns = new.meta().namespace.as_deref().unwrap_or_default();
            // most namespaces have no quota: then no update matters (and the JSON views
            // of every pod update would cost more than the rest of the handlers)
            if quotas.list_namespace(ns).is_empty() {
                return;
            }
            if changed(&to_value(old), &to_value(new)) {
                replenish(&quotas, &evaluator, ns, q);
            }
        })
        .on_delete(move |o: &K, q| {
            let ns = o.meta().namespace.clone().unwrap_or_default();
            replenish(&q2, &e2, &ns, q);
        })
}

/// Pods: one that stopped counting (became terminal) frees quota.
fn pod_changed(old: &Value, new: &Value) -> bool {
    let now = chrono::Utc::now();
    quota::pods::quota_v1_pod(old, now) && !quota::pods::quota_v1_pod(new, now)
}

/// Services: the quota type (NodePort, LoadBalancer, other) changed.
fn service_changed(old: &Value, new: &Value) -> bool {
    quota::services::quota_service_type(old) != quota::services::quota_service_type(new)
}

/// Claims: the allocated size changed.
fn claim_changed(old: &Value, new: &Value) -> bool {
    quota::pvc::requires_quota_replenish(new, old)
}

/// The resource quota controller, ready to be added to `mgr`.
pub fn resource_quota_controller(
    mgr: &impl ClusterAccess,
    opts: &ResourceQuotaControllerOptions,
) -> Controller<impl Reconciler> {
    let cache = mgr.cache();
    let quotas = cache.informer::<ResourceQuota>().store().clone();
    let pending: Arc<Mutex<BTreeSet<String>>> = Arc::default();
    let reconciler = QuotaReconciler {
        cache: cache.clone(),
        quotas: quotas.clone(),
        pods: cache.informer::<Pod>().store().clone(),
        services: cache.informer::<Service>().store().clone(),
        claims: cache.informer::<PersistentVolumeClaim>().store().clone(),
        client: mgr.kube_client().clone(),
        discovery: mgr.discovery().clone(),
        counted: Mutex::default(),
        pending: pending.clone(),
    };
    let all = quotas.clone();
    let drained = quotas.clone();
    let on_spec = Funcs::new()
        .on_add(|rq: &ResourceQuota, q: &Requests<'_, ObjectKey>| q.add(ObjectKey::of(rq)))
        .on_update(|old: &ResourceQuota, new: &ResourceQuota, q| {
            // status-only writes (ours, admission's) need no sync
            let hard =
                |rq: &ResourceQuota| resources::from_json(to_value(rq).pointer("/spec/hard"));
            if !resources::equals(&hard(old), &hard(new)) || old.spec != new.spec {
                q.add(ObjectKey::of(new));
            }
        })
        .on_delete(|rq: &ResourceQuota, q| q.add(ObjectKey::of(rq)));
    ControllerBuilder::new(cache)
        .named(CONTROLLER_NAME)
        .with_options(ControllerOptions::workers(
            opts.concurrent_resource_quota_syncs.max(1),
        ))
        .for_with::<ResourceQuota>(on_spec)
        .watches_with::<Pod>(
            replenishing::<Pod>(quotas.clone(), Evaluator::Pods, pod_changed),
            Vec::new(),
        )
        .watches_with::<Service>(
            replenishing::<Service>(quotas.clone(), Evaluator::Services, service_changed),
            Vec::new(),
        )
        .watches_with::<PersistentVolumeClaim>(
            replenishing::<PersistentVolumeClaim>(
                quotas.clone(),
                Evaluator::PersistentVolumeClaims,
                claim_changed,
            ),
            Vec::new(),
        )
        // full resync (upstream enqueueAll every --resource-quota-sync-period)
        .every(opts.resource_quota_sync_period, move |q| {
            for rq in all.list() {
                q.add(ObjectKey::of(rq.as_ref()));
            }
        })
        // deletions seen by the object-count informers: their namespaces' quotas
        .every(Duration::from_secs(1), move |q| {
            let namespaces =
                std::mem::take(&mut *pending.lock().unwrap_or_else(|e| e.into_inner()));
            for ns in namespaces {
                for rq in drained.list_namespace(&ns) {
                    q.add(ObjectKey::of(rq.as_ref()));
                }
            }
        })
        .build(reconciler)
}

/// (group, resource).
type GroupResource = (String, String);

/// One object-count resource being watched.
struct Counted {
    informer: MetadataInformer,
    _handler: coxswain_runtime::cache::metadata::HandlerRegistration,
}

/// Syncs one quota (upstream `syncResourceQuota`).
pub struct QuotaReconciler {
    cache: Arc<Cache>,
    quotas: Arc<Store<ResourceQuota>>,
    pods: Arc<Store<Pod>>,
    services: Arc<Store<Service>>,
    claims: Arc<Store<PersistentVolumeClaim>>,
    client: kube::Client,
    discovery: coxswain_runtime::discovery::SharedDiscovery,
    /// Metadata informers of object-count resources, by group-resource.
    counted: Mutex<HashMap<GroupResource, Arc<Counted>>>,
    /// Namespaces where a counted object was deleted.
    pending: Arc<Mutex<BTreeSet<String>>>,
}

impl QuotaReconciler {
    /// The collection URL of a quotable group-resource (preferred version): a
    /// namespaced resource that supports create, list, watch and delete, as the shared
    /// discovery (at most 30 s old, upstream's discovery resync) lists it.
    async fn collection_url(&self, group: &str, resource: &str) -> Option<String> {
        let d = self.discovery.fresh(Duration::from_secs(30)).await.ok()?;
        d.preferred_supporting(&["create", "list", "watch", "delete"])
            .into_iter()
            .find(|r| r.group == group && r.plural == resource && r.namespaced)
            .map(|r| r.collection_url())
    }

    /// The synced metadata informer of an object-count resource, started (with a
    /// deletion handler) on first use.
    async fn counted(&self, group: &str, resource: &str) -> Option<Arc<Counted>> {
        let key = (group.to_string(), resource.to_string());
        let known = self
            .counted
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
            .cloned();
        let entry = match known {
            Some(c) => c,
            None => {
                // not served (yet): asked again next time (discovery is at most 30 s old)
                let url = self.collection_url(group, resource).await?;
                let informer = self.cache.metadata_for(&url);
                let pending = self.pending.clone();
                let handler = informer.add_handler(move |change| {
                    if let coxswain_runtime::cache::Change::Deleted(m) = change {
                        if let Some(ns) = &m.metadata.namespace {
                            pending
                                .lock()
                                .unwrap_or_else(|e| e.into_inner())
                                .insert(ns.clone());
                        }
                    }
                });
                tracing::debug!(resource = %url, "QuotaMonitor created object count evaluator");
                let c = Arc::new(Counted {
                    informer,
                    _handler: handler,
                });
                self.counted
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .entry(key)
                    .or_insert(c)
                    .clone()
            }
        };
        entry.informer.wait_for_sync().await;
        Some(entry)
    }

    /// The evaluators a quota needs: the built-in ones plus an object count for every
    /// other `count/<resource>.<group>` it names.
    fn evaluators(hard: &[String]) -> Vec<Evaluator> {
        let mut out = Evaluator::builtin();
        for name in hard {
            let Some(gr) = name.strip_prefix("count/") else {
                continue;
            };
            let (resource, group) = gr.split_once('.').unwrap_or((gr, ""));
            if let Some(e) = Evaluator::for_resource(group, resource) {
                if !out.contains(&e) {
                    out.push(e);
                }
            }
        }
        out
    }
}

impl Reconciler for QuotaReconciler {
    async fn reconcile(&self, _ctx: Context, key: ObjectKey) -> ReconcileResult {
        let Some(rq) = self.quotas.get(&key) else {
            return Ok(Action::Done);
        };
        let ns = key.namespace().unwrap_or_default().to_string();
        let value = to_value(rq.as_ref());
        let q = Quota::from_json(&value);
        let hard_names = resources::resource_names(&q.spec_hard);
        let evaluators = Self::evaluators(&hard_names);
        // the objects of each evaluator's resource in the namespace
        let mut objects: HashMap<(String, String), Vec<Value>> = HashMap::new();
        for e in &evaluators {
            if e.matching_resources(&hard_names).is_empty() {
                continue;
            }
            let (group, resource) = e.group_resource();
            let list: Option<Vec<Value>> = match e {
                Evaluator::Pods => Some(
                    self.pods
                        .list_namespace(&ns)
                        .iter()
                        .map(|o| to_value(o.as_ref()))
                        .collect(),
                ),
                Evaluator::Services => Some(
                    self.services
                        .list_namespace(&ns)
                        .iter()
                        .map(|o| to_value(o.as_ref()))
                        .collect(),
                ),
                Evaluator::PersistentVolumeClaims => Some(
                    self.claims
                        .list_namespace(&ns)
                        .iter()
                        .map(|o| to_value(o.as_ref()))
                        .collect(),
                ),
                // counting needs no more than one entry per object
                Evaluator::ObjectCount { .. } => self
                    .counted(group, resource)
                    .await
                    .map(|c| vec![Value::Null; c.informer.list_namespace(&ns).len()]),
            };
            if let Some(list) = list {
                objects.insert((group.to_string(), resource.to_string()), list);
            }
        }
        let known: Vec<Evaluator> = evaluators
            .into_iter()
            .filter(|e| {
                let (g, r) = e.group_resource();
                objects.contains_key(&(g.to_string(), r.to_string()))
            })
            .collect();
        let (new_usage, errors) = quota::calculate_usage(
            &known,
            &q,
            |e| {
                let (g, r) = e.group_resource();
                Ok::<_, String>(
                    objects
                        .get(&(g.to_string(), r.to_string()))
                        .into_iter()
                        .flatten(),
                )
            },
            chrono::Utc::now(),
        );
        // upstream syncResourceQuota: keep used values of names no evaluator knows,
        // overwrite the counted ones, drop what is no longer hard
        let mut used = q.status_used.clone();
        for (k, v) in new_usage {
            used.insert(k, v);
        }
        let used = resources::mask(&used, &hard_names);
        let status = rq.status.as_ref();
        let dirty = !resources::equals(&q.spec_hard, &q.status_hard)
            || status.and_then(|s| s.hard.as_ref()).is_none()
            || status.and_then(|s| s.used.as_ref()).is_none()
            || !resources::equals(&used, &q.status_used);
        if dirty {
            let mut v = value;
            v["status"] = serde_json::json!({
                "hard": resources::to_json(&q.spec_hard),
                "used": resources::to_json(&used),
            });
            let updated: ResourceQuota = serde_json::from_value(v)
                .map_err(|e| ReconcileError::msg(format!("building the quota status: {e}")))?;
            let api = Api::<ResourceQuota>::namespaced(self.client.clone(), &ns);
            match api
                .replace_status(key.name(), &PostParams::default(), &updated)
                .await
            {
                Ok(_) => {}
                Err(kube::Error::Api(s)) if s.code == 404 => return Ok(Action::Done),
                Err(e) => return Err(ReconcileError::from(e).context("updating the quota status")),
            }
        }
        if !errors.is_empty() {
            return Err(ReconcileError::msg(errors.join("; ")));
        }
        Ok(Action::Done)
    }
}

#[cfg(test)]
mod tests;
