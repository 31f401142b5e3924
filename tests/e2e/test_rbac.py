"""RBAC authorization judged with the real kubectl: `kubectl auth can-i` (and `--list`),
`kubectl auth whoami`, SubjectAccessReviews, upstream's forbidden messages and the
refusal of privilege escalation.

The tests that act as a second user need a static token file (`--token-auth-file`,
upstream's format `token,user,uid,"group1,group2"`); they are skipped on a server
binary without that flag."""

from __future__ import annotations

import json
import re
import subprocess
import uuid

import pytest

from conftest import CoxswainServer, Kubectl, coxswain_bin, to_yaml

ALICE = "alice-e2e-token"


def sar(user: str, verb: str, resource: str, namespace: str) -> dict:
    return {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
            "spec": {"user": user,
                     "resourceAttributes": {"verb": verb, "resource": resource,
                                            "namespace": namespace}}}


def test_admin_can_i_and_whoami(kubectl: Kubectl):
    out = kubectl("auth", "can-i", "create", "pods")
    assert out.stdout.strip() == "yes"
    out = kubectl("auth", "can-i", "get", "/healthz")
    assert out.stdout.strip() == "yes"
    who = kubectl("auth", "whoami").stdout
    assert re.search(r"^Username\s+kubernetes-admin$", who, re.M), who
    assert re.search(r"^Groups\s+\[system:masters system:authenticated\]$", who, re.M), who
    doc = json.loads(kubectl("auth", "whoami", "-o", "json").stdout)
    assert doc["kind"] == "SelfSubjectReview"
    assert doc["status"]["userInfo"]["username"] == "kubernetes-admin"


def test_subject_access_review_names_the_binding(kubectl: Kubectl):
    suffix = uuid.uuid4().hex[:6]
    ns = f"rbac-sar-{suffix}"
    role = f"pod-reader-{suffix}"
    user = f"alice-{suffix}"
    kubectl("create", "namespace", ns)
    kubectl("create", "clusterrole", role, "--verb=get,list", "--resource=pods")
    kubectl("create", "rolebinding", "read-pods", f"--clusterrole={role}", f"--user={user}",
            "-n", ns)
    got = json.loads(kubectl("create", "-f", "-", "-o", "json",
                             input=to_yaml(sar(user, "list", "pods", ns))).stdout)
    assert got["status"] == {
        "allowed": True,
        "reason": f'RBAC: allowed by RoleBinding "read-pods/{ns}" of ClusterRole "{role}" '
                  f'to User "{user}"',
    }
    got = json.loads(kubectl("create", "-f", "-", "-o", "json",
                             input=to_yaml(sar(user, "list", "pods", "default"))).stdout)
    assert got["status"]["allowed"] is False
    # reviews are not stored
    out = kubectl("get", "subjectaccessreviews", check=False)
    assert out.returncode != 0
    assert "the server does not allow this method on the requested resource" in out.stderr
    kubectl("delete", "namespace", ns, "--wait=false", check=False)
    kubectl("delete", "clusterrole", role, check=False)


def _has_token_file_flag() -> bool:
    out = subprocess.run([str(coxswain_bin()), "apiserver", "--help"], capture_output=True,
                         text=True)
    return "--token-auth-file" in out.stdout


@pytest.fixture
def alice_server(tmp_path):
    if not _has_token_file_flag():
        pytest.skip("the server has no --token-auth-file (a second identity is needed)")
    tokens = tmp_path / "tokens.csv"
    tokens.write_text(f'{ALICE},alice,alice-uid,"devs"\n')
    srv = CoxswainServer(tmp_path / "coxswain", name="rbac")
    srv.start(extra_args=["--token-auth-file", str(tokens)])
    yield srv
    srv.stop()


def test_second_user_is_authorized_by_rbac(alice_server: CoxswainServer):
    admin = Kubectl(alice_server)

    def alice(*args, check=True, input=None):
        return admin(f"--token={ALICE}", *args, check=check, input=input)

    admin("create", "namespace", "team")
    admin("create", "clusterrole", "pod-reader", "--verb=get,list", "--resource=pods")
    admin("create", "rolebinding", "read-pods", "--clusterrole=pod-reader", "--user=alice",
          "-n", "team")
    admin("create", "role", "rbac-editor", "--verb=create,update,patch",
          "--resource=roles,rolebindings", "-n", "team")
    admin("create", "rolebinding", "alice-edits", "--role=rbac-editor", "--user=alice",
          "-n", "team")
    # what `kubectl auth can-i` needs, whatever the bootstrap policy says
    admin("create", "clusterrole", "self-review",
          "--verb=create", "--resource=selfsubjectaccessreviews.authorization.k8s.io,"
          "selfsubjectrulesreviews.authorization.k8s.io,selfsubjectreviews.authentication.k8s.io")
    admin("create", "clusterrolebinding", "self-review", "--clusterrole=self-review",
          "--group=system:authenticated")

    assert alice("auth", "can-i", "list", "pods", "-n", "team").stdout.strip() == "yes"
    out = alice("auth", "can-i", "delete", "pods", "-n", "team", check=False)
    assert out.returncode == 1 and out.stdout.strip() == "no"
    who = alice("auth", "whoami").stdout
    assert re.search(r"^Username\s+alice$", who, re.M), who
    assert re.search(r"^UID\s+alice-uid$", who, re.M), who
    assert re.search(r"^Groups\s+\[devs system:authenticated\]$", who, re.M), who

    listed = alice("auth", "can-i", "--list", "-n", "team").stdout
    assert re.search(r"^pods\s+\[\]\s+\[\]\s+\[get list\]$", listed, re.M), listed
    assert re.search(r"^roles\.rbac\.authorization\.k8s\.io\s+\[\]\s+\[\]\s+"
                     r"\[create update patch\]$", listed, re.M), listed

    out = alice("get", "pods", "-n", "default", check=False)
    assert out.returncode != 0
    assert ('Error from server (Forbidden): pods is forbidden: User "alice" cannot list '
            'resource "pods" in API group "" in the namespace "default"') in out.stderr

    # a role with rules alice holds: yes; with more: refused with upstream's message
    alice("create", "role", "reader", "--verb=get", "--resource=pods", "-n", "team")
    out = alice("create", "role", "deleter", "--verb=get,delete", "--resource=pods",
                "-n", "team", check=False)
    assert out.returncode != 0
    assert ('Error from server (Forbidden): roles.rbac.authorization.k8s.io "deleter" is '
            'forbidden: user "alice" (groups=["devs" "system:authenticated"]) is attempting '
            'to grant RBAC permissions not currently held:\n'
            '{APIGroups:[""], Resources:["pods"], Verbs:["delete"]}') in out.stderr
    # binding a role she does not hold is refused; one she holds is not
    admin("create", "clusterrole", "everything", "--verb=*", "--resource=*.*")
    out = alice("create", "rolebinding", "bob-all", "--clusterrole=everything",
                "--user=bob", "-n", "team", check=False)
    assert out.returncode != 0
    assert ('error: failed to create rolebinding: rolebindings.rbac.authorization.k8s.io '
            '"bob-all" is forbidden: user "alice" (groups=["devs" "system:authenticated"]) is '
            'attempting to grant RBAC permissions not currently held:\n'
            '{APIGroups:["*"], Resources:["*"], Verbs:["*"]}') in out.stderr, out.stderr
    alice("create", "rolebinding", "bob-reads", "--clusterrole=pod-reader", "--user=bob",
          "-n", "team")


def test_invalid_token_is_refused_on_health(server: CoxswainServer):
    import requests

    r = requests.get(f"{server.server_url}/healthz", verify=server.ca_file, timeout=10)
    assert r.status_code == 200 and r.text == "ok"
    r = requests.get(f"{server.server_url}/healthz", verify=server.ca_file, timeout=10,
                     headers={"Authorization": "Bearer wrong"})
    assert r.status_code == 401
    assert r.json()["reason"] == "Unauthorized"
