//! WATCH: newline-delimited JSON events, one chunk per event; or, when the client
//! negotiated protobuf, length-prefixed `WatchEvent`s holding protobuf objects
//! (`application/vnd.kubernetes.protobuf;stream=watch`, upstream's framing).
//!
//! A watch starts from a resourceVersion (events after it, replayed from the history),
//! or with the current state as synthetic ADDED events (`sendInitialEvents`, or no
//! resourceVersion), optionally closed by the `k8s.io/initial-events-end` BOOKMARK.
//! Label and field selectors turn changes that cross the selector boundary into ADDED
//! or DELETED, as upstream does. A watcher that falls behind the live channel catches
//! up from the history; only when the history no longer reaches back does it get the
//! 410 `Expired` ERROR event.

use std::ops::Bound;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use bytes::{Bytes, BytesMut};
use serde_json::{json, Value};
use tokio::sync::{broadcast, mpsc};
use tokio_stream::wrappers::ReceiverStream;
use tokio_stream::StreamExt;

use super::negotiate::Format;
use super::{Api, Reply};
use crate::endpoints::filter::Filter;
use crate::endpoints::request::{ListOptions, Target};
use crate::endpoints::table::Tabulator;
use crate::storage::store::{Event, EventType, Store, StoredObject};
use apimachinery::status::{ApiError, ApiResult};

/// Default watch duration when the client gives no timeout (upstream: 30 to 60 minutes).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(1800);

/// Size of the chunks the initial state of a watch is sent in.
const INITIAL_CHUNK: usize = 64 * 1024;

fn append_event(b: &mut BytesMut, kind: &str, obj: &[u8]) {
    b.extend_from_slice(b"{\"type\":\"");
    b.extend_from_slice(kind.as_bytes());
    b.extend_from_slice(b"\",\"object\":");
    b.extend_from_slice(obj);
    b.extend_from_slice(b"}\n");
}

fn event_line(kind: &str, obj: &[u8]) -> Bytes {
    let mut b = BytesMut::with_capacity(obj.len() + 32);
    append_event(&mut b, kind, obj);
    b.freeze()
}

fn error_line(e: &ApiError) -> Bytes {
    event_line("ERROR", e.to_status().to_string().as_bytes())
}

struct Watcher {
    def: &'static crate::registry::catalog::ResourceDef,
    rendering: super::negotiate::Rendering,
    /// For table watches: each event's object is a table of one row; only the first
    /// carries the column definitions, as upstream.
    table: Option<Tabulator>,
    headers_sent: AtomicBool,
    store: Arc<Store>,
    resource: String,
    filter: Filter,
    last_rv: u64,
    tx: mpsc::Sender<Bytes>,
    /// JSON lines or protobuf frames.
    format: Format,
}

impl Watcher {
    /// Append one event whose object is `obj` (JSON) in the watch's format.
    fn append(&self, b: &mut BytesMut, kind: &str, obj: &[u8]) {
        match self.format {
            Format::Json => append_event(b, kind, obj),
            Format::Protobuf => match serde_json::from_slice::<Value>(obj) {
                Ok(v) => self.append_value(b, kind, &v),
                Err(e) => tracing::warn!(error = %e, "watch: object skipped"),
            },
        }
    }

    /// Append one protobuf frame for `obj`.
    fn append_value(&self, b: &mut BytesMut, kind: &str, obj: &Value) {
        let mut out = Vec::new();
        match crate::machinery::protobuf::encode::watch_event(&mut out, kind, obj) {
            Some(Ok(())) => b.extend_from_slice(&out),
            Some(Err(e)) => tracing::warn!(error = %e, "watch: object skipped"),
            None => tracing::warn!(kind = ?obj.get("kind"), "watch: no protobuf encoding"),
        }
    }

    /// Append one event for a stored object: in protobuf, of an object watched as it
    /// is stored, its cached encoding wrapped into the frame (no parse, no encoding
    /// per watcher); otherwise as [`Watcher::render`] and [`Watcher::append`] do.
    fn append_stored(&self, b: &mut BytesMut, kind: &str, obj: &StoredObject) {
        if self.format == Format::Protobuf
            && self.table.is_none()
            && self.rendering == super::negotiate::Rendering::Full
            && !crate::registry::versions::converts(self.def)
        {
            if let Ok(Some(e)) = obj.protobuf() {
                b.reserve(e.full.len() + 32);
                if let Err(e) =
                    crate::machinery::protobuf::encode::watch_event_encoded(b, kind, &e.full)
                {
                    tracing::warn!(error = %e, "watch: object skipped");
                }
                return;
            }
        }
        if let Some(json) = self.render(obj) {
            self.append(b, kind, &json);
        }
    }

    /// One event as a chunk; `None` when it cannot be encoded (logged).
    fn event(&self, kind: &str, obj: &[u8]) -> Option<Bytes> {
        if self.format == Format::Json {
            return Some(event_line(kind, obj));
        }
        let mut b = BytesMut::with_capacity(obj.len() + 64);
        self.append(&mut b, kind, obj);
        (!b.is_empty()).then(|| b.freeze())
    }

    /// The ERROR event for `e`.
    fn error_event(&self, e: &ApiError) -> Bytes {
        if self.format == Format::Json {
            return error_line(e);
        }
        let mut b = BytesMut::new();
        self.append_value(&mut b, "ERROR", &e.to_status());
        b.freeze()
    }

    fn bookmark(&self, rv: u64, initial_end: bool) -> Bytes {
        let mut meta = json!({"resourceVersion": rv.to_string()});
        if initial_end {
            meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        if self.table.is_some() {
            // upstream prints the bookmark object like any other
            let obj = json!({"kind": self.def.kind, "apiVersion": self.def.api_version(), "metadata": meta});
            return match self.table_of(&obj) {
                Ok(b) => event_line("BOOKMARK", &b),
                Err(e) => error_line(&e),
            };
        }
        let (kind, api_version) = self.rendering.object_kind(self.def);
        let obj = json!({"kind": kind, "apiVersion": api_version, "metadata": meta});
        if self.format == Format::Protobuf {
            let mut b = BytesMut::new();
            self.append_value(&mut b, "BOOKMARK", &obj);
            return b.freeze();
        }
        event_line("BOOKMARK", obj.to_string().as_bytes())
    }

    fn matches(&self, key: &str, obj: &StoredObject) -> bool {
        self.filter.matches(key, obj)
    }

    /// Translate one change into the event this watcher sees, if any.
    fn translate(&self, ev: &Event) -> Option<Bytes> {
        let now = self.matches(&ev.key, &ev.object);
        let before = ev.prev.as_ref().is_some_and(|p| self.matches(&ev.key, p));
        let kind = match ev.kind {
            EventType::Added => now.then_some("ADDED"),
            EventType::Deleted => (before || now).then_some("DELETED"),
            EventType::Modified => match (before, now) {
                (true, true) => Some("MODIFIED"),
                (false, true) => Some("ADDED"),
                (true, false) => Some("DELETED"),
                (false, false) => None,
            },
        }?;
        if self.format == Format::Json {
            return self.event(kind, &self.render(&ev.object)?);
        }
        let mut b = BytesMut::with_capacity(ev.object.json.len() + 64);
        self.append_stored(&mut b, kind, &ev.object);
        (!b.is_empty()).then(|| b.freeze())
    }

    /// A table of one row for `obj` (stored representation); headers the first time.
    fn table_of(&self, obj: &Value) -> ApiResult<Bytes> {
        let Some(tab) = &self.table else {
            return Err(ApiError::internal("not a table watch"));
        };
        let headers = !self.headers_sent.swap(true, Ordering::Relaxed);
        super::codec::to_bytes(&tab.object_table(obj, headers)?)
    }

    /// The object as the watched version; `None` (logged) when it cannot be converted.
    fn render(&self, obj: &StoredObject) -> Option<Bytes> {
        let rendered = if self.table.is_some() {
            obj.value().and_then(|v| self.table_of(&v))
        } else {
            super::codec::render(self.def, obj, self.rendering)
        };
        match rendered {
            Ok(b) => Some(b),
            Err(e) => {
                tracing::warn!(error = %e, "watch: object skipped");
                None
            }
        }
    }

    async fn send(&self, b: Bytes) -> bool {
        self.tx.send(b).await.is_ok()
    }

    /// Deliver one event; false when the client is gone.
    async fn deliver(&mut self, ev: &Event) -> bool {
        if ev.rv <= self.last_rv || &*ev.resource != self.resource.as_str() {
            return true;
        }
        self.last_rv = ev.rv;
        match self.translate(ev) {
            Some(line) => self.send(line).await,
            None => true,
        }
    }
}

impl Api {
    pub(super) fn watch(
        &self,
        target: &Target,
        opts: ListOptions,
        rendering: super::negotiate::Rendering,
        format: Format,
    ) -> ApiResult<Reply> {
        let def = target.resource;
        let filter = Filter::for_request(target, &opts)?;
        let rv = opts.rv_number()?;
        let legacy_initial = opts.send_initial_events.is_none() && matches!(rv, None | Some(0));
        let send_initial = opts.send_initial_events.unwrap_or(false) || legacy_initial;
        let resource = def.storage_key();
        let from = if send_initial {
            None
        } else {
            match rv {
                Some(r) if r > 0 => Some(r),
                _ => Some(self.store.current_rv()),
            }
        };
        let timeout = opts
            .timeout_seconds
            .filter(|t| *t > 0)
            .map(|t| Duration::from_secs(t as u64))
            .unwrap_or(DEFAULT_TIMEOUT);
        let (tx, rx) = mpsc::channel::<Bytes>(256);
        let body =
            Body::from_stream(ReceiverStream::new(rx).map(Ok::<Bytes, std::convert::Infallible>));
        let sub = self.store.subscribe(&resource, from, send_initial);
        let table = match rendering {
            super::negotiate::Rendering::Table(o) => Some(Tabulator::new(def, o)),
            _ => None,
        };
        let mut w = Watcher {
            def,
            rendering,
            table,
            headers_sent: AtomicBool::new(false),
            store: self.store.clone(),
            resource,
            filter,
            last_rv: from.unwrap_or(0),
            tx,
            format,
        };
        let bookmarks = opts.allow_bookmarks;
        let initial_end_marker = opts.send_initial_events == Some(true) && bookmarks;
        let interval = self.bookmark_interval;
        let requested_rv = rv.unwrap_or(0);
        tokio::spawn(async move {
            let sub = match sub {
                Ok(s) => s,
                Err(floor) => {
                    let e = ApiError::gone(format!(
                        "too old resource version: {requested_rv} ({floor})"
                    ));
                    let _ = w.send(w.error_event(&e)).await;
                    return;
                }
            };
            let deadline = tokio::time::sleep(timeout);
            tokio::pin!(deadline);
            if let Some(snap) = sub.snapshot {
                let lower = match w.filter.key_prefix() {
                    Some(p) => Bound::Included(p),
                    None => Bound::Unbounded,
                };
                let prefix = w.filter.key_prefix();
                // the initial state is all ready at once: send it in chunks of about
                // 64 KiB rather than one chunk per object
                let mut batch = BytesMut::with_capacity(INITIAL_CHUNK);
                for (k, o) in snap.table.range((lower, Bound::Unbounded)) {
                    if prefix.as_ref().is_some_and(|p| !k.starts_with(p.as_str())) {
                        break;
                    }
                    if !w.matches(k, o) {
                        continue;
                    }
                    w.append_stored(&mut batch, "ADDED", o);
                    if batch.len() >= INITIAL_CHUNK {
                        let full =
                            std::mem::replace(&mut batch, BytesMut::with_capacity(INITIAL_CHUNK));
                        if !w.send(full.freeze()).await {
                            return;
                        }
                    }
                }
                if !batch.is_empty() && !w.send(batch.freeze()).await {
                    return;
                }
                w.last_rv = snap.rv;
                if initial_end_marker && !w.send(w.bookmark(snap.rv, true)).await {
                    return;
                }
            }
            for ev in &sub.backlog {
                if !w.deliver(ev).await {
                    return;
                }
            }
            let mut receiver = sub.receiver;
            let mut lagged = false;
            loop {
                let tick = tokio::time::sleep(interval);
                tokio::select! {
                    _ = &mut deadline => return,
                    _ = w.tx.closed() => return,
                    _ = tick, if bookmarks => {
                        let committed = w.store.committed_rv();
                        if receiver.is_empty() && !lagged {
                            let rv = committed.max(w.last_rv);
                            w.last_rv = rv;
                            if !w.send(w.bookmark(rv, false)).await { return; }
                        }
                    }
                    r = receiver.recv() => match r {
                        Ok(ev) => {
                            if lagged {
                                lagged = false;
                                match w.store.events_between(&w.resource, w.last_rv, ev.rv) {
                                    Some(missed) => {
                                        for m in &missed {
                                            if !w.deliver(m).await { return; }
                                        }
                                    }
                                    None => {
                                        let e = ApiError::gone(format!("too old resource version: {} ({})", w.last_rv, w.store.history_floor()));
                                        let _ = w.send(w.error_event(&e)).await;
                                        return;
                                    }
                                }
                            }
                            if !w.deliver(&ev).await { return; }
                        }
                        Err(broadcast::error::RecvError::Lagged(_)) => lagged = true,
                        Err(broadcast::error::RecvError::Closed) => return,
                    },
                }
            }
        });
        Ok(Reply::stream(body, format.content_type(true)))
    }
}
