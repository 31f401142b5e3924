"""The RBAC bootstrap policy as the real kubectl sees it: kube-apiserver's default roles and
bindings exist with upstream's labels, annotations and rules, and `kubectl auth can-i
--list` for the default service account prints what it prints against kube-apiserver."""

from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[2] / "crates/apiserver/tests/fixtures/rbac-bootstrap"


def test_default_cluster_roles_and_bindings(kubectl):
    roles = {r["metadata"]["name"]: r for r in kubectl.json("get", "clusterroles")["items"]}
    for name in ["cluster-admin", "admin", "edit", "view", "system:discovery",
                 "system:basic-user", "system:public-info-viewer", "system:node",
                 "system:kube-controller-manager", "system:controller:deployment-controller",
                 "system:controller:generic-garbage-collector"]:
        assert name in roles, name
        meta = roles[name]["metadata"]
        assert meta["labels"]["kubernetes.io/bootstrapping"] == "rbac-defaults"
        assert meta["annotations"]["rbac.authorization.kubernetes.io/autoupdate"] == "true"
    assert roles["cluster-admin"]["rules"] == [
        {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
        {"nonResourceURLs": ["*"], "verbs": ["*"]},
    ]
    assert roles["view"]["aggregationRule"] == {"clusterRoleSelectors": [
        {"matchLabels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}}]}
    binding = kubectl.json("get", "clusterrolebinding", "system:public-info-viewer")
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io",
                                  "kind": "ClusterRole", "name": "system:public-info-viewer"}
    assert [s["name"] for s in binding["subjects"]] == ["system:authenticated",
                                                        "system:unauthenticated"]
    out = kubectl("get", "roles", "-n", "kube-system", "-o", "name").stdout.split()
    assert "role.rbac.authorization.k8s.io/system::leader-locking-kube-controller-manager" in out
    out = kubectl("get", "rolebindings", "-n", "kube-public", "-o", "name").stdout.split()
    assert out == ["rolebinding.rbac.authorization.k8s.io/system:controller:bootstrap-signer"]


def test_can_i_list_as_default_service_account(kubectl):
    resources = kubectl("api-resources", "--api-group=authorization.k8s.io", "-o", "name").stdout
    if "selfsubjectrulesreviews" not in resources:
        pytest.skip("SelfSubjectRulesReview is not served yet")
    cp = kubectl("auth", "can-i", "--list", "--as=system:serviceaccount:default:default")
    want = (FIXTURES / "kubectl-auth-can-i-list-serviceaccount-default.txt").read_text()
    assert cp.stdout == want
