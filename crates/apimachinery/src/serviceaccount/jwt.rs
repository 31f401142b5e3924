//! Compact JWS tokens (RFC 7515/7519) as service account tokens use them: a header
//! naming the algorithm and key id, a JSON claim set, a signature.

use base64::Engine;
use serde_json::Value;

use super::keys::{Algorithm, PublicKey, SigningKey};

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::URL_SAFE_NO_PAD;

/// Why a token was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct JwtError(pub String);

/// `value` with every object's keys sorted, as Go's `encoding/json` writes the maps
/// go-jose builds claim sets from.
fn sorted(value: &Value) -> Value {
    match value {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), sorted(&m[k])))
                    .collect(),
            )
        }
        Value::Array(a) => Value::Array(a.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

/// `claims` signed by `key`: `header.payload.signature`, the header
/// `{"alg":...,"kid":...}` (keys of the payload sorted, as upstream's tokens are).
pub fn sign(key: &SigningKey, claims: &Value) -> Result<String, JwtError> {
    let public = key.public_key();
    let header = serde_json::json!({"alg": public.algorithm().name(), "kid": public.key_id()});
    let payload = serde_json::to_vec(&sorted(claims)).map_err(|e| JwtError(e.to_string()))?;
    let header = serde_json::to_vec(&header).map_err(|e| JwtError(e.to_string()))?;
    let signing_input = format!("{}.{}", B64.encode(header), B64.encode(payload));
    let sig = key
        .sign(signing_input.as_bytes())
        .map_err(|e| JwtError(e.to_string()))?;
    Ok(format!("{signing_input}.{}", B64.encode(sig)))
}

/// A parsed, not yet verified token.
#[derive(Clone, Debug)]
pub struct Unverified {
    alg: Option<Algorithm>,
    /// The header's `kid`, when it names one.
    pub kid: Option<String>,
    /// The claim set (not to be trusted before [`Unverified::verify`]).
    pub claims: serde_json::Map<String, Value>,
    signing_input: String,
    signature: Vec<u8>,
}

/// The claim set of a compact JWS without verifying it: `None` when `token` is not
/// one (three base64url parts, a JSON object payload). Upstream reads the unverified
/// issuer this way to pick the authenticator a token is for (`hasCorrectIssuer`).
pub fn unverified_claims(token: &str) -> Option<serde_json::Map<String, Value>> {
    if token.trim_start().starts_with('{') {
        return None;
    }
    let parts: Vec<&str> = token.split('.').collect();
    if parts.len() != 3 {
        return None;
    }
    let payload = B64.decode(parts[1]).ok()?;
    match serde_json::from_slice(&payload).ok()? {
        Value::Object(m) => Some(m),
        _ => None,
    }
}

/// Parses a compact JWS: `Err` when it is not one or its header is unusable (an
/// algorithm other than RS256/ES256/ES384, `none` included, or critical extensions).
pub fn parse(token: &str) -> Result<Unverified, JwtError> {
    let malformed = || JwtError("square/go-jose: compact JWS format must have three parts".into());
    let parts: Vec<&str> = token.split('.').collect();
    if parts.len() != 3 {
        return Err(malformed());
    }
    let header = B64
        .decode(parts[0])
        .map_err(|_| JwtError("illegal base64 data in token header".into()))?;
    let header: serde_json::Map<String, Value> =
        serde_json::from_slice(&header).map_err(|e| JwtError(format!("invalid header: {e}")))?;
    if header.contains_key("crit") {
        return Err(JwtError("unsupported critical header".into()));
    }
    let alg = match header.get("alg").and_then(Value::as_str) {
        Some("RS256") => Some(Algorithm::RS256),
        Some("ES256") => Some(Algorithm::ES256),
        Some("ES384") => Some(Algorithm::ES384),
        _ => None,
    };
    let kid = header
        .get("kid")
        .and_then(Value::as_str)
        .filter(|k| !k.is_empty())
        .map(str::to_string);
    let payload = B64
        .decode(parts[1])
        .map_err(|_| JwtError("illegal base64 data in token payload".into()))?;
    let claims = match serde_json::from_slice(&payload) {
        Ok(Value::Object(m)) => m,
        _ => return Err(JwtError("invalid token payload".into())),
    };
    let signature = B64
        .decode(parts[2])
        .map_err(|_| JwtError("illegal base64 data in token signature".into()))?;
    Ok(Unverified {
        alg,
        kid,
        claims,
        signing_input: format!("{}.{}", parts[0], parts[1]),
        signature,
    })
}

impl Unverified {
    /// Whether one of `keys` signed the token (with the algorithm its header names,
    /// which must be the key's).
    pub fn verify(&self, keys: &[&PublicKey]) -> Result<(), JwtError> {
        let Some(alg) = self.alg else {
            return Err(JwtError(
                "square/go-jose: unsupported or invalid signature algorithm".into(),
            ));
        };
        if keys.is_empty() {
            return Err(JwtError("invalid signature, no keys found".into()));
        }
        if keys
            .iter()
            .any(|k| k.verify(alg, self.signing_input.as_bytes(), &self.signature))
        {
            Ok(())
        } else {
            Err(JwtError(
                "square/go-jose: error in cryptographic primitive".into(),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::serviceaccount::testkeys::*;

    #[test]
    fn signed_tokens_verify_with_their_key_only() {
        let key = SigningKey::from_pem(ECDSA_PRIVATE_KEY).unwrap();
        let token = sign(&key, &serde_json::json!({"sub": "x", "iss": "y"})).unwrap();
        let t = parse(&token).unwrap();
        assert_eq!(t.kid.as_deref(), Some(key.public_key().key_id()));
        assert_eq!(t.claims["sub"], "x");
        t.verify(&[key.public_key()]).unwrap();
        let other = SigningKey::generate().unwrap();
        assert!(t.verify(&[other.public_key()]).is_err());
        let rsa = &PublicKey::all_from_pem(RSA_PUBLIC_KEY).unwrap()[0];
        assert!(t.verify(&[rsa]).is_err());
        assert!(t.verify(&[]).is_err());
        t.verify(&[rsa, other.public_key(), key.public_key()])
            .unwrap();
    }

    #[test]
    fn payload_keys_are_sorted() {
        let key = SigningKey::generate().unwrap();
        let token = sign(
            &key,
            &serde_json::json!({"sub": "x", "iss": "y", "aud": ["a"]}),
        )
        .unwrap();
        let payload = B64.decode(token.split('.').nth(1).unwrap()).unwrap();
        assert_eq!(
            String::from_utf8(payload).unwrap(),
            r#"{"aud":["a"],"iss":"y","sub":"x"}"#
        );
    }

    #[test]
    fn alg_none_and_garbage_are_refused() {
        let header = B64.encode(br#"{"alg":"none"}"#);
        let payload = B64.encode(br#"{"sub":"system:admin"}"#);
        let t = parse(&format!("{header}.{payload}.")).unwrap();
        let key = SigningKey::generate().unwrap();
        assert!(t.verify(&[key.public_key()]).is_err());
        assert!(parse("invalid token").is_err());
        assert!(parse("a.b").is_err());
        assert!(parse("a.b.c.d").is_err());
        assert!(unverified_claims("invalid token").is_none());
        assert!(unverified_claims("{\"a\":1}.b.c").is_none());
        let crit = B64.encode(br#"{"alg":"ES256","crit":["exp"]}"#);
        assert!(parse(&format!("{crit}.{payload}.")).is_err());
    }
}
