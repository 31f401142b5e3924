//! The bootstrap token controllers of kube-controller-manager (upstream
//! `pkg/controller/bootstrap`), both off by default: [`signer`]
//! (`bootstrap-signer-controller`: signs the `cluster-info` ConfigMap in `kube-public`
//! with each signing token) and [`tokencleaner`] (`token-cleaner-controller`: deletes
//! expired bootstrap token Secrets).
//!
//! What they share is here: the bootstrap token Secret's names and keys
//! (`k8s.io/cluster-bootstrap/token/api`), its expiry
//! (`k8s.io/cluster-bootstrap/token/util/secret`) and the detached JWS that signs the
//! kubeconfig (`k8s.io/cluster-bootstrap/token/jws`).

pub mod signer;
pub mod tokencleaner;

#[cfg(test)]
mod tests;

use std::time::Duration;

use base64::Engine;
use chrono::{DateTime, Utc};
use k8s_openapi::api::core::v1::Secret;
use sha2::{Digest, Sha256};

/// The Secret type of bootstrap tokens.
pub const SECRET_TYPE_BOOTSTRAP_TOKEN: &str = "bootstrap.kubernetes.io/token";
/// The name prefix of bootstrap token Secrets (`bootstrap-token-<id>`).
pub const BOOTSTRAP_TOKEN_SECRET_PREFIX: &str = "bootstrap-token-";
/// The data key of the token id.
pub const TOKEN_ID_KEY: &str = "token-id";
/// The data key of the token secret.
pub const TOKEN_SECRET_KEY: &str = "token-secret";
/// The data key of the expiry (RFC 3339).
pub const EXPIRATION_KEY: &str = "expiration";
/// The data key that lets a token sign `cluster-info`.
pub const USAGE_SIGNING_KEY: &str = "usage-bootstrap-signing";
/// The ConfigMap key holding the kubeconfig to sign.
pub const KUBECONFIG_KEY: &str = "kubeconfig";
/// The prefix of the ConfigMap keys holding signatures (`jws-kubeconfig-<id>`).
pub const JWS_SIGNATURE_KEY_PREFIX: &str = "jws-kubeconfig-";

/// A Secret's data value as text (upstream `GetData`).
pub fn get_data<'a>(secret: &'a Secret, key: &str) -> &'a str {
    secret
        .data
        .as_ref()
        .and_then(|d| d.get(key))
        .and_then(|v| std::str::from_utf8(&v.0).ok())
        .unwrap_or("")
}

/// The token id of a Secret named `bootstrap-token-<id>` with a valid id (six lower
/// case letters or digits; upstream `ParseName`).
pub fn parse_name(name: &str) -> Option<&str> {
    let id = name.strip_prefix(BOOTSTRAP_TOKEN_SECRET_PREFIX)?;
    (id.len() == 6
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()))
    .then_some(id)
}

/// How long the token has left and whether it has expired at `now` (upstream
/// `GetExpiration`): no expiry never expires; an unparsable one counts as expired.
pub fn get_expiration(secret: &Secret, now: DateTime<Utc>) -> (Duration, bool) {
    let expiration = get_data(secret, EXPIRATION_KEY);
    if expiration.is_empty() {
        return (Duration::ZERO, false);
    }
    let Ok(t) = DateTime::parse_from_rfc3339(expiration) else {
        return (Duration::ZERO, true);
    };
    match (t.with_timezone(&Utc) - now).to_std() {
        Ok(left) if !left.is_zero() => (left, false),
        _ => (Duration::ZERO, true),
    }
}

fn hmac_sha256(key: &[u8], message: &[u8]) -> [u8; 32] {
    const BLOCK: usize = 64;
    let mut k = [0u8; BLOCK];
    if key.len() > BLOCK {
        k[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        k[..key.len()].copy_from_slice(key);
    }
    let mut inner = Sha256::new();
    inner.update(k.map(|b| b ^ 0x36));
    inner.update(message);
    let mut outer = Sha256::new();
    outer.update(k.map(|b| b ^ 0x5c));
    outer.update(inner.finalize());
    outer.finalize().into()
}

/// The detached JWS (HS256, key id `key_id`, key `key`) of `content`: the compact
/// serialization without its payload, `header..signature` (upstream
/// `ComputeDetachedSignature`).
pub fn compute_detached_signature(content: &str, key_id: &str, key: &str) -> String {
    let b64 = |b: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b);
    let header = serde_json::json!({"alg": "HS256", "kid": key_id}).to_string();
    let signing_input = format!("{}.{}", b64(header.as_bytes()), b64(content.as_bytes()));
    let sig = hmac_sha256(key.as_bytes(), signing_input.as_bytes());
    format!("{}..{}", b64(header.as_bytes()), b64(&sig))
}
