//! OpenAPI v3 documents: `/openapi/v3` (the index of group-versions) and one document per
//! group-version, generated from the registry; the group-versions CRDs add have the document
//! kube's CRD OpenAPI controller makes (`listwatch_apiextensions::openapi`), made once per
//! change of the served CRDs.
//!
//! What clients read from them, and therefore what is here:
//! * kubectl's field-validation check (`QueryParamVerifierV3`): a PATCH operation tagged with
//!   `x-kubernetes-group-version-kind` for the kind, carrying the `fieldValidation` query
//!   parameter; then kubectl validates on the server (`fieldValidation=Strict`). The same for
//!   `dryRun` (`kubectl --dry-run=server`).
//! * kubectl apply: PATCH request bodies list the patch types, strategic merge included.
//! * `kubectl explain` and kubectl's client-side apply: the component schemas of the built-in
//!   kinds are kube 1.32's own, tagged with their group-version-kind, with every schema they
//!   refer to ([`super::builtin_schemas`]); a kind without a vendored schema gets a stub that
//!   keeps unknown fields (and no tag, so kubectl falls back to its compiled-in types).

use std::collections::BTreeMap;
use std::sync::LazyLock;

use bytes::Bytes;
use listwatch_apiextensions::CustomResourceDefinition;
use listwatch_meta::registry::Subresource;
use listwatch_meta::{ApiError, Registry, Resource};
use serde_json::{Value, json};

use crate::customresources::Snapshot;
use crate::request::Query;
use crate::response::{self, HttpResponse};
use crate::state::ApiState;

/// Every group-version's document, by its path (`api/v1`, `apis/apps/v1`), with its hash.
static DOCUMENTS: LazyLock<BTreeMap<String, (Bytes, String)>> = LazyLock::new(|| {
    let mut docs = BTreeMap::new();
    for (group, versions) in Registry.groups() {
        for version in versions {
            let path = if group.is_empty() { format!("api/{version}") } else { format!("apis/{group}/{version}") };
            let doc = Bytes::from(group_version_document(group, version).to_string());
            let hash = format!("{:016X}", fnv1a(&doc));
            docs.insert(path, (doc, hash));
        }
    }
    docs
});

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf29ce484222325u64, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x100000001b3))
}

/// The documents of the CRD group-versions served now, by path.
fn custom_documents(snapshot: &Snapshot) -> &BTreeMap<String, (Bytes, String)> {
    snapshot.openapi.get_or_init(|| {
        let established: Vec<&CustomResourceDefinition> = snapshot.established().map(|c| c.crd.as_ref()).collect();
        let mut group_versions: Vec<(&str, &str)> = established
            .iter()
            .flat_map(|c| c.spec.versions.iter().filter(|v| v.served).map(|v| (c.spec.group.as_str(), v.name.as_str())))
            .collect();
        group_versions.sort_unstable();
        group_versions.dedup();
        group_versions
            .into_iter()
            .filter(|(group, version)| !DOCUMENTS.contains_key(&format!("apis/{group}/{version}")))
            .map(|(group, version)| {
                let doc = listwatch_apiextensions::openapi::group_version_document(group, version, &established);
                let doc = Bytes::from(doc.to_string());
                let hash = format!("{:016X}", fnv1a(&doc));
                (format!("apis/{group}/{version}"), (doc, hash))
            })
            .collect()
    })
}

/// The media type kube-openapi answers OpenAPI v2 in protobuf with (gnostic's
/// `openapi_v2.Document`; kubectl asks for `...spec.v2@v1.0+protobuf`, which Go's media type
/// parser would refuse in a Content-Type).
const V2_PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

/// `/openapi/v2`: a document without definitions. kubectl reads it only to validate, on the
/// client, a kind the v3 documents do not have (a custom resource whose CRD is not there
/// yet): with no schema for it, kubectl leaves the kind to the server, whose answer is then
/// kube's (`no matches for kind ...`). Protobuf when asked for, JSON otherwise.
fn openapi_v2(accept: Option<&str>) -> HttpResponse {
    let (title, version) = ("Kubernetes", format!("v1.{}.0", crate::discovery::KUBERNETES_MINOR));
    if accept.is_some_and(|a| a.contains("com.github.proto-openapi.spec.v2")) {
        let field = |number: u8, bytes: &[u8]| {
            let mut out = vec![(number << 3) | 2, u8::try_from(bytes.len()).expect("short fields")];
            out.extend_from_slice(bytes);
            out
        };
        let info = [field(1, title.as_bytes()), field(2, version.as_bytes())].concat();
        // swagger (1), info (2), paths (8) and definitions (9), both empty.
        let document = [field(1, b"2.0"), field(2, &info), field(8, b""), field(9, b"")].concat();
        return response::with_body(200, V2_PROTOBUF, crate::transport::body::Body::full(Bytes::from(document)));
    }
    let document =
        json!({"swagger": "2.0", "info": {"title": title, "version": version}, "paths": {}, "definitions": {}});
    response::json(200, Bytes::from(document.to_string()))
}

pub fn handle(state: &ApiState, path: &str, _query: &Query, accept: Option<&str>) -> Result<HttpResponse, ApiError> {
    if path == "/openapi/v2" {
        return Ok(openapi_v2(accept));
    }
    let Some(rest) = path.strip_prefix("/openapi/v3") else {
        return Err(ApiError::not_found_path());
    };
    let rest = rest.trim_matches('/');
    let snapshot = state.custom.snapshot();
    let custom = custom_documents(&snapshot);
    if rest.is_empty() {
        let paths: serde_json::Map<String, Value> = DOCUMENTS
            .iter()
            .chain(custom.iter())
            .map(|(p, (_, hash))| (p.clone(), json!({"serverRelativeURL": format!("/openapi/v3/{p}?hash={hash}")})))
            .collect();
        return Ok(response::json(200, Bytes::from(json!({"paths": paths}).to_string())));
    }
    match DOCUMENTS.get(rest).or_else(|| custom.get(rest)) {
        Some((doc, _)) => Ok(response::json(200, doc.clone())),
        None => Err(ApiError::not_found_path()),
    }
}

fn query_param(name: &str, description: &str) -> Value {
    json!({"name": name, "in": "query", "description": description, "schema": {"type": "string", "uniqueItems": true}})
}

fn write_params(patch: bool) -> Vec<Value> {
    let mut params = vec![
        query_param(
            "dryRun",
            "When present, indicates that modifications should not be persisted. Valid values are: - All: all dry run stages will be processed",
        ),
        query_param(
            "fieldManager",
            "fieldManager is a name associated with the actor or entity that is making these changes.",
        ),
        query_param(
            "fieldValidation",
            "fieldValidation instructs the server on how to handle objects in the request containing unknown or duplicate fields. Valid values are: - Ignore - Warn - Strict",
        ),
    ];
    if patch {
        params.push(json!({"name": "force", "in": "query", "description": "Force is going to \"force\" Apply requests.", "schema": {"type": "boolean", "uniqueItems": true}}));
    }
    params
}

fn list_params() -> Vec<Value> {
    [
        ("allowWatchBookmarks", "boolean"),
        ("continue", "string"),
        ("fieldSelector", "string"),
        ("labelSelector", "string"),
        ("limit", "integer"),
        ("resourceVersion", "string"),
        ("resourceVersionMatch", "string"),
        ("sendInitialEvents", "boolean"),
        ("timeoutSeconds", "integer"),
        ("watch", "boolean"),
    ]
    .into_iter()
    .map(|(name, ty)| json!({"name": name, "in": "query", "schema": {"type": ty, "uniqueItems": true}}))
    .collect()
}

fn schema_name(r: &Resource, kind: &str) -> String {
    let group = match r.group {
        "" => "core".to_string(),
        g => g.split('.').next().unwrap_or(g).to_string(),
    };
    format!("io.k8s.api.{group}.{}.{kind}", r.version)
}

fn content(schema: &str, types: &[&str]) -> Value {
    let map: serde_json::Map<String, Value> = types
        .iter()
        .map(|t| (t.to_string(), json!({"schema": {"$ref": format!("#/components/schemas/{schema}")}})))
        .collect();
    Value::Object(map)
}

fn responses(schema: &str, codes: &[&str]) -> Value {
    let map: serde_json::Map<String, Value> = codes
        .iter()
        .map(|c| (c.to_string(), json!({"description": "OK", "content": content(schema, &["application/json", "application/yaml", "application/vnd.kubernetes.protobuf"])})))
        .collect();
    Value::Object(map)
}

// One argument per part of an OpenAPI operation: a struct would only rename them.
#[allow(clippy::too_many_arguments)]
fn operation(
    r: &Resource,
    action: &str,
    verb_id: &str,
    kind: (&str, &str, &str),
    params: Vec<Value>,
    body: Option<(&str, &[&str])>,
    response_schema: &str,
    codes: &[&str],
) -> Value {
    let (group, version, kind_name) = kind;
    let mut op = json!({
        "tags": [format!("{}_{}", if r.group.is_empty() { "core" } else { r.group }, r.version)],
        "description": format!("{action} {}", r.kind),
        "operationId": format!("{verb_id}{}", r.kind),
        "parameters": params,
        "responses": responses(response_schema, codes),
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": {"group": group, "version": version, "kind": kind_name},
    });
    if let Some((schema, types)) = body {
        op["requestBody"] = json!({"content": content(schema, types), "required": true});
    }
    op
}

const PATCH_TYPES: &[&str] = &[
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
];
const OBJECT_TYPES: &[&str] = &["*/*"];

fn group_version_document(group: &str, version: &str) -> Value {
    let mut paths = serde_json::Map::new();
    let mut schemas = serde_json::Map::new();
    // Kinds whose real schemas are vendored (their lists too): added with what they refer to.
    let mut real: Vec<&str> = Vec::new();
    let base = if group.is_empty() { format!("/api/{version}") } else { format!("/apis/{group}/{version}") };
    for r in Registry.resources().iter().filter(|r| r.group == group && r.version == version) {
        let gvk = (r.group, r.version, r.kind);
        let schema = schema_name(r, r.kind);
        let list_schema = schema_name(r, &r.list_kind());
        let (collection, item) = if r.namespaced {
            (
                format!("{base}/namespaces/{{namespace}}/{}", r.plural),
                format!("{base}/namespaces/{{namespace}}/{}/{{name}}", r.plural),
            )
        } else {
            (format!("{base}/{}", r.plural), format!("{base}/{}/{{name}}", r.plural))
        };
        let mut coll = json!({
            "get": operation(r, "list", "list", gvk, list_params(), None, &list_schema, &["200"]),
            "post": operation(r, "post", "create", gvk, write_params(false), Some((&schema, OBJECT_TYPES)), &schema, &["200", "201", "202"]),
        });
        if r.has_verb("deletecollection") {
            coll["delete"] = operation(
                r,
                "deletecollection",
                "deleteCollection",
                gvk,
                list_params(),
                None,
                "io.k8s.apimachinery.pkg.apis.meta.v1.Status",
                &["200"],
            );
        }
        paths.insert(collection, coll);
        paths.insert(
            item.clone(),
            json!({
                "get": operation(r, "get", "read", gvk, vec![], None, &schema, &["200"]),
                "put": operation(r, "put", "replace", gvk, write_params(false), Some((&schema, OBJECT_TYPES)), &schema, &["200", "201"]),
                "patch": operation(r, "patch", "patch", gvk, write_params(true), Some(("io.k8s.apimachinery.pkg.apis.meta.v1.Patch", PATCH_TYPES)), &schema, &["200", "201"]),
                "delete": operation(r, "delete", "delete", gvk, write_params(false), None, "io.k8s.apimachinery.pkg.apis.meta.v1.Status", &["200", "202"]),
            }),
        );
        if r.namespaced {
            paths.insert(
                format!("{base}/{}", r.plural),
                json!({"get": operation(r, "list", "listForAllNamespaces", gvk, list_params(), None, &list_schema, &["200"])}),
            );
        }
        for sub in r.subresources {
            let (sub_gvk, sub_schema) = match sub {
                Subresource::Status => (gvk, schema.clone()),
                Subresource::Scale => (("autoscaling", "v1", "Scale"), "io.k8s.api.autoscaling.v1.Scale".to_string()),
                Subresource::Binding => {
                    // POST only, a Binding in and a Status out.
                    let binding = "io.k8s.api.core.v1.Binding";
                    real.push(binding);
                    paths.insert(
                        format!("{item}/binding"),
                        json!({"post": operation(r, "post", "createBinding", ("", "v1", "Binding"), write_params(false), Some((binding, OBJECT_TYPES)), binding, &["200", "201", "202"])}),
                    );
                    continue;
                }
                Subresource::Token => {
                    let request = "io.k8s.api.authentication.v1.TokenRequest";
                    paths.insert(
                        format!("{item}/token"),
                        json!({"post": operation(r, "post", "createToken", ("authentication.k8s.io", "v1", "TokenRequest"), write_params(false), Some((request, OBJECT_TYPES)), request, &["200", "201", "202"])}),
                    );
                    continue;
                }
            };
            let name = sub.name();
            paths.insert(
                format!("{item}/{name}"),
                json!({
                    "get": operation(r, "get", &format!("read{name}"), sub_gvk, vec![], None, &sub_schema, &["200"]),
                    "put": operation(r, "put", &format!("replace{name}"), sub_gvk, write_params(false), Some((&sub_schema, OBJECT_TYPES)), &sub_schema, &["200", "201"]),
                    "patch": operation(r, "patch", &format!("patch{name}"), sub_gvk, write_params(true), Some(("io.k8s.apimachinery.pkg.apis.meta.v1.Patch", PATCH_TYPES)), &sub_schema, &["200", "201"]),
                }),
            );
        }
        if let Some(vendored) = super::builtin_schemas::name_of(r.group, r.version, r.kind) {
            let list = super::builtin_schemas::name_of(r.group, r.version, &r.list_kind());
            real.extend(std::iter::once(vendored).chain(list));
            // The operations above refer to these names: stubs only where they differ.
            if vendored == schema && list == Some(list_schema.as_str()) {
                continue;
            }
        }
        schemas.insert(
            schema.clone(),
            json!({
                "description": format!("{} ({}); fields beyond metadata are kept as sent.", r.kind, r.group_version()),
                "type": "object",
                "properties": {
                    "apiVersion": {"type": "string"},
                    "kind": {"type": "string"},
                    "metadata": {"allOf": [{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}], "default": {}},
                },
                "x-kubernetes-preserve-unknown-fields": true,
            }),
        );
        schemas.insert(
            list_schema,
            json!({
                "type": "object",
                "required": ["items"],
                "properties": {
                    "apiVersion": {"type": "string"},
                    "kind": {"type": "string"},
                    "items": {"type": "array", "items": {"allOf": [{"$ref": format!("#/components/schemas/{schema}")}], "default": {}}},
                    "metadata": {"allOf": [{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta"}], "default": {}},
                },
            }),
        );
    }
    schemas.insert(
        "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta".into(),
        json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
    );
    schemas.insert(
        "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta".into(),
        json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
    );
    schemas.insert(
        "io.k8s.apimachinery.pkg.apis.meta.v1.Status".into(),
        json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
    );
    schemas.insert("io.k8s.apimachinery.pkg.apis.meta.v1.Patch".into(), json!({"type": "object", "description": "Patch is provided to give a concrete name and type to the Kubernetes PATCH request body."}));
    schemas.insert(
        "io.k8s.api.autoscaling.v1.Scale".into(),
        json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
    );
    // The real schemas replace the stubs of the same name (ObjectMeta, Status, Scale...).
    schemas.extend(super::builtin_schemas::closure(real));
    json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": format!("v1.{}.0", crate::discovery::KUBERNETES_MINOR)},
        "paths": paths,
        "components": {"schemas": schemas},
    })
}
