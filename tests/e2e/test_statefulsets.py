"""StatefulSets on `coxswain up`, judged by the real kubectl: ordered creation seen
through `kubectl get -w`, `kubectl rollout status|history|undo`, a partitioned image
update and scale-down order; claims that cannot be bound keep the pod Pending with
the scheduler's message."""

from __future__ import annotations

import time

import pytest

from conftest import Kubectl, StreamReader, cluster_namespace, parse_json_stream, stop_process, to_yaml, wait_until


@pytest.fixture
def kc(cluster) -> Kubectl:
    return Kubectl(cluster)


@pytest.fixture
def sns(kc) -> str:
    yield from cluster_namespace(kc, "sts")


def statefulset(name: str, replicas: int, image: str = "nginx:1.27", **spec) -> dict:
    s = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "serviceName": name,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "web", "image": image}]},
            },
        },
    }
    s["spec"].update(spec)
    return s


def headless_service(name: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name},
        "spec": {"clusterIP": "None", "selector": {"app": name},
                 "ports": [{"port": 80, "name": "web"}]},
    }


def is_ready(pod: dict) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or [])


def live_pods(kc, ns, app) -> dict:
    items = kc.json("get", "pods", "-n", ns, "-l", f"app={app}")["items"]
    return {p["metadata"]["name"]: p for p in items if not p["metadata"].get("deletionTimestamp")}


class PodWatch:
    """`kubectl get pods -w --output-watch-events -o json` in the background."""

    def __init__(self, kc, ns, app):
        self.proc = kc.popen("get", "pods", "-n", ns, "-l", f"app={app}", "-w",
                             "--output-watch-events", "-o", "json")
        self.reader = StreamReader(self.proc.stdout)

    def events(self) -> list[tuple[str, str, bool, bool]]:
        """(type, name, ready, terminating) per event, in order."""
        out = []
        for ev in parse_json_stream(self.reader.text()):
            obj = ev.get("object") or {}
            md = obj.get("metadata") or {}
            out.append((ev.get("type"), md.get("name"), is_ready(obj),
                        bool(md.get("deletionTimestamp"))))
        return out

    def deletion_order(self, since: int = 0) -> list[str]:
        """Pods in the order they were first seen deleted (terminating or gone), from
        event number `since` on."""
        order = []
        for typ, name, _, terminating in self.events()[since:]:
            if (typ == "DELETED" or terminating) and name not in order:
                order.append(name)
        return order

    def stop(self):
        stop_process(self.proc)


def history_rows(kc, ns, name) -> list[str]:
    out = kc("rollout", "history", f"sts/{name}", "-n", ns).stdout
    return [l.split()[0] for l in out.splitlines()[2:] if l.strip()]


def test_ordered_rollout_partition_undo_history_and_scale_down(kc, sns):
    watch = PodWatch(kc, sns, "web")
    try:
        kc("apply", "-n", sns, "-f", "-", input=to_yaml([headless_service("web"),
                                                       statefulset("web", 3)]))
        out = kc("rollout", "status", "sts/web", "-n", sns, "--timeout=120s").stdout
        assert "partitioned roll out complete: 3 new pods have been updated" in out, out

        # pod N+1 appeared only after pod N was seen Ready
        wait_until(lambda: sum(1 for e in watch.events() if e[0] == "ADDED") >= 3, timeout=30,
                   message="3 pods added in the watch")
        ready, added = {}, []
        for typ, name, r, _ in watch.events():
            if typ == "ADDED":
                n = int(name.rsplit("-", 1)[1])
                if n > 0:
                    assert ready.get(f"web-{n - 1}"), f"{name} before web-{n - 1} was Ready: {watch.events()}"
                added.append(name)
            ready[name] = r
        assert added == ["web-0", "web-1", "web-2"]

        s = kc.json("get", "sts", "web", "-n", sns)
        st = s["status"]
        assert st["replicas"] == st["readyReplicas"] == st["availableReplicas"] == 3
        assert st["currentReplicas"] == st["updatedReplicas"] == 3
        assert st["currentRevision"] == st["updateRevision"]
        assert st["observedGeneration"] == s["metadata"]["generation"]
        rev1 = st["currentRevision"]
        pods = live_pods(kc, sns, "web")
        for i in range(3):
            p = pods[f"web-{i}"]
            assert p["metadata"]["labels"]["statefulset.kubernetes.io/pod-name"] == f"web-{i}"
            assert p["metadata"]["labels"]["apps.kubernetes.io/pod-index"] == str(i)
            assert p["metadata"]["labels"]["controller-revision-hash"] == rev1
            assert p["spec"]["hostname"] == f"web-{i}" and p["spec"]["subdomain"] == "web"
        assert history_rows(kc, sns, "web") == ["1"]

        # an image update with partition 2 replaces only web-2
        kc("patch", "sts", "web", "-n", sns, "-p",
           '{"spec":{"updateStrategy":{"type":"RollingUpdate","rollingUpdate":{"partition":2}}}}')
        kc("set", "image", "sts/web", "web=nginx:1.28", "-n", sns)
        out = kc("rollout", "status", "sts/web", "-n", sns, "--timeout=120s").stdout
        assert "partitioned roll out complete: 1 new pods have been updated" in out, out
        wait_until(lambda: all(is_ready(p) for p in live_pods(kc, sns, "web").values())
                   and len(live_pods(kc, sns, "web")) == 3, timeout=60)
        pods = live_pods(kc, sns, "web")
        images = {n: p["spec"]["containers"][0]["image"] for n, p in pods.items()}
        assert images == {"web-0": "nginx:1.27", "web-1": "nginx:1.27", "web-2": "nginx:1.28"}
        st = kc.json("get", "sts", "web", "-n", sns)["status"]
        assert st["currentRevision"] == rev1 and st["updateRevision"] != rev1
        assert st["updatedReplicas"] == 1 and st["currentReplicas"] == 2
        assert history_rows(kc, sns, "web") == ["1", "2"]
        assert "nginx:1.27" in kc("rollout", "history", "sts/web", "-n", sns, "--revision=1").stdout

        # undo: back to revision 1, which is renumbered 3
        out = kc("rollout", "undo", "sts/web", "-n", sns).stdout
        assert "rolled back" in out, out
        kc("rollout", "status", "sts/web", "-n", sns, "--timeout=120s")

        def back():
            pods = live_pods(kc, sns, "web")
            return len(pods) == 3 and all(
                is_ready(p) and p["spec"]["containers"][0]["image"] == "nginx:1.27"
                and p["metadata"]["labels"]["controller-revision-hash"] == rev1
                for p in pods.values())
        wait_until(back, timeout=60)
        s = kc.json("get", "sts", "web", "-n", sns)
        assert s["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.27"
        assert s["status"]["updateRevision"] == rev1
        assert history_rows(kc, sns, "web") == ["2", "3"]

        # scale to 1: web-2 goes, then web-1
        mark = len(watch.events())
        kc("scale", "sts/web", "--replicas=1", "-n", sns)
        wait_until(lambda: list(live_pods(kc, sns, "web")) == ["web-0"], timeout=60)
        wait_until(lambda: len(watch.deletion_order(mark)) >= 2, timeout=30)
        assert watch.deletion_order(mark) == ["web-2", "web-1"]
    finally:
        watch.stop()


def test_unbound_claims_keep_pods_pending_with_the_scheduler_message(kc, sns):
    s = statefulset("db", 2, volumeClaimTemplates=[{
        "metadata": {"name": "data"},
        # an explicitly empty class: neither the default class nor a provisioner applies
        "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "",
                 "resources": {"requests": {"storage": "1Gi"}}},
    }])
    kc("apply", "-n", sns, "-f", "-", input=to_yaml([s]))

    def unschedulable():
        pods = live_pods(kc, sns, "db")
        p = pods.get("db-0")
        if not p:
            return None
        conds = {c["type"]: c for c in (p.get("status") or {}).get("conditions") or []}
        c = conds.get("PodScheduled")
        return c if c and c["status"] == "False" else None
    cond = wait_until(unschedulable, timeout=60)
    assert cond["reason"] == "Unschedulable"
    assert cond["message"].endswith("pod has unbound immediate PersistentVolumeClaims."), cond
    claim = kc.json("get", "pvc", "data-db-0", "-n", sns)
    assert claim["metadata"]["labels"] == {"app": "db"}
    pod = live_pods(kc, sns, "db")["db-0"]
    vols = {v["name"]: v for v in pod["spec"]["volumes"]}
    assert vols["data"]["persistentVolumeClaim"]["claimName"] == "data-db-0"
    # OrderedReady: db-1 waits for db-0
    time.sleep(2)
    assert list(live_pods(kc, sns, "db")) == ["db-0"]
