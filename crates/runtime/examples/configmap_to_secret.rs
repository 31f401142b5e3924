//! A complete controller: every ConfigMap labelled `mirror=secret` gets a Secret with
//! the same data, owned by the ConfigMap (so deleting the Secret recreates it, and the
//! garbage collector removes it with its ConfigMap).
//!
//! Run against any cluster: `cargo run -p coxswain-runtime --example configmap_to_secret`
//! (uses `KUBECONFIG`); for example with `coxswain up` running. The manager serves
//! metrics on `:8080/metrics` and probes on `:8081`, and stops gracefully on SIGTERM.

use coxswain_runtime::apimachinery::selector::LabelSelector;
use coxswain_runtime::builder::ControllerBuilder;
use coxswain_runtime::client::Client;
use coxswain_runtime::controller::{Action, ReconcileResult};
use coxswain_runtime::controllerutil::set_controller_reference;
use coxswain_runtime::manager::{self, Manager, ManagerOptions};
use coxswain_runtime::predicate;
use coxswain_runtime::ObjectKey;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::ByteString;
use tracing_subscriber::EnvFilter;

async fn reconcile(client: Client, key: ObjectKey) -> ReconcileResult {
    let Some(cm) = client.get::<ConfigMap>(&key).await? else {
        return Ok(Action::Done); // deleted: its Secret goes with it (owner reference)
    };
    let mut secret = Secret::default();
    secret.metadata.name = Some(key.name().to_string());
    secret.metadata.namespace = key.namespace().map(str::to_string);
    let (result, _) = client
        .create_or_update(secret, |s| {
            set_controller_reference(cm.as_ref(), s)?;
            s.data = cm.data.as_ref().map(|d| {
                d.iter()
                    .map(|(k, v)| (k.clone(), ByteString(v.clone().into_bytes())))
                    .collect()
            });
            Ok(())
        })
        .await?;
    tracing::info!(configmap = %key, secret = %result, "reconciled");
    Ok(Action::Done)
}

/// Add the controller to `mgr` (also what its fault-injection test runs: see
/// `tests/it/faults.rs`).
pub fn add_controller(mgr: &Manager) -> Result<(), manager::ManagerError> {
    let selector = LabelSelector::from_match_labels([("mirror", "secret")]);
    let client = mgr.client().clone();
    let controller = ControllerBuilder::new(mgr.cache())
        .named("configmap-to-secret")
        .for_::<ConfigMap>()
        .with_event_filter(predicate::label_selector(selector))
        .owns::<Secret>()
        .build(move |_ctx, key| reconcile(client.clone(), key));
    mgr.add(controller)
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
    add_controller(&mgr)?;
    let result = mgr.start(manager::shutdown_signal()).await;
    std::process::exit(manager::exit_code(&result));
}
