//! The writing verbs: create, update (PUT), patch, delete and deletecollection.
//!
//! Every write is one key at one revision. Updates and patches are kube's *guaranteed
//! update*: read, compute the new object, write it guarded by the mod revision read, and on a
//! conflict retry with the state storage returned (unless the client asked for a specific
//! resourceVersion: then the conflict is the client's 409). An update that changes nothing
//! writes nothing and keeps the resourceVersion.

use std::sync::Arc;

use bytes::Bytes;
use http::HeaderMap;
use listwatch_encoding::{Encoder, MediaType};
use listwatch_meta::go_json;
use listwatch_meta::object::to_storage_bytes;
use listwatch_meta::registry::Subresource;
use listwatch_meta::status::{StatusCause, StatusDetails};
use listwatch_meta::validation::{FieldError, generate_name, invalid_error, validate_object_name};
use listwatch_meta::write_validation;
use listwatch_meta::{ApiError, Object, Status};
use listwatch_storage::{KeyRange, KeyValue, RangeRequest, StorageError};
use serde_json::{Map, Value, json};

use crate::body_in;
pub use crate::delete_options::{DeleteOptions, delete_options};
use crate::kinds;
use crate::request::{Query, ResourceRequest};
use crate::resource::{ResourceStore, storage_error};
use crate::response::{self, HttpResponse};
use crate::schema::{self, FieldValidation};
use crate::server::ApiState;
use crate::strategy;

/// How many times a guaranteed update retries on conflicts before giving up (it only gives
/// up under extreme contention; kube retries without bound).
const MAX_UPDATE_ATTEMPTS: usize = 1000;

/// The write options kube validates (`ValidateCreateOptions`, `ValidateUpdateOptions`,
/// `ValidatePatchOptions`, `ValidateDeleteOptions`), named as kube names them in the 422.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OptionsKind {
    Create,
    Update,
    Patch,
    Delete,
}

impl OptionsKind {
    fn kind(self) -> &'static str {
        match self {
            OptionsKind::Create => "CreateOptions",
            OptionsKind::Update => "UpdateOptions",
            OptionsKind::Patch => "PatchOptions",
            OptionsKind::Delete => "DeleteOptions",
        }
    }

    /// 422 `<Kind>.meta.k8s.io "" is invalid: ...` when any error was found.
    pub(crate) fn check(self, errors: Vec<FieldError>) -> Result<(), ApiError> {
        if errors.is_empty() {
            return Ok(());
        }
        Err(invalid_error("meta.k8s.io", self.kind(), "", &errors))
    }
}

/// `dryRun` from the query: absent is no dry run, and every value must be `All` (an empty
/// value too is refused, as kube refuses `[]string{""}`).
fn query_dry_run(query: &Query) -> (bool, Vec<FieldError>) {
    let values = query.all("dryRun");
    if values.is_empty() {
        return (false, Vec::new());
    }
    (true, write_validation::validate_dry_run(&values))
}

/// `dryRun`, `fieldManager`, `fieldValidation` (and `force` for patches) of a create, update or
/// patch, validated as kube validates them before it reads the object.
fn write_options(query: &Query, kind: OptionsKind) -> Result<(bool, FieldValidation), ApiError> {
    let mut errors = Vec::new();
    if kind == OptionsKind::Patch && query.has("force") {
        // Only server-side apply takes `force`, and apply patches are not served.
        errors.push(FieldError::forbidden("force", "may not be specified for non-apply patch"));
    }
    errors.extend(write_validation::validate_field_manager(query.get("fieldManager").unwrap_or("")));
    let (dry_run, dry_run_errors) = query_dry_run(query);
    errors.extend(dry_run_errors);
    errors.extend(write_validation::validate_field_validation(query.get("fieldValidation").unwrap_or("")));
    kind.check(errors)?;
    Ok((dry_run, FieldValidation::from_query(query)))
}

fn meta_str<'a>(object: &'a Map<String, Value>, field: &str) -> Option<&'a str> {
    object.get("metadata").and_then(|m| m.get(field)).and_then(Value::as_str)
}

fn metadata_mut(object: &mut Map<String, Value>) -> &mut Map<String, Value> {
    let entry = object.entry("metadata").or_insert_with(|| json!({}));
    if !entry.is_object() {
        *entry = json!({});
    }
    entry.as_object_mut().expect("an object")
}

/// Aligns the body's namespace with the URL's (400 when they disagree).
fn reconcile_namespace(
    store: &ResourceStore,
    object: &mut Map<String, Value>,
    namespace: Option<&str>,
) -> Result<(), ApiError> {
    if !store.resource.namespaced {
        metadata_mut(object).shift_remove("namespace");
        return Ok(());
    }
    let Some(ns) = namespace else {
        return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
    };
    match meta_str(object, "namespace") {
        Some(body_ns) if !body_ns.is_empty() && body_ns != ns => Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        )),
        _ => {
            metadata_mut(object).insert("namespace".into(), json!(ns));
            Ok(())
        }
    }
}

/// The request body as an object: JSON (checked and normalized against the schema) or
/// protobuf; 415 for anything else. Returns the object and the warnings to send.
fn decode_body(
    resource: &listwatch_meta::Resource,
    headers: &HeaderMap,
    body: &[u8],
    validation: FieldValidation,
) -> Result<(Map<String, Value>, Vec<String>), ApiError> {
    if body_in::input_media_type(headers)? == "application/vnd.kubernetes.protobuf" {
        let object = schema::decode_protobuf(resource, body)?;
        return schema::decode(resource, object, schema::Source::Body(b""), validation);
    }
    let object = body_in::decode_object(headers, body, resource)?;
    schema::decode(resource, object, schema::Source::Body(body), validation)
}

fn respond(store: &ResourceStore, media: MediaType, code: u16, object: &Object) -> HttpResponse {
    let encoder = Encoder::new(store.resource, media);
    response::with_body(code, encoder.content_type(), crate::body::Body::full(encoder.object(object)))
}

/// One write request, as the handlers below take it.
pub struct WriteRequest<'a> {
    pub state: &'a ApiState,
    pub store: &'a ResourceStore,
    pub req: &'a ResourceRequest,
    pub query: &'a Query,
    pub headers: &'a HeaderMap,
    pub body: Bytes,
    /// The negotiated representation of the response.
    pub media: MediaType,
}

/// POST.
pub async fn create(w: WriteRequest<'_>) -> Result<HttpResponse, ApiError> {
    let (dry_run, validation) = write_options(w.query, OptionsKind::Create)?;
    let WriteRequest { state, store, req, query: _, headers, body, media } = w;
    let (mut object, warnings) = decode_body(store.resource, headers, &body, validation)?;
    reconcile_namespace(store, &mut object, req.namespace.as_deref())?;
    let resource = store.resource;
    if meta_str(&object, "resourceVersion").is_some_and(|rv| !rv.is_empty()) {
        return Err(ApiError::bad_request("resourceVersion should not be set on objects to be created"));
    }
    let generate = meta_str(&object, "generateName").filter(|g| !g.is_empty()).map(String::from);
    let explicit_name = meta_str(&object, "name").filter(|n| !n.is_empty()).map(String::from);
    if explicit_name.is_none() && generate.is_none() {
        return Err(ApiError::invalid(
            resource.group,
            resource.kind,
            "",
            vec![StatusCause::new(
                "FieldValueRequired",
                "Required value: name or generateName is required",
                "metadata.name",
            )],
        ));
    }
    let namespace = store.scope(req.namespace.as_deref()).map(String::from);
    if let Some(ns) = &namespace {
        state.check_namespace_accepts_writes(ns, resource, explicit_name.as_deref().unwrap_or("")).await?;
    }
    strategy::prepare_for_create(resource, &mut object);
    let object_errors = strategy::validate_create(resource, &object);
    // A generated name can collide; like kube-apiserver, try again with a new one.
    for _ in 0..8 {
        let name = match (&explicit_name, &generate) {
            (Some(n), _) => n.clone(),
            (None, Some(base)) => generate_name(base),
            (None, None) => unreachable!("checked above"),
        };
        let mut errors = validate_object_name(resource.name_rule, &name, generate.as_deref().unwrap_or(""));
        errors.extend(object_errors.iter().cloned());
        if !errors.is_empty() {
            return Err(invalid_error(resource.group, resource.kind, &name, &errors));
        }
        metadata_mut(&mut object).insert("name".into(), json!(name));
        let value = Value::Object(object.clone());
        if dry_run {
            let stored = Object::from_value(resource, value, 0).map_err(ApiError::internal)?;
            return Ok(response::with_warnings(respond(store, media, 201, &stored), &warnings));
        }
        let bytes = to_storage_bytes(resource, value.clone());
        match store.storage.create(store.key(namespace.as_deref(), &name).as_bytes(), bytes).await {
            Ok(written) => {
                let stored = Object::from_value(resource, value, written.revision).map_err(ApiError::internal)?;
                return Ok(response::with_warnings(respond(store, media, 201, &stored), &warnings));
            }
            Err(StorageError::AlreadyExists) if explicit_name.is_none() => continue,
            Err(StorageError::AlreadyExists) => {
                return Err(ApiError::already_exists(&resource.group_resource(), &name));
            }
            Err(e) => return Err(storage_error(e)),
        }
    }
    Err(ApiError::already_exists(&resource.group_resource(), generate.as_deref().unwrap_or("")))
}

/// What a guaranteed-update step decided.
pub enum Step {
    /// Store this object (without resourceVersion).
    Write(Map<String, Value>),
    /// Delete the object instead (its finalizers are gone while it is being deleted).
    Delete,
}

/// The outcome of a guaranteed update.
pub enum Updated {
    Written(Arc<Object>),
    Unchanged(Arc<Object>),
    Deleted(Arc<Object>),
}

impl Updated {
    pub fn object(&self) -> &Arc<Object> {
        match self {
            Updated::Written(o) | Updated::Unchanged(o) | Updated::Deleted(o) => o,
        }
    }
}

/// kube's GuaranteedUpdate. `update` gets the current object (with its resourceVersion) and
/// returns what to store. `precondition_rv`: the client's resourceVersion; a mismatch is a 409
/// and never retried. A dry run computes the result and writes nothing.
pub async fn guaranteed_update(
    store: &ResourceStore,
    namespace: Option<&str>,
    name: &str,
    precondition_rv: Option<i64>,
    dry_run: bool,
    mut update: impl FnMut(&Object) -> Result<Step, ApiError>,
) -> Result<Updated, ApiError> {
    let resource = store.resource;
    let gr = resource.group_resource();
    let key = store.key(store.scope(namespace), name);
    let mut current: Option<KeyValue> = read_kv(store, &key).await?;
    for _ in 0..MAX_UPDATE_ATTEMPTS {
        let Some(kv) = current.take() else {
            return Err(ApiError::not_found(&gr, name));
        };
        if precondition_rv.is_some_and(|rv| rv != kv.mod_revision) {
            return Err(ApiError::modified_conflict(&gr, name));
        }
        let existing = Object::from_storage(resource, &kv.value, kv.mod_revision).map_err(ApiError::internal)?;
        let step = update(&existing)?;
        if dry_run {
            return Ok(match step {
                Step::Delete => Updated::Deleted(Arc::new(existing)),
                Step::Write(new) => {
                    let object = Object::from_value(resource, Value::Object(new), existing.resource_version());
                    Updated::Unchanged(Arc::new(object.map_err(ApiError::internal)?))
                }
            });
        }
        match step {
            Step::Delete => match store.storage.delete(key.as_bytes(), Some(kv.mod_revision)).await {
                Ok(deleted) => {
                    let last = Object::from_storage(resource, &deleted.prev.value, deleted.revision)
                        .map_err(ApiError::internal)?;
                    return Ok(Updated::Deleted(Arc::new(last)));
                }
                Err(StorageError::Conflict { current: now }) => current = now,
                Err(e) => return Err(storage_error(e)),
            },
            Step::Write(new) => {
                let bytes = to_storage_bytes(resource, Value::Object(new.clone()));
                if bytes == kv.value {
                    return Ok(Updated::Unchanged(Arc::new(existing)));
                }
                match store.storage.update(key.as_bytes(), bytes, kv.mod_revision).await {
                    Ok(written) => {
                        let object = Object::from_value(resource, Value::Object(new), written.revision)
                            .map_err(ApiError::internal)?;
                        return Ok(Updated::Written(Arc::new(object)));
                    }
                    Err(StorageError::Conflict { current: now }) => {
                        if precondition_rv.is_some() {
                            return Err(ApiError::modified_conflict(&gr, name));
                        }
                        current = now;
                    }
                    Err(e) => return Err(storage_error(e)),
                }
            }
        }
    }
    Err(ApiError::conflict(&gr, name, "too many concurrent updates; please try again"))
}

async fn read_kv(store: &ResourceStore, key: &str) -> Result<Option<KeyValue>, ApiError> {
    let resp = store.storage.range(RangeRequest::new(KeyRange::key(key.to_string()))).await.map_err(storage_error)?;
    Ok(resp.kvs.into_iter().next())
}

/// The object without its resourceVersion, as a map to edit.
fn editable(object: &Object) -> Map<String, Value> {
    let Value::Object(mut map) = object.value() else { unreachable!("objects are JSON objects") };
    metadata_mut(&mut map).shift_remove("resourceVersion");
    map
}

fn parse_rv(object: &Map<String, Value>) -> Result<Option<i64>, ApiError> {
    match meta_str(object, "resourceVersion") {
        None | Some("") => Ok(None),
        Some(rv) => rv.parse().map(Some).map_err(|_| {
            ApiError::bad_request(format!("metadata.resourceVersion: Invalid value: \"{rv}\": must be a number"))
        }),
    }
}

/// 400 when the body names another object than the URL.
fn check_name_matches(object: &Map<String, Value>, name: &str) -> Result<(), ApiError> {
    match meta_str(object, "name") {
        Some(body) if body != name => Err(ApiError::bad_request(format!(
            "the name of the object ({body}) does not match the name on the URL ({name})"
        ))),
        _ => Ok(()),
    }
}

/// The subresource a write addresses (404 for one the kind lacks).
fn subresource(store: &ResourceStore, req: &ResourceRequest) -> Result<Option<Subresource>, ApiError> {
    match req.subresource.as_deref() {
        None => Ok(None),
        Some("status") if store.resource.has_subresource(Subresource::Status) => Ok(Some(Subresource::Status)),
        Some("scale") if store.resource.has_subresource(Subresource::Scale) => Ok(Some(Subresource::Scale)),
        Some(_) => Err(ApiError::not_found_path()),
    }
}

/// 409 for the uid of a PUT's body that the stored object does not have, with the storage
/// error kube-apiserver embeds in the message (a delete's preconditions fail earlier, in
/// `check_delete_preconditions`).
fn precondition_failed(store: &ResourceStore, namespace: Option<&str>, name: &str, detail: &str) -> ApiError {
    let key = store.key(store.scope(namespace), name);
    ApiError::conflict(
        &store.resource.group_resource(),
        name,
        &format!(
            "StorageError: invalid object, Code: 4, Key: {key}, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: {detail}"
        ),
    )
}

/// Applies an update of the stored object to `new` (the body or the patched object), with
/// the client's resourceVersion precondition taken from `new`. A PUT's body also makes its
/// uid, when set, a precondition (kube's `DefaultUpdatedObjectInfo`); a patch that changes the
/// uid is refused by validation instead.
async fn update_to(
    store: &ResourceStore,
    req: &ResourceRequest,
    dry_run: bool,
    uid_precondition: bool,
    mut make_new: impl FnMut(&Object) -> Result<Map<String, Value>, ApiError>,
) -> Result<Updated, ApiError> {
    let resource = store.resource;
    let name = req.name.as_deref().expect("update has a name");
    let namespace = req.namespace.as_deref();
    let sub = subresource(store, req)?;
    guaranteed_update(store, namespace, name, None, dry_run, |existing| {
        let mut new = make_new(existing)?;
        // A patch can name another namespace (kube's patcher checks it like a PUT's body).
        reconcile_namespace(store, &mut new, namespace)?;
        check_name_matches(&new, name)?;
        if uid_precondition
            && let Some(uid) = meta_str(&new, "uid").filter(|uid| !uid.is_empty())
            && uid != existing.uid()
        {
            return Err(precondition_failed(
                store,
                namespace,
                name,
                &format!("UID in precondition: {uid}, UID in object meta: {}", existing.uid()),
            ));
        }
        if let Some(rv) = parse_rv(&new)?
            && rv != existing.resource_version()
        {
            return Err(ApiError::modified_conflict(&resource.group_resource(), name));
        }
        metadata_mut(&mut new).shift_remove("resourceVersion");
        let old = editable(existing);
        let new = strategy::prepare_for_update(resource, &old, new, sub)?;
        if sub.is_none() {
            let errors = strategy::validate_update(resource, &old, &new);
            if !errors.is_empty() {
                return Err(invalid_error(resource.group, resource.kind, name, &errors));
            }
        }
        if strategy::should_delete_during_update(&new) {
            return Ok(Step::Delete);
        }
        Ok(Step::Write(new))
    })
    .await
}

/// PUT.
pub async fn update(w: WriteRequest<'_>) -> Result<HttpResponse, ApiError> {
    let (dry_run, validation) = write_options(w.query, OptionsKind::Update)?;
    let WriteRequest { state, store, req, query, headers, body, media } = w;
    if req.subresource.as_deref() == Some("scale") {
        return crate::scale::update(state, store, req, headers, body, dry_run).await;
    }
    let (mut object, warnings) = decode_body(store.resource, headers, &body, validation)?;
    reconcile_namespace(store, &mut object, req.namespace.as_deref())?;
    // Checked before the update too: a PUT that creates must not create another name.
    check_name_matches(&object, req.name.as_deref().expect("PUT has a name"))?;
    let result = update_to(store, req, dry_run, true, |_| Ok(object.clone())).await;
    match result {
        Ok(updated) => Ok(response::with_warnings(respond(store, media, 200, updated.object()), &warnings)),
        Err(e) if e.code() == 404 && store.resource.allow_create_on_update && req.subresource.is_none() => {
            create(WriteRequest { state, store, req, query, headers, body, media }).await
        }
        Err(e) => Err(e),
    }
}

/// PATCH: JSON merge patch, JSON patch, or strategic merge patch.
pub async fn patch(w: WriteRequest<'_>) -> Result<HttpResponse, ApiError> {
    let kind = PatchKind::from_headers(w.headers)?;
    let (dry_run, validation) = write_options(w.query, OptionsKind::Patch)?;
    let WriteRequest { state, store, req, query: _, headers: _, body, media } = w;
    let patch = kind.decode(&body, validation)?;
    if req.subresource.as_deref() == Some("scale") {
        return crate::scale::patch(state, store, req, kind, &patch, dry_run).await;
    }
    let resource = store.resource;
    let mut warnings = Vec::new();
    let updated = update_to(store, req, dry_run, false, |existing| {
        let current = existing.value();
        let patched = kind.apply(resource, &current, &patch)?;
        let Value::Object(map) = patched else {
            return Err(kind.undecodable(
                &patched,
                &patch,
                &format!(
                    "json: cannot unmarshal {} into Go value of type {}",
                    go_json::json_kind(&patched),
                    resource.kind
                ),
            ));
        };
        let shown = || kind.shown(&map, &patch);
        // The patched JSON is decoded as a body is: another kind fails, in the decoder's words,
        // as kube's 422 on `patch`. A strategic merge patch's result is converted by Go type
        // instead, so the apiVersion and kind it names are ignored.
        let strategic = kind == PatchKind::Strategic;
        if !strategic {
            let named = kinds::interpret(&Value::Object(map.clone()))
                .map(|named| named.with_defaults(resource))
                .and_then(|named| kinds::decode_failure(&named, resource, &shown(), &map));
            if let Err(detail) = named {
                return Err(schema::patch_invalid(&shown(), &detail));
            }
        }
        let source = schema::Source::Patch { shown: &shown, strategic };
        let (map, found) = schema::decode(resource, map.clone(), source, validation)?;
        warnings = found;
        Ok(map)
    })
    .await?;
    Ok(response::with_warnings(respond(store, media, 200, updated.object()), &warnings))
}

/// The patch types a PATCH route consumes (go-restful's `Consumes`; also what kube's patch
/// handler lists in its 415).
const PATCH_TYPES: [&str; 4] = [
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
];

/// The patch types kube-apiserver accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PatchKind {
    Json,
    Merge,
    Strategic,
}

impl PatchKind {
    /// The patch type of a PATCH, refused as kube-apiserver refuses it. go-restful's router
    /// comes first: the route consumes only the patch types (a missing Content-Type counts as
    /// `application/octet-stream`), and a body of another type is `415: Unsupported Media
    /// Type`; an empty one passes that check but then fails the Accept check with no route
    /// left (`406: Not Acceptable`, or 415 without a Content-Length). Then kube's handler
    /// wants the Content-Type, up to its first `;`, to be one of the patch types exactly.
    pub fn from_headers(headers: &HeaderMap) -> Result<PatchKind, ApiError> {
        let header =
            |name| headers.get(name).map(|v: &http::HeaderValue| String::from_utf8_lossy(v.as_bytes()).into_owned());
        let content_type = header(http::header::CONTENT_TYPE).unwrap_or_default();
        let offered = if content_type.is_empty() { "application/octet-stream" } else { content_type.as_str() };
        let routed =
            offered.split(',').any(|t| PATCH_TYPES.contains(&t.split(';').next().unwrap_or("").trim_matches(' ')));
        if !routed {
            let length = header(http::header::CONTENT_LENGTH);
            let declared = length.as_deref().and_then(|l| l.trim().parse::<u64>().ok()).unwrap_or(0);
            return Err(match (declared, length) {
                (1.., _) => ApiError::router_refusal(415, "415: Unsupported Media Type"),
                (_, None) => {
                    ApiError::router_refusal(415, "415: Unsupported Media Type\n\nAvailable representations: ")
                }
                (_, Some(_)) => ApiError::router_refusal(406, "406: Not Acceptable\n\nAvailable representations: "),
            });
        }
        let handled = match content_type.find(';') {
            Some(i) if i > 0 => &content_type[..i],
            _ => content_type.as_str(),
        };
        match handled {
            "application/json-patch+json" => Ok(PatchKind::Json),
            "application/merge-patch+json" => Ok(PatchKind::Merge),
            "application/strategic-merge-patch+json" => Ok(PatchKind::Strategic),
            // Server-side apply is not served yet.
            "application/apply-patch+yaml" => Err(ApiError::unsupported_media_type()),
            _ => Err(ApiError::unsupported_media_type_of(&PATCH_TYPES)),
        }
    }

    /// The patch document, decoded as kube's patch handler decodes it: 400 with Go's texts for
    /// one that does not decode (prefixed `error decoding patch: ` where kube's handler decodes
    /// it itself, under `fieldValidation` `Warn` and `Strict`), 413 for a JSON patch of more
    /// than 10,000 operations.
    pub fn decode(self, body: &[u8], validation: FieldValidation) -> Result<Value, ApiError> {
        let handler = validation != FieldValidation::Ignore;
        let prefix = match self {
            PatchKind::Json | PatchKind::Merge if handler => "error decoding patch: ",
            _ => "",
        };
        if let Some(syntax) = go_json::syntax_error(body) {
            return Err(ApiError::bad_request(format!("{prefix}{syntax}")));
        }
        let patch: Value = body_in::from_json(body).map_err(|e| ApiError::bad_request(format!("{prefix}{e}")))?;
        match self {
            PatchKind::Json => {
                let decoding = if handler {
                    listwatch_patch::JsonPatchDecoding::Handler
                } else {
                    listwatch_patch::JsonPatchDecoding::Library
                };
                listwatch_patch::decode_json_patch(&patch, decoding).map_err(patch_error)?;
            }
            PatchKind::Merge | PatchKind::Strategic if !patch.is_object() && !patch.is_null() => {
                return Err(ApiError::bad_request(format!(
                    "{prefix}{}",
                    go_json::type_error(go_json::json_kind(&patch), "", "", "map[string]interface {}")
                )));
            }
            // kube's merge patch library refuses a `null` patch (`errBadJSONPatch`).
            PatchKind::Merge if patch.is_null() => return Err(ApiError::bad_request("Invalid JSON Patch")),
            PatchKind::Merge | PatchKind::Strategic => {}
        }
        Ok(patch)
    }

    /// Applies the patch to `current`: 400 for a malformed patch, 422 for one that cannot
    /// apply.
    pub fn apply(self, resource: &listwatch_meta::Resource, current: &Value, patch: &Value) -> Result<Value, ApiError> {
        match self {
            PatchKind::Merge => Ok(listwatch_patch::json_merge_patch(current, patch)),
            PatchKind::Json => listwatch_patch::json_patch(current, patch).map_err(patch_error),
            PatchKind::Strategic => {
                let schema = listwatch_patch::builtin_schema(resource.kind);
                let schema: &dyn listwatch_patch::PatchSchema = match &schema {
                    Some(s) => s,
                    None => &listwatch_patch::NoSchema,
                };
                listwatch_patch::apply(current, patch, schema).map_err(patch_error)
            }
        }
    }

    /// How kube shows the patch in the 422 of a patched object that does not decode: the
    /// patched object's JSON for JSON and merge patches, the patch itself under Go's `%v` for
    /// strategic merge patches (kube decodes those from a map, not from JSON).
    pub fn shown(self, patched: &Map<String, Value>, patch: &Value) -> String {
        match self {
            PatchKind::Json | PatchKind::Merge => serde_json::to_string(patched).unwrap_or_default(),
            PatchKind::Strategic => listwatch_patch::go_value(patch),
        }
    }

    /// The 422 of a patched value that is not an object of the kind.
    fn undecodable(self, patched: &Value, patch: &Value, detail: &str) -> ApiError {
        let shown = match self {
            PatchKind::Json | PatchKind::Merge => patched.to_string(),
            PatchKind::Strategic => listwatch_patch::go_value(patch),
        };
        schema::patch_invalid(&shown, detail)
    }
}

/// A patch error as kube-apiserver's patch handler answers it: 400 for a malformed patch, 413
/// for too many operations, 422 (kube's generic Status, without the cause) for one that cannot
/// apply.
fn patch_error(e: listwatch_patch::PatchError) -> ApiError {
    match e.http_status() {
        413 => ApiError::request_entity_too_large(e.to_string()),
        422 => ApiError::unprocessable_entity(),
        _ => ApiError::bad_request(e.to_string()),
    }
}

/// The outcome of deleting one object.
pub enum Deletion {
    /// Gone: the last state at the deletion's revision.
    Deleted(Arc<Object>),
    /// Still there, being deleted (finalizers or a grace period): its new state.
    Pending(Arc<Object>),
}

/// The preconditions of a delete, checked as kube checks them before storage does: a 409 that
/// names the kind and both values (`rest.BeforeDelete`), or for a namespace, whose registry
/// checks them itself, one in the storage's words on the resource.
fn check_delete_preconditions(
    resource: &listwatch_meta::Resource,
    options: &DeleteOptions,
    existing: &Object,
) -> Result<(), ApiError> {
    let name = existing.name();
    let namespace_registry = resource.group.is_empty() && resource.kind == "Namespace";
    let conflict = |detail: String| {
        if namespace_registry {
            ApiError::conflict(&resource.group_resource(), name, &format!("Precondition failed: {detail}"))
        } else {
            ApiError::conflict(&listwatch_meta::GroupResource::new(resource.group, resource.kind), name, &detail)
        }
    };
    if let Some(uid) = &options.precondition_uid
        && uid != existing.uid()
    {
        return Err(conflict(if namespace_registry {
            format!("UID in precondition: {uid}, UID in object meta: {}", existing.uid())
        } else {
            format!(
                "the UID in the precondition ({uid}) does not match the UID in record ({}). The object might have been deleted and then recreated",
                existing.uid()
            )
        }));
    }
    let rv_precondition = options.precondition_rv.map(|rv| rv.to_string()).or(options.precondition_rv_text.clone());
    let stored = existing.resource_version().to_string();
    if let Some(rv) = &rv_precondition
        && *rv != stored
    {
        return Err(conflict(if namespace_registry {
            format!("ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {stored}")
        } else {
            format!(
                "the ResourceVersion in the precondition ({rv}) does not match the ResourceVersion in record ({stored}). The object might have been modified"
            )
        }));
    }
    Ok(())
}

/// The namespaces the NamespaceLifecycle admission plugin keeps from being deleted.
const IMMORTAL_NAMESPACES: [&str; 3] = ["default", "kube-system", "kube-public"];

/// NamespaceLifecycle's refusal to delete an immortal namespace (dry run or not).
fn check_namespace_deletable(resource: &listwatch_meta::Resource, name: &str) -> Result<(), ApiError> {
    if resource.group.is_empty() && resource.kind == "Namespace" && IMMORTAL_NAMESPACES.contains(&name) {
        return Err(ApiError::forbidden(&resource.group_resource(), name, "this namespace may not be deleted"));
    }
    Ok(())
}

/// Deletes one object with kube's semantics (preconditions, finalizers, graceful deletion).
pub async fn delete_one(
    state: &ApiState,
    store: &ResourceStore,
    namespace: Option<&str>,
    name: &str,
    options: &DeleteOptions,
) -> Result<Deletion, ApiError> {
    let resource = store.resource;
    let gr = resource.group_resource();
    let key = store.key(store.scope(namespace), name);
    let mut current = read_kv(store, &key).await?;
    for _ in 0..MAX_UPDATE_ATTEMPTS {
        let Some(kv) = current.take() else { return Err(ApiError::not_found(&gr, name)) };
        let existing = Object::from_storage(resource, &kv.value, kv.mod_revision).map_err(ApiError::internal)?;
        check_delete_preconditions(resource, options, &existing)?;
        let mut object = editable(&existing);
        let policy = state.deletion_policy(resource, &object, options);
        if policy.keep {
            // Finalizers (or a grace period) hold it: mark it and let them finish.
            let already = object.get("metadata").and_then(|m| m.get("deletionTimestamp")).is_some_and(|v| !v.is_null());
            if already && !policy.changes_finalizers {
                return Ok(Deletion::Pending(Arc::new(existing)));
            }
            strategy::mark_deleting(resource, &mut object, policy.grace_seconds);
            for f in &policy.add_finalizers {
                let list = metadata_mut(&mut object).entry("finalizers").or_insert_with(|| json!([]));
                if let Some(list) = list.as_array_mut()
                    && !list.iter().any(|v| v == f)
                {
                    list.push(json!(f));
                }
            }
            if options.dry_run {
                let obj = Object::from_value(resource, Value::Object(object), existing.resource_version())
                    .map_err(ApiError::internal)?;
                return Ok(Deletion::Pending(Arc::new(obj)));
            }
            let bytes = to_storage_bytes(resource, Value::Object(object.clone()));
            match store.storage.update(key.as_bytes(), bytes, kv.mod_revision).await {
                Ok(written) => {
                    let obj = Arc::new(
                        Object::from_value(resource, Value::Object(object), written.revision)
                            .map_err(ApiError::internal)?,
                    );
                    state.after_marked_for_deletion(store, &obj, &policy);
                    return Ok(Deletion::Pending(obj));
                }
                Err(StorageError::Conflict { current: now }) => {
                    current = now;
                    continue;
                }
                Err(e) => return Err(storage_error(e)),
            }
        }
        if options.dry_run {
            return Ok(Deletion::Deleted(Arc::new(existing)));
        }
        match store.storage.delete(key.as_bytes(), Some(kv.mod_revision)).await {
            Ok(deleted) => {
                let last = Object::from_storage(resource, &deleted.prev.value, deleted.revision)
                    .map_err(ApiError::internal)?;
                let last = Arc::new(last);
                return Ok(Deletion::Deleted(last));
            }
            Err(StorageError::Conflict { current: now }) => current = now,
            Err(StorageError::NotFound) => return Err(ApiError::not_found(&gr, name)),
            Err(e) => return Err(storage_error(e)),
        }
    }
    Err(ApiError::conflict(&gr, name, "too many concurrent updates; please try again"))
}

/// DELETE of one object.
pub async fn delete(w: WriteRequest<'_>) -> Result<HttpResponse, ApiError> {
    let WriteRequest { state, store, req, query, headers, body, media } = w;
    if req.subresource.is_some() {
        return Err(ApiError::method_not_supported(&store.resource.group_resource(), "delete"));
    }
    if !body.is_empty() {
        body_in::input_media_type(headers)?;
    }
    let options = delete_options(query, &body)?;
    let name = req.name.as_deref().expect("DELETE has a name");
    check_namespace_deletable(store.resource, name)?;
    match delete_one(state, store, req.namespace.as_deref(), name, &options).await? {
        Deletion::Pending(object) => Ok(respond(store, media, 200, &object)),
        Deletion::Deleted(object) if store.resource.delete_returns_object => Ok(respond(store, media, 200, &object)),
        Deletion::Deleted(object) => {
            let details = StatusDetails {
                name: name.to_string(),
                group: store.resource.group.to_string(),
                kind: store.resource.plural.to_string(),
                uid: object.uid().to_string(),
                ..Default::default()
            };
            Ok(response::status(200, &Status::success(Some(details))))
        }
    }
}

/// DELETE of a collection: every matching object, one revision each; answers the list of
/// what was deleted.
pub async fn delete_collection(w: WriteRequest<'_>) -> Result<HttpResponse, ApiError> {
    let WriteRequest { state, store, req, query, headers, body, media } = w;
    if !body.is_empty() {
        body_in::input_media_type(headers)?;
    }
    let options = delete_options(query, &body)?;
    let list_options = crate::options::parse(query, store.resource, false, None)?;
    let listed = crate::list::list(store, req.namespace.as_deref(), &list_options).await?;
    let mut deleted = Vec::new();
    for object in &listed.items {
        let ns = (!object.namespace().is_empty()).then_some(object.namespace());
        match delete_one(state, store, ns, object.name(), &options).await {
            Ok(Deletion::Deleted(o)) | Ok(Deletion::Pending(o)) => deleted.push(o),
            Err(e) if e.code() == 404 => {}
            Err(e) => return Err(e),
        }
    }
    let rv = deleted.iter().map(|o| o.resource_version()).max().unwrap_or(listed.resource_version);
    let encoder = Encoder::new(store.resource, media);
    let body = encoder.list(&deleted, rv, None, None).into_pieces();
    Ok(response::with_body(200, encoder.content_type(), crate::body::Body::pieces(body)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn patch_kind(content_type: Option<&str>, content_length: Option<&str>) -> Result<PatchKind, ApiError> {
        let mut headers = HeaderMap::new();
        if let Some(ct) = content_type {
            headers.insert(http::header::CONTENT_TYPE, ct.parse().unwrap());
        }
        if let Some(length) = content_length {
            headers.insert(http::header::CONTENT_LENGTH, length.parse().unwrap());
        }
        PatchKind::from_headers(&headers)
    }

    #[test]
    fn patch_types_route_as_go_restful_then_kubes_handler() {
        assert_eq!(patch_kind(Some("application/merge-patch+json; charset=utf-8"), Some("2")), Ok(PatchKind::Merge));
        assert_eq!(patch_kind(Some("application/json-patch+json"), None), Ok(PatchKind::Json));
        let refusal = |ct, length| {
            let e = patch_kind(ct, length).unwrap_err();
            (e.code(), e.reason().to_owned(), e.status().message.clone())
        };
        let unsupported = (415, "UnsupportedMediaType".to_owned(), "415: Unsupported Media Type".to_owned());
        assert_eq!(refusal(Some("text/plain"), Some("2")), unsupported);
        assert_eq!(refusal(Some("application/json"), Some("2")), unsupported);
        assert_eq!(refusal(None, Some("2")), unsupported);
        // An empty body passes the Content-Type check and fails the Accept one.
        assert_eq!(refusal(Some("text/plain"), Some("0")).0, 406);
        assert_eq!(refusal(Some("text/plain"), None).2, "415: Unsupported Media Type\n\nAvailable representations: ");
        // go-restful takes any listed type; kube's handler wants the whole header to be one.
        assert_eq!(
            refusal(Some("text/plain, application/merge-patch+json"), Some("2")).2,
            "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml"
        );
    }
}
