//! `pods/log` served from simulated logs (pod annotations plus the container's status),
//! read with kube-rs and raw HTTP: options, upstream's errors, and a followed log that
//! streams new lines and ends when the container stops; `pods/exec` and the other
//! connect subresources answer with a `Status` error.

use crate::common;

use futures::{AsyncBufReadExt, TryStreamExt};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{LogParams, Patch, PatchParams, PostParams};
use kube::Api;
use serde_json::{json, Value};

const STARTED: &str = "2024-05-01T10:00:00Z";

fn pod(name: &str, annotations: Value, containers: &[&str], node: Option<&str>) -> Pod {
    let cs: Vec<Value> = containers
        .iter()
        .map(|c| json!({"name": c, "image": "busybox"}))
        .collect();
    let mut spec = json!({"containers": cs});
    if let Some(n) = node {
        spec["nodeName"] = json!(n);
    }
    serde_json::from_value(json!({
        "metadata": {"name": name, "annotations": annotations},
        "spec": spec,
    }))
    .expect("pod")
}

async fn set_status(api: &Api<Pod>, name: &str, statuses: Value) {
    api.patch_status(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"phase": "Running", "containerStatuses": statuses}})),
    )
    .await
    .expect("status");
}

fn running(c: &str, at: &str) -> Value {
    json!({"name": c, "containerID": format!("containerd://{c}"), "image": "busybox", "imageID": "",
           "ready": true, "restartCount": 0, "state": {"running": {"startedAt": at}}})
}

/// One request through the client's connection: status, content type and body.
async fn raw(client: &kube::Client, method: &str, path: &str) -> (u16, String, Vec<u8>) {
    let req = http::Request::builder()
        .method(method)
        .uri(path)
        .body(if method == "POST" {
            b"{}".to_vec()
        } else {
            Vec::new()
        })
        .expect("request");
    let resp = client
        .send(req.map(kube::client::Body::from))
        .await
        .expect("send");
    let code = resp.status().as_u16();
    let ct = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let body = http_body_util::BodyExt::collect(resp.into_body())
        .await
        .expect("body")
        .to_bytes()
        .to_vec();
    (code, ct, body)
}

fn api_error(e: kube::Error) -> (u16, String, String) {
    match e {
        kube::Error::Api(s) => (s.code, s.reason.clone(), s.message.clone()),
        other => panic!("not an API error: {other}"),
    }
}

#[tokio::test]
async fn pod_logs_serve_the_annotated_lines_with_upstreams_options_and_errors() {
    let (_running, client, _dir) = common::start_with_client().await;
    let api: Api<Pod> = Api::namespaced(client.clone(), "default");
    api.create(
        &PostParams::default(),
        &pod(
            "one",
            json!({"sim.coxswain.dev/log": "alpha\nbeta\ngamma\n"}),
            &["app"],
            Some("n1"),
        ),
    )
    .await
    .expect("create");
    set_status(&api, "one", json!([running("app", STARTED)])).await;
    let all = api.logs("one", &LogParams::default()).await.expect("logs");
    assert_eq!(all, "alpha\nbeta\ngamma\n");
    let tail = LogParams {
        tail_lines: Some(2),
        timestamps: true,
        ..Default::default()
    };
    assert_eq!(
        api.logs("one", &tail).await.expect("tail"),
        "2024-05-01T10:00:00.000000000Z beta\n2024-05-01T10:00:00.000000000Z gamma\n"
    );
    let limited = LogParams {
        limit_bytes: Some(8),
        ..Default::default()
    };
    assert_eq!(api.logs("one", &limited).await.expect("limit"), "alpha\nbe");
    // lines are written at the container's start: a later sinceTime shows none
    let (code, _, body) = raw(
        &client,
        "GET",
        "/api/v1/namespaces/default/pods/one/log?sinceTime=2024-05-01T10:00:01Z",
    )
    .await;
    assert_eq!((code, body.as_slice()), (200, &b""[..]));
    let (code, _, body) = raw(
        &client,
        "GET",
        "/api/v1/namespaces/default/pods/one/log?sinceTime=2024-05-01T10:00:00Z&tailLines=1",
    )
    .await;
    assert_eq!((code, body.as_slice()), (200, &b"gamma\n"[..]));
    let since = LogParams {
        since_seconds: Some(3600),
        ..Default::default()
    };
    // started long ago: nothing in the last hour
    assert_eq!(api.logs("one", &since).await.expect("since"), "");

    // option errors: 422 as upstream's ValidatePodLogOptions
    let bad = LogParams {
        tail_lines: Some(-1),
        ..Default::default()
    };
    let (code, reason, msg) = api_error(api.logs("one", &bad).await.unwrap_err());
    assert_eq!((code, reason.as_str()), (422, "Invalid"));
    assert_eq!(
        msg,
        "PodLogOptions \"one\" is invalid: tailLines: Invalid value: -1: must be greater than or equal to 0"
    );
    // not found, wrong container
    let (code, _, msg) = api_error(api.logs("nope", &LogParams::default()).await.unwrap_err());
    assert_eq!((code, msg.as_str()), (404, "pods \"nope\" not found"));
    let other = LogParams {
        container: Some("sidecar".into()),
        ..Default::default()
    };
    let (code, reason, msg) = api_error(api.logs("one", &other).await.unwrap_err());
    assert_eq!((code, reason.as_str()), (400, "BadRequest"));
    assert_eq!(msg, "container sidecar is not valid for pod one");
    let prev = LogParams {
        previous: true,
        ..Default::default()
    };
    let (code, _, msg) = api_error(api.logs("one", &prev).await.unwrap_err());
    assert_eq!(
        (code, msg.as_str()),
        (
            400,
            "previous terminated container \"app\" in pod \"one\" not found"
        )
    );

    // two containers: one must be named; each has its own lines
    api.create(
        &PostParams::default(),
        &pod(
            "two",
            json!({"sim.coxswain.dev/log.a": "from a", "sim.coxswain.dev/log.b": "from b"}),
            &["a", "b"],
            Some("n1"),
        ),
    )
    .await
    .expect("create two");
    set_status(
        &api,
        "two",
        json!([running("a", STARTED), running("b", STARTED)]),
    )
    .await;
    let (code, _, msg) = api_error(api.logs("two", &LogParams::default()).await.unwrap_err());
    assert_eq!(
        (code, msg.as_str()),
        (
            400,
            "a container name must be specified for pod two, choose one of: [a b]"
        )
    );
    let b = LogParams {
        container: Some("b".into()),
        ..Default::default()
    };
    assert_eq!(api.logs("two", &b).await.expect("b"), "from b\n");

    // a container waiting to start
    api.create(
        &PostParams::default(),
        &pod("waiting", json!({}), &["app"], Some("n1")),
    )
    .await
    .expect("create waiting");
    set_status(
        &api,
        "waiting",
        json!([{"name": "app", "image": "busybox", "imageID": "", "ready": false, "restartCount": 0,
                "state": {"waiting": {"reason": "ContainerCreating"}}}]),
    )
    .await;
    let (code, reason, msg) = api_error(
        api.logs("waiting", &LogParams::default())
            .await
            .unwrap_err(),
    );
    assert_eq!((code, reason.as_str()), (400, "BadRequest"));
    assert_eq!(
        msg,
        "container \"app\" in pod \"waiting\" is waiting to start: ContainerCreating"
    );

    // raw HTTP: text/plain; an unscheduled pod has no log location (204); the mutually
    // exclusive since options; exec answers with a Status
    let (code, head, body) = raw(&client, "GET", "/api/v1/namespaces/default/pods/one/log").await;
    assert_eq!(code, 200);
    assert_eq!(head, "text/plain");
    assert_eq!(body, b"alpha\nbeta\ngamma\n");
    api.create(
        &PostParams::default(),
        &pod("unscheduled", json!({}), &["app"], None),
    )
    .await
    .expect("create unscheduled");
    let (code, _, body) = raw(
        &client,
        "GET",
        "/api/v1/namespaces/default/pods/unscheduled/log",
    )
    .await;
    assert_eq!((code, body.len()), (204, 0));
    let (code, _, body) = raw(
        &client,
        "GET",
        "/api/v1/namespaces/default/pods/one/log?sinceSeconds=5&sinceTime=2024-05-01T10:00:00Z",
    )
    .await;
    let status: Value = serde_json::from_slice(&body).expect("status");
    assert_eq!(code, 422);
    assert_eq!(
        status["message"],
        "PodLogOptions \"one\" is invalid: : Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified"
    );
    let (code, _, _) = raw(&client, "POST", "/api/v1/namespaces/default/pods/one/log").await;
    assert_eq!(code, 405);
    for (path, want) in [
        (
            "exec?command=ls&stdout=true",
            "cannot exec into container \"app\" in pod \"one\": node \"n1\" is simulated and runs no containers",
        ),
        (
            "attach?stdout=true",
            "cannot attach to container \"app\" in pod \"one\": node \"n1\" is simulated and runs no containers",
        ),
        (
            "portforward?ports=80",
            "cannot forward ports to pod \"one\": node \"n1\" is simulated and runs no containers",
        ),
    ] {
        let (code, _, body) = raw(&client, "POST", &format!("/api/v1/namespaces/default/pods/one/{path}")).await;
        let status: Value = serde_json::from_slice(&body).expect("status");
        assert_eq!((code, status["reason"].as_str()), (400, Some("BadRequest")), "{path}");
        assert_eq!(status["message"], want, "{path}");
    }
    let (code, _, body) = raw(
        &client,
        "POST",
        "/api/v1/namespaces/default/pods/waiting/exec?command=ls&stdout=true",
    )
    .await;
    let status: Value = serde_json::from_slice(&body).expect("status");
    assert_eq!(
        (code, status["message"].as_str()),
        (400, Some("container not found (\"app\")"))
    );
    let (code, _, body) = raw(
        &client,
        "GET",
        "/api/v1/namespaces/default/pods/unscheduled/exec?command=ls&stdout=true",
    )
    .await;
    let status: Value = serde_json::from_slice(&body).expect("status");
    assert_eq!(
        (code, status["message"].as_str()),
        (400, Some("pod unscheduled does not have a host assigned"))
    );
}

#[tokio::test]
async fn a_followed_log_streams_new_lines_until_the_container_stops() {
    let (_running, client, _dir) = common::start_with_client().await;
    let api: Api<Pod> = Api::namespaced(client, "default");
    api.create(
        &PostParams::default(),
        &pod(
            "ticker",
            json!({"sim.coxswain.dev/log-interval": "50ms"}),
            &["app"],
            Some("n1"),
        ),
    )
    .await
    .expect("create");
    let started = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string();
    set_status(&api, "ticker", json!([running("app", &started)])).await;
    let follow = LogParams {
        follow: true,
        tail_lines: Some(1),
        ..Default::default()
    };
    let mut lines = api
        .log_stream("ticker", &follow)
        .await
        .expect("stream")
        .lines();
    let mut seen = Vec::new();
    while seen.len() < 4 {
        seen.push(lines.try_next().await.expect("read").expect("a line"));
    }
    let numbers: Vec<u64> = seen
        .iter()
        .map(|l| {
            l.strip_prefix("line ")
                .expect("numbered")
                .parse()
                .expect("number")
        })
        .collect();
    // one line per interval, in order, each new one after the tail
    assert!(numbers.windows(2).all(|w| w[1] == w[0] + 1), "{numbers:?}");
    // the container stops: the stream ends after the lines written until then
    set_status(
        &api,
        "ticker",
        json!([{"name": "app", "containerID": "containerd://app", "image": "busybox", "imageID": "",
                "ready": false, "restartCount": 0,
                "state": {"terminated": {"exitCode": 0, "reason": "Completed", "containerID": "containerd://app",
                          "startedAt": started, "finishedAt": started}}}]),
    )
    .await;
    while let Some(l) = lines.try_next().await.expect("read") {
        assert!(l.starts_with("line "), "{l}");
    }
    // a stopped container's log is whole at once: the lines up to its finish time
    assert_eq!(
        api.logs("ticker", &LogParams::default())
            .await
            .expect("logs"),
        "line 1\n"
    );
}
