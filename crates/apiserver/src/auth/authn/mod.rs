//! Authentication (upstream `k8s.io/apiserver/pkg/authentication` and
//! `pkg/kubeapiserver/authenticator`): the chain of authenticators a request's
//! credentials go through.
//!
//! A verified client certificate is tried first ([`x509`]); then a bearer token goes
//! through the data dir's admin token, `--token-auth-file` ([`tokenfile`]), service
//! account tokens ([`serviceaccount`], legacy and bound) and bootstrap tokens
//! ([`bootstrap`]). A bearer token none of them knows is refused (401), as upstream's
//! bearer token authenticator does; a request without credentials is anonymous when
//! `--anonymous-auth` allows it. [`impersonation`] then applies `Impersonate-*`
//! headers.

pub mod bootstrap;
pub mod impersonation;
pub mod serviceaccount;
pub mod tokenfile;
pub mod x509;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::http::HeaderMap;

use crate::auth::{bearer_token, Authenticated, Authenticator, AuthnError, PeerCertificate};
use crate::machinery::user::UserInfo;
use crate::storage::store::{object_key, Store};

/// kubeadm's and coxswain's default `--service-account-issuer`.
pub const DEFAULT_ISSUER: &str = "https://kubernetes.default.svc.cluster.local";

/// The authentication flags of the API server (kube-apiserver's names).
#[derive(Clone, Debug)]
pub struct AuthnOptions {
    /// `--token-auth-file`.
    pub token_auth_file: Option<PathBuf>,
    /// `--service-account-key-file` (repeatable): keys tokens are verified with.
    pub service_account_key_files: Vec<PathBuf>,
    /// `--service-account-signing-key-file` (default: `sa.key` of the data dir,
    /// generated on first start).
    pub service_account_signing_key_file: Option<PathBuf>,
    /// `--service-account-issuer` (repeatable; the first signs).
    pub service_account_issuers: Vec<String>,
    /// `--api-audiences` (default: the issuers).
    pub api_audiences: Vec<String>,
    /// `--service-account-max-token-expiration`.
    pub service_account_max_token_expiration: Option<Duration>,
    /// `--service-account-extend-token-expiration`.
    pub service_account_extend_token_expiration: bool,
    /// `--service-account-lookup`.
    pub service_account_lookup: bool,
    /// `--enable-bootstrap-token-auth`.
    pub enable_bootstrap_token_auth: bool,
    /// `--client-ca-file` (default: the data dir's `ca.crt`).
    pub client_ca_file: Option<PathBuf>,
    /// `--anonymous-auth`.
    pub anonymous_auth: bool,
    /// `--service-account-jwks-uri`.
    pub service_account_jwks_uri: Option<String>,
}

impl Default for AuthnOptions {
    fn default() -> AuthnOptions {
        AuthnOptions {
            token_auth_file: None,
            service_account_key_files: Vec::new(),
            service_account_signing_key_file: None,
            service_account_issuers: vec![DEFAULT_ISSUER.to_string()],
            api_audiences: Vec::new(),
            service_account_max_token_expiration: None,
            service_account_extend_token_expiration: true,
            service_account_lookup: true,
            enable_bootstrap_token_auth: false,
            client_ca_file: None,
            anonymous_auth: true,
            service_account_jwks_uri: None,
        }
    }
}

impl AuthnOptions {
    /// `--api-audiences`, defaulting to the issuers as kube-apiserver does.
    pub fn audiences(&self) -> Vec<String> {
        if self.api_audiences.is_empty() {
            self.service_account_issuers.clone()
        } else {
            self.api_audiences.clone()
        }
    }
}

/// The authenticators of a server, tried in upstream's order.
pub struct Chain {
    /// The data dir's admin token.
    pub admin: Option<crate::auth::StaticToken>,
    /// `--token-auth-file`.
    pub token_file: Option<tokenfile::TokenFile>,
    /// Service account tokens.
    pub service_accounts: Option<Arc<serviceaccount::ServiceAccountTokens>>,
    /// Bootstrap tokens (`--enable-bootstrap-token-auth`): read from this store.
    pub bootstrap: Option<Arc<Store>>,
    /// Client certificates verified by the TLS layer are accepted.
    pub client_certificates: bool,
    /// `--api-audiences`.
    pub api_audiences: Vec<String>,
}

impl Chain {
    /// Audiences of a credential that has none of its own (static, file and bootstrap
    /// tokens: upstream `WrapAudienceAgnosticToken`): the API server's, which must
    /// meet the requested ones.
    fn agnostic(&self, requested: Option<&[String]>) -> Option<Vec<String>> {
        match requested {
            None => Some(self.api_audiences.clone()),
            Some(req) => {
                let both: Vec<String> = self
                    .api_audiences
                    .iter()
                    .filter(|a| req.contains(a))
                    .cloned()
                    .collect();
                (!both.is_empty() || self.api_audiences.is_empty()).then_some(both)
            }
        }
    }

    fn token(
        &self,
        token: &str,
        requested: Option<&[String]>,
    ) -> Result<Option<Authenticated>, AuthnError> {
        let agnostic = |user: UserInfo| {
            self.agnostic(requested)
                .map(|audiences| Authenticated { user, audiences })
        };
        if let Some(admin) = &self.admin {
            if admin.token.len() == token.len()
                && admin
                    .token
                    .bytes()
                    .zip(token.bytes())
                    .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                    == 0
            {
                return Ok(agnostic(admin.user.clone()));
            }
        }
        if let Some(u) = self.token_file.as_ref().and_then(|f| f.user(token)) {
            return Ok(agnostic(u.clone()));
        }
        let mut errors = Vec::new();
        if let Some(sa) = &self.service_accounts {
            match sa.authenticate(token, requested) {
                Ok(Some((user, audiences))) => return Ok(Some(Authenticated { user, audiences })),
                Ok(None) => {}
                Err(e) => errors.push(e),
            }
        }
        if let Some(store) = &self.bootstrap {
            if let Some((id, _)) = bootstrap::parse_token(token) {
                let key = object_key(
                    Some(bootstrap::NAMESPACE),
                    &format!("{}{id}", bootstrap::SECRET_PREFIX),
                );
                let secret = store.get("/secrets", &key).and_then(|s| s.value().ok());
                let now = chrono::Utc::now().timestamp();
                if let Some(u) = bootstrap::authenticate(token, secret.as_ref(), now) {
                    return Ok(agnostic(u));
                }
            }
        }
        if errors.is_empty() {
            Ok(None)
        } else {
            Err(AuthnError(errors.join(", ")))
        }
    }
}

impl Authenticator for Chain {
    fn authenticate(
        &self,
        headers: &HeaderMap,
        peer: Option<&PeerCertificate>,
    ) -> Result<Option<Authenticated>, AuthnError> {
        if self.client_certificates {
            if let Some(user) = peer.and_then(x509::user) {
                return Ok(Some(Authenticated {
                    user,
                    audiences: self.api_audiences.clone(),
                }));
            }
        }
        // no bearer token (or another scheme): no credentials, as upstream
        let Some(token) = bearer_token(headers) else {
            return Ok(None);
        };
        match self.token(token, None)? {
            Some(a) => Ok(Some(a)),
            // upstream's bearer token authenticator: a token nobody knows is an error
            None => Err(AuthnError("invalid bearer token".into())),
        }
    }

    fn authenticate_token(
        &self,
        token: &str,
        audiences: &[String],
    ) -> Result<Option<Authenticated>, AuthnError> {
        let requested = (!audiences.is_empty()).then_some(audiences);
        self.token(token, requested)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn chain() -> Chain {
        Chain {
            admin: Some(crate::auth::StaticToken {
                token: "admin-token".into(),
                user: UserInfo::new("kubernetes-admin", &["system:masters"]),
            }),
            token_file: Some(tokenfile::TokenFile::parse("t1,jane,u1,\"dev,ops\"\n").unwrap()),
            service_accounts: None,
            bootstrap: None,
            client_certificates: true,
            api_audiences: vec![DEFAULT_ISSUER.to_string()],
        }
    }

    fn bearer(t: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(
            "authorization",
            HeaderValue::from_str(&format!("Bearer {t}")).unwrap(),
        );
        h
    }

    #[test]
    fn tokens_in_order() {
        let c = chain();
        let a = c
            .authenticate(&bearer("admin-token"), None)
            .unwrap()
            .unwrap();
        assert_eq!(a.user.name, "kubernetes-admin");
        let j = c.authenticate(&bearer("t1"), None).unwrap().unwrap();
        assert_eq!(j.user.name, "jane");
        assert_eq!(j.user.groups, ["dev", "ops"]);
        assert_eq!(j.audiences, [DEFAULT_ISSUER]);
        // unknown tokens are refused, no credentials are not
        assert!(c.authenticate(&bearer("nope"), None).is_err());
        assert!(c.authenticate(&bearer("admin-toke"), None).is_err());
        assert_eq!(c.authenticate(&HeaderMap::new(), None), Ok(None));
        // audience-agnostic tokens meet only the API server's audiences
        assert!(c
            .authenticate_token("t1", &["other".to_string()])
            .unwrap()
            .is_none());
        assert!(c
            .authenticate_token("t1", &[DEFAULT_ISSUER.to_string()])
            .unwrap()
            .is_some());
    }
}
