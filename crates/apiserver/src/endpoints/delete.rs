//! DELETE and DELETECOLLECTION: preconditions, propagation finalizers, graceful pod
//! deletion, finalizer-held objects and namespace termination.

use std::sync::Arc;

use axum::http::{HeaderMap, StatusCode};
use bytes::Bytes;
use serde_json::{json, Value};

use super::{Api, Reply};
use crate::endpoints::filter::Filter;
use crate::endpoints::request::{ListOptions, Query, Target};
use crate::registry::catalog::ResourceDef;
use crate::registry::catalog::{DeleteRequest, Deletion};
use crate::registry::rest;
use crate::storage::store::{object_key, EventType, StoredObject, WriteAction};
use apimachinery::status::{success_status, ApiError, ApiResult};

/// Parsed `DeleteOptions` (body and query).
#[derive(Clone, Debug, Default)]
pub(super) struct DeleteOptions {
    pub(super) grace_period: Option<i64>,
    pub(super) propagation: Option<String>,
    pub(super) uid: Option<String>,
    pub(super) resource_version: Option<String>,
    pub(super) dry_run: bool,
}

impl DeleteOptions {
    /// The options a `DeleteOptions` object gives (a DELETE's body, an Eviction's
    /// `deleteOptions`).
    pub(super) fn from_given(
        given: k8s_openapi::apimachinery::pkg::apis::meta::v1::DeleteOptions,
    ) -> ApiResult<DeleteOptions> {
        let mut o = DeleteOptions {
            grace_period: given.grace_period_seconds,
            propagation: given.propagation_policy,
            ..DeleteOptions::default()
        };
        if given.orphan_dependents == Some(true) && o.propagation.is_none() {
            o.propagation = Some("Orphan".into());
        }
        if let Some(p) = given.preconditions {
            o.uid = p.uid;
            o.resource_version = p.resource_version;
        }
        o.dry_run = given.dry_run.is_some_and(|d| d.iter().any(|x| x == "All"));
        o.check()?;
        Ok(o)
    }

    /// The options as a `DeleteOptions` object (what admission sees).
    pub(super) fn to_object(&self) -> serde_json::Value {
        let mut o = serde_json::Map::new();
        o.insert("kind".into(), json!("DeleteOptions"));
        o.insert("apiVersion".into(), json!("meta.k8s.io/v1"));
        if let Some(g) = self.grace_period {
            o.insert("gracePeriodSeconds".into(), json!(g));
        }
        if let Some(p) = &self.propagation {
            o.insert("propagationPolicy".into(), json!(p));
        }
        if self.dry_run {
            o.insert("dryRun".into(), json!(["All"]));
        }
        serde_json::Value::Object(o)
    }

    /// Upstream's validation of the propagation policy.
    fn check(&self) -> ApiResult<()> {
        if let Some(p) = &self.propagation {
            if !matches!(p.as_str(), "Orphan" | "Background" | "Foreground") {
                return Err(ApiError::invalid(
                    "meta.k8s.io",
                    "DeleteOptions",
                    "",
                    vec![apimachinery::status::Cause {
                        reason: "FieldValueNotSupported".into(),
                        message: format!("Unsupported value: \"{p}\": supported values: \"Foreground\", \"Background\", \"Orphan\""),
                        field: "propagationPolicy".into(),
                    }],
                ));
            }
        }
        Ok(())
    }
}

/// DeleteOptions from the body (JSON, YAML or protobuf) or, when there is none, from the
/// query, as upstream reads them (a body's options leave the query unread).
fn parse_options(query: &Query, headers: &HeaderMap, body: &Bytes) -> ApiResult<DeleteOptions> {
    if let Some(given) = super::body::delete_options(headers, body)? {
        return DeleteOptions::from_given(given);
    }
    let mut o = DeleteOptions {
        grace_period: query.int("gracePeriodSeconds")?,
        propagation: query.get("propagationPolicy").map(str::to_string),
        ..DeleteOptions::default()
    };
    if query.flag("orphanDependents")? == Some(true) && o.propagation.is_none() {
        o.propagation = Some("Orphan".into());
    }
    o.dry_run = query.get("dryRun") == Some("All");
    o.check()?;
    Ok(o)
}

/// The finalizer of a propagation policy (`orphan`, `foregroundDeletion`).
fn add_propagation_finalizer(obj: &mut Value, propagation: Option<&str>) {
    match propagation {
        Some("Orphan") => rest::add_finalizer(obj, "orphan"),
        Some("Foreground") => rest::add_finalizer(obj, "foregroundDeletion"),
        _ => {}
    }
}

/// A stored object `obj` of `def` as storage keeps it (the Go round trip of the stored
/// version: a finalizer list emptied by the deletion is gone).
fn stored(def: &'static ResourceDef, mut obj: Value) -> Value {
    let to = crate::registry::versions::storage_def(def);
    rest::go_roundtrip(to, &mut obj, rest::Mode::Storage);
    obj
}

/// Decide what deleting `current` does.
fn decide(
    def: &'static ResourceDef,
    current: &Arc<StoredObject>,
    opts: &DeleteOptions,
    name: &str,
) -> ApiResult<WriteAction> {
    let original = current.value()?;
    let mut obj = original.clone();
    if let Some(uid) = &opts.uid {
        let have = rest::meta_str(&obj, "uid").unwrap_or("");
        if uid != have {
            return Err(ApiError::conflict(
                def.group,
                def.plural,
                name,
                &format!("the UID in the precondition ({uid}) does not match the UID in record ({have}). The object might have been deleted and then recreated"),
            )
            .with_kind_name(def.kind));
        }
    }
    if let Some(rv) = &opts.resource_version {
        if *rv != current.rv.to_string() {
            return Err(ApiError::conflict(
                def.group,
                def.plural,
                name,
                &format!("the ResourceVersion in the precondition ({rv}) does not match the ResourceVersion in record ({}). The object might have been modified", current.rv),
            )
            .with_kind_name(def.kind));
        }
    }
    let already_deleting = obj.pointer("/metadata/deletionTimestamp").is_some();
    let req = DeleteRequest {
        grace_period: opts.grace_period,
        propagation: opts.propagation.as_deref(),
    };
    let grace = match def.strategy.delete(&mut obj, &req) {
        Deletion::Now => return Ok(WriteAction::Delete(None)),
        Deletion::Unchanged => return Ok(WriteAction::Unchanged(Arc::clone(current))),
        Deletion::Keep => return Ok(WriteAction::Put(stored(def, obj))),
        Deletion::Graceful(g) => Some(g),
        Deletion::Generic => None,
    };
    add_propagation_finalizer(&mut obj, req.propagation);
    let has_finalizers = obj
        .pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty());
    if !has_finalizers && grace.is_none() {
        return Ok(WriteAction::Delete(None));
    }
    if let Some(m) = rest::meta_mut(&mut obj) {
        match grace {
            Some(g) => {
                // a second delete may shorten the grace period, never extend it
                let existing = m.get("deletionGracePeriodSeconds").and_then(Value::as_i64);
                if existing.is_none_or(|e| g < e) {
                    m.insert(
                        "deletionTimestamp".into(),
                        json!(apimachinery::time::rfc3339_in(g)),
                    );
                    m.insert("deletionGracePeriodSeconds".into(), json!(g));
                }
            }
            None => {
                if !already_deleting {
                    m.insert(
                        "deletionTimestamp".into(),
                        json!(apimachinery::time::now_rfc3339()),
                    );
                    m.insert("deletionGracePeriodSeconds".into(), json!(0));
                }
            }
        }
    }
    rest::bump_generation_on_deletion(&original, &mut obj);
    let obj = stored(def, obj);
    if obj == original {
        return Ok(WriteAction::Unchanged(Arc::clone(current)));
    }
    Ok(WriteAction::Put(obj))
}

impl Api {
    /// Delete one object with default options (background propagation).
    pub(crate) async fn delete_quietly(
        &self,
        def: &'static ResourceDef,
        ns: Option<&str>,
        name: &str,
    ) -> ApiResult<()> {
        self.delete_one(def, ns, name, &DeleteOptions::default())
            .await
            .map(|_| ())
    }

    pub(super) async fn delete_one(
        &self,
        def: &'static ResourceDef,
        ns: Option<&str>,
        name: &str,
        opts: &DeleteOptions,
    ) -> ApiResult<(Option<EventType>, Arc<StoredObject>)> {
        let key = object_key(ns, name);
        let selectable: Vec<&str> = crate::registry::versions::storage_def(def)
            .field_selectors
            .to_vec();
        let outcome = self
            .store
            .write(
                &def.storage_key(),
                &key,
                &selectable,
                opts.dry_run,
                |current, _| {
                    let Some(current) = current else {
                        return Err(ApiError::not_found(def.group, def.plural, name));
                    };
                    decide(def, current, opts, name)
                },
            )
            .await?;
        Ok((outcome.event, outcome.object))
    }

    /// Dynamic admission of a DELETE (the mutating plugins with a null object, then the
    /// validating ones; the object is the stored one, `attrs.old_object`). A missing
    /// object is left to the delete to answer 404.
    pub(super) async fn admit_delete(
        &self,
        def: &'static ResourceDef,
        ns: Option<&str>,
        name: &str,
        opts: &DeleteOptions,
    ) -> ApiResult<()> {
        let mut attrs = crate::admission::Attributes::new(
            crate::admission::Operation::Delete,
            def,
            None,
            ns.map(str::to_string),
            name.to_string(),
        );
        attrs.dry_run = opts.dry_run;
        attrs.options = Some(opts.to_object());
        if !self.admission.handles(&attrs) {
            return Ok(());
        }
        let Some(current) = self.store.get(&def.storage_key(), &object_key(ns, name)) else {
            return Ok(());
        };
        attrs.old_object = Some(crate::registry::versions::present_value(
            def,
            current.value()?,
        )?);
        // the mutating phase too, with no object (upstream calls it; a webhook that
        // answers a patch fails the request)
        let mut none = serde_json::Value::Null;
        let mut out = self.admission.admit(&attrs, &mut none).await?;
        self.admission.validate(&attrs, None, &mut out).await?;
        crate::admission::warn(out.warnings);
        Ok(())
    }

    pub(super) async fn delete(
        &self,
        target: &Target,
        query: &Query,
        headers: &HeaderMap,
        body: &Bytes,
    ) -> ApiResult<Reply> {
        let def = target.resource;
        if target.subresource.is_some() {
            return Err(ApiError::method_not_allowed(
                "delete is not supported on this subresource",
            ));
        }
        let opts = parse_options(query, headers, body)?;
        let name = target.name.clone().unwrap_or_default();
        self.admit_delete(def, target.namespace.as_deref(), &name, &opts)
            .await?;
        let (event, obj) = self
            .delete_one(def, target.namespace.as_deref(), &name, &opts)
            .await?;
        match event {
            Some(EventType::Deleted) if !def.strategy.returns_deleted_object() => {
                let uid = obj
                    .value()
                    .ok()
                    .and_then(|v| rest::meta_str(&v, "uid").map(str::to_string))
                    .unwrap_or_default();
                Ok(Reply::json(
                    StatusCode::OK,
                    &success_status(def.group, def.plural, &name, &uid),
                ))
            }
            // pods and objects that remain (finalizers, grace) answer with the object
            _ => Reply::presented(def, StatusCode::OK, &obj),
        }
    }

    pub(super) async fn delete_collection(
        &self,
        target: &Target,
        query: &Query,
        headers: &HeaderMap,
        body: &Bytes,
    ) -> ApiResult<Reply> {
        let def = target.resource;
        let opts = parse_options(query, headers, body)?;
        let list_opts = ListOptions::parse(query, false)?;
        let filter = Filter::for_request(target, &list_opts)?;
        let snapshot = self.store.snapshot(&def.storage_key());
        let mut items = Vec::new();
        for (k, o) in snapshot.table.iter() {
            if !filter.matches(k, o) {
                continue;
            }
            let (ns, name) = match k.split_once('/') {
                Some((ns, n)) if def.namespaced => (Some(ns), n),
                _ => (None, k.as_str()),
            };
            match self.admit_delete(def, ns, name, &opts).await {
                Ok(()) => {}
                Err(e) if e.code == 404 => continue,
                Err(e) => return Err(e),
            }
            match self.delete_one(def, ns, name, &opts).await {
                Ok((_, obj)) => items.push(obj),
                Err(e) if e.code == 404 => {}
                Err(e) => return Err(e),
            }
        }
        let mut out = Vec::with_capacity(items.len());
        for i in items {
            out.push(crate::registry::versions::present_value(def, i.value()?)?);
        }
        Ok(Reply::json(
            StatusCode::OK,
            &json!({"kind": def.list_kind(), "apiVersion": def.api_version(), "metadata": {"resourceVersion": self.store.current_rv().to_string()}, "items": out}),
        ))
    }
}
