//! Requests for a version of a custom resource that converts through a conversion
//! webhook: served by the storage version's handlers, with the objects converted by the
//! webhook on the way in (bodies, patched objects, applied configurations) and on the way
//! out (objects, list items, watch events), outside the store's lock.

use std::pin::Pin;

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, Method};
use bytes::{Bytes, BytesMut};
use futures::{Stream, StreamExt};
use serde_json::Value;

use super::{Api, PatchBody, Reply, MAX_BODY};
use crate::endpoints::request::{Query, Target};
use crate::registry::catalog::{ResourceDef, Subresource};
use apimachinery::status::{ApiError, ApiResult};

/// The webhook configuration and storage definition when `target` needs the webhook.
pub(super) fn webhook_route(target: &Target) -> Option<(&'static Value, &'static ResourceDef)> {
    let custom = target.resource.custom?;
    let crate::registry::catalog::Conversion::Webhook(cfg) = &custom.conversion else {
        return None;
    };
    let storage = custom.storage_def()?;
    if storage.version == target.resource.version
        || matches!(target.subresource, Some(Subresource::Scale))
    {
        return None;
    }
    Some((cfg, storage))
}

fn retarget(target: &Target, storage: &'static ResourceDef) -> Target {
    Target {
        resource: storage,
        namespace: target.namespace.clone(),
        name: target.name.clone(),
        subresource: target.subresource,
        legacy_watch: target.legacy_watch,
    }
}

async fn body_bytes(reply: Reply) -> ApiResult<(Reply, Bytes)> {
    let Reply {
        status,
        body,
        content_type,
        warnings,
        encodable,
        stored: _,
    } = reply;
    let bytes = axum::body::to_bytes(body, 64 * MAX_BODY)
        .await
        .map_err(|e| ApiError::internal(format!("reading a response: {e}")))?;
    Ok((
        Reply {
            status,
            body: Body::empty(),
            content_type,
            warnings,
            encodable,
            // the body is replaced: not the stored object's any more
            stored: None,
        },
        bytes,
    ))
}

fn json_body(headers: &HeaderMap, v: &Value) -> (HeaderMap, Bytes) {
    let mut h = headers.clone();
    h.insert("content-type", HeaderValue::from_static("application/json"));
    (h, Bytes::from(serde_json::to_vec(v).unwrap_or_default()))
}

type BoxReply<'a> = Pin<Box<dyn std::future::Future<Output = ApiResult<Reply>> + Send + 'a>>;

impl Api {
    /// Serve `target` (a webhook-converted version) through the storage version.
    pub(super) fn serve_converted<'a>(
        self: &'a std::sync::Arc<Self>,
        method: &'a Method,
        target: Target,
        query: &'a Query,
        headers: &'a HeaderMap,
        body: Bytes,
        (webhook, storage): (&'static Value, &'static ResourceDef),
    ) -> BoxReply<'a> {
        Box::pin(async move {
            let def = target.resource;
            let want = def.api_version();
            let keep = storage.api_version();
            let inner = retarget(&target, storage);
            let full = !headers
                .get("accept")
                .and_then(|v| v.to_str().ok())
                .is_some_and(|a| a.contains("as=Table") || a.contains("as=PartialObjectMetadata"));
            match method.as_str() {
                "GET" | "DELETE" => {
                    let watch = method == Method::GET
                        && target.name.is_none()
                        && crate::endpoints::request::ListOptions::parse(
                            query,
                            target.legacy_watch,
                        )
                        .is_ok_and(|o| o.watch);
                    let reply = self
                        .serve_inner(method, inner, query, headers, body)
                        .await?;
                    if !full {
                        return Ok(reply);
                    }
                    if watch {
                        return Ok(convert_watch(reply, webhook.clone(), want));
                    }
                    self.convert_reply(reply, webhook, &want, &keep, def).await
                }
                "POST" | "PUT" => {
                    let (obj, _) =
                        super::body::decode(headers, &body, &super::write::expected_object(def))?;
                    let converted = self.to_version(webhook, obj, &want, &keep).await?;
                    let (h, b) = json_body(headers, &converted);
                    let reply = self.serve_inner(method, inner, query, &h, b).await?;
                    self.convert_reply(reply, webhook, &want, &keep, def).await
                }
                "PATCH" => {
                    let ct = super::body::content_type(headers);
                    let patch = PatchBody::parse(&ct, &body)?;
                    if let PatchBody::Apply(config) = patch {
                        let converted =
                            crate::registry::custom::webhook::convert(webhook, vec![config], &keep)
                                .await?;
                        let config = converted.into_iter().next().unwrap_or(Value::Null);
                        let mut h = headers.clone();
                        h.insert(
                            "content-type",
                            HeaderValue::from_static("application/apply-patch+yaml"),
                        );
                        let b = Bytes::from(serde_json::to_vec(&config).unwrap_or_default());
                        let reply = self.serve_inner(method, inner, query, &h, b).await?;
                        return self.convert_reply(reply, webhook, &want, &keep, def).await;
                    }
                    if matches!(patch, PatchBody::Strategic(_)) {
                        return Err(ApiError::new(
                            415,
                            "UnsupportedMediaType",
                            "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml",
                        ));
                    }
                    self.patch_converted(&target, inner, query, headers, &patch, webhook, def)
                        .await
                }
                _ => self.serve_inner(method, inner, query, headers, body).await,
            }
        })
    }

    /// A non-apply PATCH: the current object converted to the request's version, patched
    /// there, converted back and written with its resourceVersion (again on conflicts).
    #[allow(clippy::too_many_arguments)]
    async fn patch_converted(
        self: &std::sync::Arc<Self>,
        target: &Target,
        inner: Target,
        query: &Query,
        headers: &HeaderMap,
        patch: &PatchBody,
        webhook: &'static Value,
        def: &'static ResourceDef,
    ) -> ApiResult<Reply> {
        let want = def.api_version();
        let keep = inner.resource.api_version();
        let name = target.name.clone().unwrap_or_default();
        let key = crate::storage::store::object_key(target.namespace.as_deref(), &name);
        for _ in 0..5 {
            let Some(stored) = self.store.get(&inner.resource.storage_key(), &key) else {
                return Err(ApiError::not_found(def.group, def.plural, &name));
            };
            let current = self
                .to_version(webhook, stored.value()?, &keep, &want)
                .await?;
            let mut patched = patch.apply(&current, &def.definition())?;
            if let Some(m) = crate::registry::rest::meta_mut(&mut patched) {
                m.insert(
                    "resourceVersion".into(),
                    Value::String(stored.rv.to_string()),
                );
            }
            let converted = self.to_version(webhook, patched, &want, &keep).await?;
            let (h, b) = json_body(headers, &converted);
            let put = Method::PUT;
            let retry = Target {
                resource: inner.resource,
                namespace: inner.namespace.clone(),
                name: inner.name.clone(),
                subresource: inner.subresource,
                legacy_watch: false,
            };
            match self.serve_inner(&put, retry, query, &h, b).await {
                Err(e) if e.code == 409 && e.reason == "Conflict" => continue,
                Err(e) => return Err(e),
                Ok(reply) => return self.convert_reply(reply, webhook, &want, &keep, def).await,
            }
        }
        Err(ApiError::conflict(
            def.group,
            def.plural,
            &name,
            "the object has been modified; please apply your changes to the latest version and try again",
        ))
    }

    /// `obj` (in `from`) converted to `to`.
    async fn to_version(
        &self,
        webhook: &'static Value,
        obj: Value,
        from: &str,
        to: &str,
    ) -> ApiResult<Value> {
        let mut obj = obj;
        if obj.get("apiVersion").and_then(Value::as_str).is_none() {
            if let Some(o) = obj.as_object_mut() {
                o.insert("apiVersion".into(), Value::String(from.to_string()));
            }
        }
        let out = crate::registry::custom::webhook::convert(webhook, vec![obj], to).await?;
        out.into_iter()
            .next()
            .ok_or_else(|| ApiError::internal("conversion webhook returned no object"))
    }

    /// Convert an object or a list in a reply from the storage version to `want`.
    async fn convert_reply(
        &self,
        reply: Reply,
        webhook: &'static Value,
        want: &str,
        keep: &str,
        def: &'static ResourceDef,
    ) -> ApiResult<Reply> {
        let (shell, bytes) = body_bytes(reply).await?;
        let Ok(mut v) = serde_json::from_slice::<Value>(&bytes) else {
            return Ok(Reply {
                body: Body::from(bytes),
                ..shell
            });
        };
        if v.get("apiVersion").and_then(Value::as_str) == Some(keep) {
            if let Some(items) = v.get_mut("items").and_then(Value::as_array_mut) {
                let taken = std::mem::take(items);
                *items = crate::registry::custom::webhook::convert(webhook, taken, want).await?;
                v["apiVersion"] = Value::String(want.to_string());
                v["kind"] = Value::String(def.list_kind());
            } else if v.get("kind").and_then(Value::as_str) == Some(def.kind) {
                v = crate::registry::custom::webhook::convert(webhook, vec![v], want)
                    .await?
                    .into_iter()
                    .next()
                    .unwrap_or(Value::Null);
            }
        }
        Ok(Reply {
            body: Body::from(serde_json::to_vec(&v).unwrap_or_default()),
            ..shell
        })
    }
}

/// A watch stream whose events' objects are converted to `want` one by one.
fn convert_watch(reply: Reply, webhook: Value, want: String) -> Reply {
    let Reply {
        status,
        body,
        content_type,
        warnings,
        encodable,
        stored: _,
    } = reply;
    let lines = split_lines(body.into_data_stream());
    let converted = lines.then(move |line| {
        let webhook = webhook.clone();
        let want = want.clone();
        async move {
            let Ok(mut ev) = serde_json::from_slice::<Value>(&line) else {
                return Ok::<Bytes, std::convert::Infallible>(line);
            };
            let is_object = ev
                .pointer("/object/kind")
                .and_then(Value::as_str)
                .is_some_and(|k| k != "Status")
                && ev["type"] != "BOOKMARK";
            if is_object {
                let obj = ev["object"].take();
                match crate::registry::custom::webhook::convert(&webhook, vec![obj], &want).await {
                    Ok(mut v) => ev["object"] = v.pop().unwrap_or(Value::Null),
                    Err(e) => {
                        ev = serde_json::json!({"type": "ERROR", "object": e.to_status()});
                    }
                }
            } else if ev["type"] == "BOOKMARK" {
                ev["object"]["apiVersion"] = Value::String(want.clone());
            }
            let mut out = serde_json::to_vec(&ev).unwrap_or_default();
            out.push(b'\n');
            Ok(Bytes::from(out))
        }
    });
    Reply {
        status,
        body: Body::from_stream(converted),
        content_type,
        warnings,
        encodable,
        stored: None,
    }
}

/// Newline-delimited frames of a byte stream.
fn split_lines<S, E>(stream: S) -> impl Stream<Item = Bytes> + Send
where
    S: Stream<Item = Result<Bytes, E>> + Send + 'static,
{
    futures::stream::unfold(
        (Box::pin(stream), BytesMut::new(), false),
        |(mut s, mut buf, mut done)| async move {
            loop {
                if let Some(pos) = buf.iter().position(|b| *b == b'\n') {
                    let line = buf.split_to(pos + 1).freeze();
                    return Some((line.slice(..line.len() - 1), (s, buf, done)));
                }
                if done {
                    if buf.is_empty() {
                        return None;
                    }
                    let rest = buf.split().freeze();
                    return Some((rest, (s, buf, done)));
                }
                match s.next().await {
                    Some(Ok(b)) => buf.extend_from_slice(&b),
                    Some(Err(_)) | None => done = true,
                }
            }
        },
    )
}
