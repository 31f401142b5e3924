//! A complete controller: every ConfigMap labelled `mirror=secret` gets a Secret with
//! the same data, owned by the ConfigMap (so deleting the Secret recreates it, and the
//! garbage collector removes it with its ConfigMap).
//!
//! Run against any cluster: `cargo run -p coxswain-runtime --example configmap_to_secret`
//! (uses `KUBECONFIG`); for example with `coxswain up` running.

use std::sync::Arc;

use coxswain_runtime::builder::ControllerBuilder;
use coxswain_runtime::cache::Cache;
use coxswain_runtime::controller::{Action, ReconcileResult};
use coxswain_runtime::predicate;
use coxswain_runtime::ObjectKey;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use k8s_openapi::ByteString;
use kube::api::PostParams;
use kube::{Api, Client, Resource};
use tokio_util::sync::CancellationToken;

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
    let client = Client::try_default().await?;
    let cancel = CancellationToken::new();
    let cache = Arc::new(Cache::new(client, cancel.clone()));
    let selector =
        coxswain_runtime::selector::LabelSelector::from_match_labels([("mirror", "secret")]);
    let c = cache.clone();
    let controller = ControllerBuilder::new(&cache)
        .named("configmap-to-secret")
        .for_::<ConfigMap>()
        .with_event_filter(predicate::label_selector(selector))
        .owns::<Secret>()
        .build(move |_ctx, key| reconcile(c.clone(), key));
    let stop = cancel.clone();
    tokio::spawn(async move {
        let _ = tokio::signal::ctrl_c().await;
        stop.cancel();
    });
    controller.run(cancel).await;
    Ok(())
}
