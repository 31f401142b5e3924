"""The legacy Endpoints controller and the EndpointSlice mirroring controller on
`coxswain up`, judged with the real kubectl: `kubectl expose` gives a Service whose
Endpoints list the ready pod IPs and follow a scale to 0 and back; a Service without a
selector keeps its hand-written Endpoints, which are mirrored to an EndpointSlice."""

from __future__ import annotations


import pytest

from conftest import Kubectl, cluster_namespace, wait_until

MIRROR = "endpointslicemirroring-controller.k8s.io"


@pytest.fixture
def kc(cluster) -> Kubectl:
    return Kubectl(cluster)


@pytest.fixture
def ens(kc) -> str:
    yield from cluster_namespace(kc, "ep")


def ready_pod_ips(kc, ns: str, app: str) -> list[str]:
    pods = kc.json("get", "pods", "-n", ns, "-l", f"app={app}")["items"]
    return sorted(
        p["status"]["podIP"] for p in pods
        if not p["metadata"].get("deletionTimestamp")
        and p.get("status", {}).get("podIP")
        and any(c["type"] == "Ready" and c["status"] == "True"
                for c in p["status"].get("conditions", []))
    )


def endpoint_ips(kc, ns: str, name: str) -> tuple[list[str], list[str]]:
    cp = kc("get", "endpoints", name, "-n", ns, "-o", "json", check=False)
    if cp.returncode != 0:
        return [], []
    import json
    e = json.loads(cp.stdout)
    ready = sorted(a["ip"] for s in e.get("subsets") or [] for a in s.get("addresses") or [])
    not_ready = sorted(a["ip"] for s in e.get("subsets") or []
                       for a in s.get("notReadyAddresses") or [])
    return ready, not_ready


def test_expose_gives_endpoints_that_follow_scale(kc, ens):
    kc("create", "deployment", "web", "-n", ens, "--image=nginx:1.27", "--replicas=2",
       "--port=8080")
    kc("expose", "deployment", "web", "-n", ens, "--port=80", "--target-port=8080")

    def matches(n: int):
        ips = ready_pod_ips(kc, ns=ens, app="web")
        ready, not_ready = endpoint_ips(kc, ens, "web")
        return len(ips) == n and ready == ips and not not_ready and ips

    ips = wait_until(lambda: matches(2), timeout=60, message="endpoints of the 2 ready pods")
    e = kc.json("get", "endpoints", "web", "-n", ens)
    assert e["metadata"]["labels"]["endpoints.kubernetes.io/managed-by"] == "endpoint-controller"
    assert e["metadata"]["labels"]["app"] == "web"
    ports = e["subsets"][0]["ports"]
    assert [(p["port"], p.get("protocol")) for p in ports] == [(8080, "TCP")]
    assert all(a["targetRef"]["kind"] == "Pod" for a in e["subsets"][0]["addresses"])
    # kubectl's table: NAME ENDPOINTS AGE, the endpoints as ip:port
    got = kc("get", "endpoints", "web", "-n", ens)
    table = got.stdout
    for ip in ips:
        assert f"{ip}:8080" in table, table
    # as a 1.33+ server, every request to v1 Endpoints is answered with the deprecation
    # warning, which kubectl prints on stderr
    assert ("Warning: v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 "
            "EndpointSlice") in got.stderr, got.stderr

    kc("scale", "deployment", "web", "-n", ens, "--replicas=0")
    wait_until(lambda: endpoint_ips(kc, ens, "web") == ([], []) and
               not kc.json("get", "pods", "-n", ens, "-l", "app=web")["items"],
               timeout=60, message="no endpoints after a scale to 0")
    assert "<none>" in kc("get", "endpoints", "web", "-n", ens).stdout

    kc("scale", "deployment", "web", "-n", ens, "--replicas=3")
    wait_until(lambda: matches(3), timeout=60, message="endpoints of the 3 ready pods")

    # the Service goes, its Endpoints with it
    kc("delete", "service", "web", "-n", ens)
    wait_until(lambda: kc("get", "endpoints", "web", "-n", ens, check=False).returncode != 0,
               timeout=60, message="the Endpoints deleted with the Service")


def mirrored(kc, ns: str, name: str) -> list[dict]:
    return kc.json("get", "endpointslices", "-n", ns,
                   "-l", f"kubernetes.io/service-name={name}")["items"]


def slice_ips(slices: list[dict]) -> list[str]:
    return sorted(a for s in slices for e in s.get("endpoints") or [] for a in e["addresses"])


def test_selectorless_service_endpoints_are_mirrored(kc, ens):
    service = {
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "ext"},
        "spec": {"ports": [{"name": "pg", "port": 5432}]},
    }
    endpoints = {
        "apiVersion": "v1", "kind": "Endpoints",
        "metadata": {"name": "ext", "labels": {"team": "data"}},
        "subsets": [{"addresses": [{"ip": "192.0.2.10"}, {"ip": "192.0.2.11"}],
                     "ports": [{"name": "pg", "port": 5432, "protocol": "TCP"}]}],
    }
    kc.apply_yaml("create", [service, endpoints], "-n", ens)

    slices = wait_until(lambda: (s := mirrored(kc, ens, "ext")) and
                        slice_ips(s) == ["192.0.2.10", "192.0.2.11"] and s,
                        timeout=60, message="the mirrored EndpointSlice")
    assert len(slices) == 1
    s = slices[0]
    assert s["addressType"] == "IPv4"
    assert s["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"] == MIRROR
    assert s["metadata"]["labels"]["team"] == "data"
    assert s["metadata"]["name"].startswith("ext-")
    owner = s["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("Endpoints", "ext", True)
    assert [(p["name"], p["port"]) for p in s["ports"]] == [("pg", 5432)]
    # the endpoints controller leaves the hand-written Endpoints alone
    assert endpoint_ips(kc, ens, "ext") == (["192.0.2.10", "192.0.2.11"], [])
    table = kc("get", "endpointslices", "-n", ens, "-l", "kubernetes.io/service-name=ext").stdout
    assert "192.0.2.10" in table and "IPv4" in table, table

    # an edit of the Endpoints reaches the slice
    kc("patch", "endpoints", "ext", "-n", ens, "--type=merge", "-p",
       '{"subsets":[{"addresses":[{"ip":"192.0.2.12"}],'
       '"notReadyAddresses":[{"ip":"192.0.2.13"}],'
       '"ports":[{"name":"pg","port":5432,"protocol":"TCP"}]}]}')
    slices = wait_until(lambda: (s := mirrored(kc, ens, "ext")) and
                        slice_ips(s) == ["192.0.2.12", "192.0.2.13"] and s,
                        timeout=60, message="the slice following the Endpoints")
    ready = {e["addresses"][0]: e["conditions"]["ready"] for e in slices[0]["endpoints"]}
    assert ready == {"192.0.2.12": True, "192.0.2.13": False}

    # the Endpoints goes, so does the slice
    kc("delete", "endpoints", "ext", "-n", ens)
    wait_until(lambda: not mirrored(kc, ens, "ext"), timeout=60,
               message="no mirrored slice after the Endpoints went")
