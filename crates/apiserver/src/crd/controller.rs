//! What upstream's apiextensions controllers do, run by the server itself after every
//! change to a CRD: the catalogue is rebuilt (the resource is served at once), names are
//! accepted and the CRD established (`NamesAccepted`, `Established`), and a deleted
//! CRD's objects are deleted before its `customresourcecleanup` finalizer is removed
//! (`Terminating` condition, upstream's `CRDFinalizer`).

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use super::names::{desired_status, set_condition};
use super::{CLEANUP_FINALIZER, CRD_RESOURCE};
use crate::api::Api;
use crate::catalog::{Catalog, ResourceDef, Subresource};
use crate::request::{Target, WriteOptions};
use apimachinery::status::ApiResult;

fn crd_def() -> Option<&'static ResourceDef> {
    Catalog::builtin().lookup("apiextensions.k8s.io", "v1", "customresourcedefinitions")
}

impl Api {
    /// The stored CRDs.
    fn stored_crds(&self) -> Vec<Value> {
        self.store
            .snapshot(CRD_RESOURCE)
            .table
            .values()
            .filter_map(|o| o.value().ok())
            .collect()
    }

    /// Bring the catalogue and the CRDs' status up to date with the stored CRDs; start
    /// the cleanup of deleted ones. Called after every CRD write and at start.
    pub async fn reconcile_crds(self: &Arc<Self>) {
        // a status write changes the names other CRDs see: repeat until stable
        for _ in 0..4 {
            let crds = self.stored_crds();
            self.crds.sync(crds.iter());
            let now = apimachinery::time::now_rfc3339();
            let mut wrote = false;
            for crd in &crds {
                let name = crd
                    .pointer("/metadata/name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                if crd.pointer("/metadata/deletionTimestamp").is_some() {
                    self.start_cleanup(&name);
                    continue;
                }
                let others: Vec<&Value> = crds.iter().filter(|c| *c != crd).collect();
                if let Some(status) = desired_status(crd, &others, &now) {
                    match self.write_crd_status(&name, status).await {
                        Ok(()) => wrote = true,
                        Err(e) => tracing::warn!(crd = %name, error = %e, "updating CRD status"),
                    }
                }
            }
            if !wrote {
                return;
            }
        }
        let crds = self.stored_crds();
        self.crds.sync(crds.iter());
    }

    async fn write_crd_status(&self, name: &str, status: Value) -> ApiResult<()> {
        let Some(target) = crd_target(name, Some(Subresource::Status)) else {
            return Ok(());
        };
        self.apply_update(&target, &server_writes(), None, move |old| {
            let mut new = old.clone();
            new["status"] = status;
            Ok(new)
        })
        .await
        .map(|_| ())
    }

    fn start_cleanup(self: &Arc<Self>, name: &str) {
        {
            let mut running = match self.crd_cleanups.lock() {
                Ok(g) => g,
                Err(p) => p.into_inner(),
            };
            if !running.insert(name.to_string()) {
                return;
            }
        }
        let api = Arc::clone(self);
        let name = name.to_string();
        tokio::spawn(async move {
            let result = api.cleanup(&name).await;
            if let Err(e) = &result {
                tracing::warn!(crd = %name, error = %e, "custom resource cleanup");
            }
            if let Ok(mut g) = api.crd_cleanups.lock() {
                g.remove(&name);
            }
            api.crds.sync(api.stored_crds().iter());
            if result.is_err() {
                // try again later unless the CRD is gone
                tokio::time::sleep(Duration::from_secs(1)).await;
                if api.store.get(CRD_RESOURCE, &name).is_some() {
                    api.start_cleanup(&name);
                }
            }
        });
    }

    /// Delete every object of the CRD's resource, wait until they are gone (finalizers
    /// of the objects are honoured), then remove the cleanup finalizer.
    async fn cleanup(self: &Arc<Self>, name: &str) -> ApiResult<()> {
        let mut announced = false;
        loop {
            let Some(stored) = self.store.get(CRD_RESOURCE, name) else {
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
                self.set_terminating(
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
            let def = self.crds.storage_def_of(name);
            let remaining = if plural.is_empty() {
                0
            } else {
                let table = self.store.snapshot(&format!("{group}/{plural}")).table;
                if let Some(def) = def {
                    for key in table.keys() {
                        let (ns, n) = match key.split_once('/') {
                            Some((ns, n)) if def.namespaced => (Some(ns), n),
                            _ => (None, key.as_str()),
                        };
                        if let Err(e) = self.delete_quietly(def, ns, n).await {
                            if e.code != 404 {
                                tracing::debug!(crd = %name, object = %key, error = %e, "deleting custom resource");
                            }
                        }
                    }
                }
                self.store
                    .snapshot(&format!("{group}/{plural}"))
                    .table
                    .len()
            };
            if remaining == 0 {
                self.set_terminating(name, "InstanceDeletionCompleted", "removed all instances")
                    .await?;
                let Some(target) = crd_target(name, None) else {
                    return Ok(());
                };
                self.apply_update(&target, &server_writes(), None, |old| {
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

    async fn set_terminating(&self, name: &str, reason: &str, message: &str) -> ApiResult<()> {
        let Some(target) = crd_target(name, Some(Subresource::Status)) else {
            return Ok(());
        };
        let now = apimachinery::time::now_rfc3339();
        self.apply_update(&target, &server_writes(), None, |old| {
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
