"""PodDisruptionBudgets, the eviction subresource and `kubectl drain` on `coxswain up`,
judged with the real kubectl and the Python client.

The session's cluster is shared: this file never cordons or drains its 3 nodes. It adds
two simulated nodes of its own (the simulator runs every node labelled
`sim.coxswain.dev/managed`), tainted NoSchedule with a test-specific taint that only its
Deployment tolerates, and deletes them at the end."""

from __future__ import annotations

import uuid

import pytest

from conftest import Kubectl, cluster_namespace, wait_until

MANAGED = "sim.coxswain.dev/managed"
VIOLATES = "Cannot evict pod as it would violate the pod's disruption budget."


@pytest.fixture
def kc(cluster) -> Kubectl:
    return Kubectl(cluster)


@pytest.fixture
def pns(kc) -> str:
    yield from cluster_namespace(kc, "pdb")


@pytest.fixture
def test_nodes(kc):
    """Names of two test-owned nodes (created by the test), and the label/taint key
    that keeps other pods off them; deleted afterwards."""
    tag = uuid.uuid4().hex[:6]
    names = [f"pdb-a-{tag}", f"pdb-b-{tag}"]
    yield names, f"pdb-test-{tag}"
    for n in names:
        kc("delete", "node", n, "--wait=false", check=False)


def add_node(kc, name: str, key: str) -> None:
    kc.apply_yaml("create", {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {MANAGED: "true", key: "yes"}},
        "spec": {"taints": [{"key": key, "value": "yes", "effect": "NoSchedule"}]},
    })


def web(key: str) -> dict:
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "nodeSelector": {key: "yes"},
                    "tolerations": [{"key": key, "operator": "Equal", "value": "yes",
                                     "effect": "NoSchedule"}],
                    "terminationGracePeriodSeconds": 1,
                    "containers": [{"name": "web", "image": "nginx:1.27"}],
                },
            },
        },
    }


def ready_pods(kc, ns: str) -> list[dict]:
    items = kc.json("get", "pods", "-n", ns, "-l", "app=web")["items"]
    return [p for p in items
            if not p["metadata"].get("deletionTimestamp")
            and any(c["type"] == "Ready" and c["status"] == "True"
                    for c in p.get("status", {}).get("conditions", []))]


def allowed_column(kc, ns: str) -> str:
    out = kc("get", "pdb", "web", "-n", ns).stdout.splitlines()
    header, row = out[0], out[1]
    start = header.index("ALLOWED DISRUPTIONS")
    return row[start:].split()[0]


def test_drain_evicts_one_pod_at_a_time_and_a_budget_refuses(kc, cluster, pns, test_nodes):
    (node_a, node_b), key = test_nodes
    add_node(kc, node_a, key)
    kc.apply_yaml("apply", web(key), "-n", pns)
    on_a = wait_until(lambda: len(p := ready_pods(kc, pns)) == 3 and p, timeout=60)
    assert {p["spec"]["nodeName"] for p in on_a} == {node_a}

    kc.apply_yaml("apply", {
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": "web"},
        "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}},
    }, "-n", pns)
    wait_until(lambda: allowed_column(kc, pns) == "1", timeout=30)
    pdb = kc.json("get", "pdb", "web", "-n", pns)
    assert pdb["status"]["currentHealthy"] == 3
    assert pdb["status"]["desiredHealthy"] == 2
    assert pdb["status"]["expectedPods"] == 3
    cond = pdb["status"]["conditions"][0]
    assert (cond["type"], cond["status"], cond["reason"]) == ("DisruptionAllowed", "True", "SufficientPods")

    # a second node for the replacements; drain the first: one eviction at a time, each
    # waiting (kubectl retries on 429) until the replacement is ready on the other node
    add_node(kc, node_b, key)
    out = kc("drain", node_a, "--ignore-daemonsets", "--delete-emptydir-data",
             "--timeout=180s", timeout=240)
    assert f"node/{node_a} drained" in out.stdout, out.stdout + out.stderr
    for p in on_a:
        assert f"pod/{p['metadata']['name']} evicted" in out.stdout, out.stdout
    # at least one eviction had to wait for the budget
    assert "Cannot evict pod as it would violate the pod's disruption budget" in out.stderr, out.stderr
    after = wait_until(lambda: len(p := ready_pods(kc, pns)) == 3 and p, timeout=60)
    assert {p["spec"]["nodeName"] for p in after} == {node_b}
    node = kc.json("get", "node", node_a)
    assert node["spec"].get("unschedulable") is True

    # a budget that allows nothing: the Python client's eviction gets upstream's 429
    kc("patch", "pdb", "web", "-n", pns, "--type=merge", "-p", '{"spec":{"minAvailable":3}}')
    wait_until(lambda: (s := kc.json("get", "pdb", "web", "-n", pns)["status"])
               and s.get("observedGeneration") == 2 and s["disruptionsAllowed"] == 0, timeout=30)
    assert allowed_column(kc, pns) == "0"
    from kubernetes import client
    from kubernetes.client.rest import ApiException
    import json

    core = client.CoreV1Api(cluster.api_client())
    victim = after[0]["metadata"]["name"]
    body = client.V1Eviction(metadata=client.V1ObjectMeta(name=victim, namespace=pns))
    with pytest.raises(ApiException) as exc:
        core.create_namespaced_pod_eviction(victim, pns, body)
    assert exc.value.status == 429
    status = json.loads(exc.value.body)
    assert status["reason"] == "TooManyRequests"
    assert status["message"] == VIOLATES
    assert status["details"]["causes"] == [{
        "reason": "DisruptionBudget",
        "message": "The disruption budget web needs 3 healthy pods and has 3 currently",
    }]
    assert kc.json("get", "pod", victim, "-n", pns)["metadata"].get("deletionTimestamp") is None
