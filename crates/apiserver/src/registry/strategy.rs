//! What the server owns in an object and how each kind treats writes (kube's registry
//! strategies, reduced to what clients can observe).
//!
//! * create: server-owned metadata is set (uid, creationTimestamp, generation 1; name from
//!   generateName), client-set deletion fields are cleared, per-kind state is set (a Pod
//!   starts Pending, a Namespace Active with the `kubernetes` finalizer, a Service gets a
//!   cluster IP), kube's scheme defaults apply ([`listwatch_meta::defaults`]), and kinds with a
//!   status subresource start with an empty status;
//! * update of the main resource: server-owned metadata is kept from the stored object,
//!   `.status` is kept when the kind has a status subresource, `generation` goes up only when
//!   something outside metadata and status changed; no new finalizers once deletion started;
//! * update of `/status`: only `.status` changes;
//! * validation (kube's `strategy.Validate` / `ValidateUpdate` with the registry's common
//!   checks): metadata (labels, annotations, finalizers, no new finalizers while deleting, an
//!   immutable uid, owner references) and the kind's own rules (ConfigMap and Secret data, pod
//!   specs, workload selectors and templates), then on update what may not change (immutable
//!   data, a Secret's type, a pod's spec, a workload's selector), reported as kube reports
//!   them, repeats included (kube checks metadata of an update up to four times and lists each
//!   finding each time).

use listwatch_meta::registry::Subresource;
use listwatch_meta::validation::FieldError;
use listwatch_meta::write_validation::{self, go_string_slice};
use listwatch_meta::{ApiError, Resource};
use listwatch_meta::{admission_validation, apps_validation, pod_validation, policy_validation, rbac_validation};
use serde_json::{Map, Value, json};

use super::custom_strategy;

/// Metadata fields only the server sets.
const SERVER_OWNED: &[&str] =
    &["uid", "creationTimestamp", "generation", "deletionTimestamp", "deletionGracePeriodSeconds"];

pub fn now_rfc3339() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

fn metadata(object: &mut Map<String, Value>) -> &mut Map<String, Value> {
    let entry = object.entry("metadata").or_insert_with(|| Value::Object(Map::new()));
    if !entry.is_object() {
        *entry = Value::Object(Map::new());
    }
    entry.as_object_mut().expect("made an object")
}

/// Prepares a new object for storage. The name is already set (generateName resolved).
pub fn prepare_for_create(resource: &Resource, object: &mut Map<String, Value>) {
    let meta = metadata(object);
    for field in SERVER_OWNED {
        meta.shift_remove(*field);
    }
    meta.shift_remove("resourceVersion");
    meta.insert("uid".into(), Value::String(uuid::Uuid::new_v4().to_string()));
    meta.insert("creationTimestamp".into(), Value::String(now_rfc3339()));
    meta.insert("generation".into(), json!(1));
    if resource.has_subresource(Subresource::Status) {
        object.shift_remove("status");
    }
    custom_strategy::prepare_for_create(resource, object);
    match (resource.group, resource.kind) {
        ("", "Pod") => {
            let qos = "BestEffort";
            object.insert("status".into(), json!({"phase": "Pending", "qosClass": qos}));
        }
        ("", "Namespace") => {
            label_namespace_name(object);
            let spec = object.entry("spec").or_insert_with(|| json!({}));
            if let Some(spec) = spec.as_object_mut() {
                spec.entry("finalizers").or_insert_with(|| json!(["kubernetes"]));
            }
            object.insert("status".into(), json!({"phase": "Active"}));
        }
        ("apps", "Deployment" | "ReplicaSet") => {
            let spec = object.entry("spec").or_insert_with(|| json!({}));
            if let Some(spec) = spec.as_object_mut() {
                spec.entry("replicas").or_insert_with(|| json!(1));
            }
        }
        ("", "Service") => {
            let spec = object.entry("spec").or_insert_with(|| json!({}));
            if let Some(spec) = spec.as_object_mut() {
                spec.entry("type").or_insert_with(|| json!("ClusterIP"));
                if spec.get("type").and_then(Value::as_str) != Some("ExternalName") {
                    let ip = format!("10.96.{}.{}", rand::random_range(0..=255u8), rand::random_range(1..=254u8));
                    spec.entry("clusterIP").or_insert_with(|| json!(ip));
                }
            }
        }
        _ => {}
    }
    // kube defaults when it decodes the body, before validation; here after the allocations
    // above, so that a Service's clusterIPs name the cluster IP it was given.
    listwatch_meta::defaults::apply_defaults(resource.group, resource.kind, object);
}

/// kube-apiserver labels every namespace `kubernetes.io/metadata.name=<name>`, on create and
/// on every update (NamespaceDefaultLabelName).
fn label_namespace_name(object: &mut Map<String, Value>) {
    let meta = metadata(object);
    let Some(name) = meta.get("name").and_then(Value::as_str).map(String::from) else { return };
    let labels = meta.entry("labels").or_insert_with(|| json!({}));
    if let Some(labels) = labels.as_object_mut() {
        labels.insert("kubernetes.io/metadata.name".into(), json!(name));
    }
}

/// Everything but metadata and status: what `generation` tracks.
fn spec_part(object: &Map<String, Value>) -> Map<String, Value> {
    object
        .iter()
        .filter(|(k, _)| !matches!(k.as_str(), "metadata" | "status" | "kind" | "apiVersion"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Builds the object to store from an update of `old` to `new` (both without
/// resourceVersion). Returns 422 for finalizers added during deletion.
pub fn prepare_for_update(
    resource: &Resource,
    old: &Map<String, Value>,
    mut new: Map<String, Value>,
    subresource: Option<Subresource>,
) -> Result<Map<String, Value>, ApiError> {
    if subresource == Some(Subresource::Status) {
        // Only the status changes.
        let mut out = old.clone();
        match new.shift_remove("status") {
            Some(status) => out.insert("status".into(), status),
            None => out.shift_remove("status"),
        };
        return Ok(out);
    }
    // Defaulted before anything is compared: a field the client left out comes back as its
    // default, which changes nothing (nor the generation).
    listwatch_meta::defaults::apply_defaults(resource.group, resource.kind, &mut new);
    let old_meta = old.get("metadata").and_then(Value::as_object).cloned().unwrap_or_default();
    {
        let meta = metadata(&mut new);
        for field in SERVER_OWNED {
            // A uid the client sent stays, for validation to refuse if it differs (kube uses
            // the stored uid only when none is provided).
            if *field == "uid" && meta.get("uid").and_then(Value::as_str).is_some_and(|uid| !uid.is_empty()) {
                continue;
            }
            match old_meta.get(*field) {
                Some(v) => meta.insert((*field).into(), v.clone()),
                None => meta.shift_remove(*field),
            };
        }
        // Name and namespace never change.
        for field in ["name", "namespace"] {
            if let Some(v) = old_meta.get(field) {
                meta.insert(field.into(), v.clone());
            }
        }
    }
    if resource.has_subresource(Subresource::Status) {
        match old.get("status") {
            Some(status) => new.insert("status".into(), status.clone()),
            None => new.shift_remove("status"),
        };
    }
    if resource.group.is_empty() && resource.kind == "Namespace" {
        label_namespace_name(&mut new);
    }
    let status_changed = || old.get("status") != new.get("status");
    if spec_part(old) != spec_part(&new)
        || (custom_strategy::status_counts_for_generation(resource) && status_changed())
    {
        let generation = old_meta.get("generation").and_then(Value::as_i64).unwrap_or(0) + 1;
        metadata(&mut new).insert("generation".into(), json!(generation));
    }
    custom_strategy::prepare_for_update(resource, old, &mut new);
    Ok(new)
}

/// Whether an object is being deleted and no finalizer holds it any more: the update that
/// got it there deletes it instead (kube's `ShouldDeleteDuringUpdate`).
pub fn should_delete_during_update(object: &Map<String, Value>) -> bool {
    let meta = object.get("metadata").and_then(Value::as_object);
    let deleting = meta.and_then(|m| m.get("deletionTimestamp")).is_some_and(|v| !v.is_null());
    let grace_pending = meta.and_then(|m| m.get("deletionGracePeriodSeconds")).and_then(Value::as_i64).unwrap_or(0) > 0;
    let finalizers = meta.and_then(|m| m.get("finalizers")).and_then(Value::as_array).is_some_and(|f| !f.is_empty());
    deleting && !finalizers && !grace_pending
}

/// The object's finalizers.
pub fn finalizers(object: &Map<String, Value>) -> Vec<String> {
    object
        .get("metadata")
        .and_then(|m| m.get("finalizers"))
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|v| v.as_str().map(String::from)).collect())
        .unwrap_or_default()
}

/// Marks an object as being deleted (a MODIFIED, not a DELETED): finalizers or a grace period
/// keep it. A namespace also turns Terminating.
pub fn mark_deleting(resource: &Resource, object: &mut Map<String, Value>, grace_seconds: i64) {
    if resource.group.is_empty() && resource.kind == "Namespace" {
        let status = object.entry("status").or_insert_with(|| json!({}));
        if let Some(status) = status.as_object_mut() {
            status.insert("phase".into(), json!("Terminating"));
        }
    }
    if custom_strategy::mark_crd_deleting(resource, object) {
        return;
    }
    let meta = metadata(object);
    meta.entry("deletionTimestamp").or_insert_with(|| Value::String(deletion_timestamp(grace_seconds)));
    meta.insert("deletionGracePeriodSeconds".into(), json!(grace_seconds.max(0)));
}

/// The latest time RFC 3339 can write (`9999-12-31T23:59:59Z`), as seconds since the epoch.
const LAST_RFC3339_SECOND: u64 = 253_402_300_799;

/// `now + grace` as RFC 3339, saturating at the last second RFC 3339 can write: a client's
/// grace period can be anything up to `i64::MAX` seconds. (kube multiplies it into a Go
/// `time.Duration`, which wraps around to a time near now; a far-future time says what the
/// client asked for and stays a valid timestamp.)
pub fn deletion_timestamp(grace_seconds: i64) -> String {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let grace = u64::try_from(grace_seconds).unwrap_or(0);
    let when = now.saturating_add(grace).min(LAST_RFC3339_SECOND);
    let time = std::time::UNIX_EPOCH + std::time::Duration::from_secs(when);
    humantime::format_rfc3339_seconds(time).to_string()
}

fn metadata_of(object: &Map<String, Value>) -> Map<String, Value> {
    object.get("metadata").and_then(Value::as_object).cloned().unwrap_or_default()
}

/// The kind's own rules beyond metadata (kube's `Validate<Kind>` minus `ValidateObjectMeta`).
fn validate_kind(resource: &Resource, object: &Map<String, Value>) -> Vec<FieldError> {
    match (resource.group, resource.kind) {
        ("", "ConfigMap") => write_validation::validate_config_map(object),
        ("", "Secret") => write_validation::validate_secret(object),
        ("", "Pod") => {
            let spec = object.get("spec").and_then(Value::as_object).cloned().unwrap_or_default();
            pod_validation::validate_pod_spec(&spec, "spec")
        }
        ("apps", "Deployment") => apps_validation::validate_deployment(object),
        ("apps", "ReplicaSet") => apps_validation::validate_replica_set(object),
        ("rbac.authorization.k8s.io", "Role") => rbac_validation::validate_role(object, true),
        ("rbac.authorization.k8s.io", "ClusterRole") => rbac_validation::validate_role(object, false),
        ("rbac.authorization.k8s.io", "RoleBinding") => rbac_validation::validate_binding(object, true),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding") => rbac_validation::validate_binding(object, false),
        ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration") => {
            admission_validation::validate_webhook_configuration(
                object,
                false,
                &listwatch_apiextensions::schema::cel::compiles,
            )
        }
        ("admissionregistration.k8s.io", "MutatingWebhookConfiguration") => {
            admission_validation::validate_webhook_configuration(
                object,
                true,
                &listwatch_apiextensions::schema::cel::compiles,
            )
        }
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy") => {
            policy_validation::validate_policy(object, &listwatch_apiextensions::schema::cel::compiles)
        }
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding") => {
            policy_validation::validate_policy_binding(object)
        }
        _ => Vec::new(),
    }
}

/// What a create is refused for besides its name (kube's `ValidateObjectMeta` after the name
/// checks, then the kind's rules), in kube's order.
pub fn validate_create(resource: &Resource, object: &Map<String, Value>) -> Vec<FieldError> {
    let mut errors = write_validation::validate_object_meta(&metadata_of(object));
    errors.extend(validate_kind(resource, object));
    errors.extend(custom_strategy::validate_create(resource, object));
    errors
}

/// What a write to `/status` is refused for (CRDs and custom resources; built-in kinds'
/// status writes are not validated here).
pub fn validate_status_update(resource: &Resource, new: &Map<String, Value>) -> Vec<FieldError> {
    custom_strategy::validate_status_update(resource, new)
}

/// Kinds whose update validation runs their create validation again (`ValidateConfigMapUpdate`
/// calls `ValidateConfigMap`, `ValidatePodUpdate` validates the pod's metadata and spec, and so
/// on), so their metadata findings are listed once more.
fn update_revalidates_create(resource: &Resource) -> bool {
    resource.group.is_empty()
        && matches!(resource.kind, "ConfigMap" | "Secret" | "ServiceAccount" | "Service" | "Endpoints" | "Pod")
}

/// The rules of the kind's `ValidateUpdate` that compare the new object with the old one, in
/// the place kube checks them: before the create validation runs again.
fn validate_kind_update(resource: &Resource, old: &Map<String, Value>, new: &Map<String, Value>) -> Vec<FieldError> {
    match (resource.group, resource.kind) {
        ("", "ConfigMap") => write_validation::validate_immutable_data(old, new, &["data", "binaryData"]),
        ("", "Secret") => write_validation::validate_secret_update(old, new),
        _ => Vec::new(),
    }
}

/// The rules of the kind's `ValidateUpdate` that kube checks after the new object's own.
fn validate_kind_update_last(
    resource: &Resource,
    old: &Map<String, Value>,
    new: &Map<String, Value>,
) -> Vec<FieldError> {
    match (resource.group, resource.kind) {
        ("", "Pod") => pod_validation::validate_pod_update(old, new),
        // The apps/v1 strategies refuse a new selector (only extensions/v1beta1 allowed one).
        ("apps", "Deployment" | "ReplicaSet") => apps_validation::validate_selector_update(old, new),
        ("rbac.authorization.k8s.io", "RoleBinding" | "ClusterRoleBinding") => {
            rbac_validation::validate_binding_update(old, new)
        }
        _ => Vec::new(),
    }
}

/// `ValidateObjectMetaAccessorUpdate`: no new finalizers while the object is being deleted,
/// an unchanged uid, then labels and annotations.
fn validate_meta_update(old: &Map<String, Value>, new: &Map<String, Value>) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if old.get("deletionTimestamp").is_some_and(|v| !v.is_null()) {
        let names = |m: &Map<String, Value>| -> Vec<String> {
            m.get("finalizers")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(|v| v.as_str().map(String::from)).collect())
                .unwrap_or_default()
        };
        let before = names(old);
        let mut added: Vec<String> = names(new).into_iter().filter(|f| !before.contains(f)).collect();
        added.sort();
        added.dedup();
        if !added.is_empty() {
            let added: Vec<&str> = added.iter().map(String::as_str).collect();
            errors.push(FieldError::forbidden(
                "metadata.finalizers",
                &format!(
                    "no new finalizers can be added if the object is being deleted, found new finalizers {}",
                    go_string_slice(&added)
                ),
            ));
        }
    }
    let uid = |m: &Map<String, Value>| m.get("uid").and_then(Value::as_str).unwrap_or("").to_owned();
    let (old_uid, new_uid) = (uid(old), uid(new));
    if new_uid != old_uid {
        errors.push(FieldError::invalid("metadata.uid", &new_uid, "field is immutable"));
    }
    if let Some(labels) = new.get("labels").and_then(Value::as_object) {
        errors.extend(write_validation::validate_labels(labels, "metadata.labels"));
    }
    if let Some(annotations) = new.get("annotations").and_then(Value::as_object) {
        errors.extend(write_validation::validate_annotations(annotations, "metadata.annotations"));
    }
    if let Some(references) = new.get("ownerReferences").and_then(Value::as_array) {
        errors.extend(write_validation::validate_owner_references(references, "metadata.ownerReferences"));
    }
    errors
}

/// What an update of the main resource is refused for: the registry's common checks
/// (`ValidateObjectMetaAccessor` and `...Update`), then the kind's `ValidateUpdate`, which
/// checks the metadata update again, for some kinds the whole create validation again, and the
/// kind's rules. kube lists every finding of every pass; the Status message shows each once.
pub fn validate_update(resource: &Resource, old: &Map<String, Value>, new: &Map<String, Value>) -> Vec<FieldError> {
    let (old_meta, new_meta) = (metadata_of(old), metadata_of(new));
    let common = write_validation::validate_object_meta(&new_meta);
    let update = validate_meta_update(&old_meta, &new_meta);
    let mut errors = common.clone();
    errors.extend(update.iter().cloned());
    errors.extend(update);
    errors.extend(validate_kind_update(resource, old, new));
    if update_revalidates_create(resource) {
        errors.extend(common);
    }
    errors.extend(validate_kind(resource, new));
    errors.extend(validate_kind_update_last(resource, old, new));
    errors.extend(custom_strategy::validate_update(resource, old, new));
    errors
}
