//! The delegating client: reads from the shared cache, writes to the server.
//!
//! Like controller-runtime's default client: `get` and `list` are served by the informer
//! cache (starting the kind's informer on first use and waiting for its sync), with label
//! selectors and secondary-index lookups; every write (create, replace, patch, delete,
//! the status and scale subresources) goes to the API server. A kind can opt out of the
//! cache and be read directly ([`Client::uncached`]). On top: create-or-update,
//! create-or-patch and server-side apply ([`Client::create_or_update`],
//! [`Client::create_or_patch`], [`Client::apply`]), with an optional default field
//! manager for every write ([`Client::with_field_owner`]). A client can pair the shared
//! cache with another API client for its writes and uncached reads
//! ([`Client::with_kube_client`]): kube-controller-manager's controllers read from the
//! shared informers and write as their own service account.

mod upsert;

pub use upsert::{ApplyOptions, UpsertError};

use std::any::TypeId;
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use k8s_openapi::api::autoscaling::v1::Scale;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams};
use kube::core::Request;
use serde::Serialize;

use crate::cache::{Cache, CachedKind};
use crate::object::ObjectKey;
use apimachinery::selector::LabelSelector;

/// Errors of the client.
pub type Error = kube::Error;

/// A client-go style User-Agent: `<component>/v<version> (<os>/<arch>) coxswain`.
///
/// The API server records the part before the first `/` as the field manager of writes
/// that name none, as kube-apiserver does, so `kube-controller-manager` or `kubelet`
/// appear in `managedFields` as they do in a real cluster.
pub fn user_agent(component: &str) -> String {
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    };
    format!(
        "{component}/v{} ({}/{arch}) coxswain",
        env!("CARGO_PKG_VERSION"),
        std::env::consts::OS
    )
}

/// Set the User-Agent every request of clients built from `config` sends.
pub fn set_user_agent(config: &mut kube::Config, user_agent: &str) {
    let Ok(value) = http::HeaderValue::from_str(user_agent) else {
        return;
    };
    config
        .headers
        .retain(|(name, _)| name != http::header::USER_AGENT);
    config.headers.push((http::header::USER_AGENT, value));
}

/// Whether `config` already sets a User-Agent.
pub fn has_user_agent(config: &kube::Config) -> bool {
    config
        .headers
        .iter()
        .any(|(name, _)| name == http::header::USER_AGENT)
}

/// client-go's default User-Agent component: the program's file name.
pub fn program_name() -> String {
    std::env::args_os()
        .next()
        .as_deref()
        .map(std::path::Path::new)
        .and_then(std::path::Path::file_name)
        .map(|n| n.to_string_lossy().into_owned())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "coxswain".to_string())
}

/// Percent-encode a query value (everything but unreserved characters).
fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// What a cached `list` returns.
#[derive(Clone, Debug, Default)]
pub struct ListOptions {
    /// Only this namespace.
    pub namespace: Option<String>,
    /// Only objects whose labels match.
    pub labels: Option<LabelSelector>,
    /// Only objects whose index `.0` has the value `.1` (see [`Cache::index_field`]).
    pub index: Option<(String, String)>,
}

/// Reads from the cache, writes to the server.
#[derive(Clone)]
pub struct Client {
    cache: Arc<Cache>,
    /// Writes and uncached reads go here instead of the cache's client.
    writer: Option<kube::Client>,
    uncached: Arc<HashSet<TypeId>>,
    field_owner: Option<Arc<str>>,
}

fn request_for<K: CachedKind>(namespace: Option<&str>) -> Request {
    Request::new(K::url_path(&(), namespace))
}

fn body<K: Serialize>(obj: &K) -> Result<Vec<u8>, Error> {
    serde_json::to_vec(obj).map_err(Error::SerdeError)
}

impl Client {
    /// A client over `cache` (and its API client).
    pub fn new(cache: Arc<Cache>) -> Self {
        Client {
            cache,
            writer: None,
            uncached: Arc::new(HashSet::new()),
            field_owner: None,
        }
    }

    /// The same client, naming `manager` as the field manager of every write that names
    /// none (controller-runtime's `client.WithFieldOwner`); without it the API server
    /// records the User-Agent's program name.
    pub fn with_field_owner(mut self, manager: &str) -> Self {
        self.field_owner = Some(Arc::from(manager));
        self
    }

    /// The same client, sending its writes and uncached reads with `kube` (another
    /// identity) while reading from the shared cache, whose informers keep the cache's
    /// own client (kube-controller-manager's per-controller clients over shared informers).
    pub fn with_kube_client(mut self, kube: kube::Client) -> Self {
        self.writer = Some(kube);
        self
    }

    fn patch_params(&self, params: &PatchParams) -> PatchParams {
        let mut p = params.clone();
        if p.field_manager.is_none() {
            p.field_manager = self.field_owner.as_deref().map(str::to_string);
        }
        p
    }

    /// Read kind `K` from the server instead of the cache.
    pub fn uncached<K: CachedKind>(mut self) -> Self {
        let mut set = (*self.uncached).clone();
        set.insert(TypeId::of::<K>());
        self.uncached = Arc::new(set);
        self
    }

    fn cached<K: CachedKind>(&self) -> bool {
        !self.uncached.contains(&TypeId::of::<K>())
    }

    /// The cache behind the client.
    pub fn cache(&self) -> &Arc<Cache> {
        &self.cache
    }

    /// The API client writes and uncached reads go through: the one given to
    /// [`Client::with_kube_client`], else the cache's.
    pub fn kube_client(&self) -> &kube::Client {
        self.writer.as_ref().unwrap_or_else(|| self.cache.client())
    }

    fn kube(&self) -> &kube::Client {
        self.kube_client()
    }

    /// Send a built request and decode the answer.
    async fn send<T: serde::de::DeserializeOwned>(
        &self,
        req: Result<http::Request<Vec<u8>>, kube::core::request::Error>,
    ) -> Result<T, Error> {
        self.kube().request(req.map_err(Error::BuildRequest)?).await
    }

    /// One object, `None` when it does not exist.
    pub async fn get<K: CachedKind>(&self, key: &ObjectKey) -> Result<Option<Arc<K>>, Error> {
        if self.cached::<K>() {
            return Ok(self.cache.get::<K>(key).await);
        }
        let req = request_for::<K>(key.namespace())
            .get(key.name(), &Default::default())
            .map_err(Error::BuildRequest)?;
        match self.kube().request::<K>(req).await {
            Ok(o) => Ok(Some(Arc::new(o))),
            Err(Error::Api(s)) if s.code == 404 => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Objects matching `opts`.
    pub async fn list<K: CachedKind>(&self, opts: &ListOptions) -> Result<Vec<Arc<K>>, Error> {
        let empty = BTreeMap::new();
        let label_ok = |o: &K| {
            opts.labels
                .as_ref()
                .is_none_or(|s| s.matches_labels(o.meta().labels.as_ref().unwrap_or(&empty)))
        };
        let ns_ok = |o: &K| {
            opts.namespace
                .as_ref()
                .is_none_or(|ns| o.meta().namespace.as_ref() == Some(ns))
        };
        if !self.cached::<K>() {
            let req = request_for::<K>(opts.namespace.as_deref())
                .list(&ListParams::default())
                .map_err(Error::BuildRequest)?;
            let list = self
                .kube()
                .request::<kube::core::ObjectList<K>>(req)
                .await?;
            return Ok(list
                .items
                .into_iter()
                .filter(|o| label_ok(o))
                .map(Arc::new)
                .collect());
        }
        let objects = match &opts.index {
            Some((index, value)) => self
                .cache
                .list_by_index::<K>(index, value)
                .await
                .ok_or_else(|| {
                    Error::Service(
                        format!(
                            "no index {index:?} for {}: add it with Cache::index_field",
                            K::kind(&())
                        )
                        .into(),
                    )
                })?,
            None => self.cache.list::<K>(opts.namespace.as_deref()).await,
        };
        Ok(objects
            .into_iter()
            .filter(|o| ns_ok(o) && label_ok(o))
            .collect())
    }

    /// Create `obj` (its namespace is taken from its metadata).
    pub async fn create<K: CachedKind + Serialize>(&self, obj: &K) -> Result<K, Error> {
        let ns = obj.meta().namespace.clone();
        self.send(request_for::<K>(ns.as_deref()).create(&self.post_params(), body(obj)?))
            .await
    }

    /// Replace `obj` (optimistic concurrency on its resourceVersion).
    pub async fn update<K: CachedKind + Serialize>(&self, obj: &K) -> Result<K, Error> {
        let key = ObjectKey::of(obj);
        self.send(request_for::<K>(key.namespace()).replace(
            key.name(),
            &self.post_params(),
            body(obj)?,
        ))
        .await
    }

    /// Patch the object at `key`.
    pub async fn patch<K: CachedKind, P: Serialize + std::fmt::Debug>(
        &self,
        key: &ObjectKey,
        params: &PatchParams,
        patch: &Patch<P>,
    ) -> Result<K, Error> {
        self.send(request_for::<K>(key.namespace()).patch(
            key.name(),
            &self.patch_params(params),
            patch,
        ))
        .await
    }

    /// Apply a JSON patch (RFC 6902) to the object at `key`; its `test` operations make
    /// it conditional (a failed test answers 422 and changes nothing).
    pub async fn patch_json<K: CachedKind>(
        &self,
        key: &ObjectKey,
        patch: &json_patch::Patch,
    ) -> Result<K, Error> {
        let mut url = format!("{}/{}", K::url_path(&(), key.namespace()), key.name());
        if let Some(manager) = &self.field_owner {
            url.push_str("?fieldManager=");
            url.push_str(&percent_encode(manager));
        }
        let req = http::Request::patch(url)
            .header(http::header::CONTENT_TYPE, "application/json-patch+json")
            .body(body(patch)?)
            .map_err(|e| Error::BuildRequest(kube::core::request::Error::BuildRequest(e)));
        self.kube().request(req?).await
    }

    /// Delete the object at `key`; `Ok(false)` when it was already gone.
    pub async fn delete<K: CachedKind>(
        &self,
        key: &ObjectKey,
        params: &DeleteParams,
    ) -> Result<bool, Error> {
        let req = request_for::<K>(key.namespace())
            .delete(key.name(), params)
            .map_err(Error::BuildRequest)?;
        match self.kube().request_text(req).await {
            Ok(_) => Ok(true),
            Err(Error::Api(s)) if s.code == 404 => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Replace the status of `obj` (the `/status` subresource).
    pub async fn update_status<K: CachedKind + Serialize>(&self, obj: &K) -> Result<K, Error> {
        let key = ObjectKey::of(obj);
        self.send(request_for::<K>(key.namespace()).replace_subresource(
            "status",
            key.name(),
            &self.post_params(),
            body(obj)?,
        ))
        .await
    }

    /// Patch the status of the object at `key`.
    pub async fn patch_status<K: CachedKind, P: Serialize + std::fmt::Debug>(
        &self,
        key: &ObjectKey,
        params: &PatchParams,
        patch: &Patch<P>,
    ) -> Result<K, Error> {
        self.send(request_for::<K>(key.namespace()).patch_subresource(
            "status",
            key.name(),
            &self.patch_params(params),
            patch,
        ))
        .await
    }

    /// The `/scale` of the object at `key`.
    pub async fn get_scale<K: CachedKind>(&self, key: &ObjectKey) -> Result<Scale, Error> {
        self.send(request_for::<K>(key.namespace()).get_subresource("scale", key.name()))
            .await
    }

    /// Set the replicas of the object at `key` through `/scale`.
    pub async fn scale<K: CachedKind>(
        &self,
        key: &ObjectKey,
        replicas: i32,
    ) -> Result<Scale, Error> {
        let patch = Patch::Merge(serde_json::json!({"spec": {"replicas": replicas}}));
        self.send(request_for::<K>(key.namespace()).patch_subresource(
            "scale",
            key.name(),
            &PatchParams::default(),
            &patch,
        ))
        .await
    }
}

/// A tower layer for [`kube::Client`] that limits requests to `qps` per second with
/// bursts of `burst` (client-go's token bucket, `--kube-api-qps` / `--kube-api-burst`):
/// a request over the budget waits its turn rather than failing.
#[derive(Clone)]
pub struct RateLimitLayer {
    bucket: Arc<crate::workqueue::BucketRateLimiter>,
}

impl std::fmt::Debug for RateLimitLayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RateLimitLayer").finish_non_exhaustive()
    }
}

impl RateLimitLayer {
    /// `qps` requests per second (values ≤ 0 mean unlimited), bursts of `burst`.
    pub fn new(qps: f32, burst: u32) -> Self {
        let qps = if qps > 0.0 {
            f64::from(qps)
        } else {
            f64::INFINITY
        };
        RateLimitLayer {
            bucket: Arc::new(crate::workqueue::BucketRateLimiter::new(qps, burst.max(1))),
        }
    }

    fn delay(&self) -> std::time::Duration {
        self.bucket.reserve()
    }
}

impl<S> tower::Layer<S> for RateLimitLayer {
    type Service = RateLimited<S>;
    fn layer(&self, inner: S) -> Self::Service {
        RateLimited {
            inner,
            limit: self.clone(),
            wait: None,
            permitted: false,
        }
    }
}

/// The service of [`RateLimitLayer`]: `poll_ready` waits for a token (so a buffered
/// client hands out requests at the allowed pace), then for the inner service.
#[derive(Debug)]
pub struct RateLimited<S> {
    inner: S,
    limit: RateLimitLayer,
    wait: Option<std::pin::Pin<Box<tokio::time::Sleep>>>,
    permitted: bool,
}

impl<S, B> tower::Service<http::Request<B>> for RateLimited<S>
where
    S: tower::Service<http::Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        if !self.permitted {
            if self.wait.is_none() {
                let delay = self.limit.delay();
                if delay.is_zero() {
                    self.permitted = true;
                } else {
                    self.wait = Some(Box::pin(tokio::time::sleep(delay)));
                }
            }
            if let Some(wait) = self.wait.as_mut() {
                std::task::ready!(std::future::Future::poll(wait.as_mut(), cx));
                self.wait = None;
                self.permitted = true;
            }
        }
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        self.permitted = false;
        self.inner.call(req)
    }
}

#[cfg(test)]
mod rate_limit_tests {
    use super::*;

    #[test]
    fn the_bucket_allows_a_burst_then_spaces_requests() {
        let l = RateLimitLayer::new(10.0, 3);
        let waits: Vec<std::time::Duration> = (0..5).map(|_| l.delay()).collect();
        assert!(waits[..3].iter().all(|w| w.is_zero()), "{waits:?}");
        // the 4th and 5th wait about 100 ms and 200 ms
        assert!(waits[3] > std::time::Duration::from_millis(80), "{waits:?}");
        assert!(
            waits[4] > std::time::Duration::from_millis(180),
            "{waits:?}"
        );
        let unlimited = RateLimitLayer::new(0.0, 1);
        assert!((0..100).all(|_| unlimited.delay().is_zero()));
    }
}
