//! What the controller benchmarks share: knobs from the environment, the `bench`
//! namespace, and the controller manager in a child process of the bench binary, so
//! that its CPU time and peak RSS are its own and not the API server's.

#![allow(dead_code)] // each bench uses its part

use std::io::BufRead;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::Duration;

use coxswain_runtime::manager::{Manager, ManagerOptions};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::PostParams;
use kube::Api;

/// The namespace the benchmarks create their objects in.
pub const NS: &str = "bench";

/// `name` from the environment as a number, else `default`.
pub fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// User + system CPU seconds of this process.
pub fn cpu_seconds() -> f64 {
    coxswain_runtime::metrics::process_cpu_seconds().unwrap_or(f64::NAN)
}

/// A `/proc/self/status` field in KiB.
pub fn status_kib(field: &str) -> u64 {
    coxswain_runtime::metrics::process_status_kib(field).unwrap_or(0)
}

/// A manager in this process with `nodes` simulated nodes (the node simulator:
/// registration, scheduler, kubelets, pod IPs) and the node lifecycle controller, which
/// lifts the API server's not-ready taint from each new node once it reports Ready, as on
/// a real cluster. The caller adds its own watches to the manager's cache and starts it.
pub async fn simulated_cluster(env: &coxswain_runtime::envtest::TestEnv, nodes: usize) -> Manager {
    let mgr = Manager::new(
        env.kube_config().await.expect("config"),
        ManagerOptions {
            metrics_bind_address: "0".into(),
            ..Default::default()
        },
    )
    .expect("manager");
    let sim = coxswain_sim::Simulator::new(coxswain_sim::SimConfig {
        nodes,
        ..Default::default()
    })
    .expect("simulator");
    sim.add_to(&mgr).expect("simulator added");
    mgr.add(
        coxswain_controllers::nodelifecycle::node_lifecycle_controller(&mgr, &Default::default()),
    )
    .expect("node lifecycle controller added");
    mgr
}

/// Create the [`NS`] namespace.
pub async fn create_namespace(client: &kube::Client) {
    let ns: Namespace =
        serde_json::from_value(serde_json::json!({"metadata": {"name": NS}})).expect("ns");
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .expect("namespace");
}

/// When this process was started as [`ControllerManagerChild::spawn`]'s child
/// (`--child <kubeconfig> <controllers>`), run the controller manager until SIGTERM,
/// print `STATS <cpu s> <peak KiB>` and return true.
pub async fn run_child_if_asked() -> bool {
    let args: Vec<String> = std::env::args().collect();
    let Some(pos) = args.iter().position(|a| a == "--child") else {
        return false;
    };
    let kc = kube::config::Kubeconfig::read_from(&args[pos + 1]).expect("kubeconfig");
    let kube = kube::Config::from_custom_kubeconfig(kc, &Default::default())
        .await
        .expect("config");
    let controllers = args[pos + 2].split(',').map(str::to_string).collect();
    // the client limits of the measurements (BENCH_QPS=0: no limit)
    let config = coxswain_controllers::controller_manager::ControllerManagerConfig {
        leader_elect: false,
        kube_api_qps: env_usize("BENCH_QPS", 1000) as f32,
        kube_api_burst: env_usize("BENCH_BURST", 2000) as u32,
        secure_port: 0,
        min_resync_period: Duration::ZERO,
        controllers,
        ..Default::default()
    };
    let registry = coxswain_controllers::builtin();
    let cancel = coxswain_runtime::manager::shutdown_signal();
    println!("READY");
    let result =
        coxswain_controllers::controller_manager::run(kube, &config, &registry, cancel, |_| {})
            .await;
    if let Err(e) = result {
        eprintln!("controller manager: {e}");
    }
    println!("STATS {} {}", cpu_seconds(), status_kib("VmHWM:"));
    true
}

/// The controller manager running in a child process.
pub struct ControllerManagerChild {
    child: Child,
    lines: Receiver<String>,
    /// run under `BENCH_CHILD_WRAPPER`: the controller manager is the child's child
    wrapped: bool,
}

impl ControllerManagerChild {
    /// Start the controller manager with `controllers` (as `--controllers`, `*` for the
    /// defaults) against the server of `kubeconfig`; returns once it runs.
    /// `BENCH_CHILD_WRAPPER` runs it under a profiler (`heaptrack -o /tmp/cm`, say: the
    /// words before the child's own command line).
    pub fn spawn(kubeconfig: &str, controllers: &str) -> Self {
        let exe = std::env::current_exe().expect("exe");
        let wrapper = std::env::var("BENCH_CHILD_WRAPPER").unwrap_or_default();
        let mut words = wrapper.split_whitespace();
        let mut command = match words.next() {
            Some(program) => {
                let mut c = Command::new(program);
                c.args(words).arg(&exe);
                c
            }
            None => Command::new(&exe),
        };
        let mut child = command
            .args(["--child", kubeconfig, controllers])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("controller manager child");
        let (tx, lines) = std::sync::mpsc::channel();
        let stdout = child.stdout.take().expect("stdout");
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
            {
                let _ = tx.send(line);
            }
        });
        // a wrapper may print first
        while lines.recv().expect("child starts") != "READY" {}
        ControllerManagerChild {
            child,
            lines,
            wrapped: !wrapper.trim().is_empty(),
        }
    }

    /// Its user + system CPU seconds so far (from `/proc/<pid>/stat`, NaN when
    /// unreadable).
    pub fn cpu_seconds_now(&self) -> f64 {
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{}/stat", self.child.id())) else {
            return f64::NAN;
        };
        // fields after the parenthesised command name; utime and stime are the 14th
        // and 15th fields of the line (clock ticks of 1/100 s on Linux)
        let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let ticks = |i: usize| fields.get(i).and_then(|v| v.parse::<f64>().ok());
        match (ticks(11), ticks(12)) {
            (Some(u), Some(s)) => (u + s) / 100.0,
            _ => f64::NAN,
        }
    }

    /// A `/proc/<pid>/status` field of the child in KiB (`VmHWM:` is its peak RSS so
    /// far, `VmRSS:` its RSS now); NaN when unreadable.
    pub fn status_kib_now(&self, field: &str) -> f64 {
        std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .ok()
            .and_then(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix(field))
                    .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            })
            .unwrap_or(f64::NAN)
    }

    /// Stop it (SIGTERM) and return its CPU seconds and peak RSS in KiB (NaN when it
    /// did not say).
    pub fn stop(mut self) -> (f64, f64) {
        let pid = self.child.id().to_string();
        let _ = if self.wrapped {
            Command::new("pkill").args(["-TERM", "-P", &pid]).status()
        } else {
            Command::new("kill").args(["-TERM", &pid]).status()
        };
        let mut stats = String::new();
        while let Ok(line) = self.lines.recv_timeout(Duration::from_secs(60)) {
            if let Some(s) = line.strip_prefix("STATS ") {
                stats = s.to_string();
                break;
            }
        }
        let _ = self.child.wait();
        let mut parts = stats
            .split_whitespace()
            .map(|v| v.parse::<f64>().unwrap_or(f64::NAN));
        let cpu = parts.next().unwrap_or(f64::NAN);
        let peak_kib = parts.next().unwrap_or(f64::NAN);
        (cpu, peak_kib)
    }
}

/// Create `n` objects made by `make(i)` through `api`, 32 requests at a time (what every
/// benchmark's load phase does); panics naming `what` on the first error.
pub async fn create_all<K, F>(api: &Api<K>, n: usize, make: F, what: &str)
where
    K: kube::Resource + Clone + serde::Serialize + serde::de::DeserializeOwned + std::fmt::Debug,
    F: Fn(usize) -> K,
{
    use futures::{StreamExt, TryStreamExt};
    futures::stream::iter(0..n)
        .map(|i| {
            let api = api.clone();
            let obj = make(i);
            async move { api.create(&PostParams::default(), &obj).await.map(|_| ()) }
        })
        .buffer_unordered(32)
        .try_collect::<Vec<()>>()
        .await
        .unwrap_or_else(|e| panic!("create {what}: {e}"));
}

/// Count, through `mgr`'s cache, the objects of kind `K` that reach the state
/// `reached` (an update from not reached to reached counts once): the counter, and a
/// channel that announces each new count.
pub fn count_reaching<K>(
    mgr: &Manager,
    reached: fn(&K) -> bool,
) -> (
    std::sync::Arc<std::sync::atomic::AtomicUsize>,
    tokio::sync::watch::Receiver<usize>,
)
where
    K: coxswain_runtime::cache::CachedKind,
    K::Scope: 'static,
{
    use std::sync::atomic::Ordering;
    let done = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (tx, rx) = tokio::sync::watch::channel(0usize);
    let counter = done.clone();
    mgr.cache().informer::<K>().add_handler(move |c| {
        if let coxswain_runtime::cache::Change::Updated { old, new } = c {
            if reached(new) && !reached(old) {
                let d = counter.fetch_add(1, Ordering::SeqCst) + 1;
                let _ = tx.send(d);
            }
        }
    });
    (done, rx)
}

/// Print the controller manager's CPU seconds and peak RSS (from
/// [`ControllerManagerChild::stop`]), the last lines of every benchmark's report.
pub fn print_controller_manager(cpu: f64, peak_kib: f64) {
    println!("  controller manager CPU         {cpu:.2} s");
    println!(
        "  controller manager peak RSS    {:.1} MiB",
        peak_kib / 1024.0
    );
}

/// The load averages of the machine (`/proc/loadavg`'s first three fields).
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}
