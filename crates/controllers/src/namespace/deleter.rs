//! Deleting everything in a terminating namespace, then releasing it.
//!
//! Upstream `pkg/controller/namespace/deletion/namespaced_resources_deleter.go`. One call
//! of [`NamespacedResourcesDeleter::delete`]:
//!
//! 1. reads the namespace live (gone, or not being deleted: nothing to do) and makes sure
//!    its phase is `Terminating`;
//! 2. discovers every preferred namespaced resource that supports `delete` and, for each,
//!    deletes the collection (`deletecollection` with background propagation) or, where
//!    that is not served, lists and deletes object by object; then lists what is left;
//! 3. writes the five deletion conditions ([`super::conditions`]);
//! 4. if anything is left, answers [`DeleteError::ResourcesRemaining`] with an estimate of
//!    the wait (the longest pod grace period still running, or 15 s when objects wait
//!    on finalizers), after which the controller tries again;
//! 5. otherwise removes its finalizer (`kubernetes`) from `spec.finalizers` through
//!    `namespaces/<name>/finalize`; the server deletes the namespace once no finalizer
//!    is left.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, PostParams};
use kube::core::PartialObjectMeta;

use super::conditions::ConditionUpdater;
use coxswain_runtime::discovery::{Discovery, Gvr, ResourceInfo, SharedDiscovery};

/// Assumed wait for finalizers of remaining objects to complete (upstream
/// `finalizerEstimateSeconds`).
pub const FINALIZER_ESTIMATE_SECONDS: i64 = 15;

/// Why a deletion pass did not finish.
#[derive(Debug, thiserror::Error)]
pub enum DeleteError {
    /// Content remains; try again in about this many seconds.
    #[error("some content remains in the namespace, estimate {0} seconds before it is removed")]
    ResourcesRemaining(i64),
    /// A request failed.
    #[error(transparent)]
    Api(#[from] kube::Error),
    /// Several things failed (upstream's aggregate error).
    #[error("{0}")]
    Other(String),
}

fn code(e: &kube::Error) -> Option<u16> {
    match e {
        kube::Error::Api(s) => Some(s.code),
        _ => None,
    }
}

/// Upstream `utilerrors.NewAggregate(...).Error()`.
fn aggregate(errs: &[String]) -> String {
    match errs {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Op {
    List,
    DeleteCollection,
}

/// What deleting one resource's content left behind.
#[derive(Debug, Default)]
struct GvrDeletion {
    /// Seconds to wait; 0 means no estimate (not that nothing remains).
    estimate: i64,
    /// Instances left.
    remaining: usize,
    /// Instances left per finalizer.
    finalizers: BTreeMap<String, usize>,
}

/// How old a discovery answer a deletion pass accepts.
const DISCOVERY_MAX_AGE: std::time::Duration = std::time::Duration::from_secs(1);

/// Deletes the content of namespaces, then removes one finalizer from them.
pub struct NamespacedResourcesDeleter {
    client: kube::Client,
    discovery: SharedDiscovery,
    finalizer_token: String,
    /// Operations the server refused (405/404) per resource, not to be tried again.
    unsupported: Mutex<HashSet<(Op, Gvr)>>,
}

impl NamespacedResourcesDeleter {
    /// A deleter that finds resources with `discovery` and removes `finalizer_token`
    /// (`kubernetes`) when done.
    pub fn new(client: kube::Client, discovery: SharedDiscovery, finalizer_token: &str) -> Self {
        NamespacedResourcesDeleter {
            client,
            discovery,
            finalizer_token: finalizer_token.to_string(),
            unsupported: Mutex::new(HashSet::new()),
        }
    }

    fn namespaces(&self) -> Api<Namespace> {
        Api::all(self.client.clone())
    }

    fn supported(&self, op: Op, r: &ResourceInfo) -> bool {
        let verb = match op {
            Op::List => "list",
            Op::DeleteCollection => "deletecollection",
        };
        r.supports_all(&[verb])
            && !self
                .unsupported
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .contains(&(op, r.gvr()))
    }

    fn set_unsupported(&self, op: Op, r: &ResourceInfo) {
        self.unsupported
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert((op, r.gvr()));
    }

    /// Delete all content of namespace `name` and release it (see the module docs).
    pub async fn delete(&self, name: &str) -> Result<(), DeleteError> {
        let Some(ns) = self.namespaces().get_opt(name).await? else {
            return Ok(());
        };
        if ns.metadata.deletion_timestamp.is_none() {
            return Ok(());
        }
        tracing::debug!(namespace = name, finalizer = %self.finalizer_token, "namespace controller - syncNamespace");
        let ns = match self.retry_on_conflict(ns, Self::ensure_terminating).await {
            Ok(ns) => ns,
            Err(DeleteError::Api(e)) if code(&e) == Some(404) => return Ok(()),
            Err(e) => return Err(e),
        };
        if ns.metadata.deletion_timestamp.is_none() {
            return Ok(());
        }
        if ns
            .spec
            .as_ref()
            .and_then(|s| s.finalizers.as_ref())
            .is_none_or(|f| f.is_empty())
        {
            return Ok(());
        }
        let estimate = self.delete_all_content(ns.clone()).await?;
        if estimate > 0 {
            return Err(DeleteError::ResourcesRemaining(estimate));
        }
        match self.retry_on_conflict(ns, Self::finalize).await {
            Ok(_) => Ok(()),
            // another controller with the same token finished first
            Err(DeleteError::Api(e)) if code(&e) == Some(404) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Upstream `retryOnConflictError`: run `f`, re-reading the namespace after each
    /// conflict; fails if the namespace was replaced (another UID).
    async fn retry_on_conflict<'a, F>(
        &'a self,
        mut latest: Namespace,
        f: F,
    ) -> Result<Namespace, DeleteError>
    where
        F: for<'b> Fn(
            &'b Self,
            Namespace,
        ) -> futures::future::BoxFuture<'b, Result<Namespace, kube::Error>>,
    {
        loop {
            match f(self, latest.clone()).await {
                Ok(ns) => return Ok(ns),
                Err(e) if code(&e) == Some(409) => {}
                Err(e) => return Err(e.into()),
            }
            let name = latest.metadata.name.clone().unwrap_or_default();
            let fresh = self.namespaces().get(&name).await?;
            if fresh.metadata.uid != latest.metadata.uid {
                return Err(DeleteError::Other(
                    "namespace uid has changed across retries".into(),
                ));
            }
            latest = fresh;
        }
    }

    /// Upstream `updateNamespaceStatusFunc`: phase `Terminating` once deleting.
    fn ensure_terminating(
        &self,
        mut ns: Namespace,
    ) -> futures::future::BoxFuture<'_, Result<Namespace, kube::Error>> {
        Box::pin(async move {
            let terminating =
                ns.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Terminating");
            if ns.metadata.deletion_timestamp.is_none() || terminating {
                return Ok(ns);
            }
            ns.status.get_or_insert_with(Default::default).phase = Some("Terminating".into());
            let name = ns.metadata.name.clone().unwrap_or_default();
            self.namespaces()
                .replace_status(&name, &PostParams::default(), &ns)
                .await
        })
    }

    /// Upstream `finalizeNamespace`: `spec.finalizers` without our token (sorted, as a
    /// set), written through the `finalize` subresource.
    fn finalize(
        &self,
        ns: Namespace,
    ) -> futures::future::BoxFuture<'_, Result<Namespace, kube::Error>> {
        Box::pin(async move {
            let mut out = ns.clone();
            let kept: std::collections::BTreeSet<String> = ns
                .spec
                .as_ref()
                .and_then(|s| s.finalizers.clone())
                .unwrap_or_default()
                .into_iter()
                .filter(|f| *f != self.finalizer_token)
                .collect();
            out.spec.get_or_insert_with(Default::default).finalizers =
                Some(kept.into_iter().collect());
            let name = ns.metadata.name.clone().unwrap_or_default();
            let body = serde_json::to_vec(&out).map_err(kube::Error::SerdeError)?;
            let req = kube::core::Request::new("/api/v1/namespaces")
                .replace_subresource("finalize", &name, &PostParams::default(), body)
                .map_err(kube::Error::BuildRequest)?;
            self.client.request::<Namespace>(req).await
        })
    }

    /// Upstream `deleteAllContent`: the estimate of the wait, after writing the
    /// conditions.
    async fn delete_all_content(&self, mut ns: Namespace) -> Result<i64, DeleteError> {
        let name = ns.metadata.name.clone().unwrap_or_default();
        let deleted_at = ns
            .metadata
            .deletion_timestamp
            .as_ref()
            .map(|t| t.0)
            .unwrap_or_else(k8s_openapi::jiff::Timestamp::now);
        let mut errs: Vec<String> = Vec::new();
        let mut conditions = ConditionUpdater::default();
        // what the server serves now (a custom resource defined a moment ago counts):
        // an answer at most a second old, shared with the other controllers
        let discovery = match self.discovery.fresh(DISCOVERY_MAX_AGE).await {
            Ok(d) => d,
            Err(e) => {
                // not fatal: there is just nothing to work on this time
                errs.push(e.to_string());
                conditions.discovery_failed(&e.to_string(), None);
                Arc::new(Discovery::default())
            }
        };
        if let Some(msg) = discovery.failure_message() {
            conditions.discovery_failed(&msg, Some(discovery.failed.len()));
            errs.push(msg);
        }
        if let Some(e) = &discovery.parse_error {
            conditions.group_version_failed(e);
            errs.push(e.clone());
        }
        let mut resources: Vec<Arc<ResourceInfo>> = discovery
            .preferred_supporting(&["delete"])
            .into_iter()
            .filter(|r| r.namespaced)
            .collect();
        resources.sort_by_key(|r| r.gvr());
        let mut estimate = 0;
        let mut remaining: BTreeMap<Gvr, usize> = BTreeMap::new();
        let mut finalizers: BTreeMap<String, usize> = BTreeMap::new();
        for r in &resources {
            let (done, err) = self.delete_all_content_for(r, &name, deleted_at).await;
            if let Some(e) = err {
                conditions.delete_content_failed(e.clone());
                errs.push(e);
            }
            estimate = estimate.max(done.estimate);
            if done.remaining > 0 {
                remaining.insert(r.gvr(), done.remaining);
                for (f, n) in done.finalizers {
                    *finalizers.entry(f).or_default() += n;
                }
            }
        }
        conditions.content_totals(&remaining, &finalizers);
        // always written: a condition may have to go back to "it worked"
        if conditions.update(ns.status.get_or_insert_with(Default::default)) {
            if let Err(e) = self
                .namespaces()
                .replace_status(&name, &PostParams::default(), &ns)
                .await
            {
                tracing::warn!(namespace = %name, error = %e, "couldn't update status condition for namespace");
            }
        }
        tracing::debug!(namespace = %name, estimate, errors = errs.len(), "namespace controller - deleteAllContent");
        if errs.is_empty() {
            Ok(estimate)
        } else {
            Err(DeleteError::Other(aggregate(&errs)))
        }
    }

    fn api(&self, r: &ResourceInfo, ns: &str) -> Api<DynamicObject> {
        Api::namespaced_with(self.client.clone(), ns, &r.api_resource())
    }

    /// Upstream `deleteAllContentForGroupVersionResource`.
    async fn delete_all_content_for(
        &self,
        r: &ResourceInfo,
        ns: &str,
        deleted_at: k8s_openapi::jiff::Timestamp,
    ) -> (GvrDeletion, Option<String>) {
        let estimate = match self.estimate_graceful_termination(r, ns, deleted_at).await {
            Ok(e) => e,
            Err(e) => return (GvrDeletion::default(), Some(e.to_string())),
        };
        let with_estimate = || GvrDeletion {
            estimate,
            ..GvrDeletion::default()
        };
        let collection_deleted = match self.delete_collection(r, ns).await {
            Ok(done) => done,
            Err(e) => return (with_estimate(), Some(e.to_string())),
        };
        if !collection_deleted {
            if let Err(e) = self.delete_each_item(r, ns).await {
                return (with_estimate(), Some(e.to_string()));
            }
        }
        let items = match self.list_collection(r, ns).await {
            Ok(Some(items)) => items,
            Ok(None) => return (with_estimate(), None),
            Err(e) => return (with_estimate(), Some(e.to_string())),
        };
        if items.is_empty() {
            return (GvrDeletion::default(), None);
        }
        let mut finalizers: BTreeMap<String, usize> = BTreeMap::new();
        for item in &items {
            for f in item.metadata.finalizers.iter().flatten() {
                *finalizers.entry(f.clone()).or_default() += 1;
            }
        }
        let left = |estimate| GvrDeletion {
            estimate,
            remaining: items.len(),
            finalizers: finalizers.clone(),
        };
        if estimate != 0 {
            return (left(estimate), None);
        }
        if !finalizers.is_empty() {
            // waiting on finalizers is normal: give them time
            return (left(FINALIZER_ESTIMATE_SECONDS), None);
        }
        (
            GvrDeletion {
                estimate,
                remaining: items.len(),
                finalizers: BTreeMap::new(),
            },
            Some(format!(
                "unexpected items still remain in namespace: {ns} for gvr: {}",
                r.gvr()
            )),
        )
    }

    /// Upstream `deleteCollection`: whether the server served it.
    async fn delete_collection(&self, r: &ResourceInfo, ns: &str) -> Result<bool, kube::Error> {
        if !self.supported(Op::DeleteCollection, r) {
            return Ok(false);
        }
        // background: the garbage collector must not add the orphan finalizer
        match self
            .api(r, ns)
            .delete_collection(&DeleteParams::background(), &ListParams::default())
            .await
        {
            Ok(_) => Ok(true),
            Err(e) if matches!(code(&e), Some(404 | 405)) => {
                self.set_unsupported(Op::DeleteCollection, r);
                Ok(false)
            }
            Err(e) => Err(e),
        }
    }

    /// Upstream `listCollection`: `None` when listing is not served.
    async fn list_collection(
        &self,
        r: &ResourceInfo,
        ns: &str,
    ) -> Result<Option<Vec<PartialObjectMeta<DynamicObject>>>, kube::Error> {
        if !self.supported(Op::List, r) {
            return Ok(None);
        }
        match self.api(r, ns).list_metadata(&ListParams::default()).await {
            Ok(list) => Ok(Some(list.items)),
            Err(e) if matches!(code(&e), Some(404 | 405)) => {
                self.set_unsupported(Op::List, r);
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// Upstream `deleteEachItem`.
    async fn delete_each_item(&self, r: &ResourceInfo, ns: &str) -> Result<(), kube::Error> {
        let Some(items) = self.list_collection(r, ns).await? else {
            return Ok(());
        };
        let api = self.api(r, ns);
        for item in items {
            let name = item.metadata.name.unwrap_or_default();
            match api.delete(&name, &DeleteParams::background()).await {
                Ok(_) => {}
                Err(e) if matches!(code(&e), Some(404 | 405)) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Upstream `estimateGracefulTermination`: for pods, the longest grace period of the
    /// pods still running, unless that much time has passed since the namespace's deletion.
    async fn estimate_graceful_termination(
        &self,
        r: &ResourceInfo,
        ns: &str,
        deleted_at: k8s_openapi::jiff::Timestamp,
    ) -> Result<i64, kube::Error> {
        if !(r.group.is_empty() && r.plural == "pods") {
            return Ok(0);
        }
        let pods = Api::<Pod>::namespaced(self.client.clone(), ns)
            .list(&ListParams::default())
            .await?;
        let estimate = pods
            .items
            .iter()
            .filter(|p| {
                !matches!(
                    p.status.as_ref().and_then(|s| s.phase.as_deref()),
                    Some("Succeeded" | "Failed")
                )
            })
            .filter_map(|p| {
                p.spec
                    .as_ref()
                    .and_then(|s| s.termination_grace_period_seconds)
            })
            .max()
            .unwrap_or(0);
        let elapsed = k8s_openapi::jiff::Timestamp::now()
            .duration_since(deleted_at)
            .as_secs();
        Ok(if elapsed >= estimate { 0 } else { estimate })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_read_as_upstream() {
        assert_eq!(
            DeleteError::ResourcesRemaining(16).to_string(),
            "some content remains in the namespace, estimate 16 seconds before it is removed"
        );
        assert_eq!(aggregate(&["a".into()]), "a");
        assert_eq!(aggregate(&["a".into(), "b".into()]), "[a, b]");
    }
}
