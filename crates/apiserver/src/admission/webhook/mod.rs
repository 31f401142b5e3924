//! Admission webhooks: the MutatingAdmissionWebhook and ValidatingAdmissionWebhook
//! plugins (upstream `staging/src/k8s.io/apiserver/pkg/admission/plugin/webhook`).
//!
//! Each write the chain hands them is matched against the stored
//! Mutating-/ValidatingWebhookConfigurations ([`config`], compiled once per change of
//! their tables): the rules ([`rules`]: operations, groups, versions, resources with
//! subresources, scope), then, for a webhook whose rules match (or, with
//! `matchPolicy: Equivalent`, match another version of the same resource, whose object
//! the webhook then gets converted to its version), the namespaceSelector (the labels of
//! the request's namespace; a Namespace's own labels), the objectSelector (the new or the
//! old object's labels) and the `matchConditions` (CEL over `object`, `oldObject` and
//! `request`). A matching webhook is sent an AdmissionReview ([`review`]; `v1` or
//! `v1beta1`, the first of its `admissionReviewVersions` the server speaks) over HTTPS
//! verified with its `caBundle` ([`client`]; a `service` reference is dialled where the
//! server's [`ServiceResolver`] says). Mutating webhooks run one after the other, their
//! JSONPatch answers applied (and, with `reinvocationPolicy: IfNeeded`, called once more
//! when a later one changed the object); validating webhooks run in parallel. A denial
//! answers `admission webhook "x" denied the request: ...`; a failure to call a webhook
//! (`failurePolicy: Fail`, the default) answers 500 `failed calling webhook "x": ...`,
//! and is ignored with `failurePolicy: Ignore`. A dry run is refused by a webhook with
//! side effects (`sideEffects` other than `None`/`NoneOnDryRun`). Webhooks never see the
//! admission configuration kinds themselves.

pub mod client;
pub mod config;
pub mod matchers;
pub mod review;
pub mod rules;

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::{json, Value};

use crate::admission::{Attributes, BoxFuture, Operation, Outcome, Plugin};
use crate::machinery::cel::admission::{with_program, Activation, Want};
use crate::machinery::user::UserInfo;
use crate::registry::catalog::{Catalog, ResourceDef};
use crate::storage::store::Store;
use apimachinery::status::{qualify, ApiError, ApiResult};

pub use client::ServiceResolver;
use config::Hook;

/// The variables of a webhook's `matchConditions` (upstream's `ValidateMatchCondition`:
/// no `params`, `namespaceObject` or `variables`).
const MATCH_CONDITION_VARS: &[&str] = &["object", "oldObject", "request", "authorizer"];

/// The name of the mutating plugin.
pub const MUTATING_PLUGIN: &str = "MutatingAdmissionWebhook";
/// The name of the validating plugin.
pub const VALIDATING_PLUGIN: &str = "ValidatingAdmissionWebhook";

/// The current catalogue (built-in kinds and served custom resources), for the
/// equivalent versions of a resource.
pub type CatalogFn = Arc<dyn Fn() -> Option<Arc<Catalog>> + Send + Sync>;

/// What both webhook plugins share: the store (configurations, namespaces), the
/// Service resolver and the catalogue.
pub struct Webhooks {
    store: Arc<Store>,
    /// The server's authorizer, for the `authorizer` variable of `matchConditions`
    /// (`None`: every check allowed).
    authorizer: Option<Arc<dyn crate::auth::Authorizer>>,
    mutating: config::Source,
    validating: config::Source,
    resolver: Arc<dyn ServiceResolver>,
    catalog: CatalogFn,
}

impl Webhooks {
    /// The webhooks configured in `store`, Services reached through `resolver`.
    pub fn new(
        store: Arc<Store>,
        resolver: Arc<dyn ServiceResolver>,
        catalog: CatalogFn,
        authorizer: Option<Arc<dyn crate::auth::Authorizer>>,
    ) -> Arc<Webhooks> {
        Arc::new(Webhooks {
            authorizer,
            mutating: config::Source::new(Arc::clone(&store), config::MUTATING, true),
            validating: config::Source::new(Arc::clone(&store), config::VALIDATING, false),
            store,
            resolver,
            catalog,
        })
    }

    /// The MutatingAdmissionWebhook plugin.
    pub fn mutating_plugin(self: &Arc<Self>) -> Arc<dyn Plugin> {
        Arc::new(MutatingWebhook(Arc::clone(self)))
    }

    /// The ValidatingAdmissionWebhook plugin.
    pub fn validating_plugin(self: &Arc<Self>) -> Arc<dyn Plugin> {
        Arc::new(ValidatingWebhook(Arc::clone(self)))
    }

    /// The other versions of the request's resource (upstream's equivalent resource
    /// mapper: the resources stored alike, in catalogue order).
    fn equivalents(&self, def: &'static ResourceDef) -> Vec<&'static ResourceDef> {
        let key = def.storage_key();
        let current = (self.catalog)();
        let resources = match &current {
            Some(c) => c.resources(),
            None => Catalog::builtin().resources(),
        };
        resources
            .iter()
            .copied()
            .filter(|r| !std::ptr::eq(*r, def) && r.storage_key() == key && r.plural == def.plural)
            .collect()
    }

    /// Whether any webhook's rules could select the request (cheap: no selectors).
    fn rules_select(&self, hooks: &config::Hooks, attrs: &Attributes) -> bool {
        if hooks.hooks.is_empty() || rules::is_exempt(&attrs.kind.group, &attrs.kind.kind) {
            return false;
        }
        let req = request_of(attrs, attrs.resource);
        if hooks
            .hooks
            .iter()
            .any(|h| h.rules.iter().any(|r| r.matches(&req)))
        {
            return true;
        }
        let equivalent: Vec<&Arc<Hook>> = hooks.hooks.iter().filter(|h| h.equivalent).collect();
        if equivalent.is_empty() {
            return false;
        }
        self.equivalents(attrs.resource).into_iter().any(|def| {
            let req = request_of(attrs, def);
            equivalent
                .iter()
                .any(|h| h.rules.iter().any(|r| r.matches(&req)))
        })
    }

    /// Whether `hook` is called for the request, and as which resource (upstream
    /// `ShouldCallHook`).
    fn should_call(
        &self,
        hook: &Hook,
        attrs: &Attributes,
        obj: Option<&Value>,
    ) -> ApiResult<Option<&'static ResourceDef>> {
        let ns_req = matchers::NamespaceRequest {
            namespaces: is_namespaces(attrs.resource),
            subresource: attrs.subresource.unwrap_or(""),
            operation: attrs.operation.as_str(),
            namespace: effective_namespace(attrs),
            object: obj,
        };
        let ns_match = matchers::match_namespace_selector(&hook.namespace_selector, &ns_req, |n| {
            self.store
                .get("/namespaces", n)
                .and_then(|o| o.value().ok())
        });
        if matches!(ns_match, Ok(false)) {
            return Ok(None);
        }
        let obj_match =
            matchers::match_object_selector(&hook.object_selector, obj, attrs.old_object.as_ref());
        if matches!(obj_match, Ok(false)) {
            return Ok(None);
        }
        let req = request_of(attrs, attrs.resource);
        let mut target = hook
            .rules
            .iter()
            .any(|r| r.matches(&req))
            .then_some(attrs.resource);
        if target.is_none() && hook.equivalent {
            let equivalents = self.equivalents(attrs.resource);
            'rules: for rule in &hook.rules {
                for def in &equivalents {
                    if rule.matches(&request_of(attrs, def)) {
                        target = Some(def);
                        break 'rules;
                    }
                }
            }
        }
        let Some(target) = target else {
            return Ok(None);
        };
        ns_match?;
        obj_match?;
        if !hook.match_conditions.is_empty() {
            let versioned = obj.map(|o| convert(attrs.resource, target, o.clone()));
            let versioned = versioned.transpose()?;
            let old = attrs
                .old_object
                .as_ref()
                .map(|o| convert(attrs.resource, target, o.clone()))
                .transpose()?;
            let request = request_value(attrs, target, None, None, "");
            let request = &request["request"];
            let null = Value::Null;
            let mut act = Activation::new();
            act.bind_json("object", versioned.as_ref().unwrap_or(&null));
            act.bind_json("oldObject", old.as_ref().unwrap_or(&null));
            act.bind_json("request", request);
            crate::admission::policy::bind_authorizer(&mut act, self.authorizer.clone(), attrs);
            let mut errors = Vec::new();
            for (name, expr) in &hook.match_conditions {
                let result = with_program(expr, MATCH_CONDITION_VARS, Want::Bool, |p| act.eval(p))
                    .and_then(|v| match v {
                        Value::Bool(b) => Ok(b),
                        _ => Err("cel expression must evaluate to a bool".to_string()),
                    });
                match result {
                    Ok(false) => return Ok(None),
                    Ok(true) => {}
                    Err(e) => {
                        errors.push(format!("failed to evaluate match condition {name:?}: {e}"))
                    }
                }
            }
            if !errors.is_empty() {
                if hook.ignore_failures {
                    return Ok(None);
                }
                let msg = if errors.len() == 1 {
                    errors.remove(0)
                } else {
                    format!("[{}]", errors.join(", "))
                };
                let r = attrs.resource;
                return Err(ApiError::forbidden(format!(
                    "{} {:?} is forbidden: {msg}",
                    qualify(r.plural, r.group),
                    attrs.name
                ))
                .with_details(r.group, r.plural, &attrs.name));
            }
        }
        Ok(Some(target))
    }

    /// Post the review of the request to `hook`; its checked answer.
    async fn call(
        &self,
        hook: &Hook,
        attrs: &Attributes,
        target: &'static ResourceDef,
        obj: Option<&Value>,
        mutating: bool,
    ) -> Result<review::Response, Failure> {
        if attrs.dry_run {
            match hook.side_effects.as_deref() {
                None => {
                    return Err(Failure::Calling("Webhook SideEffects is nil".into()));
                }
                Some("None" | "NoneOnDryRun") => {}
                Some(_) => return Err(Failure::Error(review::dry_run_unsupported(&hook.name))),
            }
        }
        let version = review::pick_version(&hook.review_versions)
            .map_err(|e| Failure::Calling(format!("could not create admission objects: {e}")))?;
        let uid = uuid::Uuid::new_v4().to_string();
        let old = attrs
            .old_object
            .as_ref()
            .map(|o| convert(attrs.resource, target, o.clone()))
            .transpose()
            .map_err(Failure::Error)?;
        let body = request_value(attrs, target, obj, old.as_ref(), &uid);
        let body = review_of(version, body);
        let bytes = serde_json::to_vec(&body)
            .map_err(|e| Failure::Error(ApiError::internal(e.to_string())))?;
        let answer = client::post(&hook.client, &*self.resolver, hook.timeout, bytes)
            .await
            .map_err(|e| match e {
                client::CallError::Transport(m) => {
                    Failure::Calling(format!("failed to call webhook: {m}"))
                }
                client::CallError::Config(m) => {
                    Failure::Calling(format!("could not get REST client: {m}"))
                }
            })?;
        let response = review::verify(version, &uid, mutating, &answer)
            .map_err(|e| Failure::Calling(format!("received invalid webhook response: {e}")))?;
        Ok(response)
    }
}

/// Why a webhook call did not admit.
enum Failure {
    /// Calling the webhook failed (upstream `ErrCallingWebhook`): subject to the
    /// failure policy.
    Calling(String),
    /// The webhook denied, or the request cannot go on: answered as is.
    Error(ApiError),
}

/// The request's AdmissionReview (`request` object) for a call as `target`, with the
/// review's `uid`.
fn request_value(
    attrs: &Attributes,
    target: &'static ResourceDef,
    obj: Option<&Value>,
    old: Option<&Value>,
    uid: &str,
) -> Value {
    let apiserver = UserInfo::apiserver();
    let user = attrs.user.as_deref().unwrap_or(&apiserver);
    let (kind, request_kind) = if std::ptr::eq(target, attrs.resource) {
        let k = (
            attrs.kind.group.as_str(),
            attrs.kind.version.as_str(),
            attrs.kind.kind.as_str(),
        );
        (k, k)
    } else {
        // an equivalent version: the subresource's kind stays (a Scale is a Scale)
        let k = if attrs.kind.kind == attrs.resource.kind {
            (target.group, target.version, target.kind)
        } else {
            (
                attrs.kind.group.as_str(),
                attrs.kind.version.as_str(),
                attrs.kind.kind.as_str(),
            )
        };
        (
            k,
            (
                attrs.kind.group.as_str(),
                attrs.kind.version.as_str(),
                attrs.kind.kind.as_str(),
            ),
        )
    };
    let converted =
        obj.map(|o| convert(attrs.resource, target, o.clone()).unwrap_or_else(|_| o.clone()));
    review::review(
        "v1",
        &review::ReviewRequest {
            uid,
            kind,
            resource: (target.group, target.version, target.plural),
            subresource: attrs.subresource.unwrap_or(""),
            request_kind,
            request_resource: (
                attrs.resource.group,
                attrs.resource.version,
                attrs.resource.plural,
            ),
            name: &attrs.name,
            namespace: effective_namespace(attrs),
            operation: attrs.operation.as_str(),
            user,
            object: converted.as_ref(),
            old_object: old,
            dry_run: attrs.dry_run,
            options: attrs.options.as_ref(),
        },
    )
}

/// The review of `version` around the request of a v1 review.
fn review_of(version: &str, mut v1: Value) -> Value {
    if let Some(o) = v1.as_object_mut() {
        o.insert(
            "apiVersion".into(),
            json!(format!("admission.k8s.io/{version}")),
        );
    }
    v1
}

fn is_namespaces(def: &ResourceDef) -> bool {
    def.group.is_empty() && def.plural == "namespaces"
}

/// The namespace upstream's attributes carry: a Namespace's name for requests on an
/// existing Namespace (its URL names it), none on its create.
fn effective_namespace(attrs: &Attributes) -> &str {
    if is_namespaces(attrs.resource) && attrs.operation != Operation::Create {
        return &attrs.name;
    }
    attrs.namespace.as_deref().unwrap_or("")
}

fn request_of<'a>(attrs: &'a Attributes, def: &'static ResourceDef) -> rules::Request<'a> {
    rules::Request {
        group: def.group,
        version: def.version,
        resource: def.plural,
        subresource: attrs.subresource.unwrap_or(""),
        namespace: effective_namespace(attrs),
        operation: attrs.operation.as_str(),
    }
}

/// `obj` (of `from`'s version) as `to`'s version.
fn convert(from: &'static ResourceDef, to: &'static ResourceDef, obj: Value) -> ApiResult<Value> {
    if std::ptr::eq(from, to) || from.api_version() == to.api_version() {
        return Ok(obj);
    }
    let mut v = if from.storage_of.is_some() || to.storage_of.is_some() {
        let stored = crate::registry::versions::to_storage(from, obj)?;
        crate::registry::versions::present_value(to, stored)?
    } else {
        to.strategy
            .convert(obj, &from.api_version(), &to.api_version())
            .map_err(ApiError::internal)?
    };
    if let Some(o) = v.as_object_mut() {
        o.insert("apiVersion".into(), json!(to.api_version()));
    }
    Ok(v)
}

/// The state the mutating plugin keeps per request (upstream's
/// `webhookReinvokeContext`).
#[derive(Default)]
struct ReinvokeState {
    /// The object after the last webhook call.
    last_output: Option<Value>,
    /// Reinvocable webhooks called since the object last changed.
    previously_invoked: BTreeSet<String>,
    /// Webhooks to call again in the reinvocation round.
    reinvoke: BTreeSet<String>,
}

impl ReinvokeState {
    fn require_reinvoking_previously_invoked(&mut self) {
        let previous = std::mem::take(&mut self.previously_invoked);
        self.reinvoke.extend(previous);
    }
}

/// MutatingAdmissionWebhook.
struct MutatingWebhook(Arc<Webhooks>);

impl Plugin for MutatingWebhook {
    fn name(&self) -> &'static str {
        MUTATING_PLUGIN
    }

    fn handles(&self, attrs: &Attributes) -> bool {
        self.0.rules_select(&self.0.mutating.hooks(), attrs)
    }

    fn admit<'a>(
        &'a self,
        attrs: &'a Attributes,
        obj: &'a mut Value,
        out: &'a mut Outcome,
    ) -> BoxFuture<'a, ApiResult<()>> {
        Box::pin(self.dispatch(attrs, obj, out))
    }

    fn wants_reinvocation(&self, attrs: &Attributes) -> bool {
        attrs
            .context
            .with(MUTATING_PLUGIN, |s: &mut ReinvokeState| {
                !s.previously_invoked.is_empty() || !s.reinvoke.is_empty()
            })
    }

    fn wants_own_reinvocation(&self, attrs: &Attributes) -> bool {
        attrs
            .context
            .with(MUTATING_PLUGIN, |s: &mut ReinvokeState| {
                !s.reinvoke.is_empty()
            })
    }
}

impl MutatingWebhook {
    async fn dispatch(
        &self,
        attrs: &Attributes,
        obj: &mut Value,
        out: &mut Outcome,
    ) -> ApiResult<()> {
        let w = &self.0;
        let hooks = w.mutating.hooks();
        let round = usize::from(attrs.reinvocation);
        attrs
            .context
            .with(MUTATING_PLUGIN, |s: &mut ReinvokeState| {
                if attrs.reinvocation && s.last_output.as_ref() != Some(&*obj) {
                    // a later plugin changed the object: every reinvocable webhook again
                    s.require_reinvoking_previously_invoked();
                }
            });
        let result = self.dispatch_hooks(&hooks, attrs, obj, out, round).await;
        attrs
            .context
            .with(MUTATING_PLUGIN, |s: &mut ReinvokeState| {
                s.last_output = Some(obj.clone());
                if attrs.reinvocation {
                    // reinvoked once at most
                    s.reinvoke.clear();
                    s.previously_invoked.clear();
                }
            });
        result
    }

    async fn dispatch_hooks(
        &self,
        hooks: &config::Hooks,
        attrs: &Attributes,
        obj: &mut Value,
        out: &mut Outcome,
        round: usize,
    ) -> ApiResult<()> {
        let w = &self.0;
        for (i, hook) in hooks.hooks.iter().enumerate() {
            let Some(target) = w.should_call(hook, attrs, Some(obj))? else {
                continue;
            };
            if attrs.reinvocation
                && !attrs
                    .context
                    .with(MUTATING_PLUGIN, |s: &mut ReinvokeState| {
                        s.reinvoke.contains(&hook.uid)
                    })
            {
                continue;
            }
            let versioned = convert(attrs.resource, target, obj.clone())?;
            let result = w.call(hook, attrs, target, Some(&versioned), true).await;
            let mut changed = false;
            let outcome = match result {
                Ok(resp) => {
                    for (k, v) in &resp.audit_annotations {
                        out.audit_annotations
                            .insert(format!("{}/{k}", hook.name), v.clone());
                    }
                    crate::admission::warn(resp.warnings.iter().cloned());
                    if !resp.allowed {
                        Err(Failure::Error(review::denial(
                            &hook.name,
                            resp.result.as_ref(),
                        )))
                    } else {
                        match apply_patch(hook, &resp, &versioned) {
                            Ok(None) => Ok(()),
                            Ok(Some(patched)) => {
                                changed = patched != versioned;
                                if changed {
                                    let mut back = convert(target, attrs.resource, patched)?;
                                    crate::registry::rest::default_object(
                                        attrs.resource,
                                        &mut back,
                                        crate::registry::catalog::Phase::Scheme,
                                    );
                                    out.audit_annotations.insert(
                                        format!("patch.webhook.admission.k8s.io/round_{round}_index_{i}"),
                                        json!({"configuration": hook.configuration, "webhook": hook.name,
                                               "patch": serde_json::from_slice::<Value>(&resp.patch).unwrap_or(Value::Null),
                                               "patchType": "JSONPatch"}).to_string(),
                                    );
                                    *obj = back;
                                }
                                Ok(())
                            }
                            Err(f) => Err(f),
                        }
                    }
                }
                Err(f) => Err(f),
            };
            out.audit_annotations.insert(
                format!("mutation.webhook.admission.k8s.io/round_{round}_index_{i}"),
                json!({"configuration": hook.configuration, "webhook": hook.name, "mutated": changed})
                    .to_string(),
            );
            attrs
                .context
                .with(MUTATING_PLUGIN, |s: &mut ReinvokeState| {
                    if changed {
                        s.require_reinvoking_previously_invoked();
                    }
                    if hook.reinvoke_if_needed && !attrs.reinvocation {
                        s.previously_invoked.insert(hook.uid.clone());
                    }
                });
            match outcome {
                Ok(()) => {}
                Err(Failure::Calling(reason)) if hook.ignore_failures => {
                    tracing::warn!(webhook = %hook.name, error = %reason, "Failed calling webhook, failing open");
                    out.audit_annotations.insert(
                        format!(
                            "failed-open.mutation.webhook.admission.k8s.io/round_{round}_index_{i}"
                        ),
                        hook.name.clone(),
                    );
                }
                Err(Failure::Calling(reason)) => {
                    tracing::warn!(webhook = %hook.name, error = %reason, "Failed calling webhook, failing closed");
                    return Err(ApiError::internal(format!(
                        "failed calling webhook {:?}: {reason}",
                        hook.name
                    )));
                }
                Err(Failure::Error(e)) => return Err(e),
            }
        }
        Ok(())
    }
}

/// The object a mutating webhook's answer makes of `versioned` (`None`: no patch).
fn apply_patch(
    hook: &Hook,
    resp: &review::Response,
    versioned: &Value,
) -> Result<Option<Value>, Failure> {
    if resp.patch.is_empty() {
        return Ok(None);
    }
    if resp.patch_type != "JSONPatch" {
        return Err(Failure::Calling(format!(
            "unsupported patch type {:?}",
            resp.patch_type
        )));
    }
    let patch: json_patch::Patch = serde_json::from_slice(&resp.patch).map_err(|e| {
        Failure::Calling(format!(
            "received undecodable patch in webhook response: {e}"
        ))
    })?;
    if patch.0.is_empty() {
        return Ok(None);
    }
    if versioned.is_null() {
        return Err(Failure::Error(ApiError::internal(format!(
            "admission webhook {:?} attempted to modify the object, which is not supported for this operation",
            hook.name
        ))));
    }
    let mut patched = versioned.clone();
    json_patch::patch(&mut patched, &patch)
        .map_err(|e| Failure::Error(ApiError::internal(e.to_string())))?;
    Ok(Some(patched))
}

/// ValidatingAdmissionWebhook.
struct ValidatingWebhook(Arc<Webhooks>);

impl Plugin for ValidatingWebhook {
    fn name(&self) -> &'static str {
        VALIDATING_PLUGIN
    }

    fn handles(&self, attrs: &Attributes) -> bool {
        self.0.rules_select(&self.0.validating.hooks(), attrs)
    }

    fn validate<'a>(
        &'a self,
        attrs: &'a Attributes,
        obj: Option<&'a Value>,
        out: &'a mut Outcome,
    ) -> BoxFuture<'a, ApiResult<()>> {
        Box::pin(self.dispatch(attrs, obj, out))
    }
}

impl ValidatingWebhook {
    async fn dispatch(
        &self,
        attrs: &Attributes,
        obj: Option<&Value>,
        out: &mut Outcome,
    ) -> ApiResult<()> {
        let w = &self.0;
        let hooks = w.validating.hooks();
        let mut relevant = Vec::new();
        for (i, hook) in hooks.hooks.iter().enumerate() {
            if let Some(target) = w.should_call(hook, attrs, obj)? {
                let versioned = obj
                    .map(|o| convert(attrs.resource, target, o.clone()))
                    .transpose()?;
                relevant.push((i, hook, target, versioned));
            }
        }
        if relevant.is_empty() {
            return Ok(());
        }
        let calls = relevant.iter().map(|(_, hook, target, versioned)| {
            w.call(hook, attrs, target, versioned.as_ref(), false)
        });
        let results = futures::future::join_all(calls).await;
        let mut first_error = None;
        for ((i, hook, _, _), result) in relevant.iter().zip(results) {
            let err = match result {
                Ok(resp) => {
                    for (k, v) in &resp.audit_annotations {
                        out.audit_annotations
                            .insert(format!("{}/{k}", hook.name), v.clone());
                    }
                    crate::admission::warn(resp.warnings.iter().cloned());
                    if resp.allowed {
                        continue;
                    }
                    review::denial(&hook.name, resp.result.as_ref())
                }
                Err(Failure::Calling(reason)) if hook.ignore_failures => {
                    tracing::warn!(webhook = %hook.name, error = %reason, "Failed calling webhook, failing open");
                    out.audit_annotations.insert(
                        format!(
                            "failed-open.validating.webhook.admission.k8s.io/round_0_index_{i}"
                        ),
                        hook.name.clone(),
                    );
                    continue;
                }
                Err(Failure::Calling(reason)) => {
                    tracing::warn!(webhook = %hook.name, error = %reason, "Failed calling webhook, failing closed");
                    ApiError::internal(format!("failed calling webhook {:?}: {reason}", hook.name))
                }
                Err(Failure::Error(e)) => e,
            };
            if first_error.is_none() {
                first_error = Some(err);
            }
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}
