//! `coxswain apiserver` on a damaged, truncated, empty, foreign or busy database file:
//! a clear error naming the file and what to do, a non-zero exit, never a panic; and
//! `coxswain apiserver --check` telling a sound database from a damaged one.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use coxswain_apiserver::server::persist;

fn coxswain() -> Command {
    Command::new(env!("CARGO_BIN_EXE_coxswain"))
}

/// A database of 3,000 ConfigMaps (about 2 MB) in a new data directory.
fn seeded() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("dir");
    let file = dir.path().join(persist::DB_FILE);
    let objects = (1..=3000u64).map(|i| {
        let json = serde_json::json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": format!("cm-{i:05}"), "namespace": "default",
                         "resourceVersion": i.to_string()},
            "data": {"payload": format!("payload-{i:05}-{}", "x".repeat(600))},
        });
        (
            "/configmaps".to_string(),
            format!("default/cm-{i:05}"),
            serde_json::to_vec(&json).expect("json"),
        )
    });
    persist::create(&file, 3000, objects).expect("create");
    (dir, file)
}

/// Start `coxswain apiserver` on `dir`: the output once it exits, or `None` (after
/// killing it) when it is still serving after it printed that it listens or after 30 s.
fn serve(dir: &Path, extra: &[&str]) -> Option<Output> {
    let mut child = coxswain()
        .args([
            "apiserver",
            "--bind",
            "127.0.0.1:0",
            "--insecure-no-tls",
            "--insecure-no-auth",
            "--data-dir",
        ])
        .arg(dir)
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn coxswain");
    let start = Instant::now();
    let mut stdout = child.stdout.take().expect("stdout");
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            match stdout.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => out.extend_from_slice(&buf[..n]),
            }
            if String::from_utf8_lossy(&out).contains("kubeconfig written") {
                return (out, true);
            }
        }
        (out, false)
    });
    loop {
        if let Some(_status) = child.try_wait().expect("wait") {
            let output = child.wait_with_output().expect("output");
            let (out, _) = reader.join().expect("reader");
            return Some(Output {
                stdout: out,
                ..output
            });
        }
        if reader.is_finished() || start.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The server refuses the file: non-zero exit, the file named, no panic, the way out.
fn assert_refused(dir: &Path, file: &Path, what: &str, expect: &str) -> String {
    let out = serve(dir, &[]).unwrap_or_else(|| panic!("{what}: the server started"));
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(
        !out.status.success(),
        "{what}: exit status {:?}: {stderr}",
        out.status
    );
    assert_ne!(
        out.status.code(),
        Some(101),
        "{what}: exit code of a panic: {stderr}"
    );
    assert!(!stderr.contains("panicked"), "{what}: {stderr}");
    assert!(
        stderr.contains(&file.display().to_string()),
        "{what}: the file is named: {stderr}"
    );
    assert!(stderr.contains(expect), "{what}: {expect:?} in {stderr}");
    stderr
}

fn flip_middle(file: &Path) {
    let mut bytes = std::fs::read(file).expect("read");
    // the middle object's JSON: its bytes are certainly in use
    let marker = b"payload-01500";
    let at = bytes
        .windows(marker.len())
        .position(|w| w == marker)
        .expect("marker in the file");
    for b in &mut bytes[at - 40..at + 300] {
        *b ^= 0x5a;
    }
    std::fs::write(file, bytes).expect("write");
}

#[test]
fn a_sound_database_starts_and_checks_clean() {
    let (dir, _file) = seeded();
    assert!(
        serve(dir.path(), &[]).is_none(),
        "the server starts and serves"
    );
    let out = coxswain()
        .args(["apiserver", "--check", "--data-dir"])
        .arg(dir.path())
        .output()
        .expect("check");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("ok: 3"), "{stdout}");
}

#[test]
fn bytes_flipped_in_the_middle_are_refused() {
    let (dir, file) = seeded();
    flip_middle(&file);
    assert_refused(
        dir.path(),
        &file,
        "flipped bytes",
        "coxswain snapshot restore",
    );
    let out = coxswain()
        .args(["apiserver", "--check", "--data-dir"])
        .arg(dir.path())
        .output()
        .expect("check");
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(1), "{all}");
    assert!(!all.contains("panicked"), "{all}");
}

#[test]
fn a_truncated_file_is_refused() {
    let (dir, file) = seeded();
    let len = std::fs::metadata(&file).expect("meta").len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&file)
        .expect("open")
        .set_len(len / 2)
        .expect("truncate");
    assert_refused(dir.path(), &file, "truncated", "coxswain snapshot restore");
}

#[test]
fn a_file_truncated_inside_the_header_is_refused() {
    let (dir, file) = seeded();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&file)
        .expect("open")
        .set_len(100)
        .expect("truncate");
    assert_refused(
        dir.path(),
        &file,
        "truncated header",
        "coxswain snapshot restore",
    );
}

#[test]
fn an_empty_file_is_refused_unless_asked_to_start_afresh() {
    let dir = tempfile::tempdir().expect("dir");
    let file = dir.path().join(persist::DB_FILE);
    std::fs::write(&file, b"").expect("empty");
    assert_refused(dir.path(), &file, "empty", "--allow-empty-database");
    assert_eq!(
        std::fs::metadata(&file).expect("meta").len(),
        0,
        "left as it was"
    );
    assert!(
        serve(dir.path(), &["--allow-empty-database"]).is_none(),
        "starts afresh with the flag"
    );
}

#[test]
fn files_of_other_formats_are_refused_for_what_they_are() {
    let cases: [(&str, Vec<u8>, &str); 4] = [
        (
            "text",
            b"just some notes\nnot a database\n".to_vec(),
            "text starting with",
        ),
        (
            "sqlite",
            [b"SQLite format 3\0".as_slice(), &[0u8; 4080]].concat(),
            "a SQLite database",
        ),
        (
            "zip",
            [b"PK\x03\x04".as_slice(), &[7u8; 200]].concat(),
            "a zip archive",
        ),
        (
            "binary",
            vec![0xde, 0xad, 0xbe, 0xef, 0, 1, 2, 3, 4, 5],
            "bytes de ad be ef",
        ),
    ];
    for (what, content, expect) in cases {
        let dir = tempfile::tempdir().expect("dir");
        let file = dir.path().join(persist::DB_FILE);
        std::fs::write(&file, &content).expect("write");
        let stderr = assert_refused(dir.path(), &file, what, expect);
        assert!(stderr.contains("not a redb database"), "{what}: {stderr}");
        assert_eq!(
            std::fs::read(&file).expect("read"),
            content,
            "{what}: left as it was"
        );
    }
}

#[test]
fn a_busy_data_directory_is_refused() {
    let (dir, file) = seeded();
    let mut first = coxswain()
        .args([
            "apiserver",
            "--bind",
            "127.0.0.1:0",
            "--insecure-no-tls",
            "--insecure-no-auth",
            "--data-dir",
        ])
        .arg(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let mut stdout = first.stdout.take().expect("stdout");
    let mut seen = Vec::new();
    let mut buf = [0u8; 1024];
    while !String::from_utf8_lossy(&seen).contains("listening") {
        let n = stdout.read(&mut buf).expect("read");
        assert!(n > 0, "the first server exited");
        seen.extend_from_slice(&buf[..n]);
    }
    let stderr = assert_refused(
        dir.path(),
        &file,
        "busy",
        "Database already open. Cannot acquire lock.",
    );
    let _ = first.kill();
    let _ = first.wait();
    assert!(stderr.contains("Another coxswain process"), "{stderr}");
}
