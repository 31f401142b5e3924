"""Identity and access on `coxswain up`, as a user sees it with the real kubectl: a user
from --token-auth-file with a namespaced Role, service account tokens bound to a pod,
impersonation and the review APIs (issue 19's "Done when")."""

from __future__ import annotations

import json
import uuid

from conftest import CLUSTER_USERS, kubectl_as_token, wait_until


def _ns(cluster, prefix: str) -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:6]}"
    cluster.kubectl("create", "namespace", name)
    return name


def test_token_file_user_with_a_namespaced_role(cluster):
    team = _ns(cluster, "team")
    other = _ns(cluster, "other")
    token = CLUSTER_USERS["alice"][0]
    cluster.kubectl("-n", team, "create", "role", "pod-reader",
                    "--verb=get,list,watch", "--resource=pods")
    cluster.kubectl("-n", team, "create", "rolebinding", "alice-reads",
                    "--role=pod-reader", "--user=alice")
    # who she is, as the server authenticated her
    who = json.loads(kubectl_as_token(cluster, token, "auth", "whoami", "-o", "json").stdout)
    assert who["kind"] == "SelfSubjectReview"
    info = who["status"]["userInfo"]
    assert info["username"] == "alice"
    assert info["uid"] == "1001"
    assert info["groups"] == ["developers", "system:authenticated"]
    # allowed in her namespace (RBAC answers from the binding, no cache to wait for)
    out = kubectl_as_token(cluster, token, "-n", team, "get", "pods")
    assert out.returncode == 0
    assert "No resources found" in out.stderr
    # refused elsewhere, with kube-apiserver's message
    out = kubectl_as_token(cluster, token, "-n", other, "get", "pods", check=False)
    assert out.returncode != 0
    assert (f'Error from server (Forbidden): pods is forbidden: User "alice" cannot list '
            f'resource "pods" in API group "" in the namespace "{other}"') in out.stderr
    out = kubectl_as_token(cluster, token, "-n", team, "delete", "pod", "x", check=False)
    assert (f'pods "x" is forbidden: User "alice" cannot delete resource "pods" in API '
            f'group "" in the namespace "{team}"') in out.stderr
    out = kubectl_as_token(cluster, token, "get", "nodes", check=False)
    assert ('nodes is forbidden: User "alice" cannot list resource "nodes" in API group "" '
            'at the cluster scope') in out.stderr
    # can-i answers as the authorizer, for herself and (as the admin) for her
    assert kubectl_as_token(cluster, token, "auth", "can-i", "list", "pods", "-n", team
                            ).stdout.strip() == "yes"
    out = kubectl_as_token(cluster, token, "auth", "can-i", "list", "pods", "-n", other,
                           check=False)
    assert out.stdout.strip() == "no" and out.returncode == 1
    assert cluster.kubectl("auth", "can-i", "watch", "pods", "-n", team, "--as=alice"
                           ).stdout.strip() == "yes"
    out = cluster.kubectl("auth", "can-i", "create", "pods", "-n", team, "--as=alice",
                          check=False)
    assert out.stdout.strip() == "no"
    # bob is authenticated but bound to nothing
    out = kubectl_as_token(cluster, CLUSTER_USERS["bob"][0], "-n", team, "get", "pods",
                           check=False)
    assert 'User "bob" cannot list resource "pods"' in out.stderr
    # an unknown token is 401
    out = kubectl_as_token(cluster, "not-a-token", "get", "pods", check=False)
    assert "error: You must be logged in to the server (Unauthorized)" in out.stderr


def test_impersonation_needs_the_impersonate_verb(cluster):
    token = CLUSTER_USERS["bob"][0]
    out = kubectl_as_token(cluster, token, "get", "pods", "--as=alice", check=False)
    assert out.returncode != 0
    assert ('users "alice" is forbidden: User "bob" cannot impersonate resource "users" '
            'in API group "" at the cluster scope') in out.stderr
    # the admin impersonates; the impersonated user's permissions apply
    out = cluster.kubectl("get", "nodes", "--as=alice", check=False)
    assert 'User "alice" cannot list resource "nodes"' in out.stderr
    who = json.loads(cluster.kubectl("auth", "whoami", "--as=alice",
                                     "--as-group=developers", "-o", "json").stdout)
    assert who["status"]["userInfo"]["username"] == "alice"
    assert "developers" in who["status"]["userInfo"]["groups"]


def test_create_token_bound_to_a_pod_stops_working_when_the_pod_goes(cluster):
    ns = _ns(cluster, "tok")
    wait_until(lambda: cluster.kubectl("-n", ns, "get", "serviceaccount", "default",
                                       check=False).returncode == 0, timeout=30)
    cluster.kubectl("-n", ns, "run", "holder", "--image=registry.k8s.io/pause:3.10",
                    "--restart=Never")
    # ServiceAccount admission: the pod runs as `default` and mounts its credentials
    spec = json.loads(cluster.kubectl("-n", ns, "get", "pod", "holder", "-o", "json").stdout)["spec"]
    assert spec["serviceAccountName"] == "default"
    vol = next(v for v in spec["volumes"] if v["name"].startswith("kube-api-access-"))
    assert vol["projected"]["sources"][0] == {"serviceAccountToken": {"expirationSeconds": 3607,
                                                                      "path": "token"}}
    assert {"name": vol["name"], "readOnly": True,
            "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"} in spec["containers"][0]["volumeMounts"]
    token = cluster.kubectl("-n", ns, "create", "token", "default",
                            "--bound-object-kind", "Pod", "--bound-object-name", "holder",
                            "--duration", "10m").stdout.strip()
    assert token.count(".") == 2
    who = json.loads(kubectl_as_token(cluster, token, "auth", "whoami", "-o", "json").stdout)
    info = who["status"]["userInfo"]
    assert info["username"] == f"system:serviceaccount:{ns}:default"
    assert {"system:serviceaccounts", f"system:serviceaccounts:{ns}",
            "system:authenticated"} <= set(info["groups"])
    assert info["extra"]["authentication.kubernetes.io/pod-name"] == ["holder"]
    # a plain token of the same account works too, and the account's permissions apply
    plain = cluster.kubectl("-n", ns, "create", "token", "default").stdout.strip()
    out = kubectl_as_token(cluster, plain, "-n", ns, "get", "pods", check=False)
    assert (f'User "system:serviceaccount:{ns}:default" cannot list resource "pods"'
            in out.stderr)
    # the bound pod goes: its token stops authenticating, the plain one does not
    cluster.kubectl("-n", ns, "delete", "pod", "holder", "--grace-period=0", "--force",
                    "--wait=true")
    out = kubectl_as_token(cluster, token, "auth", "whoami", check=False)
    assert out.returncode != 0
    assert "Unauthorized" in out.stderr
    assert kubectl_as_token(cluster, plain, "auth", "whoami").returncode == 0


def test_pods_of_a_missing_service_account_wait_for_it(cluster):
    """ServiceAccount admission refuses a pod whose account does not exist, as
    kube-apiserver does; a Deployment's ReplicaSet reports the refusal and creates its
    pods once the account is there."""
    ns = _ns(cluster, "samiss")
    wait_until(lambda: cluster.kubectl("-n", ns, "get", "serviceaccount", "default",
                                       check=False).returncode == 0, timeout=30)
    out = cluster.kubectl("-n", ns, "run", "lost", "--image=registry.k8s.io/pause:3.10",
                          "--restart=Never",
                          '--overrides={"spec": {"serviceAccountName": "robot"}}', check=False)
    assert out.returncode != 0
    assert (f'pods "lost" is forbidden: error looking up service account {ns}/robot: '
            'serviceaccount "robot" not found') in out.stderr, out.stderr
    deployment = {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"serviceAccountName": "robot",
                                       "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}}},
    }
    cluster.kubectl("-n", ns, "create", "-f", "-", input=json.dumps(deployment))

    def failure():
        rs = json.loads(cluster.kubectl("-n", ns, "get", "rs", "-l", "app=web", "-o", "json").stdout)["items"]
        conds = [c for r in rs for c in r.get("status", {}).get("conditions", [])]
        return next((c for c in conds if c["type"] == "ReplicaFailure"), None)

    cond = wait_until(failure, timeout=30)
    assert cond["reason"] == "FailedCreate", cond
    assert "error looking up service account" in cond["message"], cond
    events = cluster.kubectl("-n", ns, "get", "events", "--field-selector=reason=FailedCreate",
                             "-o", "jsonpath={.items[*].message}").stdout
    assert 'serviceaccount "robot" not found' in events, events
    cluster.kubectl("-n", ns, "create", "serviceaccount", "robot")
    cluster.kubectl("-n", ns, "rollout", "status", "deployment/web", "--timeout=120s", timeout=150)
    wait_until(lambda: failure() is None, timeout=30)


def test_token_request_validation(cluster):
    ns = _ns(cluster, "tokval")
    wait_until(lambda: cluster.kubectl("-n", ns, "get", "serviceaccount", "default",
                                       check=False).returncode == 0, timeout=30)
    out = cluster.kubectl("-n", ns, "create", "token", "default", "--duration", "5m",
                          check=False)
    assert out.returncode != 0
    assert "may not specify a duration less than 10 minutes" in out.stderr
    out = cluster.kubectl("-n", ns, "create", "token", "missing", check=False)
    assert 'serviceaccounts "missing" not found' in out.stderr
    out = cluster.kubectl("-n", ns, "create", "token", "default", "--bound-object-kind",
                          "Pod", "--bound-object-name", "nope", check=False)
    assert 'pods "nope" not found' in out.stderr


def test_can_i_list_matches_the_bootstrap_policy_for_a_service_account(cluster):
    out = cluster.kubectl("auth", "can-i", "--list",
                          "--as=system:serviceaccount:default:default").stdout
    lines = out.splitlines()
    assert lines[0].split() == ["Resources", "Non-Resource", "URLs", "Resource", "Names",
                                "Verbs"]
    body = "\n".join(lines[1:])
    assert "selfsubjectaccessreviews.authorization.k8s.io" in body
    assert "selfsubjectreviews.authentication.k8s.io" in body
    assert "[/.well-known/openid-configuration/]" in body
    assert "[/api/*]" in body
    assert "*.*" not in body
