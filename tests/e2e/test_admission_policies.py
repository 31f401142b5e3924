"""ValidatingAdmissionPolicy and MutatingAdmissionPolicy on `coxswain up`, judged with
the real kubectl: a policy written in CEL denies `kubectl apply` of a Deployment with too
many replicas (its message in kubectl's stderr), a Warn binding shows kubectl's
`Warning:` line, a MutatingAdmissionPolicy adds a label, and `kubectl get` prints the
policies' columns. Every binding selects only this test's namespace, and the policies
are deleted at the end, so other tests are not affected."""

from __future__ import annotations

import uuid

import pytest

from conftest import Kubectl

AR = "admissionregistration.k8s.io/v1"


@pytest.fixture
def kc(cluster) -> Kubectl:
    return Kubectl(cluster)


@pytest.fixture
def pns(kc):
    """A namespace of this test, and the names of the policy objects to delete."""
    suffix = uuid.uuid4().hex[:6]
    name = f"policies-{suffix}"
    kc("create", "namespace", name)
    created: list[tuple[str, str]] = []
    yield name, suffix, created
    for kind, obj in reversed(created):
        kc("delete", kind, obj, "--ignore-not-found", check=False)
    kc("delete", "namespace", name, "--wait=false", check=False)


def deployment(name: str, replicas: int) -> dict:
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]}}},
    }


def in_namespace(ns: str) -> dict:
    return {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}}}


RULES = {"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"],
                            "operations": ["CREATE", "UPDATE"], "resources": ["deployments"]}]}


def test_validating_policy_denies_and_warns_with_kubectl(kc, pns):
    ns, suffix, created = pns
    policy, binding, warn = f"max-replicas-{suffix}", f"max-replicas-{suffix}", f"warn-{suffix}"
    kc.apply_yaml("apply", [
        {"apiVersion": AR, "kind": "ValidatingAdmissionPolicy", "metadata": {"name": policy},
         "spec": {"failurePolicy": "Fail", "matchConstraints": RULES,
                  "validations": [
                      {"expression": "object.spec.replicas <= 5",
                       "messageExpression": "'replicas must be no more than 5, not ' + string(object.spec.replicas)"}]}},
        {"apiVersion": AR, "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": binding},
         "spec": {"policyName": policy, "validationActions": ["Deny"], "matchResources": in_namespace(ns)}},
    ])
    created += [("validatingadmissionpolicy", policy), ("validatingadmissionpolicybinding", binding)]

    cp = kc.apply_yaml("apply", [deployment("too-big", 7)], "-n", ns, check=False)
    assert cp.returncode != 0
    assert (f"ValidatingAdmissionPolicy '{policy}' with binding '{binding}' denied request: "
            "replicas must be no more than 5, not 7") in cp.stderr, cp.stderr
    assert kc("get", "deployment", "too-big", "-n", ns, "--ignore-not-found", "-o", "name").stdout == ""
    kc.apply_yaml("apply", [deployment("small", 2)], "-n", ns)
    # applying more replicas is an update the policy denies too (kubectl scale would
    # write deployments/scale, which the rule, naming only deployments, does not match)
    cp = kc.apply_yaml("apply", [deployment("small", 9)], "-n", ns, check=False)
    assert cp.returncode != 0 and "replicas must be no more than 5, not 9" in cp.stderr, cp.stderr

    # the same policy, bound with Warn: kubectl prints the warning and applies
    kc("delete", "validatingadmissionpolicybinding", binding)
    kc.apply_yaml("apply", [
        {"apiVersion": AR, "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": warn},
         "spec": {"policyName": policy, "validationActions": ["Warn"], "matchResources": in_namespace(ns)}},
    ])
    created.append(("validatingadmissionpolicybinding", warn))
    cp = kc.apply_yaml("apply", [deployment("warned", 8)], "-n", ns)
    assert (f"Warning: Validation failed for ValidatingAdmissionPolicy '{policy}' with binding '{warn}': "
            "replicas must be no more than 5, not 8") in cp.stderr, cp.stderr
    assert kc.json("get", "deployment", "warned", "-n", ns)["spec"]["replicas"] == 8

    # kubectl get prints upstream's columns
    out = kc("get", "validatingadmissionpolicies", policy).stdout.splitlines()
    assert out[0].split() == ["NAME", "VALIDATIONS", "PARAMKIND", "AGE"], out
    assert out[1].split()[:3] == [policy, "1", "<unset>"], out
    out = kc("get", "validatingadmissionpolicybindings", warn).stdout.splitlines()
    assert out[0].split() == ["NAME", "POLICYNAME", "PARAMREF", "AGE"], out
    assert out[1].split()[:3] == [warn, policy, "<unset>"], out
    # defaults as kube-apiserver writes them
    spec = kc.json("get", "validatingadmissionpolicy", policy)["spec"]
    assert spec["matchConstraints"]["matchPolicy"] == "Equivalent"
    assert spec["matchConstraints"]["namespaceSelector"] == {}
    assert spec["matchConstraints"]["resourceRules"][0]["scope"] == "*"


def test_mutating_policy_adds_a_label(kc, pns):
    ns, suffix, created = pns
    policy = f"add-label-{suffix}"
    kc.apply_yaml("apply", [
        {"apiVersion": AR, "kind": "MutatingAdmissionPolicy", "metadata": {"name": policy},
         "spec": {"matchConstraints": RULES,
                  "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {
                      "expression": "Object{metadata: Object.metadata{labels: {'policy.example.com/mutated': 'true'}}}"}}]}},
        {"apiVersion": AR, "kind": "MutatingAdmissionPolicyBinding", "metadata": {"name": policy},
         "spec": {"policyName": policy, "matchResources": in_namespace(ns)}},
    ])
    created += [("mutatingadmissionpolicy", policy), ("mutatingadmissionpolicybinding", policy)]
    kc.apply_yaml("apply", [deployment("labelled", 1)], "-n", ns)
    labels = kc.json("get", "deployment", "labelled", "-n", ns)["metadata"]["labels"]
    assert labels == {"app": "labelled", "policy.example.com/mutated": "true"}
    out = kc("get", "mutatingadmissionpolicies", policy).stdout.splitlines()
    assert out[0].split() == ["NAME", "MUTATIONS", "PARAMKIND", "AGE"], out
    assert out[1].split()[:3] == [policy, "1", "<unset>"], out
    # a bad expression is refused when the policy is written
    cp = kc.apply_yaml("apply", [
        {"apiVersion": AR, "kind": "MutatingAdmissionPolicy", "metadata": {"name": f"bad-{suffix}"},
         "spec": {"matchConstraints": RULES,
                  "mutations": [{"patchType": "JSONPatch", "jsonPatch": {"expression": "[JSONPatch{"}}]}},
    ], check=False)
    assert cp.returncode != 0 and "spec.mutations[0].jsonPatch.expression" in cp.stderr, cp.stderr
