//! Field ownership (`metadata.managedFields`) on every write, as kube-apiserver's handlers keep
//! it around the registry (`endpoints/handlers/{create,update,patch}.go` with apimachinery's
//! `managedfields` chain; the work itself is `listwatch_patch::apply`).
//!
//! * a create, an update (PUT) and a non-apply patch give the fields they changed to their
//!   manager's `Update` entry ([`record_create`], [`record_update`]), the manager being
//!   `fieldManager` or else derived from the User-Agent ([`update_manager`]);
//! * a server-side apply builds the new object and its `Apply` entry in one step
//!   ([`field_manager`], used by `super::apply`);
//! * [`apply_error`]: an apply's failure as the Status kube answers;
//! * [`apply_schema`] is the one place a resource's schema is looked up: how its lists and maps
//!   merge and are owned. Built-in kinds have their tables; a kind that can bring its own schema
//!   (a custom resource's OpenAPI v3 schema, `listwatch_patch::apply::OpenApiSchema`) plugs in
//!   here.
//!
//! The fields an endpoint resets are never owned through it (kube's `ResetFieldsStrategy`):
//! `status` on the main resource of a kind with a status subresource, and on `/status`
//! everything but `status` (listwatch's status strategy keeps all of the rest, where kube's
//! resets `spec` and, for some kinds, a few metadata fields).

use std::sync::{Arc, OnceLock};

use http::HeaderMap;
use listwatch_meta::registry::Subresource;
use listwatch_meta::{ApiError, Resource};
use listwatch_patch::apply::{ApplySchema, FieldManager, FieldSet, manager_or_user_agent};
use parking_lot::Mutex;
use serde_json::{Map, Value, json};

use crate::registry::strategy::now_rfc3339;
use crate::request::Query;

/// A schema shared between requests.
pub type SharedSchema = Arc<dyn ApplySchema + Send + Sync>;

/// The schema server-side apply merges and tracks `resource`'s objects by: a custom resource's
/// CRD schema, the built-in table of its kind, or, for a kind without one, the metadata table
/// alone (every other list atomic, every object granular).
pub fn apply_schema(resource: &Resource) -> SharedSchema {
    // A custom resource merges by its CRD's schema (`x-kubernetes-list-type`,
    // `x-kubernetes-list-map-keys`, `x-kubernetes-map-type`); every served version of every CRD
    // is its own `Resource`, so the schema is read from it, not cached by kind.
    if let Some(schema) = crate::customresources::resource::served(resource).and_then(|s| s.open_api_schema.clone()) {
        return Arc::new(listwatch_patch::apply::OpenApiSchema::new(schema));
    }
    // Built once per kind; a short list scanned without allocating, as every write asks.
    static BUILT: OnceLock<Mutex<Vec<(String, String, SharedSchema)>>> = OnceLock::new();
    let mut built = BUILT.get_or_init(Default::default).lock();
    if let Some((_, _, schema)) = built.iter().find(|(g, k, _)| g == resource.group && k == resource.kind) {
        return schema.clone();
    }
    let table = listwatch_patch::builtin_schema(resource.kind)
        .or_else(|| listwatch_patch::builtin_schema("ConfigMap"))
        .unwrap_or_default();
    let schema: SharedSchema = Arc::new(table);
    built.push((resource.group.to_owned(), resource.kind.to_owned(), schema.clone()));
    schema
}

/// The fields writes through `subresource` never own; `objects` are the objects of the write
/// (on `/status`, every top-level field they have but `status` is reset).
fn reset_fields(resource: &Resource, subresource: Option<Subresource>, objects: &[&Value]) -> FieldSet {
    match subresource {
        Some(Subresource::Status) => {
            let mut names: Vec<&str> = vec!["metadata"];
            for object in objects {
                if let Some(map) = object.as_object() {
                    names.extend(
                        map.keys().map(String::as_str).filter(|k| !matches!(*k, "status" | "apiVersion" | "kind")),
                    );
                }
            }
            names.sort_unstable();
            names.dedup();
            FieldSet::from_dotted(&names)
        }
        Some(Subresource::Scale | Subresource::Binding | Subresource::Token) => FieldSet::new(),
        None if resource.has_subresource(Subresource::Status) => FieldSet::from_dotted(&["status"]),
        None => FieldSet::new(),
    }
}

/// The field manager of one write to `resource` (through `subresource`), over `schema`;
/// `objects` are the objects involved (see [`reset_fields`]).
pub fn field_manager<'s>(
    schema: &'s dyn ApplySchema,
    resource: &Resource,
    subresource: Option<Subresource>,
    objects: &[&Value],
) -> FieldManager<'s> {
    FieldManager::new(schema, &resource.api_version(), resource.kind)
        .with_subresource(subresource.map_or("", Subresource::name))
        .with_reset_fields(reset_fields(resource, subresource, objects))
}

/// The manager of a create, update or non-apply patch: `fieldManager`, else the User-Agent up
/// to its first `/` (kube's `managerOrUserAgent`; kubectl's is `kubectl`).
pub fn update_manager(query: &Query, headers: &HeaderMap) -> String {
    let user_agent = headers.get(http::header::USER_AGENT).map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    manager_or_user_agent(query.get("fieldManager"), user_agent.as_deref().unwrap_or_default())
}

/// Runs the field manager's `update` on `object` with the resource's apiVersion and kind (as
/// the decoded object kube compares has them; a body may leave them out or name others, which
/// later checks refuse) and returns the object as it was sent, with the managedFields made.
fn update_typed(
    manager: &FieldManager<'_>,
    resource: &Resource,
    live: &Value,
    mut object: Map<String, Value>,
    name: &str,
) -> Map<String, Value> {
    let sent = [("apiVersion", object.get("apiVersion").cloned()), ("kind", object.get("kind").cloned())];
    object.insert("apiVersion".into(), json!(resource.api_version()));
    object.insert("kind".into(), json!(resource.kind));
    let new = Value::Object(object);
    let Value::Object(mut out) = manager.update(live, &new, name, &now_rfc3339()) else {
        unreachable!("the field manager returns the object it was given")
    };
    for (key, value) in sent {
        match value {
            Some(value) => out.insert(key.into(), value),
            None => out.shift_remove(key),
        };
    }
    out
}

/// Puts `recorded`'s managedFields on `object` (or takes them off), leaving the rest of
/// `object` as it was.
fn with_managed_fields(mut object: Map<String, Value>, recorded: &Value) -> Map<String, Value> {
    let metadata = crate::registry::metadata_mut(&mut object);
    match recorded.pointer("/metadata/managedFields") {
        Some(entries) => metadata.insert("managedFields".into(), entries.clone()),
        None => metadata.shift_remove("managedFields"),
    };
    object
}

/// A create by `manager`: every field the new object sets becomes its `Update` entry; valid
/// managedFields in the body are kept instead (`[]` clears them).
pub fn record_create(resource: &Resource, object: Map<String, Value>, manager: &str) -> Map<String, Value> {
    let schema = apply_schema(resource);
    let empty = json!({"apiVersion": resource.api_version(), "kind": resource.kind});
    update_typed(&field_manager(&*schema, resource, None, &[]), resource, &empty, object, manager)
}

/// An update of `live` to `new` by `manager` through `subresource`: the fields it changed move
/// to its `Update` entry. An object that has no managedFields keeps none.
pub fn record_update(
    resource: &Resource,
    subresource: Option<Subresource>,
    live: &Value,
    new: Map<String, Value>,
    manager: &str,
) -> Map<String, Value> {
    let schema = apply_schema(resource);
    // Only a `/status` write's reset fields depend on the objects: their top-level fields.
    let fields = if subresource == Some(Subresource::Status) { top_level(live, &new) } else { Value::Null };
    update_typed(&field_manager(&*schema, resource, subresource, &[&fields]), resource, live, new, manager)
}

/// An object with the top-level fields of `live` and `new`, empty: all the reset fields of a
/// `/status` write need to know of the new object.
fn top_level(live: &Value, new: &Map<String, Value>) -> Value {
    let mut out = Map::new();
    for key in live.as_object().into_iter().flat_map(Map::keys).chain(new.keys()) {
        out.insert(key.clone(), Value::Null);
    }
    Value::Object(out)
}

/// A server-side apply through `/scale` of `scale` (an autoscaling/v1 Scale configuration) by
/// `manager` to `live`: the Scale's `spec.replicas` is applied as the parent's, with an `Apply`
/// entry of the parent's version and `subresource: scale` (kube's `ScaleHandler` maps the
/// entries between the two the same way). `object` is the parent as the write leaves it; it
/// gets the new managedFields.
pub fn record_scale_apply(
    resource: &Resource,
    live: &Value,
    object: Map<String, Value>,
    scale: &Value,
    manager: &str,
    force: bool,
) -> Result<Map<String, Value>, listwatch_patch::apply::ApplyError> {
    let mut config = json!({"apiVersion": resource.api_version(), "kind": resource.kind, "metadata": {}});
    for field in ["name", "namespace"] {
        if let Some(value) = scale.pointer(&format!("/metadata/{field}")) {
            config["metadata"][field] = value.clone();
        }
    }
    if let Some(replicas) = scale.pointer("/spec/replicas") {
        config["spec"] = json!({"replicas": replicas});
    }
    let schema = apply_schema(resource);
    let applied = field_manager(&*schema, resource, Some(Subresource::Scale), &[]).apply(
        Some(live),
        &config,
        manager,
        force,
        &now_rfc3339(),
    )?;
    Ok(with_managed_fields(object, &applied))
}

/// Whether a request's object asks to reset managedFields (`metadata.managedFields: []`):
/// normalizing by the kind's schema cannot tell an empty list from none, as Go's JSON decoder
/// can, so the handlers ask before and [`carry_reset`] after.
pub fn asks_reset(sent: &Map<String, Value>) -> bool {
    sent.get("metadata").and_then(|m| m.get("managedFields")).and_then(Value::as_array).is_some_and(Vec::is_empty)
}

/// Puts the reset (`managedFields: []`) back on a normalized object.
pub fn carry_reset(decoded: &mut Map<String, Value>) {
    crate::registry::metadata_mut(decoded).insert("managedFields".into(), json!([]));
}

/// An apply failure as kube answers it, except that a configuration which does not fit the
/// schema is the client's 400, not kube's 500.
pub fn apply_error(error: listwatch_patch::apply::ApplyError) -> ApiError {
    match &error {
        listwatch_patch::apply::ApplyError::Internal(message)
            if message.starts_with("failed to create typed patch object") =>
        {
            ApiError::bad_request(message.clone())
        }
        _ => match serde_json::from_value::<listwatch_meta::status::Status>(error.status()) {
            Ok(status) => ApiError(Box::new(status)),
            Err(e) => ApiError::internal(e),
        },
    }
}

/// A GroupVersionKind as Go prints it: `apps/v1, Kind=Deployment`, `/v1, Kind=Pod`.
pub fn gvk_text(api_version: &str, kind: &str) -> String {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    format!("{group}/{version}, Kind={kind}")
}

/// How a write keeps managedFields.
#[derive(Clone, Copy, Debug)]
pub enum Ownership<'a> {
    /// A create, update or non-apply patch by this manager: its `Update` entry.
    Update(&'a str),
    /// The write made them itself (a server-side apply).
    Made,
}

#[cfg(test)]
mod tests {
    use super::*;
    use listwatch_meta::Registry;

    fn resource(kind: &str) -> &'static Resource {
        Registry.find_kind(if kind == "Deployment" { "apps" } else { "" }, kind).unwrap()
    }

    #[test]
    fn managers_come_from_the_user_agent_when_not_named() {
        let mut headers = HeaderMap::new();
        headers.insert(http::header::USER_AGENT, "kubectl/v1.32.0 (linux/amd64) kubernetes/abc".parse().unwrap());
        assert_eq!(update_manager(&Query::parse(None), &headers), "kubectl");
        assert_eq!(update_manager(&Query::parse(Some("fieldManager=m")), &headers), "m");
        assert_eq!(update_manager(&Query::parse(None), &HeaderMap::new()), "");
    }

    #[test]
    fn a_create_records_its_fields_and_an_update_what_it_changed() {
        let cm = resource("ConfigMap");
        let body = json!({"metadata": {"name": "c", "namespace": "ns", "labels": {"a": "1"}}, "data": {"k": "v"}});
        let created = record_create(cm, body.as_object().unwrap().clone(), "creator");
        let entries = &created["metadata"]["managedFields"];
        assert_eq!(entries[0]["manager"], "creator");
        assert_eq!(entries[0]["operation"], "Update");
        assert_eq!(entries[0]["apiVersion"], "v1");
        assert_eq!(
            entries[0]["fieldsV1"],
            json!({"f:data": {".": {}, "f:k": {}}, "f:metadata": {"f:labels": {".": {}, "f:a": {}}}})
        );
        // The body is kept as it was (no apiVersion or kind added).
        assert!(created.get("kind").is_none());

        let mut live = Value::Object(created.clone());
        live["metadata"]["uid"] = json!("u");
        let mut new = created.clone();
        new["data"] = json!({"k": "w"});
        let updated = record_update(cm, None, &live, new, "editor");
        let managers: Vec<&str> = updated["metadata"]["managedFields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["manager"].as_str().unwrap())
            .collect();
        assert_eq!(managers.len(), 2, "{updated:?}");
        assert!(managers.contains(&"editor"));
    }

    #[test]
    fn status_is_never_owned_through_the_main_resource() {
        let deployment = resource("Deployment");
        let body = json!({"metadata": {"name": "d"}, "spec": {"replicas": 2}, "status": {"replicas": 5}});
        let created = record_create(deployment, body.as_object().unwrap().clone(), "m");
        assert_eq!(created["metadata"]["managedFields"][0]["fieldsV1"], json!({"f:spec": {".": {}, "f:replicas": {}}}));
    }
}
