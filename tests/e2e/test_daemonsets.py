"""DaemonSets on `coxswain up`, judged with the real kubectl: one pod per simulated node
(pinned by node affinity, bound by the simulator's scheduler), nodes added and tainted
later, a maxSurge image update that never leaves a node without a ready pod (watched),
and `kubectl rollout status/history/undo` through the ControllerRevisions.

The session's `coxswain up` cluster is shared with other files: nodes this file adds
are removed again, and only those nodes get taints."""

from __future__ import annotations

import uuid

import pytest

from conftest import Kubectl, StreamReader, cluster_namespace, parse_json_stream, stop_process, wait_until

MANAGED = "sim.coxswain.dev/managed"


@pytest.fixture
def kc(cluster) -> Kubectl:
    return Kubectl(cluster)


@pytest.fixture
def dns(kc) -> str:
    yield from cluster_namespace(kc, "ds")


@pytest.fixture
def extra_node(kc) -> str:
    """A simulated node added by the test (the simulator runs every node carrying its
    managed label), deleted afterwards."""
    name = f"extra-{uuid.uuid4().hex[:6]}"
    yield name
    kc("delete", "node", name, "--wait=false", check=False)


def daemon_set(name: str, image: str, strategy: dict, annotations: dict | None = None) -> dict:
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "annotations": annotations or {}},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "updateStrategy": strategy,
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "agent", "image": image}]},
            },
        },
    }


def is_ready(p: dict) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True"
               for c in p.get("status", {}).get("conditions", []))


def pinned_node(p: dict) -> str:
    terms = (p["spec"]["affinity"]["nodeAffinity"]
             ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"])
    assert len(terms) == 1 and len(terms[0]["matchFields"]) == 1
    f = terms[0]["matchFields"][0]
    assert f["key"] == "metadata.name" and f["operator"] == "In"
    return f["values"][0]


def live_pods(kc, ns, app) -> list[dict]:
    items = kc.json("get", "pods", "-n", ns, "-l", f"app={app}")["items"]
    return [p for p in items if not p["metadata"].get("deletionTimestamp")]


def sim_nodes(kc) -> set[str]:
    return {n["metadata"]["name"] for n in kc.json("get", "nodes")["items"]
            if n["metadata"].get("labels", {}).get(MANAGED) == "true"
            and not n["spec"].get("taints")}


def running_one_per_node(kc, ns, app, nodes: set[str]):
    """Pods of `app` if each of `nodes` (and no other) runs exactly one, bound to it and
    Running; else None."""
    pods = live_pods(kc, ns, app)
    by_node: dict[str, list] = {}
    for p in pods:
        by_node.setdefault(pinned_node(p), []).append(p)
    if set(by_node) != nodes or any(len(v) != 1 for v in by_node.values()):
        return None
    for node, (p,) in by_node.items():
        if p["spec"].get("nodeName") != node or p["status"].get("phase") != "Running":
            return None
    return by_node


def test_one_pod_per_node_follows_added_and_tainted_nodes(kc, dns, extra_node):
    nodes = sim_nodes(kc)
    assert len(nodes) >= 3
    kc.apply_yaml("apply", daemon_set("agent", "busybox:1.36", {"type": "RollingUpdate"}),
                  "-n", dns)
    out = kc("rollout", "status", "ds/agent", "-n", dns, "--timeout=90s").stdout
    assert 'daemon set "agent" successfully rolled out' in out
    by_node = wait_until(lambda: running_one_per_node(kc, dns, "agent", nodes), timeout=60)
    tolerations = {t["key"] for t in next(iter(by_node.values()))[0]["spec"]["tolerations"]}
    assert {"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable",
            "node.kubernetes.io/unschedulable"} <= tolerations
    ds = kc.json("get", "ds", "agent", "-n", dns)
    st = ds["status"]
    assert (st["desiredNumberScheduled"], st["currentNumberScheduled"], st["numberReady"],
            st["numberAvailable"], st["updatedNumberScheduled"]) == (len(nodes),) * 5
    assert st["observedGeneration"] == ds["metadata"]["generation"]

    # a node added later gets a pod
    kc.apply_yaml("create", {"apiVersion": "v1", "kind": "Node",
                             "metadata": {"name": extra_node, "labels": {MANAGED: "true"}}})
    wait_until(lambda: running_one_per_node(kc, dns, "agent", nodes | {extra_node}), timeout=60)
    wait_until(lambda: kc.json("get", "ds", "agent", "-n", dns)["status"]
               .get("numberReady") == len(nodes) + 1, timeout=60)

    # cordoned: daemon pods tolerate node.kubernetes.io/unschedulable, so a replacement
    # still lands there (the simulator's NodeUnschedulable filter honours it)
    kc("cordon", extra_node)
    old = running_one_per_node(kc, dns, "agent", nodes | {extra_node})[extra_node][0]
    kc("delete", "pod", old["metadata"]["name"], "-n", dns)
    replaced = wait_until(lambda: (b := running_one_per_node(kc, dns, "agent", nodes | {extra_node}))
                          and b[extra_node][0]["metadata"]["uid"] != old["metadata"]["uid"] and b,
                          timeout=60)
    assert replaced[extra_node][0]["spec"]["nodeName"] == extra_node

    # NoSchedule it does not tolerate: the pod stays, misscheduled
    kc("taint", "nodes", extra_node, "dedicated=infra:NoSchedule")
    wait_until(lambda: (s := kc.json("get", "ds", "agent", "-n", dns)["status"])
               .get("numberMisscheduled") == 1 and s["desiredNumberScheduled"] == len(nodes),
               timeout=60)
    assert running_one_per_node(kc, dns, "agent", nodes | {extra_node})

    # NoExecute it does not tolerate: evicted, not replaced
    kc("taint", "nodes", extra_node, "evict=now:NoExecute")
    wait_until(lambda: running_one_per_node(kc, dns, "agent", nodes), timeout=60)
    wait_until(lambda: kc.json("get", "ds", "agent", "-n", dns)["status"]
               .get("numberMisscheduled", 0) == 0, timeout=60)
    events = kc.json("get", "events", "-n", dns)["items"]
    reasons = {(e.get("source", {}).get("component") or e.get("reportingComponent"), e["reason"])
               for e in events}
    assert ("daemonset-controller", "SuccessfulCreate") in reasons, reasons
    assert ("daemonset-controller", "SuccessfulDelete") in reasons, reasons


def replay(events: list[dict]) -> list[dict[str, int]]:
    """Ready live pods per node after each watch event."""
    pods: dict[str, dict] = {}
    states = []
    for ev in events:
        obj = ev["object"]
        name = obj["metadata"]["name"]
        if ev["type"] == "DELETED" or obj["metadata"].get("deletionTimestamp"):
            pods.pop(name, None)
        else:
            pods[name] = obj
        per_node: dict[str, int] = {}
        for p in pods.values():
            node = pinned_node(p)
            per_node[node] = per_node.get(node, 0) + (1 if is_ready(p) else 0)
        states.append(per_node)
    return states


def test_surge_update_keeps_every_node_served_and_rollout_history_undo(kc, dns, cluster):
    nodes = sim_nodes(kc)
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}
    kc.apply_yaml("create", daemon_set("web", "nginx:1.27", strategy,
                                       {"kubernetes.io/change-cause": "first"}), "-n", dns)
    kc("rollout", "status", "ds/web", "-n", dns, "--timeout=90s")
    wait_until(lambda: running_one_per_node(kc, dns, "web", nodes), timeout=60)
    assert all(is_ready(p) for p in live_pods(kc, dns, "web"))

    watch = kc.popen("get", "pods", "-n", dns, "-l", "app=web", "-w",
                     "--output-watch-events", "-o", "json")
    reader = StreamReader(watch.stdout)
    try:
        # the watch has listed the current pods before the update starts
        wait_until(lambda: len(parse_json_stream(reader.text())) >= len(nodes), timeout=30)
        patch = ('{"metadata":{"annotations":{"kubernetes.io/change-cause":"second"}},'
                 '"spec":{"template":{"spec":{"containers":[{"name":"agent","image":"nginx:1.28"}]}}}}')
        kc("patch", "ds", "web", "-n", dns, "--type=strategic", "-p", patch)
        out = kc("rollout", "status", "ds/web", "-n", dns, "--timeout=120s").stdout
        assert 'daemon set "web" successfully rolled out' in out
        by_node = wait_until(lambda: running_one_per_node(kc, dns, "web", nodes), timeout=60)
        assert all(p["spec"]["containers"][0]["image"] == "nginx:1.28"
                   for (p,) in by_node.values())
        wait_until(lambda: sum(1 for e in parse_json_stream(reader.text())
                               if e["type"] == "DELETED") >= len(nodes), timeout=60)
    finally:
        stop_process(watch)
    states = replay(parse_json_stream(reader.text()))
    served = [s for s in states if all(s.get(n, 0) >= 1 for n in nodes)]
    assert served, "never saw every node served"
    first = states.index(served[0])
    gaps = [s for s in states[first:] if any(s.get(n, 0) < 1 for n in nodes)]
    assert not gaps, gaps[:3]
    assert max(max(s.values(), default=0) for s in states) == 2  # surged, one node at a time

    hist = kc("rollout", "history", "ds/web", "-n", dns).stdout
    rows = [l.split() for l in hist.splitlines()[2:] if l.strip()]
    assert rows == [["1", "first"], ["2", "second"]], hist
    rev1 = kc("rollout", "history", "ds/web", "-n", dns, "--revision=1").stdout
    assert "nginx:1.27" in rev1

    out = kc("rollout", "undo", "ds/web", "-n", dns).stdout
    assert "rolled back" in out
    kc("rollout", "status", "ds/web", "-n", dns, "--timeout=120s")
    by_node = wait_until(
        lambda: (b := running_one_per_node(kc, dns, "web", nodes))
        and all(p["spec"]["containers"][0]["image"] == "nginx:1.27" for (p,) in b.values())
        and b, timeout=90)
    assert by_node
    wait_until(lambda: [l.split()[0] for l in kc("rollout", "history", "ds/web", "-n", dns)
                        .stdout.splitlines()[2:] if l.strip()] == ["2", "3"], timeout=30)
    crs = kc.json("get", "controllerrevisions", "-n", dns, "-l", "app=web")["items"]
    ds = kc.json("get", "ds", "web", "-n", dns)
    assert all(c["metadata"]["ownerReferences"][0]["uid"] == ds["metadata"]["uid"] for c in crs)
    assert sorted(c["revision"] for c in crs) == [2, 3]
    # the current revision holds the served template as kubectl >= 1.33 computes it
    # (a $patch: replace strategic merge patch; older kubectl adds creationTimestamp: null)
    cur = next(c for c in crs if c["revision"] == 3)
    template = dict(ds["spec"]["template"], **{"$patch": "replace"})
    assert cur["data"] == {"spec": {"template": template}}
