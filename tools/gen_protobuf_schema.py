#!/usr/bin/env python3
"""Generate crates/apiserver/src/protobuf_schema.rs from upstream Go API types.

The Kubernetes protobuf wire format is derived from the Go structs in
k8s.io/api and k8s.io/apimachinery: every serialized field carries a
`protobuf:"<wire>,<number>,<opt|rep>,name=..."` struct tag next to its
`json:"..."` tag.  This script parses those types.go files and emits a compact
static table the decoder in protobuf.rs walks at runtime: per message, the
fields in Go declaration order (which is the JSON key order encoding/json
uses), with protobuf number, JSON name, value kind, cardinality and the
pointer / omitempty / omitzero / inline flags.

Usage:
    python3 tools/gen_protobuf_schema.py --api <kubernetes/api checkout> \
        --apimachinery <kubernetes/apimachinery checkout> \
        --aggregator <kubernetes/kube-aggregator checkout> \
        -o crates/apiserver/src/machinery/protobuf/schema.rs

A checkout may be a normal work tree or a bare git directory (read at HEAD,
or at --rev).  The wire type written in the struct tag is not trusted (some
tags are wrong, e.g. DeleteOptions.propagationPolicy says "varint" but is a
string); the kind is derived from the Go type instead.  When a package's
generated.proto is present the field numbers are cross-checked against it.
"""

import argparse
import os
import re
import subprocess
import sys

# API group packages (relative to the kubernetes/api root) whose top-level
# kinds are decodable.  Types they reference in other packages are pulled in
# transitively.
GROUPS = [
    "core/v1",
    "apps/v1",
    "batch/v1",
    "coordination/v1",
    "events/v1",
    "discovery/v1",
    "policy/v1",
    "rbac/v1",
    "autoscaling/v1",
    "autoscaling/v2",
    "networking/v1",
    "scheduling/v1",
    "storage/v1",
    "certificates/v1",
    "authentication/v1",
    "authorization/v1",
    "admissionregistration/v1",
    "resource/v1",
    "node/v1",
    "flowcontrol/v1",
]

# kube-aggregator packages (relative to the kubernetes/kube-aggregator root), read when
# --aggregator is given.
AGGREGATOR_GROUPS = [
    "pkg/apis/apiregistration/v1",
]

# meta.k8s.io/v1 kinds the server answers with (Status for errors, the metadata-only
# renderings, WatchEvent for the protobuf watch stream); looked up by kind under
# "meta.k8s.io/v1" (Status and WatchEvent also under any other apiVersion).
META_KINDS = ["Status", "WatchEvent", "PartialObjectMetadata", "PartialObjectMetadataList"]

META = "k8s.io/apimachinery/pkg/apis/meta/v1"
META_PROTO = META.replace("/", ".")

# Types with hand-written protobuf/JSON marshalling; the decoder implements
# these natively.
SPECIAL = {
    "k8s.io/apimachinery/pkg/api/resource.Quantity": "Quantity",
    META + ".Time": "Time",
    META + ".MicroTime": "MicroTime",
    META + ".Duration": "Duration",
    META + ".FieldsV1": "FieldsV1",
    "k8s.io/apimachinery/pkg/util/intstr.IntOrString": "IntOrString",
    "k8s.io/apimachinery/pkg/runtime.RawExtension": "RawExtension",
}

BASIC = {
    "string": "Str",
    "bool": "Bool",
    "int32": "I32",
    "int64": "I64",
    "int": "I64",
    "uint32": "U32",
    "uint64": "U64",
    "float64": "F64",
    "float32": "F32",
}


class Source:
    """Reads files from a work tree or a bare git directory."""

    def __init__(self, root, rev):
        self.root = root
        self.rev = rev
        self.git = not os.path.isdir(os.path.join(root, "core")) and not os.path.isdir(
            os.path.join(root, "pkg")
        )

    def listdir(self, d):
        if not self.git:
            p = os.path.join(self.root, d)
            return sorted(os.listdir(p)) if os.path.isdir(p) else []
        out = subprocess.run(
            ["git", "--git-dir", self.root, "ls-tree", "--name-only", f"{self.rev}:{d}"],
            capture_output=True,
            text=True,
        )
        return sorted(out.stdout.split()) if out.returncode == 0 else []

    def read(self, path):
        if not self.git:
            with open(os.path.join(self.root, path), encoding="utf-8") as fh:
                return fh.read()
        return subprocess.run(
            ["git", "--git-dir", self.root, "show", f"{self.rev}:{path}"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout


class Package:
    def __init__(self, path):
        self.path = path  # Go import path
        self.structs = {}  # name -> list of raw field dicts
        self.named = {}  # name -> type expression
        self.imports = {}  # file -> {alias: path}
        self.struct_file = {}
        self.group = None
        self.proto = {}  # message -> {number: (name, type, repeated)} from generated.proto


def strip_comments(text):
    """Remove Go // and /* */ comments, keeping strings, raw strings and newlines."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif c in "\"`'":
            j = i + 1
            while j < n and text[j] != c:
                if c != "`" and text[j] == "\\":
                    j += 1
                if c != "`" and text[j] == "\n":
                    break
                j += 1
            out.append(text[i : j + 1])
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def parse_tags(tags):
    out = {}
    for m in re.finditer(r'(\w+):"([^"]*)"', tags):
        out[m.group(1)] = m.group(2)
    return out


def parse_go(pkg, fname, text):
    imports = {}
    for m in re.finditer(r"^import \(\n(.*?)^\)", text, re.M | re.S):
        for line in m.group(1).splitlines():
            im = re.match(r'\s*(\w+)?\s*"([^"]+)"', line)
            if im:
                alias = im.group(1) or im.group(2).rsplit("/", 1)[-1]
                imports[alias] = im.group(2)
    for m in re.finditer(r'^import (\w+)?\s*"([^"]+)"', text, re.M):
        imports[m.group(1) or m.group(2).rsplit("/", 1)[-1]] = m.group(2)
    pkg.imports[fname] = imports

    lines = text.split("\n")
    i = 0
    in_group = False
    while i < len(lines):
        line = lines[i]
        if in_group:
            if line.startswith(")"):
                in_group = False
            else:
                gm = re.match(r"^\t(\w+)\s+(?:=\s*)?([^/{]+?)\s*(//.*)?$", line)
                if gm and not gm.group(2).startswith("struct") and not gm.group(2).startswith("interface"):
                    pkg.named[gm.group(1)] = (gm.group(2), fname)
            i += 1
            continue
        if line.startswith("type ("):
            in_group = True
            i += 1
            continue
        sm = re.match(r"^type (\w+) struct \{\s*$", line)
        if sm:
            name = sm.group(1)
            fields = []
            i += 1
            while i < len(lines) and not lines[i].startswith("}"):
                s = lines[i].strip()
                i += 1
                if not s:
                    continue
                tags = {}
                if "`" in s:
                    pre, tagtext = s.split("`", 1)
                    tags = parse_tags(tagtext.rsplit("`", 1)[0])
                else:
                    pre = s
                toks = pre.split(None, 1)
                if not toks:
                    continue
                if len(toks) == 1:
                    fields.append({"name": None, "type": toks[0], "tags": tags})
                else:
                    fields.append({"name": toks[0], "type": toks[1].strip(), "tags": tags})
            pkg.structs[name] = fields
            pkg.struct_file[name] = fname
            i += 1
            continue
        tm = re.match(r"^type (\w+) (?:=\s*)?([^{/]+?)\s*(//.*)?$", line)
        if tm and not tm.group(2).startswith("interface"):
            pkg.named[tm.group(1)] = (tm.group(2), fname)
        gm = re.search(r'GroupName\s*=\s*"([^"]*)"', line)
        if gm and pkg.group is None:
            pkg.group = gm.group(1)
        i += 1


def parse_proto(pkg, text):
    """Collect message -> {number: name} from generated.proto for cross-checks."""
    cur = None
    depth = 0
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("//"):
            continue
        m = re.match(r"^message (\w+) \{", s)
        if m and depth == 0:
            cur = m.group(1)
            pkg.proto[cur] = {}
            depth = 1
            continue
        if cur is None:
            continue
        depth += s.count("{") - s.count("}")
        if depth <= 0:
            cur = None
            depth = 0
            continue
        fm = re.match(r"^(?:optional|repeated|required)?\s*([\w.<>, ]+?)\s+(\w+)\s*=\s*(\d+)", s)
        if fm and depth == 1:
            rep = s.startswith("repeated")
            pkg.proto[cur][int(fm.group(3))] = (fm.group(2), fm.group(1).replace(" ", ""), rep)


class Generator:
    def __init__(self, api, machinery, aggregator=None):
        self.api = api
        self.machinery = machinery
        self.aggregator = aggregator
        self.pkgs = {}
        self.messages = {}  # proto name -> {"fields": [...], "unwrap": bool}
        self.order = []
        self.warnings = []
        self.notes = []

    def source_for(self, path):
        if path.startswith("k8s.io/api/"):
            return self.api, path[len("k8s.io/api/"):]
        if path.startswith("k8s.io/apimachinery/"):
            return self.machinery, path[len("k8s.io/apimachinery/"):]
        if path.startswith("k8s.io/kube-aggregator/") and self.aggregator is not None:
            return self.aggregator, path[len("k8s.io/kube-aggregator/"):]
        raise SystemExit(f"unsupported package {path}")

    def pkg(self, path):
        if path in self.pkgs:
            return self.pkgs[path]
        src, d = self.source_for(path)
        pkg = Package(path)
        for f in src.listdir(d):
            if not f.endswith(".go") or f.endswith("_test.go"):
                continue
            if f.startswith("zz_generated") or f in ("generated.pb.go", "types_swagger_doc_generated.go"):
                continue
            text = src.read(f"{d}/{f}")
            if re.search(r"^//go:build\s+fieldsv1string", text, re.M):
                continue
            parse_go(pkg, f, strip_comments(text))
        if "generated.proto" in src.listdir(d):
            parse_proto(pkg, src.read(f"{d}/generated.proto"))
        self.pkgs[path] = pkg
        return pkg

    @staticmethod
    def proto_name(pkg_path, name):
        # protobuf package names have no hyphens (k8s.io/kube-aggregator -> kube_aggregator)
        return pkg_path.replace("/", ".").replace("-", "_") + "." + name

    def resolve(self, pkg, fname, texpr):
        """Resolve a Go type expression to (qualified package, name) or a basic type."""
        texpr = texpr.strip()
        if texpr in BASIC or texpr == "[]byte":
            return ("basic", texpr)
        if "." in texpr:
            alias, name = texpr.split(".", 1)
            path = pkg.imports[fname].get(alias)
            if path is None:
                raise SystemExit(f"{pkg.path}/{fname}: unknown import alias {alias}")
            return (path, name)
        return (pkg.path, texpr)

    def kind(self, pkg, fname, texpr, ctx):
        """Return (ty, card, pointer) for a Go type expression.

        ty is a Rust Ty expression string; card is ONE/REP/MAP.
        """
        texpr = texpr.strip()
        pointer = False
        if texpr.startswith("*"):
            pointer = True
            texpr = texpr[1:]
        if texpr == "[]byte":
            return ("Bytes", "One", pointer)
        if texpr.startswith("[]"):
            ty, card, p = self.kind(pkg, fname, texpr[2:], ctx)
            if card != "One" or p:
                raise SystemExit(f"{ctx}: unsupported element type {texpr}")
            return (ty, "Rep", pointer)
        if texpr.startswith("map["):
            m = re.match(r"^map\[([^\]]+)\](.+)$", texpr)
            kty, kcard, _ = self.kind(pkg, fname, m.group(1), ctx)
            if kty != "Str" or kcard != "One":
                raise SystemExit(f"{ctx}: unsupported map key {m.group(1)}")
            vty, vcard, vp = self.kind(pkg, fname, m.group(2), ctx)
            if vp:
                raise SystemExit(f"{ctx}: unsupported map value {m.group(2)}")
            if vcard == "Rep":
                # A named slice as map value is a wrapper message {repeated items = 1}.
                vty = self.wrapper(pkg, fname, m.group(2), vty, ctx)
            elif vcard == "Map":
                raise SystemExit(f"{ctx}: nested map {texpr}")
            return (vty, "Map", pointer)
        where, name = self.resolve(pkg, fname, texpr)
        if where == "basic":
            return (BASIC[name], "One", pointer)
        q = f"{where}.{name}"
        if q in SPECIAL:
            return (SPECIAL[q], "One", pointer)
        tpkg = self.pkg(where)
        if name in tpkg.structs:
            return (f"Msg({self.message(tpkg, name)})", "One", pointer)
        if name in tpkg.named:
            under, ufile = tpkg.named[name]
            ty, card, p = self.kind(tpkg, ufile, under, ctx)
            return (ty, card, pointer or p)
        raise SystemExit(f"{ctx}: cannot resolve type {texpr} ({q})")

    def wrapper(self, pkg, fname, texpr, elem_ty, ctx):
        where, name = self.resolve(pkg, fname, texpr)
        pname = self.proto_name(where, name)
        if pname not in self.messages:
            self.messages[pname] = {
                "fields": [{"num": 1, "json": "items", "ty": elem_ty, "card": "Rep", "flags": []}],
                "unwrap": True,
            }
            self.order.append(pname)
        return f"Msg({pname!r})"

    def message(self, pkg, name):
        pname = self.proto_name(pkg.path, name)
        if pname not in self.messages:
            self.messages[pname] = None  # placeholder against recursion
            self.order.append(pname)
            self.messages[pname] = self.build(pkg, name, pname)
        return repr(pname)

    def build(self, pkg, name, pname):
        fname = pkg.struct_file[name]
        fields = []
        seen = {}
        for f in pkg.structs[name]:
            tags = f["tags"]
            ctx = f"{pname}.{f['name'] or f['type']}"
            js = tags.get("json")
            pb = tags.get("protobuf")
            jparts = js.split(",") if js is not None else [None]
            jname = jparts[0]
            opts = set(jparts[1:])
            embedded = f["name"] is None
            inline = "inline" in opts or (embedded and not jname)
            if jname == "-":
                continue
            if pb is None or pb == "-":
                if not (embedded and f["type"].endswith("TypeMeta")):
                    self.warnings.append(f"{ctx}: no protobuf tag, skipped")
                continue
            num = int(pb.split(",")[1])
            ty, card, pointer = self.kind(pkg, fname, f["type"], ctx)
            flags = []
            if pointer:
                flags.append("PTR")
            if "omitempty" in opts:
                flags.append("OMITEMPTY")
            if "omitzero" in opts:
                flags.append("OMITZERO")
            if inline:
                if not ty.startswith("Msg(") or card != "One":
                    raise SystemExit(f"{ctx}: inline non-struct")
                flags.append("INLINE")
                jname = ""
            elif not jname:
                jname = f["name"]
            if num in seen:
                raise SystemExit(f"{ctx}: duplicate protobuf number {num}")
            seen[num] = jname
            fields.append({"num": num, "json": jname, "ty": ty, "card": card, "flags": flags})
            wire = pb.split(",")[0]
            expect = self.wire_of(ty, card)
            if wire != expect and not (card == "Rep" and wire in ("bytes", expect)):
                self.notes.append(f"{ctx}: tag wire type {wire}, Go type implies {expect}")
        proto = pkg.proto.get(name)
        if proto is not None:
            got = {f["num"] for f in fields}
            if set(proto) != got:
                self.warnings.append(
                    f"{pname}: field numbers differ from generated.proto: "
                    f"types.go {sorted(got)} vs proto {sorted(proto)}"
                )
            for fl in fields:
                if fl["num"] in proto:
                    self.check_proto(pname, fl, proto[fl["num"]])
        return {"fields": fields, "unwrap": False}

    def check_proto(self, pname, fl, proto):
        """Cross-check one field's kind against its generated.proto declaration."""
        _, ptype, rep = proto
        ptype = ptype.replace(",.", ",").lstrip(".")
        scalar = {"Str": "string", "Bool": "bool", "I32": "int32", "I64": "int64",
                  "U32": "uint32", "U64": "uint64", "F64": "double", "F32": "float",
                  "Bytes": "bytes", "Quantity": "k8s.io.apimachinery.pkg.api.resource.Quantity",
                  "Time": META_PROTO + ".Time", "MicroTime": META_PROTO + ".MicroTime",
                  "Duration": META_PROTO + ".Duration", "FieldsV1": META_PROTO + ".FieldsV1",
                  "IntOrString": "k8s.io.apimachinery.pkg.util.intstr.IntOrString",
                  "RawExtension": "k8s.io.apimachinery.pkg.runtime.RawExtension"}
        m = re.match(r"^Msg\('(.*)'\)$", fl["ty"])
        want = m.group(1) if m else scalar[fl["ty"]]
        if fl["card"] == "Map":
            want = f"map<string,{want}>"
        short = re.sub(r"[\w.]*\.(\w+)", r"\1", want)
        ok = ptype in (want, short)
        if fl["card"] == "Rep" and not rep:
            ok = False
        if not ok:
            self.warnings.append(f"{pname}.{fl['json']}: generated.proto says {ptype}, types.go implies {want}")

    @staticmethod
    def wire_of(ty, card):
        if card == "Map":
            return "bytes"
        if ty in ("Bool", "I32", "I64", "U32", "U64"):
            return "varint"
        if ty == "F64":
            return "fixed64"
        if ty == "F32":
            return "fixed32"
        return "bytes"

    def run(self):
        kinds = []
        paths = ["k8s.io/api/" + g for g in GROUPS]
        if self.aggregator is not None:
            paths += ["k8s.io/kube-aggregator/" + g for g in AGGREGATOR_GROUPS]
        for path in paths:
            g = path.rsplit("/", 2)[-2] + "/" + path.rsplit("/", 1)[-1]
            pkg = self.pkg(path)
            if not pkg.structs:
                raise SystemExit(f"package {path} not found in the api checkout")
            version = g.split("/")[1]
            api_version = f"{pkg.group}/{version}" if pkg.group else version
            for name, fields in pkg.structs.items():
                if fields and fields[0]["name"] is None and fields[0]["type"].endswith("TypeMeta"):
                    kinds.append((api_version, name, self.message(pkg, name)))
        meta = self.pkg(META)
        delete = self.message(meta, "DeleteOptions")
        for name in META_KINDS:
            kinds.append(("meta.k8s.io/v1", name, self.message(meta, name)))
        kinds.sort()
        return kinds, delete


def rust_ty(ty, index):
    m = re.match(r"^Msg\('(.*)'\)$", ty)
    if m:
        return f"Msg({index[m.group(1)]})"
    return ty


def emit(gen, kinds, delete, out, source_desc):
    index = {name: i for i, name in enumerate(gen.order)}
    w = out.write
    w("// @generated by tools/gen_protobuf_schema.py -- do not edit by hand.\n")
    w(f"// Source: {source_desc}\n")
    w("//! Field tables for the Kubernetes protobuf decoder (see `protobuf.rs`).\n")
    w("\n")
    w("use super::{Card::*, Field, Message, Ty::*, FLAG_INLINE as INLINE, FLAG_OMITEMPTY as OMITEMPTY,\n")
    w("    FLAG_OMITZERO as OMITZERO, FLAG_PTR as PTR};\n\n")
    w("const fn f(num: u32, json: &'static str, ty: super::Ty, card: super::Card, flags: u8) -> Field {\n")
    w("    Field { num, json, ty, card, flags }\n}\n\n")
    w("const fn m(name: &'static str, unwrap: bool, fields: &'static [Field]) -> Message {\n")
    w("    Message { name, unwrap, fields }\n}\n\n")
    w(f"/// Index of `meta.v1.DeleteOptions` in [`MESSAGES`].\npub(super) const DELETE_OPTIONS: u16 = {index[delete.strip(chr(39))]};\n\n")
    w("/// Top-level kinds: (apiVersion, kind, message index), sorted.\n")
    w("pub(super) static KINDS: &[(&str, &str, u16)] = &[\n")
    for av, k, msg in kinds:
        w(f"    ({av!r}, {k!r}, {index[msg.strip(chr(39))]}),\n".replace("'", '"'))
    w("];\n\n")
    w("/// All messages; `Msg(n)` refers to `MESSAGES[n]`.\n")
    w("pub(super) static MESSAGES: &[Message] = &[\n")
    for name in gen.order:
        msg = gen.messages[name]
        w(f'    m("{name}", {"true" if msg["unwrap"] else "false"}, &[\n')
        for fl in msg["fields"]:
            flags = " | ".join(fl["flags"]) or "0"
            w(f'        f({fl["num"]}, "{fl["json"]}", {rust_ty(fl["ty"], index)}, {fl["card"]}, {flags}),\n')
        w("    ]),\n")
    w("];\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--api", required=True, help="kubernetes/api checkout (work tree or bare git dir)")
    ap.add_argument("--apimachinery", required=True, help="kubernetes/apimachinery checkout")
    ap.add_argument("--aggregator", help="kubernetes/kube-aggregator checkout (adds apiregistration.k8s.io/v1)")
    ap.add_argument("--rev", default="HEAD", help="revision to read from bare git dirs")
    ap.add_argument("-o", "--output", help="output file (default stdout)")
    ap.add_argument("-v", "--verbose", action="store_true", help="also list struct tags whose wire type is wrong")
    args = ap.parse_args()
    api = Source(args.api, args.rev)
    machinery = Source(args.apimachinery, args.rev)
    aggregator = Source(args.aggregator, args.rev) if args.aggregator else None
    gen = Generator(api, machinery, aggregator)
    kinds, delete = gen.run()
    for wmsg in gen.warnings:
        print("warning:", wmsg, file=sys.stderr)
    if args.verbose:
        for note in gen.notes:
            print("note:", note, file=sys.stderr)

    def rev_of(src):
        if not src.git:
            return os.path.basename(os.path.abspath(src.root))
        r = subprocess.run(
            ["git", "--git-dir", src.root, "rev-parse", args.rev], capture_output=True, text=True
        )
        return r.stdout.strip()[:12]

    desc = f"kubernetes/api@{rev_of(api)}, kubernetes/apimachinery@{rev_of(machinery)}"
    if aggregator is not None:
        desc += f", kubernetes/kube-aggregator@{rev_of(aggregator)}"
    if args.output:
        with open(args.output, "w", encoding="utf-8") as out:
            emit(gen, kinds, delete, out, desc)
        try:
            subprocess.run(["rustfmt", "--edition", "2021", args.output], check=True)
        except (OSError, subprocess.CalledProcessError) as err:
            print(f"warning: rustfmt failed ({err}); run cargo fmt", file=sys.stderr)
    else:
        emit(gen, kinds, delete, sys.stdout, desc)
    print(f"{len(gen.order)} messages, {len(kinds)} kinds", file=sys.stderr)


if __name__ == "__main__":
    main()
