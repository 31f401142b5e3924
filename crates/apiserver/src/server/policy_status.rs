//! What upstream's ValidatingAdmissionPolicy status controller
//! (`pkg/controller/validatingadmissionpolicystatus`) does, run by the server after every
//! write of a policy and at start: each policy whose generation moved gets
//! `status.observedGeneration` and `status.typeChecking` (the warnings of its
//! expressions checked against the schemas of the kinds it matches).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::Value;

use crate::admission::policy::typecheck::desired_status;
use crate::endpoints::request::{Target, WriteOptions};
use crate::endpoints::{Api, WriteHook};
use crate::registry::catalog::{Catalog, ResourceDef, Subresource};

fn vap_def() -> Option<&'static ResourceDef> {
    Catalog::builtin().lookup(
        "admissionregistration.k8s.io",
        "v1",
        "validatingadmissionpolicies",
    )
}

/// The status controller of ValidatingAdmissionPolicies (a [`WriteHook`] on their table).
pub struct PolicyStatusController;

impl WriteHook for PolicyStatusController {
    fn after_write<'a>(
        &'a self,
        api: &'a Arc<Api>,
    ) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>> {
        Box::pin(reconcile(api))
    }
}

/// Bring every policy's status up to date with its generation.
pub async fn reconcile(api: &Arc<Api>) {
    let Some(def) = vap_def() else { return };
    let policies: Vec<Value> = api
        .store
        .snapshot(&def.storage_key())
        .table
        .values()
        .filter_map(|o| o.value().ok())
        .collect();
    let catalog = api.catalog();
    for p in policies {
        if desired_status(&p, &catalog).is_none() {
            continue;
        }
        let name = p
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let target = Target {
            resource: def,
            namespace: None,
            name: Some(name.clone()),
            subresource: Some(Subresource::Status),
            legacy_watch: false,
        };
        let opts = WriteOptions {
            field_manager: Some("validatingadmissionpolicy-status-controller".into()),
            ..WriteOptions::default()
        };
        let catalog = Arc::clone(&catalog);
        let r = api
            .apply_update(&target, &opts, None, move |old| {
                let mut new = old.clone();
                if let Some(status) = desired_status(old, &catalog) {
                    new["status"] = status;
                }
                Ok(new)
            })
            .await;
        if let Err(e) = r {
            tracing::warn!(policy = %name, error = %e, "updating ValidatingAdmissionPolicy status");
        }
    }
}
