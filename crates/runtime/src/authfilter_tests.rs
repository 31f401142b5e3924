//! The filter against a small fake API server that answers TokenReview and
//! SubjectAccessReview, and the manager's HTTPS metrics server with it.

use std::sync::atomic::{AtomicUsize, Ordering};

use axum::routing::{get, post};
use serde_json::{json, Value};
use tower::ServiceExt;

use super::*;

fn json_response(code: StatusCode, body: Value) -> Response {
    (
        code,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// Counts of the reviews the fake API server answered.
#[derive(Default)]
struct Calls {
    token_reviews: AtomicUsize,
    access_reviews: AtomicUsize,
}

/// The fake API server: tokens `admin` (system:masters), `reader`, `nobody`; `reader` and
/// the certificate user `alice` may get `/metrics`; reviews of `broken` fail with 400.
async fn fake_apiserver() -> (kube::Client, Arc<Calls>) {
    let calls = Arc::new(Calls::default());
    let (tr, sar) = (calls.clone(), calls.clone());
    let app = axum::Router::new()
        .route(
            "/apis/authentication.k8s.io/v1/tokenreviews",
            post(move |body: bytes::Bytes| {
                let calls = tr.clone();
                async move {
                    let review: Value = serde_json::from_slice(&body).unwrap_or_default();
                    calls.token_reviews.fetch_add(1, Ordering::SeqCst);
                    let token = review["spec"]["token"].as_str().unwrap_or_default();
                    let status = match token {
                        "admin" => json!({"authenticated": true, "user": {"username": "kubernetes-admin", "groups": ["system:masters", "system:authenticated"]}}),
                        "reader" | "nobody" | "broken" => json!({"authenticated": true, "user": {"username": token, "uid": "u-1", "groups": ["system:authenticated"], "extra": {"k": ["v"]}}}),
                        _ => json!({"authenticated": false, "error": "token not valid"}),
                    };
                    json_response(StatusCode::CREATED, json!({
                        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                        "metadata": {}, "spec": review["spec"], "status": status,
                    }))
                }
            }),
        )
        .route(
            "/apis/authorization.k8s.io/v1/subjectaccessreviews",
            post(move |body: bytes::Bytes| {
                let calls = sar.clone();
                async move {
                    let review: Value = serde_json::from_slice(&body).unwrap_or_default();
                    calls.access_reviews.fetch_add(1, Ordering::SeqCst);
                    let spec = &review["spec"];
                    let user = spec["user"].as_str().unwrap_or_default();
                    let attrs = &spec["nonResourceAttributes"];
                    if user == "broken" {
                        return json_response(
                            StatusCode::BAD_REQUEST,
                            json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": "boom", "reason": "BadRequest", "code": 400}),
                        );
                    }
                    let allowed = matches!(user, "reader" | "alice")
                        && attrs["path"] == "/metrics"
                        && attrs["verb"] == "get";
                    let mut status = json!({"allowed": allowed});
                    if user == "nobody" {
                        status["reason"] = json!("no RBAC policy matched");
                    }
                    json_response(
                        StatusCode::CREATED,
                        json!({
                            "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                            "metadata": {}, "spec": spec, "status": status,
                        }),
                    )
                }
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { axum::serve(listener, app).await });
    let config = kube::Config::new(format!("http://{addr}").parse().expect("url"));
    (kube::Client::try_from(config).expect("client"), calls)
}

fn router(auth: DelegatingAuth) -> axum::Router {
    let app = axum::Router::new()
        .route("/metrics", get(|| async { "metrics" }))
        .route("/healthz", get(|| async { "ok" }))
        .route(
            "/whoami",
            get(|req: Request| async move {
                let user = req.extensions().get::<User>().cloned().unwrap_or_default();
                let leaked = req.headers().contains_key(header::AUTHORIZATION);
                format!("{} {:?} leaked={leaked}", user.name, user.groups)
            }),
        );
    Filter::delegating(Arc::new(auth)).apply(app)
}

async fn call(app: &axum::Router, path: &str, token: Option<&str>) -> (StatusCode, String) {
    let mut req = http::Request::get(path);
    if let Some(t) = token {
        req = req.header(header::AUTHORIZATION, format!("Bearer {t}"));
    }
    let resp = app
        .clone()
        .oneshot(req.body(Body::empty()).expect("request"))
        .await
        .expect("infallible");
    let status = resp.status();
    let body = axum::body::to_bytes(resp.into_body(), 1 << 20)
        .await
        .expect("body");
    (status, String::from_utf8_lossy(&body).into_owned())
}

fn status_of(body: &str) -> Value {
    serde_json::from_str(body).expect("a Status body")
}

#[tokio::test]
async fn kube_controller_manager_defaults() {
    let (client, calls) = fake_apiserver().await;
    let app = router(DelegatingAuth::new(
        client,
        DelegatingAuthOptions::default(),
    ));

    // the always-allowed paths need no credentials and no review
    assert_eq!(
        call(&app, "/healthz", None).await,
        (StatusCode::OK, "ok".into())
    );
    assert_eq!(calls.access_reviews.load(Ordering::SeqCst), 0);

    // anonymous: authenticated as system:anonymous, then refused by the review
    let (code, body) = call(&app, "/metrics", None).await;
    assert_eq!(code, StatusCode::FORBIDDEN);
    assert_eq!(
        status_of(&body),
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": "forbidden: User \"system:anonymous\" cannot get path \"/metrics\"",
               "reason": "Forbidden", "details": {}, "code": 403})
    );

    // an invalid token: 401, even on an always-allowed path
    for path in ["/metrics", "/healthz"] {
        let (code, body) = call(&app, path, Some("forged")).await;
        assert_eq!(code, StatusCode::UNAUTHORIZED);
        assert_eq!(
            status_of(&body),
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                   "message": "Unauthorized", "reason": "Unauthorized", "code": 401})
        );
    }

    // authenticated but not allowed: the review's reason follows the message
    let (code, body) = call(&app, "/metrics", Some("nobody")).await;
    assert_eq!(code, StatusCode::FORBIDDEN);
    assert_eq!(
        status_of(&body)["message"],
        "forbidden: User \"nobody\" cannot get path \"/metrics\": no RBAC policy matched"
    );

    // allowed by the review
    assert_eq!(
        call(&app, "/metrics", Some("reader")).await,
        (StatusCode::OK, "metrics".into())
    );
    // system:masters needs no review
    let before = calls.access_reviews.load(Ordering::SeqCst);
    assert_eq!(
        call(&app, "/metrics", Some("admin")).await,
        (StatusCode::OK, "metrics".into())
    );
    assert_eq!(calls.access_reviews.load(Ordering::SeqCst), before);

    // the handler sees the user, never the credentials
    let (code, body) = call(&app, "/whoami", Some("admin")).await;
    assert_eq!(code, StatusCode::OK);
    assert_eq!(
        body,
        "kubernetes-admin [\"system:masters\", \"system:authenticated\"] leaked=false"
    );
}

#[tokio::test]
async fn reviews_are_cached_for_their_ttls() {
    let (client, calls) = fake_apiserver().await;
    let app = router(DelegatingAuth::new(
        client.clone(),
        DelegatingAuthOptions::default(),
    ));
    for _ in 0..3 {
        assert_eq!(
            call(&app, "/metrics", Some("reader")).await.0,
            StatusCode::OK
        );
        assert_eq!(
            call(&app, "/metrics", Some("nobody")).await.0,
            StatusCode::FORBIDDEN
        );
        assert_eq!(
            call(&app, "/metrics", Some("forged")).await.0,
            StatusCode::UNAUTHORIZED
        );
    }
    // one TokenReview per token, one SubjectAccessReview per user
    assert_eq!(calls.token_reviews.load(Ordering::SeqCst), 3);
    assert_eq!(calls.access_reviews.load(Ordering::SeqCst), 2);

    // zero TTLs: every request is reviewed
    let (client, calls) = fake_apiserver().await;
    let options = DelegatingAuthOptions {
        token_cache_ttl: Duration::ZERO,
        allow_cache_ttl: Duration::ZERO,
        deny_cache_ttl: Duration::ZERO,
        ..DelegatingAuthOptions::default()
    };
    let app = router(DelegatingAuth::new(client, options));
    for _ in 0..2 {
        assert_eq!(
            call(&app, "/metrics", Some("reader")).await.0,
            StatusCode::OK
        );
    }
    assert_eq!(calls.token_reviews.load(Ordering::SeqCst), 2);
    assert_eq!(calls.access_reviews.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn controller_runtime_defaults_refuse_anonymous_requests() {
    let (client, _) = fake_apiserver().await;
    let app = router(DelegatingAuth::new(
        client,
        DelegatingAuthOptions::controller_runtime(),
    ));
    for path in ["/metrics", "/healthz"] {
        assert_eq!(call(&app, path, None).await.0, StatusCode::UNAUTHORIZED);
    }
    // no path and no group skips the review
    assert_eq!(
        call(&app, "/healthz", Some("admin")).await.0,
        StatusCode::FORBIDDEN
    );
    assert_eq!(
        call(&app, "/metrics", Some("reader")).await.0,
        StatusCode::OK
    );
}

#[tokio::test]
async fn without_clients_only_the_always_allowed_pass() {
    let app = router(DelegatingAuth::with_clients(
        None,
        None,
        DelegatingAuthOptions::default(),
    ));
    assert_eq!(call(&app, "/healthz", None).await.0, StatusCode::OK);
    assert_eq!(call(&app, "/metrics", None).await.0, StatusCode::FORBIDDEN);
    // no token authenticates without a TokenReview client
    assert_eq!(
        call(&app, "/metrics", Some("admin")).await.0,
        StatusCode::UNAUTHORIZED
    );
}

#[tokio::test]
async fn a_failed_review_is_an_internal_error_and_not_cached() {
    let (client, calls) = fake_apiserver().await;
    let app = router(DelegatingAuth::new(
        client,
        DelegatingAuthOptions::default(),
    ));
    for _ in 0..2 {
        let (code, body) = call(&app, "/metrics?x=1", Some("broken")).await;
        assert_eq!(code, StatusCode::INTERNAL_SERVER_ERROR);
        assert!(
            body.starts_with("Internal Server Error: \"/metrics?x=1\": ") && body.contains("boom"),
            "{body}"
        );
    }
    // not a transient failure: no retry; and nothing was cached
    assert_eq!(calls.access_reviews.load(Ordering::SeqCst), 2);
}

#[test]
fn always_allowed_paths_match_exactly_or_by_prefix() {
    let paths = vec!["/healthz".to_string(), "/debug/*".to_string()];
    assert!(path_allowed(&paths, "/healthz"));
    assert!(!path_allowed(&paths, "/healthz/ping"));
    assert!(path_allowed(&paths, "/debug/controllers"));
    assert!(!path_allowed(&paths, "/metrics"));
}

#[test]
fn bearer_tokens() {
    let mut h = HeaderMap::new();
    assert_eq!(bearer_token(&h), None);
    h.insert(header::AUTHORIZATION, "Bearer abc".parse().expect("value"));
    assert_eq!(bearer_token(&h), Some("abc"));
    h.insert(
        header::AUTHORIZATION,
        "bearer  abc ".parse().expect("value"),
    );
    assert_eq!(bearer_token(&h), Some("abc"));
    h.insert(header::AUTHORIZATION, "Basic abc".parse().expect("value"));
    assert_eq!(bearer_token(&h), None);
    h.insert(header::AUTHORIZATION, "Bearer ".parse().expect("value"));
    assert_eq!(bearer_token(&h), None);
}

#[test]
fn authenticated_users_join_system_authenticated() {
    let u = with_authenticated_group(User {
        name: "alice".into(),
        groups: vec!["ops".into()],
        ..User::default()
    });
    assert_eq!(u.groups, ["ops", AUTHENTICATED]);
    let u = with_authenticated_group(User {
        name: "bob".into(),
        groups: vec![AUTHENTICATED.into()],
        ..User::default()
    });
    assert_eq!(u.groups, [AUTHENTICATED]);
}

/// A client CA and a client certificate `CN=alice, O=ops` it signed (PEM).
fn client_pki() -> (String, String, String) {
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(rcgen::DnType::CommonName, "client-ca");
    let ca_key = rcgen::KeyPair::generate().expect("key");
    let ca_cert = ca.self_signed(&ca_key).expect("CA");
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "alice");
    params
        .distinguished_name
        .push(rcgen::DnType::OrganizationName, "ops");
    params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
    let key = rcgen::KeyPair::generate().expect("key");
    let cert = params
        .signed_by(&key, &rcgen::Issuer::new(ca, ca_key))
        .expect("cert");
    (ca_cert.pem(), cert.pem(), key.serialize_pem())
}

#[test]
fn certificate_users_are_their_common_name_in_their_organizations() {
    let (_, cert, _) = client_pki();
    let der = rustls_pemfile::certs(&mut cert.as_bytes())
        .next()
        .expect("one")
        .expect("PEM");
    let user = user_of_certificate(&der).expect("a user");
    assert_eq!(user.name, "alice");
    assert_eq!(user.groups, ["ops"]);
    assert_eq!(user_of_certificate(b"not DER"), None);
}

/// GET `path` over HTTPS from `addr`, trusting `roots`, with an optional client
/// certificate and token: the status and body.
async fn https_get(
    addr: SocketAddr,
    roots: &str,
    client_cert: Option<(&str, &str)>,
    token: Option<&str>,
    path: &str,
) -> (StatusCode, String) {
    let mut store = rustls::RootCertStore::empty();
    for cert in rustls_pemfile::certs(&mut roots.as_bytes()) {
        store.add(cert.expect("PEM")).expect("root");
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_root_certificates(store);
    let config = match client_cert {
        Some((cert, key)) => builder
            .with_client_auth_cert(
                rustls_pemfile::certs(&mut cert.as_bytes())
                    .collect::<Result<_, _>>()
                    .expect("PEM"),
                rustls_pemfile::private_key(&mut key.as_bytes())
                    .expect("PEM")
                    .expect("key"),
            )
            .expect("client cert"),
        None => builder.with_no_client_auth(),
    };
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let name = rustls::pki_types::ServerName::try_from("localhost").expect("name");
    let tls = connector.connect(name, tcp).await.expect("TLS handshake");
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tls))
            .await
            .expect("HTTP handshake");
    tokio::spawn(conn);
    let mut req = http::Request::get(path).header(header::HOST, "localhost");
    if let Some(t) = token {
        req = req.header(header::AUTHORIZATION, format!("Bearer {t}"));
    }
    let resp = sender
        .send_request(
            req.body(http_body_util::Empty::<bytes::Bytes>::new())
                .expect("req"),
        )
        .await
        .expect("response");
    let status = resp.status();
    let body = http_body_util::BodyExt::collect(resp.into_body())
        .await
        .expect("body")
        .to_bytes();
    (status, String::from_utf8_lossy(&body).into_owned())
}

use std::net::SocketAddr;

#[tokio::test]
async fn the_manager_serves_metrics_over_https_behind_the_filter() {
    let (client, _) = fake_apiserver().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let (ca, alice_cert, alice_key) = client_pki();
    let ca_path = dir.path().join("client-ca.crt");
    std::fs::write(&ca_path, &ca).expect("write CA");
    let (cert, key) = (dir.path().join("m.crt"), dir.path().join("m.key"));
    let options = crate::manager::ManagerOptions {
        metrics_bind_address: "127.0.0.1:0".into(),
        health_probe_bind_address: "127.0.0.1:0".into(),
        metrics_server: crate::manager::MetricsServerOptions {
            secure_serving: true,
            tls: crate::serving::SecureServing {
                certificate: crate::serving::ServingCertificate::SelfSignedIn {
                    cert: cert.clone(),
                    key: key.clone(),
                },
                client_ca_file: Some(ca_path),
                client_ca_pem: None,
            },
            filter_provider: Some(with_options(DelegatingAuthOptions::default())),
        },
        ..crate::manager::ManagerOptions::default()
    };
    let manager = Arc::new(crate::manager::Manager::with_client(client, options));
    let (tx, rx) = tokio::sync::oneshot::channel();
    let cancel = tokio_util::sync::CancellationToken::new();
    let running = {
        let (manager, cancel) = (manager.clone(), cancel.clone());
        tokio::spawn(async move {
            manager
                .start_with(cancel, move |l| {
                    let _ = tx.send(l);
                })
                .await
        })
    };
    let listening = rx.await.expect("listening");
    assert!(listening.metrics_secure);
    let addr = listening.metrics.expect("metrics address");
    // the certificate was generated in the given files; its CA (second) verifies it
    let chain = std::fs::read_to_string(&cert).expect("cert written");
    assert!(key.exists());

    let (code, body) = https_get(addr, &chain, None, None, "/metrics").await;
    assert_eq!(code, StatusCode::FORBIDDEN, "{body}");
    assert!(
        body.contains("User \\\"system:anonymous\\\" cannot get path \\\"/metrics\\\""),
        "{body}"
    );
    assert_eq!(
        https_get(addr, &chain, None, Some("forged"), "/metrics")
            .await
            .0,
        StatusCode::UNAUTHORIZED
    );
    let (code, body) = https_get(addr, &chain, None, Some("reader"), "/metrics").await;
    assert_eq!(code, StatusCode::OK);
    assert!(body.contains("# EOF"), "{body}");
    // a client certificate signed by the client CA authenticates as its CN
    let (code, body) = https_get(
        addr,
        &chain,
        Some((&alice_cert, &alice_key)),
        None,
        "/metrics",
    )
    .await;
    assert_eq!(code, StatusCode::OK, "{body}");
    // the probes share the address (as kube-controller-manager's): served to anyone
    assert_eq!(listening.health_probes, Some(addr));
    let (code, body) = https_get(addr, &chain, None, None, "/healthz").await;
    assert_eq!((code, body.as_str()), (StatusCode::OK, "ok"));

    cancel.cancel();
    running.await.expect("joined").expect("stopped cleanly");
}
