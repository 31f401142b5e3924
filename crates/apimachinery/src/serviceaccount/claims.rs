//! The claim sets of service account tokens (upstream `pkg/serviceaccount/claims.go`
//! and `legacy.go`) and service account user names
//! (`k8s.io/apiserver/pkg/authentication/serviceaccount`).

use serde_json::{json, Map, Value};

use super::jwt::{self, JwtError};
use super::keys::SigningKey;

/// The issuer of legacy (secret-based) tokens.
pub const LEGACY_ISSUER: &str = "kubernetes/serviceaccount";
/// The prefix of service account user names.
pub const USERNAME_PREFIX: &str = "system:serviceaccount:";
/// The group of every service account.
pub const ALL_SERVICE_ACCOUNTS_GROUP: &str = "system:serviceaccounts";
/// The prefix of a namespace's service account group.
pub const GROUP_PREFIX: &str = "system:serviceaccounts:";
/// User extra: the name of the pod a token is bound to.
pub const POD_NAME_KEY: &str = "authentication.kubernetes.io/pod-name";
/// User extra: the UID of the pod a token is bound to.
pub const POD_UID_KEY: &str = "authentication.kubernetes.io/pod-uid";
/// User extra: the name of the node a token is bound to (or its pod runs on).
pub const NODE_NAME_KEY: &str = "authentication.kubernetes.io/node-name";
/// User extra: the UID of that node.
pub const NODE_UID_KEY: &str = "authentication.kubernetes.io/node-uid";
/// User extra: the token's credential id (`JTI=<jti>`).
pub const CREDENTIAL_ID_KEY: &str = "authentication.kubernetes.io/credential-id";

/// `system:serviceaccount:<namespace>:<name>`.
pub fn make_username(namespace: &str, name: &str) -> String {
    format!("{USERNAME_PREFIX}{namespace}:{name}")
}

/// The namespace and name of a service account user name; `None` when it is not
/// one (upstream `SplitUsername`: both must be valid names).
pub fn split_username(username: &str) -> Option<(&str, &str)> {
    let rest = username.strip_prefix(USERNAME_PREFIX)?;
    let mut parts = rest.split(':');
    let (ns, name) = (parts.next()?, parts.next()?);
    if parts.next().is_some()
        || !crate::names::matches_dns1123_label(ns)
        || !crate::names::matches_dns1123_subdomain(name)
    {
        return None;
    }
    Some((ns, name))
}

/// The groups of a namespace's service accounts: `system:serviceaccounts` and
/// `system:serviceaccounts:<namespace>`.
pub fn make_group_names(namespace: &str) -> Vec<String> {
    vec![
        ALL_SERVICE_ACCOUNTS_GROUP.to_string(),
        format!("{GROUP_PREFIX}{namespace}"),
    ]
}

/// `JTI=<jti>`, the credential id of a token with an id (empty without one).
pub fn credential_id_for_jti(jti: &str) -> String {
    if jti.is_empty() {
        String::new()
    } else {
        format!("JTI={jti}")
    }
}

/// The claims of a legacy token, kept in a `kubernetes.io/service-account-token`
/// Secret: no audience, no expiry.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LegacyClaims {
    /// The service account's namespace.
    pub namespace: String,
    /// The service account's name.
    pub service_account_name: String,
    /// The service account's UID.
    pub service_account_uid: String,
    /// The Secret the token is kept in.
    pub secret_name: String,
}

impl LegacyClaims {
    /// The JSON claim set (`iss: kubernetes/serviceaccount`, `sub` and the
    /// `kubernetes.io/serviceaccount/...` claims).
    pub fn to_json(&self) -> Value {
        json!({
            "iss": LEGACY_ISSUER,
            "kubernetes.io/serviceaccount/namespace": self.namespace,
            "kubernetes.io/serviceaccount/secret.name": self.secret_name,
            "kubernetes.io/serviceaccount/service-account.name": self.service_account_name,
            "kubernetes.io/serviceaccount/service-account.uid": self.service_account_uid,
            "sub": make_username(&self.namespace, &self.service_account_name),
        })
    }

    fn from_claims(c: &Map<String, Value>) -> LegacyClaims {
        let s = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        LegacyClaims {
            namespace: s("kubernetes.io/serviceaccount/namespace"),
            service_account_name: s("kubernetes.io/serviceaccount/service-account.name"),
            service_account_uid: s("kubernetes.io/serviceaccount/service-account.uid"),
            secret_name: s("kubernetes.io/serviceaccount/secret.name"),
        }
    }
}

/// A legacy token of service account `namespace/name` (UID `uid`) kept in Secret
/// `secret_name`, signed by `key` (what the token controller puts in the Secret).
pub fn sign_legacy(
    key: &SigningKey,
    namespace: &str,
    name: &str,
    uid: &str,
    secret_name: &str,
) -> Result<String, JwtError> {
    let claims = LegacyClaims {
        namespace: namespace.to_string(),
        service_account_name: name.to_string(),
        service_account_uid: uid.to_string(),
        secret_name: secret_name.to_string(),
    };
    jwt::sign(key, &claims.to_json())
}

/// An object reference in a bound token's claims.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ref {
    /// Name.
    pub name: String,
    /// UID.
    pub uid: String,
}

impl Ref {
    /// A reference to `name` with `uid`.
    pub fn new(name: impl Into<String>, uid: impl Into<String>) -> Ref {
        Ref {
            name: name.into(),
            uid: uid.into(),
        }
    }

    fn to_json(&self) -> Value {
        let mut m = Map::new();
        if !self.name.is_empty() {
            m.insert("name".into(), self.name.clone().into());
        }
        if !self.uid.is_empty() {
            m.insert("uid".into(), self.uid.clone().into());
        }
        Value::Object(m)
    }

    fn from_json(v: Option<&Value>) -> Option<Ref> {
        let m = v?.as_object()?;
        let s = |k: &str| m.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        Some(Ref {
            name: s("name"),
            uid: s("uid"),
        })
    }
}

/// The claims of a bound token (TokenRequest): audiences, lifetime, id, and the
/// `kubernetes.io` claim naming the service account and the object it is bound to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BoundClaims {
    /// `iss`.
    pub issuer: String,
    /// `aud`.
    pub audiences: Vec<String>,
    /// `iat` (Unix seconds).
    pub issued_at: Option<i64>,
    /// `nbf`.
    pub not_before: Option<i64>,
    /// `exp`.
    pub expiry: Option<i64>,
    /// `jti` (empty: none).
    pub id: String,
    /// `kubernetes.io.namespace`.
    pub namespace: String,
    /// `kubernetes.io.serviceaccount`.
    pub service_account: Ref,
    /// `kubernetes.io.pod`: the pod the token is bound to.
    pub pod: Option<Ref>,
    /// `kubernetes.io.secret`: the Secret the token is bound to.
    pub secret: Option<Ref>,
    /// `kubernetes.io.node`: the node the token is bound to, or its pod's node.
    pub node: Option<Ref>,
    /// `kubernetes.io.warnafter` (the kubelet's extended tokens).
    pub warn_after: Option<i64>,
}

impl BoundClaims {
    /// Claims for service account `namespace/sa` valid for `expiration_seconds` from
    /// `now` for `audiences` (upstream `Claims`: `iat = nbf = now`, a random `jti`);
    /// bind them with the `pod`/`secret`/`node` fields.
    pub fn new(
        issuer: &str,
        namespace: &str,
        sa: Ref,
        audiences: Vec<String>,
        now: i64,
        expiration_seconds: i64,
    ) -> BoundClaims {
        BoundClaims {
            issuer: issuer.to_string(),
            audiences,
            issued_at: Some(now),
            not_before: Some(now),
            expiry: Some(now + expiration_seconds),
            id: random_uuid(),
            namespace: namespace.to_string(),
            service_account: sa,
            ..BoundClaims::default()
        }
    }

    /// `sub`: the service account's user name.
    pub fn subject(&self) -> String {
        make_username(&self.namespace, &self.service_account.name)
    }

    /// The JSON claim set.
    pub fn to_json(&self) -> Value {
        let mut k = Map::new();
        k.insert("namespace".into(), self.namespace.clone().into());
        k.insert("serviceaccount".into(), self.service_account.to_json());
        for (key, r) in [
            ("pod", &self.pod),
            ("secret", &self.secret),
            ("node", &self.node),
        ] {
            if let Some(r) = r {
                k.insert(key.into(), r.to_json());
            }
        }
        if let Some(w) = self.warn_after {
            k.insert("warnafter".into(), w.into());
        }
        let mut m = Map::new();
        m.insert("aud".into(), json!(self.audiences));
        if let Some(v) = self.expiry {
            m.insert("exp".into(), v.into());
        }
        if let Some(v) = self.issued_at {
            m.insert("iat".into(), v.into());
        }
        m.insert("iss".into(), self.issuer.clone().into());
        if !self.id.is_empty() {
            m.insert("jti".into(), self.id.clone().into());
        }
        m.insert("kubernetes.io".into(), Value::Object(k));
        if let Some(v) = self.not_before {
            m.insert("nbf".into(), v.into());
        }
        m.insert("sub".into(), self.subject().into());
        Value::Object(m)
    }

    /// The claims of a (verified) token's claim set.
    pub fn from_claims(c: &Map<String, Value>) -> BoundClaims {
        let k = c.get("kubernetes.io").and_then(Value::as_object);
        let kget = |key: &str| k.and_then(|k| k.get(key));
        BoundClaims {
            issuer: c.get("iss").and_then(Value::as_str).unwrap_or("").into(),
            audiences: audiences(c.get("aud")),
            issued_at: numeric_date(c.get("iat")),
            not_before: numeric_date(c.get("nbf")),
            expiry: numeric_date(c.get("exp")),
            id: c.get("jti").and_then(Value::as_str).unwrap_or("").into(),
            namespace: kget("namespace")
                .and_then(Value::as_str)
                .unwrap_or("")
                .into(),
            service_account: Ref::from_json(kget("serviceaccount")).unwrap_or_default(),
            pod: Ref::from_json(kget("pod")),
            secret: Ref::from_json(kget("secret")),
            node: Ref::from_json(kget("node")),
            warn_after: numeric_date(kget("warnafter")),
        }
    }
}

/// `claims` signed by `key`.
pub fn sign_bound(key: &SigningKey, claims: &BoundClaims) -> Result<String, JwtError> {
    jwt::sign(key, &claims.to_json())
}

/// A JWT NumericDate (seconds, possibly fractional).
fn numeric_date(v: Option<&Value>) -> Option<i64> {
    let v = v?;
    v.as_i64().or_else(|| v.as_f64().map(|f| f.floor() as i64))
}

/// `aud`: one string or a list of them.
pub(crate) fn audiences(v: Option<&Value>) -> Vec<String> {
    match v {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        _ => Vec::new(),
    }
}

/// A random (version 4) UUID, as a token id.
pub fn random_uuid() -> String {
    use ring::rand::SecureRandom;
    let mut b = [0u8; 16];
    // SystemRandom fails only without an OS random source; an all-zero id then is
    // still unique enough for a credential id and never affects verification.
    let _ = ring::rand::SystemRandom::new().fill(&mut b);
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

pub(crate) fn legacy_from_claims(c: &Map<String, Value>) -> LegacyClaims {
    LegacyClaims::from_claims(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn make_and_split_username() {
        // upstream TestMakeSplitUsername
        let u = make_username("ns", "name");
        assert_eq!(split_username(&u), Some(("ns", "name")));
        for invalid in [
            "test",
            "system:serviceaccount",
            "system:serviceaccount:",
            "system:serviceaccount:ns",
            "system:serviceaccount:ns:name:extra",
            "system:serviceaccount:NS:name",
        ] {
            assert_eq!(split_username(invalid), None, "{invalid}");
        }
    }

    #[test]
    fn bound_claims_round_trip() {
        let mut c = BoundClaims::new(
            "https://kubernetes.default.svc.cluster.local",
            "ns",
            Ref::new("default", "u1"),
            vec!["a".into(), "b".into()],
            1000,
            3600,
        );
        c.pod = Some(Ref::new("p", "u2"));
        c.node = Some(Ref::new("n", "u3"));
        c.warn_after = Some(1100);
        let v = c.to_json();
        assert_eq!(v["sub"], "system:serviceaccount:ns:default");
        assert_eq!(v["exp"], 4600);
        assert_eq!(v["kubernetes.io"]["pod"]["uid"], "u2");
        assert_eq!(c.id.len(), 36);
        let back = BoundClaims::from_claims(v.as_object().unwrap());
        assert_eq!(back, c);
    }

    #[test]
    fn audiences_may_be_one_string() {
        assert_eq!(audiences(Some(&json!("x"))), vec!["x".to_string()]);
        assert_eq!(audiences(Some(&json!(["x", "y"]))).len(), 2);
        assert!(audiences(Some(&json!(3))).is_empty());
    }

    #[test]
    fn legacy_claims_are_upstreams() {
        let c = LegacyClaims {
            namespace: "test".into(),
            service_account_name: "my-service-account".into(),
            service_account_uid: "12345".into(),
            secret_name: "my-secret".into(),
        };
        let v = c.to_json();
        assert_eq!(v["iss"], "kubernetes/serviceaccount");
        assert_eq!(v["sub"], "system:serviceaccount:test:my-service-account");
        assert_eq!(v["kubernetes.io/serviceaccount/secret.name"], "my-secret");
        assert_eq!(LegacyClaims::from_claims(v.as_object().unwrap()), c);
    }
}
