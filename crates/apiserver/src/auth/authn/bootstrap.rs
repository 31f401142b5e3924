//! Bootstrap tokens (`--enable-bootstrap-token-auth`; upstream
//! `plugin/pkg/auth/authenticator/token/bootstrap`): a token `<id>.<secret>` is valid
//! while the Secret `bootstrap-token-<id>` in `kube-system` (type
//! `bootstrap.kubernetes.io/token`) holds that id and secret, is marked for
//! authentication and has not expired. The user is `system:bootstrap:<id>`, in
//! `system:bootstrappers` and the Secret's `auth-extra-groups`.

use serde_json::Value;

use crate::machinery::user::UserInfo;

/// The namespace of bootstrap token Secrets.
pub const NAMESPACE: &str = "kube-system";
/// The prefix of their names.
pub const SECRET_PREFIX: &str = "bootstrap-token-";
/// Their type.
pub const SECRET_TYPE: &str = "bootstrap.kubernetes.io/token";
/// The prefix of bootstrap users.
pub const USER_PREFIX: &str = "system:bootstrap:";
/// The group of every bootstrap user.
pub const DEFAULT_GROUP: &str = "system:bootstrappers";

/// The id and secret of a bootstrap token (`[a-z0-9]{6}.[a-z0-9]{16}`).
pub fn parse_token(token: &str) -> Option<(&str, &str)> {
    let (id, secret) = token.split_once('.')?;
    let ok = |s: &str, n: usize| {
        s.len() == n
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    };
    (ok(id, 6) && ok(secret, 16)).then_some((id, secret))
}

/// A Secret's `data[key]`, decoded.
fn data(secret: &Value, key: &str) -> String {
    use base64::Engine;
    secret
        .pointer(&format!("/data/{key}"))
        .and_then(Value::as_str)
        .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
        .and_then(|b| String::from_utf8(b).ok())
        .unwrap_or_default()
}

/// upstream `ValidateBootstrapGroupName`: `system:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]`.
fn valid_group(g: &str) -> bool {
    let Some(rest) = g.strip_prefix("system:bootstrappers:") else {
        return false;
    };
    let Some(last) = rest.bytes().last() else {
        return false;
    };
    rest.len() <= 256
        && (last.is_ascii_lowercase() || last.is_ascii_digit())
        && rest
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b':' || b == b'-')
}

/// The user `token` authenticates as, given its Secret (`None`: the token is not a
/// valid bootstrap token; upstream logs why and answers "not authenticated").
/// `now`: Unix seconds.
pub fn authenticate(token: &str, secret: Option<&Value>, now: i64) -> Option<UserInfo> {
    use subtle_eq as eq;
    let (id, token_secret) = parse_token(token)?;
    let secret = secret?;
    let name = format!("{SECRET_PREFIX}{id}");
    let why = |m: &str| {
        tracing::debug!(secret = %name, "bootstrap token secret {m}");
        None
    };
    if secret.pointer("/metadata/deletionTimestamp").is_some() {
        return why("is deleted and awaiting removal");
    }
    if secret.get("type").and_then(Value::as_str) != Some(SECRET_TYPE)
        || secret.get("data").is_none()
    {
        return why("has invalid type");
    }
    if !eq(
        data(secret, "token-secret").as_bytes(),
        token_secret.as_bytes(),
    ) {
        return why("has invalid value for key token-secret");
    }
    if data(secret, "token-id") != id {
        return why("has invalid value for key token-id");
    }
    let expiration = data(secret, "expiration");
    if !expiration.is_empty() {
        match chrono::DateTime::parse_from_rfc3339(&expiration) {
            Ok(t) if t.timestamp() > now => {}
            _ => return why("has expired"),
        }
    }
    if data(secret, "usage-bootstrap-authentication") != "true" {
        return why("not marked usage-bootstrap-authentication=true");
    }
    let mut groups = vec![DEFAULT_GROUP.to_string()];
    let extra = data(secret, "auth-extra-groups");
    if !extra.is_empty() {
        for g in extra.split(',') {
            if !valid_group(g) {
                return why("has invalid value for key auth-extra-groups");
            }
            groups.push(g.to_string());
        }
    }
    groups.sort();
    groups.dedup();
    Some(UserInfo {
        name: format!("{USER_PREFIX}{id}"),
        groups,
        ..UserInfo::default()
    })
}

/// Constant-time equality of two byte strings (upstream compares token secrets so).
fn subtle_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;
    use serde_json::json;

    fn b64(s: &str) -> String {
        base64::engine::general_purpose::STANDARD.encode(s)
    }

    fn secret(extra: &[(&str, &str)]) -> Value {
        let mut data = serde_json::Map::new();
        for (k, v) in [
            ("token-id", "foobar"),
            ("token-secret", "circumnavigation"),
            ("usage-bootstrap-authentication", "true"),
        ]
        .iter()
        .chain(extra)
        {
            data.insert(k.to_string(), json!(b64(v)));
        }
        json!({"metadata": {"name": "bootstrap-token-foobar", "namespace": "kube-system"},
               "type": SECRET_TYPE, "data": data})
    }

    const TOKEN: &str = "foobar.circumnavigation";

    /// upstream bootstrap_test.go TestTokenAuthenticator
    #[test]
    fn upstreams_cases() {
        let ok = authenticate(TOKEN, Some(&secret(&[])), 0).unwrap();
        assert_eq!(ok.name, "system:bootstrap:foobar");
        assert_eq!(ok.groups, ["system:bootstrappers"]);
        let groups = authenticate(
            TOKEN,
            Some(&secret(&[(
                "auth-extra-groups",
                "system:bootstrappers:foo,system:bootstrappers:bar,system:bootstrappers:foo",
            )])),
            0,
        )
        .unwrap();
        assert_eq!(
            groups.groups,
            [
                "system:bootstrappers",
                "system:bootstrappers:bar",
                "system:bootstrappers:foo"
            ]
        );
        // invalid extra group
        assert!(authenticate(TOKEN, Some(&secret(&[("auth-extra-groups", "foo")])), 0).is_none());
        // wrong secret, wrong token format, no secret
        assert!(authenticate("foobar.tryagainwrongtoken", Some(&secret(&[])), 0).is_none());
        assert!(authenticate("foobar.circumnavigatio", Some(&secret(&[])), 0).is_none());
        assert!(authenticate(TOKEN, None, 0).is_none());
        // not for authentication
        let mut s = secret(&[]);
        s["data"]["usage-bootstrap-authentication"] = json!(b64("false"));
        assert!(authenticate(TOKEN, Some(&s), 0).is_none());
        // wrong type
        let mut s = secret(&[]);
        s["type"] = json!("Opaque");
        assert!(authenticate(TOKEN, Some(&s), 0).is_none());
        // expired / not expired / unparsable expiration
        let s = secret(&[("expiration", "2009-11-10T23:00:00Z")]);
        assert!(authenticate(TOKEN, Some(&s), 1_700_000_000).is_none());
        assert!(authenticate(TOKEN, Some(&s), 1_000_000_000).is_some());
        let s = secret(&[("expiration", "tomorrow")]);
        assert!(authenticate(TOKEN, Some(&s), 0).is_none());
        // being deleted
        let mut s = secret(&[]);
        s["metadata"]["deletionTimestamp"] = json!("2009-11-10T23:00:00Z");
        assert!(authenticate(TOKEN, Some(&s), 0).is_none());
        // id mismatch
        let mut s = secret(&[]);
        s["data"]["token-id"] = json!(b64("barfoo"));
        assert!(authenticate(TOKEN, Some(&s), 0).is_none());
    }
}
