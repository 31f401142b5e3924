"""API Priority and Fairness configuration and the aggregation layer, judged by kubectl:
FlowSchemas and PriorityLevelConfigurations (bootstrap objects, tables, create, update,
delete, watch), APIServices (the local ones Available, one of our own), and an
aggregated API served by a small HTTPS server in this process, reached through
`--service-proxy-map` and used with `kubectl get` and `kubectl api-resources`."""

import base64
import json
import ssl
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from conftest import StreamReader, free_port, parse_json_stream, stop_process, wait_until

FC = "flowcontrol.apiserver.k8s.io/v1"


def header_and_rows(out: str):
    lines = [l for l in out.splitlines() if l.strip()]
    return lines[0].split(), [l.split() for l in lines[1:]]


def test_bootstrap_flow_schemas_and_priority_levels(kubectl):
    header, rows = header_and_rows(kubectl("get", "flowschemas").stdout)
    assert header == ["NAME", "PRIORITYLEVEL", "MATCHINGPRECEDENCE", "DISTINGUISHERMETHOD",
                      "AGE", "MISSINGPL"]
    by_name = {r[0]: r for r in rows}
    assert by_name["exempt"][1:4] == ["exempt", "1", "<none>"]
    assert by_name["catch-all"][1:4] == ["catch-all", "10000", "ByUser"]
    assert by_name["global-default"][-1] == "False"
    # listed by name, as every list
    assert [r[0] for r in rows] == sorted(r[0] for r in rows)
    header, rows = header_and_rows(kubectl("get", "prioritylevelconfigurations").stdout)
    assert header == ["NAME", "TYPE", "NOMINALCONCURRENCYSHARES", "QUEUES", "HANDSIZE",
                      "QUEUELENGTHLIMIT", "AGE"]
    by_name = {r[0]: r for r in rows}
    assert by_name["exempt"][1:6] == ["Exempt", "<none>", "<none>", "<none>", "<none>"]
    assert by_name["workload-low"][1:6] == ["Limited", "100", "128", "6", "50"]
    assert by_name["catch-all"][1:6] == ["Limited", "5", "<none>", "<none>", "<none>"]
    fs = kubectl.json("get", "flowschema", "system-nodes")
    assert fs["metadata"]["annotations"]["apf.kubernetes.io/autoupdate-spec"] == "true"
    dangling = [c for c in fs["status"]["conditions"] if c["type"] == "Dangling"]
    assert dangling and dangling[0]["status"] == "False" and dangling[0]["reason"] == "Found"


def test_flow_schema_round_trip_and_watch(kubectl):
    proc = kubectl.popen("get", "flowschemas", "--watch-only", "-o", "json")
    reader = StreamReader(proc.stdout)
    try:
        pl = {"apiVersion": FC, "kind": "PriorityLevelConfiguration",
              "metadata": {"name": "e2e-level"},
              "spec": {"type": "Limited", "limited": {
                  "limitResponse": {"type": "Queue", "queuing": {"queues": 16}}}}}
        kubectl.apply_yaml("create", pl)
        got = kubectl.json("get", "prioritylevelconfiguration", "e2e-level")
        assert got["spec"]["limited"]["nominalConcurrencyShares"] == 30
        assert got["spec"]["limited"]["lendablePercent"] == 0
        assert got["spec"]["limited"]["limitResponse"]["queuing"] == {
            "queues": 16, "handSize": 8, "queueLengthLimit": 50}
        fs = {"apiVersion": FC, "kind": "FlowSchema", "metadata": {"name": "e2e-schema"},
              "spec": {"priorityLevelConfiguration": {"name": "e2e-missing"},
                       "distinguisherMethod": {"type": "ByNamespace"},
                       "rules": [{"subjects": [{"kind": "Group", "group": {"name": "e2e"}}],
                                  "resourceRules": [{"verbs": ["list"], "apiGroups": [""],
                                                     "resources": ["pods"], "namespaces": ["*"]}]}]}}
        kubectl.apply_yaml("create", fs)
        _, rows = header_and_rows(kubectl("get", "flowschema", "e2e-schema").stdout)
        assert rows[0][1:4] == ["e2e-missing", "1000", "ByNamespace"]
        assert rows[0][-1] == "True"
        # point it at the level that exists: the condition follows
        kubectl("patch", "flowschema", "e2e-schema", "--type=merge",
                "-p", json.dumps({"spec": {"priorityLevelConfiguration": {"name": "e2e-level"}}}))
        got = kubectl.json("get", "flowschema", "e2e-schema")
        assert got["metadata"]["generation"] == 2
        cond = [c for c in got["status"]["conditions"] if c["type"] == "Dangling"][0]
        assert (cond["status"], cond["reason"]) == ("False", "Found")
        assert cond["message"] == ('This FlowSchema references the PriorityLevelConfiguration '
                                   'object named "e2e-level" and it exists')
        kubectl("delete", "flowschema", "e2e-schema")
        kubectl("delete", "prioritylevelconfiguration", "e2e-level")

        def events():
            evs = [e for e in parse_json_stream(reader.text())
                   if e.get("metadata", {}).get("name") == "e2e-schema"]
            return evs if len(evs) >= 3 else None

        evs = wait_until(events, timeout=15)
        assert evs[0]["spec"]["priorityLevelConfiguration"]["name"] == "e2e-missing"
        assert any(e["spec"]["priorityLevelConfiguration"]["name"] == "e2e-level" for e in evs)
    finally:
        stop_process(proc)
    assert kubectl("get", "flowschema", "e2e-schema", check=False).returncode != 0


def test_invalid_and_mandatory_objects(kubectl):
    bad = {"apiVersion": FC, "kind": "PriorityLevelConfiguration", "metadata": {"name": "e2e-bad"},
           "spec": {"type": "Limited", "limited": {"lendablePercent": 150,
                                                   "limitResponse": {"type": "Reject"}}}}
    cp = kubectl.apply_yaml("create", bad, check=False)
    assert cp.returncode != 0
    assert ('"e2e-bad" is invalid: spec.limited.lendablePercent: Invalid value: 150: '
            'must be between 0 and 100, inclusive') in cp.stderr, cp.stderr
    cp = kubectl("patch", "flowschema", "exempt", "--type=merge",
                 "-p", '{"spec":{"matchingPrecedence":5}}', check=False)
    assert cp.returncode != 0
    assert "spec of 'exempt' must equal the fixed value" in cp.stderr, cp.stderr
    # a deleted mandatory object is put back
    kubectl("delete", "prioritylevelconfiguration", "catch-all")
    got = kubectl.json("get", "prioritylevelconfiguration", "catch-all")
    assert got["spec"]["limited"]["nominalConcurrencyShares"] == 5


def test_local_api_services_are_available(kubectl):
    header, rows = header_and_rows(kubectl("get", "apiservices").stdout)
    assert header == ["NAME", "SERVICE", "AVAILABLE", "AGE"]
    by_name = {r[0]: r for r in rows}
    for name in ["v1.", "v1.apps", "v1.apiregistration.k8s.io", "v2.autoscaling",
                 "v1.flowcontrol.apiserver.k8s.io", "v1.rbac.authorization.k8s.io"]:
        assert by_name[name][1:3] == ["Local", "True"], by_name.get(name)
    svc = kubectl.json("get", "apiservice", "v1.apps")
    assert svc["spec"] == {"group": "apps", "version": "v1", "groupPriorityMinimum": 17800,
                           "versionPriority": 15}
    names = kubectl("api-resources", "--categories=api-extensions", "-o", "name").stdout.split()
    assert "apiservices.apiregistration.k8s.io" in names


def test_api_service_round_trip(kubectl):
    svc = {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
           "metadata": {"name": "v1beta1.e2e.example.com"},
           "spec": {"group": "e2e.example.com", "version": "v1beta1",
                    "groupPriorityMinimum": 500, "versionPriority": 10,
                    "service": {"namespace": "default", "name": "nowhere"},
                    "insecureSkipTLSVerify": True}}
    kubectl.apply_yaml("create", svc)
    got = kubectl.json("get", "apiservice", "v1beta1.e2e.example.com")
    assert got["spec"]["service"]["port"] == 443
    kubectl("wait", "apiservice/v1beta1.e2e.example.com",
            "--for=jsonpath={.status.conditions[0].reason}=ServiceNotFound", "--timeout=30s")
    _, rows = header_and_rows(kubectl("get", "apiservice", "v1beta1.e2e.example.com").stdout)
    assert rows[0][1] == "default/nowhere"
    assert " ".join(rows[0][2:4]) == "False (ServiceNotFound)"
    kubectl("patch", "apiservice", "v1beta1.e2e.example.com", "--type=merge",
            "-p", '{"spec":{"versionPriority":20}}')
    assert kubectl.json("get", "apiservice", "v1beta1.e2e.example.com")["spec"]["versionPriority"] == 20
    kubectl("delete", "apiservice", "v1beta1.e2e.example.com")
    assert kubectl("get", "apiservice", "v1beta1.e2e.example.com", check=False).returncode != 0


# ---------------------------------------------------------------------------
# an aggregated API server
# ---------------------------------------------------------------------------

GROUP = "wardle.example.com"
RESOURCES = {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": f"{GROUP}/v1alpha1",
             "resources": [{"name": "flunders", "singularName": "flunder", "namespaced": True,
                            "kind": "Flunder", "verbs": ["get", "list"], "shortNames": ["fl"]}]}


OPENAPI = {
    "openapi": "3.0.0", "info": {"title": "wardle", "version": "v1alpha1"},
    "paths": {f"/apis/{GROUP}/v1alpha1/namespaces/{{namespace}}/flunders/{{name}}": {"get": {
        "responses": {"200": {"description": "OK", "content": {"application/json": {
            "schema": {"$ref": "#/components/schemas/com.example.wardle.v1alpha1.Flunder"}}}}},
        "x-kubernetes-action": "get",
        "x-kubernetes-group-version-kind": {"group": GROUP, "kind": "Flunder",
                                            "version": "v1alpha1"}}}},
    "components": {"schemas": {"com.example.wardle.v1alpha1.Flunder": {
        "type": "object", "description": "A Flunder is a test object.",
        "properties": {
            "apiVersion": {"type": "string"}, "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": {"type": "object", "description": "What the flunder wants.",
                     "properties": {"reference": {"type": "string",
                                                  "description": "The name of another flunder."}}},
        },
        "x-kubernetes-group-version-kind": [
            {"group": GROUP, "kind": "Flunder", "version": "v1alpha1"}],
    }}},
}


def certificates(tmp_path, dns_name):
    """A CA and a serving certificate for dns_name (openssl): (ca pem, cert path, key path)."""
    def run(*args):
        subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=tmp_path)
    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt",
        "-days", "2", "-subj", "/CN=e2e-ca")
    run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "tls.key", "-out", "tls.csr",
        "-subj", f"/CN={dns_name}")
    (tmp_path / "ext.cnf").write_text(f"subjectAltName=DNS:{dns_name}\n")
    run("x509", "-req", "-in", "tls.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
        "-CAcreateserial", "-out", "tls.crt", "-days", "2", "-extfile", "ext.cnf")
    return (tmp_path / "ca.crt").read_text(), tmp_path / "tls.crt", tmp_path / "tls.key"


class Handler(BaseHTTPRequestHandler):
    seen: list = []

    def log_message(self, *args):
        pass

    def do_GET(self):
        Handler.seen.append({"path": self.path,
                             "user": self.headers.get("X-Remote-User"),
                             "groups": self.headers.get_all("X-Remote-Group") or [],
                             "authorization": self.headers.get("Authorization")})
        path = self.path.split("?")[0]
        if path == f"/apis/{GROUP}/v1alpha1":
            body = RESOURCES
        elif path == "/openapi/v3":
            body = {"paths": {f"apis/{GROUP}/v1alpha1": {
                "serverRelativeURL": f"/openapi/v3/apis/{GROUP}/v1alpha1?hash=0123"}}}
        elif path == f"/openapi/v3/apis/{GROUP}/v1alpha1":
            body = OPENAPI
        elif path in (f"/apis/{GROUP}/v1alpha1/namespaces/default/flunders",
                      f"/apis/{GROUP}/v1alpha1/flunders"):
            body = {"kind": "FlunderList", "apiVersion": f"{GROUP}/v1alpha1", "metadata": {},
                    "items": [{"kind": "Flunder", "apiVersion": f"{GROUP}/v1alpha1",
                               "metadata": {"name": "flunder-1", "namespace": "default",
                                            "creationTimestamp": "2024-01-01T00:00:00Z"}}]}
        else:
            self.send_response(404)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(json.dumps({"kind": "Status", "apiVersion": "v1",
                                         "status": "Failure", "reason": "NotFound",
                                         "code": 404}).encode())
            return
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def wardle(tmp_path):
    ca, cert, key = certificates(tmp_path, "api.wardle.svc")
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(str(cert), str(key))
    httpd.socket = ctx.wrap_socket(httpd.socket, server_side=True)
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    yield ca, httpd.server_address[1]
    httpd.shutdown()


def test_aggregated_api_is_proxied(fresh_server, wardle):
    ca, port = wardle
    fresh_server.start(extra_args=["--service-proxy-map", f"wardle/api:443=127.0.0.1:{port}"])
    kubectl = fresh_server.kubectl
    kubectl("create", "namespace", "wardle")
    kubectl("create", "service", "clusterip", "api", "-n", "wardle", "--tcp=443:8443")
    svc = {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
           "metadata": {"name": f"v1alpha1.{GROUP}"},
           "spec": {"group": GROUP, "version": "v1alpha1", "groupPriorityMinimum": 1000,
                    "versionPriority": 15, "service": {"namespace": "wardle", "name": "api"},
                    "caBundle": base64.b64encode(ca.encode()).decode()}}
    import yaml
    kubectl("create", "-f", "-", input=yaml.safe_dump(svc))
    kubectl("wait", f"apiservice/v1alpha1.{GROUP}", "--for=condition=Available",
            "--timeout=30s")
    _, rows = header_and_rows(kubectl("get", "apiservice", f"v1alpha1.{GROUP}").stdout)
    assert rows[0][1:3] == ["wardle/api", "True"]
    out = kubectl("api-resources", f"--api-group={GROUP}").stdout
    assert "flunders" in out and "Flunder" in out, out
    out = kubectl("get", "flunders", "-n", "default").stdout
    assert "flunder-1" in out, out
    out = kubectl("get", "fl", "-n", "default", "-o", "name").stdout
    assert out.strip() == f"flunder.{GROUP}/flunder-1", out
    # its OpenAPI document is listed and proxied: kubectl explain works
    index = json.loads(kubectl("get", "--raw", "/openapi/v3").stdout)
    assert f"apis/{GROUP}/v1alpha1" in index["paths"]
    out = kubectl("explain", "flunders.spec").stdout
    assert "What the flunder wants." in out and "reference" in out, out
    proxied = [s for s in Handler.seen if "/flunders" in s["path"]]
    assert proxied, Handler.seen
    assert proxied[-1]["user"] == "kubernetes-admin"
    assert "system:masters" in proxied[-1]["groups"]
    assert proxied[-1]["authorization"] is None
    checks = [s for s in Handler.seen if s["path"] == f"/apis/{GROUP}/v1alpha1"
              and s["user"] == "system:kube-aggregator"]
    assert checks and checks[0]["groups"] == ["system:masters"]


def test_python_client_reads_the_new_kinds(api_client):
    from kubernetes import client

    fc = client.FlowcontrolApiserverV1Api(api_client)
    schemas = {f.metadata.name: f for f in fc.list_flow_schema().items}
    assert schemas["catch-all"].spec.distinguisher_method.type == "ByUser"
    assert schemas["probes"].spec.rules[0].non_resource_rules[0].non_resource_urls == [
        "/healthz", "/readyz", "/livez"]
    levels = {p.metadata.name: p for p in fc.list_priority_level_configuration().items}
    assert levels["exempt"].spec.exempt.nominal_concurrency_shares == 0
    assert levels["system"].spec.limited.limit_response.queuing.hand_size == 6
    ar = client.ApiregistrationV1Api(api_client)
    services = {s.metadata.name: s for s in ar.list_api_service().items}
    apps = services["v1.apps"]
    assert (apps.spec.group_priority_minimum, apps.spec.version_priority) == (17800, 15)
    assert apps.status.conditions[0].reason == "Local"
