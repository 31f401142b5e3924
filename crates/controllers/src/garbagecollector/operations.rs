//! The collector's requests to the API server: get, delete and patch any object by its
//! coordinates, through the metadata-only API.
//!
//! Upstream `pkg/controller/garbagecollector/operations.go` and `patch.go`: deletes carry
//! the object's UID (and resourceVersion) as preconditions, so that a recreated object of
//! the same name is never deleted by mistake; owner references are removed with a
//! strategic merge patch that deletes entries by UID (falling back to a JSON merge patch
//! with a resourceVersion precondition where strategic merge is not supported, as for
//! custom resources); finalizers are removed with a JSON merge patch guarded by the
//! resourceVersion, retried on conflicts.

use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{
    Api, DeleteParams, DynamicObject, Patch, PatchParams, Preconditions, PropagationPolicy,
};
use serde_json::json;

use super::builder::Meta;
use super::graph::{ObjectRef, OwnerRef, Uid};
use coxswain_runtime::discovery::{Discovery, ResourceInfo};

/// Why an operation failed.
#[derive(Debug, thiserror::Error)]
pub enum GcError {
    /// The object was found absent and a virtual delete event was queued (not a failure:
    /// the graph builder takes it from there).
    #[error("enqueued virtual delete event")]
    VirtualDeleteEnqueued,
    /// A cluster-scoped object names a namespaced owner: retrying cannot help.
    #[error("cluster-scoped objects cannot refer to namespaced owners")]
    NamespacedOwnerOfClusterScopedObject,
    /// Discovery does not know the kind (yet): a custom resource not yet seen, or a bad
    /// reference; retried.
    #[error("unable to get REST mapping for {api_version}/{kind}.")]
    RestMapping {
        /// apiVersion.
        api_version: String,
        /// kind.
        kind: String,
    },
    /// The API server answered with an error.
    #[error(transparent)]
    Api(#[from] kube::Error),
    /// Anything else.
    #[error("{0}")]
    Other(String),
}

impl GcError {
    /// Whether the server said 404.
    pub fn is_not_found(&self) -> bool {
        matches!(self, GcError::Api(kube::Error::Api(s)) if s.code == 404)
    }

    fn is_conflict(&self) -> bool {
        matches!(self, GcError::Api(kube::Error::Api(s)) if s.code == 409)
    }

    fn is_unsupported_media_type(&self) -> bool {
        matches!(self, GcError::Api(kube::Error::Api(s)) if s.code == 415)
    }
}

/// A 404 as the API would give it, for a namespaced resource asked without namespace.
fn not_found(name: &str) -> GcError {
    GcError::Api(kube::Error::Api(
        kube::core::Status::failure(&format!("{name:?} not found"), "NotFound")
            .with_code(404)
            .boxed(),
    ))
}

/// The propagation policies (upstream `metav1.DeletionPropagation`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Propagation {
    /// Delete dependents in the background.
    Background,
    /// Delete blocking dependents first.
    Foreground,
    /// Keep dependents, removing the references to the object.
    Orphan,
}

impl Propagation {
    fn policy(self) -> PropagationPolicy {
        match self {
            Propagation::Background => PropagationPolicy::Background,
            Propagation::Foreground => PropagationPolicy::Foreground,
            Propagation::Orphan => PropagationPolicy::Orphan,
        }
    }
}

/// Requests about objects named by coordinates.
#[derive(Clone)]
pub struct Operations {
    client: kube::Client,
}

/// An API owner reference from the graph's form.
pub fn api_owner_ref(r: &OwnerRef) -> OwnerReference {
    OwnerReference {
        api_version: r.api_version.to_string(),
        kind: r.kind.to_string(),
        name: r.name.to_string(),
        uid: r.uid.to_string(),
        controller: r.controller,
        block_owner_deletion: r.block_owner_deletion,
    }
}

impl Operations {
    /// Operations through `client`.
    pub fn new(client: kube::Client) -> Self {
        Operations { client }
    }

    /// The resource of `api_version`/`kind` (upstream `apiResource`).
    pub fn resource<'d>(
        mapper: &'d Discovery,
        api_version: &str,
        kind: &str,
    ) -> Result<&'d std::sync::Arc<ResourceInfo>, GcError> {
        mapper
            .mapping(api_version, kind)
            .ok_or_else(|| GcError::RestMapping {
                api_version: api_version.to_string(),
                kind: kind.to_string(),
            })
    }

    /// The API of `info` where an object of namespace `ns` lives (`None` when a
    /// namespaced resource is asked without namespace: nothing can exist there).
    fn api(&self, info: &ResourceInfo, ns: Option<&str>) -> Option<Api<DynamicObject>> {
        let ar = info.api_resource();
        if info.namespaced {
            ns.filter(|n| !n.is_empty())
                .map(|n| Api::namespaced_with(self.client.clone(), n, &ar))
        } else {
            Some(Api::all_with(self.client.clone(), &ar))
        }
    }

    /// The live metadata of the object `name` of `info` in `ns`.
    pub async fn get(
        &self,
        info: &ResourceInfo,
        ns: Option<&str>,
        name: &str,
    ) -> Result<Meta, GcError> {
        let api = self.api(info, ns).ok_or_else(|| not_found(name))?;
        Ok(api.get_metadata(name).await?)
    }

    /// The live metadata of `item` (upstream `getObject`).
    pub async fn get_object(&self, mapper: &Discovery, item: &ObjectRef) -> Result<Meta, GcError> {
        let info = Self::resource(mapper, &item.api_version, &item.kind)?;
        self.get(info, item.namespace.as_deref(), &item.name).await
    }

    /// Delete `item` with `policy`, preconditioned on its UID and `resource_version`; on a
    /// conflict where only other fields than the owner references changed, once more with
    /// the UID alone, so that busy objects are not starved (upstream `deleteObject`).
    pub async fn delete_object(
        &self,
        mapper: &Discovery,
        item: &ObjectRef,
        resource_version: Option<&str>,
        owners_at_resource_version: &[OwnerReference],
        policy: Propagation,
    ) -> Result<(), GcError> {
        let info = Self::resource(mapper, &item.api_version, &item.kind)?;
        let api = self
            .api(info, item.namespace.as_deref())
            .ok_or_else(|| not_found(&item.name))?;
        let mut dp = DeleteParams {
            propagation_policy: Some(policy.policy()),
            preconditions: Some(Preconditions {
                uid: Some(item.uid.to_string()),
                resource_version: resource_version.map(str::to_string),
            }),
            ..DeleteParams::default()
        };
        let first = api
            .delete(&item.name, &dp)
            .await
            .map(|_| ())
            .map_err(GcError::from);
        match first {
            Err(e) if e.is_conflict() && resource_version.is_some() => {
                let live = match api.get_metadata(&item.name).await {
                    Ok(live) => live,
                    Err(kube::Error::Api(s)) if s.code == 404 => return Ok(()),
                    Err(_) => return Err(e),
                };
                let same_owners = live
                    .metadata
                    .owner_references
                    .as_deref()
                    .unwrap_or_default()
                    == owners_at_resource_version;
                if live.metadata.uid.as_deref() == Some(item.uid.to_string().as_str())
                    && live.metadata.resource_version.as_deref() != resource_version
                    && same_owners
                {
                    if let Some(p) = dp.preconditions.as_mut() {
                        p.resource_version = None;
                    }
                    api.delete(&item.name, &dp).await?;
                    return Ok(());
                }
                Err(e)
            }
            other => other,
        }
    }

    /// Patch `item`: the strategic merge patch `smp`, or when the server does not take
    /// one (415), the JSON merge patch `jmp` builds from the live object.
    async fn patch(
        &self,
        mapper: &Discovery,
        item: &ObjectRef,
        smp: serde_json::Value,
        jmp: impl FnOnce(&Meta) -> serde_json::Value,
    ) -> Result<(), GcError> {
        let info = Self::resource(mapper, &item.api_version, &item.kind)?;
        let api = self
            .api(info, item.namespace.as_deref())
            .ok_or_else(|| not_found(&item.name))?;
        let pp = PatchParams::default();
        match api
            .patch_metadata(&item.name, &pp, &Patch::Strategic(smp))
            .await
        {
            Ok(_) => Ok(()),
            Err(e) => {
                let e = GcError::from(e);
                if !e.is_unsupported_media_type() {
                    return Err(e);
                }
                let live = api.get_metadata(&item.name).await?;
                let patch = jmp(&live);
                api.patch_metadata(&item.name, &pp, &Patch::Merge(patch))
                    .await?;
                Ok(())
            }
        }
    }

    /// Remove the references to `owners` from `item` (upstream
    /// `GenerateDeleteOwnerRefStrategicMergeBytes` and `deleteOwnerRefJSONMergePatch`).
    pub async fn delete_owner_refs(
        &self,
        mapper: &Discovery,
        item: &ObjectRef,
        owners: &[Uid],
    ) -> Result<(), GcError> {
        let pieces: Vec<serde_json::Value> = owners
            .iter()
            .map(|u| json!({"$patch": "delete", "uid": u.to_string()}))
            .collect();
        let smp = json!({"metadata": {"ownerReferences": pieces, "uid": item.uid.to_string()}});
        let drop: Vec<String> = owners.iter().map(Uid::to_string).collect();
        self.patch(mapper, item, smp, |live| {
            let kept: Vec<&OwnerReference> = live
                .metadata
                .owner_references
                .iter()
                .flatten()
                .filter(|r| !drop.contains(&r.uid))
                .collect();
            json!({"metadata": {
                "resourceVersion": live.metadata.resource_version,
                "ownerReferences": kept,
            }})
        })
        .await
    }

    /// Make every blocking owner reference of `item` non-blocking (upstream
    /// `unblockOwnerReferencesStrategicMergePatch` / `...JSONMergePatch`); `owners` are the
    /// references the graph knows.
    pub async fn unblock_owner_refs(
        &self,
        mapper: &Discovery,
        item: &ObjectRef,
        owners: &[OwnerRef],
    ) -> Result<(), GcError> {
        let blocking: Vec<OwnerReference> = owners
            .iter()
            .filter(|o| o.blocks())
            .map(|o| OwnerReference {
                block_owner_deletion: Some(false),
                ..api_owner_ref(o)
            })
            .collect();
        let smp = json!({"metadata": {"ownerReferences": blocking, "uid": item.uid.to_string()}});
        let all: Vec<OwnerReference> = owners
            .iter()
            .map(|o| OwnerReference {
                block_owner_deletion: Some(false),
                ..api_owner_ref(o)
            })
            .collect();
        self.patch(mapper, item, smp, |live| {
            json!({"metadata": {
                "resourceVersion": live.metadata.resource_version,
                "ownerReferences": all,
            }})
        })
        .await
    }

    /// Remove `finalizer` from `item`, retrying conflicts a few times (upstream
    /// `removeFinalizer` with `retry.DefaultBackoff`: 4 tries from 10 ms, factor 5).
    pub async fn remove_finalizer(
        &self,
        mapper: &Discovery,
        item: &ObjectRef,
        finalizer: &str,
    ) -> Result<(), GcError> {
        let info = Self::resource(mapper, &item.api_version, &item.kind)?;
        let Some(api) = self.api(info, item.namespace.as_deref()) else {
            return Ok(());
        };
        let mut delay = Duration::from_millis(10);
        for attempt in 0..4 {
            let live = match api.get_metadata(&item.name).await {
                Ok(live) => live,
                Err(kube::Error::Api(s)) if s.code == 404 => return Ok(()),
                Err(e) => {
                    return Err(GcError::Other(format!(
                        "cannot finalize owner {item}, because cannot get it: {e}. The garbage collector will retry later"
                    )))
                }
            };
            let finalizers = live.metadata.finalizers.unwrap_or_default();
            if !finalizers.iter().any(|f| f == finalizer) {
                tracing::debug!(item = %item, finalizer, "finalizer already removed");
                return Ok(());
            }
            let rest: Vec<&String> = finalizers.iter().filter(|f| *f != finalizer).collect();
            let patch = json!({"metadata": {
                "resourceVersion": live.metadata.resource_version,
                "finalizers": if rest.is_empty() { serde_json::Value::Null } else { json!(rest) },
            }});
            match api
                .patch_metadata(&item.name, &PatchParams::default(), &Patch::Merge(patch))
                .await
            {
                Ok(_) => return Ok(()),
                Err(kube::Error::Api(s)) if s.code == 404 => return Ok(()),
                Err(kube::Error::Api(s)) if s.code == 409 && attempt < 3 => {
                    tokio::time::sleep(delay).await;
                    delay *= 5;
                }
                Err(kube::Error::Api(s)) if s.code == 409 => {
                    return Err(GcError::Other(format!(
                        "updateMaxRetries(4) has reached. The garbage collector will retry later for owner {item}"
                    )))
                }
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }
}
