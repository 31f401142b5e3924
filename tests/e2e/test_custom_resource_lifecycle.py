"""Custom resources in the object lifecycle of `coxswain up`: the garbage collector
collects what a custom resource owns, and namespace deletion removes custom resources
too, waiting on a custom finalizer with the upstream condition."""

from __future__ import annotations

import json
import uuid

import pytest

from conftest import Kubectl, wait_until
from test_crds_and_apply import crd, widget


@pytest.fixture
def kc(cluster) -> Kubectl:
    return Kubectl(cluster)


@pytest.fixture
def installed(kc):
    group = f"life{uuid.uuid4().hex[:8]}.example.com"
    kc.apply_yaml("apply", crd(group))
    kc("wait", "--for=condition=established", "--timeout=10s", f"crd/widgets.{group}")
    yield group
    kc("delete", "crd", f"widgets.{group}", "--wait=false", check=False)


def test_custom_resource_owner_collects_its_configmaps(kc, installed):
    group = installed
    ns = f"own-{uuid.uuid4().hex[:6]}"
    kc("create", "namespace", ns)
    kc.apply_yaml("apply", widget(group, "owner", {"size": 1}), "-n", ns)
    uid = kc.json("get", f"widgets.{group}", "owner", "-n", ns)["metadata"]["uid"]
    for i in range(3):
        kc.apply_yaml("apply", {
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": f"child-{i}", "ownerReferences": [{
                "apiVersion": f"{group}/v1", "kind": "Widget", "name": "owner", "uid": uid,
                "controller": True, "blockOwnerDeletion": True}]},
            "data": {"i": str(i)}}, "-n", ns)
    kc("delete", f"widgets.{group}", "owner", "-n", ns)
    # the collector finds the new resource at its next discovery pass (30 s upstream)
    wait_until(lambda: not [c for c in kc.json("get", "cm", "-n", ns, "-o", "json")["items"]
                            if c["metadata"]["name"].startswith("child-")],
               timeout=75, message="owned ConfigMaps collected")
    kc("delete", "namespace", ns, "--wait=false")


def test_namespace_deletion_removes_custom_resources_and_waits_for_finalizers(kc, installed):
    group = installed
    ns = f"nsdel-{uuid.uuid4().hex[:6]}"
    kc("create", "namespace", ns)
    kc("create", "deployment", "web", "--image=nginx:1.27", "--replicas=1", "-n", ns)
    kc.apply_yaml("apply", widget(group, "plain", {"size": 1}), "-n", ns)
    held = widget(group, "held", {"size": 2})
    held["metadata"]["finalizers"] = ["example.com/hold"]
    kc.apply_yaml("apply", held, "-n", ns)
    kc("delete", "namespace", ns, "--wait=false")

    def waiting_on_finalizer():
        n = kc.json("get", "namespace", ns)
        conds = {c["type"]: c for c in n.get("status", {}).get("conditions", [])}
        c = conds.get("NamespaceFinalizersRemaining")
        return c if c and c["status"] == "True" else None
    cond = wait_until(waiting_on_finalizer, timeout=60, message="FinalizersRemaining")
    assert "example.com/hold in 1 resource instances" in cond["message"], cond
    assert kc.json("get", "namespace", ns)["status"]["phase"] == "Terminating"
    # everything else is gone; the held widget waits with a deletion timestamp
    assert kc("get", f"widgets.{group}", "plain", "-n", ns, check=False).returncode != 0
    assert not kc.json("get", "deployments", "-n", ns, "-o", "json")["items"]
    got = kc.json("get", f"widgets.{group}", "held", "-n", ns)
    assert got["metadata"].get("deletionTimestamp")
    kc("patch", f"widgets.{group}", "held", "-n", ns, "--type=merge",
       "-p", json.dumps({"metadata": {"finalizers": None}}))
    wait_until(lambda: kc("get", "namespace", ns, check=False).returncode != 0,
               timeout=60, message="namespace gone")
