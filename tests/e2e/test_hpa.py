"""HorizontalPodAutoscaler on `coxswain up`, judged with the real kubectl.

A Deployment of one pod requesting 100m cpu gets an HPA at 50% cpu (`kubectl autoscale`);
the pod's simulated usage (the `sim.coxswain.dev/cpu-usage` annotation the metrics API
reads) is raised with `kubectl annotate`, and the controller scales to what upstream's
formula gives: ceil(1 pod × 200% / 50%) = 4 (new pods use the template's 1m default, so
the count then holds: their samples are too fresh, or too small, to move it). The usage
drops again and, after the short scale-down stabilization window set in the HPA's
behavior, the Deployment goes back to 1. The controller syncs every 15 s (the default),
so the waits are polls with generous deadlines, never sleeps."""

from __future__ import annotations

import json

import pytest

from conftest import Kubectl, cluster_namespace, wait_until

USAGE = "sim.coxswain.dev/cpu-usage"
# two sync periods of 15 s plus pod start-up, with a wide margin for a loaded machine
DEADLINE = 180


@pytest.fixture
def kc(cluster) -> Kubectl:
    return Kubectl(cluster)


@pytest.fixture
def hns(kc) -> str:
    yield from cluster_namespace(kc, "hpa")


def web() -> dict:
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{
                    "name": "main", "image": "nginx:1.27",
                    "resources": {"requests": {"cpu": "100m"}},
                }]},
            },
        },
    }


def replicas(kc: Kubectl, ns: str) -> int:
    return kc.json("get", "deployment", "web", "-n", ns)["spec"]["replicas"]


def running_pods(kc: Kubectl, ns: str) -> list:
    pods = kc.json("get", "pods", "-n", ns, "-l", "app=web")["items"]
    return [p for p in pods
            if p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")]


def rescale_events(kc: Kubectl, ns: str) -> list:
    events = kc.json("get", "events", "-n", ns, "--field-selector", "reason=SuccessfulRescale")
    return [e.get("message") or e.get("note") for e in events["items"]]


def test_hpa_scales_with_cpu_usage(kc, hns):
    kc.apply_yaml("create", web(), "-n", hns)
    wait_until(lambda: len(running_pods(kc, hns)) == 1, timeout=DEADLINE,
               message="the Deployment's pod running")
    kc("autoscale", "deployment", "web", "-n", hns, "--cpu-percent=50", "--min=1", "--max=6")
    kc("patch", "hpa", "web", "-n", hns, "--type=merge", "-p",
       json.dumps({"spec": {"behavior": {"scaleDown": {"stabilizationWindowSeconds": 5}}}}))

    # the metrics API reports the idle pod: TARGETS shows its utilization
    def idle_target():
        out = kc("get", "hpa", "web", "-n", hns).stdout
        line = out.splitlines()[1]
        return line if "%/50%" in line and "<unknown>" not in line else None
    line = wait_until(idle_target, timeout=DEADLINE, interval=1, message="TARGETS with a current value")
    header = kc("get", "hpa", "web", "-n", hns).stdout.splitlines()[0].split()
    assert header[:4] == ["NAME", "REFERENCE", "TARGETS", "MINPODS"], header
    assert "Deployment/web" in line

    # load: 200m of 100m requested at a 50% target → ceil(1 × 200 / 50) = 4
    kc("annotate", "pods", "-n", hns, "-l", "app=web", f"{USAGE}=200m", "--overwrite")
    wait_until(lambda: replicas(kc, hns) == 4, timeout=DEADLINE, interval=1,
               message="scale up to 4")
    wait_until(lambda: "New size: 4; reason: cpu resource utilization (percentage of request) above target"
               in rescale_events(kc, hns), timeout=60, interval=1, message="SuccessfulRescale event")
    hpa = kc.json("get", "hpa", "web", "-n", hns)
    assert hpa["status"]["desiredReplicas"] == 4
    conditions = {c["type"]: c for c in hpa["status"]["conditions"]}
    assert conditions["ScalingActive"]["reason"] == "ValidMetricFound"
    assert conditions["AbleToScale"]["status"] == "True"
    wait_until(lambda: len(running_pods(kc, hns)) == 4, timeout=DEADLINE, interval=1,
               message="4 pods running")

    # the load goes away → back to minReplicas after the 5 s scale-down window
    kc("annotate", "pods", "-n", hns, "-l", "app=web", f"{USAGE}=1m", "--overwrite")
    wait_until(lambda: replicas(kc, hns) == 1, timeout=DEADLINE, interval=1,
               message="scale down to 1")
    wait_until(lambda: "New size: 1; reason: All metrics below target" in rescale_events(kc, hns),
               timeout=60, interval=1, message="scale-down event")
    out = kc("describe", "hpa", "web", "-n", hns).stdout
    assert "SuccessfulRescale" in out, out
