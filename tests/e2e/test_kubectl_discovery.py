"""Discovery, OpenAPI and explain, as seen by the real kubectl."""

import json
import re

from conftest import deployment


def parse_table(text: str) -> list[dict]:
    """Parse kubectl's column-aligned table output using header positions."""
    lines = [l for l in text.splitlines() if l.strip()]
    header = lines[0]
    cols = [(m.group(0), m.start()) for m in re.finditer(r"\S+", header)]
    rows = []
    for line in lines[1:]:
        row = {}
        for i, (name, start) in enumerate(cols):
            end = cols[i + 1][1] if i + 1 < len(cols) else None
            row[name] = line[start:end].strip() if end else line[start:].strip()
        rows.append(row)
    return rows


EXPECTED_RESOURCES = [
    # name, short name, apiVersion, namespaced, kind
    ("deployments", "deploy", "apps/v1", "true", "Deployment"),
    ("pods", "po", "v1", "true", "Pod"),
    ("services", "svc", "v1", "true", "Service"),
    ("configmaps", "cm", "v1", "true", "ConfigMap"),
    ("namespaces", "ns", "v1", "false", "Namespace"),
]


def test_api_resources_lists_core_kinds_with_short_names(kubectl):
    out = kubectl("api-resources").stdout
    rows = parse_table(out)
    assert rows, out
    assert list(rows[0].keys())[:2] == ["NAME", "SHORTNAMES"], out.splitlines()[0]
    by_key = {(r["NAME"], r["APIVERSION"]): r for r in rows}
    for name, short, api_version, namespaced, kind in EXPECTED_RESOURCES:
        row = by_key.get((name, api_version))
        assert row is not None, f"{name} ({api_version}) missing from api-resources:\n{out}"
        assert short in row["SHORTNAMES"].split(","), row
        assert row["NAMESPACED"] == namespaced, row
        assert row["KIND"] == kind, row


def test_api_resources_verbs_and_namespaced_filter(kubectl):
    out = kubectl("api-resources", "--namespaced=false", "-o", "name").stdout.split()
    assert "namespaces" in out
    assert "configmaps" not in out and "deployments.apps" not in out
    wide = parse_table(kubectl("api-resources", "-o", "wide").stdout)
    cm = next(r for r in wide if r["NAME"] == "configmaps")
    verbs = set(re.split(r"[\s,]+", cm["VERBS"].strip("[] ")))
    assert {"create", "delete", "get", "list", "patch", "update", "watch"} <= verbs, cm


def test_short_names_resolve_in_get(kubectl, ns):
    kubectl.apply_yaml("create", deployment("short"), "-n", ns)
    out = kubectl("get", "deploy", "-n", ns, "-o", "name").stdout.split()
    assert out == ["deployment.apps/short"]
    table = kubectl("get", "deploy", "-n", ns).stdout
    assert table.splitlines()[0].split()[0] == "NAME", table
    assert any(l.split()[0] == "short" for l in table.splitlines()[1:]), table
    # other short names resolve too (empty lists are fine)
    for short in ("po", "svc", "cm"):
        kubectl("get", short, "-n", ns)
    assert kubectl("get", "ns", ns, "-o", "name").stdout.split() == [f"namespace/{ns}"]
    assert f"namespace/{ns}" in kubectl("get", "ns", "-o", "name").stdout.split()


def test_api_versions(kubectl):
    versions = kubectl("api-versions").stdout.split()
    assert "v1" in versions
    assert "apps/v1" in versions


def test_get_raw_api(kubectl):
    doc = json.loads(kubectl("get", "--raw", "/api").stdout)
    assert doc["kind"] == "APIVersions"
    assert "v1" in doc["versions"]


def test_get_raw_api_v1_resource_list(kubectl):
    doc = json.loads(kubectl("get", "--raw", "/api/v1").stdout)
    assert doc["kind"] == "APIResourceList"
    assert doc["groupVersion"] == "v1"
    names = {r["name"]: r for r in doc["resources"]}
    assert names["configmaps"]["namespaced"] is True
    assert names["configmaps"]["kind"] == "ConfigMap"
    assert "namespaces/finalize" in names and "namespaces/status" in names
    assert "pods/status" in names


def test_get_raw_apis(kubectl):
    doc = json.loads(kubectl("get", "--raw", "/apis").stdout)
    assert doc["kind"] == "APIGroupList"
    groups = {g["name"]: g for g in doc["groups"]}
    assert "apps" in groups
    assert "apps/v1" in [v["groupVersion"] for v in groups["apps"]["versions"]]
    assert groups["apps"]["preferredVersion"]["groupVersion"] == "apps/v1"
    res = json.loads(kubectl("get", "--raw", "/apis/apps/v1").stdout)
    assert res["kind"] == "APIResourceList"
    names = {r["name"] for r in res["resources"]}
    assert {"deployments", "deployments/scale", "deployments/status"} <= names


def test_get_raw_version(kubectl):
    doc = json.loads(kubectl("get", "--raw", "/version").stdout)
    assert doc["gitVersion"].startswith("v"), doc
    assert doc["major"] and doc["minor"], doc
    # `kubectl version` must also reach the server
    out = kubectl("version", "-o", "json").stdout
    assert json.loads(out)["serverVersion"]["gitVersion"] == doc["gitVersion"]


def test_get_raw_openapi_v3(kubectl):
    root = json.loads(kubectl("get", "--raw", "/openapi/v3").stdout)
    paths = root["paths"]
    assert "api/v1" in paths and "apis/apps/v1" in paths, sorted(paths)[:20]
    url = paths["apis/apps/v1"]["serverRelativeURL"]
    assert url.startswith("/openapi/v3/apis/apps/v1"), url
    spec = json.loads(kubectl("get", "--raw", url, timeout=60).stdout)
    assert spec["openapi"].startswith("3."), spec.get("openapi")
    schemas = spec["components"]["schemas"]
    dep = schemas["io.k8s.api.apps.v1.Deployment"]
    assert {"group": "apps", "kind": "Deployment", "version": "v1"} in dep["x-kubernetes-group-version-kind"]


def test_explain_field(kubectl):
    out = kubectl("explain", "deployment.spec.replicas").stdout
    assert re.search(r"KIND:\s+Deployment", out), out
    assert re.search(r"VERSION:\s+v1", out), out
    assert re.search(r"FIELD:\s+replicas\s+<integer>", out), out
    assert "number of desired pods" in out.lower(), out


def test_explain_recursive_structure(kubectl):
    out = kubectl("explain", "configmap").stdout
    assert re.search(r"KIND:\s+ConfigMap", out), out
    assert re.search(r"\bdata\s+<map\[string\]string>", out), out
