//! The manager: what turns a set of controllers into a production process.
//!
//! Like controller-runtime's `pkg/manager`, a [`Manager`] owns the client (which counts
//! its requests in `rest_client_requests_total`), the shared [`Cache`], the runnables
//! (controllers, servers, anything with a `start`), leader election, the metrics and
//! health endpoints, the event recorders and the webhook server, and it starts and stops
//! them in a fixed order:
//!
//! 1. the metrics and health probe servers (bound first: a taken port is an error at once);
//! 2. the webhook server (when a webhook is registered);
//! 3. runnables that do not need leadership;
//! 4. once elected (at once without leader election), the runnables that need it
//!    (controllers, by default), which wait for their informers to sync.
//!
//! Stopping goes the other way: leader runnables are cancelled and their in-flight
//! reconciles finish, the lease is released (when asked), then the other runnables,
//! the informers and the servers stop. The whole stop is bounded by
//! [`ManagerOptions::graceful_shutdown_timeout`]. An error from any runnable stops the
//! manager and is returned from [`Manager::start`]; so is a lost lease, after the
//! leader runnables were stopped at once (a process must never act as a second leader).

use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::routing::{get, MethodRouter};
use axum::Router;
use futures::future::BoxFuture;
use futures::FutureExt;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::cache::Cache;
use crate::controller::{Controller, Reconciler};
use crate::events::{EventBroadcaster, EventRecorder};
use crate::healthz::{self, Probe};
use crate::leaderelection::{LeaderElectionConfig, LeaderElector};
use crate::metrics::RestClientMetricsLayer;
use crate::webhook::{Webhook, WebhookServer, WebhookServerOptions};

/// Boxed error of a runnable.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Something the manager starts and stops: a controller, a server, a periodic job.
pub trait Runnable: Send + 'static {
    /// A name for logs and errors.
    fn name(&self) -> String;

    /// Whether it may only run in the elected leader (default: true, as controllers).
    fn needs_leader_election(&self) -> bool {
        true
    }

    /// Run until `cancel` fires (then return promptly) or until it fails.
    fn start(
        self: Box<Self>,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, Result<(), BoxError>>;
}

impl<R: Reconciler> Runnable for Controller<R> {
    fn name(&self) -> String {
        format!("controller {}", Controller::name(self))
    }

    fn start(
        self: Box<Self>,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, Result<(), BoxError>> {
        async move {
            self.run(cancel).await;
            Ok(())
        }
        .boxed()
    }
}

impl Runnable for Box<dyn Runnable> {
    fn name(&self) -> String {
        (**self).name()
    }

    fn needs_leader_election(&self) -> bool {
        (**self).needs_leader_election()
    }

    fn start(
        self: Box<Self>,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, Result<(), BoxError>> {
        (*self).start(cancel)
    }
}

/// A runnable from a closure.
pub struct FnRunnable<F> {
    name: String,
    leader: bool,
    f: F,
}

/// A runnable named `name` that runs `f(cancel)`; `needs_leader` says whether only the
/// leader runs it.
pub fn runnable<F, Fut>(name: &str, needs_leader: bool, f: F) -> FnRunnable<F>
where
    F: FnOnce(CancellationToken) -> Fut + Send + 'static,
    Fut: Future<Output = Result<(), BoxError>> + Send + 'static,
{
    FnRunnable {
        name: name.to_string(),
        leader: needs_leader,
        f,
    }
}

impl<F, Fut> Runnable for FnRunnable<F>
where
    F: FnOnce(CancellationToken) -> Fut + Send + 'static,
    Fut: Future<Output = Result<(), BoxError>> + Send + 'static,
{
    fn name(&self) -> String {
        self.name.clone()
    }

    fn needs_leader_election(&self) -> bool {
        self.leader
    }

    fn start(
        self: Box<Self>,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, Result<(), BoxError>> {
        (self.f)(cancel).boxed()
    }
}

/// Manager options; the defaults are controller-runtime's.
#[derive(Clone, Debug)]
pub struct ManagerOptions {
    /// Run leader-only runnables only while holding the lease (default false).
    pub leader_election: bool,
    /// Name of the Lease (required with leader election).
    pub leader_election_id: String,
    /// Namespace of the Lease (default: the pod's namespace in a cluster, else `default`).
    pub leader_election_namespace: Option<String>,
    /// How long a lease is valid without renewal (default 15 s).
    pub lease_duration: Duration,
    /// How long the leader retries renewing before giving up (default 10 s).
    pub renew_deadline: Duration,
    /// Wait between attempts to acquire or renew (default 2 s).
    pub retry_period: Duration,
    /// Release the lease on a graceful stop, so a successor takes over at once (default
    /// false; only safe when the process exits right after [`Manager::start`] returns).
    pub leader_election_release_on_cancel: bool,
    /// Metrics server address (`:8080` by default; `0` disables it).
    pub metrics_bind_address: String,
    /// How the metrics server serves: HTTPS and who may read it (default: plain HTTP to
    /// anyone, as controller-runtime's).
    pub metrics_server: MetricsServerOptions,
    /// Health probe server address (`0` or empty, the default, disables it).
    pub health_probe_bind_address: String,
    /// Path of the readiness probe (default `/readyz`).
    pub readiness_endpoint_name: String,
    /// Path of the liveness probe (default `/healthz`).
    pub liveness_endpoint_name: String,
    /// Bound on the whole stop (default 30 s).
    pub graceful_shutdown_timeout: Duration,
    /// Resync period of the cache's informers (default: none).
    pub sync_period: Option<Duration>,
    /// Restrict the cache to one namespace (default: all).
    pub namespace: Option<String>,
    /// How the cache holds objects (default compact JSON decoded per read; `Decoded`
    /// shares decoded objects: more memory, free reads).
    pub cache_storage: crate::cache::Storage,
    /// Client-side rate limit of the manager's client: requests per second and burst
    /// (client-go's token bucket; default: none). Only [`Manager::new`] applies it.
    pub client_qps: Option<(f32, u32)>,
    /// Options of the webhook server, which runs when a webhook is registered
    /// ([`Manager::register_webhook`]); default: port 9443, certificates from
    /// `<tmp>/k8s-webhook-server/serving-certs`.
    pub webhook: WebhookServerOptions,
}

impl Default for ManagerOptions {
    fn default() -> Self {
        ManagerOptions {
            leader_election: false,
            leader_election_id: String::new(),
            leader_election_namespace: None,
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
            leader_election_release_on_cancel: false,
            metrics_bind_address: ":8080".to_string(),
            metrics_server: MetricsServerOptions::default(),
            health_probe_bind_address: "0".to_string(),
            readiness_endpoint_name: "/readyz".to_string(),
            liveness_endpoint_name: "/healthz".to_string(),
            graceful_shutdown_timeout: Duration::from_secs(30),
            sync_period: None,
            namespace: None,
            client_qps: None,
            cache_storage: crate::cache::Storage::Compact,
            webhook: WebhookServerOptions::default(),
        }
    }
}

/// How the metrics server serves (controller-runtime's `metricsserver.Options`): HTTPS
/// with [`secure_serving`](Self::secure_serving), and a filter before its handlers,
/// typically [`crate::authfilter::with_authentication_and_authorization`] (TokenReview and
/// SubjectAccessReview to the API server; see [`crate::authfilter`] for an example).
///
/// When the health probes share the metrics address (as kube-controller-manager's
/// secure port), they are served the same way and go through the same filter: let them
/// through with [`crate::authfilter::DelegatingAuthOptions::always_allow_paths`].
#[derive(Clone, Debug, Default)]
pub struct MetricsServerOptions {
    /// Serve HTTPS (default false: plain HTTP).
    pub secure_serving: bool,
    /// The certificate and client CA of HTTPS serving (default: a self-signed certificate
    /// generated at start, no client certificates).
    pub tls: crate::serving::SecureServing,
    /// Makes the filter run before every handler of the metrics server from the
    /// manager's client (default none: everyone may read the metrics).
    pub filter_provider: Option<crate::authfilter::FilterProvider>,
}

/// Why the manager failed.
#[derive(Debug, thiserror::Error)]
pub enum ManagerError {
    /// A bad option.
    #[error("invalid manager options: {0}")]
    Options(String),
    /// The client could not be built.
    #[error("building the client: {0}")]
    Client(#[from] kube::Error),
    /// A server could not bind its address.
    #[error("{server} server cannot listen on {addr}: {source}")]
    Bind {
        /// Which server.
        server: &'static str,
        /// The address.
        addr: String,
        /// Why.
        source: std::io::Error,
    },
    /// A runnable failed.
    #[error("{name} failed: {source}")]
    Runnable {
        /// The runnable's name.
        name: String,
        /// Its error.
        source: BoxError,
    },
    /// A runnable panicked.
    #[error("{0} panicked")]
    Panicked(String),
    /// Leadership was lost: the leader runnables were stopped.
    #[error("leader election lost")]
    LeaderElectionLost,
    /// The runnables did not stop within the graceful shutdown timeout.
    #[error("failed waiting for all runnables to end within grace period of {0:?}")]
    ShutdownTimeout(Duration),
    /// A second start, or an addition after the stop.
    #[error("{0}")]
    State(&'static str),
    /// The webhook server failed to register or to start.
    #[error("webhook server: {0}")]
    Webhook(#[from] crate::webhook::Error),
    /// HTTPS serving of the metrics server could not be set up.
    #[error("metrics server: {0}")]
    Serving(#[from] crate::serving::ServingError),
    /// The metrics server's filter could not be made.
    #[error("metrics server filter: {0}")]
    Filter(BoxError),
    /// An extra metrics handler could not be added.
    #[error("cannot add metrics handler for {0:?}: {1}")]
    MetricsHandler(String, &'static str),
}

enum Phase {
    Pending(Vec<Box<dyn Runnable>>),
    Started(mpsc::UnboundedSender<Box<dyn Runnable>>),
    Stopped,
}

/// Owns the client, the cache, the runnables and the process-level servers.
pub struct Manager {
    client: kube::Client,
    /// The delegating client over `cache`.
    api: crate::client::Client,
    discovery: crate::discovery::SharedDiscovery,
    /// The client leader election writes the Lease with (unlimited).
    election_client: kube::Client,
    cache: Arc<Cache>,
    cache_cancel: CancellationToken,
    options: ManagerOptions,
    phase: Mutex<Phase>,
    healthz: Probe,
    readyz: Probe,
    extra_handlers: Mutex<Vec<(String, MethodRouter)>>,
    elected: watch::Sender<bool>,
    events: EventBroadcaster,
    events_cancel: CancellationToken,
    webhooks: Mutex<Option<WebhookServer>>,
}

/// Parse a Go-style listen address (`:8080`, `127.0.0.1:0`); `None` when disabled.
fn listen_address(addr: &str) -> Result<Option<SocketAddr>, ManagerError> {
    let addr = addr.trim();
    if addr.is_empty() || addr == "0" {
        return Ok(None);
    }
    let full = match addr.strip_prefix(':') {
        Some(port) => format!("0.0.0.0:{port}"),
        None => addr.to_string(),
    };
    full.parse()
        .map(Some)
        .map_err(|_| ManagerError::Options(format!("bad listen address {addr:?}")))
}

fn in_cluster_namespace() -> Option<String> {
    std::fs::read_to_string("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

impl Manager {
    /// A manager talking to the cluster of `config` (its client counts requests in
    /// `rest_client_requests_total`). Without a User-Agent in `config`, requests carry
    /// client-go's default, the program's name ([`crate::client::user_agent`]), which the
    /// API server records as the field manager of writes.
    pub fn new(mut config: kube::Config, options: ManagerOptions) -> Result<Manager, ManagerError> {
        if !crate::client::has_user_agent(&config) {
            let ua = crate::client::user_agent(&crate::client::program_name());
            crate::client::set_user_agent(&mut config, &ua);
        }
        if options.leader_election && options.leader_election_id.is_empty() {
            return Err(ManagerError::Options(
                "leader_election_id is required with leader election".into(),
            ));
        }
        listen_address(&options.metrics_bind_address)?;
        listen_address(&options.health_probe_bind_address)?;
        let host = RestClientMetricsLayer::host_of(&config.cluster_url);
        // leader election has a client of its own, outside the QPS budget (as
        // kube-controller-manager's "leader-election" client): a renew queued behind a
        // burst of informer requests would miss the renew deadline
        let election = kube::client::ClientBuilder::try_from(config.clone())?
            .with_layer(&RestClientMetricsLayer::new(&host))
            .build();
        let builder = kube::client::ClientBuilder::try_from(config)?
            .with_layer(&RestClientMetricsLayer::new(&host));
        let client = match options.client_qps {
            Some((qps, burst)) => builder
                .with_layer(&crate::client::RateLimitLayer::new(qps, burst))
                .build(),
            None => builder.build(),
        };
        let mut manager = Self::with_client(client, options);
        manager.election_client = election;
        Ok(manager)
    }

    /// A manager from the usual configuration: `$KUBECONFIG`, `~/.kube/config`, or the
    /// in-cluster service account.
    pub async fn try_default(options: ManagerOptions) -> Result<Manager, ManagerError> {
        let config = kube::Config::infer()
            .await
            .map_err(|e| ManagerError::Options(format!("no Kubernetes configuration: {e}")))?;
        Self::new(config, options)
    }

    /// A manager around an existing client (its requests are not counted unless it was
    /// built with [`RestClientMetricsLayer`]).
    pub fn with_client(client: kube::Client, options: ManagerOptions) -> Manager {
        let cache_cancel = CancellationToken::new();
        let mut cache = match &options.namespace {
            Some(ns) => Cache::namespaced(client.clone(), ns, cache_cancel.clone()),
            None => Cache::new(client.clone(), cache_cancel.clone()),
        };
        cache.set_default_resync(options.sync_period);
        cache.set_default_storage(options.cache_storage);
        let cache = Arc::new(cache);
        let healthz = Probe::default();
        let readyz = Probe::default();
        // the built-in checks: alive while serving; ready once every informer synced
        let _ = healthz.add("ping", healthz::ping());
        let synced = cache.clone();
        let _ = readyz.add(
            "cache-sync",
            healthz::check(move || {
                let ok = synced.synced();
                async move {
                    if ok {
                        Ok(())
                    } else {
                        Err("informers have not synced yet".to_string())
                    }
                }
            }),
        );
        let events_cancel = CancellationToken::new();
        let events = EventBroadcaster::new(client.clone(), events_cancel.clone());
        Manager {
            election_client: client.clone(),
            api: crate::client::Client::new(cache.clone()),
            discovery: crate::discovery::SharedDiscovery::new(client.clone()),
            client,
            cache,
            cache_cancel,
            options,
            phase: Mutex::new(Phase::Pending(Vec::new())),
            healthz,
            readyz,
            extra_handlers: Mutex::new(Vec::new()),
            elected: watch::channel(false).0,
            events,
            events_cancel,
            webhooks: Mutex::new(None),
        }
    }

    /// Serve `webhook` (admission or conversion) at `path` on the manager's HTTPS webhook
    /// server, which starts with the manager (before the controllers) once a webhook is
    /// registered; its readiness shows in the `webhook` readiness check.
    pub fn register_webhook(
        &self,
        path: &str,
        webhook: impl Into<Webhook>,
    ) -> Result<(), ManagerError> {
        if !matches!(
            *self.phase.lock().unwrap_or_else(|e| e.into_inner()),
            Phase::Pending(_)
        ) {
            return Err(ManagerError::State(
                "webhooks are registered before the manager starts",
            ));
        }
        let mut server = self.webhooks.lock().unwrap_or_else(|e| e.into_inner());
        let first = server.is_none();
        let server = server.get_or_insert_with(|| WebhookServer::new(self.options.webhook.clone()));
        server.register(path, webhook)?;
        if first {
            let checker = server.started_checker();
            let _ = self.readyz.add(
                "webhook",
                healthz::check(move || {
                    let checker = checker.clone();
                    async move { checker.check().await.map_err(|e| e.to_string()) }
                }),
            );
            crate::metrics::global().with_registry(|r| server.register_metrics(r));
        }
        Ok(())
    }

    /// The delegating client: reads from the shared cache, writes to the server
    /// (controller-runtime's `GetClient`).
    pub fn client(&self) -> &crate::client::Client {
        &self.api
    }

    /// The underlying API client (every request goes to the server; controller-runtime's
    /// `GetAPIReader` and more).
    pub fn kube_client(&self) -> &kube::Client {
        &self.client
    }

    /// Server discovery, shared by the controllers that act on every resource.
    pub fn discovery(&self) -> &crate::discovery::SharedDiscovery {
        &self.discovery
    }

    /// The shared cache controllers and readers use.
    pub fn cache(&self) -> &Arc<Cache> {
        &self.cache
    }

    /// The options.
    pub fn options(&self) -> &ManagerOptions {
        &self.options
    }

    /// Add a runnable; after [`Manager::start`] it starts at once (leader runnables once
    /// elected).
    pub fn add(&self, runnable: impl Runnable) -> Result<(), ManagerError> {
        let mut phase = self.phase.lock().unwrap_or_else(|e| e.into_inner());
        match &mut *phase {
            Phase::Pending(v) => v.push(Box::new(runnable)),
            Phase::Started(tx) => tx
                .send(Box::new(runnable))
                .map_err(|_| ManagerError::State("the manager is stopping"))?,
            Phase::Stopped => return Err(ManagerError::State("the manager has stopped")),
        }
        Ok(())
    }

    /// Resolves once this manager leads (at start without leader election); never if it
    /// stops first.
    pub fn elected(&self) -> impl Future<Output = ()> + Send + 'static {
        let mut rx = self.elected.subscribe();
        async move {
            if rx.wait_for(|e| *e).await.is_err() {
                futures::future::pending::<()>().await;
            }
        }
    }

    /// Whether this manager leads now.
    pub fn is_elected(&self) -> bool {
        *self.elected.borrow()
    }

    /// Add a liveness check (`/healthz/<name>`).
    pub fn add_healthz_check(&self, name: &str, check: healthz::Check) -> Result<(), ManagerError> {
        self.healthz
            .add(name, check)
            .map_err(|e| ManagerError::Options(e.to_string()))
    }

    /// Add a readiness check (`/readyz/<name>`).
    pub fn add_readyz_check(&self, name: &str, check: healthz::Check) -> Result<(), ManagerError> {
        self.readyz
            .add(name, check)
            .map_err(|e| ManagerError::Options(e.to_string()))
    }

    /// Serve `handler` at `path` on the metrics server (before start; `/metrics` and
    /// duplicates are refused).
    pub fn add_metrics_extra_handler(
        &self,
        path: &str,
        handler: MethodRouter,
    ) -> Result<(), ManagerError> {
        if !path.starts_with('/') {
            return Err(ManagerError::MetricsHandler(
                path.into(),
                "the path must start with '/'",
            ));
        }
        if path.trim_end_matches('/') == "/metrics" {
            return Err(ManagerError::MetricsHandler(
                path.into(),
                "/metrics is the metrics endpoint",
            ));
        }
        if !matches!(
            *self.phase.lock().unwrap_or_else(|e| e.into_inner()),
            Phase::Pending(_)
        ) {
            return Err(ManagerError::MetricsHandler(
                path.into(),
                "the manager has started",
            ));
        }
        let mut handlers = self
            .extra_handlers
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if handlers.iter().any(|(p, _)| p == path) {
            return Err(ManagerError::MetricsHandler(
                path.into(),
                "a handler is registered there already",
            ));
        }
        handlers.push((path.to_string(), handler));
        Ok(())
    }

    /// An event recorder for `controller` (reportingController; the instance is
    /// `<controller>-<hostname>`).
    pub fn event_recorder(&self, controller: &str) -> EventRecorder {
        self.events
            .recorder(controller, &crate::events::reporting_instance(controller))
    }

    async fn bind(
        &self,
        which: &'static str,
        addr: &str,
    ) -> Result<Option<tokio::net::TcpListener>, ManagerError> {
        let Some(sock) = listen_address(addr)? else {
            return Ok(None);
        };
        tokio::net::TcpListener::bind(sock)
            .await
            .map(Some)
            .map_err(|source| ManagerError::Bind {
                server: which,
                addr: addr.to_string(),
                source,
            })
    }

    fn metrics_router(&self) -> Router {
        let mut router = Router::new().route(
            "/metrics",
            get(|| async {
                (
                    [(
                        axum::http::header::CONTENT_TYPE,
                        "application/openmetrics-text; version=1.0.0; charset=utf-8",
                    )],
                    crate::metrics::global().encode(),
                )
            }),
        );
        for (path, handler) in self
            .extra_handlers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain(..)
        {
            router = router.route(&path, handler);
        }
        router
    }

    fn probes_router(&self) -> Router {
        healthz::routes(&self.options.liveness_endpoint_name, self.healthz.clone()).merge(
            healthz::routes(&self.options.readiness_endpoint_name, self.readyz.clone()),
        )
    }

    /// The namespace of the Lease.
    fn lease_namespace(&self) -> String {
        self.options
            .leader_election_namespace
            .clone()
            .or_else(in_cluster_namespace)
            .unwrap_or_else(|| "default".to_string())
    }

    /// Start everything and run until `cancel` fires (graceful stop) or something fails.
    /// Returns the first error, a lost lease, or a stop that overran the grace period.
    pub async fn start(&self, cancel: CancellationToken) -> Result<(), ManagerError> {
        self.start_with(cancel, |_| {}).await
    }

    /// As [`Manager::start`], telling `on_listen` where the servers listen once bound
    /// (useful with port 0).
    pub async fn start_with(
        &self,
        cancel: CancellationToken,
        on_listen: impl FnOnce(Listening),
    ) -> Result<(), ManagerError> {
        let (tx, mut added) = mpsc::unbounded_channel();
        let pending = {
            let mut phase = self.phase.lock().unwrap_or_else(|e| e.into_inner());
            match std::mem::replace(&mut *phase, Phase::Started(tx)) {
                Phase::Pending(v) => v,
                other => {
                    *phase = other;
                    return Err(ManagerError::State("the manager was started already"));
                }
            }
        };
        let result = self.run(cancel, pending, &mut added, on_listen).await;
        *self.phase.lock().unwrap_or_else(|e| e.into_inner()) = Phase::Stopped;
        self.elected.send_replace(false);
        result
    }

    async fn run(
        &self,
        cancel: CancellationToken,
        pending: Vec<Box<dyn Runnable>>,
        added: &mut mpsc::UnboundedReceiver<Box<dyn Runnable>>,
        on_listen: impl FnOnce(Listening),
    ) -> Result<(), ManagerError> {
        let servers_cancel = CancellationToken::new();
        let others_cancel = CancellationToken::new();
        let leader_cancel = CancellationToken::new();
        let mut servers = JoinSet::new();
        let mut others = Group::default();
        let mut leaders = Group::default();
        let mut waiting_leaders: Vec<Box<dyn Runnable>> = Vec::new();

        // 1. servers, bound before anything else starts; one server when the metrics
        // and probe addresses are the same (kube-controller-manager's secure port)
        let shared = listen_address(&self.options.metrics_bind_address)?.is_some()
            && listen_address(&self.options.metrics_bind_address)?
                == listen_address(&self.options.health_probe_bind_address)?;
        let metrics = self
            .bind("metrics", &self.options.metrics_bind_address)
            .await?;
        let probes = if shared {
            None
        } else {
            self.bind("health probe", &self.options.health_probe_bind_address)
                .await?
        };
        let metrics_addr = metrics.as_ref().and_then(|l| l.local_addr().ok());
        let listening = Listening {
            metrics: metrics_addr,
            metrics_secure: self.options.metrics_server.secure_serving,
            health_probes: if shared {
                metrics_addr
            } else {
                probes.as_ref().and_then(|l| l.local_addr().ok())
            },
            webhook: None,
        };
        let (mut metrics_router, probes_router) = if shared {
            (
                self.metrics_router().merge(self.probes_router()),
                Router::new(),
            )
        } else {
            (self.metrics_router(), self.probes_router())
        };
        let serving = &self.options.metrics_server;
        if let Some(provider) = &serving.filter_provider {
            let filter = provider
                .provide(&self.client)
                .map_err(ManagerError::Filter)?;
            metrics_router = filter.apply(metrics_router);
        }
        let metrics = match metrics {
            Some(listener) if serving.secure_serving => {
                let (acceptor, watcher) = crate::serving::acceptor(&serving.tls)?;
                tracing::info!(server = "metrics", addr = ?listener.local_addr().ok(), "serving securely");
                let stop = servers_cancel.clone();
                servers.spawn(crate::serving::serve(
                    listener,
                    acceptor,
                    watcher,
                    metrics_router.clone(),
                    stop,
                ));
                None
            }
            other => other,
        };
        for (name, listener, router) in [
            ("metrics", metrics, metrics_router),
            ("health probe", probes, probes_router),
        ] {
            let Some(listener) = listener else { continue };
            tracing::info!(server = name, addr = ?listener.local_addr().ok(), "serving");
            let stop = servers_cancel.clone();
            servers.spawn(async move {
                let served = axum::serve(listener, router)
                    .with_graceful_shutdown(async move { stop.cancelled().await })
                    .await;
                if let Err(e) = served {
                    tracing::error!(server = name, error = %e, "server stopped");
                }
            });
        }
        let webhooks = self
            .webhooks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        let mut listening = listening;
        if let Some(server) = webhooks {
            let bound = server.bind().await?;
            listening.webhook = Some(bound.local_addr());
            tracing::info!(server = "webhook", addr = %bound.local_addr(), "serving");
            let stop = servers_cancel.clone();
            servers.spawn(async move {
                if let Err(e) = bound.serve(stop).await {
                    tracing::error!(server = "webhook", error = %e, "server stopped");
                }
            });
        }
        on_listen(listening);

        // 2. leader election (or immediate leadership)
        let (lost_tx, mut lost_rx) = mpsc::channel::<()>(1);
        let mut leadership = None;
        let elector = if self.options.leader_election {
            let mut cfg =
                LeaderElectionConfig::new(self.lease_namespace(), &self.options.leader_election_id);
            cfg.lease_duration = self.options.lease_duration;
            cfg.renew_deadline = self.options.renew_deadline;
            cfg.retry_period = self.options.retry_period;
            cfg.release_on_cancel = self.options.leader_election_release_on_cancel;
            Some(
                LeaderElector::new(self.election_client.clone(), cfg)
                    .map_err(|e| ManagerError::Options(e.to_string()))?,
            )
        } else {
            self.elected.send_replace(true);
            None
        };
        let campaign_cancel = cancel.child_token();
        let mut campaign: BoxFuture<'static, _> = match &elector {
            Some(e) => {
                let e = e.clone();
                let stop = campaign_cancel.clone();
                async move { e.acquire(&stop).await }.boxed()
            }
            None => futures::future::pending().boxed(),
        };

        // 3. the initial runnables
        for r in pending {
            self.dispatch(
                r,
                &mut others,
                &others_cancel,
                &mut leaders,
                &leader_cancel,
                &mut waiting_leaders,
            );
        }

        // 4. run until stopped, failed or deposed
        let mut error: Option<ManagerError> = None;
        loop {
            tokio::select! {
                _ = cancel.cancelled() => {
                    tracing::info!("stopping: shutdown requested");
                    break;
                }
                Some(r) = added.recv() => {
                    self.dispatch(r, &mut others, &others_cancel, &mut leaders, &leader_cancel, &mut waiting_leaders);
                }
                won = &mut campaign => {
                    campaign = futures::future::pending().boxed();
                    let Some(lead) = won else { continue };
                    tracing::info!(lease = %self.options.leader_election_id, "elected leader; starting leader runnables");
                    crate::metrics::global().set_leader(&self.options.leader_election_id, true);
                    let lost = lead.lost();
                    let tx = lost_tx.clone();
                    tokio::spawn(async move {
                        lost.cancelled().await;
                        let _ = tx.send(()).await;
                    });
                    leadership = Some(lead);
                    self.elected.send_replace(true);
                    for r in waiting_leaders.drain(..) {
                        leaders.spawn(r, &leader_cancel);
                    }
                }
                Some(()) = lost_rx.recv() => {
                    // stop acting as leader before anything else: another process may take
                    // the lease once it expires
                    tracing::error!(lease = %self.options.leader_election_id, "leader election lost; stopping leader runnables");
                    leader_cancel.cancel();
                    crate::metrics::global().set_leader(&self.options.leader_election_id, false);
                    self.elected.send_replace(false);
                    error = Some(ManagerError::LeaderElectionLost);
                    break;
                }
                Some(failed) = others.next_failure() => {
                    error = Some(failed);
                    break;
                }
                Some(failed) = leaders.next_failure() => {
                    error = Some(failed);
                    break;
                }
            }
        }

        // 5. stop, in reverse order, within the grace period
        campaign_cancel.cancel();
        drop(campaign);
        let deadline = tokio::time::Instant::now() + self.options.graceful_shutdown_timeout;
        let mut timed_out = false;
        leader_cancel.cancel();
        timed_out |= !leaders.wait(deadline, &mut error).await;
        if let Some(lead) = leadership.take() {
            if !timed_out {
                lead.release().await;
            }
            crate::metrics::global().set_leader(&self.options.leader_election_id, false);
        }
        self.elected.send_replace(false);
        others_cancel.cancel();
        timed_out |= !others.wait(deadline, &mut error).await;
        self.cache_cancel.cancel();
        self.events_cancel.cancel();
        servers_cancel.cancel();
        let servers_done = async { while servers.join_next().await.is_some() {} };
        if tokio::time::timeout_at(deadline, servers_done)
            .await
            .is_err()
        {
            timed_out = true;
        }
        if timed_out {
            tracing::error!(timeout = ?self.options.graceful_shutdown_timeout, "runnables did not stop within the grace period");
            servers.abort_all();
            return Err(error.unwrap_or(ManagerError::ShutdownTimeout(
                self.options.graceful_shutdown_timeout,
            )));
        }
        tracing::info!("stopped");
        match error {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    fn dispatch(
        &self,
        r: Box<dyn Runnable>,
        others: &mut Group,
        others_cancel: &CancellationToken,
        leaders: &mut Group,
        leader_cancel: &CancellationToken,
        waiting: &mut Vec<Box<dyn Runnable>>,
    ) {
        if !r.needs_leader_election() {
            others.spawn(r, others_cancel);
        } else if self.is_elected() {
            leaders.spawn(r, leader_cancel);
        } else {
            tracing::debug!(runnable = %r.name(), "waiting for leadership");
            waiting.push(r);
        }
    }
}

/// Where the manager's servers listen (`None`: disabled).
#[derive(Clone, Copy, Debug, Default)]
pub struct Listening {
    /// The metrics server.
    pub metrics: Option<SocketAddr>,
    /// Whether the metrics server serves HTTPS.
    pub metrics_secure: bool,
    /// The health probe server.
    pub health_probes: Option<SocketAddr>,
    /// The webhook server.
    pub webhook: Option<SocketAddr>,
}

/// Runnables started together and stopped together.
#[derive(Default)]
struct Group {
    tasks: JoinSet<(String, Result<(), BoxError>)>,
    ids: HashMap<tokio::task::Id, String>,
}

impl Group {
    fn spawn(&mut self, r: Box<dyn Runnable>, cancel: &CancellationToken) {
        let name = r.name();
        tracing::debug!(runnable = %name, "starting");
        let token = cancel.clone();
        let label = name.clone();
        let handle = self.tasks.spawn(async move {
            let result = r.start(token).await;
            (label, result)
        });
        self.ids.insert(handle.id(), name);
    }

    /// The next runnable that fails (a runnable that returns `Ok` early simply ends).
    async fn next_failure(&mut self) -> Option<ManagerError> {
        loop {
            let joined = self.tasks.join_next_with_id().await?;
            match joined {
                Ok((id, (name, Ok(())))) => {
                    self.ids.remove(&id);
                    tracing::debug!(runnable = %name, "finished");
                }
                Ok((id, (name, Err(source)))) => {
                    self.ids.remove(&id);
                    tracing::error!(runnable = %name, error = %source, "runnable failed; stopping the manager");
                    return Some(ManagerError::Runnable { name, source });
                }
                Err(e) => {
                    let name = self.ids.remove(&e.id()).unwrap_or_default();
                    tracing::error!(runnable = %name, "runnable panicked; stopping the manager");
                    return Some(ManagerError::Panicked(name));
                }
            }
        }
    }

    /// Wait for every task until `deadline`; false if some were still running (they are
    /// aborted). The first failure is kept in `error` unless one is there already.
    async fn wait(
        &mut self,
        deadline: tokio::time::Instant,
        error: &mut Option<ManagerError>,
    ) -> bool {
        loop {
            match tokio::time::timeout_at(deadline, self.next_failure()).await {
                Ok(None) => return true,
                Ok(Some(e)) => {
                    error.get_or_insert(e);
                }
                Err(_) => {
                    let names: Vec<String> = self.ids.values().cloned().collect();
                    tracing::error!(runnables = ?names, "still running at the end of the grace period");
                    self.tasks.abort_all();
                    return false;
                }
            }
        }
    }
}

/// Exit status after a graceful stop.
pub const EXIT_OK: i32 = 0;
/// Exit status when a runnable failed or the manager could not start.
pub const EXIT_FAILED: i32 = 1;
/// Exit status when the stop overran the grace period (work was cut short).
pub const EXIT_SHUTDOWN_TIMEOUT: i32 = 2;
/// Exit status when leadership was lost.
pub const EXIT_LEADERSHIP_LOST: i32 = 3;

/// The process exit status that says how [`Manager::start`] ended.
pub fn exit_code(result: &Result<(), ManagerError>) -> i32 {
    match result {
        Ok(()) => EXIT_OK,
        Err(e) => e.exit_code(),
    }
}

impl ManagerError {
    /// The process exit status for this error ([`EXIT_SHUTDOWN_TIMEOUT`],
    /// [`EXIT_LEADERSHIP_LOST`] or [`EXIT_FAILED`]).
    pub fn exit_code(&self) -> i32 {
        match self {
            ManagerError::ShutdownTimeout(_) => EXIT_SHUTDOWN_TIMEOUT,
            ManagerError::LeaderElectionLost => EXIT_LEADERSHIP_LOST,
            _ => EXIT_FAILED,
        }
    }
}

/// A token cancelled by the first SIGTERM or SIGINT; a second one exits the process at
/// once with status 1 (controller-runtime's `SetupSignalHandler`).
pub fn shutdown_signal() -> CancellationToken {
    let token = CancellationToken::new();
    let first = token.clone();
    tokio::spawn(async move {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            let (Ok(mut term), Ok(mut int)) = (
                signal(SignalKind::terminate()),
                signal(SignalKind::interrupt()),
            ) else {
                tracing::error!("cannot install signal handlers");
                return;
            };
            let mut next = async || {
                tokio::select! {
                    _ = term.recv() => "SIGTERM",
                    _ = int.recv() => "SIGINT",
                }
            };
            let sig = next().await;
            tracing::info!(
                signal = sig,
                "shutting down gracefully; signal again to exit at once"
            );
            first.cancel();
            let sig = next().await;
            tracing::warn!(signal = sig, "second signal: exiting at once");
            std::process::exit(1);
        }
        #[cfg(not(unix))]
        {
            if tokio::signal::ctrl_c().await.is_ok() {
                first.cancel();
            }
            if tokio::signal::ctrl_c().await.is_ok() {
                std::process::exit(1);
            }
        }
    });
    token
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_addresses_follow_go_conventions() {
        assert_eq!(listen_address("0").ok(), Some(None));
        assert_eq!(listen_address("").ok(), Some(None));
        assert_eq!(
            listen_address(":8080").ok().flatten(),
            Some(SocketAddr::from(([0, 0, 0, 0], 8080)))
        );
        assert_eq!(
            listen_address("127.0.0.1:0").ok().flatten(),
            Some(SocketAddr::from(([127, 0, 0, 1], 0)))
        );
        assert!(listen_address("nope").is_err());
    }
}
