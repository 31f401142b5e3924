//! Any resource's objects as metadata, one watch per resource for the whole process
//! (client-go's `metadatainformer` factory behind kube-controller-manager's
//! `informerfactory.ForResource`).
//!
//! Controllers that act on every resource the server serves (the garbage collector, the
//! namespace and quota controllers) find resources with [`crate::discovery`] and ask
//! [`super::Cache::metadata_for`] for each. When a typed informer of the same collection
//! already runs in the cache (the Deployment controller's pods, say), its objects are
//! handed out as metadata and no second watch is opened; otherwise a metadata-only
//! informer (`PartialObjectMetadata`) is started and shared by every later caller.
//!
//! Objects are cut down to what such controllers read: name, namespace, uid,
//! resourceVersion, owner references, finalizers and the deletion timestamp. They carry
//! no `apiVersion` and `kind` (whoever asked for the resource knows them), which saves
//! two strings per cached object.

use std::sync::Arc;

use futures::future::BoxFuture;
use futures::FutureExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::DynamicObject;
use kube::core::PartialObjectMeta;
use kube::Resource;
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::informer::{HandlerId, Informer};
use super::store::Change;
use crate::object::ObjectKey;

/// One object's metadata as [`MetadataInformer`]s deliver it.
pub type Meta = PartialObjectMeta<DynamicObject>;

/// The metadata such controllers read, copied out of a whole object's.
pub fn project(m: &ObjectMeta) -> ObjectMeta {
    ObjectMeta {
        name: m.name.clone(),
        namespace: m.namespace.clone(),
        uid: m.uid.clone(),
        resource_version: m.resource_version.clone(),
        owner_references: m.owner_references.clone(),
        finalizers: m.finalizers.clone(),
        deletion_timestamp: m.deletion_timestamp.clone(),
        ..ObjectMeta::default()
    }
}

/// [`project`] for metadata already owned (no copy).
pub(crate) fn prune(m: Meta) -> Meta {
    let md = m.metadata;
    PartialObjectMeta {
        types: None,
        metadata: ObjectMeta {
            name: md.name,
            namespace: md.namespace,
            uid: md.uid,
            resource_version: md.resource_version,
            owner_references: md.owner_references,
            finalizers: md.finalizers,
            deletion_timestamp: md.deletion_timestamp,
            ..ObjectMeta::default()
        },
        _phantom: Default::default(),
    }
}

type MetaHandler = Box<dyn Fn(&Change<Meta>) + Send + Sync>;

/// What a [`MetadataInformer`] reads from: a metadata-only informer, or a typed one seen
/// through [`project`].
pub(crate) trait MetaSource: Send + Sync {
    fn add_handler(&self, handler: MetaHandler) -> HandlerId;
    fn remove_handler(&self, id: HandlerId);
    fn has_synced(&self) -> bool;
    fn wait_for_sync(&self) -> BoxFuture<'_, ()>;
    fn list_namespace(&self, namespace: &str) -> Vec<Arc<Meta>>;
    fn get(&self, key: &ObjectKey) -> Option<Arc<Meta>>;
    fn typed(&self) -> bool;
}

impl MetaSource for Informer<Meta> {
    fn add_handler(&self, handler: MetaHandler) -> HandlerId {
        Informer::add_handler(self, handler)
    }
    fn remove_handler(&self, id: HandlerId) {
        Informer::remove_handler(self, id)
    }
    fn has_synced(&self) -> bool {
        Informer::has_synced(self)
    }
    fn wait_for_sync(&self) -> BoxFuture<'_, ()> {
        Informer::wait_for_sync(self).boxed()
    }
    fn list_namespace(&self, namespace: &str) -> Vec<Arc<Meta>> {
        self.store().list_namespace(namespace)
    }
    fn get(&self, key: &ObjectKey) -> Option<Arc<Meta>> {
        self.store().get(key)
    }
    fn typed(&self) -> bool {
        false
    }
}

/// A typed informer seen as metadata.
pub(crate) struct TypedMeta<K> {
    pub(crate) informer: Arc<Informer<K>>,
}

fn as_meta<K: Resource>(o: &K) -> Arc<Meta> {
    Arc::new(PartialObjectMeta {
        types: None,
        metadata: project(o.meta()),
        _phantom: Default::default(),
    })
}

impl<K> MetaSource for TypedMeta<K>
where
    K: Resource + Clone + DeserializeOwned + Serialize + std::fmt::Debug + Send + Sync + 'static,
{
    fn add_handler(&self, handler: MetaHandler) -> HandlerId {
        self.informer.add_handler(move |c: &Change<K>| {
            let c = match c {
                Change::Added(o) => Change::Added(as_meta(o.as_ref())),
                Change::Deleted(o) => Change::Deleted(as_meta(o.as_ref())),
                Change::Updated { old, new } => Change::Updated {
                    old: as_meta(old.as_ref()),
                    new: as_meta(new.as_ref()),
                },
            };
            handler(&c)
        })
    }
    fn remove_handler(&self, id: HandlerId) {
        self.informer.remove_handler(id)
    }
    fn has_synced(&self) -> bool {
        self.informer.has_synced()
    }
    fn wait_for_sync(&self) -> BoxFuture<'_, ()> {
        self.informer.wait_for_sync().boxed()
    }
    fn list_namespace(&self, namespace: &str) -> Vec<Arc<Meta>> {
        self.informer
            .store()
            .list_namespace(namespace)
            .iter()
            .map(|o| as_meta(o.as_ref()))
            .collect()
    }
    fn get(&self, key: &ObjectKey) -> Option<Arc<Meta>> {
        self.informer.store().get(key).map(|o| as_meta(o.as_ref()))
    }
    fn typed(&self) -> bool {
        true
    }
}

/// One resource's objects as metadata, shared by every controller of the process (see
/// the module documentation).
#[derive(Clone)]
pub struct MetadataInformer {
    pub(crate) source: Arc<dyn MetaSource>,
}

impl std::fmt::Debug for MetadataInformer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetadataInformer")
            .field("typed", &self.source.typed())
            .field("synced", &self.source.has_synced())
            .finish()
    }
}

impl MetadataInformer {
    /// Call `handler` for every change (first for every object already cached, as
    /// added) until the returned registration is dropped.
    pub fn add_handler(
        &self,
        handler: impl Fn(&Change<Meta>) + Send + Sync + 'static,
    ) -> HandlerRegistration {
        let id = self.source.add_handler(Box::new(handler));
        HandlerRegistration {
            source: self.source.clone(),
            id: Some(id),
        }
    }

    /// Whether the initial state has been loaded.
    pub fn has_synced(&self) -> bool {
        self.source.has_synced()
    }

    /// Wait until the initial state has been loaded.
    pub async fn wait_for_sync(&self) {
        self.source.wait_for_sync().await
    }

    /// The objects of one namespace.
    pub fn list_namespace(&self, namespace: &str) -> Vec<Arc<Meta>> {
        self.source.list_namespace(namespace)
    }

    /// One object.
    pub fn get(&self, key: &ObjectKey) -> Option<Arc<Meta>> {
        self.source.get(key)
    }

    /// Whether this is a typed informer seen as metadata (no watch of its own).
    pub fn is_typed(&self) -> bool {
        self.source.typed()
    }
}

/// A handler added to a [`MetadataInformer`]; dropping it removes the handler.
pub struct HandlerRegistration {
    source: Arc<dyn MetaSource>,
    id: Option<HandlerId>,
}

impl std::fmt::Debug for HandlerRegistration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HandlerRegistration")
            .field("id", &self.id)
            .finish()
    }
}

impl Drop for HandlerRegistration {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            self.source.remove_handler(id);
        }
    }
}
