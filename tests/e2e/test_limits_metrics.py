"""Simulated resource usage served as metrics.k8s.io (`kubectl top`) and LimitRanger
admission on `coxswain up`, judged with the real kubectl and the Python client.

Pods report the usage their `sim.coxswain.dev/cpu-usage` / `memory-usage` annotations
give; a node reports its Running pods plus 100m / 512Mi for its system daemons. The
node test adds a simulated node of its own (label `sim.coxswain.dev/managed`, a
test-specific NoSchedule taint only its pod tolerates) so other tests' pods do not count,
and deletes it at the end."""

from __future__ import annotations

import uuid

import pytest

from conftest import Kubectl, cluster_namespace, wait_until

MANAGED = "sim.coxswain.dev/managed"
CPU = "sim.coxswain.dev/cpu-usage"
MEMORY = "sim.coxswain.dev/memory-usage"


@pytest.fixture
def kc(cluster) -> Kubectl:
    return Kubectl(cluster)


@pytest.fixture
def mns(kc) -> str:
    yield from cluster_namespace(kc, "limits")


def pod(name: str, annotations: dict, containers=("main",), labels=None, spec=None) -> dict:
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "annotations": annotations, "labels": labels or {}},
        "spec": {"containers": [{"name": c, "image": "busybox:1.36"} for c in containers],
                 **(spec or {})},
    }


def ready(kc, ns, *names):
    for name in names:
        kc("wait", "--for=condition=Ready", f"pod/{name}", "-n", ns, "--timeout=60s")


def top_rows(kc, *args) -> list[list[str]]:
    """`kubectl top ...` without the header, split into cells."""
    out = kc("top", *args, "--no-headers").stdout
    return [line.split() for line in out.splitlines() if line.strip()]


def test_kubectl_top_pods_shows_the_simulated_usage(kc, mns, cluster):
    kc.apply_yaml("apply", [
        pod("busy", {CPU: "250m", MEMORY: "64Mi"}, labels={"tier": "web"}),
        pod("pair", {CPU: "300m", f"{CPU}.b": "500m", f"{MEMORY}.a": "10Mi", f"{MEMORY}.b": "20Mi"},
            containers=("a", "b"), labels={"tier": "db"}),
        pod("idle", {}, labels={"tier": "web"}),
    ], "-n", mns)
    ready(kc, mns, "busy", "pair", "idle")

    assert top_rows(kc, "pod", "busy", "-n", mns) == [["busy", "250m", "64Mi"]]
    # a pod is the sum of its containers; --containers shows each
    assert top_rows(kc, "pod", "pair", "-n", mns) == [["pair", "800m", "30Mi"]]
    assert top_rows(kc, "pod", "pair", "-n", mns, "--containers") == [
        ["pair", "a", "300m", "10Mi"], ["pair", "b", "500m", "20Mi"]]
    # without annotations: the small default
    assert top_rows(kc, "pod", "idle", "-n", mns) == [["idle", "1m", "8Mi"]]
    # selectors and sorting
    assert [r[0] for r in top_rows(kc, "pods", "-n", mns, "-l", "tier=web")] == ["busy", "idle"]
    assert [r[0] for r in top_rows(kc, "pods", "-n", mns, "--sort-by=cpu")] == ["pair", "busy", "idle"]
    assert [r[0] for r in top_rows(kc, "pods", "-n", mns, "--sort-by=memory")] == ["busy", "pair", "idle"]
    everywhere = top_rows(kc, "pods", "-A")
    assert [mns, "busy", "250m", "64Mi"] in everywhere

    # annotating the pod changes what it reports at once
    kc("annotate", "pod", "busy", "-n", mns, f"{CPU}=900m", f"{MEMORY}=1Gi", "--overwrite")
    assert top_rows(kc, "pod", "busy", "-n", mns) == [["busy", "900m", "1024Mi"]]

    # a value that does not parse is ignored, with a warning saying why
    kc("annotate", "pod", "busy", "-n", mns, f"{CPU}=lots", "--overwrite")
    r = kc("top", "pod", "busy", "-n", mns, "--no-headers")
    assert r.stdout.split() == ["busy", "1m", "1024Mi"]
    assert f'annotation {CPU}="lots" of pod {mns}/busy is ignored: "lots" is not a quantity' in r.stderr

    # the Python client reads the same objects
    from kubernetes import client
    co = client.CustomObjectsApi(cluster.api_client())
    m = co.get_namespaced_custom_object("metrics.k8s.io", "v1beta1", mns, "pods", "pair")
    assert m["kind"] == "PodMetrics"
    assert m["containers"] == [{"name": "a", "usage": {"cpu": "300m", "memory": "10Mi"}},
                               {"name": "b", "usage": {"cpu": "500m", "memory": "20Mi"}}]
    lst = co.list_namespaced_custom_object("metrics.k8s.io", "v1beta1", mns, "pods",
                                           label_selector="tier=db")
    assert [i["metadata"]["name"] for i in lst["items"]] == ["pair"]

    # unknown pods: metrics-server's answer
    r = kc("top", "pod", "nope", "-n", mns, check=False)
    assert r.returncode != 0
    assert 'pods "nope" not found' in r.stderr


def test_kubectl_top_nodes_adds_the_pods_to_the_node_overhead(kc, mns):
    tag = uuid.uuid4().hex[:6]
    node, key = f"metrics-{tag}", f"metrics-test-{tag}"
    kc.apply_yaml("create", {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": node, "labels": {MANAGED: "true", key: "yes"}},
        "spec": {"taints": [{"key": key, "value": "yes", "effect": "NoSchedule"}]},
    })
    try:
        kc("wait", "--for=condition=Ready", f"node/{node}", "--timeout=60s")
        # no pods yet: the system daemons' share only
        assert top_rows(kc, "node", node) == [[node, "100m", "0%", "512Mi", "0%"]]
        kc.apply_yaml("apply", pod("on-node", {CPU: "1500m", MEMORY: "512Mi"}, spec={
            "nodeSelector": {key: "yes"},
            "tolerations": [{"key": key, "operator": "Equal", "value": "yes",
                             "effect": "NoSchedule"}],
        }), "-n", mns)
        ready(kc, mns, "on-node")
        rows = top_rows(kc, "node", node)
        assert rows[0][0] == node and rows[0][1] == "1600m" and rows[0][3] == "1024Mi", rows
        # every node of the cluster is listed, ours among them
        assert node in [r[0] for r in top_rows(kc, "nodes")]
        assert [r[0] for r in top_rows(kc, "nodes", "-l", f"{key}=yes")] == [node]
    finally:
        kc("delete", "pod", "on-node", "-n", mns, "--wait=false", check=False)
        kc("delete", "node", node, "--wait=false", check=False)


def test_a_limit_range_defaults_and_limits_pods(kc, mns, cluster):
    from kubernetes import client
    core_v1 = client.CoreV1Api(cluster.api_client())
    kc.apply_yaml("apply", {
        "apiVersion": "v1", "kind": "LimitRange",
        "metadata": {"name": "limits"},
        "spec": {"limits": [{
            "type": "Container",
            "max": {"cpu": "1"},
            "default": {"cpu": "500m", "memory": "256Mi"},
            "defaultRequest": {"cpu": "100m", "memory": "128Mi"},
        }]},
    }, "-n", mns)
    kc("run", "plain", "--image=busybox:1.36", "-n", mns)
    assert kc("get", "pod", "plain", "-n", mns, "-o",
              "jsonpath={.spec.containers[0].resources.limits.cpu} "
              "{.spec.containers[0].resources.limits.memory} "
              "{.spec.containers[0].resources.requests.cpu} "
              "{.spec.containers[0].resources.requests.memory}").stdout == "500m 256Mi 100m 128Mi"
    annotations = core_v1.read_namespaced_pod("plain", mns).metadata.annotations
    assert annotations["kubernetes.io/limit-ranger"] == (
        "LimitRanger plugin set: cpu, memory request for container plain; "
        "cpu, memory limit for container plain")
    # the defaults are what the pod runs with
    ready(kc, mns, "plain")

    # a violation is refused with upstream's message
    r = kc("run", "big", "--image=busybox:1.36", "-n", mns,
           "--overrides", '{"spec": {"containers": [{"name": "big", "image": "busybox:1.36", '
                          '"resources": {"limits": {"cpu": "2"}}}]}}', check=False)
    assert r.returncode != 0
    assert ('Error from server (Forbidden): pods "big" is forbidden: '
            "maximum cpu usage per Container is 1, but limit is 2") in r.stderr, r.stderr
    from kubernetes.client.rest import ApiException
    with pytest.raises(ApiException) as e:
        core_v1.create_namespaced_pod(mns, pod("big2", {}) | {"spec": {"containers": [
            {"name": "c", "image": "busybox:1.36",
             "resources": {"requests": {"cpu": "100m"}, "limits": {"cpu": "1500m"}}}]}})
    assert e.value.status == 403
    assert ('pods \\"big2\\" is forbidden: maximum cpu usage per Container is 1, but limit is 1500m'
            in e.value.body)
