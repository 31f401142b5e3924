"""Protobuf answers with the real kubectl: its typed clients (`create`, `create token`,
`auth can-i`, ...) send protobuf and accept it, so on `coxswain up` they now read
protobuf objects and protobuf `Status` errors. What kubectl prints from a protobuf
answer (`-o json` of a create) must equal the object served as JSON."""

from __future__ import annotations

import json
import uuid

PROTOBUF = "application/vnd.kubernetes.protobuf"


def _ns(cluster) -> str:
    name = f"pb-{uuid.uuid4().hex[:6]}"
    cluster.kubectl("create", "namespace", name)
    return name


def _strip(obj: dict) -> dict:
    obj = json.loads(json.dumps(obj))
    obj.get("metadata", {}).pop("managedFields", None)
    return obj


def test_kubectl_reads_protobuf_answers(cluster):
    ns = _ns(cluster)
    # a create whose answer kubectl prints: decoded from protobuf, printed as JSON
    out = cluster.kubectl("-n", ns, "create", "deployment", "web", "--image=nginx",
                          "--replicas=2", "-o", "json", "-v=8")
    created = json.loads(out.stdout)
    assert f"Content-Type: {PROTOBUF}" in out.stderr, out.stderr[-3000:]
    served = json.loads(cluster.kubectl("-n", ns, "get", "deployment", "web",
                                        "-o", "json").stdout)
    # later writes (the controllers) may have moved it on: compare the spec and identity
    assert created["spec"] == served["spec"]
    for f in ("name", "namespace", "uid", "creationTimestamp", "labels"):
        assert created["metadata"].get(f) == served["metadata"].get(f), f

    out = cluster.kubectl("-n", ns, "create", "configmap", "cfg", "--from-literal=a=1",
                          "--from-literal=empty=", "-o", "json")
    cm = json.loads(out.stdout)
    got = json.loads(cluster.kubectl("-n", ns, "get", "configmap", "cfg", "-o", "json").stdout)
    assert _strip(cm) == _strip(got)
    assert cm["data"] == {"a": "1", "empty": ""}

    # the review and token APIs answer kubectl in protobuf
    assert cluster.kubectl("auth", "can-i", "create", "pods", "-n", ns).stdout.strip() == "yes"
    cluster.kubectl("-n", ns, "create", "serviceaccount", "robot")
    token = cluster.kubectl("-n", ns, "create", "token", "robot", "--duration=1h").stdout.strip()
    assert token.count(".") == 2

    # errors: protobuf Status, printed with upstream's wording
    out = cluster.kubectl("create", "namespace", ns, check=False)
    assert out.returncode != 0
    assert f'Error from server (AlreadyExists): namespaces "{ns}" already exists' in out.stderr
    out = cluster.kubectl("-n", ns, "create", "configmap", "Bad_Name", check=False)
    assert out.returncode != 0
    # kubectl words it from the Status' details and causes
    assert ('ConfigMap "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": '
            'a lowercase RFC 1123 subdomain') in out.stderr, out.stderr

    # scale (the scale subresource) and delete through typed clients
    cluster.kubectl("-n", ns, "scale", "deployment", "web", "--replicas=0")
    assert json.loads(cluster.kubectl("-n", ns, "get", "deployment", "web", "-o", "json"
                                      ).stdout)["spec"]["replicas"] == 0
    cluster.kubectl("delete", "namespace", ns, "--wait=false")


def test_typed_kubectl_commands_on_protobuf(cluster):
    """Commands built on client-go's typed clients (protobuf GET, LIST, PATCH, create)."""
    ns = _ns(cluster)
    cluster.kubectl("-n", ns, "run", "p", "--image=nginx", "--labels=app=p", "--port=80")
    out = cluster.kubectl("-n", ns, "expose", "pod", "p", "--port=8080", "--target-port=80")
    assert "service/p exposed" in out.stdout
    svc = json.loads(cluster.kubectl("-n", ns, "get", "service", "p", "-o", "json").stdout)
    assert svc["spec"]["ports"][0]["targetPort"] == 80
    cluster.kubectl("-n", ns, "create", "cronjob", "cj", "--image=busybox",
                    "--schedule=*/5 * * * *", "--", "date")
    out = cluster.kubectl("-n", ns, "create", "job", "once", "--from=cronjob/cj")
    assert "job.batch/once created" in out.stdout
    # describe reads objects and their events through typed clients
    out = cluster.kubectl("-n", ns, "describe", "pod", "p")
    assert "Name:" in out.stdout and "nginx" in out.stdout
    out = cluster.kubectl("-n", ns, "describe", "service", "p")
    assert "8080/TCP" in out.stdout
    node = json.loads(cluster.kubectl("get", "nodes", "-o", "json").stdout)["items"][0]
    name = node["metadata"]["name"]
    cluster.kubectl("cordon", name)
    assert json.loads(cluster.kubectl("get", "node", name, "-o", "json").stdout
                      )["spec"].get("unschedulable") is True
    cluster.kubectl("uncordon", name)
    out = cluster.kubectl("describe", "node", name)
    assert f"Name:               {name}" in out.stdout
    cluster.kubectl("delete", "namespace", ns, "--wait=false")
