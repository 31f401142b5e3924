//! Authentication and authorization of requests (upstream `k8s.io/apiserver/pkg/
//! authentication`, `.../authorization` and `.../endpoints/request`).
//!
//! The HTTP layer asks the [`Authenticator`] who sends a request, parses the request's
//! [`RequestInfo`] from its path alone (before routing, as upstream: a request for a
//! resource that does not exist is still authorized first) and asks the [`Authorizer`]
//! whether that user may do it; the user then stays with the request's task
//! ([`crate::machinery::user::current`]) for the checks that need it later (escalation
//! checks on RBAC writes, TokenRequest, SelfSubjectReview).

pub mod authn;
pub mod rbac;
pub mod request_info;
pub mod signer;

use std::sync::Arc;

use axum::http::HeaderMap;

pub use crate::machinery::user::{current as current_user, UserInfo};
use apimachinery::status::ApiError;
pub use request_info::RequestInfo;

/// A verified identity and the audiences its credential was valid for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Authenticated {
    /// Who.
    pub user: UserInfo,
    /// Audiences the credential is valid for (a token's `aud`; empty: the API server's).
    pub audiences: Vec<String>,
}

/// Why credentials were refused (answered 401).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct AuthnError(pub String);

/// What the TLS layer verified of a client certificate: the chain's leaf, DER encoded,
/// already verified against the client CA by the TLS handshake.
#[derive(Clone, Debug)]
pub struct PeerCertificate(pub Arc<Vec<u8>>);

/// Who sends a request.
pub trait Authenticator: Send + Sync {
    /// The identity a request's credentials prove: `Ok(None)` when it carries none (the
    /// caller then treats it as anonymous or refuses it), `Err` for credentials that
    /// are present but invalid (401).
    fn authenticate(
        &self,
        headers: &HeaderMap,
        peer: Option<&PeerCertificate>,
    ) -> Result<Option<Authenticated>, AuthnError>;

    /// The identity a bearer token proves for `audiences` (empty: the API server's own),
    /// as a TokenReview asks.
    fn authenticate_token(
        &self,
        token: &str,
        audiences: &[String],
    ) -> Result<Option<Authenticated>, AuthnError>;
}

/// An authorizer's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Allowed.
    Allow,
    /// Explicitly denied: no later authorizer is asked.
    Deny,
    /// No opinion: the next authorizer is asked; denied when none allows.
    NoOpinion,
}

/// The request attributes an authorizer decides on (upstream `authorizer.Attributes`).
#[derive(Clone, Debug)]
pub struct Attributes<'a> {
    /// Who.
    pub user: &'a UserInfo,
    /// What the request is.
    pub request: &'a RequestInfo,
}

/// What an authorizer says a user may do in a namespace (upstream
/// `authorizer.RuleResolver.RulesFor`, answered by SelfSubjectRulesReview).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RuleSet {
    /// Rules on resources.
    pub resource_rules: Vec<rbac::PolicyRule>,
    /// Rules on non-resource URLs.
    pub non_resource_rules: Vec<rbac::PolicyRule>,
    /// Whether the list may miss rules (an authorizer that cannot list them).
    pub incomplete: bool,
    /// Errors met while resolving rules.
    pub errors: Vec<String>,
}

/// Decides whether a user may make a request.
pub trait Authorizer: Send + Sync {
    /// The decision and its reason (shown in 403 messages and review statuses).
    fn authorize(&self, attrs: &Attributes<'_>) -> (Decision, String);

    /// The rules `user` has in `namespace`; by default none (an authorizer that is no
    /// rule resolver, like the privileged groups).
    fn rules_for(&self, _user: &UserInfo, _namespace: &str) -> RuleSet {
        RuleSet::default()
    }
}

/// `--authorization-mode=AlwaysAllow`: every request is allowed.
pub struct AlwaysAllow;

impl Authorizer for AlwaysAllow {
    fn authorize(&self, _attrs: &Attributes<'_>) -> (Decision, String) {
        (Decision::Allow, String::new())
    }

    fn rules_for(&self, _user: &UserInfo, _namespace: &str) -> RuleSet {
        RuleSet {
            resource_rules: vec![rbac::PolicyRule::resource(&["*"], &["*"], &["*"])],
            non_resource_rules: vec![rbac::PolicyRule::urls(&["*"], &["*"])],
            ..RuleSet::default()
        }
    }
}

/// Members of `system:masters` may do anything, whatever else is configured
/// (upstream's privileged-groups authorizer, first in the chain).
pub struct PrivilegedGroups;

impl Authorizer for PrivilegedGroups {
    fn authorize(&self, attrs: &Attributes<'_>) -> (Decision, String) {
        if attrs
            .user
            .in_group(crate::machinery::user::SYSTEM_PRIVILEGED_GROUP)
        {
            (Decision::Allow, String::new())
        } else {
            (Decision::NoOpinion, String::new())
        }
    }
}

/// Authorizers asked in order until one allows or denies (upstream `union`); reasons
/// of those without an opinion are joined.
pub struct Union(pub Vec<Arc<dyn Authorizer>>);

impl Authorizer for Union {
    fn authorize(&self, attrs: &Attributes<'_>) -> (Decision, String) {
        let mut reasons = Vec::new();
        for a in &self.0 {
            let (decision, reason) = a.authorize(attrs);
            match decision {
                Decision::Allow | Decision::Deny => return (decision, reason),
                Decision::NoOpinion => {
                    if !reason.is_empty() {
                        reasons.push(reason);
                    }
                }
            }
        }
        (Decision::NoOpinion, reasons.join("\n"))
    }

    fn rules_for(&self, user: &UserInfo, namespace: &str) -> RuleSet {
        let mut all = RuleSet::default();
        for a in &self.0 {
            let s = a.rules_for(user, namespace);
            all.resource_rules.extend(s.resource_rules);
            all.non_resource_rules.extend(s.non_resource_rules);
            all.incomplete |= s.incomplete;
            all.errors.extend(s.errors);
        }
        all
    }
}

/// One bearer token that authenticates as one user (the admin token of the data dir).
pub struct StaticToken {
    /// The token.
    pub token: String,
    /// Its user.
    pub user: UserInfo,
}

/// The bearer token of a request's `Authorization` header.
pub fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let v = headers.get("authorization")?.to_str().ok()?;
    let (scheme, token) = v.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

impl Authenticator for StaticToken {
    fn authenticate(
        &self,
        headers: &HeaderMap,
        _peer: Option<&PeerCertificate>,
    ) -> Result<Option<Authenticated>, AuthnError> {
        match bearer_token(headers) {
            None => Ok(None),
            Some(t) => self.authenticate_token(t, &[]),
        }
    }

    fn authenticate_token(
        &self,
        token: &str,
        _audiences: &[String],
    ) -> Result<Option<Authenticated>, AuthnError> {
        if token == self.token {
            Ok(Some(Authenticated {
                user: self.user.clone(),
                audiences: Vec::new(),
            }))
        } else {
            Err(AuthnError("invalid bearer token".into()))
        }
    }
}

/// How a server authenticates and authorizes.
#[derive(Clone)]
pub struct Auth {
    /// Who sends requests; `None`: no authentication at all (`--insecure-no-auth`), every
    /// request is made as a member of `system:masters`.
    pub authenticator: Option<Arc<dyn Authenticator>>,
    /// Whether requests without credentials are served as `system:anonymous` (then
    /// authorized like any other) instead of answered 401.
    pub anonymous: bool,
    /// What users may do.
    pub authorizer: Arc<dyn Authorizer>,
    /// The service account token issuer (TokenRequest, OIDC discovery); `None` when
    /// the server authenticates nobody.
    pub service_accounts: Option<Arc<authn::serviceaccount::ServiceAccountTokens>>,
}

impl Auth {
    /// No authentication, everything allowed.
    pub fn none() -> Auth {
        Auth {
            authenticator: None,
            anonymous: false,
            authorizer: Arc::new(AlwaysAllow),
            service_accounts: None,
        }
    }

    /// The user of a request, 401 when its credentials are invalid or missing (and
    /// anonymous requests are not served).
    pub fn authenticate(
        &self,
        headers: &HeaderMap,
        peer: Option<&PeerCertificate>,
    ) -> Result<UserInfo, ApiError> {
        let Some(authn) = &self.authenticator else {
            let mut u = UserInfo::new(
                crate::machinery::user::ANONYMOUS,
                &[crate::machinery::user::SYSTEM_PRIVILEGED_GROUP],
            );
            u.groups
                .push(crate::machinery::user::ALL_UNAUTHENTICATED.to_string());
            return Ok(u);
        };
        match authn.authenticate(headers, peer) {
            Ok(Some(a)) => {
                let mut user = a.user;
                if !user.in_group(crate::machinery::user::ALL_AUTHENTICATED)
                    && user.name != crate::machinery::user::ANONYMOUS
                {
                    user.groups
                        .push(crate::machinery::user::ALL_AUTHENTICATED.to_string());
                }
                Ok(user)
            }
            Ok(None) if self.anonymous => Ok(UserInfo::new(
                crate::machinery::user::ANONYMOUS,
                &[crate::machinery::user::ALL_UNAUTHENTICATED],
            )),
            Ok(None) | Err(_) => Err(ApiError::unauthorized()),
        }
    }

    /// Whether `user` may make `request`: `Ok` or upstream's 403 Forbidden.
    pub fn authorize(&self, user: &UserInfo, request: &RequestInfo) -> Result<(), ApiError> {
        let (decision, reason) = self.authorizer.authorize(&Attributes { user, request });
        match decision {
            Decision::Allow => Ok(()),
            Decision::Deny | Decision::NoOpinion => Err(forbidden(user, request, &reason)),
        }
    }
}

/// Upstream's 403 for a refused request (`responsewriters.Forbidden`): `pods "x" is
/// forbidden: User "u" cannot get resource "pods" in API group "" in the namespace "n"`,
/// with `: <reason>` when the authorizer gave one.
pub fn forbidden(user: &UserInfo, r: &RequestInfo, reason: &str) -> ApiError {
    let msg = if !r.resource_request {
        format!("User {:?} cannot {} path {:?}", user.name, r.verb, r.path)
    } else {
        let resource = if r.subresource.is_empty() {
            r.resource.clone()
        } else {
            format!("{}/{}", r.resource, r.subresource)
        };
        if r.namespace.is_empty() {
            format!(
                "User {:?} cannot {} resource {:?} in API group {:?} at the cluster scope",
                user.name, r.verb, resource, r.api_group
            )
        } else {
            format!(
                "User {:?} cannot {} resource {:?} in API group {:?} in the namespace {:?}",
                user.name, r.verb, resource, r.api_group, r.namespace
            )
        }
    };
    let err = if reason.is_empty() {
        msg
    } else {
        format!("{msg}: {reason}")
    };
    if !r.resource_request {
        return ApiError::forbidden(format!("forbidden: {err}"));
    }
    let qualified = if r.api_group.is_empty() {
        r.resource.clone()
    } else {
        format!("{}.{}", r.resource, r.api_group)
    };
    let message = if r.name.is_empty() {
        format!("{qualified} is forbidden: {err}")
    } else {
        format!("{qualified} {:?} is forbidden: {err}", r.name)
    };
    ApiError::forbidden(message).with_details(&r.api_group, &r.resource, &r.name)
}
