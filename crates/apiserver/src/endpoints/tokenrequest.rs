//! POST on `serviceaccounts/<name>/token` (TokenRequest, `authentication.k8s.io/v1`;
//! upstream `pkg/registry/core/serviceaccount/storage/token.go`): a bound token of the
//! service account for the requested audiences and lifetime, optionally bound to a
//! Pod, Secret or Node that must exist (and have the given UID). Nothing is stored.

use axum::http::{HeaderMap, StatusCode};
use bytes::Bytes;
use serde_json::{json, Value};

use super::body::{decode, Expected};
use super::{Api, Reply};
use crate::endpoints::request::{Query, Target, WriteOptions};
use crate::storage::store::object_key;
use apimachinery::field::{self, Cause};
use apimachinery::serviceaccount::{sign_bound, BoundClaims, Ref};
use apimachinery::status::{ApiError, ApiResult};

/// upstream `MinTokenAgeSec`: the shortest lifetime a token may be asked for.
const MIN_EXPIRATION_SECONDS: i64 = 600;
/// The longest (2^32 seconds).
const MAX_EXPIRATION_SECONDS: i64 = 1 << 32;
/// The lifetime of a TokenRequest that asks for none.
const DEFAULT_EXPIRATION_SECONDS: i64 = 3600;
/// upstream `WarnOnlyBoundTokenExpirationSeconds`: the lifetime the kubelet asks for
/// projected tokens, which `--service-account-extend-token-expiration` extends.
const WARN_ONLY_EXPIRATION_SECONDS: i64 = 3607;
/// upstream `ExpirationExtensionSeconds`: one year.
const EXTENDED_EXPIRATION_SECONDS: i64 = 24 * 365 * 60 * 60;

fn invalid(name: &str, causes: Vec<Cause>) -> ApiError {
    ApiError::invalid("authentication.k8s.io", "TokenRequest", name, causes)
}

/// upstream `ValidateTokenRequest`.
fn validate(expiration: i64) -> Vec<Cause> {
    let mut causes = Vec::new();
    if expiration < MIN_EXPIRATION_SECONDS {
        causes.push(field::invalid(
            "spec.expirationSeconds",
            expiration,
            "may not specify a duration less than 10 minutes",
        ));
    }
    if expiration > MAX_EXPIRATION_SECONDS {
        causes.push(field::invalid(
            "spec.expirationSeconds",
            expiration,
            "may not specify a duration larger than 2^32 seconds",
        ));
    }
    causes
}

fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

impl Api {
    fn stored(&self, resource: &str, ns: Option<&str>, name: &str) -> Option<Value> {
        self.store
            .get(resource, &object_key(ns, name))
            .and_then(|s| s.value().ok())
    }

    /// POST on `serviceaccounts/<name>/token`.
    pub(super) async fn create_token(
        &self,
        target: &Target,
        query: &Query,
        headers: &HeaderMap,
        body: &Bytes,
    ) -> ApiResult<Reply> {
        let Some(tokens) = self.auth.service_accounts.clone() else {
            return Err(ApiError::path_not_found());
        };
        let ns = target.namespace.clone().unwrap_or_default();
        let name = target.name.clone().unwrap_or_default();
        WriteOptions::parse(query)?;
        let (mut req, _) = decode(
            headers,
            body,
            &Expected::object("TokenRequest", "authentication.k8s.io/v1", true),
        )?;
        // name and namespace of the body must match the URL's when given
        let body_name = str_at(&req, "/metadata/name").to_string();
        if !body_name.is_empty() && body_name != name {
            return Err(invalid(
                &name,
                vec![field::invalid(
                    "metadata.name",
                    body_name.as_str(),
                    "must match the service account name if specified",
                )],
            ));
        }
        let body_ns = str_at(&req, "/metadata/namespace").to_string();
        if !body_ns.is_empty() && body_ns != ns {
            return Err(invalid(
                &name,
                vec![field::invalid(
                    "metadata.namespace",
                    body_ns.as_str(),
                    "must match the service account namespace if specified",
                )],
            ));
        }
        let Some(sa) = self.stored("/serviceaccounts", Some(&ns), &name) else {
            return Err(ApiError::not_found("", "serviceaccounts", &name));
        };
        let sa_uid = str_at(&sa, "/metadata/uid").to_string();
        let spec = req.get("spec").cloned().unwrap_or_else(|| json!({}));
        let mut audiences: Vec<String> = spec
            .get("audiences")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        if audiences.is_empty() {
            audiences = tokens.api_audiences.clone();
        }
        let mut expiration = match spec.get("expirationSeconds") {
            None | Some(Value::Null) => DEFAULT_EXPIRATION_SECONDS,
            Some(v) => v.as_i64().ok_or_else(|| {
                ApiError::bad_request("TokenRequest in version \"v1\" cannot be handled as a TokenRequest: spec.expirationSeconds: expected an integer")
            })?,
        };
        let now = chrono::Utc::now();
        let causes = validate(expiration);
        if !causes.is_empty() {
            return Err(invalid("", causes));
        }

        let mut claims = BoundClaims::new(
            tokens.issuer(),
            &ns,
            Ref::new(name.clone(), sa_uid),
            audiences.clone(),
            now.timestamp(),
            expiration,
        );
        let mut pod_bound = false;
        let bound_ref = spec
            .get("boundObjectRef")
            .filter(|r| r.is_object())
            .cloned();
        if let Some(r) = &bound_ref {
            let kind = str_at(r, "/kind");
            let api_version = str_at(r, "/apiVersion");
            let group = api_version.rsplit_once('/').map(|(g, _)| g).unwrap_or("");
            let version = api_version
                .rsplit_once('/')
                .map(|(_, v)| v)
                .unwrap_or(api_version);
            let ref_name = str_at(r, "/name").to_string();
            let ref_uid = str_at(r, "/uid");
            let uid = match (group, kind) {
                ("", "Pod") => {
                    let pod = self
                        .stored("/pods", Some(&ns), &ref_name)
                        .ok_or_else(|| ApiError::not_found("", "pods", &ref_name))?;
                    if str_at(&pod, "/spec/serviceAccountName") != name {
                        return Err(ApiError::bad_request(format!(
                            "cannot bind token for serviceaccount {name:?} to pod running with different serviceaccount name."
                        )));
                    }
                    let uid = str_at(&pod, "/metadata/uid").to_string();
                    claims.pod = Some(Ref::new(ref_name.clone(), uid.clone()));
                    let node_name = str_at(&pod, "/spec/nodeName");
                    if !node_name.is_empty() {
                        // the pod's node goes into the claims (its UID when it exists)
                        let node_uid = self
                            .stored("/nodes", None, node_name)
                            .map(|n| str_at(&n, "/metadata/uid").to_string())
                            .unwrap_or_default();
                        claims.node = Some(Ref::new(node_name, node_uid));
                    }
                    pod_bound = true;
                    uid
                }
                ("", "Node") => {
                    let node = self
                        .stored("/nodes", None, &ref_name)
                        .ok_or_else(|| ApiError::not_found("", "nodes", &ref_name))?;
                    let uid = str_at(&node, "/metadata/uid").to_string();
                    claims.node = Some(Ref::new(ref_name.clone(), uid.clone()));
                    uid
                }
                ("", "Secret") => {
                    let secret = self
                        .stored("/secrets", Some(&ns), &ref_name)
                        .ok_or_else(|| ApiError::not_found("", "secrets", &ref_name))?;
                    let uid = str_at(&secret, "/metadata/uid").to_string();
                    claims.secret = Some(Ref::new(ref_name.clone(), uid.clone()));
                    uid
                }
                _ => {
                    let gvk = if group.is_empty() {
                        format!("/{version}, Kind={kind}")
                    } else {
                        format!("{group}/{version}, Kind={kind}")
                    };
                    return Err(ApiError::bad_request(format!(
                        "cannot bind token for serviceaccount {name:?} to object of type {gvk}."
                    )));
                }
            };
            if !ref_uid.is_empty() && ref_uid != uid {
                return Err(ApiError::conflict(
                    group,
                    kind,
                    &ref_name,
                    &format!("the UID in the bound object reference ({ref_uid}) does not match the UID in record. The object might have been deleted and then recreated"),
                ));
            }
        }
        let mut warnings = Vec::new();
        if tokens.max_expiration_seconds > 0 && expiration > tokens.max_expiration_seconds {
            warnings.push(format!(
                "requested expiration of {expiration} seconds shortened to {} seconds",
                tokens.max_expiration_seconds
            ));
            expiration = tokens.max_expiration_seconds;
        }
        claims.expiry = Some(now.timestamp() + expiration);
        // the kubelet's projected tokens: warn after the requested hour, fail after a
        // year (only pod-bound tokens for the API server's audiences)
        if tokens.extend_expiration
            && pod_bound
            && expiration == WARN_ONLY_EXPIRATION_SECONDS
            && audiences.iter().all(|a| tokens.api_audiences.contains(a))
        {
            claims.warn_after = Some(now.timestamp() + expiration);
            claims.expiry = Some(now.timestamp() + EXTENDED_EXPIRATION_SECONDS);
        }
        let token = sign_bound(&tokens.signing_key, &claims)
            .map_err(|e| ApiError::internal(format!("failed to generate token: {e}")))?;

        let created = apimachinery::time::format_time(now);
        let expires = apimachinery::time::format_time(now + chrono::Duration::seconds(expiration));
        let mut spec_out = json!({"audiences": audiences, "expirationSeconds": expiration});
        if let Some(r) = bound_ref {
            spec_out["boundObjectRef"] = r;
        }
        let meta = req
            .get_mut("metadata")
            .and_then(Value::as_object_mut)
            .map(std::mem::take)
            .unwrap_or_default();
        let mut metadata = serde_json::Map::new();
        metadata.insert("name".into(), json!(name));
        metadata.insert("namespace".into(), json!(ns));
        for (k, v) in meta {
            if !matches!(k.as_str(), "name" | "namespace" | "creationTimestamp") {
                metadata.insert(k, v);
            }
        }
        metadata.insert("creationTimestamp".into(), json!(created));
        let out = json!({
            "kind": "TokenRequest",
            "apiVersion": "authentication.k8s.io/v1",
            "metadata": metadata,
            "spec": spec_out,
            "status": {"token": token, "expirationTimestamp": expires},
        });
        Ok(Reply::json(StatusCode::CREATED, &out).with_warnings(warnings))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lifetime_validation_is_upstreams() {
        assert!(validate(600).is_empty());
        assert!(validate(1 << 32).is_empty());
        let e = invalid("", validate(599));
        assert_eq!(
            e.message,
            "TokenRequest.authentication.k8s.io \"\" is invalid: spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 10 minutes"
        );
        assert_eq!(validate((1 << 32) + 1).len(), 1);
    }
}
