//! CRD conversion webhooks: `ConversionReview` (`apiextensions.k8s.io/v1`) handling.
//!
//! When a CRD has `spec.conversion.strategy: Webhook`, the API server sends the objects it
//! must convert between versions in one `ConversionReview`, with the `desiredAPIVersion`.
//! A [`ConversionWebhook`] holds one [`Converter`] per group and kind and answers with the
//! converted objects in request order and `result.status: Success`, or with no objects and
//! `result.status: Failure` and a message when any object fails; the whole review fails with
//! it, as in controller-runtime. A body that is not a `ConversionReview` with a request is
//! answered with HTTP 400 and no body (controller-runtime's answer too).

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use prometheus_client::metrics::counter::Counter;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::admission::{BodyError, Status};
use crate::controller::panic_message;

const API_VERSION_V1: &str = "apiextensions.k8s.io/v1";
const KIND: &str = "ConversionReview";

/// The largest conversion request body read: reviews carry whole lists, so this is larger
/// than the admission limit.
pub(crate) const MAX_REQUEST_BYTES: usize = 64 * 1024 * 1024;

/// A `ConversionReview`: request from the API server, response from the webhook.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConversionReview {
    /// `apiextensions.k8s.io/v1` (echoed from the request).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// `ConversionReview`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// The objects to convert; set in requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<ConversionRequest>,
    /// The converted objects; set in responses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<ConversionResponse>,
}

/// `ConversionRequest`: the objects to convert and the version wanted.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ConversionRequest {
    /// Identifies this call; echoed in the response.
    #[serde(default)]
    pub uid: String,
    /// The `apiVersion` to convert every object to (`group/version`).
    #[serde(default, rename = "desiredAPIVersion")]
    pub desired_api_version: String,
    /// The objects, each with its own `apiVersion` and `kind`.
    #[serde(default)]
    pub objects: Vec<Value>,
}

/// `ConversionResponse`: the converted objects, in request order, and the outcome.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConversionResponse {
    /// The request's `uid`.
    #[serde(default)]
    pub uid: String,
    /// The converted objects, in the order of the request (empty on failure).
    #[serde(default)]
    pub converted_objects: Vec<Value>,
    /// `status: Success`, or `status: Failure` with a `message`.
    #[serde(default)]
    pub result: Status,
}

/// Converts one object of a kind to the desired `apiVersion`.
///
/// Implemented by every `Fn(Value, &str) -> Result<Value, String>`: the function gets the
/// object (in its stored version) and the desired `apiVersion`, and returns the converted
/// object or why it cannot. The webhook sets `apiVersion` and `kind` of the result itself.
pub trait Converter: Send + Sync + 'static {
    /// Converts `object` to `desired_api_version`.
    fn convert(&self, object: Value, desired_api_version: &str) -> Result<Value, String>;
}

impl<F> Converter for F
where
    F: Fn(Value, &str) -> Result<Value, String> + Send + Sync + 'static,
{
    fn convert(&self, object: Value, desired_api_version: &str) -> Result<Value, String> {
        self(object, desired_api_version)
    }
}

/// A CRD conversion webhook: one [`Converter`] per group and kind.
#[derive(Clone, Default)]
pub struct ConversionWebhook {
    converters: HashMap<(String, String), Arc<dyn Converter>>,
}

impl std::fmt::Debug for ConversionWebhook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut kinds: Vec<_> = self.converters.keys().collect();
        kinds.sort();
        f.debug_struct("ConversionWebhook")
            .field("kinds", &kinds)
            .finish()
    }
}

fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map(|(g, _)| g).unwrap_or("")
}

impl ConversionWebhook {
    /// A webhook with no converters yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Converts objects of `kind` in API `group` with `converter`; replaces any converter
    /// registered for the same group and kind.
    pub fn with_converter(
        mut self,
        group: impl Into<String>,
        kind: impl Into<String>,
        converter: impl Converter,
    ) -> Self {
        self.converters
            .insert((group.into(), kind.into()), Arc::new(converter));
        self
    }

    /// Converts all objects of `request`: a response with the request's uid, either every
    /// object converted (`Success`) or none and the first error (`Failure`). A panicking
    /// converter fails the review and counts in `panics`, if given.
    pub fn convert(&self, request: &ConversionRequest) -> ConversionResponse {
        self.convert_counting_panics(request, None)
    }

    pub(crate) fn convert_counting_panics(
        &self,
        request: &ConversionRequest,
        panics: Option<&Counter>,
    ) -> ConversionResponse {
        let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| self.convert_all(request)));
        let result = match outcome {
            Ok(result) => result,
            Err(payload) => {
                if let Some(panics) = panics {
                    panics.inc();
                }
                tracing::error!(
                    uid = %request.uid, panic = %panic_message(payload.as_ref()),
                    "conversion webhook panicked"
                );
                Err("internal error occurred during conversion".to_string())
            }
        };
        match result {
            Ok(converted_objects) => ConversionResponse {
                uid: request.uid.clone(),
                converted_objects,
                result: Status {
                    status: "Success".to_string(),
                    ..Status::default()
                },
            },
            Err(message) => {
                tracing::warn!(uid = %request.uid, %message, "conversion failed");
                ConversionResponse {
                    uid: request.uid.clone(),
                    converted_objects: Vec::new(),
                    result: Status {
                        status: "Failure".to_string(),
                        message,
                        ..Status::default()
                    },
                }
            }
        }
    }

    fn convert_all(&self, request: &ConversionRequest) -> Result<Vec<Value>, String> {
        let desired = request.desired_api_version.as_str();
        if desired.is_empty() {
            return Err("desiredAPIVersion is empty".to_string());
        }
        request
            .objects
            .iter()
            .enumerate()
            .map(|(i, object)| self.convert_one(i, object, desired))
            .collect()
    }

    fn convert_one(&self, index: usize, object: &Value, desired: &str) -> Result<Value, String> {
        let text = |field: &str| object.get(field).and_then(Value::as_str).unwrap_or("");
        let (api_version, kind) = (text("apiVersion"), text("kind"));
        if api_version.is_empty() || kind.is_empty() {
            return Err(format!("object {index} has no apiVersion or kind"));
        }
        let group = group_of(api_version);
        if group != group_of(desired) {
            return Err(format!(
                "{kind} {api_version} and {desired} do not belong to the same API group"
            ));
        }
        if api_version == desired {
            return Err(format!(
                "conversion is not allowed between same type {kind} {desired}"
            ));
        }
        let converter = self
            .converters
            .get(&(group.to_string(), kind.to_string()))
            .ok_or_else(|| format!("{kind}.{group} is not convertible: no converter registered"))?;
        let name = object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("");
        let mut converted = converter.convert(object.clone(), desired).map_err(|e| {
            format!("converting {kind} {name:?} from {api_version} to {desired}: {e}")
        })?;
        let Some(fields) = converted.as_object_mut() else {
            return Err(format!(
                "converting {kind} {name:?}: the converter returned a non-object"
            ));
        };
        fields.insert("apiVersion".to_string(), Value::from(desired));
        fields.insert("kind".to_string(), Value::from(kind));
        Ok(converted)
    }

    /// Answers one HTTP request body: `Ok(json)` for HTTP 200, `Err(status)` for an HTTP
    /// error with no body.
    pub(crate) fn serve(
        &self,
        body: Result<bytes::Bytes, BodyError>,
        panics: &Counter,
    ) -> Result<Vec<u8>, u16> {
        let body = match body {
            Ok(b) => b,
            Err(BodyError::TooLarge(limit)) => {
                tracing::warn!(limit, "conversion request body too large");
                return Err(413);
            }
            Err(BodyError::Read(e)) => {
                tracing::warn!(error = %e, "failed to read conversion request");
                return Err(400);
            }
        };
        let mut review: ConversionReview = match serde_json::from_slice(&body) {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(error = %e, "failed to decode conversion request");
                return Err(400);
            }
        };
        let Some(request) = review.request.take() else {
            tracing::warn!("conversion request is nil");
            return Err(400);
        };
        review.response = Some(self.convert_counting_panics(&request, Some(panics)));
        if review.api_version.is_empty() {
            review.api_version = API_VERSION_V1.to_string();
        }
        if review.kind.is_empty() {
            review.kind = KIND.to_string();
        }
        serde_json::to_vec(&review).map_err(|e| {
            tracing::error!(error = %e, "failed to encode conversion response");
            500
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn webhook() -> ConversionWebhook {
        ConversionWebhook::new().with_converter(
            "example.com",
            "Widget",
            |mut obj: Value, to: &str| {
                if to == "example.com/v2" {
                    let size = obj["spec"]["size"].take();
                    obj["spec"] = json!({"dimensions": {"size": size}});
                } else {
                    let size = obj["spec"]["dimensions"]["size"].take();
                    obj["spec"] = json!({"size": size});
                }
                Ok(obj)
            },
        )
    }

    #[test]
    fn converts_in_order_and_sets_type_meta() {
        let req = ConversionRequest {
            uid: "c-1".into(),
            desired_api_version: "example.com/v2".into(),
            objects: vec![
                json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "a"}, "spec": {"size": 1}}),
                json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "b"}, "spec": {"size": 2}}),
            ],
        };
        let resp = webhook().convert(&req);
        assert_eq!(resp.uid, "c-1");
        assert_eq!(resp.result.status, "Success");
        let sizes: Vec<_> = resp
            .converted_objects
            .iter()
            .map(|o| o["spec"]["dimensions"]["size"].clone())
            .collect();
        assert_eq!(sizes, vec![json!(1), json!(2)]);
        assert!(resp
            .converted_objects
            .iter()
            .all(|o| o["apiVersion"] == "example.com/v2"));
    }

    #[test]
    fn unknown_kind_other_group_and_same_version_fail() {
        let fail = |obj: Value, to: &str| {
            let req = ConversionRequest {
                uid: "x".into(),
                desired_api_version: to.into(),
                objects: vec![obj],
            };
            let resp = webhook().convert(&req);
            assert_eq!(resp.result.status, "Failure", "{resp:?}");
            assert!(resp.converted_objects.is_empty());
            resp.result.message
        };
        assert!(fail(
            json!({"apiVersion": "example.com/v1", "kind": "Gadget"}),
            "example.com/v2"
        )
        .contains("not convertible"));
        assert!(fail(
            json!({"apiVersion": "other.io/v1", "kind": "Widget"}),
            "example.com/v2"
        )
        .contains("same API group"));
        assert!(fail(
            json!({"apiVersion": "example.com/v2", "kind": "Widget"}),
            "example.com/v2"
        )
        .contains("same type"));
        assert!(fail(json!({"kind": "Widget"}), "example.com/v2").contains("no apiVersion"));
    }

    #[test]
    fn converter_error_names_the_object() {
        let hook = ConversionWebhook::new().with_converter(
            "example.com",
            "Widget",
            |_: Value, _: &str| Err("size too big".to_string()),
        );
        let req = ConversionRequest {
            uid: "x".into(),
            desired_api_version: "example.com/v2".into(),
            objects: vec![
                json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}),
            ],
        };
        let resp = hook.convert(&req);
        assert_eq!(resp.result.status, "Failure");
        assert_eq!(
            resp.result.message,
            "converting Widget \"w\" from example.com/v1 to example.com/v2: size too big"
        );
    }
}
