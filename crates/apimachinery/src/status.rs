//! Kubernetes `Status` errors (`k8s.io/apimachinery/pkg/api/errors`).
//!
//! Every failure an API server answers is an [`ApiError`], rendered as a `meta/v1`
//! `Status` with the HTTP code, reason, message and details upstream kube-apiserver uses,
//! so that clients (`kubectl`, client-go, the Python client) recognise it.

use std::borrow::Cow;

use serde_json::{json, Map, Value};

/// One field-level cause of an error (`details.causes[]`); validation builds them with
/// [`crate::field`].
#[derive(Clone, Debug, PartialEq)]
pub struct Cause {
    /// Machine-readable reason (`FieldValueInvalid`, `FieldValueRequired`, ...).
    pub reason: Cow<'static, str>,
    /// Human-readable message.
    pub message: String,
    /// Field path (`spec.replicas`).
    pub field: String,
}

/// An error answered as a Kubernetes `Status` (boxed, so that results stay small).
#[derive(Clone, Debug, PartialEq)]
pub struct ApiError(Box<ErrorDetails>);

impl std::ops::Deref for ApiError {
    type Target = ErrorDetails;
    fn deref(&self) -> &ErrorDetails {
        &self.0
    }
}

impl std::ops::DerefMut for ApiError {
    fn deref_mut(&mut self) -> &mut ErrorDetails {
        &mut self.0
    }
}

/// What an [`ApiError`] says.
#[derive(Clone, Debug, PartialEq)]
pub struct ErrorDetails {
    /// HTTP status code.
    pub code: u16,
    /// `StatusReason` (`NotFound`, `Conflict`, ...).
    pub reason: &'static str,
    /// Message.
    pub message: String,
    /// `details.name`.
    pub name: Option<String>,
    /// `details.group`.
    pub group: Option<String>,
    /// `details.kind`.
    pub kind: Option<String>,
    /// `details.causes`.
    pub causes: Vec<Cause>,
    /// `details.retryAfterSeconds`.
    pub retry_after: Option<u32>,
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}): {}", self.reason, self.code, self.message)
    }
}

impl std::error::Error for ApiError {}

/// Result type of request handling.
pub type ApiResult<T> = Result<T, ApiError>;

impl ApiError {
    /// A bare error with code, reason and message.
    pub fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        ApiError(Box::new(ErrorDetails {
            code,
            reason,
            message: message.into(),
            name: None,
            group: None,
            kind: None,
            causes: Vec::new(),
            retry_after: None,
        }))
    }

    /// Set the Status `details` (group, kind as the resource, name; empty parts omitted).
    pub fn with_details(mut self, group: &str, kind: &str, name: &str) -> Self {
        if !group.is_empty() {
            self.group = Some(group.to_string());
        }
        self.kind = Some(kind.to_string());
        if !name.is_empty() {
            self.name = Some(name.to_string());
        }
        self
    }

    /// 400 BadRequest.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    /// 401 Unauthorized.
    pub fn unauthorized() -> Self {
        Self::new(401, "Unauthorized", "Unauthorized")
    }

    /// 404 NotFound for `plural.group "name"`.
    pub fn not_found(group: &str, plural: &str, name: &str) -> Self {
        let q = qualify(plural, group);
        Self::new(404, "NotFound", format!("{q} \"{name}\" not found"))
            .with_details(group, plural, name)
    }

    /// 404 for a path that names nothing.
    pub fn path_not_found() -> Self {
        Self::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )
    }

    /// 409 AlreadyExists.
    pub fn already_exists(group: &str, plural: &str, name: &str) -> Self {
        let q = qualify(plural, group);
        Self::new(
            409,
            "AlreadyExists",
            format!("{q} \"{name}\" already exists"),
        )
        .with_details(group, plural, name)
    }

    /// 409 Conflict on a stale resourceVersion.
    pub fn conflict(group: &str, plural: &str, name: &str, detail: &str) -> Self {
        let q = qualify(plural, group);
        Self::new(
            409,
            "Conflict",
            format!("Operation cannot be fulfilled on {q} \"{name}\": {detail}"),
        )
        .with_details(group, plural, name)
    }

    /// 409 Conflict for the usual optimistic-concurrency failure.
    pub fn stale(group: &str, plural: &str, name: &str) -> Self {
        Self::conflict(
            group,
            plural,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    /// The same conflict naming the Kind instead of the resource, as upstream's delete
    /// preconditions report it (`Operation cannot be fulfilled on Pod "x": ...`).
    pub fn with_kind_name(mut self, kind: &str) -> Self {
        let name = self.name.clone().unwrap_or_default();
        if let Some(rest) = self.message.split_once(": ").map(|(_, r)| r.to_string()) {
            self.message = format!("Operation cannot be fulfilled on {kind} \"{name}\": {rest}");
        }
        self.kind = Some(kind.to_string());
        self
    }

    /// 422 Invalid with causes: `Kind.group "name" is invalid: [...]`.
    pub fn invalid(group: &str, kind: &str, name: &str, causes: Vec<Cause>) -> Self {
        let qk = qualify(kind, group);
        let parts: Vec<String> = causes
            .iter()
            .map(|c| {
                if c.field.is_empty() {
                    c.message.clone()
                } else {
                    format!("{}: {}", c.field, c.message)
                }
            })
            .collect();
        let list = if parts.len() == 1 {
            parts[0].clone()
        } else {
            format!("[{}]", parts.join(", "))
        };
        let mut e = Self::new(
            422,
            "Invalid",
            format!("{qk} \"{name}\" is invalid: {list}"),
        )
        .with_details(group, kind, name);
        e.causes = causes;
        e
    }

    /// 403 Forbidden.
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(403, "Forbidden", message)
    }

    /// 405 MethodNotAllowed.
    pub fn method_not_allowed(message: impl Into<String>) -> Self {
        Self::new(405, "MethodNotAllowed", message)
    }

    /// 410 Expired (too old resource version).
    pub fn gone(message: impl Into<String>) -> Self {
        Self::new(410, "Expired", message)
    }

    /// 413 RequestEntityTooLarge.
    pub fn too_large() -> Self {
        Self::new(
            413,
            "RequestEntityTooLarge",
            "Request entity too large: limit is 3145728",
        )
    }

    /// 415 UnsupportedMediaType.
    pub fn unsupported_media_type(content_type: &str) -> Self {
        Self::new(
            415,
            "UnsupportedMediaType",
            format!("the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json (got {content_type})"),
        )
    }

    /// 500 InternalError.
    pub fn internal(message: impl Into<String>) -> Self {
        let m = message.into();
        let mut e = Self::new(
            500,
            "InternalError",
            format!("Internal error occurred: {m}"),
        );
        e.causes.push(Cause {
            reason: Cow::Borrowed(""),
            message: m,
            field: String::new(),
        });
        e
    }

    /// The `Status` object.
    pub fn to_status(&self) -> Value {
        let mut status = Map::new();
        status.insert("kind".into(), json!("Status"));
        status.insert("apiVersion".into(), json!("v1"));
        status.insert("metadata".into(), json!({}));
        status.insert("status".into(), json!("Failure"));
        status.insert("message".into(), json!(self.message));
        // `reason` is omitted when empty, as Go's `omitempty` (a webhook's denial without one)
        if !self.reason.is_empty() {
            status.insert("reason".into(), json!(self.reason));
        }
        let mut details = Map::new();
        if let Some(n) = &self.name {
            details.insert("name".into(), json!(n));
        }
        if let Some(g) = &self.group {
            details.insert("group".into(), json!(g));
        }
        if let Some(k) = &self.kind {
            details.insert("kind".into(), json!(k));
        }
        if !self.causes.is_empty() {
            let causes: Vec<Value> = self
                .causes
                .iter()
                .map(|c| {
                    let mut m = Map::new();
                    if !c.reason.is_empty() {
                        m.insert("reason".into(), json!(c.reason));
                    }
                    m.insert("message".into(), json!(c.message));
                    if !c.field.is_empty() {
                        m.insert("field".into(), json!(c.field));
                    }
                    Value::Object(m)
                })
                .collect();
            details.insert("causes".into(), Value::Array(causes));
        }
        if let Some(r) = self.retry_after {
            details.insert("retryAfterSeconds".into(), json!(r));
        }
        if !details.is_empty() {
            status.insert("details".into(), Value::Object(details));
        }
        status.insert("code".into(), json!(self.code));
        Value::Object(status)
    }
}

/// `name.group`, or `name` for the core group.
pub fn qualify(name: &str, group: &str) -> String {
    if group.is_empty() {
        name.to_string()
    } else {
        format!("{name}.{group}")
    }
}

/// A `Status` object for a successful delete (`status: Success`).
pub fn success_status(group: &str, plural: &str, name: &str, uid: &str) -> Value {
    let mut details = Map::new();
    details.insert("name".into(), json!(name));
    if !group.is_empty() {
        details.insert("group".into(), json!(group));
    }
    details.insert("kind".into(), json!(plural));
    if !uid.is_empty() {
        details.insert("uid".into(), json!(uid));
    }
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_found_matches_upstream() {
        let e = ApiError::not_found("apps", "deployments", "nope");
        let s = e.to_status();
        assert_eq!(s["message"], "deployments.apps \"nope\" not found");
        assert_eq!(s["details"]["group"], "apps");
        assert_eq!(s["details"]["kind"], "deployments");
        assert_eq!(s["code"], 404);
    }

    #[test]
    fn invalid_joins_causes() {
        let e = ApiError::invalid(
            "apps",
            "Deployment",
            "x",
            vec![
                Cause {
                    reason: "FieldValueInvalid".into(),
                    message: "a".into(),
                    field: "f".into(),
                },
                Cause {
                    reason: "FieldValueRequired".into(),
                    message: "b".into(),
                    field: "g".into(),
                },
            ],
        );
        assert_eq!(e.message, "Deployment.apps \"x\" is invalid: [f: a, g: b]");
        let one = ApiError::invalid(
            "",
            "ConfigMap",
            "x",
            vec![Cause {
                reason: "r".into(),
                message: "m".into(),
                field: "f".into(),
            }],
        );
        assert_eq!(one.message, "ConfigMap \"x\" is invalid: f: m");
    }
}
