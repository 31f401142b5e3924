"""The controller manager's secure port, as kube-controller-manager's: HTTPS with a
self-signed certificate (or the given one), delegated authentication (TokenReview) and
authorization (SubjectAccessReview) against the API server, /healthz, /readyz and /livez
served to anyone.

Needs the API server's TokenReview and SubjectAccessReview, RBAC and
`kubectl create token`."""

from __future__ import annotations

import re
import ssl
import subprocess
import uuid
from pathlib import Path

import pytest
import requests
import urllib3

from conftest import coxswain_bin, free_port, stop_process, wait_until

urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)


def secure_port(cluster) -> str:
    text = Path(cluster.log_path).read_text(errors="replace")
    m = re.search(r"controller manager: health and metrics on (https://[0-9.:]+)", text)
    assert m, cluster.log_tail()
    return m.group(1)


def get(url, path, token=None, **kw):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    kw.setdefault("verify", False)
    return requests.get(url + path, headers=headers, timeout=10, **kw)


def status(r) -> dict:
    assert r.headers["Content-Type"].startswith("application/json"), r.text
    return r.json()


@pytest.fixture
def sa_ns(cluster):
    name = f"cms-{uuid.uuid4().hex[:8]}"
    cluster.kubectl("create", "namespace", name)
    yield name
    cluster.kubectl("delete", "namespace", name, "--wait=false", check=False)


def test_up_prints_how_to_scrape_it(cluster):
    text = Path(cluster.log_path).read_text(errors="replace")
    url = secure_port(cluster)
    assert f'curl -k -H "Authorization: Bearer $(kubectl create token <service-account>)" {url}/metrics' in text


def test_health_is_served_to_anyone_over_tls(cluster):
    url = secure_port(cluster)
    for path in ("/healthz", "/readyz"):
        r = get(url, path)
        assert (r.status_code, r.text) == (200, "ok"), (path, r.text)
    # /livez is always allowed too, but kube-controller-manager serves no such page
    assert get(url, "/livez").status_code == 404
    # the certificate is self-signed: a client trusting only the system roots refuses it
    with pytest.raises(requests.exceptions.SSLError):
        get(url, "/healthz", verify=True)
    # named as client-go's self-signed certificates: localhost@<time>, issued by
    # localhost-ca@<time>
    host, port = url.removeprefix("https://").split(":")
    der = ssl.PEM_cert_to_DER_cert(ssl.get_server_certificate((host, int(port))))
    assert b"localhost@" in der and b"localhost-ca@" in der


def test_metrics_need_a_token_the_api_server_accepts(cluster):
    url = secure_port(cluster)
    # no credentials: system:anonymous, which RBAC does not let read /metrics
    r = get(url, "/metrics")
    assert r.status_code == 403, r.text
    body = status(r)
    assert body["reason"] == "Forbidden"
    assert body["message"].startswith(
        'forbidden: User "system:anonymous" cannot get path "/metrics"'), body
    # a token the API server does not know: 401, even on an always-allowed path
    for path in ("/metrics", "/healthz"):
        r = get(url, path, token="not-a-token")
        assert r.status_code == 401, r.text
        assert status(r) == {"kind": "Status", "apiVersion": "v1", "metadata": {},
                             "status": "Failure", "message": "Unauthorized",
                             "reason": "Unauthorized", "code": 401}
    # the kubeconfig's admin (system:masters) reads everything
    r = get(url, "/metrics", token=cluster.token)
    assert r.status_code == 200, r.text
    assert "controller_runtime_reconcile_total" in r.text
    r = get(url, "/debug/controllers", token=cluster.token)
    assert r.status_code == 200 and "deployment-controller enabled" in r.text


def test_a_service_account_reads_metrics_once_bound_to_a_role(cluster, sa_ns):
    url = secure_port(cluster)
    # the service account controller creates `default` in the new namespace
    wait_until(lambda: cluster.kubectl("get", "serviceaccount", "default", "-n", sa_ns,
                                       check=False).returncode == 0,
               timeout=30, message="serviceaccount default")
    token = cluster.kubectl("create", "token", "default", "-n", sa_ns).stdout.strip()
    user = f"system:serviceaccount:{sa_ns}:default"
    r = get(url, "/metrics", token=token)
    assert r.status_code == 403, r.text
    assert status(r)["message"].startswith(
        f'forbidden: User "{user}" cannot get path "/metrics"'), r.text
    role = f"{sa_ns}-metrics-reader"
    cluster.kubectl("create", "clusterrole", role, "--verb=get", "--non-resource-url=/metrics")
    try:
        cluster.kubectl("create", "clusterrolebinding", role, f"--clusterrole={role}",
                        f"--serviceaccount={sa_ns}:default")
        # the denial is cached for --authorization-webhook-cache-unauthorized-ttl (10 s)
        r = wait_until(lambda: (r := get(url, "/metrics", token=token)).status_code == 200 and r,
                       timeout=40, interval=1, message="/metrics allowed")
        assert "controller_runtime_reconcile_total" in r.text
        # only the path the role names
        r = get(url, "/debug/controllers", token=token)
        assert r.status_code == 403, r.text
        assert status(r)["message"].startswith(
            f'forbidden: User "{user}" cannot get path "/debug/controllers"'), r.text
    finally:
        cluster.kubectl("delete", "clusterrolebinding", role, check=False)
        cluster.kubectl("delete", "clusterrole", role, check=False)


def start_cm(server, *flags):
    port = free_port()
    cmd = [
        str(coxswain_bin()), "controller-manager", f"--kubeconfig={server.kubeconfig}",
        "--leader-elect=false", "--controllers=replicaset",
        "--bind-address=127.0.0.1", f"--secure-port={port}", *flags,
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return proc, f"https://127.0.0.1:{port}"


def healthy(url, **kw) -> bool:
    try:
        return get(url, "/healthz", **kw).status_code == 200
    except requests.RequestException:
        return False


def test_cert_dir_keeps_the_generated_certificate(server, tmp_path):
    cert_dir = tmp_path / "certs"
    proc, url = start_cm(server, f"--cert-dir={cert_dir}")
    try:
        wait_until(lambda: healthy(url), timeout=30, message="secure port up")
        crt = (cert_dir / "kube-controller-manager.crt").read_text()
        assert (cert_dir / "kube-controller-manager.key").is_file()
        served = ssl.get_server_certificate(("127.0.0.1", int(url.rsplit(":", 1)[1])))
        first = crt.split("-----END CERTIFICATE-----")[0] + "-----END CERTIFICATE-----"
        assert ssl.PEM_cert_to_DER_cert(served) == ssl.PEM_cert_to_DER_cert(first)
        # the chain's CA verifies it for localhost
        ca = cert_dir / "ca.pem"
        ca.write_text("-----BEGIN CERTIFICATE-----" + crt.split("-----BEGIN CERTIFICATE-----")[2])
        r = requests.get(url.replace("127.0.0.1", "localhost") + "/healthz", verify=str(ca),
                         timeout=10)
        assert r.text == "ok"
    finally:
        stop_process(proc)


def test_given_certificate_and_always_allowed_paths(server):
    data = server.data_dir
    proc, url = start_cm(server, f"--tls-cert-file={data / 'server.crt'}",
                         f"--tls-private-key-file={data / 'server.key'}",
                         "--authorization-always-allow-paths=/healthz,/debug/*")
    try:
        # served with the API server's certificate, which its CA verifies
        wait_until(lambda: healthy(url, verify=server.ca_file), timeout=30,
                   message="secure port up")
        # /debug/* is always allowed now: served without credentials
        r = get(url, "/debug/controllers", verify=server.ca_file)
        assert r.status_code == 200 and "replicaset-controller enabled" in r.text
        # /metrics is not: anonymous is refused, the admin served
        r = get(url, "/metrics", verify=server.ca_file)
        assert r.status_code == 403, r.text
        assert 'User "system:anonymous" cannot get path "/metrics"' in r.json()["message"]
        r = get(url, "/metrics", token=server.token, verify=server.ca_file)
        assert r.status_code == 200, r.text
        assert "controller_runtime_reconcile_total" in r.text
    finally:
        stop_process(proc)


def test_a_certificate_needs_its_key(server):
    proc, _ = start_cm(server, f"--tls-cert-file={server.data_dir / 'server.crt'}")
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode != 0
    assert "--tls-cert-file and --tls-private-key-file must be given together" in out


def test_reviews_go_where_the_review_kubeconfigs_say(server, tmp_path):
    proc, url = start_cm(server, f"--authentication-kubeconfig={server.kubeconfig}",
                         f"--authorization-kubeconfig={server.kubeconfig}")
    try:
        wait_until(lambda: healthy(url), timeout=30, message="secure port up")
        r = get(url, "/metrics", token=server.token)
        assert r.status_code == 200, r.text
        assert get(url, "/metrics", token="forged").status_code == 401
    finally:
        stop_process(proc)
    proc, _ = start_cm(server, f"--authentication-kubeconfig={tmp_path / 'missing'}")
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode != 0
    assert "--authentication-kubeconfig" in out and "missing" in out, out
