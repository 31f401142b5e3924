//! The garbage collector's metrics (upstream `pkg/controller/garbagecollector/metrics`),
//! registered once in the process-wide registry.
//!
//! - `garbagecollector_controller_resources_sync_error_total`: failed discovery syncs
//!   (upstream's one metric);
//! - `garbagecollector_controller_graph_nodes`: objects in the dependency graph;
//! - `garbagecollector_controller_monitors`: resources monitored;
//! - `garbagecollector_controller_attempt_to_delete_queue_depth`,
//!   `garbagecollector_controller_attempt_to_orphan_queue_depth`,
//!   `garbagecollector_controller_graph_changes_queue_depth`: work waiting.
//!
//! The work queues also report the usual `workqueue_*` metrics under the names
//! `garbage_collector_attempt_to_delete` and `garbage_collector_attempt_to_orphan`.

use std::sync::OnceLock;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;

/// The collector's gauges and counters.
#[derive(Debug, Default)]
pub struct GcMetrics {
    /// Discovery syncs that failed.
    pub sync_errors: Counter,
    /// Nodes in the graph.
    pub graph_nodes: Gauge,
    /// Monitored resources.
    pub monitors: Gauge,
    /// Items ready in `attemptToDelete`.
    pub attempt_to_delete_depth: Gauge,
    /// Items ready in `attemptToOrphan`.
    pub attempt_to_orphan_depth: Gauge,
    /// Informer events not yet applied to the graph.
    pub graph_changes_depth: Gauge,
}

/// The process's collector metrics (registered on first use).
pub fn metrics() -> &'static GcMetrics {
    static METRICS: OnceLock<GcMetrics> = OnceLock::new();
    METRICS.get_or_init(|| {
        let m = GcMetrics::default();
        let reg = coxswain_runtime::metrics::global();
        reg.register(
            "garbagecollector_controller_resources_sync_error",
            "Number of garbage collector resources sync errors",
            m.sync_errors.clone(),
        );
        reg.register(
            "garbagecollector_controller_graph_nodes",
            "Number of objects in the garbage collector's dependency graph",
            m.graph_nodes.clone(),
        );
        reg.register(
            "garbagecollector_controller_monitors",
            "Number of resources the garbage collector monitors",
            m.monitors.clone(),
        );
        reg.register(
            "garbagecollector_controller_attempt_to_delete_queue_depth",
            "Items waiting in the garbage collector's attemptToDelete queue",
            m.attempt_to_delete_depth.clone(),
        );
        reg.register(
            "garbagecollector_controller_attempt_to_orphan_queue_depth",
            "Items waiting in the garbage collector's attemptToOrphan queue",
            m.attempt_to_orphan_depth.clone(),
        );
        reg.register(
            "garbagecollector_controller_graph_changes_queue_depth",
            "Informer events waiting to be applied to the dependency graph",
            m.graph_changes_depth.clone(),
        );
        m
    })
}
