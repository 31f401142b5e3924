//! Upstream's tables for bootstrap tokens: the detached JWS
//! (`cluster-bootstrap/token/jws/jws_test.go`), Secret names and expiry
//! (`cluster-bootstrap/token/util/secret/helpers_test.go`), and the signer's ConfigMap
//! updates (`pkg/controller/bootstrap/bootstrapsigner_test.go`: simple sign, no sign
//! needed, update signature, remove signature, and `TestTokenCleaner`'s expiry cases).

use std::collections::BTreeMap;

use chrono::Utc;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::ByteString;

use super::signer::{sign_data, token_for_signing};
use super::*;

#[test]
fn detached_signatures_match_upstream() {
    let content = "Hello from the other side. I must have called a thousand times.";
    assert_eq!(
        compute_detached_signature(content, "joshua", "my voice is my passcode"),
        "eyJhbGciOiJIUzI1NiIsImtpZCI6Impvc2h1YSJ9..VShe2taLd-YTrmWuRkcL_8QTNDHYxQIEBsAYYiIj1_8"
    );
}

#[test]
fn secret_names() {
    for (name, want) in [
        ("bootstrap-token-abc123", Some("abc123")),
        ("bootstrap-token-abcd", None),
        ("bootstrap-token-abcdefg", None),
        ("bootstrap-token-abc12!", None),
        ("bootstrap-token-ABC123", None),
        ("token-abc123", None),
        ("", None),
    ] {
        assert_eq!(parse_name(name), want, "{name}");
    }
}

fn secret(name: &str, data: &[(&str, &str)]) -> Secret {
    Secret {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("kube-system".into()),
            ..Default::default()
        },
        type_: Some(SECRET_TYPE_BOOTSTRAP_TOKEN.into()),
        data: Some(
            data.iter()
                .map(|(k, v)| (k.to_string(), ByteString(v.as_bytes().to_vec())))
                .collect(),
        ),
        ..Default::default()
    }
}

#[test]
fn expiry() {
    let now = Utc::now();
    let later = (now + chrono::Duration::hours(1)).to_rfc3339();
    let earlier = (now - chrono::Duration::hours(1)).to_rfc3339();
    for (exp, expired) in [
        (later.as_str(), false),
        (earlier.as_str(), true),
        ("invalid", true),
        ("", false),
    ] {
        let s = secret("bootstrap-token-abc123", &[(EXPIRATION_KEY, exp)]);
        assert_eq!(get_expiration(&s, now).1, expired, "{exp:?}");
    }
    let s = secret(
        "bootstrap-token-abc123",
        &[(EXPIRATION_KEY, later.as_str())],
    );
    let (left, _) = get_expiration(&s, now);
    assert!(left.as_secs() > 3590 && left.as_secs() <= 3600, "{left:?}");
}

#[test]
fn tokens_for_signing() {
    let now = Utc::now();
    let good = [
        (TOKEN_ID_KEY, "abc123"),
        (TOKEN_SECRET_KEY, "abcdef0123456789"),
        (USAGE_SIGNING_KEY, "true"),
    ];
    assert_eq!(
        token_for_signing(&secret("bootstrap-token-abc123", &good), now),
        Some(("abc123".into(), "abcdef0123456789".into()))
    );
    // the id must match the name; a secret and the signing usage are needed
    assert_eq!(
        token_for_signing(&secret("bootstrap-token-xyz789", &good), now),
        None
    );
    assert_eq!(
        token_for_signing(&secret("bootstrap-token-abc123", &good[..2]), now),
        None
    );
    assert_eq!(
        token_for_signing(&secret("bootstrap-token-abc123", &[good[0], good[2]]), now),
        None
    );
    let expired = [
        good[0],
        good[1],
        good[2],
        (EXPIRATION_KEY, "2000-01-01T00:00:00Z"),
    ];
    assert_eq!(
        token_for_signing(&secret("bootstrap-token-abc123", &expired), now),
        None
    );
}

fn data(entries: &[(&str, &str)]) -> BTreeMap<String, String> {
    entries
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn the_signer_updates_signatures_as_upstream() {
    let tokens = data(&[("abc123", "abc123abc123abc1")]);
    let sig = compute_detached_signature("a kubeconfig", "abc123", "abc123abc123abc1");
    // simple sign
    let signed = sign_data(&data(&[(KUBECONFIG_KEY, "a kubeconfig")]), &tokens).expect("signed");
    assert_eq!(signed.get("jws-kubeconfig-abc123"), Some(&sig));
    // no sign needed
    assert_eq!(sign_data(&signed, &tokens), None);
    // update signature
    let stale = data(&[
        (KUBECONFIG_KEY, "a kubeconfig"),
        ("jws-kubeconfig-abc123", "old"),
    ]);
    assert_eq!(sign_data(&stale, &tokens), Some(signed.clone()));
    // remove signature
    assert_eq!(
        sign_data(&signed, &BTreeMap::new()),
        Some(data(&[(KUBECONFIG_KEY, "a kubeconfig")]))
    );
    // no kubeconfig: nothing to sign
    assert_eq!(sign_data(&data(&[("other", "x")]), &tokens), None);
}
