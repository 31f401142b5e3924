//! Per-webhook metrics with controller-runtime's names (`pkg/webhook/internal/metrics`).

use std::time::Instant;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WebhookLabel {
    webhook: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    webhook: String,
    code: String,
}

fn latency_histogram() -> Histogram {
    // controller-runtime: prometheus.ExponentialBuckets(10e-9, 10, 12).
    Histogram::new(exponential_buckets(1e-8, 10.0, 12))
}

/// The webhook server's metrics; clones share the values.
#[derive(Clone, Debug)]
pub(crate) struct WebhookMetrics {
    requests: Family<RequestLabels, Counter>,
    in_flight: Family<WebhookLabel, Gauge>,
    latency: Family<WebhookLabel, Histogram, fn() -> Histogram>,
    pub(crate) admission_panics: Counter,
    pub(crate) conversion_panics: Counter,
    pub(crate) cert_reads: Counter,
    pub(crate) cert_read_errors: Counter,
}

impl Default for WebhookMetrics {
    fn default() -> Self {
        WebhookMetrics {
            requests: Family::default(),
            in_flight: Family::default(),
            latency: Family::new_with_constructor(latency_histogram),
            admission_panics: Counter::default(),
            conversion_panics: Counter::default(),
            cert_reads: Counter::default(),
            cert_read_errors: Counter::default(),
        }
    }
}

impl WebhookMetrics {
    /// Creates the series of a newly registered webhook, as controller-runtime does for the
    /// codes 200 and 500, so that they show up before the first request.
    pub(crate) fn init_webhook(&self, path: &str) {
        for code in ["200", "500"] {
            let _ = self.requests.get_or_create(&RequestLabels {
                webhook: path.to_string(),
                code: code.to_string(),
            });
        }
        let label = WebhookLabel {
            webhook: path.to_string(),
        };
        let _ = self.in_flight.get_or_create(&label);
        let _ = self.latency.get_or_create(&label);
    }

    /// Marks a request of `path` as in flight until the returned guard is finished or dropped.
    pub(crate) fn start(&self, path: &str) -> InFlight<'_> {
        let label = WebhookLabel {
            webhook: path.to_string(),
        };
        self.in_flight.get_or_create(&label).inc();
        InFlight {
            metrics: self,
            label,
            started: Instant::now(),
        }
    }

    pub(crate) fn register(&self, registry: &mut Registry) {
        // prometheus-client appends `_total` to counter names.
        registry.register(
            "controller_runtime_webhook_requests",
            "Total number of admission requests by HTTP status code.",
            self.requests.clone(),
        );
        registry.register(
            "controller_runtime_webhook_requests_in_flight",
            "Current number of admission requests being served.",
            self.in_flight.clone(),
        );
        registry.register(
            "controller_runtime_webhook_latency_seconds",
            "Histogram of the latency of processing admission requests",
            self.latency.clone(),
        );
        registry.register(
            "controller_runtime_webhook_panics",
            "Total number of webhook panics",
            self.admission_panics.clone(),
        );
        registry.register(
            "controller_runtime_conversion_webhook_panics",
            "Total number of conversion webhook panics",
            self.conversion_panics.clone(),
        );
        super::certs::register_counters(registry, &self.cert_reads, &self.cert_read_errors);
    }
}

/// One request in flight; records its code and latency on [`InFlight::finish`].
pub(crate) struct InFlight<'a> {
    metrics: &'a WebhookMetrics,
    label: WebhookLabel,
    started: Instant,
}

impl InFlight<'_> {
    pub(crate) fn finish(self, code: u16) {
        self.metrics
            .latency
            .get_or_create(&self.label)
            .observe(self.started.elapsed().as_secs_f64());
        self.metrics
            .requests
            .get_or_create(&RequestLabels {
                webhook: self.label.webhook.clone(),
                code: code.to_string(),
            })
            .inc();
        // `Drop` lowers the in-flight gauge.
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.metrics.in_flight.get_or_create(&self.label).dec();
    }
}
