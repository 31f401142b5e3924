"""Workloads on `coxswain up`: the Deployment and ReplicaSet controllers judged by
`kubectl rollout`, `kubectl set image`, `kubectl scale` and the Python client.

Pods are scheduled and made Running and Ready by the node simulator of `coxswain up`."""

from __future__ import annotations

import json
import threading
import time
import uuid
from pathlib import Path

import pytest

from conftest import Kubectl, StreamReader, cluster_namespace, parse_json_stream, stop_process, wait_until


@pytest.fixture
def kc(cluster) -> Kubectl:
    return Kubectl(cluster)


@pytest.fixture
def wns(kc) -> str:
    yield from cluster_namespace(kc, "wl")


def rs_of(kc, ns, deploy) -> list[dict]:
    items = kc.json("get", "rs", "-n", ns, "-o", "json")["items"]
    return [
        r for r in items
        if any(o.get("kind") == "Deployment" and o.get("name") == deploy
               for o in r["metadata"].get("ownerReferences", []))
    ]


def live_pods(kc, ns, app) -> list[dict]:
    items = kc.json("get", "pods", "-n", ns, "-l", f"app={app}", "-o", "json")["items"]
    return [p for p in items if not p["metadata"].get("deletionTimestamp")]


def test_create_deployment_and_rollout_status(kc, wns):
    kc("create", "deployment", "web", "--image=nginx:1.27", "--replicas=3", "-n", wns)
    out = kc("rollout", "status", "deployment/web", "-n", wns, "--timeout=90s").stdout
    assert 'deployment "web" successfully rolled out' in out
    d = kc.json("get", "deployment", "web", "-n", wns, "-o", "json")
    st = d["status"]
    assert st["replicas"] == 3 and st["updatedReplicas"] == 3
    assert st["readyReplicas"] == 3 and st["availableReplicas"] == 3
    assert st["observedGeneration"] == d["metadata"]["generation"]
    conds = {c["type"]: c for c in st["conditions"]}
    assert conds["Available"]["status"] == "True"
    assert conds["Progressing"]["reason"] == "NewReplicaSetAvailable"
    rss = rs_of(kc, wns, "web")
    assert len(rss) == 1
    rs = rss[0]
    h = rs["metadata"]["labels"]["pod-template-hash"]
    assert rs["metadata"]["name"] == f"web-{h}"
    assert rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
    assert len(live_pods(kc, wns, "web")) == 3
    # kubectl get shows the ReplicaSet ready
    assert rs["status"]["readyReplicas"] == 3
    # the writers are named as in a real cluster: kubectl's create, the controller
    # manager's spec and status writes, the kubelet's pod status
    def managers(kind, name):
        obj = kc.json("get", kind, name, "-n", wns, "-o", "json", "--show-managed-fields")
        return {(m["manager"], m["operation"], m.get("subresource", ""))
                for m in obj["metadata"]["managedFields"]}
    assert managers("deployment", "web") == {
        ("kubectl-create", "Update", ""),
        ("kube-controller-manager", "Update", "status"),
    }
    assert ("kube-controller-manager", "Update", "") in managers("rs", rs["metadata"]["name"])
    pod = live_pods(kc, wns, "web")[0]["metadata"]["name"]
    assert managers("pod", pod) == {
        ("kube-controller-manager", "Update", ""),
        ("kubelet", "Update", "status"),
    }


def test_set_image_rolls_out_within_surge_and_unavailability(kc, wns, cluster):
    kc("create", "deployment", "roll", "--image=nginx:1.27", "--replicas=4", "-n", wns)
    kc("rollout", "status", "deployment/roll", "-n", wns, "--timeout=90s")
    # defaults: maxSurge 25% of 4 -> 1 (up), maxUnavailable 25% of 4 -> 1 (down)
    violations = []
    stop = threading.Event()

    def sample():
        from kubernetes import client

        core = client.CoreV1Api(cluster.api_client())
        while not stop.is_set():
            pods = core.list_namespaced_pod(wns, label_selector="app=roll").items
            live = [p for p in pods if p.metadata.deletion_timestamp is None]
            ready = [p for p in live if any(c.type == "Ready" and c.status == "True"
                                            for c in (p.status.conditions or []))]
            if len(live) > 4 + 1:
                violations.append(f"{len(live)} pods > replicas + maxSurge")
            if len(ready) < 4 - 1:
                violations.append(f"{len(ready)} ready < replicas - maxUnavailable")
            time.sleep(0.02)

    t = threading.Thread(target=sample, daemon=True)
    t.start()
    kc("set", "image", "deployment/roll", "nginx=nginx:1.28", "-n", wns)
    out = kc("rollout", "status", "deployment/roll", "-n", wns, "--timeout=90s").stdout
    stop.set()
    t.join()
    assert "successfully rolled out" in out
    assert not violations, violations[:5]
    rss = sorted(rs_of(kc, wns, "roll"),
                 key=lambda r: int(r["metadata"]["annotations"]["deployment.kubernetes.io/revision"]))
    assert len(rss) == 2
    old, new = rss
    assert old["spec"]["replicas"] == 0 and new["spec"]["replicas"] == 4
    assert new["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.28"
    pods = live_pods(kc, wns, "roll")
    wait_until(lambda: len(live_pods(kc, wns, "roll")) == 4, timeout=30)
    assert all(p["spec"]["containers"][0]["image"] == "nginx:1.28"
               for p in live_pods(kc, wns, "roll"))


def test_rollout_history_and_undo(kc, wns):
    kc("create", "deployment", "hist", "--image=nginx:1.27", "--replicas=2", "-n", wns)
    kc("rollout", "status", "deployment/hist", "-n", wns, "--timeout=90s")
    kc("set", "image", "deployment/hist", "nginx=nginx:1.28", "-n", wns)
    kc("rollout", "status", "deployment/hist", "-n", wns, "--timeout=90s")
    hist = kc("rollout", "history", "deployment/hist", "-n", wns).stdout
    revisions = [l.split()[0] for l in hist.splitlines()[2:] if l.strip()]
    assert revisions == ["1", "2"], hist
    rev1 = kc("rollout", "history", "deployment/hist", "-n", wns, "--revision=1").stdout
    assert "nginx:1.27" in rev1
    kc("rollout", "undo", "deployment/hist", "-n", wns)
    kc("rollout", "status", "deployment/hist", "-n", wns, "--timeout=90s")
    d = kc.json("get", "deployment", "hist", "-n", wns, "-o", "json")
    assert d["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.27"
    assert d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "3"
    rss = rs_of(kc, wns, "hist")
    assert len(rss) == 2, "the undo reused the first ReplicaSet"
    by_image = {r["spec"]["template"]["spec"]["containers"][0]["image"]: r for r in rss}
    assert by_image["nginx:1.27"]["spec"]["replicas"] == 2
    assert by_image["nginx:1.27"]["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "3"
    assert by_image["nginx:1.28"]["spec"]["replicas"] == 0
    hist = kc("rollout", "history", "deployment/hist", "-n", wns).stdout
    assert [l.split()[0] for l in hist.splitlines()[2:] if l.strip()] == ["2", "3"]


def test_pause_and_resume(kc, wns):
    kc("create", "deployment", "pz", "--image=nginx:1.27", "--replicas=2", "-n", wns)
    kc("rollout", "status", "deployment/pz", "-n", wns, "--timeout=90s")
    kc("rollout", "pause", "deployment/pz", "-n", wns)
    kc("set", "image", "deployment/pz", "nginx=nginx:1.28", "-n", wns)
    time.sleep(2)
    assert len(rs_of(kc, wns, "pz")) == 1, "no rollout while paused"
    d = kc.json("get", "deployment", "pz", "-n", wns, "-o", "json")
    progressing = {c["type"]: c for c in d["status"]["conditions"]}["Progressing"]
    assert progressing["reason"] == "DeploymentPaused"
    kc("rollout", "resume", "deployment/pz", "-n", wns)
    kc("rollout", "status", "deployment/pz", "-n", wns, "--timeout=90s")
    assert len(rs_of(kc, wns, "pz")) == 2


def test_scale_through_kubectl(kc, wns):
    kc("create", "deployment", "sc", "--image=nginx:1.27", "--replicas=1", "-n", wns)
    kc("rollout", "status", "deployment/sc", "-n", wns, "--timeout=90s")
    kc("scale", "deployment/sc", "--replicas=5", "-n", wns)
    kc("rollout", "status", "deployment/sc", "-n", wns, "--timeout=90s")
    wait_until(lambda: len(live_pods(kc, wns, "sc")) == 5, timeout=30)
    kc("scale", "deployment/sc", "--replicas=2", "-n", wns)
    wait_until(lambda: len(live_pods(kc, wns, "sc")) == 2, timeout=30)
    rs = rs_of(kc, wns, "sc")[0]
    wait_until(lambda: rs_of(kc, wns, "sc")[0]["status"].get("replicas") == 2, timeout=30)


def test_wait_for_available_condition(kc, wns):
    kc("create", "deployment", "wt", "--image=nginx:1.27", "--replicas=2", "-n", wns)
    out = kc("wait", "--for=condition=Available", "deployment/wt", "-n", wns, "--timeout=90s").stdout
    assert "condition met" in out


def test_controller_manager_health_and_controllers_listing(cluster):
    import re
    import requests

    # the whole log: on the shared cluster the start-up lines are long out of its tail
    text = Path(cluster.log_path).read_text(errors="replace")
    m = re.search(r"controller manager: health and metrics on (https://[0-9.:]+)", text)
    assert m, cluster.log_tail()
    # a log written to a file is plain text: no terminal colour codes
    assert "\x1b[" not in text and " INFO " in text, text[:2000]
    base = m.group(1)
    # /healthz is served without credentials; the rest to the admin token (system:masters)
    body = requests.get(f"{base}/healthz?verbose", verify=False, timeout=5).text
    assert "[+]deployment-controller ok" in body and "[+]replicaset-controller ok" in body
    admin = {"Authorization": f"Bearer {cluster.token}"}
    listing = requests.get(f"{base}/debug/controllers", headers=admin, verify=False,
                           timeout=5).text
    assert "deployment-controller enabled" in listing
    metrics = requests.get(f"{base}/metrics", headers=admin, verify=False, timeout=5).text
    assert 'controller_runtime_reconcile_total{controller="deployment"' in metrics


def test_deleting_a_deployment_collects_its_replicasets_and_pods(kc, wns):
    kc("create", "deployment", "gc", "--image=nginx:1.27", "--replicas=2", "-n", wns)
    kc("rollout", "status", "deployment/gc", "-n", wns, "--timeout=90s")
    assert len(rs_of(kc, wns, "gc")) == 1
    kc("delete", "deployment", "gc", "-n", wns)
    wait_until(lambda: not kc.json("get", "rs", "-n", wns, "-l", "app=gc", "-o", "json")["items"],
               timeout=60)
    wait_until(lambda: not live_pods(kc, wns, "gc"), timeout=60)


def test_orphan_cascade_keeps_the_replicaset_without_owner(kc, wns):
    kc("create", "deployment", "orph", "--image=nginx:1.27", "--replicas=1", "-n", wns)
    kc("rollout", "status", "deployment/orph", "-n", wns, "--timeout=90s")
    kc("delete", "deployment", "orph", "-n", wns, "--cascade=orphan")
    def orphaned():
        items = kc.json("get", "rs", "-n", wns, "-l", "app=orph", "-o", "json")["items"]
        return len(items) == 1 and not items[0]["metadata"].get("ownerReferences")
    wait_until(orphaned, timeout=60)


def test_namespace_deletion_removes_its_content_and_the_namespace(kc):
    name = f"gone-{uuid.uuid4().hex[:8]}"
    kc("create", "namespace", name)
    kc("create", "deployment", "web", "--image=nginx:1.27", "--replicas=1", "-n", name)
    kc("create", "configmap", "cm", "--from-literal=a=b", "-n", name)
    # the housekeeping controllers fill a new namespace
    wait_until(lambda: kc("get", "serviceaccount", "default", "-n", name, check=False).returncode == 0,
               timeout=30)
    wait_until(lambda: kc("get", "configmap", "kube-root-ca.crt", "-n", name, check=False).returncode == 0,
               timeout=30)
    kc("delete", "namespace", name, "--timeout=120s")
    r = kc("get", "namespace", name, check=False)
    assert r.returncode != 0 and "NotFound" in r.stderr


def test_foreground_cascade_waits_for_the_dependents(kc, wns):
    kc("create", "deployment", "fg", "--image=nginx:1.27", "--replicas=2", "-n", wns)
    kc("rollout", "status", "deployment/fg", "-n", wns, "--timeout=90s")
    # kubectl waits for the Deployment to disappear, which happens only after its
    # ReplicaSet (and that one's pods) are gone
    kc("delete", "deployment", "fg", "-n", wns, "--cascade=foreground", "--timeout=120s")
    assert kc("get", "deployment", "fg", "-n", wns, check=False).returncode != 0
    assert not kc.json("get", "rs", "-n", wns, "-l", "app=fg", "-o", "json")["items"]


def test_nodes_are_ready_and_pods_get_nodes_and_ips(kc, wns):
    nodes = kc.json("get", "nodes", "-o", "json")["items"]
    assert len(nodes) == 3
    for n in nodes:
        ready = {c["type"]: c["status"] for c in n["status"]["conditions"]}["Ready"]
        assert ready == "True"
    out = kc("get", "nodes").stdout
    assert out.splitlines()[0].split()[:2] == ["NAME", "STATUS"] and "Ready" in out
    kc("create", "deployment", "wide", "--image=nginx:1.27", "--replicas=3", "-n", wns)
    kc("rollout", "status", "deployment/wide", "-n", wns, "--timeout=90s")
    pods = live_pods(kc, wns, "wide")
    assert all(p["spec"].get("nodeName") for p in pods)
    assert all(p["status"].get("podIP") for p in pods)
    wide = kc("get", "pods", "-n", wns, "-o", "wide").stdout
    assert "NODE" in wide.splitlines()[0] and "sim-node-" in wide
    # node heartbeats: the Leases in kube-node-lease are renewed
    leases = kc.json("get", "leases", "-n", "kube-node-lease", "-o", "json")["items"]
    assert len(leases) == 3


def pods_per_node(kc, ns, app) -> list[int]:
    counts: dict[str, int] = {}
    for p in live_pods(kc, ns, app):
        node = p["spec"]["nodeName"]
        counts[node] = counts.get(node, 0) + 1
    return sorted(counts.values())


def test_replicas_without_requests_spread_over_the_nodes(kc, wns):
    # kube-scheduler's default topology spreading (by hostname and zone, over the
    # ReplicaSet's selector) puts the replicas on distinct nodes; the least-allocated
    # scores of request-less pods tie on the simulated 32-cpu nodes
    kc("create", "deployment", "spread", "--image=nginx:1.27", "--replicas=3", "-n", wns)
    kc("rollout", "status", "deployment/spread", "-n", wns, "--timeout=90s")
    assert pods_per_node(kc, wns, "spread") == [1, 1, 1]
    kc("scale", "deployment/spread", "--replicas=6", "-n", wns)
    kc("rollout", "status", "deployment/spread", "-n", wns, "--timeout=90s")
    assert pods_per_node(kc, wns, "spread") == [2, 2, 2]


def web_pod(name: str, annotations: dict | None = None) -> dict:
    """A pod whose process shuts down on SIGTERM, as nginx does."""
    meta: dict = {"name": name, "labels": {"app": name}}
    if annotations:
        meta["annotations"] = annotations
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]},
    }


def delete_watched(kc, ns, name, *delete_args):
    """Delete a Ready pod with --wait=false while watching it; return the pod as the
    delete left it (Terminating, or None when already gone), the pod as it was when
    it went away (the DELETED event) and the result of `kubectl wait --for=delete`
    with a 10 s timeout (a third of the default grace period)."""
    kc("wait", "--for=condition=Ready", f"pod/{name}", "-n", ns, "--timeout=60s")
    proc = kc.popen("get", "pod", name, "-n", ns, "-w", "--output-watch-events", "-o", "json")
    out = StreamReader(proc.stdout)
    events = lambda: parse_json_stream(out.text())
    try:
        wait_until(lambda: events(), timeout=20, message=f"initial event of pod/{name}")
        kc("delete", "pod", name, "-n", ns, "--wait=false", *delete_args)
        after = kc("get", "pod", name, "-n", ns, "-o", "json", check=False)
        terminating = json.loads(after.stdout) if after.returncode == 0 else None
        waited = kc("wait", "--for=delete", f"pod/{name}", "-n", ns, "--timeout=10s", check=False)
        deleted = wait_until(lambda: [e for e in events() if e["type"] == "DELETED"],
                             timeout=60, message=f"DELETED event of pod/{name}")
    finally:
        stop_process(proc)
    return terminating, deleted[0]["object"], waited


def test_a_deleted_pod_exits_on_sigterm_and_goes_at_once(kc, wns):
    # real containers mostly exit on SIGTERM within a second: the pod does not sit
    # out its 30 s grace period as Terminating
    kc.apply_yaml("create", web_pod("quick"), "-n", wns)
    _, gone, waited = delete_watched(kc, wns, "quick")
    assert waited.returncode == 0, f"still there 10 s after the delete: {waited.stderr}"
    assert gone["status"]["phase"] == "Succeeded"
    term = gone["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (term["exitCode"], term["reason"]) == (0, "Completed"), term
    ready = {c["type"]: c for c in gone["status"]["conditions"]}["Ready"]
    assert (ready["status"], ready["reason"]) == ("False", "PodCompleted")


def test_a_pod_ignoring_sigterm_stays_terminating_then_is_killed(kc, wns):
    kc.apply_yaml("create", web_pod("stubborn", {"sim.coxswain.dev/ignore-sigterm": "true"}),
                  "-n", wns)
    terminating, gone, _ = delete_watched(kc, wns, "stubborn", "--grace-period=3")
    assert terminating is not None, "gone before its grace period ended"
    assert terminating["metadata"].get("deletionTimestamp")
    assert terminating["metadata"]["deletionGracePeriodSeconds"] == 3
    assert terminating["status"]["phase"] == "Running"
    assert gone["status"]["phase"] == "Failed"
    term = gone["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (term["exitCode"], term["reason"]) == (137, "Error"), term
