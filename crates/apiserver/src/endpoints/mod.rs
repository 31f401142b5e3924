//! The resource API: GET, LIST, WATCH, POST, PUT, PATCH and DELETE on the catalogue's
//! resources and their subresources.
//!
//! Handlers here speak Kubernetes (targets, options, objects, `Status` errors); the
//! HTTP framing lives in [`crate::endpoints::http`].

mod apply;
pub mod body;
pub mod codec;
mod convert;
mod delete;
pub mod discovery;
mod eviction;
pub mod filter;
pub mod http;
pub mod managed;
pub mod metrics;
pub mod negotiate;
pub mod oidc;
pub mod openapi;
mod podlog;
mod read;
pub mod request;
mod review;
mod serviceaccount_admission;
pub mod table;
mod tokenrequest;
mod watch;
mod write;

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::Response;
use bytes::Bytes;
use serde_json::Value;

use crate::endpoints::request::{Query, Target};
use crate::registry::catalog::{Catalog, Subresource};
use crate::storage::store::{Store, StoredObject};
use apimachinery::status::{ApiError, ApiResult};

/// Largest request body accepted (upstream: 3 MiB).
pub const MAX_BODY: usize = 3 * 1024 * 1024;

/// Shared state of the resource API.
pub struct Api {
    /// The object store.
    pub store: Arc<Store>,
    /// How often idle watches with `allowWatchBookmarks` get a BOOKMARK.
    pub bookmark_interval: Duration,
    /// The resources CustomResourceDefinitions define.
    pub crds: crate::registry::custom::Registry,
    /// How requests are authenticated and authorized.
    pub auth: crate::auth::Auth,
    /// The dynamic admission plugins (webhooks, admission policies) every write asks.
    pub admission: crate::admission::Chain,
    /// Which built-in admission plugins run (`--disable-admission-plugins`).
    pub builtin_admission: crate::admission::builtin::Plugins,
    /// Work run after writes of a resource (by storage key).
    hooks: RwLock<Vec<(String, Arc<dyn WriteHook>)>>,
    /// The OpenAPI documents of the catalogue they were built for.
    openapi: Mutex<Option<(Arc<Catalog>, Arc<openapi::OpenApi>)>>,
}

/// Work the server does after every successful write of one resource, before the write
/// is answered, so that what it changes is visible to the writer at once (the CRD
/// controller: a created CRD is served when its POST returns).
pub trait WriteHook: Send + Sync {
    /// Run after a write of the hooked resource.
    fn after_write<'a>(
        &'a self,
        api: &'a Arc<Api>,
    ) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>>;
}

/// A response plus `Warning` headers to attach.
///
/// A JSON body that is one Kubernetes object (or list, or `Status`) is re-encoded as
/// protobuf when the request negotiated [`negotiate::Format::Protobuf`] and the kind has
/// a protobuf schema ([`Reply::into_response_as`]); so the handlers build JSON and need
/// not know the request's `Accept`.
pub struct Reply {
    status: StatusCode,
    body: Body,
    content_type: &'static str,
    warnings: Vec<String>,
    /// The body is a JSON object the protobuf encoder may re-encode.
    encodable: bool,
    /// The body is this stored object's JSON: its protobuf answer is the object's
    /// cached encoding.
    stored: Option<Arc<StoredObject>>,
}

impl Reply {
    /// A JSON body from bytes.
    pub fn json_bytes(status: StatusCode, bytes: Bytes) -> Reply {
        Reply {
            status,
            body: Body::from(bytes),
            content_type: "application/json",
            warnings: Vec::new(),
            encodable: true,
            stored: None,
        }
    }

    /// A JSON body written as it is produced (a big LIST, in chunks), without a length;
    /// like [`Reply::json_bytes`] otherwise.
    pub fn json_stream(status: StatusCode, body: Body) -> Reply {
        Reply {
            status,
            body,
            content_type: "application/json",
            warnings: Vec::new(),
            encodable: true,
            stored: None,
        }
    }

    /// A stored object as it is stored (its JSON; its cached protobuf encoding when
    /// protobuf was negotiated).
    pub fn stored(status: StatusCode, obj: Arc<StoredObject>) -> Reply {
        let mut r = Self::json_bytes(status, obj.json.clone());
        r.stored = Some(obj);
        r
    }

    /// A stored object as `def`'s version: the stored bytes (and their cached protobuf
    /// encoding) when `def` is the stored version, else the converted object.
    pub fn presented(
        def: &'static crate::registry::catalog::ResourceDef,
        status: StatusCode,
        obj: &Arc<StoredObject>,
    ) -> ApiResult<Reply> {
        if crate::registry::versions::converts(def) {
            Ok(Self::json_bytes(
                status,
                crate::registry::versions::present(def, obj)?,
            ))
        } else {
            Ok(Self::stored(status, Arc::clone(obj)))
        }
    }

    /// A body already in Kubernetes protobuf.
    pub fn protobuf_bytes(status: StatusCode, bytes: Bytes) -> Reply {
        Reply {
            status,
            body: Body::from(bytes),
            content_type: negotiate::Format::Protobuf.content_type(false),
            warnings: Vec::new(),
            encodable: false,
            stored: None,
        }
    }

    /// A JSON body from a value.
    pub fn json(status: StatusCode, v: &Value) -> Reply {
        Self::json_bytes(
            status,
            Bytes::from(serde_json::to_vec(v).unwrap_or_default()),
        )
    }

    /// A streaming body.
    pub fn stream(body: Body, content_type: &'static str) -> Reply {
        Reply {
            status: StatusCode::OK,
            body,
            content_type,
            warnings: Vec::new(),
            encodable: false,
            stored: None,
        }
    }

    /// Add `Warning: 299 - "msg"` headers.
    pub fn with_warnings(mut self, w: Vec<String>) -> Reply {
        self.warnings.extend(w);
        self
    }

    /// Put a warning before the others (one that applies to the whole request).
    fn warned_first(mut self, w: String) -> Reply {
        self.warnings.insert(0, w);
        self
    }

    /// Build the HTTP response in `format`: a JSON object body of a kind with a protobuf
    /// schema becomes its protobuf encoding; anything else (custom resources, tables,
    /// streams) stays as it is.
    pub async fn into_response_as(mut self, format: negotiate::Format) -> Response {
        if format == negotiate::Format::Protobuf {
            if let Some(obj) = self.stored.take() {
                match obj.protobuf() {
                    Ok(Some(e)) => {
                        self.body = Body::from(e.full.clone());
                        self.content_type = negotiate::Format::Protobuf.content_type(false);
                        return self.into_response();
                    }
                    // no schema: JSON
                    Ok(None) => return self.into_response(),
                    // as protobuf_of: the failure logged, the JSON kept
                    Err(e) => {
                        tracing::warn!(error = %e.message, "response kept as JSON: protobuf encoding failed");
                        return self.into_response();
                    }
                }
            }
        }
        if format == negotiate::Format::Protobuf && self.encodable {
            let body = std::mem::replace(&mut self.body, Body::empty());
            match axum::body::to_bytes(body, usize::MAX).await {
                Ok(bytes) => match protobuf_of(&bytes) {
                    Some(pb) => {
                        self.body = Body::from(pb);
                        self.content_type = negotiate::Format::Protobuf.content_type(false);
                    }
                    None => self.body = Body::from(bytes),
                },
                Err(e) => {
                    tracing::warn!(error = %e, "reading a response body to encode it");
                }
            }
        }
        self.into_response()
    }

    /// Build the HTTP response.
    pub fn into_response(self) -> Response {
        let mut r = Response::new(self.body);
        *r.status_mut() = self.status;
        r.headers_mut()
            .insert("content-type", HeaderValue::from_static(self.content_type));
        append_warnings(r.headers_mut(), self.warnings);
        r
    }
}

/// Append `Warning: 299 - "msg"` headers.
pub fn append_warnings(headers: &mut HeaderMap, warnings: Vec<String>) {
    for w in warnings {
        let escaped = w.replace('\\', "\\\\").replace('"', "\\\"");
        if let Ok(v) = HeaderValue::from_str(&format!("299 - \"{escaped}\"")) {
            headers.append("warning", v);
        }
    }
}

/// The protobuf encoding of a JSON object body, if its kind has one (and it encodes:
/// a failure is logged and the JSON kept).
fn protobuf_of(json: &[u8]) -> Option<Bytes> {
    let v: Value = serde_json::from_slice(json).ok()?;
    match crate::machinery::protobuf::encode::encode(&v)? {
        Ok(pb) => Some(Bytes::from(pb)),
        Err(e) => {
            tracing::warn!(error = %e, "response kept as JSON: protobuf encoding failed");
            None
        }
    }
}

/// An error as an HTTP response.
pub fn error_response(e: &ApiError) -> Response {
    error_response_as(e, negotiate::Format::Json)
}

/// An error as an HTTP response, its `Status` in `format` (upstream negotiates error
/// bodies like objects).
pub fn error_response_as(e: &ApiError, format: negotiate::Format) -> Response {
    let status = e.to_status();
    let code = StatusCode::from_u16(e.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let pb = match format {
        negotiate::Format::Protobuf => crate::machinery::protobuf::encode::encode(&status)
            .and_then(Result::ok)
            .map(Bytes::from),
        negotiate::Format::Json => None,
    };
    let mut r = match pb {
        Some(pb) => {
            let mut r = Response::new(Body::from(pb));
            *r.status_mut() = code;
            r.headers_mut().insert(
                "content-type",
                HeaderValue::from_static(negotiate::Format::Protobuf.content_type(false)),
            );
            r
        }
        None => Reply::json(code, &status).into_response(),
    };
    if let Some(secs) = e.retry_after {
        if let Ok(v) = HeaderValue::from_str(&secs.to_string()) {
            r.headers_mut().insert("retry-after", v);
        }
    }
    r
}

impl Api {
    /// The resource API over `store`, serving the custom resources of `crds`.
    pub fn new(
        store: Arc<Store>,
        bookmark_interval: Duration,
        crds: crate::registry::custom::Registry,
        auth: crate::auth::Auth,
    ) -> Api {
        Api {
            store,
            bookmark_interval,
            crds,
            auth,
            admission: crate::admission::Chain::new(),
            builtin_admission: crate::admission::builtin::Plugins::default(),
            hooks: RwLock::new(Vec::new()),
            openapi: Mutex::new(None),
        }
    }

    /// The current catalogue (built-in kinds and custom resources).
    pub fn catalog(&self) -> Arc<Catalog> {
        self.crds.catalog()
    }

    /// Run `hook` after every successful write of the resource stored under
    /// `storage_key` (after the hooks added before it).
    pub fn add_write_hook(&self, storage_key: &str, hook: Arc<dyn WriteHook>) {
        let mut hooks = match self.hooks.write() {
            Ok(h) => h,
            Err(p) => p.into_inner(),
        };
        hooks.push((storage_key.to_string(), hook));
    }

    fn hooks_for(&self, storage_key: &str) -> Vec<Arc<dyn WriteHook>> {
        let hooks = match self.hooks.read() {
            Ok(h) => h,
            Err(p) => p.into_inner(),
        };
        hooks
            .iter()
            .filter(|(k, _)| k == storage_key)
            .map(|(_, h)| Arc::clone(h))
            .collect()
    }

    /// The OpenAPI documents of the current catalogue (built-in documents shared, custom
    /// group-versions built on first use after a catalogue change).
    pub fn openapi(&self) -> Arc<openapi::OpenApi> {
        let catalog = self.catalog();
        let mut guard = match self.openapi.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        if let Some((built_for, docs)) = guard.as_ref() {
            if Arc::ptr_eq(built_for, &catalog) {
                return Arc::clone(docs);
            }
        }
        let docs = Arc::new(openapi::with_custom(&catalog));
        *guard = Some((catalog, Arc::clone(&docs)));
        docs
    }

    /// Serve a request on a resource path.
    pub async fn serve(
        self: &Arc<Self>,
        method: &Method,
        target: Target,
        query: &Query,
        headers: &HeaderMap,
        body: Bytes,
    ) -> ApiResult<Reply> {
        let hooks = if method == Method::GET {
            Vec::new()
        } else {
            self.hooks_for(&target.resource.storage_key())
        };
        // a deprecated version of a custom resource, or a deprecated built-in kind,
        // warns on every request
        let deprecation = match target.resource.custom {
            Some(c) => c.deprecation_warning.clone(),
            None => target
                .resource
                .strategy
                .deprecation_warning()
                .map(str::to_string),
        };
        let reply = self.serve_inner(method, target, query, headers, body).await;
        if reply.is_ok() {
            for hook in hooks {
                hook.after_write(self).await;
            }
        }
        match deprecation {
            Some(w) => reply.map(|r| r.warned_first(w)),
            None => reply,
        }
    }

    async fn serve_inner(
        self: &Arc<Self>,
        method: &Method,
        target: Target,
        query: &Query,
        headers: &HeaderMap,
        body: Bytes,
    ) -> ApiResult<Reply> {
        let accept = headers
            .get("accept")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        // the access and token reviews: answered, never stored
        if target.resource.strategy.create_only() {
            // --- `bindings` (core): a POST binds the pod the Binding names
            if target.resource.group.is_empty() && target.resource.plural == "bindings" {
                return self
                    .bind_named(method, &target, query, headers, &body)
                    .await;
            }
            // --- end bindings
            return self.review(method, &target, query, headers, &body).await;
        }
        let (rendering, format) =
            negotiate::negotiate_for(accept, negotiate::json_only(target.resource))?;
        let rendering = match rendering {
            negotiate::Rendering::Table(opts) => {
                negotiate::Rendering::Table(opts.with_query(query)?)
            }
            r => r,
        };
        match target.subresource {
            Some(Subresource::Log) if method == Method::GET => {
                return self.pod_log(&target, query);
            }
            Some(Subresource::Exec | Subresource::Attach | Subresource::PortForward)
                if method == Method::GET || method == Method::POST =>
            {
                // dynamic admission: CONNECT with the options object
                self.admit_connect(&target, query).await?;
                return self.pod_connect(&target, query);
            }
            Some(
                Subresource::Log
                | Subresource::Exec
                | Subresource::Attach
                | Subresource::PortForward,
            ) => {
                return Err(ApiError::method_not_allowed(
                    "the server does not allow this method on the requested resource",
                ));
            }
            _ => {}
        }
        if matches!(
            target.subresource,
            Some(Subresource::Binding | Subresource::Eviction | Subresource::Token)
        ) && method != Method::POST
        {
            return Err(ApiError::method_not_allowed(
                "the server does not allow this method on the requested resource",
            ));
        }
        if let Some(route) = convert::webhook_route(&target) {
            return self
                .serve_converted(method, target, query, headers, body, route)
                .await;
        }
        if let Some(custom) = target.resource.custom {
            if custom.terminating && method == Method::POST {
                return Err(ApiError::method_not_allowed(
                    "create not allowed while custom resource definition is terminating",
                ));
            }
        }
        match (method.as_str(), target.name.is_some()) {
            ("GET", true) => self.get(&target, query, rendering),
            ("GET", false) => {
                let opts =
                    crate::endpoints::request::ListOptions::parse(query, target.legacy_watch)?;
                if opts.watch {
                    self.watch(&target, opts, rendering, format)
                } else {
                    self.list(&target, &opts, rendering, format)
                }
            }
            ("POST", false) => self.create(&target, query, headers, &body).await,
            ("POST", true) if target.subresource == Some(Subresource::Binding) => {
                self.bind(&target, query, headers, &body).await
            }
            ("POST", true) if target.subresource == Some(Subresource::Token) => {
                self.create_token(&target, query, headers, &body).await
            }
            ("POST", true) if target.subresource == Some(Subresource::Eviction) => {
                self.evict(&target, query, headers, &body).await
            }
            ("PUT", true) => self.update(&target, query, headers, &body).await,
            ("PATCH", true) => self.patch(&target, query, headers, &body).await,
            ("DELETE", true) => self.delete(&target, query, headers, &body).await,
            ("DELETE", false) if target.resource.delete_collection => {
                self.delete_collection(&target, query, headers, &body).await
            }
            _ => Err(ApiError::method_not_allowed(
                "the server does not allow this method on the requested resource",
            )),
        }
    }
}

/// A PATCH body with its type.
pub enum PatchBody {
    /// `application/json-patch+json`.
    Json(json_patch::Patch),
    /// `application/merge-patch+json`.
    Merge(Value),
    /// `application/strategic-merge-patch+json`.
    Strategic(Value),
    /// `application/apply-patch+yaml` (server-side apply): the applied configuration.
    Apply(Value),
}

impl PatchBody {
    /// Parse by content type; 415 for unsupported types, 400 for malformed bodies.
    pub fn parse(content_type: &str, body: &[u8]) -> ApiResult<PatchBody> {
        let parse_value = || -> ApiResult<Value> {
            serde_json::from_slice(body)
                .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))
        };
        match content_type {
            "application/json-patch+json" => {
                let v = parse_value()?;
                let p: json_patch::Patch = serde_json::from_value(v)
                    .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
                Ok(PatchBody::Json(p))
            }
            "application/merge-patch+json" => Ok(PatchBody::Merge(parse_value()?)),
            "application/apply-patch+yaml" => {
                let v: Value = serde_yaml::from_slice(body)
                    .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?;
                if !v.is_object() {
                    return Err(ApiError::bad_request(
                        "error decoding YAML: the applied configuration must be an object",
                    ));
                }
                Ok(PatchBody::Apply(v))
            }
            "application/strategic-merge-patch+json" => {
                let v = parse_value()?;
                if !v.is_object() {
                    return Err(ApiError::bad_request(
                        "error decoding patch: a strategic merge patch must be a JSON object",
                    ));
                }
                Ok(PatchBody::Strategic(v))
            }
            _ => Err(ApiError::new(
                415,
                "UnsupportedMediaType",
                "415: Unsupported Media Type",
            )),
        }
    }

    /// Apply to `original`, whose schema definition is `definition`.
    pub fn apply(&self, original: &Value, definition: &str) -> ApiResult<Value> {
        /// RFC 6902 as kube-apiserver's evanphx/json-patch reads it: a `test` for `null`
        /// passes where the path does not exist (clients test "no finalizers yet" so).
        fn apply_json_patch(
            doc: &mut Value,
            p: &json_patch::Patch,
        ) -> Result<(), json_patch::PatchError> {
            for (i, op) in p.0.iter().enumerate() {
                if let json_patch::PatchOperation::Test(t) = op {
                    if t.value.is_null() && doc.pointer(t.path.as_str()).is_none_or(Value::is_null)
                    {
                        continue;
                    }
                }
                json_patch::patch(doc, std::slice::from_ref(op)).map_err(|mut e| {
                    e.operation = i;
                    e
                })?;
            }
            Ok(())
        }
        match self {
            PatchBody::Json(p) => {
                let mut doc = original.clone();
                apply_json_patch(&mut doc, p).map_err(|e| match e.kind {
                    json_patch::PatchErrorKind::TestFailed => ApiError::new(
                        422,
                        "Invalid",
                        "the server rejected our request due to an error in our request",
                    ),
                    _ => ApiError::new(
                        422,
                        "Invalid",
                        format!(
                            "the server rejected our request due to an error in our request: {e}"
                        ),
                    ),
                })?;
                Ok(doc)
            }
            PatchBody::Merge(p) => {
                let mut doc = original.clone();
                json_patch::merge(&mut doc, p);
                Ok(doc)
            }
            PatchBody::Strategic(p) => crate::machinery::patch::strategic(
                crate::registry::catalog::definitions(),
                original,
                p,
                definition,
            ),
            PatchBody::Apply(_) => Err(ApiError::new(
                415,
                "UnsupportedMediaType",
                "server-side apply is not supported here",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::PatchBody;
    use serde_json::json;

    fn json_patch(
        doc: serde_json::Value,
        ops: serde_json::Value,
    ) -> Result<serde_json::Value, u16> {
        let body = serde_json::to_vec(&ops).unwrap();
        PatchBody::parse("application/json-patch+json", &body)
            .and_then(|p| p.apply(&doc, "io.k8s.api.core.v1.ConfigMap"))
            .map_err(|e| e.code)
    }

    /// evanphx/json-patch, which kube-apiserver uses: testing for `null` passes on a
    /// missing path (the finalizer helpers of kube-rs rely on it), fails on a value.
    #[test]
    fn json_patch_test_for_null_passes_on_missing_paths() {
        let add = json!([
            {"op": "test", "path": "/metadata/finalizers", "value": null},
            {"op": "add", "path": "/metadata/finalizers", "value": ["a"]}
        ]);
        let doc = json!({"metadata": {"name": "x"}});
        assert_eq!(
            json_patch(doc.clone(), add.clone()).unwrap()["metadata"]["finalizers"],
            json!(["a"])
        );
        let has = json!({"metadata": {"name": "x", "finalizers": ["b"]}});
        assert_eq!(json_patch(has, add), Err(422));
        let null = json!({"metadata": {"name": "x", "finalizers": null}});
        assert!(json_patch(
            null,
            json!([{"op": "test", "path": "/metadata/finalizers", "value": null}])
        )
        .is_ok());
        // later operations see what earlier ones did
        let seq = json!([
            {"op": "add", "path": "/metadata/labels", "value": {"a": "1"}},
            {"op": "test", "path": "/metadata/labels/a", "value": "1"},
            {"op": "test", "path": "/metadata/labels/b", "value": null}
        ]);
        assert!(json_patch(doc.clone(), seq).is_ok());
        assert_eq!(
            json_patch(
                doc,
                json!([{"op": "test", "path": "/metadata/name", "value": "y"}])
            ),
            Err(422)
        );
    }
}
