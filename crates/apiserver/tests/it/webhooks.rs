//! Admission webhooks through the API, with webhook servers in the test process (HTTPS,
//! certificates of a CA made here, given to the server as `caBundle`): denials with
//! upstream's messages, JSONPatch mutations (before validation), `failurePolicy`
//! Fail/Ignore for an unreachable webhook, timeouts, dry run and side effects,
//! reinvocation, namespace selectors, match conditions, `v1beta1` reviews, DELETE and
//! the status subresource, `matchPolicy: Equivalent` and `service` references mapped
//! to a local address.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use serde_json::{json, Value};

use crate::common::{self, Server};

const JSON: &str = "application/json";

/// What a webhook handler answers: the response object (`uid` filled in when absent)
/// and how long to wait first.
type Handler = Arc<dyn Fn(&Value) -> (Value, Duration) + Send + Sync>;

/// An HTTPS webhook server: handlers by path, every review received kept.
struct Hooks {
    port: u16,
    ca_b64: String,
    seen: Arc<Mutex<Vec<(String, Value)>>>,
    _rt: tokio::runtime::Runtime,
}

impl Hooks {
    fn start(handlers: Vec<(&str, Handler)>) -> Hooks {
        use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
        let mut ca = CertificateParams::new(Vec::<String>::new()).expect("ca params");
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.distinguished_name.push(
            rcgen::DnType::CommonName,
            format!("webhook-test-ca-{}", uuid::Uuid::new_v4()),
        );
        let ca_key = KeyPair::generate().expect("ca key");
        let ca_cert = ca.self_signed(&ca_key).expect("ca cert");
        let params = CertificateParams::new(vec![
            "127.0.0.1".to_string(),
            "localhost".to_string(),
            "hook.default.svc".to_string(),
            "external.default.svc".to_string(),
        ])
        .expect("params");
        let key = KeyPair::generate().expect("key");
        let cert = params
            .signed_by(&key, &Issuer::new(ca, ca_key))
            .expect("cert");
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let tls = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("versions")
            .with_no_client_auth()
            .with_single_cert(
                vec![cert.der().clone()],
                rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
            )
            .expect("server config");
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls));
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime");
        let listener = rt
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let handlers: Arc<HashMap<String, Handler>> = Arc::new(
            handlers
                .into_iter()
                .map(|(p, h)| (p.to_string(), h))
                .collect(),
        );
        let seen = Arc::new(Mutex::new(Vec::new()));
        let seen2 = Arc::clone(&seen);
        rt.spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    return;
                };
                let acceptor = acceptor.clone();
                let handlers = Arc::clone(&handlers);
                let seen = Arc::clone(&seen2);
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let service = hyper::service::service_fn(move |req: http::Request<hyper::body::Incoming>| {
                        let handlers = Arc::clone(&handlers);
                        let seen = Arc::clone(&seen);
                        async move {
                            let path = req.uri().path().to_string();
                            let query = req.uri().query().unwrap_or("").to_string();
                            let body = req.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default();
                            let review: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                            seen.lock().unwrap().push((format!("{path}?{query}"), review.clone()));
                            let (mut response, delay) = match handlers.get(&path) {
                                Some(h) => h(&review),
                                None => (json!({"allowed": true}), Duration::ZERO),
                            };
                            tokio::time::sleep(delay).await;
                            if response.get("uid").is_none() {
                                response["uid"] = review["request"]["uid"].clone();
                            }
                            let api_version = review["apiVersion"].clone();
                            let answer = json!({"apiVersion": api_version, "kind": "AdmissionReview", "response": response});
                            Ok::<_, std::convert::Infallible>(
                                http::Response::builder()
                                    .header("content-type", "application/json")
                                    .body(Full::new(Bytes::from(answer.to_string())))
                                    .expect("response"),
                            )
                        }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                        .await;
                });
            }
        });
        Hooks {
            port,
            ca_b64: base64::engine::general_purpose::STANDARD.encode(ca_cert.pem()),
            seen,
            _rt: rt,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("https://127.0.0.1:{}{path}", self.port)
    }

    /// The reviews received on `path`.
    fn reviews(&self, path: &str) -> Vec<Value> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .filter(|(p, _)| p.split('?').next() == Some(path))
            .map(|(_, r)| r.clone())
            .collect()
    }

    fn client_config(&self, path: &str) -> Value {
        json!({"url": self.url(path), "caBundle": self.ca_b64})
    }
}

fn handler(f: impl Fn(&Value) -> Value + Send + Sync + 'static) -> Handler {
    Arc::new(move |r| (f(r), Duration::ZERO))
}

fn deny(message: &'static str) -> Handler {
    handler(
        move |_| json!({"allowed": false, "status": {"code": 403, "reason": "Forbidden", "message": message}}),
    )
}

fn patch(ops: Value) -> Value {
    json!({"allowed": true, "patchType": "JSONPatch",
           "patch": base64::engine::general_purpose::STANDARD.encode(ops.to_string())})
}

fn post(s: &Server, path: &str, body: Value) -> (u16, Value) {
    s.json("POST", path, JSON, JSON, &body)
}

fn webhook(name: &str, client: Value, rules: Value) -> Value {
    json!({"name": name, "clientConfig": client, "rules": rules,
           "sideEffects": "None", "admissionReviewVersions": ["v1"]})
}

fn configmap_rules(ops: &[&str]) -> Value {
    json!([{"operations": ops, "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}])
}

fn validating(s: &Server, name: &str, hooks: Vec<Value>) {
    let (code, v) = post(
        s,
        "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
        json!({"metadata": {"name": name}, "webhooks": hooks}),
    );
    assert_eq!(code, 201, "{v}");
}

fn mutating(s: &Server, name: &str, hooks: Vec<Value>) {
    let (code, v) = post(
        s,
        "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations",
        json!({"metadata": {"name": name}, "webhooks": hooks}),
    );
    assert_eq!(code, 201, "{v}");
}

fn namespace(s: &Server, name: &str, labels: Value) {
    let (code, v) = post(
        s,
        "/api/v1/namespaces",
        json!({"metadata": {"name": name, "labels": labels}}),
    );
    assert_eq!(code, 201, "{v}");
}

fn configmap(name: &str, data: Value) -> Value {
    json!({"metadata": {"name": name}, "data": data})
}

#[test]
fn a_validating_webhook_denies_with_upstreams_status_and_sees_the_review() {
    let hooks = Hooks::start(vec![(
        "/validate",
        handler(|r| {
            if r["request"]["object"]["data"]["bad"] == "true" {
                json!({"allowed": false, "status": {"code": 403, "reason": "Forbidden", "message": "bad data"}, "warnings": ["looked at it"]})
            } else {
                json!({"allowed": true, "warnings": ["looked at it"], "auditAnnotations": {"k": "v"}})
            }
        }),
    )]);
    let s = common::start();
    namespace(&s, "hooked", json!({}));
    validating(
        &s,
        "deny",
        vec![webhook(
            "deny.example.com",
            hooks.client_config("/validate"),
            configmap_rules(&["CREATE"]),
        )],
    );
    let (code, status) = post(
        &s,
        "/api/v1/namespaces/hooked/configmaps",
        configmap("x", json!({"bad": "true"})),
    );
    assert_eq!(code, 403, "{status}");
    assert_eq!(
        status,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": "admission webhook \"deny.example.com\" denied the request: bad data",
               "reason": "Forbidden", "code": 403})
    );
    let (code, head, _) = common::request(
        s.running.addr,
        "POST",
        "/api/v1/namespaces/hooked/configmaps",
        JSON,
        JSON,
        configmap("good", json!({"bad": "no"}))
            .to_string()
            .as_bytes(),
    );
    assert_eq!(code, 201);
    assert!(
        head.contains("299 - \"looked at it\""),
        "warning header missing: {head}"
    );
    let reviews = hooks.reviews("/validate");
    assert_eq!(reviews.len(), 2);
    let r = &reviews[1];
    assert_eq!(r["apiVersion"], "admission.k8s.io/v1");
    let req = &r["request"];
    assert!(req["uid"].as_str().is_some_and(|u| !u.is_empty()));
    assert_eq!(
        req["kind"],
        json!({"group": "", "version": "v1", "kind": "ConfigMap"})
    );
    assert_eq!(
        req["resource"],
        json!({"group": "", "version": "v1", "resource": "configmaps"})
    );
    assert_eq!(req["requestKind"], req["kind"]);
    assert_eq!(req["requestResource"], req["resource"]);
    assert_eq!(req["name"], "good");
    assert_eq!(req["namespace"], "hooked");
    assert_eq!(req["operation"], "CREATE");
    assert_eq!(req["dryRun"], false);
    assert_eq!(req["oldObject"], Value::Null);
    assert_eq!(req["options"]["kind"], "CreateOptions");
    assert_eq!(req["object"]["data"], json!({"bad": "no"}));
    assert_eq!(req["object"]["metadata"]["namespace"], "hooked");
    // the timeout is passed on the URL
    let seen = hooks.seen.lock().unwrap().clone();
    assert!(seen[0].0.ends_with("?timeout=10s"), "{}", seen[0].0);
}

#[test]
fn mutating_webhooks_patch_before_validating_webhooks_look() {
    let hooks = Hooks::start(vec![
        (
            "/mutate",
            handler(|_| patch(json!([{"op": "add", "path": "/data/defaulted", "value": "yes"}]))),
        ),
        (
            "/validate",
            handler(|r| {
                let ok = r["request"]["object"]["data"]["defaulted"] == "yes";
                json!({"allowed": ok, "status": {"message": "not defaulted"}})
            }),
        ),
    ]);
    let s = common::start();
    namespace(&s, "m", json!({}));
    mutating(
        &s,
        "defaulter",
        vec![webhook(
            "default.example.com",
            hooks.client_config("/mutate"),
            configmap_rules(&["CREATE", "UPDATE"]),
        )],
    );
    validating(
        &s,
        "checker",
        vec![webhook(
            "check.example.com",
            hooks.client_config("/validate"),
            configmap_rules(&["CREATE", "UPDATE"]),
        )],
    );
    let (code, created) = post(
        &s,
        "/api/v1/namespaces/m/configmaps",
        configmap("c", json!({"a": "1"})),
    );
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["data"], json!({"a": "1", "defaulted": "yes"}));
    // an update is mutated too (the stored object shows it)
    let mut update = created.clone();
    update["data"] = json!({"a": "2"});
    let (code, updated) = s.json(
        "PUT",
        "/api/v1/namespaces/m/configmaps/c",
        JSON,
        JSON,
        &update,
    );
    assert_eq!(code, 200, "{updated}");
    assert_eq!(updated["data"], json!({"a": "2", "defaulted": "yes"}));
    let r = hooks.reviews("/mutate");
    assert_eq!(r[1]["request"]["operation"], "UPDATE");
    assert_eq!(
        r[1]["request"]["oldObject"]["data"],
        json!({"a": "1", "defaulted": "yes"})
    );
    assert_eq!(r[1]["request"]["options"]["kind"], "UpdateOptions");
}

#[test]
fn an_unreachable_webhook_fails_closed_unless_ignored() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = closed.local_addr().expect("addr").port();
    drop(closed);
    let hooks = Hooks::start(vec![]);
    let s = common::start();
    namespace(&s, "down", json!({}));
    let mut ignore = webhook(
        "ignore.example.com",
        json!({"url": format!("https://127.0.0.1:{port}/ignored"), "caBundle": hooks.ca_b64}),
        configmap_rules(&["CREATE"]),
    );
    ignore["failurePolicy"] = json!("Ignore");
    validating(&s, "ignore", vec![ignore]);
    let (code, v) = post(
        &s,
        "/api/v1/namespaces/down/configmaps",
        configmap("a", json!({})),
    );
    assert_eq!(code, 201, "{v}");
    let fail = webhook(
        "fail.example.com",
        json!({"url": format!("https://127.0.0.1:{port}/failed"), "caBundle": hooks.ca_b64}),
        configmap_rules(&["CREATE"]),
    );
    validating(&s, "fail", vec![fail]);
    let (code, status) = post(
        &s,
        "/api/v1/namespaces/down/configmaps",
        configmap("b", json!({})),
    );
    assert_eq!(code, 500, "{status}");
    let detail = format!(
        "failed calling webhook \"fail.example.com\": failed to call webhook: Post \"https://127.0.0.1:{port}/failed?timeout=10s\": dial tcp 127.0.0.1:{port}: connect: connection refused"
    );
    assert_eq!(
        status,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": format!("Internal error occurred: {detail}"), "reason": "InternalError",
               "details": {"causes": [{"message": detail}]}, "code": 500})
    );
}

#[test]
fn bad_certificates_timeouts_and_bad_answers_fail_the_call() {
    let hooks = Hooks::start(vec![
        (
            "/slow",
            Arc::new(|_: &Value| (json!({"allowed": true}), Duration::from_secs(3))) as Handler,
        ),
        (
            "/wrong-uid",
            handler(|_| json!({"uid": "not-yours", "allowed": true})),
        ),
    ]);
    let other_ca = Hooks::start(vec![]);
    let s = common::start();
    namespace(&s, "t", json!({}));
    let mut slow = webhook(
        "slow.example.com",
        hooks.client_config("/slow"),
        configmap_rules(&["CREATE"]),
    );
    slow["timeoutSeconds"] = json!(1);
    validating(&s, "slow", vec![slow]);
    let (code, status) = post(
        &s,
        "/api/v1/namespaces/t/configmaps",
        configmap("a", json!({})),
    );
    assert_eq!(code, 500, "{status}");
    assert_eq!(
        status["message"],
        format!("Internal error occurred: failed calling webhook \"slow.example.com\": failed to call webhook: Post \"https://127.0.0.1:{}/slow?timeout=1s\": context deadline exceeded", hooks.port)
    );
    let (code, _) = s.json(
        "DELETE",
        "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/slow",
        JSON,
        JSON,
        &Value::Null,
    );
    assert_eq!(code, 200);

    validating(
        &s,
        "uid",
        vec![webhook(
            "uid.example.com",
            hooks.client_config("/wrong-uid"),
            configmap_rules(&["CREATE"]),
        )],
    );
    let (code, status) = post(
        &s,
        "/api/v1/namespaces/t/configmaps",
        configmap("b", json!({})),
    );
    assert_eq!(code, 500, "{status}");
    let msg = status["message"].as_str().unwrap_or("");
    assert!(
        msg.starts_with("Internal error occurred: failed calling webhook \"uid.example.com\": received invalid webhook response: expected response.uid=\"")
            && msg.ends_with("\", got \"not-yours\""),
        "{msg}"
    );
    let (code, _) = s.json(
        "DELETE",
        "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/uid",
        JSON,
        JSON,
        &Value::Null,
    );
    assert_eq!(code, 200);

    // a certificate the caBundle does not vouch for
    validating(
        &s,
        "untrusted",
        vec![webhook(
            "untrusted.example.com",
            json!({"url": hooks.url("/x"), "caBundle": other_ca.ca_b64}),
            configmap_rules(&["CREATE"]),
        )],
    );
    let (code, status) = post(
        &s,
        "/api/v1/namespaces/t/configmaps",
        configmap("c", json!({})),
    );
    assert_eq!(code, 500, "{status}");
    assert!(
        status["message"].as_str().is_some_and(|m| m.ends_with(
            "tls: failed to verify certificate: x509: certificate signed by unknown authority"
        )),
        "{status}"
    );
    assert!(hooks.reviews("/x").is_empty());
}

#[test]
fn dry_runs_reach_only_webhooks_without_side_effects() {
    let hooks = Hooks::start(vec![]);
    let s = common::start();
    namespace(&s, "d", json!({}));
    let mut none = webhook(
        "none.example.com",
        hooks.client_config("/none"),
        configmap_rules(&["CREATE"]),
    );
    none["sideEffects"] = json!("NoneOnDryRun");
    validating(&s, "none", vec![none]);
    let (code, v) = post(
        &s,
        "/api/v1/namespaces/d/configmaps?dryRun=All",
        configmap("a", json!({})),
    );
    assert_eq!(code, 201, "{v}");
    let r = hooks.reviews("/none");
    assert_eq!(r.len(), 1);
    assert_eq!(r[0]["request"]["dryRun"], true);
    assert_eq!(r[0]["request"]["options"]["dryRun"], json!(["All"]));
    // v1 takes only None and NoneOnDryRun (a webhook with side effects cannot be
    // registered, so a dry run never reaches one)
    let mut some = webhook(
        "some.example.com",
        hooks.client_config("/some"),
        configmap_rules(&["CREATE"]),
    );
    some["sideEffects"] = json!("Some");
    let (code, status) = post(
        &s,
        "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
        json!({"metadata": {"name": "some"}, "webhooks": [some]}),
    );
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        status["details"]["causes"][0]["message"],
        "Unsupported value: \"Some\": supported values: \"None\", \"NoneOnDryRun\""
    );
    assert!(hooks.reviews("/some").is_empty());
    // without dry run the NoneOnDryRun webhook is called too
    let (code, _) = post(
        &s,
        "/api/v1/namespaces/d/configmaps",
        configmap("c", json!({})),
    );
    assert_eq!(code, 201);
    assert_eq!(hooks.reviews("/none").len(), 2);
}

#[test]
fn a_webhook_is_reinvoked_once_when_a_later_one_changed_the_object() {
    let hooks = Hooks::start(vec![
        (
            "/first",
            handler(|r| {
                let data = &r["request"]["object"]["data"];
                if data.get("second").is_some() {
                    patch(json!([{"op": "add", "path": "/data/first-saw-second", "value": "yes"}]))
                } else {
                    patch(json!([{"op": "add", "path": "/data/first", "value": "yes"}]))
                }
            }),
        ),
        (
            "/second",
            handler(|_| patch(json!([{"op": "add", "path": "/data/second", "value": "yes"}]))),
        ),
    ]);
    let s = common::start();
    namespace(&s, "r", json!({}));
    let mut first = webhook(
        "first.example.com",
        hooks.client_config("/first"),
        configmap_rules(&["CREATE"]),
    );
    first["reinvocationPolicy"] = json!("IfNeeded");
    mutating(&s, "1-first", vec![first]);
    mutating(
        &s,
        "2-second",
        vec![webhook(
            "second.example.com",
            hooks.client_config("/second"),
            configmap_rules(&["CREATE"]),
        )],
    );
    let (code, created) = post(
        &s,
        "/api/v1/namespaces/r/configmaps",
        configmap("c", json!({"x": "1"})),
    );
    assert_eq!(code, 201, "{created}");
    assert_eq!(
        created["data"],
        json!({"x": "1", "first": "yes", "second": "yes", "first-saw-second": "yes"})
    );
    assert_eq!(hooks.reviews("/first").len(), 2);
    assert_eq!(hooks.reviews("/second").len(), 1);
}

#[test]
fn namespace_selectors_and_match_conditions_choose_requests() {
    let hooks = Hooks::start(vec![("/deny", deny("denied"))]);
    let s = common::start();
    namespace(&s, "watched", json!({"webhooks": "on"}));
    namespace(&s, "free", json!({}));
    let mut hook = webhook(
        "ns.example.com",
        hooks.client_config("/deny"),
        configmap_rules(&["CREATE"]),
    );
    hook["namespaceSelector"] = json!({"matchLabels": {"webhooks": "on"}});
    hook["matchConditions"] = json!([
        {"name": "not-skipped", "expression": "object.metadata.name != 'skip-me'"},
        {"name": "is-create", "expression": "request.operation == 'CREATE'"}
    ]);
    validating(&s, "selective", vec![hook]);
    let (code, _) = post(
        &s,
        "/api/v1/namespaces/free/configmaps",
        configmap("a", json!({})),
    );
    assert_eq!(code, 201);
    let (code, _) = post(
        &s,
        "/api/v1/namespaces/watched/configmaps",
        configmap("skip-me", json!({})),
    );
    assert_eq!(code, 201);
    let (code, status) = post(
        &s,
        "/api/v1/namespaces/watched/configmaps",
        configmap("b", json!({})),
    );
    assert_eq!(code, 403, "{status}");
    assert_eq!(hooks.reviews("/deny").len(), 1);

    // an expression failing to evaluate fails the request under failurePolicy Fail
    let mut broken = webhook(
        "broken.example.com",
        hooks.client_config("/allow"),
        configmap_rules(&["CREATE"]),
    );
    broken["matchConditions"] =
        json!([{"name": "broken", "expression": "object.spec.missing == 1"}]);
    validating(&s, "broken", vec![broken]);
    let (code, status) = post(
        &s,
        "/api/v1/namespaces/free/configmaps",
        configmap("c", json!({})),
    );
    assert_eq!(code, 403, "{status}");
    assert!(
        status["message"].as_str().is_some_and(|m| m.starts_with(
            "configmaps \"c\" is forbidden: failed to evaluate match condition \"broken\""
        )),
        "{status}"
    );
    assert!(hooks.reviews("/allow").is_empty());
}

#[test]
fn match_conditions_ask_the_authorizer() {
    let hooks = Hooks::start(vec![
        ("/may", deny("the writer may create")),
        ("/never", deny("only for writers who may not create")),
    ]);
    let s = common::start();
    namespace(&s, "z", json!({}));
    // the request's user (the admin) may create what it creates: called
    let mut may = webhook(
        "may.example.com",
        hooks.client_config("/may"),
        configmap_rules(&["CREATE"]),
    );
    may["matchConditions"] = json!([{"name": "may-create",
        "expression": "authorizer.requestResource.check('create').allowed()"}]);
    // the same check negated (the test server allows everything): never called
    let mut never = webhook(
        "never.example.com",
        hooks.client_config("/never"),
        configmap_rules(&["CREATE"]),
    );
    never["matchConditions"] = json!([{"name": "may-not-create",
        "expression": "!authorizer.group('').resource('configmaps').namespace('z').check('create').allowed()"}]);
    validating(&s, "authz", vec![never, may]);
    let (code, status) = post(
        &s,
        "/api/v1/namespaces/z/configmaps",
        configmap("a", json!({})),
    );
    assert_eq!(code, 403, "{status}");
    assert_eq!(
        status["message"],
        "admission webhook \"may.example.com\" denied the request: the writer may create"
    );
    assert_eq!(hooks.reviews("/may").len(), 1);
    assert!(hooks.reviews("/never").is_empty());
}

#[test]
fn v1beta1_reviews_and_delete_and_status_requests() {
    let hooks = Hooks::start(vec![
        ("/beta", deny("beta says no")),
        ("/delete", deny("keep it")),
        ("/status", deny("no status changes")),
    ]);
    let s = common::start();
    namespace(&s, "b", json!({}));
    // a webhook speaking only v1beta1
    let mut beta = webhook(
        "beta.example.com",
        hooks.client_config("/beta"),
        configmap_rules(&["CREATE"]),
    );
    beta["admissionReviewVersions"] = json!(["v1beta1"]);
    beta["objectSelector"] = json!({"matchLabels": {"beta": "yes"}});
    validating(&s, "beta", vec![beta]);
    let (code, status) = post(
        &s,
        "/api/v1/namespaces/b/configmaps",
        json!({"metadata": {"name": "beta", "labels": {"beta": "yes"}}}),
    );
    assert_eq!(code, 403, "{status}");
    assert_eq!(
        status["message"],
        "admission webhook \"beta.example.com\" denied the request: beta says no"
    );
    assert_eq!(
        hooks.reviews("/beta")[0]["apiVersion"],
        "admission.k8s.io/v1beta1"
    );

    // DELETE: the stored object as oldObject, no object
    let (code, _) = post(
        &s,
        "/api/v1/namespaces/b/configmaps",
        configmap("kept", json!({"k": "v"})),
    );
    assert_eq!(code, 201);
    validating(
        &s,
        "delete",
        vec![webhook(
            "delete.example.com",
            hooks.client_config("/delete"),
            configmap_rules(&["DELETE"]),
        )],
    );
    let (code, status) = s.json(
        "DELETE",
        "/api/v1/namespaces/b/configmaps/kept",
        JSON,
        JSON,
        &Value::Null,
    );
    assert_eq!(code, 403, "{status}");
    assert_eq!(
        status["message"],
        "admission webhook \"delete.example.com\" denied the request: keep it"
    );
    let r = &hooks.reviews("/delete")[0]["request"];
    assert_eq!(r["operation"], "DELETE");
    assert_eq!(r["object"], Value::Null);
    assert_eq!(r["oldObject"]["data"], json!({"k": "v"}));
    assert_eq!(r["options"]["kind"], "DeleteOptions");
    let (code, _) = s.json(
        "GET",
        "/api/v1/namespaces/b/configmaps/kept",
        JSON,
        JSON,
        &Value::Null,
    );
    assert_eq!(code, 200);

    // the status subresource: a rule for deployments/status only
    let (code, dep) = post(
        &s,
        "/apis/apps/v1/namespaces/b/deployments",
        json!({"metadata": {"name": "d"}, "spec": {"selector": {"matchLabels": {"a": "b"}},
               "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}}),
    );
    assert_eq!(code, 201, "{dep}");
    validating(
        &s,
        "status",
        vec![webhook(
            "status.example.com",
            hooks.client_config("/status"),
            json!([{"operations": ["UPDATE"], "apiGroups": ["apps"], "apiVersions": ["*"], "resources": ["deployments/status"]}]),
        )],
    );
    let mut d = dep.clone();
    d["metadata"]["labels"] = json!({"x": "y"});
    let (code, v) = s.json(
        "PUT",
        "/apis/apps/v1/namespaces/b/deployments/d",
        JSON,
        JSON,
        &d,
    );
    assert_eq!(code, 200, "{v}");
    let mut st = v.clone();
    st["status"] = json!({"replicas": 3});
    let (code, status) = s.json(
        "PUT",
        "/apis/apps/v1/namespaces/b/deployments/d/status",
        JSON,
        JSON,
        &st,
    );
    assert_eq!(code, 403, "{status}");
    let r = &hooks.reviews("/status")[0]["request"];
    assert_eq!(r["subResource"], "status");
    assert_eq!(r["requestSubResource"], "status");
    assert_eq!(r["kind"]["kind"], "Deployment");
    assert_eq!(hooks.reviews("/status").len(), 1);
}

#[test]
fn equivalent_versions_and_service_references() {
    let hooks = Hooks::start(vec![(
        "/hpa",
        handler(|r| {
            let ok = r["request"]["object"]["apiVersion"] == "autoscaling/v1";
            json!({"allowed": ok, "status": {"message": "expected autoscaling/v1"}})
        }),
    )]);
    let port = hooks.port;
    let s = common::start_with(move |c| {
        c.service_map
            .insert("default", "hook", 443, format!("127.0.0.1:{port}"));
    });
    namespace(&s, "h", json!({}));
    let mut hook = webhook(
        "hpa.example.com",
        json!({"service": {"namespace": "default", "name": "hook", "path": "/hpa"}, "caBundle": hooks.ca_b64}),
        json!([{"operations": ["CREATE"], "apiGroups": ["autoscaling"], "apiVersions": ["v1"], "resources": ["horizontalpodautoscalers"]}]),
    );
    hook["matchPolicy"] = json!("Equivalent");
    validating(&s, "hpa", vec![hook]);
    let (code, v) = post(
        &s,
        "/apis/autoscaling/v2/namespaces/h/horizontalpodautoscalers",
        json!({"metadata": {"name": "a"}, "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"},
               "minReplicas": 1, "maxReplicas": 3}}),
    );
    assert_eq!(code, 201, "{v}");
    let r = &hooks.reviews("/hpa")[0]["request"];
    assert_eq!(
        r["kind"],
        json!({"group": "autoscaling", "version": "v1", "kind": "HorizontalPodAutoscaler"})
    );
    assert_eq!(r["resource"]["version"], "v1");
    assert_eq!(r["requestKind"]["version"], "v2");
    assert_eq!(r["requestResource"]["version"], "v2");
    // an Exact webhook for v1 is not called for v2 requests
    let (code, _) = s.json(
        "DELETE",
        "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/hpa",
        JSON,
        JSON,
        &Value::Null,
    );
    assert_eq!(code, 200);
    let mut exact = webhook(
        "exact.example.com",
        json!({"service": {"namespace": "default", "name": "hook", "path": "/exact"}, "caBundle": hooks.ca_b64}),
        json!([{"operations": ["CREATE"], "apiGroups": ["autoscaling"], "apiVersions": ["v1"], "resources": ["horizontalpodautoscalers"]}]),
    );
    exact["matchPolicy"] = json!("Exact");
    validating(&s, "exact", vec![exact]);
    let (code, _) = post(
        &s,
        "/apis/autoscaling/v2/namespaces/h/horizontalpodautoscalers",
        json!({"metadata": {"name": "b"}, "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"},
               "minReplicas": 1, "maxReplicas": 3}}),
    );
    assert_eq!(code, 201);
    assert!(hooks.reviews("/exact").is_empty());
    // an unmapped service that is not in the cluster: not found
    validating(
        &s,
        "missing",
        vec![webhook(
            "missing.example.com",
            json!({"service": {"namespace": "default", "name": "nowhere"}, "caBundle": hooks.ca_b64}),
            configmap_rules(&["CREATE"]),
        )],
    );
    let (code, status) = post(
        &s,
        "/api/v1/namespaces/h/configmaps",
        configmap("x", json!({})),
    );
    assert_eq!(code, 500, "{status}");
    assert_eq!(
        status["message"],
        "Internal error occurred: failed calling webhook \"missing.example.com\": failed to call webhook: Post \"https://nowhere.default.svc:443/?timeout=10s\": service \"nowhere\" not found"
    );
}

#[test]
fn subresources_are_admitted_with_their_own_objects() {
    let hooks = Hooks::start(vec![
        (
            "/scale",
            handler(|r| {
                let ok = r["request"]["object"]["spec"]["replicas"]
                    .as_i64()
                    .unwrap_or(0)
                    <= 5;
                json!({"allowed": ok, "status": {"message": "at most 5 replicas"}})
            }),
        ),
        ("/evict", deny("no evictions")),
        ("/bind", deny("no bindings")),
    ]);
    let s = common::start();
    namespace(&s, "sub", json!({}));
    let (code, dep) = post(
        &s,
        "/apis/apps/v1/namespaces/sub/deployments",
        json!({"metadata": {"name": "d"}, "spec": {"replicas": 1, "selector": {"matchLabels": {"a": "b"}},
               "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}}),
    );
    assert_eq!(code, 201, "{dep}");
    let rule = |ops: &str, res: &str| json!([{"operations": [ops], "apiGroups": ["*"], "apiVersions": ["*"], "resources": [res]}]);
    validating(
        &s,
        "subresources",
        vec![
            webhook(
                "scale.example.com",
                hooks.client_config("/scale"),
                rule("UPDATE", "deployments/scale"),
            ),
            webhook(
                "evict.example.com",
                hooks.client_config("/evict"),
                rule("CREATE", "pods/eviction"),
            ),
            webhook(
                "bind.example.com",
                hooks.client_config("/bind"),
                rule("CREATE", "pods/binding"),
            ),
        ],
    );
    let scale = |n: i64| {
        json!({"apiVersion": "autoscaling/v1", "kind": "Scale",
               "metadata": {"name": "d", "namespace": "sub"}, "spec": {"replicas": n}})
    };
    let (code, v) = s.json(
        "PUT",
        "/apis/apps/v1/namespaces/sub/deployments/d/scale",
        JSON,
        JSON,
        &scale(3),
    );
    assert_eq!(code, 200, "{v}");
    assert_eq!(v["spec"]["replicas"], 3);
    let (code, status) = s.json(
        "PUT",
        "/apis/apps/v1/namespaces/sub/deployments/d/scale",
        JSON,
        JSON,
        &scale(10),
    );
    // no code in the webhook's status: 400, no reason (upstream `ToStatusErr`)
    assert_eq!(code, 400, "{status}");
    assert!(status.get("reason").is_none(), "{status}");
    assert_eq!(
        status["message"],
        "admission webhook \"scale.example.com\" denied the request: at most 5 replicas"
    );
    let r = &hooks.reviews("/scale")[1]["request"];
    assert_eq!(
        r["kind"],
        json!({"group": "autoscaling", "version": "v1", "kind": "Scale"})
    );
    assert_eq!(
        r["resource"],
        json!({"group": "apps", "version": "v1", "resource": "deployments"})
    );
    assert_eq!(r["subResource"], "scale");
    assert_eq!(r["object"]["kind"], "Scale");
    assert_eq!(r["object"]["spec"]["replicas"], 10);
    assert_eq!(r["oldObject"]["kind"], "Scale");
    assert_eq!(r["oldObject"]["spec"]["replicas"], 3);

    let (code, pod) = post(
        &s,
        "/api/v1/namespaces/sub/pods",
        json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}),
    );
    assert_eq!(code, 201, "{pod}");
    let (code, status) = post(
        &s,
        "/api/v1/namespaces/sub/pods/p/eviction",
        json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "p", "namespace": "sub"}}),
    );
    assert_eq!(code, 403, "{status}");
    assert_eq!(
        status["message"],
        "admission webhook \"evict.example.com\" denied the request: no evictions"
    );
    let r = &hooks.reviews("/evict")[0]["request"];
    assert_eq!(
        r["kind"],
        json!({"group": "policy", "version": "v1", "kind": "Eviction"})
    );
    assert_eq!(r["operation"], "CREATE");
    assert_eq!(r["subResource"], "eviction");
    assert_eq!(r["object"]["kind"], "Eviction");
    let (code, status) = post(
        &s,
        "/api/v1/namespaces/sub/pods/p/binding",
        json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"},
               "target": {"apiVersion": "v1", "kind": "Node", "name": "n1"}}),
    );
    assert_eq!(code, 403, "{status}");
    let r = &hooks.reviews("/bind")[0]["request"];
    assert_eq!(
        r["kind"],
        json!({"group": "", "version": "v1", "kind": "Binding"})
    );
    assert_eq!(r["object"]["target"]["name"], "n1");
    assert_eq!(r["oldObject"], Value::Null);
    // the pod is neither evicted nor bound
    let (_, p) = s.json(
        "GET",
        "/api/v1/namespaces/sub/pods/p",
        JSON,
        JSON,
        &Value::Null,
    );
    assert!(p["spec"]["nodeName"].is_null(), "{p}");
}

#[test]
fn unmapped_services_are_reached_through_their_loopback_endpoints_or_external_name() {
    let hooks = Hooks::start(vec![("/deny", deny("from the cluster's service"))]);
    let s = common::start();
    namespace(&s, "svc", json!({}));
    // a selectorless Service whose EndpointSlice points at the webhook on this host
    let (code, v) = post(
        &s,
        "/api/v1/namespaces/default/services",
        json!({"metadata": {"name": "hook"}, "spec": {"ports": [{"name": "https", "port": 443, "targetPort": 9443}]}}),
    );
    assert_eq!(code, 201, "{v}");
    let (code, v) = post(
        &s,
        "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices",
        json!({"metadata": {"name": "hook-1", "labels": {"kubernetes.io/service-name": "hook"}},
               "addressType": "IPv4",
               "endpoints": [{"addresses": ["127.0.0.1"], "conditions": {"ready": true}}],
               "ports": [{"name": "https", "port": hooks.port, "protocol": "TCP"}]}),
    );
    assert_eq!(code, 201, "{v}");
    let hook = |name: &str, service: &str, port: u16| {
        let mut h = webhook(
            name,
            json!({"service": {"namespace": "default", "name": service, "path": "/deny", "port": port},
                   "caBundle": hooks.ca_b64}),
            configmap_rules(&["CREATE"]),
        );
        h["objectSelector"] = json!({"matchLabels": {"via": service}});
        h
    };
    // an ExternalName Service: its name, on the reference's port
    let (code, v) = post(
        &s,
        "/api/v1/namespaces/default/services",
        json!({"metadata": {"name": "external"}, "spec": {"type": "ExternalName", "externalName": "localhost"}}),
    );
    assert_eq!(code, 201, "{v}");
    validating(
        &s,
        "in-cluster",
        vec![
            hook("slice.example.com", "hook", 443),
            hook("external.example.com", "external", hooks.port),
            {
                let mut h = hook("noport.example.com", "hook", 8443);
                h["objectSelector"] = json!({"matchLabels": {"via": "noport"}});
                h
            },
        ],
    );
    // a port the Service does not have
    let (code, status) = post(
        &s,
        "/api/v1/namespaces/svc/configmaps",
        json!({"metadata": {"name": "noport", "labels": {"via": "noport"}}}),
    );
    assert_eq!(code, 500, "{status}");
    assert_eq!(
        status["message"],
        "Internal error occurred: failed calling webhook \"noport.example.com\": failed to call webhook: Post \"https://hook.default.svc:8443/deny?timeout=10s\": no service port 8443 found for service \"hook\""
    );
    for (service, webhook) in [
        ("hook", "slice.example.com"),
        ("external", "external.example.com"),
    ] {
        let (code, status) = post(
            &s,
            "/api/v1/namespaces/svc/configmaps",
            json!({"metadata": {"name": service, "labels": {"via": service}}}),
        );
        assert_eq!(code, 403, "{status}");
        assert_eq!(
            status["message"],
            format!(
                "admission webhook \"{webhook}\" denied the request: from the cluster's service"
            )
        );
    }
    assert_eq!(hooks.reviews("/deny").len(), 2);
}

#[test]
fn connect_requests_are_admitted_with_their_options() {
    let hooks = Hooks::start(vec![("/exec", deny("no exec here"))]);
    let s = common::start();
    namespace(&s, "c", json!({}));
    let (code, pod) = post(
        &s,
        "/api/v1/namespaces/c/pods",
        json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "app", "image": "i"}]}}),
    );
    assert_eq!(code, 201, "{pod}");
    validating(
        &s,
        "connect",
        vec![webhook(
            "exec.example.com",
            hooks.client_config("/exec"),
            json!([{"operations": ["CONNECT"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods/exec"]}]),
        )],
    );
    let (code, status) = post(
        &s,
        "/api/v1/namespaces/c/pods/p/exec?command=ls&command=-l&stdout=true&container=app",
        Value::Null,
    );
    assert_eq!(code, 403, "{status}");
    assert_eq!(
        status["message"],
        "admission webhook \"exec.example.com\" denied the request: no exec here"
    );
    let r = &hooks.reviews("/exec")[0]["request"];
    assert_eq!(r["operation"], "CONNECT");
    assert_eq!(
        r["kind"],
        json!({"group": "", "version": "v1", "kind": "PodExecOptions"})
    );
    assert_eq!(r["subResource"], "exec");
    assert_eq!(
        r["object"],
        json!({"kind": "PodExecOptions", "apiVersion": "v1", "stdout": true, "container": "app", "command": ["ls", "-l"]})
    );
    // other subresources are not matched
    let (code, status) = s.json(
        "GET",
        "/api/v1/namespaces/c/pods/p/attach?stdout=true",
        JSON,
        JSON,
        &Value::Null,
    );
    assert_ne!(code, 403, "{status}");
    assert_eq!(hooks.reviews("/exec").len(), 1);
}

#[test]
fn bad_patches_and_invalid_mutations_are_refused() {
    let hooks = Hooks::start(vec![
        (
            "/invalid",
            handler(|_| {
                patch(
                    json!([{"op": "add", "path": "/metadata/labels", "value": {"bad label!": "x"}}]),
                )
            }),
        ),
        (
            "/unappliable",
            handler(|_| patch(json!([{"op": "remove", "path": "/data/missing"}]))),
        ),
        (
            "/on-delete",
            handler(|_| patch(json!([{"op": "add", "path": "/x", "value": 1}]))),
        ),
    ]);
    let s = common::start();
    namespace(&s, "p", json!({}));
    let labelled = |name: &str, path: &str, ops: &[&str]| {
        let mut h = webhook(name, hooks.client_config(path), configmap_rules(ops));
        h["objectSelector"] = json!({"matchLabels": {"hook": path.trim_start_matches('/')}});
        h
    };
    mutating(
        &s,
        "patches",
        vec![
            labelled("invalid.example.com", "/invalid", &["CREATE"]),
            labelled("unappliable.example.com", "/unappliable", &["CREATE"]),
            labelled("on-delete.example.com", "/on-delete", &["DELETE"]),
        ],
    );
    // the mutated object is validated as the client's would be
    let (code, status) = post(
        &s,
        "/api/v1/namespaces/p/configmaps",
        json!({"metadata": {"name": "a", "labels": {"hook": "invalid"}}}),
    );
    assert_eq!(code, 422, "{status}");
    assert_eq!(status["reason"], "Invalid");
    // a patch that does not apply
    let (code, status) = post(
        &s,
        "/api/v1/namespaces/p/configmaps",
        json!({"metadata": {"name": "b", "labels": {"hook": "unappliable"}}, "data": {"k": "v"}}),
    );
    assert_eq!(code, 500, "{status}");
    assert_eq!(status["reason"], "InternalError");
    // a patch for a DELETE, which has no object
    let (code, _) = post(
        &s,
        "/api/v1/namespaces/p/configmaps",
        json!({"metadata": {"name": "c", "labels": {"hook": "on-delete"}}}),
    );
    assert_eq!(code, 201);
    let (code, status) = s.json(
        "DELETE",
        "/api/v1/namespaces/p/configmaps/c",
        JSON,
        JSON,
        &Value::Null,
    );
    assert_eq!(code, 500, "{status}");
    assert_eq!(
        status["message"],
        "Internal error occurred: admission webhook \"on-delete.example.com\" attempted to modify the object, which is not supported for this operation"
    );
    let r = &hooks.reviews("/on-delete")[0]["request"];
    assert_eq!(r["operation"], "DELETE");
    assert_eq!(r["object"], Value::Null);
    assert_eq!(r["oldObject"]["metadata"]["name"], "c");
}

#[test]
fn custom_resources_reach_webhooks_of_another_served_version() {
    let hooks = Hooks::start(vec![(
        "/gadgets",
        handler(|r| {
            // registered for v1: the v1beta1 request's object comes as v1
            let ok = r["request"]["object"]["apiVersion"] == "example.com/v1"
                && r["request"]["kind"]["version"] == "v1"
                && r["request"]["requestKind"]["version"] == "v1beta1";
            json!({"allowed": ok, "status": {"message": "not converted"}})
        }),
    )]);
    let s = common::start();
    namespace(&s, "g", json!({}));
    let schema = json!({"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}});
    let (code, v) = post(
        &s,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        json!({"metadata": {"name": "gadgets.example.com"}, "spec": {
        "group": "example.com", "scope": "Namespaced",
        "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
        "versions": [
            {"name": "v1", "served": true, "storage": true, "schema": schema},
            {"name": "v1beta1", "served": true, "storage": false, "schema": schema}
        ]}}),
    );
    assert_eq!(code, 201, "{v}");
    validating(
        &s,
        "gadgets",
        vec![webhook(
            "gadgets.example.com",
            hooks.client_config("/gadgets"),
            json!([{"operations": ["CREATE"], "apiGroups": ["example.com"], "apiVersions": ["v1"], "resources": ["gadgets"]}]),
        )],
    );
    let (code, v) = post(
        &s,
        "/apis/example.com/v1beta1/namespaces/g/gadgets",
        json!({"apiVersion": "example.com/v1beta1", "kind": "Gadget", "metadata": {"name": "a"}, "spec": {"x": 1}}),
    );
    assert_eq!(code, 201, "{v}");
    assert_eq!(v["apiVersion"], "example.com/v1beta1");
    let r = &hooks.reviews("/gadgets")[0]["request"];
    assert_eq!(
        r["resource"],
        json!({"group": "example.com", "version": "v1", "resource": "gadgets"})
    );
    assert_eq!(r["requestResource"]["version"], "v1beta1");
    assert_eq!(r["object"]["spec"], json!({"x": 1}));
}
