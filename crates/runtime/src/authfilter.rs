//! Delegated authentication and authorization of the manager's metrics server.
//!
//! A metrics endpoint open to anyone who reaches the port leaks what the controllers
//! see; kube-controller-manager and controller-runtime
//! (`metrics/filters.WithAuthenticationAndAuthorization`) therefore ask the API server
//! who a caller is and what it may do. [`DelegatingAuth`] does the same:
//!
//! - **authentication**: a verified client certificate (when the server asks for one,
//!   see [`crate::serving::SecureServing::client_ca_file`]) is the user of its common
//!   name in the groups of its organizations; otherwise a bearer token is sent to the API
//!   server in an `authentication.k8s.io/v1` `TokenReview` (answers cached for
//!   [`DelegatingAuthOptions::token_cache_ttl`]); without credentials the caller is
//!   `system:anonymous` when [`DelegatingAuthOptions::anonymous`] allows it, else the
//!   request gets 401. An invalid token always gets 401.
//! - **authorization**: paths in [`DelegatingAuthOptions::always_allow_paths`] (a
//!   trailing `*` matches a prefix) and users in
//!   [`DelegatingAuthOptions::always_allow_groups`] pass without a question; otherwise an
//!   `authorization.k8s.io/v1` `SubjectAccessReview` with non-resource attributes (verb:
//!   the lower-cased method, path: the request's path) decides (allowed and denied
//!   answers cached for their own TTLs). A refusal is upstream's 403, e.g.
//!   `forbidden: User "system:anonymous" cannot get path "/metrics"`.
//!
//! Responses are the API server's `Status` bodies, as kube-controller-manager's. The
//! caller of a scrape needs a role with a `nonResourceURLs` rule, e.g.
//! `kubectl create clusterrole metrics-reader --verb=get --non-resource-url=/metrics`.
//!
//! Turning it on for an operator's manager ([`crate::manager::MetricsServerOptions`]):
//!
//! ```no_run
//! use coxswain_runtime::authfilter;
//! use coxswain_runtime::manager::{Manager, ManagerOptions, MetricsServerOptions};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let options = ManagerOptions {
//!     metrics_bind_address: ":8443".into(),
//!     metrics_server: MetricsServerOptions {
//!         // HTTPS with a self-signed certificate generated at start
//!         secure_serving: true,
//!         // TokenReview + SubjectAccessReview with the manager's client
//!         filter_provider: Some(authfilter::with_authentication_and_authorization()),
//!         ..MetricsServerOptions::default()
//!     },
//!     ..ManagerOptions::default()
//! };
//! let manager = Manager::try_default(options).await?;
//! # drop(manager);
//! # Ok(()) }
//! ```

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::future::BoxFuture;
use futures::FutureExt;
use http::{header, HeaderMap, StatusCode};
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec};
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::api::PostParams;

use crate::manager::BoxError;

/// `system:anonymous`, the user of a request without credentials.
pub const ANONYMOUS: &str = "system:anonymous";
/// `system:unauthenticated`, the group of anonymous requests.
pub const UNAUTHENTICATED: &str = "system:unauthenticated";
/// `system:authenticated`, the group of every authenticated user.
pub const AUTHENTICATED: &str = "system:authenticated";
/// `system:masters`, the group the API server allows everything.
pub const MASTERS: &str = "system:masters";

/// Most answers kept per cache; expired ones are dropped first, then all of them.
const CACHE_LIMIT: usize = 8192;

/// Who made a request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct User {
    /// The user name (`system:serviceaccount:kube-system:prometheus`, a certificate's CN).
    pub name: String,
    /// Its UID, when the authenticator knows one.
    pub uid: String,
    /// Its groups.
    pub groups: Vec<String>,
    /// Extra attributes (a service account token's pod, …).
    pub extra: BTreeMap<String, Vec<String>>,
}

impl User {
    /// The anonymous user.
    pub fn anonymous() -> User {
        User {
            name: ANONYMOUS.to_string(),
            groups: vec![UNAUTHENTICATED.to_string()],
            ..User::default()
        }
    }
}

/// An authorizer's verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Allowed.
    Allow,
    /// Explicitly denied: no later authorizer is asked.
    Deny,
    /// No opinion: the next authorizer decides; refused when none allows.
    NoOpinion,
}

/// How [`DelegatingAuth`] authenticates and authorizes; the defaults are
/// kube-controller-manager's (`DelegatingAuthenticationOptions` and
/// `DelegatingAuthorizationOptions` of `k8s.io/apiserver`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DelegatingAuthOptions {
    /// Requests without credentials are `system:anonymous` (then authorized) rather than
    /// refused with 401 (default true).
    pub anonymous: bool,
    /// `--authentication-token-webhook-cache-ttl`: how long a TokenReview answer is kept
    /// (default 10 s).
    pub token_cache_ttl: Duration,
    /// `--authorization-webhook-cache-authorized-ttl` (default 10 s).
    pub allow_cache_ttl: Duration,
    /// `--authorization-webhook-cache-unauthorized-ttl` (default 10 s).
    pub deny_cache_ttl: Duration,
    /// `--authorization-always-allow-paths`: served to anyone, anonymous included
    /// (default `/healthz`, `/readyz`, `/livez`; `/x/*` matches a prefix).
    pub always_allow_paths: Vec<String>,
    /// Users in these groups are allowed everything without a SubjectAccessReview
    /// (default `system:masters`, whom the API server allows everything anyway).
    pub always_allow_groups: Vec<String>,
    /// Audiences a token must be valid for (sent in the TokenReview; default: none, the
    /// API server's own).
    pub audiences: Vec<String>,
}

impl Default for DelegatingAuthOptions {
    fn default() -> Self {
        DelegatingAuthOptions {
            anonymous: true,
            token_cache_ttl: Duration::from_secs(10),
            allow_cache_ttl: Duration::from_secs(10),
            deny_cache_ttl: Duration::from_secs(10),
            always_allow_paths: vec!["/healthz".into(), "/readyz".into(), "/livez".into()],
            always_allow_groups: vec![MASTERS.into()],
            audiences: Vec::new(),
        }
    }
}

impl DelegatingAuthOptions {
    /// controller-runtime's `WithAuthenticationAndAuthorization`: no anonymous requests,
    /// TokenReviews kept 1 minute, allowed answers 5 minutes, denied ones 30 seconds, no
    /// path or group skips the SubjectAccessReview.
    pub fn controller_runtime() -> Self {
        DelegatingAuthOptions {
            anonymous: false,
            token_cache_ttl: Duration::from_secs(60),
            allow_cache_ttl: Duration::from_secs(300),
            deny_cache_ttl: Duration::from_secs(30),
            always_allow_paths: Vec::new(),
            always_allow_groups: Vec::new(),
            audiences: Vec::new(),
        }
    }
}

/// A verified client certificate's DER leaf, set on a request by the runtime's HTTPS
/// server only (never from anything the client sends).
#[derive(Clone, Debug)]
pub(crate) struct PeerCertificate(pub(crate) Arc<Vec<u8>>);

/// A cache of answers, each with its own expiry.
struct TtlCache<V> {
    entries: Mutex<HashMap<String, (Instant, V)>>,
}

impl<V: Clone> TtlCache<V> {
    fn new() -> Self {
        TtlCache {
            entries: Mutex::new(HashMap::new()),
        }
    }

    fn get(&self, key: &str) -> Option<V> {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        match entries.get(key) {
            Some((expiry, v)) if *expiry > Instant::now() => Some(v.clone()),
            Some(_) => {
                entries.remove(key);
                None
            }
            None => None,
        }
    }

    fn put(&self, key: String, value: V, ttl: Duration) {
        if ttl.is_zero() {
            return;
        }
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if entries.len() >= CACHE_LIMIT {
            let now = Instant::now();
            entries.retain(|_, (expiry, _)| *expiry > now);
            if entries.len() >= CACHE_LIMIT {
                entries.clear();
            }
        }
        entries.insert(key, (Instant::now() + ttl, value));
    }
}

/// Why a request could not be authenticated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuthenticationError(pub String);

impl fmt::Display for AuthenticationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for AuthenticationError {}

/// Delegated authentication (TokenReview) and authorization (SubjectAccessReview) of
/// requests to a server of the manager; see the [module documentation](self).
pub struct DelegatingAuth {
    authentication: Option<kube::Client>,
    authorization: Option<kube::Client>,
    options: DelegatingAuthOptions,
    tokens: TtlCache<Result<User, String>>,
    reviews: TtlCache<(Decision, String)>,
}

impl fmt::Debug for DelegatingAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DelegatingAuth")
            .field("token_review", &self.authentication.is_some())
            .field("subject_access_review", &self.authorization.is_some())
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl DelegatingAuth {
    /// Reviews sent with `client` (TokenReview and SubjectAccessReview).
    pub fn new(client: kube::Client, options: DelegatingAuthOptions) -> Self {
        Self::with_clients(Some(client.clone()), Some(client), options)
    }

    /// Reviews sent with clients of their own (kube-controller-manager's
    /// `--authentication-kubeconfig` and `--authorization-kubeconfig`). Without an
    /// authentication client no token authenticates (only certificates and anonymous
    /// requests remain); without an authorization client only the always-allowed paths and
    /// groups are allowed.
    pub fn with_clients(
        authentication: Option<kube::Client>,
        authorization: Option<kube::Client>,
        options: DelegatingAuthOptions,
    ) -> Self {
        DelegatingAuth {
            authentication,
            authorization,
            options,
            tokens: TtlCache::new(),
            reviews: TtlCache::new(),
        }
    }

    /// The options.
    pub fn options(&self) -> &DelegatingAuthOptions {
        &self.options
    }

    /// Who sent a request with `headers` (and the verified client certificate `peer`):
    /// `Ok(None)` without credentials when anonymous requests are refused, an error when
    /// credentials were given and do not authenticate.
    async fn authenticate_request(
        &self,
        headers: &HeaderMap,
        peer: Option<&PeerCertificate>,
    ) -> Result<Option<User>, AuthenticationError> {
        if let Some(PeerCertificate(der)) = peer {
            if let Some(user) = user_of_certificate(der) {
                return Ok(Some(with_authenticated_group(user)));
            }
        }
        match bearer_token(headers) {
            Some(token) => self
                .authenticate_token(token)
                .await
                .map(|u| Some(with_authenticated_group(u))),
            None if self.options.anonymous => Ok(Some(User::anonymous())),
            None => Ok(None),
        }
    }

    /// The user of a bearer token, asked of the API server in a TokenReview (answers kept
    /// for the token cache TTL; failures to ask are not kept).
    pub async fn authenticate_token(&self, token: &str) -> Result<User, AuthenticationError> {
        let Some(client) = &self.authentication else {
            return Err(AuthenticationError("invalid bearer token".into()));
        };
        let key = format!("{}\u{0}{}", self.options.audiences.join(","), token);
        if let Some(cached) = self.tokens.get(&key) {
            return cached.map_err(AuthenticationError);
        }
        let review = TokenReview {
            spec: TokenReviewSpec {
                token: token.to_string(),
                audiences: (!self.options.audiences.is_empty())
                    .then(|| self.options.audiences.clone()),
            },
            ..TokenReview::default()
        };
        let api = kube::Api::<TokenReview>::all(client.clone());
        let pp = PostParams::default();
        let answer = with_retries(|| api.create(&pp, &review))
            .await
            .map_err(|e| {
                tracing::warn!(error = %e, "TokenReview failed");
                AuthenticationError(format!("token review: {e}"))
            })?;
        let status = answer.status.unwrap_or_default();
        let result = if status.authenticated == Some(true) {
            let audiences_ok = self.options.audiences.is_empty()
                || status.audiences.as_ref().is_none_or(|a| {
                    a.is_empty() || a.iter().any(|x| self.options.audiences.contains(x))
                });
            if audiences_ok {
                let info = status.user.unwrap_or_default();
                Ok(User {
                    name: info.username.unwrap_or_default(),
                    uid: info.uid.unwrap_or_default(),
                    groups: info.groups.unwrap_or_default(),
                    extra: info.extra.unwrap_or_default().into_iter().collect(),
                })
            } else {
                Err("token audiences is invalid for the target audiences".to_string())
            }
        } else {
            Err(status
                .error
                .filter(|e| !e.is_empty())
                .unwrap_or_else(|| "invalid bearer token".to_string()))
        };
        self.tokens
            .put(key, result.clone(), self.options.token_cache_ttl);
        result.map_err(AuthenticationError)
    }

    /// May `user` do `verb` on the non-resource `path`? The always-allowed groups and
    /// paths first, then a SubjectAccessReview (kept for the allowed or denied TTL). An
    /// error (the review could not be made) comes with [`Decision::NoOpinion`].
    pub async fn authorize(
        &self,
        user: &User,
        verb: &str,
        path: &str,
    ) -> (Decision, String, Option<String>) {
        if user
            .groups
            .iter()
            .any(|g| self.options.always_allow_groups.contains(g))
        {
            return (Decision::Allow, String::new(), None);
        }
        if path_allowed(&self.options.always_allow_paths, path) {
            return (Decision::Allow, String::new(), None);
        }
        let Some(client) = &self.authorization else {
            return (Decision::NoOpinion, String::new(), None);
        };
        let spec = SubjectAccessReviewSpec {
            user: Some(user.name.clone()),
            uid: (!user.uid.is_empty()).then(|| user.uid.clone()),
            groups: Some(user.groups.clone()),
            extra: (!user.extra.is_empty()).then(|| user.extra.clone().into_iter().collect()),
            non_resource_attributes: Some(NonResourceAttributes {
                path: Some(path.to_string()),
                verb: Some(verb.to_string()),
            }),
            resource_attributes: None,
        };
        let key = serde_json::to_string(&spec).unwrap_or_default();
        if let Some((decision, reason)) = self.reviews.get(&key) {
            return (decision, reason, None);
        }
        let review = SubjectAccessReview {
            spec,
            ..SubjectAccessReview::default()
        };
        let api = kube::Api::<SubjectAccessReview>::all(client.clone());
        let pp = PostParams::default();
        let answer = match with_retries(|| api.create(&pp, &review)).await {
            Ok(a) => a,
            Err(e) => {
                tracing::warn!(error = %e, "SubjectAccessReview failed");
                return (Decision::NoOpinion, String::new(), Some(e.to_string()));
            }
        };
        let status = answer.status.unwrap_or_default();
        let reason = status.reason.unwrap_or_default();
        let denied = status.denied == Some(true);
        let (decision, error) = match (status.allowed, denied) {
            (true, true) => (
                Decision::Deny,
                Some(
                    "webhook subject access review returned both allow and deny response"
                        .to_string(),
                ),
            ),
            (true, false) => (Decision::Allow, None),
            (false, true) => (Decision::Deny, None),
            (false, false) => (Decision::NoOpinion, None),
        };
        if error.is_none() {
            let ttl = if decision == Decision::Allow {
                self.options.allow_cache_ttl
            } else {
                self.options.deny_cache_ttl
            };
            self.reviews.put(key, (decision, reason.clone()), ttl);
        }
        (decision, reason, error)
    }

    /// Authenticate and authorize `req`, then hand it to `next`, or answer 401, 403 or
    /// 500 as kube-controller-manager does.
    pub async fn filter(self: Arc<Self>, mut req: Request, next: Next) -> Response {
        let peer = req.extensions().get::<PeerCertificate>().cloned();
        let user = match self
            .authenticate_request(req.headers(), peer.as_ref())
            .await
        {
            Ok(Some(user)) => user,
            Ok(None) => return unauthorized(),
            Err(e) => {
                tracing::debug!(error = %e, path = %req.uri().path(), "unable to authenticate the request");
                return unauthorized();
            }
        };
        // the credentials go no further than here
        req.headers_mut().remove(header::AUTHORIZATION);
        let verb = req.method().as_str().to_ascii_lowercase();
        let path = req.uri().path().to_string();
        let (decision, reason, error) = self.authorize(&user, &verb, &path).await;
        if decision == Decision::Allow {
            req.extensions_mut().insert(user);
            return next.run(req).await;
        }
        if let Some(error) = error {
            let uri = req
                .uri()
                .path_and_query()
                .map(|p| p.as_str().to_string())
                .unwrap_or(path);
            return (
                StatusCode::INTERNAL_SERVER_ERROR,
                [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
                format!("Internal Server Error: {uri:?}: {error}\n"),
            )
                .into_response();
        }
        tracing::debug!(user = %user.name, %path, %reason, "forbidden");
        forbidden(&user.name, &verb, &path, &reason)
    }
}

/// Make a server filter from the manager's client (controller-runtime's
/// `metricsserver.FilterProvider`); see [`with_authentication_and_authorization`].
#[derive(Clone)]
pub struct FilterProvider(Arc<ProvideFn>);

type ProvideFn = dyn Fn(&kube::Client) -> Result<Filter, BoxError> + Send + Sync;
type FilterFn = dyn Fn(Request, Next) -> BoxFuture<'static, Response> + Send + Sync;

impl FilterProvider {
    /// A provider calling `f` with the manager's client.
    pub fn new(
        f: impl Fn(&kube::Client) -> Result<Filter, BoxError> + Send + Sync + 'static,
    ) -> Self {
        FilterProvider(Arc::new(f))
    }

    /// A provider of a filter made already (its clients chosen by the caller).
    pub fn of(filter: Filter) -> Self {
        FilterProvider::new(move |_| Ok(filter.clone()))
    }

    /// The filter for a manager with `client`.
    pub fn provide(&self, client: &kube::Client) -> Result<Filter, BoxError> {
        (self.0)(client)
    }
}

impl fmt::Debug for FilterProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("FilterProvider")
    }
}

/// What a server runs before its handlers: answer a request itself or pass it on with
/// `next` (an axum middleware).
#[derive(Clone)]
pub struct Filter(Arc<FilterFn>);

impl Filter {
    /// A filter running `f`.
    pub fn new(
        f: impl Fn(Request, Next) -> BoxFuture<'static, Response> + Send + Sync + 'static,
    ) -> Self {
        Filter(Arc::new(f))
    }

    /// The filter of a [`DelegatingAuth`].
    pub fn delegating(auth: Arc<DelegatingAuth>) -> Self {
        Filter::new(move |req, next| auth.clone().filter(req, next).boxed())
    }

    /// `router` with this filter before each of its routes.
    pub fn apply(&self, router: axum::Router) -> axum::Router {
        let f = self.0.clone();
        router.layer(axum::middleware::from_fn(
            move |req: Request, next: Next| {
                let f = f.clone();
                async move { f(req, next).await }
            },
        ))
    }
}

impl fmt::Debug for Filter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Filter")
    }
}

/// controller-runtime's `filters.WithAuthenticationAndAuthorization`: every request to
/// the metrics server needs a token the API server accepts (TokenReview) for a user it
/// allows the path (SubjectAccessReview), asked with the manager's client; the caches
/// of [`DelegatingAuthOptions::controller_runtime`].
pub fn with_authentication_and_authorization() -> FilterProvider {
    with_options(DelegatingAuthOptions::controller_runtime())
}

/// As [`with_authentication_and_authorization`] with other options (e.g.
/// [`DelegatingAuthOptions::default`], kube-controller-manager's).
pub fn with_options(options: DelegatingAuthOptions) -> FilterProvider {
    FilterProvider::new(move |client| {
        Ok(Filter::delegating(Arc::new(DelegatingAuth::new(
            client.clone(),
            options.clone(),
        ))))
    })
}

/// Call `f` again on transient failures (client-go's webhook backoff: 500 ms, × 1.5,
/// 5 attempts): connection errors, 429 and 5xx answers.
async fn with_retries<T, F, Fut>(mut f: F) -> Result<T, kube::Error>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, kube::Error>>,
{
    let mut delay = Duration::from_millis(500);
    let mut attempt = 1;
    loop {
        match f().await {
            Ok(v) => return Ok(v),
            Err(e) if attempt < 5 && transient(&e) => {
                tokio::time::sleep(delay).await;
                delay = delay.mul_f64(1.5);
                attempt += 1;
            }
            Err(e) => return Err(e),
        }
    }
}

fn transient(e: &kube::Error) -> bool {
    match e {
        kube::Error::Api(s) => s.code == 429 || s.code >= 500,
        kube::Error::HyperError(_) | kube::Error::Service(_) => true,
        _ => false,
    }
}

/// The bearer token of an `Authorization` header (`Bearer <token>`, scheme case-blind).
fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?.trim();
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// Authenticated users are in `system:authenticated` (upstream's AuthenticatedGroupAdder).
fn with_authenticated_group(mut user: User) -> User {
    let special = user.name == ANONYMOUS
        || user
            .groups
            .iter()
            .any(|g| g == AUTHENTICATED || g == UNAUTHENTICATED);
    if !special {
        user.groups.push(AUTHENTICATED.to_string());
    }
    user
}

/// The user of a client certificate: its common name, in the groups of its organizations
/// (upstream's `x509.CommonNameUserConversion`); none without a common name.
fn user_of_certificate(der: &[u8]) -> Option<User> {
    let (_, cert) = x509_parser::parse_x509_certificate(der).ok()?;
    let subject = cert.subject();
    let name = subject
        .iter_common_name()
        .next()
        .and_then(|cn| cn.as_str().ok())?
        .to_string();
    if name.is_empty() {
        return None;
    }
    let groups = subject
        .iter_organization()
        .filter_map(|o| o.as_str().ok().map(str::to_string))
        .collect();
    Some(User {
        name,
        groups,
        ..User::default()
    })
}

/// upstream's path authorizer: exact paths, or prefixes ending in `*`.
fn path_allowed(paths: &[String], path: &str) -> bool {
    paths.iter().any(|p| match p.strip_suffix('*') {
        Some(prefix) => path.starts_with(prefix),
        None => p == path,
    })
}

fn status(code: StatusCode, reason: &str, message: &str) -> Response {
    let mut body = serde_json::json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code.as_u16(),
    });
    if code == StatusCode::FORBIDDEN {
        body["details"] = serde_json::json!({});
    }
    (
        code,
        [
            (header::CONTENT_TYPE, "application/json"),
            (header::CACHE_CONTROL, "no-cache, private"),
        ],
        Body::from(body.to_string()),
    )
        .into_response()
}

/// The API server's 401.
fn unauthorized() -> Response {
    status(StatusCode::UNAUTHORIZED, "Unauthorized", "Unauthorized")
}

/// The API server's 403 for a non-resource request.
fn forbidden(user: &str, verb: &str, path: &str, reason: &str) -> Response {
    let mut message = format!("forbidden: User {user:?} cannot {verb} path {path:?}");
    if !reason.is_empty() {
        message.push_str(": ");
        message.push_str(reason);
    }
    status(StatusCode::FORBIDDEN, "Forbidden", &message)
}

#[cfg(test)]
#[path = "authfilter_tests.rs"]
mod tests;
