//! A complete controller: every ConfigMap labelled `mirror=secret` gets a Secret with
//! the same data, owned by the ConfigMap (so deleting the Secret recreates it, and the
//! garbage collector removes it with its ConfigMap).
//!
//! Run against any cluster: `cargo run -p coxswain-runtime --example configmap_to_secret`
//! (uses `KUBECONFIG`); for example with `coxswain up` running. The manager serves
//! metrics on `:8080/metrics` and probes on `:8081`, and stops gracefully on SIGTERM.

use std::sync::Arc;

use coxswain_runtime::builder::ControllerBuilder;
use coxswain_runtime::cache::Cache;
use coxswain_runtime::controller::{Action, ReconcileResult};
use coxswain_runtime::manager::{self, Manager, ManagerOptions};
use coxswain_runtime::predicate;
use coxswain_runtime::ObjectKey;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use k8s_openapi::ByteString;
use kube::api::PostParams;
use kube::{Api, Resource};
use tracing_subscriber::EnvFilter;

async fn reconcile(cache: Arc<Cache>, key: ObjectKey) -> ReconcileResult {
    let Some(cm) = cache.get::<ConfigMap>(&key).await else {
        return Ok(Action::Done); // deleted: its Secret goes with it (owner reference)
    };
    let ns = key.namespace().unwrap_or_default().to_string();
    let owner = OwnerReference {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        name: key.name().to_string(),
        uid: cm.meta().uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    };
    let mut secret = Secret::default();
    secret.metadata.name = Some(key.name().to_string());
    secret.metadata.owner_references = Some(vec![owner]);
    secret.data = cm.data.as_ref().map(|d| {
        d.iter()
            .map(|(k, v)| (k.clone(), ByteString(v.clone().into_bytes())))
            .collect()
    });
    let secrets: Api<Secret> = Api::namespaced(cache.client().clone(), &ns);
    match cache.get::<Secret>(&key).await {
        None => {
            secrets.create(&PostParams::default(), &secret).await?;
        }
        Some(existing) if existing.data != secret.data => {
            secret.metadata.resource_version = existing.metadata.resource_version.clone();
            secrets
                .replace(key.name(), &PostParams::default(), &secret)
                .await?;
        }
        Some(_) => {}
    }
    Ok(Action::Done)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::from_default_env())
        .init();
    // metrics on :8080/metrics, probes on :8081/{healthz,readyz}, SIGTERM stops gracefully
    let options = ManagerOptions {
        health_probe_bind_address: ":8081".into(),
        ..ManagerOptions::default()
    };
    let mgr = Manager::try_default(options).await?;
    let selector = coxswain_runtime::apimachinery::selector::LabelSelector::from_match_labels([(
        "mirror", "secret",
    )]);
    let cache = mgr.cache().clone();
    let controller = ControllerBuilder::new(mgr.cache())
        .named("configmap-to-secret")
        .for_::<ConfigMap>()
        .with_event_filter(predicate::label_selector(selector))
        .owns::<Secret>()
        .build(move |_ctx, key| reconcile(cache.clone(), key));
    mgr.add(controller)?;
    let result = mgr.start(manager::shutdown_signal()).await;
    std::process::exit(manager::exit_code(&result));
}
