"""Jobs on `coxswain up`: the Job controller judged by `kubectl create job` and
`kubectl wait`. Job pods are run by the node simulator: they exit 0 after a second, or
fail with the exit code of `sim.coxswain.dev/fail` (only for the completion indexes of
`sim.coxswain.dev/fail-indexes`, when given)."""

from __future__ import annotations


import pytest

from conftest import Kubectl, cluster_namespace


@pytest.fixture
def kc(cluster) -> Kubectl:
    return Kubectl(cluster)


@pytest.fixture
def jns(kc) -> str:
    yield from cluster_namespace(kc, "job")


def job(name: str, spec: dict, annotations: dict | None = None) -> dict:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            **spec,
            "template": {
                "metadata": {"annotations": annotations or {}},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "main", "image": "busybox:1.36"}],
                },
            },
        },
    }


def conditions(j: dict) -> dict:
    return {c["type"]: c for c in j.get("status", {}).get("conditions", [])}


def pods_of(kc, ns, name) -> list[dict]:
    return kc.json("get", "pods", "-n", ns, "-l", f"batch.kubernetes.io/job-name={name}")["items"]


def test_kubectl_create_job_completes(kc, jns):
    kc("create", "job", "pi", "--image=perl:5.34", "-n", jns, "--", "perl", "-e", "1")
    kc("wait", "--for=condition=complete", "job/pi", "-n", jns, "--timeout=60s")
    j = kc.json("get", "job", "pi", "-n", jns)
    st = j["status"]
    assert st["succeeded"] == 1 and st.get("failed", 0) == 0
    assert st["startTime"] and st["completionTime"]
    assert "active" not in st and st["ready"] == 0 and st["terminating"] == 0
    conds = conditions(j)
    assert conds["SuccessCriteriaMet"]["reason"] == "CompletionsReached"
    assert conds["Complete"]["status"] == "True"
    assert conds["Complete"]["message"] == "Reached expected number of succeeded pods"
    pods = pods_of(kc, jns, "pi")
    assert len(pods) == 1
    pod = pods[0]
    assert pod["status"]["phase"] == "Succeeded"
    assert "batch.kubernetes.io/job-tracking" not in pod["metadata"].get("finalizers", [])
    owner = pod["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("Job", "pi", True)
    reasons = [e["reason"] for e in kc.json("get", "events", "-n", jns,
                                            "--field-selector", "involvedObject.name=pi")["items"]]
    assert "SuccessfulCreate" in reasons and "Completed" in reasons
    out = kc("get", "job", "pi", "-n", jns).stdout
    assert "Complete" in out and "1/1" in out


def test_indexed_job_failing_index_honours_backoff_limit_per_index(kc, jns):
    spec = {"completions": 3, "parallelism": 3, "completionMode": "Indexed",
            "backoffLimitPerIndex": 1}
    kc.apply_yaml("create", job("ix", spec, {"sim.coxswain.dev/fail": "3",
                                             "sim.coxswain.dev/fail-indexes": "1"}), "-n", jns)
    kc("wait", "--for=condition=failed", "job/ix", "-n", jns, "--timeout=90s")
    j = kc.json("get", "job", "ix", "-n", jns)
    st = j["status"]
    assert st["failedIndexes"] == "1"
    assert st["completedIndexes"] == "0,2"
    assert st["succeeded"] == 2
    # index 1 ran twice (backoffLimitPerIndex 1), then the job stopped
    assert st["failed"] == 2
    conds = conditions(j)
    assert conds["FailureTarget"]["reason"] == "FailedIndexes"
    assert conds["Failed"]["reason"] == "FailedIndexes"
    assert conds["Failed"]["message"] == "Job has failed indexes"
    pods = pods_of(kc, jns, "ix")
    by_index: dict[str, list[dict]] = {}
    for p in pods:
        by_index.setdefault(p["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"],
                            []).append(p)
    assert sorted(by_index) == ["0", "1", "2"]
    assert len(by_index["1"]) == 2
    counts = sorted(p["metadata"]["annotations"]["batch.kubernetes.io/job-index-failure-count"]
                    for p in by_index["1"])
    assert counts == ["0", "1"]
    assert all(p["spec"]["hostname"] == f"ix-{i}" for i, ps in by_index.items() for p in ps)


def test_pod_failure_policy_exit_code_fails_the_job_at_once(kc, jns):
    spec = {"completions": 2, "parallelism": 1, "backoffLimit": 6,
            "podFailurePolicy": {"rules": [
                {"action": "FailJob", "onExitCodes": {"containerName": "main",
                                                      "operator": "In", "values": [42]}}]}}
    kc.apply_yaml("create", job("pfp", spec, {"sim.coxswain.dev/fail": "42"}), "-n", jns)
    kc("wait", "--for=condition=failed", "job/pfp", "-n", jns, "--timeout=60s")
    j = kc.json("get", "job", "pfp", "-n", jns)
    assert j["status"]["failed"] == 1
    assert j["spec"]["podReplacementPolicy"] == "Failed"
    failed = conditions(j)["Failed"]
    assert failed["reason"] == "PodFailurePolicy"
    pod = pods_of(kc, jns, "pfp")
    assert len(pod) == 1
    assert failed["message"] == (
        f"Container main for pod {jns}/{pod[0]['metadata']['name']} failed with exit code 42 "
        "matching FailJob rule at index 0")
    events = kc.json("get", "events", "-n", jns, "--field-selector", "involvedObject.name=pfp")
    assert any(e["reason"] == "PodFailurePolicy" and e["type"] == "Warning"
               for e in events["items"])


def test_suspended_job_creates_no_pods_then_resumes(kc, jns):
    kc.apply_yaml("create", job("sus", {"completions": 2, "parallelism": 2, "suspend": True}),
                  "-n", jns)
    kc("wait", "--for=condition=suspended", "job/sus", "-n", jns, "--timeout=30s")
    j = kc.json("get", "job", "sus", "-n", jns)
    sus = conditions(j)["Suspended"]
    assert (sus["status"], sus["reason"], sus["message"]) == ("True", "JobSuspended",
                                                              "Job suspended")
    assert "startTime" not in j["status"]
    assert pods_of(kc, jns, "sus") == []
    kc("patch", "job", "sus", "-n", jns, "--type=merge", "-p", '{"spec":{"suspend":false}}')
    kc("wait", "--for=condition=complete", "job/sus", "-n", jns, "--timeout=60s")
    j = kc.json("get", "job", "sus", "-n", jns)
    sus = conditions(j)["Suspended"]
    assert (sus["status"], sus["reason"], sus["message"]) == ("False", "JobResumed", "Job resumed")
    assert j["status"]["succeeded"] == 2 and j["status"]["startTime"]
    assert len(pods_of(kc, jns, "sus")) == 2
