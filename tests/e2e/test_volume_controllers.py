"""Volume protection, ephemeral volumes and expansion on `coxswain up`, judged by the
real kubectl: a claim in use stays Terminating until its pod is gone, a Bound volume
until it is released, a pod's generic ephemeral volume gets a claim that is garbage
collected with the pod, and `kubectl patch pvc` may grow a Bound claim only when its
StorageClass allows expansion. The tests bind claims and volumes themselves (through
the status subresource) and place pods on a node with `spec.nodeName`, so that they
depend on no provisioner."""

from __future__ import annotations


import pytest

from conftest import Kubectl, cluster_namespace, wait_until

TIMEOUT = 60


@pytest.fixture
def kc(cluster) -> Kubectl:
    return Kubectl(cluster)


@pytest.fixture
def vns(kc) -> str:
    yield from cluster_namespace(kc, "vol")


def claim(name: str, cls: str = "", size: str = "1Gi") -> dict:
    return {
        "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name},
        "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": cls,
                 "resources": {"requests": {"storage": size}}},
    }


def volume(name: str, cls: str = "", claim_ref: dict | None = None) -> dict:
    spec = {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
            "storageClassName": cls, "persistentVolumeReclaimPolicy": "Retain",
            "csi": {"driver": "csi.e2e.example.com", "volumeHandle": name}}
    if claim_ref:
        spec["claimRef"] = claim_ref
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
            "spec": spec}


def a_node(kc: Kubectl) -> str:
    nodes = kc.json("get", "nodes")["items"]
    return nodes[0]["metadata"]["name"]


def exists(kc: Kubectl, *args) -> bool:
    r = kc("get", *args, "-o", "name", "--ignore-not-found", check=False)
    return bool(r.stdout.strip())


def status_of(kc: Kubectl, kind: str, *args) -> str:
    """The STATUS column of `kubectl get pvc|pv`."""
    out = kc("get", kind, *args, "--no-headers").stdout.split()
    return out[{"pvc": 1, "pv": 4}[kind]]


def bound_claim(kc: Kubectl, ns: str, name: str, cls: str) -> None:
    """A claim and a volume bound to each other, as the binder leaves them."""
    kc.apply_yaml("create", {**claim(name, cls), "spec": {
        **claim(name, cls)["spec"], "volumeName": f"{ns}-{name}"}}, "-n", ns)
    uid = kc.json("get", "pvc", name, "-n", ns)["metadata"]["uid"]
    kc.apply_yaml("create", volume(f"{ns}-{name}", cls,
                                   {"namespace": ns, "name": name, "uid": uid}))
    kc("patch", "pv", f"{ns}-{name}", "--subresource=status", "--type=merge",
       "-p", '{"status":{"phase":"Bound"}}')
    kc("patch", "pvc", name, "-n", ns, "--subresource=status", "--type=merge",
       "-p", '{"status":{"phase":"Bound","capacity":{"storage":"1Gi"},'
             '"accessModes":["ReadWriteOnce"]}}')


def test_claim_in_use_is_terminating_until_its_pod_is_gone(kc, vns):
    kc.apply_yaml("create", claim("data"), "-n", vns)
    pvc = kc.json("get", "pvc", "data", "-n", vns)
    assert pvc["metadata"]["finalizers"] == ["kubernetes.io/pvc-protection"]
    kc.apply_yaml("create", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "user"},
        "spec": {"nodeName": a_node(kc),
                 "containers": [{"name": "c", "image": "busybox"}],
                 "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]},
    }, "-n", vns)
    kc("delete", "pvc", "data", "-n", vns, "--wait=false")
    assert status_of(kc, "pvc", "data", "-n", vns) == "Terminating"
    # an unused claim deleted afterwards goes: the controller has seen both
    kc.apply_yaml("create", claim("unused"), "-n", vns)
    kc("delete", "pvc", "unused", "-n", vns, "--timeout=60s")
    assert status_of(kc, "pvc", "data", "-n", vns) == "Terminating"
    kc("delete", "pod", "user", "-n", vns, "--grace-period=0", "--force")
    kc("wait", "--for=delete", "pvc/data", "-n", vns, f"--timeout={TIMEOUT}s")
    assert not exists(kc, "pvc", "data", "-n", vns)


def test_bound_volume_is_terminating_until_released(kc, vns):
    bound_claim(kc, vns, "data", "")
    name = f"{vns}-data"
    assert kc.json("get", "pv", name)["metadata"]["finalizers"] == ["kubernetes.io/pv-protection"]
    kc("delete", "pv", name, "--wait=false")
    # an Available volume deleted afterwards goes: the controller has seen both
    other = f"{vns}-other"
    kc.apply_yaml("create", volume(other))
    kc("delete", "pv", other, "--timeout=60s")
    assert status_of(kc, "pv", name) == "Terminating"
    # the claim goes, the volume is Released (by the binder, or here) and then goes too
    kc("delete", "pvc", "data", "-n", vns, "--timeout=60s")
    kc("patch", "pv", name, "--subresource=status", "--type=merge",
       "-p", '{"status":{"phase":"Released"}}', check=False)
    kc("wait", "--for=delete", f"pv/{name}", f"--timeout={TIMEOUT}s")


def test_ephemeral_volume_claim_lives_and_dies_with_its_pod(kc, vns):
    kc.apply_yaml("create", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "app"},
        "spec": {"containers": [{"name": "c", "image": "busybox"}],
                 "volumes": [{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {
                     "metadata": {"labels": {"kind": "scratch"}},
                     "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "",
                              "resources": {"requests": {"storage": "1Gi"}}}}}}]},
    }, "-n", vns)
    pod_uid = kc.json("get", "pod", "app", "-n", vns)["metadata"]["uid"]
    pvc = wait_until(
        lambda: exists(kc, "pvc", "app-scratch", "-n", vns)
        and kc.json("get", "pvc", "app-scratch", "-n", vns),
        timeout=TIMEOUT, message="the ephemeral claim")
    [owner] = pvc["metadata"]["ownerReferences"]
    assert owner == {"apiVersion": "v1", "kind": "Pod", "name": "app", "uid": pod_uid,
                     "controller": True, "blockOwnerDeletion": True}
    assert pvc["metadata"]["labels"] == {"kind": "scratch"}
    kc("delete", "pod", "app", "-n", vns, "--grace-period=0", "--force")
    kc("wait", "--for=delete", "pvc/app-scratch", "-n", vns, f"--timeout={TIMEOUT}s")


def test_foreign_claim_blocks_an_ephemeral_volume(kc, vns):
    kc.apply_yaml("create", claim("app-scratch"), "-n", vns)
    kc.apply_yaml("create", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "app"},
        "spec": {"containers": [{"name": "c", "image": "busybox"}],
                 "volumes": [{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {
                     "spec": {"accessModes": ["ReadWriteOnce"],
                              "resources": {"requests": {"storage": "1Gi"}}}}}}]},
    }, "-n", vns)
    want = (f"ephemeral volume scratch: PVC {vns}/app-scratch was not created for pod "
            f"{vns}/app (pod is not owner)")
    wait_until(lambda: want in kc("describe", "pod", "app", "-n", vns).stdout,
               timeout=TIMEOUT, message="the FailedBinding event")


def test_patch_pvc_to_a_larger_size_needs_an_expandable_class(kc, vns):
    grow = '{"spec":{"resources":{"requests":{"storage":"2Gi"}}}}'
    classes = {f"{vns}-expandable": True, f"{vns}-fixed": False}
    for cls, allow in classes.items():
        kc.apply_yaml("create", {
            "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": cls}, "provisioner": "csi.e2e.example.com",
            "allowVolumeExpansion": allow})
    try:
        # a claim that is not Bound cannot grow: its spec is immutable (the strategy's
        # validation answers before the resize admission plugin would)
        kc.apply_yaml("create", claim("pending", f"{vns}-expandable"), "-n", vns)
        r = kc("patch", "pvc", "pending", "-n", vns, "-p", grow, check=False)
        assert r.returncode != 0
        assert ('The PersistentVolumeClaim "pending" is invalid: spec: Forbidden: spec is '
                'immutable after creation except resources.requests and '
                'volumeAttributesClassName for bound claims') in r.stderr, r.stderr
        # nor is a claim without an access mode or a size accepted
        bad = claim("bad")
        bad["spec"] = {"storageClassName": ""}
        r = kc.apply_yaml("create", bad, "-n", vns, check=False)
        assert r.returncode != 0
        assert 'spec.accessModes: Required value: at least 1 access mode is required' in r.stderr
        assert 'spec.resources[storage]: Required value' in r.stderr

        bound_claim(kc, vns, "fixed", f"{vns}-fixed")
        r = kc("patch", "pvc", "fixed", "-n", vns, "-p", grow, check=False)
        assert r.returncode != 0
        assert ('Error from server (Forbidden): persistentvolumeclaims "fixed" is forbidden: '
                'only dynamically provisioned pvc can be resized and the storageclass that '
                'provisions the pvc must support resize') in r.stderr

        bound_claim(kc, vns, "grows", f"{vns}-expandable")
        r = kc("patch", "pvc", "grows", "-n", vns, "-p", grow)
        assert "persistentvolumeclaim/grows patched" in r.stdout
        pvc = kc.json("get", "pvc", "grows", "-n", vns)
        assert pvc["spec"]["resources"]["requests"]["storage"] == "2Gi"
        # the expander hands the growth to the external resizer
        wait_until(lambda: "waiting for an external controller to expand this PVC"
                   in kc("describe", "pvc", "grows", "-n", vns).stdout,
                   timeout=TIMEOUT, message="the ExternalExpanding event")
    finally:
        for cls in classes:
            kc("delete", "storageclass", cls, check=False)
        for name in ("fixed", "grows"):
            kc("delete", "pv", f"{vns}-{name}", "--wait=false", check=False)
