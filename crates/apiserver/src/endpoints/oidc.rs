//! Service account issuer discovery (upstream `pkg/serviceaccount/openidmetadata.go`):
//! `/.well-known/openid-configuration` and `/openid/v1/jwks`, so that relying parties
//! can verify service account tokens. Served when the issuer is an `https` URL;
//! authorized like any non-resource path (the `system:service-account-issuer-discovery`
//! role grants them).

use axum::body::Body;
use axum::http::{HeaderValue, Method, StatusCode};
use axum::response::Response;
use serde_json::json;

use super::error_response;
use crate::auth::authn::serviceaccount::ServiceAccountTokens;
use apimachinery::status::ApiError;

/// The OpenID configuration document.
pub const CONFIGURATION_PATH: &str = "/.well-known/openid-configuration";
/// The key set.
pub const JWKS_PATH: &str = "/openid/v1/jwks";
/// How long clients may cache both documents (upstream: the keys' cache age).
const MAX_AGE: u32 = 3600;

/// The two documents of `sa`'s issuer, or 404 when discovery is off;
/// `server_address` (`host:port`) makes the default `jwks_uri`.
pub fn serve(
    sa: Option<&ServiceAccountTokens>,
    server_address: &str,
    path: &str,
    method: &Method,
) -> Response {
    let Some(sa) = sa else {
        return error_response(&ApiError::path_not_found());
    };
    let issuer = sa.issuer();
    // upstream serves discovery only for an https issuer URL without query or fragment
    if !issuer.starts_with("https://") || issuer.contains(['?', '#']) {
        return error_response(&ApiError::path_not_found());
    }
    if method != Method::GET && method != Method::HEAD {
        return error_response(&ApiError::method_not_allowed(
            "the server does not allow this method on the requested resource",
        ));
    }
    let (body, content_type) = if path == CONFIGURATION_PATH {
        let jwks_uri = sa
            .jwks_uri
            .clone()
            .unwrap_or_else(|| format!("https://{server_address}{JWKS_PATH}"));
        let mut algs: Vec<&str> = sa
            .public_keys
            .iter()
            .map(|k| k.algorithm().name())
            .collect();
        algs.sort();
        algs.dedup();
        let doc = json!({
            "issuer": issuer,
            "jwks_uri": jwks_uri,
            "response_types_supported": ["id_token"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": algs,
        });
        (doc, "application/json")
    } else {
        let keys: Vec<serde_json::Value> = sa.public_keys.iter().map(|k| k.jwk()).collect();
        (json!({ "keys": keys }), "application/jwk-set+json")
    };
    let mut r = Response::new(Body::from(serde_json::to_vec(&body).unwrap_or_default()));
    *r.status_mut() = StatusCode::OK;
    r.headers_mut()
        .insert("content-type", HeaderValue::from_static(content_type));
    if let Ok(v) = HeaderValue::from_str(&format!("public, max-age={MAX_AGE}")) {
        r.headers_mut().insert("cache-control", v);
    }
    r
}
