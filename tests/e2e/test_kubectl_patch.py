"""kubectl patch (strategic / merge / json), scale and the status subresource."""

import json

from conftest import configmap, deployment


def two_container_deployment(name):
    return deployment(name, replicas=2, containers=[
        {"name": "a", "image": "alpha:1", "env": [{"name": "A", "value": "1"}]},
        {"name": "b", "image": "beta:1"},
    ])


def containers(kubectl, ns, name):
    dep = kubectl.json("get", "deployment", name, "-n", ns)
    return {c["name"]: c for c in dep["spec"]["template"]["spec"]["containers"]}, dep


def test_patch_strategic_merges_containers_by_name(kubectl, ns):
    kubectl.apply_yaml("create", two_container_deployment("smp"), "-n", ns)
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "b", "image": "beta:2"}]}}}}
    out = kubectl("patch", "deployment", "smp", "-n", ns, "--type=strategic",
                  "-p", json.dumps(patch)).stdout.strip()
    assert out == "deployment.apps/smp patched", out
    cs, dep = containers(kubectl, ns, "smp")
    assert list(cs) == ["a", "b"], "strategic merge must merge the list by name"
    assert cs["a"]["image"] == "alpha:1" and cs["a"]["env"] == [{"name": "A", "value": "1"}]
    assert cs["b"]["image"] == "beta:2"
    assert dep["metadata"]["generation"] == 2

    # default patch type is strategic; $patch: delete removes one list element
    kubectl("patch", "deployment", "smp", "-n", ns, "-p", json.dumps(
        {"spec": {"template": {"spec": {"containers": [{"name": "a", "$patch": "delete"}]}}}}))
    cs, _ = containers(kubectl, ns, "smp")
    assert list(cs) == ["b"]

    # merging env by name inside a merged container
    kubectl("patch", "deployment", "smp", "-n", ns, "-p", json.dumps(
        {"spec": {"template": {"spec": {"containers": [
            {"name": "b", "env": [{"name": "X", "value": "x"}]}]}}}}))
    kubectl("patch", "deployment", "smp", "-n", ns, "-p", json.dumps(
        {"spec": {"template": {"spec": {"containers": [
            {"name": "b", "env": [{"name": "Y", "value": "y"}]}]}}}}))
    cs, _ = containers(kubectl, ns, "smp")
    assert sorted(e["name"] for e in cs["b"]["env"]) == ["X", "Y"]
    assert cs["b"]["image"] == "beta:2"


def test_patch_merge_replaces_lists_and_null_deletes(kubectl, ns):
    kubectl.apply_yaml("create", two_container_deployment("jmp"), "-n", ns)
    kubectl("label", "deployment", "jmp", "extra=yes", "-n", ns)
    patch = {"metadata": {"labels": {"extra": None}},
             "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "gamma:1"}]}}}}
    out = kubectl("patch", "deployment", "jmp", "-n", ns, "--type=merge",
                  "-p", json.dumps(patch)).stdout.strip()
    assert out == "deployment.apps/jmp patched", out
    cs, dep = containers(kubectl, ns, "jmp")
    assert list(cs) == ["c"], "JSON merge patch replaces lists wholesale"
    assert cs["c"]["image"] == "gamma:1"
    assert dep["metadata"]["labels"] == {"app": "jmp"}

    # a merge patch that makes the object invalid is rejected, nothing changes
    cp = kubectl("patch", "deployment", "jmp", "-n", ns, "--type=merge",
                 "-p", '{"spec":{"replicas":-3}}', check=False)
    assert cp.returncode != 0 and "is invalid" in cp.stderr, cp.stderr
    assert kubectl.json("get", "deployment", "jmp", "-n", ns)["spec"]["replicas"] == 2


def test_patch_json(kubectl, ns):
    kubectl.apply_yaml("create", two_container_deployment("jsp"), "-n", ns)
    ops = [{"op": "replace", "path": "/spec/replicas", "value": 4},
           {"op": "add", "path": "/metadata/labels/added", "value": "true"},
           {"op": "remove", "path": "/spec/template/spec/containers/0/env"}]
    out = kubectl("patch", "deployment", "jsp", "-n", ns, "--type=json",
                  "-p", json.dumps(ops)).stdout.strip()
    assert out == "deployment.apps/jsp patched", out
    cs, dep = containers(kubectl, ns, "jsp")
    assert dep["spec"]["replicas"] == 4
    assert dep["metadata"]["labels"] == {"app": "jsp", "added": "true"}
    assert "env" not in cs["a"]
    rv = dep["metadata"]["resourceVersion"]

    # a failing `test` op aborts the whole patch
    ops = [{"op": "test", "path": "/spec/replicas", "value": 99},
           {"op": "replace", "path": "/spec/replicas", "value": 7}]
    cp = kubectl("patch", "deployment", "jsp", "-n", ns, "--type=json",
                 "-p", json.dumps(ops), check=False)
    assert cp.returncode != 0, cp.stdout
    assert cp.stderr.strip(), "an error message is expected"
    dep = kubectl.json("get", "deployment", "jsp", "-n", ns)
    assert dep["spec"]["replicas"] == 4
    assert dep["metadata"]["resourceVersion"] == rv

    # a passing test op lets the patch through
    ops[0]["value"] = 4
    kubectl("patch", "deployment", "jsp", "-n", ns, "--type=json", "-p", json.dumps(ops))
    assert kubectl.json("get", "deployment", "jsp", "-n", ns)["spec"]["replicas"] == 7

    # removing a path that does not exist is an error
    cp = kubectl("patch", "deployment", "jsp", "-n", ns, "--type=json",
                 "-p", '[{"op":"remove","path":"/metadata/labels/nope"}]', check=False)
    assert cp.returncode != 0


def test_patch_not_found(kubectl, ns):
    cp = kubectl("patch", "configmap", "missing", "-n", ns, "--type=merge",
                 "-p", '{"data":{"a":"b"}}', check=False)
    assert cp.returncode != 0
    assert "NotFound" in cp.stderr and '"missing" not found' in cp.stderr, cp.stderr


def test_scale_uses_scale_subresource(kubectl, ns):
    kubectl.apply_yaml("create", deployment("scaled", replicas=1), "-n", ns)
    out = kubectl("scale", "deployment", "scaled", "--replicas=5", "-n", ns).stdout.strip()
    assert out == "deployment.apps/scaled scaled", out
    assert kubectl.json("get", "deployment", "scaled", "-n", ns)["spec"]["replicas"] == 5

    scale = json.loads(kubectl("get", "--raw",
                               f"/apis/apps/v1/namespaces/{ns}/deployments/scaled/scale").stdout)
    assert scale["kind"] == "Scale"
    assert scale["apiVersion"] == "autoscaling/v1"
    assert scale["metadata"]["name"] == "scaled"
    assert scale["spec"]["replicas"] == 5
    assert scale["status"]["selector"] == "app=scaled"

    # --current-replicas precondition that does not hold: refused, nothing changes
    cp = kubectl("scale", "deployment", "scaled", "--current-replicas=2", "--replicas=6",
                 "-n", ns, check=False)
    assert cp.returncode != 0
    assert kubectl.json("get", "deployment", "scaled", "-n", ns)["spec"]["replicas"] == 5
    kubectl("scale", "deployment", "scaled", "--current-replicas=5", "--replicas=0", "-n", ns)
    assert kubectl.json("get", "deployment", "scaled", "-n", ns)["spec"]["replicas"] == 0


def test_patch_status_subresource(kubectl, ns):
    kubectl.apply_yaml("create", deployment("stat", replicas=2), "-n", ns)
    before = kubectl.json("get", "deployment", "stat", "-n", ns)
    status = {"status": {
        "observedGeneration": 1, "replicas": 2, "readyReplicas": 1,
        "availableReplicas": 1, "updatedReplicas": 2,
        "conditions": [{"type": "Available", "status": "True", "reason": "E2E",
                        "message": "set by e2e",
                        "lastUpdateTime": "2024-01-01T00:00:00Z",
                        "lastTransitionTime": "2024-01-01T00:00:00Z"}]}}
    out = kubectl("patch", "deployment", "stat", "-n", ns, "--subresource=status",
                  "--type=merge", "-p", json.dumps(status)).stdout.strip()
    assert out == "deployment.apps/stat patched", out
    after = kubectl.json("get", "deployment", "stat", "-n", ns)
    assert after["status"]["readyReplicas"] == 1
    assert after["status"]["availableReplicas"] == 1
    assert after["status"]["conditions"][0]["type"] == "Available"
    assert after["spec"] == before["spec"]
    assert after["metadata"]["generation"] == before["metadata"]["generation"], \
        "a status write must not bump metadata.generation"
    assert int(after["metadata"]["resourceVersion"]) > int(before["metadata"]["resourceVersion"])

    # spec changes sent to the status subresource are ignored
    kubectl("patch", "deployment", "stat", "-n", ns, "--subresource=status", "--type=merge",
            "-p", '{"spec":{"replicas":9},"status":{"readyReplicas":2}}')
    got = kubectl.json("get", "deployment", "stat", "-n", ns)
    assert got["spec"]["replicas"] == 2
    assert got["status"]["readyReplicas"] == 2

    # status changes sent to the main resource are ignored
    kubectl("patch", "deployment", "stat", "-n", ns, "--type=merge",
            "-p", '{"status":{"readyReplicas":0,"replicas":0}}')
    got = kubectl.json("get", "deployment", "stat", "-n", ns)
    assert got["status"]["readyReplicas"] == 2
    assert got["status"]["replicas"] == 2

    # ... also through a full update (kubectl replace)
    obj = kubectl.json("get", "deployment", "stat", "-n", ns)
    obj["status"]["readyReplicas"] = 0
    obj["spec"]["replicas"] = 3
    kubectl("replace", "-f", "-", "-n", ns, input=json.dumps(obj))
    got = kubectl.json("get", "deployment", "stat", "-n", ns)
    assert got["spec"]["replicas"] == 3
    assert got["status"]["readyReplicas"] == 2

    # --subresource=status through get
    sub = kubectl.json("get", "deployment", "stat", "-n", ns, "--subresource=status")
    assert sub["status"]["readyReplicas"] == 2


# What is stored and returned is kube-apiserver's decode -> protobuf storage -> JSON
# round trip of the object: omitempty drops empty lists, maps and zero scalars (and
# protobuf cannot tell an empty list from none), pointers keep their zeros, structs are
# always written.

def test_emptied_metadata_collections_are_dropped(kubectl, ns):
    owner = kubectl.json("create", "configmap", "owner", "-n", ns)
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner["metadata"]["uid"]}
    kubectl.apply_yaml("create", configmap("owned", labels={"app": "x"}, annotations={"a": "1"},
                                           ownerReferences=[ref], finalizers=["example.com/hold"]),
                       "-n", ns)
    kubectl("patch", "configmap", "owned", "-n", ns, "--type=merge", "-p",
            json.dumps({"metadata": {"ownerReferences": [], "finalizers": []}}))
    kubectl("label", "configmap", "owned", "app-", "-n", ns)
    kubectl("annotate", "configmap", "owned", "a-", "-n", ns)
    meta = kubectl.json("get", "configmap", "owned", "-n", ns)["metadata"]
    for gone in ("ownerReferences", "finalizers", "labels", "annotations"):
        assert gone not in meta, (gone, meta)

    # a patch that only sets what is omitted anyway changes nothing: no new revision
    rv = meta["resourceVersion"]
    kubectl("patch", "configmap", "owned", "-n", ns, "--type=merge", "-p",
            json.dumps({"metadata": {"labels": {}, "finalizers": []}, "data": {}}))
    assert kubectl.json("get", "configmap", "owned", "-n", ns)["metadata"]["resourceVersion"] == rv


def test_zero_values_as_go_writes_them(kubectl, ns):
    dep = deployment("zero", replicas=0, containers=[
        {"name": "c", "image": "nginx:1.27", "command": [], "env": [{"name": "E", "value": ""}]}])
    dep["spec"]["paused"] = False
    dep["spec"]["template"]["spec"].update({"hostNetwork": False, "volumes": [], "nodeSelector": {}})
    kubectl.apply_yaml("create", dep, "-n", ns)
    got = kubectl.json("get", "deployment", "zero", "-n", ns)
    assert got["spec"]["replicas"] == 0, "a pointer keeps its zero"
    assert "paused" not in got["spec"]
    pod_spec = got["spec"]["template"]["spec"]
    for gone in ("hostNetwork", "volumes", "nodeSelector"):
        assert gone not in pod_spec, (gone, pod_spec)
    c = pod_spec["containers"][0]
    assert "command" not in c and c["env"] == [{"name": "E"}] and c["resources"] == {}

    # a list without omitempty: null once stored
    kubectl.apply_yaml("create", {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                                  "metadata": {"name": "none"}, "rules": []}, "-n", ns)
    role = kubectl.json("get", "role", "none", "-n", ns)
    assert "rules" in role and role["rules"] is None, role


def test_python_client_reads_emptied_finalizers_as_none(core_v1, ns):
    from kubernetes import client

    core_v1.create_namespaced_config_map(ns, client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name="fin", finalizers=["example.com/hold"])))
    # a JSON patch (the client's choice for a list body) that empties the list
    core_v1.patch_namespaced_config_map(
        "fin", ns, [{"op": "replace", "path": "/metadata/finalizers", "value": []}])
    raw = json.loads(core_v1.read_namespaced_config_map("fin", ns, _preload_content=False).data)
    assert "finalizers" not in raw["metadata"], raw["metadata"]
    assert core_v1.read_namespaced_config_map("fin", ns).metadata.finalizers is None


def test_generation_moves_as_each_kind_strategy_says(kubectl, ns):
    def generation(kind, name):
        return kubectl.json("get", kind, name, "-n", ns)["metadata"].get("generation")

    # a Deployment counts spec and annotation changes, not labels or status
    kubectl.apply_yaml("create", deployment("gen"), "-n", ns)
    assert generation("deployment", "gen") == 1
    kubectl("label", "deployment", "gen", "tier=web", "-n", ns)
    assert generation("deployment", "gen") == 1
    kubectl("annotate", "deployment", "gen", "note=x", "-n", ns)
    assert generation("deployment", "gen") == 2
    kubectl("scale", "deployment", "gen", "--replicas=3", "-n", ns)
    assert generation("deployment", "gen") == 3

    # a PodTemplate tracks its template
    template = {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "tpl"},
                "template": {"metadata": {"labels": {"app": "tpl"}},
                             "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}}}
    kubectl.apply_yaml("create", template, "-n", ns)
    assert generation("podtemplate", "tpl") == 1
    kubectl("label", "podtemplate", "tpl", "x=y", "-n", ns)
    assert generation("podtemplate", "tpl") == 1
    kubectl("patch", "podtemplate", "tpl", "-n", ns, "--type=merge", "-p",
            json.dumps({"template": {"spec": {"containers": [{"name": "c", "image": "nginx:1.28"}]}}}))
    assert generation("podtemplate", "tpl") == 2

    # a deletion held by a finalizer bumps it once
    kubectl("patch", "deployment", "gen", "-n", ns, "--type=merge", "-p",
            json.dumps({"metadata": {"finalizers": ["example.com/hold"]}}))
    kubectl("delete", "deployment", "gen", "-n", ns, "--wait=false")
    held = kubectl.json("get", "deployment", "gen", "-n", ns)["metadata"]
    assert held.get("deletionTimestamp") and held["generation"] == 4
    kubectl("patch", "deployment", "gen", "-n", ns, "--type=merge", "-p",
            json.dumps({"metadata": {"finalizers": None}}))
