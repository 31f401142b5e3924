//! Upstream's tables for the certificate controllers: the signers' request checks and
//! durations (`pkg/controller/certificates/signer/signer_test.go`, `TestHandle`,
//! `TestDuration`), the approver's recognizers (`approver/sarapprove_test.go`), and the
//! cleaner's deadlines (`cleaner/cleaner_test.go`, `TestCleanerWithApprovedExpiredCSR`).

use std::time::Duration;

use chrono::{DateTime, Utc};
use k8s_openapi::api::certificates::v1::{
    CertificateSigningRequest, CertificateSigningRequestCondition, CertificateSigningRequestSpec,
    CertificateSigningRequestStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::ByteString;

use super::approver;
use super::cleaner::{next_check, should_delete};
use super::signer::{decide, duration, validity, CertificateAuthority, Outcome};
use super::*;

struct Req<'a> {
    cn: &'a str,
    orgs: &'a [&'a str],
    dns: &'a [&'a str],
    emails: &'a [&'a str],
}

const NODE: Req<'static> = Req {
    cn: "system:node:n1",
    orgs: &["system:nodes"],
    dns: &[],
    emails: &[],
};

fn request_pem(r: &Req<'_>) -> (String, rcgen::KeyPair) {
    let key = rcgen::KeyPair::generate().expect("key");
    let mut sans: Vec<rcgen::SanType> = r
        .dns
        .iter()
        .map(|d| rcgen::SanType::DnsName((*d).try_into().expect("dns name")))
        .collect();
    sans.extend(
        r.emails
            .iter()
            .map(|e| rcgen::SanType::Rfc822Name((*e).try_into().expect("email"))),
    );
    let mut params = rcgen::CertificateParams::default();
    params.subject_alt_names = sans;
    params.distinguished_name = rcgen::DistinguishedName::new();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, r.cn);
    for o in r.orgs {
        params
            .distinguished_name
            .push(rcgen::DnType::OrganizationName, *o);
    }
    let pem = params
        .serialize_request(&key)
        .expect("csr")
        .pem()
        .expect("pem");
    (pem, key)
}

fn csr(
    signer: &str,
    r: &Req<'_>,
    usages: &[&str],
    conditions: &[&str],
) -> CertificateSigningRequest {
    CertificateSigningRequest {
        metadata: ObjectMeta {
            name: Some("csr1".into()),
            ..Default::default()
        },
        spec: CertificateSigningRequestSpec {
            request: ByteString(request_pem(r).0.into_bytes()),
            signer_name: signer.into(),
            usages: Some(usages.iter().map(|u| u.to_string()).collect()),
            username: Some("system:node:n1".into()),
            ..Default::default()
        },
        status: Some(CertificateSigningRequestStatus {
            conditions: Some(
                conditions
                    .iter()
                    .map(|t| CertificateSigningRequestCondition {
                        type_: t.to_string(),
                        status: "True".into(),
                        ..Default::default()
                    })
                    .collect(),
            ),
            ..Default::default()
        }),
    }
}

const RUNNING: &[&str] = &[
    KUBE_APISERVER_CLIENT,
    KUBE_APISERVER_CLIENT_KUBELET,
    KUBELET_SERVING,
    LEGACY_UNKNOWN,
];

#[test]
fn signers_check_requests_as_upstream() {
    let client = ["client auth"];
    let kubelet_client = ["digital signature", "key encipherment", "client auth"];
    let serving = ["digital signature", "key encipherment", "server auth"];
    let serving_node = Req {
        dns: &["n1.example.com"],
        ..NODE
    };
    let fail = |m: &str| Outcome::Fail(m.to_string());
    let cases: Vec<(&str, CertificateSigningRequest, Outcome)> = vec![
        (
            "kube-apiserver-client signs client auth",
            csr(
                KUBE_APISERVER_CLIENT,
                &Req {
                    cn: "alice",
                    orgs: &[],
                    ..NODE
                },
                &client,
                &["Approved"],
            ),
            Outcome::Sign,
        ),
        (
            "kube-apiserver-client with optional usages",
            csr(
                KUBE_APISERVER_CLIENT,
                &NODE,
                &["client auth", "digital signature", "key encipherment"],
                &["Approved"],
            ),
            Outcome::Sign,
        ),
        (
            "kube-apiserver-client refuses an unexpected usage",
            csr(
                KUBE_APISERVER_CLIENT,
                &NODE,
                &["client auth", "server auth"],
                &["Approved"],
            ),
            fail("invalid usage for client certificate: server auth"),
        ),
        (
            "kube-apiserver-client needs client auth",
            csr(
                KUBE_APISERVER_CLIENT,
                &NODE,
                &["digital signature"],
                &["Approved"],
            ),
            fail("missing required usage for client certificate: client auth"),
        ),
        (
            "kubelet client",
            csr(
                KUBE_APISERVER_CLIENT_KUBELET,
                &NODE,
                &kubelet_client,
                &["Approved"],
            ),
            Outcome::Sign,
        ),
        (
            "kubelet client without key encipherment (not RSA)",
            csr(
                KUBE_APISERVER_CLIENT_KUBELET,
                &NODE,
                &["client auth", "digital signature"],
                &["Approved"],
            ),
            Outcome::Sign,
        ),
        (
            "kubelet client of the wrong organization",
            csr(
                KUBE_APISERVER_CLIENT_KUBELET,
                &Req {
                    orgs: &["not-nodes"],
                    ..NODE
                },
                &kubelet_client,
                &["Approved"],
            ),
            fail("subject organization is not system:nodes"),
        ),
        (
            "kubelet client with a DNS name",
            csr(
                KUBE_APISERVER_CLIENT_KUBELET,
                &serving_node,
                &kubelet_client,
                &["Approved"],
            ),
            fail("DNS subjectAltNames are not allowed"),
        ),
        (
            "kubelet client whose name is not a node's",
            csr(
                KUBE_APISERVER_CLIENT_KUBELET,
                &Req { cn: "bob", ..NODE },
                &kubelet_client,
                &["Approved"],
            ),
            fail("subject common name does not begin with system:node:"),
        ),
        (
            "kubelet client with the wrong usages",
            csr(
                KUBE_APISERVER_CLIENT_KUBELET,
                &NODE,
                &["client auth"],
                &["Approved"],
            ),
            fail("usages did not match [client auth digital signature key encipherment]"),
        ),
        (
            "kubelet serving",
            csr(KUBELET_SERVING, &serving_node, &serving, &["Approved"]),
            Outcome::Sign,
        ),
        (
            "kubelet serving without names",
            csr(KUBELET_SERVING, &NODE, &serving, &["Approved"]),
            fail("DNS or IP subjectAltName is required"),
        ),
        (
            "kubelet serving with an email",
            csr(
                KUBELET_SERVING,
                &Req {
                    emails: &["a@example.com"],
                    ..serving_node
                },
                &serving,
                &["Approved"],
            ),
            fail("Email subjectAltNames are not allowed"),
        ),
        (
            "kubelet serving with client usages",
            csr(
                KUBELET_SERVING,
                &serving_node,
                &kubelet_client,
                &["Approved"],
            ),
            fail("usages did not match [digital signature key encipherment server auth]"),
        ),
        (
            "legacy-unknown signs anything",
            csr(
                LEGACY_UNKNOWN,
                &Req {
                    cn: "x",
                    orgs: &[],
                    ..NODE
                },
                &["server auth"],
                &["Approved"],
            ),
            Outcome::Sign,
        ),
        (
            "not approved",
            csr(KUBE_APISERVER_CLIENT, &NODE, &client, &[]),
            Outcome::Nothing,
        ),
        (
            "denied",
            csr(
                KUBE_APISERVER_CLIENT,
                &NODE,
                &client,
                &["Approved", "Denied"],
            ),
            Outcome::Nothing,
        ),
        (
            "failed",
            csr(
                KUBE_APISERVER_CLIENT,
                &NODE,
                &client,
                &["Approved", "Failed"],
            ),
            Outcome::Nothing,
        ),
        (
            "another signer",
            csr("example.com/signer", &NODE, &client, &["Approved"]),
            Outcome::Nothing,
        ),
    ];
    for (name, c, want) in cases {
        assert_eq!(decide(&c, RUNNING).expect(name), want, "{name}");
    }
    // a signer this controller does not run is left alone
    let c = csr(KUBELET_SERVING, &serving_node, &serving, &["Approved"]);
    assert_eq!(
        decide(&c, &[KUBE_APISERVER_CLIENT]).unwrap(),
        Outcome::Nothing
    );
}

#[test]
fn durations_as_upstream() {
    let h = Duration::from_secs(3600);
    let cases: &[(Duration, Option<i32>, Duration)] = &[
        (h, None, h),
        (h, Some(7200), h),
        (3 * h, Some(7200), 2 * h),
        (3 * h, Some(300), Duration::from_secs(600)),
        (3 * h, Some(0), Duration::from_secs(600)),
        (3 * h, Some(-1), Duration::from_secs(600)),
    ];
    for (ttl, secs, want) in cases {
        assert_eq!(duration(*ttl, *secs), *want, "{ttl:?} {secs:?}");
    }
    // backdating: the start always, the end only for long certificates
    assert_eq!(validity(Duration::from_secs(3600), 10_000), (9_700, 13_600));
    assert_eq!(
        validity(Duration::from_secs(10 * 3600), 10_000),
        (9_700, 10_000 + 36_000 - 300)
    );
}

fn ca(not_after: ::time::OffsetDateTime) -> CertificateAuthority {
    let key = rcgen::KeyPair::generate().expect("key");
    let mut params = rcgen::CertificateParams::default();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params.not_after = not_after;
    params.distinguished_name = rcgen::DistinguishedName::new();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "test-ca");
    let cert = params.self_signed(&key).expect("ca");
    CertificateAuthority::from_pem(&cert.pem(), &key.serialize_pem()).expect("ca loads")
}

#[test]
fn signed_certificates_carry_the_request_and_the_policy() {
    use x509_parser::prelude::*;
    let far = ::time::OffsetDateTime::now_utc() + ::time::Duration::days(3650);
    let authority = ca(far);
    let (pem, _) = request_pem(&Req {
        cn: "alice",
        orgs: &["devs"],
        dns: &["a.example.com"],
        emails: &[],
    });
    let req = apimachinery::x509::parse_csr(pem.as_bytes()).expect("request");
    let now = chrono::Utc::now().timestamp();
    let out = authority
        .sign(
            &req.der,
            &["client auth".to_string(), "digital signature".to_string()],
            Duration::from_secs(3600),
            now,
        )
        .expect("signed");
    let block = apimachinery::pem::decode(out.as_bytes()).expect("pem").0;
    assert_eq!(block.kind, "CERTIFICATE");
    let (_, cert) = parse_x509_certificate(&block.bytes).expect("certificate");
    let cn: Vec<&str> = cert
        .subject()
        .iter_common_name()
        .filter_map(|a| a.as_str().ok())
        .collect();
    assert_eq!(cn, ["alice"]);
    let orgs: Vec<&str> = cert
        .subject()
        .iter_organization()
        .filter_map(|a| a.as_str().ok())
        .collect();
    assert_eq!(orgs, ["devs"]);
    assert_eq!(cert.validity().not_before.timestamp(), now - 300);
    assert_eq!(cert.validity().not_after.timestamp(), now + 3600);
    let eku = cert
        .extended_key_usage()
        .expect("eku")
        .expect("present")
        .value;
    assert!(eku.client_auth && !eku.server_auth);
    assert!(cert
        .key_usage()
        .expect("ku")
        .expect("present")
        .value
        .digital_signature());
    assert!(!cert.is_ca());
    let san = cert
        .subject_alternative_name()
        .expect("san")
        .expect("present")
        .value;
    assert_eq!(san.general_names.len(), 1);
    // unknown usages are refused with upstream's message
    let err = authority
        .sign(
            &req.der,
            &["bogus".to_string()],
            Duration::from_secs(3600),
            now,
        )
        .unwrap_err();
    assert_eq!(err, "unrecognized usage values: [\"bogus\"]");
    // a certificate never outlives its CA
    let soon = ::time::OffsetDateTime::now_utc() + ::time::Duration::hours(2);
    let short = ca(soon);
    let out = short
        .sign(
            &req.der,
            &["client auth".to_string()],
            Duration::from_secs(24 * 3600),
            now,
        )
        .expect("signed");
    let block = apimachinery::pem::decode(out.as_bytes()).expect("pem").0;
    let (_, cert) = parse_x509_certificate(&block.bytes).expect("certificate");
    assert_eq!(cert.validity().not_after.timestamp(), soon.unix_timestamp());
}

#[test]
fn the_approver_recognizes_kubelet_client_requests() {
    let kubelet_client = ["digital signature", "key encipherment", "client auth"];
    let subresources = |c: &CertificateSigningRequest| -> Vec<&'static str> {
        approver::applicable(c)
            .expect("parses")
            .iter()
            .map(|r| r.subresource)
            .collect()
    };
    // a node's own request: selfnodeclient first, then nodeclient
    let own = csr(KUBE_APISERVER_CLIENT_KUBELET, &NODE, &kubelet_client, &[]);
    assert_eq!(subresources(&own), ["selfnodeclient", "nodeclient"]);
    // requested by someone else (a bootstrap token): nodeclient only
    let mut other = own.clone();
    other.spec.username = Some("system:bootstrap:abcdef".into());
    assert_eq!(subresources(&other), ["nodeclient"]);
    // not a kubelet client request
    assert!(subresources(&csr(KUBE_APISERVER_CLIENT, &NODE, &["client auth"], &[])).is_empty());
    assert!(subresources(&csr(
        KUBE_APISERVER_CLIENT_KUBELET,
        &NODE,
        &["client auth"],
        &[]
    ))
    .is_empty());
    // decided already
    for done in [&["Approved"][..], &["Denied"][..]] {
        assert!(subresources(&csr(
            KUBE_APISERVER_CLIENT_KUBELET,
            &NODE,
            &kubelet_client,
            done
        ))
        .is_empty());
    }
    let review = approver::review(&other, "nodeclient");
    let attrs = review
        .spec
        .resource_attributes
        .expect("resource attributes");
    assert_eq!(review.spec.user.as_deref(), Some("system:bootstrap:abcdef"));
    assert_eq!(attrs.verb.as_deref(), Some("create"));
    assert_eq!(attrs.subresource.as_deref(), Some("nodeclient"));
    assert_eq!(
        attrs.resource.as_deref(),
        Some("certificatesigningrequests")
    );
    let approved = approver::approved(&own, approver::RECOGNIZERS[0].success_message);
    let c = &conditions(&approved)[0];
    assert_eq!((c.type_.as_str(), c.status.as_str()), ("Approved", "True"));
    assert_eq!(c.reason.as_deref(), Some("AutoApproved"));
    assert_eq!(
        c.message.as_deref(),
        Some("Auto approving self kubelet client certificate after SubjectAccessReview.")
    );
}

fn cert_valid_until(not_after: DateTime<Utc>) -> Vec<u8> {
    let key = rcgen::KeyPair::generate().expect("key");
    let mut params = rcgen::CertificateParams::new(vec!["x".to_string()]).expect("params");
    params.not_before =
        ::time::OffsetDateTime::from_unix_timestamp(not_after.timestamp() - 3600 * 48)
            .expect("time");
    params.not_after =
        ::time::OffsetDateTime::from_unix_timestamp(not_after.timestamp()).expect("time");
    params.self_signed(&key).expect("cert").pem().into_bytes()
}

fn ts(t: DateTime<Utc>) -> k8s_openapi::jiff::Timestamp {
    k8s_openapi::jiff::Timestamp::from_second(t.timestamp()).expect("timestamp")
}

#[test]
fn the_cleaner_deletes_as_upstream() {
    let now = Utc::now();
    let ago = |mins: i64| now - chrono::Duration::minutes(mins);
    let valid = cert_valid_until(now + chrono::Duration::hours(24));
    let expired = cert_valid_until(now - chrono::Duration::hours(1));
    let mk = |created: DateTime<Utc>, cert: Option<&Vec<u8>>, conds: &[(&str, DateTime<Utc>)]| {
        let mut c = csr(KUBE_APISERVER_CLIENT, &NODE, &["client auth"], &[]);
        c.metadata.creation_timestamp = Some(Time(ts(created)));
        let status = c.status.get_or_insert_with(Default::default);
        status.certificate = cert.map(|b| ByteString(b.clone()));
        status.conditions = Some(
            conds
                .iter()
                .map(|(t, at)| CertificateSigningRequestCondition {
                    type_: t.to_string(),
                    status: "True".into(),
                    last_update_time: Some(Time(ts(*at))),
                    ..Default::default()
                })
                .collect(),
        );
        c
    };
    let cases: Vec<(&str, CertificateSigningRequest, bool)> = vec![
        (
            "no delete approved not passed deadline",
            mk(ago(5), Some(&valid), &[("Approved", ago(5))]),
            false,
        ),
        (
            "no delete approved passed deadline not issued",
            mk(ago(5), None, &[("Approved", ago(120))]),
            false,
        ),
        (
            "delete approved passed deadline",
            mk(ago(5), Some(&valid), &[("Approved", ago(120))]),
            true,
        ),
        (
            "no delete denied not passed deadline",
            mk(ago(5), None, &[("Denied", ago(5))]),
            false,
        ),
        (
            "delete denied passed deadline",
            mk(ago(5), None, &[("Denied", ago(120))]),
            true,
        ),
        (
            "no delete failed not passed deadline",
            mk(ago(5), None, &[("Failed", ago(5))]),
            false,
        ),
        (
            "delete failed passed deadline",
            mk(ago(5), None, &[("Failed", ago(120))]),
            true,
        ),
        (
            "no delete pending not passed deadline",
            mk(ago(5 * 60), None, &[]),
            false,
        ),
        (
            "delete pending passed deadline",
            mk(ago(25 * 60), None, &[]),
            true,
        ),
        (
            "no delete approved not passed deadline unexpired",
            mk(ago(5), Some(&valid), &[("Approved", ago(5))]),
            false,
        ),
        (
            "delete approved not passed deadline expired",
            mk(ago(5), Some(&expired), &[("Approved", ago(5))]),
            true,
        ),
    ];
    for (name, c, want) in cases {
        assert_eq!(should_delete(&c, now), want, "{name}");
        if !want {
            // the next check comes when the earliest deadline has passed
            match next_check(&c, now) {
                // approved long ago but never issued: nothing will make it deletable
                None => assert!(name.contains("not issued"), "{name}"),
                Some(next) => {
                    let then = now + chrono::Duration::from_std(next).expect("delay");
                    assert!(should_delete(&c, then), "{name}");
                }
            }
        }
    }
}
