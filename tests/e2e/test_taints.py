"""Taints on `coxswain up` with the real kubectl: the taint eviction controller evicts
pods from a NoExecute-tainted node (at once, or after their tolerationSeconds) and the
TTL controller annotates nodes. Everything happens on a node the test adds (labelled
for the simulator, with a test-specific NoSchedule taint so other tests' pods never land
there); the shared nodes are never tainted."""

import datetime
import json
import uuid

import pytest

from conftest import Kubectl, cluster_namespace

MANAGED = "sim.coxswain.dev/managed"


@pytest.fixture
def kc(cluster) -> Kubectl:
    return Kubectl(cluster)


@pytest.fixture
def tns(kc) -> str:
    yield from cluster_namespace(kc, "taints")


@pytest.fixture
def node(kc) -> str:
    name = f"taints-{uuid.uuid4().hex[:6]}"
    kc.apply_yaml("create", {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {MANAGED: "true"}},
        "spec": {"taints": [{"key": "e2e.coxswain.dev/taints", "value": name,
                             "effect": "NoSchedule"}]},
    })
    kc("wait", "--for=condition=Ready", f"node/{name}", "--timeout=60s")
    yield name
    kc("delete", "node", name, "--wait=false", check=False)


def pinned_pod(name: str, node: str, tolerations: list) -> dict:
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "nodeName": node,
            "terminationGracePeriodSeconds": 1,
            "tolerations": [{"key": "e2e.coxswain.dev/taints", "operator": "Exists",
                             "effect": "NoSchedule"}] + tolerations,
            "containers": [{"name": "app", "image": "busybox:1.36"}],
        },
    }


def marking_times(kc: Kubectl, ns: str) -> dict:
    """When the taint eviction controller marked each pod for deletion."""
    out = {}
    for e in kc.json("get", "events.v1.events.k8s.io", "-n", ns)["items"]:
        if e.get("reason") != "TaintManagerEviction":
            continue
        note = e.get("note", "")
        if note.startswith("Marking for deletion Pod "):
            name = e["regarding"]["name"]
            assert note == f"Marking for deletion Pod {ns}/{name}"
            assert e.get("reportingController") == "taint-eviction-controller"
            out[name] = datetime.datetime.fromisoformat(e["eventTime"].replace("Z", "+00:00"))
    return out


def test_no_execute_taint_evicts_at_once_or_after_toleration_seconds(kc, tns, node):
    kc.apply_yaml("create", [
        pinned_pod("plain", node, []),
        pinned_pod("brief", node, [{"key": "evict", "operator": "Exists",
                                    "effect": "NoExecute", "tolerationSeconds": 3}]),
        pinned_pod("forever", node, [{"key": "evict", "operator": "Exists",
                                      "effect": "NoExecute"}]),
    ], "-n", tns)
    kc("wait", "--for=condition=Ready", "pod/plain", "pod/brief", "pod/forever",
       "-n", tns, "--timeout=60s")

    kc("taint", "node", node, "evict=now:NoExecute")
    kc("wait", "--for=delete", "pod/plain", "-n", tns, "--timeout=60s")
    kc("wait", "--for=delete", "pod/brief", "-n", tns, "--timeout=60s")
    times = marking_times(kc, tns)
    assert set(times) == {"plain", "brief"}, times
    # tolerationSeconds: 3 is honoured (a lower bound: slowness only widens the gap)
    assert (times["brief"] - times["plain"]).total_seconds() >= 2, times
    pod = kc.json("get", "pod", "forever", "-n", tns)
    assert "deletionTimestamp" not in pod["metadata"]
    assert pod["status"]["phase"] == "Running"


def test_nodes_carry_the_ttl_annotation(kc, node):
    # the test's node was created without it: the TTL controller adds it (0 s for a
    # small cluster)
    kc("wait", "--for=jsonpath={.metadata.annotations.node\\.alpha\\.kubernetes\\.io/ttl}=0",
       f"node/{node}", "--timeout=60s")
    out = kc("get", "nodes", "-o",
             "jsonpath={range .items[*]}{.metadata.annotations.node\\.alpha\\.kubernetes\\.io/ttl}"
             "{\"\\n\"}{end}").stdout.split()
    assert out and set(out) == {"0"}, out
    # a wrong value is put back
    kc("annotate", "node", node, "--overwrite", "node.alpha.kubernetes.io/ttl=15")
    kc("wait", "--for=jsonpath={.metadata.annotations.node\\.alpha\\.kubernetes\\.io/ttl}=0",
       f"node/{node}", "--timeout=60s")
