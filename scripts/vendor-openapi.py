#!/usr/bin/env python3
"""Vendors kube-apiserver 1.32's schemas of the built-in kinds for the OpenAPI v3 documents.

Source: the `kubernetes-validate` wheel on PyPI (Apache-2.0), which carries the definitions
of kube's published OpenAPI (`kubernetes-json-schema/v1.32.0-local/_definitions.json`, the
definitions of k8s.io/kubernetes api/openapi-spec as JSON Schema). This turns them back into
what kube-apiserver serves under `components.schemas` in /openapi/v3/<group-version>:
`$ref`s to `#/components/schemas/...`, a field that refers to a type wrapped as
`{"allOf": [{"$ref": ...}]}` beside its description (as kube's v3 documents do), plain `type`
strings (the JSON Schema's added `"null"` dropped) and no `enum` on `apiVersion`/`kind`.

Run it when moving to another Kubernetes minor:
    python3 scripts/vendor-openapi.py  # writes crates/apiserver/openapi/kube-1.32-schemas.json.gz
"""

import gzip
import json
import pathlib
import subprocess
import sys
import tempfile
import zipfile

VERSION = "1.37.0"
MEMBER = "kubernetes_validate/kubernetes-json-schema/v1.32.0-local/_definitions.json"
OUT = pathlib.Path(__file__).resolve().parent.parent / "crates/apiserver/openapi/kube-1.32-schemas.json.gz"


def convert(node, in_kind_properties=False):
    if isinstance(node, list):
        return [convert(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if key == "$ref":
            out[key] = value.replace("#/$defs/", "#/components/schemas/")
        elif key == "type" and isinstance(value, list):
            types = [t for t in value if t != "null"]
            out[key] = types[0] if len(types) == 1 else types
        elif key == "properties":
            out[key] = {
                name: convert({k: v for k, v in prop.items() if not (name in ("apiVersion", "kind") and k == "enum")})
                for name, prop in value.items()
            }
        else:
            out[key] = convert(value)
    # A field of a named type: kube's v3 documents say `allOf: [{$ref}]` next to the description.
    if "$ref" in out and len(out) > 1:
        ref = out.pop("$ref")
        out["allOf"] = [{"$ref": ref}]
    return out


def main():
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", f"kubernetes-validate=={VERSION}", "-d", tmp],
            check=True,
        )
        wheel = next(pathlib.Path(tmp).glob("*.whl"))
        with zipfile.ZipFile(wheel) as z:
            definitions = json.loads(z.read(MEMBER))["$defs"]
    schemas = {name: convert(schema) for name, schema in sorted(definitions.items())}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_bytes(gzip.compress(json.dumps(schemas, separators=(",", ":")).encode(), 9, mtime=0))
    print(f"wrote {len(schemas)} schemas to {OUT}")


if __name__ == "__main__":
    main()
