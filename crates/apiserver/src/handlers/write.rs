//! Create (POST) and update (PUT) of an object or its status, and what every write handler
//! shares: the decoded body, the URL's namespace and name against the body's, the response.
//! The storage side (the guaranteed update) is the registry's; patch and delete build on this
//! file.

use bytes::Bytes;
use http::HeaderMap;
use listwatch_encoding::{Encoder, MediaType};
use listwatch_meta::object::to_storage_bytes;
use listwatch_meta::registry::Subresource;
use listwatch_meta::status::StatusCause;
use listwatch_meta::validation::{generate_name, invalid_error, validate_object_name};
use listwatch_meta::{ApiError, Object};
use listwatch_storage::StorageError;
use serde_json::{Map, Value, json};

use super::field_manager::{self, Ownership};
use super::{body_in, scale, schema};
use crate::admission::{Admission, Operation, lifecycle};
use crate::authz::escalation::Guard;
use crate::options::{FieldValidation, OptionsKind, write_options};
use crate::registry::update::{MAX_UPDATE_ATTEMPTS, Step, Tried, Updated};
use crate::registry::{ResourceStore, editable, metadata_mut, storage_error, strategy};
use crate::request::{Query, ResourceRequest};
use crate::response::{self, HttpResponse};
use crate::state::ApiState;

pub(super) fn meta_str<'a>(object: &'a Map<String, Value>, field: &str) -> Option<&'a str> {
    object.get("metadata").and_then(|m| m.get(field)).and_then(Value::as_str)
}

/// Aligns the body's namespace with the URL's (400 when they disagree).
pub(super) fn reconcile_namespace(
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
    let reset = field_manager::asks_reset(&object);
    let (mut decoded, warnings) = schema::decode(resource, object, schema::Source::Body(body), validation)?;
    if reset {
        field_manager::carry_reset(&mut decoded);
    }
    Ok((decoded, warnings))
}

pub(super) fn respond(store: &ResourceStore, media: MediaType, code: u16, object: &Object) -> HttpResponse {
    let encoder = Encoder::new(store.resource, media);
    response::with_body(code, encoder.content_type(), crate::transport::body::Body::full(encoder.object(object)))
}

/// One write request, as the handlers below take it.
pub struct WriteRequest<'a> {
    pub state: &'a ApiState,
    /// Who writes (after impersonation): RBAC's escalation check needs it.
    pub user: &'a crate::authn::UserInfo,
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
    let WriteRequest { state, user, store, req, query, headers, body, media } = w;
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
        lifecycle::check_namespace_accepts_writes(state, ns, resource, explicit_name.as_deref().unwrap_or("")).await?;
    }
    // kube defaults while decoding, before its field manager: the creator owns the defaults.
    listwatch_meta::defaults::apply_defaults(resource.group, resource.kind, &mut object);
    let manager = field_manager::update_manager(query, headers);
    let object = field_manager::record_create(resource, object, &manager);
    let admission =
        Admission::new(state, user, resource, None, namespace.as_deref(), Operation::Create, dry_run, Some(&manager));
    let object =
        admission.mutate(explicit_name.as_deref().unwrap_or(""), None, Some(object)).await?.unwrap_or_default();
    if let Some(guard) = Guard::for_write(state, user, resource).await {
        guard.check(namespace.as_deref().unwrap_or(""), &object)?;
    }
    let name = NewName { explicit: explicit_name.as_deref(), generate: generate.as_deref() };
    let stored = store_new(store, namespace.as_deref(), object, name, dry_run, &admission).await?;
    let mut warnings = warnings;
    warnings.extend(admission.warnings());
    Ok(response::with_warnings(respond(store, media, 201, &stored), &warnings))
}

/// The name of an object to create: the one it names, else one generated from `generate`.
pub(super) struct NewName<'a> {
    pub explicit: Option<&'a str>,
    pub generate: Option<&'a str>,
}

/// Stores a new object (its namespace reconciled, its managedFields recorded, mutating
/// admission done): the server's fields set, validated, admitted by the validating webhooks,
/// written (for a dry run, only made). A generated name that collides is tried again with
/// another; an explicit one is `AlreadyExists`.
pub(super) async fn store_new(
    store: &ResourceStore,
    namespace: Option<&str>,
    mut object: Map<String, Value>,
    name: NewName<'_>,
    dry_run: bool,
    admission: &Admission<'_>,
) -> Result<Object, ApiError> {
    let resource = store.resource;
    strategy::prepare_for_create(resource, &mut object);
    let object_errors = strategy::validate_create(resource, &object);
    // A generated name can collide; like kube-apiserver, try again with a new one.
    let NewName { explicit, generate } = name;
    for _ in 0..8 {
        let name = match (explicit, generate) {
            (Some(n), _) => n.to_owned(),
            (None, Some(base)) => generate_name(base),
            (None, None) => String::new(),
        };
        let mut errors = validate_object_name(resource.name_rule, &name, generate.unwrap_or(""));
        errors.extend(object_errors.iter().cloned());
        if !errors.is_empty() {
            return Err(invalid_error(resource.group, resource.kind, &name, &errors));
        }
        metadata_mut(&mut object).insert("name".into(), json!(name));
        admission.validate(&name, None, Some(&object)).await?;
        let value = Value::Object(object.clone());
        if dry_run {
            return Object::from_value(resource, value, 0).map_err(ApiError::internal);
        }
        let bytes = to_storage_bytes(resource, value.clone());
        match store.storage.create(store.key(namespace, &name).as_bytes(), bytes).await {
            Ok(written) => return Object::from_value(resource, value, written.revision).map_err(ApiError::internal),
            Err(StorageError::AlreadyExists) if explicit.is_none() => continue,
            Err(StorageError::AlreadyExists) => {
                return Err(ApiError::already_exists(&resource.group_resource(), &name));
            }
            Err(e) => return Err(storage_error(e)),
        }
    }
    Err(ApiError::already_exists(&resource.group_resource(), generate.unwrap_or("")))
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
pub(super) fn subresource(store: &ResourceStore, req: &ResourceRequest) -> Result<Option<Subresource>, ApiError> {
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
#[allow(clippy::too_many_arguments)]
pub(super) async fn update_to(
    store: &ResourceStore,
    req: &ResourceRequest,
    dry_run: bool,
    uid_precondition: bool,
    ownership: Ownership<'_>,
    escalation: Option<&Guard>,
    admission: &Admission<'_>,
    mut make_new: impl FnMut(&Object) -> Result<Map<String, Value>, ApiError>,
) -> Result<Updated, ApiError> {
    let name = req.name.as_deref().expect("update has a name");
    let namespace = req.namespace.as_deref();
    let sub = subresource(store, req)?;
    let change = Change { store, name, namespace, sub, uid_precondition, ownership, escalation, admission };
    // kube's GuaranteedUpdate, with admission inside each try (webhooks are called again
    // when a conflict makes the update start over): the store's loop, spelled out here because
    // its step waits.
    let mut current = store.update_first_read(namespace, name).await?;
    for _ in 0..MAX_UPDATE_ATTEMPTS {
        let attempt = store.update_attempt(current.take(), name, None)?;
        let new = make_new(&attempt.existing)?;
        let step = change.step(&attempt.existing, new).await?;
        match store.update_write(namespace, name, attempt, step, None, dry_run).await? {
            Tried::Done(updated) => return Ok(updated),
            Tried::Conflict(now) => current = now,
        }
    }
    Err(store.too_many_updates(name))
}

/// What one update does to the object it read, whatever computed the new state.
struct Change<'a> {
    store: &'a ResourceStore,
    name: &'a str,
    namespace: Option<&'a str>,
    sub: Option<Subresource>,
    uid_precondition: bool,
    ownership: Ownership<'a>,
    escalation: Option<&'a Guard>,
    admission: &'a Admission<'a>,
}

impl Change<'_> {
    /// The step of one try: `new` checked against the URL and the client's preconditions,
    /// defaulted, its managed fields recorded, admitted by the mutating webhooks, prepared and
    /// validated as the kind's strategy says, then admitted by the validating webhooks.
    async fn step(&self, existing: &Object, mut new: Map<String, Value>) -> Result<Step, ApiError> {
        let Change { store, name, namespace, sub, .. } = *self;
        let resource = store.resource;
        // A patch can name another namespace (kube's patcher checks it like a PUT's body).
        reconcile_namespace(store, &mut new, namespace)?;
        check_name_matches(&new, name)?;
        if self.uid_precondition
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
        if let Ownership::Update(manager) = self.ownership {
            // Defaulted first, as kube's decoding does: a default the client left out is no
            // change, and a new field's default is the writer's.
            listwatch_meta::defaults::apply_defaults(resource.group, resource.kind, &mut new);
            new = field_manager::record_update(resource, sub, &existing.value(), new, manager);
        }
        let stored = existing.value();
        new = self.admission.mutate(name, stored.as_object(), Some(new)).await?.unwrap_or_default();
        let old = editable(existing);
        // managedFields are the field manager's: kept whatever the strategy keeps of the
        // metadata (the status strategy keeps the stored metadata).
        let managed_fields = new.get("metadata").and_then(|m| m.get("managedFields")).cloned();
        let mut new = strategy::prepare_for_update(resource, &old, new, sub)?;
        let metadata = metadata_mut(&mut new);
        match managed_fields {
            Some(entries) => metadata.insert("managedFields".into(), entries),
            None => metadata.shift_remove("managedFields"),
        };
        let errors = match sub {
            None => strategy::validate_update(resource, &old, &new),
            Some(Subresource::Status) => strategy::validate_status_update(resource, &new),
            Some(_) => Vec::new(),
        };
        if !errors.is_empty() {
            return Err(invalid_error(resource.group, resource.kind, name, &errors));
        }
        if let Some(guard) = self.escalation {
            guard.check(namespace.unwrap_or(""), &new)?;
        }
        self.admission.validate(name, stored.as_object(), Some(&new)).await?;
        if strategy::should_delete_during_update(&new) {
            return Ok(Step::Delete);
        }
        Ok(Step::Write(new))
    }
}

/// PUT.
pub async fn update(w: WriteRequest<'_>) -> Result<HttpResponse, ApiError> {
    let (dry_run, validation) = write_options(w.query, OptionsKind::Update)?;
    let WriteRequest { state, user, store, req, query, headers, body, media } = w;
    if req.subresource.as_deref() == Some("scale") {
        let manager = field_manager::update_manager(query, headers);
        return scale::update(state, store, req, headers, body, dry_run, &manager).await;
    }
    let (mut object, warnings) = decode_body(store.resource, headers, &body, validation)?;
    reconcile_namespace(store, &mut object, req.namespace.as_deref())?;
    // Checked before the update too: a PUT that creates must not create another name.
    check_name_matches(&object, req.name.as_deref().expect("PUT has a name"))?;
    super::custom::require_resource_version(store.resource, &object, req.name.as_deref().unwrap_or(""))?;
    let manager = field_manager::update_manager(query, headers);
    let guard = Guard::for_write(state, user, store.resource).await;
    let namespace = store.scope(req.namespace.as_deref());
    let admission = Admission::new(
        state,
        user,
        store.resource,
        req.subresource.as_deref(),
        namespace,
        Operation::Update,
        dry_run,
        Some(&manager),
    );
    let ownership = Ownership::Update(&manager);
    let result =
        update_to(store, req, dry_run, true, ownership, guard.as_ref(), &admission, |_| Ok(object.clone())).await;
    match result {
        Ok(updated) => {
            let mut warnings = warnings;
            warnings.extend(admission.warnings());
            Ok(response::with_warnings(respond(store, media, 200, updated.object()), &warnings))
        }
        Err(e) if e.code() == 404 && store.resource.allow_create_on_update && req.subresource.is_none() => {
            create(WriteRequest { state, user, store, req, query, headers, body, media }).await
        }
        Err(e) => Err(e),
    }
}
