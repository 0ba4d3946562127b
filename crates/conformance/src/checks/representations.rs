//! Other representations of the same objects, chosen by `Accept` (spec §2.2, §2.3, §10.2):
//!
//! * **Tables** (`application/json;as=Table;v=v1;g=meta.k8s.io`): what `kubectl get` asks for
//!   on its LIST and its `--watch`, so that the server, not kubectl, decides the columns. For
//!   ConfigMaps they are NAME, DATA, AGE; for a custom resource NAME then the CRD's
//!   `additionalPrinterColumns` (the suite's CRD: VALUE, `.data.value`, and AGE); a row's object
//!   is a `PartialObjectMetadata` unless `includeObject` says `Object` (the whole object) or
//!   `None`; `v1beta1` is still served; a Table watch sends `columnDefinitions` in its first
//!   event only.
//! * **Metadata only** (`as=PartialObjectMetadata` for GET and WATCH,
//!   `as=PartialObjectMetadataList` for LIST): what metadata informers (garbage collector,
//!   quota, namespace controllers) read, `meta.k8s.io/v1` kinds holding the metadata only.
//! * **No stream serializer**: YAML has none, so a watch that accepts only
//!   `application/yaml` is refused with 406 and a Status.

use bytes::Bytes;
use reqwest::Method;
use serde_json::{Map, Value, json};

use crate::checks::expect::{Expected, expect_sequence};
use crate::fixture::{CHECK_LABEL, Fixture, encode, rv};
use crate::http::{ApiResponse, Status};
use crate::resource::Resource;
use crate::watch::{EVENT_TIMEOUT, WatchEvent};
use crate::{CheckFailure, Target};

/// What kubectl sends (§10.2): Table v1, then v1beta1, then plain JSON.
const KUBECTL_TABLE: &str =
    "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
const TABLE_V1BETA1: &str = "application/json;as=Table;v=v1beta1;g=meta.k8s.io";
const METADATA: &str = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
const METADATA_LIST: &str = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";

/// What a Table row must carry as its object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Include {
    None,
    Metadata,
    Object,
}

/// Creates object `suffix` with these data and binaryData keys (so a ConfigMap's DATA cell is
/// their count).
async fn create_with(fx: &Fixture<'_>, suffix: &str, data: Value, binary: Value) -> Result<Value, CheckFailure> {
    let labels = json!({CHECK_LABEL: fx.check}).as_object().cloned().unwrap_or_default();
    let mut body = fx.target.resource.object(&fx.name(suffix), Some(&fx.target.namespace), labels, data);
    body["binaryData"] = binary;
    fx.target.send(Method::POST, &fx.target.collection(), Some(&body)).await?.expect(201)
}

fn selector(fx: &Fixture<'_>) -> String {
    format!("labelSelector={}", encode(&fx.selector()))
}

/// The keys of a JSON object.
fn keys(value: &Value) -> Vec<&str> {
    value.as_object().map(|m| m.keys().map(String::as_str).collect()).unwrap_or_default()
}

/// Whether an object carries nothing but `kind`, `apiVersion` and `metadata`.
fn metadata_only(value: &Value) -> bool {
    keys(value).iter().all(|k| ["kind", "apiVersion", "metadata"].contains(k))
}

/// What is wrong with a `PartialObjectMetadata` standing for `object` (None when right).
fn partial_problem(partial: &Value, api_version: &str, object: &Value) -> Option<String> {
    if partial["kind"] != "PartialObjectMetadata" || partial["apiVersion"] != api_version {
        return Some(format!(
            "expected kind PartialObjectMetadata, apiVersion {api_version}; got {} {}",
            partial["kind"], partial["apiVersion"]
        ));
    }
    if !metadata_only(partial) {
        return Some(format!(
            "a PartialObjectMetadata holds only kind, apiVersion and metadata; it has {:?}",
            keys(partial)
        ));
    }
    let meta = &partial["metadata"];
    let want = &object["metadata"];
    for key in ["name", "namespace", "uid", "resourceVersion", "labels"] {
        if meta[key] != want[key] {
            return Some(format!("metadata.{key} is {}, the object's is {}", meta[key], want[key]));
        }
    }
    None
}

/// The columns of `resource`'s Tables, and the cells of `object`'s row but its age.
fn columns_and_cells(resource: Resource, object: &Value) -> ([&'static str; 3], [Value; 2]) {
    let name = object["metadata"]["name"].clone();
    if resource.is_custom() {
        // The CRD's printer columns: a missing `.data.value` is a null cell.
        (["Name", "Value", "Age"], [name, object["data"]["value"].clone()])
    } else {
        let count =
            object["data"].as_object().map_or(0, Map::len) + object["binaryData"].as_object().map_or(0, Map::len);
        (["Name", "Data", "Age"], [name, json!(count)])
    }
}

/// What is wrong with a Table of `resource` (None when right): its kind and version, its
/// columns when `with_columns` (else none), and one row per object, in order.
fn table_problem(
    resource: Resource,
    table: &Value,
    api_version: &str,
    with_columns: bool,
    objects: &[&Value],
    include: Include,
) -> Option<String> {
    if table["kind"] != "Table" || table["apiVersion"] != api_version {
        return Some(format!(
            "expected kind Table, apiVersion {api_version}; got {} {}",
            table["kind"], table["apiVersion"]
        ));
    }
    let columns = &table["columnDefinitions"];
    if with_columns {
        let names: Vec<&str> =
            columns.as_array().into_iter().flatten().map(|c| c["name"].as_str().unwrap_or_default()).collect();
        let wanted = columns_and_cells(resource, &Value::Null).0;
        if names != wanted {
            return Some(format!("a {} Table's columns are {wanted:?}; got {names:?}", resource.kind()));
        }
        if columns.as_array().into_iter().flatten().any(|c| !c["type"].is_string()) {
            return Some("every column definition needs a type".into());
        }
    } else if !(columns.is_null() || columns.as_array().is_some_and(Vec::is_empty)) {
        return Some(format!("only a Table watch's first event carries columnDefinitions; a later one has {columns}"));
    }
    let rows = table["rows"].as_array().cloned().unwrap_or_default();
    if rows.len() != objects.len() {
        return Some(format!("expected {} row(s), got {}", objects.len(), rows.len()));
    }
    for (row, object) in rows.iter().zip(objects) {
        let name = &object["metadata"]["name"];
        let [_, second] = columns_and_cells(resource, object).1;
        let cells = row["cells"].as_array().cloned().unwrap_or_default();
        if cells.len() != 3 || &cells[0] != name || cells[1] != second || cells[2].as_str().is_none_or(str::is_empty) {
            return Some(format!(
                "the row of {name} must have the cells [{name}, {second}, <age>]; got {}",
                row["cells"]
            ));
        }
        let row_object = &row["object"];
        let problem = match include {
            Include::None => (!row_object.is_null())
                .then(|| format!("includeObject=None: a row carries no object, got {row_object}")),
            Include::Metadata => {
                partial_problem(row_object, api_version, object).map(|p| format!("the row of {name}: {p}"))
            }
            Include::Object => (row_object["kind"] != resource.kind()
                || row_object["apiVersion"] != resource.api_version().as_str()
                || row_object["metadata"]["resourceVersion"] != object["metadata"]["resourceVersion"]
                || row_object["data"] != object["data"])
                .then(|| {
                    format!(
                        "includeObject=Object: the row of {name} must carry the whole {}, got {row_object}",
                        resource.kind()
                    )
                }),
        };
        if problem.is_some() {
            return problem;
        }
    }
    None
}

/// GETs `path` with `accept` and checks the answer is the Table `table_problem` accepts.
async fn expect_table(
    target: &Target,
    path: &str,
    accept: &str,
    api_version: &str,
    objects: &[&Value],
    include: Include,
) -> Result<Value, CheckFailure> {
    let response = target.get_as(path, accept).await?;
    let table = response.expect(200)?;
    if let Some(problem) = table_problem(target.resource, &table, api_version, true, objects, include) {
        return Err(CheckFailure::failed_with(
            format!("GET {path} (Accept: {accept}): {problem}"),
            response.describe(),
        ));
    }
    Ok(table)
}

/// §10.2 / §2.2: LIST and GET with kubectl's Table `Accept` give Tables with the columns
/// Name, Data, Age, a row per object whose object is a PartialObjectMetadata by default, the
/// whole object with `includeObject=Object`, none with `includeObject=None`; `v1beta1` too.
pub async fn tables(target: &Target) -> Result<(), CheckFailure> {
    let fx = Fixture::new(target, "table-list-get");
    let a = create_with(&fx, "a", json!({"x": "1", "y": "2"}), json!({"z": "AAE="})).await?;
    let b = create_with(&fx, "b", json!({"value": "1"}), json!({})).await?;
    let list = fx.collection(&selector(&fx));
    let table = expect_table(target, &list, KUBECTL_TABLE, "meta.k8s.io/v1", &[&a, &b], Include::Metadata).await?;
    let table_rv: i64 = table["metadata"]["resourceVersion"].as_str().and_then(|s| s.parse().ok()).unwrap_or(0);
    if table_rv < rv(&b) {
        return Err(CheckFailure::failed_with(
            format!(
                "GET {list}: a listed Table's metadata.resourceVersion must be the list's (≥ {}), got {table_rv}",
                rv(&b)
            ),
            table.to_string(),
        ));
    }
    let with_objects = format!("{list}&includeObject=Object");
    expect_table(target, &with_objects, KUBECTL_TABLE, "meta.k8s.io/v1", &[&a, &b], Include::Object).await?;
    let without = format!("{list}&includeObject=None");
    expect_table(target, &without, KUBECTL_TABLE, "meta.k8s.io/v1", &[&a, &b], Include::None).await?;
    let one = format!("{}/{}", target.collection(), fx.name("a"));
    expect_table(target, &one, KUBECTL_TABLE, "meta.k8s.io/v1", &[&a], Include::Metadata).await?;
    expect_table(target, &list, TABLE_V1BETA1, "meta.k8s.io/v1beta1", &[&a, &b], Include::Metadata).await?;
    expect_table(target, &one, TABLE_V1BETA1, "meta.k8s.io/v1beta1", &[&a], Include::Metadata).await?;
    Ok(())
}

/// §2.3: a Table watch (kubectl get -w) sends every object as a one-row Table; only the
/// first event carries `columnDefinitions`.
pub async fn table_watch(target: &Target) -> Result<(), CheckFailure> {
    let fx = Fixture::new(target, "table-watch");
    let start = fx.current_rv().await?;
    let mut watch = target.watch_accepting(&fx.watch_query(&format!("resourceVersion={start}")), KUBECTL_TABLE).await?;
    let a = create_with(&fx, "a", json!({"x": "1"}), json!({})).await?;
    let a2 = fx.update(&a, "2").await?;
    let b = create_with(&fx, "b", json!({"x": "1", "y": "2"}), json!({})).await?;
    let mut events = Vec::new();
    for (i, object) in [&a, &a2, &b].into_iter().enumerate() {
        let event = watch.next_event(EVENT_TIMEOUT).await?;
        if let Some(problem) =
            table_problem(target.resource, &event.object, "meta.k8s.io/v1", i == 0, &[object], Include::Metadata)
        {
            return Err(watch.failure(&format!("event {i} ({}): {problem}", event.kind)));
        }
        // The row's PartialObjectMetadata names the object and its resourceVersion.
        let row_object = event.object["rows"][0]["object"].clone();
        events.push(WatchEvent { kind: event.kind, object: row_object, line: event.line });
    }
    expect_sequence(
        &watch,
        "the Table events",
        &events,
        &[Expected::new("ADDED", &a), Expected::new("MODIFIED", &a2), Expected::new("ADDED", &b)],
        start,
    )
}

/// §2.2: `as=PartialObjectMetadata` on GET and WATCH and `as=PartialObjectMetadataList` on
/// LIST answer those `meta.k8s.io/v1` kinds, with the objects' metadata and nothing else.
pub async fn metadata_only_output(target: &Target) -> Result<(), CheckFailure> {
    let fx = Fixture::new(target, "metadata-only");
    let a = fx.create("a", "1").await?;
    let b = fx.create("b", "1").await?;

    let one = format!("{}/{}", target.collection(), fx.name("a"));
    let response = target.get_as(&one, METADATA).await?;
    let partial = response.expect(200)?;
    if let Some(problem) = partial_problem(&partial, "meta.k8s.io/v1", &a) {
        return Err(CheckFailure::failed_with(
            format!("GET {one} (Accept: {METADATA}): {problem}"),
            response.describe(),
        ));
    }

    let list = fx.collection(&selector(&fx));
    let response = target.get_as(&list, METADATA_LIST).await?;
    let body = response.expect(200)?;
    let items = body["items"].as_array().cloned().unwrap_or_default();
    let problem = if body["kind"] != "PartialObjectMetadataList" || body["apiVersion"] != "meta.k8s.io/v1" {
        Some(format!(
            "expected kind PartialObjectMetadataList, apiVersion meta.k8s.io/v1; got {} {}",
            body["kind"], body["apiVersion"]
        ))
    } else if body["metadata"]["resourceVersion"].as_str().and_then(|s| s.parse::<i64>().ok()).unwrap_or(0) < rv(&b) {
        Some(format!(
            "metadata.resourceVersion must be the list's (≥ {}), got {}",
            rv(&b),
            body["metadata"]["resourceVersion"]
        ))
    } else if items.len() != 2 {
        Some(format!("expected 2 items, got {}", items.len()))
    } else {
        items.iter().zip([&a, &b]).find_map(|(item, object)| {
            if !metadata_only(item) {
                return Some(format!("an item holds only metadata (and kind, apiVersion); it has {:?}", keys(item)));
            }
            let meta = &item["metadata"];
            (meta["name"] != object["metadata"]["name"]
                || meta["resourceVersion"] != object["metadata"]["resourceVersion"])
                .then(|| format!("items must be {} and {} in order", fx.name("a"), fx.name("b")))
        })
    };
    if let Some(problem) = problem {
        return Err(CheckFailure::failed_with(
            format!("GET {list} (Accept: {METADATA_LIST}): {problem}"),
            response.describe(),
        ));
    }

    let start = rv(&b);
    let mut watch = target.watch_accepting(&fx.watch_query(&format!("resourceVersion={start}")), METADATA).await?;
    let a2 = fx.update(&a, "2").await?;
    let event = watch.next_event(EVENT_TIMEOUT).await?;
    if let Some(problem) = partial_problem(&event.object, "meta.k8s.io/v1", &a2) {
        return Err(watch.failure(&format!("a metadata-only watch event: {problem}")));
    }
    expect_sequence(&watch, "the metadata-only watch", &[event], &[Expected::new("MODIFIED", &a2)], start)
}

/// §2.2: YAML has no stream serializer, so a watch accepting only `application/yaml` answers
/// 406 NotAcceptable with a Status (in JSON or YAML).
pub async fn yaml_watch_not_acceptable(target: &Target) -> Result<(), CheckFailure> {
    let fx = Fixture::new(target, "watch-yaml-not-acceptable");
    let response = match target.open_watch_accepting(&fx.watch_query("timeoutSeconds=5"), "application/yaml").await? {
        Ok(watch) => {
            return Err(watch.failure("a watch accepting only application/yaml must answer 406, it answered 200"));
        }
        Err(response) => response,
    };
    let status = status_of(&response);
    if response.status != 406
        || status.kind != "Status"
        || status.status != "Failure"
        || status.code != 406
        || status.reason != "NotAcceptable"
        || status.message.is_empty()
    {
        return Err(CheckFailure::failed_with(
            "a watch accepting only application/yaml must answer HTTP 406 with a Status: Failure, code 406, reason NotAcceptable and a message",
            response.describe(),
        ));
    }
    Ok(())
}

/// The Status in a response body, JSON or YAML (kube writes an error in a type the client
/// accepts for non-streams, so a YAML-only client may get YAML).
fn status_of(response: &ApiResponse) -> Status {
    let body: Bytes = response.body.clone();
    let value: Value = if response.content_type().contains("yaml") {
        serde_yaml_ng::from_slice(&body).unwrap_or(Value::Null)
    } else {
        serde_json::from_slice(&body).unwrap_or(Value::Null)
    };
    Status::from_json(&value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn configmap(name: &str, rv: &str, data: Value) -> Value {
        json!({"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": name, "resourceVersion": rv, "uid": "u"}, "data": data})
    }

    #[test]
    fn tables_are_checked_column_by_column_and_row_by_row() {
        let a = configmap("a", "5", json!({"x": "1", "y": "2"}));
        let row = |object: Value| json!({"cells": ["a", 2, "3s"], "object": object});
        let partial =
            json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": a["metadata"]});
        let columns = json!([{"name": "Name", "type": "string"}, {"name": "Data", "type": "string"}, {"name": "Age", "type": "string"}]);
        let table = |columns: Value, rows: Value| json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {}, "columnDefinitions": columns, "rows": rows});
        let good = table(columns.clone(), json!([row(partial.clone())]));
        assert_eq!(table_problem(Resource::ConfigMaps, &good, "meta.k8s.io/v1", true, &[&a], Include::Metadata), None);
        assert!(
            table_problem(Resource::ConfigMaps, &good, "meta.k8s.io/v1beta1", true, &[&a], Include::Metadata).is_some()
        );
        // A later watch event must not repeat the columns; null or absent is right.
        assert!(
            table_problem(Resource::ConfigMaps, &good, "meta.k8s.io/v1", false, &[&a], Include::Metadata).is_some()
        );
        let headless = table(Value::Null, json!([row(partial.clone())]));
        assert_eq!(
            table_problem(Resource::ConfigMaps, &headless, "meta.k8s.io/v1", false, &[&a], Include::Metadata),
            None
        );
        // includeObject=None: no object (absent or null); Object: the ConfigMap.
        let none = table(columns.clone(), json!([{"cells": ["a", 2, "3s"]}]));
        assert_eq!(table_problem(Resource::ConfigMaps, &none, "meta.k8s.io/v1", true, &[&a], Include::None), None);
        assert!(table_problem(Resource::ConfigMaps, &good, "meta.k8s.io/v1", true, &[&a], Include::None).is_some());
        let full = table(columns.clone(), json!([row(a.clone())]));
        assert_eq!(table_problem(Resource::ConfigMaps, &full, "meta.k8s.io/v1", true, &[&a], Include::Object), None);
        assert!(table_problem(Resource::ConfigMaps, &full, "meta.k8s.io/v1", true, &[&a], Include::Metadata).is_some());
        // Wrong count, wrong column names, a row object with data.
        let miscounted = table(columns.clone(), json!([{"cells": ["a", 3, "3s"], "object": partial}]));
        assert!(
            table_problem(Resource::ConfigMaps, &miscounted, "meta.k8s.io/v1", true, &[&a], Include::Metadata)
                .is_some()
        );
        let renamed = table(json!([{"name": "NAME", "type": "string"}]), json!([row(partial.clone())]));
        assert!(
            table_problem(Resource::ConfigMaps, &renamed, "meta.k8s.io/v1", true, &[&a], Include::Metadata).is_some()
        );
        // A custom resource's row: Name, the printer column (null when its path finds nothing), Age.
        let blob = |data: Value| json!({"kind": "ConformanceBlob", "apiVersion": "conformance.listwatch.dev/v1", "metadata": a["metadata"], "data": data});
        let custom_columns = json!([{"name": "Name", "type": "string"}, {"name": "Value", "type": "string"}, {"name": "Age", "type": "date"}]);
        let with_value = table(custom_columns.clone(), json!([{"cells": ["a", "7", "3s"], "object": partial}]));
        assert_eq!(
            table_problem(
                Resource::Custom,
                &with_value,
                "meta.k8s.io/v1",
                true,
                &[&blob(json!({"value": "7"}))],
                Include::Metadata
            ),
            None
        );
        let without_value = table(custom_columns, json!([{"cells": ["a", null, "3s"], "object": partial}]));
        assert_eq!(
            table_problem(
                Resource::Custom,
                &without_value,
                "meta.k8s.io/v1",
                true,
                &[&blob(json!({"x": "1"}))],
                Include::Metadata
            ),
            None
        );
        assert!(
            table_problem(
                Resource::Custom,
                &good,
                "meta.k8s.io/v1",
                true,
                &[&blob(json!({"x": "1"}))],
                Include::Metadata
            )
            .is_some()
        );
        let mut fat = partial.clone();
        fat["data"] = json!({"x": "1"});
        assert!(partial_problem(&fat, "meta.k8s.io/v1", &a).is_some());
    }
}
