"""CustomResourceDefinitions and server-side apply, judged by the real kubectl and the
Python client: CRDs are established and served with their printer columns, short names
and categories; objects are validated, defaulted and pruned; `kubectl apply
--server-side` records field managers, reports conflicts, takes ownership with
--force-conflicts and removes fields a manager stops applying."""

import json
import uuid

import pytest

from conftest import api_status, to_yaml, wait_until


def crd(group: str, plural: str = "widgets", kind: str = "Widget", scope: str = "Namespaced") -> dict:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "scope": scope,
            "names": {"plural": plural, "singular": kind.lower(), "kind": kind,
                      "shortNames": [kind.lower()[:2] + "x"], "categories": ["all"]},
            "versions": [{
                "name": "v1", "served": True, "storage": True,
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "spec": {"type": "object", "required": ["size"], "properties": {
                            "size": {"type": "integer", "minimum": 1, "maximum": 10},
                            "color": {"type": "string", "enum": ["red", "blue"], "default": "red"},
                            "tags": {"type": "array", "items": {"type": "string"},
                                     "x-kubernetes-list-type": "set"},
                            "ports": {"type": "array", "x-kubernetes-list-type": "map",
                                      "x-kubernetes-list-map-keys": ["name"],
                                      "items": {"type": "object", "required": ["name"], "properties": {
                                          "name": {"type": "string"}, "port": {"type": "integer"}}}},
                        }},
                        "status": {"type": "object", "properties": {"phase": {"type": "string"}}},
                    },
                }},
                "subresources": {"status": {}},
                "additionalPrinterColumns": [
                    {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
                    {"name": "Color", "type": "string", "jsonPath": ".spec.color"},
                    {"name": "Phase", "type": "string", "jsonPath": ".status.phase", "priority": 1},
                    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
                ],
            }],
        },
    }


def widget(group: str, name: str, spec: dict) -> dict:
    return {"apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": name}, "spec": spec}


@pytest.fixture
def group():
    return f"e2e{uuid.uuid4().hex[:8]}.example.com"


def install(kubectl, group):
    kubectl.apply_yaml("apply", crd(group))
    kubectl("wait", "--for=condition=established", "--timeout=10s", f"crd/widgets.{group}")


def test_crd_is_served_with_printer_columns(kubectl, ns, group):
    install(kubectl, group)
    c = kubectl.json("get", "crd", f"widgets.{group}")
    conds = {x["type"]: x for x in c["status"]["conditions"]}
    assert conds["NamesAccepted"]["reason"] == "NoConflicts"
    assert conds["Established"]["status"] == "True"
    # kubectl validates strictly by default: an unknown field is refused ...
    r = kubectl.apply_yaml("apply", widget(group, "small", {"size": 2, "bogus": 1}), "-n", ns, check=False)
    assert r.returncode != 0 and 'unknown field "spec.bogus"' in r.stderr, r.stderr
    # ... and pruned without validation
    kubectl.apply_yaml("apply", widget(group, "small", {"size": 2, "bogus": 1}), "-n", ns, "--validate=false")
    got = kubectl.json("get", f"widgets.{group}", "small", "-n", ns)
    assert got["spec"] == {"size": 2, "color": "red"}, "defaulted and pruned"
    out = kubectl("get", f"widgets.{group}", "-n", ns).stdout.splitlines()
    assert out[0].split() == ["NAME", "SIZE", "COLOR", "AGE"], out
    assert out[1].split()[:3] == ["small", "2", "red"], out
    wide = kubectl("get", f"widgets.{group}", "-n", ns, "-o", "wide").stdout.splitlines()
    assert wide[0].split() == ["NAME", "SIZE", "COLOR", "PHASE", "AGE"], wide
    # short name and category
    assert "small" in kubectl("get", "wix", "-n", ns).stdout
    assert f"widget.{group}/small" in kubectl("get", "all", "-n", ns, "-o", "name").stdout
    # client-side apply of a change: kubectl picks a merge patch from the OpenAPI v3
    # document (custom resources take no strategic merge patch); kubectl diff previews it
    changed = widget(group, "small", {"size": 3})
    d = kubectl.apply_yaml("diff", changed, "-n", ns, check=False)
    assert d.returncode == 1 and "+  size: 3" in d.stdout, (d.stdout, d.stderr)
    kubectl.apply_yaml("apply", changed, "-n", ns)
    assert kubectl.json("get", f"widgets.{group}", "small", "-n", ns)["spec"]["size"] == 3
    # kubectl explain reads the published OpenAPI v3 schema
    explain = kubectl("explain", f"widgets.{group}.spec.size").stdout
    assert "integer" in explain


def test_crd_validation_rejects_with_field_causes(kubectl, ns, group, api_client):
    install(kubectl, group)
    r = kubectl.apply_yaml("create", widget(group, "big", {"size": 50, "color": "green"}), "-n", ns,
                           check=False)
    assert r.returncode != 0
    assert "spec.size: Invalid value: 50: spec.size in body should be less than or equal to 10" in r.stderr, r.stderr
    assert 'spec.color: Unsupported value: "green": supported values: "red", "blue"' in r.stderr, r.stderr
    from kubernetes import client
    objs = client.CustomObjectsApi(api_client)
    with pytest.raises(client.ApiException) as e:
        objs.create_namespaced_custom_object(group, "v1", ns, "widgets", widget(group, "x", {}))
    st = api_status(e.value)
    assert e.value.status == 422 and st["reason"] == "Invalid"
    assert {"reason": "FieldValueRequired", "message": "Required value", "field": "spec.size"} in st["details"]["causes"]
    created = objs.create_namespaced_custom_object(group, "v1", ns, "widgets", widget(group, "ok", {"size": 1}))
    assert created["spec"]["color"] == "red"
    listed = objs.list_namespaced_custom_object(group, "v1", ns, "widgets")
    assert [i["metadata"]["name"] for i in listed["items"]] == ["ok"]
    objs.patch_namespaced_custom_object_status(group, "v1", ns, "widgets", "ok", {"status": {"phase": "Ready"}})
    assert objs.get_namespaced_custom_object(group, "v1", ns, "widgets", "ok")["status"]["phase"] == "Ready"


def get_managed(kubectl, *args) -> dict:
    return kubectl.json("get", *args, "--show-managed-fields")


def managers(obj: dict) -> dict:
    return {(m["manager"], m["operation"]): m for m in obj["metadata"].get("managedFields", [])}


def test_server_side_apply_builtin_conflicts_force_and_removal(kubectl, ns):
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ssa"},
          "data": {"a": "1", "b": "2"}}
    out = kubectl.apply_yaml("apply", cm, "--server-side", "-n", ns).stdout
    assert "configmap/ssa serverside-applied" in out, out
    got = get_managed(kubectl, "cm", "ssa", "-n", ns)
    m = managers(got)[("kubectl", "Apply")]
    assert m["fieldsV1"] == {"f:data": {"f:a": {}, "f:b": {}}}, m
    # another manager changing an owned field conflicts
    other = {**cm, "data": {"a": "changed"}}
    r = kubectl.apply_yaml("apply", other, "--server-side", "--field-manager=other", "-n", ns, check=False)
    assert r.returncode != 0
    assert 'Apply failed with 1 conflict: conflict with "kubectl": .data.a' in r.stderr, r.stderr
    # the same value is shared without conflict
    kubectl.apply_yaml("apply", {**cm, "data": {"b": "2"}}, "--server-side", "--field-manager=sharer", "-n", ns)
    # --force-conflicts takes ownership
    kubectl.apply_yaml("apply", other, "--server-side", "--field-manager=other", "--force-conflicts", "-n", ns)
    got = get_managed(kubectl, "cm", "ssa", "-n", ns)
    assert got["data"]["a"] == "changed"
    ms = managers(got)
    assert ms[("other", "Apply")]["fieldsV1"] == {"f:data": {"f:a": {}}}
    assert "f:a" not in ms[("kubectl", "Apply")]["fieldsV1"]["f:data"]
    # kubectl stops applying b: it stays (sharer owns it); then sharer stops too: gone
    kubectl.apply_yaml("apply", {**cm, "data": {}}, "--server-side", "-n", ns)
    assert get_managed(kubectl, "cm", "ssa", "-n", ns)["data"] == {"a": "changed", "b": "2"}
    kubectl.apply_yaml("apply", {**cm, "data": {"c": "3"}}, "--server-side", "--field-manager=sharer", "-n", ns)
    assert get_managed(kubectl, "cm", "ssa", "-n", ns)["data"] == {"a": "changed", "c": "3"}
    # an update by another client is recorded as an Update manager
    kubectl("label", "cm", "ssa", "x=y", "-n", ns)
    assert ("kubectl-label", "Update") in managers(get_managed(kubectl, "cm", "ssa", "-n", ns))


def test_server_side_apply_deployment_and_removal(kubectl, ns):
    dep = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "labels": {"app": "web"}},
           "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                    "template": {"metadata": {"labels": {"app": "web"}},
                                 "spec": {"containers": [
                                     {"name": "web", "image": "nginx:1", "env": [{"name": "A", "value": "1"}]},
                                     {"name": "side", "image": "busybox"}]}}}}
    kubectl.apply_yaml("apply", dep, "--server-side", "-n", ns)
    kubectl("scale", "deployment", "web", "--replicas=3", "-n", ns)
    # replicas now belong to the scale update: a re-apply of replicas: 2 conflicts
    r = kubectl.apply_yaml("apply", dep, "--server-side", "-n", ns, check=False)
    assert r.returncode != 0 and ".spec.replicas" in r.stderr, r.stderr
    # drop the sidecar and the env from the manifest (and replicas): they are removed
    dep2 = json.loads(json.dumps(dep))
    del dep2["spec"]["replicas"]
    dep2["spec"]["template"]["spec"]["containers"] = [{"name": "web", "image": "nginx:2"}]
    kubectl.apply_yaml("apply", dep2, "--server-side", "-n", ns)
    got = kubectl.json("get", "deployment", "web", "-n", ns)
    cs = got["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in cs] == ["web"], cs
    assert cs[0]["image"] == "nginx:2" and "env" not in cs[0], cs
    assert got["spec"]["replicas"] == 3


def test_server_side_apply_custom_resources(kubectl, ns, group):
    install(kubectl, group)
    w = widget(group, "applied", {"size": 3, "tags": ["a", "b"], "ports": [{"name": "http", "port": 80}]})
    kubectl.apply_yaml("apply", w, "--server-side", "-n", ns)
    other = widget(group, "applied", {"size": 3, "tags": ["c"], "ports": [{"name": "metrics", "port": 9090}]})
    kubectl.apply_yaml("apply", other, "--server-side", "--field-manager=other", "-n", ns)
    got = kubectl.json("get", f"widgets.{group}", "applied", "-n", ns)
    assert got["spec"]["tags"] == ["a", "b", "c"], "sets merge"
    assert [p["name"] for p in got["spec"]["ports"]] == ["http", "metrics"], "list-maps merge by key"
    r = kubectl.apply_yaml("apply", widget(group, "applied", {"size": 4}), "--server-side",
                           "--field-manager=other", "-n", ns, check=False)
    assert r.returncode != 0 and ".spec.size" in r.stderr, r.stderr
    kubectl.apply_yaml("apply", widget(group, "applied", {"size": 3, "ports": [{"name": "http", "port": 80}]}),
                       "--server-side", "-n", ns)
    got = kubectl.json("get", f"widgets.{group}", "applied", "-n", ns)
    assert got["spec"]["tags"] == ["c"], got["spec"]
    assert [p["name"] for p in got["spec"]["ports"]] == ["http", "metrics"]
    # custom resources are kept untyped: their list items keep kind and apiVersion
    raw = json.loads(kubectl("get", "--raw", f"/apis/{group}/v1/namespaces/{ns}/widgets").stdout)
    assert [(i["kind"], i["apiVersion"]) for i in raw["items"]] == [("Widget", f"{group}/v1")]


def test_deleting_a_crd_removes_its_objects(kubectl, ns, group):
    install(kubectl, group)
    kubectl.apply_yaml("apply", widget(group, "doomed", {"size": 1}), "-n", ns)
    kubectl("delete", "crd", f"widgets.{group}", "--timeout=20s")
    r = kubectl("get", "--raw", f"/apis/{group}/v1/namespaces/{ns}/widgets", check=False)
    assert r.returncode != 0
    r = kubectl("get", "crd", f"widgets.{group}", check=False)
    assert r.returncode != 0 and "NotFound" in r.stderr


def test_server_side_apply_takes_over_from_client_side_apply(kubectl, ns):
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "upgrade"}, "data": {"a": "1", "b": "2"}}
    kubectl.apply_yaml("apply", cm, "-n", ns)
    # the documented upgrade path: the same manager name, changed values, no conflict
    changed = {**cm, "data": {"a": "10", "b": "2"}}
    kubectl.apply_yaml("apply", changed, "--server-side", "-n", ns)
    got = get_managed(kubectl, "cm", "upgrade", "-n", ns)
    assert got["data"] == {"a": "10", "b": "2"}
    assert ("kubectl", "Apply") in managers(got)
    last = json.loads(got["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"])
    assert last["data"] == {"a": "10", "b": "2"}, "the client-side annotation follows"
    # another manager still conflicts
    r = kubectl.apply_yaml("apply", {**cm, "data": {"a": "x"}}, "--server-side", "--field-manager=other",
                           "-n", ns, check=False)
    assert r.returncode != 0 and ".data.a" in r.stderr, r.stderr
    # and client-side apply keeps working from the updated annotation: b is removed
    kubectl.apply_yaml("apply", {**cm, "data": {"a": "10"}}, "-n", ns)
    assert kubectl.json("get", "cm", "upgrade", "-n", ns)["data"] == {"a": "10"}
