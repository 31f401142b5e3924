//! Printers of the kinds once in `table/workloads.rs`, cell by cell.

use super::printer;
use crate::registry::autoscaling::horizontalpodautoscaler::printer::hpa_metrics;
use crate::registry::table::prelude::*;

fn now() -> DateTime<Utc> {
    parse_time("2026-01-10T12:00:00Z").expect("time")
}

#[test]
fn job_status_completions_and_duration() {
    let job = |spec: Value, status: Value| {
        let v = json!({"metadata": {"name": "j"}, "spec": spec, "status": status});
        let row = (printer("batch", "Job").print)(&v, now());
        (
            row.cells[1].as_str().unwrap_or_default().to_string(),
            row.cells[2].as_str().unwrap_or_default().to_string(),
            row.cells[3].as_str().unwrap_or_default().to_string(),
        )
    };
    assert_eq!(
        job(json!({"completions": 3}), json!({"succeeded": 1})),
        ("Running".into(), "1/3".into(), String::new())
    );
    assert_eq!(job(json!({"parallelism": 4}), json!({})).1, "0/1 of 4");
    assert_eq!(job(json!({"parallelism": 1}), json!({})).1, "0/1");
    let done = job(
        json!({"completions": 1}),
        json!({"succeeded": 1, "startTime": "2026-01-10T11:00:00Z", "completionTime": "2026-01-10T11:03:10Z",
            "conditions": [{"type": "SuccessCriteriaMet", "status": "True"}, {"type": "Complete", "status": "True"}]}),
    );
    assert_eq!(done, ("Complete".into(), "1/1".into(), "3m10s".into()));
    let running = job(json!({}), json!({"startTime": "2026-01-10T11:59:15Z"}));
    assert_eq!(running.2, "45s");
    assert_eq!(
        job(
            json!({}),
            json!({"conditions": [{"type": "Failed", "status": "True"}]})
        )
        .0,
        "Failed"
    );
    assert_eq!(
        job(
            json!({}),
            json!({"conditions": [{"type": "Suspended", "status": "True"}]})
        )
        .0,
        "Suspended"
    );
    assert_eq!(
        job(
            json!({}),
            json!({"conditions": [{"type": "FailureTarget", "status": "True"}]})
        )
        .0,
        "FailureTarget"
    );
    assert_eq!(
        job(
            json!({}),
            json!({"conditions": [{"type": "Complete", "status": "False"}]})
        )
        .0,
        "Running"
    );
}

#[test]
fn hpa_targets() {
    let v = json!({"spec": {"metrics": [
        {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}},
        {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "100Mi"}}},
        {"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "1k"}}}]},
        "status": {"currentMetrics": [
        {"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 12, "averageValue": "12m"}}}]}});
    assert_eq!(
        hpa_metrics(&v),
        "cpu: 12%/80%, memory: <unknown>/100Mi + 1 more..."
    );
    assert_eq!(hpa_metrics(&json!({"spec": {}})), "<none>");
    let ext = json!({"spec": {"metrics": [{"type": "External", "external": {"metric": {"name": "q"}, "target": {"type": "Value", "value": "10"}}}]}});
    assert_eq!(hpa_metrics(&ext), "<unknown>/10");
}

#[test]
fn controller_revision_owner() {
    let v = json!({"metadata": {"name": "r", "ownerReferences": [
        {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent", "controller": true}]}, "revision": 2});
    let row = (printer("apps", "ControllerRevision").print)(&v, now());
    assert_eq!(row.cells[1], json!("daemonset.apps/agent"));
    assert_eq!(row.cells[2], json!(2));
    let orphan =
        (printer("apps", "ControllerRevision").print)(&json!({"metadata": {"name": "r"}}), now());
    assert_eq!(orphan.cells[1], json!("<none>"));
}

#[test]
fn pdb_and_cronjob_defaults() {
    let pdb = (printer("policy", "PodDisruptionBudget").print)(
        &json!({"metadata": {"name": "p"}, "spec": {"maxUnavailable": "25%"}}),
        now(),
    );
    assert_eq!(pdb.cells[1..4], [json!("N/A"), json!("25%"), json!(0)]);
    let cj = (printer("batch", "CronJob").print)(
        &json!({"metadata": {"name": "c"}, "spec": {"schedule": "@hourly", "timeZone": "Etc/UTC"},
            "status": {"lastScheduleTime": "2026-01-10T11:00:00Z", "active": [{"name": "x"}]}}),
        now(),
    );
    assert_eq!(
        cj.cells[1..6],
        [
            json!("@hourly"),
            json!("Etc/UTC"),
            json!("<unset>"),
            json!(1),
            json!("60m")
        ]
    );
}
