//! The token cleaner: kube-controller-manager's `token-cleaner-controller` (upstream
//! `pkg/controller/bootstrap/tokencleaner.go`), off by default.
//!
//! Bootstrap token Secrets (type `bootstrap.kubernetes.io/token`) in `kube-system` are
//! deleted once their `expiration` has passed (an unparsable one counts as passed), with
//! the Secret's UID as precondition; one that expires later is looked at again then. A
//! refused deletion (409) is looked at again too, where upstream drops it.

use std::sync::Arc;

use chrono::Utc;
use coxswain_runtime::builder::ControllerBuilder;
use coxswain_runtime::cache::{Change, Store};
use coxswain_runtime::controller::{
    Action, Context, Controller, ControllerOptions, ReconcileError, ReconcileResult, Reconciler,
};
use coxswain_runtime::ObjectKey;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{DeleteParams, Preconditions};
use kube::Api;

use super::{get_expiration, SECRET_TYPE_BOOTSTRAP_TOKEN};
use crate::registry::Descriptor;

/// Canonical controller name.
pub const NAME: &str = "token-cleaner-controller";

/// The cleaner's options (upstream `TokenCleanerOptions`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenCleanerOptions {
    /// Where the token Secrets are (`kube-system`).
    pub token_secret_namespace: String,
}

impl Default for TokenCleanerOptions {
    fn default() -> Self {
        TokenCleanerOptions {
            token_secret_namespace: "kube-system".into(),
        }
    }
}

/// The service account the controller runs as with `--use-service-account-credentials`
/// (upstream `ClientOrDie("token-cleaner")`).
pub const SERVICE_ACCOUNT: &str = "token-cleaner";

/// The registry entry: `token-cleaner-controller`, alias `tokencleaner`, off by default.
pub fn descriptor() -> Descriptor {
    Descriptor {
        name: NAME,
        aliases: &["tokencleaner"],
        disabled_by_default: true,
        constructor: |ctx| {
            Ok(Some(Box::new(new_controller(
                &ctx.clients(SERVICE_ACCOUNT)?,
                ctx.options.token_cleaner.clone(),
            ))))
        },
    }
}

/// The cleaner as a runnable of `mgr`.
pub fn new_controller(
    mgr: &impl crate::clientbuilder::ClusterAccess,
    opts: TokenCleanerOptions,
) -> Controller<TokenCleanerReconciler> {
    let ns = opts.token_secret_namespace.clone();
    let reconciler = TokenCleanerReconciler {
        secrets: mgr.cache().informer::<Secret>().store().clone(),
        client: mgr.kube_client().clone(),
    };
    ControllerBuilder::new(mgr.cache())
        .named(NAME)
        .with_options(ControllerOptions::workers(1))
        .for_::<Secret>()
        .with_event_filter(move |c: &Change<Secret>| {
            let s = match c {
                Change::Added(o) | Change::Deleted(o) => o,
                Change::Updated { new, .. } => new,
            };
            s.metadata.namespace.as_deref() == Some(ns.as_str())
                && s.type_.as_deref() == Some(SECRET_TYPE_BOOTSTRAP_TOKEN)
        })
        .build(reconciler)
}

/// Deletes expired token Secrets.
pub struct TokenCleanerReconciler {
    secrets: Arc<Store<Secret>>,
    client: kube::Client,
}

impl Reconciler for TokenCleanerReconciler {
    async fn reconcile(&self, _ctx: Context, key: ObjectKey) -> ReconcileResult {
        let Some(secret) = self.secrets.get(&key) else {
            return Ok(Action::Done);
        };
        let (left, expired) = get_expiration(&secret, Utc::now());
        if !expired {
            return Ok(if left.is_zero() {
                Action::Done
            } else {
                Action::RequeueAfter(left)
            });
        }
        let params = DeleteParams {
            preconditions: secret.metadata.uid.clone().map(|uid| Preconditions {
                uid: Some(uid),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        let ns = key.namespace().unwrap_or_default();
        match Api::<Secret>::namespaced(self.client.clone(), ns)
            .delete(key.name(), &params)
            .await
        {
            Ok(_) => Ok(Action::Done),
            // already gone
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(Action::Done),
            // replaced by another Secret of that name (the UID precondition), as upstream
            // assumes, whose own event brings it here; but a 409 nobody else caused (an
            // admission webhook's, a refused write under the fault harness) would leave
            // the expired token for good: look at the cache again
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(Action::Requeue),
            Err(e) => Err(ReconcileError::from(e).context("deleting an expired bootstrap token")),
        }
    }
}
