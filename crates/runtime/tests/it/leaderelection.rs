//! Leader election against the embedded API server (envtest).
//!
//! Durations are short (lease 2–4 s) so the tests are quick; assertions are about
//! ordering of events and generous bounds, never tight timings.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use coxswain_runtime::envtest::{self, TestEnv};
use coxswain_runtime::leaderelection::{
    default_identity, Error, LeaderElectionConfig, LeaderElector, Leadership, LostReason,
};
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::Api;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::{sleep, timeout, Instant};
use tokio_util::sync::CancellationToken;

const NS: &str = "default";

/// A configuration with short durations.
fn config(
    lease: &str,
    id: &str,
    lease_ms: u64,
    renew_ms: u64,
    retry_ms: u64,
) -> LeaderElectionConfig {
    let mut c = LeaderElectionConfig::new(NS, lease);
    c.identity = id.to_string();
    c.lease_duration = Duration::from_millis(lease_ms);
    c.renew_deadline = Duration::from_millis(renew_ms);
    c.retry_period = Duration::from_millis(retry_ms);
    c.release_on_cancel = true;
    c
}

/// Lease 2 s, renew deadline 1.5 s, retry 0.2 s.
fn fast(lease: &str, id: &str) -> LeaderElectionConfig {
    config(lease, id, 2000, 1500, 200)
}

fn elector(client: &kube::Client, config: LeaderElectionConfig) -> LeaderElector {
    LeaderElector::new(client.clone(), config).expect("valid config")
}

/// Acquire, failing the test if it takes longer than `limit`.
async fn lead(e: &LeaderElector, limit: Duration) -> Leadership {
    timeout(limit, e.acquire(&CancellationToken::new()))
        .await
        .expect("acquired in time")
        .expect("not cancelled")
}

/// Spawn a campaign; the handle yields the leadership and when it was acquired.
fn campaign(e: &LeaderElector) -> (CancellationToken, JoinHandle<Option<(Leadership, Instant)>>) {
    let cancel = CancellationToken::new();
    let (e, c) = (e.clone(), cancel.clone());
    let task = tokio::spawn(async move { e.acquire(&c).await.map(|l| (l, Instant::now())) });
    (cancel, task)
}

async fn spec(client: &kube::Client, name: &str) -> LeaseSpec {
    let api: Api<Lease> = Api::namespaced(client.clone(), NS);
    api.get(name).await.expect("lease").spec.expect("spec")
}

async fn start() -> TestEnv {
    envtest::start().await.expect("test server")
}

// ----- a TCP proxy that the tests can cut -----

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Forward,
    /// Connections stay open but nothing goes through (requests hang).
    Blackhole,
    /// Connections are closed at once.
    Refuse,
}

struct Proxy {
    port: u16,
    mode: watch::Sender<Mode>,
    task: JoinHandle<()>,
}

impl Proxy {
    async fn start(upstream: SocketAddr) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let (mode, rx) = watch::channel(Mode::Forward);
        let task = tokio::spawn(async move {
            loop {
                if let Ok((sock, _)) = listener.accept().await {
                    tokio::spawn(pipe(sock, upstream, rx.clone()));
                }
            }
        });
        Proxy { port, mode, task }
    }

    fn set(&self, mode: Mode) {
        self.mode.send_replace(mode);
    }

    /// A client for the server that goes through this proxy.
    async fn client(&self, env: &TestEnv) -> kube::Client {
        let kc = Kubeconfig::read_from(&env.server().kubeconfig).expect("kubeconfig");
        let mut cfg = kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
            .await
            .expect("config");
        cfg.cluster_url = format!("https://127.0.0.1:{}", self.port)
            .parse()
            .expect("url");
        kube::Client::try_from(cfg).expect("client")
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn pipe(mut down: TcpStream, upstream: SocketAddr, mut mode: watch::Receiver<Mode>) {
    let current = *mode.borrow_and_update();
    match current {
        Mode::Refuse => return,
        Mode::Blackhole => {
            let _ = mode.changed().await;
            return;
        }
        Mode::Forward => {}
    }
    let Ok(mut up) = TcpStream::connect(upstream).await else {
        return;
    };
    let cut = tokio::select! {
        _ = tokio::io::copy_bidirectional(&mut down, &mut up) => false,
        r = mode.wait_for(|m| *m != Mode::Forward) => r.is_ok(),
    };
    if cut && *mode.borrow() == Mode::Blackhole {
        // hold both sockets, silent, until the mode changes again
        let _ = mode.changed().await;
    }
}

// ----- tests -----

/// Two electors campaign, lead for a while, release, and campaign again: at no
/// sample are both leaders, and leadership changes hands.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn never_two_leaders() {
    let env = start().await;
    let a = elector(&env.client, fast("one", "a"));
    let b = elector(&env.client, fast("one", "b"));
    let holders = Arc::new(AtomicUsize::new(0));
    let stop = CancellationToken::new();
    let mut tasks = Vec::new();
    for e in [a.clone(), b.clone()] {
        let (holders, stop) = (holders.clone(), stop.clone());
        tasks.push(tokio::spawn(async move {
            let mut terms = 0;
            while let Some(l) = e.acquire(&stop).await {
                assert_eq!(
                    holders.fetch_add(1, Ordering::SeqCst),
                    0,
                    "acquired while another leads"
                );
                terms += 1;
                tokio::select! {
                    _ = sleep(Duration::from_millis(700)) => {}
                    _ = stop.cancelled() => {}
                }
                assert!(!l.is_lost(), "healthy leader lost: {:?}", l.lost_reason());
                holders.fetch_sub(1, Ordering::SeqCst);
                if terms % 2 == 0 {
                    drop(l); // no release: the other waits out the lease
                } else {
                    l.release().await;
                }
                // give the other candidate a chance
                tokio::select! {
                    _ = sleep(Duration::from_millis(600)) => {}
                    _ = stop.cancelled() => {}
                }
            }
            terms
        }));
    }
    let until = Instant::now() + Duration::from_secs(9);
    let mut samples = 0;
    let (mut saw_a, mut saw_b) = (false, false);
    while Instant::now() < until {
        let (a1, b1, a2) = (a.is_leader(), b.is_leader(), a.is_leader());
        assert!(!(a1 && b1 && a2), "two leaders at once");
        saw_a |= a1;
        saw_b |= b1;
        samples += 1;
        sleep(Duration::from_millis(50)).await;
    }
    stop.cancel();
    let mut terms = Vec::new();
    for t in tasks {
        terms.push(t.await.expect("campaign task"));
    }
    assert!(samples > 50);
    assert!(saw_a && saw_b, "both should have led at some point");
    assert!(terms.iter().all(|t| *t >= 1), "terms: {terms:?}");
}

/// Releasing hands the lease over on the successor's next attempt, well before the
/// lease would expire; `subscribe` follows the leadership.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn release_hands_over_quickly() {
    let env = start().await;
    // lease 4 s, so waiting it out would take >= 4 s after the last renewal
    let a = elector(&env.client, config("handover", "a", 4000, 3000, 200));
    let b = elector(&env.client, config("handover", "b", 4000, 3000, 200));
    let mut status = a.subscribe();
    assert!(!*status.borrow_and_update());
    let la = lead(&a, Duration::from_secs(10)).await;
    assert!(a.is_leader());
    assert!(*status.borrow_and_update());
    let (_cancel, tb) = campaign(&b);
    sleep(Duration::from_secs(1)).await;
    assert!(!b.is_leader(), "b must wait while a renews");

    let lost = la.lost();
    la.release().await;
    let released = Instant::now();
    assert!(lost.is_cancelled(), "released leadership reports the end");
    assert!(!a.is_leader());
    assert!(!*status.borrow_and_update());
    let (lb, acquired) = timeout(Duration::from_secs(10), tb)
        .await
        .expect("b acquired")
        .expect("task")
        .expect("not cancelled");
    let after = acquired.saturating_duration_since(released);
    assert!(
        after < Duration::from_secs(2),
        "hand-over took {after:?}, lease is 4 s"
    );
    assert!(b.is_leader());
    let s = spec(&env.client, "handover").await;
    assert_eq!(s.holder_identity.as_deref(), Some("b"));
    assert_eq!(s.lease_transitions, Some(1));
    assert_eq!(s.lease_duration_seconds, Some(4));
    drop(lb);
}

/// The leader's connection is cut (requests hang): it signals loss once the renew
/// deadline passes, before the other candidate acquires.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cut_leader_loses_before_successor_acquires_blackhole() {
    cut_leader(Mode::Blackhole).await;
}

/// Same, with connections refused (requests fail fast and are retried).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cut_leader_loses_before_successor_acquires_refused() {
    cut_leader(Mode::Refuse).await;
}

async fn cut_leader(mode: Mode) {
    let env = start().await;
    let proxy = Proxy::start(env.server().addr).await;
    let via_proxy = proxy.client(&env).await;
    let (lease_ms, renew_ms) = (3000, 1500);
    let a = elector(&via_proxy, config("cut", "a", lease_ms, renew_ms, 200));
    let b = elector(&env.client, config("cut", "b", lease_ms, renew_ms, 200));
    let la = lead(&a, Duration::from_secs(10)).await;
    let (_cancel, tb) = campaign(&b);
    sleep(Duration::from_secs(1)).await;
    assert!(a.is_leader() && !b.is_leader());

    let lost = la.lost();
    let a2 = a.clone();
    let lost_at = tokio::spawn(async move {
        lost.cancelled().await;
        (Instant::now(), a2.is_leader())
    });
    let cut_at = Instant::now();
    proxy.set(mode);

    let (lb, acquired) = timeout(Duration::from_secs(20), tb)
        .await
        .expect("b acquired")
        .expect("task")
        .expect("not cancelled");
    let (lost_at, leader_when_lost) = timeout(Duration::from_secs(1), lost_at)
        .await
        .expect("a lost leadership")
        .expect("task");
    assert!(!leader_when_lost, "is_leader is false when lost fires");
    assert!(
        lost_at < acquired,
        "a lost at {lost_at:?}, b acquired at {acquired:?}"
    );
    assert_eq!(la.lost_reason(), Some(LostReason::RenewDeadlineExceeded));
    // b waits the lease out (from a's last renewal, shortly before the cut)
    let waited = acquired.duration_since(cut_at);
    assert!(
        waited >= Duration::from_millis(lease_ms - 1000),
        "b acquired after only {waited:?}"
    );
    assert!(!a.is_leader() && b.is_leader());
    assert_eq!(
        spec(&env.client, "cut").await.holder_identity.as_deref(),
        Some("b")
    );

    // when the network comes back, a sees b holding the lease and only waits
    proxy.set(Mode::Forward);
    drop(la);
    let (cancel_a, ta) = campaign(&a);
    sleep(Duration::from_secs(2)).await;
    assert!(!a.is_leader());
    assert_eq!(a.current_leader().as_deref(), Some("b"));
    cancel_a.cancel();
    assert!(ta.await.expect("task").is_none());
    assert!(!lb.is_lost());
}

/// A third candidate (and a second) only waits while the leader renews, for several
/// lease durations; after a release exactly one of them takes over.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_candidates_wait_while_leader_renews() {
    let env = start().await;
    let a = elector(&env.client, fast("three", "a"));
    let b = elector(&env.client, fast("three", "b"));
    let c = elector(&env.client, fast("three", "c"));
    let la = lead(&a, Duration::from_secs(10)).await;
    let (cancel_b, tb) = campaign(&b);
    let (cancel_c, tc) = campaign(&c);
    let until = Instant::now() + Duration::from_secs(6);
    while Instant::now() < until {
        assert!(a.is_leader() && !b.is_leader() && !c.is_leader());
        sleep(Duration::from_millis(50)).await;
    }
    assert!(!la.is_lost());
    assert_eq!(b.current_leader().as_deref(), Some("a"));
    assert_eq!(c.current_leader().as_deref(), Some("a"));
    let s = spec(&env.client, "three").await;
    assert_eq!(s.holder_identity.as_deref(), Some("a"));
    assert_eq!(s.lease_transitions, Some(0));

    la.release().await;
    let deadline = Instant::now() + Duration::from_secs(5);
    while !(b.is_leader() || c.is_leader()) {
        assert!(Instant::now() < deadline, "nobody took over");
        sleep(Duration::from_millis(20)).await;
    }
    sleep(Duration::from_secs(1)).await;
    assert!(b.is_leader() ^ c.is_leader());
    cancel_b.cancel();
    cancel_c.cancel();
    let (rb, rc) = (tb.await.expect("task"), tc.await.expect("task"));
    assert_eq!(rb.is_some() as u8 + rc.is_some() as u8, 1);
    assert_eq!(spec(&env.client, "three").await.lease_transitions, Some(1));
}

/// The Lease record through create, renew, release, hand-over and take-over after
/// expiry; dropping the handle does not release.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lease_record_and_transitions() {
    let env = start().await;
    let a = elector(&env.client, fast("record", "a"));
    let b = elector(&env.client, fast("record", "b"));

    let la = lead(&a, Duration::from_secs(10)).await;
    let s0 = spec(&env.client, "record").await;
    assert_eq!(s0.holder_identity.as_deref(), Some("a"));
    assert_eq!(s0.lease_duration_seconds, Some(2));
    assert_eq!(s0.lease_transitions, Some(0));
    assert!(s0.acquire_time.is_some() && s0.acquire_time == s0.renew_time);

    sleep(Duration::from_millis(800)).await;
    let s1 = spec(&env.client, "record").await;
    assert_eq!(
        s1.acquire_time, s0.acquire_time,
        "renewal keeps acquireTime"
    );
    assert!(s1.renew_time > s0.renew_time, "renewTime advances");
    assert_eq!(s1.lease_transitions, Some(0));

    la.release().await;
    let s2 = spec(&env.client, "record").await;
    assert_eq!(s2.holder_identity.as_deref(), Some(""));
    assert_eq!(s2.lease_duration_seconds, Some(1));
    assert_eq!(s2.lease_transitions, Some(0));

    let lb = lead(&b, Duration::from_secs(10)).await;
    let s3 = spec(&env.client, "record").await;
    assert_eq!(s3.holder_identity.as_deref(), Some("b"));
    assert_eq!(s3.lease_transitions, Some(1));
    assert_eq!(s3.lease_duration_seconds, Some(2));
    assert!(s3.acquire_time > s1.acquire_time);

    // a campaigns; b stops renewing without releasing: a must wait out the lease
    let (_cancel, ta) = campaign(&a);
    sleep(Duration::from_millis(500)).await;
    drop(lb);
    let dropped = Instant::now();
    let (la, acquired) = timeout(Duration::from_secs(10), ta)
        .await
        .expect("a took over")
        .expect("task")
        .expect("not cancelled");
    let waited = acquired.duration_since(dropped);
    // b's last renewal was shortly before the drop (about one retry period); a release
    // would have been taken over within ~0.5 s
    assert!(
        waited >= Duration::from_millis(1000),
        "took over after only {waited:?}"
    );
    let s4 = spec(&env.client, "record").await;
    assert_eq!(s4.holder_identity.as_deref(), Some("a"));
    assert_eq!(s4.lease_transitions, Some(2));
    drop(la);
}

/// API errors during a campaign are retried; a short outage while leading (shorter
/// than the renew deadline) does not lose leadership.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_are_retried() {
    let env = start().await;
    let proxy = Proxy::start(env.server().addr).await;
    let via_proxy = proxy.client(&env).await;
    let a = elector(&via_proxy, config("flaky", "a", 4000, 3000, 200));

    proxy.set(Mode::Refuse);
    let (_cancel, ta) = campaign(&a);
    sleep(Duration::from_secs(1)).await;
    assert!(!a.is_leader());
    proxy.set(Mode::Forward);
    let (la, _) = timeout(Duration::from_secs(10), ta)
        .await
        .expect("acquired after the outage")
        .expect("task")
        .expect("not cancelled");

    sleep(Duration::from_millis(500)).await;
    let before = spec(&env.client, "flaky").await.renew_time;
    proxy.set(Mode::Blackhole);
    sleep(Duration::from_millis(600)).await;
    proxy.set(Mode::Forward);
    let deadline = Instant::now() + Duration::from_secs(5);
    while spec(&env.client, "flaky").await.renew_time == before {
        assert!(Instant::now() < deadline, "no renewal after the outage");
        sleep(Duration::from_millis(100)).await;
    }
    assert!(!la.is_lost(), "lost: {:?}", la.lost_reason());
    assert!(a.is_leader());
}

/// Cancelling a campaign returns `None`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_campaign_returns_none() {
    let env = start().await;
    let a = elector(&env.client, fast("cancel", "a"));
    let b = elector(&env.client, fast("cancel", "b"));
    let _la = lead(&a, Duration::from_secs(10)).await;
    let (cancel, tb) = campaign(&b);
    sleep(Duration::from_millis(500)).await;
    cancel.cancel();
    let r = timeout(Duration::from_secs(5), tb)
        .await
        .expect("returns")
        .expect("task");
    assert!(r.is_none());
    assert!(!b.is_leader());
}

#[tokio::test]
async fn config_validation() {
    let ok = LeaderElectionConfig::new("ns", "name");
    assert_eq!(ok.lease_duration, Duration::from_secs(15));
    assert_eq!(ok.renew_deadline, Duration::from_secs(10));
    assert_eq!(ok.retry_period, Duration::from_secs(2));
    assert!(!ok.release_on_cancel);
    assert_eq!(ok.validate(), Ok(()));

    let with = |f: &dyn Fn(&mut LeaderElectionConfig)| {
        let mut c = LeaderElectionConfig::new("ns", "name");
        f(&mut c);
        c.validate()
    };
    let invalid = |r: Result<(), Error>, needle: &str| match r {
        Err(Error::InvalidConfig(m)) => assert!(m.contains(needle), "{m} should mention {needle}"),
        Ok(()) => panic!("expected an error about {needle}"),
    };
    invalid(
        with(&|c| c.lease_duration = c.renew_deadline),
        "lease_duration",
    );
    invalid(
        with(&|c| c.lease_duration = Duration::from_secs(5)),
        "lease_duration",
    );
    // renew_deadline must exceed retry_period * 1.2
    invalid(
        with(&|c| {
            c.renew_deadline = Duration::from_millis(1200);
            c.retry_period = Duration::from_secs(1);
        }),
        "renew_deadline",
    );
    assert_eq!(
        with(&|c| {
            c.renew_deadline = Duration::from_millis(1300);
            c.retry_period = Duration::from_secs(1);
        }),
        Ok(())
    );
    invalid(with(&|c| c.retry_period = Duration::ZERO), "retry_period");
    invalid(
        with(&|c| {
            c.lease_duration = Duration::ZERO;
            c.renew_deadline = Duration::ZERO;
            c.retry_period = Duration::ZERO;
        }),
        "lease_duration",
    );
    invalid(with(&|c| c.identity.clear()), "identity");
    invalid(with(&|c| c.lease_name.clear()), "lease_name");

    // the elector refuses an invalid configuration before talking to any server
    let client = kube::Client::try_from(kube::Config::new(
        "https://127.0.0.1:1".parse().expect("url"),
    ))
    .expect("client");
    let mut bad = LeaderElectionConfig::new("ns", "name");
    bad.renew_deadline = bad.lease_duration;
    assert!(matches!(
        LeaderElector::new(client, bad),
        Err(Error::InvalidConfig(_))
    ));
}

#[test]
fn default_identity_is_hostname_and_uuid() {
    let id = default_identity();
    let (host, uuid) = id.rsplit_once('_').expect("<hostname>_<uuid>");
    let expected = hostname::get()
        .expect("hostname")
        .into_string()
        .expect("utf-8");
    assert_eq!(host, expected);
    let uuid = uuid::Uuid::parse_str(uuid).expect("a uuid");
    assert_eq!(uuid.get_version_num(), 4);
    assert_ne!(default_identity(), id, "identities are unique");
    assert_eq!(
        LeaderElectionConfig::new("ns", "name")
            .identity
            .rsplit_once('_')
            .map(|p| p.0),
        Some(host)
    );
}

/// The identity written to the Lease is the configured one (default format).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_identity_in_lease() {
    let env = start().await;
    let mut cfg = LeaderElectionConfig::new(NS, "ident");
    cfg.lease_duration = Duration::from_secs(2);
    cfg.renew_deadline = Duration::from_millis(1500);
    cfg.retry_period = Duration::from_millis(200);
    let id = cfg.identity.clone();
    let a = elector(&env.client, cfg);
    assert_eq!(a.identity(), id);
    let la = lead(&a, Duration::from_secs(10)).await;
    assert_eq!(
        spec(&env.client, "ident").await.holder_identity,
        Some(id.clone())
    );
    assert_eq!(a.current_leader(), Some(id));
    la.release().await;
    // release_on_cancel is off by default: the lease still names a
    assert_eq!(
        spec(&env.client, "ident").await.holder_identity.as_deref(),
        Some(a.identity())
    );
}

/// A manager whose API connection is cut stops its leader runnables before a second
/// manager acquires the lease and starts its own, and returns `LeaderElectionLost`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn manager_cut_from_the_server_stops_its_controllers_before_the_successor_starts() {
    use coxswain_runtime::manager::{runnable, Manager, ManagerError, ManagerOptions};
    use std::sync::Mutex;

    let env = start().await;
    let proxy = Proxy::start(env.server().addr).await;
    let log: Arc<Mutex<Vec<String>>> = Arc::default();
    let options = ManagerOptions {
        leader_election: true,
        leader_election_id: "manager-cut".into(),
        leader_election_namespace: Some("default".into()),
        lease_duration: Duration::from_secs(2),
        renew_deadline: Duration::from_millis(1500),
        retry_period: Duration::from_millis(200),
        metrics_bind_address: "0".into(),
        graceful_shutdown_timeout: Duration::from_secs(10),
        ..ManagerOptions::default()
    };
    let manager = |client: kube::Client, name: &'static str| {
        let mgr = Arc::new(Manager::with_client(client, options.clone()));
        let log = log.clone();
        mgr.add(runnable(
            "work",
            true,
            move |cancel: CancellationToken| async move {
                log.lock().unwrap().push(format!("{name} starts"));
                cancel.cancelled().await;
                log.lock().unwrap().push(format!("{name} stops"));
                Ok(())
            },
        ))
        .unwrap();
        let cancel = CancellationToken::new();
        let (m, c) = (mgr.clone(), cancel.clone());
        (mgr, cancel, tokio::spawn(async move { m.start(c).await }))
    };
    let (a, _a_cancel, a_task) = manager(proxy.client(&env).await, "a");
    for _ in 0..200 {
        if a.is_elected() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(a.is_elected(), "the first manager leads");
    let (b, b_cancel, b_task) = manager(env.client.clone(), "b");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!b.is_elected(), "the second manager waits");
    proxy.set(Mode::Blackhole);
    let result = tokio::time::timeout(Duration::from_secs(30), a_task)
        .await
        .expect("the cut manager stops")
        .unwrap();
    assert!(
        matches!(result, Err(ManagerError::LeaderElectionLost)),
        "{result:?}"
    );
    for _ in 0..400 {
        if b.is_elected() && log.lock().unwrap().iter().any(|l| l == "b starts") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(
        log.lock().unwrap().as_slice(),
        ["a starts", "a stops", "b starts"],
        "the cut leader stopped before the successor started"
    );
    b_cancel.cancel();
    b_task.await.unwrap().unwrap();
    proxy.set(Mode::Forward);
}
