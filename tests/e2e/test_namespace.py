"""Namespace deletion: Terminating phase, refusal of new content, /finalize.

There is no namespace controller in this scope: a namespace whose
spec.finalizers holds "kubernetes" stays Terminating until a client clears
spec.finalizers through the /finalize subresource.
"""

import uuid

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from conftest import api_status, configmap, wait_until


@pytest.fixture
def doomed_ns(core_v1):
    name = f"e2e-doomed-{uuid.uuid4().hex[:6]}"
    core_v1.create_namespace(client.V1Namespace(
        metadata=client.V1ObjectMeta(name=name),
        spec=client.V1NamespaceSpec(finalizers=["kubernetes"])))
    yield name
    try:  # best effort cleanup if the test failed half-way
        ns = core_v1.read_namespace(name)
        ns.spec.finalizers = []
        core_v1.replace_namespace_finalize(name, ns)
    except Exception:
        pass


def test_new_namespace_is_active(kubectl, core_v1, doomed_ns):
    got = kubectl.json("get", "namespace", doomed_ns)
    assert got["status"]["phase"] == "Active"
    assert got["spec"]["finalizers"] == ["kubernetes"]
    assert "deletionTimestamp" not in got["metadata"]


def test_delete_namespace_terminating_then_finalize(kubectl, core_v1, doomed_ns):
    ns = doomed_ns
    kubectl.apply_yaml("create", configmap("inside", {"a": "1"}), "-n", ns)

    out = kubectl("delete", "namespace", ns, "--wait=false").stdout.strip()
    assert out == f'namespace "{ns}" deleted', out

    got = kubectl.json("get", "namespace", ns)
    assert got["status"]["phase"] == "Terminating", got["status"]
    assert got["metadata"].get("deletionTimestamp"), got["metadata"]
    assert got["spec"]["finalizers"] == ["kubernetes"]

    # new content is refused while terminating
    cp = kubectl.apply_yaml("create", configmap("late", {"a": "1"}), "-n", ns, check=False)
    assert cp.returncode != 0
    assert "(Forbidden)" in cp.stderr, cp.stderr
    assert "being terminated" in cp.stderr, cp.stderr
    with pytest.raises(ApiException) as ei:
        core_v1.create_namespaced_config_map(
            ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="late2")))
    assert ei.value.status == 403
    assert api_status(ei.value).get("reason") == "Forbidden"

    # clear spec.finalizers via /finalize: the namespace goes away
    obj = core_v1.read_namespace(ns)
    obj.spec.finalizers = []
    res = core_v1.replace_namespace_finalize(ns, obj)
    assert not (res.spec and res.spec.finalizers)

    def gone():
        try:
            core_v1.read_namespace(ns)
            return False
        except ApiException as e:
            assert e.status == 404, e
            return True
    wait_until(gone, timeout=15, message=f"namespace {ns} to disappear after finalize")
    cp = kubectl("get", "namespace", ns, check=False)
    assert cp.returncode != 0 and "NotFound" in cp.stderr, cp.stderr


def test_finalize_requires_matching_name(core_v1, doomed_ns):
    obj = core_v1.read_namespace(doomed_ns)
    obj.metadata.name = doomed_ns + "-other"
    obj.spec.finalizers = []
    with pytest.raises(ApiException) as ei:
        core_v1.replace_namespace_finalize(doomed_ns, obj)
    assert ei.value.status in (400, 422), ei.value
    assert core_v1.read_namespace(doomed_ns).spec.finalizers == ["kubernetes"]
