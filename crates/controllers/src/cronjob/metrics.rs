//! The CronJob controller's metric (upstream `pkg/controller/cronjob/metrics`):
//! `cronjob_controller_cronjob_job_creation_skew_duration_seconds`, how long after its
//! scheduled time each Job was created (buckets 1 s to 512 s, doubling).

use std::sync::OnceLock;

use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};

/// The skew histogram (registered on first use).
pub fn job_creation_skew() -> &'static Histogram {
    static METRIC: OnceLock<Histogram> = OnceLock::new();
    METRIC.get_or_init(|| {
        let h = Histogram::new(exponential_buckets(1.0, 2.0, 10));
        coxswain_runtime::metrics::global().register(
            "cronjob_controller_cronjob_job_creation_skew_duration_seconds",
            "Time between when a cronjob is scheduled to be run, and when the corresponding job is created",
            h.clone(),
        );
        h
    })
}
