"""`pods/binding`: the scheduler's write, judged with the Python client and kubectl."""

from __future__ import annotations

import json

import pytest

from conftest import api_status, pod


def bind(core_v1, ns, name, node, *, binding_name=None, kind="Node", annotations=None):
    from kubernetes import client

    body = client.V1Binding(
        metadata=client.V1ObjectMeta(name=binding_name or name, annotations=annotations),
        target=client.V1ObjectReference(kind=kind, name=node),
    )
    resp = core_v1.create_namespaced_pod_binding(name, ns, body, _preload_content=False)
    return resp.status, json.loads(resp.data)


def test_binding_assigns_the_node_and_sets_pod_scheduled(core_v1, kubectl, ns):
    from kubernetes.client.rest import ApiException

    kubectl.apply_yaml("create", pod("bound"), "-n", ns)
    status, body = bind(core_v1, ns, "bound", "node-1", annotations={"scheduler": "test"})
    assert status == 201
    assert body["kind"] == "Status" and body["status"] == "Success" and body["code"] == 201
    p = core_v1.read_namespaced_pod("bound", ns)
    assert p.spec.node_name == "node-1"
    assert p.metadata.annotations["scheduler"] == "test"
    scheduled = [c for c in p.status.conditions if c.type == "PodScheduled"]
    assert scheduled and scheduled[0].status == "True"
    # kubectl sees the node
    wide = kubectl("get", "pod", "bound", "-n", ns, "-o", "jsonpath={.spec.nodeName}").stdout
    assert wide == "node-1"
    # a second binding conflicts, naming the node it has
    with pytest.raises(ApiException) as e:
        bind(core_v1, ns, "bound", "node-2")
    st = api_status(e.value)
    assert e.value.status == 409 and st["reason"] == "Conflict"
    assert st["message"] == ('Operation cannot be fulfilled on pods/binding "bound": '
                             'pod bound is already assigned to node "node-1"')


def test_binding_input_errors(core_v1, kubectl, ns):
    from kubernetes.client.rest import ApiException

    kubectl.apply_yaml("create", pod("unbound"), "-n", ns)
    with pytest.raises(ApiException) as e:
        bind(core_v1, ns, "unbound", "node-1", binding_name="other")
    assert e.value.status == 400
    assert api_status(e.value)["message"] == "name in URL does not match name in Binding object"
    with pytest.raises(ApiException) as e:
        bind(core_v1, ns, "unbound", "node-1", kind="Pod")
    st = api_status(e.value)
    assert e.value.status == 422 and st["reason"] == "Invalid"
    assert st["details"]["causes"][0]["field"] == "target.kind"
    with pytest.raises(ApiException) as e:
        bind(core_v1, ns, "missing", "node-1")
    assert e.value.status == 404
    # only create is served on the subresource
    r = kubectl("get", "--raw", f"/api/v1/namespaces/{ns}/pods/unbound/binding", check=False)
    assert r.returncode != 0 and "MethodNotAllowed" in r.stderr, r.stderr
    assert core_v1.read_namespaced_pod("unbound", ns).spec.node_name is None
