"""`coxswain controller-manager` as a separate process: kube-controller-manager's
flags, controller selection, leader election between two processes."""

from __future__ import annotations

import re
import subprocess
import time
from typing import NamedTuple, Optional

import pytest
import requests
import urllib3

urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)

from conftest import coxswain_bin, free_port, stop_process, wait_until


class Endpoint(NamedTuple):
    """The controller manager's secure port and a token allowed to read it (the
    server's admin token, in system:masters)."""
    url: str
    token: Optional[str]


def start_cm(server, *flags, port=None):
    port = port or free_port()
    cmd = [
        str(coxswain_bin()), "controller-manager",
        f"--kubeconfig={server.kubeconfig}",
        "--bind-address=127.0.0.1", f"--secure-port={port}",
        *flags,
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return proc, Endpoint(f"https://127.0.0.1:{port}", server.token)


def get(ep, path):
    """GET over HTTPS (the certificate is self-signed) with the admin token."""
    headers = {"Authorization": f"Bearer {ep.token}"} if ep.token else {}
    try:
        return requests.get(ep.url + path, headers=headers, verify=False, timeout=2)
    except requests.RequestException:
        return None


def leading(url) -> bool:
    r = get(url, "/metrics")
    if r is None or r.status_code != 200:
        return False
    m = re.search(r'^leader_election_master_status\{name="([^"]+)"\} (\d+)', r.text, re.M)
    return bool(m) and m.group(2) == "1"


def test_unknown_controllers_are_refused_with_their_names(server):
    proc, _ = start_cm(server, "--controllers=*,bogus,-nope", "--leader-elect=false")
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode != 0
    assert '"bogus" is not in the list of known controllers' in out
    assert '"nope" is not in the list of known controllers' in out


def test_controllers_flag_selects_what_runs(server):
    proc, url = start_cm(server, "--controllers=*,-deployment", "--leader-elect=false")
    try:
        wait_until(lambda: (r := get(url, "/healthz")) is not None and r.status_code == 200,
                   timeout=30)
        listing = get(url, "/debug/controllers").text
        assert "replicaset-controller enabled" in listing
        assert re.search(r"^deployment-controller disabled", listing, re.M), listing
        health = get(url, "/healthz?verbose").text
        assert "[+]replicaset-controller ok" in health
        assert "deployment-controller" not in health
        assert get(url, "/healthz/replicaset-controller").text == "ok"
        # the batch controllers run by default, under upstream's names
        for name in ("cronjob-controller", "ttl-after-finished-controller",
                     "pod-garbage-collector-controller"):
            assert f"{name} enabled" in listing
            assert f"[+]{name} ok" in health
    finally:
        stop_process(proc)


def test_two_controller_managers_never_lead_at_once(server):
    flags = [
        "--leader-elect=true",
        "--leader-elect-lease-duration=3s",
        "--leader-elect-renew-deadline=2s",
        "--leader-elect-retry-period=250ms",
        "--leader-elect-resource-name=e2e-cm",
        "--leader-elect-resource-namespace=default",
    ]
    a, url_a = start_cm(server, *flags)
    b, url_b = start_cm(server, *flags)
    try:
        wait_until(lambda: leading(url_a) or leading(url_b), timeout=30)
        for _ in range(40):
            assert not (leading(url_a) and leading(url_b)), "two leaders at once"
            time.sleep(0.1)
        leader, other, other_url = (a, b, url_b) if leading(url_a) else (b, a, url_a)
        leader.terminate()
        leader.wait(timeout=30)
        assert leader.returncode == 0, "a graceful stop exits 0"
        # the successor waits out the lease (3 s) since the default does not release
        wait_until(lambda: leading(other_url), timeout=30)
        lease = server.kubectl("get", "lease", "e2e-cm", "-n", "default", "-o",
                               "jsonpath={.spec.holderIdentity} {.spec.leaseTransitions}").stdout
        holder, transitions = lease.split()
        assert int(transitions) >= 1
        assert holder
    finally:
        stop_process(a)
        stop_process(b)


def metric(text, name, controller):
    m = re.search(rf'^{name}\{{controller="{re.escape(controller)}"\}} (\S+)', text, re.M)
    return m and float(m.group(1))


def test_each_controller_takes_its_own_flags(server):
    """Per-controller options (upstream's config/types.go): worker counts reach each
    controller's reconcile loop, and the namespace controller and both garbage collector
    loops report controller-runtime's reconcile metrics like every other controller."""
    proc, url = start_cm(
        server, "--leader-elect=false", "--concurrent-namespace-syncs=3",
        "--concurrent-gc-syncs=7", "--concurrent-serviceaccount-syncs=2",
        "--namespace-sync-period=1m", "--concurrent-daemonset-syncs=3",
    )
    try:
        wait_until(lambda: (r := get(url, "/metrics")) is not None
                   and metric(r.text, "controller_runtime_max_concurrent_reconciles",
                              "garbage_collector_attempt_to_delete") is not None,
                   timeout=60)
        text = get(url, "/metrics").text
        workers = lambda c: metric(text, "controller_runtime_max_concurrent_reconciles", c)
        assert workers("namespace") == 3
        assert workers("garbage_collector_attempt_to_delete") == 7
        assert workers("garbage_collector_attempt_to_orphan") == 7
        assert workers("serviceaccount-controller") == 2
        assert workers("deployment") == 5
        assert workers("daemonset-controller") == 3
    finally:
        stop_process(proc)
    proc, url = start_cm(server, "--leader-elect=false", "--enable-garbage-collector=false")
    try:
        wait_until(lambda: (r := get(url, "/healthz")) is not None and r.status_code == 200,
                   timeout=30)
        listing = get(url, "/debug/controllers").text
        assert "garbage-collector-controller disabled (by its options)" in listing, listing
        assert "namespace-controller enabled" in listing
        assert "garbage_collector_attempt_to_delete" not in get(url, "/metrics").text
    finally:
        stop_process(proc)
