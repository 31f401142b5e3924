//! The review APIs: create-only kinds answered at once and never stored (upstream
//! `pkg/registry/authorization/{subjectaccessreview,selfsubjectaccessreview,
//! localsubjectaccessreview,selfsubjectrulesreview}/rest.go` and
//! `pkg/registry/authentication/{tokenreview,selfsubjectreview}/storage.go`).
//!
//! `kubectl auth can-i` asks a SelfSubjectAccessReview (`--list`: a
//! SelfSubjectRulesReview), `kubectl auth whoami` a SelfSubjectReview; webhooks and
//! proxies ask SubjectAccessReviews and TokenReviews.

use std::collections::BTreeMap;

use axum::http::{HeaderMap, Method, StatusCode};
use bytes::Bytes;
use serde_json::{json, Map, Value};

use super::body::decode;
use super::write::{expected_object, normalise, Decoded};
use super::{Api, Reply};
use crate::auth::{Attributes, Decision, RequestInfo, UserInfo};
use crate::endpoints::request::{Query, Target};
use apimachinery::field::{self, Bad};
use apimachinery::status::{ApiError, ApiResult};

const AUTHORIZATION: &str = "authorization.k8s.io";

fn s<'a>(v: &'a Value, k: &str) -> &'a str {
    v.get(k).and_then(Value::as_str).unwrap_or("")
}

use crate::auth::rbac::rule::strings;

fn present(v: &Value, k: &str) -> Option<Value> {
    v.get(k).filter(|x| !x.is_null()).cloned()
}

/// The user a SubjectAccessReview's spec names (upstream `AuthorizationAttributesFrom`).
fn spec_user(spec: &Value) -> UserInfo {
    let extra: BTreeMap<String, Vec<String>> = spec
        .get("extra")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| {
                    let vals = v
                        .as_array()
                        .map(|a| {
                            a.iter()
                                .filter_map(Value::as_str)
                                .map(str::to_string)
                                .collect()
                        })
                        .unwrap_or_default();
                    (k.clone(), vals)
                })
                .collect()
        })
        .unwrap_or_default();
    UserInfo {
        name: s(spec, "user").to_string(),
        uid: s(spec, "uid").to_string(),
        groups: strings(spec, "groups"),
        extra,
    }
}

/// The request a review's `resourceAttributes` or `nonResourceAttributes` describe.
fn review_request(spec: &Value) -> RequestInfo {
    if let Some(r) = present(spec, "resourceAttributes") {
        RequestInfo {
            resource_request: true,
            verb: s(&r, "verb").into(),
            api_group: s(&r, "group").into(),
            api_version: s(&r, "version").into(),
            namespace: s(&r, "namespace").into(),
            resource: s(&r, "resource").into(),
            subresource: s(&r, "subresource").into(),
            name: s(&r, "name").into(),
            ..RequestInfo::default()
        }
    } else {
        let n = present(spec, "nonResourceAttributes").unwrap_or_default();
        RequestInfo {
            verb: s(&n, "verb").into(),
            path: s(&n, "path").into(),
            ..RequestInfo::default()
        }
    }
}

/// Upstream `ValidateSelfSubjectAccessReviewSpec`: exactly one kind of attributes.
fn validate_attributes(spec: &Value) -> Vec<apimachinery::status::Cause> {
    let r = present(spec, "resourceAttributes");
    let n = present(spec, "nonResourceAttributes");
    if r.is_some() != n.is_some() {
        return Vec::new();
    }
    vec![field::invalid(
        "spec",
        n.map_or(Bad::Unstructured(Value::Null), Bad::Json),
        "exactly one of nonResourceAttributes or resourceAttributes must be specified",
    )]
}

/// Upstream `ValidateSubjectAccessReviewSpec`: the attributes and a user or group.
fn validate_subject_spec(spec: &Value) -> Vec<apimachinery::status::Cause> {
    let mut causes = validate_attributes(spec);
    if s(spec, "user").is_empty() && strings(spec, "groups").is_empty() {
        causes.push(field::invalid(
            "spec.user",
            Bad::str(s(spec, "user")),
            "at least one of user or group must be specified",
        ));
    }
    causes
}

fn access_status(decision: Decision, reason: String) -> Value {
    let mut m = Map::new();
    m.insert("allowed".into(), json!(decision == Decision::Allow));
    if decision == Decision::Deny {
        m.insert("denied".into(), json!(true));
    }
    if !reason.is_empty() {
        m.insert("reason".into(), json!(reason));
    }
    Value::Object(m)
}

fn user_info_json(u: &UserInfo) -> Value {
    let mut m = Map::new();
    m.insert("username".into(), json!(u.name));
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

impl Api {
    /// A POST of a review: its answer (201 with the status); other methods are 405.
    pub(super) async fn review(
        &self,
        method: &Method,
        target: &Target,
        query: &Query,
        headers: &HeaderMap,
        body: &Bytes,
    ) -> ApiResult<Reply> {
        let def = target.resource;
        if method != Method::POST || target.name.is_some() || target.subresource.is_some() {
            return Err(ApiError::method_not_allowed(
                "the server does not allow this method on the requested resource",
            ));
        }
        let opts = super::managed::write_options(query, headers, "CreateOptions", false)?;
        let (raw, dups) = decode(headers, body, &expected_object(def))?;
        let Decoded { mut obj, warnings } = normalise(def, raw, dups, &opts)?;
        let user = crate::auth::current_user()
            .map(|u| (*u).clone())
            .unwrap_or_else(UserInfo::apiserver);
        let spec = obj.get("spec").cloned().unwrap_or_else(|| json!({}));
        let namespace = target.namespace.clone().unwrap_or_default();
        let status = match def.kind {
            "SubjectAccessReview" | "LocalSubjectAccessReview" => {
                let mut causes = validate_subject_spec(&spec);
                if def.kind == "LocalSubjectAccessReview" {
                    // upstream `ValidateLocalSubjectAccessReview`: the object's namespace
                    // is the request's (the create handler sets it)
                    if let Some(r) = present(&spec, "resourceAttributes") {
                        if s(&r, "namespace") != namespace {
                            causes.push(field::invalid(
                                "spec.resourceAttributes.namespace",
                                Bad::str(s(&r, "namespace")),
                                "must match metadata.namespace",
                            ));
                        }
                    }
                    if let Some(n) = present(&spec, "nonResourceAttributes") {
                        causes.push(field::invalid(
                            "spec.nonResourceAttributes",
                            Bad::Json(n),
                            "disallowed on this kind of request",
                        ));
                    }
                }
                if !causes.is_empty() {
                    return Err(ApiError::invalid(AUTHORIZATION, def.kind, "", causes));
                }
                let subject = spec_user(&spec);
                let request = review_request(&spec);
                let (d, reason) = self.auth.authorizer.authorize(&Attributes {
                    user: &subject,
                    request: &request,
                });
                access_status(d, reason)
            }
            "SelfSubjectAccessReview" => {
                let causes = validate_attributes(&spec);
                if !causes.is_empty() {
                    return Err(ApiError::invalid(AUTHORIZATION, def.kind, "", causes));
                }
                let request = review_request(&spec);
                let (d, reason) = self.auth.authorizer.authorize(&Attributes {
                    user: &user,
                    request: &request,
                });
                access_status(d, reason)
            }
            "SelfSubjectRulesReview" => {
                let ns = s(&spec, "namespace");
                if ns.is_empty() {
                    return Err(ApiError::bad_request("no namespace on request"));
                }
                let set = self.auth.authorizer.rules_for(&user, ns);
                let resource_rules: Vec<Value> = set
                    .resource_rules
                    .iter()
                    .map(|r| {
                        let mut v = r.to_json();
                        if let Some(m) = v.as_object_mut() {
                            m.remove("nonResourceURLs");
                        }
                        v
                    })
                    .collect();
                let non_resource_rules: Vec<Value> = set
                    .non_resource_rules
                    .iter()
                    .map(|r| json!({"verbs": r.verbs, "nonResourceURLs": r.non_resource_urls}))
                    .collect();
                let mut m = Map::new();
                m.insert("resourceRules".into(), json!(resource_rules));
                m.insert("nonResourceRules".into(), json!(non_resource_rules));
                m.insert("incomplete".into(), json!(set.incomplete));
                if let Some(e) = crate::auth::rbac::aggregate(&set.errors) {
                    m.insert("evaluationError".into(), json!(e));
                }
                Value::Object(m)
            }
            "TokenReview" => {
                let token = s(&spec, "token");
                if token.is_empty() {
                    return Err(ApiError::bad_request(
                        "token is required for TokenReview in authentication",
                    ));
                }
                let audiences = strings(&spec, "audiences");
                let result = match &self.auth.authenticator {
                    Some(a) => a.authenticate_token(token, &audiences),
                    None => Ok(None),
                };
                let mut m = Map::new();
                match result {
                    Ok(Some(a)) => {
                        let mut u = a.user;
                        if !u.in_group(crate::machinery::user::ALL_AUTHENTICATED) {
                            u.groups
                                .push(crate::machinery::user::ALL_AUTHENTICATED.to_string());
                        }
                        m.insert("authenticated".into(), json!(true));
                        m.insert("user".into(), user_info_json(&u));
                        let auds = if a.audiences.is_empty() {
                            audiences
                        } else {
                            a.audiences
                        };
                        if !auds.is_empty() {
                            m.insert("audiences".into(), json!(auds));
                        }
                    }
                    Ok(None) => {
                        m.insert("user".into(), json!({}));
                    }
                    Err(e) => {
                        m.insert("user".into(), json!({}));
                        m.insert("error".into(), json!(e.0));
                    }
                }
                Value::Object(m)
            }
            "SelfSubjectReview" => {
                if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
                    meta.insert(
                        "creationTimestamp".into(),
                        json!(apimachinery::time::now_rfc3339()),
                    );
                }
                json!({"userInfo": user_info_json(&user)})
            }
            _ => {
                return Err(ApiError::method_not_allowed(
                    "the server does not allow this method on the requested resource",
                ))
            }
        };
        if let Some(o) = obj.as_object_mut() {
            o.insert("status".into(), status);
        }
        Ok(Reply::json(StatusCode::CREATED, &obj).with_warnings(warnings))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn access_review_validation_as_upstream() {
        let e = ApiError::invalid(
            AUTHORIZATION,
            "SubjectAccessReview",
            "",
            validate_subject_spec(&json!({})),
        );
        assert_eq!(
            e.message,
            "SubjectAccessReview.authorization.k8s.io \"\" is invalid: [spec: Invalid value: \"null\": exactly one of nonResourceAttributes or resourceAttributes must be specified, spec.user: Invalid value: \"\": at least one of user or group must be specified]"
        );
        assert!(validate_subject_spec(&json!({"user": "me", "resourceAttributes": {}})).is_empty());
        assert!(validate_subject_spec(
            &json!({"groups": ["g"], "nonResourceAttributes": {"path": "/x"}})
        )
        .is_empty());
        let both = validate_attributes(
            &json!({"resourceAttributes": {}, "nonResourceAttributes": {"path": "/x", "verb": "get"}}),
        );
        assert_eq!(
            both[0].message,
            "Invalid value: {\"path\":\"/x\",\"verb\":\"get\"}: exactly one of nonResourceAttributes or resourceAttributes must be specified"
        );
    }

    #[test]
    fn review_requests() {
        let r = review_request(
            &json!({"resourceAttributes": {"verb": "get", "group": "apps", "resource": "deployments", "subresource": "scale", "namespace": "ns", "name": "x"}}),
        );
        assert!(r.resource_request);
        assert_eq!(
            (
                r.verb.as_str(),
                r.api_group.as_str(),
                r.resource.as_str(),
                r.subresource.as_str(),
                r.namespace.as_str(),
                r.name.as_str()
            ),
            ("get", "apps", "deployments", "scale", "ns", "x")
        );
        let n =
            review_request(&json!({"nonResourceAttributes": {"verb": "get", "path": "/healthz"}}));
        assert!(!n.resource_request);
        assert_eq!((n.verb.as_str(), n.path.as_str()), ("get", "/healthz"));
        let u =
            spec_user(&json!({"user": "u", "groups": ["a"], "uid": "1", "extra": {"k": ["v"]}}));
        assert_eq!(u.name, "u");
        assert_eq!(u.groups, vec!["a".to_string()]);
        assert_eq!(u.extra.get("k"), Some(&vec!["v".to_string()]));
    }
}
