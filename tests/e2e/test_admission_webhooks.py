"""Admission webhooks on `coxswain up`: a webhook server written with the runtime's
`webhook` module (crates/runtime/examples/admission_webhook.rs) is registered by a
ValidatingWebhookConfiguration and a MutatingWebhookConfiguration whose `service`
references name a Service of the cluster (type ExternalName `localhost`, the port the
example listens on: how the server reaches a webhook on its own host without
`--service-proxy-map`). The real kubectl sees upstream's denial message, a mutating
webhook defaults a label, and an unreachable webhook blocks writes under
`failurePolicy: Fail` but not under `Ignore`.

The configurations match only this module's namespace (namespaceSelector) or objects
with this module's labels (objectSelector), and are deleted at the end, so the shared
cluster's other tests are unaffected."""

from __future__ import annotations

import base64
import json
import socket
import subprocess
import time

import pytest

from conftest import coxswain_bin, free_port, stop_process, to_yaml, wait_until

NS = "webhook-e2e"
SELECT_NS = {"matchLabels": {"webhook-e2e": "on"}}


def example_binary():
    path = coxswain_bin().parent / "examples" / "admission_webhook"
    if not path.is_file():
        pytest.fail(
            f"{path} not found: cargo build -p coxswain-runtime --example admission_webhook",
            pytrace=False,
        )
    return path


@pytest.fixture(scope="module")
def webhook_server(tmp_path_factory):
    d = tmp_path_factory.mktemp("admission-webhook")
    log = open(d / "webhook.log", "wb")
    proc = subprocess.Popen(
        [str(example_binary()), str(d), f"webhook.{NS}.svc", f"down.{NS}.svc"],
        stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
    )
    try:
        wait_until(lambda: (d / "port").is_file() and (d / "port").read_text().strip(),
                   timeout=30, message="the webhook server's port file")
        port = int((d / "port").read_text())
        ca = base64.b64encode((d / "ca.crt").read_bytes()).decode()
        yield port, ca
    finally:
        stop_process(proc)
        log.close()


@pytest.fixture(scope="module")
def hooked(cluster, webhook_server):
    """The namespace, the webhook's Service and the two configurations; all removed at
    the end."""
    port, ca = webhook_server
    k = cluster.kubectl
    k("apply", "-f", "-", input=to_yaml([
        {"apiVersion": "v1", "kind": "Namespace",
         "metadata": {"name": NS, "labels": {"webhook-e2e": "on"}}},
        {"apiVersion": "v1", "kind": "Service",
         "metadata": {"name": "webhook", "namespace": NS},
         "spec": {"type": "ExternalName", "externalName": "localhost",
                  "ports": [{"name": "https", "port": port}]}},
    ]))

    def hook(name, path):
        return {"name": name, "sideEffects": "None", "admissionReviewVersions": ["v1"],
                "failurePolicy": "Fail", "namespaceSelector": SELECT_NS,
                "clientConfig": {"caBundle": ca, "service": {
                    "namespace": NS, "name": "webhook", "path": path, "port": port}},
                "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": [""],
                           "apiVersions": ["v1"], "resources": ["configmaps"]}]}

    k("apply", "-f", "-", input=to_yaml([
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
         "metadata": {"name": "webhook-e2e-validate"},
         "webhooks": [hook("validate.webhook-e2e.example.com", "/validate-configmap")]},
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
         "metadata": {"name": "webhook-e2e-default"},
         "webhooks": [hook("default.webhook-e2e.example.com", "/default-configmap")]},
    ]))
    yield cluster
    k("delete", "validatingwebhookconfiguration", "webhook-e2e-validate", "webhook-e2e-down",
      "--ignore-not-found")
    k("delete", "mutatingwebhookconfiguration", "webhook-e2e-default", "--ignore-not-found")
    k("delete", "namespace", NS, "--wait=false", "--ignore-not-found")


def configmap(name, data, labels=None):
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": NS, "labels": labels or {}},
            "data": data}


def test_a_bad_object_is_denied_with_upstreams_message(hooked):
    cp = hooked.kubectl("apply", "-f", "-", input=to_yaml(configmap("bad", {"forbidden": "x"})),
                        check=False)
    assert cp.returncode != 0, cp.stdout
    assert ('admission webhook "validate.webhook-e2e.example.com" denied the request: '
            'the data key "forbidden" is not allowed') in cp.stderr, cp.stderr
    assert "Error from server (Forbidden)" in cp.stderr, cp.stderr
    got = hooked.kubectl("get", "configmap", "bad", "-n", NS, check=False)
    assert got.returncode != 0 and "NotFound" in got.stderr


def test_a_mutating_webhook_defaults_a_label(hooked):
    hooked.kubectl("apply", "-f", "-", input=to_yaml(configmap("good", {"k": "v"})))
    cm = json.loads(hooked.kubectl("get", "configmap", "good", "-n", NS, "-o", "json").stdout)
    assert cm["metadata"]["labels"].get("defaulted-by") == "webhook", cm["metadata"]
    assert cm["data"] == {"k": "v"}
    # an update that would add the forbidden key is denied too
    cp = hooked.kubectl("apply", "-f", "-",
                        input=to_yaml(configmap("good", {"k": "v", "forbidden": "1"})), check=False)
    assert cp.returncode != 0
    assert 'denied the request: the data key "forbidden" is not allowed' in cp.stderr


def test_a_webhook_that_is_down_blocks_only_under_fail(hooked, webhook_server):
    _, ca = webhook_server
    closed = free_port()  # nothing listens there
    k = hooked.kubectl
    k("apply", "-f", "-", input=to_yaml(
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "down", "namespace": NS},
         "spec": {"type": "ExternalName", "externalName": "localhost",
                  "ports": [{"name": "https", "port": closed}]}}))

    def down(name, policy, label):
        return {"name": name, "sideEffects": "None", "admissionReviewVersions": ["v1"],
                "failurePolicy": policy, "namespaceSelector": SELECT_NS,
                "objectSelector": {"matchLabels": {"webhook-e2e-down": label}},
                "clientConfig": {"caBundle": ca, "service": {
                    "namespace": NS, "name": "down", "path": "/validate", "port": closed}},
                "rules": [{"operations": ["CREATE"], "apiGroups": [""],
                           "apiVersions": ["v1"], "resources": ["configmaps"]}]}

    k("apply", "-f", "-", input=to_yaml(
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
         "metadata": {"name": "webhook-e2e-down"},
         "webhooks": [down("ignore.webhook-e2e.example.com", "Ignore", "ignore"),
                      down("fail.webhook-e2e.example.com", "Fail", "fail")]}))
    k("apply", "-f", "-", input=to_yaml(
        configmap("ignored", {"a": "b"}, {"webhook-e2e-down": "ignore"})))
    assert k("get", "configmap", "ignored", "-n", NS).returncode == 0
    cp = k("apply", "-f", "-", input=to_yaml(
        configmap("failed", {"a": "b"}, {"webhook-e2e-down": "fail"})), check=False)
    assert cp.returncode != 0, cp.stdout
    assert "Error from server (InternalError)" in cp.stderr, cp.stderr
    assert ('Internal error occurred: failed calling webhook "fail.webhook-e2e.example.com": '
            f'failed to call webhook: Post "https://down.{NS}.svc:{closed}/validate?timeout=10s": '
            'dial tcp ') in cp.stderr, cp.stderr
    assert f":{closed}: connect: connection refused" in cp.stderr, cp.stderr
    k("delete", "validatingwebhookconfiguration", "webhook-e2e-down")
    # gone: the same object is admitted
    k("apply", "-f", "-", input=to_yaml(
        configmap("failed", {"a": "b"}, {"webhook-e2e-down": "fail"})))
