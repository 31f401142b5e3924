//! Service account tokens (upstream `pkg/serviceaccount` and
//! `k8s.io/apiserver/pkg/authentication/serviceaccount`): the JWTs the API server
//! issues (TokenRequest's bound tokens) and the token controller keeps in Secrets
//! (legacy tokens), shared by the API server that verifies them and the controllers
//! that sign them.
//!
//! - [`keys`]: signing keys and public keys read from PEM (RSA, ECDSA P-256/P-384),
//!   generated P-256 keys, upstream's key ids, JWKs;
//! - [`jwt`]: compact JWS signing, parsing and verification;
//! - [`claims`]: the legacy and bound claim sets, user names and groups;
//! - [`validate`]: upstream's token authenticator and its two validators, over a
//!   [`validate::TokenGetter`] that reads the objects tokens name.
//!
//! Signing a legacy token for the Secret `default-token-abcde` of `ns/default`:
//!
//! ```
//! use coxswain_apimachinery::serviceaccount::{keys::SigningKey, sign_legacy};
//! let key = SigningKey::generate().unwrap();
//! let token = sign_legacy(&key, "ns", "default", "uid-1", "default-token-abcde").unwrap();
//! assert_eq!(token.split('.').count(), 3);
//! ```

pub mod claims;
mod der;
pub mod jwt;
pub mod keys;
pub mod validate;

#[cfg(test)]
pub(crate) mod testkeys;

pub use claims::{
    make_group_names, make_username, sign_bound, sign_legacy, split_username, BoundClaims,
    LegacyClaims, Ref, LEGACY_ISSUER,
};
pub use der::{pem_blocks, pem_encode, PemBlock};
pub use jwt::JwtError;
pub use keys::{Algorithm, KeyError, PublicKey, SigningKey};
pub use validate::{ServiceAccountInfo, TokenAuthenticator, TokenGetter, TokenIdentity};
