//! The mirroring controller's metrics (upstream `endpointslicemirroring/metrics`,
//! subsystem `endpoint_slice_mirroring_controller`): endpoints added, updated, removed
//! and addresses skipped per sync, sync duration, and slice changes by operation. The
//! gauges upstream derives from its per-Endpoints cache (desired endpoints and slices)
//! are not kept.

use std::sync::OnceLock;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};

/// The `operation` label of the changes counter.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct Operation {
    /// `create`, `update` or `delete`.
    pub operation: String,
}

/// The controller's metrics, registered once.
pub struct Metrics {
    /// Endpoints added per sync.
    pub added: Histogram,
    /// Endpoints changed in place per sync.
    pub updated: Histogram,
    /// Endpoints removed per sync.
    pub removed: Histogram,
    /// Addresses not mirrored per sync (invalid or over the per-subset maximum).
    pub skipped: Histogram,
    /// Seconds per sync.
    pub sync_duration: Histogram,
    /// EndpointSlice writes by operation.
    pub changes: Family<Operation, Counter>,
}

impl Metrics {
    /// Count one slice write.
    pub fn change(&self, operation: &str) {
        self.changes
            .get_or_create(&Operation {
                operation: operation.into(),
            })
            .inc();
    }
}

/// The metrics, registered in the process registry on first use.
pub fn metrics() -> &'static Metrics {
    static METRICS: OnceLock<Metrics> = OnceLock::new();
    METRICS.get_or_init(|| {
        let per_sync = || Histogram::new(exponential_buckets(2.0, 2.0, 15));
        let m = Metrics {
            added: per_sync(),
            updated: per_sync(),
            removed: per_sync(),
            skipped: per_sync(),
            sync_duration: Histogram::new(exponential_buckets(0.001, 2.0, 15)),
            changes: Family::default(),
        };
        let r = coxswain_runtime::metrics::global();
        let name = |s: &str| format!("endpoint_slice_mirroring_controller_{s}");
        r.register(
            &name("endpoints_added_per_sync"),
            "Number of endpoints added on each Endpoints sync",
            m.added.clone(),
        );
        r.register(
            &name("endpoints_updated_per_sync"),
            "Number of endpoints updated on each Endpoints sync",
            m.updated.clone(),
        );
        r.register(
            &name("endpoints_removed_per_sync"),
            "Number of endpoints removed on each Endpoints sync",
            m.removed.clone(),
        );
        r.register(
            &name("addresses_skipped_per_sync"),
            "Number of addresses skipped on each Endpoints sync due to being invalid or exceeding MaxEndpointsPerSubset",
            m.skipped.clone(),
        );
        r.register(
            &name("endpoints_sync_duration"),
            "Duration of syncEndpoints() in seconds",
            m.sync_duration.clone(),
        );
        r.register(
            &name("changes"),
            "Number of EndpointSlice changes",
            m.changes.clone(),
        );
        m
    })
}
