"""`kubectl get` prints the server's tables: the columns a real cluster prints, with
`-o wide` columns, and `kubectl get -w` streaming rows as objects change."""

import json
import re

from conftest import StreamReader, configmap, deployment, pod, stop_process, wait_until

# what kubectl prints for these kinds against kube-apiserver 1.36
HEADERS = {
    "pod": ["NAME", "READY", "STATUS", "RESTARTS", "AGE"],
    "deployment.apps": ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"],
    "service": ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"],
    "node": ["NAME", "STATUS", "ROLES", "AGE", "VERSION"],
    "configmap": ["NAME", "DATA", "AGE"],
    "secret": ["NAME", "TYPE", "DATA", "AGE"],
    "namespace": ["NAME", "STATUS", "AGE"],
}

AGE = re.compile(r"^\d+(s|m\d*s?|h\d*m?|d\d*h?|y\d*d?)$")


def columns(line: str) -> list:
    """Split a kubectl table line on runs of two or more spaces (headers such as
    `NOMINATED NODE` contain one space)."""
    return re.split(r"\s{2,}", line.strip())


def blocks(out: str) -> dict:
    """`kubectl get a,b,c` output: one table per kind, separated by blank lines; rows
    are named `kind/name`. Returns {kind: (header, rows)}."""
    result = {}
    for block in out.strip().split("\n\n"):
        lines = block.splitlines()
        header, rows = columns(lines[0]), [columns(l) for l in lines[1:]]
        kind = rows[0][0].split("/")[0] if rows else None
        result[kind] = (header, rows)
    return result


NODE_STATUS = {"status": {
    "nodeInfo": {"kubeletVersion": "v1.36.0", "osImage": "Sim OS", "kernelVersion": "6.1.0",
                 "containerRuntimeVersion": "sim://1", "architecture": "amd64",
                 "operatingSystem": "linux", "bootID": "", "machineID": "", "systemUUID": "",
                 "kubeProxyVersion": ""},
    "addresses": [{"type": "InternalIP", "address": "10.0.0.9"}],
    "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                    "message": "ready", "lastHeartbeatTime": "2024-01-01T00:00:00Z",
                    "lastTransitionTime": "2024-01-01T00:00:00Z"}]}}


def create_node(kubectl, name: str) -> None:
    kubectl.apply_yaml("create", {"apiVersion": "v1", "kind": "Node", "metadata": {
        "name": name, "labels": {"node-role.kubernetes.io/worker": ""}}})
    kubectl("patch", "node", name, "--subresource=status", "--type=merge",
            "-p", json.dumps(NODE_STATUS))


def test_get_many_kinds_prints_upstream_headers(kubectl, ns):
    node_name = f"{ns}-node"
    kubectl.apply_yaml("create", [
        pod("p"),
        deployment("web", replicas=2),
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "svc"},
         "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}},
        configmap("cm", {"a": "1", "b": "2"}),
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
         "type": "Opaque", "data": {"k": "dg=="}},
    ], "-n", ns)
    create_node(kubectl, node_name)
    try:
        out = kubectl("get", "pods,deploy,svc,nodes,cm,secrets,ns", "-n", ns).stdout
        wide = kubectl("get", "node", node_name, "-o", "wide").stdout.splitlines()
    finally:
        kubectl("delete", "node", node_name)
    got = blocks(out)
    for kind, header in HEADERS.items():
        assert kind in got, f"no {kind} table in:\n{out}"
        assert got[kind][0] == header, f"{kind}:\n{out}"
    rows = {kind: {r[0].split("/", 1)[1]: r for r in rs} for kind, (_, rs) in got.items()}
    assert rows["pod"]["p"][1:4] == ["0/1", "Pending", "0"], out
    assert rows["deployment.apps"]["web"][1:4] == ["0/2", "0", "0"], out
    svc = rows["service"]["svc"]
    assert svc[1] == "ClusterIP" and re.match(r"^\d+\.\d+\.\d+\.\d+$", svc[2]), out
    assert svc[3:5] == ["<none>", "80/TCP"], out
    assert rows["configmap"]["cm"][1] == "2", out
    assert rows["secret"]["s"][1:3] == ["Opaque", "1"], out
    assert rows["namespace"][ns][1] == "Active", out
    assert rows["node"][node_name][1:3] == ["Ready", "worker"], out
    assert rows["node"][node_name][4] == "v1.36.0", out
    assert columns(wide[0]) == HEADERS["node"] + [
        "INTERNAL-IP", "EXTERNAL-IP", "OS-IMAGE", "KERNEL-VERSION", "CONTAINER-RUNTIME"], wide
    assert columns(wide[1])[5:] == ["10.0.0.9", "<none>", "Sim OS", "6.1.0", "sim://1"], wide
    for kind, by_name in rows.items():
        age_col = HEADERS[kind].index("AGE")
        for name, r in by_name.items():
            assert AGE.match(r[age_col]), f"{kind}/{name} age {r[age_col]!r}"


def test_get_pods_wide(kubectl, ns):
    kubectl.apply_yaml("create", pod("wide"), "-n", ns)
    kubectl("patch", "pod", "wide", "-n", ns, "--subresource=status", "--type=merge",
            "-p", json.dumps({"status": {
                "phase": "Running", "podIP": "10.244.0.7", "podIPs": [{"ip": "10.244.0.7"}],
                "conditions": [{"type": "Ready", "status": "True",
                                "lastTransitionTime": "2024-01-01T00:00:00Z"}],
                "containerStatuses": [{"name": "main", "image": "busybox:1.36", "imageID": "",
                                       "ready": True, "restartCount": 2, "started": True,
                                       "state": {"running": {"startedAt": "2024-01-01T00:00:00Z"}}}]}}))
    lines = kubectl("get", "pods", "-n", ns, "-o", "wide").stdout.splitlines()
    assert columns(lines[0]) == ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE",
                                 "NOMINATED NODE", "READINESS GATES"], lines
    row = columns(lines[1])
    assert row[:4] == ["wide", "1/1", "Running", "2"], lines
    assert row[5:] == ["10.244.0.7", "<none>", "<none>", "<none>"], lines

    kubectl.apply_yaml("create", deployment("wide-web", replicas=2), "-n", ns)
    lines = kubectl("get", "deploy", "-n", ns, "-o", "wide").stdout.splitlines()
    assert columns(lines[0]) == HEADERS["deployment.apps"] + ["CONTAINERS", "IMAGES", "SELECTOR"]
    assert columns(lines[1])[:4] == ["wide-web", "0/2", "0", "0"], lines
    assert columns(lines[1])[5:] == ["main", "nginx:1.27", "app=wide-web"], lines


def test_default_table_for_kinds_without_printer(kubectl, ns):
    kubectl.apply_yaml("create", {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                                  "metadata": {"name": "reader"},
                                  "rules": [{"apiGroups": [""], "resources": ["pods"],
                                             "verbs": ["get"]}]}, "-n", ns)
    lines = kubectl("get", "roles", "-n", ns).stdout.splitlines()
    assert columns(lines[0]) == ["NAME", "CREATED AT"], lines
    name, created = columns(lines[1])
    assert name == "reader" and re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$", created), lines


def test_get_deploy_watch_streams_rows(kubectl, ns):
    kubectl.apply_yaml("create", deployment("first"), "-n", ns)
    proc = kubectl.popen("get", "deploy", "-n", ns, "-w")
    out = StreamReader(proc.stdout)
    lines = lambda: [columns(l) for l in out.text().splitlines() if l.strip()]
    try:
        wait_until(lambda: len(lines()) >= 2, timeout=20, message="header and first row")
        kubectl("scale", "deploy", "first", "-n", ns, "--replicas=3")
        wait_until(lambda: any(r[:2] == ["first", "0/3"] for r in lines()), timeout=20,
                   message="row of the scaled deployment")
        kubectl.apply_yaml("create", deployment("second", replicas=2), "-n", ns)
        wait_until(lambda: any(r[0] == "second" for r in lines()), timeout=20,
                   message="row of the new deployment")
    finally:
        stop_process(proc)
    got = lines()
    assert got[0] == HEADERS["deployment.apps"], got
    # the header is printed once; every other line is a row
    assert sum(1 for r in got if r[0] == "NAME") == 1, got
    assert got[1][:4] == ["first", "0/1", "0", "0"], got
    assert ["second", "0/2", "0", "0"] in [r[:4] for r in got], got
