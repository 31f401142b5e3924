"""The kinds issue 20 adds, with the real kubectl on `coxswain up`: create, get, list,
watch, update and delete of the admissionregistration.k8s.io/v1 kinds (stored here;
their behaviour is tested elsewhere), node.k8s.io/v1 RuntimeClass and the four
resource.k8s.io/v1 DRA kinds; the RuntimeClass admission plugin on pods; and
`kubectl api-resources` against the resources a real kube-apiserver 1.36 lists
(crates/apiserver/tests/fixtures/kube-apiserver-1.36/discovery/, recorded from 1.36)."""

import json
import time
import uuid
from pathlib import Path

import pytest

from conftest import Kubectl, StreamReader, cluster_namespace, parse_json_stream, stop_process

FIXTURES = (Path(__file__).resolve().parents[2] / "crates" / "apiserver" / "tests"
            / "fixtures" / "kube-apiserver-1.36" / "discovery")

# a resource no request ever names: the admission objects created here match nothing
NOWHERE = {"apiGroups": ["e2e.coxswain.dev"], "apiVersions": ["v1"],
           "resources": ["nothings"]}


@pytest.fixture
def kc(cluster) -> Kubectl:
    return Kubectl(cluster)


@pytest.fixture
def tns(kc) -> str:
    yield from cluster_namespace(kc, "newkinds")


def objects(suffix: str, namespace: str) -> list[tuple[str, dict]]:
    """(resource, manifest) of one object of every new kind."""
    hook = {"name": "nothing.e2e.coxswain.dev", "sideEffects": "None",
            "admissionReviewVersions": ["v1"], "failurePolicy": "Ignore",
            "clientConfig": {"url": "https://127.0.0.1:1/never"},
            "rules": [{"operations": ["CREATE"], **NOWHERE}]}
    match = {"resourceRules": [{"operations": ["CREATE"], **NOWHERE}]}
    claim_spec = {"devices": {"requests": [
        {"name": "gpu", "exactly": {"deviceClassName": f"gpu-{suffix}"}}]}}
    adm = "admissionregistration.k8s.io/v1"
    res = "resource.k8s.io/v1"
    return [
        ("validatingwebhookconfigurations", {
            "apiVersion": adm, "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": f"vwc-{suffix}"}, "webhooks": [hook]}),
        ("mutatingwebhookconfigurations", {
            "apiVersion": adm, "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": f"mwc-{suffix}"}, "webhooks": [hook]}),
        ("validatingadmissionpolicies", {
            "apiVersion": adm, "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": f"vap-{suffix}"},
            "spec": {"failurePolicy": "Fail", "matchConstraints": match,
                     "validations": [{"expression": "true"}]}}),
        ("validatingadmissionpolicybindings", {
            "apiVersion": adm, "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": f"vapb-{suffix}"},
            "spec": {"policyName": f"vap-{suffix}", "validationActions": ["Deny"]}}),
        ("mutatingadmissionpolicies", {
            "apiVersion": adm, "kind": "MutatingAdmissionPolicy",
            "metadata": {"name": f"map-{suffix}"},
            "spec": {"failurePolicy": "Fail", "matchConstraints": match,
                     "reinvocationPolicy": "Never",
                     "mutations": [{"patchType": "ApplyConfiguration",
                                    "applyConfiguration": {"expression": "Object{}"}}]}}),
        ("mutatingadmissionpolicybindings", {
            "apiVersion": adm, "kind": "MutatingAdmissionPolicyBinding",
            "metadata": {"name": f"mapb-{suffix}"},
            "spec": {"policyName": f"map-{suffix}"}}),
        ("runtimeclasses", {
            "apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
            "metadata": {"name": f"rc-{suffix}"}, "handler": "runc"}),
        ("deviceclasses", {
            "apiVersion": res, "kind": "DeviceClass", "metadata": {"name": f"gpu-{suffix}"},
            "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]}}),
        ("resourceclaims", {
            "apiVersion": res, "kind": "ResourceClaim",
            "metadata": {"name": f"claim-{suffix}", "namespace": namespace},
            "spec": claim_spec}),
        ("resourceclaimtemplates", {
            "apiVersion": res, "kind": "ResourceClaimTemplate",
            "metadata": {"name": f"tmpl-{suffix}", "namespace": namespace},
            "spec": {"spec": claim_spec}}),
        ("resourceslices", {
            "apiVersion": res, "kind": "ResourceSlice", "metadata": {"name": f"slice-{suffix}"},
            "spec": {"driver": "gpu.example.com", "nodeName": f"node-{suffix}",
                     "pool": {"name": "pool", "resourceSliceCount": 1},
                     "devices": [{"name": "gpu-0",
                                  "attributes": {"model": {"string": "a100"}}}]}}),
    ]


# upstream's printers (the admission policies' tables come with their evaluation work)
HEADERS = {
    "validatingwebhookconfigurations": ["NAME", "WEBHOOKS", "AGE"],
    "mutatingwebhookconfigurations": ["NAME", "WEBHOOKS", "AGE"],
    "runtimeclasses": ["NAME", "HANDLER", "AGE"],
    "deviceclasses": ["NAME", "AGE"],
    "resourceclaims": ["NAME", "STATE", "AGE"],
    "resourceclaimtemplates": ["NAME", "AGE"],
    "resourceslices": ["NAME", "NODE", "DRIVER", "POOL", "AGE"],
}


def wait_for(reader: StreamReader, pred, what: str, timeout: float = 30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        events = parse_json_stream(reader.text())
        if pred(events):
            return events
        time.sleep(0.05)
    pytest.fail(f"{what}: watch saw {[(e.get('type'), e.get('object', {}).get('metadata', {}).get('name')) for e in parse_json_stream(reader.text())]}")


@pytest.mark.parametrize("index", range(11))
def test_round_trip(kc, tns, index):
    suffix = uuid.uuid4().hex[:6]
    resource, manifest = objects(suffix, tns)[index]
    name = manifest["metadata"]["name"]
    ns_args = ["-n", tns] if "namespace" in manifest["metadata"] else []
    kc.apply_yaml("create", manifest)
    got = kc.json("get", resource, name, *ns_args)
    assert got["kind"] == manifest["kind"]
    assert got["metadata"]["name"] == name
    # list: the table kubectl prints names it, under upstream's columns
    listed = kc("get", resource, *ns_args).stdout
    assert name in listed, listed
    if resource in HEADERS:
        assert listed.splitlines()[0].split() == HEADERS[resource], listed
    if resource == "resourceclaims":
        assert listed.splitlines()[1].split()[:2] == [name, "pending"], listed
    # watch: the initial ADDED proves the watch is established, then our update and delete
    proc = kc.popen("get", resource, name, *ns_args, "--watch", "--output-watch-events", "-o", "json")
    try:
        reader = StreamReader(proc.stdout)
        wait_for(reader, lambda ev: any(e["type"] == "ADDED" for e in ev), f"{resource} ADDED")
        kc("label", resource, name, *ns_args, "e2e=updated")
        events = wait_for(reader, lambda ev: any(
            e["type"] == "MODIFIED" and e["object"]["metadata"].get("labels", {}).get("e2e") == "updated"
            for e in ev), f"{resource} MODIFIED")
        rv = next(e for e in events if e["type"] == "MODIFIED")["object"]["metadata"]["resourceVersion"]
        assert int(rv) > int(got["metadata"]["resourceVersion"])
        kc("delete", resource, name, *ns_args)
        wait_for(reader, lambda ev: any(e["type"] == "DELETED" for e in ev), f"{resource} DELETED")
    finally:
        stop_process(proc)
    cp = kc("get", resource, name, *ns_args, check=False)
    assert cp.returncode != 0 and "NotFound" in cp.stderr, cp.stderr


def test_webhook_configuration_defaults_and_validation(kc):
    suffix = uuid.uuid4().hex[:6]
    _, manifest = objects(suffix, "default")[1]
    del manifest["webhooks"][0]["failurePolicy"]
    kc.apply_yaml("create", manifest)
    try:
        hook = kc.json("get", "mutatingwebhookconfiguration", manifest["metadata"]["name"])["webhooks"][0]
        assert hook["failurePolicy"] == "Fail"
        assert hook["matchPolicy"] == "Equivalent"
        assert hook["namespaceSelector"] == {} and hook["objectSelector"] == {}
        assert hook["timeoutSeconds"] == 10
        assert hook["reinvocationPolicy"] == "Never"
        assert hook["rules"][0]["scope"] == "*"
    finally:
        kc("delete", "mutatingwebhookconfiguration", manifest["metadata"]["name"], check=False)
    bad = json.loads(json.dumps(manifest))
    bad["metadata"]["name"] = f"bad-{suffix}"
    bad["webhooks"][0]["clientConfig"] = {"url": "http://example.com"}
    bad["webhooks"][0]["timeoutSeconds"] = 31
    cp = kc.apply_yaml("create", bad, check=False)
    assert cp.returncode != 0
    assert "webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds" in cp.stderr, cp.stderr
    assert "'https' is the only allowed URL scheme" in cp.stderr, cp.stderr


def pod_manifest(name: str, runtime_class: str, **spec) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"runtimeClassName": runtime_class,
                     "containers": [{"name": "c", "image": "busybox"}], **spec}}


def test_runtime_class_admission(kc, tns):
    rc = f"kata-{uuid.uuid4().hex[:6]}"
    kc.apply_yaml("create", {
        "apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": rc},
        "handler": "kata", "overhead": {"podFixed": {"cpu": "250m", "memory": "120Mi"}},
        "scheduling": {"nodeSelector": {"e2e.coxswain.dev/runtime": rc},
                       "tolerations": [{"key": "e2e.coxswain.dev/kata", "operator": "Exists",
                                        "effect": "NoSchedule"}]}})
    try:
        kc.apply_yaml("create", pod_manifest("with-class", rc), "-n", tns)
        pod = kc.json("get", "pod", "with-class", "-n", tns)
        assert pod["spec"]["overhead"] == {"cpu": "250m", "memory": "120Mi"}
        assert pod["spec"]["nodeSelector"] == {"e2e.coxswain.dev/runtime": rc}
        assert {"key": "e2e.coxswain.dev/kata", "operator": "Exists",
                "effect": "NoSchedule"} in pod["spec"]["tolerations"]

        cp = kc.apply_yaml("create", pod_manifest("other-overhead", rc, overhead={"cpu": "1"}),
                           "-n", tns, check=False)
        assert cp.returncode != 0
        assert ('pods "other-overhead" is forbidden: pod rejected: Pod\'s Overhead doesn\'t '
                "match RuntimeClass's defined Overhead") in cp.stderr, cp.stderr

        cp = kc.apply_yaml("create", pod_manifest(
            "conflict", rc, nodeSelector={"e2e.coxswain.dev/runtime": "other"}), "-n", tns, check=False)
        assert cp.returncode != 0
        assert (f"conflict: runtimeClass.scheduling.nodeSelector[e2e.coxswain.dev/runtime] = {rc}; "
                "pod.spec.nodeSelector[e2e.coxswain.dev/runtime] = other") in cp.stderr, cp.stderr
    finally:
        kc("delete", "runtimeclass", rc, check=False)
    cp = kc.apply_yaml("create", pod_manifest("missing", f"gone-{rc}"), "-n", tns, check=False)
    assert cp.returncode != 0
    assert f'pods "missing" is forbidden: pod rejected: RuntimeClass "gone-{rc}" not found' in cp.stderr, cp.stderr


def test_resource_slice_field_selectors(kc):
    suffix = uuid.uuid4().hex[:6]
    _, slice_ = objects(suffix, "default")[10]
    kc.apply_yaml("create", slice_)
    try:
        names = kc("get", "resourceslices", "-o", "name",
                   f"--field-selector=spec.nodeName=node-{suffix},spec.driver=gpu.example.com").stdout.split()
        assert names == [f"resourceslice.resource.k8s.io/slice-{suffix}"]
        none = kc("get", "resourceslices", "-o", "name",
                  f"--field-selector=spec.nodeName=elsewhere-{suffix}").stdout.split()
        assert none == []
        table = kc("get", "resourceslice", f"slice-{suffix}").stdout.splitlines()
        assert table[0].split() == ["NAME", "NODE", "DRIVER", "POOL", "AGE"]
        assert table[1].split()[:4] == [f"slice-{suffix}", f"node-{suffix}", "gpu.example.com", "pool"]
    finally:
        kc("delete", "resourceslice", f"slice-{suffix}", check=False)


def recorded_resources() -> set[tuple[str, str]]:
    """(resource, group/version) of every resource 1.36 lists in its preferred version."""
    out = set()
    for file in ("api-aggregated.json", "apis-aggregated.json"):
        doc = json.loads((FIXTURES / file).read_text())
        for group in doc["items"]:
            gname = group["metadata"].get("name", "")
            preferred = group["versions"][0]
            gv = f"{gname}/{preferred['version']}" if gname else preferred["version"]
            for r in preferred["resources"]:
                out.add((r["resource"], gv))
    return out


def served_resources(kc) -> set[tuple[str, str]]:
    lines = kc("api-resources").stdout.splitlines()
    header = lines[0]
    name_end = header.index("SHORTNAMES")
    av_start = header.index("APIVERSION")
    av_end = header.index("NAMESPACED")
    return {(line[:name_end].strip(), line[av_start:av_end].strip()) for line in lines[1:] if line.strip()}


# componentstatuses: deprecated and computed by kube-apiserver, not served by coxswain
NOT_SERVED = {("componentstatuses", "v1")}

# `coxswain up` serves the resource metrics API (as a cluster with metrics-server does);
# the recorded cluster had none
EXTRA_ON_UP = {("nodes", "metrics.k8s.io/v1beta1"), ("pods", "metrics.k8s.io/v1beta1")}


def test_api_resources_match_kube_apiserver(kc):
    """Every resource 1.36 lists is listed (flowcontrol.apiserver.k8s.io and
    apiregistration.k8s.io come with the flowcontrol/aggregation work merged alongside this
    one), and nothing else is."""
    want = recorded_resources() - NOT_SERVED
    got = served_resources(kc)
    missing = sorted(want - got)
    extra = sorted(got - want - NOT_SERVED - EXTRA_ON_UP)
    assert not missing, f"not listed by kubectl api-resources: {missing}"
    assert not extra, f"listed but not by kube-apiserver 1.36: {extra}"


def test_bindings_collection_binds_the_named_pod(kc, tns):
    """`bindings` (v1, create only): kubectl creates a Binding, the pod it names is bound."""
    kc.apply_yaml("create", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "unbound"},
        "spec": {"schedulerName": "e2e-nobody", "containers": [{"name": "c", "image": "busybox"}]},
    }, "-n", tns)
    node = kc.json("get", "nodes")["items"][0]["metadata"]["name"]
    kc.apply_yaml("create", {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "unbound"},
                             "target": {"apiVersion": "v1", "kind": "Node", "name": node}}, "-n", tns)
    assert kc.json("get", "pod", "unbound", "-n", tns)["spec"]["nodeName"] == node
    cp = kc.apply_yaml("create", {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "unbound"},
                                  "target": {"apiVersion": "v1", "kind": "Node", "name": node}},
                       "-n", tns, check=False)
    assert cp.returncode != 0 and "is already assigned to node" in cp.stderr, cp.stderr


@pytest.mark.parametrize("resource,kind", [
    ("validatingwebhookconfigurations", "ValidatingWebhookConfiguration"),
    ("mutatingwebhookconfigurations", "MutatingWebhookConfiguration"),
    ("runtimeclasses", "RuntimeClass"),
    ("deviceclasses", "DeviceClass"),
    ("resourceclaims", "ResourceClaim"),
    ("resourceclaimtemplates", "ResourceClaimTemplate"),
    ("resourceslices", "ResourceSlice"),
])
def test_explain(kc, resource, kind):
    """kubectl explain reads the kinds' OpenAPI v3 documents."""
    out = kc("explain", resource).stdout
    assert f"KIND:       {kind}" in out, out
