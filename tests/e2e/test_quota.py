"""ResourceQuota on `coxswain up`, judged with the real kubectl: the API server's
ResourceQuota admission refuses what exceeds a quota with upstream's message, and the
resourcequota controller reports usage (`kubectl describe quota`) and gives quota back
when objects go away. Each test works in its own namespace of the shared cluster."""

from __future__ import annotations

import json
import re

import pytest

from conftest import Kubectl, cluster_namespace, wait_until


@pytest.fixture
def kc(cluster) -> Kubectl:
    return Kubectl(cluster)


@pytest.fixture
def qns(kc) -> str:
    yield from cluster_namespace(kc, "quota")


def quota(name: str, hard: dict, **spec) -> dict:
    return {"apiVersion": "v1", "kind": "ResourceQuota",
            "metadata": {"name": name}, "spec": {"hard": hard, **spec}}


def used(kc, ns: str, name: str) -> dict:
    rq = kc.json("get", "resourcequota", name, "-n", ns)
    return (rq.get("status") or {}).get("used") or {}


def wait_used(kc, ns: str, name: str, resource: str, want: str) -> None:
    wait_until(lambda: used(kc, ns, name).get(resource) == want, timeout=60,
               message=f"quota {name} used {resource}={want}")


def test_pod_count_quota_refuses_the_third_pod_and_describe_shows_usage(kc, qns):
    kc.apply_yaml("create", quota("q", {"pods": "2"}), "-n", qns)
    # the controller fills in status.used before anything is admitted against it
    wait_used(kc, qns, "q", "pods", "0")
    kc("run", "a", "--image=busybox:1.36", "-n", qns)
    kc("run", "b", "--image=busybox:1.36", "-n", qns)
    out = kc("run", "c", "--image=busybox:1.36", "-n", qns, check=False)
    assert out.returncode != 0
    assert out.stderr.strip() == (
        'Error from server (Forbidden): pods "c" is forbidden: exceeded quota: q, '
        'requested: pods=1, used: pods=2, limited: pods=2')
    described = kc("describe", "quota", "q", "-n", qns).stdout
    assert re.search(r"^Name:\s+q$", described, re.M), described
    assert re.search(r"^Resource\s+Used\s+Hard$", described, re.M), described
    assert re.search(r"^pods\s+2\s+2$", described, re.M), described
    # a deleted pod gives its quota back (the controller's replenishment)
    kc("delete", "pod", "a", "-n", qns, "--wait=true")
    wait_used(kc, qns, "q", "pods", "1")
    kc("run", "c", "--image=busybox:1.36", "-n", qns)
    assert re.search(r"^pods\s+2\s+2$",
                     kc("describe", "quota", "q", "-n", qns).stdout, re.M)


def test_compute_quota_requires_requests_and_limits(kc, qns):
    kc.apply_yaml("create", quota("compute", {"requests.cpu": "1", "limits.memory": "1Gi"}),
                  "-n", qns)
    wait_used(kc, qns, "compute", "requests.cpu", "0")
    out = kc("run", "bare", "--image=busybox:1.36", "-n", qns, check=False)
    assert out.returncode != 0
    assert out.stderr.strip() == (
        'Error from server (Forbidden): pods "bare" is forbidden: failed quota: compute: '
        'must specify limits.memory for: bare; requests.cpu for: bare')
    overrides = {"apiVersion": "v1", "spec": {"containers": [{
        "name": "sized", "image": "busybox:1.36",
        "resources": {"requests": {"cpu": "600m"}, "limits": {"memory": "512Mi"}}}]}}
    kc("run", "sized", "--image=busybox:1.36", "-n", qns,
       f"--overrides={json.dumps(overrides)}")
    assert used(kc, qns, "compute") == {"requests.cpu": "600m", "limits.memory": "512Mi"}
    overrides["spec"]["containers"][0]["name"] = "again"
    out = kc("run", "again", "--image=busybox:1.36", "-n", qns,
             f"--overrides={json.dumps(overrides)}", check=False)
    assert out.returncode != 0
    assert ('pods "again" is forbidden: exceeded quota: compute, requested: '
            'requests.cpu=600m, used: requests.cpu=600m, limited: requests.cpu=1') in out.stderr


def test_object_count_quota_on_deployments(kc, qns):
    kc.apply_yaml("create", quota("counts", {"count/deployments.apps": "1"}), "-n", qns)
    wait_used(kc, qns, "counts", "count/deployments.apps", "0")
    kc("create", "deployment", "one", "--image=busybox:1.36", "-n", qns)
    out = kc("create", "deployment", "two", "--image=busybox:1.36", "-n", qns, check=False)
    assert out.returncode != 0
    assert ('deployments.apps "two" is forbidden: exceeded quota: counts, requested: '
            'count/deployments.apps=1, used: count/deployments.apps=1, '
            'limited: count/deployments.apps=1') in out.stderr
    kc("delete", "deployment", "one", "-n", qns)
    wait_used(kc, qns, "counts", "count/deployments.apps", "0")
    kc("create", "deployment", "two", "--image=busybox:1.36", "-n", qns)


def claim(name: str, size: str) -> dict:
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name},
            "spec": {"accessModes": ["ReadWriteOnce"],
                     "resources": {"requests": {"storage": size}}}}


def test_storage_quota_on_claims(kc, qns):
    kc.apply_yaml("create", quota("storage", {"requests.storage": "2Gi",
                                              "persistentvolumeclaims": "5"}), "-n", qns)
    wait_used(kc, qns, "storage", "requests.storage", "0")
    kc.apply_yaml("create", claim("small", "1Gi"), "-n", qns)
    assert used(kc, qns, "storage") == {"requests.storage": "1Gi",
                                        "persistentvolumeclaims": "1"}
    out = kc.apply_yaml("create", claim("big", "2Gi"), "-n", qns, check=False)
    assert out.returncode != 0
    assert ('persistentvolumeclaims "big" is forbidden: exceeded quota: storage, requested: '
            'requests.storage=2Gi, used: requests.storage=1Gi, limited: requests.storage=2Gi'
            ) in out.stderr
    kc("delete", "pvc", "small", "-n", qns, "--wait=true")
    wait_used(kc, qns, "storage", "requests.storage", "0")
    kc.apply_yaml("create", claim("big", "2Gi"), "-n", qns)
