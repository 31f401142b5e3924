//! POST (create), PUT (update) and PATCH, including the status, scale and finalize
//! subresources.

use std::sync::Arc;

use axum::http::{HeaderMap, StatusCode};
use bytes::Bytes;
use serde_json::{json, Value};

use super::body::{content_type, decode, Expected};
use super::{Api, Reply};
use crate::admission::builtin::Plugin;
use crate::endpoints::request::{FieldValidation, Query, Target, WriteOptions};
use crate::registry::catalog::Phase;
use crate::registry::catalog::{ResourceDef, Subresource};
use crate::registry::core::limitrange::admission as limitranger;
use crate::registry::node::runtimeclass::admission as runtimeclass;
use crate::registry::rest;
use crate::storage::store::{object_key, StoredObject, View, WriteAction};
use apimachinery::status::{ApiError, ApiResult};

/// What an incoming body became after decoding and pruning.
pub(super) struct Decoded {
    pub(super) obj: Value,
    pub(super) warnings: Vec<String>,
}

/// Check kind/apiVersion, drop or reject unknown fields, check types, and take the Go
/// decode's round trip (`null` and empty values as the kind's Go struct holds them).
pub(super) fn normalise(
    def: &ResourceDef,
    obj: Value,
    duplicates: Vec<String>,
    opts: &WriteOptions,
) -> ApiResult<Decoded> {
    let mut decoded = check_body(def, obj, duplicates, opts)?;
    rest::go_roundtrip(def, &mut decoded.obj, rest::Mode::Decode);
    Ok(decoded)
}

/// [`normalise`] without the round trip: a server-side apply configuration is read as
/// sent (upstream builds the applied field set from it untyped).
pub(super) fn check_body(
    def: &ResourceDef,
    mut obj: Value,
    duplicates: Vec<String>,
    opts: &WriteOptions,
) -> ApiResult<Decoded> {
    let api_version = def.api_version();
    let given_kind = obj.get("kind").and_then(Value::as_str).map(str::to_string);
    let given_version = obj
        .get("apiVersion")
        .and_then(Value::as_str)
        .map(str::to_string);
    if let Some(k) = &given_kind {
        if k != def.kind || given_version.as_deref().is_some_and(|v| v != api_version) {
            let gv = given_version.unwrap_or_default();
            let v = gv.rsplit_once('/').map_or(gv.as_str(), |(_, v)| v);
            return Err(ApiError::bad_request(format!(
                "{k} in version \"{v}\" cannot be handled as a {}: converting ({v}.{k}) to ({}.{}): unknown conversion",
                def.kind,
                if def.group.is_empty() { "core" } else { def.package() },
                def.kind
            )));
        }
    }
    if let Some(o) = obj.as_object_mut() {
        // kind and apiVersion lead, as upstream serialises them
        let rest: Vec<(String, Value)> = std::mem::take(o)
            .into_iter()
            .filter(|(k, _)| k != "kind" && k != "apiVersion")
            .collect();
        o.insert("kind".into(), json!(def.kind));
        o.insert("apiVersion".into(), json!(api_version));
        o.extend(rest);
    }
    // unknown fields are always dropped; Ignore only stops reporting them
    let unknown = match def.custom {
        Some(custom) => prune_custom(custom, &mut obj),
        None => crate::registry::catalog::definitions().prune_unknown(&def.definition(), &mut obj),
    };
    let mut problems: Vec<String> = Vec::new();
    if opts.field_validation != FieldValidation::Ignore {
        problems.extend(unknown.iter().map(|f| format!("unknown field \"{f}\"")));
        problems.extend(
            duplicates
                .iter()
                .map(|f| format!("duplicate field \"{f}\"")),
        );
    }
    if !problems.is_empty() && opts.field_validation == FieldValidation::Strict {
        return Err(ApiError::bad_request(format!(
            "{} in version \"{}\" cannot be handled as a {}: strict decoding error: {}",
            def.kind,
            def.version,
            def.kind,
            problems.join(", ")
        )));
    }
    if let Some(Err(e)) = def.typed.map(|t| (t.decodes)(&obj)) {
        return Err(ApiError::bad_request(format!(
            "{} in version \"{}\" cannot be handled as a {}: {e}",
            def.kind, def.version, def.kind
        )));
    }
    Ok(Decoded {
        obj,
        warnings: problems,
    })
}

/// Drop what a custom resource's schema does not know: unknown metadata fields always,
/// unknown content fields by the structural schema (none without a schema).
fn prune_custom(custom: &crate::registry::catalog::CustomVersion, obj: &mut Value) -> Vec<String> {
    let mut unknown = Vec::new();
    if let Some(meta) = obj.get_mut("metadata") {
        unknown.extend(
            crate::registry::catalog::definitions()
                .prune_unknown(crate::registry::table::OBJECT_META, meta)
                .into_iter()
                .map(|p| format!("metadata.{p}")),
        );
    }
    if let Some(schema) = &custom.schema {
        unknown.extend(crate::machinery::structural::prune(schema, obj));
    }
    unknown
}

pub(super) fn ensure_name_matches(target: &Target, obj: &mut Value) -> ApiResult<()> {
    let url_name = target.name.as_deref().unwrap_or("");
    let body_name = rest::meta_str(obj, "name").unwrap_or("").to_string();
    if body_name.is_empty() {
        if let Some(m) = rest::meta_mut(obj) {
            m.insert("name".into(), json!(url_name));
        }
    } else if body_name != url_name {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({body_name}) does not match the name on the URL ({url_name})"
        )));
    }
    Ok(())
}

fn ensure_namespace(target: &Target, obj: &mut Value) -> ApiResult<()> {
    let def = target.resource;
    let body_ns = rest::meta_str(obj, "namespace").map(str::to_string);
    if !def.namespaced {
        if let Some(m) = rest::meta_mut(obj) {
            m.remove("namespace");
        }
        return Ok(());
    }
    let url_ns = target.namespace.clone().unwrap_or_default();
    match body_ns {
        Some(ns) if !ns.is_empty() && ns != url_ns => Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        )),
        _ => {
            if let Some(m) = rest::meta_mut(obj) {
                m.insert("namespace".into(), json!(url_ns));
            }
            Ok(())
        }
    }
}

/// 404 when the namespace is missing, 403 when it is terminating.
fn check_namespace(
    view: &View<'_>,
    def: &ResourceDef,
    ns: Option<&str>,
    name: &str,
) -> ApiResult<()> {
    let Some(ns) = ns.filter(|_| def.namespaced) else {
        return Ok(());
    };
    let Some(n) = view.get("/namespaces", ns) else {
        return Err(ApiError::not_found("", "namespaces", ns));
    };
    let v = n.value()?;
    if v.pointer("/metadata/deletionTimestamp").is_some()
        || v.pointer("/status/phase").and_then(Value::as_str) == Some("Terminating")
    {
        let mut e = ApiError::forbidden(format!(
            "{} \"{name}\" is forbidden: unable to create new content in namespace {ns} because it is being terminated",
            def.qualified_plural()
        ));
        e.name = Some(name.to_string());
        e.kind = Some(def.plural.to_string());
        if !def.group.is_empty() {
            e.group = Some(def.group.to_string());
        }
        e.causes.push(apimachinery::status::Cause {
            reason: "NamespaceTerminating".into(),
            message: format!("namespace {ns} is being terminated"),
            field: "metadata.namespace".into(),
        });
        return Err(e);
    }
    Ok(())
}

fn created_reply(
    def: &'static ResourceDef,
    status: StatusCode,
    obj: &Arc<StoredObject>,
    warnings: Vec<String>,
) -> ApiResult<Reply> {
    Ok(Reply::presented(def, status, obj)?.with_warnings(warnings))
}

impl Api {
    pub(super) async fn create(
        &self,
        target: &Target,
        query: &Query,
        headers: &HeaderMap,
        body: &Bytes,
    ) -> ApiResult<Reply> {
        let def = target.resource;
        if target.subresource.is_some() {
            return Err(ApiError::method_not_allowed(
                "create is not supported on this subresource",
            ));
        }
        let opts = super::managed::write_options(query, headers, "CreateOptions", false)?;
        let (raw, dups) = decode(headers, body, &expected_object(def))?;
        let Decoded { obj, warnings } = normalise(def, raw, dups, &opts)?;
        self.create_object(target, &opts, obj, warnings, false)
            .await
    }

    /// Create `obj` (decoded and normalised); `applied`: the object comes from a
    /// server-side apply whose managed fields are already set.
    pub(super) async fn create_object(
        &self,
        target: &Target,
        opts: &WriteOptions,
        mut obj: Value,
        mut warnings: Vec<String>,
        applied: bool,
    ) -> ApiResult<Reply> {
        let def = target.resource;
        ensure_namespace(target, &mut obj)?;
        let given_name = rest::meta_str(&obj, "name").unwrap_or("").to_string();
        let generate = rest::meta_str(&obj, "generateName")
            .unwrap_or("")
            .to_string();
        if given_name.is_empty() && generate.is_empty() {
            return Err(ApiError::invalid(
                def.group,
                def.kind,
                "",
                vec![apimachinery::status::Cause {
                    reason: "FieldValueRequired".into(),
                    message: "Required value: name or generateName is required".into(),
                    field: "metadata.name".into(),
                }],
            ));
        }
        if given_name.is_empty() {
            // validate with a stand-in name so that generateName errors surface
            if let Some(m) = rest::meta_mut(&mut obj) {
                m.insert("name".into(), json!(rest::generate_name(&generate)));
            }
        }
        // upstream order: decode-time defaults, field manager, then the create strategy
        // (what it sets, like a namespace's finalizer, is nobody's field)
        if !applied {
            rest::default_object(def, &mut obj, Phase::Scheme);
            let manager = opts.field_manager.clone().unwrap_or_default();
            super::managed::record_update(def, None, &manager, None, &mut obj);
        }
        // --- LimitRanger admission, mutation (upstream plugin/pkg/admission/limitranger):
        // the namespace's LimitRanges default a Pod's container requests and limits
        // before the create strategy and validation see it
        let limited = self.builtin_admission.enabled(Plugin::LimitRanger)
            && limitranger::handles(def.group, def.plural, target.subresource.is_some(), false);
        let limit_ranges = if limited {
            self.limit_ranges(target.namespace.as_deref())
        } else {
            Vec::new()
        };
        limitranger::mutate(&limit_ranges, def.plural, &mut obj);
        // --- end LimitRanger mutation
        // --- ServiceAccount admission (upstream plugin/pkg/admission/serviceaccount): the
        // pod's account (default `default`) and its API credentials' projected volume
        if def.group.is_empty()
            && def.plural == "pods"
            && target.subresource.is_none()
            && self.builtin_admission.enabled(Plugin::ServiceAccount)
        {
            self.admit_service_account(target.namespace.as_deref(), &mut obj)
                .await
                .map_err(|reason| refused(def, &obj, &given_name, &reason))?;
        }
        // --- end ServiceAccount admission
        // --- RuntimeClass admission, mutation (upstream plugin/pkg/admission/runtimeclass):
        // a pod's RuntimeClass sets its overhead and adds its node selector and tolerations
        let runtime_class = if self.builtin_admission.enabled(Plugin::RuntimeClass)
            && runtimeclass::handles(def.group, def.plural, target.subresource.is_some())
        {
            let class = self.runtime_class(&obj);
            runtimeclass::mutate(&mut obj, class.as_ref())
                .map_err(|reason| limitranger::forbidden(def.group, def.plural, &obj, &reason))?;
            Some(class)
        } else {
            None
        };
        // --- end RuntimeClass mutation
        // --- dynamic admission, mutating phase (admission policies, webhooks: `admission`)
        let mut admission = self.admission_attributes(
            target,
            crate::admission::Operation::Create,
            &given_name,
            options_object("CreateOptions", opts),
            opts.dry_run,
        );
        let mut admitted = if self.admission.handles(&admission) {
            Some(self.admission.admit(&admission, &mut obj).await?)
        } else {
            None
        };
        // --- end dynamic admission, mutating phase
        rest::prepare_create(def, &mut obj);
        rest::default_object(def, &mut obj, Phase::Create);
        // --- storage admission (create): StorageObjectInUseProtection and
        // DefaultStorageClass, mutating plugins that run before validation ---
        self.admit_storage_create(def, &mut obj);
        // --- end storage admission ---
        // --- RBAC escalation check (upstream's policybased RBAC storage): a Role or
        // ClusterRole only with rules its author holds (or may `escalate`), a binding
        // only to a role whose rules its author holds (or may `bind`)
        if let Some(guard) = crate::auth::rbac::escalation::prepare(
            &*self.auth.authorizer,
            crate::auth::current_user().as_deref(),
            def.group,
            def.plural,
            target.namespace.as_deref().unwrap_or(""),
            // the request's name: none on a create (upstream's RequestInfo)
            "",
            &obj,
        ) {
            let store = &self.store;
            guard.check_create(&given_name, &obj, &|r, k| {
                store.get(r, k).and_then(|o| o.value().ok())
            })?;
        }
        // --- end RBAC escalation check
        rest::validate_object(def, &obj, None)?;
        // --- LimitRanger admission, validation: min, max and maxLimitRequestRatio of
        // Pods and PersistentVolumeClaims; the first violated LimitRange answers 403
        limitranger::validate(&limit_ranges, def.plural, &obj)
            .map_err(|reason| refused(def, &obj, &given_name, &reason))?;
        // --- end LimitRanger validation
        // --- RuntimeClass admission, validation: the pod's overhead is its class's
        if let Some(class) = &runtime_class {
            runtimeclass::validate(&obj, class.as_ref())
                .map_err(|reason| limitranger::forbidden(def.group, def.plural, &obj, &reason))?;
        }
        // --- end RuntimeClass validation
        // --- CertificateSubjectRestriction admission: no system:masters certificates
        // from the kube-apiserver-client signer
        crate::registry::certificates::certificatesigningrequest::subject_restriction(def, &obj)?;
        // --- end CertificateSubjectRestriction
        rest::go_roundtrip(def, &mut obj, rest::Mode::Storage);
        // --- dynamic admission, validating phase, on what would be stored
        if let Some(out) = admitted.as_mut() {
            admission.name = rest::meta_str(&obj, "name").unwrap_or("").to_string();
            self.admission.validate(&admission, Some(&obj), out).await?;
            warnings.append(&mut out.warnings);
        }
        // --- end dynamic admission, validating phase
        let ns = target.namespace.clone();
        // --- ResourceQuota admission (upstream's last validating plugin): check the
        // object against its namespace's quotas and charge their status.used (a
        // resourceVersion-checked write) before the object is stored; dry-run charges
        // nothing. Upstream: plugin/pkg/admission/resourcequota.
        if self.builtin_admission.enabled(Plugin::ResourceQuota) {
            crate::registry::core::resourcequota::admission::admit(
                &self.store,
                def,
                ns.as_deref(),
                &obj,
                opts.dry_run,
            )
            .await?;
        }
        // --- end ResourceQuota admission
        let resource = def.storage_key();
        let selectable: Vec<&str> = crate::registry::versions::storage_def(def)
            .field_selectors
            .to_vec();
        let mut name = rest::meta_str(&obj, "name").unwrap_or("").to_string();
        // generateName: retry with a new suffix on collision (the closure sees the table)
        let mut attempts = 0;
        loop {
            attempts += 1;
            let key = object_key(ns.as_deref(), &name);
            let mut candidate = obj.clone();
            let outcome = self
                .store
                .write(
                    &resource,
                    &key,
                    &selectable,
                    opts.dry_run,
                    |current, view| {
                        check_namespace(view, def, ns.as_deref(), &name)?;
                        if current.is_some() {
                            return Err(ApiError::already_exists(def.group, def.plural, &name));
                        }
                        def.strategy.allocate(view, &mut candidate)?;
                        Ok(WriteAction::Put(crate::registry::versions::to_storage(
                            def, candidate,
                        )?))
                    },
                )
                .await;
            match outcome {
                Err(e) if e.reason == "AlreadyExists" && given_name.is_empty() && attempts < 8 => {
                    name = rest::generate_name(&generate);
                    if let Some(m) = rest::meta_mut(&mut obj) {
                        m.insert("name".into(), json!(name));
                    }
                }
                Err(e) => return Err(e),
                Ok(o) => return created_reply(def, StatusCode::CREATED, &o.object, warnings),
            }
        }
    }

    /// The dynamic admission attributes of a write on `target` by the current user.
    pub(super) fn admission_attributes(
        &self,
        target: &Target,
        operation: crate::admission::Operation,
        name: &str,
        options: Value,
        dry_run: bool,
    ) -> crate::admission::Attributes {
        let mut a = crate::admission::Attributes::new(
            operation,
            target.resource,
            target.subresource.map(Subresource::name),
            target.namespace.clone(),
            name.to_string(),
        );
        a.options = Some(options);
        a.dry_run = dry_run;
        a
    }

    /// The RuntimeClass a pod names, as stored (RuntimeClass admission).
    fn runtime_class(&self, pod: &Value) -> Option<Value> {
        let name = runtimeclass::class_name(pod)?;
        let key = crate::registry::catalog::Catalog::builtin()
            .lookup("node.k8s.io", "v1", "runtimeclasses")?
            .storage_key();
        self.store.get(&key, name).and_then(|o| o.value().ok())
    }

    /// Dynamic admission of a CREATE on a subresource that carries its own kind
    /// (`pods/binding` a Binding, `pods/eviction` an Eviction): the mutating, then the
    /// validating phase on that object.
    pub(super) async fn admit_subresource_create(
        &self,
        target: &Target,
        opts: &WriteOptions,
        (group, version, kind): (&str, &str, &str),
        obj: &mut Value,
    ) -> ApiResult<()> {
        let name = target.name.clone().unwrap_or_default();
        let mut attrs = self.admission_attributes(
            target,
            crate::admission::Operation::Create,
            &name,
            options_object("CreateOptions", opts),
            opts.dry_run,
        );
        attrs.kind = crate::admission::Gvk {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
        };
        if !self.admission.handles(&attrs) {
            return Ok(());
        }
        let mut out = self.admission.admit(&attrs, obj).await?;
        self.admission.validate(&attrs, Some(obj), &mut out).await?;
        crate::admission::warn(out.warnings);
        Ok(())
    }

    /// Dynamic admission of a CONNECT (`pods/exec`, `pods/attach`, `pods/portforward`):
    /// both phases on the request's options object (`PodExecOptions`, ...), before the
    /// connection is made, as upstream's connect handler.
    pub(super) async fn admit_connect(&self, target: &Target, query: &Query) -> ApiResult<()> {
        let name = target.name.clone().unwrap_or_default();
        let mut attrs = crate::admission::Attributes::new(
            crate::admission::Operation::Connect,
            target.resource,
            target.subresource.map(Subresource::name),
            target.namespace.clone(),
            name,
        );
        let mut o = serde_json::Map::new();
        let kind = match target.subresource {
            Some(Subresource::PortForward) => "PodPortForwardOptions",
            Some(Subresource::Attach) => "PodAttachOptions",
            _ => "PodExecOptions",
        };
        o.insert("kind".into(), json!(kind));
        o.insert("apiVersion".into(), json!("v1"));
        if kind == "PodPortForwardOptions" {
            let ports: Vec<Value> = query
                .values("ports")
                .flat_map(|p| p.split(','))
                .filter_map(|p| p.trim().parse::<i64>().ok())
                .map(Value::from)
                .collect();
            if !ports.is_empty() {
                o.insert("ports".into(), Value::Array(ports));
            }
        } else {
            for f in ["stdin", "stdout", "stderr", "tty"] {
                if query.flag(f).ok().flatten() == Some(true) {
                    o.insert(f.into(), json!(true));
                }
            }
            if let Some(c) = query.get("container").filter(|c| !c.is_empty()) {
                o.insert("container".into(), json!(c));
            }
            if kind == "PodExecOptions" {
                let command: Vec<&str> = query.values("command").collect();
                o.insert("command".into(), json!(command));
            }
        }
        attrs.kind = crate::admission::Gvk {
            group: String::new(),
            version: "v1".into(),
            kind: kind.into(),
        };
        if !self.admission.handles(&attrs) {
            return Ok(());
        }
        let mut obj = Value::Object(o);
        // the mutating phase runs too (upstream calls both); what it changes in the
        // options does not reach the simulated connection
        let mut out = self.admission.admit(&attrs, &mut obj).await?;
        self.admission
            .validate(&attrs, Some(&obj), &mut out)
            .await?;
        crate::admission::warn(out.warnings);
        Ok(())
    }

    /// The LimitRanges stored in `namespace` (LimitRanger admission).
    fn limit_ranges(&self, namespace: Option<&str>) -> Vec<serde_json::Value> {
        let Some(ns) = namespace else {
            return Vec::new();
        };
        let table = self.store.snapshot(&limitranger_storage_key()).table;
        limitranger::in_namespace(Some(&table), ns)
    }

    pub(super) async fn update(
        &self,
        target: &Target,
        query: &Query,
        headers: &HeaderMap,
        body: &Bytes,
    ) -> ApiResult<Reply> {
        let def = target.resource;
        let opts = super::managed::write_options(query, headers, "UpdateOptions", false)?;
        let expected = if target.subresource == Some(Subresource::Scale) {
            // every scale subresource reads autoscaling/v1 Scale, also a custom resource's
            Expected::object("Scale", "autoscaling/v1", true)
        } else {
            expected_object(def)
        };
        let (raw, dups) = decode(headers, body, &expected)?;
        if target.subresource == Some(Subresource::Scale) {
            return self.update_scale(target, &opts, raw, None).await;
        }
        let Decoded { mut obj, warnings } = normalise(def, raw, dups, &opts)?;
        ensure_name_matches(target, &mut obj)?;
        ensure_namespace(target, &mut obj)?;
        let precondition =
            crate::endpoints::request::parse_rv(rest::meta_str(&obj, "resourceVersion"))?;
        let out = self
            .apply_update(target, &opts, precondition, move |_| Ok(obj.clone()))
            .await?;
        Ok(out.with_warnings(warnings))
    }

    /// Store a new version computed from the current object by `compute` (which
    /// returns the full new object as the client sent or patched it); answer with it.
    pub(crate) async fn apply_update<F>(
        &self,
        target: &Target,
        opts: &WriteOptions,
        precondition: Option<u64>,
        compute: F,
    ) -> ApiResult<Reply>
    where
        F: FnMut(&Value) -> ApiResult<Value>,
    {
        let stored = self
            .store_update(target, opts, precondition, compute)
            .await?;
        Reply::presented(target.resource, StatusCode::OK, &stored)
    }

    /// The update itself: returns the stored (or, for deletes, the final) object.
    ///
    /// When the dynamic admission chain handles the request, the update is computed
    /// outside the store's lock: `compute` on the stored object, the mutating plugins,
    /// a dry run of the write for the object that would be stored, the validating
    /// plugins, then the write itself, conditional on the object being unchanged since
    /// it was read (computed again from the new one otherwise, unless the client gave a
    /// resourceVersion: upstream's `GuaranteedUpdate` with admission inside).
    async fn store_update<F>(
        &self,
        target: &Target,
        opts: &WriteOptions,
        precondition: Option<u64>,
        mut compute: F,
    ) -> ApiResult<Arc<StoredObject>>
    where
        F: FnMut(&Value) -> ApiResult<Value>,
    {
        let def = target.resource;
        let sub = target.subresource;
        let operation = if sub == Some(Subresource::Binding) {
            crate::admission::Operation::Create
        } else {
            crate::admission::Operation::Update
        };
        let options = if operation == crate::admission::Operation::Create {
            options_object("CreateOptions", opts)
        } else {
            options_object("UpdateOptions", opts)
        };
        let name = target.name.clone().unwrap_or_default();
        let mut admission =
            self.admission_attributes(target, operation, &name, options, opts.dry_run);
        // the scale subresource is admitted as its autoscaling/v1 Scale
        let scale = sub == Some(Subresource::Scale);
        if scale {
            admission.kind = crate::admission::Gvk {
                group: "autoscaling".into(),
                version: "v1".into(),
                kind: "Scale".into(),
            };
        }
        // a binding is admitted as its Binding, before this (`bind`)
        if sub == Some(Subresource::Binding) || !self.admission.handles(&admission) {
            return self
                .store_update_locked(target, opts, precondition, compute)
                .await;
        }
        let key = object_key(target.namespace.as_deref(), &name);
        let dry = WriteOptions {
            dry_run: true,
            ..opts.clone()
        };
        loop {
            let Some(current) = self.store.get(&def.storage_key(), &key) else {
                return Err(ApiError::not_found(def.group, def.plural, &name));
            };
            if precondition.is_some_and(|rv| rv != current.rv) {
                return Err(ApiError::stale(def.group, def.plural, &name));
            }
            let old = crate::registry::versions::present_value(def, current.value()?)?;
            let mut incoming = compute(&old)?;
            rest::default_object(def, &mut incoming, Phase::Scheme);
            let mut out = if scale {
                admission.old_object = Some(super::read::scale_of(def, &old));
                let mut view = super::read::scale_of(def, &incoming);
                let out = self.admission.admit(&admission, &mut view).await?;
                // a replica count a plugin changed goes into the object
                if let Some(r) = view.pointer("/spec/replicas").and_then(Value::as_i64) {
                    set_scale_replicas(def, &mut incoming, r);
                }
                out
            } else {
                admission.old_object = Some(old);
                self.admission.admit(&admission, &mut incoming).await?
            };
            let would = self
                .store_update_locked(target, &dry, Some(current.rv), |_| Ok(incoming.clone()))
                .await?;
            let mut would = crate::registry::versions::present_value(def, would.value()?)?;
            if scale {
                would = super::read::scale_of(def, &would);
            }
            self.admission
                .validate(&admission, Some(&would), &mut out)
                .await?;
            match self
                .store_update_locked(target, opts, Some(current.rv), |_| Ok(incoming.clone()))
                .await
            {
                // changed since it was read: compute it again, as upstream retries
                Err(e) if e.code == 409 && precondition.is_none() => {
                    if self
                        .store
                        .get(&def.storage_key(), &key)
                        .is_some_and(|now| now.rv != current.rv)
                    {
                        continue;
                    }
                    return Err(e);
                }
                Err(e) => return Err(e),
                Ok(stored) => {
                    crate::admission::warn(out.warnings);
                    return Ok(stored);
                }
            }
        }
    }

    /// The update under the store's lock: the kind's strategy, the built-in admission
    /// plugins, validation and the write, in one step.
    async fn store_update_locked<F>(
        &self,
        target: &Target,
        opts: &WriteOptions,
        precondition: Option<u64>,
        mut compute: F,
    ) -> ApiResult<Arc<StoredObject>>
    where
        F: FnMut(&Value) -> ApiResult<Value>,
    {
        let def = target.resource;
        let name = target.name.clone().unwrap_or_default();
        let key = object_key(target.namespace.as_deref(), &name);
        let selectable: Vec<&str> = crate::registry::versions::storage_def(def)
            .field_selectors
            .to_vec();
        let sub = target.subresource;
        let manager = opts.field_manager.clone().unwrap_or_default();
        let applied = opts.applied;
        // ResourceQuota admission of the update: what it charges, once stored
        let mut quota_charges = Vec::new();
        let limit_ranger = self.builtin_admission.enabled(Plugin::LimitRanger);
        let resource_quota = self.builtin_admission.enabled(Plugin::ResourceQuota);
        let quota_table = crate::registry::core::resourcequota::admission::quota_table();
        // --- RBAC escalation check of an update (upstream's policybased RBAC storage):
        // whether the author is exempt is decided here, against the stored object (a
        // binding's roleRef is immutable); the rules are compared inside the write
        let rbac_user = crate::auth::current_user().filter(|u| {
            sub.is_none()
                && crate::auth::rbac::escalation::RbacKind::of(def.group, def.plural).is_some()
                && !u.in_group(crate::machinery::user::SYSTEM_PRIVILEGED_GROUP)
        });
        let stored = rbac_user
            .as_ref()
            .and_then(|_| self.store.get(&def.storage_key(), &key));
        let rbac_guard = match stored {
            None => None,
            Some(stored) => stored.value().ok().and_then(|current| {
                crate::auth::rbac::escalation::prepare(
                    &*self.auth.authorizer,
                    rbac_user.as_deref(),
                    def.group,
                    def.plural,
                    target.namespace.as_deref().unwrap_or(""),
                    &name,
                    &current,
                )
            }),
        };
        // --- end RBAC escalation check
        // --- CertificateApproval and CertificateSigning admission (upstream
        // plugin/pkg/admission/certificates/{approval,signing}): approving a CSR needs
        // `approve`, issuing its certificate `sign` on its signer; the authorizer is asked
        // here, outside the store's lock, for the stored CSR's (immutable) signerName
        let signer_grants = crate::auth::signer::grants(
            &self.auth,
            def,
            sub,
            self.store.get(&def.storage_key(), &key).as_deref(),
        );
        // --- end certificate admission
        let outcome = self
            .store
            .write(
                &def.storage_key(),
                &key,
                &selectable,
                opts.dry_run,
                |current, view| {
                    let Some(current) = current else {
                        return Err(ApiError::not_found(def.group, def.plural, &name));
                    };
                    if precondition.is_some_and(|rv| rv != current.rv) {
                        return Err(ApiError::stale(def.group, def.plural, &name));
                    }
                    let old = crate::registry::versions::present_value(def, current.value()?)?;
                    let mut incoming = compute(&old)?;
                    // decode-time defaults come before the strategy compares old and new
                    // (a body without them changes nothing, as upstream)
                    rest::default_object(def, &mut incoming, Phase::Scheme);
                    let mut new = match sub {
                        Some(s @ (Subresource::Status | Subresource::Approval)) => {
                            let mut n = rest::prepare_status_update(def, &old, &incoming);
                            def.strategy.prepare_for_subresource_update(s, &old, &mut n);
                            n
                        }
                        Some(Subresource::Finalize) => {
                            rest::prepare_finalize_update(&old, &incoming)
                        }
                        // a binding writes the pod as computed (upstream's guaranteed
                        // update bypasses pod update validation)
                        Some(Subresource::Binding) => incoming,
                        _ => {
                            let mut n = incoming;
                            rest::prepare_update(def, &old, &mut n);
                            n
                        }
                    };
                    // --- RBAC escalation check of an update (prepared above)
                    if let Some(guard) = &rbac_guard {
                        guard.check_update(&name, &old, &new, &|r, k| {
                            view.get(r, k).and_then(|o| o.value().ok())
                        })?;
                    }
                    // --- end RBAC escalation check
                    if sub != Some(Subresource::Binding) {
                        rest::validate_update(def, sub, &new, &old)?;
                    }
                    // --- CertificateApproval and CertificateSigning admission: the
                    // decisions asked before the store's lock, applied to this update
                    if let Some(grants) = &signer_grants {
                        grants.admit(&name, &old, &new)?;
                    }
                    // --- end certificate admission
                    // --- LimitRanger admission, validation on update (PersistentVolumeClaims;
                    // a Pod's containers are immutable): objects being deleted are exempt
                    if limit_ranger
                        && limitranger::handles(def.group, def.plural, sub.is_some(), true)
                        && old.pointer("/metadata/deletionTimestamp").is_none()
                    {
                        let ranges = limitranger::in_namespace(
                            view.table(&limitranger_storage_key()),
                            rest::meta_str(&new, "namespace").unwrap_or(""),
                        );
                        limitranger::validate(&ranges, def.plural, &new).map_err(|reason| {
                            limitranger::forbidden(def.group, def.plural, &new, &reason)
                        })?;
                    }
                    // --- end LimitRanger validation on update
                    // --- storage admission (update): PersistentVolumeClaimResize, a
                    // validating plugin that reads the claim's StorageClass ---
                    if sub.is_none() && def.group.is_empty() && def.plural == PVCS {
                        pvc_admission::check_resize(&name, &old, &new, |class| {
                            view.get(STORAGE_CLASSES, class)
                                .and_then(|o| o.value().ok())
                        })?;
                    }
                    // --- end storage admission ---
                    if sub.is_none() {
                        def.strategy.allocate_update(view, &old, &mut new)?;
                    }
                    // --- ResourceQuota admission (last validating plugin): an update
                    // that uses more (a claim's resize, a service's new type) is checked
                    // against the quotas as stored; 403 when it exceeds one.
                    if resource_quota {
                        quota_charges =
                            crate::registry::core::resourcequota::admission::admit_update(
                                def,
                                view.table(&quota_table),
                                target.namespace.as_deref(),
                                sub.map(Subresource::name),
                                &new,
                                &old,
                            )?;
                    }
                    // --- end ResourceQuota admission
                    // what storage keeps, before asking whether anything changed (upstream
                    // compares the encoded bytes)
                    rest::go_roundtrip(def, &mut new, rest::Mode::Storage);
                    // a binding writes the pod without the field manager, as upstream's
                    // BindingREST (the pod's managedFields stay as they were)
                    if !same_ignoring_rv(&old, &new)
                        && !applied
                        && sub != Some(Subresource::Binding)
                    {
                        super::managed::record_update(def, sub, &manager, Some(&old), &mut new);
                    }
                    if rest::ready_to_vanish(def, &new) {
                        return Ok(WriteAction::Delete(Some(
                            crate::registry::versions::to_storage(def, new)?,
                        )));
                    }
                    // an apply that only changes ownership still writes its managedFields
                    let unchanged = if applied {
                        same_ignoring_rv(&old, &new)
                            && old.pointer("/metadata/managedFields")
                                == new.pointer("/metadata/managedFields")
                    } else {
                        same_ignoring_rv(&old, &new)
                    };
                    if unchanged {
                        return Ok(WriteAction::Unchanged(Arc::clone(current)));
                    }
                    Ok(WriteAction::Put(crate::registry::versions::to_storage(
                        def, new,
                    )?))
                },
            )
            .await?;
        // ResourceQuota admission: charge what the stored update added
        if !opts.dry_run && outcome.event.is_some() && !quota_charges.is_empty() {
            crate::registry::core::resourcequota::admission::charge(&self.store, quota_charges)
                .await?;
        }
        Ok(outcome.object)
    }

    /// POST on a `binding` subresource (`pods/<name>/binding`): the kind's strategy
    /// checks the Binding and computes the bound object, as upstream `BindingREST`.
    pub(super) async fn bind(
        &self,
        target: &Target,
        query: &Query,
        headers: &HeaderMap,
        body: &Bytes,
    ) -> ApiResult<Reply> {
        let def = target.resource;
        let opts = WriteOptions::parse(query)?;
        let (binding, _) = decode(headers, body, &Expected::object("Binding", "v1", true))?;
        let name = target.name.clone().unwrap_or_default();
        let mut binding = binding;
        // dynamic admission: a CREATE of pods/binding with the Binding as its object
        self.admit_subresource_create(target, &opts, ("", "v1", "Binding"), &mut binding)
            .await?;
        def.strategy.check_binding(&name, &binding)?;
        self.store_update(target, &opts, None, |old| {
            def.strategy.bind(&name, old, &binding)
        })
        .await?;
        Ok(created_success())
    }

    /// POST on the core `bindings` collection: the pod named by the Binding's
    /// `metadata.name` in the request's namespace is bound as by `pods/<name>/binding`.
    pub(super) async fn bind_named(
        &self,
        method: &axum::http::Method,
        target: &Target,
        query: &Query,
        headers: &HeaderMap,
        body: &Bytes,
    ) -> ApiResult<Reply> {
        if method != axum::http::Method::POST
            || target.name.is_some()
            || target.subresource.is_some()
        {
            return Err(ApiError::method_not_allowed(
                "the server does not allow this method on the requested resource",
            ));
        }
        let (binding, _) = decode(headers, body, &Expected::object("Binding", "v1", true))?;
        let name = rest::meta_str(&binding, "name").unwrap_or("").to_string();
        let pods = crate::registry::catalog::Catalog::builtin()
            .lookup("", "v1", "pods")
            .ok_or_else(|| ApiError::internal("pods are not served"))?;
        let pod = Target {
            resource: pods,
            namespace: target.namespace.clone(),
            name: Some(name),
            subresource: Some(Subresource::Binding),
            legacy_watch: false,
        };
        self.bind(&pod, query, headers, body).await
    }

    /// PUT or PATCH on `/scale`: `scale` is the new Scale, or `None` with `patch` given.
    pub(crate) async fn update_scale(
        &self,
        target: &Target,
        opts: &WriteOptions,
        scale: Value,
        patch: Option<super::PatchBody>,
    ) -> ApiResult<Reply> {
        let def = target.resource;
        let name = target.name.clone().unwrap_or_default();
        let mut precondition = None;
        let mut replicas_cell: Option<i64> = None;
        if patch.is_none() {
            precondition = crate::endpoints::request::parse_rv(
                scale
                    .pointer("/metadata/resourceVersion")
                    .and_then(Value::as_str),
            )?;
            replicas_cell = Some(scale_replicas(&scale, &name)?);
        }
        let stored = self
            .store_update(target, opts, precondition, |old| {
                let replicas = match (&patch, replicas_cell) {
                    (_, Some(r)) => r,
                    (Some(p), None) => {
                        let current_scale = super::read::scale_of(def, old);
                        let patched = p.apply(&current_scale, "io.k8s.api.autoscaling.v1.Scale")?;
                        scale_replicas(&patched, &name)?
                    }
                    (None, None) => 0,
                };
                let mut new = old.clone();
                set_scale_replicas(def, &mut new, replicas);
                Ok(new)
            })
            .await?;
        // answer with the Scale view of what was stored
        let v = crate::registry::versions::present_value(def, stored.value()?)?;
        Ok(Reply::json(StatusCode::OK, &super::read::scale_of(def, &v)))
    }

    pub(super) async fn patch(
        &self,
        target: &Target,
        query: &Query,
        headers: &HeaderMap,
        body: &Bytes,
    ) -> ApiResult<Reply> {
        let def = target.resource;
        if body.len() > super::MAX_BODY {
            return Err(ApiError::too_large());
        }
        let patch = super::PatchBody::parse(&content_type(headers), body)?;
        if let super::PatchBody::Apply(config) = patch {
            return self.server_side_apply(target, query, headers, config).await;
        }
        if def.custom.is_some() && matches!(patch, super::PatchBody::Strategic(_)) {
            return Err(ApiError::new(
                415,
                "UnsupportedMediaType",
                "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml",
            ));
        }
        let opts = super::managed::write_options(query, headers, "PatchOptions", false)?;
        if target.subresource == Some(Subresource::Scale) {
            return self
                .update_scale(target, &opts, Value::Null, Some(patch))
                .await;
        }
        let definition = def.definition();
        let warnings = std::sync::Mutex::new(Vec::new());
        let reply = self
            .apply_update(target, &opts, None, |old| {
                let patched = patch.apply(old, &definition)?;
                let given_rv = crate::endpoints::request::parse_rv(rest::meta_str(
                    &patched,
                    "resourceVersion",
                ))?;
                let old_rv =
                    crate::endpoints::request::parse_rv(rest::meta_str(old, "resourceVersion"))?;
                if given_rv.is_some() && given_rv != old_rv {
                    return Err(ApiError::stale(
                        def.group,
                        def.plural,
                        target.name.as_deref().unwrap_or(""),
                    ));
                }
                let Decoded { obj, warnings: w } = normalise(def, patched, Vec::new(), &opts)?;
                if let Ok(mut g) = warnings.lock() {
                    g.extend(w);
                }
                let mut obj = obj;
                ensure_name_matches(target, &mut obj)?;
                Ok(obj)
            })
            .await?;
        let w = warnings.into_inner().unwrap_or_default();
        Ok(reply.with_warnings(w))
    }
}

/// An admission plugin's 403 for a create: it names the object as the request did (a
/// generated name is made after admission upstream, so the message names the
/// `generateName` prefix).
fn refused(def: &ResourceDef, obj: &Value, given_name: &str, reason: &str) -> ApiError {
    if given_name.is_empty() {
        let mut named = obj.clone();
        if let Some(m) = rest::meta_mut(&mut named) {
            m.remove("name");
        }
        return limitranger::forbidden(def.group, def.plural, &named, reason);
    }
    limitranger::forbidden(def.group, def.plural, obj, reason)
}

// --- storage admission ---
use crate::registry::core::persistentvolumeclaim::admission as pvc_admission;

const PVCS: &str = "persistentvolumeclaims";
const STORAGE_CLASSES: &str = "storage.k8s.io/storageclasses";

impl Api {
    /// The mutating storage admission plugins on create: `StorageObjectInUseProtection`
    /// (the protection finalizer on every PersistentVolume and PersistentVolumeClaim)
    /// and `DefaultStorageClass` (a claim without a class gets the default one, read
    /// from the store as upstream reads its informer).
    fn admit_storage_create(&self, def: &ResourceDef, obj: &mut Value) {
        if !def.group.is_empty() {
            return;
        }
        match def.plural {
            "persistentvolumes" => pvc_admission::add_finalizer(
                obj,
                crate::registry::core::persistentvolume::PV_PROTECTION_FINALIZER,
            ),
            PVCS => {
                pvc_admission::add_finalizer(obj, pvc_admission::PVC_PROTECTION_FINALIZER);
                if !pvc_admission::claim_has_class(obj) {
                    let classes: Vec<Value> = self
                        .store
                        .snapshot(STORAGE_CLASSES)
                        .table
                        .values()
                        .filter_map(|o| o.value().ok())
                        .collect();
                    pvc_admission::set_default_class(obj, &classes);
                }
            }
            _ => {}
        }
    }
}
// --- end storage admission ---

/// What a create or update body of `def` holds (custom resources have no protobuf).
/// The 201 Success `Status` a binding or an eviction answers with (upstream's
/// `metav1.Status{Status: Success, Code: 201}`).
pub(super) fn created_success() -> Reply {
    Reply::json(
        StatusCode::CREATED,
        &json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Success",
            "code": 201,
        }),
    )
}

pub(super) fn expected_object(def: &ResourceDef) -> Expected<'_> {
    Expected::object(def.kind, def.api_version(), def.custom.is_none())
}

fn scale_replicas(scale: &Value, name: &str) -> ApiResult<i64> {
    let r = scale
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if r < 0 {
        return Err(ApiError::invalid(
            "autoscaling",
            "Scale",
            name,
            vec![apimachinery::status::Cause {
                reason: "FieldValueInvalid".into(),
                message: format!("Invalid value: {r}: must be greater than or equal to 0"),
                field: "spec.replicas".into(),
            }],
        ));
    }
    Ok(r)
}

fn same_ignoring_rv(a: &Value, b: &Value) -> bool {
    let strip = |v: &Value| {
        let mut c = v.clone();
        if let Some(m) = c.get_mut("metadata").and_then(Value::as_object_mut) {
            m.remove("resourceVersion");
            m.remove("managedFields");
        }
        c
    };
    strip(a) == strip(b)
}

/// Where LimitRanges are stored.
fn limitranger_storage_key() -> String {
    crate::registry::catalog::Catalog::builtin()
        .lookup("", "v1", "limitranges")
        .map(|d| d.storage_key())
        .unwrap_or_else(|| "limitranges".into())
}

/// The options object of a write as admission sees it (`CreateOptions`, `UpdateOptions`).
pub(super) fn options_object(kind: &str, opts: &WriteOptions) -> Value {
    let mut o = serde_json::Map::new();
    o.insert("kind".into(), json!(kind));
    o.insert("apiVersion".into(), json!("meta.k8s.io/v1"));
    if opts.dry_run {
        o.insert("dryRun".into(), json!(["All"]));
    }
    if let Some(m) = &opts.field_manager {
        o.insert("fieldManager".into(), json!(m));
    }
    Value::Object(o)
}

/// Set the replica count a Scale writes into `obj` (`spec.replicas`, or the path a
/// CRD's scale subresource names).
fn set_scale_replicas(def: &ResourceDef, obj: &mut Value, replicas: i64) {
    match def.custom.and_then(|c| c.scale.as_ref()) {
        Some(paths) => {
            crate::registry::custom::set_at_path(obj, &paths.spec_replicas, json!(replicas))
        }
        None => {
            if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
                spec.insert("replicas".into(), json!(replicas));
            }
        }
    }
}
