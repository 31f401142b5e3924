//! The shared informer cache.
//!
//! One [`Informer`] per (kind, selectors) serves every controller and every reader in the
//! process: the first user starts it, later users share its store and its single watch
//! connection. Reads ([`Cache::get`], [`Cache::list`], [`Cache::list_by_index`]) start the
//! informer on first use, wait for its initial sync and then never touch the network.
//! A cached object is stored once however many controllers read it: by default as its
//! compact wire JSON, decoded for each read ([`Storage`]).

mod informer;
pub mod metadata;
mod store;

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt::Debug;
use std::sync::{Arc, Mutex};

use kube::api::{ApiResource, DynamicObject};
use kube::core::PartialObjectMeta;
use kube::{Client, Resource};
use serde::de::DeserializeOwned;
use serde::Serialize;
use tokio_util::sync::CancellationToken;

pub use informer::{
    HandlerId, Informer, InformerConfig, ListWatch, RawObject, ResourceApi, Transform,
};
pub use metadata::{HandlerRegistration, Meta, MetadataInformer};
pub use store::{Change, IndexFn, Storage, Store, NAMESPACE_INDEX};

use crate::object::ObjectKey;

/// Bound for kinds the cache can hold.
pub trait CachedKind:
    Resource<DynamicType = ()> + Clone + DeserializeOwned + Serialize + Debug + Send + Sync + 'static
{
}
impl<K> CachedKind for K where
    K: Resource<DynamicType = ()>
        + Clone
        + DeserializeOwned
        + Serialize
        + Debug
        + Send
        + Sync
        + 'static
{
}

#[derive(Clone, PartialEq, Eq, Hash)]
struct InformerId {
    kind: TypeId,
    /// group/version/plural for dynamic kinds (empty for typed ones)
    resource: String,
    config: InformerConfig,
}

/// A running informer of some kind, and how to ask whether it synced.
struct Running {
    informer: Arc<dyn Any + Send + Sync>,
    synced: Box<dyn Fn() -> bool + Send + Sync>,
}

/// A resource's metadata view: a typed informer seen as metadata, or a metadata-only
/// informer (which `stop` ends).
struct MetaEntry {
    informer: MetadataInformer,
    stop: Option<CancellationToken>,
}

/// The process-wide informer cache.
pub struct Cache {
    client: Client,
    informers: Mutex<HashMap<InformerId, Running>>,
    /// collection URL → its metadata view
    metadata: Mutex<HashMap<String, MetaEntry>>,
    namespace: Option<String>,
    transforms: Mutex<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>,
    /// per-kind storage of the default informers ([`Cache::set_storage_of`])
    storage_of: Mutex<HashMap<TypeId, Storage>>,
    defaults: InformerConfig,
    cancel: CancellationToken,
}

impl Cache {
    /// A cache that lists and watches through `client`. Informers stop when `cancel` fires.
    pub fn new(client: Client, cancel: CancellationToken) -> Cache {
        Cache {
            client,
            informers: Mutex::new(HashMap::new()),
            metadata: Mutex::new(HashMap::new()),
            namespace: None,
            transforms: Mutex::new(HashMap::new()),
            storage_of: Mutex::new(HashMap::new()),
            defaults: InformerConfig::default(),
            cancel,
        }
    }

    /// A cache restricted to one namespace: informers of namespaced kinds list and watch
    /// only there (controller-runtime's `Cache.Options.DefaultNamespaces` with one entry),
    /// which needs only namespace-scoped permissions. Cluster-scoped kinds are unaffected.
    pub fn namespaced(client: Client, namespace: &str, cancel: CancellationToken) -> Cache {
        let mut c = Cache::new(client, cancel);
        c.namespace = Some(namespace.to_string());
        c
    }

    /// Resync period of the informers made by [`Cache::informer`] (and the reads that
    /// use them): every cached object is redelivered to handlers this often.
    pub fn set_default_resync(&mut self, period: Option<std::time::Duration>) {
        self.defaults.resync = period;
    }

    /// How the informers made by [`Cache::informer`] hold objects ([`Storage::Compact`]
    /// by default; [`Storage::Decoded`] for processes whose controllers list much more
    /// than objects change, such as a controller manager).
    pub fn set_default_storage(&mut self, storage: Storage) {
        self.defaults.storage = storage;
    }

    /// How the default informer of `K` ([`Cache::informer`], and the reads that use it)
    /// holds objects, overriding [`Cache::set_default_storage`] for that kind: a process
    /// can keep its most numerous kind compact (pods, say) while the kinds its hot paths
    /// list stay decoded. Applies to informers of `K` started after this call; set it
    /// before the first use of the kind.
    ///
    /// ```no_run
    /// # fn demo(cache: &coxswain_runtime::cache::Cache) {
    /// use coxswain_runtime::cache::Storage;
    /// cache.set_storage_of::<k8s_openapi::api::core::v1::Pod>(Storage::Compact);
    /// # }
    /// ```
    pub fn set_storage_of<K: CachedKind>(&self, storage: Storage) {
        self.storage_of
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(TypeId::of::<K>(), storage);
    }

    /// The configuration of `K`'s default informer: the defaults, with `K`'s storage.
    fn default_config_of<K: CachedKind>(&self) -> InformerConfig {
        let mut config = self.defaults.clone();
        if let Some(s) = self
            .storage_of
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&TypeId::of::<K>())
        {
            config.storage = *s;
        }
        config
    }

    /// The namespace the cache is restricted to, if any.
    pub fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref()
    }

    /// The client the cache uses.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The informer for `K` with `config`, started on first request and shared after.
    pub fn informer_with<K: CachedKind>(&self, config: InformerConfig) -> Arc<Informer<K>>
    where
        K::Scope: 'static,
    {
        let url = self.url_of::<K>();
        let whole = config.label_selector.is_none() && config.field_selector.is_none();
        let api = ResourceApi::new(self.client.clone(), url.clone());
        let informer = self.shared_informer(api, String::new(), config);
        if whole {
            // the metadata view of this collection, for controllers of every resource
            let mut views = self.metadata.lock().unwrap_or_else(|e| e.into_inner());
            views.entry(url).or_insert_with(|| MetaEntry {
                informer: MetadataInformer {
                    source: Arc::new(metadata::TypedMeta {
                        informer: informer.clone(),
                    }),
                },
                stop: None,
            });
        }
        informer
    }

    /// The objects of the collection at `collection_url` (`/api/v1/pods`,
    /// `/apis/example.com/v1/widgets`, all namespaces) as metadata: the typed informer of
    /// that collection when one runs, else a metadata-only informer started now and
    /// shared by every later caller, so each resource is watched once (see
    /// [`metadata`]).
    pub fn metadata_for(&self, collection_url: &str) -> MetadataInformer {
        let mut views = self.metadata.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(v) = views.get(collection_url) {
            return v.informer.clone();
        }
        let transform: Transform<Meta> = Arc::new(metadata::prune);
        let informer = Informer::<Meta>::with_transform(InformerConfig::default(), Some(transform));
        let stop = self.cancel.child_token();
        let api = ResourceApi::new(self.client.clone(), collection_url.to_string()).metadata_only();
        let runner = informer.clone();
        let token = stop.clone();
        tokio::spawn(async move { runner.run(api, token).await });
        tracing::debug!(resource = collection_url, "metadata informer started");
        let view = MetadataInformer { source: informer };
        views.insert(
            collection_url.to_string(),
            MetaEntry {
                informer: view.clone(),
                stop: Some(stop),
            },
        );
        view
    }

    /// Stop the metadata-only informer of `collection_url` (its resource is no longer
    /// served: a custom resource definition was deleted, say). Typed informers keep
    /// running.
    pub fn stop_metadata(&self, collection_url: &str) {
        let mut views = self.metadata.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(stop) = views.get(collection_url).and_then(|v| v.stop.clone()) {
            stop.cancel();
            views.remove(collection_url);
            tracing::debug!(resource = collection_url, "metadata informer stopped");
        }
    }

    /// The collection URL of `K` (restricted to the cache's namespace if it has one).
    fn url_of<K: CachedKind>(&self) -> String
    where
        K::Scope: 'static,
    {
        let ns = self
            .namespace
            .as_deref()
            .filter(|_| crate::handler::is_namespaced::<K>());
        K::url_path(&(), ns)
    }

    fn shared_informer<K>(
        &self,
        api: ResourceApi,
        resource: String,
        config: InformerConfig,
    ) -> Arc<Informer<K>>
    where
        K: Resource + Clone + DeserializeOwned + Serialize + Debug + Send + Sync + 'static,
    {
        let id = InformerId {
            kind: TypeId::of::<K>(),
            resource,
            config: config.clone(),
        };
        let mut map = self.informers.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(existing) = map.get(&id) {
            if let Ok(inf) = existing.informer.clone().downcast::<Informer<K>>() {
                return inf;
            }
        }
        let transform = self
            .transforms
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&TypeId::of::<K>())
            .and_then(|t| t.clone().downcast::<Transform<K>>().ok())
            .map(|t| (*t).clone());
        let inf = Informer::<K>::with_transform(config, transform);
        let probe = inf.clone();
        map.insert(
            id,
            Running {
                informer: inf.clone(),
                synced: Box::new(move || probe.has_synced()),
            },
        );
        let cancel = self.cancel.child_token();
        let runner = inf.clone();
        tokio::spawn(async move { runner.run(api, cancel).await });
        inf
    }

    /// The shared metadata-only informer for `K`: objects as `PartialObjectMetadata`
    /// (name, namespace, labels, annotations, owner references, ...), a fraction of the
    /// memory and bandwidth of whole objects.
    pub fn metadata_informer<K: CachedKind>(
        &self,
        config: InformerConfig,
    ) -> Arc<Informer<PartialObjectMeta<K>>> {
        let api = ResourceApi::new(self.client.clone(), self.url_of::<K>()).metadata_only();
        self.shared_informer(api, String::new(), config)
    }

    /// The shared informer for a kind known only at run time (a custom resource found by
    /// discovery, say), as [`DynamicObject`]s.
    pub fn dynamic_informer(
        &self,
        resource: &ApiResource,
        config: InformerConfig,
    ) -> Arc<Informer<DynamicObject>> {
        // an ApiResource does not say its scope: dynamic informers watch all namespaces
        let api = ResourceApi::new(self.client.clone(), DynamicObject::url_path(resource, None));
        let id = format!("{}/{}", resource.api_version, resource.plural);
        self.shared_informer(api, id, config)
    }

    /// Transform every `K` before it is cached (applies to informers of `K` created after
    /// this call; set it before the first use of the kind).
    pub fn set_transform<K: CachedKind>(&self, transform: impl Fn(K) -> K + Send + Sync + 'static) {
        let t: Transform<K> = Arc::new(transform);
        self.transforms
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(TypeId::of::<K>(), Arc::new(t));
    }

    /// The default informer for `K` (all namespaces, no selectors; held as
    /// [`Cache::set_storage_of`] or [`Cache::set_default_storage`] say).
    pub fn informer<K: CachedKind>(&self) -> Arc<Informer<K>> {
        self.informer_with(self.default_config_of::<K>())
    }

    /// Whether every informer started so far has loaded its initial state (the manager's
    /// readiness check).
    pub fn synced(&self) -> bool {
        self.informers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .all(|r| (r.synced)())
    }

    /// Number of informers running (one watch connection each), metadata-only ones
    /// included.
    pub fn informer_count(&self) -> usize {
        let typed = self
            .informers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .len();
        let metadata_only = self
            .metadata
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .filter(|v| v.stop.is_some())
            .count();
        typed + metadata_only
    }

    /// Add a secondary index to `K`'s default informer (controller-runtime's
    /// `IndexField`); lookups use [`Cache::list_by_index`].
    pub fn index_field<K: CachedKind>(
        &self,
        name: &str,
        func: impl Fn(&K) -> Vec<String> + Send + Sync + 'static,
    ) {
        self.informer::<K>().store().add_index(name, Arc::new(func));
    }

    async fn synced_store<K: CachedKind>(&self) -> Arc<Store<K>> {
        let inf = self.informer::<K>();
        inf.wait_for_sync().await;
        inf.store().clone()
    }

    /// One object from the cache (starts and syncs the informer on first use).
    pub async fn get<K: CachedKind>(&self, key: &ObjectKey) -> Option<Arc<K>> {
        self.synced_store::<K>().await.get(key)
    }

    /// Objects of `K`, in one namespace or all.
    pub async fn list<K: CachedKind>(&self, namespace: Option<&str>) -> Vec<Arc<K>> {
        let store = self.synced_store::<K>().await;
        match namespace {
            Some(ns) => store.list_namespace(ns),
            None => store.list(),
        }
    }

    /// Objects whose index `index` has `value`; `None` when no such index was added.
    pub async fn list_by_index<K: CachedKind>(
        &self,
        index: &str,
        value: &str,
    ) -> Option<Vec<Arc<K>>> {
        self.synced_store::<K>().await.by_index(index, value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{ConfigMap, Pod};

    /// A cache whose informers never reach a server (nothing listens on port 1).
    fn offline_cache(cancel: &CancellationToken) -> Cache {
        let config = kube::Config::new("http://127.0.0.1:1".parse().expect("url"));
        let client = Client::try_from(config).expect("client");
        Cache::new(client, cancel.clone())
    }

    #[tokio::test]
    async fn storage_of_a_kind_overrides_the_default_storage() {
        let cancel = CancellationToken::new();
        let mut cache = offline_cache(&cancel);
        cache.set_default_storage(Storage::Decoded);
        cache.set_storage_of::<Pod>(Storage::Compact);
        let pods = cache.informer::<Pod>();
        assert_eq!(pods.config().storage, Storage::Compact);
        assert_eq!(
            cache.informer::<ConfigMap>().config().storage,
            Storage::Decoded
        );
        // the default informer stays one shared informer
        assert!(Arc::ptr_eq(&pods, &cache.informer::<Pod>()));
        assert_eq!(cache.informer_count(), 2);
        cancel.cancel();
    }

    #[tokio::test]
    async fn without_an_override_a_kind_has_the_default_storage() {
        let cancel = CancellationToken::new();
        let cache = offline_cache(&cancel);
        assert_eq!(cache.informer::<Pod>().config().storage, Storage::Compact);
        cache.set_storage_of::<ConfigMap>(Storage::Decoded);
        assert_eq!(
            cache.informer::<ConfigMap>().config().storage,
            Storage::Decoded
        );
        cancel.cancel();
    }
}
