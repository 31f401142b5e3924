//! `AdmissionReview` v1 wire types, the response constructors and request decoding.
//!
//! Semantics follow controller-runtime's `pkg/webhook/admission`: bad requests are answered
//! with HTTP 200 and a denied response whose `status.code` is 400 (or 413 for a too large
//! body), and a mutating webhook's answer carries a base64 JSON Patch with
//! `patchType: JSONPatch`, or no patch at all when nothing changed.

use std::collections::BTreeMap;

use k8s_openapi::api::authentication::v1::UserInfo;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The `patchType` of a JSON Patch answer, the only one the API server accepts.
pub const PATCH_TYPE_JSON_PATCH: &str = "JSONPatch";

pub(crate) const API_VERSION_V1: &str = "admission.k8s.io/v1";
const API_VERSION_V1BETA1: &str = "admission.k8s.io/v1beta1";
pub(crate) const KIND: &str = "AdmissionReview";

/// The largest request body an admission webhook reads (controller-runtime's 7 MiB).
pub(crate) const MAX_REQUEST_BYTES: usize = 7 * 1024 * 1024;

/// An `AdmissionReview`: the request the API server sends and the response it expects.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionReview {
    /// `admission.k8s.io/v1` (or the older `admission.k8s.io/v1beta1`, echoed back).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// `AdmissionReview`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// What is being admitted; set in requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<AdmissionRequest>,
    /// The verdict; set in responses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<AdmissionResponse>,
}

/// A group, version and kind, as in `AdmissionRequest.kind`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct GroupVersionKind {
    /// API group, empty for the core group.
    #[serde(default)]
    pub group: String,
    /// API version.
    #[serde(default)]
    pub version: String,
    /// Kind.
    #[serde(default)]
    pub kind: String,
}

/// A group, version and resource, as in `AdmissionRequest.resource`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct GroupVersionResource {
    /// API group, empty for the core group.
    #[serde(default)]
    pub group: String,
    /// API version.
    #[serde(default)]
    pub version: String,
    /// Resource (plural, lower case).
    #[serde(default)]
    pub resource: String,
}

/// The operation being admitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Operation {
    /// `CREATE`.
    Create,
    /// `UPDATE`.
    Update,
    /// `DELETE`.
    Delete,
    /// `CONNECT` (exec, attach, port-forward, proxy).
    Connect,
}

/// `AdmissionRequest` (`admission.k8s.io/v1`): what the API server asks a webhook to admit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionRequest {
    /// Identifies this call; echoed in the response.
    #[serde(default, deserialize_with = "null_as_default")]
    pub uid: String,
    /// Kind of the object as the webhook is asked to see it.
    #[serde(default, deserialize_with = "null_as_default")]
    pub kind: GroupVersionKind,
    /// Resource being requested.
    #[serde(default, deserialize_with = "null_as_default")]
    pub resource: GroupVersionResource,
    /// Subresource being requested, if any (`status`, `scale`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub_resource: Option<String>,
    /// Kind of the original request, when it differs from `kind` (matchPolicy: Equivalent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_kind: Option<GroupVersionKind>,
    /// Resource of the original request, when it differs from `resource`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_resource: Option<GroupVersionResource>,
    /// Subresource of the original request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_sub_resource: Option<String>,
    /// Name of the object (may be empty on create with `generateName`).
    #[serde(default, deserialize_with = "null_as_default")]
    pub name: String,
    /// Namespace of the object, empty for cluster-scoped objects.
    #[serde(default, deserialize_with = "null_as_default")]
    pub namespace: String,
    /// The operation.
    pub operation: Operation,
    /// Who asked.
    #[serde(default, deserialize_with = "null_as_default")]
    pub user_info: UserInfo,
    /// The object as it would be stored (create, update), or connect options (connect).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object: Option<Value>,
    /// The existing object (update, delete).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_object: Option<Value>,
    /// True when the request will not be persisted: the webhook must have no side effects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dry_run: Option<bool>,
    /// The operation's options (`CreateOptions`, `UpdateOptions`, `DeleteOptions`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<Value>,
}

/// Reads `null` as the default value, as Go's JSON decoding does for non-pointer fields.
fn null_as_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// The subset of `metav1.Status` an admission response carries as `status`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Status {
    /// HTTP-like code: 200 when allowed, 403 when denied, 400/500 on errors.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub code: i32,
    /// `Success` or `Failure`, where set.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub status: String,
    /// Human-readable explanation, shown to the user by the API server.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// Machine-readable reason (`Forbidden`, `Invalid`, …).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
}

fn is_zero(code: &i32) -> bool {
    *code == 0
}

/// `AdmissionResponse` (`admission.k8s.io/v1`): a webhook's verdict.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionResponse {
    /// The request's `uid` (filled in by the server).
    #[serde(default)]
    pub uid: String,
    /// Whether the request is admitted.
    pub allowed: bool,
    /// Details; the server fills in code 200 when a handler leaves it unset. On the wire
    /// `status` (Go's `Result` field is tagged `json:"status"`; the API server reads the
    /// denial's message there); `result` is accepted when reading.
    #[serde(
        default,
        rename = "status",
        alias = "result",
        skip_serializing_if = "Option::is_none"
    )]
    pub result: Option<Status>,
    /// The JSON Patch to apply, as JSON bytes (base64 on the wire).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "base64_bytes"
    )]
    pub patch: Option<Vec<u8>>,
    /// [`PATCH_TYPE_JSON_PATCH`] when `patch` is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch_type: Option<String>,
    /// Annotations the API server adds to the audit event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audit_annotations: Option<BTreeMap<String, String>>,
    /// Warnings returned to the client (`kubectl` prints them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

mod base64_bytes {
    use base64::Engine as _;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(bytes: &Option<Vec<u8>>, s: S) -> Result<S::Ok, S::Error> {
        match bytes {
            Some(b) => s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(b)),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<u8>>, D::Error> {
        match Option::<String>::deserialize(d)? {
            Some(s) => base64::engine::general_purpose::STANDARD
                .decode(s)
                .map(Some)
                .map_err(serde::de::Error::custom),
            None => Ok(None),
        }
    }
}

impl AdmissionResponse {
    /// Admits the request.
    pub fn allowed() -> Self {
        AdmissionResponse {
            allowed: true,
            result: Some(Status {
                code: 200,
                ..Status::default()
            }),
            ..AdmissionResponse::default()
        }
    }

    /// Denies the request with code 403 and reason `Forbidden` (controller-runtime's `Denied`).
    pub fn denied(message: impl Into<String>) -> Self {
        Self::from(Denial::new(message))
    }

    /// Denies the request because the webhook failed: `code` is 400 for bad input and 500 for
    /// internal errors (controller-runtime's `Errored`).
    pub fn errored(code: u16, message: impl Into<String>) -> Self {
        AdmissionResponse {
            allowed: false,
            result: Some(Status {
                code: i32::from(code),
                message: message.into(),
                ..Status::default()
            }),
            ..AdmissionResponse::default()
        }
    }

    /// Admits the request with the JSON Patch that turns `original` into `mutated`; with no
    /// difference, no patch is set.
    pub fn patch_from_diff(original: &Value, mutated: &Value) -> Self {
        Self::allowed().with_patch(json_patch::diff(original, mutated))
    }

    /// Sets `patch` and `patchType`, or clears them when the patch is empty.
    pub fn with_patch(mut self, patch: json_patch::Patch) -> Self {
        if patch.0.is_empty() {
            self.patch = None;
            self.patch_type = None;
            return self;
        }
        match serde_json::to_vec(&patch) {
            Ok(bytes) => {
                self.patch = Some(bytes);
                self.patch_type = Some(PATCH_TYPE_JSON_PATCH.to_string());
                self
            }
            Err(e) => Self::errored(500, format!("unable to encode the patch: {e}")),
        }
    }

    /// Appends warnings.
    pub fn with_warnings(mut self, warnings: impl IntoIterator<Item = String>) -> Self {
        self.warnings.extend(warnings);
        self
    }

    /// The patch decoded, if one is set.
    pub fn json_patch(&self) -> Option<Result<json_patch::Patch, serde_json::Error>> {
        self.patch.as_deref().map(serde_json::from_slice)
    }

    /// Fills in what the server owns: the request uid and a result code of 200 when unset.
    pub(crate) fn complete(mut self, uid: &str) -> Self {
        self.uid = uid.to_string();
        let result = self.result.get_or_insert_with(Status::default);
        if result.code == 0 {
            result.code = 200;
        }
        self
    }
}

/// A refusal from a [`Validator`](super::Validator) or [`Mutator`](super::Mutator): the code, reason and message the user sees.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Denial {
    /// HTTP-like code; 403 unless set otherwise.
    pub code: u16,
    /// Machine-readable reason; `Forbidden` unless set otherwise.
    pub reason: String,
    /// The explanation shown to the user.
    pub message: String,
    /// Warnings to return along with the denial.
    pub warnings: Vec<String>,
}

impl Denial {
    /// A 403 `Forbidden` denial with this message.
    pub fn new(message: impl Into<String>) -> Self {
        Denial {
            code: 403,
            reason: "Forbidden".to_string(),
            message: message.into(),
            warnings: Vec::new(),
        }
    }

    /// Sets the code and reason (for example 422 `Invalid`).
    pub fn with_code(mut self, code: u16, reason: impl Into<String>) -> Self {
        self.code = code;
        self.reason = reason.into();
        self
    }

    /// Adds warnings.
    pub fn with_warnings(mut self, warnings: impl IntoIterator<Item = String>) -> Self {
        self.warnings.extend(warnings);
        self
    }
}

impl From<Denial> for AdmissionResponse {
    fn from(d: Denial) -> Self {
        AdmissionResponse {
            allowed: false,
            result: Some(Status {
                code: i32::from(d.code),
                reason: d.reason,
                message: d.message,
                ..Status::default()
            }),
            warnings: d.warnings,
            ..AdmissionResponse::default()
        }
    }
}

impl std::fmt::Display for Denial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}): {}", self.reason, self.code, self.message)
    }
}

impl std::error::Error for Denial {}

/// Why a request body could not be read.
#[derive(Debug)]
pub(crate) enum BodyError {
    TooLarge(usize),
    Read(String),
}

/// A request the webhook could not take: answered with a denial coded `code`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Errored {
    pub(crate) code: u16,
    pub(crate) message: String,
}

impl Errored {
    pub(crate) fn new(code: u16, message: impl Into<String>) -> Self {
        Errored {
            code,
            message: message.into(),
        }
    }
}

impl From<Errored> for AdmissionResponse {
    fn from(e: Errored) -> Self {
        AdmissionResponse::errored(e.code, e.message)
    }
}

/// Checks and decodes a request body as controller-runtime does: the review's
/// `apiVersion` (to echo) and its request.
pub(crate) fn decode_review(
    content_type: Option<&str>,
    body: Result<bytes::Bytes, BodyError>,
) -> Result<(String, AdmissionRequest), Errored> {
    let body = match body {
        Ok(b) if b.is_empty() => return Err(Errored::new(400, "request body is empty")),
        Ok(b) => b,
        Err(BodyError::TooLarge(limit)) => {
            return Err(Errored::new(
                413,
                format!("request entity is too large; limit is {limit} bytes"),
            ))
        }
        Err(BodyError::Read(e)) => return Err(Errored::new(400, e)),
    };
    let content_type = content_type.unwrap_or("");
    if content_type != "application/json" {
        return Err(Errored::new(
            400,
            format!("contentType={content_type}, expected application/json"),
        ));
    }
    let review: AdmissionReview = serde_json::from_slice(&body)
        .map_err(|e| Errored::new(400, format!("unable to decode the request: {e}")))?;
    let api_version = match review.api_version.as_str() {
        "" => API_VERSION_V1.to_string(),
        API_VERSION_V1 | API_VERSION_V1BETA1 => review.api_version,
        other => {
            return Err(Errored::new(
                400,
                format!("no kind \"AdmissionReview\" is registered for version {other:?}"),
            ))
        }
    };
    if !review.kind.is_empty() && review.kind != KIND {
        return Err(Errored::new(
            400,
            format!("expected kind AdmissionReview, got {:?}", review.kind),
        ));
    }
    let request = review
        .request
        .ok_or_else(|| Errored::new(400, "the AdmissionReview has no request"))?;
    Ok((api_version, request))
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;
    use serde_json::json;

    #[test]
    fn null_fields_decode_as_empty_like_go() {
        let req: AdmissionRequest = serde_json::from_value(json!({
            "uid": "u", "name": null, "namespace": null, "operation": "DELETE",
            "userInfo": null, "object": null, "oldObject": {"kind": "ConfigMap"},
        }))
        .unwrap();
        assert_eq!((req.name.as_str(), req.namespace.as_str()), ("", ""));
        assert_eq!(req.object, None);
        assert_eq!(req.operation, Operation::Delete);
    }

    #[test]
    fn empty_patch_sets_no_patch_field() {
        let obj = json!({"a": 1});
        let resp = AdmissionResponse::patch_from_diff(&obj, &obj);
        assert!(resp.allowed);
        assert_eq!(resp.patch, None);
        assert_eq!(resp.patch_type, None);
        let wire = serde_json::to_value(&resp).unwrap();
        assert!(wire.get("patch").is_none() && wire.get("patchType").is_none());
    }

    #[test]
    fn patch_is_base64_on_the_wire() {
        let resp = AdmissionResponse::patch_from_diff(&json!({}), &json!({"a": 1}));
        let wire = serde_json::to_value(&resp).unwrap();
        assert_eq!(wire["patchType"], "JSONPatch");
        let raw = base64::engine::general_purpose::STANDARD
            .decode(wire["patch"].as_str().unwrap())
            .unwrap();
        let ops: Value = serde_json::from_slice(&raw).unwrap();
        assert_eq!(ops, json!([{"op": "add", "path": "/a", "value": 1}]));
    }

    #[test]
    fn bad_requests_are_400_coded() {
        let bad = |ct: Option<&str>, body: &str| {
            decode_review(ct, Ok(bytes::Bytes::copy_from_slice(body.as_bytes()))).unwrap_err()
        };
        assert_eq!(
            bad(Some("application/json"), "").message,
            "request body is empty"
        );
        let ct = bad(Some("text/plain"), "{}");
        assert_eq!(
            (ct.code, ct.message.as_str()),
            (400, "contentType=text/plain, expected application/json")
        );
        assert_eq!(bad(Some("application/json"), "{nope").code, 400);
        assert_eq!(
            bad(
                Some("application/json"),
                r#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}"#
            )
            .code,
            400
        );
        assert_eq!(
            bad(
                Some("application/json"),
                r#"{"apiVersion":"foo/v1","kind":"AdmissionReview"}"#
            )
            .code,
            400
        );
        let big =
            decode_review(Some("application/json"), Err(BodyError::TooLarge(10))).unwrap_err();
        assert_eq!(big.code, 413);
    }
}
