//! The pod printer: READY, STATUS (the reason `kubectl get pods` shows), RESTARTS, AGE and
//! the wide columns IP, NODE, NOMINATED NODE, READINESS GATES.

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use super::{arr, deleting, field, name, opt_s, s, string, text, wide, Printer, Row, AGE, NAME};
use apimachinery::time::{elapsed, parse_time};

const POD_SPEC: &str = "io.k8s.api.core.v1.PodSpec";
const POD_STATUS: &str = "io.k8s.api.core.v1.PodStatus";

/// Pods (`core/v1`).
pub static POD: Printer = Printer {
    columns: &[
        NAME,
        string(
            "Ready",
            text("The aggregate readiness state of this pod for accepting traffic."),
        ),
        string(
            "Status",
            text("The aggregate status of the containers in this pod."),
        ),
        string("Restarts", text("The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.")),
        AGE,
        wide(string("IP", field(POD_STATUS, "podIP"))),
        wide(string("Node", field(POD_SPEC, "nodeName"))),
        wide(string("Nominated Node", field(POD_STATUS, "nominatedNodeName"))),
        wide(string("Readiness Gates", field(POD_SPEC, "readinessGates"))),
    ],
    print: print_pod,
};

pub(super) fn printer(group: &str, kind: &str) -> Option<&'static Printer> {
    match (group, kind) {
        ("", "Pod") => Some(&POD),
        _ => None,
    }
}

/// The state of a container status: `waiting`, `running` or `terminated`.
fn state<'a>(c: &'a Value, which: &str) -> Option<&'a Value> {
    c.get("state")?.get(which).filter(|v| v.is_object())
}

fn last_terminated_at(c: &Value) -> Option<DateTime<Utc>> {
    let t = c.get("lastState")?.get("terminated")?;
    // a terminated state without finishedAt is Go's zero time: never later than another
    Some(
        t.get("finishedAt")
            .and_then(Value::as_str)
            .and_then(parse_time)
            .unwrap_or(DateTime::<Utc>::MIN_UTC),
    )
}

fn restart_count(c: &Value) -> i64 {
    c.get("restartCount").and_then(Value::as_i64).unwrap_or(0)
}

fn str_of<'a>(v: Option<&'a Value>, key: &str) -> &'a str {
    v.and_then(|v| v.get(key))
        .and_then(Value::as_str)
        .unwrap_or("")
}

fn terminated_reason(prefix: &str, t: &Value) -> String {
    let reason = str_of(Some(t), "reason");
    if !reason.is_empty() {
        return format!("{prefix}{reason}");
    }
    let signal = t.get("signal").and_then(Value::as_i64).unwrap_or(0);
    if signal != 0 {
        format!("{prefix}Signal:{signal}")
    } else {
        let code = t.get("exitCode").and_then(Value::as_i64).unwrap_or(0);
        format!("{prefix}ExitCode:{code}")
    }
}

fn condition_true(pod: &Value, ty: &str) -> bool {
    arr(pod, "/status/conditions").iter().any(|c| {
        c.get("type").and_then(Value::as_str) == Some(ty)
            && c.get("status").and_then(Value::as_str) == Some("True")
    })
}

fn latest(a: Option<DateTime<Utc>>, b: Option<DateTime<Utc>>) -> Option<DateTime<Utc>> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

fn print_pod(pod: &Value, now: DateTime<Utc>) -> Row {
    let init_specs = arr(pod, "/spec/initContainers");
    // init containers with restartPolicy Always are sidecars: they count as containers
    let restartable = |name: &str| {
        init_specs.iter().any(|c| {
            c.get("name").and_then(Value::as_str) == Some(name)
                && c.get("restartPolicy").and_then(Value::as_str) == Some("Always")
        })
    };
    let total = arr(pod, "/spec/containers").len()
        + init_specs
            .iter()
            .filter(|c| c.get("restartPolicy").and_then(Value::as_str) == Some("Always"))
            .count();
    let mut ready = 0usize;
    let mut restarts = 0i64;
    let mut sidecar_restarts = 0i64;
    let mut last_restart: Option<DateTime<Utc>> = None;
    let mut last_sidecar_restart: Option<DateTime<Utc>> = None;

    let phase = s(pod, "/status/phase");
    let mut reason = match s(pod, "/status/reason") {
        "" => phase.to_string(),
        r => r.to_string(),
    };
    let gated = arr(pod, "/status/conditions").iter().any(|c| {
        c.get("type").and_then(Value::as_str) == Some("PodScheduled")
            && c.get("reason").and_then(Value::as_str) == Some("SchedulingGated")
    });
    if gated {
        reason = "SchedulingGated".into();
    }
    let conditions = match phase {
        "Succeeded" => Some(
            json!([{"type": "Completed", "status": "True", "reason": "Succeeded", "message": "The pod has completed successfully."}]),
        ),
        "Failed" => Some(
            json!([{"type": "Completed", "status": "True", "reason": "Failed", "message": "The pod failed."}]),
        ),
        _ => None,
    };

    let mut initializing = false;
    let init_statuses = arr(pod, "/status/initContainerStatuses");
    for (i, c) in init_statuses.iter().enumerate() {
        let is_sidecar = restartable(str_of(Some(c), "name"));
        restarts += restart_count(c);
        last_restart = latest(last_restart, last_terminated_at(c));
        if is_sidecar {
            sidecar_restarts += restart_count(c);
            last_sidecar_restart = latest(last_sidecar_restart, last_terminated_at(c));
        }
        let terminated = state(c, "terminated");
        let waiting_reason = str_of(state(c, "waiting"), "reason");
        if terminated.is_some_and(|t| t.get("exitCode").and_then(Value::as_i64).unwrap_or(0) == 0) {
            continue;
        }
        if is_sidecar && c.get("started").and_then(Value::as_bool) == Some(true) {
            if c.get("ready").and_then(Value::as_bool) == Some(true) {
                ready += 1;
            }
            continue;
        }
        if let Some(t) = terminated {
            reason = terminated_reason("Init:", t);
        } else if !waiting_reason.is_empty() && waiting_reason != "PodInitializing" {
            reason = format!("Init:{waiting_reason}");
        } else {
            reason = format!("Init:{i}/{}", init_specs.len());
        }
        initializing = true;
        break;
    }

    if !initializing || condition_true(pod, "Initialized") {
        restarts = sidecar_restarts;
        last_restart = last_sidecar_restart;
        let mut has_running = false;
        for c in arr(pod, "/status/containerStatuses").iter().rev() {
            restarts += restart_count(c);
            last_restart = latest(last_restart, last_terminated_at(c));
            let waiting_reason = str_of(state(c, "waiting"), "reason");
            let terminated = state(c, "terminated");
            if !waiting_reason.is_empty() {
                reason = waiting_reason.to_string();
            } else if let Some(t) = terminated {
                reason = terminated_reason("", t);
            } else if c.get("ready").and_then(Value::as_bool) == Some(true)
                && state(c, "running").is_some()
            {
                has_running = true;
                ready += 1;
            }
        }
        // a pod whose last container completed while another still runs is not done
        if reason == "Completed" && has_running {
            reason = if condition_true(pod, "Ready") {
                "Running".into()
            } else {
                "NotReady".into()
            };
        }
    }

    if deleting(pod) && s(pod, "/status/reason") == "NodeLost" {
        reason = "Unknown".into();
    } else if deleting(pod) && phase != "Succeeded" && phase != "Failed" {
        reason = "Terminating".into();
    }

    // the zero time counts as no restart date
    let last_restart = last_restart.filter(|t| *t != DateTime::<Utc>::MIN_UTC);
    let restarts_cell = match last_restart {
        Some(t) if restarts != 0 => format!("{restarts} ({} ago)", elapsed(t, now)),
        _ => restarts.to_string(),
    };

    let pod_ip = arr(pod, "/status/podIPs")
        .first()
        .and_then(|p| p.get("ip"))
        .and_then(Value::as_str)
        .filter(|ip| !ip.is_empty())
        .unwrap_or("<none>");
    let node = opt_s(pod, "/spec/nodeName")
        .filter(|n| !n.is_empty())
        .unwrap_or("<none>");
    let nominated = opt_s(pod, "/status/nominatedNodeName")
        .filter(|n| !n.is_empty())
        .unwrap_or("<none>");
    let gates = arr(pod, "/spec/readinessGates");
    let readiness_gates = if gates.is_empty() {
        "<none>".to_string()
    } else {
        let conditions = arr(pod, "/status/conditions");
        let true_count = gates
            .iter()
            .filter(|g| {
                let ty = str_of(Some(g), "conditionType");
                conditions
                    .iter()
                    .find(|c| c.get("type").and_then(Value::as_str) == Some(ty))
                    .is_some_and(|c| c.get("status").and_then(Value::as_str) == Some("True"))
            })
            .count();
        format!("{true_count}/{}", gates.len())
    };

    Row {
        cells: vec![
            name(pod),
            json!(format!("{ready}/{total}")),
            json!(reason),
            json!(restarts_cell),
            super::age(pod, now),
            json!(pod_ip),
            json!(node),
            json!(nominated),
            json!(readiness_gates),
        ],
        conditions,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> DateTime<Utc> {
        parse_time("2026-01-10T12:00:00Z").expect("time")
    }

    /// `now` minus `secs` seconds, RFC 3339.
    fn ago(secs: i64) -> String {
        (now() - chrono::Duration::seconds(secs)).to_rfc3339()
    }

    fn containers(n: usize) -> Value {
        Value::Array((0..n).map(|i| json!({"name": format!("c{i}")})).collect())
    }

    fn pod(name: &str, spec: Value, status: Value) -> Value {
        json!({"metadata": {"name": name}, "spec": spec, "status": status})
    }

    fn cells5(row: &Row) -> Vec<String> {
        row.cells[..5]
            .iter()
            .map(|c| c.as_str().unwrap_or_default().to_string())
            .collect()
    }

    fn check(p: Value, want: [&str; 4]) -> Row {
        let row = print_pod(&p, now());
        let got = cells5(&row);
        let want: Vec<String> = want
            .iter()
            .map(|s| s.to_string())
            .chain(["<unknown>".to_string()])
            .collect();
        assert_eq!(got, want, "pod {}", p["metadata"]["name"]);
        row
    }

    const RUNNING: &str = r#"{"running": {}}"#;

    fn running() -> Value {
        serde_json::from_str(RUNNING).expect("json")
    }

    #[test]
    fn container_statuses_decide_ready_status_and_restarts() {
        // upstream TestPrintPod cases 1-5
        check(
            pod(
                "test1",
                json!({"containers": containers(2)}),
                json!({"phase": "podPhase", "containerStatuses": [
                {"ready": true, "restartCount": 3, "state": running()}, {"restartCount": 3}]}),
            ),
            ["test1", "1/2", "podPhase", "6"],
        );
        check(
            pod(
                "test2",
                json!({"containers": containers(2)}),
                json!({"phase": "podPhase", "containerStatuses": [
                {"ready": true, "restartCount": 3, "state": running()},
                {"state": {"waiting": {"reason": "ContainerWaitingReason"}}, "restartCount": 3}]}),
            ),
            ["test2", "1/2", "ContainerWaitingReason", "6"],
        );
        check(
            pod(
                "test3",
                json!({"containers": containers(2)}),
                json!({"phase": "podPhase", "containerStatuses": [
                {"state": {"waiting": {"reason": "ContainerWaitingReason"}}, "restartCount": 3},
                {"state": {"terminated": {"reason": "ContainerTerminatedReason"}}, "restartCount": 3}]}),
            ),
            ["test3", "0/2", "ContainerWaitingReason", "6"],
        );
        check(
            pod(
                "test4",
                json!({"containers": containers(2)}),
                json!({"phase": "podPhase", "containerStatuses": [
                {"ready": true, "restartCount": 3, "state": running()}, {"ready": true, "restartCount": 3}]}),
            ),
            ["test4", "1/2", "podPhase", "6"],
        );
        check(
            pod(
                "test5",
                json!({"containers": containers(2)}),
                json!({"reason": "podReason", "phase": "podPhase", "containerStatuses": [
                {"ready": true, "restartCount": 3, "state": running()}, {"ready": true, "restartCount": 3}]}),
            ),
            ["test5", "1/2", "podReason", "6"],
        );
    }

    #[test]
    fn completed_container_next_to_a_running_one() {
        let statuses = json!([
            {"ready": true, "restartCount": 3, "state": {"terminated": {"reason": "Completed", "exitCode": 0}}},
            {"ready": true, "restartCount": 3, "state": running()}]);
        check(
            pod(
                "test6",
                json!({"containers": containers(2)}),
                json!({"phase": "Running", "containerStatuses": statuses}),
            ),
            ["test6", "1/2", "NotReady", "6"],
        );
        check(
            pod(
                "test6",
                json!({"containers": containers(2)}),
                json!({"phase": "Running", "containerStatuses": statuses,
                "conditions": [{"type": "Ready", "status": "True"}]}),
            ),
            ["test6", "1/2", "Running", "6"],
        );
    }

    #[test]
    fn init_containers() {
        let waiting = json!({"waiting": {}});
        check(
            pod(
                "test7",
                json!({"initContainers": containers(1), "containers": containers(1)}),
                json!({"phase": "podPhase",
                "initContainerStatuses": [{"restartCount": 3, "state": running(), "lastState": {"terminated": {"finishedAt": ago(10)}}}],
                "containerStatuses": [{"state": waiting}]}),
            ),
            ["test7", "0/1", "Init:0/1", "3 (10s ago)"],
        );
        check(
            pod(
                "test8",
                json!({"initContainers": containers(2), "containers": containers(1)}),
                json!({"phase": "podPhase",
                "initContainerStatuses": [{"restartCount": 3, "state": running(), "lastState": {"terminated": {"finishedAt": ago(10)}}},
                                          {"state": waiting}],
                "containerStatuses": [{"state": waiting}]}),
            ),
            ["test8", "0/1", "Init:0/2", "3 (10s ago)"],
        );
        check(
            pod(
                "test9",
                json!({"initContainers": containers(2), "containers": containers(1)}),
                json!({"phase": "podPhase",
                "initContainerStatuses": [{"state": {"terminated": {}}},
                    {"restartCount": 3, "state": running(), "lastState": {"terminated": {"finishedAt": ago(10)}}}],
                "containerStatuses": [{"state": waiting}]}),
            ),
            ["test9", "0/1", "Init:1/2", "3 (10s ago)"],
        );
        check(
            pod(
                "test10",
                json!({"initContainers": containers(2), "containers": containers(1)}),
                json!({"phase": "podPhase",
                "initContainerStatuses": [
                    {"restartCount": 2, "state": {"terminated": {}}, "lastState": {"terminated": {"finishedAt": ago(120)}}},
                    {"restartCount": 3, "state": running(), "lastState": {"terminated": {"finishedAt": ago(10)}}}],
                "containerStatuses": [{"state": waiting}]}),
            ),
            ["test10", "0/1", "Init:1/2", "5 (10s ago)"],
        );
        check(
            pod(
                "test11",
                json!({"initContainers": containers(1), "containers": containers(1)}),
                json!({"phase": "Running",
                "initContainerStatuses": [{"restartCount": 2, "state": {"terminated": {}}, "lastState": {"terminated": {"finishedAt": ago(120)}}}],
                "containerStatuses": [{"restartCount": 4, "state": running(), "lastState": {"terminated": {"finishedAt": ago(20)}}}]}),
            ),
            ["test11", "0/1", "Running", "4 (20s ago)"],
        );
        // failed init containers and waiting reasons
        check(
            pod(
                "init-crash",
                json!({"initContainers": containers(1), "containers": containers(1)}),
                json!({"phase": "Pending",
                "initContainerStatuses": [{"state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}),
            ),
            ["init-crash", "0/1", "Init:CrashLoopBackOff", "0"],
        );
        check(
            pod(
                "init-exit",
                json!({"initContainers": containers(1), "containers": containers(1)}),
                json!({"phase": "Pending",
                "initContainerStatuses": [{"state": {"terminated": {"exitCode": 2}}}]}),
            ),
            ["init-exit", "0/1", "Init:ExitCode:2", "0"],
        );
        check(
            pod(
                "init-signal",
                json!({"initContainers": containers(1), "containers": containers(1)}),
                json!({"phase": "Pending",
                "initContainerStatuses": [{"state": {"terminated": {"exitCode": 137, "signal": 9}}}]}),
            ),
            ["init-signal", "0/1", "Init:Signal:9", "0"],
        );
    }

    #[test]
    fn restart_ages() {
        let day = 24 * 3600;
        check(
            pod(
                "test12",
                json!({"containers": containers(1)}),
                json!({"phase": "Running", "containerStatuses": [
                {"ready": true, "restartCount": 3, "state": running(), "lastState": {"terminated": {"finishedAt": ago(5 * day)}}}]}),
            ),
            ["test12", "1/1", "Running", "3 (5d ago)"],
        );
        check(
            pod(
                "test13",
                json!({"containers": containers(2)}),
                json!({"phase": "Running", "containerStatuses": [
                {"ready": true, "restartCount": 0, "state": running()},
                {"ready": true, "restartCount": 3, "state": running(), "lastState": {"terminated": {"finishedAt": ago(10 * day)}}}]}),
            ),
            ["test13", "2/2", "Running", "3 (10d ago)"],
        );
        check(
            pod(
                "test14",
                json!({"containers": containers(2)}),
                json!({"phase": "Running", "containerStatuses": [
                {"ready": true, "restartCount": 6, "state": running(), "lastState": {"terminated": {"finishedAt": ago(5 * day)}}},
                {"ready": true, "restartCount": 3, "state": running(), "lastState": {"terminated": {"finishedAt": ago(20 * day)}}}]}),
            ),
            ["test14", "2/2", "Running", "9 (5d ago)"],
        );
    }

    #[test]
    fn lifecycle_statuses() {
        check(
            pod(
                "pending",
                json!({"containers": containers(1)}),
                json!({"phase": "Pending"}),
            ),
            ["pending", "0/1", "Pending", "0"],
        );
        check(
            pod(
                "creating",
                json!({"containers": containers(1)}),
                json!({"phase": "Pending", "containerStatuses": [
                {"ready": false, "restartCount": 0, "state": {"waiting": {"reason": "ContainerCreating"}}}]}),
            ),
            ["creating", "0/1", "ContainerCreating", "0"],
        );
        check(
            pod(
                "crash",
                json!({"containers": containers(1)}),
                json!({"phase": "Running", "containerStatuses": [
                {"ready": false, "restartCount": 5, "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                 "lastState": {"terminated": {"exitCode": 1, "finishedAt": ago(30)}}}]}),
            ),
            ["crash", "0/1", "CrashLoopBackOff", "5 (30s ago)"],
        );
        check(
            pod(
                "running",
                json!({"containers": containers(1)}),
                json!({"phase": "Running", "containerStatuses": [
                {"ready": true, "restartCount": 0, "state": running()}]}),
            ),
            ["running", "1/1", "Running", "0"],
        );
        check(
            pod(
                "test15",
                json!({"containers": containers(2)}),
                json!({"phase": "podPhase", "conditions": [
                {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}]}),
            ),
            ["test15", "0/2", "SchedulingGated", "0"],
        );
        let done = check(
            pod(
                "test16",
                json!({"containers": containers(1)}),
                json!({"phase": "Succeeded", "containerStatuses": [
                {"ready": false, "restartCount": 0, "state": {"terminated": {"reason": "Completed", "exitCode": 0}}}]}),
            ),
            ["test16", "0/1", "Completed", "0"],
        );
        assert_eq!(
            done.conditions,
            Some(
                json!([{"type": "Completed", "status": "True", "reason": "Succeeded", "message": "The pod has completed successfully."}])
            )
        );
        let failed = check(
            pod(
                "test17",
                json!({"containers": containers(1)}),
                json!({"phase": "Failed", "containerStatuses": [
                {"ready": false, "restartCount": 0, "state": {"terminated": {"reason": "Error", "exitCode": 1}}}]}),
            ),
            ["test17", "0/1", "Error", "0"],
        );
        assert_eq!(
            failed.conditions.expect("conditions")[0]["reason"],
            "Failed"
        );
        check(
            pod(
                "exit",
                json!({"containers": containers(1)}),
                json!({"phase": "Failed", "containerStatuses": [
                {"state": {"terminated": {"exitCode": 3}}}]}),
            ),
            ["exit", "0/1", "ExitCode:3", "0"],
        );
    }

    #[test]
    fn deletion() {
        let deleted = |name: &str, status: Value| {
            let mut p = pod(name, json!({"containers": containers(1)}), status);
            p["metadata"]["deletionTimestamp"] = json!(ago(10));
            p
        };
        let done = check(
            deleted(
                "test18",
                json!({"phase": "Succeeded", "containerStatuses": [
                {"state": {"terminated": {"reason": "Completed", "exitCode": 0}}}]}),
            ),
            ["test18", "0/1", "Completed", "0"],
        );
        assert!(done.conditions.is_some());
        check(
            deleted(
                "test19",
                json!({"phase": "Running", "containerStatuses": [{"state": running()}]}),
            ),
            ["test19", "0/1", "Terminating", "0"],
        );
        check(
            deleted("test20", json!({"phase": "Pending"})),
            ["test20", "0/1", "Terminating", "0"],
        );
        check(
            deleted("lost", json!({"phase": "Running", "reason": "NodeLost"})),
            ["lost", "0/1", "Unknown", "0"],
        );
    }

    #[test]
    fn restartable_init_containers() {
        // upstream TestPrintPodWithRestartableInitContainer
        let spec = json!({"initContainers": [
            {"name": "restartable-init-1", "restartPolicy": "Always"},
            {"name": "restartable-init-2", "restartPolicy": "Always"}], "containers": containers(1)});
        let waiting = json!({"waiting": {}});
        check(
            pod(
                "test1",
                spec.clone(),
                json!({"phase": "Pending", "initContainerStatuses": [
                {"name": "restartable-init-1", "restartCount": 3, "state": running(), "started": false,
                 "lastState": {"terminated": {"finishedAt": ago(10)}}},
                {"name": "restartable-init-2", "state": waiting, "started": false}],
                "containerStatuses": [{"state": waiting}],
                "conditions": [{"type": "Initialized", "status": "False"}]}),
            ),
            ["test1", "0/3", "Init:0/2", "3 (10s ago)"],
        );
        check(
            pod(
                "test1",
                spec.clone(),
                json!({"phase": "Pending", "initContainerStatuses": [
                {"name": "restartable-init-1", "restartCount": 3, "state": running(), "started": true,
                 "lastState": {"terminated": {"finishedAt": ago(10)}}},
                {"name": "restartable-init-2", "state": running(), "started": false}],
                "containerStatuses": [{"state": waiting}],
                "conditions": [{"type": "Initialized", "status": "False"}]}),
            ),
            ["test1", "0/3", "Init:1/2", "3 (10s ago)"],
        );
        check(
            pod(
                "test2",
                spec.clone(),
                json!({"phase": "Running", "initContainerStatuses": [
                {"name": "restartable-init-1", "restartCount": 3, "state": running(), "started": true,
                 "lastState": {"terminated": {"finishedAt": ago(10)}}},
                {"name": "restartable-init-2", "state": running(), "started": true}],
                "containerStatuses": [{"ready": true, "restartCount": 4, "state": running(),
                    "lastState": {"terminated": {"finishedAt": ago(20)}}}],
                "conditions": [{"type": "Initialized", "status": "True"}]}),
            ),
            ["test2", "1/3", "Running", "7 (10s ago)"],
        );
        check(
            pod(
                "test3",
                spec,
                json!({"phase": "Succeeded", "initContainerStatuses": [
                {"name": "restartable-init-1", "restartCount": 3, "state": {"terminated": {"reason": "Error", "exitCode": 137}},
                 "started": false, "lastState": {"terminated": {"finishedAt": ago(10)}}},
                {"name": "restartable-init-2", "state": {"terminated": {"reason": "Error", "exitCode": 137}}, "started": false}],
                "containerStatuses": [{"restartCount": 4, "state": {"terminated": {"reason": "Completed", "exitCode": 0}},
                    "lastState": {"terminated": {"finishedAt": ago(20)}}}],
                "conditions": [{"type": "Initialized", "status": "True"}]}),
            ),
            ["test3", "0/3", "Completed", "7 (10s ago)"],
        );
        check(
            pod(
                "test4",
                json!({"initContainers": [{"name": "init1", "image": "initimage"},
                    {"name": "sidecar1", "image": "sidecarimage", "restartPolicy": "Always"}],
                    "containers": [{"name": "container1", "image": "containerimage"}]}),
                json!({"phase": "Running",
                    "initContainerStatuses": [{"name": "initinvalid"}, {"name": "init1"}, {"name": "sidecar1"}],
                    "containerStatuses": [{"name": "containerinvalid"}, {"name": "container1"}]}),
            ),
            ["test4", "0/2", "Init:0/2", "0"],
        );
    }

    #[test]
    fn wide_columns() {
        // upstream TestPrintPodwide
        let p = json!({"metadata": {"name": "test1"},
            "spec": {"containers": containers(2), "nodeName": "test1", "readinessGates": [
                {"conditionType": "condition1"}, {"conditionType": "condition2"}, {"conditionType": "condition3"}]},
            "status": {"conditions": [{"type": "condition1", "status": "False"}, {"type": "condition2", "status": "True"}],
                "phase": "podPhase", "podIPs": [{"ip": "1.1.1.1"}, {"ip": "2001:db8::"}],
                "containerStatuses": [{"ready": true, "restartCount": 3, "state": running()}, {"restartCount": 3}],
                "nominatedNodeName": "node1"}});
        let row = print_pod(&p, now());
        assert_eq!(
            row.cells,
            vec![
                json!("test1"),
                json!("1/2"),
                json!("podPhase"),
                json!("6"),
                json!("<unknown>"),
                json!("1.1.1.1"),
                json!("test1"),
                json!("node1"),
                json!("1/3")
            ]
        );
        let bare = print_pod(
            &pod(
                "test2",
                json!({"containers": containers(2)}),
                json!({"phase": "podPhase"}),
            ),
            now(),
        );
        assert_eq!(
            bare.cells[5..],
            [
                json!("<none>"),
                json!("<none>"),
                json!("<none>"),
                json!("<none>")
            ]
        );
    }
}
