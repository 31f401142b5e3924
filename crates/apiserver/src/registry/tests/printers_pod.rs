//! Printers of the kinds once in `table/pod.rs`, cell by cell.

use super::printer;
use crate::registry::table::prelude::*;

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
    let row = (printer("", "Pod").print)(&p, now());
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
    let row = (printer("", "Pod").print)(&p, now());
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
    let bare = (printer("", "Pod").print)(
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
