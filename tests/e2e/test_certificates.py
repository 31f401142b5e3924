"""CertificateSigningRequests with the real kubectl: the API server's CSR rules
(requester recorded, validation, approval through `kubectl certificate approve/deny`),
the signing controller issuing certificates from its CA, and on `coxswain up` a
certificate signed by the cluster CA that authenticates to the API server.

Keys and requests are made with the `openssl` command line."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
from pathlib import Path

import pytest
import requests

from conftest import CoxswainServer, coxswain_bin, free_port, stop_process, wait_until

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl")


def openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_request(dir: Path, name: str, subject: str) -> tuple[Path, bytes]:
    """An EC key and a PEM certificate request for `subject` (`/CN=alice/O=devs`)."""
    key = dir / f"{name}.key"
    csr = dir / f"{name}.csr"
    openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", str(key), cwd=dir)
    openssl("req", "-new", "-key", str(key), "-subj", subject, "-out", str(csr), cwd=dir)
    return key, csr.read_bytes()


def make_ca(dir: Path) -> tuple[Path, Path]:
    key = dir / "signer-ca.key"
    crt = dir / "signer-ca.crt"
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-nodes", "-keyout", str(key), "-out", str(crt), "-days", "30",
            "-subj", "/CN=e2e-signer-ca", cwd=dir)
    # PKCS#8, as the signer reads keys
    pk8 = dir / "signer-ca.pk8"
    openssl("pkcs8", "-topk8", "-nocrypt", "-in", str(key), "-out", str(pk8), cwd=dir)
    return crt, pk8


def csr_doc(name: str, request: bytes, signer: str = "kubernetes.io/kube-apiserver-client",
            usages=("client auth",), **spec) -> dict:
    return {
        "apiVersion": "certificates.k8s.io/v1",
        "kind": "CertificateSigningRequest",
        "metadata": {"name": name},
        "spec": {
            "request": base64.b64encode(request).decode(),
            "signerName": signer,
            "usages": list(usages),
            **spec,
        },
    }


def issued(kubectl, name: str) -> bytes:
    def cert():
        c = kubectl.json("get", "csr", name)
        return (c.get("status") or {}).get("certificate")

    return base64.b64decode(wait_until(cert, timeout=30, message=f"csr {name} issued"))


def openssl_text(pem: bytes, dir: Path) -> str:
    path = dir / "issued.pem"
    path.write_bytes(pem)
    return subprocess.run(["openssl", "x509", "-noout", "-text", "-in", str(path)],
                          check=True, capture_output=True, text=True).stdout


def test_create_records_the_requester_and_validates(kubectl, tmp_path):
    _, req = make_request(tmp_path, "v", "/CN=valid")
    kubectl.apply_yaml("create", csr_doc("e2e-csr-valid", req, username="mallory",
                                         groups=["system:masters"]))
    got = kubectl.json("get", "csr", "e2e-csr-valid")
    assert got["spec"]["username"] != "mallory"
    assert "system:authenticated" in got["spec"]["groups"]
    assert got.get("status", {}) == {}
    # the printer says Pending, with the requester
    out = kubectl("get", "csr", "e2e-csr-valid").stdout
    assert "Pending" in out and got["spec"]["username"] in out

    bad = kubectl.apply_yaml("create", csr_doc("e2e-csr-bad", b"not a request"), check=False)
    assert bad.returncode != 0
    assert "spec.request: Invalid value" in bad.stderr
    assert "PEM block type must be CERTIFICATE REQUEST" in bad.stderr
    short = kubectl.apply_yaml("create", csr_doc("e2e-csr-short", req, expirationSeconds=599),
                               check=False)
    assert short.returncode != 0
    assert ("spec.expirationSeconds: Invalid value: 599: may not specify a duration less "
            "than 600 seconds (10 minutes)") in short.stderr
    nosigner = kubectl.apply_yaml("create", csr_doc("e2e-csr-nosigner", req, signer="example"),
                                  check=False)
    assert nosigner.returncode != 0
    assert "must be a fully qualified domain and path of the form" in nosigner.stderr

    # CertificateSubjectRestriction: no system:masters client certificates
    _, masters = make_request(tmp_path, "m", "/CN=root/O=system:masters")
    refused = kubectl.apply_yaml("create", csr_doc("e2e-csr-masters", masters), check=False)
    assert refused.returncode != 0
    assert ('certificatesigningrequests.certificates.k8s.io "e2e-csr-masters" is forbidden: '
            "use of kubernetes.io/kube-apiserver-client signer with system:masters group "
            "is not allowed") in refused.stderr

    # the spec never changes; approval conditions only through /approval
    kubectl("label", "csr", "e2e-csr-valid", "a=b")
    patched = kubectl("patch", "csr", "e2e-csr-valid", "--type=merge", "-p",
                      json.dumps({"spec": {"signerName": "example.com/other"}}))
    assert patched.returncode == 0
    assert kubectl.json("get", "csr", "e2e-csr-valid")["spec"]["signerName"] == \
        "kubernetes.io/kube-apiserver-client"
    status = kubectl("patch", "csr", "e2e-csr-valid", "--subresource=status", "--type=merge",
                     "-p", json.dumps({"status": {"conditions": [
                         {"type": "Approved", "status": "True", "reason": "Sneaky"}]}}),
                     check=False)
    assert status.returncode != 0
    assert 'updates may not add a condition of type \\"Approved\\"' in status.stderr or \
        'updates may not add a condition of type "Approved"' in status.stderr

    kubectl("certificate", "deny", "e2e-csr-valid")
    cond = kubectl.json("get", "csr", "e2e-csr-valid")["status"]["conditions"]
    assert [(c["type"], c["status"], c["reason"]) for c in cond] == \
        [("Denied", "True", "KubectlDeny")]
    assert cond[0]["lastUpdateTime"] and cond[0]["lastTransitionTime"]
    assert "Denied" in kubectl("get", "csr", "e2e-csr-valid").stdout
    kubectl("delete", "csr", "e2e-csr-valid")


def test_the_signer_issues_approved_requests_from_its_ca(server, kubectl, tmp_path):
    """A separate controller manager signs with a CA given by flags."""
    ca_crt, ca_key = make_ca(tmp_path)
    port = free_port()
    cm = subprocess.Popen(
        [str(coxswain_bin()), "controller-manager", f"--kubeconfig={server.kubeconfig}",
         "--bind-address=127.0.0.1", f"--secure-port={port}",
         "--controllers=csrsigning", "--leader-elect=false",
         f"--cluster-signing-cert-file={ca_crt}", f"--cluster-signing-key-file={ca_key}",
         "--cluster-signing-duration=2h"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        _, req = make_request(tmp_path, "bob", "/CN=bob/O=devs")
        kubectl.apply_yaml("create", csr_doc("e2e-csr-bob", req, expirationSeconds=3600))
        kubectl("certificate", "approve", "e2e-csr-bob")
        cond = kubectl.json("get", "csr", "e2e-csr-bob")["status"]["conditions"]
        assert [(c["type"], c["reason"]) for c in cond] == [("Approved", "KubectlApprove")]
        pem = issued(kubectl, "e2e-csr-bob")
        (tmp_path / "bob.crt").write_bytes(pem)
        verify = subprocess.run(["openssl", "verify", "-CAfile", str(ca_crt),
                                 str(tmp_path / "bob.crt")], capture_output=True, text=True)
        assert verify.returncode == 0, verify.stdout + verify.stderr
        text = openssl_text(pem, tmp_path)
        assert "CN=bob" in text.replace(" = ", "=") and "O=devs" in text.replace(" = ", "=")
        assert "TLS Web Client Authentication" in text
        assert "CA:FALSE" in text
        assert "Approved,Issued" in kubectl("get", "csr", "e2e-csr-bob").stdout

        # a request the signer refuses gets the Failed condition
        _, req2 = make_request(tmp_path, "srv", "/CN=srv")
        kubectl.apply_yaml("create", csr_doc("e2e-csr-server", req2,
                                             usages=["client auth", "server auth"]))
        kubectl("certificate", "approve", "e2e-csr-server")

        def failed():
            c = kubectl.json("get", "csr", "e2e-csr-server")
            return [x for x in c["status"].get("conditions", []) if x["type"] == "Failed"]

        f = wait_until(failed, timeout=30, message="Failed condition")[0]
        assert f["reason"] == "SignerValidationFailure"
        assert f["message"] == "invalid usage for client certificate: server auth"
    finally:
        stop_process(cm)
        kubectl("delete", "csr", "e2e-csr-bob", "e2e-csr-server", "--ignore-not-found")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    srv = CoxswainServer(tmp_path_factory.mktemp("coxswain-certs"), name="certs", command="up")
    srv.start(extra_args=["--nodes", "0"])
    yield srv
    srv.stop()


def test_a_signed_certificate_authenticates_on_up(cluster, tmp_path):
    """`coxswain up` signs with the cluster CA: the certificate is an identity."""
    key, req = make_request(tmp_path, "alice", "/CN=alice/O=devs")
    doc = csr_doc("e2e-csr-alice", req, expirationSeconds=86400)
    cluster.kubectl("create", "-f", "-", input=json.dumps(doc))
    cluster.kubectl("certificate", "approve", "e2e-csr-alice")

    def cert():
        c = json.loads(cluster.kubectl("get", "csr", "e2e-csr-alice", "-o", "json").stdout)
        return (c.get("status") or {}).get("certificate")

    pem = base64.b64decode(wait_until(cert, timeout=30, message="alice's certificate"))
    crt = tmp_path / "alice.crt"
    crt.write_bytes(pem)
    # a plain request with the certificate as the only credential
    r = requests.get(cluster.server_url + "/api/v1/namespaces/default/pods",
                     cert=(str(crt), str(key)), verify=cluster.ca_file, timeout=10)
    assert r.status_code != 401, r.text
    if r.status_code == 403:
        assert 'User "alice"' in r.json()["message"], r.text
    # kubectl with the certificate and key as its user
    kubeconfig = tmp_path / "alice.kubeconfig"
    kubeconfig.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "alice",
        "clusters": [{"name": "c", "cluster": {"server": cluster.server_url,
                                               "certificate-authority": cluster.ca_file}}],
        "users": [{"name": "alice", "user": {"client-certificate": str(crt),
                                             "client-key": str(key)}}],
        "contexts": [{"name": "alice", "context": {"cluster": "c", "user": "alice"}}],
    }))
    who = subprocess.run([*_kubectl_cmd(), f"--kubeconfig={kubeconfig}", "auth", "whoami",
                          "-o", "json"], capture_output=True, text=True, timeout=60)
    assert who.returncode == 0, who.stderr
    info = json.loads(who.stdout)["status"]["userInfo"]
    assert info["username"] == "alice"
    assert "devs" in info["groups"]


def _kubectl_cmd() -> list[str]:
    from conftest import find_kubectl

    return [find_kubectl()]


def _detached_jws(content: str, token_id: str, secret: str) -> str:
    import hashlib
    import hmac

    def b64(b: bytes) -> str:
        return base64.urlsafe_b64encode(b).rstrip(b"=").decode()

    header = b64(json.dumps({"alg": "HS256", "kid": token_id}, separators=(",", ":")).encode())
    sig = hmac.new(secret.encode(), f"{header}.{b64(content.encode())}".encode(),
                   hashlib.sha256).digest()
    return f"{header}..{b64(sig)}"


def test_bootstrap_tokens_sign_cluster_info_and_expire(server, kubectl):
    """bootstrapsigner and tokencleaner (off by default) in a controller manager."""
    port = free_port()
    cm = subprocess.Popen(
        [str(coxswain_bin()), "controller-manager", f"--kubeconfig={server.kubeconfig}",
         "--bind-address=127.0.0.1", f"--secure-port={port}", "--leader-elect=false",
         "--controllers=bootstrapsigner,tokencleaner"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    def secret(token_id: str, **data) -> dict:
        return {"apiVersion": "v1", "kind": "Secret", "type": "bootstrap.kubernetes.io/token",
                "metadata": {"name": f"bootstrap-token-{token_id}", "namespace": "kube-system"},
                "stringData": {"token-id": token_id, **data}}

    try:
        kubectl("create", "namespace", "kube-public", check=False)
        kubectl.apply_yaml("apply", {"apiVersion": "v1", "kind": "ConfigMap",
                                     "metadata": {"name": "cluster-info",
                                                  "namespace": "kube-public"},
                                     "data": {"kubeconfig": "a kubeconfig"}})
        kubectl.apply_yaml("apply", secret("abc123", **{"token-secret": "0123456789abcdef",
                                                         "usage-bootstrap-signing": "true"}))
        want = _detached_jws("a kubeconfig", "abc123", "0123456789abcdef")

        def signature():
            cm_ = kubectl.json("get", "configmap", "cluster-info", "-n", "kube-public")
            return cm_.get("data", {}).get("jws-kubeconfig-abc123")

        assert wait_until(signature, timeout=30, message="cluster-info signed") == want
        # an expired token is deleted
        kubectl.apply_yaml("apply", secret("old123", **{"token-secret": "0123456789abcdef",
                                                         "expiration": "2000-01-01T00:00:00Z"}))
        wait_until(lambda: kubectl("get", "secret", "bootstrap-token-old123", "-n",
                                   "kube-system", check=False).returncode != 0,
                   timeout=30, message="expired token deleted")
        # the signature goes with its token
        kubectl("delete", "secret", "bootstrap-token-abc123", "-n", "kube-system")
        wait_until(lambda: signature() is None, timeout=30, message="signature removed")
    finally:
        stop_process(cm)
        kubectl("delete", "configmap", "cluster-info", "-n", "kube-public", "--ignore-not-found")
