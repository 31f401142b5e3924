//! Prometheus metrics with controller-runtime's names, so existing dashboards work.
//!
//! One process-wide registry ([`global`]), as controller-runtime's `metrics.Registry`:
//! controllers, their workqueues, the client and leader election record into it, users add
//! their own metrics to it ([`Metrics::register`]), and the manager serves it on
//! `/metrics` as OpenMetrics text. What is recorded:
//!
//! | metric | labels | from |
//! |---|---|---|
//! | `controller_runtime_reconcile_total` | `controller`, `result` (`success`, `error`, `requeue`, `requeue_after`) | every reconcile |
//! | `controller_runtime_reconcile_errors_total` | `controller` | errors, terminal ones and panics included |
//! | `controller_runtime_terminal_reconcile_errors_total` | `controller` | terminal errors |
//! | `controller_runtime_reconcile_panics_total` | `controller` | panics |
//! | `controller_runtime_reconcile_time_seconds` | `controller` | histogram of reconcile durations |
//! | `controller_runtime_max_concurrent_reconciles` | `controller` | the option |
//! | `controller_runtime_active_workers` | `controller` | workers reconciling now |
//! | `workqueue_*` (see [`crate::workqueue::metrics`]) | `name`, `controller` | every controller queue |
//! | `rest_client_requests_total` | `code`, `method`, `host` | every API request of a client built with [`RestClientMetricsLayer`] |
//! | `leader_election_master_status` | `name` | 1 while this process leads |
//! | `process_*` | | CPU seconds, resident and virtual memory, open and max file descriptors, start time |

use std::fmt::Write as _;
use std::sync::atomic::AtomicU64;
use std::sync::{Mutex, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;

use futures::future::BoxFuture;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Metric, Registry};

use crate::workqueue::metrics::{QueueMetrics, DURATION_BUCKETS};

/// Buckets of `controller_runtime_reconcile_time_seconds` (controller-runtime's).
const RECONCILE_BUCKETS: [f64; 40] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9,
    1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 15.0, 20.0,
    25.0, 30.0, 40.0, 50.0, 60.0,
];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ControllerLabel {
    controller: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabels {
    controller: String,
    result: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct QueueLabels {
    name: String,
    controller: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RestLabels {
    code: String,
    method: String,
    host: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct NameLabel {
    name: String,
}

type FloatGauge = Gauge<f64, AtomicU64>;
type HistogramFamily<L> = Family<L, Histogram, fn() -> Histogram>;

fn reconcile_histogram() -> Histogram {
    Histogram::new(RECONCILE_BUCKETS)
}

fn duration_histogram() -> Histogram {
    Histogram::new(DURATION_BUCKETS)
}

/// The process-wide metrics.
pub struct Metrics {
    registry: Mutex<Registry>,
    reconcile_total: Family<ResultLabels, Counter>,
    reconcile_errors: Family<ControllerLabel, Counter>,
    terminal_errors: Family<ControllerLabel, Counter>,
    panics: Family<ControllerLabel, Counter>,
    reconcile_time: HistogramFamily<ControllerLabel>,
    max_concurrent: Family<ControllerLabel, Gauge>,
    active_workers: Family<ControllerLabel, Gauge>,
    wq_depth: Family<QueueLabels, Gauge>,
    wq_adds: Family<QueueLabels, Counter>,
    wq_retries: Family<QueueLabels, Counter>,
    wq_queue_duration: HistogramFamily<QueueLabels>,
    wq_work_duration: HistogramFamily<QueueLabels>,
    wq_unfinished: Family<QueueLabels, FloatGauge>,
    wq_longest: Family<QueueLabels, FloatGauge>,
    rest_requests: Family<RestLabels, Counter>,
    leader_status: Family<NameLabel, Gauge>,
}

/// The process-wide metrics registry.
pub fn global() -> &'static Metrics {
    static GLOBAL: OnceLock<Metrics> = OnceLock::new();
    GLOBAL.get_or_init(Metrics::new)
}

impl Metrics {
    fn new() -> Metrics {
        let m = Metrics {
            registry: Mutex::new(Registry::default()),
            reconcile_total: Family::default(),
            reconcile_errors: Family::default(),
            terminal_errors: Family::default(),
            panics: Family::default(),
            reconcile_time: Family::new_with_constructor(reconcile_histogram),
            max_concurrent: Family::default(),
            active_workers: Family::default(),
            wq_depth: Family::default(),
            wq_adds: Family::default(),
            wq_retries: Family::default(),
            wq_queue_duration: Family::new_with_constructor(duration_histogram),
            wq_work_duration: Family::new_with_constructor(duration_histogram),
            wq_unfinished: Family::default(),
            wq_longest: Family::default(),
            rest_requests: Family::default(),
            leader_status: Family::default(),
        };
        {
            let mut r = m.lock();
            // prometheus-client adds `_total` to counter names
            r.register(
                "controller_runtime_reconcile",
                "Total number of reconciliations per controller",
                m.reconcile_total.clone(),
            );
            r.register(
                "controller_runtime_reconcile_errors",
                "Total number of reconciliation errors per controller",
                m.reconcile_errors.clone(),
            );
            r.register(
                "controller_runtime_terminal_reconcile_errors",
                "Total number of terminal reconciliation errors per controller",
                m.terminal_errors.clone(),
            );
            r.register(
                "controller_runtime_reconcile_panics",
                "Total number of reconciliation panics per controller",
                m.panics.clone(),
            );
            r.register(
                "controller_runtime_reconcile_time_seconds",
                "Length of time per reconciliation per controller",
                m.reconcile_time.clone(),
            );
            r.register(
                "controller_runtime_max_concurrent_reconciles",
                "Maximum number of concurrent reconciles per controller",
                m.max_concurrent.clone(),
            );
            r.register(
                "controller_runtime_active_workers",
                "Number of currently used workers per controller",
                m.active_workers.clone(),
            );
            r.register(
                "workqueue_depth",
                "Current depth of workqueue",
                m.wq_depth.clone(),
            );
            r.register(
                "workqueue_adds",
                "Total number of adds handled by workqueue",
                m.wq_adds.clone(),
            );
            r.register(
                "workqueue_retries",
                "Total number of retries handled by workqueue",
                m.wq_retries.clone(),
            );
            r.register(
                "workqueue_queue_duration_seconds",
                "How long in seconds an item stays in workqueue before being requested",
                m.wq_queue_duration.clone(),
            );
            r.register(
                "workqueue_work_duration_seconds",
                "How long in seconds processing an item from workqueue takes",
                m.wq_work_duration.clone(),
            );
            r.register(
                "workqueue_unfinished_work_seconds",
                "How many seconds of work has been done that is in progress and hasn't been observed by work_duration. Large values indicate stuck threads. One can deduce the number of stuck threads by observing the rate at which this increases",
                m.wq_unfinished.clone(),
            );
            r.register(
                "workqueue_longest_running_processor_seconds",
                "How many seconds has the longest running processor for workqueue been running",
                m.wq_longest.clone(),
            );
            r.register(
                "rest_client_requests",
                "Number of HTTP requests, partitioned by status code, method, and host",
                m.rest_requests.clone(),
            );
            r.register(
                "leader_election_master_status",
                "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease",
                m.leader_status.clone(),
            );
            r.register_collector(Box::new(ProcessCollector));
        }
        m
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Registry> {
        self.registry.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Register a user metric (a counter named `x` is exposed as `x_total`).
    pub fn register(&self, name: &str, help: &str, metric: impl Metric) {
        self.lock().register(name, help, metric);
    }

    /// Register into the underlying `prometheus-client` registry directly.
    pub fn with_registry(&self, f: impl FnOnce(&mut Registry)) {
        f(&mut self.lock());
    }

    /// Register a collector (computes its metrics at each scrape).
    pub fn register_collector(&self, collector: Box<dyn Collector>) {
        self.lock().register_collector(collector);
    }

    /// Everything, as OpenMetrics text (ends with `# EOF`).
    pub fn encode(&self) -> String {
        let mut out = String::new();
        if let Err(e) = prometheus_client::encoding::text::encode(&mut out, &self.lock()) {
            tracing::error!(error = %e, "encoding metrics failed");
        }
        out
    }

    /// The recorder of one controller (its metrics start at zero, as upstream).
    pub fn controller(&self, name: &str, max_concurrent_reconciles: usize) -> ControllerMetrics {
        let c = ControllerLabel {
            controller: name.to_string(),
        };
        let result = |r: &str| {
            self.reconcile_total
                .get_or_create(&ResultLabels {
                    controller: name.to_string(),
                    result: r.to_string(),
                })
                .clone()
        };
        let max = self.max_concurrent.get_or_create(&c).clone();
        max.set(max_concurrent_reconciles as i64);
        ControllerMetrics {
            success: result("success"),
            error: result("error"),
            requeue: result("requeue"),
            requeue_after: result("requeue_after"),
            errors: self.reconcile_errors.get_or_create(&c).clone(),
            terminal: self.terminal_errors.get_or_create(&c).clone(),
            panics: self.panics.get_or_create(&c).clone(),
            time: self.reconcile_time.get_or_create(&c).clone(),
            active: self.active_workers.get_or_create(&c).clone(),
        }
    }

    /// The workqueue recorder of a controller's queue (labels `name` and `controller`,
    /// both the controller's name, as controller-runtime).
    pub fn queue(&self, name: &str) -> std::sync::Arc<dyn QueueMetrics> {
        let l = QueueLabels {
            name: name.to_string(),
            controller: name.to_string(),
        };
        std::sync::Arc::new(PromQueueMetrics {
            depth: self.wq_depth.get_or_create(&l).clone(),
            adds: self.wq_adds.get_or_create(&l).clone(),
            retries: self.wq_retries.get_or_create(&l).clone(),
            queue_duration: self.wq_queue_duration.get_or_create(&l).clone(),
            work_duration: self.wq_work_duration.get_or_create(&l).clone(),
            unfinished: self.wq_unfinished.get_or_create(&l).clone(),
            longest: self.wq_longest.get_or_create(&l).clone(),
        })
    }

    /// Count one API request (`code` is the HTTP status, or `<error>` when none came back).
    pub fn observe_request(&self, method: &str, host: &str, code: &str) {
        self.rest_requests
            .get_or_create(&RestLabels {
                code: code.to_string(),
                method: method.to_string(),
                host: host.to_string(),
            })
            .inc();
    }

    /// Set `leader_election_master_status{name}`.
    pub fn set_leader(&self, lease: &str, leading: bool) {
        self.leader_status
            .get_or_create(&NameLabel {
                name: lease.to_string(),
            })
            .set(leading as i64);
    }
}

/// What one controller records.
#[derive(Clone, Debug)]
pub struct ControllerMetrics {
    success: Counter,
    error: Counter,
    requeue: Counter,
    requeue_after: Counter,
    errors: Counter,
    terminal: Counter,
    panics: Counter,
    time: Histogram,
    active: Gauge,
}

/// How a reconcile ended, for [`ControllerMetrics::observe`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Done.
    Success,
    /// Asked for a rate-limited requeue.
    Requeue,
    /// Asked for a delayed requeue.
    RequeueAfter,
    /// Failed (retried).
    Error,
    /// Failed terminally (not retried).
    TerminalError,
    /// Panicked (retried).
    Panic,
}

impl ControllerMetrics {
    /// Record one reconcile.
    pub fn observe(&self, outcome: Outcome, took: Duration) {
        self.time.observe(took.as_secs_f64());
        match outcome {
            Outcome::Success => {
                self.success.inc();
            }
            Outcome::Requeue => {
                self.requeue.inc();
            }
            Outcome::RequeueAfter => {
                self.requeue_after.inc();
            }
            Outcome::Error | Outcome::TerminalError | Outcome::Panic => {
                self.error.inc();
                self.errors.inc();
                if outcome == Outcome::TerminalError {
                    self.terminal.inc();
                }
                if outcome == Outcome::Panic {
                    self.panics.inc();
                }
            }
        }
    }

    /// A worker starts (`+1`) or ends (`-1`) a reconcile.
    pub fn add_active_workers(&self, delta: i64) {
        self.active.inc_by(delta);
    }
}

struct PromQueueMetrics {
    depth: Gauge,
    adds: Counter,
    retries: Counter,
    queue_duration: Histogram,
    work_duration: Histogram,
    unfinished: FloatGauge,
    longest: FloatGauge,
}

impl QueueMetrics for PromQueueMetrics {
    fn inc_adds(&self) {
        self.adds.inc();
    }
    fn inc_depth(&self) {
        self.depth.inc();
    }
    fn dec_depth(&self) {
        self.depth.dec();
    }
    fn observe_queue_duration(&self, waited: Duration) {
        self.queue_duration.observe(waited.as_secs_f64());
    }
    fn observe_work_duration(&self, worked: Duration) {
        self.work_duration.observe(worked.as_secs_f64());
    }
    fn inc_retries(&self) {
        self.retries.inc();
    }
    fn set_unfinished_work_seconds(&self, seconds: f64) {
        self.unfinished.set(seconds);
    }
    fn set_longest_running_processor_seconds(&self, seconds: f64) {
        self.longest.set(seconds);
    }
}

/// `process_*` metrics, read from `/proc` at each scrape (Linux; nothing elsewhere).
#[derive(Debug)]
struct ProcessCollector;

/// Clock ticks per second of `/proc/<pid>/stat` times (USER_HZ, 100 on Linux).
const CLOCK_TICKS: f64 = 100.0;

struct ProcessStats {
    cpu_seconds: f64,
    start_time_seconds: f64,
    resident_bytes: i64,
    virtual_bytes: i64,
    open_fds: i64,
    max_fds: i64,
}

/// The numeric fields of `/proc/self/stat` (stat(5) field `n` at index `n - 3`: those
/// after the command name, which is in parentheses and may hold spaces).
fn self_stat() -> Option<Vec<f64>> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let rest = stat.get(stat.rfind(')')? + 2..)?;
    Some(
        rest.split_whitespace()
            .map(|v| v.parse::<f64>().unwrap_or(f64::NAN))
            .collect(),
    )
}

/// User + system CPU seconds this process used (Linux; `None` elsewhere). For
/// benchmarks and `process_cpu_seconds_total`.
pub fn process_cpu_seconds() -> Option<f64> {
    let f = self_stat()?;
    Some((f.get(14 - 3)? + f.get(15 - 3)?) / CLOCK_TICKS)
}

/// A `/proc/self/status` memory field in KiB (`"VmRSS:"`, `"VmHWM:"`; Linux only).
pub fn process_status_kib(field: &str) -> Option<u64> {
    std::fs::read_to_string("/proc/self/status")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

fn process_stats() -> Option<ProcessStats> {
    let f = self_stat()?;
    let num = |n: usize| f.get(n - 3).copied().filter(|v| !v.is_nan());
    let cpu_seconds = process_cpu_seconds()?;
    let boot_time = std::fs::read_to_string("/proc/stat")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("btime "))
        .and_then(|v| v.trim().parse::<f64>().ok())?;
    let start_time_seconds = boot_time + num(22)? / CLOCK_TICKS;
    let virtual_bytes = num(23)? as i64;
    let resident_bytes = process_status_kib("VmRSS:").map_or(0, |kb| kb as i64 * 1024);
    let open_fds = std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count() as i64);
    let max_fds = std::fs::read_to_string("/proc/self/limits")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .and_then(|l| l.split_whitespace().nth(3).and_then(|v| v.parse().ok()))
        .unwrap_or(0);
    Some(ProcessStats {
        cpu_seconds,
        start_time_seconds,
        resident_bytes,
        virtual_bytes,
        open_fds,
        max_fds,
    })
}

impl Collector for ProcessCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let Some(p) = process_stats() else {
            return Ok(());
        };
        let cpu = ConstCounter::new(p.cpu_seconds);
        cpu.encode(encoder.encode_descriptor(
            "process_cpu_seconds",
            "Total user and system CPU time spent in seconds",
            None,
            cpu.metric_type(),
        )?)?;
        let gauges: [(&str, &str, f64); 5] = [
            (
                "process_resident_memory_bytes",
                "Resident memory size in bytes",
                p.resident_bytes as f64,
            ),
            (
                "process_virtual_memory_bytes",
                "Virtual memory size in bytes",
                p.virtual_bytes as f64,
            ),
            (
                "process_open_fds",
                "Number of open file descriptors",
                p.open_fds as f64,
            ),
            (
                "process_max_fds",
                "Maximum number of open file descriptors",
                p.max_fds as f64,
            ),
            (
                "process_start_time_seconds",
                "Start time of the process since unix epoch in seconds",
                p.start_time_seconds,
            ),
        ];
        for (name, help, value) in gauges {
            let g = ConstGauge::new(value);
            g.encode(encoder.encode_descriptor(name, help, None, g.metric_type())?)?;
        }
        Ok(())
    }
}

/// A tower layer for [`kube::Client`] that counts requests in
/// `rest_client_requests_total{code,method,host}`:
/// `ClientBuilder::try_from(config)?.with_layer(&RestClientMetricsLayer::new(host)).build()`.
#[derive(Clone, Debug)]
pub struct RestClientMetricsLayer {
    host: std::sync::Arc<str>,
}

impl RestClientMetricsLayer {
    /// Requests to `host` (`host:port` of the API server, the label value).
    pub fn new(host: &str) -> Self {
        RestClientMetricsLayer { host: host.into() }
    }

    /// The `host:port` label of a server URL.
    pub fn host_of(url: &http::Uri) -> String {
        let mut host = url.host().unwrap_or_default().to_string();
        if let Some(port) = url.port_u16() {
            let _ = write!(host, ":{port}");
        }
        host
    }
}

impl<S> tower::Layer<S> for RestClientMetricsLayer {
    type Service = RestClientMetrics<S>;
    fn layer(&self, inner: S) -> Self::Service {
        RestClientMetrics {
            inner,
            host: self.host.clone(),
        }
    }
}

/// The service of [`RestClientMetricsLayer`].
#[derive(Clone, Debug)]
pub struct RestClientMetrics<S> {
    inner: S,
    host: std::sync::Arc<str>,
}

impl<S, B, R> tower::Service<http::Request<B>> for RestClientMetrics<S>
where
    S: tower::Service<http::Request<B>, Response = http::Response<R>>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = BoxFuture<'static, Result<Self::Response, Self::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        let method = req.method().as_str().to_string();
        let host = self.host.clone();
        let fut = self.inner.call(req);
        Box::pin(async move {
            let res = fut.await;
            let code = match &res {
                Ok(r) => r.status().as_u16().to_string(),
                Err(_) => "<error>".to_string(),
            };
            global().observe_request(&method, &host, &code);
            res
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controller_metrics_use_upstream_names_and_labels() {
        let m = global();
        let c = m.controller("unit-test-ctl", 3);
        c.observe(Outcome::Success, Duration::from_millis(20));
        c.observe(Outcome::TerminalError, Duration::from_millis(1));
        c.observe(Outcome::Panic, Duration::from_millis(1));
        let q = m.queue("unit-test-ctl");
        q.inc_adds();
        q.inc_depth();
        m.set_leader("unit-lease", true);
        m.observe_request("GET", "127.0.0.1:1", "200");
        let text = m.encode();
        for line in [
            r#"controller_runtime_reconcile_total{controller="unit-test-ctl",result="success"} 1"#,
            r#"controller_runtime_reconcile_total{controller="unit-test-ctl",result="error"} 2"#,
            r#"controller_runtime_reconcile_total{controller="unit-test-ctl",result="requeue"} 0"#,
            r#"controller_runtime_reconcile_errors_total{controller="unit-test-ctl"} 2"#,
            r#"controller_runtime_terminal_reconcile_errors_total{controller="unit-test-ctl"} 1"#,
            r#"controller_runtime_reconcile_panics_total{controller="unit-test-ctl"} 1"#,
            r#"controller_runtime_reconcile_time_seconds_count{controller="unit-test-ctl"} 3"#,
            r#"controller_runtime_max_concurrent_reconciles{controller="unit-test-ctl"} 3"#,
            r#"workqueue_adds_total{name="unit-test-ctl",controller="unit-test-ctl"} 1"#,
            r#"workqueue_depth{name="unit-test-ctl",controller="unit-test-ctl"} 1"#,
            r#"leader_election_master_status{name="unit-lease"} 1"#,
            r#"rest_client_requests_total{code="200",method="GET",host="127.0.0.1:1"} 1"#,
        ] {
            assert!(text.contains(line), "missing {line} in\n{text}");
        }
        assert!(text.contains("\nprocess_resident_memory_bytes "), "{text}");
        assert!(text.contains("\nprocess_cpu_seconds_total "), "{text}");
        assert!(text.ends_with("# EOF\n"));
    }
}
