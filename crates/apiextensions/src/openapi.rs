//! The OpenAPI v3 document kube serves at `/openapi/v3/apis/<group>/<version>` for the CRDs of
//! one group-version (kube's `pkg/controller/openapi/builder/builder.go` and
//! `controller/openapiv3`), with what `kubectl explain` and kubectl's field-validation probe
//! read from it:
//!
//! * `paths`: every route of each CRD (namespaced or cluster collection and item, the
//!   all-namespaces list, `/status`, `/scale`), each operation tagged with
//!   `x-kubernetes-group-version-kind` and `x-kubernetes-action`; PATCH lists `dryRun`,
//!   `fieldManager`, `fieldValidation` and `force`, and consumes the three CR patch types.
//! * `components.schemas`: per CRD the kind's schema, named reverse-domain
//!   (`com.example.stable.v1.CronTab`), which is the version's schema plus `apiVersion`,
//!   `kind` and `metadata` (a reference to ObjectMeta), tagged with
//!   `x-kubernetes-group-version-kind` (and `x-kubernetes-selectable-fields` when set); the
//!   `...List` schema; and the meta schemas they reference.
//!
//! The ObjectMeta/ListMeta/Status schemas here are abbreviated (types, no descriptions).

use serde_json::{Map, Value, json};

use crate::crd::CustomResourceDefinition;

const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
const LIST_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta";
const STATUS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Status";
const PATCH: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch";
const SCALE: &str = "io.k8s.api.autoscaling.v1.Scale";

const API_VERSION_DESCRIPTION: &str = "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources";
const KIND_DESCRIPTION: &str = "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";
const METADATA_DESCRIPTION: &str = "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";
const LIST_METADATA_DESCRIPTION: &str = "Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

/// kube-openapi's `ToRESTFriendlyName` of `<group>/<version>/<kind>`: the group's labels
/// reversed, then version and kind (`com.example.stable.v1.CronTab`).
pub fn schema_name(group: &str, version: &str, kind: &str) -> String {
    let mut parts: Vec<&str> = group.split('.').collect();
    parts.reverse();
    format!("{}.{version}.{kind}", parts.join("."))
}

fn reference(name: &str) -> String {
    format!("#/components/schemas/{name}")
}

fn ref_with_description(name: &str, description: &str) -> Value {
    json!({"allOf": [{"$ref": reference(name)}], "description": description})
}

/// The document of `group`/`version` for the given CRDs (those not in that group-version, or
/// not serving it, are skipped).
pub fn group_version_document(group: &str, version: &str, crds: &[&CustomResourceDefinition]) -> Value {
    let mut paths = Map::new();
    let mut schemas = Map::new();
    for crd in crds.iter().filter(|c| c.spec.group == group) {
        let Some(v) = crd.version(version).filter(|v| v.served) else { continue };
        let names = &crd.spec.names;
        let name = schema_name(group, version, &names.kind);
        let list_name = schema_name(group, version, &names.list_kind);
        let gvk = json!({"group": group, "version": version, "kind": names.kind});
        let mut schema = match v.open_api_schema() {
            Some(s) => kube_native(s),
            None => json!({"type": "object"}),
        };
        let obj = schema.as_object_mut().expect("a schema is an object");
        let props = obj.entry("properties").or_insert_with(|| json!({}));
        props["apiVersion"] = json!({"type": "string", "description": API_VERSION_DESCRIPTION});
        props["kind"] = json!({"type": "string", "description": KIND_DESCRIPTION});
        props["metadata"] = ref_with_description(OBJECT_META, METADATA_DESCRIPTION);
        obj.insert("x-kubernetes-group-version-kind".into(), json!([gvk]));
        let selectable: Vec<Value> =
            v.selectable_fields.iter().map(|f| json!({"fieldPath": f.json_path.trim_start_matches('.')})).collect();
        if !selectable.is_empty() {
            obj.insert("x-kubernetes-selectable-fields".into(), Value::Array(selectable.clone()));
        }
        schemas.insert(name.clone(), schema);
        let mut list = json!({
            "description": format!("{} is a list of {}", names.list_kind, names.kind),
            "type": "object",
            "required": ["items"],
            "properties": {
                "apiVersion": {"type": "string", "description": API_VERSION_DESCRIPTION},
                "items": {"type": "array", "items": {"$ref": reference(&name)},
                    "description": format!("List of {}. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md", names.plural)},
                "kind": {"type": "string", "description": KIND_DESCRIPTION},
                "metadata": ref_with_description(LIST_META, LIST_METADATA_DESCRIPTION),
            },
            "x-kubernetes-group-version-kind": [{"group": group, "version": version, "kind": names.list_kind}],
        });
        if !selectable.is_empty() {
            list["x-kubernetes-selectable-fields"] = Value::Array(selectable);
        }
        schemas.insert(list_name.clone(), list);
        add_paths(&mut paths, crd, version, &gvk, &name, &list_name, v.has_status_subresource(), v.scale().is_some());
    }
    for (name, schema) in meta_schemas() {
        schemas.insert(name.into(), schema);
    }
    json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes CRD Swagger", "version": "v0.1.0"},
        "paths": paths,
        "components": {"schemas": schemas},
    })
}

/// The CRD schema as kube publishes it: int-or-string nodes unfolded to
/// `anyOf: [{type: integer}, {type: string}]`, and embedded resources given `apiVersion`,
/// `kind` and `metadata` properties.
fn kube_native(schema: &Value) -> Value {
    let mut out = schema.clone();
    unfold(&mut out);
    out
}

fn unfold(node: &mut Value) {
    let Some(obj) = node.as_object_mut() else { return };
    if obj.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true)) && !obj.contains_key("anyOf") {
        obj.insert("anyOf".into(), json!([{"type": "integer"}, {"type": "string"}]));
    }
    if obj.get("x-kubernetes-embedded-resource") == Some(&Value::Bool(true)) {
        let props = obj.entry("properties").or_insert_with(|| json!({}));
        props["apiVersion"] = json!({"type": "string", "description": "apiVersion defines the versioned schema of this representation of an object. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources"});
        props["kind"] = json!({"type": "string", "description": "kind is a string value representing the type of this object. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"});
        props["metadata"] = ref_with_description(OBJECT_META, METADATA_DESCRIPTION);
        let required = obj.entry("required").or_insert_with(|| json!([]));
        if let Some(list) = required.as_array_mut() {
            for key in ["kind", "apiVersion"] {
                if !list.iter().any(|v| v == key) {
                    list.push(json!(key));
                }
            }
        }
    }
    for key in ["properties"] {
        if let Some(Value::Object(props)) = obj.get_mut(key) {
            for v in props.values_mut() {
                unfold(v);
            }
        }
    }
    for key in ["items", "additionalProperties"] {
        if let Some(v) = obj.get_mut(key) {
            unfold(v);
        }
    }
}

fn param(name: &str, ty: &str, description: &str) -> Value {
    json!({"name": name, "in": "query", "description": description, "schema": {"type": ty, "uniqueItems": true}})
}

fn write_params(patch: bool) -> Vec<Value> {
    let mut out = vec![
        param(
            "dryRun",
            "string",
            "When present, indicates that modifications should not be persisted. An invalid or unrecognized dryRun directive will result in an error response and no further processing of the request. Valid values are: - All: all dry run stages will be processed",
        ),
        param(
            "fieldManager",
            "string",
            "fieldManager is a name associated with the actor or entity that is making these changes. The value must be less than or 128 characters long, and only contain printable characters, as defined by https://golang.org/pkg/unicode/#IsPrint.",
        ),
        param(
            "fieldValidation",
            "string",
            "fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: - Ignore - Warn - Strict",
        ),
    ];
    if patch {
        out.push(param("force", "boolean", "Force is going to \"force\" Apply requests. It means user will re-acquire conflicting fields owned by other people. Force flag must be unset for non-apply patch requests."));
    }
    out
}

fn list_params() -> Vec<Value> {
    [
        "allowWatchBookmarks:boolean",
        "continue:string",
        "fieldSelector:string",
        "labelSelector:string",
        "limit:integer",
        "resourceVersion:string",
        "resourceVersionMatch:string",
        "sendInitialEvents:boolean",
        "timeoutSeconds:integer",
        "watch:boolean",
    ]
    .iter()
    .map(|p| {
        let (name, ty) = p.split_once(':').expect("name:type");
        json!({"name": name, "in": "query", "schema": {"type": ty, "uniqueItems": true}})
    })
    .collect()
}

fn content(schema: &str, types: &[&str]) -> Value {
    Value::Object(types.iter().map(|t| (t.to_string(), json!({"schema": {"$ref": reference(schema)}}))).collect())
}

const PATCH_TYPES: [&str; 3] =
    ["application/json-patch+json", "application/merge-patch+json", "application/apply-patch+yaml"];
const BODY_TYPES: [&str; 2] = ["application/json", "application/yaml"];

struct Op<'a> {
    action: &'a str,
    id: String,
    gvk: &'a Value,
    params: Vec<Value>,
    body: Option<(&'a str, &'a [&'a str])>,
    response: &'a str,
}

fn operation(op: Op) -> Value {
    let mut out = json!({
        "operationId": op.id,
        "parameters": op.params,
        "responses": {"200": {"description": "OK", "content": content(op.response, &BODY_TYPES)},
            "401": {"description": "Unauthorized"}},
        "x-kubernetes-action": op.action,
        "x-kubernetes-group-version-kind": op.gvk,
    });
    if let Some((schema, types)) = op.body {
        out["requestBody"] = json!({"content": content(schema, types), "required": true});
    }
    out
}

// One argument per route family: a struct would only rename them.
#[allow(clippy::too_many_arguments)]
fn add_paths(
    paths: &mut Map<String, Value>,
    crd: &CustomResourceDefinition,
    version: &str,
    gvk: &Value,
    name: &str,
    list_name: &str,
    status: bool,
    scale: bool,
) {
    let plural = &crd.spec.names.plural;
    let kind = &crd.spec.names.kind;
    let base = format!("/apis/{}/{version}", crd.spec.group);
    let (collection, item) = if crd.is_namespaced() {
        (
            format!("{base}/namespaces/{{namespace}}/{plural}"),
            format!("{base}/namespaces/{{namespace}}/{plural}/{{name}}"),
        )
    } else {
        (format!("{base}/{plural}"), format!("{base}/{plural}/{{name}}"))
    };
    let op = |action: &'static str,
              id: String,
              params: Vec<Value>,
              body: Option<(&'static str, &'static [&'static str])>,
              response: &str| { operation(Op { action, id, gvk, params, body, response }) };
    let ns = if crd.is_namespaced() { "Namespaced" } else { "" };
    paths.insert(
        collection,
        json!({
            "get": op("list", format!("list{ns}{kind}"), list_params(), None, list_name),
            "post": operation(Op { action: "post", id: format!("create{ns}{kind}"), gvk, params: write_params(false), body: Some((name, &BODY_TYPES)), response: name }),
            "delete": op("deletecollection", format!("deleteCollection{ns}{kind}"), list_params(), None, STATUS),
        }),
    );
    let item_ops = |suffix: &str, response: &str| {
        json!({
            "get": operation(Op { action: "get", id: format!("read{ns}{kind}{suffix}"), gvk, params: vec![], body: None, response }),
            "put": operation(Op { action: "put", id: format!("replace{ns}{kind}{suffix}"), gvk, params: write_params(false), body: Some((response, &BODY_TYPES)), response }),
            "patch": operation(Op { action: "patch", id: format!("patch{ns}{kind}{suffix}"), gvk, params: write_params(true), body: Some((PATCH, &PATCH_TYPES)), response }),
        })
    };
    let mut main = item_ops("", name);
    main["delete"] = op("delete", format!("delete{ns}{kind}"), write_params(false), None, STATUS);
    paths.insert(item.clone(), main);
    if crd.is_namespaced() {
        paths.insert(
            format!("{base}/{plural}"),
            json!({"get": op("list", format!("list{kind}ForAllNamespaces"), list_params(), None, list_name)}),
        );
    }
    if status {
        paths.insert(format!("{item}/status"), item_ops("Status", name));
    }
    if scale {
        paths.insert(format!("{item}/scale"), item_ops("Scale", SCALE));
    }
}

fn meta_schemas() -> Vec<(&'static str, Value)> {
    let time = json!({"type": "string", "format": "date-time"});
    let strings = json!({"type": "object", "additionalProperties": {"type": "string", "default": ""}});
    vec![
        (
            OBJECT_META,
            json!({"description": "ObjectMeta is metadata that all persisted resources must have, which includes all objects users must create.",
            "type": "object", "properties": {
                "annotations": strings, "creationTimestamp": time, "deletionGracePeriodSeconds": {"type": "integer", "format": "int64"},
                "deletionTimestamp": time, "finalizers": {"type": "array", "items": {"type": "string", "default": ""}, "x-kubernetes-list-type": "set"},
                "generateName": {"type": "string"}, "generation": {"type": "integer", "format": "int64"}, "labels": strings,
                "managedFields": {"type": "array", "items": {"type": "object"}}, "name": {"type": "string"}, "namespace": {"type": "string"},
                "ownerReferences": {"type": "array", "items": {"type": "object"}}, "resourceVersion": {"type": "string"},
                "selfLink": {"type": "string"}, "uid": {"type": "string"}}}),
        ),
        (
            LIST_META,
            json!({"description": "ListMeta describes metadata that synthetic resources must have, including lists and various status objects.",
            "type": "object", "properties": {"continue": {"type": "string"}, "remainingItemCount": {"type": "integer", "format": "int64"},
                "resourceVersion": {"type": "string"}, "selfLink": {"type": "string"}}}),
        ),
        (
            STATUS,
            json!({"description": "Status is a return value for calls that don't return other objects.", "type": "object",
            "x-kubernetes-group-version-kind": [{"group": "", "kind": "Status", "version": "v1"}]}),
        ),
        (
            PATCH,
            json!({"description": "Patch is provided to give a concrete name and type to the Kubernetes PATCH request body.", "type": "object"}),
        ),
        (
            SCALE,
            json!({"description": "Scale represents a scaling request for a resource.", "type": "object",
            "properties": {"apiVersion": {"type": "string"}, "kind": {"type": "string"},
                "metadata": ref_with_description(OBJECT_META, METADATA_DESCRIPTION),
                "spec": {"type": "object", "properties": {"replicas": {"type": "integer", "format": "int32"}}},
                "status": {"type": "object", "required": ["replicas"], "properties": {"replicas": {"type": "integer", "format": "int32"}, "selector": {"type": "string"}}}},
            "x-kubernetes-group-version-kind": [{"group": "autoscaling", "kind": "Scale", "version": "v1"}]}),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture() -> CustomResourceDefinition {
        let raw: Value = serde_json::from_str(include_str!("../tests/fixtures/crontab-crd.json")).unwrap();
        CustomResourceDefinition::from_value(&raw).unwrap()
    }

    #[test]
    fn names_schemas_like_kube() {
        assert_eq!(schema_name("stable.example.com", "v1", "CronTab"), "com.example.stable.v1.CronTab");
    }

    #[test]
    fn what_kubectl_explain_reads() {
        let crd = fixture();
        let doc = group_version_document("stable.example.com", "v1", &[&crd]);
        // The GVK of the resource path's operations...
        let item = &doc["paths"]["/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}"];
        assert_eq!(
            item["get"]["x-kubernetes-group-version-kind"],
            json!({"group": "stable.example.com", "version": "v1", "kind": "CronTab"})
        );
        // ...the PATCH's fieldValidation parameter (kubectl's validation probe)...
        let params: Vec<&str> =
            item["patch"]["parameters"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
        assert_eq!(params, ["dryRun", "fieldManager", "fieldValidation", "force"]);
        // ...and the schema tagged with that GVK, with the CRD's fields and the meta ones.
        let schema = &doc["components"]["schemas"]["com.example.stable.v1.CronTab"];
        assert_eq!(
            schema["x-kubernetes-group-version-kind"],
            json!([{"group": "stable.example.com", "version": "v1", "kind": "CronTab"}])
        );
        assert_eq!(schema["properties"]["spec"]["properties"]["replicas"]["maximum"], json!(10));
        assert_eq!(
            schema["properties"]["metadata"]["allOf"][0]["$ref"],
            "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
        );
        assert_eq!(schema["x-kubernetes-selectable-fields"], json!([{"fieldPath": "spec.mode"}]));
        let list = &doc["components"]["schemas"]["com.example.stable.v1.CronTabList"];
        assert_eq!(list["properties"]["items"]["items"]["$ref"], "#/components/schemas/com.example.stable.v1.CronTab");
        assert!(doc["components"]["schemas"][OBJECT_META].is_object());
        assert!(doc["paths"]["/apis/stable.example.com/v1/crontabs"]["get"].is_object());
        assert!(
            doc["paths"]["/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}/scale"]["patch"]
                .is_object()
        );
    }
}
