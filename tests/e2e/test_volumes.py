"""Volumes on `coxswain up`, judged by the real kubectl: the simulated storage (default
StorageClass `standard`, CSI driver `csi.sim.coxswain.dev` with CSINodes), a
StatefulSet's volumeClaimTemplate provisioned on the pods' nodes (WaitForFirstConsumer)
and bound (on the shared nodes this needs the attach/detach controller), `kubectl patch
pvc` to a larger size completing (at once while mounted, when a pod mounts the volume
again otherwise), and the scheduler's volume messages. Each test uses its own namespace; the shared nodes are never
touched (a test that needs a node of its own adds one with a test-specific taint)."""

from __future__ import annotations

import uuid

import pytest

from conftest import Kubectl, cluster_namespace, to_yaml, wait_until

DRIVER = "csi.sim.coxswain.dev"
MANAGED = "sim.coxswain.dev/managed"


@pytest.fixture
def kc(cluster) -> Kubectl:
    return Kubectl(cluster)


@pytest.fixture
def vns(kc) -> str:
    yield from cluster_namespace(kc, "vol")


def statefulset(name: str, replicas: int, storage: str = "1Gi", **pod_spec) -> dict:
    spec = {"containers": [{"name": "web", "image": "nginx:1.27",
                            "volumeMounts": [{"name": "data", "mountPath": "/data"}]}]}
    spec.update(pod_spec)
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "serviceName": name,
            "podManagementPolicy": "Parallel",
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": spec},
            "volumeClaimTemplates": [{
                "metadata": {"name": "data"},
                "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "standard",
                         "resources": {"requests": {"storage": storage}}},
            }],
        },
    }


def phase(obj: dict) -> str:
    return (obj.get("status") or {}).get("phase") or ""


def affinity_hostname(pv: dict) -> str | None:
    terms = (((pv["spec"].get("nodeAffinity") or {}).get("required") or {})
             .get("nodeSelectorTerms") or [])
    for t in terms:
        for e in t.get("matchExpressions") or []:
            if e["key"] == "kubernetes.io/hostname" and e["operator"] == "In":
                return e["values"][0]
    return None


def running_with_bound_claims(kc: Kubectl, ns: str, app: str, replicas: int):
    """{pod: (node, pv)} once every replica runs with its claim Bound."""
    pods = kc.json("get", "pods", "-n", ns, "-l", f"app={app}")["items"]
    claims = {c["metadata"]["name"]: c for c in kc.json("get", "pvc", "-n", ns)["items"]}
    out = {}
    for p in pods:
        name = p["metadata"]["name"]
        c = claims.get(f"data-{name}")
        if phase(p) != "Running" or not c or phase(c) != "Bound":
            return None
        out[name] = (p["spec"]["nodeName"], c["spec"]["volumeName"])
    return out if len(out) == replicas else None


def test_default_storage_class_driver_and_csinodes(kc):
    out = kc("get", "storageclass").stdout
    line = next(line for line in out.splitlines() if line.startswith("standard"))
    assert line.split()[:6] == ["standard", "(default)", DRIVER, "Delete",
                                "WaitForFirstConsumer", "true"], out
    driver = kc.json("get", "csidriver", DRIVER)
    assert driver["spec"]["attachRequired"] is True
    nodes = [n["metadata"]["name"] for n in kc.json("get", "nodes")["items"]
             if (n["metadata"].get("labels") or {}).get(MANAGED) == "true"]
    csinodes = {c["metadata"]["name"]: c for c in kc.json("get", "csinodes")["items"]}
    for n in nodes:
        assert [d["name"] for d in csinodes[n]["spec"]["drivers"]] == [DRIVER]
    node = kc.json("get", "node", nodes[0])
    assert node["metadata"]["annotations"][
        "volumes.kubernetes.io/controller-managed-attach-detach"] == "true"


def test_statefulset_claims_are_provisioned_on_the_pods_nodes(kc, vns):
    kc("apply", "-n", vns, "-f", "-", input=to_yaml([statefulset("web", 2)]))
    placed = wait_until(lambda: running_with_bound_claims(kc, vns, "web", 2), timeout=90,
                        message="running pods with bound claims")
    for pod, (node, pv_name) in placed.items():
        pv = kc.json("get", "pv", pv_name)
        assert pv_name.startswith("pvc-")
        assert affinity_hostname(pv) == node, (pod, pv)
        assert pv["spec"]["csi"]["driver"] == DRIVER
        assert pv["metadata"]["annotations"]["pv.kubernetes.io/provisioned-by"] == DRIVER
        assert pv["spec"]["claimRef"]["name"] == f"data-{pod}"
        assert phase(pv) == "Bound"
    # attached by the attach/detach controller through the simulated attacher
    vas = kc.json("get", "volumeattachments")["items"]
    for pod, (node, pv_name) in placed.items():
        va = [v for v in vas if v["spec"]["source"].get("persistentVolumeName") == pv_name]
        assert len(va) == 1 and va[0]["spec"]["nodeName"] == node, va
        assert va[0]["spec"]["attacher"] == DRIVER
        assert va[0]["status"]["attached"] is True
        assert "external-attacher/csi-sim-coxswain-dev" in va[0]["metadata"]["finalizers"]
    # kubectl's view of the claims
    out = kc("get", "pvc", "-n", vns).stdout.splitlines()
    rows = {r.split()[0]: r.split() for r in out[1:]}
    assert rows["data-web-0"][1:6] == ["Bound", placed["web-0"][1], "1Gi", "RWO", "standard"]
    events = kc("get", "events", "-n", vns, "--field-selector",
                "involvedObject.name=data-web-0").stdout
    assert "ProvisioningSucceeded" in events, events


def own_node_spec(node: str) -> dict:
    return {
        "nodeSelector": {"kubernetes.io/hostname": node},
        "tolerations": [{"key": "e2e.coxswain.dev/volumes", "operator": "Exists",
                         "effect": "NoSchedule"}],
    }


def claim_status(kc: Kubectl, ns: str, name: str) -> dict:
    return kc.json("get", "pvc", name, "-n", ns).get("status") or {}


def test_patch_pvc_to_a_larger_size_completes(kc, vns, own_node):
    # on a node of its own, whose kubelet attaches volumes itself
    kc("apply", "-n", vns, "-f", "-",
       input=to_yaml([statefulset("grow", 1, **own_node_spec(own_node))]))
    wait_until(lambda: running_with_bound_claims(kc, vns, "grow", 1), timeout=90,
               message="running pod with a bound claim")
    kc("patch", "pvc", "data-grow-0", "-n", vns, "-p",
       '{"spec":{"resources":{"requests":{"storage":"3Gi"}}}}')
    wait_until(lambda: (claim_status(kc, vns, "data-grow-0").get("capacity") or {})
               .get("storage") == "3Gi", timeout=60, message="status.capacity 3Gi")
    claim = kc.json("get", "pvc", "data-grow-0", "-n", vns)
    assert not (claim["status"].get("conditions") or [])
    assert claim["status"]["allocatedResources"]["storage"] == "3Gi"
    pv = kc.json("get", "pv", claim["spec"]["volumeName"])
    assert pv["spec"]["capacity"]["storage"] == "3Gi"
    out = kc("get", "pvc", "data-grow-0", "-n", vns).stdout
    assert out.splitlines()[1].split()[3] == "3Gi", out
    events = kc("get", "events", "-n", vns, "--field-selector",
                "involvedObject.name=data-grow-0").stdout
    assert "FileSystemResizeSuccessful" in events, events

    # not mounted: the volume grows, the file system waits for a pod to mount it
    kc("scale", "statefulset", "grow", "-n", vns, "--replicas=0")
    wait_until(lambda: not kc.json("get", "pods", "-n", vns, "-l", "app=grow")["items"],
               timeout=60, message="pod gone")
    kc("patch", "pvc", "data-grow-0", "-n", vns, "-p",
       '{"spec":{"resources":{"requests":{"storage":"4Gi"}}}}')

    def pending():
        s = claim_status(kc, vns, "data-grow-0")
        conds = {c["type"]: c for c in s.get("conditions") or []}
        return conds.get("FileSystemResizePending")
    cond = wait_until(pending, timeout=60, message="FileSystemResizePending")
    assert cond["status"] == "True"
    s = claim_status(kc, vns, "data-grow-0")
    assert s["capacity"]["storage"] == "3Gi"
    assert s["allocatedResourceStatuses"]["storage"] == "NodeResizePending"
    assert kc.json("get", "pv", claim["spec"]["volumeName"])["spec"]["capacity"]["storage"] == "4Gi"
    kc("scale", "statefulset", "grow", "-n", vns, "--replicas=1")
    wait_until(lambda: (claim_status(kc, vns, "data-grow-0").get("capacity") or {})
               .get("storage") == "4Gi", timeout=60, message="status.capacity 4Gi")


def unschedulable_message(kc: Kubectl, ns: str, pod: str):
    p = kc.json("get", "pod", pod, "-n", ns)
    for c in (p.get("status") or {}).get("conditions") or []:
        if c["type"] == "PodScheduled" and c["status"] == "False":
            return c.get("message")
    return None


def test_missing_and_unbound_immediate_claims_keep_pods_pending(kc, vns):
    def pod(name: str, claim: str) -> dict:
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}],
                         "volumes": [{"name": "data",
                                      "persistentVolumeClaim": {"claimName": claim}}]}}
    # an explicitly empty class: no default class, no provisioner, nothing to bind
    claim = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
             "metadata": {"name": "static-only"},
             "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "",
                      "resources": {"requests": {"storage": "1Gi"}}}}
    kc("apply", "-n", vns, "-f", "-",
       input=to_yaml([claim, pod("no-claim", "missing"), pod("unbound", "static-only")]))
    msg = wait_until(lambda: unschedulable_message(kc, vns, "no-claim"), timeout=30)
    assert msg.endswith('nodes are available: persistentvolumeclaim "missing" not found.'), msg
    msg = wait_until(lambda: unschedulable_message(kc, vns, "unbound"), timeout=30)
    assert msg.endswith("nodes are available: pod has unbound immediate PersistentVolumeClaims."), msg
    out = kc("describe", "pod", "unbound", "-n", vns).stdout
    assert "FailedScheduling" in out, out


@pytest.fixture
def own_node(kc):
    """A simulated node of this test whose kubelet attaches volumes itself (no
    controller-managed-attach-detach annotation), tainted so other pods stay off."""
    name = f"vol-{uuid.uuid4().hex[:6]}"
    kc.apply_yaml("create", {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name,
                     "labels": {MANAGED: "true", "kubernetes.io/hostname": name}},
        "spec": {"taints": [{"key": "e2e.coxswain.dev/volumes", "value": name,
                             "effect": "NoSchedule"}]},
    })
    kc("wait", "--for=condition=Ready", f"node/{name}", "--timeout=60s")
    yield name
    kc("delete", "node", name, "--wait=false", check=False)


def test_claims_follow_pods_to_a_node_and_pin_them_there(kc, vns, own_node):
    kc("apply", "-n", vns, "-f", "-",
       input=to_yaml([statefulset("pin", 1, **own_node_spec(own_node))]))
    placed = wait_until(lambda: running_with_bound_claims(kc, vns, "pin", 1), timeout=90,
                        message="running pod with a bound claim")
    node, pv_name = placed["pin-0"]
    assert node == own_node
    assert affinity_hostname(kc.json("get", "pv", pv_name)) == own_node
    csinode = kc.json("get", "csinode", own_node)
    assert [d["name"] for d in csinode["spec"]["drivers"]] == [DRIVER]
    wait_until(lambda: (kc.json("get", "node", own_node).get("status") or {})
               .get("volumesInUse"), timeout=30, message="volumesInUse reported")
    # a pod of the same claim elsewhere cannot follow it: the volume lives on that node
    other = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "elsewhere"},
             "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}],
                      "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                          "nodeSelectorTerms": [{"matchExpressions": [{
                              "key": "kubernetes.io/hostname", "operator": "NotIn",
                              "values": [own_node]}]}]}}},
                      "volumes": [{"name": "data",
                                   "persistentVolumeClaim": {"claimName": "data-pin-0"}}]}}
    kc("apply", "-n", vns, "-f", "-", input=to_yaml([other]))
    msg = wait_until(lambda: unschedulable_message(kc, vns, "elsewhere"), timeout=30)
    assert "node(s) had volume node affinity conflict" in msg, msg
