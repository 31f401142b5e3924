//! Informer: a reflector (LIST/WATCH loop) feeding a [`Store`] and event handlers.
//!
//! The reflector prefers a watch-list (`sendInitialEvents`, one request that streams the
//! current state then the changes) and falls back to paginated LIST + WATCH when the
//! server refuses it. It follows bookmarks, resumes a broken watch from the last
//! resourceVersion, relists on 410 Gone (turning the difference into ADDED / UPDATED /
//! DELETED so handlers see no phantom and lose nothing), and backs off with jitter on
//! errors. Handlers are called in order, one change at a time, after the store is
//! updated; a handler added late first sees every cached object as added.

use std::fmt::Debug;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use futures::stream::BoxStream;
use futures::{FutureExt, StreamExt, TryStreamExt};
use kube::api::{ListParams, ObjectList, WatchEvent, WatchParams};
use kube::core::PartialObjectMeta;
use kube::{Api, Resource};
use rand::Rng;
use serde::de::DeserializeOwned;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::store::{Change, Store};

/// The LIST and WATCH calls an informer makes: whole objects through [`Api`], or
/// metadata only through [`MetadataApi`].
pub trait ListWatch<T: Clone>: Send + Sync + 'static {
    /// One page of a LIST.
    fn list<'a>(&'a self, lp: &'a ListParams) -> BoxFuture<'a, kube::Result<ObjectList<T>>>;
    /// A WATCH from resourceVersion `rv`.
    fn watch<'a>(
        &'a self,
        wp: &'a WatchParams,
        rv: &'a str,
    ) -> BoxFuture<'a, kube::Result<BoxStream<'static, kube::Result<WatchEvent<T>>>>>;
    /// What is listed (for logs).
    fn describe(&self) -> String;
}

impl<K> ListWatch<K> for Api<K>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    fn list<'a>(&'a self, lp: &'a ListParams) -> BoxFuture<'a, kube::Result<ObjectList<K>>> {
        Api::list(self, lp).boxed()
    }

    fn watch<'a>(
        &'a self,
        wp: &'a WatchParams,
        rv: &'a str,
    ) -> BoxFuture<'a, kube::Result<BoxStream<'static, kube::Result<WatchEvent<K>>>>> {
        async move { Api::watch(self, wp, rv).await.map(|s| s.boxed()) }.boxed()
    }

    fn describe(&self) -> String {
        self.resource_url().to_string()
    }
}

/// Lists and watches `K` in one namespace (for caches restricted to a namespace).
pub struct NamespacedApi<K> {
    client: kube::Client,
    namespace: String,
    _kind: std::marker::PhantomData<fn() -> K>,
}

impl<K: Resource<DynamicType = ()>> NamespacedApi<K> {
    /// `K` objects of `namespace` through `client`.
    pub fn new(client: kube::Client, namespace: &str) -> Self {
        NamespacedApi {
            client,
            namespace: namespace.to_string(),
            _kind: std::marker::PhantomData,
        }
    }

    fn request(&self) -> kube::core::Request {
        kube::core::Request::new(K::url_path(&(), Some(&self.namespace)))
    }
}

impl<K> ListWatch<K> for NamespacedApi<K>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    fn list<'a>(&'a self, lp: &'a ListParams) -> BoxFuture<'a, kube::Result<ObjectList<K>>> {
        async move {
            let req = self.request().list(lp).map_err(kube::Error::BuildRequest)?;
            self.client.request::<ObjectList<K>>(req).await
        }
        .boxed()
    }

    fn watch<'a>(
        &'a self,
        wp: &'a WatchParams,
        rv: &'a str,
    ) -> BoxFuture<'a, kube::Result<BoxStream<'static, kube::Result<WatchEvent<K>>>>> {
        async move {
            let req = self
                .request()
                .watch(wp, rv)
                .map_err(kube::Error::BuildRequest)?;
            self.client
                .request_events::<K>(req)
                .await
                .map(|s| s.boxed())
        }
        .boxed()
    }

    fn describe(&self) -> String {
        self.request().url_path.clone()
    }
}

/// Lists and watches `K` as metadata only (`PartialObjectMetadata`).
pub struct MetadataApi<K>(pub Api<K>);

impl<K> ListWatch<PartialObjectMeta<K>> for MetadataApi<K>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    PartialObjectMeta<K>: DeserializeOwned,
{
    fn list<'a>(
        &'a self,
        lp: &'a ListParams,
    ) -> BoxFuture<'a, kube::Result<ObjectList<PartialObjectMeta<K>>>> {
        self.0.list_metadata(lp).boxed()
    }

    fn watch<'a>(
        &'a self,
        wp: &'a WatchParams,
        rv: &'a str,
    ) -> BoxFuture<
        'a,
        kube::Result<BoxStream<'static, kube::Result<WatchEvent<PartialObjectMeta<K>>>>>,
    > {
        async move { self.0.watch_metadata(wp, rv).await.map(|s| s.boxed()) }.boxed()
    }

    fn describe(&self) -> String {
        format!("{} (metadata)", self.0.resource_url())
    }
}

/// What an informer lists and watches, and how.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct InformerConfig {
    /// Label selector (`app=web`).
    pub label_selector: Option<String>,
    /// Field selector (`spec.nodeName=n1`).
    pub field_selector: Option<String>,
    /// Page size of a paginated LIST (default 500, as client-go).
    pub page_size: u32,
    /// Use watch-list (`sendInitialEvents`) for the initial state (default true; falls back
    /// to LIST + WATCH when the server refuses it).
    pub watch_list: bool,
    /// Drop `metadata.managedFields` before storing (default true).
    pub strip_managed_fields: bool,
    /// Re-deliver every cached object to the handlers as an update (old = new) this often,
    /// with up to 10% jitter (default: never), as client-go's resync period.
    pub resync: Option<Duration>,
}

impl Default for InformerConfig {
    fn default() -> Self {
        InformerConfig {
            label_selector: None,
            field_selector: None,
            page_size: 500,
            watch_list: true,
            strip_managed_fields: true,
            resync: None,
        }
    }
}

type Handler<K> = Box<dyn Fn(&Change<K>) + Send + Sync>;

/// Changes an object before it is stored (drop fields nobody reads, say).
pub type Transform<K> = Arc<dyn Fn(K) -> K + Send + Sync>;

/// A running informer for kind `K`.
pub struct Informer<K> {
    store: Arc<Store<K>>,
    handlers: Mutex<Vec<Handler<K>>>,
    synced: watch::Sender<bool>,
    config: InformerConfig,
    transform: Option<Transform<K>>,
}

/// Why one LIST/WATCH round ended.
enum RoundEnd {
    /// The watch ended normally (timeout): resume from the last resourceVersion.
    Resume,
    /// The resourceVersion is too old (410): relist.
    Relist,
    /// The server does not accept watch-list: use LIST + WATCH from now on.
    NoWatchList,
    /// An error: back off, then resume.
    Error(String),
}

/// Exponential backoff with jitter for reconnects (800 ms to 30 s, like client-go's
/// reflector).
struct Backoff {
    next: Duration,
}

impl Backoff {
    const START: Duration = Duration::from_millis(800);
    const MAX: Duration = Duration::from_secs(30);

    fn new() -> Self {
        Backoff { next: Self::START }
    }

    fn reset(&mut self) {
        self.next = Self::START;
    }

    fn step(&mut self) -> Duration {
        let base = self.next;
        self.next = (self.next * 2).min(Self::MAX);
        let jitter = rand::rng().random_range(0.0..0.5);
        base.mul_f64(1.0 + jitter)
    }
}

fn is_gone(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 410)
}

fn refuses_watch_list(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if matches!(s.code, 400 | 403 | 422) )
}

impl<K> Informer<K>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    /// A new informer (not started) with `config`.
    pub fn new(config: InformerConfig) -> Arc<Self> {
        Self::with_transform(config, None)
    }

    /// A new informer (not started) that applies `transform` to every object before
    /// storing it (after stripping managedFields when configured).
    pub fn with_transform(config: InformerConfig, transform: Option<Transform<K>>) -> Arc<Self> {
        let (synced, _) = watch::channel(false);
        Arc::new(Informer {
            store: Arc::new(Store::default()),
            handlers: Mutex::new(Vec::new()),
            synced,
            config,
            transform,
        })
    }

    /// The store the informer fills.
    pub fn store(&self) -> &Arc<Store<K>> {
        &self.store
    }

    /// The configuration.
    pub fn config(&self) -> &InformerConfig {
        &self.config
    }

    /// Whether the initial state has been loaded.
    pub fn has_synced(&self) -> bool {
        *self.synced.borrow()
    }

    /// Wait until the initial state has been loaded.
    pub async fn wait_for_sync(&self) {
        let mut rx = self.synced.subscribe();
        let _ = rx.wait_for(|s| *s).await;
    }

    /// Register a handler; it first sees every object already cached as added.
    pub fn add_handler(&self, handler: impl Fn(&Change<K>) + Send + Sync + 'static) {
        let mut handlers = self.handlers.lock().unwrap_or_else(|e| e.into_inner());
        self.store.for_each(|o| handler(&Change::Added(o.clone())));
        handlers.push(Box::new(handler));
    }

    fn dispatch(&self, changes: &[Change<K>]) {
        let handlers = self.handlers.lock().unwrap_or_else(|e| e.into_inner());
        for c in changes {
            for h in handlers.iter() {
                h(c);
            }
        }
    }

    fn prepare(&self, mut obj: K) -> Arc<K> {
        if self.config.strip_managed_fields {
            obj.meta_mut().managed_fields = None;
        }
        match &self.transform {
            Some(t) => Arc::new(t(obj)),
            None => Arc::new(obj),
        }
    }

    fn apply_event(&self, ev: WatchEvent<K>, rv: &mut String) -> Result<(), RoundEnd> {
        match ev {
            WatchEvent::Added(o) | WatchEvent::Modified(o) => {
                if let Some(v) = &o.meta().resource_version {
                    *rv = v.clone();
                }
                let change = self.store.apply(self.prepare(o));
                self.dispatch(&[change]);
            }
            WatchEvent::Deleted(o) => {
                if let Some(v) = &o.meta().resource_version {
                    *rv = v.clone();
                }
                let key = crate::object::ObjectKey::of(&o);
                let last = self.store.delete(&key).unwrap_or_else(|| self.prepare(o));
                self.dispatch(&[Change::Deleted(last)]);
            }
            WatchEvent::Bookmark(b) => *rv = b.metadata.resource_version,
            WatchEvent::Error(s) if s.code == 410 => return Err(RoundEnd::Relist),
            WatchEvent::Error(s) => {
                return Err(RoundEnd::Error(format!(
                    "watch error {}: {}",
                    s.code, s.message
                )))
            }
        }
        Ok(())
    }

    fn watch_params(&self) -> WatchParams {
        let mut wp = WatchParams::default().timeout(290);
        wp.bookmarks = true;
        wp.label_selector = self.config.label_selector.clone();
        wp.field_selector = self.config.field_selector.clone();
        wp
    }

    /// Paginated LIST; replaces the store. Returns the list's resourceVersion.
    async fn list(&self, api: &dyn ListWatch<K>) -> Result<String, RoundEnd> {
        let mut lp = ListParams::default().limit(self.config.page_size);
        lp.label_selector = self.config.label_selector.clone();
        lp.field_selector = self.config.field_selector.clone();
        let mut items = Vec::new();
        let mut list_rv = None;
        loop {
            let page = match api.list(&lp).await {
                Ok(p) => p,
                Err(e) if is_gone(&e) => {
                    // the continue token expired: start the list again
                    lp.continue_token = None;
                    items.clear();
                    list_rv = None;
                    continue;
                }
                Err(e) => return Err(RoundEnd::Error(format!("list: {e}"))),
            };
            if list_rv.is_none() {
                list_rv = page.metadata.resource_version.clone();
            }
            items.extend(page.items.into_iter().map(|o| self.prepare(o)));
            match page.metadata.continue_ {
                Some(c) if !c.is_empty() => lp.continue_token = Some(c),
                _ => break,
            }
        }
        let changes = self.store.replace(items);
        self.dispatch(&changes);
        self.synced.send_replace(true);
        Ok(list_rv.unwrap_or_default())
    }

    /// WATCH from `rv` (or a watch-list when `rv` is `None`) until it ends.
    async fn watch(
        &self,
        api: &dyn ListWatch<K>,
        rv: &mut Option<String>,
        cancel: &CancellationToken,
    ) -> RoundEnd {
        let initial = rv.is_none();
        let mut wp = self.watch_params();
        if initial {
            wp = wp.initial_events();
        }
        let from = rv.clone().unwrap_or_default();
        let stream = match api.watch(&wp, &from).await {
            Ok(s) => s,
            Err(e) if is_gone(&e) => return RoundEnd::Relist,
            Err(e) if initial && refuses_watch_list(&e) => return RoundEnd::NoWatchList,
            Err(e) => return RoundEnd::Error(format!("watch: {e}")),
        };
        let mut stream = std::pin::pin!(stream);
        let mut current = from;
        // during a watch-list the initial objects are collected, then swapped in at once
        let mut pending: Option<Vec<Arc<K>>> = initial.then(Vec::new);
        loop {
            let next = tokio::select! {
                _ = cancel.cancelled() => return RoundEnd::Resume,
                n = stream.try_next() => n,
            };
            let ev = match next {
                Ok(Some(ev)) => ev,
                Ok(None) => {
                    if pending.is_some() {
                        return RoundEnd::Error(
                            "watch-list ended before the initial events".into(),
                        );
                    }
                    *rv = Some(current);
                    return RoundEnd::Resume;
                }
                Err(e) if is_gone(&e) => return RoundEnd::Relist,
                Err(e) => {
                    if pending.is_none() {
                        *rv = Some(current);
                    }
                    return RoundEnd::Error(format!("watch stream: {e}"));
                }
            };
            if let Some(buf) = pending.as_mut() {
                match ev {
                    WatchEvent::Added(o) | WatchEvent::Modified(o) => buf.push(self.prepare(o)),
                    WatchEvent::Deleted(o) => {
                        let key = crate::object::ObjectKey::of(&o);
                        buf.retain(|x| crate::object::ObjectKey::of(x.as_ref()) != key);
                    }
                    WatchEvent::Bookmark(b) => {
                        let end = b
                            .metadata
                            .annotations
                            .get("k8s.io/initial-events-end")
                            .is_some_and(|v| v == "true");
                        current = b.metadata.resource_version;
                        if end {
                            let items = pending.take().unwrap_or_default();
                            let changes = self.store.replace(items);
                            self.dispatch(&changes);
                            self.synced.send_replace(true);
                            *rv = Some(current.clone());
                        }
                    }
                    WatchEvent::Error(s) if s.code == 410 => return RoundEnd::Relist,
                    WatchEvent::Error(s) if matches!(s.code, 400 | 403 | 422) => {
                        return RoundEnd::NoWatchList
                    }
                    WatchEvent::Error(s) => {
                        return RoundEnd::Error(format!("watch error {}: {}", s.code, s.message))
                    }
                }
                continue;
            }
            match self.apply_event(ev, &mut current) {
                Ok(()) => *rv = Some(current.clone()),
                Err(end) => return end,
            }
        }
    }

    /// Deliver every cached object to the handlers as an update with itself.
    pub fn resync(&self) {
        let mut changes = Vec::new();
        self.store.for_each(|o| {
            changes.push(Change::Updated {
                old: o.clone(),
                new: o.clone(),
            })
        });
        self.dispatch(&changes);
    }

    async fn resync_loop(self: Arc<Self>, period: Duration, cancel: CancellationToken) {
        loop {
            let jitter = rand::rng().random_range(0.0..0.1);
            tokio::select! {
                _ = tokio::time::sleep(period.mul_f64(1.0 + jitter)) => {}
                _ = cancel.cancelled() => return,
            }
            if self.has_synced() {
                self.resync();
            }
        }
    }

    /// Run the reflector until `cancel` fires.
    pub async fn run(self: Arc<Self>, api: impl ListWatch<K>, cancel: CancellationToken) {
        if let Some(period) = self.config.resync.filter(|p| !p.is_zero()) {
            tokio::spawn(self.clone().resync_loop(period, cancel.clone()));
        }
        self.reflect(api, cancel).await;
    }

    async fn reflect(self: Arc<Self>, api: impl ListWatch<K>, cancel: CancellationToken) {
        let kind = api.describe();
        let mut rv: Option<String> = None;
        let mut use_watch_list = self.config.watch_list;
        let mut backoff = Backoff::new();
        while !cancel.is_cancelled() {
            if rv.is_none() && !use_watch_list {
                match self.list(&api).await {
                    Ok(v) => {
                        rv = Some(v);
                        backoff.reset();
                    }
                    Err(RoundEnd::Error(e)) => {
                        tracing::warn!(%kind, error = %e, "informer list failed; retrying");
                        sleep_or_cancel(backoff.step(), &cancel).await;
                        continue;
                    }
                    Err(_) => continue,
                }
            }
            match self.watch(&api, &mut rv, &cancel).await {
                RoundEnd::Resume => backoff.reset(),
                RoundEnd::Relist => {
                    tracing::info!(%kind, "informer relists: resourceVersion too old");
                    rv = None;
                }
                RoundEnd::NoWatchList => {
                    tracing::info!(%kind, "server refuses watch-list; using LIST + WATCH");
                    use_watch_list = false;
                    rv = None;
                }
                RoundEnd::Error(e) => {
                    tracing::warn!(%kind, error = %e, "informer watch failed; retrying");
                    sleep_or_cancel(backoff.step(), &cancel).await;
                }
            }
        }
        tracing::debug!(%kind, "informer stops: cancelled");
    }
}

async fn sleep_or_cancel(d: Duration, cancel: &CancellationToken) {
    tokio::select! {
        _ = tokio::time::sleep(d) => {}
        _ = cancel.cancelled() => {}
    }
}
