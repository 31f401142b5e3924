//! CSR strategy and validation, with cases of upstream's
//! `pkg/apis/certificates/validation/validation_test.go` and
//! `pkg/registry/certificates/certificates/strategy_test.go`.

use std::sync::Arc;

use base64::Engine;
use serde_json::{json, Value};

use crate::machinery::user::{scope, UserInfo};
use crate::registry::catalog::{Catalog, ResourceDef, Subresource};

fn def() -> &'static ResourceDef {
    Catalog::builtin()
        .by_kind("certificates.k8s.io", "v1", "CertificateSigningRequest")
        .expect("CSRs are served")
}

fn b64(b: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(b)
}

fn request_pem() -> String {
    request_pem_in(&[])
}

fn request_pem_in(orgs: &[&str]) -> String {
    let key = rcgen::KeyPair::generate().expect("key");
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
    params.distinguished_name = rcgen::DistinguishedName::new();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "alice");
    for o in orgs {
        params
            .distinguished_name
            .push(rcgen::DnType::OrganizationName, *o);
    }
    params
        .serialize_request(&key)
        .expect("csr")
        .pem()
        .expect("pem")
}

fn csr() -> Value {
    json!({
        "apiVersion": "certificates.k8s.io/v1",
        "kind": "CertificateSigningRequest",
        "metadata": {"name": "csr1"},
        "spec": {
            "request": b64(request_pem().as_bytes()),
            "signerName": "example.com/signer",
            "usages": ["client auth"],
        },
    })
}

fn messages(obj: &Value, old: Option<&Value>) -> Vec<String> {
    def()
        .strategy
        .validate(def(), obj, old)
        .into_iter()
        .map(|c| format!("{}: {}", c.field, c.message))
        .collect()
}

fn sub_messages(sub: Subresource, obj: &Value, old: &Value) -> Vec<String> {
    def()
        .strategy
        .validate_subresource_update(def(), sub, obj, old)
        .into_iter()
        .map(|c| format!("{}: {}", c.field, c.message))
        .collect()
}

fn with(mut v: Value, pointer: &str, x: Value) -> Value {
    let (parent, leaf) = pointer.rsplit_once('/').expect("pointer");
    if let Some(p) = v.pointer_mut(parent).and_then(Value::as_object_mut) {
        p.insert(leaf.to_string(), x);
    }
    v
}

#[test]
fn a_valid_request_passes() {
    assert_eq!(messages(&csr(), None), Vec::<String>::new());
}

#[test]
fn create_cases() {
    let cases: Vec<(&str, Value, Vec<&str>)> = vec![
        (
            "no signerName",
            with(csr(), "/spec/signerName", json!("")),
            vec!["spec.signerName: Required value"],
        ),
        (
            "signerName without a path",
            with(csr(), "/spec/signerName", json!("example.com")),
            vec!["spec.signerName: Invalid value: \"example.com\": must be a fully qualified domain and path of the form 'example.com/signer-name'"],
        ),
        (
            "signerName with two slashes",
            with(csr(), "/spec/signerName", json!("example.com/a/b")),
            vec!["spec.signerName: Invalid value: \"example.com/a/b\": must be a fully qualified domain and path of the form 'example.com/signer-name'"],
        ),
        (
            "signerName with a one-segment domain",
            with(csr(), "/spec/signerName", json!("example/signer")),
            vec!["spec.signerName: Invalid value: \"example\": should be a domain with at least two segments separated by dots"],
        ),
        (
            "signerName with a bad domain label",
            with(csr(), "/spec/signerName", json!("Example.com/signer")),
            vec!["spec.signerName: Invalid value: \"Example.com\": validating label \"Example\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"],
        ),
        (
            "legacy-unknown is refused on create",
            with(csr(), "/spec/signerName", json!("kubernetes.io/legacy-unknown")),
            vec!["spec.signerName: Invalid value: \"kubernetes.io/legacy-unknown\": the legacy signerName is not allowed via this API version"],
        ),
        (
            "no usages",
            with(csr(), "/spec/usages", json!([])),
            vec!["spec.usages: Required value"],
        ),
        (
            "unknown usage",
            with(csr(), "/spec/usages", json!(["client auth", "bogus"])),
            vec!["spec.usages[1]: Unsupported value: \"bogus\": supported values: \"any\", \"cert sign\", \"client auth\", \"code signing\", \"content commitment\", \"crl sign\", \"data encipherment\", \"decipher only\", \"digital signature\", \"email protection\", \"encipher only\", \"ipsec end system\", \"ipsec tunnel\", \"ipsec user\", \"key agreement\", \"key encipherment\", \"microsoft sgc\", \"netscape sgc\", \"ocsp signing\", \"s/mime\", \"server auth\", \"signing\", \"timestamping\""],
        ),
        (
            "duplicate usage",
            with(csr(), "/spec/usages", json!(["client auth", "client auth"])),
            vec!["spec.usages[1]: Duplicate value: \"client auth\""],
        ),
        (
            "expirationSeconds below 600",
            with(csr(), "/spec/expirationSeconds", json!(599)),
            vec!["spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 600 seconds (10 minutes)"],
        ),
        ("expirationSeconds of 600", with(csr(), "/spec/expirationSeconds", json!(600)), vec![]),
        (
            "not a certificate request",
            with(csr(), "/spec/request", json!(b64(b"-----BEGIN CERTIFICATE-----\nYWJj\n-----END CERTIFICATE-----\n"))),
            vec!["PEM block type must be CERTIFICATE REQUEST"],
        ),
    ];
    for (name, obj, want) in cases {
        let got = messages(&obj, None);
        assert_eq!(got.len(), want.len(), "{name}: {got:?}");
        for (g, w) in got.iter().zip(&want) {
            assert!(g == w || g.ends_with(w), "{name}: {g} vs {w}");
        }
    }
}

#[test]
fn a_request_whose_signature_does_not_verify_is_invalid() {
    let pem = request_pem();
    let block = apimachinery::pem::decode(pem.as_bytes()).expect("block").0;
    let mut der = block.bytes;
    let last = der.len() - 1;
    der[last] ^= 0xff; // the signature's last byte
    let tampered = apimachinery::pem::encode("CERTIFICATE REQUEST", &der);
    let got = messages(
        &with(csr(), "/spec/request", json!(b64(tampered.as_bytes()))),
        None,
    );
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(
        got[0].starts_with("spec.request: Invalid value: []byte{0x2d, 0x2d"),
        "{}",
        got[0]
    );
}

fn approved() -> Value {
    json!({"type": "Approved", "status": "True", "reason": "r", "lastUpdateTime": "2026-01-01T00:00:00Z", "lastTransitionTime": "2026-01-01T00:00:00Z"})
}

#[test]
fn approval_conditions_change_only_through_approval() {
    let old = csr();
    let new = with(csr(), "/status", json!({"conditions": [approved()]}));
    assert_eq!(
        messages(&new, Some(&old)),
        vec!["status.conditions: Forbidden: updates may not add a condition of type \"Approved\""]
    );
    assert_eq!(
        sub_messages(Subresource::Status, &new, &old),
        vec!["status.conditions: Forbidden: updates may not add a condition of type \"Approved\""]
    );
    assert!(sub_messages(Subresource::Approval, &new, &old).is_empty());
    // no removal, not both
    assert_eq!(
        sub_messages(Subresource::Approval, &old, &new),
        vec![
            "status.conditions: Forbidden: updates may not remove a condition of type \"Approved\""
        ]
    );
    let both = with(
        csr(),
        "/status",
        json!({"conditions": [approved(), {"type": "Denied", "status": "True"}]}),
    );
    assert_eq!(
        sub_messages(Subresource::Approval, &both, &new),
        vec!["status.conditions: Invalid value: \"Denied\": Approved and Denied conditions are mutually exclusive"]
    );
    let not_true = with(
        csr(),
        "/status",
        json!({"conditions": [{"type": "Approved", "status": "False"}]}),
    );
    assert_eq!(
        sub_messages(Subresource::Approval, &not_true, &old),
        vec![
            "status.conditions[0].status: Unsupported value: \"False\": supported values: \"True\""
        ]
    );
}

fn certificate_pem() -> String {
    let key = rcgen::KeyPair::generate().expect("key");
    rcgen::CertificateParams::new(vec!["x".to_string()])
        .expect("params")
        .self_signed(&key)
        .expect("cert")
        .pem()
}

#[test]
fn the_certificate_is_set_through_status_once() {
    let old = with(csr(), "/status", json!({"conditions": [approved()]}));
    let cert = b64(certificate_pem().as_bytes());
    let issued = with(old.clone(), "/status/certificate", json!(cert));
    assert!(sub_messages(Subresource::Status, &issued, &old).is_empty());
    assert_eq!(
        sub_messages(Subresource::Approval, &issued, &old),
        vec!["status.certificate: Forbidden: updates may not set certificate content"]
    );
    assert_eq!(
        messages(&issued, Some(&old)),
        vec!["status.certificate: Forbidden: updates may not set certificate content"]
    );
    let other = with(
        old.clone(),
        "/status/certificate",
        json!(b64(certificate_pem().as_bytes())),
    );
    assert_eq!(
        sub_messages(Subresource::Status, &other, &issued),
        vec!["status.certificate: Forbidden: updates may not modify existing certificate content"]
    );
    let junk = with(old.clone(), "/status/certificate", json!(b64(b"junk")));
    assert_eq!(
        sub_messages(Subresource::Status, &junk, &old),
        vec!["status.certificate: Invalid value: \"<certificate data>\": must contain at least one CERTIFICATE PEM block"]
    );
}

#[tokio::test]
async fn create_records_the_requesting_user_and_clears_the_status() {
    let mut user = UserInfo::new("bob", &["devs", "system:authenticated"]);
    user.uid = "u-1".into();
    user.extra.insert("scopes".into(), vec!["a".into()]);
    let mut obj = with(csr(), "/spec/username", json!("mallory"));
    obj = with(obj, "/spec/groups", json!(["system:masters"]));
    obj = with(obj, "/status", json!({"conditions": [approved()]}));
    let obj = scope(Arc::new(user), async move {
        let mut obj = obj;
        def().strategy.prepare_for_create(def(), &mut obj);
        obj
    })
    .await;
    assert_eq!(obj["spec"]["username"], "bob");
    assert_eq!(obj["spec"]["uid"], "u-1");
    assert_eq!(
        obj["spec"]["groups"],
        json!(["devs", "system:authenticated"])
    );
    assert_eq!(obj["spec"]["extra"], json!({"scopes": ["a"]}));
    assert_eq!(obj["status"], json!({}));
}

#[test]
fn updates_keep_the_spec_and_subresources_their_parts() {
    let old = with(csr(), "/status", json!({"conditions": [approved()]}));
    let mut new = with(old.clone(), "/spec/signerName", json!("other.com/x"));
    def().strategy.prepare_for_update(&old, &mut new);
    assert_eq!(new["spec"], old["spec"]);
    // /approval: conditions from the request (timestamps filled), the certificate kept
    let mut approval = with(
        old.clone(),
        "/status",
        json!({"certificate": "eA==", "conditions": [approved(), {"type": "Extra", "status": "True"}]}),
    );
    def()
        .strategy
        .prepare_for_subresource_update(Subresource::Approval, &old, &mut approval);
    assert!(approval.pointer("/status/certificate").is_none());
    let extra = &approval["status"]["conditions"][1];
    assert!(extra["lastUpdateTime"].is_string() && extra["lastTransitionTime"].is_string());
    // /status: Approved instances kept as stored
    let mut status = with(
        old.clone(),
        "/status",
        json!({"conditions": [{"type": "Approved", "status": "True", "reason": "changed"}]}),
    );
    def()
        .strategy
        .prepare_for_subresource_update(Subresource::Status, &old, &mut status);
    assert_eq!(status["status"]["conditions"][0], approved());
}

// upstream plugin/pkg/admission/certificates/subjectrestriction/admission_test.go
#[test]
fn system_masters_is_refused_to_the_kube_apiserver_client_signer() {
    use super::subject_restriction;
    let client = "kubernetes.io/kube-apiserver-client";
    let masters = b64(request_pem_in(&["system:masters"]).as_bytes());
    let devs = b64(request_pem_in(&["devs", "more"]).as_bytes());
    let obj = |signer: &str, req: &str| {
        with(
            with(csr(), "/spec/signerName", json!(signer)),
            "/spec/request",
            json!(req),
        )
    };
    let e = subject_restriction(def(), &obj(client, &masters)).unwrap_err();
    assert_eq!(e.code, 403);
    assert_eq!(
        e.message,
        "certificatesigningrequests.certificates.k8s.io \"csr1\" is forbidden: use of kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed"
    );
    assert!(subject_restriction(def(), &obj(client, &devs)).is_ok());
    assert!(subject_restriction(def(), &obj("example.com/s", &masters)).is_ok());
    let e = subject_restriction(def(), &obj(client, &b64(b"junk"))).unwrap_err();
    assert!(e
        .message
        .ends_with("failed to parse CSR: PEM block type must be CERTIFICATE REQUEST"));
}
