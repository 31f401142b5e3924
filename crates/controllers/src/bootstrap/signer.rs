//! The bootstrap signer: kube-controller-manager's `bootstrap-signer-controller`
//! (upstream `pkg/controller/bootstrap/bootstrapsigner.go`), off by default.
//!
//! The `cluster-info` ConfigMap in `kube-public` holds a `kubeconfig`; for every
//! bootstrap token Secret in `kube-system` that is valid for signing (named after its
//! id, with a secret, not expired, `usage-bootstrap-signing: "true"`) it gets a
//! `jws-kubeconfig-<id>` key with the kubeconfig's detached JWS; signatures of tokens
//! that are gone are removed. The ConfigMap is written only when a signature changes.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use coxswain_runtime::builder::ControllerBuilder;
use coxswain_runtime::cache::{Change, Store};
use coxswain_runtime::controller::{
    Action, Context, Controller, ControllerOptions, ReconcileError, ReconcileResult, Reconciler,
};
use coxswain_runtime::ObjectKey;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::PostParams;
use kube::Api;

use super::*;
use crate::registry::Descriptor;

/// Canonical controller name.
pub const NAME: &str = "bootstrap-signer-controller";

/// The signer's options (upstream `BootstrapSignerOptions`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BootstrapSignerOptions {
    /// Where the ConfigMap is (`kube-public`).
    pub config_map_namespace: String,
    /// Its name (`cluster-info`).
    pub config_map_name: String,
    /// Where the token Secrets are (`kube-system`).
    pub token_secret_namespace: String,
}

impl Default for BootstrapSignerOptions {
    fn default() -> Self {
        BootstrapSignerOptions {
            config_map_namespace: "kube-public".into(),
            config_map_name: "cluster-info".into(),
            token_secret_namespace: "kube-system".into(),
        }
    }
}

/// The service account the controller runs as with `--use-service-account-credentials`
/// (upstream `ClientOrDie("bootstrap-signer")`).
pub const SERVICE_ACCOUNT: &str = "bootstrap-signer";

/// The registry entry: `bootstrap-signer-controller`, alias `bootstrapsigner`, off by
/// default.
pub fn descriptor() -> Descriptor {
    Descriptor {
        name: NAME,
        aliases: &["bootstrapsigner"],
        disabled_by_default: true,
        constructor: |ctx| {
            Ok(Some(Box::new(new_controller(
                &ctx.clients(SERVICE_ACCOUNT)?,
                ctx.options.bootstrap_signer.clone(),
            ))))
        },
    }
}

/// The id and secret of a token that may sign (upstream `validateSecretForSigning`).
pub fn token_for_signing(secret: &Secret, now: chrono::DateTime<Utc>) -> Option<(String, String)> {
    let name = secret.metadata.name.as_deref()?;
    let name_id = parse_name(name)?;
    let id = get_data(secret, TOKEN_ID_KEY);
    if id.is_empty() || id != name_id {
        return None;
    }
    let token = get_data(secret, TOKEN_SECRET_KEY);
    if token.is_empty() || get_expiration(secret, now).1 {
        return None;
    }
    if get_data(secret, USAGE_SIGNING_KEY) != "true" {
        return None;
    }
    Some((id.to_string(), token.to_string()))
}

/// The ConfigMap data signed by `tokens` (id → secret), or `None` when nothing
/// changes (no kubeconfig, or every signature as it should be).
pub fn sign_data(
    data: &BTreeMap<String, String>,
    tokens: &BTreeMap<String, String>,
) -> Option<BTreeMap<String, String>> {
    let content = data.get(KUBECONFIG_KEY)?;
    let mut out = data.clone();
    let mut changed = false;
    for (id, secret) in tokens {
        let sig = compute_detached_signature(content, id, secret);
        let key = format!("{JWS_SIGNATURE_KEY_PREFIX}{id}");
        if out.get(&key) != Some(&sig) {
            changed = true;
            out.insert(key, sig);
        }
    }
    let stale: Vec<String> = out
        .keys()
        .filter(|k| {
            k.strip_prefix(JWS_SIGNATURE_KEY_PREFIX)
                .is_some_and(|id| !tokens.contains_key(id))
        })
        .cloned()
        .collect();
    for k in stale {
        out.remove(&k);
        changed = true;
    }
    changed.then_some(out)
}

/// The signer as a runnable of `mgr`.
pub fn new_controller(
    mgr: &impl crate::clientbuilder::ClusterAccess,
    opts: BootstrapSignerOptions,
) -> Controller<SignerReconciler> {
    let target = ObjectKey::namespaced(&opts.config_map_namespace, &opts.config_map_name);
    let (cm_target, secret_ns) = (target.clone(), opts.token_secret_namespace.clone());
    let reconciler = SignerReconciler {
        config_maps: mgr.cache().informer::<ConfigMap>().store().clone(),
        secrets: mgr.cache().informer::<Secret>().store().clone(),
        client: mgr.kube_client().clone(),
        opts,
    };
    ControllerBuilder::new(mgr.cache())
        .named(NAME)
        .with_options(ControllerOptions::workers(1))
        .for_::<ConfigMap>()
        .with_event_filter(move |c: &Change<ConfigMap>| {
            let o = match c {
                Change::Added(o) | Change::Deleted(o) => o,
                Change::Updated { new, .. } => new,
            };
            ObjectKey::of(o.as_ref()) == cm_target
        })
        .watches(move |s: &Secret| {
            let ours = s.metadata.namespace.as_deref() == Some(secret_ns.as_str())
                && s.type_.as_deref() == Some(SECRET_TYPE_BOOTSTRAP_TOKEN);
            if ours {
                vec![target.clone()]
            } else {
                Vec::new()
            }
        })
        .build(reconciler)
}

/// Keeps `cluster-info` signed.
pub struct SignerReconciler {
    config_maps: Arc<Store<ConfigMap>>,
    secrets: Arc<Store<Secret>>,
    client: kube::Client,
    opts: BootstrapSignerOptions,
}

impl Reconciler for SignerReconciler {
    async fn reconcile(&self, _ctx: Context, key: ObjectKey) -> ReconcileResult {
        let Some(cm) = self.config_maps.get(&key) else {
            return Ok(Action::Done);
        };
        let now = Utc::now();
        let mut tokens = BTreeMap::new();
        let mut next_expiry: Option<Duration> = None;
        for s in self
            .secrets
            .list_namespace(&self.opts.token_secret_namespace)
        {
            if s.type_.as_deref() != Some(SECRET_TYPE_BOOTSTRAP_TOKEN) {
                continue;
            }
            if let Some((id, secret)) = token_for_signing(&s, now) {
                let (left, _) = get_expiration(&s, now);
                if !left.is_zero() {
                    next_expiry = Some(next_expiry.map_or(left, |n| n.min(left)));
                }
                tokens.insert(id, secret);
            }
        }
        // an expiring token's signature goes when it expires
        let after = next_expiry.map_or(Action::Done, |d| {
            Action::RequeueAfter(d + Duration::from_secs(1))
        });
        let data = cm.data.clone().unwrap_or_default();
        let Some(signed) = sign_data(&data, &tokens) else {
            return Ok(after);
        };
        let mut updated = (*cm).clone();
        updated.data = Some(signed);
        Api::<ConfigMap>::namespaced(self.client.clone(), &self.opts.config_map_namespace)
            .replace(key.name(), &PostParams::default(), &updated)
            .await
            .map_err(|e| ReconcileError::from(e).context("updating the signed ConfigMap"))?;
        Ok(after)
    }
}
