"""kubectl wait and kubectl get -w against live changes made by another process."""

import json
import time

import pytest

from conftest import (StreamReader, configmap, deployment, parse_json_stream, pod, stop_process,
                      wait_until)

# how long a started `kubectl wait` is given to reach its watch before we check
# that it has NOT returned yet (the condition is not met at that point)
SETTLE = 1.5


def assert_still_waiting(proc, what):
    deadline = time.monotonic() + SETTLE
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            out, err = proc.communicate()
            pytest.fail(f"kubectl wait for {what} returned early (rc={proc.returncode}) "
                        f"before the condition was met\nstdout:{out}\nstderr:{err}")
        time.sleep(0.1)


def finish(proc, timeout=30):
    try:
        out, err = proc.communicate(timeout=timeout)
    except Exception:
        stop_process(proc)
        out, err = proc.communicate()
        pytest.fail(f"kubectl did not finish within {timeout}s\nstdout:{out}\nstderr:{err}")
    return proc.returncode, out, err


def test_wait_for_condition_ready(kubectl, ns):
    kubectl.apply_yaml("create", pod("waiter"), "-n", ns)
    proc = kubectl.popen("wait", "pod/waiter", "-n", ns, "--for=condition=Ready", "--timeout=30s")
    try:
        assert_still_waiting(proc, "condition=Ready")
        kubectl("patch", "pod", "waiter", "-n", ns, "--subresource=status", "--type=merge",
                "-p", json.dumps({"status": {"conditions": [
                    {"type": "Ready", "status": "True",
                     "lastTransitionTime": "2024-01-01T00:00:00Z"}]}}))
        rc, out, err = finish(proc)
    finally:
        stop_process(proc)
    assert rc == 0, f"stdout:{out}\nstderr:{err}"
    assert out.strip() == "pod/waiter condition met", out


def test_wait_times_out_when_condition_not_met(kubectl, ns):
    kubectl.apply_yaml("create", pod("never"), "-n", ns)
    cp = kubectl("wait", "pod/never", "-n", ns, "--for=condition=Ready", "--timeout=2s",
                 check=False, timeout=30)
    assert cp.returncode != 0
    assert "timed out" in cp.stderr, cp.stderr


def test_wait_for_jsonpath(kubectl, ns):
    kubectl.apply_yaml("create", deployment("jp", replicas=2), "-n", ns)
    proc = kubectl.popen("wait", "deployment/jp", "-n", ns,
                         "--for=jsonpath={.status.readyReplicas}=2", "--timeout=30s")
    try:
        assert_still_waiting(proc, "readyReplicas=2")
        kubectl("patch", "deployment", "jp", "-n", ns, "--subresource=status", "--type=merge",
                "-p", '{"status":{"replicas":2,"readyReplicas":2}}')
        rc, out, err = finish(proc)
    finally:
        stop_process(proc)
    assert rc == 0, f"stdout:{out}\nstderr:{err}"
    assert out.strip() == "deployment.apps/jp condition met", out


def test_wait_for_delete(kubectl, ns):
    kubectl.apply_yaml("create", configmap("doomed", {"a": "1"},
                                           finalizers=["e2e.coxswain.dev/hold"]), "-n", ns)
    proc = kubectl.popen("wait", "configmap/doomed", "-n", ns, "--for=delete", "--timeout=30s")
    try:
        assert_still_waiting(proc, "delete")
        kubectl("delete", "configmap", "doomed", "-n", ns, "--wait=false")
        # still there: held by the finalizer
        assert_still_waiting(proc, "delete (finalizer pending)")
        kubectl("patch", "configmap", "doomed", "-n", ns, "--type=merge",
                "-p", '{"metadata":{"finalizers":null}}')
        rc, out, err = finish(proc)
    finally:
        stop_process(proc)
    assert rc == 0, f"stdout:{out}\nstderr:{err}"
    assert out.strip() == "configmap/doomed condition met", out


def test_get_watch_sees_added_modified_deleted(kubectl, ns):
    # a sentinel makes the initial list non-empty: once it is printed the watch
    # is anchored at the list's resourceVersion and cannot miss later events
    kubectl.apply_yaml("create", configmap("a-sentinel", {"s": "1"}), "-n", ns)
    proc = kubectl.popen("get", "configmaps", "-n", ns, "-w", "--output-watch-events", "-o", "json")
    out = StreamReader(proc.stdout)
    err = StreamReader(proc.stderr)

    def events():
        return [(e.get("type"), e.get("object", {}).get("metadata", {}).get("name"), e)
                for e in parse_json_stream(out.text())]

    try:
        wait_until(lambda: any(n == "a-sentinel" for _, n, _ in events()), timeout=20,
                   message=f"initial ADDED of the sentinel (stderr: {err.text()!r})")
        assert events()[0][0] == "ADDED"

        kubectl.apply_yaml("create", configmap("watched", {"v": "1"}), "-n", ns)
        kubectl("patch", "configmap", "watched", "-n", ns, "--type=merge", "-p", '{"data":{"v":"2"}}')
        kubectl("delete", "configmap", "watched", "-n", ns)

        wait_until(lambda: any(t == "DELETED" and n == "watched" for t, n, _ in events()),
                   timeout=20, message=f"DELETED event for watched (stderr: {err.text()!r})")
    finally:
        stop_process(proc)

    mine = [(t, e) for t, n, e in events() if n == "watched"]
    assert [t for t, _ in mine] == ["ADDED", "MODIFIED", "DELETED"], [t for t, _ in mine]
    assert mine[0][1]["object"]["data"] == {"v": "1"}
    assert mine[1][1]["object"]["data"] == {"v": "2"}
    rvs = [int(e["object"]["metadata"]["resourceVersion"]) for _, e in mine]
    assert rvs == sorted(rvs) and len(set(rvs)) == 3, rvs
    assert all(e["object"]["kind"] == "ConfigMap" for _, e in mine)


def test_get_watch_only_name_filtered(kubectl, ns):
    """`kubectl get cm NAME -w` watches with a metadata.name field selector."""
    kubectl.apply_yaml("create", [configmap("one", {"v": "1"}), configmap("two", {"v": "1"})],
                       "-n", ns)
    proc = kubectl.popen("get", "configmap", "one", "-n", ns, "-w", "--output-watch-events",
                         "-o", "json")
    out = StreamReader(proc.stdout)
    names = lambda: [(e["type"], e["object"]["metadata"]["name"], e["object"].get("data"))
                     for e in parse_json_stream(out.text())]
    try:
        wait_until(lambda: names(), timeout=20, message="initial event for configmap/one")
        kubectl("patch", "configmap", "two", "-n", ns, "--type=merge", "-p", '{"data":{"v":"2"}}')
        kubectl("patch", "configmap", "one", "-n", ns, "--type=merge", "-p", '{"data":{"v":"2"}}')
        wait_until(lambda: len(names()) >= 2, timeout=20, message="MODIFIED event for one")
    finally:
        stop_process(proc)
    got = names()
    assert got[:2] == [("ADDED", "one", {"v": "1"}), ("MODIFIED", "one", {"v": "2"})], got
    assert all(n == "one" for _, n, _ in got), got
