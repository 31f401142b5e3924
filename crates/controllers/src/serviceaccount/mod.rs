//! The service account controllers: a `default` ServiceAccount in every active namespace
//! (this module), the legacy token Secrets ([`tokens`]) and their clean-up ([`cleaner`]).
//!
//! After kube-controller-manager's `serviceaccount-controller`
//! (kubernetes/kubernetes `pkg/controller/serviceaccount/serviceaccounts_controller.go`):
//! the reconcile request is a namespace (cluster-scoped key). A namespace that is added or
//! updated, or whose `default` ServiceAccount is deleted, is synced: when the namespace is
//! `Active` and the account is missing from the cache, the account is created (an
//! `AlreadyExists` answer is success, and so is a refusal because the namespace is
//! terminating). A namespace that is not `Active` (terminating) is skipped. One worker by
//! default, as upstream's `Run(ctx, 1)`; `--concurrent-serviceaccount-syncs` (a coxswain
//! flag: upstream hard-codes the one worker) changes it.

use crate::clientbuilder::ClusterAccess;
pub mod cleaner;
pub mod tokens;

use std::sync::Arc;

use crate::registry::{ControllerContext, Descriptor};
use coxswain_runtime::builder::ControllerBuilder;
use coxswain_runtime::cache::Change;
use coxswain_runtime::client::Client;
use coxswain_runtime::controller::{
    Action, Context, Controller, ControllerOptions, ReconcileError, ReconcileResult, Reconciler,
};
use coxswain_runtime::handler::EnqueueMapped;
use coxswain_runtime::manager::Runnable;
use coxswain_runtime::predicate::BoxPredicate;
use coxswain_runtime::ObjectKey;
use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// Canonical controller name (upstream `names.ServiceAccountController`).
pub const NAME: &str = "serviceaccount-controller";

/// The accounts ensured in every namespace (upstream
/// `DefaultServiceAccountsControllerOptions`).
pub const SERVICE_ACCOUNTS: &[&str] = &["default"];

/// The controller's service account with `--use-service-account-credentials`
/// (upstream `ClientOrDie("service-account-controller")`).
pub const SERVICE_ACCOUNT: &str = "service-account-controller";

/// The registry entry: `serviceaccount-controller`, alias `serviceaccount`, on by default.
pub fn descriptor() -> Descriptor {
    Descriptor {
        name: NAME,
        aliases: &["serviceaccount"],
        disabled_by_default: false,
        constructor: construct,
    }
}

fn construct(ctx: &ControllerContext<'_>) -> Result<Option<Box<dyn Runnable>>, String> {
    let workers = ctx.options.service_account.concurrent_serviceaccount_syncs;
    Ok(Some(Box::new(new_controller(
        &ctx.clients(SERVICE_ACCOUNT)?,
        workers,
    ))))
}

/// The options of the service account controllers (upstream
/// `SAControllerConfiguration`: this controller and the root CA publisher).
#[derive(Clone, Debug)]
pub struct ServiceAccountControllerOptions {
    /// Namespaces synced at once (`--concurrent-serviceaccount-syncs`, 1).
    pub concurrent_serviceaccount_syncs: usize,
    /// The cluster CA bundle (PEM) the root CA publisher puts in every namespace (and
    /// the token controller in `ca.crt`): `--root-ca-file`, else the CA of the client
    /// configuration.
    pub root_ca: Option<String>,
    /// `--service-account-private-key-file`: the key legacy tokens are signed with; the
    /// token controller runs only with it.
    pub service_account_key_file: Option<std::path::PathBuf>,
    /// Token Secrets synced at once (`--concurrent-serviceaccount-token-syncs`, 5).
    pub concurrent_sa_token_syncs: usize,
}

impl Default for ServiceAccountControllerOptions {
    fn default() -> Self {
        ServiceAccountControllerOptions {
            concurrent_serviceaccount_syncs: 1,
            root_ca: None,
            service_account_key_file: None,
            concurrent_sa_token_syncs: 5,
        }
    }
}

/// Builds the controller on the manager's shared cache (namespace and service account
/// informers), with `workers` concurrent syncs.
pub fn new_controller(
    manager: &impl ClusterAccess,
    workers: usize,
) -> Controller<ServiceAccountsReconciler> {
    let ensured: BoxPredicate<ServiceAccount> = Arc::new(|c: &Change<ServiceAccount>| match c {
        Change::Deleted(sa) => {
            SERVICE_ACCOUNTS.contains(&sa.metadata.name.as_deref().unwrap_or(""))
        }
        _ => false,
    });
    ControllerBuilder::new(manager.cache())
        .named(NAME)
        .for_::<Namespace>()
        // a deleted namespace has nothing left to hold an account
        .with_event_filter(|c: &Change<Namespace>| !matches!(c, Change::Deleted(_)))
        .watches_with::<ServiceAccount>(
            EnqueueMapped(|sa: &ServiceAccount| {
                sa.metadata
                    .namespace
                    .as_deref()
                    .map(|ns| vec![ObjectKey::cluster(ns)])
                    .unwrap_or_default()
            }),
            vec![ensured],
        )
        .with_options(ControllerOptions::workers(workers))
        .build(ServiceAccountsReconciler {
            client: manager.client(),
        })
}

/// Reconciles one namespace: creates the missing ensured accounts.
pub struct ServiceAccountsReconciler {
    client: Client,
}

/// Whether a namespace may receive new objects (upstream: `status.phase == Active`).
pub fn namespace_active(ns: &Namespace) -> bool {
    ns.metadata.deletion_timestamp.is_none()
        && ns.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Active")
}

/// The accounts to create in `ns`: none unless it is active, else the ensured ones that
/// `exists` does not know.
pub fn missing_accounts(ns: &Namespace, exists: impl Fn(&str) -> bool) -> Vec<&'static str> {
    if !namespace_active(ns) {
        return Vec::new();
    }
    SERVICE_ACCOUNTS
        .iter()
        .copied()
        .filter(|name| !exists(name))
        .collect()
}

/// Whether a create failed only because the namespace is being terminated (upstream
/// `HasStatusCause(err, NamespaceTerminatingCause)`).
pub fn namespace_terminating_error(e: &kube::Error) -> bool {
    match e {
        kube::Error::Api(s) => s
            .details
            .as_ref()
            .is_some_and(|d| d.causes.iter().any(|c| c.reason == "NamespaceTerminating")),
        _ => false,
    }
}

impl Reconciler for ServiceAccountsReconciler {
    async fn reconcile(&self, _ctx: Context, request: ObjectKey) -> ReconcileResult {
        let Some(ns) = self.client.get::<Namespace>(&request).await? else {
            return Ok(Action::Done);
        };
        let name = request.name();
        let mut existing = Vec::new();
        for sa in SERVICE_ACCOUNTS {
            if self
                .client
                .get::<ServiceAccount>(&ObjectKey::namespaced(name, sa))
                .await?
                .is_some()
            {
                existing.push(*sa);
            }
        }
        let mut failures = Vec::new();
        for sa in missing_accounts(&ns, |n| existing.contains(&n)) {
            let account = ServiceAccount {
                metadata: ObjectMeta {
                    name: Some(sa.to_string()),
                    namespace: Some(name.to_string()),
                    ..ObjectMeta::default()
                },
                ..ServiceAccount::default()
            };
            match self.client.create(&account).await {
                Ok(_) => tracing::debug!(namespace = name, account = sa, "created service account"),
                // upstream `IsAlreadyExists`: a 409 for another reason (a Conflict)
                // is a failure and retried, or the account would never be created
                Err(kube::Error::Api(s)) if s.reason == "AlreadyExists" => {}
                Err(e) if namespace_terminating_error(&e) => {}
                Err(e) => failures.push(format!("creating service account {name}/{sa}: {e}")),
            }
        }
        if failures.is_empty() {
            Ok(Action::Done)
        } else {
            Err(ReconcileError::msg(failures.join("; ")))
        }
    }
}

/// The registry entry of the legacy token controller: `serviceaccount-token-controller`,
/// alias `serviceaccount-token`, on by default but off (as upstream: "no private key")
/// without `--service-account-private-key-file`. It keeps the controller manager's own
/// client under `--use-service-account-credentials`, as upstream's `tokens-controller`.
pub fn token_descriptor() -> Descriptor {
    Descriptor {
        name: tokens::NAME,
        aliases: &["serviceaccount-token"],
        disabled_by_default: false,
        constructor: construct_tokens,
    }
}

/// Reads `--service-account-private-key-file` and signs legacy tokens with it (upstream
/// `JWTTokenGenerator(LegacyIssuer, privateKey)`).
pub fn token_generator_from_key_file(
    path: &std::path::Path,
) -> Result<tokens::TokenGenerator, String> {
    let pem = std::fs::read_to_string(path).map_err(|e| {
        format!(
            "error reading key for service account token controller: {}: {e}",
            path.display()
        )
    })?;
    let key = apimachinery::serviceaccount::SigningKey::from_pem(&pem).map_err(|e| {
        format!(
            "error reading key for service account token controller: {}: {e}",
            path.display()
        )
    })?;
    Ok(Arc::new(
        move |sa: &ServiceAccount, secret: &k8s_openapi::api::core::v1::Secret| {
            apimachinery::serviceaccount::sign_legacy(
                &key,
                sa.metadata.namespace.as_deref().unwrap_or(""),
                sa.metadata.name.as_deref().unwrap_or(""),
                sa.metadata.uid.as_deref().unwrap_or(""),
                secret.metadata.name.as_deref().unwrap_or(""),
            )
            .map_err(|e| e.to_string())
        },
    ))
}

fn construct_tokens(ctx: &ControllerContext<'_>) -> Result<Option<Box<dyn Runnable>>, String> {
    let o = &ctx.options.service_account;
    let Some(path) = &o.service_account_key_file else {
        tracing::info!(
            controller = tokens::NAME,
            "controller is disabled because there is no private key"
        );
        return Ok(None);
    };
    let generator = token_generator_from_key_file(path)?;
    Ok(Some(Box::new(tokens::tokens_controller(
        ctx.manager.cache(),
        ctx.manager.kube_client().clone(),
        tokens::TokensControllerOptions {
            generator,
            root_ca: o.root_ca.as_ref().map(|ca| ca.as_bytes().to_vec()),
            workers: o.concurrent_sa_token_syncs,
        },
    ))))
}

/// The registry entry of the legacy token cleaner:
/// `legacy-serviceaccount-token-cleaner-controller`, alias
/// `legacy-serviceaccount-token-cleaner`, on by default.
pub fn cleaner_descriptor() -> Descriptor {
    Descriptor {
        name: cleaner::NAME,
        aliases: &["legacy-serviceaccount-token-cleaner"],
        disabled_by_default: false,
        constructor: |ctx| {
            let clients = ctx.clients(cleaner::SERVICE_ACCOUNT)?;
            let c = cleaner::legacy_sa_token_cleaner(
                clients.cache(),
                clients.kube_client().clone(),
                &ctx.options.legacy_sa_token_cleaner,
                cleaner::DEFAULT_SYNC_INTERVAL,
            )?;
            Ok(Some(Box::new(c) as Box<dyn Runnable>))
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::NamespaceStatus;

    fn ns(phase: &str) -> Namespace {
        Namespace {
            metadata: ObjectMeta {
                name: Some("default".into()),
                ..ObjectMeta::default()
            },
            status: Some(NamespaceStatus {
                phase: Some(phase.into()),
                ..NamespaceStatus::default()
            }),
            ..Namespace::default()
        }
    }

    // After upstream TestServiceAccountCreation (only `default` is ensured here).
    #[test]
    fn creates_only_missing_accounts_in_active_namespaces() {
        assert_eq!(missing_accounts(&ns("Active"), |_| false), ["default"]);
        assert!(missing_accounts(&ns("Active"), |n| n == "default").is_empty());
        assert!(missing_accounts(&ns("Terminating"), |_| false).is_empty());
        let mut deleting = ns("Active");
        deleting.metadata.deletion_timestamp = Some(
            k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(Default::default()),
        );
        assert!(missing_accounts(&deleting, |_| false).is_empty());
        let mut no_phase = ns("Active");
        no_phase.status = None;
        assert!(missing_accounts(&no_phase, |_| false).is_empty());
    }

    #[test]
    fn descriptor_names_follow_upstream() {
        let d = descriptor();
        assert_eq!(d.name, "serviceaccount-controller");
        assert_eq!(d.aliases, ["serviceaccount"]);
        assert!(!d.disabled_by_default);
    }
}
