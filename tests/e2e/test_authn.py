"""Authentication with the real kubectl: `kubectl create token` (TokenRequest) and
the tokens it gives, tokens from --token-auth-file, pod-bound tokens that stop
working with their pod, impersonation (`--as`), and `kubectl auth whoami` when the
server serves SelfSubjectReview.
"""

import json
import uuid

import pytest

from conftest import CoxswainServer, Kubectl, to_yaml

# --raw: no discovery first (which the bootstrap RBAC policy grants to everyone
# authenticated), so the answer is the authorizer's on this request
SECRETS = "/api/v1/namespaces/kube-system/secrets"
TOKENS = 'jane-token,jane,u-jane,"dev,ops"\nroot-token,root,u-root,system:masters\n'


@pytest.fixture(scope="module")
def authn_server(tmp_path_factory):
    base = tmp_path_factory.mktemp("authn")
    tokens = base / "tokens.csv"
    tokens.write_text(TOKENS)
    s = CoxswainServer(base, name="authn").start(
        extra_args=["--token-auth-file", str(tokens)])
    yield s
    s.stop()


@pytest.fixture(scope="module")
def kc(authn_server):
    return Kubectl(authn_server)


def forbidden_user(cp) -> str:
    """The user a Forbidden answer names."""
    assert cp.returncode != 0, cp.stdout
    assert "(Forbidden)" in cp.stderr, cp.stderr
    return cp.stderr.split('User "')[1].split('"')[0]


def unauthorized(cp) -> bool:
    return cp.returncode != 0 and "Unauthorized" in cp.stderr


def test_create_token_authenticates_as_the_service_account(kc):
    sa = f"robot-{uuid.uuid4().hex[:6]}"
    kc("create", "serviceaccount", sa)
    token = kc("create", "token", sa).stdout.strip()
    assert token.count(".") == 2, token
    cp = kc("--token", token, "get", "--raw", SECRETS, check=False)
    assert forbidden_user(cp) == f"system:serviceaccount:default:{sa}"
    # the lifetime is validated as upstream does
    cp = kc("create", "token", sa, "--duration=5m", check=False)
    assert cp.returncode != 0
    assert "may not specify a duration less than 10 minutes" in cp.stderr, cp.stderr
    # a deleted service account's tokens stop working
    kc("delete", "serviceaccount", sa)
    assert unauthorized(kc("--token", token, "get", "pods", check=False))


def test_pod_bound_token_stops_with_its_pod(kc):
    sa = f"bound-{uuid.uuid4().hex[:6]}"
    kc("create", "serviceaccount", sa)
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p-{sa}"},
           "spec": {"serviceAccountName": sa,
                    "containers": [{"name": "c", "image": "nginx"}]}}
    kc("create", "-f", "-", input=to_yaml(pod))
    token = kc("create", "token", sa, "--bound-object-kind", "Pod",
               "--bound-object-name", f"p-{sa}").stdout.strip()
    cp = kc("--token", token, "get", "--raw", SECRETS, check=False)
    assert forbidden_user(cp) == f"system:serviceaccount:default:{sa}"
    kc("delete", "pod", f"p-{sa}", "--grace-period=0", "--force")
    assert unauthorized(kc("--token", token, "get", "pods", check=False))


def test_token_auth_file(kc):
    cp = kc("--token", "jane-token", "get", "--raw", SECRETS, check=False)
    assert forbidden_user(cp) == "jane"
    kc("--token", "root-token", "get", "--raw", SECRETS)
    assert unauthorized(kc("--token", "nobody", "get", "pods", check=False))


def test_impersonation(kc):
    cp = kc("--as", "jane", "get", "--raw", SECRETS, check=False)
    assert forbidden_user(cp) == "jane"
    kc("--as", "jane", "--as-group", "system:masters", "get", "--raw", SECRETS)
    cp = kc("--token", "jane-token", "--as", "root", "get", "pods", check=False)
    assert cp.returncode != 0
    assert 'cannot impersonate resource "users"' in cp.stderr, cp.stderr


def test_whoami(kc):
    cp = kc("auth", "whoami", "-o", "json", check=False)
    if cp.returncode != 0:
        pytest.skip(f"SelfSubjectReview is not served: {cp.stderr.strip()}")
    assert json.loads(cp.stdout)["status"]["userInfo"]["username"] == "kubernetes-admin"
    out = json.loads(kc("--token", "jane-token", "auth", "whoami", "-o", "json").stdout)
    assert out["status"]["userInfo"]["username"] == "jane"
    assert "dev" in out["status"]["userInfo"]["groups"]
