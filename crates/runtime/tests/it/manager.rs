//! The manager against the embedded API server: metrics after reconciles, readiness
//! after sync, leader election between managers, graceful stop on SIGTERM.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use coxswain_runtime::builder::ControllerBuilder;
use coxswain_runtime::controller::{Action, ReconcileError};
use coxswain_runtime::envtest;
use coxswain_runtime::healthz;
use coxswain_runtime::manager::{runnable, Listening, Manager, ManagerOptions};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Patch, PatchParams, PostParams};
use kube::Api;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

async fn eventually(what: &str, mut f: impl AsyncFnMut() -> bool) {
    for _ in 0..400 {
        if f().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("timed out: {what}");
}

/// A plain HTTP/1.1 GET: (status, body).
async fn http_get(addr: std::net::SocketAddr, path: &str) -> (u16, String) {
    let mut s = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let req = format!("GET {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).await.expect("write");
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).await.expect("read");
    let text = String::from_utf8_lossy(&buf).to_string();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    // small bodies only: undo chunked framing if present
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        let mut out = String::new();
        let mut rest = body;
        while let Some((size, tail)) = rest.split_once("\r\n") {
            let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
            if n == 0 {
                break;
            }
            out.push_str(&tail[..n.min(tail.len())]);
            rest = tail.get(n + 2..).unwrap_or("");
        }
        out
    } else {
        body.to_string()
    };
    (status, body)
}

/// Parse OpenMetrics text into (name with labels, value); fails on a malformed line.
fn parse_metrics(text: &str) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    let mut saw_eof = false;
    for line in text.lines() {
        assert!(!saw_eof, "content after # EOF");
        if line == "# EOF" {
            saw_eof = true;
            continue;
        }
        if line.starts_with("# HELP ") || line.starts_with("# TYPE ") || line.starts_with("# UNIT ")
        {
            continue;
        }
        let (series, value) = line
            .rsplit_once(' ')
            .unwrap_or_else(|| panic!("bad line {line:?}"));
        let name_end = series.find('{').unwrap_or(series.len());
        let name = &series[..name_end];
        assert!(
            !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':'),
            "bad metric name in {line:?}"
        );
        if name_end < series.len() {
            assert!(series.ends_with('}'), "bad labels in {line:?}");
        }
        let v: f64 = value
            .parse()
            .unwrap_or_else(|_| panic!("bad value in {line:?}"));
        out.insert(series.to_string(), v);
    }
    assert!(saw_eof, "OpenMetrics text ends with # EOF");
    out
}

fn cm(name: &str) -> ConfigMap {
    let mut c = ConfigMap::default();
    c.metadata.name = Some(name.into());
    c
}

fn options() -> ManagerOptions {
    ManagerOptions {
        metrics_bind_address: "127.0.0.1:0".into(),
        health_probe_bind_address: "127.0.0.1:0".into(),
        graceful_shutdown_timeout: Duration::from_secs(10),
        ..ManagerOptions::default()
    }
}

async fn start(
    mgr: Arc<Manager>,
    cancel: CancellationToken,
) -> (
    Listening,
    tokio::task::JoinHandle<Result<(), coxswain_runtime::manager::ManagerError>>,
) {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let task = tokio::spawn(async move {
        mgr.start_with(cancel, move |l| {
            let _ = tx.send(l);
        })
        .await
    });
    (rx.await.expect("servers bound"), task)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_carry_controller_runtime_names_with_values() {
    let env = envtest::start().await.expect("env");
    let api: Api<ConfigMap> = Api::namespaced(env.client.clone(), "default");
    for name in ["ok-1", "ok-2", "ok-3", "bad", "requeue"] {
        api.create(&PostParams::default(), &cm(name))
            .await
            .expect("create");
    }
    let mut opts = options();
    opts.leader_election = true;
    opts.leader_election_id = "metrics-test".into();
    opts.leader_election_namespace = Some("default".into());
    let mgr =
        Arc::new(Manager::new(env.kube_config().await.expect("config"), opts).expect("manager"));
    let requeued = Arc::new(AtomicBool::new(false));
    let r = requeued.clone();
    let controller = ControllerBuilder::new(mgr.cache())
        .named("metrics-test")
        .for_::<ConfigMap>()
        .build(move |_ctx, key: coxswain_runtime::ObjectKey| {
            let r = r.clone();
            async move {
                match key.name() {
                    "bad" => Err(ReconcileError::terminal(std::io::Error::other("bad input"))),
                    "requeue" if !r.swap(true, Ordering::SeqCst) => {
                        Ok(Action::RequeueAfter(Duration::from_millis(10)))
                    }
                    _ => Ok(Action::Done),
                }
            }
        });
    mgr.add(controller).expect("add");
    let cancel = CancellationToken::new();
    let (listening, task) = start(mgr.clone(), cancel.clone()).await;
    let addr = listening.metrics.expect("metrics server");
    let want = [
        (
            r#"controller_runtime_reconcile_total{controller="metrics-test",result="success"}"#,
            4.0,
        ),
        (
            r#"controller_runtime_reconcile_total{controller="metrics-test",result="error"}"#,
            1.0,
        ),
        (
            r#"controller_runtime_reconcile_total{controller="metrics-test",result="requeue_after"}"#,
            1.0,
        ),
        (
            r#"controller_runtime_reconcile_total{controller="metrics-test",result="requeue"}"#,
            0.0,
        ),
        (
            r#"controller_runtime_reconcile_errors_total{controller="metrics-test"}"#,
            1.0,
        ),
        (
            r#"controller_runtime_terminal_reconcile_errors_total{controller="metrics-test"}"#,
            1.0,
        ),
        (
            r#"controller_runtime_reconcile_panics_total{controller="metrics-test"}"#,
            0.0,
        ),
        (
            r#"controller_runtime_reconcile_time_seconds_count{controller="metrics-test"}"#,
            6.0,
        ),
        (
            r#"controller_runtime_max_concurrent_reconciles{controller="metrics-test"}"#,
            1.0,
        ),
        (
            r#"controller_runtime_active_workers{controller="metrics-test"}"#,
            0.0,
        ),
        (
            r#"workqueue_adds_total{name="metrics-test",controller="metrics-test"}"#,
            6.0,
        ),
        (
            r#"workqueue_retries_total{name="metrics-test",controller="metrics-test"}"#,
            1.0,
        ),
        (
            r#"workqueue_depth{name="metrics-test",controller="metrics-test"}"#,
            0.0,
        ),
        (
            r#"workqueue_queue_duration_seconds_count{name="metrics-test",controller="metrics-test"}"#,
            6.0,
        ),
        (
            r#"workqueue_work_duration_seconds_count{name="metrics-test",controller="metrics-test"}"#,
            6.0,
        ),
        (r#"leader_election_master_status{name="metrics-test"}"#, 1.0),
    ];
    let mut last = BTreeMap::new();
    let mut done = false;
    for _ in 0..200 {
        let (status, body) = http_get(addr, "/metrics").await;
        assert_eq!(status, 200);
        last = parse_metrics(&body);
        if want.iter().all(|(k, v)| last.get(*k) == Some(v)) {
            done = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        done,
        "metrics never reached {:?}; last: {:?}",
        want.iter()
            .filter(|(k, v)| last.get(*k) != Some(v))
            .collect::<Vec<_>>(),
        last.iter()
            .filter(|(k, _)| k.contains("metrics-test"))
            .collect::<Vec<_>>()
    );
    let host = env.server().addr.to_string();
    let gets = last
        .iter()
        .filter(|(k, _)| {
            k.starts_with("rest_client_requests_total{")
                && k.contains(r#"method="GET""#)
                && k.contains(&format!(r#"host="{host}""#))
                && k.contains(r#"code="200""#)
        })
        .map(|(_, v)| *v)
        .sum::<f64>();
    assert!(gets >= 1.0, "GETs counted for {host}: {last:?}");
    assert!(last
        .get("process_resident_memory_bytes")
        .is_some_and(|v| *v > 0.0));
    assert!(last
        .keys()
        .any(|k| k.starts_with("controller_runtime_reconcile_time_seconds_bucket{")));
    cancel.cancel();
    task.await.expect("join").expect("clean stop");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readiness_follows_cache_sync_and_checks_show_in_verbose() {
    let mut env = envtest::start().await.expect("env");
    let config = env.kube_config().await.expect("config");
    let mgr = Arc::new(Manager::new(config, options()).expect("manager"));
    // the API server is down: the informers cannot sync
    env.stop().await;
    let controller = ControllerBuilder::new(mgr.cache())
        .named("readiness-test")
        .for_::<ConfigMap>()
        .build(|_ctx, _key| async { Ok(Action::Done) });
    mgr.add(controller).expect("add");
    let flaky = Arc::new(AtomicBool::new(false));
    let f = flaky.clone();
    mgr.add_readyz_check(
        "flaky",
        healthz::check(move || {
            let ok = !f.load(Ordering::SeqCst);
            async move {
                if ok {
                    Ok(())
                } else {
                    Err("flaky is down".to_string())
                }
            }
        }),
    )
    .expect("check");
    assert!(
        mgr.add_readyz_check("flaky", healthz::ping()).is_err(),
        "duplicate name"
    );
    mgr.add_metrics_extra_handler("/debug/hello", axum::routing::get(|| async { "hello" }))
        .expect("extra handler");
    assert!(mgr
        .add_metrics_extra_handler("/metrics", axum::routing::get(|| async { "" }))
        .is_err());
    assert!(mgr
        .add_metrics_extra_handler("/debug/hello", axum::routing::get(|| async { "" }))
        .is_err());
    let cancel = CancellationToken::new();
    let (listening, task) = start(mgr.clone(), cancel.clone()).await;
    let probes = listening.health_probes.expect("probe server");
    assert_eq!(http_get(probes, "/healthz").await, (200, "ok".into()));
    let (status, body) = http_get(probes, "/readyz?verbose").await;
    assert_eq!(status, 500, "{body}");
    assert!(
        body.contains("[-]cache-sync failed: reason withheld"),
        "{body}"
    );
    assert!(body.contains("[+]flaky ok"), "{body}");
    assert_eq!(http_get(probes, "/readyz?exclude=cache-sync").await.0, 200);
    let (status, body) = http_get(probes, "/readyz/cache-sync").await;
    assert_eq!(status, 500);
    assert!(body.contains("informers have not synced"), "{body}");
    // the server comes back: the informers sync, readiness turns true
    env.restart().await.expect("restart");
    eventually("ready after sync", async || {
        http_get(probes, "/readyz").await == (200, "ok".into())
    })
    .await;
    // a failing named check shows in ?verbose
    flaky.store(true, Ordering::SeqCst);
    let (status, body) = http_get(probes, "/readyz?verbose").await;
    assert_eq!(status, 500);
    assert_eq!(
        body,
        "[+]cache-sync ok\n[-]flaky failed: reason withheld\nhealthz check failed\n"
    );
    assert_eq!(
        http_get(listening.metrics.expect("metrics"), "/debug/hello").await,
        (200, "hello".into())
    );
    cancel.cancel();
    task.await.expect("join").expect("clean stop");
}

/// One manager of a pair competing for a lease: counts how many of its leader runnables
/// run at once, across all managers.
struct Contender {
    mgr: Arc<Manager>,
    cancel: CancellationToken,
    task: tokio::task::JoinHandle<Result<(), coxswain_runtime::manager::ManagerError>>,
    running: Arc<AtomicBool>,
}

async fn contender(
    env: &envtest::TestEnv,
    lease: &str,
    active: Arc<AtomicUsize>,
    overlap: Arc<AtomicBool>,
) -> Contender {
    let opts = ManagerOptions {
        leader_election: true,
        leader_election_id: lease.into(),
        leader_election_namespace: Some("default".into()),
        lease_duration: Duration::from_secs(3),
        renew_deadline: Duration::from_secs(2),
        retry_period: Duration::from_millis(200),
        leader_election_release_on_cancel: true,
        metrics_bind_address: "0".into(),
        ..ManagerOptions::default()
    };
    let mgr =
        Arc::new(Manager::new(env.kube_config().await.expect("config"), opts).expect("manager"));
    let running = Arc::new(AtomicBool::new(false));
    let (r, a, o) = (running.clone(), active.clone(), overlap.clone());
    mgr.add(runnable(
        "leader-work",
        true,
        move |cancel: CancellationToken| async move {
            if a.fetch_add(1, Ordering::SeqCst) > 0 {
                o.store(true, Ordering::SeqCst);
            }
            r.store(true, Ordering::SeqCst);
            cancel.cancelled().await;
            r.store(false, Ordering::SeqCst);
            a.fetch_sub(1, Ordering::SeqCst);
            Ok(())
        },
    ))
    .expect("add");
    let cancel = CancellationToken::new();
    let (m, c) = (mgr.clone(), cancel.clone());
    let task = tokio::spawn(async move { m.start(c).await });
    Contender {
        mgr,
        cancel,
        task,
        running,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_leader_among_managers_and_fast_handover_on_release() {
    let env = envtest::start().await.expect("env");
    let active = Arc::new(AtomicUsize::new(0));
    let overlap = Arc::new(AtomicBool::new(false));
    let a = contender(&env, "handover", active.clone(), overlap.clone()).await;
    let b = contender(&env, "handover", active.clone(), overlap.clone()).await;
    let c = contender(&env, "handover", active.clone(), overlap.clone()).await;
    eventually("someone leads", async || active.load(Ordering::SeqCst) == 1).await;
    // several retry periods: still exactly one
    for _ in 0..20 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(active.load(Ordering::SeqCst), 1);
    }
    let all = [a, b, c];
    let leader = all
        .iter()
        .position(|x| x.running.load(Ordering::SeqCst))
        .expect("a leader");
    assert!(all[leader].mgr.is_elected());
    assert_eq!(all.iter().filter(|x| x.mgr.is_elected()).count(), 1);
    // the leader stops gracefully and releases: a successor starts well within the lease
    // duration (3 s) because it need not wait for expiry
    let [a, b, c] = all;
    let mut all = vec![a, b, c];
    let old = all.remove(leader);
    let released_at = std::time::Instant::now();
    old.cancel.cancel();
    old.task.await.expect("join").expect("graceful stop");
    eventually("successor leads", async || {
        active.load(Ordering::SeqCst) == 1
    })
    .await;
    let took = released_at.elapsed();
    assert!(
        took < Duration::from_secs(3),
        "hand-over took {took:?}, the lease duration is 3 s"
    );
    assert!(!overlap.load(Ordering::SeqCst), "two leaders ran at once");
    for x in &all {
        x.cancel.cancel();
    }
    for x in all {
        x.task.await.expect("join").expect("graceful stop");
    }
    assert!(!overlap.load(Ordering::SeqCst), "two leaders ran at once");
}

/// Child process for the SIGTERM tests: runs a manager whose reconcile takes
/// `SLOW_RECONCILE_MS`, prints `RECONCILING` when it starts, writes an annotation when it
/// ends, and exits with the manager's exit code.
fn sigterm_child() -> Option<i32> {
    let kubeconfig = std::env::var("COXSWAIN_SIGTERM_CHILD").ok()?;
    let slow: u64 = std::env::var("SLOW_RECONCILE_MS").ok()?.parse().ok()?;
    let grace: u64 = std::env::var("GRACE_MS").ok()?.parse().ok()?;
    let rt = tokio::runtime::Runtime::new().ok()?;
    Some(rt.block_on(async move {
        let kc = kube::config::Kubeconfig::read_from(&kubeconfig).expect("kubeconfig");
        let config = kube::Config::from_custom_kubeconfig(kc, &Default::default())
            .await
            .expect("config");
        let opts = ManagerOptions {
            metrics_bind_address: "0".into(),
            graceful_shutdown_timeout: Duration::from_millis(grace),
            ..ManagerOptions::default()
        };
        let mgr = Manager::new(config, opts).expect("manager");
        let client = mgr.kube_client().clone();
        let controller = ControllerBuilder::new(mgr.cache())
            .named("slow")
            .for_::<ConfigMap>()
            .build(move |_ctx, key: coxswain_runtime::ObjectKey| {
                let client = client.clone();
                async move {
                    println!("RECONCILING {key}");
                    tokio::time::sleep(Duration::from_millis(slow)).await;
                    let api: Api<ConfigMap> =
                        Api::namespaced(client, key.namespace().unwrap_or("default"));
                    let patch =
                        serde_json::json!({"metadata": {"annotations": {"finished": "true"}}});
                    api.patch(key.name(), &PatchParams::default(), &Patch::Merge(&patch))
                        .await?;
                    println!("FINISHED {key}");
                    Ok(Action::Done)
                }
            });
        mgr.add(controller).expect("add");
        let result = mgr
            .start(coxswain_runtime::manager::shutdown_signal())
            .await;
        println!("STOPPED {result:?}");
        coxswain_runtime::manager::exit_code(&result)
    }))
}

#[test]
fn sigterm_child_entry() {
    // runs only when the SIGTERM tests start this binary as their child
    if let Some(code) = sigterm_child() {
        std::process::exit(code);
    }
}

async fn sigterm_during_slow_reconcile(slow_ms: u64, grace_ms: u64) -> (i32, bool, String) {
    signals_during_slow_reconcile(slow_ms, grace_ms, 1).await
}

async fn signals_during_slow_reconcile(
    slow_ms: u64,
    grace_ms: u64,
    signals: usize,
) -> (i32, bool, String) {
    use std::io::BufRead;
    let env = envtest::start().await.expect("env");
    let api: Api<ConfigMap> = Api::namespaced(env.client.clone(), "default");
    api.create(&PostParams::default(), &cm("slow"))
        .await
        .expect("create");
    let mut child = std::process::Command::new(std::env::current_exe().expect("exe"))
        .args([
            "--exact",
            "manager::sigterm_child_entry",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("COXSWAIN_SIGTERM_CHILD", &env.server().kubeconfig)
        .env("SLOW_RECONCILE_MS", slow_ms.to_string())
        .env("GRACE_MS", grace_ms.to_string())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn child");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            let _ = tx.send(line);
        }
    });
    let mut out = String::new();
    loop {
        let line = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("child reconciles");
        out.push_str(&line);
        out.push('\n');
        if line.contains("RECONCILING") {
            break;
        }
    }
    let pid = child.id().to_string();
    for n in 0..signals {
        if n > 0 {
            // let the first signal be handled before the next one
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
        let killed = std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("kill");
        assert!(killed.success());
    }
    let status = tokio::task::spawn_blocking(move || child.wait())
        .await
        .expect("join")
        .expect("wait");
    while let Ok(line) = rx.try_recv() {
        out.push_str(&line);
        out.push('\n');
    }
    let finished = api
        .get("slow")
        .await
        .expect("get")
        .metadata
        .annotations
        .is_some_and(|a| a.get("finished").map(String::as_str) == Some("true"));
    (status.code().unwrap_or(-1), finished, out)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_lets_a_slow_reconcile_finish_within_the_grace_period() {
    let (code, finished, out) = sigterm_during_slow_reconcile(1500, 20_000).await;
    assert_eq!(code, 0, "graceful stop exits 0; output:\n{out}");
    assert!(
        finished,
        "the in-flight reconcile finished its write; output:\n{out}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_with_a_reconcile_longer_than_the_grace_period_exits_with_the_timeout_code() {
    let (code, finished, out) = sigterm_during_slow_reconcile(30_000, 500).await;
    assert_eq!(
        code,
        coxswain_runtime::manager::EXIT_SHUTDOWN_TIMEOUT,
        "output:\n{out}"
    );
    assert!(!finished, "output:\n{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_sigterm_exits_at_once() {
    let started = std::time::Instant::now();
    let (code, finished, out) = signals_during_slow_reconcile(30_000, 60_000, 2).await;
    assert_eq!(
        code,
        coxswain_runtime::manager::EXIT_FAILED,
        "output:\n{out}"
    );
    assert!(
        !finished,
        "the second signal did not wait for the reconcile"
    );
    assert!(
        started.elapsed() < Duration::from_secs(25),
        "exited before the 30 s reconcile ended"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_runnable_stops_the_manager_and_its_error_is_returned() {
    let env = envtest::start().await.expect("env");
    let mut opts = options();
    opts.metrics_bind_address = "0".into();
    opts.health_probe_bind_address = "0".into();
    let mgr =
        Arc::new(Manager::new(env.kube_config().await.expect("config"), opts).expect("manager"));
    let stopped = Arc::new(AtomicBool::new(false));
    let s = stopped.clone();
    mgr.add(runnable(
        "steady",
        false,
        move |cancel: CancellationToken| async move {
            cancel.cancelled().await;
            s.store(true, Ordering::SeqCst);
            Ok(())
        },
    ))
    .expect("add");
    let cancel = CancellationToken::new();
    let (_listening, task) = start(mgr.clone(), cancel.clone()).await;
    // added after start: runs at once (leader runnables run at once without election)
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    mgr.add(runnable("late", true, move |_cancel| async move {
        let _ = tx.send(());
        Err("disk full".into())
    }))
    .expect("add after start");
    rx.await.expect("the late runnable ran");
    let err = task
        .await
        .expect("join")
        .expect_err("the manager stops with the error");
    assert_eq!(err.to_string(), "late failed: disk full");
    assert_eq!(
        coxswain_runtime::manager::exit_code(&Err(err)),
        coxswain_runtime::manager::EXIT_FAILED
    );
    assert!(
        stopped.load(Ordering::SeqCst),
        "the other runnables were stopped"
    );
    assert!(
        mgr.add(runnable("after", false, |_c| async { Ok(()) }))
            .is_err(),
        "no additions after the stop"
    );
    assert!(
        mgr.start(CancellationToken::new()).await.is_err(),
        "no second start"
    );
}
