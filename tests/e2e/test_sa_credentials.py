"""`coxswain up --use-service-account-credentials`: every controller runs as its own
service account in kube-system (kube-controller-manager's per-controller credentials),
and the legacy token controller fills service-account-token Secrets with tokens signed
by the API server's service account key (the data dir's sa.key)."""

from __future__ import annotations

import base64
import json

import pytest

from conftest import CoxswainServer, to_yaml, wait_until


@pytest.fixture(scope="module")
def sa_cluster(tmp_path_factory):
    srv = CoxswainServer(tmp_path_factory.mktemp("coxswain-sa-up"), name="sa-up", command="up")
    srv.start(extra_args=["--use-service-account-credentials"])
    core = json.loads(srv.kubectl("get", "--raw", "/api/v1").stdout)
    if not any(r["name"] == "serviceaccounts/token" for r in core["resources"]):
        srv.stop()
        pytest.skip("the API server does not serve TokenRequest (serviceaccounts/token)")
    yield srv
    srv.stop()


def test_controllers_run_as_their_service_accounts(sa_cluster):
    k = sa_cluster.kubectl
    want = {"deployment-controller", "replicaset-controller", "generic-garbage-collector",
            "node-controller", "namespace-controller", "service-account-controller"}

    def accounts():
        out = k("get", "serviceaccounts", "-n", "kube-system", "-o", "json").stdout
        return {i["metadata"]["name"] for i in json.loads(out)["items"]}

    wait_until(lambda: want <= accounts(), timeout=60)
    k("create", "namespace", "sa-e2e")
    k("create", "deployment", "web", "--image=nginx", "--replicas=2", "-n", "sa-e2e")
    wait_until(lambda: k("get", "deployment", "web", "-n", "sa-e2e",
                         "-o", "jsonpath={.status.readyReplicas}").stdout == "2", timeout=60)
    # the ReplicaSet was written by the deployment controller as its account
    rs = json.loads(k("get", "replicasets", "-n", "sa-e2e", "-o", "json").stdout)["items"]
    assert rs and rs[0]["metadata"]["ownerReferences"][0]["name"] == "web"


def test_legacy_token_secrets_get_a_working_token(sa_cluster):
    k = sa_cluster.kubectl
    k("create", "namespace", "sa-token")
    wait_until(lambda: k("get", "serviceaccount", "default", "-n", "sa-token",
                         check=False).returncode == 0, timeout=30)
    secret = {
        "apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/service-account-token",
        "metadata": {"name": "default-token", "namespace": "sa-token",
                     "annotations": {"kubernetes.io/service-account.name": "default"}},
    }
    k("apply", "-f", "-", input=to_yaml([secret]))

    def token():
        out = k("get", "secret", "default-token", "-n", "sa-token",
                "-o", "jsonpath={.data.token}").stdout
        return base64.b64decode(out).decode() if out else None

    jwt = wait_until(token, timeout=30)
    data = json.loads(k("get", "secret", "default-token", "-n", "sa-token", "-o", "json").stdout)
    assert base64.b64decode(data["data"]["namespace"]).decode() == "sa-token"
    assert "ca.crt" in data["data"]
    who = k("auth", "whoami", "-o", "json", f"--token={jwt}").stdout
    assert json.loads(who)["status"]["userInfo"]["username"] == \
        "system:serviceaccount:sa-token:default"
