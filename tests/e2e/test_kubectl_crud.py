import pytest
"""Create / apply / get / label / annotate / delete / edit through kubectl."""

import json
import re
import stat
import sys

import yaml

from conftest import configmap, deployment, wait_until

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def service(name, app):
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name},
        "spec": {"selector": {"app": app},
                 "ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}]},
    }


def assert_not_found(kubectl, ns, *what):
    cp = kubectl("get", *what, "-n", ns, check=False)
    assert cp.returncode != 0, cp.stdout
    assert "NotFound" in cp.stderr, cp.stderr
    assert f'"{what[-1]}" not found' in cp.stderr, cp.stderr


# --------------------------------------------------------------------------- create

def test_create_multi_document_manifest(kubectl, ns):
    docs = [deployment("web", replicas=2), configmap("web-config", {"k": "v"}),
            service("web", "web")]
    out = kubectl.apply_yaml("create", docs, "-n", ns).stdout.splitlines()
    assert out == ["deployment.apps/web created", "configmap/web-config created",
                   "service/web created"], out
    names = kubectl("get", "deployments,configmaps,services", "-n", ns, "-o", "name").stdout.split()
    assert {"deployment.apps/web", "configmap/web-config", "service/web"} <= set(names), names

    dep = kubectl.json("get", "deployment", "web", "-n", ns)
    assert dep["spec"]["replicas"] == 2
    assert dep["metadata"]["namespace"] == ns
    assert dep["metadata"]["uid"] and dep["metadata"]["resourceVersion"]
    assert dep["metadata"]["creationTimestamp"]
    assert dep["metadata"]["generation"] == 1
    svc = kubectl.json("get", "service", "web", "-n", ns)
    assert svc["spec"]["ports"][0]["port"] == 80
    assert svc["spec"]["ports"][0]["targetPort"] == 8080
    assert svc["spec"]["selector"] == {"app": "web"}
    cm = kubectl.json("get", "configmap", "web-config", "-n", ns)
    assert cm["data"] == {"k": "v"}


def test_create_generate_name(kubectl, ns):
    obj = {"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"generateName": "gen-"}, "data": {"a": "b"}}
    first = kubectl.apply_yaml("create", obj, "-n", ns, "-o", "name").stdout.strip()
    second = kubectl.apply_yaml("create", obj, "-n", ns, "-o", "name").stdout.strip()
    for name in (first, second):
        assert re.fullmatch(r"configmap/gen-[a-z0-9]{3,}", name), name
    assert first != second
    got = kubectl.json("get", first, "-n", ns)
    assert got["metadata"]["generateName"] == "gen-"
    assert got["data"] == {"a": "b"}


def test_create_existing_object_is_already_exists(kubectl, ns):
    kubectl.apply_yaml("create", configmap("dup", {"a": "1"}), "-n", ns)
    cp = kubectl.apply_yaml("create", configmap("dup", {"a": "2"}), "-n", ns, check=False)
    assert cp.returncode != 0
    assert "(AlreadyExists)" in cp.stderr, cp.stderr
    assert 'configmaps "dup" already exists' in cp.stderr, cp.stderr
    assert kubectl.json("get", "cm", "dup", "-n", ns)["data"] == {"a": "1"}


def test_dry_run_server_does_not_persist(kubectl, ns):
    out = kubectl.apply_yaml("create", configmap("dry", {"a": "1"}), "-n", ns,
                             "--dry-run=server").stdout
    assert out.strip() == "configmap/dry created (server dry run)", out
    obj = json.loads(kubectl.apply_yaml("create", configmap("dry", {"a": "1"}), "-n", ns,
                                        "--dry-run=server", "-o", "json").stdout)
    assert obj["metadata"]["name"] == "dry" and obj["data"] == {"a": "1"}
    assert_not_found(kubectl, ns, "configmap", "dry")
    # validation still runs in a server dry run
    cp = kubectl.apply_yaml("create", deployment("dry-bad", replicas=-1), "-n", ns,
                            "--dry-run=server", check=False)
    assert cp.returncode != 0 and "is invalid" in cp.stderr, cp.stderr


def test_invalid_objects_are_rejected(kubectl, ns):
    cp = kubectl.apply_yaml("create", deployment("neg", replicas=-1), "-n", ns, check=False)
    assert cp.returncode != 0
    # kubectl renders a 422 Status with details {kind, name, causes} like this
    assert 'The Deployment "neg" is invalid' in cp.stderr, cp.stderr
    assert "spec.replicas" in cp.stderr, cp.stderr
    assert_not_found(kubectl, ns, "deployment", "neg")

    cp = kubectl.apply_yaml("create", configmap("Bad_Name", {"a": "1"}), "-n", ns, check=False)
    assert cp.returncode != 0
    assert 'The ConfigMap "Bad_Name" is invalid' in cp.stderr, cp.stderr
    assert "metadata.name" in cp.stderr, cp.stderr


def test_unknown_field_strict_validation(kubectl, ns):
    bad = deployment("strict")
    bad["spec"]["replicaz"] = 3
    cp = kubectl.apply_yaml("create", bad, "-n", ns, check=False)
    assert cp.returncode != 0
    assert "unknown field" in cp.stderr and "replicaz" in cp.stderr, cp.stderr
    assert_not_found(kubectl, ns, "deployment", "strict")
    # --validate=false asks the server to ignore (drop) unknown fields
    kubectl.apply_yaml("create", bad, "-n", ns, "--validate=false")
    got = kubectl.json("get", "deployment", "strict", "-n", ns)
    assert "replicaz" not in got["spec"]
    assert got["spec"]["replicas"] == 1


# --------------------------------------------------------------------------- apply

def test_client_side_apply_and_reapply(kubectl, ns):
    v1 = deployment("applied", replicas=1,
                    labels={"app": "applied", "tier": "web"},
                    containers=[{"name": "main", "image": "nginx:1.26",
                                 "env": [{"name": "MODE", "value": "one"}]}])
    v1["metadata"]["annotations"] = {"e2e/note": "first"}
    out = kubectl.apply_yaml("apply", v1, "-n", ns).stdout.strip()
    assert out == "deployment.apps/applied created", out
    got = kubectl.json("get", "deployment", "applied", "-n", ns)
    last = json.loads(got["metadata"]["annotations"][LAST_APPLIED])
    assert last["spec"]["replicas"] == 1
    assert last["metadata"]["labels"] == {"app": "applied", "tier": "web"}

    v2 = deployment("applied", replicas=3, labels={"app": "applied"},
                    containers=[{"name": "main", "image": "nginx:1.27"}])
    out = kubectl.apply_yaml("apply", v2, "-n", ns).stdout.strip()
    assert out == "deployment.apps/applied configured", out
    got = kubectl.json("get", "deployment", "applied", "-n", ns)
    assert got["spec"]["replicas"] == 3
    assert got["metadata"]["labels"] == {"app": "applied"}, "label removed from manifest must go"
    assert "e2e/note" not in got["metadata"].get("annotations", {}), "annotation removed from manifest must go"
    containers = got["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in containers] == ["main"]
    assert containers[0]["image"] == "nginx:1.27"
    assert "env" not in containers[0], "env removed from manifest must go"
    last = json.loads(got["metadata"]["annotations"][LAST_APPLIED])
    assert last["spec"]["replicas"] == 3
    assert got["metadata"]["generation"] == 2

    out = kubectl.apply_yaml("apply", v2, "-n", ns).stdout.strip()
    assert out == "deployment.apps/applied unchanged", out
    assert kubectl.json("get", "deployment", "applied", "-n", ns)["metadata"]["generation"] == 2


def test_apply_configmap_removes_dropped_keys(kubectl, ns):
    kubectl.apply_yaml("apply", configmap("cfg", {"a": "1", "b": "2"}), "-n", ns)
    kubectl.apply_yaml("apply", configmap("cfg", {"a": "10"}), "-n", ns)
    got = kubectl.json("get", "cm", "cfg", "-n", ns)
    assert got["data"] == {"a": "10"}
    assert LAST_APPLIED in got["metadata"]["annotations"]


# --------------------------------------------------------------------------- get

def test_get_output_formats(kubectl, ns):
    kubectl.apply_yaml("create", [configmap("fmt-a", {"greeting": "hello", "n": "1"}),
                                  configmap("fmt-b", {"greeting": "bye"})], "-n", ns)
    as_json = kubectl.json("get", "configmap", "fmt-a", "-n", ns)
    assert as_json["apiVersion"] == "v1" and as_json["kind"] == "ConfigMap"
    assert as_json["metadata"]["name"] == "fmt-a"
    assert as_json["data"] == {"greeting": "hello", "n": "1"}

    as_yaml = yaml.safe_load(kubectl("get", "configmap", "fmt-a", "-n", ns, "-o", "yaml").stdout)
    assert as_yaml["data"] == as_json["data"]
    assert as_yaml["metadata"]["uid"] == as_json["metadata"]["uid"]
    assert as_yaml["metadata"]["resourceVersion"] == as_json["metadata"]["resourceVersion"]

    jp = kubectl("get", "configmap", "fmt-a", "-n", ns, "-o", "jsonpath={.data.greeting}").stdout
    assert jp == "hello"
    names = kubectl("get", "configmaps", "fmt-a", "fmt-b", "-n", ns,
                    "-o", "jsonpath={.items[*].metadata.name}").stdout.split()
    assert sorted(names) == ["fmt-a", "fmt-b"]

    lst = kubectl.json("get", "configmaps", "-n", ns, "-l", "!nonexistent-label")
    assert lst["kind"] == "List"
    assert {"fmt-a", "fmt-b"} <= {i["metadata"]["name"] for i in lst["items"]}


def test_get_table_output(kubectl, ns):
    kubectl.apply_yaml("create", configmap("tbl", {"a": "1", "b": "2"}), "-n", ns)
    lines = kubectl("get", "configmap", "tbl", "-n", ns).stdout.splitlines()
    assert lines[0].split() == ["NAME", "DATA", "AGE"], lines
    assert lines[1].split()[:2] == ["tbl", "2"], lines
    lines = kubectl("get", "configmap", "tbl", "-n", ns, "--show-labels").stdout.splitlines()
    assert lines[0].split()[-1] == "LABELS", lines


def test_get_label_and_field_selectors(kubectl, ns):
    kubectl.apply_yaml("create", [configmap("sel-a", {"x": "1"}, labels={"app": "x"}),
                                  configmap("sel-b", {"x": "1"}, labels={"app": "y"}),
                                  configmap("sel-c", {"x": "1"})], "-n", ns)
    got = kubectl("get", "cm", "-n", ns, "-l", "app=x", "-o", "name").stdout.split()
    assert got == ["configmap/sel-a"]
    got = kubectl("get", "cm", "-n", ns, "-l", "app in (x,y)", "-o", "name").stdout.split()
    assert sorted(got) == ["configmap/sel-a", "configmap/sel-b"]
    got = kubectl("get", "cm", "-n", ns, "--field-selector", "metadata.name=sel-b",
                  "-o", "name").stdout.split()
    assert got == ["configmap/sel-b"]
    got = kubectl("get", "cm", "-n", ns, "-l", "app", "--field-selector",
                  "metadata.name!=sel-a", "-o", "name").stdout.split()
    assert got == ["configmap/sel-b"]
    got = kubectl("get", "cm", "-n", ns, "-l", "app=nothing", "-o", "name").stdout.split()
    assert got == []

    cp = kubectl("get", "cm", "-n", ns, "--field-selector", "spec.bogus=1", check=False)
    assert cp.returncode != 0
    assert "(BadRequest)" in cp.stderr, cp.stderr
    assert "spec.bogus" in cp.stderr, cp.stderr


# --------------------------------------------------------------------------- label / annotate

def test_label_overwrite_and_remove(kubectl, ns):
    kubectl.apply_yaml("create", configmap("lbl", {"a": "1"}), "-n", ns)
    assert kubectl("label", "cm", "lbl", "env=prod", "-n", ns).stdout.strip() == "configmap/lbl labeled"
    assert kubectl.json("get", "cm", "lbl", "-n", ns)["metadata"]["labels"] == {"env": "prod"}

    cp = kubectl("label", "cm", "lbl", "env=dev", "-n", ns, check=False)
    assert cp.returncode != 0 and "already has a value" in cp.stderr, cp.stderr
    assert kubectl.json("get", "cm", "lbl", "-n", ns)["metadata"]["labels"] == {"env": "prod"}

    kubectl("label", "cm", "lbl", "env=dev", "team=core", "--overwrite", "-n", ns)
    assert kubectl.json("get", "cm", "lbl", "-n", ns)["metadata"]["labels"] == {"env": "dev", "team": "core"}

    out = kubectl("label", "cm", "lbl", "env-", "-n", ns).stdout.strip()
    assert out in ("configmap/lbl unlabeled", "configmap/lbl labeled"), out
    assert kubectl.json("get", "cm", "lbl", "-n", ns)["metadata"]["labels"] == {"team": "core"}
    assert kubectl("get", "cm", "-n", ns, "-l", "team=core", "-o", "name").stdout.split() == ["configmap/lbl"]

    cp = kubectl("label", "cm", "lbl", "bad label=x", "-n", ns, check=False)
    assert cp.returncode != 0


def test_annotate_overwrite_and_remove(kubectl, ns):
    kubectl.apply_yaml("create", configmap("ann", {"a": "1"}), "-n", ns)
    out = kubectl("annotate", "cm", "ann", "note=first", "-n", ns).stdout.strip()
    assert out == "configmap/ann annotated", out
    assert kubectl.json("get", "cm", "ann", "-n", ns)["metadata"]["annotations"] == {"note": "first"}

    cp = kubectl("annotate", "cm", "ann", "note=second", "-n", ns, check=False)
    assert cp.returncode != 0 and "already has a value" in cp.stderr, cp.stderr

    kubectl("annotate", "cm", "ann", "note=second", "other=x", "--overwrite", "-n", ns)
    assert kubectl.json("get", "cm", "ann", "-n", ns)["metadata"]["annotations"] == {"note": "second", "other": "x"}

    kubectl("annotate", "cm", "ann", "note-", "-n", ns)
    assert kubectl.json("get", "cm", "ann", "-n", ns)["metadata"]["annotations"] == {"other": "x"}


# --------------------------------------------------------------------------- delete

def test_delete_waits_until_gone(kubectl, ns):
    kubectl.apply_yaml("create", [configmap("gone", {"a": "1"}), deployment("gone-dep")], "-n", ns)
    out = kubectl("delete", "configmap", "gone", "-n", ns, timeout=60).stdout.strip()
    assert out == f'configmap "gone" deleted from {ns} namespace', out
    assert_not_found(kubectl, ns, "configmap", "gone")
    out = kubectl("delete", "deployment", "gone-dep", "-n", ns, timeout=60).stdout.strip()
    assert out == f'deployment.apps "gone-dep" deleted from {ns} namespace', out
    assert_not_found(kubectl, ns, "deployment", "gone-dep")

    cp = kubectl("delete", "configmap", "gone", "-n", ns, check=False)
    assert cp.returncode != 0 and "NotFound" in cp.stderr, cp.stderr
    cp = kubectl("delete", "configmap", "gone", "-n", ns, "--ignore-not-found")
    assert cp.returncode == 0


def test_delete_by_label_selector(kubectl, ns):
    kubectl.apply_yaml("create", [configmap("bulk-1", labels={"batch": "b"}),
                                  configmap("bulk-2", labels={"batch": "b"}),
                                  configmap("keep", labels={"batch": "k"})], "-n", ns)
    kubectl("delete", "cm", "-l", "batch=b", "-n", ns)
    left = kubectl("get", "cm", "-n", ns, "-l", "batch", "-o", "name").stdout.split()
    assert left == ["configmap/keep"]


def test_delete_with_finalizer_waits_for_finalizer_removal(kubectl, ns):
    obj = configmap("held", {"a": "1"}, finalizers=["e2e.coxswain.dev/hold"])
    kubectl.apply_yaml("create", obj, "-n", ns)
    out = kubectl("delete", "configmap", "held", "-n", ns, "--wait=false").stdout.strip()
    assert out == f'configmap "held" deleted from {ns} namespace', out

    got = kubectl.json("get", "configmap", "held", "-n", ns)
    assert got["metadata"].get("deletionTimestamp"), got["metadata"]
    assert got["metadata"]["finalizers"] == ["e2e.coxswain.dev/hold"]
    # a second delete does not remove it either
    kubectl("delete", "configmap", "held", "-n", ns, "--wait=false")
    assert kubectl.json("get", "configmap", "held", "-n", ns)["metadata"]["finalizers"]
    # a bounded wait times out while the finalizer is there
    cp = kubectl("wait", "--for=delete", "configmap/held", "-n", ns, "--timeout=1s", check=False)
    assert cp.returncode != 0, cp.stdout

    kubectl("patch", "configmap", "held", "-n", ns, "--type=merge",
            "-p", '{"metadata":{"finalizers":null}}')

    def gone():
        cp = kubectl("get", "configmap", "held", "-n", ns, check=False)
        return cp.returncode != 0 and "NotFound" in cp.stderr
    wait_until(gone, timeout=15, message="configmap/held to disappear after finalizer removal")


# --------------------------------------------------------------------------- edit

def test_edit_with_non_interactive_editor(kubectl, ns, tmp_path):
    kubectl.apply_yaml("create", deployment("edited", replicas=1), "-n", ns)
    editor = tmp_path / "editor.py"
    # a non-interactive "editor": kubectl hands over a YAML file (with a comment
    # header); change spec.replicas and add a label, write it back
    editor.write_text(
        f"#!{sys.executable}\n"
        "import sys, yaml\n"
        "path = sys.argv[-1]\n"
        "obj = yaml.safe_load(open(path))\n"
        "obj['spec']['replicas'] = 4\n"
        "obj['metadata']['labels']['edited-by'] = 'script'\n"
        "open(path, 'w').write(yaml.safe_dump(obj))\n"
    )
    editor.chmod(0o755)
    env = {"EDITOR": str(editor), "KUBE_EDITOR": str(editor)}
    out = kubectl("edit", "deployment/edited", "-n", ns, env=env).stdout.strip()
    assert out == "deployment.apps/edited edited", out
    got = kubectl.json("get", "deployment", "edited", "-n", ns)
    assert got["spec"]["replicas"] == 4
    assert got["metadata"]["labels"] == {"app": "edited", "edited-by": "script"}
    assert got["metadata"]["generation"] == 2


def test_secret_string_data_is_stored_as_data(kubectl, core_v1, ns):
    import base64

    secret = {
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "sd"},
        "data": {"keep": base64.b64encode(b"old").decode(), "over": base64.b64encode(b"x").decode()},
        "stringData": {"over": "new", "plain": "text"},
    }
    kubectl.apply_yaml("create", secret, "-n", ns)
    got = core_v1.read_namespaced_secret("sd", ns)
    assert got.string_data is None
    assert {k: base64.b64decode(v).decode() for k, v in got.data.items()} == {
        "keep": "old", "over": "new", "plain": "text"}
    out = kubectl("get", "secret", "sd", "-n", ns).stdout
    assert out.splitlines()[1].split()[2] == "3", out
