//! The storage layer under injected faults (`coxswain_apiserver::server::failpoints`): a
//! commit whose write or fsync fails is rolled back in memory and in the file, answered
//! with upstream's 500 Status, and never reaches watchers; a full disk refuses writes
//! with a clear message while reads and watches go on, and writes work again once space
//! is back; a crash between a durable commit and its acknowledgement loses nothing
//! acknowledged. Every check of "memory equals disk" reads the objects, restarts the
//! server on the same data directory and reads them again.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use coxswain_apiserver::server::failpoints::Failpoints;
use serde_json::{json, Value};

use crate::common::{json_request, request, Durable};

const CM: &str = "/api/v1/namespaces/default/configmaps";

struct Node {
    server: Durable,
    faults: Arc<Failpoints>,
}

impl Node {
    /// Start on `dir` with fresh failpoints.
    fn start(dir: &Path) -> Node {
        let faults = Failpoints::new();
        let f = faults.clone();
        let server = Durable::start(dir, move |c| c.failpoints = Some(f.clone()));
        Node { server, faults }
    }

    /// Start again on `dir`, with fresh failpoints.
    fn restart(&mut self, dir: &Path) {
        self.faults = Failpoints::new();
        let f = self.faults.clone();
        self.server
            .boot(dir, move |c| c.failpoints = Some(f.clone()));
    }

    fn addr(&self) -> std::net::SocketAddr {
        self.server.addr()
    }

    fn json(&self, method: &str, path: &str, body: &Value) -> (u16, Value) {
        self.server.json(method, path, body)
    }

    /// name → (resourceVersion, data) of the default namespace's ConfigMaps.
    fn configmaps(&self) -> BTreeMap<String, (String, Value)> {
        let (code, list) = self.json("GET", CM, &Value::Null);
        assert_eq!(code, 200, "{list}");
        list["items"]
            .as_array()
            .expect("items")
            .iter()
            .map(|o| {
                (
                    o["metadata"]["name"].as_str().unwrap_or("").to_string(),
                    (
                        o["metadata"]["resourceVersion"]
                            .as_str()
                            .unwrap_or("")
                            .to_string(),
                        o["data"].clone(),
                    ),
                )
            })
            .collect()
    }
}

fn cm(name: &str, value: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name}, "data": {"v": value}})
}

/// The 500 upstream answers a storage failure with (`storage.NewInternalError`).
fn assert_storage_error(code: u16, status: &Value, file: &Path) {
    assert_eq!(code, 500, "{status}");
    assert_eq!(status["kind"], "Status", "{status}");
    assert_eq!(status["reason"], "InternalError", "{status}");
    assert_eq!(status["code"], 500, "{status}");
    let message = status["message"].as_str().unwrap_or("");
    assert!(
        message.starts_with("Internal error occurred: "),
        "{message}"
    );
    assert!(
        message.contains(&file.display().to_string()),
        "the message names the database file: {message}"
    );
}

fn db_file(dir: &Path) -> std::path::PathBuf {
    dir.join("coxswain.redb")
}

#[test]
fn a_failed_commit_is_rolled_back_in_memory_and_on_disk() {
    let dir = tempfile::tempdir().expect("dir");
    let mut node = Node::start(dir.path());
    let (code, a) = node.json("POST", CM, &cm("a", "1"));
    assert_eq!(code, 201, "{a}");
    let before = node.configmaps();

    // the fsync fails: the batch reached the file, yet the write is refused, so it is
    // taken out of the file again
    node.faults.fail_sync(1);
    let (code, status) = node.json("PATCH", &format!("{CM}/a"), &json!({"data": {"v": "2"}}));
    assert_storage_error(code, &status, &db_file(dir.path()));
    assert!(node.faults.injected() > 0);
    // the writes of a commit fail
    node.faults.fail_commit(1);
    let (code, status) = node.json("POST", CM, &cm("b", "1"));
    assert_storage_error(code, &status, &db_file(dir.path()));
    let (code, _) = node.json("DELETE", &format!("{CM}/a"), &Value::Null);
    assert_eq!(code, 200, "later writes work again");
    let (code, _) = node.json("POST", CM, &cm("a", "3"));
    assert_eq!(code, 201);
    node.faults.fail_commit(1);
    let (code, status) = node.json("DELETE", &format!("{CM}/a"), &Value::Null);
    assert_storage_error(code, &status, &db_file(dir.path()));

    let after_failures = node.configmaps();
    assert_eq!(after_failures["a"].1, json!({"v": "3"}));
    assert!(
        !after_failures.contains_key("b"),
        "the failed create is undone"
    );
    assert_ne!(before["a"].0, after_failures["a"].0);
    node.restart(dir.path());
    assert_eq!(
        node.configmaps(),
        after_failures,
        "after a restart the file holds exactly what memory held"
    );

    // the same with a restart right after the failed fsync
    node.faults.fail_sync(1);
    let (code, status) = node.json("PATCH", &format!("{CM}/a"), &json!({"data": {"v": "4"}}));
    assert_storage_error(code, &status, &db_file(dir.path()));
    let (code, got) = node.json("GET", &format!("{CM}/a"), &Value::Null);
    assert_eq!((code, &got["data"]), (200, &json!({"v": "3"})));
    node.restart(dir.path());
    assert_eq!(node.configmaps(), after_failures);
    let (code, _) = node.json("PATCH", &format!("{CM}/a"), &json!({"data": {"v": "5"}}));
    assert_eq!(code, 200);
}

#[test]
fn concurrent_writes_around_a_failed_commit_agree_with_the_disk() {
    let dir = tempfile::tempdir().expect("dir");
    let mut node = Node::start(dir.path());
    for round in 0..5 {
        let addr = node.addr();
        // writes that build on each other (a create, then updates of the same object)
        // race with the failing commit: those acknowledged are there, those refused are not
        node.faults.fail_commit(2);
        let results: Vec<(String, u16, u16)> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8)
                .map(|t| {
                    s.spawn(move || {
                        let name = format!("r{round}-t{t}");
                        let (created, _) = json_request(addr, "POST", CM, &cm(&name, "0"));
                        let (patched, _) = json_request(
                            addr,
                            "PATCH",
                            &format!("{CM}/{name}"),
                            &json!({"data": {"v": "1"}}),
                        );
                        (name, created, patched)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("thread"))
                .collect()
        });
        let seen = node.configmaps();
        for (name, created, patched) in &results {
            match (created, patched) {
                (201, 200) => assert_eq!(seen[name].1, json!({"v": "1"}), "{name}"),
                (201, _) => assert_eq!(seen[name].1, json!({"v": "0"}), "{name}"),
                (500, 404) | (500, 500) => {
                    assert!(!seen.contains_key(name), "{name} {created} {patched}")
                }
                other => panic!("{name}: unexpected answers {other:?}"),
            }
        }
        assert!(
            results.iter().any(|(_, c, p)| *c == 500 || *p == 500),
            "a write failed in round {round}: {results:?}"
        );
        node.restart(dir.path());
        assert_eq!(node.configmaps(), seen, "round {round}: memory equals disk");
    }
}

#[test]
fn watchers_never_see_a_failed_write() {
    let dir = tempfile::tempdir().expect("dir");
    let node = Node::start(dir.path());
    let (code, first) = node.json("POST", CM, &cm("first", "1"));
    assert_eq!(code, 201);
    let from = first["metadata"]["resourceVersion"]
        .as_str()
        .expect("rv")
        .to_string();
    node.faults.fail_commit(1);
    let (code, _) = node.json("POST", CM, &cm("failed", "1"));
    assert_eq!(code, 500);
    let (code, _) = node.json("POST", CM, &cm("last", "1"));
    assert_eq!(code, 201);
    // a watch from before the failure replays the history: the failed write is not in it
    let (code, head, body) = request(
        node.addr(),
        "GET",
        &format!("{CM}?watch=1&resourceVersion={from}&timeoutSeconds=1"),
        "application/json",
        "application/json",
        b"",
    );
    assert_eq!(code, 200, "{head}");
    let names: Vec<String> = String::from_utf8_lossy(&body)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|e| {
            e["object"]["metadata"]["name"]
                .as_str()
                .unwrap_or("")
                .to_string()
        })
        .collect();
    assert_eq!(names, ["last"]);
}

#[test]
fn a_full_disk_refuses_writes_clearly_and_recovers() {
    let dir = tempfile::tempdir().expect("dir");
    let mut node = Node::start(dir.path());
    let (code, _) = node.json("POST", CM, &cm("kept", "1"));
    assert_eq!(code, 201);
    node.faults.set_no_space(true);
    for i in 0..3 {
        let (code, status) = node.json("POST", CM, &cm(&format!("full-{i}"), "1"));
        assert_storage_error(code, &status, &db_file(dir.path()));
        let message = status["message"].as_str().unwrap_or("");
        assert!(message.contains("database space exceeded"), "{message}");
        assert!(message.contains("no space left on device"), "{message}");
        assert!(
            message.contains(&format!(
                "free space on the file system of the data directory {}",
                dir.path().display()
            )),
            "{message}"
        );
    }
    // reads and watches keep working
    let seen = node.configmaps();
    assert!(seen.contains_key("kept") && !seen.contains_key("full-0"));
    let (code, _, _) = request(
        node.addr(),
        "GET",
        &format!("{CM}?watch=1&timeoutSeconds=1"),
        "application/json",
        "application/json",
        b"",
    );
    assert_eq!(code, 200);
    node.faults.set_no_space(false);
    // the database is reopened on the next write (at most every 200 ms)
    let mut code = 0;
    for _ in 0..20 {
        (code, _) = node.json("POST", CM, &cm("after", "1"));
        if code == 201 {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(code, 201, "writes work again once space is back");
    let seen = node.configmaps();
    node.restart(dir.path());
    assert_eq!(node.configmaps(), seen);
    assert!(seen.contains_key("after"));
}

/// Run in a child process by [`a_crash_between_commit_and_acknowledgement_loses_nothing`]:
/// acknowledged writes, then one whose durable commit aborts the process before its
/// answer.
#[test]
fn crash_child() {
    let Ok(dir) = std::env::var("COXSWAIN_CRASH_CHILD_DIR") else {
        return;
    };
    let node = Node::start(Path::new(&dir));
    for i in 0..10 {
        let (code, _) = node.json("POST", CM, &cm(&format!("acked-{i}"), "1"));
        assert_eq!(code, 201);
    }
    node.faults.crash_after_commit(1);
    let _ = node.json("POST", CM, &cm("unacknowledged", "1"));
    panic!("the process should have aborted");
}

#[test]
fn a_crash_between_commit_and_acknowledgement_loses_nothing() {
    let dir = tempfile::tempdir().expect("dir");
    let out = std::process::Command::new(std::env::current_exe().expect("test binary"))
        .args(["storage_faults::crash_child", "--exact", "--nocapture"])
        .env("COXSWAIN_CRASH_CHILD_DIR", dir.path())
        .output()
        .expect("child runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "the child aborted: {stderr}");
    assert!(
        stderr.contains("failpoint: aborting after a durable commit"),
        "{stderr}"
    );
    let node = Node::start(dir.path());
    let seen = node.configmaps();
    for i in 0..10 {
        assert!(
            seen.contains_key(&format!("acked-{i}")),
            "acked-{i}: {seen:?}"
        );
    }
    // durable, though never acknowledged: like etcd, the outcome of an unanswered
    // write is unknown to its client, and here it was stored
    assert!(seen.contains_key("unacknowledged"));
}
