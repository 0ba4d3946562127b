//! Server-side apply: `PATCH` with `Content-Type: application/apply-patch+yaml`, as
//! kube-apiserver's apply patcher runs it (`endpoints/handlers/patch.go`, `applyPatcher`).
//!
//! The body (YAML, or JSON, which is YAML) is an apply configuration: a partial object of the
//! endpoint's kind. It is merged into the live object by the kind's schema and its manager's
//! `Apply` entry becomes exactly its fields (`listwatch_patch::apply`, over
//! [`field_manager::apply_schema`]); fields another manager owns with another value are a 409
//! unless `force=true`. An apply to a missing object creates it (201), except through
//! `/status` and `/scale`, which have no create. Through `/scale` the configuration is an
//! autoscaling/v1 `Scale` whose `spec.replicas` is applied to the parent (`super::scale`).
//!
//! Checks, in kube's order: the options (422 without `fieldManager`), the YAML (400 `error
//! decoding YAML: …`), the configuration's kind (400 `invalid object type: …`), no
//! `metadata.managedFields` in it (400), that it fits the schema (`failed to create typed patch
//! object (…): .spec.foo: field not declared in schema`, which kube answers 500 and listwatch
//! 400: it is the client's mistake), conflicts (409), duplicate keys under
//! `fieldValidation=Strict` (400; a `Warning` under `Warn`), then what every update or create
//! checks (namespace and name against the URL, resourceVersion precondition, validation).
//!
//! Simplifications: the schema check knows built-in kinds' fields and Go types from their
//! protobuf schemas and words a wrong type as Go's JSON decoder does (kube: `expected string,
//! got …`); the YAML is read as YAML 1.2 (kube's parser is YAML 1.1: `on`, `yes` are booleans
//! there); only the first duplicate key is reported.

use listwatch_encoding::has_schema;
use listwatch_meta::registry::Subresource;
use listwatch_meta::{ApiError, Object, Resource};
use listwatch_patch::apply::{ApplySchema, ListType, PathElement, path_string};
use serde_json::{Map, Value};

use super::field_manager::{self, Ownership, SharedSchema};
use super::schema;
use super::write::{self, NewName, WriteRequest, meta_str, respond};
use crate::admission::{Admission, Operation};
use crate::authz::escalation::Guard;
use crate::options::{ApplyOptions, FieldValidation, apply_options};
use crate::registry::{ResourceStore, strategy};
use crate::request::ResourceRequest;
use crate::response::{self, HttpResponse};
use crate::state::ApiState;

/// How many times an apply that found no object, and then lost the race to create it, goes
/// back to updating the object that appeared.
const CREATE_RACES: usize = 8;

/// PATCH with `application/apply-patch+yaml`.
pub async fn apply(w: WriteRequest<'_>) -> Result<HttpResponse, ApiError> {
    let options = apply_options(w.query)?;
    let WriteRequest { state, user, store, req, query: _, headers: _, body, media } = w;
    let guard = Guard::for_write(state, user, store.resource).await;
    let config = decode_config(&body)?;
    let applier = Applier {
        resource: store.resource,
        schema: field_manager::apply_schema(store.resource),
        subresource: write::subresource(store, req)?,
        options: &options,
        config: &config,
        duplicate_key: listwatch_encoding::yaml::duplicate_key_error(&body),
    };
    if applier.subresource == Some(Subresource::Scale) {
        return super::scale::apply(store, req, &config, &options).await;
    }
    let namespace = store.scope(req.namespace.as_deref());
    let admission = |operation| {
        let subresource = req.subresource.as_deref();
        Admission::new(
            state,
            user,
            store.resource,
            subresource,
            namespace,
            operation,
            options.dry_run,
            Some(&options.manager),
        )
    };
    for _ in 0..CREATE_RACES {
        let mut warnings = Vec::new();
        let updating = admission(Operation::Update);
        let updated = write::update_to(
            store,
            req,
            options.dry_run,
            false,
            Ownership::Made,
            guard.as_ref(),
            &updating,
            |existing| {
                warnings.clear();
                applier.applied(Some(&existing.value()), &mut warnings)
            },
        )
        .await;
        match updated {
            Ok(updated) => {
                warnings.extend(updating.warnings());
                return Ok(response::with_warnings(respond(store, media, 200, updated.object()), &warnings));
            }
            // `/status` has no create: kube's status store updates without `forceAllowCreate`.
            Err(e) if e.code() == 404 && applier.subresource.is_none() => {
                let mut warnings = Vec::new();
                let creating = admission(Operation::Create);
                let created = create(state, store, req, &applier, guard.as_ref(), &creating, &mut warnings).await?;
                if let Some(created) = created {
                    warnings.extend(creating.warnings());
                    return Ok(response::with_warnings(respond(store, media, 201, &created), &warnings));
                }
            }
            Err(e) => return Err(e),
        }
    }
    Err(ApiError::conflict(
        &store.resource.group_resource(),
        req.name.as_deref().unwrap_or_default(),
        "too many concurrent creates and deletes; please try again",
    ))
}

/// The apply configuration: the body read as YAML (JSON is YAML), which must be a mapping (an
/// empty body is an empty one). kube's 400s: `error decoding YAML: …`.
fn decode_config(body: &[u8]) -> Result<Value, ApiError> {
    let json = listwatch_encoding::yaml::to_json(body)
        .map_err(|e| ApiError::bad_request(format!("error decoding YAML: error converting YAML to JSON: {e}")))?;
    let value: Value = super::body_in::from_json(&json)
        .map_err(|e| ApiError::bad_request(format!("error decoding YAML: error unmarshaling JSON: {e}")))?;
    match value {
        Value::Object(_) => Ok(value),
        Value::Null => Ok(Value::Object(Map::new())),
        other => Err(ApiError::bad_request(format!(
            "error decoding YAML: error unmarshaling JSON: while decoding JSON: {}",
            listwatch_gocompat::json::type_error(
                listwatch_gocompat::json::json_kind(&other),
                "",
                "",
                "map[string]interface {}"
            )
        ))),
    }
}

/// One apply request: what it applies, by whom, through which endpoint.
struct Applier<'a> {
    resource: &'static Resource,
    schema: SharedSchema,
    subresource: Option<Subresource>,
    options: &'a ApplyOptions,
    config: &'a Value,
    /// The strict YAML decoder's complaint about the body's duplicate keys, if any.
    duplicate_key: Option<String>,
}

impl Applier<'_> {
    /// The configuration applied to `live` (`None`: to nothing, creating), with its managedFields,
    /// as the endpoint's schema makes it; the warnings to send are added to `warnings`.
    fn applied(&self, live: Option<&Value>, warnings: &mut Vec<String>) -> Result<Map<String, Value>, ApiError> {
        let resource = self.resource;
        self.check_typed()?;
        let objects: Vec<&Value> = live.into_iter().chain([self.config]).collect();
        let manager = field_manager::field_manager(&*self.schema, resource, self.subresource, &objects);
        let applied = manager
            .apply(live, self.config, &self.options.manager, self.options.force, &strategy::now_rfc3339())
            .map_err(field_manager::apply_error)?;
        if let Some(duplicate) = &self.duplicate_key {
            match self.options.validation {
                FieldValidation::Strict => {
                    return Err(ApiError::bad_request(format!(
                        "error strict decoding YAML: error converting YAML to JSON: {duplicate}"
                    )));
                }
                // kube's `parseYAMLWarnings`: one warning per line after the YAML prefix.
                FieldValidation::Warn => warnings.extend(
                    duplicate.trim_start_matches("yaml: unmarshal errors:\n").split('\n').map(|l| l.trim().to_owned()),
                ),
                FieldValidation::Ignore => {}
            }
        }
        let applied = if has_schema(resource) { schema::normalize(resource, &applied)? } else { applied };
        match applied {
            Value::Object(map) => Ok(map),
            _ => Err(ApiError::internal("an applied object is not a JSON object")),
        }
    }

    /// kube's typed conversion of the configuration: fields the kind does not declare, and
    /// values of the wrong type, fail the apply. Checked only once the configuration's kind and
    /// metadata have passed the field manager's own checks (which come first in kube).
    fn check_typed(&self) -> Result<(), ApiError> {
        let resource = self.resource;
        let config = self.config;
        let text = |key: &str| config.get(key).and_then(Value::as_str).unwrap_or_default();
        let kind_matches = text("apiVersion") == resource.api_version() && text("kind") == resource.kind;
        let has_managed_fields = config.pointer("/metadata/managedFields").is_some_and(|v| !v.is_null());
        if !kind_matches || has_managed_fields || !has_schema(resource) {
            return Ok(());
        }
        let (group, version, kind) = (resource.group, resource.version, resource.kind);
        let unknown = listwatch_proto::check_json_fields(group, version, kind, config).map_err(ApiError::internal)?;
        let mut errors: Vec<String> = unknown
            .iter()
            .map(|path| format!("{}: field not declared in schema", smd_path(config, &*self.schema, path)))
            .collect();
        if errors.is_empty()
            && let Some(error) =
                listwatch_proto::go_decode_error(group, version, kind, config).map_err(ApiError::internal)?
        {
            errors.push(error);
        }
        let message = match errors.as_slice() {
            [] => return Ok(()),
            [one] => one.clone(),
            many => format!("errors:\n  {}", many.join("\n  ")),
        };
        Err(ApiError::bad_request(format!("failed to create typed patch object ({}): {message}", gvknn(config))))
    }
}

/// kube's `objectGVKNN` of a configuration: `namespace/name; group/version, Kind=Kind`.
fn gvknn(config: &Value) -> String {
    let text = |pointer: &str| config.pointer(pointer).and_then(Value::as_str).unwrap_or_default();
    format!(
        "{}/{}; {}",
        text("/metadata/namespace"),
        text("/metadata/name"),
        field_manager::gvk_text(text("/apiVersion"), text("/kind"))
    )
}

/// A strict decoder's field path (`spec.template.spec.containers[0].foo`) as structured-merge-diff
/// prints it (`.spec.template.spec.containers[name="app"].foo`): list items by their keys in a
/// list-map, by value in a set, by position otherwise.
fn smd_path(config: &Value, schema: &dyn ApplySchema, path: &str) -> String {
    let mut elements = Vec::new();
    let mut names: Vec<&str> = Vec::new();
    let mut at = Some(config);
    for token in path.split('.') {
        let (name, indices) = token.split_at(token.find('[').unwrap_or(token.len()));
        elements.push(PathElement::field(name));
        names.push(name);
        at = at.and_then(|v| v.get(name));
        for index in indices.split(['[', ']']).filter(|i| !i.is_empty()) {
            let Ok(index) = index.parse::<usize>() else { continue };
            let item = at.and_then(|v| v.get(index));
            let element = match (schema.list_type(&names), item) {
                (ListType::Map { keys }, Some(item)) => PathElement::key(keys.iter().map(|key| {
                    let value = item.get(key).cloned().or_else(|| schema.key_default(&names, key));
                    (key.clone(), value.unwrap_or(Value::Null))
                })),
                (ListType::Set, Some(item)) => PathElement::Value(item.clone()),
                _ => PathElement::Index(index),
            };
            elements.push(element);
            at = item;
        }
    }
    path_string(&elements)
}

/// An apply that found no object: the configuration applied to nothing and created, as kube's
/// patcher does (`uid mismatch` for a configuration naming a uid, the server's metadata wiped,
/// the namespace and name checked against the URL). `None` when the object appeared meanwhile.
async fn create(
    state: &ApiState,
    store: &ResourceStore,
    req: &ResourceRequest,
    applier: &Applier<'_>,
    escalation: Option<&Guard>,
    admission: &Admission<'_>,
    warnings: &mut Vec<String>,
) -> Result<Option<Object>, ApiError> {
    let resource = store.resource;
    let name = req.name.as_deref().unwrap_or_default();
    let mut object = applier.applied(None, warnings)?;
    if let Some(uid) = meta_str(&object, "uid").filter(|uid| !uid.is_empty()) {
        return Err(ApiError::conflict(
            &resource.group_resource(),
            name,
            &format!("uid mismatch: the provided object specified uid {uid}, and no existing object was found"),
        ));
    }
    let metadata = crate::registry::metadata_mut(&mut object);
    for field in ["creationTimestamp", "uid", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"] {
        metadata.shift_remove(field);
    }
    // A resourceVersion precondition has nothing to hold against: kube creates regardless.
    metadata.shift_remove("resourceVersion");
    write::reconcile_namespace(store, &mut object, req.namespace.as_deref())?;
    let named = meta_str(&object, "name").unwrap_or_default();
    if named != name {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({named}) does not match the name on the URL ({name})"
        )));
    }
    let namespace = store.scope(req.namespace.as_deref());
    if let Some(ns) = namespace {
        crate::admission::lifecycle::check_namespace_accepts_writes(state, ns, resource, name).await?;
    }
    let object = admission.mutate(name, None, Some(object)).await?.unwrap_or_default();
    if let Some(guard) = escalation {
        guard.check(namespace.unwrap_or(""), &object)?;
    }
    let new_name = NewName { explicit: Some(name), generate: None };
    match write::store_new(store, namespace, object, new_name, applier.options.dry_run, admission).await {
        Ok(created) => Ok(Some(created)),
        Err(e) if e.reason() == "AlreadyExists" => Ok(None),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn configurations_are_yaml_mappings() {
        let config = decode_config(b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n").unwrap();
        assert_eq!(config["metadata"]["name"], "a");
        assert_eq!(decode_config(br#"{"kind":"ConfigMap"}"#).unwrap()["kind"], "ConfigMap");
        assert_eq!(decode_config(b"").unwrap(), json!({}));
        let message = |body: &[u8]| decode_config(body).unwrap_err().status().message.clone();
        assert_eq!(
            message(b"- a\n- b\n"),
            "error decoding YAML: error unmarshaling JSON: while decoding JSON: json: cannot unmarshal array into Go value of type map[string]interface {}"
        );
        assert!(message(b"a: [").starts_with("error decoding YAML: error converting YAML to JSON: yaml: "));
    }

    #[test]
    fn unknown_fields_are_named_as_structured_merge_diff_names_them() {
        let schema = listwatch_patch::builtin_schema("Deployment").unwrap();
        let config = json!({"spec": {"template": {"spec": {"containers": [{"name": "app", "ports": [{"containerPort": 80}]}]}}}});
        assert_eq!(
            smd_path(&config, &schema, "spec.template.spec.containers[0].foo"),
            ".spec.template.spec.containers[name=\"app\"].foo"
        );
        assert_eq!(
            smd_path(&config, &schema, "spec.template.spec.containers[0].ports[0].foo"),
            ".spec.template.spec.containers[name=\"app\"].ports[containerPort=80,protocol=\"TCP\"].foo"
        );
        assert_eq!(smd_path(&config, &schema, "spec.foo"), ".spec.foo");
        assert_eq!(
            gvknn(&json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}})),
            "/d; apps/v1, Kind=Deployment"
        );
    }
}
