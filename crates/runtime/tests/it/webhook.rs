//! The webhook server end to end: real AdmissionReview and ConversionReview requests over
//! HTTPS with certificates from a test CA, certificate rotation on disk, and the metrics.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use coxswain_runtime::webhook::{
    defaulting, validating, AdmissionRequest, AdmissionWebhook, ConversionWebhook, Denial, Error,
    Mutator, Operation, TlsVersion, WebhookServer, WebhookServerOptions,
};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::{TokioExecutor, TokioIo};
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use prometheus_client::registry::Registry;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use serde_json::{json, Value};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_util::sync::CancellationToken;

/// A test CA and a serving certificate for `localhost` / `127.0.0.1` signed by it.
struct Pki {
    ca_pem: String,
    cert_pem: String,
    key_pem: String,
    /// A client certificate signed by the same CA, for client-authentication tests.
    client_cert_pem: String,
    client_key_pem: String,
}

impl Pki {
    fn new(name: &str) -> Pki {
        let ca_key = KeyPair::generate().unwrap();
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params
            .distinguished_name
            .push(DnType::CommonName, format!("{name} test CA"));
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca_cert = ca_params.self_signed(&ca_key).unwrap();
        let issuer = Issuer::new(ca_params, ca_key);

        let key = KeyPair::generate().unwrap();
        let params =
            CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()]).unwrap();
        let cert = params.signed_by(&key, &issuer).unwrap();
        let client_key = KeyPair::generate().unwrap();
        let mut client_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        client_params
            .distinguished_name
            .push(DnType::CommonName, "kube-apiserver");
        client_params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        let client_cert = client_params.signed_by(&client_key, &issuer).unwrap();
        Pki {
            ca_pem: ca_cert.pem(),
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
            client_cert_pem: client_cert.pem(),
            client_key_pem: client_key.serialize_pem(),
        }
    }

    /// Writes the pair as a rotation does: to temporary files, then renamed into place.
    fn install(&self, dir: &Path) {
        write_atomically(&dir.join("tls.crt"), self.cert_pem.as_bytes());
        write_atomically(&dir.join("tls.key"), self.key_pem.as_bytes());
    }

    /// A client trusting only this CA, offering `alpn`.
    fn connector(&self, alpn: &[&[u8]]) -> TlsConnector {
        self.connector_with(rustls::DEFAULT_VERSIONS, alpn, false)
    }

    fn connector_with(
        &self,
        versions: &[&'static rustls::SupportedProtocolVersion],
        alpn: &[&[u8]],
        client_cert: bool,
    ) -> TlsConnector {
        let mut roots = rustls::RootCertStore::empty();
        for cert in rustls_pemfile::certs(&mut self.ca_pem.as_bytes()) {
            roots.add(cert.unwrap()).unwrap();
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ClientConfig::builder_with_provider(provider)
            .with_protocol_versions(versions)
            .unwrap()
            .with_root_certificates(roots);
        let mut config = if client_cert {
            let chain = rustls_pemfile::certs(&mut self.client_cert_pem.as_bytes())
                .collect::<Result<Vec<_>, _>>()
                .unwrap();
            let key = rustls_pemfile::private_key(&mut self.client_key_pem.as_bytes())
                .unwrap()
                .unwrap();
            builder.with_client_auth_cert(chain, key).unwrap()
        } else {
            builder.with_no_client_auth()
        };
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        TlsConnector::from(Arc::new(config))
    }
}

fn write_atomically(path: &Path, contents: &[u8]) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, contents).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

/// A running server on 127.0.0.1 with a free port.
struct Running {
    addr: SocketAddr,
    cancel: CancellationToken,
    task: tokio::task::JoinHandle<Result<(), Error>>,
    registry: Registry,
    _dir: tempfile::TempDir,
    dir_path: std::path::PathBuf,
    pki: Pki,
}

async fn start(register: impl FnOnce(&mut WebhookServer)) -> Running {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::new("first");
    pki.install(dir.path());
    let mut server = WebhookServer::new(WebhookServerOptions {
        bind_address: "127.0.0.1:0".parse().unwrap(),
        cert_dir: dir.path().to_path_buf(),
        cert_poll_interval: Duration::from_millis(50),
        shutdown_timeout: Duration::from_secs(5),
        ..WebhookServerOptions::default()
    });
    register(&mut server);
    let mut registry = Registry::default();
    server.register_metrics(&mut registry);
    let bound = server.bind().await.unwrap();
    let addr = bound.local_addr();
    let cancel = CancellationToken::new();
    let task = tokio::spawn(bound.serve(cancel.clone()));
    Running {
        addr,
        cancel,
        task,
        registry,
        dir_path: dir.path().to_path_buf(),
        _dir: dir,
        pki,
    }
}

impl Running {
    fn metrics(&self) -> String {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.registry).unwrap();
        text
    }

    async fn post(&self, path: &str, content_type: &str, body: Vec<u8>) -> (u16, Bytes) {
        post(
            self.addr,
            &self.pki.connector(&[]),
            path,
            content_type,
            body,
        )
        .await
        .unwrap()
    }

    async fn review(&self, path: &str, review: &Value) -> Value {
        let (status, body) = self
            .post(
                path,
                "application/json",
                serde_json::to_vec(review).unwrap(),
            )
            .await;
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
        serde_json::from_slice(&body).unwrap()
    }

    async fn stop(self) {
        self.cancel.cancel();
        self.task.await.unwrap().unwrap();
    }
}

/// One HTTP/1.1 POST over TLS (server name `localhost`).
async fn post(
    addr: SocketAddr,
    connector: &TlsConnector,
    path: &str,
    content_type: &str,
    body: Vec<u8>,
) -> Result<(u16, Bytes), String> {
    let tcp = TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let tls = connector
        .connect(name, tcp)
        .await
        .map_err(|e| e.to_string())?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(conn);
    let request = http::Request::post(path)
        .header(http::header::HOST, "localhost")
        .header(http::header::CONTENT_TYPE, content_type)
        .body(Full::new(Bytes::from(body)))
        .unwrap();
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| e.to_string())?;
    let status = response.status().as_u16();
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(|e| e.to_string())?
        .to_bytes();
    Ok((status, body))
}

fn admission_review(uid: &str, operation: &str, object: Value, old: Option<Value>) -> Value {
    let shown = if object.is_null() {
        old.clone().unwrap_or_default()
    } else {
        object.clone()
    };
    let kind = shown["kind"].as_str().unwrap_or("ConfigMap").to_string();
    json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": uid,
            "kind": {"group": "", "version": "v1", "kind": kind},
            "resource": {"group": "", "version": "v1", "resource": format!("{}s", kind.to_lowercase())},
            "name": shown["metadata"]["name"],
            "namespace": "default",
            "operation": operation,
            "userInfo": {"username": "alice", "groups": ["system:authenticated"]},
            "object": object,
            "oldObject": old,
            "dryRun": false,
        }
    })
}

fn decoded_patch(response: &Value) -> json_patch::Patch {
    assert_eq!(response["patchType"], "JSONPatch", "{response}");
    let raw = base64::engine::general_purpose::STANDARD
        .decode(response["patch"].as_str().expect("base64 patch"))
        .unwrap();
    serde_json::from_slice(&raw).unwrap()
}

fn pod() -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}]},
    })
}

/// Adds a label with the requesting user's name and a `team` annotation, on raw JSON.
struct LabelUser;

impl Mutator for LabelUser {
    async fn mutate(
        &self,
        object: &mut Value,
        request: &AdmissionRequest,
    ) -> Result<Vec<String>, Denial> {
        let user = request.user_info.username.clone().unwrap_or_default();
        object["metadata"]["labels"]["created-by"] = json!(user);
        object["metadata"]["annotations"] = json!({"team": "core"});
        Ok(vec!["labelled".to_string()])
    }
}

#[tokio::test]
async fn mutating_webhooks_answer_with_json_patches() {
    let running = start(|s| {
        s.register(
            "/mutate-v1-pod",
            defaulting(|pod: &mut Pod| {
                let labels = pod.metadata.labels.get_or_insert_with(Default::default);
                labels.insert("injected".into(), "true".into());
                if let Some(spec) = pod.spec.as_mut() {
                    for c in &mut spec.containers {
                        c.image_pull_policy
                            .get_or_insert_with(|| "IfNotPresent".into());
                    }
                }
            }),
        )
        .unwrap();
        s.register("/mutate-v1-configmap", AdmissionWebhook::mutator(LabelUser))
            .unwrap();
    })
    .await;

    // Typed defaulting of a Pod.
    let original = pod();
    let review = running
        .review(
            "/mutate-v1-pod",
            &admission_review("uid-pod", "CREATE", original.clone(), None),
        )
        .await;
    assert_eq!(review["apiVersion"], "admission.k8s.io/v1");
    assert_eq!(review["kind"], "AdmissionReview");
    let response = &review["response"];
    assert_eq!(response["uid"], "uid-pod");
    assert_eq!(response["allowed"], true);
    assert_eq!(response["status"]["code"], 200);
    let mut patched = original.clone();
    json_patch::patch(&mut patched, &decoded_patch(response)).unwrap();
    let mut want = original;
    want["metadata"]["labels"]["injected"] = json!("true");
    want["spec"]["containers"][0]["imagePullPolicy"] = json!("IfNotPresent");
    assert_eq!(patched, want);

    // Already defaulted: allowed with no patch at all.
    let review = running
        .review(
            "/mutate-v1-pod",
            &admission_review("uid-again", "CREATE", want, None),
        )
        .await;
    assert_eq!(review["response"]["allowed"], true);
    assert!(review["response"].get("patch").is_none(), "{review}");
    assert!(review["response"].get("patchType").is_none(), "{review}");

    // DELETE is admitted without mutation.
    let review = running
        .review(
            "/mutate-v1-pod",
            &admission_review("uid-del", "DELETE", Value::Null, Some(pod())),
        )
        .await;
    assert_eq!(review["response"]["allowed"], true);
    assert!(review["response"].get("patch").is_none());

    // Raw mutator on a ConfigMap, with warnings.
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}, "data": {"a": "1"}});
    let review = running
        .review(
            "/mutate-v1-configmap",
            &admission_review("uid-cm", "UPDATE", cm.clone(), Some(cm.clone())),
        )
        .await;
    let response = &review["response"];
    assert_eq!(response["uid"], "uid-cm");
    assert_eq!(response["warnings"], json!(["labelled"]));
    let mut patched = cm.clone();
    json_patch::patch(&mut patched, &decoded_patch(response)).unwrap();
    let mut want = cm;
    want["metadata"]["labels"] = json!({"created-by": "alice"});
    want["metadata"]["annotations"] = json!({"team": "core"});
    assert_eq!(patched, want);

    running.stop().await;
}

fn check_config_map(
    cm: &ConfigMap,
    old: Option<&ConfigMap>,
    op: Operation,
) -> Result<Vec<String>, Denial> {
    let data = cm.data.clone().unwrap_or_default();
    if data.contains_key("password") {
        return Err(
            Denial::new("passwords belong in Secrets").with_warnings(["see the docs".to_string()])
        );
    }
    if op == Operation::Update
        && old
            .and_then(|o| o.data.as_ref())
            .is_some_and(|d| d.contains_key("frozen"))
    {
        return Err(Denial::new("frozen").with_code(422, "Invalid"));
    }
    if op == Operation::Delete {
        return Err(Denial::new(format!(
            "{} may not be deleted",
            cm.metadata.name.clone().unwrap_or_default()
        )));
    }
    Ok(data
        .keys()
        .filter(|k| k.starts_with("old-"))
        .map(|k| format!("{k} is deprecated"))
        .collect())
}

#[tokio::test]
async fn validating_webhooks_allow_and_deny() {
    let running = start(|s| {
        s.register("/validate-v1-configmap", validating(check_config_map))
            .unwrap()
    })
    .await;
    let cm = |data: Value| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": data});
    let path = "/validate-v1-configmap";

    let review = running
        .review(
            path,
            &admission_review("a1", "CREATE", cm(json!({"x": "1"})), None),
        )
        .await;
    assert_eq!(
        review["response"],
        json!({"uid": "a1", "allowed": true, "status": {"code": 200}})
    );

    let review = running
        .review(
            path,
            &admission_review("a2", "CREATE", cm(json!({"old-x": "1"})), None),
        )
        .await;
    assert_eq!(review["response"]["allowed"], true);
    assert_eq!(
        review["response"]["warnings"],
        json!(["old-x is deprecated"])
    );

    let review = running
        .review(
            path,
            &admission_review("d1", "CREATE", cm(json!({"password": "p"})), None),
        )
        .await;
    assert_eq!(
        review["response"],
        json!({
            "uid": "d1", "allowed": false,
            "status": {"code": 403, "reason": "Forbidden", "message": "passwords belong in Secrets"},
            "warnings": ["see the docs"],
        })
    );

    let review = running
        .review(
            path,
            &admission_review(
                "d2",
                "UPDATE",
                cm(json!({})),
                Some(cm(json!({"frozen": "y"}))),
            ),
        )
        .await;
    assert_eq!(
        review["response"]["status"],
        json!({"code": 422, "reason": "Invalid", "message": "frozen"})
    );

    let review = running
        .review(
            path,
            &admission_review("d3", "DELETE", Value::Null, Some(cm(json!({})))),
        )
        .await;
    assert_eq!(review["response"]["allowed"], false);
    assert_eq!(
        review["response"]["status"]["message"],
        "cm may not be deleted"
    );

    // An admission.k8s.io/v1beta1 review is answered in kind.
    let mut old_style = admission_review("b1", "CREATE", cm(json!({})), None);
    old_style["apiVersion"] = json!("admission.k8s.io/v1beta1");
    let review = running.review(path, &old_style).await;
    assert_eq!(review["apiVersion"], "admission.k8s.io/v1beta1");
    assert_eq!(review["response"]["uid"], "b1");

    running.stop().await;
}

#[tokio::test]
async fn bad_requests_and_panics_are_answered_and_the_server_goes_on() {
    let running = start(|s| {
        s.register(
            "/validate",
            validating(|cm: &ConfigMap, _: Option<&ConfigMap>, _| {
                if cm.metadata.name.as_deref() == Some("boom") {
                    panic!("validator exploded");
                }
                Ok(vec![])
            }),
        )
        .unwrap();
    })
    .await;
    let cm =
        |name: &str| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}});

    // Undecodable body, wrong content type, no request: HTTP 200, denied with code 400.
    for (content_type, body) in [
        ("application/json", b"{not json".to_vec()),
        (
            "text/plain",
            serde_json::to_vec(&admission_review("x", "CREATE", cm("a"), None)).unwrap(),
        ),
        (
            "application/json",
            br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}"#.to_vec(),
        ),
        ("application/json", Vec::new()),
    ] {
        let (status, body) = running.post("/validate", content_type, body).await;
        assert_eq!(status, 200);
        let review: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(review["kind"], "AdmissionReview");
        assert_eq!(review["response"]["allowed"], false, "{review}");
        assert_eq!(review["response"]["status"]["code"], 400, "{review}");
    }
    let (status, _) = running
        .post("/nowhere", "application/json", b"{}".to_vec())
        .await;
    assert_eq!(status, 404);

    // A panicking handler gets a 500-coded denial with the request's uid...
    let review = running
        .review(
            "/validate",
            &admission_review("p1", "CREATE", cm("boom"), None),
        )
        .await;
    assert_eq!(review["response"]["uid"], "p1");
    assert_eq!(review["response"]["allowed"], false);
    assert_eq!(review["response"]["status"]["code"], 500);
    assert_eq!(
        review["response"]["status"]["message"],
        "panic: validator exploded [recovered]"
    );
    // ...and the next requests are served as usual.
    for uid in ["n1", "n2"] {
        let review = running
            .review(
                "/validate",
                &admission_review(uid, "CREATE", cm("fine"), None),
            )
            .await;
        assert_eq!(review["response"]["uid"], uid);
        assert_eq!(review["response"]["allowed"], true);
    }
    assert!(
        running
            .metrics()
            .contains("controller_runtime_webhook_panics_total 1\n"),
        "{}",
        running.metrics()
    );

    running.stop().await;
}

fn widget_conversion() -> ConversionWebhook {
    ConversionWebhook::new().with_converter("example.com", "Widget", |mut obj: Value, to: &str| {
        match to {
            "example.com/v2" => {
                let size = obj["spec"]["size"].take();
                if size == json!(13) {
                    panic!("unlucky size");
                }
                obj["spec"] = json!({"dimensions": {"size": size}});
            }
            "example.com/v1" => {
                let size = obj["spec"]["dimensions"]["size"].take();
                obj["spec"] = json!({"size": size});
            }
            other => return Err(format!("unknown version {other}")),
        }
        Ok(obj)
    })
}

fn conversion_review(uid: &str, to: &str, objects: Vec<Value>) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {"uid": uid, "desiredAPIVersion": to, "objects": objects},
    })
}

#[tokio::test]
async fn conversion_reviews_round_trip() {
    let running = start(|s| s.register("/convert", widget_conversion()).unwrap()).await;
    let widget = |name: &str, size: i64| json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name}, "spec": {"size": size}});

    let review = running
        .review(
            "/convert",
            &conversion_review("c1", "example.com/v2", vec![widget("a", 1), widget("b", 2)]),
        )
        .await;
    assert_eq!(review["apiVersion"], "apiextensions.k8s.io/v1");
    assert_eq!(review["kind"], "ConversionReview");
    assert!(review.get("request").is_none());
    let response = &review["response"];
    assert_eq!(response["uid"], "c1");
    assert_eq!(response["result"]["status"], "Success");
    let converted = response["convertedObjects"].as_array().unwrap().clone();
    assert_eq!(
        converted,
        vec![
            json!({"apiVersion": "example.com/v2", "kind": "Widget", "metadata": {"name": "a"}, "spec": {"dimensions": {"size": 1}}}),
            json!({"apiVersion": "example.com/v2", "kind": "Widget", "metadata": {"name": "b"}, "spec": {"dimensions": {"size": 2}}}),
        ]
    );
    // And back again.
    let review = running
        .review(
            "/convert",
            &conversion_review("c2", "example.com/v1", converted),
        )
        .await;
    assert_eq!(
        review["response"]["convertedObjects"],
        json!([widget("a", 1), widget("b", 2)])
    );

    // A failing object fails the review.
    let review = running
        .review(
            "/convert",
            &conversion_review("c3", "example.com/v3", vec![widget("a", 1)]),
        )
        .await;
    assert_eq!(review["response"]["uid"], "c3");
    assert_eq!(review["response"]["result"]["status"], "Failure");
    assert!(review["response"]["result"]["message"]
        .as_str()
        .unwrap()
        .contains("unknown version example.com/v3"));

    // A panicking converter fails the review; the server goes on.
    let review = running
        .review(
            "/convert",
            &conversion_review("c4", "example.com/v2", vec![widget("x", 13)]),
        )
        .await;
    assert_eq!(review["response"]["uid"], "c4");
    assert_eq!(review["response"]["result"]["status"], "Failure");
    assert_eq!(
        review["response"]["result"]["message"],
        "internal error occurred during conversion"
    );
    let review = running
        .review(
            "/convert",
            &conversion_review("c5", "example.com/v2", vec![widget("y", 3)]),
        )
        .await;
    assert_eq!(review["response"]["result"]["status"], "Success");

    // Undecodable body and a review without request: HTTP 400.
    let (status, _) = running
        .post("/convert", "application/json", b"{broken".to_vec())
        .await;
    assert_eq!(status, 400);
    let (status, _) = running
        .post(
            "/convert",
            "application/json",
            br#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview"}"#.to_vec(),
        )
        .await;
    assert_eq!(status, 400);

    let text = running.metrics();
    assert!(
        text.contains(
            "controller_runtime_webhook_requests_total{webhook=\"/convert\",code=\"400\"} 2\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("controller_runtime_conversion_webhook_panics_total 1\n"),
        "{text}"
    );
    running.stop().await;
}

#[tokio::test]
async fn rotated_certificates_are_served_without_restart() {
    let running = start(|s| {
        s.register("/validate", validating(check_config_map))
            .unwrap()
    })
    .await;
    let old = &running.pki;
    let ok = |r: Result<(u16, Bytes), String>| r.map(|(status, _)| status);
    let body = || {
        serde_json::to_vec(&admission_review(
            "r",
            "CREATE",
            json!({"metadata": {"name": "x"}}),
            None,
        ))
        .unwrap()
    };
    assert_eq!(
        ok(post(
            running.addr,
            &old.connector(&[]),
            "/validate",
            "application/json",
            body()
        )
        .await),
        Ok(200)
    );

    // A broken certificate file is refused and the current pair is kept.
    let errors_before = read_errors(&running.metrics());
    write_atomically(
        &running.dir_path.join("tls.crt"),
        b"-----BEGIN CERTIFICATE-----\nnot base64!\n",
    );
    let mut seen = false;
    for _ in 0..200 {
        if read_errors(&running.metrics()) > errors_before {
            seen = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(seen, "the watcher never read the broken file");
    assert_eq!(
        ok(post(
            running.addr,
            &old.connector(&[]),
            "/validate",
            "application/json",
            body()
        )
        .await),
        Ok(200)
    );

    // A new pair from another CA is picked up by new connections.
    let new = Pki::new("second");
    new.install(&running.dir_path);
    let mut result = Err(String::new());
    for _ in 0..200 {
        result = ok(post(
            running.addr,
            &new.connector(&[]),
            "/validate",
            "application/json",
            body(),
        )
        .await);
        if result.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(result, Ok(200), "the new certificate was never served");
    let stale = post(
        running.addr,
        &old.connector(&[]),
        "/validate",
        "application/json",
        body(),
    )
    .await;
    assert!(
        stale.is_err(),
        "a client trusting only the old CA still connected: {stale:?}"
    );

    // HTTP/2 is offered through ALPN and works with the new pair.
    let tcp = TcpStream::connect(running.addr).await.unwrap();
    let tls = new
        .connector(&[b"h2"])
        .connect(
            rustls::pki_types::ServerName::try_from("localhost").unwrap(),
            tcp,
        )
        .await
        .unwrap();
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
    let (mut sender, conn) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tls))
            .await
            .unwrap();
    tokio::spawn(conn);
    let request = http::Request::post("https://localhost/validate")
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(Full::new(Bytes::from(body())))
        .unwrap();
    let response = sender.send_request(request).await.unwrap();
    assert_eq!(response.status(), 200);
    let review: Value =
        serde_json::from_slice(&response.into_body().collect().await.unwrap().to_bytes()).unwrap();
    assert_eq!(review["response"]["allowed"], true);

    running.stop().await;
}

fn read_errors(metrics: &str) -> u64 {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix("certwatcher_read_certificate_errors_total "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

#[tokio::test]
async fn metrics_use_controller_runtime_names() {
    let running = start(|s| {
        s.register("/validate", validating(check_config_map))
            .unwrap();
        s.register("/convert", widget_conversion()).unwrap();
    })
    .await;
    let cm = |data: Value| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": data});
    for (uid, data) in [
        ("m1", json!({})),
        ("m2", json!({"password": "x"})),
        ("m3", json!({})),
    ] {
        running
            .review(
                "/validate",
                &admission_review(uid, "CREATE", cm(data), None),
            )
            .await;
    }
    let text = running.metrics();
    let has = |line: &str| {
        assert!(
            text.lines().any(|l| l == line),
            "missing {line:?} in\n{text}"
        )
    };
    has("# TYPE controller_runtime_webhook_requests counter");
    has("controller_runtime_webhook_requests_total{webhook=\"/validate\",code=\"200\"} 3");
    has("controller_runtime_webhook_requests_total{webhook=\"/validate\",code=\"500\"} 0");
    has("controller_runtime_webhook_requests_total{webhook=\"/convert\",code=\"200\"} 0");
    has("# TYPE controller_runtime_webhook_requests_in_flight gauge");
    has("controller_runtime_webhook_requests_in_flight{webhook=\"/validate\"} 0");
    has("# TYPE controller_runtime_webhook_latency_seconds histogram");
    has("controller_runtime_webhook_latency_seconds_count{webhook=\"/validate\"} 3");
    has("controller_runtime_webhook_latency_seconds_bucket{le=\"1000.0\",webhook=\"/validate\"} 3");
    has("controller_runtime_webhook_latency_seconds_count{webhook=\"/convert\"} 0");
    has("certwatcher_read_certificate_errors_total 0");
    assert!(
        text.contains("certwatcher_read_certificate_total "),
        "{text}"
    );
    running.stop().await;
}

#[tokio::test]
async fn started_checker_and_graceful_shutdown() {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::new("checker");
    pki.install(dir.path());
    let mut server = WebhookServer::new(WebhookServerOptions {
        bind_address: "127.0.0.1:0".parse().unwrap(),
        cert_dir: dir.path().to_path_buf(),
        ..WebhookServerOptions::default()
    });
    server
        .register("/validate", validating(check_config_map))
        .unwrap();
    assert!(matches!(
        server.register("/validate", widget_conversion()),
        Err(Error::DuplicatePath(_))
    ));
    assert!(matches!(
        server.register("validate", widget_conversion()),
        Err(Error::InvalidPath(_))
    ));
    let checker = server.started_checker();
    assert!(matches!(checker.check().await, Err(Error::NotStarted)));

    let bound = server.bind().await.unwrap();
    let addr = bound.local_addr();
    assert!(matches!(checker.check().await, Err(Error::NotStarted)));
    let cancel = CancellationToken::new();
    let task = tokio::spawn(bound.serve(cancel.clone()));
    let mut ready = Err(Error::NotStarted);
    for _ in 0..100 {
        ready = checker.check().await;
        if ready.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    ready.unwrap();

    cancel.cancel();
    task.await.unwrap().unwrap();
    assert!(post(
        addr,
        &pki.connector(&[]),
        "/validate",
        "application/json",
        b"{}".to_vec()
    )
    .await
    .is_err());
    assert!(matches!(checker.check().await, Err(Error::Unreachable(_))));
}

#[tokio::test]
async fn missing_certificate_fails_at_bind() {
    let dir = tempfile::tempdir().unwrap();
    let server = WebhookServer::new(WebhookServerOptions {
        bind_address: "127.0.0.1:0".parse().unwrap(),
        cert_dir: dir.path().to_path_buf(),
        ..WebhookServerOptions::default()
    });
    let err = server.bind().await.unwrap_err();
    assert!(matches!(err, Error::ReadFile { .. }), "{err}");
    assert!(err.to_string().contains("tls.crt"), "{err}");
}

/// An async validator that waits for a permit: a request that stays in flight on demand.
struct Gate(Arc<tokio::sync::Semaphore>);

impl coxswain_runtime::webhook::Validator for Gate {
    async fn validate(&self, _request: &AdmissionRequest) -> Result<Vec<String>, Denial> {
        let _permit = self
            .0
            .acquire()
            .await
            .map_err(|e| Denial::new(e.to_string()))?;
        Ok(vec![])
    }
}

#[tokio::test]
async fn shutdown_lets_requests_in_flight_finish() {
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let hook = AdmissionWebhook::validator(Gate(Arc::clone(&gate)));
    let running = start(|s| s.register("/slow", hook).unwrap()).await;
    let body = serde_json::to_vec(&admission_review(
        "slow-1",
        "CREATE",
        json!({"metadata": {"name": "x"}}),
        None,
    ))
    .unwrap();
    let client = running.pki.connector(&[]);
    let addr = running.addr;
    let request =
        tokio::spawn(async move { post(addr, &client, "/slow", "application/json", body).await });

    // Wait until the request is being handled, then ask the server to stop.
    let in_flight = "controller_runtime_webhook_requests_in_flight{webhook=\"/slow\"} 1";
    let mut seen = false;
    for _ in 0..200 {
        if running.metrics().lines().any(|l| l == in_flight) {
            seen = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(seen, "the request never reached the handler");
    running.cancel.cancel();

    // New connections are refused once the listener is closed...
    let mut refused = false;
    for _ in 0..200 {
        if TcpStream::connect(addr).await.is_err() {
            refused = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        refused,
        "the listener stayed open after shutdown was requested"
    );
    // ...while the request in flight is answered.
    gate.add_permits(1);
    let (status, body) = request.await.unwrap().unwrap();
    assert_eq!(status, 200);
    let review: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(review["response"]["uid"], "slow-1");
    assert_eq!(review["response"]["allowed"], true);
    running.task.await.unwrap().unwrap();
}

#[tokio::test]
async fn tls_options_are_enforced() {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::new("options");
    pki.install(dir.path());
    write_atomically(&dir.path().join("ca.crt"), pki.ca_pem.as_bytes());
    let serve = |options: WebhookServerOptions| async move {
        let mut server = WebhookServer::new(WebhookServerOptions {
            bind_address: "127.0.0.1:0".parse().unwrap(),
            ..options
        });
        server
            .register("/validate", validating(check_config_map))
            .unwrap();
        let bound = server.bind().await.unwrap();
        let addr = bound.local_addr();
        let cancel = CancellationToken::new();
        let task = tokio::spawn(bound.serve(cancel.clone()));
        (addr, cancel, task)
    };
    let body = || {
        serde_json::to_vec(&admission_review(
            "t",
            "CREATE",
            json!({"metadata": {"name": "x"}}),
            None,
        ))
        .unwrap()
    };
    let tls12: &[&'static rustls::SupportedProtocolVersion] = &[&rustls::version::TLS12];

    // Default: TLS 1.2 is accepted.
    let (addr, cancel, task) = serve(WebhookServerOptions {
        cert_dir: dir.path().to_path_buf(),
        ..WebhookServerOptions::default()
    })
    .await;
    let answer = post(
        addr,
        &pki.connector_with(tls12, &[], false),
        "/validate",
        "application/json",
        body(),
    )
    .await;
    assert_eq!(answer.map(|(status, _)| status), Ok(200));
    cancel.cancel();
    task.await.unwrap().unwrap();

    // Minimum TLS 1.3: a TLS 1.2-only client is refused, a TLS 1.3 one is served.
    let (addr, cancel, task) = serve(WebhookServerOptions {
        cert_dir: dir.path().to_path_buf(),
        tls_min_version: TlsVersion::Tls13,
        ..WebhookServerOptions::default()
    })
    .await;
    let answer = post(
        addr,
        &pki.connector_with(tls12, &[], false),
        "/validate",
        "application/json",
        body(),
    )
    .await;
    assert!(answer.is_err(), "{answer:?}");
    let answer = post(
        addr,
        &pki.connector(&[]),
        "/validate",
        "application/json",
        body(),
    )
    .await;
    assert_eq!(answer.map(|(status, _)| status), Ok(200));
    cancel.cancel();
    task.await.unwrap().unwrap();

    // Client CA: a client without a certificate is refused, one with a certificate signed by
    // the CA is served.
    let (addr, cancel, task) = serve(WebhookServerOptions {
        cert_dir: dir.path().to_path_buf(),
        client_ca_name: Some("ca.crt".to_string()),
        ..WebhookServerOptions::default()
    })
    .await;
    let answer = post(
        addr,
        &pki.connector(&[]),
        "/validate",
        "application/json",
        body(),
    )
    .await;
    assert!(answer.is_err(), "{answer:?}");
    let with_cert = pki.connector_with(rustls::DEFAULT_VERSIONS, &[], true);
    let answer = post(addr, &with_cert, "/validate", "application/json", body()).await;
    assert_eq!(answer.map(|(status, _)| status), Ok(200));
    cancel.cancel();
    task.await.unwrap().unwrap();
}

/// The manager runs the webhook server once a webhook is registered: the review is
/// answered on the address it reports, the `webhook` readiness check passes while it
/// serves, and the webhook metrics are in the manager's registry.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn manager_serves_registered_webhooks() {
    use coxswain_runtime::manager::{Manager, ManagerOptions};
    let env = coxswain_runtime::envtest::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::new("manager");
    pki.install(dir.path());
    let mgr = Arc::new(
        Manager::new(
            env.kube_config().await.unwrap(),
            ManagerOptions {
                metrics_bind_address: "0".into(),
                health_probe_bind_address: "127.0.0.1:0".into(),
                webhook: WebhookServerOptions {
                    bind_address: "127.0.0.1:0".parse().unwrap(),
                    cert_dir: dir.path().to_path_buf(),
                    ..WebhookServerOptions::default()
                },
                ..ManagerOptions::default()
            },
        )
        .unwrap(),
    );
    mgr.register_webhook(
        "/mutate-manager-pod",
        defaulting(|pod: &mut Pod| {
            pod.metadata
                .labels
                .get_or_insert_with(Default::default)
                .insert("via".into(), "manager".into());
        }),
    )
    .unwrap();
    assert!(mgr
        .register_webhook("/mutate-manager-pod", defaulting(|_: &mut Pod| {}))
        .is_err());
    let cancel = CancellationToken::new();
    let (tx, rx) = tokio::sync::oneshot::channel();
    let (m, c) = (mgr.clone(), cancel.clone());
    let task = tokio::spawn(async move {
        m.start_with(c, move |l| {
            let _ = tx.send(l);
        })
        .await
    });
    let listening = rx.await.unwrap();
    let addr = listening.webhook.expect("webhook server listening");
    let review = admission_review("m-1", "CREATE", pod(), None);
    let (status, body) = post(
        addr,
        &pki.connector(&[]),
        "/mutate-manager-pod",
        "application/json",
        serde_json::to_vec(&review).unwrap(),
    )
    .await
    .unwrap();
    assert_eq!(status, 200);
    let answer: Value = serde_json::from_slice(&body).unwrap();
    let response = &answer["response"];
    assert_eq!(response["uid"], "m-1");
    let mut patched = pod();
    json_patch::patch(&mut patched, &decoded_patch(response)).unwrap();
    assert_eq!(patched["metadata"]["labels"]["via"], "manager");
    // readiness includes the webhook server's started check
    let probes = listening.health_probes.unwrap();
    let mut ready = false;
    for _ in 0..100 {
        let mut s = TcpStream::connect(probes).await.unwrap();
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        s.write_all(b"GET /readyz?verbose HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
            .await
            .unwrap();
        let mut text = String::new();
        s.read_to_string(&mut text).await.unwrap();
        if text.starts_with("HTTP/1.1 200") && text.contains("[+]webhook ok") {
            ready = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(ready, "the webhook readiness check passes while serving");
    let metrics = coxswain_runtime::metrics::global().encode();
    assert!(
        metrics.contains(
            r#"controller_runtime_webhook_requests_total{webhook="/mutate-manager-pod",code="200"} 1"#
        ),
        "{metrics}"
    );
    cancel.cancel();
    task.await.unwrap().unwrap();
}

/// The embedded API server converts a custom resource through this webhook server: a
/// CRD with `Webhook` conversion (v1 stored, v2 served through the webhook) is written
/// and read in both versions, listed, watched and patched in v2.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_server_converts_custom_resources_through_the_webhook() {
    use base64::Engine as _;
    use kube::api::{ApiResource, DynamicObject, GroupVersionKind, PatchParams, PostParams};

    let hook = start(|s| s.register("/convert", widget_conversion()).unwrap()).await;
    let env = coxswain_runtime::envtest::start().await.expect("env");
    let client = env.client.clone();
    let ca = base64::engine::general_purpose::STANDARD.encode(hook.pki.ca_pem.as_bytes());
    let schema = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [
                {"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": schema}},
                {"name": "v2", "served": true, "storage": false, "schema": {"openAPIV3Schema": schema}}
            ],
            "conversion": {"strategy": "Webhook", "webhook": {
                "conversionReviewVersions": ["v1"],
                "clientConfig": {"url": format!("https://127.0.0.1:{}/convert", hook.addr.port()), "caBundle": ca}
            }}
        }
    });
    let crds: kube::Api<DynamicObject> = kube::Api::all_with(
        client.clone(),
        &ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
            "customresourcedefinitions",
        ),
    );
    crds.create(
        &PostParams::default(),
        &serde_json::from_value(crd).unwrap(),
    )
    .await
    .expect("create CRD");
    let api = |v: &str| -> kube::Api<DynamicObject> {
        kube::Api::namespaced_with(
            client.clone(),
            "default",
            &ApiResource::from_gvk_with_plural(
                &GroupVersionKind::gvk("example.com", v, "Widget"),
                "widgets",
            ),
        )
    };
    let (v1, v2) = (api("v1"), api("v2"));
    let mut w = None;
    for _ in 0..50 {
        let watch = v2.watch(&kube::api::WatchParams::default(), "0").await;
        if let Ok(s) = watch {
            w = Some(s);
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut watch = Box::pin(w.expect("watch v2"));
    // written in v1 (stored as is), read in v2 through the webhook
    v1.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "a"}, "spec": {"size": 3}})).unwrap(),
    )
    .await
    .expect("create v1");
    let got = v2.get("a").await.expect("get v2");
    assert_eq!(got.types.as_ref().unwrap().api_version, "example.com/v2");
    assert_eq!(got.data["spec"], json!({"dimensions": {"size": 3}}));
    // written in v2 (converted to v1 for storage), read in v1
    v2.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"apiVersion": "example.com/v2", "kind": "Widget", "metadata": {"name": "b"}, "spec": {"dimensions": {"size": 5}}})).unwrap(),
    )
    .await
    .expect("create v2");
    assert_eq!(
        v1.get("b").await.expect("get v1").data["spec"],
        json!({"size": 5})
    );
    // lists and watch events come in v2
    let list = v2.list(&Default::default()).await.expect("list v2");
    let sizes: Vec<Value> = list
        .items
        .iter()
        .map(|i| i.data["spec"]["dimensions"]["size"].clone())
        .collect();
    assert_eq!(sizes, vec![json!(3), json!(5)]);
    use futures::StreamExt;
    let ev = tokio::time::timeout(Duration::from_secs(5), watch.next())
        .await
        .expect("event")
        .expect("some")
        .expect("ok");
    match ev {
        kube::api::WatchEvent::Added(o) => {
            assert_eq!(o.types.unwrap().api_version, "example.com/v2");
            assert_eq!(o.data["spec"]["dimensions"]["size"], 3);
        }
        other => panic!("unexpected event {other:?}"),
    }
    // a merge patch in v2 is applied to the v2 form
    let patched = v2
        .patch(
            "a",
            &PatchParams::default(),
            &kube::api::Patch::Merge(json!({"spec": {"dimensions": {"size": 7}}})),
        )
        .await
        .expect("patch v2");
    assert_eq!(patched.data["spec"]["dimensions"]["size"], 7);
    assert_eq!(
        v1.get("a").await.expect("get").data["spec"],
        json!({"size": 7})
    );
    // the webhook failing (its panic on size 13) is a 500 naming the object's kind
    v1.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "unlucky"}, "spec": {"size": 13}})).unwrap(),
    )
    .await
    .expect("create v1");
    match v2.get("unlucky").await.expect_err("webhook fails") {
        kube::Error::Api(s) => {
            assert_eq!(s.code, 500);
            assert!(
                s.message.starts_with("Internal error occurred: conversion webhook for example.com/v1, Kind=Widget failed"),
                "{}",
                s.message
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        v1.get("unlucky").await.expect("get").data["spec"],
        json!({"size": 13})
    );
    hook.cancel.cancel();
}
