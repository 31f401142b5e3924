//! Each controller's identity: the root client, or its own service account
//! (`--use-service-account-credentials`).
//!
//! After kube-controller-manager's client builders
//! (`staging/src/k8s.io/controller-manager/pkg/clientbuilder`): without
//! `--use-service-account-credentials` every controller talks to the API server with the
//! controller manager's own credentials (`SimpleControllerClientBuilder`); with it, each
//! controller gets a client authenticated as `system:serviceaccount:kube-system:<name>`
//! (`DynamicControllerClientBuilder`): the ServiceAccount is created in `kube-system` when
//! missing (and the namespace, tolerating a refusal), and its token is a TokenRequest
//! (`serviceaccounts/<name>/token`, `expirationSeconds` 3600) renewed once 80 % of its
//! lifetime has passed (a lifetime under ten minutes counts as ten minutes: clock skew).
//! A failed TokenRequest is retried with upstream's backoff (0.5 s doubling, four
//! attempts); a request sent while no token could be had goes without one and fails
//! with the server's 401, so the controller retries it as any failed write.
//!
//! The shared informers keep the root client (upstream's `shared-informers` client), so
//! a controller reads from the one cache and writes — and reads what it does not cache —
//! as itself: [`ControllerClients`] pairs the shared cache with the controller's API
//! client ([`coxswain_runtime::client::Client::with_kube_client`]), and its events are
//! written with the same identity (each upstream controller records events through its
//! own client). The leader election Lease and server discovery stay on the root client,
//! as in kube-controller-manager.
//!
//! Controllers are written against [`ClusterAccess`], which both the manager (the root
//! identity, what tests and embedders use) and [`ControllerClients`] implement.
//!
//! A request of a controller's service account that the server refuses (401 or 403) is
//! logged with the account's name and kept in [`refusals`]: a role missing a rule shows
//! there (the test that runs every controller with only the bootstrap roles reads it).

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use coxswain_runtime::cache::Cache;
use coxswain_runtime::client::Client;
use coxswain_runtime::discovery::SharedDiscovery;
use coxswain_runtime::events::{reporting_instance, EventBroadcaster, EventRecorder};
use coxswain_runtime::manager::Manager;
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, PostParams};
use tokio_util::sync::CancellationToken;

/// The namespace of the controllers' service accounts (upstream
/// `metav1.NamespaceSystem`).
pub const SERVICE_ACCOUNT_NAMESPACE: &str = "kube-system";

/// Lifetime asked of each token (upstream `defaultExpirationSeconds`).
pub const DEFAULT_EXPIRATION_SECONDS: i64 = 3600;

/// Share of the lifetime left when the token is renewed (upstream
/// `defaultLeewayPercent`).
pub const DEFAULT_LEEWAY_PERCENT: u32 = 20;

/// What a controller talks to the cluster with: the shared cache and discovery, and
/// its own API client, delegating client and event recorders.
pub trait ClusterAccess {
    /// The shared informer cache (its informers use the root client).
    fn cache(&self) -> &Arc<Cache>;
    /// The controller's API client: every request goes to the server as the controller.
    fn kube_client(&self) -> &kube::Client;
    /// Reads from the shared cache, writes (and uncached reads) as the controller.
    fn client(&self) -> Client;
    /// An event recorder writing as the controller.
    fn event_recorder(&self, controller: &str) -> EventRecorder;
    /// Server discovery (shared, root client).
    fn discovery(&self) -> &SharedDiscovery;
}

impl ClusterAccess for Manager {
    fn cache(&self) -> &Arc<Cache> {
        Manager::cache(self)
    }

    fn kube_client(&self) -> &kube::Client {
        Manager::kube_client(self)
    }

    fn client(&self) -> Client {
        Manager::client(self).clone()
    }

    fn event_recorder(&self, controller: &str) -> EventRecorder {
        Manager::event_recorder(self, controller)
    }

    fn discovery(&self) -> &SharedDiscovery {
        Manager::discovery(self)
    }
}

/// One service account's clients, shared by the controllers that run as it.
#[derive(Clone)]
struct Identity {
    kube: kube::Client,
    events: EventBroadcaster,
}

/// The clients a controller constructor gets from
/// [`crate::registry::ControllerContext::clients`].
pub struct ControllerClients<'a> {
    manager: &'a Manager,
    identity: Option<(Identity, Client)>,
}

impl ControllerClients<'_> {
    /// Whether the controller runs as its own service account.
    pub fn is_service_account(&self) -> bool {
        self.identity.is_some()
    }
}

impl ClusterAccess for ControllerClients<'_> {
    fn cache(&self) -> &Arc<Cache> {
        self.manager.cache()
    }

    fn kube_client(&self) -> &kube::Client {
        match &self.identity {
            Some((id, _)) => &id.kube,
            None => self.manager.kube_client(),
        }
    }

    fn client(&self) -> Client {
        match &self.identity {
            Some((_, client)) => client.clone(),
            None => self.manager.client().clone(),
        }
    }

    fn event_recorder(&self, controller: &str) -> EventRecorder {
        match &self.identity {
            Some((id, _)) => id
                .events
                .recorder(controller, &reporting_instance(controller)),
            None => self.manager.event_recorder(controller),
        }
    }

    fn discovery(&self) -> &SharedDiscovery {
        self.manager.discovery()
    }
}

/// Hands each controller its clients: the root identity, or (with
/// `--use-service-account-credentials`) a service account per controller.
#[derive(Clone, Default)]
pub struct ClientBuilder {
    dynamic: Option<Arc<Dynamic>>,
}

impl std::fmt::Debug for ClientBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientBuilder")
            .field("service_accounts", &self.dynamic.is_some())
            .finish()
    }
}

struct Dynamic {
    /// The root configuration without its credentials (upstream
    /// `AnonymousClientConfig`), with the controller manager's User-Agent.
    config: kube::Config,
    /// Creates the service accounts and their tokens.
    root: kube::Client,
    qps: f32,
    burst: u32,
    /// Stops the identities' event writers.
    cancel: CancellationToken,
    identities: Mutex<HashMap<String, Identity>>,
}

impl ClientBuilder {
    /// Every controller uses the manager's own client (upstream
    /// `SimpleControllerClientBuilder`).
    pub fn root() -> Self {
        ClientBuilder { dynamic: None }
    }

    /// Every controller runs as `system:serviceaccount:kube-system:<name>`, with tokens
    /// from TokenRequests `root` makes; `config` is the root configuration (its
    /// credentials are dropped, its server, CA and User-Agent kept), `qps`/`burst` the
    /// rate limit of each controller's client (`--kube-api-qps`/`--kube-api-burst`, as
    /// each upstream clientset has its own); `cancel` stops the event writers.
    pub fn service_accounts(
        config: &kube::Config,
        root: kube::Client,
        qps: f32,
        burst: u32,
        cancel: CancellationToken,
    ) -> Self {
        let mut config = config.clone();
        config.auth_info = kube::config::AuthInfo::default();
        ClientBuilder {
            dynamic: Some(Arc::new(Dynamic {
                config,
                root,
                qps,
                burst,
                cancel,
                identities: Mutex::new(HashMap::new()),
            })),
        }
    }

    /// Whether controllers run as their own service accounts.
    pub fn uses_service_accounts(&self) -> bool {
        self.dynamic.is_some()
    }

    /// The clients of a controller whose service account is `service_account` (upstream
    /// `ClientOrDie(name)`); the root identity without service account credentials.
    pub fn clients<'a>(
        &self,
        manager: &'a Manager,
        service_account: &str,
    ) -> Result<ControllerClients<'a>, String> {
        let Some(dynamic) = &self.dynamic else {
            return Ok(ControllerClients {
                manager,
                identity: None,
            });
        };
        let identity = dynamic.identity(service_account)?;
        let client = manager
            .client()
            .clone()
            .with_kube_client(identity.kube.clone());
        Ok(ControllerClients {
            manager,
            identity: Some((identity, client)),
        })
    }
}

impl Dynamic {
    fn identity(&self, name: &str) -> Result<Identity, String> {
        let mut identities = self.identities.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(id) = identities.get(name) {
            return Ok(id.clone());
        }
        let mut config = self.config.clone();
        // upstream restclient.AddUserAgent(config, username)
        let username = service_account_username(SERVICE_ACCOUNT_NAMESPACE, name);
        let base = config
            .headers
            .iter()
            .find(|(h, _)| h == http::header::USER_AGENT)
            .and_then(|(_, v)| v.to_str().ok().map(str::to_string))
            .unwrap_or_else(|| {
                coxswain_runtime::client::user_agent(&coxswain_runtime::client::program_name())
            });
        coxswain_runtime::client::set_user_agent(&mut config, &format!("{base}/{username}"));
        let source = Arc::new(TokenSource {
            root: self.root.clone(),
            namespace: SERVICE_ACCOUNT_NAMESPACE.to_string(),
            name: name.to_string(),
            expiration_seconds: DEFAULT_EXPIRATION_SECONDS,
            leeway_percent: DEFAULT_LEEWAY_PERCENT,
            cached: Mutex::new(None),
            fetching: tokio::sync::Mutex::new(()),
        });
        // as upstream's Config(): the account exists from the controller's start (and
        // its first token is fetched then), not from its first request
        let eager = source.clone();
        let stop = self.cancel.clone();
        tokio::spawn(async move {
            tokio::select! {
                result = eager.token() => {
                    if let Err(e) = result {
                        tracing::warn!(error = %e, "getting the first service account token");
                    }
                }
                _ = stop.cancelled() => {}
            }
        });
        let host = coxswain_runtime::metrics::RestClientMetricsLayer::host_of(&config.cluster_url);
        let kube = kube::client::ClientBuilder::try_from(config)
            .map_err(|e| format!("building the client of service account {name}: {e}"))?
            .with_layer(&BearerTokenLayer { source })
            .with_layer(&RefusalLayer {
                service_account: Arc::from(name),
            })
            .with_layer(&coxswain_runtime::metrics::RestClientMetricsLayer::new(
                &host,
            ))
            .with_layer(&coxswain_runtime::client::RateLimitLayer::new(
                self.qps, self.burst,
            ))
            .build();
        let events = EventBroadcaster::new(kube.clone(), self.cancel.clone());
        let id = Identity { kube, events };
        identities.insert(name.to_string(), id.clone());
        Ok(id)
    }
}

/// `system:serviceaccount:<namespace>:<name>` (upstream `serviceaccount.MakeUsername`).
pub fn service_account_username(namespace: &str, name: &str) -> String {
    format!("system:serviceaccount:{namespace}:{name}")
}

/// When a token answered at `now` with `expiration` (its `status.expirationTimestamp`)
/// is renewed: `leeway_percent` of its lifetime before it expires, the lifetime taken
/// as at least ten minutes (upstream `tokenSourceImpl.Token`).
pub fn renew_after(now: Timestamp, expiration: Timestamp, leeway_percent: u32) -> Duration {
    let lifetime = Duration::try_from(expiration.duration_since(now))
        .unwrap_or_default()
        .max(Duration::from_secs(600));
    let leeway = lifetime.mul_f64(f64::from(leeway_percent.min(100)) / 100.0);
    lifetime - leeway
}

/// A service account's tokens, fetched when needed and kept until their renewal time.
struct TokenSource {
    root: kube::Client,
    namespace: String,
    name: String,
    expiration_seconds: i64,
    leeway_percent: u32,
    cached: Mutex<Option<(String, Instant)>>,
    /// One TokenRequest at a time.
    fetching: tokio::sync::Mutex<()>,
}

impl TokenSource {
    /// The cached token while it is fresh.
    fn fresh(&self) -> Option<String> {
        let cached = self.cached.lock().unwrap_or_else(|e| e.into_inner());
        cached
            .as_ref()
            .filter(|(_, renew)| Instant::now() < *renew)
            .map(|(t, _)| t.clone())
    }

    /// A fresh token, fetched when the cached one is due for renewal.
    async fn token(self: Arc<Self>) -> Result<String, String> {
        if let Some(t) = self.fresh() {
            return Ok(t);
        }
        let _one = self.fetching.lock().await;
        if let Some(t) = self.fresh() {
            return Ok(t);
        }
        // upstream wait.Backoff{Duration: 500ms, Factor: 2, Steps: 4}
        let mut delay = Duration::from_millis(500);
        let mut last = String::new();
        for attempt in 0..4 {
            if attempt > 0 {
                tokio::time::sleep(delay).await;
                delay *= 2;
            }
            match self.request().await {
                Ok((token, renew)) => {
                    *self.cached.lock().unwrap_or_else(|e| e.into_inner()) =
                        Some((token.clone(), Instant::now() + renew));
                    return Ok(token);
                }
                Err(e) => {
                    tracing::info!(
                        namespace = %self.namespace,
                        service_account = %self.name,
                        error = %e,
                        "get token failed"
                    );
                    last = e;
                }
            }
        }
        Err(format!(
            "failed to get token for {}/{}: {last}",
            self.namespace, self.name
        ))
    }

    /// Ensure the account, then ask for a token: the token and when to renew it.
    async fn request(&self) -> Result<(String, Duration), String> {
        get_or_create_service_account(&self.root, &self.namespace, &self.name)
            .await
            .map_err(|e| format!("get or create service account failed: {e}"))?;
        let api: Api<ServiceAccount> = Api::namespaced(self.root.clone(), &self.namespace);
        let request = TokenRequest {
            spec: Some(TokenRequestSpec {
                expiration_seconds: Some(self.expiration_seconds),
                ..TokenRequestSpec::default()
            }),
            ..TokenRequest::default()
        };
        let answer = api
            .create_token_request(&self.name, &PostParams::default(), &request)
            .await
            .map_err(|e| e.to_string())?;
        let Some(status) = answer.status else {
            return Err("the TokenRequest has no status".to_string());
        };
        if answer
            .spec
            .as_ref()
            .and_then(|s| s.expiration_seconds)
            .is_none()
        {
            return Err("nil pointer of expiration in token request".to_string());
        }
        let (Some(token), Some(expiration)) = (status.token, status.expiration_timestamp) else {
            return Err("the TokenRequest's status has no token or expiry".to_string());
        };
        let renew = renew_after(Timestamp::now(), expiration.0, self.leeway_percent);
        Ok((token, renew))
    }
}

/// Upstream `getOrCreateServiceAccount`: the account, created (with its namespace when
/// that is missing, tolerating a refusal) if it does not exist.
async fn get_or_create_service_account(
    root: &kube::Client,
    namespace: &str,
    name: &str,
) -> Result<ServiceAccount, kube::Error> {
    let api: Api<ServiceAccount> = Api::namespaced(root.clone(), namespace);
    match api.get(name).await {
        Ok(sa) => return Ok(sa),
        Err(kube::Error::Api(s)) if s.code == 404 => {}
        Err(e) => return Err(e),
    }
    let namespaces: Api<Namespace> = Api::all(root.clone());
    if let Err(kube::Error::Api(s)) = namespaces.get(namespace).await {
        if s.code == 404 {
            let ns = Namespace {
                metadata: ObjectMeta {
                    name: Some(namespace.to_string()),
                    ..ObjectMeta::default()
                },
                ..Namespace::default()
            };
            match namespaces.create(&PostParams::default(), &ns).await {
                Ok(_) => {}
                Err(kube::Error::Api(s)) if s.code == 409 => {}
                Err(e) => tracing::info!(namespace, error = %e, "create non-exist namespace"),
            }
        }
    }
    let sa = ServiceAccount {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            namespace: Some(namespace.to_string()),
            ..ObjectMeta::default()
        },
        ..ServiceAccount::default()
    };
    match api.create(&PostParams::default(), &sa).await {
        Ok(sa) => Ok(sa),
        // racing another start: read what won
        Err(kube::Error::Api(s)) if s.code == 409 => api.get(name).await,
        Err(e) => Err(e),
    }
}

/// Puts the service account's bearer token on every request.
#[derive(Clone)]
struct BearerTokenLayer {
    source: Arc<TokenSource>,
}

impl<S> tower::Layer<S> for BearerTokenLayer {
    type Service = BearerToken<S>;
    fn layer(&self, inner: S) -> Self::Service {
        BearerToken {
            inner,
            source: self.source.clone(),
            pending: None,
            ready: None,
        }
    }
}

type TokenFuture = Pin<Box<dyn Future<Output = Result<String, String>> + Send>>;

/// The service of [`BearerTokenLayer`]: `poll_ready` obtains a fresh token (a
/// TokenRequest when the cached one is due), `call` sets `Authorization` with it.
struct BearerToken<S> {
    inner: S,
    source: Arc<TokenSource>,
    pending: Option<TokenFuture>,
    /// The token for the next call; `Some(None)` when none could be had.
    ready: Option<Option<String>>,
}

impl<S, B> tower::Service<http::Request<B>> for BearerToken<S>
where
    S: tower::Service<http::Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        if self.ready.is_none() {
            if let Some(t) = self.source.fresh() {
                self.ready = Some(Some(t));
            } else {
                let pending = self
                    .pending
                    .get_or_insert_with(|| Box::pin(self.source.clone().token()));
                let result = std::task::ready!(pending.as_mut().poll(cx));
                self.pending = None;
                self.ready = Some(match result {
                    Ok(t) => Some(t),
                    Err(e) => {
                        tracing::warn!(error = %e, "sending without a service account token");
                        None
                    }
                });
            }
        }
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: http::Request<B>) -> Self::Future {
        if let Some(Some(token)) = self.ready.take() {
            if let Ok(value) = http::HeaderValue::from_str(&format!("Bearer {token}")) {
                req.headers_mut().insert(http::header::AUTHORIZATION, value);
            }
        }
        self.inner.call(req)
    }
}

/// A request of a controller's service account the server refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// The service account (in `kube-system`).
    pub service_account: String,
    /// 401 or 403.
    pub code: u16,
    /// The request's method.
    pub method: String,
    /// The request's path and query.
    pub path: String,
}

static REFUSALS: Mutex<Vec<Refusal>> = Mutex::new(Vec::new());

/// The refusals (401, 403) the controllers' service accounts met in this process, oldest
/// first (the last 1,000).
pub fn refusals() -> Vec<Refusal> {
    REFUSALS.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

fn record_refusal(r: Refusal) {
    tracing::warn!(
        service_account = %r.service_account,
        code = r.code,
        method = %r.method,
        path = %r.path,
        "the API server refused a request of a controller's service account"
    );
    let mut all = REFUSALS.lock().unwrap_or_else(|e| e.into_inner());
    if all.len() >= 1000 {
        all.remove(0);
    }
    all.push(r);
}

/// Records the refused requests of one service account.
#[derive(Clone)]
struct RefusalLayer {
    service_account: Arc<str>,
}

impl<S> tower::Layer<S> for RefusalLayer {
    type Service = RefusalService<S>;
    fn layer(&self, inner: S) -> Self::Service {
        RefusalService {
            inner,
            service_account: self.service_account.clone(),
        }
    }
}

/// The service of [`RefusalLayer`].
struct RefusalService<S> {
    inner: S,
    service_account: Arc<str>,
}

impl<S, ReqB, ResB> tower::Service<http::Request<ReqB>> for RefusalService<S>
where
    S: tower::Service<http::Request<ReqB>, Response = http::Response<ResB>>,
    S::Future: Send + 'static,
    S::Error: 'static,
    ResB: 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<ReqB>) -> Self::Future {
        let method = req.method().to_string();
        let path = req
            .uri()
            .path_and_query()
            .map(|p| p.to_string())
            .unwrap_or_default();
        let service_account = self.service_account.clone();
        let answer = self.inner.call(req);
        Box::pin(async move {
            let answer = answer.await;
            if let Ok(response) = &answer {
                let code = response.status().as_u16();
                if code == 401 || code == 403 {
                    record_refusal(Refusal {
                        service_account: service_account.to_string(),
                        code,
                        method,
                        path,
                    });
                }
            }
            answer
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::jiff::SignedDuration;

    // After upstream TestDynamicClientBuilder's expiry arithmetic: renewal at 80 % of
    // the lifetime, a lifetime under ten minutes pinned to ten minutes.
    #[test]
    fn tokens_are_renewed_at_eighty_percent_of_their_lifetime() {
        let now: Timestamp = "2026-01-01T00:00:00Z".parse().expect("a time");
        let hour = now + SignedDuration::from_secs(3600);
        assert_eq!(renew_after(now, hour, 20), Duration::from_secs(2880));
        // 5 minutes (or an expiry in the past) count as 10 minutes
        let short = now + SignedDuration::from_secs(300);
        assert_eq!(renew_after(now, short, 20), Duration::from_secs(480));
        let past = now - SignedDuration::from_secs(300);
        assert_eq!(renew_after(now, past, 20), Duration::from_secs(480));
        assert_eq!(renew_after(now, hour, 0), Duration::from_secs(3600));
    }

    #[test]
    fn usernames_follow_upstream() {
        assert_eq!(
            service_account_username("kube-system", "deployment-controller"),
            "system:serviceaccount:kube-system:deployment-controller"
        );
    }

    /// A root client whose every request fails with a 500 (counted in `calls`).
    fn failing_root(calls: Arc<std::sync::atomic::AtomicUsize>) -> kube::Client {
        let svc = tower::service_fn(move |_req: http::Request<kube::client::Body>| {
            calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            async {
                Ok::<_, std::convert::Infallible>(
                    http::Response::builder()
                        .status(500)
                        .body(http_body_util::Full::new(bytes::Bytes::from_static(
                            br#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"boom","reason":"InternalError","code":500}"#,
                        )))
                        .expect("a response"),
                )
            }
        });
        kube::Client::new(svc, "default")
    }

    fn source(root: kube::Client) -> Arc<TokenSource> {
        Arc::new(TokenSource {
            root,
            namespace: "kube-system".into(),
            name: "deployment-controller".into(),
            expiration_seconds: DEFAULT_EXPIRATION_SECONDS,
            leeway_percent: DEFAULT_LEEWAY_PERCENT,
            cached: Mutex::new(None),
            fetching: tokio::sync::Mutex::new(()),
        })
    }

    /// Sends `n` requests through the layer; the Authorization header each carried.
    async fn authorizations(source: Arc<TokenSource>, n: usize) -> Vec<Option<String>> {
        use tower::{Layer, Service, ServiceExt};
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = seen.clone();
        let inner = tower::service_fn(move |req: http::Request<()>| {
            let auth = req
                .headers()
                .get(http::header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string);
            record.lock().expect("lock").push(auth);
            async { Ok::<_, std::convert::Infallible>(()) }
        });
        let mut svc = BearerTokenLayer { source }.layer(inner);
        for _ in 0..n {
            svc.ready()
                .await
                .expect("ready")
                .call(http::Request::new(()))
                .await
                .expect("answered");
        }
        let out = seen.lock().expect("lock").clone();
        out
    }

    #[tokio::test]
    async fn a_fresh_token_is_sent_without_a_token_request() {
        let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let s = source(failing_root(calls.clone()));
        *s.cached.lock().expect("lock") =
            Some(("abc".into(), Instant::now() + Duration::from_secs(60)));
        let seen = authorizations(s, 2).await;
        assert_eq!(seen, vec![Some("Bearer abc".to_string()); 2]);
        assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 0);
    }

    // a token due for renewal is requested again (upstream's four attempts with backoff);
    // when none can be had the request goes without one (the server answers 401); the
    // backoff between attempts (0.5 + 1 + 2 s) is really waited
    #[tokio::test]
    async fn a_stale_token_is_renewed_and_a_failure_sends_none() {
        let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let s = source(failing_root(calls.clone()));
        *s.cached.lock().expect("lock") = Some(("old".into(), Instant::now()));
        let seen = authorizations(s.clone(), 1).await;
        assert_eq!(seen, vec![None]);
        // each attempt reads the service account first (and fails there)
        assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 4);
        let err = s.clone().token().await.expect_err("no token");
        assert!(
            err.starts_with("failed to get token for kube-system/deployment-controller"),
            "{err}"
        );
    }
}
