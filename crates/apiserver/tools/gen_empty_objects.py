#!/usr/bin/env python3
"""Derive the JSON of the Go zero value of built-in Kubernetes kinds.

Reads Go type declarations from git mirrors of kubernetes/api, kubernetes/apimachinery
and kubernetes/apiextensions-apiserver (tag v0.36.x) and prints, per kind, a row of the Rust table `EMPTY_OBJECTS` in src/lib.rs: the JSON that
encoding/json (and runtime.DefaultUnstructuredConverter) produce for `new(Kind)`.

Usage: gen_empty_objects.py <api-git-dir> <apimachinery-git-dir> <apiextensions-git-dir> [tag]
"""
import json, re, subprocess, sys

API, MACH, EXT = sys.argv[1:4]
TAG = sys.argv[4] if len(sys.argv) > 4 else "v0.36.3"

def show(repo, path):
    return subprocess.run(["git", "-C", repo, "show", f"{TAG}:{path}"], check=True,
                          capture_output=True, text=True).stdout

def ls(repo, d):
    out = subprocess.run(["git", "-C", repo, "ls-tree", "--name-only", TAG, d + "/"],
                         check=True, capture_output=True, text=True).stdout.split()
    return [p for p in out if p.endswith(".go") and not p.endswith("_test.go")
            and "zz_generated" not in p and "generated" not in p.rsplit("/", 1)[-1]]

# package import path -> (repo, dir)
PKGS = {}
for g in ["core/v1", "apps/v1", "autoscaling/v1", "autoscaling/v2", "batch/v1", "certificates/v1",
          "coordination/v1", "discovery/v1", "events/v1", "networking/v1", "policy/v1", "rbac/v1",
          "scheduling/v1", "storage/v1"]:
    PKGS["k8s.io/api/" + g] = (API, g)
PKGS["k8s.io/apimachinery/pkg/apis/meta/v1"] = (MACH, "pkg/apis/meta/v1")
PKGS["k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"] = (EXT, "pkg/apis/apiextensions/v1")

# Types with custom marshalling: zero value JSON.
SPECIAL = {
    ("k8s.io/apimachinery/pkg/apis/meta/v1", "Time"): None,
    ("k8s.io/apimachinery/pkg/apis/meta/v1", "MicroTime"): None,
    ("k8s.io/apimachinery/pkg/apis/meta/v1", "Duration"): "0s",
    ("k8s.io/apimachinery/pkg/apis/meta/v1", "FieldsV1"): None,
    ("k8s.io/apimachinery/pkg/api/resource", "Quantity"): "0",
    ("k8s.io/apimachinery/pkg/util/intstr", "IntOrString"): 0,
    ("k8s.io/apimachinery/pkg/runtime", "RawExtension"): None,
    ("k8s.io/apimachinery/pkg/types", "UID"): "",
    ("k8s.io/apimachinery/pkg/types", "NodeName"): "",
    ("k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1", "JSON"): None,
    ("k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1", "JSONSchemaPropsOrBool"): None,
    ("k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1", "JSONSchemaPropsOrArray"): None,
    ("k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1", "JSONSchemaPropsOrStringArray"): None,
}
SCALARS = {"string": "", "bool": False, "byte": 0, "float32": 0, "float64": 0}
for b in ["int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64"]:
    SCALARS[b] = 0

TYPES = {}  # (pkg, name) -> ("struct", [fields]) | ("alias", typeexpr, imports)

def strip_comments(src):
    src = re.sub(r"/\*.*?\*/", "", src, flags=re.S)
    return re.sub(r"//[^\n]*", "", src)

def parse_pkg(pkg):
    repo, d = PKGS[pkg]
    for path in ls(repo, d):
        src = strip_comments(show(repo, path))
        imports = {}
        for m in re.finditer(r'(?:^|\n)\s*(\w+\s+)?"([^"]+)"', "".join(
                re.findall(r"import\s*\((.*?)\)", src, re.S) + re.findall(r'import\s+(\w*\s*"[^"]+")', src))):
            alias = (m.group(1) or "").strip() or m.group(2).rsplit("/", 1)[-1]
            imports[alias] = m.group(2)
        for m in re.finditer(r"\btype\s+(\w+)\s+struct\s*\{", src):
            depth, i = 1, m.end()
            while depth:
                depth += {"{": 1, "}": -1}.get(src[i], 0)
                i += 1
            body = src[m.end():i - 1]
            fields = []
            for line in body.split("\n"):
                line = line.strip()
                if not line:
                    continue
                fm = re.match(r"^(?:(\w+)\s+)?([^\s`]+)\s*(`.*`)?$", line)
                if not fm:
                    raise SystemExit(f"cannot parse field in {pkg}.{m.group(1)}: {line!r}")
                name, typ, tag = fm.group(1), fm.group(2), fm.group(3) or ""
                jm = re.search(r'json:"([^"]*)"', tag)
                jtag = jm.group(1) if jm else None
                fields.append((name, typ, jtag))
            TYPES[(pkg, m.group(1))] = ("struct", fields, imports)
        for m in re.finditer(r"\btype\s+(\w+)\s+([\w\.\*\[\]]+)\s*\n", src):
            if m.group(2) not in ("struct", "interface"):
                TYPES.setdefault((pkg, m.group(1)), ("alias", m.group(2), imports))
        for m in re.finditer(r"\btype\s*\((.*?)\n\)", src, re.S):
            for tm in re.finditer(r"^\s*(\w+)\s+([\w\.\*\[\]]+)\s*$", m.group(1), re.M):
                TYPES.setdefault((pkg, tm.group(1)), ("alias", tm.group(2), imports))

for p in PKGS:
    parse_pkg(p)

OMIT = object()

def resolve(pkg, typ, imports):
    """-> (kind, payload): kind in scalar|null|struct|special."""
    if typ.startswith("*") or typ.startswith("[]") or typ.startswith("map["):
        return ("nil", None)
    if typ in SCALARS:
        return ("scalar", SCALARS[typ])
    if typ in ("interface{}", "any"):
        return ("nil", None)
    if "." in typ:
        alias, name = typ.split(".", 1)
        key = (imports[alias], name)
    else:
        key = (pkg, typ)
    if key in SPECIAL:
        return ("special", SPECIAL[key])
    if key not in TYPES:
        raise SystemExit(f"unknown type {key} (from {pkg} {typ})")
    t = TYPES[key]
    if t[0] == "struct":
        return ("struct", key)
    return resolve(key[0], t[1], t[2])

def zero(key):
    _, fields, imports = TYPES[key]
    out = {}
    for name, typ, jtag in fields:
        if jtag == "-":
            continue
        parts = (jtag or "").split(",")
        jname, opts = parts[0], parts[1:]
        kind, payload = resolve(key[0], typ, imports)
        if name is None and jname == "":  # embedded
            if "inline" not in opts and kind != "struct":
                raise SystemExit(f"odd embedded field {typ} in {key}")
            if kind == "struct":
                out.update(zero(payload))
            continue
        if jname == "":
            jname = name
        if "omitzero" in opts:  # Go 1.24+: every field of a zero value is zero
            continue
        omitempty = "omitempty" in opts
        if kind == "nil":
            if not omitempty:
                out[jname] = None
        elif kind == "scalar":
            if not omitempty:
                out[jname] = payload
        elif kind == "special":
            # custom marshalers: structs are never omitted; string-like ones are.
            if not (omitempty and isinstance(payload, (str, int)) and key_is_stringish(typ)):
                out[jname] = payload
        else:
            out[jname] = zero(payload)
    return out

def key_is_stringish(typ):
    return typ.endswith("UID") or typ.endswith("NodeName")

KINDS = [
    ("", "v1", "core/v1", ["ConfigMap", "Endpoints", "Event", "LimitRange", "Namespace", "Node",
        "PersistentVolumeClaim", "PersistentVolume", "Pod", "PodTemplate", "ReplicationController",
        "ResourceQuota", "Secret", "ServiceAccount", "Service"]),
    ("apps", "v1", "apps/v1", ["ControllerRevision", "DaemonSet", "Deployment", "ReplicaSet", "StatefulSet"]),
    ("autoscaling", "v1", "autoscaling/v1", ["HorizontalPodAutoscaler"]),
    ("autoscaling", "v2", "autoscaling/v2", ["HorizontalPodAutoscaler"]),
    ("batch", "v1", "batch/v1", ["CronJob", "Job"]),
    ("certificates.k8s.io", "v1", "certificates/v1", ["CertificateSigningRequest"]),
    ("coordination.k8s.io", "v1", "coordination/v1", ["Lease"]),
    ("discovery.k8s.io", "v1", "discovery/v1", ["EndpointSlice"]),
    ("events.k8s.io", "v1", "events/v1", ["Event"]),
    ("networking.k8s.io", "v1", "networking/v1", ["IngressClass", "Ingress", "IPAddress", "NetworkPolicy", "ServiceCIDR"]),
    ("policy", "v1", "policy/v1", ["PodDisruptionBudget"]),
    ("rbac.authorization.k8s.io", "v1", "rbac/v1", ["ClusterRoleBinding", "ClusterRole", "RoleBinding", "Role"]),
    ("scheduling.k8s.io", "v1", "scheduling/v1", ["PriorityClass"]),
    ("storage.k8s.io", "v1", "storage/v1", ["CSIDriver", "CSINode", "CSIStorageCapacity", "StorageClass",
        "VolumeAttachment", "VolumeAttributesClass"]),
]
ROWS = [(g, v, k, "k8s.io/api/" + d) for g, v, d, ks in KINDS for k in ks]
ROWS.append(("apiextensions.k8s.io", "v1", "CustomResourceDefinition",
             "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"))
# Output: rows of the Rust table in src/lib.rs (EMPTY_OBJECTS).
for group, version, kind, pkg in ROWS:
    body = json.dumps(zero((pkg, kind)), separators=(",", ":"))
    print(f'    ("{group}", "{version}", "{kind}", r#"{body}"#),')
