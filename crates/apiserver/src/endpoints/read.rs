//! GET and LIST.

use std::ops::Bound;
use std::sync::Arc;

use axum::http::StatusCode;
use base64::Engine;
use bytes::{BufMut, Bytes, BytesMut};
use serde_json::{json, Value};

use super::negotiate::{Format, Rendering};
use super::{Api, Reply};
use crate::endpoints::filter::Filter;
use crate::endpoints::request::{ListOptions, Query, RvMatch, Target};
use crate::endpoints::table::Tabulator;
use crate::machinery::protobuf::encode::ListItem;
use crate::registry::catalog::ResourceDef;
use crate::registry::catalog::Subresource;
use crate::storage::store::{object_key, Snapshot, StoredObject};
use apimachinery::status::{ApiError, ApiResult};

impl Api {
    /// The stored object for a target, or 404.
    pub(crate) fn current(&self, target: &Target) -> ApiResult<Arc<StoredObject>> {
        let def = target.resource;
        let name = target.name.as_deref().unwrap_or("");
        let key = object_key(target.namespace.as_deref(), name);
        self.store
            .get(&def.storage_key(), &key)
            .ok_or_else(|| ApiError::not_found(def.group, def.plural, name))
    }

    pub(super) fn get(
        &self,
        target: &Target,
        query: &Query,
        rendering: Rendering,
    ) -> ApiResult<Reply> {
        crate::endpoints::request::parse_rv(query.get("resourceVersion"))?;
        let obj = self.current(target)?;
        match target.subresource {
            Some(Subresource::Scale) => {
                let scale = scale_of(target.resource, &obj.value()?);
                match rendering {
                    Rendering::Table(opts) => {
                        let table =
                            Tabulator::scale(target.resource, opts).object_table(&scale, true)?;
                        Ok(Reply::json(StatusCode::OK, &table))
                    }
                    _ => Ok(Reply::json(StatusCode::OK, &scale)),
                }
            }
            // as stored: a protobuf answer is the object's cached encoding
            _ if rendering == Rendering::Full
                && !crate::registry::versions::converts(target.resource) =>
            {
                Ok(Reply::stored(StatusCode::OK, obj))
            }
            _ => Ok(Reply::json_bytes(
                StatusCode::OK,
                super::codec::render(target.resource, &obj, rendering)?,
            )),
        }
    }

    pub(super) fn list(
        &self,
        target: &Target,
        opts: &ListOptions,
        rendering: Rendering,
        format: Format,
    ) -> ApiResult<Reply> {
        let def = target.resource;
        let filter = Filter::for_request(target, opts)?;
        let resource = def.storage_key();
        let (snapshot, start) = match &opts.continue_token {
            Some(tok) => {
                let (rv, start) = decode_continue(tok)?;
                let snap = self.store.snapshot_at(&resource, rv).map_err(|_| {
                    ApiError::gone("The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.")
                })?;
                (snap, Some(start))
            }
            None => (self.list_snapshot(&resource, opts)?, None),
        };
        let prefix = filter.key_prefix();
        let lower = match (&start, &prefix) {
            (Some(s), _) => Bound::Included(s.clone()),
            (None, Some(p)) => Bound::Included(p.clone()),
            (None, None) => Bound::Unbounded,
        };
        let limit = opts.limit.map(|l| l as usize);
        let tabulator = match rendering {
            Rendering::Table(o) => Some(Tabulator::new(def, o)),
            _ => None,
        };
        let mut rows: Vec<Value> = Vec::new();
        let mut out = BytesMut::with_capacity(4096);
        // protobuf: the items as stored objects (their encoding cached with them) or
        // rendered JSON, encoded at the end (no list value)
        let protobuf = format == Format::Protobuf && tabulator.is_none();
        let mut items: Vec<ListItem> = Vec::new();
        // JSON items as stored: written from the snapshot's objects after the list's
        // metadata is known, in chunks for a big list (other renderings build `out`)
        let as_stored = !protobuf
            && tabulator.is_none()
            && rendering == Rendering::Full
            && !crate::registry::versions::converts(def);
        let mut stored: Vec<Arc<StoredObject>> = Vec::new();
        let form = ItemForm::of(def, rendering);
        let mut count = 0usize;
        let mut last_key: Option<String> = None;
        let mut remaining = 0usize;
        let mut truncated = false;
        for (k, obj) in snapshot.table.range((lower, Bound::Unbounded)) {
            if let Some(p) = &prefix {
                if !k.starts_with(p.as_str()) {
                    break;
                }
            }
            if !filter.matches(k, obj) {
                continue;
            }
            if truncated {
                remaining += 1;
                continue;
            }
            if limit.is_some_and(|l| count >= l) {
                truncated = true;
                remaining += 1;
                continue;
            }
            if let Some(tab) = &tabulator {
                rows.push(tab.row(&obj.value()?)?);
            } else if protobuf {
                if crate::registry::versions::converts(def) || rendering != Rendering::Full {
                    items.push(ListItem::Json(super::codec::render(def, obj, rendering)?));
                } else {
                    items.push(obj.list_item()?);
                }
            } else if as_stored {
                stored.push(Arc::clone(obj));
            } else {
                if count > 0 {
                    out.put_u8(b',');
                }
                form.put(&super::codec::render(def, obj, rendering)?, &mut out);
            }
            count += 1;
            last_key = Some(k.clone());
        }
        let mut meta = serde_json::Map::new();
        meta.insert("resourceVersion".into(), json!(snapshot.rv.to_string()));
        if truncated {
            if let Some(k) = last_key {
                meta.insert(
                    "continue".into(),
                    json!(encode_continue(snapshot.rv, &format!("{k}\u{0}"))),
                );
                // upstream only counts remaining items when no selector was given
                if opts.label_selector.is_none() && opts.field_selector.is_none() {
                    meta.insert("remainingItemCount".into(), json!(remaining));
                }
            }
        }
        if let Some(tab) = tabulator {
            return Ok(Reply::json(StatusCode::OK, &tab.table(meta, rows, true)));
        }
        let (list_kind, list_version) = rendering.list_kind(def);
        if protobuf {
            let meta_value = Value::Object(std::mem::take(&mut meta));
            match crate::machinery::protobuf::encode::encode_list(
                &list_version,
                &list_kind,
                &meta_value,
                &items,
            ) {
                Some(Ok(pb)) => return Ok(Reply::protobuf_bytes(StatusCode::OK, pb.into())),
                Some(Err(e)) => return Err(ApiError::internal(e)),
                // no schema (then protobuf is not negotiated): JSON after all
                None => {
                    for (i, item) in items.iter().enumerate() {
                        if i > 0 {
                            out.put_u8(b',');
                        }
                        form.put(item.json(), &mut out);
                    }
                }
            }
            if let Value::Object(m) = meta_value {
                meta = m;
            }
        }
        let head = format!(
            "{{\"kind\":\"{list_kind}\",\"apiVersion\":\"{list_version}\",\"metadata\":{},\"items\":[",
            Value::Object(meta)
        );
        if as_stored {
            return Ok(json_list(Bytes::from(head), stored, form, LIST_CHUNK));
        }
        let mut body = BytesMut::with_capacity(head.len() + out.len() + 2);
        body.extend_from_slice(head.as_bytes());
        body.extend_from_slice(&out);
        body.extend_from_slice(b"]}");
        Ok(Reply::json_bytes(StatusCode::OK, body.freeze()))
    }

    fn list_snapshot(&self, resource: &str, opts: &ListOptions) -> ApiResult<Snapshot> {
        let rv = opts.rv_number()?;
        match (rv, opts.rv_match) {
            (Some(rv), Some(RvMatch::Exact)) => self.store.snapshot_at(resource, rv).map_err(|floor| {
                ApiError::gone(format!(
                    "The resourceVersion for the provided list is too old. (requested {rv}, oldest available {floor})"
                ))
            }),
            (Some(rv), _) if rv > 0 && rv > self.store.current_rv() => {
                let mut e = ApiError::new(504, "Timeout", format!("Timeout: Too large resource version: {rv}, current: {}", self.store.current_rv()));
                e.retry_after = Some(1);
                Err(e)
            }
            _ => Ok(self.store.snapshot(resource)),
        }
    }
}

/// Size of the pieces a big JSON LIST body is written in.
const LIST_CHUNK: usize = 128 * 1024;

/// How a LIST writes its items. Upstream's lists of built-in kinds leave each item's
/// `kind` and `apiVersion` out (the list's own `kind` names them; clients such as
/// client-go and the Python client see them empty, kubernetes/kubernetes#3030), while
/// custom resources' items, kept untyped, and `PartialObjectMetadata` items keep theirs.
struct ItemForm {
    /// The stored JSON's leading `{"kind":…,"apiVersion":…,` to leave out, when items
    /// go without them.
    type_meta: Option<Box<[u8]>>,
}

impl ItemForm {
    /// The form of `def`'s items in a list rendered as `rendering`.
    fn of(def: &ResourceDef, rendering: Rendering) -> ItemForm {
        let bare = rendering == Rendering::Full && def.custom.is_none();
        ItemForm {
            type_meta: bare.then(|| {
                format!(
                    "{{\"kind\":\"{}\",\"apiVersion\":\"{}\",",
                    def.kind,
                    def.api_version()
                )
                .into_bytes()
                .into_boxed_slice()
            }),
        }
    }

    /// Appends one item's JSON (an object serialised by the server) as the list holds it.
    fn put(&self, json: &[u8], out: &mut BytesMut) {
        let Some(prefix) = &self.type_meta else {
            out.extend_from_slice(json);
            return;
        };
        if let Some(rest) = json.strip_prefix(&prefix[..]) {
            // the common case: the server writes kind and apiVersion first
            out.put_u8(b'{');
            out.extend_from_slice(rest);
            return;
        }
        match serde_json::from_slice::<Value>(json) {
            Ok(Value::Object(mut m)) => {
                // shift, not swap: the other fields keep their order
                m.shift_remove("kind");
                m.shift_remove("apiVersion");
                // a map of JSON values always serialises
                if let Ok(v) = serde_json::to_vec(&m) {
                    out.extend_from_slice(&v);
                    return;
                }
                out.extend_from_slice(json);
            }
            _ => out.extend_from_slice(json),
        }
    }
}

/// A JSON list of stored objects: `head` (the list up to its `items` array), the
/// objects' stored JSON in `form`, separated by commas, then `]}`. A body larger than
/// `chunk` is streamed in pieces of about `chunk` bytes (chunked transfer encoding, as
/// kube-apiserver writes big lists) straight from the objects, so the whole answer is
/// never held in one buffer and the first bytes leave at once; a smaller one is one
/// buffer with its length. The objects are the snapshot's: the stream holds no lock.
fn json_list(head: Bytes, items: Vec<Arc<StoredObject>>, form: ItemForm, chunk: usize) -> Reply {
    if upper_size(&head, &items) <= chunk {
        return Reply::json_bytes(StatusCode::OK, one_buffer(&head, &items, &form));
    }
    Reply::json_stream(
        StatusCode::OK,
        axum::body::Body::from_stream(futures::stream::iter(
            ListPieces::new(head, items, form, chunk).map(Ok::<Bytes, std::convert::Infallible>),
        )),
    )
}

/// The size of a list body with whole stored objects: at least the body's size in any
/// [`ItemForm`] (which only leaves fields out).
fn upper_size(head: &[u8], items: &[Arc<StoredObject>]) -> usize {
    head.len()
        + items.iter().map(|o| o.json.len()).sum::<usize>()
        + items.len().saturating_sub(1)
        + 2
}

/// A JSON list of stored objects in one buffer.
fn one_buffer(head: &[u8], items: &[Arc<StoredObject>], form: &ItemForm) -> Bytes {
    let mut body = BytesMut::with_capacity(upper_size(head, items));
    body.extend_from_slice(head);
    for (i, obj) in items.iter().enumerate() {
        if i > 0 {
            body.put_u8(b',');
        }
        form.put(&obj.json, &mut body);
    }
    body.extend_from_slice(b"]}");
    body.freeze()
}

/// The pieces of a JSON list body: each about `chunk` bytes (at least one object, so
/// an object larger than `chunk` is a piece of its own size), the first starting with
/// the head, the last ending with `]}`.
struct ListPieces {
    head: Option<Bytes>,
    items: std::iter::Peekable<std::vec::IntoIter<Arc<StoredObject>>>,
    form: ItemForm,
    first: bool,
    done: bool,
    chunk: usize,
}

impl ListPieces {
    fn new(head: Bytes, items: Vec<Arc<StoredObject>>, form: ItemForm, chunk: usize) -> ListPieces {
        ListPieces {
            head: Some(head),
            items: items.into_iter().peekable(),
            form,
            first: true,
            done: false,
            chunk,
        }
    }
}

impl Iterator for ListPieces {
    type Item = Bytes;

    fn next(&mut self) -> Option<Bytes> {
        if self.done {
            return None;
        }
        let mut buf = BytesMut::with_capacity(self.chunk);
        if let Some(head) = self.head.take() {
            buf.extend_from_slice(&head);
        }
        loop {
            let Some(obj) = self.items.peek() else {
                if !buf.is_empty() && buf.len() + 2 > self.chunk {
                    // the end in a piece of its own
                    break;
                }
                buf.extend_from_slice(b"]}");
                self.done = true;
                break;
            };
            // the whole stored object's length: the item is at most that long
            let len = obj.json.len() + usize::from(!self.first);
            if !buf.is_empty() && buf.len() + len > self.chunk {
                break;
            }
            if !self.first {
                buf.put_u8(b',');
            }
            self.first = false;
            self.form.put(&obj.json, &mut buf);
            self.items.next();
        }
        Some(buf.freeze())
    }
}

/// The `autoscaling/v1` `Scale` view of an object.
pub fn scale_of(def: &ResourceDef, obj: &Value) -> Value {
    let md = obj.get("metadata").cloned().unwrap_or_else(|| json!({}));
    let mut meta = serde_json::Map::new();
    for f in [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
    ] {
        if let Some(v) = md.get(f) {
            meta.insert(f.into(), v.clone());
        }
    }
    let (replicas, status_replicas, selector) = match def.custom.and_then(|c| c.scale.as_ref()) {
        Some(paths) => {
            let at = |p: &str| {
                crate::machinery::jsonpath::JsonPath::parse(p)
                    .ok()
                    .and_then(|jp| jp.first(obj).cloned())
            };
            (
                at(&paths.spec_replicas)
                    .and_then(|v| v.as_i64())
                    .unwrap_or(0),
                at(&paths.status_replicas)
                    .and_then(|v| v.as_i64())
                    .unwrap_or(0),
                paths
                    .label_selector
                    .as_deref()
                    .and_then(at)
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default(),
            )
        }
        None => (
            obj.pointer("/spec/replicas")
                .and_then(Value::as_i64)
                .unwrap_or(0),
            obj.pointer("/status/replicas")
                .and_then(Value::as_i64)
                .unwrap_or(0),
            obj.pointer("/spec/selector")
                .map(selector_string)
                .unwrap_or_default(),
        ),
    };
    // autoscaling/v1: ScaleSpec.replicas and ScaleStatus.selector are omitempty,
    // ScaleStatus.replicas is not
    let mut spec = serde_json::Map::new();
    if replicas != 0 {
        spec.insert("replicas".into(), json!(replicas));
    }
    let mut status = serde_json::Map::new();
    status.insert("replicas".into(), json!(status_replicas));
    if !selector.is_empty() {
        status.insert("selector".into(), json!(selector));
    }
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": meta,
        "spec": spec,
        "status": status,
    })
}

/// A label selector (metav1 form or RC map form) as a selector string.
fn selector_string(sel: &Value) -> String {
    if sel.get("matchLabels").is_some() || sel.get("matchExpressions").is_some() {
        match apimachinery::selector::LabelSelector::from_label_selector_json(sel) {
            Ok(s) => s.to_string(),
            Err(_) => String::new(),
        }
    } else if let Some(m) = sel.as_object() {
        let mut parts: Vec<String> = m
            .iter()
            .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
            .collect();
        parts.sort();
        parts.join(",")
    } else {
        String::new()
    }
}

fn encode_continue(rv: u64, start: &str) -> String {
    let v = json!({"v": "meta.k8s.io/v1", "rv": rv, "start": start});
    base64::engine::general_purpose::URL_SAFE.encode(v.to_string())
}

fn decode_continue(tok: &str) -> ApiResult<(u64, String)> {
    let bad = || ApiError::bad_request(format!("continue key is not valid: {tok}"));
    let raw = base64::engine::general_purpose::URL_SAFE
        .decode(tok)
        .or_else(|_| base64::engine::general_purpose::STANDARD.decode(tok))
        .map_err(|_| bad())?;
    let v: Value = serde_json::from_slice(&raw).map_err(|_| bad())?;
    let rv = v.get("rv").and_then(Value::as_u64).ok_or_else(bad)?;
    let start = v.get("start").and_then(Value::as_str).ok_or_else(bad)?;
    Ok((rv, start.to_string()))
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::time::Duration;

    use axum::body::HttpBody as _;
    use axum::http::{HeaderMap, HeaderValue, Method};
    use http_body_util::BodyExt;

    use super::*;
    use crate::endpoints::negotiate::Format;
    use crate::endpoints::request::{route_in, Query, Route};
    use crate::registry::catalog::Catalog;
    use crate::storage::persist::Committer;
    use crate::storage::store::Store;

    const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";
    const METADATA: &str = "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io";
    const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

    /// A response as the client gets it: content type, the body's frames, and the body
    /// length when the response announces it.
    struct Answer {
        status: u16,
        content_type: String,
        frames: Vec<Bytes>,
        exact: Option<u64>,
    }

    impl Answer {
        fn body(&self) -> Vec<u8> {
            self.frames.concat()
        }

        fn value(&self) -> Value {
            serde_json::from_slice(&self.body()).expect("JSON body")
        }
    }

    async fn api() -> Arc<Api> {
        let store = Store::new(0, HashMap::new(), Committer::start(None), 100_000);
        store.attach_committer();
        Arc::new(Api::new(
            store,
            Duration::from_secs(60),
            crate::registry::custom::Registry::default(),
            crate::auth::Auth::none(),
        ))
    }

    async fn call(api: &Arc<Api>, method: Method, uri: &str, accept: &str, body: Value) -> Answer {
        let (path, query) = uri.split_once('?').unwrap_or((uri, ""));
        let Ok(Route::Resource(target)) = route_in(&api.catalog(), path) else {
            panic!("no resource at {path}");
        };
        let format = Format::for_accept(accept, false);
        let mut headers = HeaderMap::new();
        headers.insert("accept", HeaderValue::from_str(accept).unwrap());
        headers.insert("content-type", HeaderValue::from_static("application/json"));
        let body = if body.is_null() {
            Bytes::new()
        } else {
            Bytes::from(serde_json::to_vec(&body).unwrap())
        };
        let query = Query::parse(Some(query));
        let served = api.serve(&method, target, &query, &headers, body);
        let user = Arc::new(crate::machinery::user::UserInfo::apiserver());
        let response = match crate::machinery::user::scope(user, served).await {
            Ok(reply) => reply.into_response_as(format).await,
            Err(e) => crate::endpoints::error_response_as(&e, format),
        };
        let status = response.status().as_u16();
        let content_type = response.headers()["content-type"]
            .to_str()
            .unwrap()
            .to_string();
        let mut body = response.into_body();
        let exact = body.size_hint().exact();
        let mut frames = Vec::new();
        while let Some(frame) = body.frame().await {
            if let Ok(data) = frame.expect("body frame").into_data() {
                frames.push(data);
            }
        }
        Answer {
            status,
            content_type,
            frames,
            exact,
        }
    }

    /// `count` ConfigMaps of about `size` bytes in namespace `ns` (and `empty`, with
    /// none); names `cm-000`, `cm-001`, ..., every third labelled `third=yes`.
    async fn populated(ns: &str, count: usize, size: usize) -> Arc<Api> {
        let api = api().await;
        for n in [ns, "empty"] {
            let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}});
            let a = call(&api, Method::POST, "/api/v1/namespaces", "", ns).await;
            assert_eq!(a.status, 201);
        }
        let payload = "x".repeat(size);
        for i in 0..count {
            let mut labels = serde_json::Map::new();
            if i % 3 == 0 {
                labels.insert("third".into(), json!("yes"));
            }
            let cm = json!({
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": format!("cm-{i:03}"), "labels": labels},
                "data": {"payload": payload},
            });
            let uri = format!("/api/v1/namespaces/{ns}/configmaps");
            assert_eq!(call(&api, Method::POST, &uri, "", cm).await.status, 201);
        }
        api
    }

    /// The JSON list body as the server wrote it in one buffer before lists were
    /// streamed: the list's kind, apiVersion and metadata (a `serde_json` map), then the
    /// items' stored JSON joined with commas.
    fn one_buffer_body(meta: &Value, items: &[Arc<StoredObject>]) -> Vec<u8> {
        let mut out = Vec::new();
        for (i, obj) in items.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            let mut item: serde_json::Map<String, Value> =
                serde_json::from_slice(&obj.json).unwrap();
            assert_eq!(item.shift_remove("kind"), Some(json!("ConfigMap")));
            assert_eq!(item.shift_remove("apiVersion"), Some(json!("v1")));
            out.extend_from_slice(&serde_json::to_vec(&item).unwrap());
        }
        let head = format!(
            "{{\"kind\":\"ConfigMapList\",\"apiVersion\":\"v1\",\"metadata\":{},\"items\":[",
            meta
        );
        let mut body = head.into_bytes();
        body.extend_from_slice(&out);
        body.extend_from_slice(b"]}");
        body
    }
    fn stored_items(api: &Api, ns: &str, list: &Value) -> Vec<Arc<StoredObject>> {
        list["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| {
                let name = i["metadata"]["name"].as_str().unwrap();
                api.store
                    .get("/configmaps", &format!("{ns}/{name}"))
                    .expect("stored object")
            })
            .collect()
    }

    fn names(list: &Value) -> Vec<String> {
        list["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["metadata"]["name"].as_str().unwrap().to_string())
            .collect()
    }

    /// Checks a JSON list answer: 200, `application/json`, and the body byte for byte as
    /// the one-buffer writer made it; streamed (no length, pieces of at most a chunk)
    /// exactly when it is larger than a chunk. Returns the list.
    fn check_list(api: &Api, ns: &str, a: &Answer) -> Value {
        assert_eq!(a.status, 200);
        assert_eq!(a.content_type, "application/json");
        let list = a.value();
        let items = stored_items(api, ns, &list);
        let body = a.body();
        assert_eq!(
            body,
            one_buffer_body(&list["metadata"], &items),
            "streamed body equals the one-buffer body"
        );
        if body.len() > LIST_CHUNK {
            assert_eq!(a.exact, None, "a big list is streamed");
            assert!(a.frames.len() > 1);
            assert!(a.frames.iter().all(|f| f.len() <= LIST_CHUNK));
        } else {
            assert_eq!(
                a.exact,
                Some(body.len() as u64),
                "a small list is one buffer"
            );
        }
        list
    }

    #[tokio::test]
    async fn streamed_lists_are_byte_identical_to_one_buffer_lists() {
        // 300 objects of ~1.3 KiB: ~400 KiB, four chunks
        let api = populated("t", 300, 1024).await;
        let all = check_list(
            &api,
            "t",
            &call(
                &api,
                Method::GET,
                "/api/v1/namespaces/t/configmaps",
                "",
                Value::Null,
            )
            .await,
        );
        assert_eq!(names(&all).len(), 300);
        assert!(all["metadata"]["resourceVersion"].is_string());
        assert!(all["metadata"].get("continue").is_none());
        // empty
        let empty = check_list(
            &api,
            "empty",
            &call(
                &api,
                Method::GET,
                "/api/v1/namespaces/empty/configmaps",
                "",
                Value::Null,
            )
            .await,
        );
        assert_eq!(names(&empty).len(), 0);
        // small: one buffer
        let small = check_list(
            &api,
            "t",
            &call(
                &api,
                Method::GET,
                "/api/v1/namespaces/t/configmaps?limit=2",
                "",
                Value::Null,
            )
            .await,
        );
        assert_eq!(names(&small), ["cm-000", "cm-001"]);
        assert_eq!(small["metadata"]["remainingItemCount"], json!(298));
        // a selector: no remainingItemCount
        let third = check_list(
            &api,
            "t",
            &call(
                &api,
                Method::GET,
                "/api/v1/namespaces/t/configmaps?labelSelector=third%3Dyes",
                "",
                Value::Null,
            )
            .await,
        );
        assert_eq!(names(&third).len(), 100);
        // pages of 120 (~160 KiB each, streamed) through continue tokens, at the first
        // page's resourceVersion even after a write
        let mut uri = "/api/v1/namespaces/t/configmaps?limit=120".to_string();
        let mut seen = Vec::new();
        let mut rv = None;
        loop {
            let page = check_list(
                &api,
                "t",
                &call(&api, Method::GET, &uri, "", Value::Null).await,
            );
            let page_rv = page["metadata"]["resourceVersion"].clone();
            assert_eq!(*rv.get_or_insert(page_rv.clone()), page_rv);
            seen.extend(names(&page));
            if seen.len() == 120 {
                let late = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "zz-late"}});
                let a = call(
                    &api,
                    Method::POST,
                    "/api/v1/namespaces/t/configmaps",
                    "",
                    late,
                )
                .await;
                assert_eq!(a.status, 201);
            }
            match page["metadata"]["continue"].as_str() {
                Some(c) => {
                    assert_eq!(
                        page["metadata"]["remainingItemCount"],
                        json!(300 - seen.len())
                    );
                    uri = format!("/api/v1/namespaces/t/configmaps?limit=120&continue={c}");
                }
                None => break,
            }
        }
        assert_eq!(seen, names(&all));
    }

    #[test]
    fn pieces_join_to_the_one_buffer_body() {
        let obj = |name: &str, size: usize| {
            let v = json!({"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": name}, "data": {"p": "y".repeat(size)}});
            Arc::new(StoredObject::from_value(1, &v, &[]).unwrap())
        };
        let head = Bytes::from_static(b"{\"kind\":\"ConfigMapList\",\"items\":[");
        let sets: Vec<Vec<Arc<StoredObject>>> = vec![
            vec![],
            vec![obj("a", 10)],
            (0..50).map(|i| obj(&format!("o{i}"), i * 7)).collect(),
            // objects larger than a chunk are pieces of their own
            vec![obj("small", 1), obj("big", 500), obj("tiny", 0)],
        ];
        let cm = Catalog::builtin().lookup("", "v1", "configmaps").unwrap();
        for items in sets {
            for rendering in [Rendering::Full, Rendering::Metadata] {
                let whole = one_buffer(&head, &items, &ItemForm::of(cm, rendering));
                for chunk in [1, 16, 64, 100, 1 << 20] {
                    let pieces: Vec<Bytes> = ListPieces::new(
                        head.clone(),
                        items.clone(),
                        ItemForm::of(cm, rendering),
                        chunk,
                    )
                    .collect();
                    assert_eq!(pieces.concat(), whole.to_vec(), "chunk {chunk}");
                    // no piece is larger than a chunk but one holding only the head, one
                    // object (and its comma) or the end
                    let largest = items.iter().map(|o| o.json.len() + 1).max().unwrap_or(0);
                    let bound = chunk.max(largest).max(head.len()).max(2);
                    assert!(pieces.iter().all(|p| !p.is_empty() && p.len() <= bound));
                }
            }
        }
    }

    #[test]
    fn built_in_list_items_go_without_kind_and_api_version() {
        let cm = Catalog::builtin().lookup("", "v1", "configmaps").unwrap();
        let put = |form: &ItemForm, json: &str| {
            let mut out = BytesMut::new();
            form.put(json.as_bytes(), &mut out);
            String::from_utf8(out.to_vec()).unwrap()
        };
        let bare = ItemForm::of(cm, Rendering::Full);
        let cases = [
            // as the server stores objects: kind and apiVersion lead
            (
                r#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a"},"data":{"kind":"x"}}"#,
                r#"{"metadata":{"name":"a"},"data":{"kind":"x"}}"#,
            ),
            // elsewhere in the object, or only one of them
            (
                r#"{"metadata":{"name":"a"},"apiVersion":"v1","kind":"ConfigMap","data":{}}"#,
                r#"{"metadata":{"name":"a"},"data":{}}"#,
            ),
            (r#"{"apiVersion":"v1","metadata":{}}"#, r#"{"metadata":{}}"#),
            (
                r#"{"data":{},"kind":"ConfigMap","metadata":{},"immutable":true}"#,
                r#"{"data":{},"metadata":{},"immutable":true}"#,
            ),
            (
                r#"{"metadata":{"name":"a"}}"#,
                r#"{"metadata":{"name":"a"}}"#,
            ),
            // another kind's prefix is no match for the fast path, but still removed
            (
                r#"{"kind":"Secret","apiVersion":"v1","metadata":{}}"#,
                r#"{"metadata":{}}"#,
            ),
            // not an object: as it is
            ("[1]", "[1]"),
        ];
        for (stored, listed) in cases {
            assert_eq!(put(&bare, stored), listed, "{stored}");
        }
        // metadata-only items are PartialObjectMetadata with their type, as upstream
        let meta = ItemForm::of(cm, Rendering::Metadata);
        let partial =
            r#"{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{}}"#;
        assert_eq!(put(&meta, partial), partial);
        // custom resources' items keep theirs (they are stored untyped)
        let custom = ItemForm { type_meta: None };
        let cr = r#"{"kind":"Widget","apiVersion":"x.io/v1","metadata":{}}"#;
        assert_eq!(put(&custom, cr), cr);
    }

    #[tokio::test]
    async fn tables_metadata_and_protobuf_lists_stay_one_buffer() {
        let api = populated("t", 200, 1024).await;
        let uri = "/api/v1/namespaces/t/configmaps";
        let table = call(&api, Method::GET, uri, TABLE, Value::Null).await;
        assert_eq!(table.status, 200);
        assert!(table.exact.is_some());
        let t = table.value();
        assert_eq!(t["kind"], "Table");
        assert_eq!(t["rows"].as_array().unwrap().len(), 200);
        let meta = call(&api, Method::GET, uri, METADATA, Value::Null).await;
        assert_eq!(meta.status, 200);
        assert!(meta.exact.is_some());
        let m = meta.value();
        assert_eq!(m["kind"], "PartialObjectMetadataList");
        assert_eq!(m["items"].as_array().unwrap().len(), 200);
        assert!(m["items"][0].get("data").is_none());
        let pb = call(&api, Method::GET, uri, PROTOBUF, Value::Null).await;
        assert_eq!(pb.status, 200);
        assert_eq!(pb.content_type, PROTOBUF);
        assert!(pb.exact.is_some());
        assert!(pb.body().starts_with(b"k8s\0"));
    }
}
