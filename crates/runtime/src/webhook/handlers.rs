//! The admission webhook types users write: traits, typed helpers and [`AdmissionWebhook`].
//!
//! A handler panic is answered with a 500-coded denial (controller-runtime's
//! `RecoverPanic`), and mutating answers carry the JSON Patch from the object as received to
//! the object as mutated.

use std::future::Future;
use std::marker::PhantomData;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::future::BoxFuture;
use futures::FutureExt as _;
use prometheus_client::metrics::counter::Counter;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use super::admission::{
    decode_review, AdmissionRequest, AdmissionResponse, AdmissionReview, BodyError, Denial,
    Errored, Operation, API_VERSION_V1, KIND,
};
use crate::controller::panic_message;

/// The most general admission webhook: any request in, any response out.
///
/// The server fills in the response `uid` and a result code of 200 when it is left unset.
pub trait AdmissionHandler: Send + Sync + 'static {
    /// Decides on one request.
    fn handle(&self, request: &AdmissionRequest) -> impl Future<Output = AdmissionResponse> + Send;
}

/// A validating webhook on the raw request: every operation (CONNECT too) reaches it.
///
/// `Ok(warnings)` admits the request, `Err(denial)` refuses it.
pub trait Validator: Send + Sync + 'static {
    /// Validates one request.
    fn validate(
        &self,
        request: &AdmissionRequest,
    ) -> impl Future<Output = Result<Vec<String>, Denial>> + Send;
}

/// A mutating webhook on the raw JSON object.
///
/// It is called with a copy of `request.object` for every request that has one and is not a
/// DELETE (like controller-runtime's defaulters); the answer carries the JSON Patch from the
/// object as received to the object as left by `mutate`. `Ok(warnings)` admits the request.
pub trait Mutator: Send + Sync + 'static {
    /// Mutates `object` in place.
    fn mutate(
        &self,
        object: &mut Value,
        request: &AdmissionRequest,
    ) -> impl Future<Output = Result<Vec<String>, Denial>> + Send;
}

/// Object-safe form of [`AdmissionHandler`].
trait DynHandler: Send + Sync {
    fn handle_boxed<'a>(
        &'a self,
        request: &'a AdmissionRequest,
    ) -> BoxFuture<'a, AdmissionResponse>;
}

impl<H: AdmissionHandler> DynHandler for H {
    fn handle_boxed<'a>(
        &'a self,
        request: &'a AdmissionRequest,
    ) -> BoxFuture<'a, AdmissionResponse> {
        Box::pin(self.handle(request))
    }
}

struct ValidatorHandler<V>(V);

impl<V: Validator> AdmissionHandler for ValidatorHandler<V> {
    async fn handle(&self, request: &AdmissionRequest) -> AdmissionResponse {
        match self.0.validate(request).await {
            Ok(warnings) => AdmissionResponse::allowed().with_warnings(warnings),
            Err(denial) => denial.into(),
        }
    }
}

struct MutatorHandler<M>(M);

impl<M: Mutator> AdmissionHandler for MutatorHandler<M> {
    async fn handle(&self, request: &AdmissionRequest) -> AdmissionResponse {
        let Some(original) = request.object.as_ref() else {
            return AdmissionResponse::allowed();
        };
        if request.operation == Operation::Delete {
            return AdmissionResponse::allowed();
        }
        let mut object = original.clone();
        match self.0.mutate(&mut object, request).await {
            Ok(warnings) => {
                AdmissionResponse::patch_from_diff(original, &object).with_warnings(warnings)
            }
            Err(denial) => denial.into(),
        }
    }
}

/// An admission webhook ready to be registered on a [`super::WebhookServer`].
///
/// Built from an [`AdmissionHandler`], a [`Validator`], a [`Mutator`], or with the typed
/// [`validating`] and [`defaulting`] helpers.
#[derive(Clone)]
pub struct AdmissionWebhook {
    handler: Arc<dyn DynHandler>,
}

impl std::fmt::Debug for AdmissionWebhook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdmissionWebhook").finish_non_exhaustive()
    }
}

impl AdmissionWebhook {
    /// A webhook answering with `handler`.
    pub fn new(handler: impl AdmissionHandler) -> Self {
        AdmissionWebhook {
            handler: Arc::new(handler),
        }
    }

    /// A validating webhook.
    pub fn validator(validator: impl Validator) -> Self {
        Self::new(ValidatorHandler(validator))
    }

    /// A mutating webhook answering with JSON Patches.
    pub fn mutator(mutator: impl Mutator) -> Self {
        Self::new(MutatorHandler(mutator))
    }

    /// Runs the handler on one request: a panic becomes a 500-coded denial, and the response
    /// gets the request's uid and a default result code of 200.
    pub async fn handle(&self, request: &AdmissionRequest) -> AdmissionResponse {
        self.handle_counting_panics(request, None).await
    }

    pub(crate) async fn handle_counting_panics(
        &self,
        request: &AdmissionRequest,
        panics: Option<&Counter>,
    ) -> AdmissionResponse {
        let outcome = AssertUnwindSafe(self.handler.handle_boxed(request))
            .catch_unwind()
            .await;
        let response = match outcome {
            Ok(response) => response,
            Err(payload) => {
                if let Some(panics) = panics {
                    panics.inc();
                }
                let what = panic_message(payload.as_ref());
                tracing::error!(
                    uid = %request.uid, namespace = %request.namespace, name = %request.name,
                    panic = %what, "admission webhook panicked"
                );
                AdmissionResponse::errored(500, format!("panic: {what} [recovered]"))
            }
        };
        response.complete(&request.uid)
    }

    /// Answers one HTTP request body: always HTTP 200 with an `AdmissionReview`, as
    /// controller-runtime does; `body` is the body read with the size limit applied.
    pub(crate) async fn serve(
        &self,
        content_type: Option<&str>,
        body: Result<bytes::Bytes, BodyError>,
        panics: &Counter,
    ) -> Vec<u8> {
        let (api_version, response) = match decode_review(content_type, body) {
            Ok((api_version, request)) => {
                let response = self.handle_counting_panics(&request, Some(panics)).await;
                (api_version, response)
            }
            Err(errored) => {
                tracing::warn!(code = errored.code, message = %errored.message, "bad admission request");
                (
                    API_VERSION_V1.to_string(),
                    AdmissionResponse::from(errored).complete(""),
                )
            }
        };
        let review = AdmissionReview {
            api_version,
            kind: KIND.to_string(),
            request: None,
            response: Some(response),
        };
        serde_json::to_vec(&review).unwrap_or_else(|e| {
            // Only a custom handler's non-string map keys could get here.
            let fallback = AdmissionReview {
                api_version: API_VERSION_V1.to_string(),
                kind: KIND.to_string(),
                request: None,
                response: Some(
                    AdmissionResponse::errored(500, format!("unable to encode response: {e}"))
                        .complete(""),
                ),
            };
            serde_json::to_vec(&fallback).unwrap_or_default()
        })
    }
}

fn decode<K: DeserializeOwned>(raw: Option<&Value>, what: &str) -> Result<K, Errored> {
    let raw =
        raw.ok_or_else(|| Errored::new(400, format!("there is no content to decode in {what}")))?;
    K::deserialize(raw).map_err(|e| Errored::new(400, format!("decoding {what}: {e}")))
}

struct TypedValidator<K, F> {
    check: F,
    _kind: PhantomData<fn() -> K>,
}

impl<K, F> AdmissionHandler for TypedValidator<K, F>
where
    K: DeserializeOwned + Send + Sync + 'static,
    F: Fn(&K, Option<&K>, Operation) -> Result<Vec<String>, Denial> + Send + Sync + 'static,
{
    async fn handle(&self, request: &AdmissionRequest) -> AdmissionResponse {
        let verdict = match request.operation {
            Operation::Connect => return AdmissionResponse::allowed(),
            Operation::Create => match decode::<K>(request.object.as_ref(), "object") {
                Ok(obj) => (self.check)(&obj, None, Operation::Create),
                Err(errored) => return errored.into(),
            },
            Operation::Update => {
                let obj = match decode::<K>(request.object.as_ref(), "object") {
                    Ok(o) => o,
                    Err(errored) => return errored.into(),
                };
                let old = match decode::<K>(request.old_object.as_ref(), "oldObject") {
                    Ok(o) => o,
                    Err(errored) => return errored.into(),
                };
                (self.check)(&obj, Some(&old), Operation::Update)
            }
            Operation::Delete => match decode::<K>(request.old_object.as_ref(), "oldObject") {
                Ok(old) => (self.check)(&old, None, Operation::Delete),
                Err(errored) => return errored.into(),
            },
        };
        match verdict {
            Ok(warnings) => AdmissionResponse::allowed().with_warnings(warnings),
            Err(denial) => denial.into(),
        }
    }
}

/// A validating webhook for a typed object (a `k8s-openapi` or `kube-derive` type).
///
/// `check(object, old, operation)` gets, for CREATE, the new object and `None`; for UPDATE,
/// the new object and `Some(old)`; for DELETE, the object being deleted (`oldObject`) and
/// `None`. CONNECT requests are admitted without a call. An object that does not decode as
/// `K` gets a 400-coded denial.
pub fn validating<K, F>(check: F) -> AdmissionWebhook
where
    K: DeserializeOwned + Send + Sync + 'static,
    F: Fn(&K, Option<&K>, Operation) -> Result<Vec<String>, Denial> + Send + Sync + 'static,
{
    AdmissionWebhook::new(TypedValidator {
        check,
        _kind: PhantomData,
    })
}

struct TypedDefaulter<K, F> {
    default: F,
    _kind: PhantomData<fn() -> K>,
}

impl<K, F> AdmissionHandler for TypedDefaulter<K, F>
where
    K: Serialize + DeserializeOwned + Send + Sync + 'static,
    F: Fn(&mut K) + Send + Sync + 'static,
{
    async fn handle(&self, request: &AdmissionRequest) -> AdmissionResponse {
        if request.operation == Operation::Delete {
            return AdmissionResponse::allowed();
        }
        let mut obj = match decode::<K>(request.object.as_ref(), "object") {
            Ok(o) => o,
            Err(errored) => return errored.into(),
        };
        let Some(raw) = request.object.as_ref() else {
            return AdmissionResponse::allowed();
        };
        let before = match serde_json::to_value(&obj) {
            Ok(v) => v,
            Err(e) => return AdmissionResponse::errored(500, e.to_string()),
        };
        (self.default)(&mut obj);
        let after = match serde_json::to_value(&obj) {
            Ok(v) => v,
            Err(e) => return AdmissionResponse::errored(500, e.to_string()),
        };
        if before == after {
            return AdmissionResponse::allowed();
        }
        // Diff from the object as received, so that the API server can apply the patch, but
        // leave out the removals that only come from `K` not knowing a field (controller-
        // runtime's dropSchemeRemovals): the defaulter did not ask for those.
        let mut patch = json_patch::diff(raw, &after);
        let dropped_by_type = json_patch::diff(raw, &before);
        patch.0.retain(|op| {
            !(matches!(op, json_patch::PatchOperation::Remove(_)) && dropped_by_type.0.contains(op))
        });
        AdmissionResponse::allowed().with_patch(patch)
    }
}

/// A mutating webhook for a typed object: `default` sets defaults on the decoded object and
/// the answer carries the JSON Patch between the object as received and as defaulted.
///
/// DELETE requests are admitted without a call. Fields that `K` does not know are kept (not
/// removed by the patch). An object that does not decode as `K` gets a 400-coded denial.
pub fn defaulting<K, F>(default: F) -> AdmissionWebhook
where
    K: Serialize + DeserializeOwned + Send + Sync + 'static,
    F: Fn(&mut K) + Send + Sync + 'static,
{
    AdmissionWebhook::new(TypedDefaulter {
        default,
        _kind: PhantomData,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request(op: Operation, object: Value) -> AdmissionRequest {
        serde_json::from_value(json!({
            "uid": "u-1",
            "kind": {"group": "", "version": "v1", "kind": "ConfigMap"},
            "resource": {"group": "", "version": "v1", "resource": "configmaps"},
            "name": "cm", "namespace": "default",
            "operation": op,
            "userInfo": {"username": "alice"},
            "object": object,
        }))
        .unwrap()
    }

    #[tokio::test]
    async fn typed_defaulter_keeps_fields_unknown_to_the_type() {
        use k8s_openapi::api::core::v1::ConfigMap;
        let hook = defaulting(|cm: &mut ConfigMap| {
            cm.data
                .get_or_insert_with(Default::default)
                .insert("k".into(), "v".into());
        });
        let original = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "cm", "futureField": {"x": 1}},
            "unknownTopLevel": true,
        });
        let resp = hook
            .handle(&request(Operation::Create, original.clone()))
            .await;
        assert!(resp.allowed);
        let patch = resp.json_patch().unwrap().unwrap();
        let mut patched = original.clone();
        json_patch::patch(&mut patched, &patch).unwrap();
        let mut want = original;
        want["data"] = json!({"k": "v"});
        assert_eq!(patched, want);
    }

    #[tokio::test]
    async fn typed_defaulter_without_change_answers_without_patch() {
        use k8s_openapi::api::core::v1::ConfigMap;
        let hook = defaulting(|_: &mut ConfigMap| {});
        let resp = hook
            .handle(&request(
                Operation::Create,
                json!({"metadata": {"name": "x"}, "extra": 1}),
            ))
            .await;
        assert!(resp.allowed);
        assert_eq!(resp.patch, None);
        assert_eq!(resp.uid, "u-1");
        assert_eq!(resp.result.unwrap().code, 200);
    }

    #[tokio::test]
    async fn typed_validator_rejects_undecodable_object_with_400() {
        use k8s_openapi::api::core::v1::ConfigMap;
        let hook = validating(|_: &ConfigMap, _: Option<&ConfigMap>, _| Ok(vec![]));
        let resp = hook
            .handle(&request(Operation::Create, json!({"data": 5})))
            .await;
        assert!(!resp.allowed);
        assert_eq!(resp.result.unwrap().code, 400);
    }
}
