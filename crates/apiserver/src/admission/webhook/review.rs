//! The AdmissionReview a webhook is sent and the checks of its answer (upstream
//! `admission/plugin/webhook/request/admissionreview.go`), and a denial's Status
//! (upstream `webhook/errors/statuserror.go` `ToStatusErr`).

use std::borrow::Cow;
use std::collections::BTreeMap;

use base64::Engine as _;
use serde_json::{json, Map, Value};

use crate::machinery::user::UserInfo;
use apimachinery::status::{ApiError, Cause};

/// What the review describes (upstream's `WebhookInvocation` with its versioned
/// attributes).
#[derive(Debug)]
pub struct ReviewRequest<'a> {
    /// `request.uid`.
    pub uid: &'a str,
    /// `kind` (the webhook's version of the object's kind), as group, version, kind.
    pub kind: (&'a str, &'a str, &'a str),
    /// `resource` (the webhook's version of the resource): group, version, resource.
    pub resource: (&'a str, &'a str, &'a str),
    /// `subResource` and `requestSubResource`.
    pub subresource: &'a str,
    /// `requestKind`: as the request named it.
    pub request_kind: (&'a str, &'a str, &'a str),
    /// `requestResource`: as the request named it.
    pub request_resource: (&'a str, &'a str, &'a str),
    /// `name`.
    pub name: &'a str,
    /// `namespace`.
    pub namespace: &'a str,
    /// `operation`.
    pub operation: &'a str,
    /// `userInfo`.
    pub user: &'a UserInfo,
    /// `object`.
    pub object: Option<&'a Value>,
    /// `oldObject`.
    pub old_object: Option<&'a Value>,
    /// `dryRun`.
    pub dry_run: bool,
    /// `options`.
    pub options: Option<&'a Value>,
}

fn gvk(t: (&str, &str, &str)) -> Value {
    json!({"group": t.0, "version": t.1, "kind": t.2})
}

fn gvr(t: (&str, &str, &str)) -> Value {
    json!({"group": t.0, "version": t.1, "resource": t.2})
}

fn user_info(u: &UserInfo) -> Value {
    let mut m = Map::new();
    if !u.name.is_empty() {
        m.insert("username".into(), json!(u.name));
    }
    if !u.uid.is_empty() {
        m.insert("uid".into(), json!(u.uid));
    }
    if !u.groups.is_empty() {
        m.insert("groups".into(), json!(u.groups));
    }
    if !u.extra.is_empty() {
        m.insert("extra".into(), json!(u.extra));
    }
    Value::Object(m)
}

/// The AdmissionReview of `version` (`v1` or `v1beta1`, the same fields).
pub fn review(version: &str, r: &ReviewRequest<'_>) -> Value {
    let mut req = Map::new();
    req.insert("uid".into(), json!(r.uid));
    req.insert("kind".into(), gvk(r.kind));
    req.insert("resource".into(), gvr(r.resource));
    if !r.subresource.is_empty() {
        req.insert("subResource".into(), json!(r.subresource));
    }
    req.insert("requestKind".into(), gvk(r.request_kind));
    req.insert("requestResource".into(), gvr(r.request_resource));
    if !r.subresource.is_empty() {
        req.insert("requestSubResource".into(), json!(r.subresource));
    }
    if !r.name.is_empty() {
        req.insert("name".into(), json!(r.name));
    }
    if !r.namespace.is_empty() {
        req.insert("namespace".into(), json!(r.namespace));
    }
    req.insert("operation".into(), json!(r.operation));
    req.insert("userInfo".into(), user_info(r.user));
    req.insert("object".into(), r.object.cloned().unwrap_or(Value::Null));
    req.insert(
        "oldObject".into(),
        r.old_object.cloned().unwrap_or(Value::Null),
    );
    req.insert("dryRun".into(), json!(r.dry_run));
    req.insert("options".into(), r.options.cloned().unwrap_or(Value::Null));
    json!({
        "kind": "AdmissionReview",
        "apiVersion": format!("admission.k8s.io/{version}"),
        "request": Value::Object(req),
    })
}

/// The first AdmissionReview version of `versions` the server speaks (upstream
/// `CreateAdmissionObjects`).
pub fn pick_version(versions: &[String]) -> Result<&'static str, String> {
    for v in versions {
        match v.as_str() {
            "v1" => return Ok("v1"),
            "v1beta1" => return Ok("v1beta1"),
            _ => {}
        }
    }
    Err("webhook does not accept known AdmissionReview versions (v1, v1beta1)".into())
}

/// What a webhook answered (upstream `request.AdmissionResponse`).
#[derive(Debug, Default, PartialEq)]
pub struct Response {
    /// `auditAnnotations`.
    pub audit_annotations: BTreeMap<String, String>,
    /// `allowed`.
    pub allowed: bool,
    /// The decoded `patch`.
    pub patch: Vec<u8>,
    /// `patchType` (normalised to `JSONPatch` for v1beta1 answers with a patch).
    pub patch_type: String,
    /// `status`.
    pub result: Option<Value>,
    /// `warnings`.
    pub warnings: Vec<String>,
}

/// Check a webhook's answer to the review of `version` with `uid` (upstream
/// `VerifyAdmissionResponse`).
pub fn verify(
    version: &str,
    uid: &str,
    mutating: bool,
    answer: &Value,
) -> Result<Response, String> {
    let Some(r) = answer.get("response").filter(|r| r.is_object()) else {
        return Err("webhook response was absent".into());
    };
    let patch = match r.get("patch") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(b)) => base64::engine::general_purpose::STANDARD
            .decode(b)
            .map_err(|e| format!("illegal base64 data in response.patch: {e}"))?,
        Some(_) => return Err("response.patch is not a base64 string".into()),
    };
    let patch_type = r.get("patchType").filter(|p| !p.is_null());
    let mut out = Response {
        audit_annotations: r
            .get("auditAnnotations")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_string())))
                    .collect()
            })
            .unwrap_or_default(),
        allowed: r.get("allowed").and_then(Value::as_bool).unwrap_or(false),
        patch: Vec::new(),
        patch_type: String::new(),
        result: r.get("status").filter(|s| !s.is_null()).cloned(),
        warnings: r
            .get("warnings")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|w| w.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default(),
    };
    if version == "v1beta1" {
        // response uid, kind and patch type were not checked for v1beta1
        if mutating && !patch.is_empty() {
            out.patch = patch;
            out.patch_type = "JSONPatch".into();
        }
        return Ok(out);
    }
    let got_uid = r.get("uid").and_then(Value::as_str).unwrap_or("");
    if got_uid != uid {
        return Err(format!("expected response.uid={uid:?}, got {got_uid:?}"));
    }
    let av = answer
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let kind = answer.get("kind").and_then(Value::as_str).unwrap_or("");
    if av != "admission.k8s.io/v1" || kind != "AdmissionReview" {
        let (g, v) = av.rsplit_once('/').unwrap_or(("", av));
        return Err(format!(
            "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got {}",
            if g.is_empty() {
                format!("/{v}, Kind={kind}")
            } else {
                format!("{g}/{v}, Kind={kind}")
            }
        ));
    }
    if mutating {
        if !patch.is_empty() && patch_type.is_none() {
            return Err("webhook returned response.patch but not response.patchType".into());
        }
        if patch.is_empty() && patch_type.is_some() {
            return Err("webhook returned response.patchType but not response.patch".into());
        }
        if let Some(t) = patch_type {
            let t = t.as_str().unwrap_or("");
            if t.is_empty() {
                return Err(format!(
                    "webhook returned invalid response.patchType of {t:?}"
                ));
            }
            out.patch_type = t.to_string();
        }
        out.patch = patch;
    } else {
        if !patch.is_empty() {
            return Err("validating webhook may not return response.patch".into());
        }
        if patch_type.is_some() {
            return Err("validating webhook may not return response.patchType".into());
        }
    }
    Ok(out)
}

/// A `StatusReason` as the error type keeps it (known reasons; others kept once).
fn static_reason(reason: &str) -> &'static str {
    const KNOWN: &[&str] = &[
        "",
        "Unauthorized",
        "Forbidden",
        "NotFound",
        "AlreadyExists",
        "Conflict",
        "Gone",
        "Invalid",
        "ServerTimeout",
        "StoreReadError",
        "Timeout",
        "TooManyRequests",
        "BadRequest",
        "MethodNotAllowed",
        "NotAcceptable",
        "RequestEntityTooLarge",
        "UnsupportedMediaType",
        "InternalError",
        "Expired",
        "ServiceUnavailable",
    ];
    if let Some(k) = KNOWN.iter().find(|k| **k == reason) {
        return k;
    }
    static OTHERS: std::sync::Mutex<Vec<&'static str>> = std::sync::Mutex::new(Vec::new());
    let mut others = OTHERS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(k) = others.iter().find(|k| **k == reason) {
        return k;
    }
    if others.len() >= 64 {
        return "";
    }
    let leaked: &'static str = Box::leak(reason.to_string().into_boxed_str());
    others.push(leaked);
    leaked
}

/// The Status of a webhook's denial (upstream `ToStatusErr`): the webhook's status
/// with its message prefixed by `admission webhook "name" denied the request`, a
/// code of at least 400 (the default, with no status, 400).
pub fn denial(webhook: &str, result: Option<&Value>) -> ApiError {
    let denied_by = format!("admission webhook {webhook:?} denied the request");
    let empty = Value::Null;
    let r = result.unwrap_or(&empty);
    let s = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("");
    let code = r
        .get("code")
        .and_then(Value::as_u64)
        .and_then(|c| u16::try_from(c).ok())
        .filter(|c| *c >= 400)
        .unwrap_or(400);
    let message = if !s("message").is_empty() {
        format!("{denied_by}: {}", s("message"))
    } else if !s("reason").is_empty() {
        format!("{denied_by}: {}", s("reason"))
    } else {
        format!("{denied_by} without explanation")
    };
    let mut e = ApiError::new(code, static_reason(s("reason")), message);
    if let Some(d) = r.get("details").filter(|d| d.is_object()) {
        let ds = |k: &str| d.get(k).and_then(Value::as_str).filter(|v| !v.is_empty());
        e.name = ds("name").map(str::to_string);
        e.group = ds("group").map(str::to_string);
        e.kind = ds("kind").map(str::to_string);
        e.retry_after = d
            .get("retryAfterSeconds")
            .and_then(Value::as_u64)
            .and_then(|v| u32::try_from(v).ok());
        if let Some(cs) = d.get("causes").and_then(Value::as_array) {
            e.causes = cs
                .iter()
                .map(|c| {
                    let cs = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or("").to_string();
                    Cause {
                        reason: Cow::Owned(cs("reason")),
                        message: cs("message"),
                        field: cs("field"),
                    }
                })
                .collect();
        }
    }
    e
}

/// 400 `admission webhook "x" does not support dry run` (upstream
/// `NewDryRunUnsupportedErr`).
pub fn dry_run_unsupported(webhook: &str) -> ApiError {
    ApiError::bad_request(format!(
        "admission webhook {webhook:?} does not support dry run"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn denials_read_as_upstream_to_status_err() {
        let e = denial("deny.example.com", None);
        assert_eq!(e.code, 400);
        assert_eq!(
            e.message,
            "admission webhook \"deny.example.com\" denied the request without explanation"
        );
        let e = denial(
            "v.example.com",
            Some(&json!({"code": 403, "reason": "Forbidden", "message": "no bad things"})),
        );
        assert_eq!((e.code, e.reason), (403, "Forbidden"));
        assert_eq!(
            e.message,
            "admission webhook \"v.example.com\" denied the request: no bad things"
        );
        // a code below 400 is raised to 400; a reason stands in for a missing message
        let e = denial("w", Some(&json!({"code": 200, "reason": "Custom"})));
        assert_eq!((e.code, e.reason), (400, "Custom"));
        assert_eq!(
            e.message,
            "admission webhook \"w\" denied the request: Custom"
        );
        let status = e.to_status();
        assert_eq!(status["status"], "Failure");
    }

    #[test]
    fn answers_are_checked_as_upstream_does() {
        let ok = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "response": {"uid": "u1", "allowed": true, "warnings": ["w1"], "auditAnnotations": {"k": "v"}}});
        let r = verify("v1", "u1", false, &ok).expect("valid");
        assert!(r.allowed);
        assert_eq!(r.warnings, vec!["w1".to_string()]);
        assert_eq!(r.audit_annotations.get("k").map(String::as_str), Some("v"));
        assert_eq!(
            verify("v1", "u2", false, &ok),
            Err("expected response.uid=\"u2\", got \"u1\"".into())
        );
        assert_eq!(
            verify("v1", "u1", false, &json!({})),
            Err("webhook response was absent".into())
        );
        let wrong_kind = json!({"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview",
            "response": {"uid": "u1", "allowed": true}});
        assert_eq!(
            verify("v1", "u1", false, &wrong_kind),
            Err("expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got admission.k8s.io/v1beta1, Kind=AdmissionReview".into())
        );
        // v1beta1: uid and kind unchecked, a patch is a JSONPatch
        let patch = base64::engine::general_purpose::STANDARD.encode(b"[]");
        let beta = json!({"response": {"uid": "other", "allowed": true, "patch": patch}});
        let r = verify("v1beta1", "u1", true, &beta).expect("v1beta1");
        assert_eq!(r.patch_type, "JSONPatch");
        let patched = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "response": {"uid": "u1", "allowed": true, "patch": patch}});
        assert_eq!(
            verify("v1", "u1", true, &patched),
            Err("webhook returned response.patch but not response.patchType".into())
        );
        assert_eq!(
            verify("v1", "u1", false, &patched),
            Err("validating webhook may not return response.patch".into())
        );
        let typed = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "response": {"uid": "u1", "allowed": true, "patchType": "JSONPatch"}});
        assert_eq!(
            verify("v1", "u1", true, &typed),
            Err("webhook returned response.patchType but not response.patch".into())
        );
    }

    #[test]
    fn the_first_known_review_version_is_used() {
        let v = |xs: &[&str]| xs.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(pick_version(&v(&["v2", "v1beta1", "v1"])), Ok("v1beta1"));
        assert_eq!(pick_version(&v(&["v1", "v1beta1"])), Ok("v1"));
        assert!(pick_version(&v(&["v2"])).is_err());
    }

    #[test]
    fn reviews_carry_upstreams_fields() {
        let user = UserInfo::new("alice", &["devs"]);
        let obj = json!({"kind": "Pod"});
        let r = review(
            "v1",
            &ReviewRequest {
                uid: "u",
                kind: ("autoscaling", "v1", "Scale"),
                resource: ("apps", "v1", "deployments"),
                subresource: "scale",
                request_kind: ("autoscaling", "v1", "Scale"),
                request_resource: ("apps", "v1", "deployments"),
                name: "d",
                namespace: "ns",
                operation: "UPDATE",
                user: &user,
                object: Some(&obj),
                old_object: None,
                dry_run: false,
                options: None,
            },
        );
        assert_eq!(
            r,
            json!({"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1", "request": {
                "uid": "u",
                "kind": {"group": "autoscaling", "version": "v1", "kind": "Scale"},
                "resource": {"group": "apps", "version": "v1", "resource": "deployments"},
                "subResource": "scale",
                "requestKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"},
                "requestResource": {"group": "apps", "version": "v1", "resource": "deployments"},
                "requestSubResource": "scale",
                "name": "d", "namespace": "ns", "operation": "UPDATE",
                "userInfo": {"username": "alice", "groups": ["devs"]},
                "object": {"kind": "Pod"}, "oldObject": null, "dryRun": false, "options": null
            }})
        );
    }
}
