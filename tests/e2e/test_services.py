"""Services on `coxswain up`, judged with the real kubectl: `kubectl expose` gives a
Service whose EndpointSlices (kept by the controller manager's endpointslice-controller)
list the ready pod IPs that `kubectl get pods -o wide` shows, and follow a scale to 0 and
back; a headless Service's slice carries the headless label. Slices are followed through
a `kubectl get endpointslices --watch` stream, pods through `kubectl rollout status` and
`kubectl wait`."""

from __future__ import annotations


import pytest

from conftest import Kubectl, StreamReader, cluster_namespace, parse_json_stream, stop_process, wait_until

SERVICE_NAME = "kubernetes.io/service-name"


@pytest.fixture
def kc(cluster) -> Kubectl:
    return Kubectl(cluster)


@pytest.fixture
def sns(kc) -> str:
    yield from cluster_namespace(kc, "svc")


def pod_ips_wide(kc: Kubectl, ns: str, app: str) -> set[str]:
    """The IP column of `kubectl get pods -o wide` for the app's Running, ready pods."""
    out = kc("get", "pods", "-n", ns, "-l", f"app={app}", "-o", "wide").stdout
    lines = [l for l in out.splitlines() if l.strip()]
    if not lines or lines[0].startswith("No resources"):
        return set()
    header = lines[0].split()
    ready_i, status_i, ip_i = header.index("READY"), header.index("STATUS"), header.index("IP")
    ips = set()
    for line in lines[1:]:
        cols = line.split()
        done, total = cols[ready_i].split("/")
        if cols[status_i] == "Running" and done == total:
            ips.add(cols[ip_i])
    return ips


class SliceWatch:
    """`kubectl get endpointslices -l kubernetes.io/service-name=<svc> --watch`, replayed
    into the current slices."""

    def __init__(self, kc: Kubectl, ns: str, service: str):
        self.proc = kc.popen("get", "endpointslices", "-n", ns, "-l", f"{SERVICE_NAME}={service}",
                             "--watch", "--output-watch-events", "-o", "json")
        self.reader = StreamReader(self.proc.stdout)

    def slices(self) -> dict:
        state: dict = {}
        for ev in parse_json_stream(self.reader.text()):
            obj = ev.get("object", {})
            name = obj.get("metadata", {}).get("name")
            if ev.get("type") == "DELETED":
                state.pop(name, None)
            elif name:
                state[name] = obj
        return state

    def ready_addresses(self) -> set[str]:
        return {a for s in self.slices().values() for e in s.get("endpoints") or []
                if (e.get("conditions") or {}).get("ready") for a in e["addresses"]}

    def wait_ready(self, want: set[str], timeout: float = 60) -> dict:
        wait_until(lambda: self.ready_addresses() == want, timeout=timeout,
                   message=f"ready endpoints {sorted(want)}")
        return self.slices()

    def close(self):
        stop_process(self.proc)


def test_expose_lists_ready_pod_ips_and_follows_scale(kc, sns):
    kc("create", "deployment", "web", "--image=nginx", "--replicas=2", "-n", sns)
    kc("rollout", "status", "deployment/web", "-n", sns, "--timeout=60s")
    out = kc("expose", "deploy", "web", "--port", "80", "-n", sns).stdout
    assert "service/web exposed" in out

    watch = SliceWatch(kc, sns, "web")
    try:
        ips = pod_ips_wide(kc, sns, "web")
        assert len(ips) == 2, ips
        slices = watch.wait_ready(ips)
        assert len(slices) == 1
        (slice_,) = slices.values()
        labels = slice_["metadata"]["labels"]
        assert labels["endpointslice.kubernetes.io/managed-by"] == "endpointslice-controller.k8s.io"
        assert slice_["addressType"] == "IPv4"
        assert slice_["ports"][0]["port"] == 80
        assert slice_["metadata"]["ownerReferences"][0]["kind"] == "Service"
        for e in slice_["endpoints"]:
            assert e["targetRef"]["kind"] == "Pod"
            assert e["nodeName"]
            assert e["conditions"] == {"ready": True, "serving": True, "terminating": False}
        # kubectl's table lists the same addresses
        table = kc("get", "endpointslices", "-n", sns, "-l", f"{SERVICE_NAME}=web").stdout
        for ip in ips:
            assert ip in table, table

        # scale to 0: the endpoints go
        kc("scale", "deployment/web", "--replicas=0", "-n", sns)
        kc("wait", "--for=delete", "pod", "-l", "app=web", "-n", sns, "--timeout=60s")
        wait_until(lambda: all(not (s.get("endpoints") or []) for s in watch.slices().values())
                   and watch.slices(), timeout=60, message="no endpoints")

        # and back: the new pods' IPs
        kc("scale", "deployment/web", "--replicas=3", "-n", sns)
        kc("rollout", "status", "deployment/web", "-n", sns, "--timeout=60s")
        ips = wait_until(lambda: i if len(i := pod_ips_wide(kc, sns, "web")) == 3 else None,
                         timeout=60, message="three running pods")
        watch.wait_ready(ips)
    finally:
        watch.close()


def test_headless_service_slices(kc, sns):
    kc("create", "deployment", "db", "--image=postgres", "-n", sns)
    kc("rollout", "status", "deployment/db", "-n", sns, "--timeout=60s")
    kc("create", "service", "clusterip", "db", "--clusterip=None", "-n", sns)
    watch = SliceWatch(kc, sns, "db")
    try:
        ips = pod_ips_wide(kc, sns, "db")
        assert len(ips) == 1
        slices = watch.wait_ready(ips)
        (slice_,) = slices.values()
        assert slice_["metadata"]["labels"]["service.kubernetes.io/headless"] == ""
    finally:
        watch.close()


def test_selectorless_service_gets_no_slices_from_the_controller(kc, sns):
    kc.apply_yaml("create", {"apiVersion": "v1", "kind": "Service",
                             "metadata": {"name": "manual", "namespace": sns},
                             "spec": {"ports": [{"port": 80}]}})
    # a Service created afterwards gets its placeholder: the controller has seen both
    kc("create", "service", "clusterip", "later", "--tcp=80:80", "-n", sns)
    wait_until(lambda: kc.json("get", "endpointslices", "-n", sns, "-l",
                               f"{SERVICE_NAME}=later")["items"],
               timeout=60, message="the later Service's slice")
    assert kc.json("get", "endpointslices", "-n", sns, "-l",
                   f"{SERVICE_NAME}=manual")["items"] == []
