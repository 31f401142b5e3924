//! Cluster-scale benchmark (not a test): a `coxswain up`-style cluster run as three child
//! processes of the `coxswain` binary, so that each one's CPU and memory are its own:
//!
//! * `coxswain apiserver` (the embedded API server, durable storage, `--metrics-api`),
//! * `coxswain controller-manager` with every controller `up` runs and `up`'s settings
//!   (no leader election, no client rate limit, no informer resync, one service account
//!   per controller, the server's service account key and CA for the signers), its
//!   secure port on a free loopback port,
//! * `coxswain sim` with `BENCH_NODES` simulated nodes (scheduler and kubelets).
//!
//! Once every node is Ready, Deployments of 30 replicas, 100 per namespace, are created
//! with 64 requests in flight (as fast as the server takes them) until they ask for
//! `BENCH_PODS` pods. The benchmark prints:
//!
//! * the time from the first create until every pod is Running (seen by a watch) and
//!   every Deployment has all its replicas available,
//! * the last write to the workload (the last change of a Deployment, ReplicaSet or pod
//!   of the benchmark seen by its watches) and how long after it the controller
//!   manager's workqueues are all empty (the sum of `workqueue_depth` on its `/metrics`,
//!   sampled every 100 ms), against the target of 10 s,
//! * for each process: CPU seconds (whole run and workload phase), peak RSS (`VmHWM`),
//!   RSS at the end and its growth per pod, against the target of ≤ 1 GiB peak for the
//!   controller manager.
//!
//! Run (release profile; the defaults are the upstream scalability envelope):
//!
//! ```text
//! cargo bench -p coxswain --bench scale
//! BENCH_NODES=500 BENCH_PODS=15000 cargo bench -p coxswain --bench scale
//! ```
//!
//! Knobs (environment): `BENCH_NODES` (5,000), `BENCH_PODS` (150,000), `BENCH_TIMEOUT_S`
//! (longest wait for the nodes, and for the workload to settle; 1,800), `BENCH_LOG_DIR`
//! (the children's stderr and stdout, `apiserver.log`, `controller-manager.log`,
//! `sim.log`; default: the temporary directory, removed at the end), `BENCH_LOG` (their
//! log filter, `info` as `coxswain up`), `BENCH_DATA_DIR` (parent of the temporary data
//! directory; default the system's), `BENCH_COXSWAIN` (the `coxswain` binary the
//! children run, e.g. another build to compare; default the one built with the
//! benchmark).
//!
//! The children are stopped by PID (SIGKILL) when the benchmark ends, fails, panics or
//! gets SIGINT/SIGTERM. Watch the machine's memory before the full size: the three
//! processes together needed ~1.7 GiB at 30,000 pods.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::marker::PhantomData;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::{Namespace, Node, Pod, ServiceAccount};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::PostParams;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::watcher::{self, Event};
use kube::runtime::WatchStreamExt;
use kube::{Api, Client, Resource};
use serde::Deserialize;
use tokio::sync::watch;

/// The allocator of the `coxswain` binary, so the client's figures compare.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Replicas of every Deployment.
const REPLICAS: usize = 30;
/// Deployments per namespace.
const PER_NAMESPACE: usize = 100;
/// Creates in flight.
const IN_FLIGHT: usize = 64;
/// The label on every object of the workload.
const LABEL: &str = "bench.coxswain.dev/scale";
/// How long the workload must see no write before it counts as settled.
const QUIET: Duration = Duration::from_secs(5);
/// Interval of the controller manager's `/metrics` samples.
const SAMPLE: Duration = Duration::from_millis(100);
/// The target: workqueues empty this long after the last write.
const QUEUE_TARGET: Duration = Duration::from_secs(10);
/// The target: the controller manager's peak RSS.
const CM_RSS_TARGET_MIB: f64 = 1024.0;
/// Clock ticks per second of `/proc/<pid>/stat` (`getconf CLK_TCK` on Linux).
const CLOCK_TICKS: f64 = 100.0;

fn knob(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().replace('_', "").parse().ok())
        .unwrap_or(default)
}

// ---------------------------------------------------------------------------------------
// child processes

/// One child process, killed (by its PID) and reaped when dropped.
struct Proc {
    name: &'static str,
    child: Child,
    log: PathBuf,
}

impl Proc {
    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// CPU seconds (user + system, all threads) from `/proc/<pid>/stat`.
    fn cpu_seconds(&self) -> f64 {
        let stat =
            std::fs::read_to_string(format!("/proc/{}/stat", self.pid())).unwrap_or_default();
        // the fields after the command name (which may hold spaces) in parentheses
        let fields: Vec<&str> = stat
            .rsplit_once(')')
            .map(|(_, rest)| rest.split_whitespace().collect())
            .unwrap_or_default();
        // utime and stime are fields 14 and 15; field 3 (state) is the first after ')'
        let ticks = |n: usize| fields.get(n - 3).and_then(|v| v.parse::<f64>().ok());
        match (ticks(14), ticks(15)) {
            (Some(u), Some(s)) => (u + s) / CLOCK_TICKS,
            _ => f64::NAN,
        }
    }

    /// A memory field of `/proc/<pid>/status` (`VmRSS:`, `VmHWM:`) in MiB.
    fn memory_mib(&self, field: &str) -> f64 {
        status_mib(&format!("/proc/{}/status", self.pid()), field)
    }

    /// Panic (with the end of its log) when the process has exited.
    fn check_alive(&mut self) {
        if let Ok(Some(status)) = self.child.try_wait() {
            panic!(
                "{} exited ({status}); the end of {}:\n{}",
                self.name,
                self.log.display(),
                tail(&self.log, 30)
            );
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        // `Child::kill` signals this PID only (SIGKILL), then `wait` reaps it
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn status_mib(path: &str, field: &str) -> f64 {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map(|kb| kb / 1024.0)
        .unwrap_or(f64::NAN)
}

fn tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// The `coxswain` binary the children run: `BENCH_COXSWAIN`, or the one Cargo built
/// with this benchmark.
fn coxswain_binary() -> PathBuf {
    std::env::var_os("BENCH_COXSWAIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_coxswain")))
}

/// Start `coxswain <args>` with stdout and stderr appended to `<log_dir>/<name>.log`
/// (stdout piped instead when `pipe_stdout`).
fn spawn(name: &'static str, args: &[String], log_dir: &Path, pipe_stdout: bool) -> Proc {
    let log = log_dir.join(format!("{name}.log"));
    let file = File::create(&log).expect("child log file");
    let stdout = if pipe_stdout {
        Stdio::piped()
    } else {
        Stdio::from(file.try_clone().expect("log file handle"))
    };
    let mut command = Command::new(coxswain_binary());
    die_with_parent(&mut command);
    let child = command
        .args(args)
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(Stdio::from(file))
        .spawn()
        .unwrap_or_else(|e| panic!("start coxswain {name}: {e}"));
    Proc { name, child, log }
}

/// The child gets SIGKILL when the benchmark's main thread (which starts it) ends, even
/// when the benchmark itself is killed and its destructors never run.
#[allow(unsafe_code)]
fn die_with_parent(command: &mut Command) {
    use std::os::unix::process::CommandExt;
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: prctl, getppid and _exit are async-signal-safe and allocate nothing
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // the parent may have gone before prctl
            if libc::getppid() != parent {
                libc::_exit(1);
            }
            Ok(())
        });
    }
}

/// A free loopback port (bound and released; the child binds it right after).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// The three processes of the cluster, in start order.
struct Cluster {
    // dropped (killed) in this order: the API server last
    sim: Proc,
    controller_manager: Proc,
    apiserver: Proc,
    /// The admin kubeconfig's connection.
    config: kube::Config,
    /// The controller manager's secure port.
    cm_port: u16,
}

impl Cluster {
    fn procs(&self) -> [&Proc; 3] {
        [&self.apiserver, &self.controller_manager, &self.sim]
    }

    fn check_alive(&mut self) {
        self.apiserver.check_alive();
        self.controller_manager.check_alive();
        self.sim.check_alive();
    }
}

async fn start_cluster(data: &Path, log_dir: &Path, nodes: u64, log: &str) -> Cluster {
    let server_dir = data.join("apiserver");
    let mut apiserver = spawn(
        "apiserver",
        &[
            "apiserver".into(),
            "--data-dir".into(),
            server_dir.display().to_string(),
            "--bind".into(),
            "127.0.0.1:0".into(),
            // `up` serves the simulated pods' usage as metrics-server would
            "--metrics-api".into(),
            format!("--log={log}"),
        ],
        log_dir,
        true,
    );
    let stdout = apiserver.child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    loop {
        match lines.next() {
            Some(Ok(l)) if l.starts_with("export KUBECONFIG=") => break,
            Some(Ok(_)) => continue,
            _ => {
                apiserver.check_alive();
                panic!("the API server closed its stdout before it was ready");
            }
        }
    }
    // keep draining stdout into the log so that the server never blocks on it
    let mut sink = File::options()
        .append(true)
        .open(&apiserver.log)
        .expect("log file");
    std::thread::spawn(move || {
        for line in lines.map_while(Result::ok) {
            let _ = writeln!(sink, "{line}");
        }
    });
    let kubeconfig = server_dir.join("kubeconfig");
    let kc = Kubeconfig::read_from(&kubeconfig).expect("kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .expect("kubeconfig connection");

    // `coxswain up`'s controller manager (crates/cli/src/controller_manager.rs,
    // `run_in_process`, and main.rs `run_server`) as flags
    let cm_port = free_port();
    let mut cm_args: Vec<String> = vec![
        "controller-manager".into(),
        format!("--kubeconfig={}", kubeconfig.display()),
        "--leader-elect=false".into(),
        "--kube-api-qps=0".into(),
        "--min-resync-period=0s".into(),
        "--use-service-account-credentials=true".into(),
        "--bind-address=127.0.0.1".into(),
        format!("--secure-port={cm_port}"),
        format!("--log={log}"),
    ];
    let sa_key = server_dir.join("sa.key");
    if sa_key.exists() {
        cm_args.push(format!(
            "--service-account-private-key-file={}",
            sa_key.display()
        ));
    }
    let (ca_crt, ca_key) = (server_dir.join("ca.crt"), server_dir.join("ca.key"));
    if ca_crt.is_file() && ca_key.is_file() {
        cm_args.push(format!("--cluster-signing-cert-file={}", ca_crt.display()));
        cm_args.push(format!("--cluster-signing-key-file={}", ca_key.display()));
    }
    let controller_manager = spawn("controller-manager", &cm_args, log_dir, false);
    let sim = spawn(
        "sim",
        &[
            "sim".into(),
            format!("--kubeconfig={}", kubeconfig.display()),
            format!("--nodes={nodes}"),
            format!("--log={log}"),
        ],
        log_dir,
        false,
    );
    Cluster {
        apiserver,
        controller_manager,
        sim,
        config,
        cm_port,
    }
}

// ---------------------------------------------------------------------------------------
// slim watched objects: the fields the benchmark looks at, nothing else decoded

/// An object of kind `K` decoded down to its name, namespace, resourceVersion and the
/// few status fields the benchmark reads (so the client's CPU stays small).
struct Slim<K> {
    meta: ObjectMeta,
    replicas: Option<i32>,
    phase: Option<String>,
    available: Option<i32>,
    ready: bool,
    kind: PhantomData<fn() -> K>,
}

impl<K> Clone for Slim<K> {
    fn clone(&self) -> Self {
        Slim {
            meta: self.meta.clone(),
            replicas: self.replicas,
            phase: self.phase.clone(),
            available: self.available,
            ready: self.ready,
            kind: PhantomData,
        }
    }
}

impl<K> std::fmt::Debug for Slim<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Slim")
            .field("name", &self.meta.name)
            .field("namespace", &self.meta.namespace)
            .field("phase", &self.phase)
            .finish()
    }
}

#[derive(Deserialize)]
struct RawSlim {
    metadata: RawMeta,
    #[serde(default)]
    spec: Option<RawSpec>,
    #[serde(default)]
    status: Option<RawStatus>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawMeta {
    name: Option<String>,
    namespace: Option<String>,
    resource_version: Option<String>,
}

#[derive(Deserialize)]
struct RawSpec {
    replicas: Option<i32>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawStatus {
    phase: Option<String>,
    available_replicas: Option<i32>,
    #[serde(default)]
    conditions: Vec<RawCondition>,
}

#[derive(Deserialize)]
struct RawCondition {
    #[serde(rename = "type")]
    type_: String,
    status: String,
}

impl<'de, K> Deserialize<'de> for Slim<K> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = RawSlim::deserialize(d)?;
        let status = raw.status;
        Ok(Slim {
            meta: ObjectMeta {
                name: raw.metadata.name,
                namespace: raw.metadata.namespace,
                resource_version: raw.metadata.resource_version,
                ..ObjectMeta::default()
            },
            replicas: raw.spec.and_then(|s| s.replicas),
            ready: status.as_ref().is_some_and(|s| {
                s.conditions
                    .iter()
                    .any(|c| c.type_ == "Ready" && c.status == "True")
            }),
            available: status.as_ref().and_then(|s| s.available_replicas),
            phase: status.and_then(|s| s.phase),
            kind: PhantomData,
        })
    }
}

impl<K: Resource<DynamicType = ()>> Resource for Slim<K> {
    type DynamicType = ();
    type Scope = K::Scope;

    fn kind(dt: &()) -> Cow<'_, str> {
        K::kind(dt)
    }
    fn group(dt: &()) -> Cow<'_, str> {
        K::group(dt)
    }
    fn version(dt: &()) -> Cow<'_, str> {
        K::version(dt)
    }
    fn plural(dt: &()) -> Cow<'_, str> {
        K::plural(dt)
    }
    fn meta(&self) -> &ObjectMeta {
        &self.meta
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.meta
    }
}

impl<K> Slim<K> {
    fn key(&self) -> String {
        format!(
            "{}/{}",
            self.meta.namespace.as_deref().unwrap_or(""),
            self.meta.name.as_deref().unwrap_or("")
        )
    }
}

// ---------------------------------------------------------------------------------------
// progress seen by the watches

/// What the watches have seen of the workload.
#[derive(Clone, Debug, Default)]
struct Progress {
    pods: usize,
    pods_running: usize,
    deployments: usize,
    deployments_available: usize,
    replicasets: usize,
    /// Changes (new resourceVersions) seen.
    writes: u64,
    /// When the last change was seen.
    last_write: Option<Instant>,
    /// Each watch has listed once.
    synced: [bool; 3],
}

/// What a watch tracks per object: its resourceVersion and whether it counts as done.
type Seen = HashMap<String, (String, bool)>;

/// Watch `K` objects of the workload into `progress` (slot `which`: 0 pods, 1
/// ReplicaSets, 2 Deployments).
fn spawn_watch<K>(
    client: Client,
    which: usize,
    progress: watch::Sender<Progress>,
) -> tokio::task::JoinHandle<()>
where
    K: Resource<DynamicType = ()> + Send + Sync + 'static,
{
    tokio::spawn(async move {
        let api: Api<Slim<K>> = Api::all(client);
        let config = watcher::Config::default().labels(LABEL);
        let mut stream = watcher::watcher(api, config).default_backoff().boxed();
        let mut seen: Seen = HashMap::new();
        while let Some(event) = stream.next().await {
            let event = match event {
                Ok(e) => e,
                Err(e) => {
                    eprintln!("watch {}: {e}", K::plural(&()));
                    continue;
                }
            };
            let now = Instant::now();
            progress.send_modify(|p| match event {
                Event::Apply(o) | Event::InitApply(o) => {
                    let done = match which {
                        0 => o.phase.as_deref() == Some("Running"),
                        2 => o.replicas.is_some_and(|r| o.available.unwrap_or(0) >= r),
                        _ => false,
                    };
                    let rv = o.meta.resource_version.clone().unwrap_or_default();
                    let before = seen.insert(o.key(), (rv.clone(), done));
                    if before.as_ref().map(|b| &b.0) != Some(&rv) {
                        p.writes += 1;
                        p.last_write = Some(now);
                    }
                    let was_done = before.as_ref().is_some_and(|b| b.1);
                    count(p, which, before.is_none(), was_done, done);
                }
                Event::Delete(o) => {
                    if let Some((_, was_done)) = seen.remove(&o.key()) {
                        p.writes += 1;
                        p.last_write = Some(now);
                        uncount(p, which, was_done);
                    }
                }
                Event::Init => {}
                Event::InitDone => p.synced[which] = true,
            });
        }
    })
}

fn counters(p: &mut Progress, which: usize) -> (&mut usize, Option<&mut usize>) {
    match which {
        0 => (&mut p.pods, Some(&mut p.pods_running)),
        1 => (&mut p.replicasets, None),
        _ => (&mut p.deployments, Some(&mut p.deployments_available)),
    }
}

fn count(p: &mut Progress, which: usize, new: bool, was_done: bool, done: bool) {
    let (total, finished) = counters(p, which);
    if new {
        *total += 1;
    }
    if let Some(f) = finished {
        match (was_done, done) {
            (false, true) => *f += 1,
            (true, false) => *f -= 1,
            _ => {}
        }
    }
}

fn uncount(p: &mut Progress, which: usize, was_done: bool) {
    let (total, finished) = counters(p, which);
    *total -= 1;
    if let (Some(f), true) = (finished, was_done) {
        *f -= 1;
    }
}

/// Wait (by watch) until `want` objects of `K` satisfy `done`, in namespaces accepted by
/// `namespace`; the cluster is checked for exited children every second.
async fn wait_for_count<K>(
    cluster: &mut Cluster,
    client: &Client,
    want: usize,
    done: impl Fn(&Slim<K>) -> bool,
    timeout: Duration,
) -> Option<Duration>
where
    K: Resource<DynamicType = ()> + Send + Sync + 'static,
{
    let start = Instant::now();
    let api: Api<Slim<K>> = Api::all(client.clone());
    let mut stream = watcher::watcher(api, watcher::Config::default())
        .default_backoff()
        .boxed();
    let mut seen: HashMap<String, bool> = HashMap::new();
    let mut ok = 0usize;
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    while ok < want {
        if start.elapsed() > timeout {
            return None;
        }
        tokio::select! {
            event = stream.next() => match event {
                Some(Ok(Event::Apply(o) | Event::InitApply(o))) => {
                    let d = done(&o);
                    if let Some(before) = seen.insert(o.key(), d) {
                        ok -= usize::from(before);
                    }
                    ok += usize::from(d);
                }
                Some(Ok(Event::Delete(o))) => {
                    if let Some(before) = seen.remove(&o.key()) {
                        ok -= usize::from(before);
                    }
                }
                Some(Ok(_)) => {}
                Some(Err(e)) => eprintln!("watch {}: {e}", K::plural(&())),
                None => panic!("the watch of {} ended", K::plural(&())),
            },
            _ = tick.tick() => cluster.check_alive(),
        }
    }
    Some(start.elapsed())
}

// ---------------------------------------------------------------------------------------
// the controller manager's workqueues

/// One scrape of the controller manager's `/metrics`.
struct Sample {
    at: Instant,
    /// Sum of every `workqueue_depth`.
    depth: f64,
    /// The deepest queue's name and depth.
    deepest: Option<(String, f64)>,
}

/// The `workqueue_depth` series of a Prometheus text exposition: (name label, depth).
fn workqueue_depths(text: &str) -> Vec<(String, f64)> {
    text.lines()
        .filter_map(|l| l.strip_prefix("workqueue_depth{"))
        .filter_map(|l| {
            let (labels, value) = l.rsplit_once('}')?;
            let name = labels
                .split(',')
                .find_map(|kv| kv.trim().strip_prefix("name="))
                .unwrap_or(labels)
                .trim_matches('"')
                .to_string();
            Some((name, value.trim().parse().ok()?))
        })
        .collect()
}

/// A client of the controller manager's secure port, with the admin kubeconfig's token
/// (its certificate is self-signed).
fn metrics_client(config: &kube::Config, port: u16) -> Client {
    let mut c = config.clone();
    c.cluster_url = format!("https://127.0.0.1:{port}")
        .parse()
        .expect("metrics URL");
    c.accept_invalid_certs = true;
    c.root_cert = None;
    c.tls_server_name = None;
    Client::try_from(c).expect("metrics client")
}

async fn scrape(client: &Client) -> Result<Vec<(String, f64)>, kube::Error> {
    let req = http::Request::get("/metrics")
        .body(Vec::new())
        .expect("request");
    let text = client.request_text(req).await?;
    Ok(workqueue_depths(&text))
}

/// Sample the workqueue depths every [`SAMPLE`] into `samples` until dropped.
fn spawn_sampler(client: Client, samples: Arc<Mutex<Vec<Sample>>>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(SAMPLE);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let at = Instant::now();
            match scrape(&client).await {
                Ok(depths) => {
                    let depth = depths.iter().map(|d| d.1).sum();
                    let deepest = depths
                        .into_iter()
                        .filter(|d| d.1 > 0.0)
                        .max_by(|a, b| a.1.total_cmp(&b.1));
                    samples
                        .lock()
                        .expect("samples")
                        .push(Sample { at, depth, deepest });
                }
                Err(e) => eprintln!("scrape of the controller manager's /metrics: {e}"),
            }
        }
    })
}

// ---------------------------------------------------------------------------------------
// the workload

fn deployment(ns: &str, name: &str, replicas: usize) -> Deployment {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": ns, "labels": {LABEL: "true"}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name, LABEL: "true"}},
                "spec": {"containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10"}]}
            }
        }
    }))
    .expect("deployment")
}

/// Create with a few retries when the server pushes back (429, 5xx, timeouts).
async fn create<K>(api: &Api<K>, obj: &K) -> Result<(), kube::Error>
where
    K: Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    let mut delay = Duration::from_millis(50);
    let mut attempt = 0;
    loop {
        attempt += 1;
        match api.create(&PostParams::default(), obj).await {
            Ok(_) => return Ok(()),
            Err(kube::Error::Api(s)) if s.code == 409 => return Ok(()),
            Err(kube::Error::Api(s)) if attempt < 10 && (s.code == 429 || s.code >= 500) => {}
            Err(e @ kube::Error::Api(_)) => return Err(e),
            Err(_) if attempt < 10 => {}
            Err(e) => return Err(e),
        }
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(Duration::from_secs(2));
    }
}

/// The workload: (namespace, deployment name, replicas) for `pods` pods.
fn workload(pods: usize) -> Vec<(String, String, usize)> {
    let deployments = pods.div_ceil(REPLICAS);
    (0..deployments)
        .map(|i| {
            let replicas = REPLICAS.min(pods - i * REPLICAS);
            (
                format!("scale-{:03}", i / PER_NAMESPACE),
                format!("d-{:03}", i % PER_NAMESPACE),
                replicas,
            )
        })
        .collect()
}

// ---------------------------------------------------------------------------------------
// the run

/// Wait (by the workload's watches) until `done` holds, at most until `timeout` after
/// `t0`; the time since `t0` then. The cluster is checked for exited children every
/// second.
async fn wait_progress(
    cluster: &mut Cluster,
    progress: &watch::Receiver<Progress>,
    t0: Instant,
    timeout: Duration,
    done: impl Fn(&Progress) -> bool,
) -> Option<Duration> {
    let mut rx = progress.clone();
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    while t0.elapsed() < timeout {
        tokio::select! {
            r = rx.wait_for(&done) => {
                r.expect("the workload's watches");
                return Some(t0.elapsed());
            }
            _ = tick.tick() => cluster.check_alive(),
        }
    }
    None
}

/// Figures of one process.
struct Usage {
    cpu_start: f64,
    cpu_workload: f64,
    cpu_end: f64,
    rss_before: f64,
    rss_end: f64,
    hwm: f64,
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

fn secs(d: Option<Duration>) -> String {
    d.map_or_else(
        || "not reached".into(),
        |d| format!("{:.1} s", d.as_secs_f64()),
    )
}

async fn run(cluster: &mut Cluster, nodes: usize, pods: usize, timeout: Duration) -> bool {
    let client = Client::try_from(cluster.config.clone()).expect("client");
    let load_start = loadavg();
    let started = Instant::now();
    let cpu_start: Vec<f64> = cluster.procs().iter().map(|p| p.cpu_seconds()).collect();

    // the nodes
    let nodes_ready = wait_for_count::<Node>(cluster, &client, nodes, |n| n.ready, timeout).await;
    let Some(nodes_ready) = nodes_ready else {
        eprintln!("not every node was Ready within {timeout:?}");
        return false;
    };
    eprintln!(
        "{nodes} nodes Ready after {:.1} s",
        nodes_ready.as_secs_f64()
    );

    // the controller manager's metrics
    let metrics = metrics_client(&cluster.config, cluster.cm_port);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match scrape(&metrics).await {
            Ok(d) if !d.is_empty() => break,
            Ok(_) if Instant::now() > deadline => panic!("no workqueue_depth in /metrics"),
            Err(e) if Instant::now() > deadline => {
                panic!("the controller manager's /metrics: {e}")
            }
            _ => {}
        }
        cluster.check_alive();
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // namespaces and their default service accounts (as upstream's density tests wait)
    let work = workload(pods);
    let mut namespaces: Vec<String> = work.iter().map(|w| w.0.clone()).collect();
    namespaces.dedup();
    let ns_api: Api<Namespace> = Api::all(client.clone());
    futures::stream::iter(namespaces.iter())
        .map(|name| {
            let ns_api = ns_api.clone();
            async move {
                let mut ns = Namespace::default();
                ns.metadata.name = Some(name.clone());
                ns.metadata.labels = Some(BTreeMap::from([(LABEL.into(), "true".into())]));
                create(&ns_api, &ns).await
            }
        })
        .buffer_unordered(IN_FLIGHT)
        .try_collect::<Vec<()>>()
        .await
        .expect("namespaces");
    wait_for_count::<ServiceAccount>(
        cluster,
        &client,
        namespaces.len(),
        |sa| {
            sa.meta.name.as_deref() == Some("default")
                && sa
                    .meta
                    .namespace
                    .as_deref()
                    .is_some_and(|n| n.starts_with("scale-"))
        },
        timeout,
    )
    .await
    .expect("default service accounts");

    // watches of the workload and samples of the queues
    let (progress_tx, mut progress) = watch::channel(Progress::default());
    let watches = [
        spawn_watch::<Pod>(client.clone(), 0, progress_tx.clone()),
        spawn_watch::<ReplicaSet>(client.clone(), 1, progress_tx.clone()),
        spawn_watch::<Deployment>(client.clone(), 2, progress_tx.clone()),
    ];
    progress
        .wait_for(|p| p.synced.iter().all(|s| *s))
        .await
        .expect("watches");
    let samples = Arc::new(Mutex::new(Vec::new()));
    let sampler = spawn_sampler(metrics, samples.clone());

    let rss_before: Vec<f64> = cluster
        .procs()
        .iter()
        .map(|p| p.memory_mib("VmRSS:"))
        .collect();
    let cpu_workload: Vec<f64> = cluster.procs().iter().map(|p| p.cpu_seconds()).collect();
    let bench_cpu_start = coxswain_runtime::metrics::process_cpu_seconds().unwrap_or(f64::NAN);

    // the Deployments, as fast as the server takes them
    let t0 = Instant::now();
    let deployments = work.len();
    futures::stream::iter(work)
        .map(|(ns, name, replicas)| {
            let api: Api<Deployment> = Api::namespaced(client.clone(), &ns);
            async move { create(&api, &deployment(&ns, &name, replicas)).await }
        })
        .buffer_unordered(IN_FLIGHT)
        .try_collect::<Vec<()>>()
        .await
        .expect("deployments");
    let created = t0.elapsed();
    eprintln!(
        "{deployments} Deployments created in {:.1} s",
        created.as_secs_f64()
    );

    // all Running, all available, then quiet
    let all = deployments;
    let running = wait_progress(cluster, &progress, t0, timeout, |p| p.pods_running >= pods).await;
    eprintln!("all pods Running after {}", secs(running));
    let available = match running {
        Some(_) => {
            wait_progress(cluster, &progress, t0, timeout, |p| {
                p.deployments_available >= all
            })
            .await
        }
        None => None,
    };
    eprintln!("all Deployments available after {}", secs(available));
    // settled: no write for QUIET, and a sample of empty queues after the last write
    let settle_deadline = t0 + timeout;
    let mut queues_empty = None;
    loop {
        let last = progress.borrow().last_write.unwrap_or(t0);
        let zero = samples
            .lock()
            .expect("samples")
            .iter()
            .find(|s| s.at >= last && s.depth == 0.0)
            .map(|s| s.at - last);
        if last.elapsed() >= QUIET && zero.is_some() {
            queues_empty = zero;
            break;
        }
        if Instant::now() > settle_deadline {
            break;
        }
        cluster.check_alive();
        // wake on a new write or after a while
        let _ = tokio::time::timeout(Duration::from_millis(500), progress.changed()).await;
    }
    let bench_cpu =
        coxswain_runtime::metrics::process_cpu_seconds().unwrap_or(f64::NAN) - bench_cpu_start;
    sampler.abort();
    for w in watches {
        w.abort();
    }
    let end = progress.borrow().clone();
    let last_write = end.last_write.map(|l| l - t0);

    let usage: Vec<Usage> = cluster
        .procs()
        .iter()
        .enumerate()
        .map(|(i, p)| Usage {
            cpu_start: cpu_start[i],
            cpu_workload: cpu_workload[i],
            cpu_end: p.cpu_seconds(),
            rss_before: rss_before[i],
            rss_end: p.memory_mib("VmRSS:"),
            hwm: p.memory_mib("VmHWM:"),
        })
        .collect();
    let samples = samples.lock().expect("samples");
    let peak = samples
        .iter()
        .filter(|s| s.at >= t0)
        .max_by(|a, b| a.depth.total_cmp(&b.depth));
    let residual = samples.last();

    // the table
    let namespaces = namespaces.len();
    println!();
    println!(
        "coxswain cluster-scale benchmark: {nodes} nodes, {pods} pods ({deployments} Deployments × {REPLICAS}, {PER_NAMESPACE} per namespace, {namespaces} namespaces), {} CPUs",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!("{:<56} {:>16} {:>12}", "measure", "value", "target");
    println!(
        "{:<56} {:>16} {:>12}",
        format!("{nodes} nodes Ready (from start)"),
        secs(Some(nodes_ready)),
        ""
    );
    println!(
        "{:<56} {:>16} {:>12}",
        format!("{deployments} Deployments created ({IN_FLIGHT} in flight)"),
        format!(
            "{:.1} s ({:.0}/s)",
            created.as_secs_f64(),
            deployments as f64 / created.as_secs_f64()
        ),
        ""
    );
    println!(
        "{:<56} {:>16} {:>12}",
        format!("first create → all {pods} pods Running"),
        secs(running),
        ""
    );
    println!(
        "{:<56} {:>16} {:>12}",
        "first create → all Deployments available",
        secs(available),
        ""
    );
    println!(
        "{:<56} {:>16} {:>12}",
        format!("first create → last workload write ({} seen)", end.writes),
        secs(last_write),
        ""
    );
    println!(
        "{:<56} {:>16} {:>12}",
        "last write → CM workqueues all empty",
        queues_empty.map_or_else(
            || format!("no (depth {})", residual.map_or(f64::NAN, |s| s.depth)),
            |d| format!("{:.2} s", d.as_secs_f64())
        ),
        format!("≤ {} s", QUEUE_TARGET.as_secs())
    );
    println!(
        "{:<56} {:>16} {:>12}",
        format!(
            "peak total workqueue depth (deepest: {})",
            peak.and_then(|s| s.deepest.as_ref())
                .map_or("-".into(), |d| format!("{} {}", d.0, d.1))
        ),
        peak.map_or(f64::NAN, |s| s.depth),
        ""
    );
    println!(
        "{:<56} {:>16} {:>12}",
        "workqueue samples (every 100 ms)",
        samples.len(),
        ""
    );
    println!();
    println!(
        "{:<20} {:>10} {:>12} {:>12} {:>12} {:>12} {:>12} {:>10}",
        "process",
        "CPU-s all",
        "CPU-s load",
        "peak RSS",
        "RSS before",
        "RSS end",
        "KiB/pod",
        "target"
    );
    let names = ["apiserver", "controller-manager", "sim"];
    for (name, u) in names.iter().zip(&usage) {
        let target = if *name == "controller-manager" {
            format!("≤ {CM_RSS_TARGET_MIB:.0} MiB")
        } else {
            String::new()
        };
        println!(
            "{:<20} {:>10.1} {:>12.1} {:>8.0} MiB {:>8.0} MiB {:>8.0} MiB {:>12.1} {:>10}",
            name,
            u.cpu_end - u.cpu_start,
            u.cpu_end - u.cpu_workload,
            u.hwm,
            u.rss_before,
            u.rss_end,
            (u.rss_end - u.rss_before) * 1024.0 / pods as f64,
            target
        );
    }
    println!(
        "{:<20} {:>10} {:>12.1} {:>8.0} MiB {:>12} {:>12} {:>12} {:>10}",
        "bench (client)",
        "",
        bench_cpu,
        status_mib("/proc/self/status", "VmHWM:"),
        "",
        "",
        "",
        ""
    );
    println!(
        "load average (1, 5, 15 min): start {load_start}, end {}; run {:.0} s",
        loadavg(),
        started.elapsed().as_secs_f64()
    );
    let cm_ok = usage[1].hwm <= CM_RSS_TARGET_MIB;
    let queue_ok = queues_empty.is_some_and(|d| d <= QUEUE_TARGET);
    println!(
        "targets: queues empty within {} s of the last write: {}; CM peak RSS ≤ 1 GiB: {}",
        QUEUE_TARGET.as_secs(),
        if queue_ok { "met" } else { "NOT met" },
        if cm_ok { "met" } else { "NOT met" }
    );
    running.is_some() && available.is_some()
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let nodes = knob("BENCH_NODES", 5_000) as usize;
    let pods = knob("BENCH_PODS", 150_000) as usize;
    let timeout = Duration::from_secs(knob("BENCH_TIMEOUT_S", 1_800));
    let log = std::env::var("BENCH_LOG").unwrap_or_else(|_| "info".into());
    let data = match std::env::var_os("BENCH_DATA_DIR") {
        Some(dir) => tempfile::tempdir_in(dir),
        None => tempfile::tempdir(),
    }
    .expect("temp dir");
    let log_dir = match std::env::var_os("BENCH_LOG_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => data.path().join("logs"),
    };
    std::fs::create_dir_all(&log_dir).expect("log dir");
    eprintln!(
        "scale benchmark: {nodes} nodes, {pods} pods, timeout {} s, binary {}, data in {}, logs in {}",
        timeout.as_secs(),
        coxswain_binary().display(),
        data.path().display(),
        log_dir.display()
    );
    let mut cluster = start_cluster(data.path(), &log_dir, nodes as u64, &log).await;
    eprintln!(
        "pids: apiserver {}, controller-manager {}, sim {}",
        cluster.apiserver.pid(),
        cluster.controller_manager.pid(),
        cluster.sim.pid()
    );
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("SIGTERM handler");
    let ok = tokio::select! {
        ok = run(&mut cluster, nodes, pods, timeout) => ok,
        _ = tokio::signal::ctrl_c() => { eprintln!("interrupted"); false }
        _ = term.recv() => { eprintln!("terminated"); false }
    };
    // the children go first (by PID), then the data
    drop(cluster);
    drop(data);
    if !ok {
        std::process::exit(1);
    }
}
