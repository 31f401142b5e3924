//! Informer: a reflector (LIST/WATCH loop) feeding a [`Store`] and event handlers.
//!
//! The reflector prefers a watch-list (`sendInitialEvents`, one request that streams the
//! current state then the changes) and falls back to paginated LIST + WATCH when the
//! server refuses it. It follows bookmarks, resumes a broken watch from the last
//! resourceVersion, relists on 410 Gone (turning the difference into ADDED / UPDATED /
//! DELETED so handlers see no phantom and lose nothing), and backs off with jitter on
//! errors. Handlers are called in order, one change at a time, after the store is
//! updated; a handler added late first sees every cached object as added.

use std::collections::HashSet;
use std::fmt::Debug;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use futures::stream::BoxStream;
use futures::{FutureExt, StreamExt, TryStreamExt};
use kube::api::{ListParams, ObjectList, WatchEvent, WatchParams};
use kube::Resource;
use rand::Rng;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::value::RawValue;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::store::{Change, Dict, Head, Slot, Storage, Store, StoreKey, DICT_BYTES};

/// A cached object as the server sent it.
pub type RawObject = Box<RawValue>;

/// The LIST and WATCH calls an informer makes. Objects stay raw JSON here: the informer
/// reads the few metadata fields it needs and stores the rest as sent.
pub trait ListWatch: Send + Sync + 'static {
    /// One page of a LIST.
    fn list<'a>(&'a self, lp: &'a ListParams)
        -> BoxFuture<'a, kube::Result<ObjectList<RawObject>>>;
    /// A WATCH from resourceVersion `rv`.
    fn watch<'a>(
        &'a self,
        wp: &'a WatchParams,
        rv: &'a str,
    ) -> BoxFuture<'a, kube::Result<BoxStream<'static, kube::Result<WatchEvent<RawObject>>>>>;
    /// What is listed (for logs).
    fn describe(&self) -> String;
}

/// Lists and watches one resource collection (all namespaces or one) through a
/// [`kube::Client`], as whole objects or as metadata only (`PartialObjectMetadata`).
pub struct ResourceApi {
    client: kube::Client,
    request: kube::core::Request,
    metadata: bool,
}

impl ResourceApi {
    /// The collection at `url_path` (`/api/v1/configmaps`, `/apis/apps/v1/namespaces/x/deployments`).
    pub fn new(client: kube::Client, url_path: String) -> Self {
        ResourceApi {
            client,
            request: kube::core::Request::new(url_path),
            metadata: false,
        }
    }

    /// The same collection, as `PartialObjectMetadata`.
    pub fn metadata_only(mut self) -> Self {
        self.metadata = true;
        self
    }
}

impl ListWatch for ResourceApi {
    fn list<'a>(
        &'a self,
        lp: &'a ListParams,
    ) -> BoxFuture<'a, kube::Result<ObjectList<RawObject>>> {
        async move {
            let req = if self.metadata {
                self.request.list_metadata(lp)
            } else {
                self.request.list(lp)
            }
            .map_err(kube::Error::BuildRequest)?;
            self.client.request::<ObjectList<RawObject>>(req).await
        }
        .boxed()
    }

    fn watch<'a>(
        &'a self,
        wp: &'a WatchParams,
        rv: &'a str,
    ) -> BoxFuture<'a, kube::Result<BoxStream<'static, kube::Result<WatchEvent<RawObject>>>>> {
        async move {
            let req = if self.metadata {
                self.request.watch_metadata(wp, rv)
            } else {
                self.request.watch(wp, rv)
            }
            .map_err(kube::Error::BuildRequest)?;
            self.client
                .request_events::<RawObject>(req)
                .await
                .map(|s| s.boxed())
        }
        .boxed()
    }

    fn describe(&self) -> String {
        let what = if self.metadata { " (metadata)" } else { "" };
        format!("{}{what}", self.request.url_path)
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
    /// How cached objects are held (default: compact, decoded on read).
    pub storage: Storage,
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
            storage: Storage::Compact,
        }
    }
}

type Handler<K> = (HandlerId, Box<dyn Fn(&Change<K>) + Send + Sync>);

/// Names a handler added to an informer, to remove it later.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct HandlerId(u64);

/// Changes an object before it is stored (drop fields nobody reads, say).
pub type Transform<K> = Arc<dyn Fn(K) -> K + Send + Sync>;

/// A running informer for kind `K`.
pub struct Informer<K> {
    store: Arc<Store<K>>,
    handlers: Mutex<Vec<Handler<K>>>,
    next_handler: std::sync::atomic::AtomicU64,
    synced: watch::Sender<bool>,
    config: InformerConfig,
    transform: Option<Transform<K>>,
    /// one shared string per namespace for the keys of this informer's objects
    namespaces: Mutex<HashSet<Arc<str>>>,
    /// what compact objects are compressed against, once [`DICT_BYTES`] of JSON came
    dict: std::sync::OnceLock<Arc<Dict>>,
    /// the JSON gathered for `dict` until then
    dict_samples: Mutex<Vec<u8>>,
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

/// `json` without the member whose value is `value` (a slice of `json`) in the object
/// that holds it: removes `"key": value` and one adjacent comma.
fn cut_member(json: &str, value: &RawValue) -> Option<String> {
    let start = (value.get().as_ptr() as usize).checked_sub(json.as_ptr() as usize)?;
    let end = start + value.get().len();
    // the key is the last string before the value: `"managedFields"` then spaces and `:`
    let before = json.get(..start)?.trim_end().strip_suffix(':')?.trim_end();
    let key_start = before.strip_suffix('"').and_then(|b| b.rfind('"'))?;
    let head = json[..key_start].trim_end();
    let tail = json.get(end..)?;
    let (head, tail) = match head.strip_suffix(',') {
        Some(h) => (h, tail),
        None => {
            let t = tail.trim_start();
            (head, t.strip_prefix(',').unwrap_or(t))
        }
    };
    // exactly the size it needs: the cache keeps this string, and an allocator shrinks
    // a grown one in place (mimalloc keeps a block down to half its size), so a string
    // built by appending would hold up to twice its length for as long as it is cached
    let mut out = String::with_capacity(head.len() + tail.len());
    out.push_str(head);
    out.push_str(tail);
    Some(out)
}

/// A watch or list object, read for the store.
struct Ingested<K> {
    key: StoreKey,
    resource_version: Option<String>,
    slot: Slot<K>,
}

impl<K> Informer<K>
where
    K: Resource + Clone + DeserializeOwned + Serialize + Debug + Send + Sync + 'static,
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
            next_handler: std::sync::atomic::AtomicU64::new(0),
            synced,
            config,
            transform,
            namespaces: Mutex::new(HashSet::new()),
            dict: std::sync::OnceLock::new(),
            dict_samples: Mutex::new(Vec::new()),
        })
    }

    /// A compact slot of `raw`: compressed against the informer's dictionary, or as it
    /// is while the first [`DICT_BYTES`] of JSON make the dictionary.
    fn pack(&self, raw: Box<RawValue>) -> Slot<K> {
        if let Some(dict) = self.dict.get() {
            return dict.pack(raw);
        }
        let mut samples = self.dict_samples.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(dict) = self.dict.get() {
            return dict.pack(raw);
        }
        let json = raw.get().as_bytes();
        let take = json.len().min(DICT_BYTES - samples.len());
        samples.extend_from_slice(&json[..take]);
        if samples.len() < DICT_BYTES {
            return Slot::Wire(raw);
        }
        let dict = self
            .dict
            .get_or_init(|| Dict::new(std::mem::take(&mut *samples)));
        dict.pack(raw)
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
    pub fn add_handler(&self, handler: impl Fn(&Change<K>) + Send + Sync + 'static) -> HandlerId {
        let id = HandlerId(
            self.next_handler
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        );
        let mut handlers = self.lock_handlers();
        self.store.for_each(|o| handler(&Change::Added(o)));
        handlers.push((id, Box::new(handler)));
        id
    }

    /// Stop calling the handler `id` (once this returns, it is not running and will not
    /// run again).
    pub fn remove_handler(&self, id: HandlerId) {
        self.lock_handlers().retain(|(h, _)| *h != id);
    }

    /// Number of handlers registered.
    pub fn handler_count(&self) -> usize {
        self.lock_handlers().len()
    }

    fn lock_handlers(&self) -> std::sync::MutexGuard<'_, Vec<Handler<K>>> {
        self.handlers.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn dispatch(handlers: &[Handler<K>], changes: &[Change<K>]) {
        for c in changes {
            for (_, h) in handlers {
                h(c);
            }
        }
    }

    /// Read one object from the wire: its key, its resourceVersion and what to store
    /// (managedFields stripped, transform applied). `None` (logged) for an object without
    /// a name or one that does not decode where decoding is needed.
    fn ingest(&self, raw: RawObject) -> Option<Ingested<K>> {
        let head: Head = match serde_json::from_str(raw.get()) {
            Ok(h) => h,
            Err(e) => {
                tracing::warn!(error = %e, "informer skips an object it cannot read");
                return None;
            }
        };
        let meta = head.metadata;
        let name = meta.name.as_deref().filter(|n| !n.is_empty())?;
        let namespace = meta
            .namespace
            .as_deref()
            .filter(|n| !n.is_empty())
            .map(|ns| {
                let mut set = self.namespaces.lock().unwrap_or_else(|e| e.into_inner());
                match set.get(ns) {
                    Some(shared) => shared.clone(),
                    None => {
                        let shared: Arc<str> = Arc::from(ns);
                        set.insert(shared.clone());
                        shared
                    }
                }
            });
        let key = StoreKey::new(namespace, name);
        let resource_version = meta.resource_version.map(|v| v.into_owned());
        let stripped = match meta.managed_fields {
            Some(mf) if self.config.strip_managed_fields => cut_member(raw.get(), mf),
            _ => None,
        };
        let raw = match stripped.map(RawValue::from_string) {
            Some(Ok(r)) => r,
            _ => raw,
        };
        let slot = if self.transform.is_none() && self.config.storage == Storage::Compact {
            self.pack(raw)
        } else {
            let mut obj: K = match serde_json::from_str(raw.get()) {
                Ok(o) => o,
                Err(e) => {
                    tracing::warn!(object = %key, error = %e, "informer skips an object that does not decode");
                    return None;
                }
            };
            if let Some(t) = &self.transform {
                obj = t(obj);
            }
            match self.config.storage {
                Storage::Decoded => Slot::Object(Arc::new(obj)),
                Storage::Compact => match serde_json::value::to_raw_value(&obj) {
                    Ok(r) => self.pack(r),
                    Err(_) => Slot::Object(Arc::new(obj)),
                },
            }
        };
        Some(Ingested {
            key,
            resource_version,
            slot,
        })
    }

    /// Replace the store's content and tell the handlers what changed.
    fn replace(&self, items: Vec<(StoreKey, Slot<K>)>) {
        /// Changes decoded at once: a relist of a large cluster's pods decodes them a
        /// batch at a time, never all together.
        const BATCH: usize = 256;
        let handlers = self.lock_handlers();
        let mut pending = self.store.replace(items, !handlers.is_empty()).into_iter();
        loop {
            let changes = self.store.resolve(pending.by_ref().take(BATCH));
            if changes.is_empty() && pending.len() == 0 {
                break;
            }
            Self::dispatch(&handlers, &changes);
        }
    }

    fn apply_event(&self, ev: WatchEvent<RawObject>, rv: &mut String) -> Result<(), RoundEnd> {
        match ev {
            WatchEvent::Added(o) | WatchEvent::Modified(o) => {
                let Some(item) = self.ingest(o) else {
                    return Ok(());
                };
                if let Some(v) = item.resource_version {
                    *rv = v;
                }
                let handlers = self.lock_handlers();
                let emit = !handlers.is_empty();
                let key = item.key.clone();
                let (new, old) = self.store.apply(item.key, item.slot, emit);
                if let (true, Some(new)) = (emit, new) {
                    let change = match old.and_then(|o| o.decode(&key)) {
                        Some(old) => Change::Updated { old, new },
                        None => Change::Added(new),
                    };
                    Self::dispatch(&handlers, &[change]);
                }
            }
            WatchEvent::Deleted(o) => {
                let Some(item) = self.ingest(o) else {
                    return Ok(());
                };
                if let Some(v) = item.resource_version {
                    *rv = v;
                }
                let handlers = self.lock_handlers();
                let old = self.store.delete(&item.key);
                if !handlers.is_empty() {
                    // the deleted object's final state, as client-go hands OnDelete the
                    // event's object: the cached copy may miss changes whose events were
                    // lost (an adoption, say) and handlers act on its owner references
                    let last = item
                        .slot
                        .decode(&item.key)
                        .or_else(|| old.and_then(|s| s.decode(&item.key)));
                    if let Some(last) = last {
                        Self::dispatch(&handlers, &[Change::Deleted(last)]);
                    }
                }
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
    async fn list(&self, api: &dyn ListWatch) -> Result<String, RoundEnd> {
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
            items.extend(
                page.items
                    .into_iter()
                    .filter_map(|o| self.ingest(o))
                    .map(|i| (i.key, i.slot)),
            );
            match page.metadata.continue_ {
                Some(c) if !c.is_empty() => lp.continue_token = Some(c),
                _ => break,
            }
        }
        self.replace(items);
        self.synced.send_replace(true);
        Ok(list_rv.unwrap_or_default())
    }

    /// WATCH from `rv` (or a watch-list when `rv` is `None`) until it ends.
    async fn watch(
        &self,
        api: &dyn ListWatch,
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
        let mut pending: Option<Vec<(StoreKey, Slot<K>)>> = initial.then(Vec::new);
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
                    WatchEvent::Added(o) | WatchEvent::Modified(o) => {
                        buf.extend(self.ingest(o).map(|i| (i.key, i.slot)))
                    }
                    WatchEvent::Deleted(o) => {
                        if let Some(gone) = self.ingest(o) {
                            buf.retain(|(k, _)| *k != gone.key);
                        }
                    }
                    WatchEvent::Bookmark(b) => {
                        let end = b
                            .metadata
                            .annotations
                            .get("k8s.io/initial-events-end")
                            .is_some_and(|v| v == "true");
                        current = b.metadata.resource_version;
                        if end {
                            self.replace(pending.take().unwrap_or_default());
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
        let handlers = self.lock_handlers();
        if handlers.is_empty() {
            return;
        }
        let mut changes = Vec::new();
        self.store.for_each(|o| {
            changes.push(Change::Updated {
                old: o.clone(),
                new: o,
            })
        });
        Self::dispatch(&handlers, &changes);
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
    pub async fn run(self: Arc<Self>, api: impl ListWatch, cancel: CancellationToken) {
        if let Some(period) = self.config.resync.filter(|p| !p.is_zero()) {
            tokio::spawn(self.clone().resync_loop(period, cancel.clone()));
        }
        self.reflect(api, cancel).await;
    }

    async fn reflect(self: Arc<Self>, api: impl ListWatch, cancel: CancellationToken) {
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

#[cfg(test)]
mod tests {
    use super::cut_member;
    use serde_json::value::RawValue;

    fn strip(json: &str) -> String {
        #[derive(serde::Deserialize)]
        struct M<'a> {
            #[serde(borrow, rename = "managedFields")]
            mf: &'a RawValue,
        }
        #[derive(serde::Deserialize)]
        struct T<'a> {
            #[serde(borrow)]
            metadata: M<'a>,
        }
        let t: T = serde_json::from_str(json).expect("json");
        let out = cut_member(json, t.metadata.mf).expect("cut");
        let v: serde_json::Value = serde_json::from_str(&out).expect("still json");
        assert!(v["metadata"].get("managedFields").is_none());
        out
    }

    #[test]
    fn managed_fields_are_cut_wherever_they_sit() {
        assert_eq!(
            strip(
                r#"{"metadata":{"name":"a","managedFields":[{"x":{"y":"]"}}],"uid":"u"},"data":{}}"#
            ),
            r#"{"metadata":{"name":"a","uid":"u"},"data":{}}"#
        );
        assert_eq!(
            strip(r#"{"metadata":{"managedFields":[],"name":"a"}}"#),
            r#"{"metadata":{"name":"a"}}"#
        );
        assert_eq!(
            strip(r#"{"metadata":{"name":"a","managedFields":[{}]}}"#),
            r#"{"metadata":{"name":"a"}}"#
        );
        assert_eq!(
            strip("{ \"metadata\" : { \"managedFields\" : [ ] } }"),
            "{ \"metadata\" : {} }"
        );
    }
}
