//! GET and LIST.

use std::ops::Bound;
use std::sync::Arc;

use axum::http::StatusCode;
use base64::Engine;
use bytes::{BufMut, BytesMut};
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
            } else {
                if count > 0 {
                    out.put_u8(b',');
                }
                if crate::registry::versions::converts(def) || rendering != Rendering::Full {
                    out.extend_from_slice(&super::codec::render(def, obj, rendering)?);
                } else {
                    out.extend_from_slice(&obj.json);
                }
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
                        out.extend_from_slice(item.json());
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
