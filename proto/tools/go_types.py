#!/usr/bin/env python3
"""Writes crates/proto/src/go_types.rs: the Go types of the fields whose Go type is a named type
the protobuf schema cannot show (`v1.RestartPolicy` is a proto `string`, `v1.ResourceList` a
proto map, `types.UID` a string), as Go's reflect prints them in kube-apiserver's decode errors
(`json: cannot unmarshal number into Go struct field PodSpec.spec.restartPolicy of type
v1.RestartPolicy`).

Usage: go_types.py API_DIR APIMACHINERY_DIR > crates/proto/src/go_types.rs

API_DIR holds k8s.io/api's core/v1, apps/v1, coordination/v1, authentication/v1,
authorization/v1 and rbac/v1 types.go; APIMACHINERY_DIR holds k8s.io/apimachinery's
pkg/apis/meta/v1/types.go and pkg/types (both at the release the server follows, v0.32.x).
"""

import os
import re
import sys

BUILTINS = {"string", "bool", "byte", "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16",
            "uint32", "uint64", "float32", "float64", "interface{}"}


class Package:
    def __init__(self, key, name, proto_package, files):
        self.key, self.name, self.proto_package = key, name, proto_package
        self.imports = {}   # alias -> package key
        self.decls = {}     # type name -> underlying expression ("struct" for structs)
        self.structs = {}   # struct name -> [(json name, Go type expression)]
        for path in files:
            self.read(path)

    def read(self, path):
        text = open(path).read()
        for alias, imported in re.findall(r'^\s*(\w+)?\s*"([^"]+)"\s*$', text, re.M):
            self.imports[alias or imported.rsplit("/", 1)[-1]] = imported
        lines = text.split("\n")
        i = 0
        while i < len(lines):
            m = re.match(r"^type (\w+) (.+?)\s*$", lines[i])
            if not m:
                i += 1
                continue
            name, rhs = m.groups()
            if rhs.startswith("struct"):
                self.decls[name] = "struct"
                fields = []
                i += 1
                while i < len(lines) and lines[i] != "}":
                    f = re.match(r"^\t(\w+)\s+([^\s`]+)\s+`([^`]*)`", lines[i])
                    if f:
                        tag = re.search(r'json:"([^",]*)', f.group(3))
                        if tag and tag.group(1) and tag.group(1) != "-":
                            fields.append((tag.group(1), f.group(2)))
                    i += 1
                self.structs[name] = fields
            else:
                self.decls[name] = rhs.split("//")[0].strip()
            i += 1


PACKAGES = {}
PATHS = {
    "k8s.io/api/core/v1": "core",
    "k8s.io/api/apps/v1": "apps",
    "k8s.io/api/coordination/v1": "coordination",
    "k8s.io/api/authentication/v1": "authentication",
    "k8s.io/api/authorization/v1": "authorization",
    "k8s.io/api/rbac/v1": "rbac",
    "k8s.io/apimachinery/pkg/apis/meta/v1": "meta",
    "k8s.io/apimachinery/pkg/types": "types",
}


def split_map(expr):
    """`map[K]V` -> (K, V), brackets balanced."""
    depth, i = 0, 3
    while True:
        if expr[i] == "[":
            depth += 1
        elif expr[i] == "]":
            depth -= 1
            if depth == 0:
                return expr[4:i], expr[i + 1:]
        i += 1


def resolve(expr, pkg):
    """The package and name a named type expression refers to."""
    if "." in expr:
        alias, name = expr.split(".", 1)
        return PACKAGES.get(PATHS.get(pkg.imports.get(alias, ""), "")), name, alias
    return pkg, expr, None


def printed(expr, pkg, structural=False):
    """reflect.Type.String() of `expr`; `structural` replaces named non-struct types by their
    underlying type (what the proto schema shows)."""
    if expr.startswith("*"):
        return "*" + printed(expr[1:], pkg, structural)
    if expr.startswith("[]"):
        return "[]" + printed(expr[2:], pkg, structural)
    if expr.startswith("map["):
        key, value = split_map(expr)
        return "map[" + printed(key, pkg, structural) + "]" + printed(value, pkg, structural)
    if expr in BUILTINS:
        return "uint8" if expr == "byte" else expr
    target, name, alias = resolve(expr, pkg)
    underlying = target.decls.get(name) if target else None
    if structural and underlying not in (None, "struct"):
        return printed(underlying, target, structural)
    if target:
        return target.name + "." + name
    # Packages not read (resource, intstr, runtime): their named types are structs.
    return alias + "." + name


def element(expr, pkg):
    """The type of one element of a slice or map type (pointers stripped, as the decoder
    dereferences them), or None."""
    expr = expr.lstrip("*")
    if expr.startswith("[]"):
        return expr[2:].lstrip("*"), pkg
    if expr.startswith("map["):
        return split_map(expr)[1].lstrip("*"), pkg
    if expr in BUILTINS:
        return None
    target, name, _ = resolve(expr, pkg)
    underlying = target.decls.get(name) if target else None
    if underlying in (None, "struct"):
        return None
    return element(underlying, target)


def main():
    api, machinery = sys.argv[1], sys.argv[2]
    specs = [
        ("k8s.io/api/core/v1", "v1", "k8s.io.api.core.v1", [os.path.join(api, "core/v1/types.go")]),
        ("k8s.io/api/apps/v1", "v1", "k8s.io.api.apps.v1", [os.path.join(api, "apps/v1/types.go")]),
        ("k8s.io/api/coordination/v1", "v1", "k8s.io.api.coordination.v1",
         [os.path.join(api, "coordination/v1/types.go")]),
        ("k8s.io/api/authentication/v1", "v1", "k8s.io.api.authentication.v1",
         [os.path.join(api, "authentication/v1/types.go")]),
        ("k8s.io/api/authorization/v1", "v1", "k8s.io.api.authorization.v1",
         [os.path.join(api, "authorization/v1/types.go")]),
        ("k8s.io/api/rbac/v1", "v1", "k8s.io.api.rbac.v1", [os.path.join(api, "rbac/v1/types.go")]),
        ("k8s.io/apimachinery/pkg/apis/meta/v1", "v1", "k8s.io.apimachinery.pkg.apis.meta.v1",
         [os.path.join(machinery, "pkg/apis/meta/v1/types.go")]),
        ("k8s.io/apimachinery/pkg/types", "types", None,
         [os.path.join(machinery, "pkg/types", f) for f in sorted(os.listdir(os.path.join(machinery, "pkg/types")))
          if f.endswith(".go") and not f.endswith("_test.go")]),
    ]
    for path, name, proto_package, files in specs:
        PACKAGES[PATHS[path]] = Package(path, name, proto_package, files)
    rows = []
    for pkg in PACKAGES.values():
        if not pkg.proto_package:
            continue
        for struct, fields in sorted(pkg.structs.items()):
            for json_name, expr in fields:
                field = expr.lstrip("*")
                elem = element(field, pkg)
                go = (printed(field, pkg), printed(elem[0], elem[1]) if elem else printed(field, pkg))
                structural = (printed(field, pkg, True),
                              printed(elem[0], elem[1], True) if elem else printed(field, pkg, True))
                if go != structural:
                    rows.append((pkg.proto_package + "." + struct, json_name, go[0], go[1]))
    rows.sort()
    out = sys.stdout
    out.write("//! Generated by `proto/tools/go_types.py` from k8s.io/api and k8s.io/apimachinery v0.32:\n")
    out.write("//! the Go types of the fields whose type is a named type the schema cannot show\n")
    out.write("//! (`v1.RestartPolicy` is a proto string), as kube's decode errors print them. Do not edit.\n\n")
    out.write("/// (message full name, JSON field name, Go type of the field, Go type of one element: the\n")
    out.write("/// field's own type when it is no slice or map), sorted.\n")
    out.write("#[rustfmt::skip]\n")
    out.write("pub(crate) static NAMED_GO_TYPES: &[(&str, &str, &str, &str)] = &[\n")
    for row in rows:
        out.write("    (%s),\n" % ", ".join('"%s"' % v for v in row))
    out.write("];\n")


if __name__ == "__main__":
    main()
