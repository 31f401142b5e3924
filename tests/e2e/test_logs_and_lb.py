"""Pod logs, exec and service load balancers on `coxswain up`, with the real kubectl.

Simulated containers write the lines of their `sim.coxswain.dev/log` annotations (one
per `sim.coxswain.dev/log-interval` when set), which `kubectl logs` reads from the
embedded API server's `pods/log`; `kubectl exec` gets a clear error (no container runs);
the simulator's cloud gives LoadBalancer Services an address from 172.18.255.0/24."""

from __future__ import annotations

import datetime
import ipaddress
import json
import re

import pytest

from conftest import Kubectl, StreamReader, cluster_namespace, stop_process, wait_until

LB_FINALIZER = "service.kubernetes.io/load-balancer-cleanup"


@pytest.fixture
def kc(cluster) -> Kubectl:
    return Kubectl(cluster)


@pytest.fixture
def lns(kc) -> str:
    yield from cluster_namespace(kc, "logs")


def logging_pod(name: str, annotations: dict, containers=("main",)) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "annotations": annotations},
        "spec": {"containers": [{"name": c, "image": "busybox:1.36"} for c in containers]},
    }


def ready(kc, ns, name):
    kc("wait", "--for=condition=Ready", f"pod/{name}", "-n", ns, "--timeout=60s")


def test_kubectl_logs_prints_the_annotated_lines(kc, lns):
    kc.apply_yaml("apply", logging_pod("talker", {"sim.coxswain.dev/log": "hello\nworld\nbye\n"}),
                  "-n", lns)
    ready(kc, lns, "talker")
    assert kc("logs", "talker", "-n", lns).stdout == "hello\nworld\nbye\n"
    assert kc("logs", "talker", "-n", lns, "--tail=1").stdout == "bye\n"
    started = kc("get", "pod", "talker", "-n", lns, "-o",
                 "jsonpath={.status.containerStatuses[0].state.running.startedAt}").stdout
    stamped = kc("logs", "talker", "-n", lns, "--timestamps").stdout.splitlines()
    assert len(stamped) == 3
    for line in stamped:
        m = re.fullmatch(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\.(\d{9})Z (\w+)", line)
        assert m, line
        # the lines are written when the container starts
        assert m.group(1) + "Z" == started
    # the lines carry the start time: a since-time a second later shows none
    later = (datetime.datetime.strptime(started, "%Y-%m-%dT%H:%M:%SZ")
             + datetime.timedelta(seconds=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert kc("logs", "talker", "-n", lns, f"--since-time={later}").stdout == ""
    assert kc("logs", "talker", "-n", lns, f"--since-time={started}").stdout.count("\n") == 3
    assert kc("logs", "talker", "-n", lns, "--limit-bytes=7").stdout == "hello\nw"
    # no previous run yet
    r = kc("logs", "talker", "-n", lns, "--previous", check=False)
    assert r.returncode != 0
    assert 'previous terminated container "main" in pod "talker" not found' in r.stderr


def test_kubectl_logs_of_a_pod_with_two_containers(kc, lns):
    kc.apply_yaml("apply", logging_pod("pair", {"sim.coxswain.dev/log.a": "from a",
                                                "sim.coxswain.dev/log.b": "from b"},
                                       containers=("a", "b")), "-n", lns)
    ready(kc, lns, "pair")
    assert kc("logs", "pair", "-c", "b", "-n", lns).stdout == "from b\n"
    # kubectl picks the first container itself and says so
    r = kc("logs", "pair", "-n", lns)
    assert r.stdout == "from a\n"
    assert 'Defaulted container "a" out of: a, b' in r.stderr
    # the API itself wants a name, as upstream
    r = kc("get", "--raw", f"/api/v1/namespaces/{lns}/pods/pair/log", check=False)
    assert r.returncode != 0
    assert "a container name must be specified for pod pair, choose one of: [a b]" in r.stderr
    r = kc("logs", "pair", "-c", "c", "-n", lns, check=False)
    assert r.returncode != 0
    assert "container c is not valid for pod pair" in r.stderr


def test_kubectl_logs_follow_streams_new_lines(kc, lns):
    kc.apply_yaml("apply", logging_pod("ticker", {"sim.coxswain.dev/log-interval": "200ms"}),
                  "-n", lns)
    ready(kc, lns, "ticker")
    proc = kc.popen("logs", "-f", "ticker", "-n", lns, "--tail=1")
    try:
        out = StreamReader(proc.stdout)
        lines = wait_until(lambda: len(out.text().splitlines()) >= 4 and out.text().splitlines(),
                           timeout=30, message="four streamed lines")
        numbers = [int(l.removeprefix("line ")) for l in lines[:4]]
        assert numbers == list(range(numbers[0], numbers[0] + 4)), lines
        # the follow ends when the pod goes away (its container stops)
        kc("delete", "pod", "ticker", "-n", lns, "--wait=false")
        assert proc.wait(timeout=60) == 0
    finally:
        stop_process(proc)


def test_kubectl_logs_of_a_container_waiting_to_start(kc, lns):
    kc.apply_yaml("apply", logging_pod("slow", {"sim.coxswain.dev/start-after": "1h"}), "-n", lns)
    kc("wait", "--for=jsonpath={.status.containerStatuses[0].state.waiting.reason}=ContainerCreating",
       "pod/slow", "-n", lns, "--timeout=60s")
    r = kc("logs", "slow", "-n", lns, check=False)
    assert r.returncode != 0
    assert 'container "main" in pod "slow" is waiting to start: ContainerCreating' in r.stderr


def test_kubectl_exec_and_attach_say_the_node_is_simulated(kc, lns):
    kc.apply_yaml("apply", logging_pod("quiet", {}), "-n", lns)
    ready(kc, lns, "quiet")
    r = kc("exec", "quiet", "-n", lns, "--", "ls", check=False, timeout=60)
    assert r.returncode != 0
    assert ('cannot exec into container "main" in pod "quiet": node' in r.stderr
            and "is simulated and runs no containers" in r.stderr), r.stderr
    r = kc("attach", "quiet", "-n", lns, check=False, timeout=60)
    assert r.returncode != 0
    assert "is simulated and runs no containers" in r.stderr, r.stderr


def lb_ip(kc, ns, name) -> str:
    return kc("get", "svc", name, "-n", ns, "-o",
              "jsonpath={.status.loadBalancer.ingress[0].ip}").stdout


def test_a_load_balancer_service_gets_an_external_ip(kc, lns):
    kc("create", "deployment", "web", "--image=nginx:1.27", "-n", lns)
    kc("expose", "deployment", "web", "--type=LoadBalancer", "--port=80", "-n", lns)
    ip = wait_until(lambda: lb_ip(kc, lns, "web"), timeout=30, message="an ingress IP")
    assert ipaddress.ip_address(ip) in ipaddress.ip_network("172.18.255.0/24")
    table = kc("get", "svc", "web", "-n", lns).stdout
    assert ip in table.splitlines()[1].split()
    # a LoadBalancer Service has a node port, which PORT(S) shows as a real cluster does
    node_port = kc.json("get", "svc", "web", "-n", lns)["spec"]["ports"][0]["nodePort"]
    assert 30000 <= node_port <= 32767
    assert table.splitlines()[1].split()[4] == f"80:{node_port}/TCP", table
    svc = kc.json("get", "svc", "web", "-n", lns)
    assert LB_FINALIZER in svc["metadata"]["finalizers"]
    assert svc["status"]["loadBalancer"]["ingress"] == [{"ip": ip, "ipMode": "VIP"}]
    reasons = wait_until(
        lambda: {e["reason"] for e in kc.json("get", "events", "-n", lns,
                                              "--field-selector", "involvedObject.name=web")["items"]
                 } >= {"EnsuringLoadBalancer", "EnsuredLoadBalancer"},
        timeout=30, message="load balancer events")
    assert reasons
    # a second Service gets another address
    kc("expose", "deployment", "web", "--name=web2", "--type=LoadBalancer", "--port=81", "-n", lns)
    ip2 = wait_until(lambda: lb_ip(kc, lns, "web2"), timeout=30, message="a second ingress IP")
    assert ip2 != ip
    # no longer a load balancer: address released, status cleared, finalizer removed; the
    # type alone is patched, as a user does (the API server drops the node port and the
    # other fields only a LoadBalancer used)
    kc("patch", "svc", "web2", "-n", lns, "-p", json.dumps({"spec": {"type": "ClusterIP"}}))
    web2 = kc.json("get", "svc", "web2", "-n", lns)["spec"]
    assert "nodePort" not in web2["ports"][0], web2
    assert "allocateLoadBalancerNodePorts" not in web2 and "externalTrafficPolicy" not in web2
    assert kc("get", "svc", "web2", "-n", lns).stdout.splitlines()[1].split()[4] == "81/TCP"
    wait_until(lambda: not lb_ip(kc, lns, "web2")
               and LB_FINALIZER not in kc.json("get", "svc", "web2", "-n", lns)["metadata"].get(
                   "finalizers", []),
               timeout=30, message="web2's load balancer cleaned up")
    # a NodePort Service shows its node port too
    kc("create", "service", "nodeport", "web3", "--tcp=82:80", "-n", lns)
    web3 = kc.json("get", "svc", "web3", "-n", lns)["spec"]["ports"][0]["nodePort"]
    assert 30000 <= web3 <= 32767 and web3 != node_port
    row = kc("get", "svc", "web3", "-n", lns).stdout.splitlines()[1].split()
    assert row[1] == "NodePort" and row[4] == f"82:{web3}/TCP", row
    # kubectl delete waits for the finalizer to go, and returns
    kc("delete", "svc", "web", "-n", lns, "--timeout=60s")
    r = kc("get", "svc", "web", "-n", lns, check=False)
    assert r.returncode != 0 and "NotFound" in r.stderr
