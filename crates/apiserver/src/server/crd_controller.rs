//! What upstream's apiextensions controllers do, run by the server itself after every
//! change to a CRD: the catalogue is rebuilt (the resource is served at once), names are
//! accepted and the CRD established (`NamesAccepted`, `Established`), and a deleted
//! CRD's objects are deleted before its `customresourcecleanup` finalizer is removed
//! (`Terminating` condition, upstream's `CRDFinalizer`).

use std::collections::HashSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

use crate::endpoints::request::{Target, WriteOptions};
use crate::endpoints::{Api, WriteHook};
use crate::registry::catalog::{Catalog, ResourceDef, Subresource};
use crate::registry::custom::names::{desired_status, set_condition};
use crate::registry::custom::{CLEANUP_FINALIZER, CRD_RESOURCE};
use apimachinery::status::ApiResult;

fn crd_def() -> Option<&'static ResourceDef> {
    Catalog::builtin().lookup("apiextensions.k8s.io", "v1", "customresourcedefinitions")
}

/// The CRD controller: runs after every CRD write (a [`WriteHook`]) and at start.
#[derive(Default)]
pub struct CrdController {
    /// CRDs whose objects are being deleted.
    cleanups: Mutex<HashSet<String>>,
}

impl WriteHook for Arc<CrdController> {
    fn after_write<'a>(
        &'a self,
        api: &'a Arc<Api>,
    ) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>> {
        Box::pin(self.reconcile(api))
    }
}

/// The stored CRDs.
fn stored_crds(api: &Api) -> Vec<Value> {
    api.store
        .snapshot(CRD_RESOURCE)
        .table
        .values()
        .filter_map(|o| o.value().ok())
        .collect()
}

impl CrdController {
    /// Bring the catalogue and the CRDs' status up to date with the stored CRDs; start
    /// the cleanup of deleted ones.
    pub async fn reconcile(self: &Arc<Self>, api: &Arc<Api>) {
        // a status write changes the names other CRDs see: repeat until stable
        for _ in 0..4 {
            let crds = stored_crds(api);
            api.crds.sync(crds.iter());
            let now = apimachinery::time::now_rfc3339();
            let mut wrote = false;
            for crd in &crds {
                let name = crd
                    .pointer("/metadata/name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                if crd.pointer("/metadata/deletionTimestamp").is_some() {
                    self.start_cleanup(api, &name);
                    continue;
                }
                let others: Vec<&Value> = crds.iter().filter(|c| *c != crd).collect();
                if let Some(status) = desired_status(crd, &others, &now) {
                    match write_crd_status(api, &name, status).await {
                        Ok(()) => wrote = true,
                        Err(e) => tracing::warn!(crd = %name, error = %e, "updating CRD status"),
                    }
                }
            }
            if !wrote {
                return;
            }
        }
        let crds = stored_crds(api);
        api.crds.sync(crds.iter());
    }
}

async fn write_crd_status(api: &Api, name: &str, status: Value) -> ApiResult<()> {
    let Some(target) = crd_target(name, Some(Subresource::Status)) else {
        return Ok(());
    };
    api.apply_update(&target, &server_writes(), None, move |old| {
        let mut new = old.clone();
        new["status"] = status.clone();
        Ok(new)
    })
    .await
    .map(|_| ())
}

impl CrdController {
    fn start_cleanup(self: &Arc<Self>, api: &Arc<Api>, name: &str) {
        {
            let mut running = match self.cleanups.lock() {
                Ok(g) => g,
                Err(p) => p.into_inner(),
            };
            if !running.insert(name.to_string()) {
                return;
            }
        }
        let (api, this) = (Arc::clone(api), Arc::clone(self));
        let name = name.to_string();
        tokio::spawn(async move {
            let result = cleanup(&api, &name).await;
            if let Err(e) = &result {
                tracing::warn!(crd = %name, error = %e, "custom resource cleanup");
            }
            if let Ok(mut g) = this.cleanups.lock() {
                g.remove(&name);
            }
            api.crds.sync(stored_crds(&api).iter());
            if result.is_err() {
                // try again later unless the CRD is gone
                tokio::time::sleep(Duration::from_secs(1)).await;
                if api.store.get(CRD_RESOURCE, &name).is_some() {
                    this.start_cleanup(&api, &name);
                }
            }
        });
    }
}

/// Delete every object of the CRD's resource, wait until they are gone (finalizers of
/// the objects are honoured), then remove the cleanup finalizer.
async fn cleanup(api: &Arc<Api>, name: &str) -> ApiResult<()> {
    {
        let mut announced = false;
        loop {
            let Some(stored) = api.store.get(CRD_RESOURCE, name) else {
                return Ok(());
            };
            let crd = stored.value()?;
            let has_finalizer = crd
                .pointer("/metadata/finalizers")
                .and_then(Value::as_array)
                .is_some_and(|a| a.iter().any(|f| f == CLEANUP_FINALIZER));
            if !has_finalizer {
                return Ok(());
            }
            if !announced {
                set_terminating(
                    api,
                    name,
                    "InstanceDeletionInProgress",
                    "CustomResource deletion is in progress",
                )
                .await?;
                announced = true;
            }
            let group = crd
                .pointer("/spec/group")
                .and_then(Value::as_str)
                .unwrap_or("");
            let plural = crd
                .pointer("/status/acceptedNames/plural")
                .and_then(Value::as_str)
                .unwrap_or("");
            let def = api.crds.storage_def_of(name);
            let remaining = if plural.is_empty() {
                0
            } else {
                let table = api.store.snapshot(&format!("{group}/{plural}")).table;
                if let Some(def) = def {
                    for key in table.keys() {
                        let (ns, n) = match key.split_once('/') {
                            Some((ns, n)) if def.namespaced => (Some(ns), n),
                            _ => (None, key.as_str()),
                        };
                        if let Err(e) = api.delete_quietly(def, ns, n).await {
                            if e.code != 404 {
                                tracing::debug!(crd = %name, object = %key, error = %e, "deleting custom resource");
                            }
                        }
                    }
                }
                api.store.snapshot(&format!("{group}/{plural}")).table.len()
            };
            if remaining == 0 {
                set_terminating(
                    api,
                    name,
                    "InstanceDeletionCompleted",
                    "removed all instances",
                )
                .await?;
                let Some(target) = crd_target(name, None) else {
                    return Ok(());
                };
                api.apply_update(&target, &server_writes(), None, |old| {
                    let mut new = old.clone();
                    if let Some(a) = new
                        .pointer_mut("/metadata/finalizers")
                        .and_then(Value::as_array_mut)
                    {
                        a.retain(|f| f != CLEANUP_FINALIZER);
                    }
                    Ok(new)
                })
                .await?;
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

async fn set_terminating(api: &Api, name: &str, reason: &str, message: &str) -> ApiResult<()> {
    {
        let Some(target) = crd_target(name, Some(Subresource::Status)) else {
            return Ok(());
        };
        let now = apimachinery::time::now_rfc3339();
        api.apply_update(&target, &server_writes(), None, |old| {
            let mut new = old.clone();
            if !new["status"].is_object() {
                new["status"] = json!({});
            }
            let mut conditions: Vec<Value> = new["status"]["conditions"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            set_condition(&mut conditions, "Terminating", true, reason, message, &now);
            new["status"]["conditions"] = Value::Array(conditions);
            Ok(new)
        })
        .await
        .map(|_| ())
    }
}

/// Options of the server's own writes: field manager `kube-apiserver`, as upstream's
/// apiextensions controllers appear in managedFields.
fn server_writes() -> WriteOptions {
    WriteOptions {
        field_manager: Some("kube-apiserver".into()),
        ..WriteOptions::default()
    }
}

/// The CRD `name`, or its `subresource`.
fn crd_target(name: &str, subresource: Option<Subresource>) -> Option<Target> {
    Some(Target {
        resource: crd_def()?,
        namespace: None,
        name: Some(name.to_string()),
        subresource,
        legacy_watch: false,
    })
}
