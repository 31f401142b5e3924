//! Running the selected built-in controllers: kube-controller-manager in one function.
//!
//! [`run`] builds one [`Manager`] (shared informers, leader election on a Lease named
//! `kube-controller-manager` in `kube-system` by default, metrics and health on one
//! HTTPS port behind delegated authentication and authorization, as
//! kube-controller-manager's secure port: TokenReview and SubjectAccessReview through
//! [`coxswain_runtime::authfilter`]), constructs the controllers `--controllers` selects,
//! starts them with jitter (`--controller-start-interval`), gives each a `/healthz/<name>` check, lists them on
//! `/debug/controllers`, and runs until cancelled or until leadership is lost (then the
//! controllers stop at once and the error is returned, so the process exits).

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use coxswain_runtime::authfilter::{DelegatingAuth, DelegatingAuthOptions, Filter, FilterProvider};
use coxswain_runtime::cache::Storage;
use coxswain_runtime::manager::MetricsServerOptions;
use coxswain_runtime::serving::SecureServing;

use coxswain_runtime::healthz;
use coxswain_runtime::manager::{
    runnable, BoxError, Listening, Manager, ManagerError, ManagerOptions, Runnable,
};
use rand::Rng;
use tokio_util::sync::CancellationToken;

use crate::clientbuilder::ClientBuilder;
use crate::registry::{ControllerContext, ControllerManagerOptions, Descriptor, Registry};

/// kube-controller-manager's flags that shape the process (the controllers' own options
/// are in [`ControllerManagerOptions`]).
#[derive(Clone, Debug)]
pub struct ControllerManagerConfig {
    /// `--controllers` (default `*`).
    pub controllers: Vec<String>,
    /// `--leader-elect` (default true).
    pub leader_elect: bool,
    /// `--leader-elect-lease-duration` (default 15 s).
    pub lease_duration: Duration,
    /// `--leader-elect-renew-deadline` (default 10 s).
    pub renew_deadline: Duration,
    /// `--leader-elect-retry-period` (default 2 s).
    pub retry_period: Duration,
    /// `--leader-elect-resource-name` (default `kube-controller-manager`).
    pub lease_name: String,
    /// `--leader-elect-resource-namespace` (default `kube-system`).
    pub lease_namespace: String,
    /// `--kube-api-qps` (default 20).
    pub kube_api_qps: f32,
    /// `--kube-api-burst` (default 30).
    pub kube_api_burst: u32,
    /// `--min-resync-period` (default 12 h): informers resync every 1 to 2 times this.
    pub min_resync_period: Duration,
    /// `--controller-start-interval` (default 0): pause between controller starts.
    pub controller_start_interval: Duration,
    /// `--bind-address` (default 0.0.0.0) for health and metrics.
    pub bind_address: IpAddr,
    /// `--secure-port` (default 10257; 0 disables the server).
    pub secure_port: u16,
    /// The serving certificate (`--tls-cert-file`/`--tls-private-key-file`, `--cert-dir`;
    /// default: self-signed, generated in memory) and `--client-ca-file`.
    pub serving: SecureServing,
    /// Delegated authentication and authorization of the secure port
    /// (`--authentication-token-webhook-cache-ttl`,
    /// `--authorization-always-allow-paths`, the authorization cache TTLs).
    pub auth: DelegatingAuthOptions,
    /// `--authentication-kubeconfig`: the cluster TokenReviews go to (default: the
    /// controllers' own connection).
    pub authentication_kubeconfig: Option<kube::Config>,
    /// `--authorization-kubeconfig`: the cluster SubjectAccessReviews go to (default: the
    /// controllers' own connection).
    pub authorization_kubeconfig: Option<kube::Config>,
    /// `--authentication-skip-lookup`: do not look the client CA up in the
    /// `kube-system/extension-apiserver-authentication` ConfigMap when `--client-ca-file`
    /// is not given (default false).
    pub authentication_skip_lookup: bool,
    /// `--authentication-tolerate-lookup-failure`: go on without a client CA when that
    /// lookup fails (default false: the controller manager does not start).
    pub authentication_tolerate_lookup_failure: bool,
    /// `--use-service-account-credentials` (default false): each controller runs as its
    /// own service account in `kube-system` ([`crate::clientbuilder`]).
    pub use_service_account_credentials: bool,
    /// Options of the controllers themselves.
    pub options: ControllerManagerOptions,
}

impl Default for ControllerManagerConfig {
    fn default() -> Self {
        ControllerManagerConfig {
            controllers: vec!["*".to_string()],
            leader_elect: true,
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
            lease_name: "kube-controller-manager".to_string(),
            lease_namespace: "kube-system".to_string(),
            kube_api_qps: 20.0,
            kube_api_burst: 30,
            min_resync_period: Duration::from_secs(12 * 3600),
            controller_start_interval: Duration::ZERO,
            bind_address: IpAddr::from([0, 0, 0, 0]),
            secure_port: 10257,
            serving: SecureServing::default(),
            auth: DelegatingAuthOptions::default(),
            authentication_kubeconfig: None,
            authorization_kubeconfig: None,
            authentication_skip_lookup: false,
            authentication_tolerate_lookup_failure: false,
            use_service_account_credentials: false,
            options: ControllerManagerOptions::default(),
        }
    }
}

/// Why the controller manager stopped.
#[derive(Debug, thiserror::Error)]
pub enum ControllerManagerError {
    /// `--controllers` named unknown controllers.
    #[error("invalid --controllers: {0}")]
    Selection(#[from] crate::registry::SelectionError),
    /// A controller could not be constructed.
    #[error("error starting controller {name:?}: {reason}")]
    Construct {
        /// Canonical name.
        name: &'static str,
        /// Why.
        reason: String,
    },
    /// The secure port's authentication could not be set up.
    #[error("delegated authentication: {0}")]
    Authentication(String),
    /// The manager failed (lost lease, runnable error, stop timeout).
    #[error(transparent)]
    Manager(#[from] ManagerError),
}

impl ControllerManagerError {
    /// The process exit status for this error.
    pub fn exit_code(&self) -> i32 {
        match self {
            ControllerManagerError::Manager(e) => e.exit_code(),
            _ => coxswain_runtime::manager::EXIT_FAILED,
        }
    }
}

/// A runnable that starts `inner` after `delay` (jittered controller starts).
fn delayed(delay: Duration, inner: Box<dyn Runnable>) -> impl Runnable {
    let name = inner.name();
    let leader = inner.needs_leader_election();
    runnable(&name, leader, move |cancel: CancellationToken| async move {
        tokio::select! {
            _ = tokio::time::sleep(delay) => inner.start(cancel).await,
            _ = cancel.cancelled() => Ok::<(), BoxError>(()),
        }
    })
}

/// Run the controllers of `registry` that `config.controllers` selects against the
/// cluster of `kube`, until `cancel` fires (graceful stop) or the manager fails.
/// `on_listen` learns where the health/metrics server listens.
pub async fn run(
    kube: kube::Config,
    config: &ControllerManagerConfig,
    registry: &Registry,
    cancel: CancellationToken,
    on_listen: impl FnOnce(Listening),
) -> Result<(), ControllerManagerError> {
    let address = if config.secure_port == 0 {
        "0".to_string()
    } else {
        std::net::SocketAddr::new(config.bind_address, config.secure_port).to_string()
    };
    run_with_address(kube, config, registry, cancel, &address, on_listen).await
}

/// As [`run`], with the health/metrics server on `address` (`127.0.0.1:0` for a free
/// port, `0` for none) instead of `--bind-address`/`--secure-port`.
pub async fn run_with_address(
    kube: kube::Config,
    config: &ControllerManagerConfig,
    registry: &Registry,
    cancel: CancellationToken,
    address: &str,
    on_listen: impl FnOnce(Listening),
) -> Result<(), ControllerManagerError> {
    let selected = registry.select(&config.controllers)?;
    let address = address.to_string();
    // informers resync at a random period between min and 2 × min, as upstream
    let resync = config
        .min_resync_period
        .mul_f64(1.0 + rand::rng().random_range(0.0..1.0));
    // the secure port, unless disabled (then nothing is looked up)
    let metrics_server = if matches!(address.trim(), "" | "0") {
        MetricsServerOptions::default()
    } else {
        serving(&kube, config).await?
    };
    let options = ManagerOptions {
        metrics_server,
        leader_election: config.leader_elect,
        leader_election_id: config.lease_name.clone(),
        leader_election_namespace: Some(config.lease_namespace.clone()),
        lease_duration: config.lease_duration,
        renew_deadline: config.renew_deadline,
        retry_period: config.retry_period,
        metrics_bind_address: address.clone(),
        health_probe_bind_address: address,
        sync_period: (!config.min_resync_period.is_zero()).then_some(resync),
        client_qps: Some((config.kube_api_qps, config.kube_api_burst)),
        // kinds the controllers read on every sync stay decoded, shared as client-go's
        // informers share them; pods (the most numerous) are compact, below
        cache_storage: coxswain_runtime::cache::Storage::Decoded,
        ..ManagerOptions::default()
    };
    let mut controller_options = config.options.clone();
    if controller_options.service_account.root_ca.is_none() {
        controller_options.service_account.root_ca = crate::rootcacertpublisher::root_ca_of(&kube);
    }
    let mut kube = kube;
    // writes appear in managedFields as kube-controller-manager's
    coxswain_runtime::client::set_user_agent(
        &mut kube,
        &coxswain_runtime::client::user_agent("kube-controller-manager"),
    );
    let root_config = kube.clone();
    let manager = Manager::new(kube, options)?;
    // pods are most of a cluster's objects, and ReplicaSets (a pod template each, one
    // per Deployment revision) the largest of the rest; the workload controllers reach
    // them through owner indexes, so a sync decodes only its own
    let cache = manager.cache();
    cache.set_storage_of::<k8s_openapi::api::core::v1::Pod>(Storage::Compact);
    cache.set_storage_of::<k8s_openapi::api::apps::v1::ReplicaSet>(Storage::Compact);
    // the identities' event writers stop after the controllers
    let identities = CancellationToken::new();
    let _stop_identities = identities.clone().drop_guard();
    let clients = if config.use_service_account_credentials {
        ClientBuilder::service_accounts(
            &root_config,
            manager.kube_client().clone(),
            config.kube_api_qps,
            config.kube_api_burst,
            identities,
        )
    } else {
        ClientBuilder::root()
    };
    let ctx = ControllerContext {
        manager: &manager,
        options: &controller_options,
        clients,
    };
    let mut started: Vec<&'static str> = Vec::new();
    let mut off: Vec<&'static str> = Vec::new();
    for (i, d) in selected.iter().enumerate() {
        let constructed =
            (d.constructor)(&ctx).map_err(|reason| ControllerManagerError::Construct {
                name: d.name,
                reason,
            })?;
        let Some(controller) = constructed else {
            tracing::info!(controller = d.name, "controller is disabled by its options");
            off.push(d.name);
            continue;
        };
        let delay = if config.controller_start_interval.is_zero() {
            Duration::ZERO
        } else {
            // wait.Jitter(interval, 1.0) per controller, one after the other
            config
                .controller_start_interval
                .mul_f64(i as f64 + rand::rng().random_range(0.0..1.0))
        };
        manager.add(delayed(delay, controller))?;
        manager.add_healthz_check(d.name, healthz::ping())?;
        started.push(d.name);
        tracing::info!(controller = d.name, "controller registered");
    }
    let listing = debug_listing(registry.descriptors(), &started, &off);
    manager.add_metrics_extra_handler(
        "/debug/controllers",
        axum::routing::get(move || {
            let listing = listing.clone();
            async move { listing }
        }),
    )?;
    manager.start_with(cancel, on_listen).await?;
    Ok(())
}

/// The secure port: HTTPS with `config.serving`'s certificate, every request
/// authenticated (client certificate, TokenReview, else `system:anonymous`) and authorized
/// (the always-allowed paths, `system:masters`, else a SubjectAccessReview), as
/// kube-controller-manager's `DelegatingAuthenticationOptions` and
/// `DelegatingAuthorizationOptions`. Unlike kube-controller-manager, which without
/// `--authentication-kubeconfig`/`--authorization-kubeconfig` only reviews in a cluster,
/// the reviews default to the controllers' own connection, so that `--kubeconfig` alone
/// gives a usable endpoint.
async fn serving(
    kube: &kube::Config,
    config: &ControllerManagerConfig,
) -> Result<MetricsServerOptions, ControllerManagerError> {
    let client = |c: &kube::Config, what: &str| {
        kube::Client::try_from(c.clone())
            .map_err(|e| ControllerManagerError::Authentication(format!("{what} kubeconfig: {e}")))
    };
    let authn = client(
        config.authentication_kubeconfig.as_ref().unwrap_or(kube),
        "authentication",
    )?;
    let authz = client(
        config.authorization_kubeconfig.as_ref().unwrap_or(kube),
        "authorization",
    )?;
    let mut tls = config.serving.clone();
    if tls.client_ca_file.is_none()
        && tls.client_ca_pem.is_none()
        && !config.authentication_skip_lookup
    {
        match lookup_client_ca(&authn).await {
            Ok(Some(pem)) => tls.client_ca_pem = Some(pem),
            Ok(None) => tracing::info!(
                "no client-ca-file in configmap/extension-apiserver-authentication in kube-system, so client certificate authentication won't work"
            ),
            Err(e) if config.authentication_tolerate_lookup_failure => {
                tracing::warn!(error = %e, "error looking up in-cluster authentication configuration");
                tracing::warn!("continuing without authentication configuration; to require authentication configuration lookup to succeed, set --authentication-tolerate-lookup-failure=false");
            }
            Err(e) => {
                return Err(ControllerManagerError::Authentication(format!(
                    "unable to load configmap based client CA file: {e}"
                )))
            }
        }
    }
    let auth = DelegatingAuth::with_clients(Some(authn), Some(authz), config.auth.clone());
    Ok(MetricsServerOptions {
        secure_serving: true,
        tls,
        filter_provider: Some(FilterProvider::of(Filter::delegating(Arc::new(auth)))),
    })
}

/// The `client-ca-file` of `kube-system/extension-apiserver-authentication` (published by
/// kube-apiserver for its extensions); `None` when absent.
async fn lookup_client_ca(client: &kube::Client) -> Result<Option<String>, kube::Error> {
    let api = kube::Api::<k8s_openapi::api::core::v1::ConfigMap>::namespaced(
        client.clone(),
        "kube-system",
    );
    let cm = api.get_opt("extension-apiserver-authentication").await?;
    Ok(cm
        .and_then(|cm| cm.data)
        .and_then(|mut d| d.remove("client-ca-file"))
        .filter(|pem| !pem.trim().is_empty()))
}

/// `/debug/controllers`: each known controller, whether it runs, and its aliases.
fn debug_listing(all: &[Descriptor], started: &[&'static str], off: &[&'static str]) -> String {
    let mut out = String::new();
    for d in all {
        let state = if started.contains(&d.name) {
            "enabled"
        } else if off.contains(&d.name) {
            "disabled (by its options)"
        } else if d.disabled_by_default {
            "disabled (off by default)"
        } else {
            "disabled"
        };
        out.push_str(&format!("{} {state}", d.name));
        if !d.aliases.is_empty() {
            out.push_str(&format!(" (aliases: {})", d.aliases.join(", ")));
        }
        out.push('\n');
    }
    out
}
