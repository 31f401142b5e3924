//! Verifying service account tokens (upstream `JWTTokenAuthenticator` with its legacy
//! and bound-token validators): signature, issuer, audiences, lifetime, and the objects
//! the token names, which must still exist with the UIDs it names.

use k8s_openapi::api::core::v1::{Node, Pod, Secret, ServiceAccount};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::claims::{self, BoundClaims};
use super::jwt::{self, JwtError};
use super::keys::PublicKey;

/// go-jose's default leeway for `exp`, `nbf` and `iat`, and how long upstream still
/// accepts tokens of objects being deleted.
pub const LEEWAY_SECONDS: i64 = 60;
/// The label recording the day a legacy token was last used.
pub const LAST_USED_LABEL: &str = "kubernetes.io/legacy-token-last-used";
/// The label marking a legacy token invalid (set by the legacy token cleaner).
pub const INVALID_SINCE_LABEL: &str = "kubernetes.io/legacy-token-invalid-since";
/// The key of a service account token Secret's token.
pub const TOKEN_KEY: &str = "token";

/// Reads the objects tokens name (upstream `ServiceAccountTokenGetter`).
pub trait TokenGetter {
    /// A service account.
    fn service_account(&self, namespace: &str, name: &str) -> Option<ServiceAccount>;
    /// A pod.
    fn pod(&self, namespace: &str, name: &str) -> Option<Pod>;
    /// A Secret.
    fn secret(&self, namespace: &str, name: &str) -> Option<Secret>;
    /// A node.
    fn node(&self, name: &str) -> Option<Node>;
    /// Records that the legacy token of `secret` was used on `today` (`YYYY-MM-DD`,
    /// UTC) by setting its [`LAST_USED_LABEL`]; called at most once a day per Secret.
    fn mark_legacy_token_used(&self, _secret: &Secret, _today: &str) {}
}

/// Who a valid token authenticates (upstream `ServiceAccountInfo`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServiceAccountInfo {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// UID.
    pub uid: String,
    /// Bound pod's name.
    pub pod_name: String,
    /// Bound pod's UID.
    pub pod_uid: String,
    /// Bound node's name (or the bound pod's node).
    pub node_name: String,
    /// Its UID.
    pub node_uid: String,
    /// `JTI=<jti>` for tokens with an id.
    pub credential_id: String,
}

impl ServiceAccountInfo {
    /// `system:serviceaccount:<ns>:<name>`.
    pub fn username(&self) -> String {
        claims::make_username(&self.namespace, &self.name)
    }

    /// `system:serviceaccounts`, `system:serviceaccounts:<ns>`.
    pub fn groups(&self) -> Vec<String> {
        claims::make_group_names(&self.namespace)
    }

    /// The user's extra attributes (upstream `ServiceAccountInfo.UserInfo`).
    pub fn extra(&self) -> std::collections::BTreeMap<String, Vec<String>> {
        let mut extra = std::collections::BTreeMap::new();
        if !self.pod_name.is_empty() && !self.pod_uid.is_empty() {
            extra.insert(claims::POD_NAME_KEY.into(), vec![self.pod_name.clone()]);
            extra.insert(claims::POD_UID_KEY.into(), vec![self.pod_uid.clone()]);
        }
        if !self.credential_id.is_empty() {
            extra.insert(
                claims::CREDENTIAL_ID_KEY.into(),
                vec![self.credential_id.clone()],
            );
        }
        if !self.node_name.is_empty() {
            extra.insert(claims::NODE_NAME_KEY.into(), vec![self.node_name.clone()]);
            if !self.node_uid.is_empty() {
                extra.insert(claims::NODE_UID_KEY.into(), vec![self.node_uid.clone()]);
            }
        }
        extra
    }
}

/// A valid token's identity and the audiences it was valid for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenIdentity {
    /// Who.
    pub info: ServiceAccountInfo,
    /// The token's audiences that were asked for.
    pub audiences: Vec<String>,
}

/// Which claims a [`TokenAuthenticator`] validates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Legacy { lookup: bool },
    Bound,
}

/// Authenticates service account tokens of some issuers signed by some keys.
#[derive(Clone, Debug)]
pub struct TokenAuthenticator {
    issuers: Vec<String>,
    keys: Vec<PublicKey>,
    implicit_audiences: Vec<String>,
    kind: Kind,
}

fn not_found(resource: &str, name: &str) -> JwtError {
    JwtError(format!("{resource} {name:?} not found"))
}

fn deleted_before(meta: &ObjectMeta, cutoff: i64) -> bool {
    meta.deletion_timestamp
        .as_ref()
        .is_some_and(|t| t.0.as_second() < cutoff)
}

fn uid(meta: &ObjectMeta) -> &str {
    meta.uid.as_deref().unwrap_or("")
}

impl TokenAuthenticator {
    /// Legacy tokens (`iss: kubernetes/serviceaccount`); `lookup`: check their Secret
    /// and service account in the store (`--service-account-lookup`, default true).
    pub fn legacy(
        keys: Vec<PublicKey>,
        implicit_audiences: Vec<String>,
        lookup: bool,
    ) -> TokenAuthenticator {
        TokenAuthenticator {
            issuers: vec![claims::LEGACY_ISSUER.to_string()],
            keys,
            implicit_audiences,
            kind: Kind::Legacy { lookup },
        }
    }

    /// Bound tokens of `issuers` (`--service-account-issuer`; the first one signs).
    pub fn bound(
        issuers: Vec<String>,
        keys: Vec<PublicKey>,
        implicit_audiences: Vec<String>,
    ) -> TokenAuthenticator {
        TokenAuthenticator {
            issuers,
            keys,
            implicit_audiences,
            kind: Kind::Bound,
        }
    }

    /// Whether `token` is a JWT of one of this authenticator's issuers (read before
    /// verifying, to pick the authenticator; upstream `hasCorrectIssuer`).
    pub fn has_issuer(&self, token: &str) -> bool {
        jwt::unverified_claims(token)
            .and_then(|c| c.get("iss").and_then(|i| i.as_str().map(str::to_string)))
            .is_some_and(|iss| self.issuers.contains(&iss))
    }

    /// The identity `token` proves: `Ok(None)` when it is not a token of this
    /// authenticator's issuers (another authenticator may know it), `Err` when it is
    /// but is invalid. `requested`: the audiences asked for (`None`: the API server's,
    /// the implicit ones); `now`: Unix seconds.
    pub fn authenticate(
        &self,
        token: &str,
        requested: Option<&[String]>,
        getter: &dyn TokenGetter,
        now: i64,
    ) -> Result<Option<TokenIdentity>, JwtError> {
        if !self.has_issuer(token) {
            return Ok(None);
        }
        let Ok(parsed) = jwt::parse(token) else {
            return Ok(None);
        };
        let keys: Vec<&PublicKey> = match &parsed.kid {
            Some(kid) => self.keys.iter().filter(|k| k.key_id() == kid).collect(),
            None => self.keys.iter().collect(),
        };
        if keys.is_empty() {
            return Err(JwtError("invalid signature, no keys found".into()));
        }
        parsed.verify(&keys)?;
        let c = &parsed.claims;
        let iss = c.get("iss").and_then(|v| v.as_str()).unwrap_or("");
        if !self.issuers.iter().any(|i| i == iss) {
            return Err(JwtError(format!("token issuer {iss:?} is invalid")));
        }
        let mut token_auds = claims::audiences(c.get("aud"));
        if token_auds.is_empty() {
            // only the API server's audiences are allowed for legacy tokens
            token_auds = self.implicit_audiences.clone();
        }
        let requested = requested.unwrap_or(&self.implicit_audiences);
        let auds: Vec<String> = token_auds
            .iter()
            .filter(|a| requested.contains(a))
            .cloned()
            .collect();
        if auds.is_empty() && !self.implicit_audiences.is_empty() {
            return Err(JwtError(format!(
                "token audiences {} is invalid for the target audiences {}",
                go_quoted_list(&token_auds),
                go_quoted_list(requested)
            )));
        }
        let info = match self.kind {
            Kind::Legacy { lookup } => validate_legacy(token, c, lookup, getter, now)?,
            Kind::Bound => validate_bound(&BoundClaims::from_claims(c), getter, now)?,
        };
        Ok(Some(TokenIdentity {
            info,
            audiences: auds,
        }))
    }
}

/// Go's `%q` of a `[]string`: `["a" "b"]`.
fn go_quoted_list(v: &[String]) -> String {
    let items: Vec<String> = v.iter().map(|s| format!("{s:?}")).collect();
    format!("[{}]", items.join(" "))
}

/// Upstream's legacy validator: the claims must be complete and consistent, and with
/// `lookup` the Secret must still hold exactly this token and the service account
/// must still exist with the UID the token names.
fn validate_legacy(
    token: &str,
    c: &serde_json::Map<String, serde_json::Value>,
    lookup: bool,
    getter: &dyn TokenGetter,
    now: i64,
) -> Result<ServiceAccountInfo, JwtError> {
    let e = |m: &str| Err(JwtError(m.to_string()));
    let private = claims::legacy_from_claims(c);
    let sub = c.get("sub").and_then(|v| v.as_str()).unwrap_or("");
    if sub.is_empty() {
        return e("sub claim is missing");
    }
    if private.namespace.is_empty() {
        return e("namespace claim is missing");
    }
    if private.secret_name.is_empty() {
        return e("secretName claim is missing");
    }
    if private.service_account_name.is_empty() {
        return e("serviceAccountName claim is missing");
    }
    if private.service_account_uid.is_empty() {
        return e("serviceAccountUID claim is missing");
    }
    match claims::split_username(sub) {
        Some((ns, name)) if ns == private.namespace && name == private.service_account_name => {}
        _ => return e("sub claim is invalid"),
    }
    let (ns, sa_name) = (&private.namespace, &private.service_account_name);
    if lookup {
        let Some(secret) = getter.secret(ns, &private.secret_name) else {
            return e("token has been invalidated");
        };
        if secret.metadata.deletion_timestamp.is_some() {
            return e("token has been invalidated");
        }
        let stored = secret
            .data
            .as_ref()
            .and_then(|d| d.get(TOKEN_KEY))
            .map(|b| b.0.as_slice());
        if stored != Some(token.as_bytes()) {
            return e("token does not match server's copy");
        }
        let sa = getter
            .service_account(ns, sa_name)
            .ok_or_else(|| not_found("serviceaccounts", sa_name))?;
        if sa.metadata.deletion_timestamp.is_some() {
            return Err(JwtError(format!(
                "service account {ns}/{sa_name} has been deleted"
            )));
        }
        if uid(&sa.metadata) != private.service_account_uid {
            return Err(JwtError(format!(
                "service account UID ({}) does not match claim ({})",
                uid(&sa.metadata),
                private.service_account_uid
            )));
        }
        let labels = secret.metadata.labels.as_ref();
        if labels
            .and_then(|l| l.get(INVALID_SINCE_LABEL))
            .is_some_and(|v| !v.is_empty())
        {
            return Err(JwtError(format!(
                "the token in secret {ns}/{} for service account {ns}/{sa_name} has been marked invalid. Use tokens from the TokenRequest API or manually created secret-based tokens, or remove the '{INVALID_SINCE_LABEL}' label from the secret to temporarily allow use of this token",
                private.secret_name
            )));
        }
        let today = day(now);
        let tomorrow = day(now + 86400);
        let last = labels.and_then(|l| l.get(LAST_USED_LABEL));
        if last != Some(&today) && last != Some(&tomorrow) {
            getter.mark_legacy_token_used(&secret, &today);
        }
    }
    Ok(ServiceAccountInfo {
        namespace: private.namespace,
        name: private.service_account_name,
        uid: private.service_account_uid,
        ..ServiceAccountInfo::default()
    })
}

/// `YYYY-MM-DD` (UTC) of a Unix time.
fn day(unix: i64) -> String {
    chrono::DateTime::from_timestamp(unix, 0)
        .map(|t| t.format("%Y-%m-%d").to_string())
        .unwrap_or_default()
}

/// Upstream's bound-token validator: the lifetime (with a minute's leeway), then the
/// service account and the object the token is bound to must exist with its UIDs.
pub fn validate_bound(
    c: &BoundClaims,
    getter: &dyn TokenGetter,
    now: i64,
) -> Result<ServiceAccountInfo, JwtError> {
    let e = |m: &str| Err(JwtError(m.to_string()));
    if c.not_before.is_some_and(|nbf| now + LEEWAY_SECONDS < nbf) {
        return e("service account token is not valid yet");
    }
    if c.expiry.is_some_and(|exp| now - LEEWAY_SECONDS > exp) {
        return e("service account token has expired");
    }
    if c.issued_at.is_some_and(|iat| now + LEEWAY_SECONDS < iat) {
        return e("service account token is issued in the future");
    }
    let cutoff = now - LEEWAY_SECONDS;
    let ns = &c.namespace;
    let sa_ref = &c.service_account;
    let sa = getter
        .service_account(ns, &sa_ref.name)
        .ok_or_else(|| not_found("serviceaccounts", &sa_ref.name))?;
    if deleted_before(&sa.metadata, cutoff) {
        return Err(JwtError(format!(
            "service account {ns}/{} has been deleted",
            sa_ref.name
        )));
    }
    if uid(&sa.metadata) != sa_ref.uid {
        return Err(JwtError(format!(
            "service account UID ({}) does not match claim ({})",
            uid(&sa.metadata),
            sa_ref.uid
        )));
    }
    if let Some(r) = &c.secret {
        let Some(secret) = getter.secret(ns, &r.name) else {
            return e("service account token has been invalidated");
        };
        if deleted_before(&secret.metadata, cutoff) {
            return e("service account token has been invalidated");
        }
        if uid(&secret.metadata) != r.uid {
            return Err(JwtError(format!(
                "secret UID ({}) does not match service account secret ref claim ({})",
                uid(&secret.metadata),
                r.uid
            )));
        }
    }
    let mut info = ServiceAccountInfo {
        namespace: ns.clone(),
        name: sa_ref.name.clone(),
        uid: sa_ref.uid.clone(),
        credential_id: claims::credential_id_for_jti(&c.id),
        ..ServiceAccountInfo::default()
    };
    if let Some(r) = &c.pod {
        let Some(pod) = getter.pod(ns, &r.name) else {
            return e("service account token has been invalidated");
        };
        if deleted_before(&pod.metadata, cutoff) {
            return e("service account token has been invalidated");
        }
        if uid(&pod.metadata) != r.uid {
            return Err(JwtError(format!(
                "pod UID ({}) does not match service account pod ref claim ({})",
                uid(&pod.metadata),
                r.uid
            )));
        }
        info.pod_name = r.name.clone();
        info.pod_uid = r.uid.clone();
    }
    if let Some(r) = &c.node {
        if c.pod.is_none() {
            // a token bound to the node itself: the node must still exist
            let Some(node) = getter.node(&r.name) else {
                return e("service account token has been invalidated");
            };
            if deleted_before(&node.metadata, cutoff) {
                return e("service account token has been invalidated");
            }
            if uid(&node.metadata) != r.uid {
                return Err(JwtError(format!(
                    "node UID ({}) does not match service account node ref claim ({})",
                    uid(&node.metadata),
                    r.uid
                )));
            }
        }
        // a pod-bound token names its pod's node: only recorded
        info.node_name = r.name.clone();
        info.node_uid = r.uid.clone();
    }
    Ok(info)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::serviceaccount::claims::{sign_bound, sign_legacy, LegacyClaims, Ref};
    use crate::serviceaccount::keys::SigningKey;
    use crate::serviceaccount::testkeys::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use k8s_openapi::ByteString;
    use std::cell::RefCell;
    use std::collections::BTreeMap;

    #[derive(Default)]
    struct Objects {
        sas: Vec<ServiceAccount>,
        pods: Vec<Pod>,
        secrets: Vec<Secret>,
        nodes: Vec<Node>,
        marked: RefCell<Vec<(String, String)>>,
    }

    fn find<T: k8s_openapi::Metadata<Ty = ObjectMeta> + Clone>(
        v: &[T],
        ns: &str,
        name: &str,
    ) -> Option<T> {
        v.iter()
            .find(|o| {
                o.metadata().name.as_deref() == Some(name)
                    && o.metadata().namespace.as_deref().unwrap_or("") == ns
            })
            .cloned()
    }

    impl TokenGetter for Objects {
        fn service_account(&self, ns: &str, name: &str) -> Option<ServiceAccount> {
            find(&self.sas, ns, name)
        }
        fn pod(&self, ns: &str, name: &str) -> Option<Pod> {
            find(&self.pods, ns, name)
        }
        fn secret(&self, ns: &str, name: &str) -> Option<Secret> {
            find(&self.secrets, ns, name)
        }
        fn node(&self, name: &str) -> Option<Node> {
            find(&self.nodes, "", name)
        }
        fn mark_legacy_token_used(&self, secret: &Secret, today: &str) {
            self.marked.borrow_mut().push((
                secret.metadata.name.clone().unwrap_or_default(),
                today.to_string(),
            ));
        }
    }

    fn meta(ns: &str, name: &str, uid: &str) -> ObjectMeta {
        ObjectMeta {
            name: Some(name.into()),
            namespace: (!ns.is_empty()).then(|| ns.into()),
            uid: Some(uid.into()),
            ..ObjectMeta::default()
        }
    }

    fn sa() -> ServiceAccount {
        ServiceAccount {
            metadata: meta("test", "my-service-account", "12345"),
            ..ServiceAccount::default()
        }
    }

    fn secret(name: &str, token: &str) -> Secret {
        Secret {
            metadata: meta("test", name, "s-1"),
            data: Some(BTreeMap::from([(
                "token".to_string(),
                ByteString(token.as_bytes().to_vec()),
            )])),
            ..Secret::default()
        }
    }

    fn key(pem: &str) -> PublicKey {
        PublicKey::all_from_pem(pem).unwrap().remove(0)
    }

    fn api() -> Vec<String> {
        vec!["api".to_string()]
    }

    const NOW: i64 = 1_700_000_000;

    /// upstream TestTokenGenerateAndValidate
    #[test]
    fn legacy_tokens() {
        let rsa = SigningKey::from_pem(RSA_PRIVATE_KEY).unwrap();
        let ecdsa = SigningKey::from_pem(ECDSA_PRIVATE_KEY).unwrap();
        let rsa_token =
            sign_legacy(&rsa, "test", "my-service-account", "12345", "my-rsa-secret").unwrap();
        let ecdsa_token = sign_legacy(
            &ecdsa,
            "test",
            "my-service-account",
            "12345",
            "my-ecdsa-secret",
        )
        .unwrap();
        let invalid_auto_token = sign_legacy(
            &rsa,
            "test",
            "my-service-account",
            "12345",
            "invalid-auto-secret",
        )
        .unwrap();
        assert_eq!(
            jwt::parse(&rsa_token).unwrap().kid.as_deref(),
            Some("JHJehTTTZlsspKHT-GaJxK7Kd1NQgZJu3fyK6K_QDYU")
        );
        let mut bar = claims::LegacyClaims {
            namespace: "test".into(),
            service_account_name: "my-service-account".into(),
            service_account_uid: "12345".into(),
            secret_name: "my-rsa-secret".into(),
        }
        .to_json();
        bar["iss"] = "bar".into();
        let different_issuer_token = jwt::sign(&rsa, &bar).unwrap();
        bar["iss"] = "foo".into();
        let bad_issuer_token = jwt::sign(&rsa, &bar).unwrap();

        let mut invalid_auto = secret("invalid-auto-secret", &invalid_auto_token);
        invalid_auto.metadata.labels = Some(BTreeMap::from([(
            INVALID_SINCE_LABEL.to_string(),
            "2022-12-20".to_string(),
        )]));
        let all = || Objects {
            sas: vec![sa()],
            secrets: vec![
                secret("my-rsa-secret", &rsa_token),
                secret("my-ecdsa-secret", &ecdsa_token),
            ],
            ..Objects::default()
        };
        type Case<'a> = (
            &'a str,
            &'a str,
            Vec<&'a str>,
            Option<Objects>,
            Result<bool, ()>,
        );
        let cases: Vec<Case> = vec![
            ("no keys", &rsa_token, vec![], None, Err(())),
            (
                "invalid keys (rsa)",
                &rsa_token,
                vec![OTHER_PUBLIC_KEY, ECDSA_PUBLIC_KEY],
                None,
                Err(()),
            ),
            (
                "invalid keys (ecdsa)",
                &ecdsa_token,
                vec![OTHER_PUBLIC_KEY, RSA_PUBLIC_KEY],
                None,
                Err(()),
            ),
            (
                "valid key (rsa)",
                &rsa_token,
                vec![RSA_PUBLIC_KEY],
                None,
                Ok(true),
            ),
            (
                "valid key, invalid issuer (rsa)",
                &bad_issuer_token,
                vec![RSA_PUBLIC_KEY],
                None,
                Ok(false),
            ),
            (
                "valid key, different issuer (rsa)",
                &different_issuer_token,
                vec![RSA_PUBLIC_KEY],
                None,
                Ok(true),
            ),
            (
                "valid key (ecdsa)",
                &ecdsa_token,
                vec![ECDSA_PUBLIC_KEY],
                None,
                Ok(true),
            ),
            (
                "rotated keys (rsa)",
                &rsa_token,
                vec![OTHER_PUBLIC_KEY, ECDSA_PUBLIC_KEY, RSA_PUBLIC_KEY],
                None,
                Ok(true),
            ),
            (
                "rotated keys (ecdsa)",
                &ecdsa_token,
                vec![OTHER_PUBLIC_KEY, RSA_PUBLIC_KEY, ECDSA_PUBLIC_KEY],
                None,
                Ok(true),
            ),
            (
                "valid lookup",
                &rsa_token,
                vec![RSA_PUBLIC_KEY],
                Some(all()),
                Ok(true),
            ),
            (
                "invalid secret lookup",
                &rsa_token,
                vec![RSA_PUBLIC_KEY],
                Some(Objects {
                    sas: vec![sa()],
                    ..Objects::default()
                }),
                Err(()),
            ),
            (
                "invalid serviceaccount lookup",
                &rsa_token,
                vec![RSA_PUBLIC_KEY],
                Some(Objects {
                    sas: vec![],
                    ..all()
                }),
                Err(()),
            ),
            (
                "secret is marked as invalid",
                &invalid_auto_token,
                vec![RSA_PUBLIC_KEY],
                Some(Objects {
                    sas: vec![sa()],
                    secrets: vec![invalid_auto.clone()],
                    ..Objects::default()
                }),
                Err(()),
            ),
        ];
        for (name, token, keys, objects, want) in cases {
            let lookup = objects.is_some();
            let objects = objects.unwrap_or_default();
            let mut authn =
                TokenAuthenticator::legacy(keys.into_iter().map(key).collect(), api(), lookup);
            authn.issuers.push("bar".into());
            assert_eq!(
                authn.authenticate("invalid token", None, &objects, NOW),
                Ok(None),
                "{name}: a non-JWT token is not this authenticator's"
            );
            let got = authn.authenticate(token, None, &objects, NOW);
            match (want, got) {
                (Ok(true), Ok(Some(id))) => {
                    assert_eq!(
                        id.info.username(),
                        "system:serviceaccount:test:my-service-account",
                        "{name}"
                    );
                    assert_eq!(id.info.uid, "12345", "{name}");
                    assert_eq!(
                        id.info.groups(),
                        ["system:serviceaccounts", "system:serviceaccounts:test"],
                        "{name}"
                    );
                    assert!(id.info.extra().is_empty(), "{name}");
                    assert_eq!(id.audiences, api(), "{name}");
                }
                (Ok(false), Ok(None)) | (Err(()), Err(_)) => {}
                (want, got) => panic!("{name}: want {want:?}, got {got:?}"),
            }
        }
    }

    #[test]
    fn legacy_tokens_are_marked_used_once_a_day() {
        let rsa = SigningKey::from_pem(RSA_PRIVATE_KEY).unwrap();
        let token = sign_legacy(&rsa, "test", "my-service-account", "12345", "s").unwrap();
        let mut s = secret("s", &token);
        let objects = Objects {
            sas: vec![sa()],
            secrets: vec![s.clone()],
            ..Objects::default()
        };
        let authn = TokenAuthenticator::legacy(vec![key(RSA_PUBLIC_KEY)], api(), true);
        authn
            .authenticate(&token, None, &objects, NOW)
            .unwrap()
            .unwrap();
        assert_eq!(
            objects.marked.borrow().as_slice(),
            [("s".to_string(), "2023-11-14".to_string())]
        );
        s.metadata.labels = Some(BTreeMap::from([(
            LAST_USED_LABEL.to_string(),
            "2023-11-14".to_string(),
        )]));
        let objects = Objects {
            sas: vec![sa()],
            secrets: vec![s],
            ..Objects::default()
        };
        authn
            .authenticate(&token, None, &objects, NOW)
            .unwrap()
            .unwrap();
        assert!(objects.marked.borrow().is_empty());
    }

    #[test]
    fn legacy_claims_must_be_consistent() {
        let key_ = SigningKey::generate().unwrap();
        let authn = TokenAuthenticator::legacy(vec![key_.public_key().clone()], api(), false);
        let base = LegacyClaims {
            namespace: "ns".into(),
            service_account_name: "sa".into(),
            service_account_uid: "u".into(),
            secret_name: "s".into(),
        }
        .to_json();
        for (field, value, msg) in [
            ("sub", "", "sub claim is missing"),
            (
                "kubernetes.io/serviceaccount/namespace",
                "",
                "namespace claim is missing",
            ),
            (
                "kubernetes.io/serviceaccount/secret.name",
                "",
                "secretName claim is missing",
            ),
            (
                "kubernetes.io/serviceaccount/service-account.name",
                "",
                "serviceAccountName claim is missing",
            ),
            (
                "kubernetes.io/serviceaccount/service-account.uid",
                "",
                "serviceAccountUID claim is missing",
            ),
            (
                "sub",
                "system:serviceaccount:ns:other",
                "sub claim is invalid",
            ),
            ("sub", "system:admin", "sub claim is invalid"),
        ] {
            let mut c = base.clone();
            c[field] = value.into();
            let token = jwt::sign(&key_, &c).unwrap();
            assert_eq!(
                authn.authenticate(&token, None, &Objects::default(), NOW),
                Err(JwtError(msg.into())),
                "{field}={value}"
            );
        }
    }

    fn bound(now: i64) -> BoundClaims {
        BoundClaims::new(
            "https://issuer",
            "test",
            Ref::new("my-service-account", "12345"),
            api(),
            now,
            3600,
        )
    }

    fn pod(name: &str, uid: &str) -> Pod {
        Pod {
            metadata: meta("test", name, uid),
            ..Pod::default()
        }
    }

    fn deleting<T: k8s_openapi::Metadata<Ty = ObjectMeta>>(mut o: T, at: i64) -> T {
        o.metadata_mut().deletion_timestamp =
            Some(Time(k8s_openapi::jiff::Timestamp::from_second(at).unwrap()));
        o
    }

    /// upstream claims_test.go TestValidatePrivateClaims, and the lifetime checks
    #[test]
    fn bound_tokens() {
        let k = SigningKey::generate().unwrap();
        let authn = TokenAuthenticator::bound(
            vec!["https://issuer".into()],
            vec![k.public_key().clone()],
            api(),
        );
        let with = |f: &dyn Fn(&mut BoundClaims)| {
            let mut c = bound(NOW);
            f(&mut c);
            sign_bound(&k, &c).unwrap()
        };
        let base = || Objects {
            sas: vec![sa()],
            pods: vec![pod("p", "pod-uid")],
            secrets: vec![secret("s", "")],
            nodes: vec![Node {
                metadata: meta("", "n", "node-uid"),
                ..Node::default()
            }],
            ..Objects::default()
        };
        let pod_bound = with(&|c| c.pod = Some(Ref::new("p", "pod-uid")));
        let cases: Vec<(&str, String, Objects, Result<(), &str>)> = vec![
            ("good", with(&|_| {}), base(), Ok(())),
            ("good pod", pod_bound.clone(), base(), Ok(())),
            (
                "good secret",
                with(&|c| c.secret = Some(Ref::new("s", "s-1"))),
                base(),
                Ok(()),
            ),
            (
                "good node",
                with(&|c| c.node = Some(Ref::new("n", "node-uid"))),
                base(),
                Ok(()),
            ),
            (
                "expired",
                with(&|c| c.expiry = Some(NOW - 61)),
                base(),
                Err("service account token has expired"),
            ),
            (
                "expired within leeway",
                with(&|c| c.expiry = Some(NOW - 59)),
                base(),
                Ok(()),
            ),
            (
                "not yet valid",
                with(&|c| c.not_before = Some(NOW + 61)),
                base(),
                Err("service account token is not valid yet"),
            ),
            (
                "issued in the future",
                with(&|c| c.issued_at = Some(NOW + 61)),
                base(),
                Err("service account token is issued in the future"),
            ),
            (
                "missing serviceaccount",
                with(&|_| {}),
                Objects {
                    sas: vec![],
                    ..base()
                },
                Err("serviceaccounts \"my-service-account\" not found"),
            ),
            (
                "deleted serviceaccount",
                with(&|_| {}),
                Objects {
                    sas: vec![deleting(sa(), NOW - 61)],
                    ..base()
                },
                Err("service account test/my-service-account has been deleted"),
            ),
            (
                "serviceaccount being deleted within leeway",
                with(&|_| {}),
                Objects {
                    sas: vec![deleting(sa(), NOW - 59)],
                    ..base()
                },
                Ok(()),
            ),
            (
                "serviceaccount uid mismatch",
                with(&|c| c.service_account.uid = "other".into()),
                base(),
                Err("service account UID (12345) does not match claim (other)"),
            ),
            (
                "missing pod",
                pod_bound.clone(),
                Objects {
                    pods: vec![],
                    ..base()
                },
                Err("service account token has been invalidated"),
            ),
            (
                "deleted pod",
                pod_bound.clone(),
                Objects {
                    pods: vec![deleting(pod("p", "pod-uid"), NOW - 61)],
                    ..base()
                },
                Err("service account token has been invalidated"),
            ),
            (
                "pod uid mismatch",
                pod_bound.clone(),
                Objects {
                    pods: vec![pod("p", "new-uid")],
                    ..base()
                },
                Err("pod UID (new-uid) does not match service account pod ref claim (pod-uid)"),
            ),
            (
                "missing secret",
                with(&|c| c.secret = Some(Ref::new("s", "s-1"))),
                Objects {
                    secrets: vec![],
                    ..base()
                },
                Err("service account token has been invalidated"),
            ),
            (
                "secret uid mismatch",
                with(&|c| c.secret = Some(Ref::new("s", "s-0"))),
                base(),
                Err("secret UID (s-1) does not match service account secret ref claim (s-0)"),
            ),
            (
                "missing node",
                with(&|c| c.node = Some(Ref::new("n", "node-uid"))),
                Objects {
                    nodes: vec![],
                    ..base()
                },
                Err("service account token has been invalidated"),
            ),
            (
                "node uid mismatch",
                with(&|c| c.node = Some(Ref::new("n", "x"))),
                base(),
                Err("node UID (node-uid) does not match service account node ref claim (x)"),
            ),
            (
                "pod's node is not checked",
                with(&|c| {
                    c.pod = Some(Ref::new("p", "pod-uid"));
                    c.node = Some(Ref::new("gone", "x"));
                }),
                base(),
                Ok(()),
            ),
            (
                "wrong audience",
                with(&|c| c.audiences = vec!["other".into()]),
                base(),
                Err("token audiences [\"other\"] is invalid for the target audiences [\"api\"]"),
            ),
        ];
        for (name, token, objects, want) in cases {
            let got = authn.authenticate(&token, None, &objects, NOW);
            match want {
                Ok(()) => {
                    let id = got.unwrap_or_else(|e| panic!("{name}: {e}")).unwrap();
                    assert_eq!(
                        id.info.username(),
                        "system:serviceaccount:test:my-service-account"
                    );
                }
                Err(msg) => assert_eq!(got, Err(JwtError(msg.into())), "{name}"),
            }
        }
    }

    #[test]
    fn bound_token_user_extra() {
        let k = SigningKey::generate().unwrap();
        let authn = TokenAuthenticator::bound(
            vec!["https://issuer".into()],
            vec![k.public_key().clone()],
            api(),
        );
        let mut c = bound(NOW);
        c.pod = Some(Ref::new("p", "pod-uid"));
        c.node = Some(Ref::new("n", "node-uid"));
        let objects = Objects {
            sas: vec![sa()],
            pods: vec![pod("p", "pod-uid")],
            ..Objects::default()
        };
        let id = authn
            .authenticate(&sign_bound(&k, &c).unwrap(), None, &objects, NOW)
            .unwrap()
            .unwrap();
        let extra = id.info.extra();
        assert_eq!(extra[claims::POD_NAME_KEY], ["p"]);
        assert_eq!(extra[claims::POD_UID_KEY], ["pod-uid"]);
        assert_eq!(extra[claims::NODE_NAME_KEY], ["n"]);
        assert_eq!(extra[claims::NODE_UID_KEY], ["node-uid"]);
        assert_eq!(extra[claims::CREDENTIAL_ID_KEY], [format!("JTI={}", c.id)]);
        // the audiences asked for decide
        let other = ["other".to_string()];
        assert!(authn
            .authenticate(&sign_bound(&k, &c).unwrap(), Some(&other), &objects, NOW)
            .is_err());
        // another issuer's token is not this authenticator's
        c.issuer = "https://elsewhere".into();
        assert_eq!(
            authn.authenticate(&sign_bound(&k, &c).unwrap(), None, &objects, NOW),
            Ok(None)
        );
    }
}
