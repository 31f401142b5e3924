"""Batch workloads on `coxswain up` with the real kubectl: the CronJob,
TTL-after-finished and pod garbage collector controllers.

Most tests finish Jobs themselves through the status subresource, so that they do not
depend on how fast Job pods run; the TTL test runs real Jobs. One test waits for a
minute boundary: a `*/1` CronJob must create its next Job on schedule."""

from __future__ import annotations

import datetime
import json

import pytest

from conftest import Kubectl, cluster_namespace, to_yaml, wait_until


@pytest.fixture
def kc(cluster) -> Kubectl:
    return Kubectl(cluster)


@pytest.fixture
def bns(kc) -> str:
    yield from cluster_namespace(kc, "batch")


def now_utc() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


def rfc3339(t: datetime.datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def jobs_of(kc, ns, cronjob) -> list[dict]:
    items = kc.json("get", "jobs", "-n", ns)["items"]
    return [
        j for j in items
        if any(o.get("kind") == "CronJob" and o.get("name") == cronjob and o.get("controller")
               for o in j["metadata"].get("ownerReferences", []))
        and not j["metadata"].get("deletionTimestamp")
    ]


def complete(kc, ns, job: str) -> None:
    """Mark a Job Complete through the status subresource (unless it already finished)."""
    j = kc.json("get", "job", job, "-n", ns)
    conds = j.get("status", {}).get("conditions", [])
    if any(c["type"] in ("Complete", "Failed") and c["status"] == "True" for c in conds):
        return
    t = rfc3339(now_utc())
    status = {"status": {
        "startTime": j.get("status", {}).get("startTime", t),
        "completionTime": t,
        "succeeded": 1,
        "conditions": [
            {"type": "SuccessCriteriaMet", "status": "True", "lastTransitionTime": t,
             "reason": "CompletionsReached", "message": "Reached expected number of succeeded pods"},
            {"type": "Complete", "status": "True", "lastTransitionTime": t,
             "reason": "CompletionsReached", "message": "Reached expected number of succeeded pods"},
        ],
    }}
    kc("patch", "job", job, "-n", ns, "--subresource=status", "--type=merge",
       "-p", json.dumps(status))


def cronjob_row(kc, ns, name) -> dict:
    out = kc("get", "cronjob", name, "-n", ns).stdout.splitlines()
    header, row = out[0], out[1]
    # columns are separated by at least two spaces ("LAST SCHEDULE" has one inside)
    cols = [c for c in header.split("  ") if c.strip()]
    starts = [header.index(c) for c in cols]
    fields = {}
    for i, c in enumerate(cols):
        end = starts[i + 1] if i + 1 < len(cols) else None
        fields[c.strip()] = row[starts[i]:end].strip()
    return fields


def test_cronjob_runs_on_schedule_keeps_history_and_shows_last_schedule(kc, bns):
    kc("create", "cronjob", "tick", "--image=busybox", "--schedule=*/1 * * * *",
       "-n", bns, "--", "true")
    kc("patch", "cronjob", "tick", "-n", bns, "--type=merge",
       "-p", json.dumps({"spec": {"successfulJobsHistoryLimit": 1}}))
    assert cronjob_row(kc, bns, "tick")["LAST SCHEDULE"] == "<none>"
    # as after downtime: a lastScheduleTime minutes back makes the most recent
    # missed minute run at once (only that one)
    back = now_utc().replace(second=0, microsecond=0) - datetime.timedelta(minutes=5)
    kc("patch", "cronjob", "tick", "-n", bns, "--subresource=status", "--type=merge",
       "-p", json.dumps({"status": {"lastScheduleTime": rfc3339(back)}}))
    first = wait_until(lambda: (jobs_of(kc, bns, "tick") or [None])[0], timeout=30)
    name = first["metadata"]["name"]
    stamp = first["metadata"]["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"]
    scheduled = datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    assert scheduled.second == 0 and scheduled > back
    assert name == f"tick-{int(scheduled.timestamp()) // 60}"
    assert len(jobs_of(kc, bns, "tick")) == 1

    row = cronjob_row(kc, bns, "tick")
    assert row["SCHEDULE"] == "*/1 * * * *"
    assert row["SUSPEND"] == "False"
    assert row["LAST SCHEDULE"] != "<none>"
    cj = kc.json("get", "cronjob", "tick", "-n", bns)
    assert cj["status"]["lastScheduleTime"] == rfc3339(scheduled)
    assert [a["name"] for a in cj["status"]["active"]] == [name]

    complete(kc, bns, name)
    # the next minute: a second Job, on schedule
    second = wait_until(
        lambda: next((j for j in jobs_of(kc, bns, "tick") if j["metadata"]["name"] != name), None),
        timeout=90, interval=0.5,
    )
    second_name = second["metadata"]["name"]
    second_stamp = second["metadata"]["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"]
    second_at = datetime.datetime.fromisoformat(second_stamp.replace("Z", "+00:00"))
    assert second_at - scheduled >= datetime.timedelta(minutes=1)
    assert second_name == f"tick-{int(second_at.timestamp()) // 60}"
    complete(kc, bns, second_name)
    # successfulJobsHistoryLimit 1: the older finished Job goes
    wait_until(lambda: [j["metadata"]["name"] for j in jobs_of(kc, bns, "tick")] == [second_name],
               timeout=30)
    cj = wait_until(
        lambda: (lambda c: c if not c["status"].get("active") and c["status"].get("lastSuccessfulTime") else None)(
            kc.json("get", "cronjob", "tick", "-n", bns)),
        timeout=30,
    )
    assert cj["status"]["lastScheduleTime"] == rfc3339(second_at)
    events = kc.json("get", "events", "-n", bns,
                     "--field-selector", "involvedObject.name=tick")["items"]
    reasons = {e["reason"] for e in events}
    assert {"SuccessfulCreate", "SawCompletedJob", "SuccessfulDelete"} <= reasons


def test_create_job_from_cronjob(kc, bns):
    kc("create", "cronjob", "nightly", "--image=busybox", "--schedule=0 3 * * *",
       "-n", bns, "--", "echo", "hi")
    kc("label", "cronjob", "nightly", "-n", bns, "team=data")
    out = kc("create", "job", "by-hand", "--from=cronjob/nightly", "-n", bns).stdout
    assert "job.batch/by-hand created" in out
    cj = kc.json("get", "cronjob", "nightly", "-n", bns)
    job = kc.json("get", "job", "by-hand", "-n", bns)
    assert job["metadata"]["annotations"]["cronjob.kubernetes.io/instantiate"] == "manual"
    owner = job["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
        "CronJob", "nightly", cj["metadata"]["uid"], True)
    container = job["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "busybox"
    assert container["command"] == ["echo", "hi"]
    # the CronJob did not start it: it does not count as active
    cj = kc.json("get", "cronjob", "nightly", "-n", bns)
    assert not cj.get("status", {}).get("active")
    assert cronjob_row(kc, bns, "nightly")["LAST SCHEDULE"] == "<none>"


def test_job_with_ttl_disappears_after_it_finished(kc, bns):
    # real Jobs: the Job controller runs their pods, the simulator completes them
    job = {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "short-lived", "namespace": bns},
        "spec": {
            "ttlSecondsAfterFinished": 2,
            "template": {"spec": {"restartPolicy": "Never",
                                  "containers": [{"name": "c", "image": "busybox"}]}},
        },
    }
    kc("apply", "-f", "-", input=to_yaml([job]))
    keep = dict(job, metadata={"name": "no-ttl", "namespace": bns},
                spec={k: v for k, v in job["spec"].items() if k != "ttlSecondsAfterFinished"})
    kc("apply", "-f", "-", input=to_yaml([keep]))
    kc("wait", "--for=condition=complete", "job/no-ttl", "-n", bns, "--timeout=60s")
    kc("wait", "--for=delete", "job/short-lived", "-n", bns, "--timeout=60s")
    # deleted in the foreground: its pod went with it
    pods = kc.json("get", "pods", "-n", bns, "-l", "batch.kubernetes.io/job-name=short-lived")
    assert pods["items"] == [], [p["metadata"]["name"] for p in pods["items"]]
    assert kc("get", "job", "no-ttl", "-n", bns, "-o", "name").stdout.strip() == "job.batch/no-ttl"
