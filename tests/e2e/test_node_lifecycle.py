"""Node lifecycle on its own `coxswain up` (short --node-monitor-grace-period and
--node-monitor-period), judged with the real kubectl: a new node carries the API
server's node.kubernetes.io/not-ready:NoSchedule taint until the node lifecycle
controller sees it Ready; a node whose simulated heartbeats stop (the
sim.coxswain.dev/heartbeat annotation) goes Unknown within the grace period, is tainted
unreachable (NoSchedule and NoExecute) and its pods are marked not Ready; pods whose
toleration of the unreachable taint runs out are evicted by the taint-eviction-controller
and recreated on the other nodes (skipped when this build has no such controller); and a
node whose heartbeats restart is Ready and untainted again.

The cluster is this module's own, so its nodes may be stopped; grace periods are above
the simulator's 10 s Lease renewal, as upstream requires of the grace period."""

from __future__ import annotations

import json
import re
import uuid

import pytest
import requests

from conftest import CoxswainServer, Kubectl, cluster_namespace, wait_until

GRACE = 12
HEARTBEAT = "sim.coxswain.dev/heartbeat"
MANAGED = "sim.coxswain.dev/managed"
NOT_READY = "node.kubernetes.io/not-ready"
UNREACHABLE = "node.kubernetes.io/unreachable"


@pytest.fixture(scope="module")
def nlc_cluster(tmp_path_factory):
    srv = CoxswainServer(tmp_path_factory.mktemp("coxswain-nlc"), name="nlc-up", command="up")
    srv.start(extra_args=[
        f"--node-monitor-grace-period={GRACE}s",
        "--node-monitor-period=1s",
        "--node-eviction-rate=10",
    ])
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def kc(nlc_cluster) -> Kubectl:
    return Kubectl(nlc_cluster)


@pytest.fixture
def ns(kc) -> str:
    yield from cluster_namespace(kc, "nlc")


def taints(kc: Kubectl, node: str) -> list[tuple[str, str]]:
    out = kc("get", "node", node, "-o", "jsonpath={.spec.taints}").stdout.strip()
    return [(t["key"], t["effect"]) for t in json.loads(out or "[]")]


def ready_status(kc: Kubectl, node: str) -> str:
    return kc("get", "node", node, "-o",
              'jsonpath={.status.conditions[?(@.type=="Ready")].status}').stdout.strip()


def controllers_listing(srv: CoxswainServer) -> str:
    text = srv.log_path.read_text(errors="replace")
    m = re.search(r"controller manager: health and metrics on (https://[0-9.:]+)", text)
    assert m, text[-2000:]
    # the secure port: self-signed, the admin token (system:masters) may read it
    return requests.get(f"{m.group(1)}/debug/controllers", verify=False, timeout=5,
                        headers={"Authorization": f"Bearer {srv.token}"}).text


def test_new_nodes_are_tainted_not_ready_until_ready(kc, nlc_cluster):
    assert "node-lifecycle-controller enabled" in controllers_listing(nlc_cluster)
    # the shared nodes are Ready and carry no condition taint
    kc("wait", "--for=condition=Ready", "node", "--all", "--timeout=60s")
    for node in kc("get", "nodes", "-o", "name").stdout.split():
        name = node.split("/", 1)[1]
        wait_until(lambda: not any(k == NOT_READY for k, _ in taints(kc, name)), timeout=30)
    # a new node: the API server taints it at creation
    name = f"nlc-new-{uuid.uuid4().hex[:6]}"
    created = kc.json("create", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {MANAGED: "true"}},
    }))
    assert {"key": NOT_READY, "effect": "NoSchedule"} in created["spec"]["taints"]
    try:
        kc("wait", "--for=condition=Ready", "node", name, "--timeout=60s")
        wait_until(lambda: taints(kc, name) == [], timeout=30)
        assert "Ready" in kc("get", "node", name).stdout
    finally:
        kc("delete", "node", name, "--wait=false", check=False)


def test_pods_get_the_default_tolerations(kc, ns):
    kc("run", "p", "-n", ns, "--image=busybox", "--restart=Never")
    tol = kc.json("get", "pod", "p", "-n", ns)["spec"]["tolerations"]
    assert {"key": NOT_READY, "operator": "Exists", "effect": "NoExecute",
            "tolerationSeconds": 300} in tol
    assert {"key": UNREACHABLE, "operator": "Exists", "effect": "NoExecute",
            "tolerationSeconds": 300} in tol
    kc("wait", "--for=condition=Ready", "pod/p", "-n", ns, "--timeout=60s")


def deployment(name: str, replicas: int, seconds: int) -> dict:
    tolerations = [
        {"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": seconds}
        for key in (NOT_READY, UNREACHABLE)
    ]
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "busybox"}],
                         "tolerations": tolerations},
            },
        },
    }


def pods_by_node(kc: Kubectl, ns: str, app: str) -> list[dict]:
    return kc.json("get", "pods", "-n", ns, "-l", f"app={app}")["items"]


def is_ready(p: dict) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True"
               for c in p.get("status", {}).get("conditions", []))


def test_stopped_heartbeats_make_a_node_unknown_tainted_and_then_ready_again(
        kc, nlc_cluster, ns):
    evicting = "taint-eviction-controller enabled" in controllers_listing(nlc_cluster)
    kc("apply", "-n", ns, "-f", "-", input=json.dumps(deployment("web", 6, 2)))
    kc("rollout", "status", "deployment/web", "-n", ns, "--timeout=60s")
    pods = pods_by_node(kc, ns, "web")
    victim = pods[0]["spec"]["nodeName"]
    on_victim = [p["metadata"]["name"] for p in pods if p["spec"]["nodeName"] == victim]
    try:
        kc("annotate", "node", victim, f"{HEARTBEAT}=stopped")
        # NotReady (Unknown) within the grace period plus a monitor period or two
        kc("wait", "--for=condition=Ready=Unknown", f"node/{victim}",
           f"--timeout={GRACE + 30}s")
        assert "NotReady" in kc("get", "node", victim).stdout
        node = kc.json("get", "node", victim)
        ready = next(c for c in node["status"]["conditions"] if c["type"] == "Ready")
        assert ready["reason"] == "NodeStatusUnknown"
        assert ready["message"] == "Kubelet stopped posting node status."
        wait_until(lambda: {(UNREACHABLE, "NoExecute"), (UNREACHABLE, "NoSchedule")}
                   <= set(taints(kc, victim)), timeout=30)
        events = kc("get", "events", "-A", "--field-selector",
                    f"involvedObject.name={victim}").stdout
        assert "NodeNotReady" in events or "NotReady" in events, events
        if evicting:
            # the pods' 2 s toleration runs out: evicted, recreated elsewhere
            def recreated():
                live = [p for p in pods_by_node(kc, ns, "web")
                        if not p["metadata"].get("deletionTimestamp")]
                return (len(live) == 6 and all(is_ready(p) for p in live)
                        and all(p["spec"]["nodeName"] != victim for p in live))
            wait_until(recreated, timeout=60)
            # the dead kubelet cannot finish them: Terminating until the node is back
            for name in on_victim:
                out = kc("get", "pod", name, "-n", ns, check=False).stdout
                assert out == "" or "Terminating" in out, out
        else:
            # no eviction in this build: the pods stay, marked not Ready
            wait_until(lambda: all(
                not is_ready(p) for p in pods_by_node(kc, ns, "web")
                if p["spec"]["nodeName"] == victim), timeout=30)
    finally:
        kc("annotate", "node", victim, f"{HEARTBEAT}-", check=False)
    kc("wait", "--for=condition=Ready", f"node/{victim}", "--timeout=60s")
    wait_until(lambda: not any(k in (NOT_READY, UNREACHABLE) for k, _ in taints(kc, victim)),
               timeout=30)
    if evicting:
        # the kubelet is back: the evicted pods finish terminating and are gone
        wait_until(lambda: all(
            kc("get", "pod", n, "-n", ns, "--ignore-not-found", "-o", "name").stdout == ""
            for n in on_victim), timeout=60)
    else:
        pytest.skip("taint-eviction-controller is not in this build: eviction not checked")
