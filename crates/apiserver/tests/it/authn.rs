//! Authentication over HTTPS as `coxswain apiserver` serves it: the admin token,
//! `--token-auth-file`, service account tokens (TokenRequest's bound tokens and legacy
//! Secret tokens), client certificates signed by the data dir's CA, anonymous
//! requests, impersonation, OIDC discovery, and forged credentials of every kind
//! never authenticating as anyone they do not prove.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use serde_json::{json, Value};

use apimachinery::serviceaccount::{self as sa, BoundClaims, Ref, SigningKey};

/// What a request carries.
#[derive(Clone)]
enum Cred {
    None,
    Bearer(String),
    /// Client certificate chain and key, PEM.
    Cert(String, String),
}

/// A server with TLS and authentication, in memory, with its own runtime.
struct Tls {
    addr: SocketAddr,
    ca_pem: String,
    token: String,
    dir: tempfile::TempDir,
    _running: coxswain_apiserver::server::Running,
    _rt: tokio::runtime::Runtime,
}

const TOKEN_FILE: &str =
    "jane-token,jane,u-jane,\"dev,ops\"\nroot-token,root,u-root,system:masters\n";

fn start(adjust: impl FnOnce(&mut coxswain_apiserver::server::Config, &std::path::Path)) -> Tls {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let dir = tempfile::tempdir().expect("temp dir");
    let tokens = dir.path().join("tokens.csv");
    std::fs::write(&tokens, TOKEN_FILE).unwrap();
    let mut cfg = coxswain_apiserver::server::Config::new(dir.path());
    cfg.bind = "127.0.0.1:0".parse().expect("addr");
    cfg.persist = false;
    cfg.authn.token_auth_file = Some(tokens);
    cfg.authn.enable_bootstrap_token_auth = true;
    // no service account controller: pods are admitted without their accounts
    cfg.admission_plugins
        .disable(coxswain_apiserver::server::AdmissionPlugin::ServiceAccount);
    adjust(&mut cfg, dir.path());
    let running = rt
        .block_on(coxswain_apiserver::server::start(cfg))
        .expect("start");
    Tls {
        addr: running.addr,
        ca_pem: running.ca_pem.clone().expect("ca"),
        token: running.token.clone().expect("token"),
        dir,
        _running: running,
        _rt: rt,
    }
}

fn certs(pem: &str) -> Vec<rustls::pki_types::CertificateDer<'static>> {
    rustls_pemfile::certs(&mut pem.as_bytes())
        .collect::<Result<_, _>>()
        .unwrap()
}

impl Tls {
    /// One request; status 0 when the TLS handshake or connection failed.
    fn call_with(
        &self,
        method: &str,
        path: &str,
        cred: &Cred,
        headers: &[(&str, &str)],
        body: &Value,
    ) -> (u16, Value) {
        let mut roots = rustls::RootCertStore::empty();
        for c in certs(&self.ca_pem) {
            roots.add(c).unwrap();
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots);
        let cfg = match cred {
            Cred::Cert(chain, key) => {
                let key = rustls_pemfile::private_key(&mut key.as_bytes())
                    .unwrap()
                    .unwrap();
                builder.with_client_auth_cert(certs(chain), key).unwrap()
            }
            _ => builder.with_no_client_auth(),
        };
        let conn =
            rustls::ClientConnection::new(Arc::new(cfg), "localhost".try_into().unwrap()).unwrap();
        let tcp = TcpStream::connect(self.addr).expect("connect");
        tcp.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let mut s = rustls::StreamOwned::new(conn, tcp);
        let body = if body.is_null() {
            Vec::new()
        } else {
            body.to_string().into_bytes()
        };
        let mut head = format!(
            "{method} {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nAccept: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
            body.len()
        );
        if let Cred::Bearer(t) = cred {
            head.push_str(&format!("Authorization: Bearer {t}\r\n"));
        }
        for (k, v) in headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("\r\n");
        if s.write_all(head.as_bytes()).is_err() || s.write_all(&body).is_err() {
            return (0, Value::Null);
        }
        let mut raw = Vec::new();
        let _ = s.read_to_end(&mut raw);
        let Some(end) = raw.windows(4).position(|w| w == b"\r\n\r\n") else {
            return (0, Value::Null);
        };
        let head = String::from_utf8_lossy(&raw[..end]).to_string();
        let code = head.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap();
        let mut b = raw[end + 4..].to_vec();
        if head
            .to_ascii_lowercase()
            .contains("transfer-encoding: chunked")
        {
            b = dechunk(&b);
        }
        (code, serde_json::from_slice(&b).unwrap_or(Value::Null))
    }

    fn call(&self, method: &str, path: &str, cred: &Cred, body: &Value) -> (u16, Value) {
        self.call_with(method, path, cred, &[], body)
    }

    fn admin(&self) -> Cred {
        Cred::Bearer(self.token.clone())
    }

    /// As the admin: must succeed with `want`.
    fn ok(&self, method: &str, path: &str, body: Value, want: u16) -> Value {
        let (code, v) = self.call(method, path, &self.admin(), &body);
        assert_eq!(code, want, "{method} {path}: {v}");
        v
    }

    fn token_request(&self, sa_name: &str, spec: Value) -> (u16, Value) {
        self.call(
            "POST",
            &format!("/api/v1/namespaces/default/serviceaccounts/{sa_name}/token"),
            &self.admin(),
            &json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}),
        )
    }

    /// Who `cred` authenticates as: the user a 403 names, `Some("<admin>")` when the
    /// request is allowed, `None` on 401 (or no answer).
    fn who(&self, cred: &Cred) -> Option<String> {
        let (code, v) = self.call(
            "GET",
            "/api/v1/namespaces/kube-system/secrets",
            cred,
            &Value::Null,
        );
        match code {
            200 => Some("<allowed>".into()),
            403 => {
                let m = v["message"].as_str().unwrap_or("");
                let user = m.split("User \"").nth(1)?.split('"').next()?;
                Some(user.to_string())
            }
            401 | 0 => None,
            // a header value HTTP itself refuses (a flipped byte made it a control
            // character): never reaches authentication
            400 if v.is_null() => None,
            other => panic!("unexpected {other}: {v}"),
        }
    }

    fn signing_key(&self) -> SigningKey {
        SigningKey::from_pem(&std::fs::read_to_string(self.dir.path().join("sa.key")).unwrap())
            .unwrap()
    }
}

fn dechunk(mut b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(pos) = b.windows(2).position(|w| w == b"\r\n") {
        let size =
            usize::from_str_radix(String::from_utf8_lossy(&b[..pos]).trim(), 16).unwrap_or(0);
        if size == 0 {
            break;
        }
        let start = pos + 2;
        out.extend_from_slice(&b[start..(start + size).min(b.len())]);
        b = &b[(start + size + 2).min(b.len())..];
    }
    out
}

const UNAUTHORIZED: &str = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}"#;

#[test]
fn tokens_anonymous_and_token_file() {
    let s = start(|_, _| {});
    assert_eq!(s.who(&s.admin()).as_deref(), Some("<allowed>"));
    // a token nobody knows: upstream's 401
    let (code, v) = s.call(
        "GET",
        "/api/v1/namespaces",
        &Cred::Bearer("nope".into()),
        &Value::Null,
    );
    assert_eq!(code, 401);
    assert_eq!(v, serde_json::from_str::<Value>(UNAUTHORIZED).unwrap());
    // no credentials: anonymous, refused by the authorizer
    assert_eq!(s.who(&Cred::None).as_deref(), Some("system:anonymous"));
    assert_eq!(s.call("GET", "/healthz", &Cred::None, &Value::Null).0, 200);
    // --token-auth-file
    assert_eq!(
        s.who(&Cred::Bearer("jane-token".into())).as_deref(),
        Some("jane")
    );
    assert_eq!(
        s.who(&Cred::Bearer("root-token".into())).as_deref(),
        Some("<allowed>")
    );
}

#[test]
fn anonymous_auth_can_be_turned_off_and_is_off_with_always_allow() {
    let s = start(|c, _| c.authn.anonymous_auth = false);
    assert_eq!(
        s.call("GET", "/api/v1/namespaces", &Cred::None, &Value::Null)
            .0,
        401
    );
    let s = start(|c, _| {
        c.authorization_mode = coxswain_apiserver::server::AuthorizationMode::AlwaysAllow
    });
    assert_eq!(
        s.call("GET", "/api/v1/namespaces", &Cred::None, &Value::Null)
            .0,
        401
    );
    assert_eq!(
        s.call("GET", "/api/v1/namespaces", &s.admin(), &Value::Null)
            .0,
        200
    );
}

#[test]
fn token_requests() {
    let s = start(|_, _| {});
    s.ok(
        "POST",
        "/api/v1/namespaces/default/serviceaccounts",
        json!({"metadata": {"name": "robot"}}),
        201,
    );
    let (code, tr) = s.token_request("robot", json!({}));
    assert_eq!(code, 201, "{tr}");
    assert_eq!(tr["kind"], "TokenRequest");
    assert_eq!(tr["apiVersion"], "authentication.k8s.io/v1");
    assert_eq!(tr["metadata"]["name"], "robot");
    assert_eq!(tr["spec"]["expirationSeconds"], 3600);
    assert_eq!(
        tr["spec"]["audiences"],
        json!(["https://kubernetes.default.svc.cluster.local"])
    );
    assert!(tr["status"]["expirationTimestamp"].is_string());
    let token = tr["status"]["token"].as_str().unwrap().to_string();
    let robot = Cred::Bearer(token.clone());
    assert_eq!(
        s.who(&robot).as_deref(),
        Some("system:serviceaccount:default:robot")
    );
    // the claims upstream's tokens carry
    let payload: Value = serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(token.split('.').nth(1).unwrap())
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        payload["iss"],
        "https://kubernetes.default.svc.cluster.local"
    );
    assert_eq!(payload["sub"], "system:serviceaccount:default:robot");
    assert_eq!(payload["kubernetes.io"]["serviceaccount"]["name"], "robot");
    assert_eq!(
        payload["exp"].as_i64().unwrap() - payload["iat"].as_i64().unwrap(),
        3600
    );

    // validation
    let (code, v) = s.token_request("robot", json!({"expirationSeconds": 300}));
    assert_eq!(code, 422, "{v}");
    assert_eq!(
        v["message"],
        "TokenRequest.authentication.k8s.io \"\" is invalid: spec.expirationSeconds: Invalid value: 300: may not specify a duration less than 10 minutes"
    );
    let (code, v) = s.token_request("ghost", json!({}));
    assert_eq!(
        (code, v["message"].as_str().unwrap()),
        (404, "serviceaccounts \"ghost\" not found")
    );
    let (code, _) = s.call(
        "GET",
        "/api/v1/namespaces/default/serviceaccounts/robot/token",
        &s.admin(),
        &Value::Null,
    );
    assert_eq!(code, 405);

    // bound to a pod: valid while the pod exists
    s.ok(
        "POST",
        "/api/v1/namespaces/default/pods",
        json!({"metadata": {"name": "p"}, "spec": {"serviceAccountName": "robot", "containers": [{"name": "c", "image": "nginx"}]}}),
        201,
    );
    s.ok(
        "POST",
        "/api/v1/namespaces/default/pods",
        json!({"metadata": {"name": "other"}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}),
        201,
    );
    let (code, v) = s.token_request(
        "robot",
        json!({"boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "other"}}),
    );
    assert_eq!(code, 400, "{v}");
    assert_eq!(v["message"], "cannot bind token for serviceaccount \"robot\" to pod running with different serviceaccount name.");
    let (code, v) = s.token_request(
        "robot",
        json!({"boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "p", "uid": "wrong"}}),
    );
    assert_eq!(code, 409, "{v}");
    let (code, v) = s.token_request(
        "robot",
        json!({"boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "missing"}}),
    );
    assert_eq!(
        (code, v["message"].as_str().unwrap()),
        (404, "pods \"missing\" not found")
    );
    let (code, v) = s.token_request(
        "robot",
        json!({"boundObjectRef": {"kind": "ConfigMap", "apiVersion": "v1", "name": "x"}}),
    );
    assert_eq!(code, 400, "{v}");
    assert_eq!(
        v["message"],
        "cannot bind token for serviceaccount \"robot\" to object of type /v1, Kind=ConfigMap."
    );
    let (code, tr) = s.token_request(
        "robot",
        json!({"boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "p"}}),
    );
    assert_eq!(code, 201, "{tr}");
    let bound = Cred::Bearer(tr["status"]["token"].as_str().unwrap().to_string());
    assert_eq!(
        s.who(&bound).as_deref(),
        Some("system:serviceaccount:default:robot")
    );
    s.ok(
        "DELETE",
        "/api/v1/namespaces/default/pods/p",
        Value::Null,
        200,
    );
    assert_eq!(s.who(&bound), None, "a token of a deleted pod");
    // a token for another audience is not the API server's
    let (code, tr) = s.token_request("robot", json!({"audiences": ["vault"]}));
    assert_eq!(code, 201);
    assert_eq!(
        s.who(&Cred::Bearer(
            tr["status"]["token"].as_str().unwrap().into()
        )),
        None
    );
    // deleting the service account invalidates its tokens
    s.ok(
        "DELETE",
        "/api/v1/namespaces/default/serviceaccounts/robot",
        Value::Null,
        200,
    );
    assert_eq!(s.who(&robot), None);
}

#[test]
fn secret_and_node_bound_tokens() {
    let s = start(|_, _| {});
    s.ok(
        "POST",
        "/api/v1/namespaces/default/serviceaccounts",
        json!({"metadata": {"name": "robot"}}),
        201,
    );
    s.ok(
        "POST",
        "/api/v1/namespaces/default/secrets",
        json!({"metadata": {"name": "s"}}),
        201,
    );
    s.ok(
        "POST",
        "/api/v1/nodes",
        json!({"metadata": {"name": "n1"}}),
        201,
    );
    let bound = |kind: &str, name: &str| {
        let (code, tr) = s.token_request(
            "robot",
            json!({"boundObjectRef": {"kind": kind, "apiVersion": "v1", "name": name}}),
        );
        assert_eq!(code, 201, "{tr}");
        Cred::Bearer(tr["status"]["token"].as_str().unwrap().to_string())
    };
    let to_secret = bound("Secret", "s");
    let to_node = bound("Node", "n1");
    let me = Some("system:serviceaccount:default:robot");
    assert_eq!(s.who(&to_secret).as_deref(), me);
    assert_eq!(s.who(&to_node).as_deref(), me);
    s.ok(
        "DELETE",
        "/api/v1/namespaces/default/secrets/s",
        Value::Null,
        200,
    );
    assert_eq!(s.who(&to_secret), None, "a token of a deleted secret");
    assert_eq!(s.who(&to_node).as_deref(), me);
    s.ok("DELETE", "/api/v1/nodes/n1", Value::Null, 200);
    assert_eq!(s.who(&to_node), None, "a token of a deleted node");
    // a recreated object has another UID: old tokens stay invalid
    s.ok(
        "POST",
        "/api/v1/nodes",
        json!({"metadata": {"name": "n1"}}),
        201,
    );
    assert_eq!(s.who(&to_node), None, "a token of a recreated node");
}

#[test]
fn max_token_expiration_shortens_requests() {
    let s = start(|c, _| {
        c.authn.service_account_max_token_expiration = Some(Duration::from_secs(1800))
    });
    s.ok(
        "POST",
        "/api/v1/namespaces/default/serviceaccounts",
        json!({"metadata": {"name": "robot"}}),
        201,
    );
    let (code, tr) = s.token_request("robot", json!({"expirationSeconds": 7200}));
    assert_eq!(code, 201, "{tr}");
    assert_eq!(tr["spec"]["expirationSeconds"], 1800);
}

#[test]
fn legacy_secret_tokens() {
    let s = start(|_, _| {});
    let sa_obj = s.ok(
        "POST",
        "/api/v1/namespaces/default/serviceaccounts",
        json!({"metadata": {"name": "old"}}),
        201,
    );
    let uid = sa_obj["metadata"]["uid"].as_str().unwrap();
    let token = sa::sign_legacy(&s.signing_key(), "default", "old", uid, "old-token").unwrap();
    let b64 = base64::engine::general_purpose::STANDARD.encode(&token);
    s.ok(
        "POST",
        "/api/v1/namespaces/default/secrets",
        json!({"metadata": {"name": "old-token", "annotations": {"kubernetes.io/service-account.name": "old"}},
               "type": "kubernetes.io/service-account-token", "data": {"token": b64}}),
        201,
    );
    let cred = Cred::Bearer(token.clone());
    assert_eq!(
        s.who(&cred).as_deref(),
        Some("system:serviceaccount:default:old")
    );
    // the Secret is labelled with the day of use (written after the request)
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let secret = s.ok(
            "GET",
            "/api/v1/namespaces/default/secrets/old-token",
            Value::Null,
            200,
        );
        if let Some(day) =
            secret["metadata"]["labels"]["kubernetes.io/legacy-token-last-used"].as_str()
        {
            assert_eq!(day, chrono::Utc::now().format("%Y-%m-%d").to_string());
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never labelled: {secret}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // a token that is not the Secret's copy, and one whose Secret is gone
    let other = sa::sign_legacy(&s.signing_key(), "default", "old", uid, "other-secret").unwrap();
    assert_eq!(s.who(&Cred::Bearer(other)), None);
    s.ok(
        "DELETE",
        "/api/v1/namespaces/default/secrets/old-token",
        Value::Null,
        200,
    );
    assert_eq!(s.who(&cred), None);
}

#[test]
fn bootstrap_tokens() {
    let s = start(|_, _| {});
    let b = |v: &str| base64::engine::general_purpose::STANDARD.encode(v);
    s.ok(
        "POST",
        "/api/v1/namespaces/kube-system/secrets",
        json!({"metadata": {"name": "bootstrap-token-abcdef"}, "type": "bootstrap.kubernetes.io/token",
               "data": {"token-id": b("abcdef"), "token-secret": b("0123456789abcdef"),
                        "usage-bootstrap-authentication": b("true"),
                        "auth-extra-groups": b("system:bootstrappers:kubeadm:default-node-token")}}),
        201,
    );
    assert_eq!(
        s.who(&Cred::Bearer("abcdef.0123456789abcdef".into()))
            .as_deref(),
        Some("system:bootstrap:abcdef")
    );
    assert_eq!(s.who(&Cred::Bearer("abcdef.0123456789abcdee".into())), None);
}

/// A client certificate for `cn` in `orgs` signed by `issuer` (certificate and key
/// PEM), or self-signed.
fn client_cert(cn: &str, orgs: &[&str], issuer: Option<(&str, &str)>) -> (String, String) {
    let mut p = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    p.distinguished_name = rcgen::DistinguishedName::new();
    p.distinguished_name.push(rcgen::DnType::CommonName, cn);
    for o in orgs {
        p.distinguished_name
            .push(rcgen::DnType::OrganizationName, *o);
    }
    p.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = match issuer {
        Some((ca_pem, ca_key_pem)) => {
            let ca_key = rcgen::KeyPair::from_pem(ca_key_pem).unwrap();
            let issuer = rcgen::Issuer::from_ca_cert_pem(ca_pem, ca_key).unwrap();
            p.signed_by(&key, &issuer).unwrap()
        }
        None => p.self_signed(&key).unwrap(),
    };
    (cert.pem(), key.serialize_pem())
}

fn other_ca() -> (String, String) {
    let mut p = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    p.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    p.distinguished_name
        .push(rcgen::DnType::CommonName, "coxswain-ca");
    let key = rcgen::KeyPair::generate().unwrap();
    (p.self_signed(&key).unwrap().pem(), key.serialize_pem())
}

#[test]
fn client_certificates() {
    let s = start(|_, _| {});
    let ca = std::fs::read_to_string(s.dir.path().join("ca.crt")).unwrap();
    let ca_key = std::fs::read_to_string(s.dir.path().join("ca.key")).unwrap();
    let (c, k) = client_cert("jane", &["dev"], Some((&ca, &ca_key)));
    assert_eq!(s.who(&Cred::Cert(c, k)).as_deref(), Some("jane"));
    let (c, k) = client_cert("admin", &["system:masters"], Some((&ca, &ca_key)));
    assert_eq!(s.who(&Cred::Cert(c, k)).as_deref(), Some("<allowed>"));
    // forged: self-signed, or signed by another CA of the same name
    let (c, k) = client_cert("admin", &["system:masters"], None);
    assert_eq!(s.who(&Cred::Cert(c, k)), None);
    let (oca, oca_key) = other_ca();
    let (c, k) = client_cert("admin", &["system:masters"], Some((&oca, &oca_key)));
    assert_eq!(s.who(&Cred::Cert(c, k)), None);
}

#[test]
fn impersonation() {
    let s = start(|_, _| {});
    let (code, v) = s.call_with(
        "GET",
        "/api/v1/namespaces/kube-system/secrets",
        &s.admin(),
        &[("Impersonate-User", "jane")],
        &Value::Null,
    );
    assert_eq!(code, 403);
    assert!(
        v["message"]
            .as_str()
            .unwrap()
            .contains("User \"jane\" cannot list resource \"secrets\""),
        "{v}"
    );
    let (code, _) = s.call_with(
        "GET",
        "/api/v1/namespaces/kube-system/secrets",
        &s.admin(),
        &[
            ("Impersonate-User", "jane"),
            ("Impersonate-Group", "system:masters"),
        ],
        &Value::Null,
    );
    assert_eq!(code, 200);
    // jane may not impersonate
    let (code, v) = s.call_with(
        "GET",
        "/api/v1/namespaces",
        &Cred::Bearer("jane-token".into()),
        &[("Impersonate-User", "root")],
        &Value::Null,
    );
    assert_eq!(code, 403);
    assert_eq!(
        v["message"],
        "users \"root\" is forbidden: User \"jane\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope"
    );
    let (code, v) = s.call_with(
        "GET",
        "/api/v1/namespaces",
        &s.admin(),
        &[("Impersonate-Group", "x")],
        &Value::Null,
    );
    assert_eq!(code, 500, "{v}");
}

#[test]
fn oidc_discovery() {
    let s = start(|_, _| {});
    let v = s.ok("GET", "/.well-known/openid-configuration", Value::Null, 200);
    assert_eq!(v["issuer"], "https://kubernetes.default.svc.cluster.local");
    assert_eq!(v["id_token_signing_alg_values_supported"], json!(["ES256"]));
    assert_eq!(v["response_types_supported"], json!(["id_token"]));
    assert!(v["jwks_uri"].as_str().unwrap().ends_with("/openid/v1/jwks"));
    let jwks = s.ok("GET", "/openid/v1/jwks", Value::Null, 200);
    let kid = s.signing_key().public_key().key_id().to_string();
    assert_eq!(jwks["keys"][0]["kid"], kid.as_str());
    assert_eq!(jwks["keys"][0]["kty"], "EC");
    // anonymous requests are authorized like any other
    assert_eq!(
        s.call("GET", "/openid/v1/jwks", &Cred::None, &Value::Null)
            .0,
        403
    );
}

#[test]
fn discovery_and_openapi_show_the_token_subresource() {
    let s = start(|_, _| {});
    let list = s.ok("GET", "/api/v1", Value::Null, 200);
    let token = list["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "serviceaccounts/token")
        .cloned()
        .expect("serviceaccounts/token");
    let reference = crate::common::fixture("discovery/api_v1.json");
    let want = reference["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "serviceaccounts/token")
        .cloned()
        .unwrap();
    assert_eq!(token, want);
    let doc = s.ok("GET", "/openapi/v3/api/v1", Value::Null, 200);
    let op = &doc["paths"]["/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token"]["post"];
    assert_eq!(
        op["operationId"],
        "createCoreV1NamespacedServiceAccountToken"
    );
}

/// Mutated, forged and random tokens never authenticate as anyone but who the intact
/// token names; forged certificates never authenticate at all.
#[test]
fn forged_credentials_never_authenticate() {
    let s = start(|_, _| {});
    s.ok(
        "POST",
        "/api/v1/namespaces/default/serviceaccounts",
        json!({"metadata": {"name": "robot"}}),
        201,
    );
    let sa_obj = s.ok(
        "GET",
        "/api/v1/namespaces/kube-system/serviceaccounts",
        Value::Null,
        200,
    );
    let _ = sa_obj;
    let robot = s.ok(
        "GET",
        "/api/v1/namespaces/default/serviceaccounts/robot",
        Value::Null,
        200,
    );
    let uid = robot["metadata"]["uid"].as_str().unwrap().to_string();
    let (_, tr) = s.token_request("robot", json!({}));
    let token = tr["status"]["token"].as_str().unwrap().to_string();
    let me = "system:serviceaccount:default:robot";
    assert_eq!(s.who(&Cred::Bearer(token.clone())).as_deref(), Some(me));
    let check = |t: String, what: &str| {
        let who = s.who(&Cred::Bearer(t.clone()));
        assert!(
            who.is_none() || who.as_deref() == Some(me),
            "{what}: {t} authenticated as {who:?}"
        );
    };
    let must_fail = |t: String, what: &str| {
        assert_eq!(s.who(&Cred::Bearer(t.clone())), None, "{what}: {t}");
    };
    // flipped bytes, everywhere in the token
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut rnd = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let bytes = token.as_bytes().to_vec();
    for _ in 0..60 {
        let mut b = bytes.clone();
        let i = (rnd() as usize) % b.len();
        b[i] ^= 1 << (rnd() % 7);
        if let Ok(t) = String::from_utf8(b) {
            check(t, "flipped byte");
        }
    }
    let enc = |v: &Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
    let parts: Vec<&str> = token.split('.').collect();
    let claims: Value = serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(parts[1])
            .unwrap(),
    )
    .unwrap();
    // alg none, with and without a signature
    let none = enc(&json!({"alg": "none"}));
    must_fail(format!("{none}.{}.", parts[1]), "alg none");
    must_fail(
        format!("{none}.{}.{}", parts[1], parts[2]),
        "alg none, signature kept",
    );
    let hs = enc(&json!({"alg": "HS256", "kid": ""}));
    must_fail(format!("{hs}.{}.{}", parts[1], parts[2]), "alg HS256");
    // tampered claims with the original signature: another service account, another
    // namespace, a longer life
    for (path, value) in [
        ("/kubernetes.io/serviceaccount/name", json!("default")),
        ("/kubernetes.io/namespace", json!("kube-system")),
        ("/sub", json!("system:serviceaccount:kube-system:default")),
        ("/exp", json!(4_000_000_000i64)),
        ("/aud", json!(["other"])),
    ] {
        let mut c = claims.clone();
        *c.pointer_mut(path).unwrap() = value;
        must_fail(format!("{}.{}.{}", parts[0], enc(&c), parts[2]), path);
    }
    // signed by another key (with our key id and without)
    let other = SigningKey::generate().unwrap();
    let admin_claims = |ns: &str, name: &str, uid: &str| {
        BoundClaims::new(
            "https://kubernetes.default.svc.cluster.local",
            ns,
            Ref::new(name, uid),
            vec!["https://kubernetes.default.svc.cluster.local".into()],
            chrono::Utc::now().timestamp(),
            3600,
        )
    };
    must_fail(
        sa::sign_bound(&other, &admin_claims("default", "robot", &uid)).unwrap(),
        "other key",
    );
    let forged = sa::sign_bound(&other, &admin_claims("default", "robot", &uid)).unwrap();
    let fparts: Vec<&str> = forged.split('.').collect();
    must_fail(
        format!("{}.{}.{}", parts[0], fparts[1], fparts[2]),
        "other key, our header",
    );
    must_fail(
        sa::sign_legacy(&other, "default", "robot", &uid, "robot-token").unwrap(),
        "legacy token of another key",
    );
    // signed by our key but expired, not yet valid, for another audience or issuer, or
    // naming a service account UID that is not the current one
    let key = s.signing_key();
    let now = chrono::Utc::now().timestamp();
    let mut c = admin_claims("default", "robot", &uid);
    c.expiry = Some(now - 120);
    must_fail(sa::sign_bound(&key, &c).unwrap(), "expired");
    let mut c = admin_claims("default", "robot", &uid);
    c.not_before = Some(now + 3600);
    must_fail(sa::sign_bound(&key, &c).unwrap(), "not yet valid");
    let mut c = admin_claims("default", "robot", &uid);
    c.audiences = vec!["vault".into()];
    must_fail(sa::sign_bound(&key, &c).unwrap(), "wrong audience");
    let mut c = admin_claims("default", "robot", &uid);
    c.issuer = "https://elsewhere".into();
    must_fail(sa::sign_bound(&key, &c).unwrap(), "wrong issuer");
    must_fail(
        sa::sign_bound(&key, &admin_claims("default", "robot", "not-the-uid")).unwrap(),
        "old uid",
    );
    must_fail(
        sa::sign_bound(&key, &admin_claims("default", "ghost", "x")).unwrap(),
        "no such account",
    );
    // a legacy token without its Secret
    must_fail(
        sa::sign_legacy(&key, "default", "robot", &uid, "robot-token").unwrap(),
        "legacy without secret",
    );
    // random garbage
    for n in [1usize, 10, 100, 1000] {
        let t: String = (0..n)
            .map(|_| (b'a' + (rnd() % 26) as u8) as char)
            .collect();
        must_fail(t.clone(), "random");
        must_fail(format!("{t}.{t}.{t}"), "random parts");
    }
    // forged client certificates
    let (c, k) = client_cert("admin", &["system:masters"], None);
    assert_eq!(s.who(&Cred::Cert(c, k)), None);
    let (oca, oca_key) = other_ca();
    let (c, k) = client_cert(
        "kubernetes-admin",
        &["system:masters"],
        Some((&oca, &oca_key)),
    );
    assert_eq!(s.who(&Cred::Cert(c, k)), None);
}
